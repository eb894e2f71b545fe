// The page state. All of it lives in the URL query string, so a view can be shared.

export type EmbeddingKind = "features" | "random";
/** "trained": a trained model's layer, whose numbers live in memory only (trained.ts). */
export type WeightKind = "random" | "identity" | "designed" | "seed" | "trained";
export type MaskKind = "none" | "causal" | "padding" | "custom";
export type ViewId = "steps" | "headview" | "grid" | "saturation" | "decoding" | "train";

export interface State {
  preset: string;
  text: string;
  text2: string;
  batch: boolean;
  emb: EmbeddingKind;
  dModel: number;
  pe: boolean;
  weights: WeightKind;
  seed: number;
  dK: number;
  dV: number;
  heads: number;
  kvHeads: number;
  mask: MaskKind;
  /** Custom mask: blocked cells "i.j" joined by "_". */
  custom: string;
  scaling: boolean;
  temperature: number;
  /** Soft cap of the scaled scores: s -> c·tanh(s / c); 0 = off. */
  softcap: number;
  view: ViewId;
  step: number;
  query: number;
  head: number;
  /** Matrix role for step 2: Q, K or V. */
  role: "Q" | "K" | "V";
  speed: number;
  /** Saturation experiment: logit multiplier 1..100 and the logits' source. */
  satScale: number;
  satSource: "random" | "query";
  decodeStep: number;
  /** Heads hidden in the head view, joined by "_". */
  hidden: string;
  /** Edited cells: "X0:r:c" (batch item 0), "WQ:r:c", ... -> value. */
  edits: Record<string, number>;
}

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
const SHORT: Record<Key, string> = {
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

/**
 * Parses a query string; unknown or malformed fields keep their defaults. Edited
 * cells whose value is refused are dropped, and why is added to `dropped`.
 */
export function fromQuery(query: string, dropped: string[] = []): State {
  const p = new URLSearchParams(query);
  const s: State = { ...DEFAULT_STATE, edits: {} };
  const rec = s as unknown as Record<string, unknown>;
  for (const key of Object.keys(SHORT) as Key[]) {
    const raw = p.get(SHORT[key]);
    if (raw === null) continue;
    const d = DEFAULT_STATE[key];
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
    } else if (typeof d === "boolean") {
      rec[key] = raw === "1";
    } else if (typeof d === "number") {
      const n = Number(raw);
      if (Number.isFinite(n)) rec[key] = n;
    } else {
      rec[key] = raw;
    }
  }
  if (!["features", "random"].includes(s.emb)) s.emb = DEFAULT_STATE.emb;
  if (!["random", "identity", "designed", "seed", "trained"].includes(s.weights))
    s.weights = DEFAULT_STATE.weights;
  if (!["none", "causal", "padding", "custom"].includes(s.mask)) s.mask = DEFAULT_STATE.mask;
  if (!["steps", "headview", "grid", "saturation", "decoding", "train"].includes(s.view))
    s.view = "steps";
  if (!["Q", "K", "V"].includes(s.role)) s.role = "Q";
  if (s.satSource !== "query") s.satSource = "random";
  s.step = clampInt(s.step, 1, STEP_COUNT);
  s.satScale = Math.min(100, Math.max(1, s.satScale));
  s.temperature = Math.min(10, Math.max(0.05, s.temperature));
  s.speed = Math.min(4, Math.max(0.25, s.speed));
  s.softcap = Math.min(100, Math.max(0, s.softcap));
  if (!/^(\d+(_\d+)*)?$/.test(s.hidden)) s.hidden = "";
  return s;
}

/** "X0:1:0" -> "X[1, 0]" (the second sentence's X: "X₂[1, 0]"). */
export function cellName(key: string): string {
  const [name, r, c] = key.split(":");
  return `${name === "X0" ? "X" : name === "X1" ? "X₂" : name}[${r}, ${c}]`;
}

export function clampInt(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, Math.round(v)));
}

/** Heads hidden in the head view. */
export function hiddenHeads(s: State): Set<number> {
  return new Set(s.hidden ? s.hidden.split("_").map(Number) : []);
}

/** Blocked cells of the custom mask. */
export function customCells(s: State): Set<string> {
  return new Set(s.custom ? s.custom.split("_") : []);
}
