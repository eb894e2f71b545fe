// The GPT-2 view's worker: loads attnkit with the model, reads what a checkpoint holds
// before its download (checkpointInfo), opens it tensor by tensor with its progress
// (openCheckpoint) or an attnkit weights file (loadModel), measures every head
// (headScores), and answers the view's requests: a sentence's maps and next tokens, a
// generation through the KV cache, one layer's numbers for the steps view.
import type {
  AttnkitWithModel,
  CheckpointOptions,
  CheckpointSource,
  Matrix,
  Model,
  Sampler,
} from "attnkit";
import { engineText } from "../threads";
import { copyT, engineOf, errorMessage, runGeneration, serve } from "../worker-host";
import type {
  FromWorker,
  GenOptions,
  LayerNumbers,
  ModelSummary,
  SentenceView,
  Source,
  SourceInfo,
  ToWorker,
} from "./protocol";
import { SCORE_KINDS, type ScoreKind } from "./settings";

/** The likeliest next tokens shown. */
const TOP = 10;
/** Generation work done before the worker looks at its messages again (no delay). */
const SLICE_MS = 40;

let attn: AttnkitWithModel;
let model: Model | null = null;
let from = "";
/** The download under way and its request id. */
let loading: { id: number; abort: AbortController } | null = null;
/** The generation under way. */
let gen: { sampler: Sampler; run: { stop(): void } } | null = null;

const post = (m: FromWorker, transfer: Transferable[] = []) =>
  (self as unknown as Worker).postMessage(m, transfer);

/** Where a source comes from, as the page names it. */
function describe(s: Source): string {
  if (s.kind === "file") return `the file ${s.file.name}`;
  if (s.kind === "weights") return s.name;
  if (s.kind === "url") return s.url;
  return `the Hugging Face repository ${s.repo}`;
}

/** What openCheckpoint and checkpointInfo take for a source. */
const sourceArg = (s: Source): CheckpointSource =>
  s.kind === "file" ? s.file : s.kind === "url" ? s.url : s.kind === "hub" ? s.repo : s.bytes;

/** The options of a source: the Hub's address, a file's config.json or heads. */
function sourceOptions(s: Source, hubUrl?: string): CheckpointOptions {
  if (s.kind === "file")
    return {
      ...(s.config ? { config: s.config } : {}),
      ...(s.numHeads ? { numHeads: s.numHeads } : {}),
    };
  return hubUrl ? { hubUrl } : {};
}

/** A weights file's model, with its config as checkpointInfo gives a checkpoint's. */
function weightsInfo(s: Source & { kind: "weights" }, m: Model): SourceInfo {
  const c = m.config;
  return {
    from: describe(s),
    what: "a language model of characters",
    local: true,
    totalBytes: s.bytes.length,
    memoryBytes: s.bytes.length,
    parameters: m.parameterCount,
    dtype: "F32",
    numLayers: c.numLayers,
    numHeads: c.numHeads,
    dModel: c.dModel,
    vocabSize: c.vocabSize,
    maxSeqLen: c.maxSeqLen,
  };
}

async function info(id: number, s: Source, hubUrl?: string): Promise<void> {
  if (s.kind === "weights") {
    const m = loadWeights(s);
    try {
      post({ type: "info", id, info: weightsInfo(s, m) });
    } finally {
      m.dispose();
    }
    return;
  }
  const i = await attn.checkpointInfo(sourceArg(s), sourceOptions(s, hubUrl));
  post({
    type: "info",
    id,
    info: {
      from: describe(s),
      what: "a GPT-2-family model",
      local: s.kind === "file",
      totalBytes: i.totalBytes,
      memoryBytes: i.memoryBytes,
      parameters: i.parameters,
      dtype: i.dtype,
      numLayers: i.config.numLayers,
      numHeads: i.config.numHeads,
      dModel: i.config.dModel,
      vocabSize: i.config.vocabSize,
      maxSeqLen: i.config.maxSeqLen,
    },
  });
}

/** A Language-view weights file: a language model (with a vocabulary) only. */
function loadWeights(s: Source & { kind: "weights" }): Model {
  const m = attn.loadModel(s.bytes);
  if (!m.tokenizer) {
    m.dispose();
    throw new Error(
      "these weights are not a language model's: they have no vocabulary (a Train-view file is a task model's)",
    );
  }
  return m;
}

async function open(id: number, s: Source, hubUrl?: string): Promise<void> {
  loading?.abort.abort();
  // The module takes no other call while a checkpoint loads.
  stopGenerate();
  const abort = new AbortController();
  loading = { id, abort };
  let m: Model;
  if (s.kind === "weights") {
    m = loadWeights(s);
    post({ type: "progress", id, loadedBytes: s.bytes.length, totalBytes: s.bytes.length });
  } else {
    m = await attn.openCheckpoint(sourceArg(s), {
      ...sourceOptions(s, hubUrl),
      signal: abort.signal,
      onProgress: (p) =>
        post({ type: "progress", id, loadedBytes: p.loadedBytes, totalBytes: p.totalBytes }),
    });
  }
  if (loading?.id !== id) {
    // Another request came meanwhile.
    m.dispose();
    return;
  }
  loading = null;
  stopGenerate();
  model?.dispose();
  model = m;
  from = describe(s);
  post({ type: "ready", id, model: summary(m) });
}

function summary(m: Model): ModelSummary {
  const c = m.config;
  const s = attn.headScores(m);
  const layer0 = m.parameters().layers[0] as unknown as Record<string, unknown>;
  return {
    from,
    numLayers: c.numLayers,
    numHeads: c.numHeads,
    dModel: c.dModel,
    dK: c.dK,
    vocabSize: c.vocabSize,
    maxSeqLen: c.maxSeqLen,
    parameterCount: m.parameterCount,
    bias: "b_Q" in layer0,
    scores: {
      induction: s.induction,
      previousToken: s.previousToken,
      duplicateToken: s.duplicateToken,
    },
    scoreLength: s.length,
    target: engineText(engineOf(attn)),
  };
}

/** The text piece of each token (the tokenizer's vocabulary). */
function pieces(m: Model, tokens: ArrayLike<number>): string[] {
  const v = m.tokenizer!.vocabulary;
  return Array.from(tokens, (t) => v[t] ?? `#${t}`);
}

/** The sentence's tokens: the first maxSeqLen, and how many were dropped. */
function sentenceTokens(m: Model, text: string): [number[], number] {
  const all = Array.from(m.tokenizer!.encode(text));
  const T = m.config.maxSeqLen;
  return [all.slice(0, T), Math.max(0, all.length - T)];
}

function sentence(text: string): SentenceView {
  const m = model!;
  const [tokens, dropped] = sentenceTokens(m, text);
  if (!tokens.length) throw new Error("the sentence is empty: type a few words");
  const r = m.inspect(tokens);
  const V = m.config.vocabSize;
  const T = tokens.length;
  // The next token's probabilities: the package's softmax of the last position's logits.
  const p = attn.softmax({
    data: r.logits.data.subarray((T - 1) * V, T * V),
    rows: 1,
    cols: V,
  }).data;
  const order = Array.from(p.keys())
    .sort((a, b) => p[b] - p[a])
    .slice(0, TOP);
  const s = attn.headScores(m, { length: 2, tokens }).sentence!;
  return {
    text,
    tokens,
    pieces: pieces(m, tokens),
    layers: r.layers.map((l) => copyT(l.weights)),
    top: order.map((t) => ({
      token: t,
      piece: pieces(m, [t])[0],
      p: p[t],
    })),
    scores: Object.fromEntries(SCORE_KINDS.map((k) => [k, s[k]])) as Record<
      ScoreKind,
      number[][] | null
    >,
    dropped,
  };
}

/** [rows, cols] with a row of `b` appended below (the bias, read by X's column of ones). */
function withBiasRow(W: Matrix, b: Matrix | undefined): Matrix {
  if (!b) return W;
  const data = new Float32Array((W.rows + 1) * W.cols);
  data.set(W.data);
  data.set(b.data, W.rows * W.cols);
  return { data, rows: W.rows + 1, cols: W.cols };
}

/**
 * Layer l's numbers for the steps view, which computes Q = X W^Q (no bias): with biases, X
 * gains a column of ones and each W a last row holding the bias, so that X W is x W + b.
 */
function layer(l: number, text: string): LayerNumbers {
  const m = model!;
  const [tokens] = sentenceTokens(m, text);
  const r = m.inspect(tokens);
  const p = m.parameters().layers[l] as unknown as Record<string, Matrix | undefined> & {
    W_Q: Matrix;
    W_K: Matrix;
    W_V: Matrix;
    W_O: Matrix;
  };
  const L = r.layers[l];
  const bias = !!p.b_Q;
  let input = L.input;
  let W_O = p.W_O;
  if (bias) {
    const { rows, cols } = input;
    const data = new Float32Array(rows * (cols + 1));
    for (let t = 0; t < rows; t++) {
      data.set(input.data.subarray(t * cols, (t + 1) * cols), t * (cols + 1));
      data[t * (cols + 1) + cols] = 1;
    }
    input = { data, rows, cols: cols + 1 };
    // W^O writes the model's dModel columns and a zero for the column of ones.
    const o = new Float32Array(W_O.rows * (W_O.cols + 1));
    for (let i = 0; i < W_O.rows; i++)
      o.set(W_O.data.subarray(i * W_O.cols, (i + 1) * W_O.cols), i * (W_O.cols + 1));
    W_O = { data: o, rows: W_O.rows, cols: W_O.cols + 1 };
  }
  return {
    layer: l,
    tokens,
    pieces: pieces(m, tokens),
    input,
    W_Q: withBiasRow(p.W_Q, p.b_Q),
    W_K: withBiasRow(p.W_K, p.b_K),
    W_V: withBiasRow(p.W_V, p.b_V),
    W_O,
    numKvHeads: L.K.shape[0],
    dK: L.Q.shape[2],
    scaled: m.config.scaleBySqrtDk,
    weights: copyT(L.weights),
  };
}

// ---- generation ----

function stopGenerate(): void {
  if (!gen) return;
  gen.run.stop();
  gen.sampler.dispose();
  gen = null;
}

function generate(id: number, o: GenOptions, delayMs: number): void {
  stopGenerate();
  const m = model!;
  const sampler = m.sampler(o.prompt, { temperature: o.temperature, topK: o.topK, seed: o.seed });
  const prompt = Array.from(m.tokenizer!.encode(o.prompt));
  const context = pieces(m, prompt);
  const run = runGeneration({
    model: m,
    sampler,
    prompt,
    length: o.length,
    delayMs,
    sliceMs: SLICE_MS,
    step: (s, weights, index) => {
      const shown = context.slice(-weights[0].shape[1]);
      const piece = pieces(m, [s.token])[0];
      context.push(piece);
      post({
        type: "gen-step",
        step: { id, index, token: s.token, piece, weights, context: shown },
      });
    },
    done: (check) => {
      post({ type: "gen-done", check: { id, ...check } });
      stopGenerate();
    },
    fail: (err) => {
      stopGenerate();
      fail(err);
    },
  });
  gen = { sampler, run };
}

function fail(err: unknown): void {
  post({ type: "error", message: errorMessage(err) });
}

/**
 * A request that may fail without harm: the model in use stays, the view says why. Requests
 * on the model that came meanwhile (the module takes no other call while a checkpoint
 * loads) are answered after it.
 */
function refusable(id: number, work: Promise<void>): void {
  busy++;
  work
    .catch((err) => {
      if (loading?.id === id) loading = null;
      post({ type: "refused", id, message: err instanceof Error ? err.message : String(err) });
    })
    .finally(() => {
      if (--busy) return;
      for (const msg of deferred.splice(0)) {
        try {
          handle(msg);
        } catch (err) {
          fail(err);
        }
      }
    });
}

/** Reads and loads under way, and the requests on the model that wait for them. */
let busy = 0;
const deferred: ToWorker[] = [];

function handle(msg: ToWorker): void {
  switch (msg.type) {
    case "info":
      refusable(msg.id, info(msg.id, msg.source, msg.hubUrl));
      return;
    case "open":
      refusable(msg.id, open(msg.id, msg.source, msg.hubUrl));
      return;
    case "cancel":
      if (loading?.id === msg.id) loading.abort.abort();
      return;
  }
  if (busy) {
    deferred.push(msg);
    return;
  }
  if (!model) throw new Error("there is no model yet: open a checkpoint first");
  switch (msg.type) {
    case "sentence":
      post({ type: "sentence", id: msg.id, view: sentence(msg.text) });
      return;
    case "generate":
      generate(msg.id, msg.options, msg.delayMs);
      return;
    case "stop-generate":
      stopGenerate();
      return;
    case "layer":
      post({ type: "layer", layer: layer(msg.layer, msg.text) });
      return;
    case "onnx":
      void model.exportOnnx().then((bytes) => post({ type: "onnx", bytes }, [bytes.buffer]), fail);
      return;
  }
}

serve<ToWorker>((a) => (attn = a), handle, fail);
