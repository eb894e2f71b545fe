// attnkit: moving a call across the wasm boundary. Inputs are copied into one
// reused scratch block of wasm memory, the call's arguments are written as one
// block of 32-bit words (read by Args in src/bindings/bindings.cc), outputs are
// copied out into JS-owned Float32Arrays, and a non-zero status becomes an
// AttnkitError named from the core Status's parameter.
import { AttnkitError, describe, rangeError, typeError } from "./errors.js";
import { jsDetail } from "./details.js";
import { MAX_ELEMENTS, checkElements, count } from "./convert.js";
import { ARRAY_OPTIONS, optionInputs } from "./arguments.js";
import {
  ATTENTION_OPTIONS,
  attentionBits,
  coreNames,
  givenOptions,
  lowestBit,
  wordLayout,
} from "./options.js";

const CODES = ["ok", "invalid_argument", "shape_mismatch", "non_finite", "overflow", "capacity"];
/**
 * A table of core parameter names -> the JS names users wrote, over `base`
 * (a name this table lacks is looked up there, then kept as it is): the
 * attention layer's CORE_NAMES, and each call's or layer's own names as
 * tables over it.
 */
export const names = (entries, base = CORE_NAMES) =>
  Object.freeze(Object.create(base, Object.getOwnPropertyDescriptors(entries)));
// The attention layer's names: the base of every other table.
export const CORE_NAMES = names(
  {
    ...coreNames(ATTENTION_OPTIONS),
    num_heads: "config.numHeads",
    num_kv_heads: "config.numKvHeads",
    d_k: "config.dK",
    d_v: "config.dV",
    W_Q: "weights.W_Q",
    W_K: "weights.W_K",
    W_V: "weights.W_V",
    W_O: "weights.W_O",
    X_q: "Xq",
    X_kv: "Xkv",
    X_new: "X",
    Q_new: "Q",
    K_new: "K",
    V_new: "V",
    size: "size",
    past_K: "options.pastKey",
    past_V: "options.pastValue",
    present_K: "options.present",
    present_V: "options.present",
    scores: "options.scores",
    scores_stage: "options.scores",
  },
  null,
);
// The names of a call given numHeads as an argument of its own (splitHeads,
// a KV cache's attend).
export const NUM_HEADS_NAMES = names({ num_heads: "numHeads" });

/**
 * A result matrix: its data, rows and cols, and shape [rows, cols], so that
 * `new ort.Tensor("float32", r.data, r.shape)` and `tf.tensor(r.data, r.shape)`
 * take every result as it is.
 */
export function matrix(data, rows, cols) {
  return { data, rows, cols, shape: [rows, cols] };
}

/** An absent matrix argument (address 0). */
export const NONE = { ptr: 0, rows: 0, cols: 0 };

/** The heap of module M that holds elements of the typed array class `Type`. */
function heapOf(M, Type) {
  if (Type === Float32Array) return M.HEAPF32;
  if (Type === Int32Array) return M.HEAP32;
  if (Type === Uint32Array) return M.HEAPU32;
  return M.HEAPU8;
}

/**
 * The [rows, cols] matrix at address `ptr` of M (0: empty): a JS-owned copy, or with `view` a
 * view of M's memory (withViews is the only one to ask for views).
 */
export function readMatrix(M, ptr, rows, cols, { view = false } = {}) {
  const start = ptr >>> 2;
  const end = start + rows * cols;
  const data = !ptr
    ? new Float32Array(0)
    : view
      ? M.HEAPF32.subarray(start, end)
      : M.HEAPF32.slice(start, end);
  return matrix(data, rows, cols);
}

/**
 * Runs fn(views) and returns its result; fn is synchronous. views.matrix(cursor) reads the
 * matrix whose [address, rows, cols] come next in `cursor` as a view of the module's memory
 * (no copy). A view lasts until the memory grows (any call that allocates may grow it), which
 * detaches it: fn must make no such call after reading its views. If one grew the memory all
 * the same, fn read a detached view as empty (or failed on it), and withViews throws an
 * AttnkitError naming `name` (what fn calls the views) instead of fn's result or error.
 */
export function withViews(name, fn) {
  const read = [];
  const views = {
    matrix(cursor) {
      const [ptr, rows, cols] = cursor.words(3);
      const m = readMatrix(cursor.M, ptr, rows, cols, { view: true });
      read.push(m);
      return m;
    },
  };
  let result, failure;
  try {
    result = fn(views);
  } catch (err) {
    failure = err; // a detached view's own TypeError is replaced below
  }
  const lost = read.filter((m) => m.data.length !== m.rows * m.cols).length;
  if (lost)
    throw new AttnkitError(
      `${name}: views of the module's memory, read before a call that grew that memory (${lost} of ${read.length} detached); read them after every other call`,
      { parameter: name },
    );
  if (failure) throw failure;
  return result;
}

/**
 * Writes `parts` as 32-bit words from word index `i` of `u32`, in the order
 * Args in bindings.cc reads them: a view ({ptr, rows, cols}) is 3 words, a
 * number 1, an array of words its length. Returns the index after them.
 */
function putWords(u32, i, parts) {
  for (const p of parts) {
    if (typeof p === "number") {
      u32[i++] = p;
    } else if (Array.isArray(p)) {
      for (const w of p) u32[i++] = w;
    } else {
      u32[i++] = p.ptr;
      u32[i++] = p.rows;
      u32[i++] = p.cols;
    }
  }
  return i;
}

/**
 * The words of an argument block, in order: put() writes a call's arguments
 * and the readers then take, from where the arguments end, the results the
 * binding wrote after them (a binding's `w + n`), as Args reads in C++.
 */
export class Cursor {
  constructor(M, at) {
    this.M = M;
    // The block's address (what a binding is given) and the next word's index.
    this.start = at;
    this.i = at >>> 2;
  }
  /** Writes words (see putWords) and moves past them. */
  put(...parts) {
    this.i = putWords(this.M.HEAPU32, this.i, parts);
    return this;
  }
  /** Moves past `n` words. */
  skip(n) {
    this.i += n;
    return this;
  }
  word() {
    return this.M.HEAPU32[this.i++];
  }
  float() {
    return bitsFloat(this.word());
  }
  /** The next `n` words, copied. */
  words(n) {
    this.i += n;
    return this.M.HEAPU32.slice(this.i - n, this.i);
  }
  /** A copy of the matrix whose [address, rows, cols] come next. */
  matrix() {
    const [ptr, rows, cols] = this.words(3);
    return readMatrix(this.M, ptr, rows, cols);
  }
  /** A copy of the `Type` array whose [address, count] come next. */
  array(Type) {
    return this.arrayAt(Type, this.word(), this.word());
  }
  /** A copy of `count` elements of the `Type` array at `ptr`. */
  arrayAt(Type, ptr, count) {
    const start = ptr / Type.BYTES_PER_ELEMENT;
    return heapOf(this.M, Type).slice(start, start + count);
  }
  /** A view (not a copy: read it before the next call) of the bytes whose [address, size] come next. */
  bytes() {
    const ptr = this.word(),
      size = this.word();
    return this.M.HEAPU8.subarray(ptr, ptr + size);
  }
}
// The scratch block is given back after a call that grew it past this, so that
// one large call does not keep its memory from later calls (KV caches).
const SCRATCH_KEEP_BYTES = 16 << 20;
// The most a call may lay out: wasm memory grows to 2 GiB at most (Emscripten's
// default maximum). Sizes are summed as JS numbers, exact far past 2^32, and
// checked against it before _malloc, whose 32-bit size would wrap.
const MAX_CALL_BYTES = 2 ** 31;
// The argument block at the start of every call's scratch (32-bit words):
// its arguments, then the results a binding writes after them.
export const ARG_BYTES = 512;
const FLOAT = new Float32Array(1);
const FLOAT_BITS = new Uint32Array(FLOAT.buffer);
/** The bits of x as a float32, for an argument word. */
export function floatBits(x) {
  FLOAT[0] = x;
  return FLOAT_BITS[0];
}
/** The float32 whose bits are the word w. */
export function bitsFloat(w) {
  FLOAT_BITS[0] = w;
  return FLOAT[0];
}
const align16 = (n) => (n + 15) & ~15;

/** The [lo, hi] 32-bit words of a seed: a non-negative safe integer or a BigInt below 2^64. */
export function seedWords(name, seed) {
  if (typeof seed === "bigint") {
    if (seed < 0n || seed >= 1n << 64n)
      throw rangeError(name, "a BigInt in 0 .. 2^64 - 1", `${seed}`);
    return [Number(seed & 0xffffffffn), Number(seed >> 32n)];
  }
  if (typeof seed !== "number") throw typeError(name, "a non-negative integer or a BigInt", seed);
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw rangeError(name, "a non-negative safe integer (or a BigInt)", describe(seed));
  }
  return [seed >>> 0, Math.floor(seed / 2 ** 32)];
}

/** The words of a head configuration: [num_heads, num_kv_heads, d_k, d_v] (0 = derive). */
export const headWords = (h) => [h.numHeads, h.numKvHeads, h.dK, h.dV];

/** The word of a scalar option's value (options.js's word kinds). */
export function scalarWord(e, v) {
  if (e.word === "f32") return floatBits(v);
  if (e.word === "bool") return v ? 1 : 0;
  if (e.word === "enum") return e.values.indexOf(v);
  return v; // "int", "count"
}
/** The word of an absent scalar option: its `none`, else its default's (0 without one). */
const noneWord = (e) => e.none ?? (e.default === undefined ? 0 : scalarWord(e, e.default));
// Where each option's first word is in the options' words (by schema index).
const WORD_AT = ATTENTION_OPTIONS.map((e, i) => wordLayout(ATTENTION_OPTIONS.slice(0, i)).length);
const ARRAY_AT = ARRAY_OPTIONS.map((e) => WORD_AT[ATTENTION_OPTIONS.indexOf(e)]);

// The options of one word each ("f32", "bool", "enum", "int"), and those checked when laid out.
const SCALARS = attentionBits((e) => e.words?.length === 1);
const INPUTS = attentionBits((e) => e.input);

/** The words of `options`' scalar options, the others' words as absent. */
function scalarWords(options, given) {
  const words = NO_WORDS.slice();
  for (let bits = given & SCALARS; bits !== 0; bits &= bits - 1) {
    const i = lowestBit(bits);
    const e = ATTENTION_OPTIONS[i];
    words[WORD_AT[i]] = scalarWord(e, options[e.name]);
  }
  return words;
}

/**
 * The options' words of an argument block (read by kAttentionOptions in
 * bindings.cc) from checked options, their input views and the inputs they
 * came from (ARRAY_OPTIONS' order). `defaultCausal`: options.causal when absent.
 */
function optionWords(options, views, inputs, defaultCausal) {
  const words =
    options === undefined ? NO_WORDS.slice() : scalarWords(options, givenOptions(options));
  if (options?.causal === undefined && defaultCausal) words[CAUSAL_AT] = 1;
  ARRAY_OPTIONS.forEach((e, a) => {
    const v = views[a];
    const arrayWords =
      e.word === "array"
        ? [v.ptr, v.count ?? 0]
        : [v.ptr, v.rows, v.cols, inputs[a]?.batch ?? 1, inputs[a]?.heads ?? 1];
    words.splice(ARRAY_AT[a], arrayWords.length, ...arrayWords);
  });
  return words;
}

// The words of no options: each option's absent word, 0 for arrays and
// views, 1 for a mask layout's batch and heads.
const NO_WORDS = ATTENTION_OPTIONS.flatMap((e) => {
  if (e.word === "mask") return [0, 0, 0, 1, 1];
  if (e.word === "array") return [0, 0];
  return e.word ? [noneWord(e)] : [];
});
const CAUSAL_AT = WORD_AT[ATTENTION_OPTIONS.findIndex((e) => e.name === "causal")];
// The option words of a call without options (or whose options need no arrays).
const NO_OPTION_WORDS = Uint32Array.from(NO_WORDS);
// The most floats the lean path lays out (64 MiB): past it, run() sizes the call.
const LEAN_MAX_FLOATS = 1 << 24;

/**
 * The option words of `options`, checked by checkOptions(), if they need no
 * array in wasm memory (no "array" or "mask" option given) and name no
 * gradient outputs (a backward call's options.out), else null.
 * Runs the same checks as runWithOptions() in the same order.
 */
export function leanOptionWords(options) {
  if (options === undefined) return NO_OPTION_WORDS;
  // A forward call's options.out (a Float32Array) is the lean path's `into`.
  const out = options.out;
  if (out !== undefined && !(out instanceof Float32Array)) return null;
  const given = givenOptions(options);
  if ((given & (SCALARS | INPUTS)) === 0) return NO_OPTION_WORDS;
  if ((given & INPUTS) !== 0 && optionInputs(options).some((x) => x !== null)) return null;
  return scalarWords(options, given);
}

/** The calls of one Embind module M: its scratch block, argument blocks and errors. */
export class Marshal {
  constructor(M) {
    this.M = M;
    // One block of wasm memory, reused by every call and grown when needed.
    this.scratch = 0;
    this.scratchBytes = 0;
    // Where run() put this call's argument block.
    this.argsAt = 0;
  }

  /** Gives the scratch block back to the module's allocator. */
  release() {
    if (this.scratch) this.M._free(this.scratch);
    this.scratch = 0;
    this.scratchBytes = 0;
  }

  // `blame` names the input a failure to allocate is reported against.
  reserve(bytes, blame) {
    if (bytes <= this.scratchBytes) return this.scratch;
    const tooLarge = () =>
      rangeError(
        blame,
        "inputs and results that fit in wasm memory together (at most 2 GiB in all)",
        `${bytes} bytes`,
        "overflow",
      );
    if (bytes > MAX_CALL_BYTES) throw tooLarge();
    const size = Math.max(bytes, Math.min(2 * this.scratchBytes, SCRATCH_KEEP_BYTES), 1 << 16);
    this.release();
    // Unsigned: a model build's addresses reach past 2 GiB.
    this.scratch = this.M._malloc(size) >>> 0;
    if (!this.scratch) throw tooLarge();
    this.scratchBytes = size;
    return this.scratch;
  }

  /**
   * Lays out inputs ({data, rows, cols} with Float32Array or Uint8Array data, or
   * a Uint32Array / Int32Array) and outputs ({rows, cols, into?, shape?: the
   * result's shape as the caller gets it, for messages}) in the scratch
   * block, copies the inputs in, runs fn(views...) and returns the outputs as
   * Matrices (written into `into` when given). Sizes are checked before any
   * memory is taken. `names`: the name table of this call's errors (names()).
   */
  run(inputs, outputs, fn, names) {
    const M = this.M;
    const offsets = [];
    let bytes = ARG_BYTES; // the argument block first (see args())
    // The input or result whose bytes take the call past what wasm memory holds.
    let blame = "";
    const add = (n, name) => {
      bytes += align16(n);
      if (!blame && bytes > MAX_CALL_BYTES) blame = name;
    };
    for (const x of inputs) {
      offsets.push(bytes);
      if (x) add((x.data ?? x).byteLength, x.name ?? "input");
    }
    // A result is sized by the first input (Q or X) unless it names another.
    const first = inputs.find((x) => x?.name)?.name ?? "output";
    for (const o of outputs) {
      checkElements(o.blame ?? first, o.rows, o.cols, o.what ?? " in the result");
      if (o.into && o.into.length !== o.rows * o.cols) {
        const shape = o.shape ?? [o.rows, o.cols];
        throw rangeError(
          "options.out",
          `a Float32Array of ${count(o.rows * o.cols, "value")} (the result [${shape.join(", ")}])`,
          `${o.into.length}`,
          "shape_mismatch",
        );
      }
      offsets.push(bytes);
      add(o.rows * o.cols * 4, o.blame ?? first);
    }
    const base = this.reserve(bytes, blame || first);
    this.argsAt = base;
    const views = [];
    try {
      inputs.forEach((x, i) => {
        if (!x) return views.push(NONE);
        const ptr = base + offsets[i];
        const data = x.data ?? x;
        if (data instanceof Float32Array) M.HEAPF32.set(data, ptr >>> 2);
        else if (data instanceof Uint32Array) M.HEAPU32.set(data, ptr >>> 2);
        else if (data instanceof Int32Array) M.HEAP32.set(data, ptr >>> 2);
        else M.HEAPU8.set(data, ptr); // a boolean mask
        views.push(x.data ? { ptr, rows: x.rows, cols: x.cols } : { ptr, count: data.length });
      });
      outputs.forEach((o, i) =>
        views.push({ ptr: base + offsets[inputs.length + i], rows: o.rows, cols: o.cols }),
      );
      this.check(fn(...views), names);
      // Read HEAPF32 only now: the call may have grown memory.
      return outputs.map((o, i) => {
        const start = (base + offsets[inputs.length + i]) >>> 2;
        const n = o.rows * o.cols;
        if (o.into) {
          o.into.set(M.HEAPF32.subarray(start, start + n));
          return matrix(o.into, o.rows, o.cols);
        }
        return matrix(M.HEAPF32.slice(start, start + n), o.rows, o.cols);
      });
    } finally {
      this.trim();
    }
  }

  /**
   * The lean path of a call whose inputs are checked matrices ({data:
   * Float32Array, rows, cols}) and whose options need no arrays
   * (leanOptionWords): one argument block of the inputs' views (a number
   * among them is one word, e.g. the saved flag of a backward call), the
   * outputs' views (`outputs`: [rows, cols, rows, cols, ...]) and the option
   * words; one copy into wasm memory per input, one Embind call fn(block),
   * one copy out per output. No closures, no per-input objects: a small
   * call's fixed cost. Returns the outputs as matrices, or null (nothing
   * done) when the call lays out more than it takes, for run() to size and
   * report. `blame` names the input an allocation failure is reported
   * against, as run() would. `into`: a Float32Array the first output is
   * written into (options.out), or undefined.
   */
  lean(fn, inputs, outputs, words, names, blame, into) {
    if (into && into.length !== outputs[0] * outputs[1]) return null; // run() reports it
    let floats = ARG_BYTES >> 2;
    for (let i = 0; i < inputs.length; ++i) {
      if (typeof inputs[i] !== "number") floats += align16(inputs[i].data.length * 4) >> 2;
    }
    for (let i = 0; i < outputs.length; i += 2) {
      const n = outputs[i] * outputs[i + 1];
      if (n > MAX_ELEMENTS) return null;
      floats += align16(n * 4) >> 2;
    }
    if (floats > LEAN_MAX_FLOATS) return null;
    const M = this.M;
    const base = this.reserve(floats * 4, blame);
    try {
      let at = base + ARG_BYTES;
      let w = base >>> 2;
      const heap = M.HEAPF32,
        u32 = M.HEAPU32;
      for (let i = 0; i < inputs.length; ++i) {
        const x = inputs[i];
        if (typeof x === "number") {
          u32[w++] = x;
          continue;
        }
        heap.set(x.data, at >>> 2);
        u32[w++] = x.data.length ? at : 0; // an absent input: address 0
        u32[w++] = x.rows;
        u32[w++] = x.cols;
        at += align16(x.data.length * 4);
      }
      const outAt = at;
      for (let i = 0; i < outputs.length; i += 2) {
        u32[w++] = at;
        u32[w++] = outputs[i];
        u32[w++] = outputs[i + 1];
        at += align16(outputs[i] * outputs[i + 1] * 4);
      }
      u32.set(words, w);
      this.check(fn(base), names);
      // Read HEAPF32 only now: the call may have grown memory.
      const results = [];
      at = outAt;
      for (let i = 0; i < outputs.length; i += 2) {
        const rows = outputs[i],
          cols = outputs[i + 1],
          start = at >>> 2,
          view = M.HEAPF32.subarray(start, start + rows * cols);
        if (i === 0 && into) into.set(view);
        results.push(matrix(i === 0 && into ? into : view.slice(), rows, cols));
        at += align16(rows * cols * 4);
      }
      return results;
    } finally {
      this.trim();
    }
  }

  /**
   * lean() for a forward call on checked matrices `inputs` whose options
   * need no arrays (leanOptionWords; options.out: the first output), else
   * null for run() to take the call.
   */
  leanCall(fn, inputs, outputs, options, blame = "Q") {
    const words = leanOptionWords(options);
    return words && this.lean(fn, inputs, outputs, words, CORE_NAMES, blame, options?.out);
  }

  /**
   * As run(), with the options' masks, key lengths and causal offsets as more
   * inputs: runs fn(inputViews, optionWords, outputViews).
   */
  runWithOptions(mats, options, outputs, fn, names, defaultCausal = false) {
    const extra = optionInputs(options);
    // A backward call's options.out names each gradient (gradientOutputs()).
    if (options?.out instanceof Float32Array && outputs.length) outputs[0].into = options.out;
    const end = mats.length + extra.length;
    return this.run(
      [...mats, ...extra],
      outputs,
      (...views) => {
        const words = optionWords(options, views.slice(mats.length, end), extra, defaultCausal);
        return fn(views.slice(0, mats.length), words, views.slice(end));
      },
      names,
    );
  }

  /**
   * Writes run()'s call's arguments into its block (see putWords) and returns
   * the block's address.
   */
  args(...parts) {
    putWords(this.M.HEAPU32, this.argsAt >>> 2, parts);
    return this.argsAt;
  }

  /**
   * Lays out a call of the model and text layers: its argument block, then a
   * copy of each typed array of `arrays`. Returns [the block's address, each
   * array's address]; the caller writes the block (cursor(at).put(...)).
   */
  layout(blame, arrays = []) {
    let bytes = ARG_BYTES;
    for (const a of arrays) bytes += align16(a.byteLength);
    const base = this.reserve(bytes, blame);
    const addresses = [base];
    let at = base + ARG_BYTES;
    for (const a of arrays) {
      this.M.HEAPU8.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
      addresses.push(at);
      at += align16(a.byteLength);
    }
    return addresses;
  }

  /** A Cursor over the words at `at` (an argument block). */
  cursor(at) {
    return new Cursor(this.M, at);
  }

  /** Gives the scratch block back if a call grew it past what it keeps. */
  trim() {
    if (this.scratchBytes > SCRATCH_KEEP_BYTES) this.release();
  }

  /**
   * Throws a non-zero status `code` as an AttnkitError: the core Status's
   * parameter (e.g. "key_lengths[2]") renamed to what the JS caller wrote
   * (`table`: a name table, see names()), and the Status's detail in JS words
   * (`model`: the model layer's too).
   */
  check(code, table = CORE_NAMES, { model = false } = {}) {
    if (code === 0) return;
    const coreName = this.M.lastErrorParameter();
    const index = coreName.match(/\[\d+\]$/)?.[0] ?? "";
    const base = coreName.slice(0, coreName.length - index.length);
    const jsName = (table[base] ?? base) + index;
    throw new AttnkitError(`${jsName}: ${jsDetail(this.M.lastErrorDetail(), { model })}`, {
      code: CODES[code] ?? "invalid_argument",
      parameter: jsName,
    });
  }

  /** A copy of a matrix the module holds ({ptr, rows, cols}) as a JS-owned Matrix. */
  copyOut(m) {
    return readMatrix(this.M, m.ptr, m.rows, m.cols);
  }
}
