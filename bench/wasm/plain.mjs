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

// The benchmarks' inputs: n floats in [-1, 1) from a seeded LCG.
export function random(n, seed) {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; ++i) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}
