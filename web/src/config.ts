// Resolves the state into consistent shapes: tokens per batch item, d_model,
// d_k, d_v, heads and kv heads, and the options passed to attnkit.
import type { AttentionOptions } from "attnkit";
import { FEATURES } from "./lexicon";
import { SEED001 } from "./presets";
import { customCells, type State } from "./state";
import { MAX_TOKENS, tokenize, uniqueLabels } from "./tokenize";
import { tokenLabel, trainedOf, type ShownLayer } from "./trained";

export const PAD = "[PAD]";
/** The token that stands in for an empty text. */
export const EMPTY = "…";

export interface Item {
  tokens: string[];
  labels: string[];
  /** Tokens before padding. */
  realLength: number;
}

export interface Config {
  items: Item[];
  T: number;
  dModel: number;
  dK: number;
  dV: number;
  heads: number;
  kvHeads: number;
  featureNames: string[] | null;
  seedMode: boolean;
  /** The scale passed to attnkit (1/sqrt(d_k) when scaling, divided by the temperature). */
  scale: number;
  truncated: boolean;
  /** What happened to the text: cut to MAX_TOKENS, or empty (shown above the scene). */
  textNotes: string[];
  /** What was adjusted to keep the shapes consistent. */
  notes: string[];
  /** Per setting: the value typed, the value used and why (shown next to its field). */
  adjusted: Partial<Record<ShapeField, string>>;
  /** Why d_k, d_v, kv heads (and d_model) cannot be set with these weights/embeddings ("" if they can). */
  fixedHint: string;
}

export type ShapeField = "dModel" | "dK" | "dV" | "heads" | "kvHeads";

function largestDivisorAtMost(n: number, max: number): number {
  for (let d = Math.max(1, Math.min(n, max)); d > 1; d--) if (n % d === 0) return d;
  return 1;
}

const int = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, Math.round(v) || lo));

/** A typed value and the value used: why they differ ("" when they do not). */
function why(typed: number, used: number, reason: string): string {
  return typed === used ? "" : `${typed} → ${used}: ${reason}`;
}
const range = (lo: number, hi: number) => `a whole number from ${lo} to ${hi}`;

/** A trained layer's shapes: its tokens (ids as labels), d_model, heads, kv heads and d_k = d_v. */
function trainedConfig(t: ShownLayer): Config {
  const tokens = t.labels ? [...t.labels] : t.tokens.map(tokenLabel);
  const fixed = "fixed by the trained model";
  return {
    items: [{ tokens, labels: uniqueLabels(tokens), realLength: tokens.length }],
    T: tokens.length,
    dModel: t.dModel,
    dK: t.dK,
    dV: t.dK,
    heads: t.numHeads,
    kvHeads: t.numKvHeads,
    featureNames: null,
    seedMode: false,
    scale: t.scaled ? 1 / Math.sqrt(t.dK) : 1,
    truncated: false,
    textNotes: [],
    notes: [],
    adjusted: { dModel: fixed },
    fixedHint:
      "The trained model fixes the tokens, X, the weights, d_model, d_k = d_v, the heads, the causal mask and the scale: “Back to the example” frees them.",
  };
}

export function resolveConfig(s: State): Config {
  const trained = trainedOf(s);
  if (trained) return trainedConfig(trained);
  const notes: string[] = [];
  const seedMode = s.weights === "seed";
  let truncated = false;
  const texts = seedMode ? [SEED001.tokens.join(" ")] : s.batch ? [s.text, s.text2] : [s.text];
  const textNotes: string[] = [];
  const raw = texts.map((t, i) => {
    const r = tokenize(t);
    truncated ||= r.truncated;
    const which =
      texts.length > 1 ? (i === 0 ? "The first sentence" : "The second sentence") : "The text";
    if (r.truncated) {
      textNotes.push(
        `${which} has ${r.total} tokens; the page takes at most ${MAX_TOKENS}, so the last ${r.total - MAX_TOKENS}, from “${r.cut}” on, were cut.`,
      );
    }
    if (r.tokens.length) return r.tokens;
    textNotes.push(
      `${which} is empty: type a sentence. Until then one placeholder token “${EMPTY}” stands in.`,
    );
    return [EMPTY];
  });
  let T = Math.max(...raw.map((t) => t.length));
  if (s.mask === "padding" && !seedMode && !s.batch) T += 2;
  const items: Item[] = raw.map((tokens) => {
    const padded = tokens.concat(Array<string>(T - tokens.length).fill(PAD));
    return { tokens: padded, labels: uniqueLabels(padded), realLength: tokens.length };
  });

  let dModel = seedMode ? 4 : s.emb === "features" ? FEATURES.length : int(s.dModel, 2, 256);
  let weights = s.weights;
  if (weights === "designed" && s.emb !== "features") {
    notes.push("designed heads need the feature embeddings: random weights used");
    weights = "random";
  }
  const adjusted: Partial<Record<ShapeField, string>> = {};
  if (s.emb === "random" && !seedMode) adjusted.dModel = why(s.dModel, dModel, range(2, 256));
  let heads = int(s.heads, 1, 16);
  adjusted.heads = why(s.heads, heads, range(1, 16));
  let dK = int(s.dK, 1, 256);
  let dV = int(s.dV, 1, 256);
  let fixedHint = "";
  if (weights !== "random") {
    const h = largestDivisorAtMost(dModel, heads);
    if (h !== heads) {
      notes.push(`heads must divide d_model = ${dModel}: using ${h}`);
      adjusted.heads = why(s.heads, h, `heads must divide d_model = ${dModel}`);
    }
    heads = h;
    dK = dV = dModel / heads;
    fixedHint = `${seedMode ? "The worked example's" : weights === "identity" ? "Identity" : "Designed"} weights fix d_k = d_v = ${dModel} / ${heads} and kv heads = heads; seeded random weights free them.`;
  } else {
    adjusted.dK = why(s.dK, dK, range(1, 256));
    adjusted.dV = why(s.dV, dV, range(1, 256));
  }
  let kvHeads = largestDivisorAtMost(heads, int(s.kvHeads, 1, 16));
  if (weights !== "random")
    kvHeads = heads; // fixed projections: one K/V head per head
  else if (kvHeads !== s.kvHeads) {
    notes.push(`kv heads must divide heads: using ${kvHeads}`);
    const inRange = int(s.kvHeads, 1, 16);
    adjusted.kvHeads = why(
      s.kvHeads,
      kvHeads,
      inRange !== s.kvHeads ? range(1, 16) : `kv heads must divide heads = ${heads}`,
    );
  }
  if (seedMode) dModel = 4;
  if (s.emb !== "random" || seedMode) {
    adjusted.dModel = seedMode
      ? "fixed: the worked example prints X with d_model = 4"
      : `fixed: one per named feature (seeded random embeddings free it)`;
  }
  const scale = (s.scaling ? 1 / Math.sqrt(dK) : 1) / s.temperature;
  return {
    items,
    T,
    dModel,
    dK,
    dV,
    heads,
    kvHeads,
    seedMode,
    scale,
    truncated,
    textNotes,
    notes,
    adjusted,
    fixedHint,
    featureNames: s.emb === "features" && !seedMode ? [...FEATURES] : null,
  };
}

/** The options of every attention call for one batch item. */
export function attentionOptions(s: State, cfg: Config, item: Item): AttentionOptions {
  const o = sharedOptions(s, cfg);
  if (item.realLength < cfg.T) o.keyLength = item.realLength;
  return o;
}

/** The options of one batched call over every item: keyLengths pads the shorter sentence. */
export function batchOptions(s: State, cfg: Config): AttentionOptions {
  const o = sharedOptions(s, cfg);
  if (cfg.items.some((it) => it.realLength < cfg.T))
    o.keyLengths = cfg.items.map((it) => it.realLength);
  return o;
}

function sharedOptions(s: State, cfg: Config): AttentionOptions {
  const o: AttentionOptions = { scale: cfg.scale };
  if (s.softcap > 0) o.softcap = s.softcap;
  if (s.mask === "causal") o.causal = true;
  if (s.mask === "custom") {
    const blocked = customCells(s);
    const rows: number[][] = [];
    for (let i = 0; i < cfg.T; i++) {
      rows.push(Array.from({ length: cfg.T }, (_, j) => (blocked.has(`${i}.${j}`) ? 0 : 1)));
    }
    o.boolMask = rows;
  }
  return o;
}
