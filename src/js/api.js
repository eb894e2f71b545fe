// attnkit: the API surface over an Embind module. Each method checks its
// arguments (arguments.js, convert.js), moves the call across the wasm
// boundary (marshal.js) and shapes the result; the KV cache is kv-cache.js.
import { AttnkitError, AttnkitTypeError, rangeError } from "./errors.js";
import { checkCount, toMatrix, toTensor } from "./convert.js";
import {
  QKV_KEYS,
  asBatchRows,
  checkConfig,
  checkOptions,
  layerInputs,
  qkvExtras,
  qkvInputs,
  weightMats,
} from "./arguments.js";
import { Marshal, NONE, NUM_HEADS_NAMES, headWords } from "./marshal.js";
import { defineKVCache } from "./kv-cache.js";
import { definePackedWeights, isPackedWeights } from "./packed-weights.js";
import { gradientMethods } from "./gradients.js";
import { MODEL_CALLS } from "./calls.js";

export { AttnkitError, AttnkitTypeError };

/**
 * The JS API over an Embind module M. `simd`, `threads`, `model`: what was
 * loaded; `modelLayer(mem, module)`: a model build's model layer functions
 * (model-layer.js, loaded with it), undefined for the other builds;
 * `onDispose()` runs when the user disposes the module (the loader forgets it).
 */
export function wrap(
  M,
  { simd, threads = 1, model = false, version = "", modelLayer, extend, onDispose = () => {} },
) {
  const mem = new Marshal(M);
  let alive = true;
  const module = {
    alive: () => alive,
    assertAlive() {
      if (!alive) {
        throw new AttnkitError(
          "attnkit: expected a live module, got one that was disposed (call createAttnkit() again)",
          { code: "disposed", parameter: "attnkit" },
        );
      }
    },
  };
  const KVCache = defineKVCache(mem, module);
  const packed = definePackedWeights(mem, module);
  const api = {
    simd,
    threads,
    model,
    version,
    target: M.target(),
    ...singleHeadMethods(mem),
    ...traceMethods(mem),
    ...kernelMethods(mem),
    ...gradientMethods(mem),
    multiHeadAttention: (X, weights, config, options) =>
      isPackedWeights(weights)
        ? multiHeadAttentionPacked(mem, packed.handleOf, X, weights, config, options)
        : multiHeadAttention(mem, X, weights, config, options),
    packWeights: (weights, config) => new packed.PackedWeights(weights, config),
    multiHeadAttentionQKV: (Q, K, V, config, options) =>
      multiHeadAttentionQKV(mem, Q, K, V, config, options),
    createKVCache: (config) => new KVCache(config),
    ...(modelLayer ? modelLayer(mem, module) : withoutModel()),
    memoryBytes: () => M.HEAPU8.length,
    heapBytesInUse: () => M.heapBytesInUse(),
    dispose() {
      if (!alive) return;
      mem.release();
      M.setThreads(1);
      alive = false;
      onDispose();
    },
  };
  // The entry point's calls over a model module (openCheckpoint ...), kept
  // out of the lean entry points' bundles.
  if (model && extend) Object.assign(api, extend(api));
  // Every call but dispose() first checks that the module is alive.
  for (const [key, value] of Object.entries(api)) {
    if (typeof value === "function" && key !== "dispose") {
      api[key] = function (...args) {
        module.assertAlive();
        return value.apply(this, args);
      };
    }
  }
  // One object is shared by every importer of the module: none may change it.
  return Object.freeze(api);
}

/** The model layer's functions of a module loaded without it: each throws, saying how to load one with it. */
function withoutModel() {
  return Object.fromEntries(
    MODEL_CALLS.map((name) => [
      name,
      () => {
        throw new AttnkitError(
          `${name}: expected a module loaded with createAttnkit({ model: true }) (the model ` +
            "layer is in its own build), got one loaded without the model",
          { code: "invalid_argument", parameter: name },
        );
      },
    ]),
  );
}

/** attention, selfAttention, crossAttention and parameterFreeAttention. */
function singleHeadMethods(mem) {
  const M = mem.M;
  return {
    attention(Q, K, V, options) {
      checkOptions(options);
      const q = toMatrix("Q", Q),
        k = toMatrix("K", K),
        v = toMatrix("V", V);
      const lean = mem.leanCall(M.attention, [q, k, v], [q.rows, v.cols], options);
      if (lean) return lean[0];
      return mem.runWithOptions(
        [q, k, v],
        options,
        [{ rows: q.rows, cols: v.cols }],
        ([qv, kv, vv], o, [ov]) => M.attention(mem.args(qv, kv, vv, ov, o)),
      )[0];
    },
    selfAttention(X, weights, options) {
      checkOptions(options);
      const x = toMatrix("X", X);
      const w = weightMats(weights, false);
      return mem.runWithOptions(
        [x, ...w],
        options,
        [{ rows: x.rows, cols: w[2].cols }],
        ([xv, wq, wk, wv], o, [ov]) => M.selfAttention(mem.args(xv, wq, wk, wv, ov, o)),
      )[0];
    },
    crossAttention(Xq, Xkv, weights, options) {
      checkOptions(options);
      const xq = toMatrix("Xq", Xq),
        xkv = toMatrix("Xkv", Xkv);
      const w = weightMats(weights, false);
      return mem.runWithOptions(
        [xq, xkv, ...w],
        options,
        [{ rows: xq.rows, cols: w[2].cols }],
        ([a, b, wq, wk, wv], o, [ov]) => M.crossAttention(mem.args(a, b, wq, wk, wv, ov, o)),
      )[0];
    },
    parameterFreeAttention(X, options) {
      checkOptions(options);
      const x = toMatrix("X", X);
      return mem.runWithOptions([x], options, [{ rows: x.rows, cols: x.cols }], ([xv], o, [ov]) =>
        M.parameterFreeAttention(mem.args(xv, ov, o)),
      )[0];
    },
  };
}

/** trace, traceQKV, traceBackward and traceBackwardQKV: every step's matrices. */
function traceMethods(mem) {
  const M = mem.M;
  // The trace's matrices in the order and under the names the bindings give.
  const traceNames = M.traceMatrixNames().split(",");
  function traceResult(hasX) {
    const result = {};
    traceNames.forEach((name, i) => {
      if (name === "X" && !hasX) return;
      result[name] = mem.copyOut(M.traceMatrix(i));
    });
    result.scale = M.traceScale();
    M.traceClear();
    return result;
  }
  // The backward trace's own matrices, in the bindings' order and names; the
  // projections' gradients (dX, dW_*) only for traceBackward.
  const backwardNames = M.backwardTraceMatrixNames().split(",");
  const PROJECTIONS = ["dX", "dW_Q", "dW_K", "dW_V"];
  function backwardTraceResult(run, hasX) {
    try {
      run();
      const result = { forward: traceResult(hasX) };
      backwardNames.forEach((name, i) => {
        if (!hasX && PROJECTIONS.includes(name)) return;
        result[name] = mem.copyOut(M.backwardTraceMatrix(i));
      });
      return result;
    } finally {
      // Also after an error: the core may have filled part of the trace.
      M.backwardTraceClear();
    }
  }
  return {
    trace(X, weights, options) {
      checkOptions(options);
      const x = toMatrix("X", X);
      const w = weightMats(weights, false);
      mem.runWithOptions([x, ...w], options, [], ([xv, wq, wk, wv], o) =>
        M.trace(mem.args(xv, wq, wk, wv, o)),
      );
      return traceResult(true);
    },
    traceQKV(Q, K, V, options) {
      checkOptions(options);
      const q = toMatrix("Q", Q),
        k = toMatrix("K", K),
        v = toMatrix("V", V);
      mem.runWithOptions([q, k, v], options, [], ([qv, kv, vv], o) =>
        M.traceQKV(mem.args(qv, kv, vv, o)),
      );
      return traceResult(false);
    },
    traceBackward(X, weights, dO, options) {
      checkOptions(options);
      const x = toMatrix("X", X);
      const w = weightMats(weights, false);
      const d = toMatrix("dO", dO);
      return backwardTraceResult(
        () =>
          mem.runWithOptions([x, ...w, d], options, [], ([xv, wq, wk, wv, dv], o) =>
            M.traceBackward(mem.args(xv, wq, wk, wv, dv, o)),
          ),
        true,
      );
    },
    traceBackwardQKV(Q, K, V, dO, options) {
      checkOptions(options);
      const q = toMatrix("Q", Q),
        k = toMatrix("K", K),
        v = toMatrix("V", V),
        d = toMatrix("dO", dO);
      return backwardTraceResult(
        () =>
          mem.runWithOptions([q, k, v, d], options, [], ([qv, kv, vv, dv], o) =>
            M.traceBackwardQKV(mem.args(qv, kv, vv, dv, o)),
          ),
        false,
      );
    },
  };
}

/** matmul, softmax, splitHeads and mergeHeads. */
function kernelMethods(mem) {
  const M = mem.M;
  return {
    matmul(A, B) {
      const a = toMatrix("A", A),
        b = toMatrix("B", B);
      return mem.run(
        [a, b],
        [{ rows: a.rows, cols: b.cols, blame: "B", what: " in the result A B" }],
        (av, bv, cv) => M.matmul(mem.args(av, bv, cv)),
      )[0];
    },
    softmax(x) {
      const m = toMatrix("x", x);
      // In place on the copy in wasm memory: the output is the input's slot.
      const [out] = mem.run([], [{ rows: m.rows, cols: m.cols }], (ov) => {
        M.HEAPF32.set(m.data, ov.ptr >>> 2);
        return M.softmax(mem.args(ov));
      });
      return out;
    },
    splitHeads(x, numHeads) {
      const m = toMatrix("x", x);
      checkCount("numHeads", numHeads);
      const d = Math.floor(m.cols / numHeads);
      const [out] = mem.run(
        [m],
        [{ rows: numHeads * m.rows, cols: Math.max(d, 1) }],
        (xv, ov) => M.splitHeads(mem.args(xv, numHeads, ov)),
        NUM_HEADS_NAMES,
      );
      return { data: out.data, shape: [numHeads, m.rows, d] };
    },
    mergeHeads(heads) {
      const t = toTensor("heads", heads);
      if (t.shape.length !== 3) {
        const given = `[${t.shape.join(", ")}]`;
        throw rangeError("heads.shape", "[numHeads, seq, headDim]", given, "shape_mismatch");
      }
      const [h, T, d] = t.shape;
      return mem.run(
        [{ name: t.name, data: t.data, rows: h * T, cols: d }],
        [{ rows: T, cols: h * d }],
        (hv, ov) => M.mergeHeads(mem.args(hv, h, ov)),
      )[0];
    },
  };
}

function multiHeadAttention(mem, X, weights, config, options) {
  checkOptions(options);
  const { x, mats, heads, r, xm, dOut } = layerInputs(X, weights, config);
  const shape = x.shape.length === 3 ? [r.batch, r.seq, dOut] : [r.seq, dOut];
  const [out] = mem.runWithOptions(
    [xm, ...mats],
    options,
    [{ rows: xm.rows, cols: dOut, shape }],
    ([xv, wq, wk, wv, wo], o, [ov]) =>
      mem.M.multiHeadAttention(mem.args(xv, r.batch, wq, wk, wv, wo, headWords(heads), ov, o)),
  );
  return { data: out.data, shape };
}

/**
 * multiHeadAttention with packed weights (packWeights): only X crosses into
 * wasm memory; the core checks config and X's d_model against the pack.
 */
function multiHeadAttentionPacked(mem, handleOf, X, weights, config, options) {
  checkOptions(options);
  const x = toTensor("X", X);
  const handle = handleOf(weights);
  const heads = checkConfig(config);
  const r = asBatchRows("X", x);
  const xm = { name: x.name, data: x.data, rows: r.batch * r.seq, cols: r.cols };
  const shape = x.shape.length === 3 ? [r.batch, r.seq, weights.dOut] : [r.seq, weights.dOut];
  const [out] = mem.runWithOptions(
    [xm],
    options,
    [{ rows: xm.rows, cols: weights.dOut, shape }],
    ([xv], o, [ov]) =>
      mem.M.multiHeadPacked(handle, mem.args(xv, r.batch, headWords(heads), ov, o)),
  );
  return { data: out.data, shape };
}

function multiHeadAttentionQKV(mem, Q, K, V, config, options) {
  checkOptions(options, QKV_KEYS);
  // Either layout goes to the core as it is (options.out too): each head a
  // block of its rows, read and written in place.
  const { heads, rows } = qkvInputs(Q, K, V, config, options);
  const { qm, km, vm, batch, seqQ, out: shaped } = rows;
  const extras = qkvExtras(options, heads, rows);
  const [out, ...more] = mem.runWithOptions(
    [qm, km, vm, ...extras.inputs],
    options,
    [shaped, ...extras.outputs],
    ([qv, kv, vv, pk = NONE, pv = NONE], o, [ov, ...rest]) => {
      const [presentK, presentV] = extras.present ? rest : [NONE, NONE];
      const scores = extras.stage ? rest[rest.length - 1] : NONE;
      const words = mem.args(
        qv,
        kv,
        vv,
        batch,
        headWords(heads),
        rows.layoutWord,
        ov,
        pk,
        pv,
        presentK,
        presentV,
        extras.stage,
        scores,
        o,
      );
      return mem.M.multiHeadAttentionQKV(words);
    },
  );
  const result = { data: out.data, shape: shaped.shape };
  const kvh = heads.numKvHeads || heads.numHeads;
  if (extras.present) {
    const T = more[0].rows / (batch * kvh);
    result.presentKey = { data: more[0].data, shape: [batch, kvh, T, more[0].cols] };
    result.presentValue = { data: more[1].data, shape: [batch, kvh, T, more[1].cols] };
  }
  if (extras.stage) {
    const s = more[more.length - 1];
    result.scores = { data: s.data, shape: [batch, heads.numHeads, seqQ, s.cols] };
  }
  return result;
}
