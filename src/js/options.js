// attnkit: the options of each call, described once. An entry names the JS
// key, the C++ field a core Status names (`core`), the argument words the
// bindings read for it (`words`, in the order of the C++ decoder's table in
// src/core/attention_options.cc and src/bindings: tests/js/option-layout.test.js
// compares the two), how its
// value becomes them (`word`), its default (the C++ struct's, compared by the
// same test) and its check. The JS checks, the argument words (marshal.js,
// model.js, language.js), the C++ -> JS names of errors and the docs' option
// tables are derived from these lists. An entry that `convert`s its value
// names a conversion its caller supplies (language.js: "seed" -> words,
// "vocabulary" -> code points); `required` entries are checked when absent.
//
// Word kinds: "f32" (the float32's bits), "bool" (0 or 1), "enum" (the index
// of the value in `values`), "int" (a 32-bit integer, `none` when absent),
// "count" (a non-negative integer), "array" (a typed array in wasm memory:
// [address, count]), "mask" (a mask tensor: [address, rows, cols, batch,
// heads]); an entry without `word` stays in JS (options.out).
import { describe, rangeError, typeError } from "./errors.js";
import { checkCount, checkKeys, isObject, toMaskTensor } from "./convert.js";

/**
 * A number finite as float32 and > 0 (or >= 0 with `zero`), else an error
 * saying `expected` and the value given.
 */
function float32(name, v, zero, expected) {
  if (typeof v !== "number") throw typeError(name, "a number", v);
  // Checked here, not only in the core, so the message shows the value given:
  // the core sees float32, where 1e40 is inf and 1e-50 is 0.
  const f = Math.fround(v);
  if (!(Number.isFinite(f) && (f > 0 || (zero && f === 0)))) {
    throw rangeError(name, expected, describe(v));
  }
}

function checkBoolean(name, v) {
  if (typeof v !== "boolean") throw typeError(name, "a boolean", v);
}

/** A finite JS number (a trainer's and a sampler's floats). */
function checkFinite(name, v) {
  if (typeof v !== "number") throw typeError(name, "a number", v);
  if (!Number.isFinite(v)) throw rangeError(name, "a finite number", describe(v));
}

const checkCountOrZero = (name, v) => checkCount(name, v, { allowZero: true });

// An offset moves the upper-left frontier only: without that alignment it
// would be ignored, so it is refused with what to add.
function needsUpperLeft(key, o) {
  const alignment = o.causalAlignment;
  if (alignment === "upperLeft") return;
  throw rangeError(
    `options.${key}`,
    `causalAlignment: "upperLeft" beside it (${key} moves the upper-left frontier, key j <= i + offset; ` +
      `the default "lowerRight" alignment has no offset)`,
    alignment === undefined ? "no causalAlignment" : `causalAlignment ${describe(alignment)}`,
  );
}

/** A non-empty array of integers as a typed array of `Type`, each entry checked by `entry`. */
function intList(name, v, Type, expected, entry, empty) {
  if (!Array.isArray(v) && !ArrayBuffer.isView(v)) throw typeError(name, expected, v);
  const list = Type.from(v, (x, i) => entry(`${name}[${i}]`, x));
  if (list.length === 0) throw rangeError(name, empty, "an empty array");
  return list;
}

const int32 = (name, v) => {
  if (!Number.isInteger(v) || Math.abs(v) >= 2 ** 31)
    throw rangeError(name, "an integer", describe(v));
  return v;
};

/**
 * The options of every attention call (AttentionOptions in attention.h; read
 * and checked by the core's option table, src/core/attention_options.cc). `check(value,
 * options, outKeys)` runs when the options are checked, `input(value)` when
 * the call lays out its inputs (arrays become inputs in wasm memory).
 */
export const ATTENTION_OPTIONS = [
  {
    name: "scale",
    core: "scale",
    word: "f32",
    words: ["scale"],
    // Absent: 0, the derived 1/sqrt(d_k) (a given scale is > 0).
    check: (v) => float32("options.scale", v, false, "a finite number > 0 (as float32)"),
  },
  {
    name: "softcap",
    core: "softcap",
    word: "f32",
    words: ["softcap"],
    default: 0,
    check: (v) =>
      float32("options.softcap", v, true, "0 (off) or a finite number > 0 (as float32)"),
  },
  {
    name: "causal",
    core: "causal",
    word: "bool",
    words: ["causal"],
    default: false,
    check: (v) => checkBoolean("options.causal", v),
  },
  {
    name: "causalAlignment",
    core: "causal_alignment",
    word: "enum",
    values: ["lowerRight", "upperLeft"],
    words: ["causal_alignment"],
    default: "lowerRight",
    check(v) {
      if (v !== "lowerRight" && v !== "upperLeft") {
        throw rangeError("options.causalAlignment", '"lowerRight" or "upperLeft"', describe(v));
      }
    },
  },
  {
    name: "causalOffset",
    core: "causal_offset",
    word: "int",
    words: ["causal_offset"],
    default: 0,
    check(v, o) {
      if (!(Number.isInteger(v) && Math.abs(v) < 2 ** 31)) {
        throw rangeError("options.causalOffset", "an integer (may be negative)", describe(v));
      }
      if (v !== 0) needsUpperLeft("causalOffset", o);
    },
  },
  {
    name: "causalOffsets",
    core: "causal_offsets",
    word: "array",
    words: ["causal_offsets", "causal_offsets.count"],
    check: (v, o) => needsUpperLeft("causalOffsets", o),
    input: (v) =>
      intList(
        "options.causalOffsets",
        v,
        Int32Array,
        "an array of integers",
        int32,
        "one offset per batch item (omit it for one offset)",
      ),
  },
  {
    name: "keyLength",
    core: "key_length",
    word: "int",
    none: -1, // all keys
    words: ["key_length"],
    input: (v) => void checkCountOrZero("options.keyLength", v),
  },
  {
    name: "keyLengths",
    core: "key_lengths",
    word: "array",
    words: ["key_lengths", "key_lengths.count"],
    input: (v) =>
      intList(
        "options.keyLengths",
        v,
        Uint32Array,
        "an array of non-negative integers",
        checkCountOrZero,
        "one length per batch item (omit it for no padding)",
      ),
  },
  {
    name: "boolMask",
    core: "bool_mask",
    word: "mask",
    words: maskWords("bool_mask"),
    input: (v) => toMaskTensor("options.boolMask", v, true),
  },
  {
    name: "additiveMask",
    core: "additive_mask",
    word: "mask",
    words: maskWords("additive_mask"),
    input: (v) => toMaskTensor("options.additiveMask", v, false),
  },
  {
    name: "out",
    check(v, o, outKeys) {
      if (outKeys) checkGradientOut(v, outKeys);
      else if (!(v instanceof Float32Array)) throw typeError("options.out", "a Float32Array", v);
    },
  },
];

/** The words of a mask option: its matrix view, then its layout's batch and heads. */
function maskWords(core) {
  return [core, `${core}.rows`, `${core}.cols`, `${core}_layout.batch`, `${core}_layout.heads`];
}

// Each attention option's index in ATTENTION_OPTIONS, by its key.
const ATTENTION_INDEX = new Map(ATTENTION_OPTIONS.map((e, i) => [e.name, i]));
/** The attention options of `schema`'s entries that pass `keep`, as bits by index. */
export const attentionBits = (keep) =>
  ATTENTION_OPTIONS.reduce((bits, e, i) => (keep(e) ? bits | (1 << i) : bits), 0);

/**
 * The attention options `options` gives (not undefined), as bits by index in
 * ATTENTION_OPTIONS. Walks the keys given (a call's options are few) rather
 * than asking for every option: reading an absent key is the slow case of a
 * property load.
 */
export function givenOptions(options) {
  let bits = 0;
  for (const key in options) {
    const i = ATTENTION_INDEX.get(key);
    if (i !== undefined && options[key] !== undefined) bits |= 1 << i;
  }
  return bits;
}

/** The index of the lowest set bit of a non-zero `bits`. */
export const lowestBit = (bits) => 31 - Math.clz32(bits & -bits);

/** A backward call's options.out: { [gradient]?: Float32Array } under `keys`. */
function checkGradientOut(out, keys) {
  const expected = `an object {${keys.map((k) => `${k}?`).join(", ")}} of Float32Arrays`;
  if (!isObject(out) || Array.isArray(out) || ArrayBuffer.isView(out)) {
    throw typeError("options.out", expected, out);
  }
  checkKeys("options.out", out, keys);
  for (const key of keys) {
    if (out[key] !== undefined && !(out[key] instanceof Float32Array)) {
      throw typeError(`options.out.${key}`, "a Float32Array", out[key]);
    }
  }
}

/**
 * A trainer's options (AdamWConfig in model.h, read by the trainer's table in
 * src/bindings/model_bindings.cc), each with the C++ struct's default.
 */
export const TRAINER_OPTIONS = [
  { name: "learningRate", core: "learning_rate", word: "f32", default: 1e-3 },
  { name: "beta1", core: "beta1", word: "f32", default: 0.9 },
  { name: "beta2", core: "beta2", word: "f32", default: 0.98 },
  { name: "epsilon", core: "epsilon", word: "f32", default: 1e-8 },
  { name: "weightDecay", core: "weight_decay", word: "f32", default: 0.01 },
  { name: "warmupSteps", core: "warmup_steps", word: "count", default: 0 },
  { name: "clipNorm", core: "clip_norm", word: "f32", default: 1 },
  { name: "decaySteps", core: "decay_steps", word: "count", default: 0 },
  { name: "minLearningRate", core: "min_learning_rate", word: "f32", default: 0 },
].map((e) => ({ ...e, words: [e.core] }));

/**
 * The sampling options of Model.sampler and generate (SampleOptions in
 * generate.h, read by the sampling table in src/bindings/text_bindings.cc);
 * the seed goes to the sampler's creation, not in these words.
 */
export const SAMPLING_OPTIONS = [
  {
    name: "temperature",
    core: "temperature",
    word: "f32",
    words: ["temperature"],
    default: 1,
    check(v) {
      if (typeof v !== "number") throw typeError("options.temperature", "a number", v);
      if (!Number.isFinite(v) || v < 0)
        throw rangeError("options.temperature", "a finite number >= 0", describe(v));
    },
  },
  { name: "topK", core: "top_k", word: "count", words: ["top_k"], default: 0 },
];

// The most characters one model.generate call samples (with its steps, each
// keeps its logits and every layer's attention): a longer text comes from a
// sampler, one next() at a time.
export const MAX_GENERATE_LENGTH = 65536;

/** A seed: the [lo, hi] words of a non-negative safe integer or a BigInt (0 when absent). */
const SEED_OPTION = { name: "seed", convert: "seed", default: [0, 0] };

/**
 * TextDataset's options (TextDataset::Create in text.h, whose Status names
 * `core`): a window's length, the seed of its windows, the validation
 * windows and a fixed vocabulary (characters, "\uFFFD" first).
 */
export const DATASET_OPTIONS = [
  {
    name: "seqLen",
    core: "seq_len",
    required: true,
    check: (v) => void checkCount("options.seqLen", v),
  },
  SEED_OPTION,
  {
    name: "validationWindows",
    core: "validation_windows",
    default: 128,
    check: (v) => void checkCount("options.validationWindows", v),
  },
  { name: "vocabulary", core: "vocabulary", convert: "vocabulary", default: new Uint32Array(0) },
];

/**
 * model.generate's own options: how many characters, and whether each
 * step's logits and attention come back; the sampling options and the seed
 * go to its sampler.
 */
export const GENERATE_OPTIONS = [
  {
    name: "length",
    default: 100,
    check(v) {
      checkCount("options.length", v);
      if (v > MAX_GENERATE_LENGTH) {
        throw rangeError(
          "options.length",
          `at most ${MAX_GENERATE_LENGTH} characters per generate call (more: model.sampler() and next())`,
          `${v}`,
        );
      }
    },
  },
  { name: "steps", default: true, check: (v) => checkBoolean("options.steps", v) },
];
/** Every key model.generate takes: its own, then its sampler's. */
export const GENERATE_KEYS = [...GENERATE_OPTIONS, ...SAMPLING_OPTIONS, SEED_OPTION];

/** The keys of `schema` as an object's shape for errors: "{seqLen, seed?}". */
export const optionShape = (schema) =>
  `{${schema.map((e) => (e.required ? e.name : `${e.name}?`)).join(", ")}}`;

// A trainer's and a sampler's words checked by kind (attention's have their own checks).
const WORD_CHECKS = { f32: checkFinite, count: checkCountOrZero };

/** An object with only `keys` (options, a config ...): else an error naming `shape` or the unknown key. */
export function checkObject(name, value, keys, shape) {
  if (!isObject(value) || Array.isArray(value)) throw typeError(name, `an object ${shape}`, value);
  checkKeys(name, value, keys);
}

/**
 * The options of `schema`, checked, every one resolved to its value or
 * default; `converts` maps an entry's `convert` to its check and conversion,
 * (name, value) -> the value's form for the call.
 */
export function resolveOptions(schema, o, converts = {}) {
  const resolved = {};
  for (const e of schema) {
    let v = o[e.name];
    if (v !== undefined || e.required) {
      if (e.check) e.check(v, o);
      else if (e.convert) v = converts[e.convert](`options.${e.name}`, v);
      else WORD_CHECKS[e.word](`options.${e.name}`, v);
    }
    resolved[e.name] = v === undefined ? e.default : v;
  }
  return resolved;
}

/** Core parameter names -> "options.<key>", for a Status's parameter. */
export function coreNames(schema) {
  return Object.fromEntries(schema.filter((e) => e.core).map((e) => [e.core, `options.${e.name}`]));
}

/**
 * The core's words in a Status detail -> the JS names (`prefix` before them),
 * for the options whose C++ name differs from the JS key.
 */
export function detailWords(schema, prefix) {
  return schema
    .filter((e) => e.core && e.core !== e.name)
    .map((e) => [new RegExp(`\\b${e.core}\\b`, "g"), prefix + e.name]);
}

/** The argument words of `schema` in order, as the C++ decoder names them. */
export const wordLayout = (schema) => schema.flatMap((e) => e.words ?? []);
