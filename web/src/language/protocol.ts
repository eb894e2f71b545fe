// The messages between the Language view (main thread) and its worker (worker.ts), and
// the presets of the model it trains. Tensors cross as plain { shape, data } objects.
import type { Matrix, Tensor } from "attnkit";
import type { Engine } from "../threads";
import type { CacheCheck } from "../worker-host";

/** What one run trains: the model's size and the optimiser's settings. */
export interface LangConfig {
  numLayers: number;
  numHeads: number;
  dModel: number;
  dFF: number;
  /** The context: the model's maxSeqLen and the dataset's window. */
  seqLen: number;
  batch: number;
  learningRate: number;
  /** AdamW's first-moment (momentum) decay. */
  beta1: number;
  warmupSteps: number;
  /** The cosine reaches minLearningRate at this step. */
  decaySteps: number;
  minLearningRate: number;
}

export type PresetId = "small" | "default" | "large";

/**
 * docs/language.md's default (chosen by bench/wasm/language-sweep.mjs: the least CPU time to a
 * validation loss of 2.0 with a context that holds the default sentence; its learning rate and
 * beta1 by the optimiser sweep of docs/language.md: the fewest steps to 2.0), a smaller one that
 * learns words in a tab within a minute, and a larger one (nanoGPT's CPU shape).
 */
export const PRESETS: Record<PresetId, LangConfig> = {
  small: {
    numLayers: 2,
    numHeads: 4,
    dModel: 64,
    dFF: 256,
    seqLen: 32,
    batch: 16,
    learningRate: 3e-3,
    beta1: 0.9,
    warmupSteps: 50,
    decaySteps: 1500,
    minLearningRate: 3e-4,
  },
  default: {
    numLayers: 3,
    numHeads: 4,
    dModel: 96,
    dFF: 288,
    seqLen: 64,
    batch: 12,
    learningRate: 5e-3,
    beta1: 0.7,
    warmupSteps: 100,
    decaySteps: 1500,
    minLearningRate: 5e-4,
  },
  large: {
    numLayers: 4,
    numHeads: 4,
    dModel: 128,
    dFF: 512,
    seqLen: 64,
    batch: 12,
    learningRate: 3e-3,
    beta1: 0.9,
    warmupSteps: 100,
    decaySteps: 1200,
    minLearningRate: 3e-4,
  },
};

/** The text a run learns: Moby-Dick or the learner's own. */
export interface TextInfo {
  source: "moby-dick" | "own";
  name: string;
  bytes: number;
  characters: number;
  vocabSize: number;
  /** The vocabulary's characters after U+FFFD. */
  vocabulary: string[];
  trainTokens: number;
  validationTokens: number;
  /** The package's referenceLosses: the letter-frequency models' validation losses (nats/char). */
  unigram: number;
  bigram: number;
}

export interface StepMetrics {
  step: number;
  loss: number;
  /** Characters trained per second over the last slice (batch x seqLen per step). */
  tokensPerSecond: number;
}

/** Every head's attention on a sentence (Model.inspect). */
export interface SentenceView {
  step: number;
  snapshot: number;
  text: string;
  /** The characters as the model reads them (unknown ones as U+FFFD). */
  characters: string[];
  tokens: number[];
  /** Per layer, [numHeads, T, T]. */
  layers: Tensor[];
}

/** One generated character (Sampler.next) with every layer's attention over the cache. */
export interface GenStep {
  id: number;
  index: number;
  character: string;
  /** Per layer, [numHeads, context]. */
  weights: Tensor[];
  /** The context the weights cover (prompt and characters so far, newest last). */
  context: string[];
}

/** The check of a generation: the cache's logits and weights against one full forward. */
export type GenCheck = { id: number } & CacheCheck;

/** What "open in steps view" needs of a layer (as the Train view's LayerWeights). */
export interface LangLayer {
  layer: number;
  step: number;
  tokens: number[];
  characters: string[];
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

export interface GenOptions {
  prompt: string;
  temperature: number;
  topK: number;
  length: number;
  seed: number;
}

export type ToWorker =
  /** A text to learn (checked by createTextDataset); `id` comes back in "text" or "text-error". */
  | { type: "text"; id: number; text: string; source: TextInfo["source"]; name: string }
  /** A new untrained model of `config` on the current text. */
  | { type: "reset"; id: number; config: LangConfig }
  | { type: "train" }
  | { type: "pause" }
  | { type: "step" }
  /** The sentence's inspection by snapshot `index` (-1: the live model). */
  | { type: "sentence"; text: string; index: number }
  /** Generate with snapshot `index`'s model (-1: the live one); `delayMs` between characters. */
  | { type: "generate"; id: number; options: GenOptions; index: number; delayMs: number }
  | { type: "stop-generate" }
  /** The model's weights file, or (format "onnx") its ONNX file (docs/onnx.md). */
  | { type: "export"; format?: "weights" | "onnx" }
  | { type: "load"; id: number; bytes: Uint8Array }
  | { type: "layer"; layer: number; text: string; index: number };

export type FromWorker =
  | { type: "text"; id: number; info: TextInfo }
  | { type: "text-error"; id: number; message: string }
  | {
      type: "ready";
      id: number;
      config: LangConfig;
      parameterCount: number;
      engine: Engine;
      validationLoss: number;
      /** The model's trained steps (a loaded file's). */
      step: number;
      /** Whether the model came from a weights file. */
      loaded: boolean;
    }
  | { type: "metrics"; m: StepMetrics }
  | { type: "validation"; step: number; loss: number }
  | { type: "sample"; step: number; prompt: string; text: string }
  | { type: "sentence"; view: SentenceView }
  | { type: "gen-step"; step: GenStep }
  | { type: "gen-done"; check: GenCheck }
  /** The steps of the snapshots kept (index i: snapshot i). */
  | { type: "snapshots"; steps: number[] }
  | { type: "state"; training: boolean; step: number }
  | { type: "weights"; bytes: Uint8Array; step: number }
  | { type: "layer"; layer: LangLayer }
  /** A weights file refused (the run goes on as it was). */
  | { type: "load-error"; id: number; message: string }
  | { type: "error"; message: string };

/**
 * The sample paragraph: its length, temperature, top-k and seed stay fixed over a run; its
 * prompt is Moby-Dick's (the learner's own text gets its first words, worker.ts).
 */
export const SAMPLE = { prompt: "The whale ", length: 180, temperature: 0.8, topK: 20, seed: 7 };
/**
 * The sample's prompt: SAMPLE.prompt for Moby-Dick; for the learner's own text, its first
 * words (up to SAMPLE.prompt's length, ending after a space), so that the model continues
 * words of that text.
 */
export function samplePrompt(text: string, source: TextInfo["source"]): string {
  if (source !== "own") return SAMPLE.prompt;
  const words = text.slice(0, 200).match(/\S+\s/g) ?? [];
  let p = "";
  for (const w of words) {
    if (p && p.length + w.length > SAMPLE.prompt.length) break;
    p += w.replace(/\s$/, " ");
  }
  return p || text.slice(0, SAMPLE.prompt.length);
}

/** Steps between snapshots of the weights. */
export const SNAPSHOT_EVERY = 100;
/** Validation windows: fewer than the dataset's default, so that an evaluation stays short. */
export const VALIDATION_WINDOWS = 32;
