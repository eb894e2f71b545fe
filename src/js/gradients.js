// attnkit: the gradients of attention (the backward pass) and the forward for
// training, which also returns each row's log-sum-exp so that a backward call
// given it (options.saved) skips recomputing the forward. Each call crosses
// into wasm once, like the forward calls (marshal.js).
import { describe, rangeError } from "./errors.js";
import { count, toMatrix, toTensor, transposeHeads } from "./convert.js";
import {
  asBatchRows,
  checkConfig,
  checkOptions,
  gradientOutputs,
  headsOut,
  qkvRows,
  savedInputs,
  weightMats,
} from "./arguments.js";
import { NONE, headWords, leanOptionWords } from "./marshal.js";

/** The options a backward call takes on top of the forward's. */
const BACKWARD_KEYS = ["saved"];
/** Core parameter names of the forward's saved results -> the JS names. */
const SAVED_NAMES = { O: "options.saved.out", lse: "options.saved.lse" };
const QKV_NAMES = ["dQ", "dK", "dV"];
// An absent saved O or lse on the lean path: a view at address 0.
const NO_SAVED = { data: new Float32Array(0), rows: 0, cols: 0 };
const PROJECTION_NAMES = ["dX", "dW_Q", "dW_K", "dW_V"];
const mismatch = (name, expected, given) => rangeError(name, expected, given, "shape_mismatch");

/** options.layout of a multi-head call on Q, K, V. */
function layoutOf(options) {
  const layout = options?.layout ?? "bshd";
  if (layout !== "bshd" && layout !== "bhsd") {
    throw rangeError("options.layout", '"bshd" or "bhsd"', describe(layout));
  }
  return layout;
}

/**
 * A tensor shaped as a multi-head output (dO, a saved output) as rows
 * [batch * T_q, h * d_v]: layout "bshd" [batch, T_q, h * d_v] (or [T_q, h * d_v]
 * when batch is 1), "bhsd" [batch, h, T_q, d_v] (transposed).
 */
function outputRows(name, value, layout, batch, h, seqQ, dV) {
  const t = toTensor(name, value);
  const shape = `[${t.shape.join(", ")}]`;
  if (layout === "bhsd") {
    const [B, H, T, d] = t.shape;
    if (t.shape.length !== 4 || B !== batch || H !== h || T !== seqQ || d !== dV) {
      throw mismatch(`${name}.shape`, `[${batch}, ${h}, ${seqQ}, ${dV}] (as the output)`, shape);
    }
    return { data: transposeHeads(t.data, B, H, T, d), rows: B * T, cols: H * d };
  }
  const r = asBatchRows(name, t);
  if (r.batch !== batch || r.seq !== seqQ) {
    const expected = `[${batch}, ${seqQ}, ${h * dV}] (as the output)`;
    throw mismatch(`${name}.shape`, expected, shape);
  }
  return { name: t.name, data: t.data, rows: r.batch * r.seq, cols: r.cols };
}

/** options.out[name] of a bhsd call, checked (written after the call's transposition). */
function bhsdInto(options, name, size) {
  const into = options?.out?.[name];
  if (into !== undefined && into.length !== size) {
    throw rangeError(
      `options.out.${name}`,
      `a Float32Array of ${count(size, "value")}`,
      `${into.length}`,
      "shape_mismatch",
    );
  }
  return into;
}

/** A result in rows [batch * S, H * D] as bhsd [batch, H, S, D], into `into` when given. */
function bhsdResult(m, into, batch, H, S, D) {
  const data = transposeHeads(m.data, batch, H, S, D, true);
  if (into) into.set(data);
  return { data: into ?? data, shape: [batch, H, S, D] };
}

/** The forward-for-training and backward calls over the Marshal `mem`. */
export function gradientMethods(mem) {
  return { ...singleHeadGradients(mem), ...multiHeadGradients(mem) };
}

/** attentionForTraining, attentionBackward and selfAttentionBackward. */
function singleHeadGradients(mem) {
  const M = mem.M;
  return {
    attentionForTraining(Q, K, V, options) {
      checkOptions(options);
      const q = toMatrix("Q", Q),
        k = toMatrix("K", K),
        v = toMatrix("V", V);
      const words = leanOptionWords(options);
      const lean =
        words &&
        mem.lean(
          M.attentionForTraining,
          [q, k, v],
          [q.rows, v.cols, q.rows, 1],
          words,
          {},
          "Q",
          options?.out,
        );
      if (lean) return { out: lean[0], lse: lean[1] };
      const [out, lse] = mem.runWithOptions(
        [q, k, v],
        options,
        [
          { rows: q.rows, cols: v.cols },
          { rows: q.rows, cols: 1, blame: "Q" },
        ],
        ([qv, kv, vv], o, [ov, lv]) => M.attentionForTraining(mem.args(qv, kv, vv, ov, lv, o)),
      );
      return { out, lse };
    },
    attentionBackward(Q, K, V, dO, options) {
      checkOptions(options, BACKWARD_KEYS, QKV_NAMES);
      const q = toMatrix("Q", Q),
        k = toMatrix("K", K),
        v = toMatrix("V", V),
        d = toMatrix("dO", dO);
      const saved = savedInputs(options, toMatrix);
      const words = leanOptionWords(options);
      if (words) {
        // Q, K, V, dO, the saved flag, O and lse (as AttentionBackwardJs reads them).
        const inputs = saved ? [q, k, v, d, 1, ...saved] : [q, k, v, d, 0, NO_SAVED, NO_SAVED];
        const sizes = [q.rows, q.cols, k.rows, k.cols, v.rows, v.cols];
        const lean = mem.lean(M.attentionBackward, inputs, sizes, words, SAVED_NAMES, "Q");
        if (lean) return { dQ: lean[0], dK: lean[1], dV: lean[2] };
      }
      const outputs = gradientOutputs(options, [
        { name: "dQ", rows: q.rows, cols: q.cols, blame: "Q" },
        { name: "dK", rows: k.rows, cols: k.cols, blame: "K" },
        { name: "dV", rows: v.rows, cols: v.cols, blame: "V" },
      ]);
      const [dQ, dK, dV] = mem.runWithOptions(
        saved ? [q, k, v, d, ...saved] : [q, k, v, d],
        options,
        outputs,
        ([qv, kv, vv, dv, ov = NONE, lv = NONE], o, [gq, gk, gv]) =>
          M.attentionBackward(mem.args(qv, kv, vv, dv, saved ? 1 : 0, ov, lv, gq, gk, gv, o)),
        SAVED_NAMES,
      );
      return { dQ, dK, dV };
    },
    selfAttentionBackward(X, weights, dO, options) {
      checkOptions(options, [], PROJECTION_NAMES);
      const x = toMatrix("X", X);
      const w = weightMats(weights, false);
      const d = toMatrix("dO", dO);
      const outputs = gradientOutputs(options, [
        { name: "dX", rows: x.rows, cols: x.cols, blame: "X" },
        { name: "dW_Q", rows: w[0].rows, cols: w[0].cols, blame: "weights.W_Q" },
        { name: "dW_K", rows: w[1].rows, cols: w[1].cols, blame: "weights.W_K" },
        { name: "dW_V", rows: w[2].rows, cols: w[2].cols, blame: "weights.W_V" },
      ]);
      const [dX, dW_Q, dW_K, dW_V] = mem.runWithOptions(
        [x, ...w, d],
        options,
        outputs,
        ([xv, wq, wk, wv, dv], o, g) =>
          M.selfAttentionBackward(mem.args(xv, wq, wk, wv, dv, ...g, o)),
      );
      return { dX, dW_Q, dW_K, dW_V };
    },
  };
}

/** The multi-head calls' forward for training and backward. */
function multiHeadGradients(mem) {
  const M = mem.M;
  return {
    multiHeadAttentionQKVForTraining(Q, K, V, config, options) {
      checkOptions(options, ["layout"]);
      const layout = layoutOf(options);
      const heads = checkConfig(config);
      const q = toTensor("Q", Q),
        k = toTensor("K", K),
        v = toTensor("V", V);
      const { qm, km, vm, batch, seqQ } = qkvRows(layout, q, k, v, heads);
      const dOut = headsOut(heads, 0, null, vm.cols);
      const h = heads.numHeads,
        dV = dOut / h;
      // bhsd results are transposed after the call, then written into options.out.
      const into = layout === "bhsd" ? options?.out : undefined;
      if (into && into.length !== qm.rows * dOut) {
        const expected = `a Float32Array of ${count(qm.rows * dOut, "value")} (the result)`;
        throw rangeError("options.out", expected, `${into.length}`, "shape_mismatch");
      }
      const [out, lse] = mem.runWithOptions(
        [qm, km, vm],
        into ? { ...options, out: undefined } : options,
        [
          { rows: qm.rows, cols: dOut },
          { rows: batch * h * seqQ, cols: 1, blame: "Q" },
        ],
        ([qv, kv, vv], o, [ov, lv]) =>
          M.multiHeadAttentionQKVForTraining(
            mem.args(qv, kv, vv, batch, headWords(heads), ov, lv, o),
          ),
      );
      const result =
        layout === "bhsd"
          ? bhsdResult(out, into, batch, h, seqQ, dV)
          : { data: out.data, shape: q.shape.length === 3 ? [batch, seqQ, dOut] : [seqQ, dOut] };
      return { out: result, lse: { data: lse.data, shape: [batch, h, seqQ] } };
    },
    multiHeadAttentionQKVBackward(Q, K, V, config, dO, options) {
      checkOptions(options, ["layout", ...BACKWARD_KEYS], QKV_NAMES);
      const layout = layoutOf(options);
      const heads = checkConfig(config);
      const q = toTensor("Q", Q),
        k = toTensor("K", K),
        v = toTensor("V", V);
      const { qm, km, vm, batch, seqQ } = qkvRows(layout, q, k, v, heads);
      const h = heads.numHeads;
      const dV = headsOut(heads, 0, null, vm.cols) / h;
      const d = outputRows("dO", dO, layout, batch, h, seqQ, dV);
      const saved = savedInputs(options, (name, value) => {
        if (name === "options.saved.out")
          return outputRows(name, value, layout, batch, h, seqQ, dV);
        // The forward for training's lse: [batch, numHeads, T_q], as it returned it.
        const t = toTensor(name, value);
        const want = [batch, h, seqQ];
        if (t.data.length !== batch * h * seqQ) {
          const given = `shape [${t.shape.join(", ")}]`;
          throw mismatch(name, `shape [${want.join(", ")}] (batch, numHeads, T_q)`, given);
        }
        return { name: t.name, data: t.data, rows: t.data.length, cols: 1 };
      });
      const bhsd = layout === "bhsd";
      const outputs = gradientOutputs(bhsd ? {} : options, [
        { name: "dQ", rows: qm.rows, cols: qm.cols, blame: "Q" },
        { name: "dK", rows: km.rows, cols: km.cols, blame: "K" },
        { name: "dV", rows: vm.rows, cols: vm.cols, blame: "V" },
      ]);
      const into = bhsd
        ? QKV_NAMES.map((n, i) => bhsdInto(options, n, [qm, km, vm][i].data.length))
        : [];
      const grads = mem.runWithOptions(
        saved ? [qm, km, vm, d, ...saved] : [qm, km, vm, d],
        options,
        outputs,
        ([qv, kv, vv, dv, ov = NONE, lv = NONE], o, [gq, gk, gv]) =>
          M.multiHeadAttentionQKVBackward(
            mem.args(qv, kv, vv, dv, saved ? 1 : 0, ov, lv, batch, headWords(heads), gq, gk, gv, o),
          ),
        SAVED_NAMES,
      );
      const result = {};
      const inputs = [q, k, v];
      QKV_NAMES.forEach((name, i) => {
        const g = grads[i];
        if (!bhsd) {
          result[name] = { data: g.data, shape: inputs[i].shape };
          return;
        }
        const [, H, S, D] = inputs[i].shape;
        result[name] = bhsdResult(g, into[i], batch, H, S, D);
      });
      return result;
    },
    multiHeadAttentionBackward(X, weights, config, dO, options) {
      checkOptions(options, [], [...PROJECTION_NAMES, "dW_O"]);
      const x = toTensor("X", X);
      const mats = weightMats(weights, true);
      const heads = checkConfig(config);
      const r = asBatchRows("X", x);
      const xm = { name: x.name, data: x.data, rows: r.batch * r.seq, cols: r.cols };
      const dOut = headsOut(heads, r.cols, mats[3], 0);
      const d = toTensor("dO", dO);
      const rd = asBatchRows("dO", d);
      if (rd.batch !== r.batch || rd.seq !== r.seq) {
        const expected =
          x.shape.length === 3 ? `[${r.batch}, ${r.seq}, ${dOut}]` : `[${r.seq}, ${dOut}]`;
        throw mismatch("dO.shape", `${expected} (as the output)`, `[${d.shape.join(", ")}]`);
      }
      const dm = { name: d.name, data: d.data, rows: rd.batch * rd.seq, cols: rd.cols };
      const wo = mats[3];
      const outputs = gradientOutputs(options, [
        { name: "dX", rows: xm.rows, cols: xm.cols, blame: "X" },
        { name: "dW_Q", rows: mats[0].rows, cols: mats[0].cols, blame: "weights.W_Q" },
        { name: "dW_K", rows: mats[1].rows, cols: mats[1].cols, blame: "weights.W_K" },
        { name: "dW_V", rows: mats[2].rows, cols: mats[2].cols, blame: "weights.W_V" },
        ...(wo ? [{ name: "dW_O", rows: wo.rows, cols: wo.cols, blame: "weights.W_O" }] : []),
      ]);
      const [dX, dW_Q, dW_K, dW_V, dW_O] = mem.runWithOptions(
        [xm, ...mats, dm],
        options,
        outputs,
        ([xv, wq, wk, wv, wov = NONE, dv], o, [gx, gq, gk, gv, go = NONE]) =>
          M.multiHeadAttentionBackward(
            mem.args(xv, r.batch, wq, wk, wv, wov, headWords(heads), dv, gx, gq, gk, gv, go, o),
          ),
        { dOut: "dO" },
      );
      const result = { dX: { data: dX.data, shape: x.shape }, dW_Q, dW_K, dW_V };
      if (dW_O) result.dW_O = dW_O;
      return result;
    },
  };
}
