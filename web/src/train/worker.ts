// The Train view's worker: loads attnkit with the model, trains one run (and, to compare,
// the same run with the scale flipped) in short slices so that messages (pause, inspect)
// are answered between them, and posts every step's metrics and, at most every
// INSPECT_MS, an inspection of one fixed sample sequence.
import type { AttnkitWithModel, Model, TaskBatch, TaskConfig, Trainer } from "attnkit";
import { copyT, engineOf, errorMessage, serve, trainingLoop, withSnapshot } from "../worker-host";
import {
  SNAPSHOT_EVERY,
  taskShape,
  type FromWorker,
  type InspectionView,
  type LayerWeights,
  type RunConfig,
  type ToWorker,
} from "./protocol";
import { qkMap } from "./qk";

/** Training work done before the worker looks at its messages again. */
const SLICE_MS = 25;
/** The least time between two inspections posted while training. */
const INSPECT_MS = 800;
/**
 * After posting an inspection, training waits for the page to draw it ("drawn"), at most
 * this long: the main thread then has a core to itself for its largest redraw.
 */
const DRAW_WAIT_MS = 120;
/** The task's batches, the sample and the evaluation batch come from fixed seeds. */
const BATCH_SEED = 1234;
const SAMPLE_SEED = 7;
const EVAL_SEED = 99;
const EVAL_BATCH = 256;

interface Run {
  model: Model;
  trainer: Trainer;
  batches: ReturnType<AttnkitWithModel["createTaskGenerator"]>;
}

let attn: AttnkitWithModel;
let runs: Run[] = [];
let config: RunConfig | null = null;
let task: TaskConfig | null = null;
let sample: TaskBatch | null = null;
let evalBatch: TaskBatch | null = null;
let snapshots: { step: number; bytes: Uint8Array }[] = [];
/** The step a loaded weights file was saved at: the run's steps count on from it. */
let base = 0;
let lastInspect = 0;

const post = (m: FromWorker, transfer: Transferable[] = []) =>
  (self as unknown as Worker).postMessage(m, transfer);

function disposeRuns(): void {
  for (const r of runs) {
    r.trainer.dispose();
    r.batches.dispose();
    r.model.dispose();
  }
  runs = [];
}

/** The run's training step: the trainer's steps after the loaded file's. */
const steps = (): number => base + (runs[0]?.trainer.steps ?? 0);

function newRun(c: RunConfig, t: TaskConfig, scaled: boolean, model?: Model): Run {
  const m =
    model ??
    attn.createModel(
      {
        vocabSize: t.vocabSize,
        maxSeqLen: attn.taskSeqLen(t),
        dModel: c.dModel,
        numLayers: c.numLayers,
        numHeads: c.numHeads,
        dK: c.dK,
        scaleBySqrtDk: scaled,
      },
      { seed: c.seed, task: t },
    );
  const trainer = attn.createTrainer(m, {
    learningRate: c.learningRate,
    warmupSteps: c.warmupSteps,
  });
  return { model: m, trainer, batches: attn.createTaskGenerator(t, { seed: BATCH_SEED }) };
}

function reset(id: number, c: RunConfig, compare: boolean, loaded?: Model, from = 0): void {
  disposeRuns();
  loop.stop();
  base = from;
  const s = taskShape(c.task);
  const t: TaskConfig = {
    kind: c.task,
    length: s.length,
    vocabSize: s.vocabSize,
    padding: s.padding,
  };
  config = c;
  task = t;
  runs = [newRun(c, t, loaded ? loaded.config.scaleBySqrtDk : c.scaled, loaded)];
  if (compare) runs.push(newRun(c, t, !runs[0].model.config.scaleBySqrtDk));
  sample = attn.makeBatch(t, { batch: 1, seed: SAMPLE_SEED });
  evalBatch = attn.makeBatch(t, { batch: EVAL_BATCH, seed: EVAL_SEED });
  snapshots = [];
  post({
    type: "ready",
    id,
    config: c,
    step: base,
    seqLen: attn.taskSeqLen(t),
    shape: s,
    parameterCount: runs[0].model.parameterCount,
    runs: runs.length,
    engine: engineOf(attn),
  });
  keepSnapshot();
  inspect(-1);
  postState();
}

function keepSnapshot(): void {
  const step = steps();
  snapshots.push({ step, bytes: runs[0].model.exportWeights() });
  post({ type: "snapshot", step, index: snapshots.length - 1 });
}

function stepAll(): void {
  const b = config!.batch;
  runs.forEach((r, run) => {
    const m = r.trainer.step(r.batches.next(b));
    post({
      type: "metrics",
      m: { run, step: base + r.trainer.steps, loss: m.loss, accuracy: m.accuracy },
    });
  });
  if (steps() % SNAPSHOT_EVERY === 0) keepSnapshot();
}

/** An inspection of the sample by `model` (the live one or a snapshot's). */
function inspection(model: Model, step: number, snapshot: number): InspectionView {
  const s = sample!;
  const r = model.inspect(s.tokens, s.targets);
  const ev = model.evaluate(evalBatch!);
  return {
    step,
    snapshot,
    tokens: Array.from(s.tokens),
    targets: Array.from(s.targets),
    predictions: Array.from(r.predictions),
    loss: r.loss ?? NaN,
    accuracy: r.accuracy ?? NaN,
    evalAccuracy: ev.accuracy,
    evalLoss: ev.loss,
    layers: r.layers.map((l, li) => {
      const [H] = l.Q.shape,
        [G] = l.K.shape;
      return {
        input: l.input,
        Q: copyT(l.Q),
        K: copyT(l.K),
        weights: copyT(l.weights),
        dScores: l.dScores && copyT(l.dScores),
        qk: Array.from({ length: H }, (_, h) =>
          qkMap(l.Q, l.K, l.weights, h, Math.floor(h / (H / G)), `${snapshot}:${li}:${h}`),
        ),
      };
    }),
  };
}

/** Runs `fn` on snapshot `index`'s model (loaded from its bytes), or on the live model (-1). */
function withModel<T>(index: number, fn: (m: Model, step: number) => T): T {
  if (index < 0 || index >= snapshots.length) return fn(runs[0].model, steps());
  return withSnapshot(attn, snapshots[index], fn);
}

function inspect(index: number): void {
  lastInspect = performance.now();
  post({ type: "inspection", view: withModel(index, (m, step) => inspection(m, step, index)) });
}

function postState(): void {
  post({ type: "state", training: loop.running, step: steps() });
}

/**
 * Trains in slices; after a slice that posted an inspection, waits for the page to draw it
 * ("drawn"), at most DRAW_WAIT_MS.
 */
const loop = trainingLoop({
  sliceMs: SLICE_MS,
  step: stepAll,
  afterSlice: () => {
    if (performance.now() - lastInspect < INSPECT_MS) return 0;
    inspect(-1);
    return DRAW_WAIT_MS;
  },
  fail,
  state: postState,
});

function fail(err: unknown): void {
  post({ type: "error", message: errorMessage(err) });
}

function layerWeights(layer: number, index: number): LayerWeights {
  return withModel(index, (m, step) => {
    const p = m.parameters().layers[layer];
    return {
      layer,
      step,
      W_Q: p.W_Q,
      W_K: p.W_K,
      W_V: p.W_V,
      W_O: p.W_O,
      inspection: inspection(m, step, index),
    };
  });
}

function handle(msg: ToWorker): void {
  if (msg.type !== "reset" && msg.type !== "load" && msg.type !== "drawn" && !runs.length)
    throw new Error(
      "there is no model: the last settings were refused; change them to start again",
    );
  switch (msg.type) {
    case "reset":
      reset(msg.id, msg.config, msg.compare);
      return;
    case "train":
      loop.start();
      postState();
      return;
    case "pause":
      loop.stop();
      inspect(-1);
      postState();
      return;
    case "step":
      loop.stop();
      stepAll();
      inspect(-1);
      postState();
      return;
    case "drawn":
      loop.hurry();
      return;
    case "inspect":
      inspect(msg.index);
      return;
    case "export": {
      const model = runs[0].model;
      if (msg.format === "onnx") {
        void model.exportOnnx().then(
          (bytes) => post({ type: "weights", bytes, step: steps() }, [bytes.buffer]),
          (err) => post({ type: "error", message: String(err) }),
        );
        return;
      }
      const bytes = model.exportWeights();
      post({ type: "weights", bytes, step: steps() }, [bytes.buffer]);
      return;
    }
    case "load": {
      const m = attn.loadModel(msg.bytes);
      const c = m.config;
      const s = taskShape(config!.task);
      const t = { ...task! };
      if (c.vocabSize !== s.vocabSize || c.maxSeqLen < attn.taskSeqLen(t)) {
        m.dispose();
        throw new Error(
          `these weights have vocabulary ${c.vocabSize} and ${c.maxSeqLen} positions; the ${t.kind} task needs vocabulary ${s.vocabSize} and ${attn.taskSeqLen(t)} positions`,
        );
      }
      reset(
        msg.id,
        {
          ...config!,
          numLayers: c.numLayers,
          numHeads: c.numHeads,
          dModel: c.dModel,
          dK: c.dK,
          scaled: c.scaleBySqrtDk,
        },
        false,
        m,
        msg.step,
      );
      return;
    }
    case "layer":
      post({ type: "layer", weights: layerWeights(msg.layer, msg.index) });
      return;
  }
}

serve<ToWorker>((a) => (attn = a), handle, fail);
