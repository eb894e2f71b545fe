// The Train view's worker: loads attnkit with the model, trains one run (and, to compare,
// the same run with the scale flipped) in short slices so that messages (pause, inspect)
// are answered between them, and posts every step's metrics and, at most every
// INSPECT_MS, an inspection of one fixed sample sequence.
import createAttnkit from "attnkit";
import type { AttnkitWithModel, Model, TaskBatch, TaskConfig, Tensor, Trainer } from "attnkit";
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
let training = false;
/** The step a loaded weights file was saved at: the run's steps count on from it. */
let base = 0;
let lastInspect = 0;
/** The next slice's timer while training. */
let drawWait: ReturnType<typeof setTimeout> | undefined;

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
  training = false;
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
    target: attn.target,
    simd: attn.simd,
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

const copyT = (t: Tensor): Tensor => ({ shape: [...t.shape], data: t.data });

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
  const m = attn.loadModel(snapshots[index].bytes);
  try {
    return fn(m, snapshots[index].step);
  } finally {
    m.dispose();
  }
}

function inspect(index: number): void {
  lastInspect = performance.now();
  post({ type: "inspection", view: withModel(index, (m, step) => inspection(m, step, index)) });
}

function postState(): void {
  post({ type: "state", training, step: steps() });
}

/** Trains for one slice, then lets the messages in before the next. */
function slice(): void {
  drawWait = undefined;
  if (!training || !runs.length) return;
  const t0 = performance.now();
  let inspected = false;
  try {
    do stepAll();
    while (performance.now() - t0 < SLICE_MS);
    if (performance.now() - lastInspect >= INSPECT_MS) {
      inspect(-1);
      inspected = true;
    }
  } catch (err) {
    training = false;
    fail(err);
  }
  postState();
  if (training) drawWait = setTimeout(slice, inspected ? DRAW_WAIT_MS : 0);
}

/** The page drew the last inspection: training goes on at once. */
function drawn(): void {
  if (drawWait === undefined) return;
  clearTimeout(drawWait);
  drawWait = setTimeout(slice, 0);
}

function fail(err: unknown): void {
  post({
    type: "error",
    message: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
  });
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
      if (!training) {
        training = true;
        if (drawWait !== undefined) clearTimeout(drawWait);
        drawWait = setTimeout(slice, 0);
      }
      postState();
      return;
    case "pause":
      training = false;
      inspect(-1);
      postState();
      return;
    case "step":
      training = false;
      stepAll();
      inspect(-1);
      postState();
      return;
    case "drawn":
      drawn();
      return;
    case "inspect":
      inspect(msg.index);
      return;
    case "export": {
      const bytes = runs[0].model.exportWeights();
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

// Messages wait for the module to load; they are then handled in order.
const queue: ToWorker[] = [];
let loaded = false;
self.onmessage = (e: MessageEvent<ToWorker>) => {
  queue.push(e.data);
  if (loaded) drain();
};
function drain(): void {
  while (queue.length) {
    try {
      handle(queue.shift()!);
    } catch (err) {
      fail(err);
    }
  }
}
createAttnkit({ model: true }).then(
  (a) => {
    attn = a;
    loaded = true;
    drain();
  },
  (err) => fail(err),
);
