// A float64 reference of the gradients of attention for the Node test
// harness (not a test file itself): single head, self-attention, multi-head
// on Q/K/V and multi-head with projections, as nested arrays. Plain loops on
// purpose; backward.test.js checks it by central finite differences.
import { attentionTrace, matmul, transpose, zeros } from "./reference.js";
import { assertClose } from "./helpers.js";

/**
 * Reference options: the package's options with the causal alignment, offset
 * and key length folded into a boolean mask [T_q][T_k] (nested), which
 * reference.js's attentionTrace takes.
 */
export function refOptions(options, Tq, Tk) {
  const o = options ?? {};
  const mask = zeros(Tq, Tk).map((row, i) =>
    row.map((_, j) => {
      if (o.causal) {
        const limit = o.causalAlignment === "upperLeft" ? i + (o.causalOffset ?? 0) : i + Tk - Tq;
        if (j > limit) return false;
      }
      if (o.keyLength !== undefined && j >= o.keyLength) return false;
      if (o.boolMask && !o.boolMask[i][j]) return false;
      return true;
    }),
  );
  return { scale: o.scale, softcap: o.softcap, additiveMask: o.additiveMask, boolMask: mask };
}

/**
 * Gradients of single-head attention in float64 (nested arrays), the maths of
 * include/attnkit/backward.h: dV = P^T dO; dP = dO V^T; D = rowsum(dO * O);
 * dS' = P (dP - D); dS = dS' (1 - tanh^2(S / softcap)); dQ = scale dS K;
 * dK = scale dS^T Q. Also the forward (its output, per-row log-sum-exp and
 * trace) and the intermediates dWeights (dP), D, dMaskedScores (dS'), dScores.
 */
export function refBackward(Q, K, V, dO, options) {
  const t = attentionTrace(Q, K, V, refOptions(options, Q.length, K.length));
  const P = t.weights,
    O = t.output;
  const dV = matmul(transpose(P), dO);
  const dP = matmul(dO, transpose(V));
  const cap = options?.softcap ?? 0;
  const D = dO.map((row, i) => [row.reduce((a, g, c) => a + g * O[i][c], 0)]);
  const dMasked = P.map((row, i) => row.map((p, j) => p * (dP[i][j] - D[i][0])));
  const dS = dMasked.map((row, i) =>
    row.map((ds, j) => {
      if (!(cap > 0)) return ds;
      const th = Math.tanh((t.scale * t.rawScores[i][j]) / cap);
      return ds * (1 - th * th);
    }),
  );
  const dQ = matmul(dS, K).map((r) => r.map((x) => x * t.scale));
  const dK = matmul(transpose(dS), Q).map((r) => r.map((x) => x * t.scale));
  const lse = t.maskedScores.map((row) => {
    const max = Math.max(...row);
    if (max === -Infinity) return [-Infinity];
    return [max + Math.log(row.reduce((a, s) => a + Math.exp(s - max), 0))];
  });
  return {
    dQ,
    dK,
    dV,
    out: O,
    lse,
    dWeights: dP,
    D,
    dMaskedScores: dMasked,
    dScores: dS,
    trace: t,
  };
}

/** sum(attention(Q, K, V) * G) in float64: the loss whose dO is G. */
export function refLoss(Q, K, V, G, options) {
  const O = attentionTrace(Q, K, V, refOptions(options, Q.length, K.length)).output;
  return O.reduce((a, row, i) => a + row.reduce((b, o, c) => b + o * G[i][c], 0), 0);
}

/** Central finite differences of loss(inputs) with respect to inputs[which]. */
export function numericGradient(loss, inputs, which, h = 1e-6) {
  const X = inputs[which];
  return X.map((row, r) =>
    row.map((_, c) => {
      const at = (delta) => {
        const copy = inputs.slice();
        copy[which] = X.map((xr, rr) => xr.map((x, cc) => (rr === r && cc === c ? x + delta : x)));
        return loss(copy);
      };
      return (at(h) - at(-h)) / (2 * h);
    }),
  );
}

/** The largest |x| of nested arrays (at least 1). */
export const magnitude = (x) => Math.max(1, ...x.flat(Infinity).map((v) => Math.abs(v)));

/**
 * float32 gradients against the float64 reference: within 2e-4 of the
 * largest reference value (float32 rounding summed over up to 129 keys) plus
 * 1e-3 relative.
 */
export function assertGrad(got, want, label) {
  assertClose(got, want, label, { abs: 2e-4 * magnitude(want), rel: 1e-3 });
}

const add = (A, B) => A.map((row, i) => row.map((x, j) => x + B[i][j]));
const columnsOf = (A, start, n) => A.map((row) => row.slice(start, start + n));
/** Writes B into the columns [start, start + B[0].length) of A, adding. */
function addColumns(A, B, start) {
  B.forEach((row, i) => row.forEach((x, j) => (A[i][start + j] += x)));
}

/**
 * Self-attention with one head: Q = X W_Q, K = X W_K, V = X W_V, then
 * attention. -> { dX, dW_Q, dW_K, dW_V, out }.
 */
export function refSelfBackward(X, w, dO, options) {
  const Q = matmul(X, w.W_Q),
    K = matmul(X, w.W_K),
    V = matmul(X, w.W_V);
  const g = refBackward(Q, K, V, dO, options);
  const dX = add(
    add(matmul(g.dQ, transpose(w.W_Q)), matmul(g.dK, transpose(w.W_K))),
    matmul(g.dV, transpose(w.W_V)),
  );
  const Xt = transpose(X);
  return { dX, dW_Q: matmul(Xt, g.dQ), dW_K: matmul(Xt, g.dK), dW_V: matmul(Xt, g.dV), out: g.out };
}

/**
 * Multi-head attention on Q [B][T_q][h*dk], K [B][T_k][kvh*dk], V
 * [B][T_k][kvh*dv], dO [B][T_q][h*dv] (bshd, nested per item): query head i
 * reads K/V head floor(i / (h / kvh)); options.keyLengths and
 * options.causalOffsets one per item, masks [T_q][T_k] shared by every head,
 * or options.headMasks(b, i) -> { boolMask?, additiveMask? } per item and head.
 * -> { dQ, dK, dV, out } per item (nested like the inputs) and lse [B][h][T_q].
 */
export function refMultiHeadQKVBackward(Qs, Ks, Vs, dOs, h, kvh, options = {}) {
  const dk = Qs[0][0].length / h,
    dv = Vs[0][0].length / kvh,
    group = h / kvh;
  const result = { dQ: [], dK: [], dV: [], out: [], lse: [] };
  Qs.forEach((Q, b) => {
    const o = { ...options };
    if (options.keyLengths) o.keyLength = options.keyLengths[b];
    if (options.causalOffsets) o.causalOffset = options.causalOffsets[b];
    delete o.keyLengths;
    delete o.causalOffsets;
    delete o.headMasks;
    const dQ = zeros(Q.length, h * dk),
      dK = zeros(Ks[b].length, kvh * dk),
      dV = zeros(Vs[b].length, kvh * dv),
      out = zeros(Q.length, h * dv);
    const lse = [];
    for (let i = 0; i < h; ++i) {
      const g = Math.floor(i / group);
      const r = refBackward(
        columnsOf(Q, i * dk, dk),
        columnsOf(Ks[b], g * dk, dk),
        columnsOf(Vs[b], g * dv, dv),
        columnsOf(dOs[b], i * dv, dv),
        options.headMasks ? { ...o, ...options.headMasks(b, i) } : o,
      );
      addColumns(dQ, r.dQ, i * dk);
      addColumns(dK, r.dK, g * dk);
      addColumns(dV, r.dV, g * dv);
      addColumns(out, r.out, i * dv);
      lse.push(r.lse.map((x) => x[0]));
    }
    result.dQ.push(dQ);
    result.dK.push(dK);
    result.dV.push(dV);
    result.out.push(out);
    result.lse.push(lse);
  });
  return result;
}

/**
 * Multi-head attention with projections: Xs [B][T][d_model], weights W_Q, W_K,
 * W_V (and W_O or not), dOut [B][T][d_out]. -> { dX (per item), dW_Q, dW_K,
 * dW_V, dW_O (with W_O) }.
 */
export function refMultiHeadBackward(Xs, w, dOuts, h, kvh, options = {}) {
  const Qs = Xs.map((X) => matmul(X, w.W_Q)),
    Ks = Xs.map((X) => matmul(X, w.W_K)),
    Vs = Xs.map((X) => matmul(X, w.W_V));
  const dMerged = w.W_O ? dOuts.map((d) => matmul(d, transpose(w.W_O))) : dOuts;
  const g = refMultiHeadQKVBackward(Qs, Ks, Vs, dMerged, h, kvh, options);
  const sum = (mats) => mats.reduce((a, m) => add(a, m));
  const r = {
    dX: Xs.map((X, b) =>
      add(
        add(matmul(g.dQ[b], transpose(w.W_Q)), matmul(g.dK[b], transpose(w.W_K))),
        matmul(g.dV[b], transpose(w.W_V)),
      ),
    ),
    dW_Q: sum(Xs.map((X, b) => matmul(transpose(X), g.dQ[b]))),
    dW_K: sum(Xs.map((X, b) => matmul(transpose(X), g.dK[b]))),
    dW_V: sum(Xs.map((X, b) => matmul(transpose(X), g.dV[b]))),
  };
  if (w.W_O) r.dW_O = sum(g.out.map((m, b) => matmul(transpose(m), dOuts[b])));
  return r;
}

/** The loss sum(out * G) of multi-head attention with projections, float64. */
export function refMultiHeadLoss(Xs, w, G, h, kvh, options = {}) {
  const dk = w.W_Q[0].length / h,
    dv = w.W_V[0].length / kvh,
    group = h / kvh;
  let loss = 0;
  Xs.forEach((X, b) => {
    const o = { ...options };
    if (options.keyLengths) o.keyLength = options.keyLengths[b];
    delete o.keyLengths;
    const Q = matmul(X, w.W_Q),
      K = matmul(X, w.W_K),
      V = matmul(X, w.W_V);
    const merged = zeros(X.length, h * dv);
    for (let i = 0; i < h; ++i) {
      const g = Math.floor(i / group);
      const O = attentionTrace(
        columnsOf(Q, i * dk, dk),
        columnsOf(K, g * dk, dk),
        columnsOf(V, g * dv, dv),
        refOptions(o, X.length, X.length),
      ).output;
      addColumns(merged, O, i * dv);
    }
    const out = w.W_O ? matmul(merged, w.W_O) : merged;
    out.forEach((row, i) => row.forEach((x, j) => (loss += x * G[b][i][j])));
  });
  return loss;
}
