// The query/key map of one head (as in AttentionViz, Yeh et al. 2023): the head's query
// rows and key rows of the sample projected together to 2-D. Keys are centred (adding one
// vector to every key adds the same number to a query's scores, which the softmax
// ignores) and queries and keys are scaled to the same mean length (q·k is unchanged by
// q·a, k/a), so that where a query lands near a key, it attends to it; then the two
// principal components of all rows together.
import type { Tensor } from "attnkit";

export interface QKMap {
  /** 2-D points of the T queries and the T keys. */
  q: [number, number][];
  k: [number, number][];
  /** The key each query weights most, and its weight. */
  top: number[];
  topWeight: number[];
}

/** Row t of head h of a [heads, T, d] tensor. */
function headRow(t: Tensor, h: number, r: number): Float32Array {
  const [, T, d] = t.shape;
  const at = (h * T + r) * d;
  return t.data.subarray(at, at + d) as Float32Array;
}

/** The two leading eigenvectors of a symmetric d x d matrix (power iteration with deflation). */
function topTwo(C: Float64Array, d: number, prev: number[][] | null): number[][] {
  const out: number[][] = [];
  const A = Float64Array.from(C);
  for (let k = 0; k < 2; k++) {
    // Start from the previous frame's axis so the map does not flip between frames.
    let v =
      prev?.[k]?.length === d
        ? [...prev[k]]
        : Array.from({ length: d }, (_, i) => (i === k ? 1 : 0.5 / (i + 1)));
    let lambda = 0;
    for (let it = 0; it < 40; it++) {
      const w = new Array<number>(d).fill(0);
      for (let i = 0; i < d; i++) for (let j = 0; j < d; j++) w[i] += A[i * d + j] * v[j];
      const n = Math.hypot(...w);
      if (n < 1e-12) break;
      lambda = n;
      const next = w.map((x) => x / n);
      const diff = Math.hypot(...next.map((x, i) => x - v[i]));
      v = next;
      if (diff < 1e-7) break;
    }
    // Deflate: A -= lambda v v^T.
    for (let i = 0; i < d; i++) for (let j = 0; j < d; j++) A[i * d + j] -= lambda * v[i] * v[j];
    // Keep the sign of the previous frame's axis.
    if (prev?.[k]?.length === d && v.reduce((s, x, i) => s + x * prev[k][i], 0) < 0)
      v = v.map((x) => -x);
    out.push(v);
  }
  return out;
}

/** Axes of the last map of each head, to keep its orientation from frame to frame. */
const axes = new Map<string, number[][]>();

/**
 * The map of query head `h` (its K/V head `g`) over the first `T` positions of Q [heads, T, d_k],
 * K [kv heads, T, d_k] and weights [heads, T, T].
 */
export function qkMap(
  Q: Tensor,
  K: Tensor,
  weights: Tensor,
  h: number,
  g: number,
  key: string,
): QKMap {
  const [, T, d] = Q.shape;
  const qs = Array.from({ length: T }, (_, r) => Array.from(headRow(Q, h, r)));
  const ks = Array.from({ length: T }, (_, r) => Array.from(headRow(K, g, r)));
  const mean = (rows: number[][]) =>
    Array.from({ length: d }, (_, j) => rows.reduce((s, r) => s + r[j], 0) / rows.length);
  const km = mean(ks);
  const kc = ks.map((r) => r.map((x, j) => x - km[j]));
  const len = (rows: number[][]) => rows.reduce((s, r) => s + Math.hypot(...r), 0) / rows.length;
  const a = Math.sqrt((len(kc) || 1) / (len(qs) || 1));
  const qa = qs.map((r) => r.map((x) => x * a));
  const ka = kc.map((r) => r.map((x) => x / a));
  const all = [...qa, ...ka];
  const m = mean(all);
  const C = new Float64Array(d * d);
  for (const r of all)
    for (let i = 0; i < d; i++)
      for (let j = 0; j < d; j++) C[i * d + j] += (r[i] - m[i]) * (r[j] - m[j]);
  const ax = topTwo(C, d, axes.get(key) ?? null);
  axes.set(key, ax);
  const project = (r: number[]): [number, number] => {
    const c = r.map((x, j) => x - m[j]);
    return [c.reduce((s, x, j) => s + x * ax[0][j], 0), c.reduce((s, x, j) => s + x * ax[1][j], 0)];
  };
  const [, , Tk] = weights.shape;
  const row = (i: number) => (h * T + i) * Tk;
  const top = Array.from({ length: T }, (_, i) => {
    let best = 0;
    for (let j = 1; j < Tk; j++)
      if (weights.data[row(i) + j] > weights.data[row(i) + best]) best = j;
    return best;
  });
  const topWeight = top.map((j, i) => weights.data[row(i) + j]);
  return { q: qa.map(project), k: ka.map(project), top, topWeight };
}
