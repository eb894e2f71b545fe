// The Train view's side of the worker: what the worker reported (every step's metrics,
// the latest inspection, the snapshots) and the commands it is sent. The view redraws at
// most every REDRAW_MS however often the worker reports.
import type {
  FromWorker,
  InspectionView,
  LayerWeights,
  RunConfig,
  TaskShape,
  ToWorker,
} from "./protocol";
import { engineText, noteEngine } from "../threads";
import { workerLink } from "../worker-link";

/** The defaults train induction to >= 90% (docs/model.md, "Settings that train"). */
export const DEFAULT_CONFIG: RunConfig = {
  task: "induction",
  numLayers: 2,
  numHeads: 2,
  dModel: 32,
  dK: 16,
  learningRate: 1e-2,
  warmupSteps: 50,
  batch: 32,
  scaled: true,
  seed: 1,
};

export interface Curve {
  step: number[];
  loss: number[];
  accuracy: number[];
}

export interface EvalPoint {
  step: number;
  accuracy: number;
  loss: number;
}

export interface TrainRun {
  config: RunConfig;
  /** A second run with the scale flipped, its loss drawn over the first's. */
  compare: boolean;
  ready: { seqLen: number; shape: TaskShape; parameterCount: number; runs: number } | null;
  target: string;
  /** The threads the worker's module runs (0 until it is ready). */
  threads: number;
  /** Per run: every step's metrics on its training batch. */
  curves: Curve[];
  /** The fixed evaluation batch's accuracy at each inspection of the live model. */
  evals: EvalPoint[];
  /** The inspection on screen (the live model's, or a snapshot's while scrubbing). */
  inspection: InspectionView | null;
  /** Step of each kept snapshot. */
  snapshots: number[];
  /** Snapshot on screen, or -1 for the live model. */
  scrub: number;
  training: boolean;
  step: number;
  /** The head whose dS is shown. */
  layer: number;
  head: number;
  /**
   * The weights file the run started from: its name and the step it was saved at (read
   * from the name the page gives it; null when the name holds none). Null: a fresh run.
   */
  loaded: { name: string; step: number | null } | null;
  /** Wall-clock ms from the first Train press, and when evaluation accuracy first reached 90%. */
  startedAt: number;
  reached90Ms: number | null;
  error: string;
}

export const run: TrainRun = {
  config: { ...DEFAULT_CONFIG },
  compare: false,
  ready: null,
  target: "",
  threads: 0,
  curves: [],
  evals: [],
  inspection: null,
  snapshots: [],
  scrub: -1,
  training: false,
  step: 0,
  layer: 0,
  head: 0,
  loaded: null,
  startedAt: 0,
  reached90Ms: null,
  error: "",
};

/** Curves are redrawn at most every CURVES_MS; the whole view at most every FULL_MS while training. */
const CURVES_MS = 250;
const FULL_MS = 1000;

let redraw: () => void = () => {};
let redrawCurves: () => void = () => {};
let onConfig: () => void = () => {};
let onLayer: ((w: LayerWeights) => void) | null = null;
let onWeights: ((bytes: Uint8Array, step: number) => void) | null = null;
let timer: number | undefined;
let lastCurves = 0;
let lastFull = 0;
let fullPending = false;

/**
 * Redraws soon, each kind of redraw in its own task: only the curves (`full` false) at
 * most every CURVES_MS, the whole view at most every FULL_MS while training.
 */
function scheduleRedraw(full: boolean): void {
  fullPending ||= full;
  if (timer !== undefined) return;
  const now = performance.now();
  const dueFull = fullPending ? lastFull + (run.training ? FULL_MS : 0) : Infinity;
  const at = Math.min(dueFull, lastCurves + CURVES_MS);
  timer = window.setTimeout(
    () =>
      requestAnimationFrame(() => {
        timer = undefined;
        const t = performance.now();
        if (fullPending && t >= lastFull + (run.training ? FULL_MS : 0) - 1) {
          fullPending = false;
          lastFull = lastCurves = t;
          redraw();
        } else {
          lastCurves = t;
          redrawCurves();
        }
        if (fullPending) scheduleRedraw(true);
      }),
    Math.max(0, at - now),
  );
}

/** Whether a redraw is due: the state is ahead of the screen until it runs. */
export const redrawPending = () => timer !== undefined || fullPending;

function receive(msg: FromWorker): void {
  if (msg.type === "ready") {
    if (msg.id !== awaiting) return;
    awaiting = 0;
  } else if (msg.type === "error") {
    awaiting = 0; // the request failed: the worker keeps the run it had
    loading = null;
  } else if (awaiting && msg.type !== "weights" && msg.type !== "layer") {
    return;
  }
  switch (msg.type) {
    case "ready": {
      // The settings of a loaded file go to the panel; those of a reset are the panel's
      // already (writing them back would erase what the user is typing meanwhile).
      const changed = JSON.stringify(msg.config) !== JSON.stringify(run.config);
      run.config = msg.config;
      if (changed) onConfig();
      run.ready = {
        seqLen: msg.seqLen,
        shape: msg.shape,
        parameterCount: msg.parameterCount,
        runs: msg.runs,
      };
      run.target = engineText(msg.engine);
      run.threads = msg.engine.threads;
      noteEngine(msg.engine);
      run.step = msg.step;
      run.loaded = loading && loading.id === msg.id ? loading.file : null;
      loading = null;
      run.curves = Array.from({ length: msg.runs }, () => ({ step: [], loss: [], accuracy: [] }));
      run.evals = [];
      run.snapshots = [];
      run.scrub = -1;
      run.error = "";
      run.reached90Ms = null;
      run.startedAt = 0;
      break;
    }
    case "metrics": {
      const c = run.curves[msg.m.run];
      if (c) {
        c.step.push(msg.m.step);
        c.loss.push(msg.m.loss);
        c.accuracy.push(msg.m.accuracy);
      }
      scheduleRedraw(false);
      return;
    }
    case "inspection": {
      const v = msg.view;
      if (v.snapshot < 0) {
        const last = run.evals[run.evals.length - 1];
        if (!last || last.step !== v.step)
          run.evals.push({ step: v.step, accuracy: v.evalAccuracy, loss: v.evalLoss });
        if (run.reached90Ms === null && run.startedAt && v.evalAccuracy >= 0.9)
          run.reached90Ms = performance.now() - run.startedAt;
      }
      // While scrubbing, the live model's inspections only feed the curves.
      if (v.snapshot === run.scrub || (run.scrub < 0 && v.snapshot < 0)) run.inspection = v;
      if (run.training && v.snapshot < 0) {
        // Drawn at once, while the worker waits for "drawn" (the main thread has a core).
        requestAnimationFrame(() => {
          fullPending = false;
          lastFull = lastCurves = performance.now();
          redraw();
          send({ type: "drawn" });
        });
        return;
      }
      break;
    }
    case "snapshot":
      run.snapshots[msg.index] = msg.step;
      scheduleRedraw(false);
      return;
    case "state": {
      const changed = run.training !== msg.training;
      run.training = msg.training;
      run.step = msg.step;
      // The buttons follow at once (Pause enabled as soon as training runs).
      if (changed) redrawCurves();
      // A full redraw only once training stops: while it runs, each inspection brings one.
      scheduleRedraw(changed && !msg.training);
      return;
    }
    case "weights":
      onWeights?.(msg.bytes, msg.step);
      return;
    case "layer":
      onLayer?.(msg.weights);
      return;
    case "error":
      run.error = msg.message;
      break;
  }
  scheduleRedraw(true);
}

const worker = workerLink<ToWorker, FromWorker>(
  () => new Worker(new URL("./worker.ts", import.meta.url), { type: "module" }),
  (msg) => receive(msg),
  (why) => {
    run.error = `the training worker failed: ${why}`;
    scheduleRedraw(true);
  },
);
const send = worker.send;

/** Whether the page's thread count waits for the next run (the worker runs another). */
export const threadsPending = () => worker.stale();

/** The learner picked another thread count: an untrained run starts again on it at once. */
export function threadsChanged(): void {
  if (worker.stale() && !run.training && run.step === 0 && !run.loaded) reset();
  scheduleRedraw(true);
}

/** Starts the worker (once); `draw` redraws the view, `drawCurves` its curves, `configChanged` its settings. */
export function startRuns(
  draw: () => void,
  drawCurves: () => void,
  configChanged: () => void,
): void {
  redraw = draw;
  redrawCurves = drawCurves;
  onConfig = configChanged;
  if (!worker.started()) reset();
}

// Requests that start a run ("reset", "load") are numbered; until the worker's
// "ready" for the latest arrives, what it posts belongs to a run the page has
// left (a "ready" for an older request would write its settings over newer ones).
let requests = 0;
let awaiting = 0;
/** The weights file being loaded, and the request that loads it. */
let loading: { id: number; file: { name: string; step: number | null } } | null = null;

export function reset(): void {
  // A run starts on the page's thread count (threads.ts): a new worker if it changed.
  if (worker.stale()) worker.restart();
  run.ready = null;
  run.inspection = null;
  run.training = false;
  run.step = 0;
  awaiting = ++requests;
  send({ type: "reset", id: awaiting, config: { ...run.config }, compare: run.compare });
}

export function train(): void {
  if (!run.startedAt) run.startedAt = performance.now();
  run.scrub = -1;
  send({ type: "train" });
}

export function pause(): void {
  send({ type: "pause" });
}

export function step(): void {
  run.scrub = -1;
  send({ type: "step" });
}

/** Shows snapshot `index` (-1 or past the last: the live model). */
export function scrubTo(index: number): void {
  run.scrub = index >= run.snapshots.length ? -1 : index;
  send({ type: "inspect", index: run.scrub });
}

export function requestWeights(
  then: (bytes: Uint8Array, step: number) => void,
  format: "weights" | "onnx" = "weights",
): void {
  onWeights = then;
  send({ type: "export", format });
}

/** Continues from a weights file saved at `step` (null: unknown, counted from 0). */
export function loadWeights(bytes: Uint8Array, name: string, step: number | null): void {
  awaiting = ++requests;
  loading = { id: awaiting, file: { name, step } };
  send({ type: "load", id: awaiting, bytes, step: step ?? 0 }, [bytes.buffer]);
}

/** The weights and inspection of `layer` in the model on screen. */
export function requestLayer(layer: number, then: (w: LayerWeights) => void): void {
  onLayer = then;
  send({ type: "layer", layer, index: run.scrub });
}

export function setConfig(patch: Partial<RunConfig>, compare = run.compare): void {
  run.config = { ...run.config, ...patch };
  run.compare = compare;
  reset();
}
