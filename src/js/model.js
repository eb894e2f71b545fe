// attnkit: the model layer (src/model) in JS: a small transformer
// (attention-only, or GPT blocks with dFF), its AdamW trainer, the seeded toy
// tasks and, through language.js, text: tokenizer, datasets and sampling.
// Models, trainers, task generators, datasets and samplers are handles on
// objects in wasm memory (dispose() frees them, like KVCache); every result
// is a JS-owned copy, and no call touches the DOM, so all of it runs in a Web
// Worker.
import { describe, rangeError, typeError } from "./errors.js";
import { checkCount, checkKeys, isObject } from "./convert.js";
import {
  CORE_NAMES,
  bitsFloat,
  floatBits,
  names,
  scalarWord,
  seedWords,
  withViews,
} from "./marshal.js";
import { TRAINER_OPTIONS, checkObject, coreNames, resolveOptions } from "./options.js";
import { handles } from "./handles.js";
import {
  Tokenizer,
  intArray,
  readsVocabulary,
  languageContext,
  vocabularyCodePoints,
} from "./language.js";
import { referenceLosses } from "./text-stats.js";
import { FILL } from "./calls.js";
import { checkOnnxOptions, checkOnnxSize } from "./onnx-options.js";
import { LAYER_KEYS, PARAMETER_KEYS } from "./parameter-names.js";

export const TASK_KINDS = ["copy", "reverse", "sort", "induction", "majority"];
// A checkpoint tensor's element types, in the order of model::DType.
const DTYPES = ["F32", "F16", "BF16"];
// The most dimensions a checkpoint tensor's shape may have here.
const MAX_DIMS = 8;
// A config as the core's words (model::ConfigToWords in src/model): these
// sizes in order, then one word of these flags' bits (bit i = flag i), then
// these floats' bits. A new field is one entry here and one in kConfigSizes,
// kConfigFlags or kConfigFloats.
const CONFIG_WORDS = [
  "vocabSize",
  "maxSeqLen",
  "dModel",
  "numLayers",
  "numHeads",
  "numKvHeads",
  "dK",
  "dFF",
];
const CONFIG_FLAGS = ["layerNorm", "scaleBySqrtDk", "bias", "tiedUnembedding", "gpt2Init"];
const CONFIG_FLOATS = ["layerNormEpsilon"];
const CONFIG_KEYS = [...CONFIG_WORDS, ...CONFIG_FLAGS, ...CONFIG_FLOATS];
const CONFIG_WORD_COUNT = CONFIG_WORDS.length + 1 + CONFIG_FLOATS.length;

/** The words of a checked config. */
function configWords(c) {
  const flags = CONFIG_FLAGS.reduce((bits, key, i) => bits | (c[key] ? 1 << i : 0), 0);
  return [
    ...CONFIG_WORDS.map((key) => c[key]),
    flags,
    ...CONFIG_FLOATS.map((key) => floatBits(c[key])),
  ];
}
/** A config from its words. */
function configFromWords(w) {
  const c = {};
  const n = CONFIG_WORDS.length;
  CONFIG_WORDS.forEach((key, i) => (c[key] = w[i]));
  CONFIG_FLAGS.forEach((key, i) => (c[key] = (w[n] & (1 << i)) !== 0));
  CONFIG_FLOATS.forEach((key, i) => (c[key] = bitsFloat(w[n + 1 + i])));
  return c;
}
const TASK_KEYS = ["kind", "length", "vocabSize", "padding"];
const TRAINER_KEYS = TRAINER_OPTIONS.map((e) => e.name);
// A task's fields: the core's name -> the JS key.
const TASK_FIELDS = { kind: "kind", length: "length", vocab_size: "vocabSize", padding: "padding" };
const taskNames = (prefix) =>
  Object.fromEntries(Object.entries(TASK_FIELDS).map(([c, js]) => [prefix + c, `task.${js}`]));
// A task's own Status names its fields (taskInfo, a task generator).
const TASK_NAMES = names(taskNames(""));
// The model layer's names, over the attention layer's (CORE_NAMES: the
// heads' sizes are there).
const MODEL_NAMES = names({
  vocab_size: "config.vocabSize",
  max_seq_len: "config.maxSeqLen",
  d_model: "config.dModel",
  num_layers: "config.numLayers",
  d_ff: "config.dFF",
  layer_norm_epsilon: "config.layerNormEpsilon",
  ...taskNames("task."),
  batch: "batch.batch",
  seq_len: "batch.seqLen",
  tokens: "batch.tokens",
  targets: "batch.targets",
  ...coreNames(TRAINER_OPTIONS),
  vocabulary: "options.vocabulary",
});

function checkBool(name, value, fallback) {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw typeError(name, "a boolean", value);
  return value;
}

/** A model config, checked for types (the core checks the sizes). */
function checkModelConfig(config) {
  checkObject("config", config, CONFIG_KEYS, "{vocabSize, maxSeqLen, dModel, numLayers?, ...}");
  const size = (key, fallback) =>
    config[key] === undefined && fallback !== undefined
      ? fallback
      : checkCount(`config.${key}`, config[key], { allowZero: true });
  return {
    vocabSize: size("vocabSize"),
    maxSeqLen: size("maxSeqLen"),
    dModel: size("dModel"),
    numLayers: size("numLayers", 1),
    numHeads: size("numHeads", 1),
    numKvHeads: size("numKvHeads", 0),
    dK: size("dK", 0),
    dFF: size("dFF", 0),
    layerNorm: checkBool("config.layerNorm", config.layerNorm, false),
    scaleBySqrtDk: checkBool("config.scaleBySqrtDk", config.scaleBySqrtDk, true),
    bias: checkBool("config.bias", config.bias, false),
    tiedUnembedding: checkBool("config.tiedUnembedding", config.tiedUnembedding, false),
    gpt2Init: checkBool("config.gpt2Init", config.gpt2Init, false),
    // A float32 in the core (which checks it is finite and > 0).
    layerNormEpsilon: checkNumber("config.layerNormEpsilon", config.layerNormEpsilon, 1e-5),
  };
}

function checkNumber(name, value, fallback) {
  if (value === undefined) return fallback;
  if (typeof value !== "number") throw typeError(name, "a number", value);
  return value;
}

/** A task, checked for types: {kind, length, vocabSize, padding?}. */
function checkTask(task) {
  checkObject("task", task, TASK_KEYS, "{kind, length, vocabSize, padding?}");
  const kind = TASK_KINDS.indexOf(task.kind);
  if (kind < 0) {
    const expected = TASK_KINDS.map((k) => JSON.stringify(k)).join(", ");
    throw (typeof task.kind === "string" ? rangeError : typeError)(
      "task.kind",
      `one of ${expected}`,
      typeof task.kind === "string" ? describe(task.kind) : task.kind,
    );
  }
  return {
    kind: task.kind,
    code: kind,
    length: checkCount("task.length", task.length, { allowZero: true }),
    vocabSize: checkCount("task.vocabSize", task.vocabSize, { allowZero: true }),
    padding:
      task.padding === undefined
        ? 0
        : checkCount("task.padding", task.padding, { allowZero: true }),
  };
}
const taskWords = (t) => [t.code, t.length, t.vocabSize, t.padding];

/**
 * A batch {batch, seqLen, tokens, targets, vocabulary?} for `model`: its
 * Int32Array token and target arrays. Every batch a model reads passes here;
 * a dataset's batch carries its vocabulary, which must be the model's (the
 * core checks each id against vocabSize).
 */
function checkBatch(batch, model) {
  checkObject(
    "batch",
    batch,
    ["batch", "seqLen", "tokens", "targets", "vocabulary"],
    "{batch, seqLen, tokens, targets, vocabulary?}",
  );
  if (batch.vocabulary !== undefined) {
    vocabularyCodePoints("batch.vocabulary", batch.vocabulary);
    if (!readsVocabulary(model, batch.vocabulary)) {
      throw rangeError(
        "batch.vocabulary",
        `the model's vocabulary (${model.vocabulary.length} characters)`,
        `another vocabulary (${batch.vocabulary.length} characters: a batch of another text's dataset)`,
      );
    }
  }
  return {
    batch: checkCount("batch.batch", batch.batch, { allowZero: true }),
    seqLen: checkCount("batch.seqLen", batch.seqLen, { allowZero: true }),
    tokens: intArray("batch.tokens", batch.tokens),
    targets: intArray("batch.targets", batch.targets),
  };
}

/** The metrics a forward wrote next in `args` (a Cursor). */
function readMetrics(args) {
  const loss = args.float(),
    scored = args.word(),
    correct = args.word();
  return {
    loss,
    accuracy: scored ? correct / scored : 0,
    scored,
    correct,
    sequences: args.word(),
    sequencesCorrect: args.word(),
  };
}

/**
 * What the model layer's classes share over one module: its Marshal `mem`
 * (argument blocks, cursors), the handles of its objects, and the error path
 * of its calls.
 */
function modelContext(mem, module) {
  const M = mem.M;
  const objects = handles(module, {
    Model: M.modelFree,
    Trainer: M.trainerFree,
    TaskGenerator: M.generatorFree,
    TextDataset: M.datasetFree,
    Sampler: M.samplerFree,
    CheckpointLoader: M.checkpointFree,
  });
  return {
    M,
    mem,
    objects,
    /** Throws the last call's Status, its parameter named by the name table `table`. */
    fail(table = MODEL_NAMES) {
      mem.check(M.lastErrorCode() || 1, table, { model: true });
    },
    /** A Cursor at a call's argument block, and nothing after it. */
    args: (blame) => mem.cursor(mem.layout(blame)[0]),
    /**
     * Copies a checked batch into wasm memory, runs fn(argsAddress) with its
     * words at the start and returns the metrics the call wrote after them.
     */
    withBatch(b, fn) {
      const [base, tokens, targets] = mem.layout("batch", [b.tokens, b.targets]);
      const args = mem
        .cursor(base)
        .put(b.batch, b.seqLen, tokens, b.tokens.length, targets, b.targets.length);
      try {
        if (fn(base) !== 0) this.fail();
        return readMetrics(args);
      } finally {
        mem.trim();
      }
    },
    /** [seqLen, minVocab] of a checked task (its sizes checked by the core). */
    taskInfo(t) {
      const args = this.args("task").put(taskWords(t));
      if (M.taskInfo(args.start) !== 0) this.fail(TASK_NAMES);
      return [args.word(), args.word()];
    },
  };
}

/** Every layer of one inspected sequence of T tokens (targets given: `scored`). */
function readInspectionLayers(ctx, handle, config, T, scored) {
  const { numHeads: h, numKvHeads: kv, numLayers } = config;
  const tensor = (m, heads) => ({ data: m.data, shape: [heads, T, m.cols] });
  const layers = [];
  for (let l = 0; l < numLayers; ++l) {
    const out = ctx.args("tokens");
    ctx.M.modelInspectLayer(handle, l, out.start);
    const [input, Q, K, V, weights, dScores] = [0, 1, 2, 3, 4, 5].map(() => out.matrix());
    const layer = {
      input,
      Q: tensor(Q, h),
      K: tensor(K, kv),
      V: tensor(V, kv),
      weights: tensor(weights, h),
    };
    if (scored) layer.dScores = tensor(dScores, h);
    layers.push(layer);
  }
  return layers;
}

/** Model.inspect: one sequence through the model of `handle`, every layer laid open. */
function inspectSequence(ctx, handle, config, tokens, targets) {
  const t = intArray("tokens", tokens);
  const g = targets === undefined ? null : intArray("targets", targets);
  const T = t.length;
  if (g && g.length !== T) {
    const expected = `${T} entries (one per token, -1 = not scored)`;
    throw rangeError("targets", expected, `${g.length}`, "shape_mismatch");
  }
  const [base, tokensAt, targetsAt] = ctx.mem.layout("tokens", g ? [t, g] : [t]);
  const args = ctx.mem.cursor(base).put(T, tokensAt, g ? targetsAt : 0);
  try {
    // Its own parameters (tokens, targets) keep their names: not the batch's.
    if (ctx.M.modelInspect(handle, base) !== 0) ctx.fail(CORE_NAMES);
    const logits = args.matrix();
    const predictions = args.arrayAt(Int32Array, args.word(), T);
    const [loss, scored, correct] = [args.float(), args.word(), args.word()];
    const result = { tokens: Int32Array.from(t), logits, predictions };
    if (g) Object.assign(result, { loss, accuracy: scored ? correct / scored : 0 });
    result.layers = readInspectionLayers(ctx, handle, config, T, g !== null);
    return result;
  } finally {
    ctx.M.modelInspectClear(handle);
    ctx.mem.trim();
  }
}

/**
 * Every parameter of the model of `handle`, by name (ModelParameters): JS-owned
 * copies, or with `views` (withViews's) views of the model's memory.
 */
function readParameters(ctx, handle, views = null) {
  const result = { layers: [] };
  ctx.M.modelTensorNames(handle)
    .split(",")
    .forEach((name, i) => {
      const out = ctx.args("model");
      ctx.M.modelTensor(handle, i, out.start);
      const m = views ? views.matrix(out) : out.matrix();
      const layer = /^layers\.(\d+)\.(\w+)$/.exec(name);
      if (layer) {
        const l = Number(layer[1]);
        result.layers[l] ??= {};
        result.layers[l][LAYER_KEYS[layer[2]]] = m;
      } else {
        result[PARAMETER_KEYS[name]] = m;
      }
    });
  return result;
}

/**
 * The fields of the Model of `handle`: its resolved config, parameter count
 * and (a language model's) tokenizer, as property descriptors.
 */
function modelFields(ctx, language, handle, given) {
  const info = ctx.args("model");
  ctx.M.modelInfo(handle, info.start);
  const config = Object.freeze(configFromWords(info.words(CONFIG_WORD_COUNT)));
  const parameterCount = info.word();
  const vocabulary = ctx.args("model");
  ctx.M.modelVocabulary(handle, vocabulary.start);
  const codes = vocabulary.array(Uint32Array);
  // A language model's tokenizer (its vocabulary travels in the weights file).
  // A checkpoint's is given (GPT-2's BPE, checkpoint.js).
  const tokenizer = given ?? (codes.length ? language.tokenizerOf("weights", codes) : null);
  return {
    // The resolved config (numKvHeads and dK filled in), read-only.
    config: { value: config, enumerable: true },
    parameterCount: { value: parameterCount, enumerable: true },
    tokenizer: { value: tokenizer, enumerable: true },
    vocabulary: { value: tokenizer ? tokenizer.vocabulary : null, enumerable: true },
  };
}

/** A checkpoint tensor's shape: an array of at most MAX_DIMS counts. */
function checkShape(shape) {
  if (!Array.isArray(shape) || shape.length > MAX_DIMS)
    throw typeError("shape", `an array of at most ${MAX_DIMS} sizes`, shape);
  return shape.map((n, i) => checkCount(`shape[${i}]`, n, { allowZero: true }));
}

/**
 * attnkit[FILL](config): a model of `config` filled tensor by tensor from a
 * Hugging Face GPT-2 checkpoint (model::CheckpointLoader, whose table knows
 * the names). staging(byteLength) gives a view on module memory for a
 * tensor's bytes or a part of them (valid until the next staging() or
 * load()); load(name, dtype, shape, first = 0) reads the staged bytes as that
 * tensor's values from value `first` on (its parts in order, one after
 * another: CheckpointLoader::LoadPart); finish() returns the
 * Model and frees the rest; dispose() gives up. After finish() or dispose()
 * the loader's calls throw "disposed".
 */
function fillModel(ctx, Model, config) {
  const { M, objects } = ctx;
  const c = checkModelConfig(config);
  const created = M.checkpointCreate(ctx.args("config").put(configWords(c)).start);
  if (!created) ctx.fail();
  const loader = {};
  objects.track(loader, "CheckpointLoader", created);
  const live = () => objects.live(loader, "CheckpointLoader", "loader");
  let staged = 0;
  return {
    staging(byteLength) {
      const handle = live();
      checkCount("byteLength", byteLength, { allowZero: true });
      const at = M.checkpointStaging(handle, byteLength);
      if (!at) ctx.fail();
      staged = byteLength;
      return M.HEAPU8.subarray(at, at + byteLength);
    },
    load(name, dtype, shape, first = 0) {
      const handle = live();
      if (typeof name !== "string") throw typeError("name", "a tensor name (a string)", name);
      const code = DTYPES.indexOf(dtype);
      if (code < 0) {
        const expected = `one of ${DTYPES.map((d) => JSON.stringify(d)).join(", ")}`;
        throw (typeof dtype === "string" ? rangeError : typeError)(
          "dtype",
          expected,
          typeof dtype === "string" ? describe(dtype) : dtype,
        );
      }
      const dims = checkShape(shape);
      checkCount("first", first, { allowZero: true });
      const args = ctx.args("shape").put(code, staged, first, dims.length, dims);
      if (M.checkpointLoad(handle, name, args.start) !== 0) ctx.fail();
    },
    finish(tokenizer) {
      const handle = live();
      const model = M.checkpointFinish(handle);
      try {
        if (!model) ctx.fail();
      } finally {
        objects.dispose(loader);
      }
      return new Model(model, tokenizer);
    },
    dispose() {
      objects.dispose(loader);
    },
  };
}

/** The tokenizer a Model's ONNX file names: "characters", "gpt2" (a checkpoint's BPE) or null. */
const tokenizerName = (model) =>
  model.tokenizer ? (model.tokenizer instanceof Tokenizer ? "characters" : "gpt2") : null;

/** The Model class over a model context; `onnx()` loads the ONNX writer (onnx.js). */
function defineModel(ctx, language, onnx) {
  const { M, objects } = ctx;
  const live = (model) => objects.live(model, "Model", "model");
  return class Model {
    constructor(handle, tokenizer) {
      Object.defineProperties(this, modelFields(ctx, language, handle, tokenizer));
      objects.track(this, "Model", handle);
    }
    /** Optimiser updates the weights have had (the weights file carries the count). */
    get trainedSteps() {
      return M.modelTrainedSteps(live(this));
    }
    /**
     * A sampler of text after `prompt` (the model's tokenizer encodes it),
     * character by character through the KV cache: see generate.
     */
    sampler(prompt, options) {
      return language.sampler(this, live(this), prompt, options);
    }
    /**
     * `options.length` characters sampled after `prompt` (temperature 0:
     * argmax; topK > 0: among the k likeliest), each with its logits and
     * every layer's attention over the context.
     */
    generate(prompt, options) {
      return language.generate(this, live(this), prompt, options);
    }
    /** Runs the model on a batch (no update): its metrics; attentionWeights() then reads this pass. */
    evaluate(batch) {
      const handle = live(this);
      const b = checkBatch(batch, this);
      return ctx.withBatch(b, (args) => M.modelForward(handle, args));
    }
    /** The attention weights of `layer` (0-based) in the last forward: [batch, numHeads, T, T]. */
    attentionWeights(layer) {
      const handle = live(this);
      checkCount("layer", layer, { allowZero: true });
      const { numLayers } = this.config;
      if (layer >= numLayers) {
        throw rangeError(
          "layer",
          `a layer index 0 .. ${numLayers - 1} (numLayers - 1)`,
          `${layer}`,
        );
      }
      const out = ctx.args("layer");
      if (M.modelAttention(handle, layer, out.start) !== 0) ctx.fail();
      const { data, rows, cols } = out.matrix();
      const h = this.config.numHeads;
      return { data, shape: [rows / (h * cols), h, cols, cols] };
    }
    /** JS-owned copies of every parameter, by name (ModelParameters in the d.ts). */
    parameters() {
      return readParameters(ctx, live(this));
    }
    /**
     * One sequence through the model, every layer's attention laid open; with
     * targets also the loss and each head's dS (Inspection in the d.ts). The
     * weights stay; attentionWeights() then reads this pass.
     */
    inspect(tokens, targets) {
      return inspectSequence(ctx, live(this), this.config, tokens, targets);
    }
    /**
     * The model as an ONNX file (docs/onnx.md): a promise of a JS-owned
     * Uint8Array. The options are checked before the writer loads.
     */
    async exportOnnx(options) {
      live(this);
      checkOnnxOptions(options);
      checkOnnxSize(this);
      const writer = await onnx();
      const handle = live(this);
      // Each weight goes from the model's memory straight into the file.
      return withViews("parameters", (views) =>
        writer.exportOnnx(this, tokenizerName(this), options, () =>
          readParameters(ctx, handle, views),
        ),
      );
    }
    /** The weights file (docs/model.md) as a JS-owned Uint8Array. */
    exportWeights() {
      const handle = live(this);
      const out = ctx.args("model");
      if (M.modelExport(handle, out.start) !== 0) ctx.fail();
      return out.array(Uint8Array);
    }
    dispose() {
      objects.dispose(this);
    }
    [Symbol.dispose ?? Symbol.for("Symbol.dispose")]() {
      this.dispose();
    }
  };
}

/** A trainer's options, checked, with their defaults (TRAINER_OPTIONS). */
function checkTrainerOptions(options) {
  if (options !== undefined) {
    checkObject("options", options, TRAINER_KEYS, "{learningRate?, warmupSteps?, ...}");
  }
  return resolveOptions(TRAINER_OPTIONS, options ?? {});
}

// A float option of the trainer and its number in a Status detail ("learningRate 0.001000").
const FLOAT_NAMES = TRAINER_OPTIONS.filter((e) => e.word === "f32").map((e) => e.name);
const FLOAT_IN_DETAIL = new RegExp(String.raw`\b(${FLOAT_NAMES.join("|")}) -?\d+\.\d+`);

/**
 * Throws a refused trainer's Status with the options' numbers as the caller
 * wrote them (the core prints floats as "-1.000000").
 */
function failWithOptions(ctx, options) {
  try {
    ctx.fail();
  } catch (e) {
    const key = e.parameter.replace(/^options\./, "");
    const given = (name) => (typeof options[name] === "number" ? String(options[name]) : null);
    e.message = e.message
      .replace(FLOAT_IN_DETAIL, (m, name) => `${name} ${given(name) ?? m}`)
      .replace(/got -?\d+\.\d+$/, (m) => (given(key) === null ? m : `got ${given(key)}`));
    throw e;
  }
}

/** The Trainer class over a model context. */
function defineTrainer(ctx) {
  const { M, objects } = ctx;
  return class Trainer {
    constructor(model, options) {
      const modelHandle = objects.live(model, "Model", "model");
      const r = checkTrainerOptions(options);
      const at = ctx.args("options").start;
      // Read by kTrainerOptions in model_bindings.cc, one word per option.
      M.HEAPU32.set(
        TRAINER_OPTIONS.map((e) => scalarWord(e, r[e.name])),
        at >>> 2,
      );
      const handle = M.trainerCreate(modelHandle, at);
      if (!handle) failWithOptions(ctx, r);
      Object.defineProperties(this, {
        model: { value: model, enumerable: true },
        options: { value: Object.freeze(r), enumerable: true },
      });
      objects.track(this, "Trainer", handle);
    }
    /** Updates done so far. */
    get steps() {
      return M.trainerSteps(objects.live(this, "Trainer", "trainer"));
    }
    /** The learning rate of update `step` (1-based; warm-up included). */
    learningRate(step) {
      const handle = objects.live(this, "Trainer", "trainer");
      return M.trainerLearningRate(handle, checkCount("step", step));
    }
    /** Forward, backward and one AdamW update: the metrics of the forward (before the update). */
    step(batch) {
      const handle = objects.live(this, "Trainer", "trainer");
      const modelHandle = objects.live(this.model, "Model", "trainer.model");
      const b = checkBatch(batch, this.model);
      return ctx.withBatch(b, (args) => M.trainerStep(handle, modelHandle, args));
    }
    dispose() {
      objects.dispose(this);
    }
    [Symbol.dispose ?? Symbol.for("Symbol.dispose")]() {
      this.dispose();
    }
  };
}

/** The TaskGenerator class over a model context. */
function defineTaskGenerator(ctx) {
  const { M, objects } = ctx;
  return class TaskGenerator {
    constructor(task, options) {
      const t = checkTask(task);
      if (options !== undefined) checkObject("options", options, ["seed"], "{seed?}");
      const seed = options?.seed === undefined ? [0, 0] : seedWords("options.seed", options.seed);
      const [seqLen] = ctx.taskInfo(t);
      const handle = M.generatorCreate(ctx.args("task").put(taskWords(t), seed).start);
      if (!handle) ctx.fail(TASK_NAMES);
      const { kind, length, vocabSize, padding } = t;
      Object.defineProperties(this, {
        task: { value: Object.freeze({ kind, length, vocabSize, padding }), enumerable: true },
        seqLen: { value: seqLen, enumerable: true },
      });
      objects.track(this, "TaskGenerator", handle);
    }
    /** The next `batch` sequences of the generator's stream: {batch, seqLen, tokens, targets}. */
    next(batch) {
      const handle = objects.live(this, "TaskGenerator", "generator");
      checkCount("batch", batch);
      const out = ctx.args("batch");
      if (M.generatorNext(handle, batch, out.start) !== 0) ctx.fail();
      const [tokens, targets, seqLen] = out.words(3);
      const n = batch * seqLen;
      return {
        batch,
        seqLen,
        tokens: out.arrayAt(Int32Array, tokens, n),
        targets: out.arrayAt(Int32Array, targets, n),
      };
    }
    dispose() {
      objects.dispose(this);
    }
    [Symbol.dispose ?? Symbol.for("Symbol.dispose")]() {
      this.dispose();
    }
  };
}

/**
 * createModel, loadModel, createTrainer, createTaskGenerator, makeBatch,
 * taskSeqLen, taskMinVocab, createTokenizer, createTextDataset and the module's
 * FILL over a model build's module of `mem` (its Marshal); `module` tells
 * whether the module is live; `onnx()` loads the ONNX writer (model.exportOnnx).
 */
export function modelMethods(mem, module, onnx) {
  const M = mem.M;
  const ctx = modelContext(mem, module);
  const language = languageContext(ctx);
  const Model = defineModel(ctx, language, onnx);
  const Trainer = defineTrainer(ctx);
  const TaskGenerator = defineTaskGenerator(ctx);
  return {
    createModel(config, options) {
      if (options !== undefined)
        checkObject(
          "options",
          options,
          ["seed", "task", "vocabulary"],
          "{seed?, task?, vocabulary?}",
        );
      const vocabulary =
        options?.vocabulary === undefined
          ? null
          : vocabularyCodePoints("options.vocabulary", options.vocabulary);
      // A language model's vocabSize is its vocabulary's, unless given.
      const c = checkModelConfig(
        vocabulary && isObject(config) && config.vocabSize === undefined
          ? { ...config, vocabSize: vocabulary.length }
          : config,
      );
      const seed = options?.seed === undefined ? [0, 0] : seedWords("options.seed", options.seed);
      const task = options?.task === undefined ? null : checkTask(options.task);
      const args = ctx
        .args("config")
        .put(configWords(c), seed, task ? 1 : 0, task ? taskWords(task) : [0, 0, 0, 0]);
      const handle = M.modelCreate(args.start);
      if (!handle) ctx.fail();
      if (vocabulary) {
        const [, v] = mem.layout("options.vocabulary", [vocabulary]);
        const code = M.modelSetVocabulary(handle, v, vocabulary.length);
        mem.trim();
        if (code !== 0) {
          M.modelFree(handle);
          mem.check(code, MODEL_NAMES, { model: true });
        }
      }
      return new Model(handle);
    },
    loadModel(bytes) {
      if (!(bytes instanceof Uint8Array))
        throw typeError("weights", "a Uint8Array (a weights file)", bytes);
      const [, at] = mem.layout("weights", [bytes]);
      const handle = M.modelImport(at, bytes.length);
      mem.trim();
      if (!handle) ctx.fail();
      return new Model(handle);
    },
    [FILL]: (config) => fillModel(ctx, Model, config),
    createTrainer: (model, options) => new Trainer(model, options),
    createTaskGenerator: (task, options) => new TaskGenerator(task, options),
    makeBatch(task, options) {
      if (!isObject(options) || Array.isArray(options))
        throw typeError("options", "an object {batch, seed?}", options);
      checkKeys("options", options, ["batch", "seed"]);
      checkCount("options.batch", options.batch);
      const seed = options.seed === undefined ? undefined : { seed: options.seed };
      const generator = new TaskGenerator(task, seed);
      try {
        return generator.next(options.batch);
      } finally {
        generator.dispose();
      }
    },
    taskSeqLen: (task) => ctx.taskInfo(checkTask(task))[0],
    taskMinVocab: (task) => ctx.taskInfo(checkTask(task))[1],
    createTokenizer: (text) => language.createTokenizer(text),
    createTextDataset: (text, options) => language.createTextDataset(text, options),
    referenceLosses(dataset, text) {
      ctx.objects.live(dataset, "TextDataset", "dataset");
      return referenceLosses(dataset, text);
    },
  };
}
