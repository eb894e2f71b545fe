// The page state's shape: what the URL query string holds. Its own module so that the
// presets (which set part of it) and the state's parsing (which reads the presets) both
// use it without importing each other.

export type EmbeddingKind = "features" | "random";
/** "trained": a trained model's layer, whose numbers live in memory only (trained.ts). */
export type WeightKind = "random" | "identity" | "designed" | "seed" | "trained";
export type MaskKind = "none" | "causal" | "padding" | "custom";
export type ViewId =
  "steps" | "headview" | "grid" | "saturation" | "decoding" | "train" | "language" | "gpt2";

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
