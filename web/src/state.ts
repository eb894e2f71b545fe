// The page state. All of it lives in the URL query string, so a view can be shared.
import { PRESETS } from "./presets";
import type { State } from "./state-types";

export type { EmbeddingKind, MaskKind, State, ViewId, WeightKind } from "./state-types";

export const STEP_COUNT = 8;

/** State fields that only change what is shown, not the numbers attnkit computes. */
export const DISPLAY_FIELDS: readonly (keyof State)[] = [
  "view",
  "step",
  "query",
  "head",
  "role",
  "speed",
  "satScale",
  "satSource",
  "decodeStep",
  "preset",
  "hidden",
];

/** A copy of `s` without `fields` (the part of the state a cache key depends on). */
export function omitFields(s: State, fields: readonly (keyof State)[]): Partial<State> {
  const rest: Partial<State> = { ...s };
  for (const f of fields) delete rest[f];
  return rest;
}

export const DEFAULT_STATE: State = {
  preset: "train",
  text: "the train left the station on time",
  text2: "I cashed the check at the bank",
  batch: false,
  emb: "features",
  dModel: 16,
  pe: false,
  weights: "designed",
  seed: 1,
  dK: 8,
  dV: 8,
  heads: 4,
  kvHeads: 4,
  mask: "none",
  custom: "",
  scaling: true,
  temperature: 1,
  softcap: 0,
  view: "steps",
  step: 1,
  query: 2,
  head: 0,
  role: "Q",
  speed: 1,
  satScale: 1,
  satSource: "random",
  decodeStep: 0,
  hidden: "",
  edits: {},
};

type Key = keyof State;
/** Each field's name in the URL. */
export const SHORT: Record<Key, string> = {
  preset: "p",
  text: "t",
  text2: "t2",
  batch: "b",
  emb: "e",
  dModel: "dm",
  pe: "pe",
  weights: "w",
  seed: "s",
  dK: "dk",
  dV: "dv",
  heads: "h",
  kvHeads: "kvh",
  mask: "m",
  custom: "cm",
  scaling: "sc",
  temperature: "tau",
  softcap: "cap",
  hidden: "hh",
  view: "v",
  step: "st",
  query: "q",
  head: "hd",
  role: "r",
  speed: "sp",
  satScale: "sat",
  satSource: "ss",
  decodeStep: "ds",
  edits: "ed",
};

/**
 * Parts of the query string kept by other modules (the Train view's settings,
 * web/src/train/settings.ts): each gives its parameters, which toQuery appends.
 */
export const queryParts: (() => string)[] = [];

/**
 * The state as a query string holding only what differs from the defaults. A trained
 * layer's numbers cannot go in a URL: it keeps w=trained and what is shown, and a page
 * loaded from it shows the example with a note.
 */
export function toQuery(s: State): string {
  const p = new URLSearchParams();
  const trained = s.weights === "trained";
  for (const key of Object.keys(SHORT) as Key[]) {
    if (trained && key !== "weights" && !DISPLAY_FIELDS.includes(key)) continue;
    const v = s[key];
    const d = DEFAULT_STATE[key];
    if (key === "edits") {
      const entries = Object.entries(s.edits);
      if (entries.length) p.set(SHORT[key], entries.map(([k, val]) => `${k}=${val}`).join(","));
    } else if (v !== d) {
      p.set(SHORT[key], typeof v === "boolean" ? (v ? "1" : "0") : String(v));
    }
  }
  for (const part of queryParts) for (const [k, v] of new URLSearchParams(part())) p.set(k, v);
  return p.toString();
}

/** Edited cells accept finite numbers in [-EDIT_LIMIT, EDIT_LIMIT]. */
export const EDIT_LIMIT = 1e6;

/**
 * Why an edited cell's value is refused (null: accepted by the page's range).
 * `raw` is what was typed or what the URL holds.
 */
export function editProblem(raw: string): string | null {
  const range = `accepted: numbers from −1e6 to 1e6`;
  const t = raw.trim();
  if (t === "") return `Empty: type a number (${range}).`;
  const v = Number(t);
  if (Number.isNaN(v)) return `“${t}” is not a number (${range}).`;
  if (!Number.isFinite(v)) return `${t} is beyond any float32 number (${range}).`;
  if (Math.abs(v) > EDIT_LIMIT) return `${t} is out of range (${range}).`;
  return null;
}

/** The range of each number a link or a field may set, and whether it is a whole number. */
export const NUMBER_RANGE: Partial<Record<Key, [number, number, boolean]>> = {
  dModel: [2, 256, true],
  seed: [0, 99999, true],
  dK: [1, 256, true],
  dV: [1, 256, true],
  heads: [1, 16, true],
  kvHeads: [1, 16, true],
  temperature: [0.1, 5, false],
  softcap: [0, 20, false],
  satScale: [1, 100, true],
  step: [1, STEP_COUNT, true],
  // Bounded by the text and the heads once they are known (url-edits.ts).
  query: [0, Infinity, true],
  head: [0, Infinity, true],
  decodeStep: [0, Infinity, true],
};

/** The values a link may give each field that takes one of a list. */
const CHOICES: Partial<Record<Key, readonly string[]>> = {
  emb: ["features", "random"],
  weights: ["random", "identity", "designed", "seed", "trained"],
  mask: ["none", "causal", "padding", "custom"],
  view: ["steps", "headview", "grid", "saturation", "decoding", "train", "language", "gpt2"],
  role: ["Q", "K", "V"],
  satSource: ["random", "query"],
  speed: ["0.5", "1", "2", "4"],
};

/** What a number field accepts, as a message says it. */
export function rangeText(lo: number, hi: number, whole: boolean): string {
  const kind = whole ? "a whole number" : "a number";
  return hi === Infinity ? `${kind} from ${lo} up` : `${kind} from ${lo} to ${hi}`;
}

/**
 * Parses a query string. A field whose value the page cannot use as it is keeps its
 * default, or the nearest value it can use, and why is added to `dropped` (as the
 * link wrote it: "h=-3 → 1: a whole number from 1 to 16"). Edited cells whose value
 * is refused are dropped.
 */
export function fromQuery(query: string, dropped: string[] = []): State {
  const p = new URLSearchParams(query);
  const s: State = { ...DEFAULT_STATE, edits: {} };
  const rec = s as unknown as Record<string, unknown>;
  for (const key of Object.keys(SHORT) as Key[]) {
    const raw = p.get(SHORT[key]);
    if (raw === null) continue;
    const d = DEFAULT_STATE[key];
    const link = `${SHORT[key]}=${raw}`;
    const choices =
      key === "preset" ? [...PRESETS.map((pr) => pr.id), "custom", "trained"] : CHOICES[key];
    if (key === "edits") {
      for (const part of raw.split(",")) {
        const [k, val = ""] = part.split("=");
        if (!/^(X[01]|WQ|WK|WV|WO):\d+:\d+$/.test(k)) {
          if (part) dropped.push(`“${part}” is not an edited cell`);
          continue;
        }
        const why = editProblem(val);
        if (why) dropped.push(`${cellName(k)} = ${val}: ${why}`);
        else s.edits[k] = Number(val);
      }
    } else if (choices) {
      if (choices.includes(raw)) rec[key] = typeof d === "number" ? Number(raw) : raw;
      else
        dropped.push(
          `${link}: not one of ${choices.filter((c) => c !== "trained").join(", ")}; using ${d}`,
        );
    } else if (typeof d === "boolean") {
      if (raw === "0" || raw === "1") rec[key] = raw === "1";
      else dropped.push(`${link}: not 1 (on) or 0 (off); using ${d ? 1 : 0}`);
    } else if (typeof d === "number") {
      const [lo, hi, whole] = NUMBER_RANGE[key]!;
      const n = raw.trim() === "" ? NaN : Number(raw);
      if (!Number.isFinite(n)) {
        dropped.push(`${link}: not ${rangeText(lo, hi, whole)}; using ${d}`);
        continue;
      }
      const used = Math.min(hi, Math.max(lo, whole ? Math.round(n) : n));
      if (used !== n) dropped.push(`${link} → ${used}: ${rangeText(lo, hi, whole)}`);
      rec[key] = used;
    } else if (key === "hidden" && !/^(\d+(_\d+)*)?$/.test(raw)) {
      dropped.push(`${link}: hidden heads are numbers joined by “_”; none hidden`);
    } else if (key === "custom" && !/^(\d+\.\d+(_\d+\.\d+)*)?$/.test(raw)) {
      dropped.push(`${link}: mask cells are “row.column” joined by “_”; none blocked`);
    } else {
      rec[key] = raw;
    }
  }
  return s;
}

/** Adds a note to `dropped` for each parameter of `query` that neither the state nor `others` reads. */
export function unknownParams(query: string, others: readonly string[], dropped: string[]): void {
  const known = new Set([...Object.values(SHORT), ...others]);
  for (const [k, v] of new URLSearchParams(query))
    if (!known.has(k)) dropped.push(`${k}${v ? `=${v}` : ""}: not a setting of this page; ignored`);
}

/** "X0:1:0" -> "X[1, 0]" (the second sentence's X: "X₂[1, 0]"). */
export function cellName(key: string): string {
  const [name, r, c] = key.split(":");
  return `${name === "X0" ? "X" : name === "X1" ? "X₂" : name}[${r}, ${c}]`;
}

/** Heads hidden in the head view. */
export function hiddenHeads(s: State): Set<number> {
  return new Set(s.hidden ? s.hidden.split("_").map(Number) : []);
}

/** Blocked cells of the custom mask. */
export function customCells(s: State): Set<string> {
  return new Set(s.custom ? s.custom.split("_") : []);
}
