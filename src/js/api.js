// attnkit: the idiomatic JS face of the Embind module. Copies inputs into wasm
// memory once (through one reused scratch block), calls the core, copies
// outputs into JS-owned Float32Arrays and turns a core error into an
// AttnkitError whose message names the JS parameter.
import { AttnkitError, AttnkitTypeError, describe, rangeError, typeError } from "./errors.js";
import { checkCount, isObject, toMask, toMatrix, toTensor, transposeHeads } from "./convert.js";

export { AttnkitError, AttnkitTypeError };

const CODES = ["ok", "invalid_argument", "shape_mismatch", "non_finite", "overflow", "capacity"];
const OPTION_KEYS = ["scale", "softcap", "causal", "keyLength", "keyLengths", "boolMask", "additiveMask"];
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
};
const NONE = { ptr: 0, rows: 0, cols: 0 };
const TRACE_NAMES = ["X", "Q", "K", "V", "rawScores", "scaledScores", "maskedScores", "weights", "output"];

/** Checks an options object and returns it with defaults (for validation only). */
function checkOptions(options, extraKeys = []) {
  if (options === undefined) return {};
  if (!isObject(options) || Array.isArray(options)) throw typeError("options", "an object", options);
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.includes(key) && !extraKeys.includes(key)) {
      throw new AttnkitTypeError(
        `options.${key}: expected one of ${[...OPTION_KEYS, ...extraKeys].join(", ")}, got an unknown option`,
        { parameter: `options.${key}` });
    }
  }
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
  return options;
}

function checkWeights(weights, names) {
  if (!isObject(weights)) throw typeError("weights", `an object {${names.join(", ")}}`, weights);
}

function checkConfig(config) {
  if (!isObject(config)) throw typeError("config", "an object {numHeads, numKvHeads?, dK?, dV?}", config);
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

export function wrap(M, simd, threads = 1) {
  // One block of wasm memory, reused by every call and grown when needed.
  let scratch = 0;
  let scratchBytes = 0;

  function reserve(bytes) {
    if (bytes <= scratchBytes) return scratch;
    const size = Math.max(bytes, 2 * scratchBytes, 1 << 16);
    if (scratch) M._free(scratch);
    scratch = M._malloc(size);
    if (!scratch) {
      scratchBytes = 0;
      throw rangeError("memory", `${size} bytes of wasm memory`, "an allocation failure", "overflow");
    }
    scratchBytes = size;
    return scratch;
  }

  /**
   * Lays out inputs ({data, rows, cols} with Float32Array or Uint8Array data, or
   * a Uint32Array) and outputs ({rows, cols}) in the scratch block, copies the
   * inputs in, runs fn(views...) and returns the outputs as Matrices.
   */
  function run(inputs, outputs, fn, names) {
    const offsets = [];
    let bytes = 0;
    const align = (n) => (n + 15) & ~15;
    for (const x of inputs) {
      offsets.push(bytes);
      if (x) bytes += align((x.data ?? x).byteLength);
    }
    for (const o of outputs) {
      offsets.push(bytes);
      bytes += align(o.rows * o.cols * 4);
    }
    const base = reserve(bytes);
    const views = [];
    inputs.forEach((x, i) => {
      if (!x) return views.push(NONE);
      const ptr = base + offsets[i];
      const data = x.data ?? x;
      M.HEAPU8.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), ptr);
      views.push(x.data ? { ptr, rows: x.rows, cols: x.cols } : { ptr, count: data.length });
    });
    outputs.forEach((o, i) => views.push({ ptr: base + offsets[inputs.length + i], rows: o.rows, cols: o.cols }));
    check(fn(...views), names);
    // Read HEAPF32 only now: the call may have grown memory.
    return outputs.map((o, i) => {
      const start = (base + offsets[inputs.length + i]) >> 2;
      return { data: M.HEAPF32.slice(start, start + o.rows * o.cols), rows: o.rows, cols: o.cols };
    });
  }

  function check(code, names = {}) {
    if (code === 0) return;
    const message = M.lastError();
    const colon = message.indexOf(":");
    const coreName = colon > 0 ? message.slice(0, colon) : "";
    const base = coreName.replace(/\[\d+\]$/, "");
    const suffix = coreName.slice(base.length);
    const jsName = (names[base] ?? CORE_NAMES[base] ?? base) + suffix;
    throw new AttnkitError(jsName + message.slice(colon), {
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
      if (keyLengths.length === 0) keyLengths = null;
    }
    if (o.keyLength !== undefined) checkCount("options.keyLength", o.keyLength, { allowZero: true });
    return [
      o.boolMask !== undefined ? toMask("options.boolMask", o.boolMask) : null,
      o.additiveMask !== undefined ? toMatrix("options.additiveMask", o.additiveMask) : null,
      keyLengths,
    ];
  }

  /** The Embind Options value from checked options and their input views. */
  function optionsValue(options, boolMask, additiveMask, keyLengths, defaultCausal = false) {
    const o = options ?? {};
    return {
      causal: o.causal ?? defaultCausal,
      hasScale: o.scale !== undefined,
      scale: o.scale ?? 0,
      softcap: o.softcap ?? 0,
      keyLength: o.keyLength ?? -1,
      keyLengths: keyLengths.ptr,
      keyLengthsCount: keyLengths.count ?? 0,
      boolMask,
      additiveMask,
    };
  }

  // Runs fn(matrices..., options, outputs...) where `mats` are inputs.
  function runWithOptions(mats, options, outputs, fn, names, defaultCausal = false) {
    const extra = optionInputs(options);
    return run([...mats, ...extra], outputs, (...views) => {
      const [bm, am, kl] = views.slice(mats.length, mats.length + 3);
      const opts = optionsValue(options, bm, am, kl, defaultCausal);
      return fn(views.slice(0, mats.length), opts, views.slice(mats.length + 3));
    }, names);
  }

  function assertLive(cache) {
    if (!cache.handle) {
      throw new AttnkitError("cache: expected a live KVCache, got one that was disposed", { code: "disposed", parameter: "cache" });
    }
  }

  const registry = typeof FinalizationRegistry === "function"
    ? new FinalizationRegistry((handle) => M.kvFree(handle)) : null;

  function weightMats(weights, withOutput) {
    checkWeights(weights, withOutput ? ["W_Q", "W_K", "W_V", "W_O?"] : ["W_Q", "W_K", "W_V"]);
    const mats = ["W_Q", "W_K", "W_V"].map((k) => toMatrix(`weights.${k}`, weights[k]));
    if (withOutput) mats.push(weights.W_O !== undefined ? toMatrix("weights.W_O", weights.W_O) : null);
    return mats;
  }

  // d_out of a multi-head call, for the output's shape (the core checks it).
  function headsOut(heads, dModel, W_O, V_cols) {
    if (W_O) return W_O.cols;
    const kvh = heads.numKvHeads || heads.numHeads;
    const dV = heads.dV || (V_cols ? Math.floor(V_cols / kvh) : heads.dK || Math.floor(dModel / heads.numHeads));
    return heads.numHeads * dV;
  }

  class KVCache {
    constructor(config) {
      if (!isObject(config)) throw typeError("config", "an object {batch?, numKvHeads, dK, dV, capacity}", config);
      const batch = config.batch === undefined ? 1 : checkCount("config.batch", config.batch);
      const numKvHeads = checkCount("config.numKvHeads", config.numKvHeads);
      const dK = checkCount("config.dK", config.dK);
      const dV = checkCount("config.dV", config.dV);
      const capacity = checkCount("config.capacity", config.capacity);
      const handle = M.kvCreate(batch, numKvHeads, dK, dV, capacity);
      if (!handle) check(M.lastErrorCode(), { capacity: "config.capacity", batch: "config.batch" });
      Object.assign(this, { batch, numKvHeads, dK, dV, capacity, handle });
      registry?.register(this, handle, this);
    }
    get size() {
      assertLive(this);
      return M.kvSize(this.handle);
    }
    append(K, V) {
      assertLive(this);
      const k = toTensor("K", K), v = toTensor("V", V);
      const kr = asBatchRows("K", k), vr = asBatchRows("V", v);
      const km = { data: k.data, rows: kr.batch * kr.seq, cols: kr.cols };
      const vm = { data: v.data, rows: vr.batch * vr.seq, cols: vr.cols };
      run([km, vm], [], (kv, vv) => M.kvAppend(this.handle, kv, vv));
    }
    _cached(item, kvHead, fn) {
      assertLive(this);
      checkCount("item", item, { allowZero: true });
      checkCount("kvHead", kvHead, { allowZero: true });
      if (item >= this.batch) throw rangeError("item", `an index below batch = ${this.batch}`, `${item}`);
      if (kvHead >= this.numKvHeads) throw rangeError("kvHead", `an index below numKvHeads = ${this.numKvHeads}`, `${kvHead}`);
      const m = fn(this.handle, item, kvHead);
      const start = m.ptr >> 2;
      return { data: M.HEAPF32.slice(start, start + m.rows * m.cols), rows: m.rows, cols: m.cols };
    }
    keys(item, kvHead) { return this._cached(item, kvHead, M.kvKeys); }
    values(item, kvHead) { return this._cached(item, kvHead, M.kvValues); }
    attend(Q, numHeads, options) {
      assertLive(this);
      const q = toTensor("Q", Q);
      checkCount("numHeads", numHeads);
      checkOptions(options);
      const r = asBatchRows("Q", q);
      const qm = { data: q.data, rows: r.batch * r.seq, cols: r.cols };
      const [out] = runWithOptions([qm], options, [{ rows: qm.rows, cols: numHeads * this.dV }],
        ([qv], o, [ov]) => M.kvAttend(this.handle, qv, numHeads, o, ov), { num_heads: "numHeads" }, true);
      return { data: out.data, shape: q.shape.length === 3 ? [r.batch, r.seq, out.cols] : [r.seq, out.cols] };
    }
    decode(X, weights, config, options) {
      assertLive(this);
      const x = toTensor("X", X);
      const mats = weightMats(weights, true);
      const heads = checkConfig(config);
      checkOptions(options);
      const r = asBatchRows("X", x);
      const xm = { data: x.data, rows: r.batch * r.seq, cols: r.cols };
      const dOut = headsOut(heads, r.cols, mats[3], 0);
      const [out] = runWithOptions([xm, ...mats], options, [{ rows: xm.rows, cols: dOut }],
        ([xv, wq, wk, wv, wo], o, [ov]) => M.kvDecode(this.handle, xv, wq, wk, wv, wo, heads, o, ov), {}, true);
      return { data: out.data, shape: x.shape.length === 3 ? [r.batch, r.seq, dOut] : [r.seq, dOut] };
    }
    reset() {
      assertLive(this);
      M.kvReset(this.handle);
    }
    dispose() {
      if (!this.handle) return;
      registry?.unregister(this);
      M.kvFree(this.handle);
      this.handle = 0;
    }
    [Symbol.dispose ?? Symbol.for("Symbol.dispose")]() {
      this.dispose();
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

  return {
    simd,
    threads,
    target: M.target(),

    attention(Q, K, V, options) {
      checkOptions(options);
      const q = toMatrix("Q", Q), k = toMatrix("K", K), v = toMatrix("V", V);
      return runWithOptions([q, k, v], options, [{ rows: q.rows, cols: v.cols }],
        ([qv, kv, vv], o, [ov]) => M.attention(qv, kv, vv, o, ov))[0];
    },

    selfAttention(X, weights, options) {
      checkOptions(options);
      const x = toMatrix("X", X);
      const w = weightMats(weights, false);
      return runWithOptions([x, ...w], options, [{ rows: x.rows, cols: w[2].cols }],
        ([xv, wq, wk, wv], o, [ov]) => M.selfAttention(xv, wq, wk, wv, o, ov))[0];
    },

    crossAttention(Xq, Xkv, weights, options) {
      checkOptions(options);
      const xq = toMatrix("Xq", Xq), xkv = toMatrix("Xkv", Xkv);
      const w = weightMats(weights, false);
      return runWithOptions([xq, xkv, ...w], options, [{ rows: xq.rows, cols: w[2].cols }],
        ([a, b, wq, wk, wv], o, [ov]) => M.crossAttention(a, b, wq, wk, wv, o, ov))[0];
    },

    parameterFreeAttention(X, options) {
      checkOptions(options);
      const x = toMatrix("X", X);
      return runWithOptions([x], options, [{ rows: x.rows, cols: x.cols }],
        ([xv], o, [ov]) => M.parameterFreeAttention(xv, o, ov))[0];
    },

    trace(X, weights, options) {
      checkOptions(options);
      const x = toMatrix("X", X);
      const w = weightMats(weights, false);
      runWithOptions([x, ...w], options, [], ([xv, wq, wk, wv], o) => M.trace(xv, wq, wk, wv, o));
      return traceResult(true);
    },

    traceQKV(Q, K, V, options) {
      checkOptions(options);
      const q = toMatrix("Q", Q), k = toMatrix("K", K), v = toMatrix("V", V);
      runWithOptions([q, k, v], options, [], ([qv, kv, vv], o) => M.traceQKV(qv, kv, vv, o));
      return traceResult(false);
    },

    matmul(A, B) {
      const a = toMatrix("A", A), b = toMatrix("B", B);
      return run([a, b], [{ rows: a.rows, cols: b.cols }], (av, bv, cv) => M.matmul(av, bv, cv))[0];
    },

    softmax(x) {
      const m = toMatrix("x", x);
      // In place on the copy in wasm memory: the output is the input's slot.
      const [out] = run([], [{ rows: m.rows, cols: m.cols }], (ov) => {
        M.HEAPF32.set(m.data, ov.ptr >> 2);
        return M.softmax(ov);
      });
      return out;
    },

    splitHeads(x, numHeads) {
      const m = toMatrix("x", x);
      checkCount("numHeads", numHeads);
      const d = Math.floor(m.cols / numHeads);
      const [out] = run([m], [{ rows: numHeads * m.rows, cols: Math.max(d, 1) }],
        (xv, ov) => M.splitHeads(xv, numHeads, ov), { num_heads: "numHeads" });
      return { data: out.data, shape: [numHeads, m.rows, d] };
    },

    mergeHeads(heads) {
      const t = toTensor("heads", heads);
      if (t.shape.length !== 3) {
        throw rangeError("heads.shape", "[numHeads, seq, headDim]", `[${t.shape.join(", ")}]`, "shape_mismatch");
      }
      const [h, T, d] = t.shape;
      return run([{ data: t.data, rows: h * T, cols: d }], [{ rows: T, cols: h * d }],
        (hv, ov) => M.mergeHeads(hv, h, ov))[0];
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
        ([xv, wq, wk, wv, wo], o, [ov]) => M.multiHeadAttention(xv, r.batch, wq, wk, wv, wo, heads, o, ov));
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
      const [out] = runWithOptions([qm, km, vm], options && { ...options, layout: undefined }, [{ rows: qm.rows, cols: dOut }],
        ([qv, kv, vv], o, [ov]) => M.multiHeadAttentionQKV(qv, kv, vv, batch, heads, o, ov));
      const dV = dOut / heads.numHeads;
      if (layout === "bhsd") {
        return { data: transposeHeads(out.data, batch, heads.numHeads, seqQ, dV, true), shape: [batch, heads.numHeads, seqQ, dV] };
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
  };
}
