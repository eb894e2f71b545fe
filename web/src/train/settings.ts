// The Train view's settings as the panel's fields and as the URL's parameters: each
// number field's range, the note beside a field saying which value was used and why, and
// the part of the page's query string that holds the settings.
import type { TaskKind } from "attnkit";
import { fieldValue, type NumberField } from "../panel";
import type { RunConfig } from "./protocol";

export const TASKS: readonly TaskKind[] = ["copy", "reverse", "sort", "induction", "majority"];

/** The learning rates the panel offers (its <select>), with their labels. */
export const LEARNING_RATES: readonly [number, string][] = [
  [0.03, "3e-2"],
  [0.01, "1e-2"],
  [0.003, "3e-3"],
  [0.001, "1e-3"],
  [0.0003, "3e-4"],
];

type NumberKey = "numLayers" | "numHeads" | "dModel" | "dK" | "batch";

export const NUMBER_FIELDS: readonly NumberField<NumberKey>[] = [
  { key: "numLayers", id: "train-layers", param: "tl", name: "layers", lo: 1, hi: 4 },
  { key: "numHeads", id: "train-heads", param: "th", name: "heads", lo: 1, hi: 8 },
  { key: "dModel", id: "train-dmodel", param: "tdm", name: "d_model", lo: 4, hi: 128 },
  { key: "dK", id: "train-dk", param: "tdk", name: "d_k", lo: 1, hi: 64 },
  { key: "batch", id: "train-batch", param: "tb", name: "batch", lo: 1, hi: 256 },
];

/** The other settings' fields and URL parameters. */
export const TASK_PARAM = "tt";
export const LR_PARAM = "tlr";
export const SCALED_PARAM = "tsc";
export const COMPARE_PARAM = "tcmp";

/** Every URL parameter of the Train view's settings. */
export const TRAIN_PARAMS: readonly string[] = [
  ...NUMBER_FIELDS.map((f) => f.param),
  TASK_PARAM,
  LR_PARAM,
  SCALED_PARAM,
  COMPARE_PARAM,
];

/** The settings and the compare flag, as URL parameters that differ from `defaults`. */
export function settingsQuery(c: RunConfig, compare: boolean, defaults: RunConfig): string {
  const p = new URLSearchParams();
  if (c.task !== defaults.task) p.set(TASK_PARAM, c.task);
  for (const f of NUMBER_FIELDS) if (c[f.key] !== defaults[f.key]) p.set(f.param, String(c[f.key]));
  if (c.learningRate !== defaults.learningRate) p.set(LR_PARAM, String(c.learningRate));
  if (c.scaled !== defaults.scaled) p.set(SCALED_PARAM, c.scaled ? "1" : "0");
  if (compare) p.set(COMPARE_PARAM, "1");
  return p.toString();
}

export interface UrlSettings {
  config: RunConfig;
  compare: boolean;
  /** Per field id (or "train-task", ...): what the link held that was not used as it was. */
  notes: Record<string, string>;
}

/** The settings a query string holds over `defaults`, with a note per value not used as written. */
export function settingsFromQuery(query: string, defaults: RunConfig): UrlSettings {
  const p = new URLSearchParams(query);
  const config = { ...defaults };
  const notes: Record<string, string> = {};
  const link = (param: string, raw: string) => `The link's ${param}=${raw}`;
  const task = p.get(TASK_PARAM);
  if (task !== null) {
    if ((TASKS as readonly string[]).includes(task)) config.task = task as TaskKind;
    else
      notes["train-task"] =
        `${link(TASK_PARAM, task)} is not a task (${TASKS.join(", ")}): using ${config.task}.`;
  }
  for (const f of NUMBER_FIELDS) {
    const raw = p.get(f.param);
    if (raw === null) continue;
    const [v, why] = fieldValue(f, raw, defaults[f.key]);
    config[f.key] = v;
    if (why) notes[f.id] = `${link(f.param, raw)}: ${why}`;
  }
  const lr = p.get(LR_PARAM);
  if (lr !== null) {
    const known = LEARNING_RATES.find(([v]) => v === Number(lr) && lr.trim() !== "");
    if (known) config.learningRate = known[0];
    else
      notes["train-lr"] =
        `${link(LR_PARAM, lr)} is not one of the rates offered (${LEARNING_RATES.map(([, s]) => s).join(", ")}): using ${config.learningRate}.`;
  }
  const flag = (param: string, id: string, fallback: boolean) => {
    const raw = p.get(param);
    if (raw === null) return fallback;
    if (raw === "1" || raw === "0") return raw === "1";
    notes[id] = `${link(param, raw)} is neither 1 nor 0: using ${fallback ? 1 : 0}.`;
    return fallback;
  };
  config.scaled = flag(SCALED_PARAM, "train-scaled", defaults.scaled);
  const compare = flag(COMPARE_PARAM, "train-compare", false);
  return { config, compare, notes };
}

/** The step a weights file was saved at, from the name the page gives it ("…-step120.atkmodel"). */
export function stepOfFileName(name: string): number | null {
  const m = /-step(\d+)(?:\s*\(\d+\))?\.atkmodel$/i.exec(name);
  return m ? Number(m[1]) : null;
}
