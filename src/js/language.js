// attnkit: the language model's text in JS (include/attnkit/text.h, generate.h): a
// character tokenizer, a dataset of seeded windows over a text with its
// validation part, and sampling text from a model through the KV cache with
// every layer's attention per character. Texts go to wasm as UTF-8; the core
// checks and tokenizes them, so JS and C++ users get the same tokens.
import { AttnkitTypeError, describe, rangeError, typeError } from "./errors.js";
import { checkCount } from "./convert.js";
import { bitsFloat, scalarWord } from "./marshal.js";
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
// Words of a call's argument block (model.js's ARG_BYTES).
const ARG_BYTES = 128;
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
 * Tokenizer, TextDataset and Sampler over the model context `ctx` (model.js):
 * its module, handles, scratch memory, error path and seed words.
 */
export function languageContext(ctx, seedWords) {
  const { M, objects } = ctx;

  /** Runs fn(args) with words, then byte blocks, in scratch memory; fn's words after the call. */
  function call(blame, names, blocks, fn) {
    const bytes = blocks.reduce((n, b) => n + ((b.byteLength + 3) & ~3), 0);
    const base = ctx.scratch(bytes, blame);
    let at = base + ARG_BYTES;
    const addresses = blocks.map((b) => {
      const ptr = at;
      M.HEAPU8.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength), ptr);
      at += (b.byteLength + 3) & ~3;
      return ptr;
    });
    try {
      if (fn(base, addresses) !== 0) ctx.fail(names);
      return base;
    } catch (e) {
      ctx.mem.trim();
      throw e;
    }
  }
  const words = (at, n) => M.HEAPU32.slice(at >> 2, (at >> 2) + n);
  const done = () => {
    M.textClear();
    ctx.mem.trim();
  };

  class Tokenizer {
    constructor(codes) {
      Object.defineProperties(this, {
        // Token id -> its character; vocabulary[0] is the unknown token "\uFFFD".
        vocabulary: { value: characters(codes), enumerable: true },
        vocabSize: { value: codes.length, enumerable: true },
        unknownToken: { value: 0, enumerable: true },
      });
      this.#codes = codes;
      brand(this, "Tokenizer");
    }
    #codes;
    /** The tokens of `text` (one per code point; characters outside the vocabulary are 0). */
    encode(text) {
      const bytes = textBytes("text", text);
      const base = call("text", { text: "text" }, [this.#codes, bytes], (args, [v, t]) => {
        M.HEAPU32.set([v, this.#codes.length, t, bytes.length], args >> 2);
        return M.tokenizerEncode(args);
      });
      try {
        const [ptr, count] = words(base + 16, 2);
        return M.HEAP32.slice(ptr >> 2, (ptr >> 2) + count);
      } finally {
        done();
      }
    }
    /** The text of `tokens` (ids in 0 .. vocabSize - 1). */
    decode(tokens) {
      const t = intArray("tokens", tokens);
      const base = call("tokens", { tokens: "tokens" }, [this.#codes, t], (args, [v, p]) => {
        M.HEAPU32.set([v, this.#codes.length, p, t.length], args >> 2);
        return M.tokenizerDecode(args);
      });
      try {
        const [ptr, size] = words(base + 16, 2);
        return decoder.decode(M.HEAPU8.subarray(ptr, ptr + size));
      } finally {
        done();
      }
    }
  }

  /** A tokenizer of a vocabulary's code points (checked by the core, naming `name`). */
  function tokenizerOf(name, codes) {
    // Encoding the empty text checks the vocabulary (Tokenizer::FromVocabulary).
    call(name, { vocabulary: name }, [codes, new Uint8Array(0)], (args, [v, t]) => {
      M.HEAPU32.set([v, codes.length, t, 0], args >> 2);
      return M.tokenizerEncode(args);
    });
    done();
    return new Tokenizer(codes);
  }

  class TextDataset {
    constructor(text, options) {
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
      const names = {
        text: "text",
        vocabulary: "options.vocabulary",
        seq_len: "options.seqLen",
        validation_windows: "options.validationWindows",
      };
      let handle = 0;
      const base = call("text", names, [bytes, codes], (args, [t, v]) => {
        M.HEAPU32.set([t, bytes.length, v, codes.length, seqLen, ...seed, windows], args >> 2);
        handle = M.datasetCreate(args);
        return handle ? 0 : 1;
      });
      try {
        M.datasetInfo(handle, base);
        const [vocab, count, train, validation, validationWindows, unknown] = words(base, 6);
        const tokenizer = new Tokenizer(M.HEAPU32.slice(vocab >> 2, (vocab >> 2) + count));
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
      objects.track(this, "TextDataset", handle);
    }
    #batch(batch, fn) {
      const handle = objects.live(this, "TextDataset", "dataset");
      const at = ctx.scratch(0, "batch");
      if (fn(handle, at) !== 0) ctx.fail({ batch: "batch", count: "count", dataset: "dataset" });
      const [tokens, targets] = words(at, 2);
      const n = batch * this.seqLen;
      return {
        batch,
        seqLen: this.seqLen,
        tokens: M.HEAP32.slice(tokens >> 2, (tokens >> 2) + n),
        targets: M.HEAP32.slice(targets >> 2, (targets >> 2) + n),
        // The tokens' vocabulary: a model of another one refuses the batch.
        vocabulary: this.vocabulary,
      };
    }
    /** `batch` windows at seeded random places in the training part (the stream goes on). */
    next(batch) {
      checkCount("batch", batch);
      return this.#batch(batch, (h, at) => M.datasetNext(h, batch, at));
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
      return this.#batch(count, (h, at) => M.datasetValidationBatch(h, first, count, at));
    }
    /** The model's mean loss over every validation window (nats per character). */
    validationLoss(model) {
      const handle = objects.live(this, "TextDataset", "dataset");
      const modelHandle = objects.live(model, "Model", "model");
      if (!readsVocabulary(model, this.vocabulary)) {
        throw rangeError(
          "model",
          `a model of this dataset's vocabulary (${this.vocabSize} characters)`,
          `one of another vocabulary (${model.vocabulary.length} characters)`,
        );
      }
      const at = ctx.scratch(0, "model");
      if (M.datasetValidationLoss(handle, modelHandle, VALIDATION_CHUNK, at) !== 0)
        ctx.fail({ model: "model" });
      return bitsFloat(M.HEAPU32[at >> 2]);
    }
    dispose() {
      objects.dispose(this);
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
  const SAMPLE_NAMES = { prompt: "prompt", model: "model", ...coreNames(SAMPLING_OPTIONS) };

  class Sampler {
    constructor(model, modelHandle, prompt, options) {
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
      call("prompt", SAMPLE_NAMES, [bytes], (args, [p]) => {
        M.HEAPU32.set([p, bytes.length, ...s.seed], args >> 2);
        handle = M.samplerCreate(modelHandle, args);
        return handle ? 0 : 1;
      });
      ctx.mem.trim();
      Object.defineProperties(this, {
        model: { value: model, enumerable: true },
        options: {
          value: Object.freeze({ temperature: s.temperature, topK: s.topK }),
          enumerable: true,
        },
      });
      objects.track(this, "Sampler", handle);
    }
    /** The next character: its token, text, logits and each layer's attention over the context. */
    next() {
      return sample(this, true);
    }
    dispose() {
      objects.dispose(this);
    }
    [Symbol.dispose ?? Symbol.for("Symbol.dispose")]() {
      this.dispose();
    }
  }

  /** A sampler's next character: {token, character}, with its logits and weights if `full`. */
  function sample(sampler, full) {
    const handle = objects.live(sampler, "Sampler", "sampler");
    objects.live(sampler.model, "Model", "sampler.model");
    const at = ctx.scratch(0, "sampler");
    // Read by kSamplingOptions in text_bindings.cc, one word per option.
    const o = sampler.options;
    M.HEAPU32.set(
      SAMPLING_OPTIONS.map((e) => scalarWord(e, o[e.name])),
      at >> 2,
    );
    if (M.samplerNext(handle, at) !== 0) ctx.fail(SAMPLE_NAMES);
    const [token, text, size, logits, count, layers] = words(at + 8, 6);
    const character = decoder.decode(M.HEAPU8.subarray(text, text + size));
    if (!full) return { token, character };
    const weights = [];
    for (let l = 0; l < layers; ++l) {
      const [ptr, rows, cols] = words(at + 32 + 12 * l, 3);
      weights.push({
        data: M.HEAPF32.slice(ptr >> 2, (ptr >> 2) + rows * cols),
        shape: [rows, cols],
      });
    }
    return {
      token,
      character,
      logits: M.HEAPF32.slice(logits >> 2, (logits >> 2) + count),
      weights,
    };
  }

  return {
    Tokenizer,
    TextDataset,
    Sampler,
    tokenizerOf,
    createTokenizer(text) {
      const bytes = textBytes("text", text);
      const base = call("text", { text: "text" }, [bytes], (args, [t]) => {
        M.HEAPU32.set([t, bytes.length], args >> 2);
        return M.tokenizerBuild(args);
      });
      try {
        const [ptr, count] = words(base + 8, 2);
        return new Tokenizer(M.HEAPU32.slice(ptr >> 2, (ptr >> 2) + count));
      } finally {
        done();
      }
    },
    /** model.generate: `length` characters sampled after `prompt`. */
    generate(model, modelHandle, prompt, options) {
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
      const sampler = new Sampler(model, modelHandle, prompt, sampling);
      try {
        const steps = Array.from({ length }, () => sample(sampler, full));
        const text = steps.map((s) => s.character).join("");
        const tokens = Int32Array.from(steps, (s) => s.token);
        return { text, tokens, steps: full ? steps : [] };
      } finally {
        sampler.dispose();
      }
    },
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
