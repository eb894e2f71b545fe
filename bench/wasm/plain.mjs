// The plain JS engine of the benchmarks: Float32Array storage, two passes per
// query row. Attention of `heads` heads of size d: q [rows, heads * d] against
// k, v [keys, heads * d] (head h in columns [d h, d h + d)); out [rows, heads * d].
// Causal (rows == keys): query i sees keys 0..i.
export function jsAttention(q, k, v, rows, keys, heads, causal, out, d = 64) {
  const W = heads * d,
    row = new Float32Array(keys);
  const scale = 1 / Math.sqrt(d);
  for (let h = 0; h < heads; ++h) {
    for (let i = 0; i < rows; ++i) {
      const n = causal ? i + 1 : keys,
        qi = i * W + h * d;
      let max = -Infinity;
      for (let j = 0; j < n; ++j) {
        let dot = 0;
        for (let c = 0; c < d; ++c) dot += q[qi + c] * k[j * W + h * d + c];
        row[j] = dot * scale;
        if (row[j] > max) max = row[j];
      }
      let sum = 0;
      for (let j = 0; j < n; ++j) sum += row[j] = Math.exp(row[j] - max);
      out.fill(0, qi, qi + d);
      for (let j = 0; j < n; ++j) {
        const p = row[j] / sum;
        for (let c = 0; c < d; ++c) out[qi + c] += p * v[j * W + h * d + c];
      }
    }
  }
  return out;
}

// The plain JS forward for training and backward of one head of size d (q, k,
// v, dO [T, d]; causal: query i sees keys 0..i): the forward as jsAttention,
// keeping each row's log-sum-exp; the backward recomputes a row of P at a time
// from it, so neither holds a [T, T] matrix. Returns { out, dQ, dK, dV }.
export function jsAttentionFwdBwd(q, k, v, dO, T, causal, d = 64) {
  const scale = 1 / Math.sqrt(d),
    out = new Float32Array(T * d),
    lse = new Float64Array(T),
    row = new Float64Array(T);
  for (let i = 0; i < T; ++i) {
    const n = causal ? i + 1 : T;
    let max = -Infinity;
    for (let j = 0; j < n; ++j) {
      let dot = 0;
      for (let c = 0; c < d; ++c) dot += q[i * d + c] * k[j * d + c];
      row[j] = dot * scale;
      if (row[j] > max) max = row[j];
    }
    let sum = 0;
    for (let j = 0; j < n; ++j) sum += row[j] = Math.exp(row[j] - max);
    lse[i] = max + Math.log(sum);
    for (let j = 0; j < n; ++j) {
      const p = row[j] / sum;
      for (let c = 0; c < d; ++c) out[i * d + c] += p * v[j * d + c];
    }
  }
  const dQ = new Float32Array(T * d),
    dK = new Float32Array(T * d),
    dV = new Float32Array(T * d);
  for (let i = 0; i < T; ++i) {
    const n = causal ? i + 1 : T;
    let Di = 0;
    for (let c = 0; c < d; ++c) Di += dO[i * d + c] * out[i * d + c];
    for (let j = 0; j < n; ++j) {
      let s = 0,
        dp = 0;
      for (let c = 0; c < d; ++c) {
        s += q[i * d + c] * k[j * d + c];
        dp += dO[i * d + c] * v[j * d + c];
      }
      const p = Math.exp(s * scale - lse[i]),
        ds = p * (dp - Di) * scale;
      for (let c = 0; c < d; ++c) {
        dV[j * d + c] += p * dO[i * d + c];
        dQ[i * d + c] += ds * k[j * d + c];
        dK[j * d + c] += ds * q[i * d + c];
      }
    }
  }
  return { out, dQ, dK, dV };
}

/** plainForTraining's and plainBackward's workspace for one head [T, d]. */
export const plainWorkspace = (T, d) => ({
  out: new Float32Array(T * d),
  lse: new Float64Array(T),
  row: new Float64Array(T),
  dQ: new Float32Array(T * d),
  dK: new Float32Array(T * d),
  dV: new Float32Array(T * d),
});

// Plain JS's forward for training (out and each row's log-sum-exp) and
// backward from them (one row of P at a time, recomputed from lse) of one
// head of size d, its arrays reused (`ws`): the baseline of the training calls.
export function plainForTraining(q, k, v, T, d, ws) {
  const scale = 1 / Math.sqrt(d),
    { out, lse, row } = ws;
  out.fill(0);
  for (let i = 0; i < T; ++i) {
    let max = -Infinity;
    for (let j = 0; j < T; ++j) {
      let dot = 0;
      for (let c = 0; c < d; ++c) dot += q[i * d + c] * k[j * d + c];
      row[j] = dot * scale;
      if (row[j] > max) max = row[j];
    }
    let sum = 0;
    for (let j = 0; j < T; ++j) sum += row[j] = Math.exp(row[j] - max);
    lse[i] = max + Math.log(sum);
    for (let j = 0; j < T; ++j) {
      const p = row[j] / sum;
      for (let c = 0; c < d; ++c) out[i * d + c] += p * v[j * d + c];
    }
  }
  return out;
}
export function plainBackward(q, k, v, dO, T, d, ws) {
  const scale = 1 / Math.sqrt(d),
    { out, lse, dQ, dK, dV } = ws;
  (dQ.fill(0), dK.fill(0), dV.fill(0));
  for (let i = 0; i < T; ++i) {
    let D = 0; // rowsum(dO * O)
    for (let c = 0; c < d; ++c) D += dO[i * d + c] * out[i * d + c];
    for (let j = 0; j < T; ++j) {
      let s = 0,
        dp = 0;
      for (let c = 0; c < d; ++c) {
        s += q[i * d + c] * k[j * d + c];
        dp += dO[i * d + c] * v[j * d + c];
      }
      const p = Math.exp(s * scale - lse[i]),
        ds = p * (dp - D) * scale;
      for (let c = 0; c < d; ++c) {
        dV[j * d + c] += p * dO[i * d + c];
        dQ[i * d + c] += ds * k[j * d + c];
        dK[j * d + c] += ds * q[i * d + c];
      }
    }
  }
  return dQ;
}
