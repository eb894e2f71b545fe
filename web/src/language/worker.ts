// The Language view's worker: loads attnkit with the model, holds the text's dataset and
// one small GPT, trains it in short slices so that messages (pause, a sentence to inspect,
// a generation) are answered between them, and posts each step's loss, a validation loss
// every VALIDATE_EVERY steps and, at most every SAMPLE_MS, a sample paragraph from a fixed
// prompt and seed.
import type { AttnkitWithModel, Model, Sampler, TextDataset, Trainer } from "attnkit";
import {
  copyT,
  engineOf,
  errorMessage,
  runGeneration,
  serve,
  trainingLoop,
  withSnapshot,
} from "../worker-host";
import {
  SAMPLE,
  samplePrompt,
  SNAPSHOT_EVERY,
  VALIDATION_WINDOWS,
  type FromWorker,
  type GenOptions,
  type LangConfig,
  type LangLayer,
  type SentenceView,
  type TextInfo,
  type ToWorker,
} from "./protocol";

/** Training work done before the worker looks at its messages again. */
const SLICE_MS = 40;
/** The least time between two sample paragraphs while training. */
const SAMPLE_MS = 4000;
/** Steps between two validation losses (the same steps in every run: a test can read them). */
const VALIDATE_EVERY = 25;
/** The training windows' and the initialisation's seeds. */
const DATA_SEED = 1;
const MODEL_SEED = 1;
/** Snapshots kept at most (the oldest but the first are dropped beyond). */
const MAX_SNAPSHOTS = 40;

let attn: AttnkitWithModel;
let text = "";
let info: TextInfo | null = null;
let dataset: TextDataset | null = null;
let model: Model | null = null;
let trainer: Trainer | null = null;
let config: LangConfig | null = null;
let snapshots: { step: number; bytes: Uint8Array }[] = [];
let lastSample = 0;
/** The generation under way: its own copy of the model, so that training may go on. */
let gen: { model: Model; sampler: Sampler; run: { stop(): void } } | null = null;

const post = (m: FromWorker, transfer: Transferable[] = []) =>
  (self as unknown as Worker).postMessage(m, transfer);

/** The live model's steps: those of a loaded weights file count (the file carries them). */
const steps = (): number => model?.trainedSteps ?? 0;

function disposeRun(): void {
  trainer?.dispose();
  model?.dispose();
  trainer = null;
  model = null;
}

/** A new text: its dataset (the package checks it) and its reference losses. */
function setText(id: number, t: string, source: TextInfo["source"], name: string): void {
  const seqLen = config?.seqLen ?? 64;
  const d = attn.createTextDataset(t, {
    seqLen,
    seed: DATA_SEED,
    validationWindows: VALIDATION_WINDOWS,
  });
  const refs = attn.referenceLosses(d, t);
  dataset?.dispose();
  dataset = d;
  text = t;
  info = {
    source,
    name,
    bytes: new TextEncoder().encode(t).length,
    characters: d.trainTokens + d.validationTokens,
    vocabSize: d.vocabSize,
    vocabulary: d.vocabulary.slice(1),
    trainTokens: d.trainTokens,
    validationTokens: d.validationTokens,
    unigram: refs.unigram,
    bigram: refs.bigram,
  };
  post({ type: "text", id, info });
}

/** The dataset again for `seqLen` (and a loaded model's vocabulary), when they changed. */
function fitDataset(seqLen: number, vocabulary?: readonly string[]): void {
  const same =
    dataset &&
    dataset.seqLen === seqLen &&
    (!vocabulary ||
      (vocabulary.length === dataset.vocabSize &&
        vocabulary.every((c, i) => c === dataset!.vocabulary[i])));
  if (same) return;
  const d = attn.createTextDataset(text, {
    seqLen,
    seed: DATA_SEED,
    validationWindows: VALIDATION_WINDOWS,
    vocabulary: vocabulary ? [...vocabulary] : undefined,
  });
  const refs = attn.referenceLosses(d, text);
  dataset?.dispose();
  dataset = d;
  info = {
    ...info!,
    vocabSize: d.vocabSize,
    vocabulary: d.vocabulary.slice(1),
    unigram: refs.unigram,
    bigram: refs.bigram,
  };
  post({ type: "text", id: 0, info });
}

function reset(id: number, c: LangConfig, loaded?: Model): void {
  stopGenerate();
  loop.stop();
  disposeRun();
  config = c;
  if (!dataset) throw new Error("there is no text yet: it is still loading");
  fitDataset(c.seqLen, loaded?.vocabulary ?? undefined);
  model =
    loaded ??
    attn.createModel(
      {
        maxSeqLen: c.seqLen,
        dModel: c.dModel,
        numLayers: c.numLayers,
        numHeads: c.numHeads,
        dFF: c.dFF,
        layerNorm: true,
      },
      { seed: MODEL_SEED, vocabulary: dataset.vocabulary },
    );
  trainer = attn.createTrainer(model, {
    learningRate: c.learningRate,
    beta1: c.beta1,
    warmupSteps: c.warmupSteps,
    decaySteps: c.decaySteps,
    minLearningRate: c.minLearningRate,
    weightDecay: 0.1,
    beta2: 0.99,
    clipNorm: 1,
  });
  snapshots = [];
  post({
    type: "ready",
    id,
    config: c,
    parameterCount: model.parameterCount,
    engine: engineOf(attn),
    validationLoss: dataset.validationLoss(model),
    step: steps(),
    loaded: !!loaded,
  });
  keepSnapshot();
  sample();
  postState();
}

function keepSnapshot(): void {
  if (snapshots.length >= MAX_SNAPSHOTS) snapshots.splice(1, 1);
  snapshots.push({ step: steps(), bytes: model!.exportWeights() });
  // Sent whole: the indices shift when one is dropped.
  post({ type: "snapshots", steps: snapshots.map((s) => s.step) });
}

/** One training step; every VALIDATE_EVERY steps the validation loss, every SNAPSHOT_EVERY a snapshot. */
function stepOnce(): number {
  const c = config!;
  const m = trainer!.step(dataset!.next(c.batch));
  const s = steps();
  if (s % VALIDATE_EVERY === 0)
    post({ type: "validation", step: s, loss: dataset!.validationLoss(model!) });
  if (s % SNAPSHOT_EVERY === 0) keepSnapshot();
  return m.loss;
}

function sample(): void {
  lastSample = performance.now();
  const prompt = samplePrompt(text, info?.source ?? "moby-dick");
  let out: string;
  try {
    out = model!.generate(prompt, {
      length: SAMPLE.length,
      temperature: SAMPLE.temperature,
      topK: SAMPLE.topK,
      seed: SAMPLE.seed,
    }).text;
  } catch (err) {
    // Training goes on; the sample says why it is missing.
    out = ` [no sample: ${err instanceof Error ? err.message : String(err)}]`;
  }
  post({ type: "sample", step: steps(), prompt, text: out });
}

function postState(): void {
  post({ type: "state", training: loop.running, step: steps() });
}

/** Trains in slices, each step's loss posted; a sample at most every SAMPLE_MS. */
const loop = trainingLoop({
  sliceMs: SLICE_MS,
  step: (t0, n) => {
    const loss = stepOnce();
    const dt = (performance.now() - t0) / 1000;
    post({
      type: "metrics",
      m: {
        step: steps(),
        loss,
        tokensPerSecond: dt > 0 ? (n * config!.batch * config!.seqLen) / dt : 0,
      },
    });
  },
  afterSlice: () => {
    if (performance.now() - lastSample >= SAMPLE_MS) sample();
    return 0;
  },
  fail,
  state: postState,
});

/** Runs `fn` on snapshot `index`'s model (loaded from its bytes), or on the live model (-1). */
function withModel<T>(index: number, fn: (m: Model, step: number) => T): T {
  if (index < 0 || index >= snapshots.length) return fn(model!, steps());
  return withSnapshot(attn, snapshots[index], fn);
}

/** The sentence as the model reads it: at most its context's characters (the first ones). */
function sentenceTokens(m: Model, s: string): number[] {
  return Array.from(m.tokenizer!.encode(s)).slice(0, m.config.maxSeqLen);
}

function sentence(s: string, index: number): SentenceView {
  return withModel(index, (m, step) => {
    const tokens = sentenceTokens(m, s);
    const r = m.inspect(tokens);
    return {
      step,
      snapshot: index,
      text: s,
      tokens,
      characters: tokens.map((t) => m.vocabulary![t]),
      layers: r.layers.map((l) => copyT(l.weights)),
    };
  });
}

function layer(l: number, s: string, index: number): LangLayer {
  return withModel(index, (m, step) => {
    const tokens = sentenceTokens(m, s);
    const r = m.inspect(tokens);
    const p = m.parameters().layers[l];
    const L = r.layers[l];
    return {
      layer: l,
      step,
      tokens,
      characters: tokens.map((t) => m.vocabulary![t]),
      input: L.input,
      W_Q: p.W_Q,
      W_K: p.W_K,
      W_V: p.W_V,
      W_O: p.W_O,
      numKvHeads: L.K.shape[0],
      dK: L.Q.shape[2],
      scaled: m.config.scaleBySqrtDk,
      weights: copyT(L.weights),
    };
  });
}

// ---- generation ----

function stopGenerate(): void {
  if (!gen) return;
  gen.run.stop();
  gen.sampler.dispose();
  gen.model.dispose();
  gen = null;
}

function generate(id: number, o: GenOptions, index: number, delayMs: number): void {
  stopGenerate();
  const bytes =
    index >= 0 && index < snapshots.length ? snapshots[index].bytes : model!.exportWeights();
  const m = attn.loadModel(bytes);
  let sampler: Sampler;
  try {
    sampler = m.sampler(o.prompt, { temperature: o.temperature, topK: o.topK, seed: o.seed });
  } catch (err) {
    m.dispose();
    throw err;
  }
  const prompt = Array.from(m.tokenizer!.encode(o.prompt));
  const context = prompt.map((t) => m.vocabulary![t]);
  const run = runGeneration({
    model: m,
    sampler,
    prompt,
    length: o.length,
    delayMs,
    sliceMs: SLICE_MS,
    step: (s, weights, index) => {
      const shown = context.slice(-weights[0].shape[1]);
      context.push(s.character);
      post({
        type: "gen-step",
        step: { id, index, character: s.character, weights, context: shown },
      });
    },
    // The page's check of the cache against one full forward (worker-host.ts), then the end.
    done: (check) => {
      post({ type: "gen-done", check: { id, ...check } });
      stopGenerate();
    },
    fail: (err) => {
      stopGenerate();
      fail(err);
    },
  });
  gen = { model: m, sampler, run };
}

function fail(err: unknown): void {
  post({ type: "error", message: errorMessage(err) });
}

function handle(msg: ToWorker): void {
  if (msg.type === "text") {
    try {
      setText(msg.id, msg.text, msg.source, msg.name);
    } catch (err) {
      post({
        type: "text-error",
        id: msg.id,
        message: err instanceof Error ? err.message : String(err),
      });
    }
    return;
  }
  if (msg.type !== "reset" && msg.type !== "load" && !model)
    throw new Error("there is no model yet: pick a text and press Reset");
  switch (msg.type) {
    case "reset":
      reset(msg.id, msg.config);
      return;
    case "train":
      loop.start();
      postState();
      return;
    case "pause":
      loop.stop();
      sample();
      postState();
      return;
    case "step":
      loop.stop();
      post({ type: "metrics", m: { step: steps() + 1, loss: stepOnce(), tokensPerSecond: 0 } });
      sample();
      postState();
      return;
    case "sentence":
      post({ type: "sentence", view: sentence(msg.text, msg.index) });
      return;
    case "generate":
      generate(msg.id, msg.options, msg.index, msg.delayMs);
      return;
    case "stop-generate":
      stopGenerate();
      return;
    case "export": {
      if (msg.format === "onnx") {
        void model!.exportOnnx().then(
          (bytes) => post({ type: "weights", bytes, step: steps() }, [bytes.buffer]),
          (err) => post({ type: "error", message: String(err) }),
        );
        return;
      }
      const bytes = model!.exportWeights();
      post({ type: "weights", bytes, step: steps() }, [bytes.buffer]);
      return;
    }
    case "load": {
      // A file refused leaves the run as it was; the message goes to the load button.
      let m: Model;
      try {
        m = attn.loadModel(msg.bytes);
      } catch (err) {
        // The package's message without its class and parameter ("weights: ...").
        const message = err instanceof Error ? err.message : String(err);
        post({ type: "load-error", id: msg.id, message: message.replace(/^weights: /, "") });
        return;
      }
      const c = m.config;
      if (!m.vocabulary || c.dFF === 0) {
        m.dispose();
        post({
          type: "load-error",
          id: msg.id,
          message:
            "these weights are not a language model's: they have no vocabulary or no MLP (a Train-view file is a task model's).",
        });
        return;
      }
      reset(
        msg.id,
        {
          ...config!,
          numLayers: c.numLayers,
          numHeads: c.numHeads,
          dModel: c.dModel,
          dFF: c.dFF,
          seqLen: c.maxSeqLen,
        },
        m,
      );
      return;
    }
    case "layer":
      post({ type: "layer", layer: layer(msg.layer, msg.text, msg.index) });
      return;
  }
}

serve<ToWorker>((a) => (attn = a), handle, fail);
