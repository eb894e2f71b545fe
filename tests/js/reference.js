// A plain float64 reference of attention for the Node test harness. Matrices
// are arrays of rows (number[][]); nothing here is clever or fast on purpose.
//
//   raw      = Q K^T
//   scaled   = raw * scale, then softcap * tanh(s / softcap) if softcap > 0
//   masked   = scaled + additive mask, -Infinity where any mask forbids a key
//              (causal: key j visible to query i iff j <= i + (T_k - T_q);
//               key padding: j < keyLength; boolean mask: true / nonzero)
//   weights  = row softmax of masked; a row with every key masked is all 0
//   output   = weights V

// ---- matrices

export function zeros(rows, cols) {
  return Array.from({ length: rows }, () => new Array(cols).fill(0));
}

export function matmul(A, B) {
  const n = A.length,
    k = B.length,
    m = B[0].length;
  if (A[0].length !== k) throw new Error(`matmul: ${A[0].length} != ${k}`);
  const C = zeros(n, m);
  for (let i = 0; i < n; ++i) {
    for (let j = 0; j < m; ++j) {
      let s = 0;
      for (let t = 0; t < k; ++t) s += A[i][t] * B[t][j];
      C[i][j] = s;
    }
  }
  return C;
}

export function transpose(A) {
  return A[0].map((_, j) => A.map((row) => row[j]));
}

/** Columns [start, start + count) of A. */
export function columns(A, start, count) {
  return A.map((row) => row.slice(start, start + count));
}

/** Rows of A then rows of B side by side: [A | B]. */
export function concatColumns(parts) {
  return parts[0].map((_, i) => parts.flatMap((p) => p[i]));
}

// ---- conversions to and from the package's {data, rows, cols}

export function toMatrix(rows) {
  return { data: Float32Array.from(rows.flat()), rows: rows.length, cols: rows[0].length };
}

export function fromMatrix(m) {
  const out = [];
  for (let r = 0; r < m.rows; ++r)
    out.push(Array.from(m.data.subarray(r * m.cols, (r + 1) * m.cols)));
  return out;
}

/** Nested arrays [B][T][C] to a rank-3 tensor {data, shape}. */
export function toTensor3(items) {
  return {
    data: Float32Array.from(items.flat(2)),
    shape: [items.length, items[0].length, items[0][0].length],
  };
}

/** A rank-3 tensor {data, shape: [B, T, C]} to nested arrays [B][T][C]. */
export function fromTensor3(t) {
  const [B, T, C] = t.shape;
  const out = [];
  for (let b = 0; b < B; ++b) {
    out.push(fromMatrix({ data: t.data.subarray(b * T * C, (b + 1) * T * C), rows: T, cols: C }));
  }
  return out;
}

// ---- softmax and attention

export function softmaxRows(S) {
  return S.map((row) => {
    const max = Math.max(...row);
    if (max === -Infinity) return row.map(() => 0); // fully masked row
    const e = row.map((s) => (s === -Infinity ? 0 : Math.exp(s - max)));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / sum);
  });
}

/** True if query i may attend key j under every mask in `options`. */
export function allowed(options, i, j, Tq, Tk, keyLength) {
  if (options.causal && j > i + (Tk - Tq)) return false;
  if (keyLength !== undefined && j >= keyLength) return false;
  if (options.boolMask && !options.boolMask[i][j]) return false;
  return true;
}

/**
 * Single-head attention on Q [Tq, dk], K [Tk, dk], V [Tk, dv] with every
 * intermediate. options: scale, softcap, causal, keyLength, boolMask (nested
 * booleans), additiveMask (nested numbers, may hold -Infinity).
 * defaultScaleDim: the dimension of the default scale 1/sqrt(dim) (d_k).
 */
export function attentionTrace(Q, K, V, options = {}, defaultScaleDim = Q[0].length) {
  const Tq = Q.length,
    Tk = K.length;
  const scale = options.scale ?? 1 / Math.sqrt(defaultScaleDim);
  const raw = matmul(Q, transpose(K));
  const cap = options.softcap ?? 0;
  const scaled = raw.map((row) =>
    row.map((s) => {
      const x = s * scale;
      return cap > 0 ? cap * Math.tanh(x / cap) : x;
    }),
  );
  const masked = scaled.map((row, i) =>
    row.map((s, j) => {
      if (!allowed(options, i, j, Tq, Tk, options.keyLength)) return -Infinity;
      return options.additiveMask ? s + options.additiveMask[i][j] : s;
    }),
  );
  const weights = softmaxRows(masked);
  const output = matmul(weights, V);
  return {
    Q,
    K,
    V,
    rawScores: raw,
    scaledScores: scaled,
    maskedScores: masked,
    weights,
    output,
    scale,
  };
}

export function attention(Q, K, V, options = {}, defaultScaleDim = Q[0].length) {
  return attentionTrace(Q, K, V, options, defaultScaleDim).output;
}

/** X [T, d_model] projected by W_Q, W_K, W_V, then attention (with the trace). */
export function selfAttentionTrace(X, w, options = {}) {
  const Q = matmul(X, w.W_Q),
    K = matmul(X, w.W_K),
    V = matmul(X, w.W_V);
  return { X, ...attentionTrace(Q, K, V, options) };
}

export function crossAttention(Xq, Xkv, w, options = {}) {
  return attention(matmul(Xq, w.W_Q), matmul(Xkv, w.W_K), matmul(Xkv, w.W_V), options);
}

/** Q = K = V = X, default scale 1/sqrt(d_model). */
export function parameterFree(X, options = {}) {
  return attention(X, X, X, options, X[0].length);
}

// ---- heads

/** [T, h*d] -> h matrices [T, d]. */
export function splitHeads(x, h) {
  const d = x[0].length / h;
  return Array.from({ length: h }, (_, i) => columns(x, i * d, d));
}

/** h matrices [T, d] -> [T, h*d]. */
export function mergeHeads(heads) {
  return concatColumns(heads);
}

/**
 * Multi-head attention of one batch item on projected Q [Tq, h*dk],
 * K [Tk, kvh*dk], V [Tk, kvh*dv]. Query head i reads K/V head
 * floor(i / (h / kvh)). Returns the merged heads [Tq, h*dv].
 */
export function multiHeadQKVItem(Q, K, V, numHeads, numKvHeads, options = {}) {
  const qh = splitHeads(Q, numHeads),
    kh = splitHeads(K, numKvHeads),
    vh = splitHeads(V, numKvHeads);
  const group = numHeads / numKvHeads;
  const outs = qh.map((q, i) =>
    attention(q, kh[Math.floor(i / group)], vh[Math.floor(i / group)], options),
  );
  return mergeHeads(outs);
}

function itemOptions(options, b) {
  const o = { ...options };
  if (options.keyLengths) o.keyLength = options.keyLengths[b];
  delete o.keyLengths;
  return o;
}

/** Batched multi-head attention on per-item Q, K, V lists ([B][T][C]). */
export function multiHeadQKV(Qs, Ks, Vs, numHeads, numKvHeads, options = {}) {
  return Qs.map((Q, b) =>
    multiHeadQKVItem(Q, Ks[b], Vs[b], numHeads, numKvHeads, itemOptions(options, b)),
  );
}

/**
 * Multi-head self-attention of a batch Xs [B][T][d_model] with weights
 * {W_Q [d_model, h*dk], W_K [d_model, kvh*dk], W_V [d_model, kvh*dv], W_O?}:
 * project, split, attend per head, merge, W_O. Returns [B][T][d_out].
 */
export function multiHeadAttention(Xs, w, numHeads, numKvHeads = numHeads, options = {}) {
  return Xs.map((X, b) => {
    const merged = multiHeadQKVItem(
      matmul(X, w.W_Q),
      matmul(X, w.W_K),
      matmul(X, w.W_V),
      numHeads,
      numKvHeads,
      itemOptions(options, b),
    );
    return w.W_O ? matmul(merged, w.W_O) : merged;
  });
}

// ---- random inputs (deterministic)

/** A small deterministic PRNG (mulberry32): uniform in [0, 1). */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A [rows, cols] matrix of float32-representable values uniform in [-amp, amp). */
export function randomMatrix(rand, rows, cols, amp = 1) {
  return Array.from({ length: rows }, () =>
    Array.from({ length: cols }, () => Math.fround((2 * rand() - 1) * amp)),
  );
}

// ---- ONNX Attention (opset 23/24), written from its specification

/**
 * ONNX Attention on bhsd tensors as nested arrays: Q [B][H][Tq][dk], K
 * [B][kvH][Tk][dk], V [B][kvH][Tk][dv]. Attributes: scale, softcap, isCausal;
 * inputs: attnMask { shape (rank 2..4, broadcast right-aligned to [B, H, Tq,
 * T_total]), data (flat; booleans = bool mask, numbers = additive) }, pastKey /
 * pastValue ([B][kvH][T_past][d]), nonpadKvSeqlen ([B]). The causal frontier
 * is j <= i + offset: offset = T_past with a past, nonpad[b] - Tq with
 * nonpadKvSeqlen, else 0. A short mask is padded with false / -inf. Returns
 * { Y [B][H][Tq][dv], presentKey, presentValue, scaled, masked, weights }
 * (the last three [B][H][Tq][T_total]).
 */
export function onnxAttention({
  Q,
  K,
  V,
  attnMask,
  pastKey,
  pastValue,
  nonpadKvSeqlen,
  isCausal = false,
  scale,
  softcap = 0,
}) {
  const B = Q.length,
    H = Q[0].length,
    Tq = Q[0][0].length,
    dk = Q[0][0][0].length,
    kvH = K[0].length;
  const presentKey = K.map((kb, b) =>
    kb.map((kh, g) => [...(pastKey ? pastKey[b][g] : []), ...kh]),
  );
  const presentValue = V.map((vb, b) =>
    vb.map((vh, g) => [...(pastValue ? pastValue[b][g] : []), ...vh]),
  );
  const past = pastKey ? pastKey[0][0].length : 0;
  const T = presentKey[0][0].length;
  const s = scale ?? 1 / Math.sqrt(dk);
  // The mask value at (b, h, i, j): broadcast by numpy's rules, padded past its last dimension.
  const maskAt = (b, h, i, j) => {
    if (!attnMask) return 0;
    const shape = attnMask.shape,
      dims = [B, H, Tq, T].slice(4 - shape.length);
    const idx = [b, h, i, j].slice(4 - shape.length);
    if (idx[idx.length - 1] >= shape[shape.length - 1]) return -Infinity;
    let flat = 0;
    for (let a = 0; a < shape.length; ++a) {
      const last = a === shape.length - 1; // may be shorter (padded)
      if (!last && shape[a] !== 1 && shape[a] !== dims[a])
        throw new Error(`mask dim ${a} does not broadcast`);
      flat = flat * shape[a] + (shape[a] === 1 ? 0 : idx[a]);
    }
    const v = attnMask.data[flat];
    return typeof v === "boolean" ? (v ? 0 : -Infinity) : v;
  };
  const scaled = [],
    masked = [],
    weights = [],
    Y = [];
  for (let b = 0; b < B; ++b) {
    scaled.push([]);
    masked.push([]);
    weights.push([]);
    Y.push([]);
    const offset = pastKey ? past : nonpadKvSeqlen ? nonpadKvSeqlen[b] - Tq : 0;
    for (let h = 0; h < H; ++h) {
      const g = Math.floor(h / (H / kvH));
      const k = presentKey[b][g],
        v = presentValue[b][g];
      const sc = Q[b][h].map((q) =>
        k.map((kj) => {
          const x = q.reduce((acc, qc, c) => acc + qc * kj[c], 0) * s;
          return softcap > 0 ? softcap * Math.tanh(x / softcap) : x;
        }),
      );
      const ms = sc.map((row, i) =>
        row.map((x, j) => {
          let bias = maskAt(b, h, i, j);
          if (isCausal && j > i + offset) bias = -Infinity;
          if (nonpadKvSeqlen && j >= nonpadKvSeqlen[b]) bias = -Infinity;
          return x + bias;
        }),
      );
      const w = softmaxRows(ms);
      scaled[b].push(sc);
      masked[b].push(ms);
      weights[b].push(w);
      Y[b].push(matmul(w, v));
    }
  }
  return { Y, presentKey, presentValue, scaled, masked, weights };
}

/** A nested [d0][d1]...[dn] array from a flat array and a shape. */
export function nest(flat, shape) {
  if (shape.length === 1) return Array.from(flat.slice(0, shape[0]));
  const step = shape.slice(1).reduce((a, b) => a * b, 1);
  return Array.from({ length: shape[0] }, (_, i) =>
    nest(flat.slice(i * step, (i + 1) * step), shape.slice(1)),
  );
}
