// attnkit: the idiomatic JS face of the Embind module. Copies inputs into wasm
// memory once (through one reused scratch block), calls the core, copies
// outputs into JS-owned Float32Arrays and turns a core error into an
// AttnkitError whose message names the JS parameter.
import { AttnkitError, AttnkitTypeError, describe, rangeError, typeError } from "./errors.js";
import { checkCount, checkElements, checkKeys, count, isObject, toMask, toMatrix, toTensor, transposeHeads } from "./convert.js";

export { AttnkitError, AttnkitTypeError };

const CODES = ["ok", "invalid_argument", "shape_mismatch", "non_finite", "overflow", "capacity"];
const OPTION_KEYS = ["scale", "softcap", "causal", "keyLength", "keyLengths", "boolMask", "additiveMask", "out"];
const CONFIG_KEYS = ["numHeads", "numKvHeads", "dK", "dV"];
const CACHE_KEYS = ["batch", "numKvHeads", "dK", "dV", "capacity"];
// The scratch block is given back after a call that grew it past this, so that
// one large call does not keep its memory from later calls (KV caches).
const SCRATCH_KEEP_BYTES = 16 << 20;
// Core parameter names -> the JS names users wrote.
const CORE_NAMES = {
  scale: "options.scale",
  softcap: "options.softcap",
  key_length: "options.keyLength",
  key_lengths: "options.keyLengths",
  bool_mask: "options.boolMask",
  additive_mask: "options.additiveMask",
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
};
const NONE = { ptr: 0, rows: 0, cols: 0 };
// The argument block at the start of every call's scratch (32-bit words).
const ARG_BYTES = 256;
const FLOAT = new Float32Array(1);
const FLOAT_BITS = new Uint32Array(FLOAT.buffer);
/** The bits of x as a float32, for an argument word. */
function floatBits(x) {
  FLOAT[0] = x;
  return FLOAT_BITS[0];
}
const TRACE_NAMES = ["X", "Q", "K", "V", "rawScores", "scaledScores", "maskedScores", "weights", "output"];

/** Checks an options object and returns it with defaults (for validation only). */
function checkOptions(options, extraKeys = []) {
  if (options === undefined) return {};
  if (!isObject(options) || Array.isArray(options)) throw typeError("options", "an object", options);
  checkKeys("options", options, [...OPTION_KEYS, ...extraKeys], "option");
  for (const key of ["scale", "softcap"]) {
    const v = options[key];
    if (v === undefined) continue;
    if (typeof v !== "number") throw typeError(`options.${key}`, "a number", v);
    // Checked here, not only in the core, so the message shows the value given:
    // the core sees float32, where 1e40 is inf and 1e-50 is 0.
    const f = Math.fround(v);
    if (key === "scale" && !(Number.isFinite(f) && f > 0)) {
      throw rangeError("options.scale", "a finite number > 0 (as float32)", describe(v));
    }
    if (key === "softcap" && !(Number.isFinite(f) && f >= 0)) {
      throw rangeError("options.softcap", "0 (off) or a finite number > 0 (as float32)", describe(v));
    }
  }
  if (options.causal !== undefined && typeof options.causal !== "boolean") {
    throw typeError("options.causal", "a boolean", options.causal);
  }
  if (options.out !== undefined && !(options.out instanceof Float32Array)) {
    throw typeError("options.out", "a Float32Array", options.out);
  }
  return options;
}

function checkWeights(weights, names) {
  if (!isObject(weights) || Array.isArray(weights)) throw typeError("weights", `an object {${names.join(", ")}}`, weights);
  checkKeys("weights", weights, names.map((n) => n.replace("?", "")));
}

function checkConfig(config) {
  if (!isObject(config) || Array.isArray(config)) throw typeError("config", "an object {numHeads, numKvHeads?, dK?, dV?}", config);
  checkKeys("config", config, CONFIG_KEYS);
  const heads = { numHeads: checkCount("config.numHeads", config.numHeads), numKvHeads: 0, dK: 0, dV: 0 };
  for (const key of ["numKvHeads", "dK", "dV"]) {
    if (config[key] !== undefined) heads[key] = checkCount(`config.${key}`, config[key]);
  }
  return heads;
}

/** Rows, cols of a rank-2 or rank-3 tensor as [batch * seq, cols] with its batch. */
function asBatchRows(name, t) {
  if (t.shape.length === 2) return { batch: 1, seq: t.shape[0], cols: t.shape[1] };
  if (t.shape.length === 3) return { batch: t.shape[0], seq: t.shape[1], cols: t.shape[2] };
  throw rangeError(`${name}.shape`, "[batch, seq, features] or [seq, features]", `[${t.shape.join(", ")}]`, "shape_mismatch");
}

/**
 * A cache input as rows [batch * T_new, cols]: a rank-3 tensor's batch must be
 * the cache's (rank 2 holds the items' rows one after the other).
 */
function cacheRows(name, t, batch) {
  const r = asBatchRows(name, t);
  if (t.shape.length === 3 && r.batch !== batch) {
    throw rangeError(`${name}.shape[0]`, `the cache's batch = ${batch}`, `${r.batch} (shape [${t.shape.join(", ")}])`, "shape_mismatch");
  }
  return { data: t.data, rows: r.batch * r.seq, cols: r.cols, seq: t.shape.length === 3 ? r.seq : 0 };
}

/**
 * The JS API over an Embind module M. `simd`, `threads`: what was loaded;
 * `onDispose()` runs when the user disposes the module (the loader forgets it).
 */
export function wrap(M, { simd, threads = 1, version = "", onDispose = () => {} }) {
  // One block of wasm memory, reused by every call and grown when needed.
  let scratch = 0;
  let scratchBytes = 0;
  let alive = true;

  function release() {
    if (scratch) M._free(scratch);
    scratch = 0;
    scratchBytes = 0;
  }

  // `blame` names the input a failure to allocate is reported against.
  function reserve(bytes, blame) {
    if (bytes <= scratchBytes) return scratch;
    const size = Math.max(bytes, Math.min(2 * scratchBytes, SCRATCH_KEEP_BYTES), 1 << 16);
    release();
    scratch = M._malloc(size);
    if (!scratch) {
      throw rangeError(blame, `inputs and result that fit in wasm memory (at most 2 GiB in all)`,
        `${bytes} bytes`, "overflow");
    }
    scratchBytes = size;
    return scratch;
  }

  /**
   * Lays out inputs ({data, rows, cols} with Float32Array or Uint8Array data, or
   * a Uint32Array) and outputs ({rows, cols, into?}) in the scratch block,
   * copies the inputs in, runs fn(views...) and returns the outputs as
   * Matrices (written into `into` when given). Sizes are checked before any
   * memory is taken.
   */
  function run(inputs, outputs, fn, names) {
    const offsets = [];
    let bytes = ARG_BYTES;  // the argument block first (see args())
    const align = (n) => (n + 15) & ~15;
    for (const x of inputs) {
      offsets.push(bytes);
      if (x) bytes += align((x.data ?? x).byteLength);
    }
    for (const o of outputs) {
      checkElements(o.blame ?? "output", o.rows, o.cols, o.what ?? " in the result");
      if (o.into && o.into.length !== o.rows * o.cols) {
        throw rangeError("options.out", `a Float32Array of ${count(o.rows * o.cols, "value")} (the result [${o.rows}, ${o.cols}])`,
          `${o.into.length}`, "shape_mismatch");
      }
      offsets.push(bytes);
      bytes += align(o.rows * o.cols * 4);
    }
    const base = reserve(bytes, inputs.find((x) => x?.name)?.name ?? "input");
    argsAt = base;
    const views = [];
    inputs.forEach((x, i) => {
      if (!x) return views.push(NONE);
      const ptr = base + offsets[i];
      const data = x.data ?? x;
      if (data instanceof Float32Array) M.HEAPF32.set(data, ptr >> 2);
      else if (data instanceof Uint32Array) M.HEAPU32.set(data, ptr >> 2);
      else M.HEAPU8.set(data, ptr);  // a boolean mask
      views.push(x.data ? { ptr, rows: x.rows, cols: x.cols } : { ptr, count: data.length });
    });
    outputs.forEach((o, i) => views.push({ ptr: base + offsets[inputs.length + i], rows: o.rows, cols: o.cols }));
    try {
      check(fn(...views), names);
      // Read HEAPF32 only now: the call may have grown memory.
      return outputs.map((o, i) => {
        const start = (base + offsets[inputs.length + i]) >> 2;
        const n = o.rows * o.cols;
        if (o.into) {
          o.into.set(M.HEAPF32.subarray(start, start + n));
          return { data: o.into, rows: o.rows, cols: o.cols };
        }
        return { data: M.HEAPF32.slice(start, start + n), rows: o.rows, cols: o.cols };
      });
    } finally {
      if (scratchBytes > SCRATCH_KEEP_BYTES) release();
    }
  }

  // A core error as an AttnkitError: the core's parameter (e.g. "key_lengths[2]")
  // renamed to what the JS caller wrote, and the core's detail.
  function check(code, names = {}) {
    if (code === 0) return;
    const coreName = M.lastErrorParameter();
    const index = coreName.match(/\[\d+\]$/)?.[0] ?? "";
    const base = coreName.slice(0, coreName.length - index.length);
    const jsName = (names[base] ?? CORE_NAMES[base] ?? base) + index;
    throw new AttnkitError(`${jsName}: ${M.lastErrorDetail()}`, {
      code: CODES[code] ?? "invalid_argument",
      parameter: jsName,
    });
  }

  /** Masks and key lengths of the options, as inputs for run(). */
  function optionInputs(options) {
    const o = options ?? {};
    let keyLengths = null;
    if (o.keyLengths !== undefined) {
      if (!Array.isArray(o.keyLengths) && !ArrayBuffer.isView(o.keyLengths)) {
        throw typeError("options.keyLengths", "an array of non-negative integers", o.keyLengths);
      }
      keyLengths = Uint32Array.from(o.keyLengths, (v, i) => checkCount(`options.keyLengths[${i}]`, v, { allowZero: true }));
      if (keyLengths.length === 0) {
        throw rangeError("options.keyLengths", "one length per batch item (omit it for no padding)", "an empty array");
      }
    }
    if (o.keyLength !== undefined) checkCount("options.keyLength", o.keyLength, { allowZero: true });
    return [
      o.boolMask !== undefined ? toMask("options.boolMask", o.boolMask) : null,
      o.additiveMask !== undefined ? toMatrix("options.additiveMask", o.additiveMask) : null,
      keyLengths,
    ];
  }

  /**
   * The options' words of an argument block (see Args::Options in
   * bindings.cc) from checked options and their input views.
   */
  function optionWords(options, boolMask, additiveMask, keyLengths, defaultCausal = false) {
    const o = options ?? {};
    return [
      ((o.causal ?? defaultCausal) ? 1 : 0) | (o.scale !== undefined ? 2 : 0),
      floatBits(o.scale ?? 0), floatBits(o.softcap ?? 0), o.keyLength ?? -1,
      keyLengths.ptr, keyLengths.count ?? 0,
      boolMask.ptr, boolMask.rows, boolMask.cols,
      additiveMask.ptr, additiveMask.rows, additiveMask.cols,
    ];
  }

  // Where run() put this call's argument block.
  let argsAt = 0;
  /**
   * Writes a call's arguments into its block and returns the block's address:
   * each part a view ({ptr, rows, cols}: 3 words), a number (1 word) or an
   * array of words (options, heads), in the order the binding reads them.
   */
  function args(...parts) {
    const u32 = M.HEAPU32;
    let i = argsAt >> 2;
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
    return argsAt;
  }

  // Runs fn(matrices..., options, outputs...) where `mats` are inputs.
  function runWithOptions(mats, options, outputs, fn, names, defaultCausal = false) {
    const extra = optionInputs(options);
    if (options?.out !== undefined && outputs.length) outputs[0].into = options.out;
    return run([...mats, ...extra], outputs, (...views) => {
      const [bm, am, kl] = views.slice(mats.length, mats.length + 3);
      const opts = optionWords(options, bm, am, kl, defaultCausal);
      return fn(views.slice(0, mats.length), opts, views.slice(mats.length + 3));
    }, names);
  }

  const registry = typeof FinalizationRegistry === "function"
    ? new FinalizationRegistry((handle) => { if (alive) M.kvFree(handle); }) : null;

  function weightMats(weights, withOutput) {
    checkWeights(weights, withOutput ? ["W_Q", "W_K", "W_V", "W_O?"] : ["W_Q", "W_K", "W_V"]);
    const mats = ["W_Q", "W_K", "W_V"].map((k) => toMatrix(`weights.${k}`, weights[k]));
    if (withOutput) mats.push(weights.W_O !== undefined ? toMatrix("weights.W_O", weights.W_O) : null);
    return mats;
  }

  const headWords = (h) => [h.numHeads, h.numKvHeads, h.dK, h.dV];

  // d_out of a multi-head call, for the output's shape (the core checks it).
  function headsOut(heads, dModel, W_O, V_cols) {
    if (W_O) return W_O.cols;
    const kvh = heads.numKvHeads || heads.numHeads;
    const dV = heads.dV || (V_cols ? Math.floor(V_cols / kvh) : heads.dK || Math.floor(dModel / heads.numHeads));
    return heads.numHeads * dV;
  }

  // A cache result [batch * T_new, cols] in the caller's rank.
  const cacheShape = (r, cols, batch) => (r.seq ? [batch, r.seq, cols] : [r.rows, cols]);

  class KVCache {
    // The core's cache in wasm memory; 0 once disposed. Private: a copy of the
    // object cannot free it twice.
    #handle = 0;

    constructor(config, handle = 0) {
      if (handle) {
        Object.assign(this, config);
      } else {
        if (!isObject(config) || Array.isArray(config)) {
          throw typeError("config", "an object {batch?, numKvHeads, dK, dV, capacity}", config);
        }
        checkKeys("config", config, CACHE_KEYS);
        const batch = config.batch === undefined ? 1 : checkCount("config.batch", config.batch);
        const numKvHeads = checkCount("config.numKvHeads", config.numKvHeads);
        const dK = checkCount("config.dK", config.dK);
        const dV = checkCount("config.dV", config.dV);
        const capacity = checkCount("config.capacity", config.capacity);
        handle = M.kvCreate(batch, numKvHeads, dK, dV, capacity);
        if (!handle) check(M.lastErrorCode(), { capacity: "config.capacity", batch: "config.batch" });
        Object.assign(this, { batch, numKvHeads, dK, dV, capacity });
      }
      this.#handle = handle;
      registry?.register(this, handle, this);
    }
    #live() {
      assertAlive();
      if (!this.#handle) {
        throw new AttnkitError("cache: expected a live KVCache, got one that was disposed", { code: "disposed", parameter: "cache" });
      }
      return this.#handle;
    }
    get size() {
      return M.kvSize(this.#live());
    }
    append(K, V) {
      const handle = this.#live();
      const k = cacheRows("K", toTensor("K", K), this.batch), v = cacheRows("V", toTensor("V", V), this.batch);
      run([k, v], [], (kv, vv) => M.kvAppend(handle, args(kv, vv)));
    }
    #cached(item, kvHead, fn) {
      const handle = this.#live();
      checkCount("item", item, { allowZero: true });
      checkCount("kvHead", kvHead, { allowZero: true });
      if (item >= this.batch) throw rangeError("item", `an index below batch = ${this.batch}`, `${item}`);
      if (kvHead >= this.numKvHeads) throw rangeError("kvHead", `an index below numKvHeads = ${this.numKvHeads}`, `${kvHead}`);
      const m = fn(handle, item, kvHead);
      const start = m.ptr >> 2;
      return { data: M.HEAPF32.slice(start, start + m.rows * m.cols), rows: m.rows, cols: m.cols };
    }
    keys(item, kvHead) { return this.#cached(item, kvHead, M.kvKeys); }
    values(item, kvHead) { return this.#cached(item, kvHead, M.kvValues); }
    attend(Q, numHeads, options) {
      const handle = this.#live();
      checkOptions(options);
      const q = cacheRows("Q", toTensor("Q", Q), this.batch);
      checkCount("numHeads", numHeads);
      const [out] = runWithOptions([q], options, [{ rows: q.rows, cols: numHeads * this.dV }],
        ([qv], o, [ov]) => M.kvAttend(handle, args(qv, numHeads, ov, o)), { num_heads: "numHeads" }, true);
      return { data: out.data, shape: cacheShape(q, out.cols, this.batch) };
    }
    decode(X, weights, config, options) {
      const handle = this.#live();
      checkOptions(options);
      const x = cacheRows("X", toTensor("X", X), this.batch);
      const mats = weightMats(weights, true);
      const heads = checkConfig(config);
      const dOut = headsOut(heads, x.cols, mats[3], 0);
      const [out] = runWithOptions([x, ...mats], options, [{ rows: x.rows, cols: dOut }],
        ([xv, wq, wk, wv, wo], o, [ov]) => M.kvDecode(handle, args(xv, wq, wk, wv, wo, headWords(heads), ov, o)), {}, true);
      return { data: out.data, shape: cacheShape(x, dOut, this.batch) };
    }
    truncate(size) {
      const handle = this.#live();
      checkCount("size", size, { allowZero: true });
      check(M.kvTruncate(handle, size));
    }
    fork() {
      const copy = M.kvClone(this.#live());
      if (!copy) check(M.lastErrorCode(), { capacity: "cache.capacity" });
      const { batch, numKvHeads, dK, dV, capacity } = this;
      return new KVCache({ batch, numKvHeads, dK, dV, capacity }, copy);
    }
    reset() {
      M.kvReset(this.#live());
    }
    dispose() {
      if (!this.#handle) return;
      registry?.unregister(this);
      if (alive) M.kvFree(this.#handle);
      this.#handle = 0;
    }
    [Symbol.dispose ?? Symbol.for("Symbol.dispose")]() {
      this.dispose();
    }
  }

  function assertAlive() {
    if (!alive) {
      throw new AttnkitError("attnkit: expected a live module, got one that was disposed (call createAttnkit() again)",
        { code: "disposed", parameter: "attnkit" });
    }
  }

  function traceResult(hasX) {
    const result = {};
    TRACE_NAMES.forEach((name, i) => {
      if (i === 0 && !hasX) return;
      const m = M.traceMatrix(i);
      const start = m.ptr >> 2;
      result[name] = { data: M.HEAPF32.slice(start, start + m.rows * m.cols), rows: m.rows, cols: m.cols };
    });
    result.scale = M.traceScale();
    M.traceClear();
    return result;
  }

  const api = {
    simd,
    threads,
    version,
    target: M.target(),

    attention(Q, K, V, options) {
      checkOptions(options);
      const q = toMatrix("Q", Q), k = toMatrix("K", K), v = toMatrix("V", V);
      return runWithOptions([q, k, v], options, [{ rows: q.rows, cols: v.cols }],
        ([qv, kv, vv], o, [ov]) => M.attention(args(qv, kv, vv, ov, o)))[0];
    },

    selfAttention(X, weights, options) {
      checkOptions(options);
      const x = toMatrix("X", X);
      const w = weightMats(weights, false);
      return runWithOptions([x, ...w], options, [{ rows: x.rows, cols: w[2].cols }],
        ([xv, wq, wk, wv], o, [ov]) => M.selfAttention(args(xv, wq, wk, wv, ov, o)))[0];
    },

    crossAttention(Xq, Xkv, weights, options) {
      checkOptions(options);
      const xq = toMatrix("Xq", Xq), xkv = toMatrix("Xkv", Xkv);
      const w = weightMats(weights, false);
      return runWithOptions([xq, xkv, ...w], options, [{ rows: xq.rows, cols: w[2].cols }],
        ([a, b, wq, wk, wv], o, [ov]) => M.crossAttention(args(a, b, wq, wk, wv, ov, o)))[0];
    },

    parameterFreeAttention(X, options) {
      checkOptions(options);
      const x = toMatrix("X", X);
      return runWithOptions([x], options, [{ rows: x.rows, cols: x.cols }],
        ([xv], o, [ov]) => M.parameterFreeAttention(args(xv, ov, o)))[0];
    },

    trace(X, weights, options) {
      checkOptions(options);
      const x = toMatrix("X", X);
      const w = weightMats(weights, false);
      runWithOptions([x, ...w], options, [], ([xv, wq, wk, wv], o) => M.trace(args(xv, wq, wk, wv, o)));
      return traceResult(true);
    },

    traceQKV(Q, K, V, options) {
      checkOptions(options);
      const q = toMatrix("Q", Q), k = toMatrix("K", K), v = toMatrix("V", V);
      runWithOptions([q, k, v], options, [], ([qv, kv, vv], o) => M.traceQKV(args(qv, kv, vv, o)));
      return traceResult(false);
    },

    matmul(A, B) {
      const a = toMatrix("A", A), b = toMatrix("B", B);
      return run([a, b], [{ rows: a.rows, cols: b.cols, blame: "B", what: " in the result A B" }],
        (av, bv, cv) => M.matmul(args(av, bv, cv)))[0];
    },

    softmax(x) {
      const m = toMatrix("x", x);
      // In place on the copy in wasm memory: the output is the input's slot.
      const [out] = run([], [{ rows: m.rows, cols: m.cols }], (ov) => {
        M.HEAPF32.set(m.data, ov.ptr >> 2);
        return M.softmax(args(ov));
      });
      return out;
    },

    splitHeads(x, numHeads) {
      const m = toMatrix("x", x);
      checkCount("numHeads", numHeads);
      const d = Math.floor(m.cols / numHeads);
      const [out] = run([m], [{ rows: numHeads * m.rows, cols: Math.max(d, 1) }],
        (xv, ov) => M.splitHeads(args(xv, numHeads, ov)), { num_heads: "numHeads" });
      return { data: out.data, shape: [numHeads, m.rows, d] };
    },

    mergeHeads(heads) {
      const t = toTensor("heads", heads);
      if (t.shape.length !== 3) {
        throw rangeError("heads.shape", "[numHeads, seq, headDim]", `[${t.shape.join(", ")}]`, "shape_mismatch");
      }
      const [h, T, d] = t.shape;
      return run([{ data: t.data, rows: h * T, cols: d }], [{ rows: T, cols: h * d }],
        (hv, ov) => M.mergeHeads(args(hv, h, ov)))[0];
    },

    multiHeadAttention(X, weights, config, options) {
      checkOptions(options);
      const x = toTensor("X", X);
      const mats = weightMats(weights, true);
      const heads = checkConfig(config);
      const r = asBatchRows("X", x);
      const xm = { data: x.data, rows: r.batch * r.seq, cols: r.cols };
      const dOut = headsOut(heads, r.cols, mats[3], 0);
      const [out] = runWithOptions([xm, ...mats], options, [{ rows: xm.rows, cols: dOut }],
        ([xv, wq, wk, wv, wo], o, [ov]) => M.multiHeadAttention(args(xv, r.batch, wq, wk, wv, wo, headWords(heads), ov, o)));
      return { data: out.data, shape: x.shape.length === 3 ? [r.batch, r.seq, dOut] : [r.seq, dOut] };
    },

    multiHeadAttentionQKV(Q, K, V, config, options) {
      checkOptions(options, ["layout"]);
      const layout = options?.layout ?? "bshd";
      if (layout !== "bshd" && layout !== "bhsd") throw rangeError("options.layout", '"bshd" or "bhsd"', describe(layout));
      const heads = checkConfig(config);
      const q = toTensor("Q", Q), k = toTensor("K", K), v = toTensor("V", V);
      let qm, km, vm, batch, seqQ;
      if (layout === "bhsd") {
        for (const [name, t] of [["Q", q], ["K", k], ["V", v]]) {
          if (t.shape.length !== 4) {
            throw rangeError(`${name}.shape`, "[batch, heads, seq, headDim] (layout bhsd)", `[${t.shape.join(", ")}]`, "shape_mismatch");
          }
        }
        const [B, H, Tq, dK] = q.shape;
        const [, KH, Tk, dK2] = k.shape;
        const [, VH, Tv, dV] = v.shape;
        if (H !== heads.numHeads) throw rangeError("Q.shape[1]", `config.numHeads = ${heads.numHeads}`, `${H}`, "shape_mismatch");
        if (heads.numKvHeads === 0) heads.numKvHeads = KH;
        for (const [name, t] of [["K", k], ["V", v]]) {
          if (t.shape[0] !== B) throw rangeError(`${name}.shape[0]`, `batch = ${B} (as Q)`, `${t.shape[0]}`, "shape_mismatch");
        }
        if (VH !== KH || Tv !== Tk) throw rangeError("V.shape", `[${B}, ${KH}, ${Tk}, dV] (heads and seq as K)`, `[${v.shape.join(", ")}]`, "shape_mismatch");
        qm = { data: transposeHeads(q.data, B, H, Tq, dK), rows: B * Tq, cols: H * dK };
        km = { data: transposeHeads(k.data, B, KH, Tk, dK2), rows: B * Tk, cols: KH * dK2 };
        vm = { data: transposeHeads(v.data, B, VH, Tv, dV), rows: B * Tv, cols: VH * dV };
        batch = B;
        seqQ = Tq;
      } else {
        const rq = asBatchRows("Q", q), rk = asBatchRows("K", k), rv = asBatchRows("V", v);
        if (rk.batch !== rq.batch) throw rangeError("K.shape[0]", `batch = ${rq.batch} (as Q)`, `${rk.batch}`, "shape_mismatch");
        if (rv.batch !== rq.batch) throw rangeError("V.shape[0]", `batch = ${rq.batch} (as Q)`, `${rv.batch}`, "shape_mismatch");
        qm = { data: q.data, rows: rq.batch * rq.seq, cols: rq.cols };
        km = { data: k.data, rows: rk.batch * rk.seq, cols: rk.cols };
        vm = { data: v.data, rows: rv.batch * rv.seq, cols: rv.cols };
        batch = rq.batch;
        seqQ = rq.seq;
      }
      const dOut = headsOut(heads, 0, null, vm.cols);
      // bhsd results are transposed after the call, then written into options.out.
      const into = layout === "bhsd" ? options?.out : undefined;
      if (into && into.length !== qm.rows * dOut) {
        throw rangeError("options.out", `a Float32Array of ${count(qm.rows * dOut, "value")} (the result)`, `${into.length}`, "shape_mismatch");
      }
      const [out] = runWithOptions([qm, km, vm], options && { ...options, layout: undefined, out: into ? undefined : options.out },
        [{ rows: qm.rows, cols: dOut }], ([qv, kv, vv], o, [ov]) => M.multiHeadAttentionQKV(args(qv, kv, vv, batch, headWords(heads), ov, o)));
      const dV = dOut / heads.numHeads;
      if (layout === "bhsd") {
        const data = transposeHeads(out.data, batch, heads.numHeads, seqQ, dV, true);
        if (into) into.set(data);
        return { data: into ?? data, shape: [batch, heads.numHeads, seqQ, dV] };
      }
      return { data: out.data, shape: q.shape.length === 3 ? [batch, seqQ, dOut] : [seqQ, dOut] };
    },

    createKVCache(config) {
      return new KVCache(config);
    },

    memoryBytes() {
      return M.HEAPU8.length;
    },

    heapBytesInUse() {
      return M.heapBytesInUse();
    },

    dispose() {
      if (!alive) return;
      release();
      M.setThreads(1);
      alive = false;
      onDispose();
    },
  };
  // Every call but dispose() first checks that the module is alive.
  for (const [key, value] of Object.entries(api)) {
    if (typeof value === "function" && key !== "dispose") {
      api[key] = function (...args) {
        assertAlive();
        return value.apply(this, args);
      };
    }
  }
  // One object is shared by every importer of the module: none may change it.
  return Object.freeze(api);
}
