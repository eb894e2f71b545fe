// attnkit: the gradients of attention (the backward pass) and the forward for
// training, which also returns each row's log-sum-exp so that a backward call
// given it (options.saved) skips recomputing the forward. Each call crosses
// into wasm once, like the forward calls (marshal.js).
import { rangeError } from "./errors.js";
import { toMatrix, toTensor } from "./convert.js";
import {
  asBatchRows,
  checkOptions,
  gradientOutputs,
  layerInputs,
  qkvInputs,
  savedInputs,
  weightMats,
} from "./arguments.js";
import { NONE, headWords, leanOptionWords, names } from "./marshal.js";

/** The options a backward call takes on top of the forward's. */
const BACKWARD_KEYS = ["saved"];
/** Core parameter names of the forward's saved results -> the JS names. */
const SAVED_NAMES = names({ O: "options.saved.out", lse: "options.saved.lse" });
// multiHeadAttentionBackward's dO.
const BACKWARD_NAMES = names({ dOut: "dO" });
const QKV_NAMES = ["dQ", "dK", "dV"];
// An absent saved O or lse on the lean path: a view at address 0.
const NO_SAVED = { data: new Float32Array(0), rows: 0, cols: 0 };
const PROJECTION_NAMES = ["dX", "dW_Q", "dW_K", "dW_V"];
const mismatch = (name, expected, given) => rangeError(name, expected, given, "shape_mismatch");

/**
 * A tensor shaped as a multi-head output (dO, a saved output) as the core
 * takes it, its data as it is: rows.out of qkvRows ("bshd" [batch * T_q,
 * h * d_v] from [batch, T_q, h * d_v] or [T_q, h * d_v]; "bhsd" [batch * h *
 * T_q, d_v] from [batch, h, T_q, d_v]).
 */
function outputRows(name, value, layout, rows) {
  const t = toTensor(name, value);
  const shape = `[${t.shape.join(", ")}]`;
  const { batch, seqQ, out } = rows;
  if (layout === "bhsd") {
    if (t.shape.length !== 4 || t.shape.some((n, i) => n !== out.shape[i])) {
      throw mismatch(`${name}.shape`, `[${out.shape.join(", ")}] (as the output)`, shape);
    }
    return { name: t.name, data: t.data, rows: out.rows, cols: out.cols };
  }
  const r = asBatchRows(name, t);
  if (r.batch !== batch || r.seq !== seqQ) {
    const expected = `[${batch}, ${seqQ}, ${out.cols}] (as the output)`;
    throw mismatch(`${name}.shape`, expected, shape);
  }
  return { name: t.name, data: t.data, rows: r.batch * r.seq, cols: r.cols };
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
      const lean = mem.leanCall(
        M.attentionForTraining,
        [q, k, v],
        [q.rows, v.cols, q.rows, 1],
        options,
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
  return {
    multiHeadAttentionQKVForTraining: (Q, K, V, config, options) =>
      qkvForTraining(mem, Q, K, V, config, options),
    multiHeadAttentionQKVBackward: (Q, K, V, config, dO, options) =>
      qkvBackward(mem, Q, K, V, config, dO, options),
    multiHeadAttentionBackward: (X, weights, config, dO, options) =>
      projectedBackward(mem, X, weights, config, dO, options),
  };
}

/** multiHeadAttentionQKVForTraining. */
function qkvForTraining(mem, Q, K, V, config, options) {
  checkOptions(options, ["layout"]);
  // Either layout as it is, options.out too (see multiHeadAttentionQKV).
  const { heads, rows } = qkvInputs(Q, K, V, config, options);
  const { qm, km, vm, batch, seqQ } = rows;
  const h = heads.numHeads;
  const [out, lse] = mem.runWithOptions(
    [qm, km, vm],
    options,
    [rows.out, { rows: batch * h * seqQ, cols: 1, blame: "Q" }],
    ([qv, kv, vv], o, [ov, lv]) =>
      mem.M.multiHeadAttentionQKVForTraining(
        mem.args(qv, kv, vv, batch, headWords(heads), rows.layoutWord, ov, lv, o),
      ),
  );
  return {
    out: { data: out.data, shape: rows.out.shape },
    lse: { data: lse.data, shape: [batch, h, seqQ] },
  };
}

/** multiHeadAttentionQKVBackward. */
function qkvBackward(mem, Q, K, V, config, dO, options) {
  checkOptions(options, ["layout", ...BACKWARD_KEYS], QKV_NAMES);
  const { layout, heads, q, k, v, rows } = qkvInputs(Q, K, V, config, options);
  const { qm, km, vm, batch, seqQ } = rows;
  const h = heads.numHeads;
  const d = outputRows("dO", dO, layout, rows);
  const saved = savedInputs(options, (name, value) => {
    if (name === "options.saved.out") return outputRows(name, value, layout, rows);
    // The forward for training's lse: [batch, numHeads, T_q], as it returned it.
    const t = toTensor(name, value);
    const want = [batch, h, seqQ];
    if (t.data.length !== batch * h * seqQ) {
      const given = `shape [${t.shape.join(", ")}]`;
      throw mismatch(name, `shape [${want.join(", ")}] (batch, numHeads, T_q)`, given);
    }
    return { name: t.name, data: t.data, rows: t.data.length, cols: 1 };
  });
  // The gradients are shaped as Q, K and V, in their layout.
  const inputs = [q, k, v];
  const outputs = gradientOutputs(
    options,
    [qm, km, vm].map((m, i) => ({
      name: QKV_NAMES[i],
      rows: m.rows,
      cols: m.cols,
      shape: inputs[i].shape,
      blame: m.name,
    })),
  );
  const grads = mem.runWithOptions(
    saved ? [qm, km, vm, d, ...saved] : [qm, km, vm, d],
    options,
    outputs,
    ([qv, kv, vv, dv, ov = NONE, lv = NONE], o, [gq, gk, gv]) =>
      mem.M.multiHeadAttentionQKVBackward(
        mem.args(
          qv,
          kv,
          vv,
          dv,
          saved ? 1 : 0,
          ov,
          lv,
          batch,
          headWords(heads),
          rows.layoutWord,
          gq,
          gk,
          gv,
          o,
        ),
      ),
    SAVED_NAMES,
  );
  const result = {};
  QKV_NAMES.forEach((name, i) => {
    result[name] = { data: grads[i].data, shape: inputs[i].shape };
  });
  return result;
}

/** multiHeadAttentionBackward. */
function projectedBackward(mem, X, weights, config, dO, options) {
  checkOptions(options, [], [...PROJECTION_NAMES, "dW_O"]);
  const { x, mats, heads, r, xm, dOut } = layerInputs(X, weights, config);
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
      mem.M.multiHeadAttentionBackward(
        mem.args(xv, r.batch, wq, wk, wv, wov, headWords(heads), dv, gx, gq, gk, gv, go, o),
      ),
    BACKWARD_NAMES,
  );
  const result = { dX: { data: dX.data, shape: x.shape }, dW_Q, dW_K, dW_V };
  if (dW_O) result.dW_O = dW_O;
  return result;
}
