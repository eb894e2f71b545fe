// attnkit's calls, each named once: every function of a module that
// createAttnkit returns, and every method of the objects its calls hand out
// (the held objects: KV caches, packed weights, models, trainers...). The
// worker API builds its proxies from this table and copies a call's inputs
// into reused buffers when the table says the call keeps none of them;
// tests/js/calls.test.js fails when the synchronous API and the table differ.
//
// Each call: { pooled?: true, returns?: kind, model?: true, async?: true }
//   pooled   the call copies its typed-array inputs into wasm memory and keeps
//            no reference to them (nor hands them back);
//   returns  the kind of held object the call hands out (a key of HELD_OBJECTS);
//   model    a call of the model layer: a module loaded without it throws;
//   async    the call returns a Promise; its options' onProgress and signal
//            (its second argument's) reach it in the worker: progress comes
//            back as messages, and an abort stops it while it runs.

const POOLED = Object.freeze({ pooled: true });
const PLAIN = Object.freeze({});
const MODEL = Object.freeze({ model: true });
const MODEL_ASYNC = Object.freeze({ model: true, async: true });
const returns = (kind, more = {}) => Object.freeze({ returns: kind, ...more });

/** The functions of a module, in the order the module lists them. */
export const MODULE_CALLS = Object.freeze({
  attention: POOLED,
  selfAttention: POOLED,
  crossAttention: POOLED,
  parameterFreeAttention: POOLED,
  trace: POOLED,
  traceQKV: POOLED,
  traceBackward: POOLED,
  traceBackwardQKV: POOLED,
  matmul: POOLED,
  softmax: POOLED,
  splitHeads: POOLED,
  mergeHeads: POOLED,
  attentionForTraining: POOLED,
  attentionBackward: POOLED,
  selfAttentionBackward: POOLED,
  multiHeadAttentionQKVForTraining: POOLED,
  multiHeadAttentionQKVBackward: POOLED,
  multiHeadAttentionBackward: POOLED,
  multiHeadAttention: POOLED,
  packWeights: returns("PackedWeights"),
  multiHeadAttentionQKV: POOLED,
  createKVCache: returns("KVCache"),
  createModel: returns("Model", MODEL),
  loadModel: returns("Model", MODEL),
  createTrainer: returns("Trainer", MODEL),
  createTaskGenerator: returns("TaskGenerator", MODEL),
  makeBatch: MODEL,
  taskSeqLen: MODEL,
  taskMinVocab: MODEL,
  createTokenizer: returns("Tokenizer", MODEL),
  createTextDataset: returns("TextDataset", MODEL),
  referenceLosses: MODEL,
  headScores: MODEL,
  openCheckpoint: returns("Model", MODEL_ASYNC),
  checkpointInfo: MODEL_ASYNC,
  memoryBytes: PLAIN,
  heapBytesInUse: PLAIN,
  dispose: PLAIN,
});

/** The model layer's functions, in the module's order. */
export const MODEL_CALLS = Object.freeze(
  Object.keys(MODULE_CALLS).filter((name) => MODULE_CALLS[name].model === true),
);

// The package's own way to fill a model from a checkpoint (not public): a model
// module's attnkit[FILL](config) -> { staging, load, finish, dispose }. The model
// layer and the checkpoint reader are files of their own, each with its copy of
// this one: Symbol.for gives them the same key.
export const FILL = Symbol.for("attnkit.fill");

/**
 * The held objects by kind (their class's name): { calls, properties }, each
 * one's methods and readable properties (own values and getters). A held
 * object's kind is told by these (kindOf), not by its class's name, which a
 * minifier may change.
 */
export const HELD_OBJECTS = Object.freeze({
  KVCache: held(
    {
      append: PLAIN,
      keys: PLAIN,
      values: PLAIN,
      attend: PLAIN,
      decode: PLAIN,
      truncate: PLAIN,
      fork: returns("KVCache"),
      reset: PLAIN,
      dispose: PLAIN,
    },
    ["batch", "numKvHeads", "dK", "dV", "capacity", "size"],
  ),
  PackedWeights: held({ dispose: PLAIN }, ["dModel", "dOut", "numHeads", "numKvHeads", "dK", "dV"]),
  Model: held(
    {
      sampler: returns("Sampler"),
      generate: PLAIN,
      evaluate: PLAIN,
      attentionWeights: PLAIN,
      parameters: PLAIN,
      inspect: PLAIN,
      exportOnnx: PLAIN,
      exportWeights: PLAIN,
      dispose: PLAIN,
    },
    ["config", "parameterCount", "tokenizer", "vocabulary", "trainedSteps"],
  ),
  Trainer: held({ learningRate: PLAIN, step: PLAIN, dispose: PLAIN }, [
    "model",
    "options",
    "steps",
  ]),
  TaskGenerator: held({ next: PLAIN, dispose: PLAIN }, ["task", "seqLen"]),
  Tokenizer: held({ encode: PLAIN, decode: PLAIN }, ["vocabulary", "vocabSize", "unknownToken"]),
  TextDataset: held(
    { next: PLAIN, validationBatch: PLAIN, validationLoss: PLAIN, dispose: PLAIN },
    [
      "tokenizer",
      "vocabulary",
      "vocabSize",
      "seqLen",
      "trainTokens",
      "validationTokens",
      "validationWindows",
      "unknownCharacters",
    ],
  ),
  Sampler: held({ next: PLAIN, dispose: PLAIN }, ["model", "options"]),
});

function held(calls, properties) {
  return Object.freeze({ calls: Object.freeze(calls), properties: Object.freeze(properties) });
}

/** The calls on a target: the module's (`kind` undefined) or a held object's of `kind`. */
export function callsOf(kind) {
  return kind === undefined ? MODULE_CALLS : HELD_OBJECTS[kind]?.calls;
}

/** The methods of `object`: its own and its prototypes' functions but the constructor. */
export function methodsOf(object) {
  const names = new Set();
  for (let p = object; p && p !== Object.prototype;) {
    for (const key of Object.getOwnPropertyNames(p)) {
      const d = Object.getOwnPropertyDescriptor(p, key);
      if (key !== "constructor" && typeof d.value === "function") names.add(key);
    }
    p = Object.getPrototypeOf(p);
  }
  return [...names];
}

/** The readable properties of `object`: its own values and its prototypes' getters. */
export function propertiesOf(object) {
  const names = new Set(Object.keys(object));
  for (let p = Object.getPrototypeOf(object); p && p !== Object.prototype;) {
    for (const key of Object.getOwnPropertyNames(p)) {
      if (Object.getOwnPropertyDescriptor(p, key).get) names.add(key);
    }
    p = Object.getPrototypeOf(p);
  }
  return [...names];
}

/** What tells a kind of held object: its method and property names. */
const signature = (methods, properties) => `${[...methods].sort()} | ${[...properties].sort()}`;
const KINDS = new Map(
  Object.entries(HELD_OBJECTS).map(([kind, { calls, properties }]) => [
    signature(Object.keys(calls), properties),
    kind,
  ]),
);

/** The kind of held object `object` is (by its methods and properties), or undefined. */
export function kindOf(object) {
  return KINDS.get(signature(methodsOf(object), propertiesOf(object)));
}
