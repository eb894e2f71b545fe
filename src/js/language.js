// attnkit: the language model's text in JS (include/attnkit/text.h, generate.h): a
// character tokenizer, a dataset of seeded windows over a text with its
// validation part, and sampling text from a model through the KV cache with
// every layer's attention per character. Texts go to wasm as UTF-8; the core
// checks and tokenizes them, so JS and C++ users get the same tokens.
import { AttnkitTypeError, describe, rangeError, typeError } from "./errors.js";
import { checkCount } from "./convert.js";
import { CORE_NAMES, names, scalarWord, seedWords } from "./marshal.js";
import { SAMPLING_OPTIONS, checkObject, coreNames, resolveOptions } from "./options.js";
import { brand } from "./handles.js";

// The core's limits (text.h): UTF-8 bytes of a text, distinct characters.
export const MAX_TEXT_BYTES = 8 * 1024 * 1024;
export const MAX_CHARACTERS = 512;
// The unknown token: id 0, the replacement character.
export const UNKNOWN = "\uFFFD";
// Windows per forward of TextDataset.validationLoss: at most a training
// batch's rows, so that the model's forward buffers never grow for it.
const VALIDATION_CHUNK = 8;
// The most characters one model.generate call samples (with its steps, each
// keeps its logits and every layer's attention): a longer text comes from a
// sampler, one next() at a time.
export const MAX_GENERATE_LENGTH = 65536;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A string's UTF-8 bytes, checked: a well-formed string within MAX_TEXT_BYTES. */
export function textBytes(name, text) {
  if (typeof text !== "string") throw typeError(name, "a string", text);
  const limit = `a string of at most ${MAX_TEXT_BYTES} bytes of UTF-8`;
  // Every UTF-16 code unit is at least one byte of UTF-8.
  if (text.length > MAX_TEXT_BYTES) throw rangeError(name, limit, `${text.length} characters`);
  const lone = LONE_SURROGATE.exec(text);
  if (lone) {
    const unit = lone[0].charCodeAt(0).toString(16).toUpperCase();
    throw rangeError(
      name,
      "a well-formed string (UTF-16 without lone surrogates)",
      `a lone surrogate \\u${unit} at index ${lone.index}`,
    );
  }
  const bytes = encoder.encode(text);
  if (bytes.length > MAX_TEXT_BYTES) throw rangeError(name, limit, `${bytes.length} bytes`);
  return bytes;
}

/** The code points of a vocabulary given as characters (Tokenizer.vocabulary's form). */
export function vocabularyCodePoints(name, vocabulary) {
  if (!Array.isArray(vocabulary))
    throw typeError(name, `an array of characters ("${UNKNOWN}" first)`, vocabulary);
  return Uint32Array.from(vocabulary, (c, i) => {
    const code = typeof c === "string" ? c.codePointAt(0) : undefined;
    if (code === undefined || String.fromCodePoint(code) !== c)
      throw typeError(`${name}[${i}]`, "a string of one character (one code point)", c);
    return code;
  });
}

/**
 * Whether `model` (a Model) reads tokens of `vocabulary`: a language model's
 * own vocabulary must be the same, character for character.
 */
export function readsVocabulary(model, vocabulary) {
  const v = model.vocabulary;
  return !v || (v.length === vocabulary.length && v.every((c, i) => c === vocabulary[i]));
}

/** Characters of code points (a vocabulary the core has checked). */
const characters = (codes) => Object.freeze(Array.from(codes, (c) => String.fromCodePoint(c)));

/** Options with only `keys` ({} when absent): else an error naming `shape` or the unknown key. */
function checkOptions(name, options, keys, shape) {
  if (options === undefined) return {};
  checkObject(name, options, keys, shape);
  return options;
}

/**
 * A text call over the model context `ctx` (model.js): its argument block
 * and a copy of each of `arrays` (Marshal.layout); fn(args, addresses)
 * writes the block through the Cursor `args` and calls the binding. A
 * failure throws the Status, its parameter named by the name table `table`.
 * Returns `args`, after the arguments: the results the binding wrote.
 */
function textCall(ctx, blame, table, arrays, fn) {
  const [base, ...addresses] = ctx.mem.layout(blame, arrays);
  const args = ctx.mem.cursor(base);
  try {
    if (fn(args, addresses) !== 0) ctx.fail(table);
    return args;
  } catch (e) {
    ctx.mem.trim();
    throw e;
  }
}

/** Frees what a text call left in wasm memory once its results are read. */
function textDone(ctx) {
  ctx.M.textClear();
  ctx.mem.trim();
}

export class Tokenizer {
  constructor(ctx, codes) {
    Object.defineProperties(this, {
      // Token id -> its character; vocabulary[0] is the unknown token "\uFFFD".
      vocabulary: { value: characters(codes), enumerable: true },
      vocabSize: { value: codes.length, enumerable: true },
      unknownToken: { value: 0, enumerable: true },
    });
    this.#ctx = ctx;
    this.#codes = codes;
    brand(this, "Tokenizer");
  }
  #ctx;
  #codes;
  /** The tokens of `text` (one per code point; characters outside the vocabulary are 0). */
  encode(text) {
    const ctx = this.#ctx,
      codes = this.#codes;
    const bytes = textBytes("text", text);
    const out = textCall(ctx, "text", CORE_NAMES, [codes, bytes], (args, [v, t]) =>
      ctx.M.tokenizerEncode(args.put(v, codes.length, t, bytes.length).start),
    );
    try {
      return out.array(Int32Array);
    } finally {
      textDone(ctx);
    }
  }
  /** The text of `tokens` (ids in 0 .. vocabSize - 1). */
  decode(tokens) {
    const ctx = this.#ctx,
      codes = this.#codes;
    const t = intArray("tokens", tokens);
    const out = textCall(ctx, "tokens", CORE_NAMES, [codes, t], (args, [v, p]) =>
      ctx.M.tokenizerDecode(args.put(v, codes.length, p, t.length).start),
    );
    try {
      return decoder.decode(out.bytes());
    } finally {
      textDone(ctx);
    }
  }
}

/** A tokenizer of a vocabulary's code points (checked by the core, naming `name`). */
function tokenizerOf(ctx, name, codes) {
  // Encoding the empty text checks the vocabulary (Tokenizer::FromVocabulary).
  const empty = new Uint8Array(0);
  textCall(ctx, name, names({ vocabulary: name }), [codes, empty], (args, [v, t]) =>
    ctx.M.tokenizerEncode(args.put(v, codes.length, t, 0).start),
  );
  textDone(ctx);
  return new Tokenizer(ctx, codes);
}

/** The tokenizer built from the characters of `text`. */
function createTokenizer(ctx, text) {
  const bytes = textBytes("text", text);
  const out = textCall(ctx, "text", CORE_NAMES, [bytes], (args, [t]) =>
    ctx.M.tokenizerBuild(args.put(t, bytes.length).start),
  );
  try {
    return new Tokenizer(ctx, out.array(Uint32Array));
  } finally {
    textDone(ctx);
  }
}

// A dataset's Status names its options.
const DATASET_NAMES = names({
  vocabulary: "options.vocabulary",
  seq_len: "options.seqLen",
  validation_windows: "options.validationWindows",
});

export class TextDataset {
  constructor(ctx, text, options) {
    const bytes = textBytes("text", text);
    const o = checkOptions(
      "options",
      options,
      ["seqLen", "seed", "validationWindows", "vocabulary"],
      "{seqLen, seed?, validationWindows?, vocabulary?}",
    );
    if (options === undefined)
      throw typeError("options", "an object {seqLen, seed?, ...}", options);
    const seqLen = checkCount("options.seqLen", o.seqLen);
    const seed = o.seed === undefined ? [0, 0] : seedWords("options.seed", o.seed);
    const windows =
      o.validationWindows === undefined
        ? 128
        : checkCount("options.validationWindows", o.validationWindows);
    const codes =
      o.vocabulary === undefined
        ? new Uint32Array(0)
        : vocabularyCodePoints("options.vocabulary", o.vocabulary);
    let handle = 0;
    const args = textCall(ctx, "text", DATASET_NAMES, [bytes, codes], (a, [t, v]) => {
      handle = ctx.M.datasetCreate(
        a.put(t, bytes.length, v, codes.length, seqLen, seed, windows).start,
      );
      return handle ? 0 : 1;
    });
    try {
      const info = ctx.mem.cursor(args.start);
      ctx.M.datasetInfo(handle, info.start);
      const tokenizer = new Tokenizer(ctx, info.array(Uint32Array));
      const [train, validation, validationWindows, unknown] = info.words(4);
      Object.defineProperties(this, {
        tokenizer: { value: tokenizer, enumerable: true },
        vocabulary: { value: tokenizer.vocabulary, enumerable: true },
        vocabSize: { value: tokenizer.vocabSize, enumerable: true },
        seqLen: { value: seqLen, enumerable: true },
        trainTokens: { value: train, enumerable: true },
        validationTokens: { value: validation, enumerable: true },
        validationWindows: { value: validationWindows, enumerable: true },
        // The text's characters outside options.vocabulary (token 0, read as "\uFFFD").
        unknownCharacters: { value: unknown, enumerable: true },
      });
    } finally {
      ctx.mem.trim();
    }
    this.#ctx = ctx;
    ctx.objects.track(this, "TextDataset", handle);
  }
  #ctx;
  #batch(batch, fn) {
    const ctx = this.#ctx;
    const handle = ctx.objects.live(this, "TextDataset", "dataset");
    const out = ctx.args("batch");
    if (fn(handle, out.start) !== 0) ctx.fail(CORE_NAMES);
    const n = batch * this.seqLen;
    return {
      batch,
      seqLen: this.seqLen,
      tokens: out.arrayAt(Int32Array, out.word(), n),
      targets: out.arrayAt(Int32Array, out.word(), n),
      // The tokens' vocabulary: a model of another one refuses the batch.
      vocabulary: this.vocabulary,
    };
  }
  /** `batch` windows at seeded random places in the training part (the stream goes on). */
  next(batch) {
    checkCount("batch", batch);
    return this.#batch(batch, (h, at) => this.#ctx.M.datasetNext(h, batch, at));
  }
  /** Validation windows first .. first + count - 1 as one batch. */
  validationBatch(first, count) {
    checkCount("first", first, { allowZero: true });
    checkCount("count", count);
    if (first + count > this.validationWindows) {
      throw rangeError(
        "count",
        `windows within 0 .. ${this.validationWindows} (validationWindows)`,
        `${first} .. ${first + count}`,
      );
    }
    return this.#batch(count, (h, at) => this.#ctx.M.datasetValidationBatch(h, first, count, at));
  }
  /** The model's mean loss over every validation window (nats per character). */
  validationLoss(model) {
    const ctx = this.#ctx;
    const handle = ctx.objects.live(this, "TextDataset", "dataset");
    const modelHandle = ctx.objects.live(model, "Model", "model");
    if (!readsVocabulary(model, this.vocabulary)) {
      throw rangeError(
        "model",
        `a model of this dataset's vocabulary (${this.vocabSize} characters)`,
        `one of another vocabulary (${model.vocabulary.length} characters)`,
      );
    }
    const out = ctx.args("model");
    if (ctx.M.datasetValidationLoss(handle, modelHandle, VALIDATION_CHUNK, out.start) !== 0)
      ctx.fail(CORE_NAMES);
    return out.float();
  }
  dispose() {
    this.#ctx.objects.dispose(this);
  }
  [Symbol.dispose ?? Symbol.for("Symbol.dispose")]() {
    this.dispose();
  }
}

/** Sampling options, checked: {temperature, topK} (SAMPLING_OPTIONS) and the seed's words. */
function checkSampling(options, keys, shape) {
  const o = checkOptions("options", options, keys, shape);
  const { temperature, topK } = resolveOptions(SAMPLING_OPTIONS, o);
  return {
    o,
    temperature,
    topK,
    seed: o.seed === undefined ? [0, 0] : seedWords("options.seed", o.seed),
  };
}
// A sampler's Status names its options.
const SAMPLE_NAMES = names(coreNames(SAMPLING_OPTIONS));
// The tokenizer of a sampler whose model reads tokens of a JS tokenizer
// (GPT-2's BPE, bpe.js) rather than characters: it encodes the prompt, and
// each step's text is its token's piece.
const jsTokenizers = new WeakMap();

/** The model's tokenizer if it is a JS one (not the character Tokenizer), else null. */
function jsTokenizerOf(model) {
  const t = model.tokenizer;
  return t && !(t instanceof Tokenizer) ? t : null;
}

export class Sampler {
  constructor(ctx, model, modelHandle, prompt, options) {
    const bytes = textBytes("prompt", prompt);
    const s = checkSampling(
      options,
      ["temperature", "topK", "seed"],
      "{temperature?, topK?, seed?}",
    );
    if (!model.vocabulary) {
      throw rangeError(
        "model",
        "a model with a vocabulary (createModel with options.vocabulary, or a loaded language model)",
        "one without",
      );
    }
    let handle = 0;
    const tokenizer = jsTokenizerOf(model);
    if (tokenizer) {
      const tokens = tokenizer.encode(prompt);
      textCall(ctx, "prompt", SAMPLE_NAMES, [tokens], (args, [p]) => {
        handle = ctx.M.samplerCreateTokens(modelHandle, args.put(p, tokens.length, s.seed).start);
        return handle ? 0 : 1;
      });
    } else {
      textCall(ctx, "prompt", SAMPLE_NAMES, [bytes], (args, [p]) => {
        handle = ctx.M.samplerCreate(modelHandle, args.put(p, bytes.length, s.seed).start);
        return handle ? 0 : 1;
      });
    }
    ctx.mem.trim();
    if (tokenizer) jsTokenizers.set(this, tokenizer);
    Object.defineProperties(this, {
      model: { value: model, enumerable: true },
      options: {
        value: Object.freeze({ temperature: s.temperature, topK: s.topK }),
        enumerable: true,
      },
    });
    this.#ctx = ctx;
    ctx.objects.track(this, "Sampler", handle);
  }
  #ctx;
  /**
   * The next character (a BPE model's: token, its piece as `character`): its
   * token, text, logits and each layer's attention over the context.
   */
  next() {
    return sample(this.#ctx, this, true);
  }
  dispose() {
    this.#ctx.objects.dispose(this);
  }
  [Symbol.dispose ?? Symbol.for("Symbol.dispose")]() {
    this.dispose();
  }
}

/**
 * A sampler's next character: {token, character}, with its logits and
 * weights if `full`. A JS tokenizer's token reads as its piece.
 */
function sample(ctx, sampler, full) {
  const handle = ctx.objects.live(sampler, "Sampler", "sampler");
  ctx.objects.live(sampler.model, "Model", "sampler.model");
  // Read by kSamplingOptions in text_bindings.cc, one word per option.
  const o = sampler.options;
  const args = ctx.args("sampler").put(...SAMPLING_OPTIONS.map((e) => scalarWord(e, o[e.name])));
  if (ctx.M.samplerNext(handle, args.start) !== 0) ctx.fail(SAMPLE_NAMES);
  const token = args.word();
  const bytes = args.bytes();
  const tokenizer = jsTokenizers.get(sampler);
  const character = tokenizer ? tokenizer.vocabulary[token] : decoder.decode(bytes);
  if (!full) return { token, character };
  const logits = args.array(Float32Array);
  const layers = args.word();
  const weights = [];
  for (let l = 0; l < layers; ++l) {
    const { data, shape } = args.matrix();
    weights.push({ data, shape });
  }
  return { token, character, logits, weights };
}

/** model.generate: `length` characters sampled after `prompt`. */
function generate(ctx, model, modelHandle, prompt, options) {
  const o = checkOptions(
    "options",
    options,
    ["length", "steps", "temperature", "topK", "seed"],
    "{length?, steps?, temperature?, topK?, seed?}",
  );
  const length = o.length === undefined ? 100 : checkCount("options.length", o.length);
  if (length > MAX_GENERATE_LENGTH) {
    throw rangeError(
      "options.length",
      `at most ${MAX_GENERATE_LENGTH} characters per generate call (more: model.sampler() and next())`,
      `${length}`,
    );
  }
  if (o.steps !== undefined && typeof o.steps !== "boolean")
    throw typeError("options.steps", "a boolean", o.steps);
  const full = o.steps !== false;
  const { length: _, steps: __, ...sampling } = o;
  const sampler = new Sampler(ctx, model, modelHandle, prompt, sampling);
  try {
    const steps = Array.from({ length }, () => sample(ctx, sampler, full));
    const tokens = Int32Array.from(steps, (s) => s.token);
    // A BPE model's pieces may split a character: its text is the tokens' decoding.
    const tokenizer = jsTokenizers.get(sampler);
    const text = tokenizer ? tokenizer.decode(tokens) : steps.map((s) => s.character).join("");
    return { text, tokens, steps: full ? steps : [] };
  } finally {
    sampler.dispose();
  }
}

/**
 * The text calls over the model context `ctx` (model.js): its module,
 * handles, argument blocks and error path.
 */
export function languageContext(ctx) {
  return {
    tokenizerOf: (name, codes) => tokenizerOf(ctx, name, codes),
    createTokenizer: (text) => createTokenizer(ctx, text),
    createTextDataset: (text, options) => new TextDataset(ctx, text, options),
    sampler: (model, handle, prompt, options) => new Sampler(ctx, model, handle, prompt, options),
    generate: (model, handle, prompt, options) => generate(ctx, model, handle, prompt, options),
  };
}

/**
 * An Int32Array, or an array of integers copied into one; else an error naming
 * `name` and, in an array, the first entry that is not a 32-bit integer.
 */
export function intArray(name, v) {
  if (v instanceof Int32Array) return v;
  const expected = "an Int32Array (or an array of integers)";
  if (!Array.isArray(v)) throw typeError(name, expected, v);
  const bad = v.findIndex((x) => !Number.isInteger(x) || Math.abs(x) >= 2 ** 31);
  if (bad < 0) return Int32Array.from(v);
  const got = `${describe(v[bad])} at entry ${bad}`;
  throw new AttnkitTypeError(`${name}: expected ${expected}, got ${got}`, { parameter: name });
}
