// The messages between the GPT-2 view (main thread) and its worker (worker.ts). Tensors
// cross as plain { shape, data } objects.
import type { Matrix, Tensor } from "attnkit";
import type { CacheCheck } from "../worker-host";
import type { ScoreKind } from "./settings";

/** Where a model comes from: a checkpoint (a file, a URL, a Hub repository id) or an attnkit weights file. */
export type Source =
  /** A safetensors file, with its config.json's object (dropped beside it) or the heads typed. */
  | { kind: "file"; file: File; config?: Record<string, unknown>; numHeads?: number }
  | { kind: "url"; url: string }
  | { kind: "hub"; repo: string }
  | { kind: "weights"; bytes: Uint8Array; name: string };

/** What checkpointInfo says before the download (or, for a weights file, what it holds). */
export interface SourceInfo {
  /** Where it comes from, as the page names it. */
  from: string;
  /** What the model is: "a GPT-2-family model", "a language model of characters". */
  what: string;
  /** Read from this device (a file, the Language view's model), not downloaded. */
  local: boolean;
  totalBytes: number;
  memoryBytes: number;
  parameters: number;
  dtype: string;
  numLayers: number;
  numHeads: number;
  dModel: number;
  vocabSize: number;
  maxSeqLen: number;
}

/** A model ready in the worker. */
export interface ModelSummary {
  from: string;
  numLayers: number;
  numHeads: number;
  dModel: number;
  dK: number;
  vocabSize: number;
  maxSeqLen: number;
  parameterCount: number;
  /** Whether the layers carry biases (folded into the steps view's X as a column of ones). */
  bias: boolean;
  /** Per score, [numLayers][numHeads] on the repeated random sequence (headScores). */
  scores: Record<ScoreKind, number[][]>;
  /** The repeated sequence's half. */
  scoreLength: number;
  target: string;
}

/** The sentence through the model: its tokens, every head's map, the top next tokens. */
export interface SentenceView {
  text: string;
  tokens: number[];
  /** Each token's text piece. */
  pieces: string[];
  /** Per layer, [numHeads, T, T]. */
  layers: Tensor[];
  /** The likeliest next tokens after the sentence, most likely first. */
  top: { token: number; piece: string; p: number }[];
  /** The scores on the sentence, where defined (null: nowhere). */
  scores: Record<ScoreKind, number[][] | null>;
  /** The sentence's tokens beyond the context, dropped (the first maxSeqLen are read). */
  dropped: number;
}

export interface GenOptions {
  prompt: string;
  length: number;
  temperature: number;
  topK: number;
  seed: number;
}

/** One generated token with every layer's attention over the cache. */
export interface GenStep {
  id: number;
  index: number;
  token: number;
  piece: string;
  /** Per layer, [numHeads, context]. */
  weights: Tensor[];
  /** The context's pieces (prompt and tokens so far, newest last). */
  context: string[];
}

/** The generation's check: each step's logits and weights against one full forward. */
export type GenCheck = { id: number } & CacheCheck;

/** What the steps view needs of one layer (trained.ts's TrainedLayer). */
export interface LayerNumbers {
  layer: number;
  tokens: number[];
  pieces: string[];
  /** [T, dModel (+ 1 with biases: a column of ones)] */
  input: Matrix;
  W_Q: Matrix;
  W_K: Matrix;
  W_V: Matrix;
  W_O: Matrix;
  numKvHeads: number;
  dK: number;
  scaled: boolean;
  weights: Tensor;
}

export type ToWorker =
  | { type: "info"; id: number; source: Source; hubUrl?: string }
  | { type: "open"; id: number; source: Source; hubUrl?: string }
  | { type: "cancel"; id: number }
  | { type: "sentence"; id: number; text: string }
  | { type: "generate"; id: number; options: GenOptions; delayMs: number }
  | { type: "stop-generate" }
  | { type: "layer"; layer: number; text: string }
  /** The model as an ONNX file (docs/onnx.md). */
  | { type: "onnx" };

export type FromWorker =
  | { type: "info"; id: number; info: SourceInfo }
  | { type: "progress"; id: number; loadedBytes: number; totalBytes: number }
  | { type: "ready"; id: number; model: ModelSummary }
  /** The info or the open of request `id` failed: the model in use (if any) stays. */
  | { type: "refused"; id: number; message: string }
  | { type: "sentence"; id: number; view: SentenceView }
  | { type: "gen-step"; step: GenStep }
  | { type: "gen-done"; check: GenCheck }
  | { type: "layer"; layer: LayerNumbers }
  | { type: "onnx"; bytes: Uint8Array }
  | { type: "error"; message: string };
