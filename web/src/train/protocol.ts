// The messages between the Train view (main thread) and its training worker (worker.ts).
// Matrices cross as plain { rows, cols, data } / { shape, data } objects.
import type { Matrix, TaskKind, Tensor } from "attnkit";
import type { Engine } from "../threads";
import type { QKMap } from "./qk";

/** What one run trains: the task, the model's size and the optimiser's settings. */
export interface RunConfig {
  task: TaskKind;
  numLayers: number;
  numHeads: number;
  dModel: number;
  dK: number;
  learningRate: number;
  warmupSteps: number;
  batch: number;
  scaled: boolean;
  /** The initialisation's seed (the task's batches use their own fixed seed). */
  seed: number;
}

/** The task settings the page trains with (docs/model.md, "Settings that train"). */
export interface TaskShape {
  length: number;
  vocabSize: number;
  padding: number;
}

/** One step's metrics on its training batch (before the update). */
export interface StepMetrics {
  run: number;
  step: number;
  loss: number;
  accuracy: number;
}

/** One layer of an inspection of the sample sequence (the contract's LayerInspection). */
export interface LayerView {
  input: Matrix;
  Q: Tensor;
  K: Tensor;
  weights: Tensor;
  dScores?: Tensor;
  /** Per query head: its query/key map (qk.ts), computed in the worker. */
  qk: QKMap[];
}

export interface InspectionView {
  /** Training step of the weights inspected. */
  step: number;
  /** The snapshot inspected, or -1 for the live model. */
  snapshot: number;
  tokens: number[];
  targets: number[];
  predictions: number[];
  loss: number;
  accuracy: number;
  /** Accuracy and loss on the fixed evaluation batch (the task's own metric). */
  evalAccuracy: number;
  evalLoss: number;
  layers: LayerView[];
}

/** What "Open in steps view" needs of a layer (the contract's TrainedLayer, less task and labels). */
export interface LayerWeights {
  layer: number;
  step: number;
  W_Q: Matrix;
  W_K: Matrix;
  W_V: Matrix;
  W_O: Matrix;
  inspection: InspectionView;
}

export type ToWorker =
  /**
   * A new run (and, with `compare`, a second one with the scale flipped), untrained. `id`
   * comes back in its "ready", so that the page knows which of its requests it answers.
   */
  | { type: "reset"; id: number; config: RunConfig; compare: boolean }
  | { type: "train" }
  | { type: "pause" }
  /** One step of every run, then an inspection. */
  | { type: "step" }
  /** Inspect snapshot `index` (-1: the live model). */
  | { type: "inspect"; index: number }
  /** The model's weights file, or (format "onnx") its ONNX file (docs/onnx.md). */
  | { type: "export"; format?: "weights" | "onnx" }
  /**
   * Continue from a weights file (a loadModel() of it) saved at `step`, from which the
   * run's steps count on; the task stays the configured one.
   */
  | { type: "load"; id: number; bytes: Uint8Array; step: number }
  | { type: "layer"; layer: number; index: number }
  /** The page drew the inspection the worker posted while training. */
  | { type: "drawn" };

export type FromWorker =
  | {
      type: "ready";
      /** The id of the "reset" or "load" this run answers. */
      id: number;
      /** The run's settings (a loaded weights file sets the model's). */
      config: RunConfig;
      /** The step the run starts at (a loaded file's, else 0). */
      step: number;
      seqLen: number;
      shape: TaskShape;
      parameterCount: number;
      runs: number;
      engine: Engine;
    }
  | { type: "metrics"; m: StepMetrics }
  | { type: "inspection"; view: InspectionView }
  | { type: "snapshot"; step: number; index: number }
  | { type: "state"; training: boolean; step: number }
  | { type: "weights"; bytes: Uint8Array; step: number }
  | { type: "layer"; weights: LayerWeights }
  | { type: "error"; message: string };

/** Steps between snapshots of the weights. */
export const SNAPSHOT_EVERY = 25;

/** The task settings of docs/model.md (those the model's tests train). */
export function taskShape(task: TaskKind): TaskShape {
  switch (task) {
    case "induction":
      return { length: 8, vocabSize: 24, padding: 8 };
    case "majority":
      return { length: 9, vocabSize: 5, padding: 0 };
    default:
      return { length: 6, vocabSize: 10, padding: 0 };
  }
}
