// Runs attention on the attnkit package for every batch item and head, keeping
// every intermediate the scenes show. All numbers come from the package's API:
// projections (matmul), the reshape into heads (splitHeads), each head's trace
// (traceQKV), concat (mergeHeads), the output projection (matmul), row sums
// (weights times a ones column, matmul), and a cross-check against
// multiHeadAttention / multiHeadAttentionQKV.
import type { AttentionOptions, AttentionTrace, Attnkit, Matrix, Tensor } from "attnkit";
import { attentionOptions, resolveConfig, type Config, type Item } from "./config";
import { embed, fromRows, type Embedded } from "./embeddings";
import { seedK, SEED001 } from "./presets";
import type { State } from "./state";
import { makeWeights, type Weights } from "./weights";

export interface ItemModel extends Embedded {
  item: Item;
  options: AttentionOptions;
  /** Full projections: Q [T, h*d_k], K [T, kvh*d_k], V [T, kvh*d_v]. */
  Q: Matrix;
  K: Matrix;
  V: Matrix;
  /** The same split into heads: [h, T, d_k], [kvh, T, d_k], [kvh, T, d_v]. */
  Qh: Tensor;
  Kh: Tensor;
  Vh: Tensor;
  /** One trace per head. */
  heads: AttentionTrace[];
  /** Row sums of each head's weights [T, 1]. */
  rowSums: Matrix[];
  /** Concat of the heads [T, h*d_v] and times W^O [T, d_model]. */
  merged: Matrix;
  out: Matrix;
  /** Largest |out - multiHeadAttention(...)|: the step-by-step path agrees with the one-call API (computed on first use). */
  readonly checkDiff: number;
}

export interface Model {
  cfg: Config;
  weights: Weights;
  items: ItemModel[];
  /** Milliseconds spent in attnkit calls. */
  computeMs: number;
}

/** Head h's slice [rows, d] of a split tensor [heads, rows, d]. */
export function headSlice(t: Tensor, h: number): Matrix {
  const [, rows, cols] = t.shape;
  return { data: t.data.subarray(h * rows * cols, (h + 1) * rows * cols), rows, cols };
}

/** The K/V head that query head h reads (grouped-query attention). */
export function kvGroup(cfg: Config, h: number): number {
  return Math.floor(h / (cfg.heads / cfg.kvHeads));
}

function ones(rows: number): Matrix {
  return { data: new Float32Array(rows).fill(1), rows, cols: 1 };
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

function runItem(attn: Attnkit, s: State, cfg: Config, w: Weights, item: Item, index: number): ItemModel {
  const emb = embed(s, cfg, item, index);
  const options = attentionOptions(s, cfg, item);
  const Q = attn.matmul(emb.X, w.WQ);
  const K = w.WK ? attn.matmul(emb.X, w.WK) : fromRows(seedK());
  const V = w.WV ? attn.matmul(emb.X, w.WV) : fromRows(SEED001.V);
  const Qh = attn.splitHeads(Q, cfg.heads);
  const Kh = attn.splitHeads(K, cfg.kvHeads);
  const Vh = attn.splitHeads(V, cfg.kvHeads);
  const heads: AttentionTrace[] = [];
  const rowSums: Matrix[] = [];
  const outs = new Float32Array(cfg.heads * cfg.T * cfg.dV);
  for (let h = 0; h < cfg.heads; h++) {
    const g = kvGroup(cfg, h);
    const tr = attn.traceQKV(headSlice(Qh, h), headSlice(Kh, g), headSlice(Vh, g), options);
    heads.push(tr);
    rowSums.push(attn.matmul(tr.weights, ones(cfg.T)));
    outs.set(tr.output.data, h * cfg.T * cfg.dV);
  }
  const merged = attn.mergeHeads({ data: outs, shape: [cfg.heads, cfg.T, cfg.dV] });
  const out = attn.matmul(merged, w.WO);
  const config = { numHeads: cfg.heads, numKvHeads: cfg.kvHeads, dK: cfg.dK, dV: cfg.dV };
  // The same attention in one call, for the check shown in step 8.
  const check = (): number => {
    if (w.WK && w.WV) {
      const whole = attn.multiHeadAttention(emb.X, { W_Q: w.WQ, W_K: w.WK, W_V: w.WV, W_O: w.WO }, config, options);
      return maxAbsDiff(whole.data, out.data);
    }
    const bshd = (m: Matrix) => ({ data: m.data, shape: [1, cfg.T, m.cols] });
    const m = attn.multiHeadAttentionQKV(bshd(Q), bshd(K), bshd(V), config, options);
    return maxAbsDiff(m.data, merged.data);
  };
  let diff: number | undefined;
  return {
    ...emb, item, options, Q, K, V, Qh, Kh, Vh, heads, rowSums, merged, out,
    get checkDiff() {
      diff ??= check();
      return diff;
    },
  };
}

export function computeModel(attn: Attnkit, s: State): Model {
  const cfg = resolveConfig(s);
  const weights = makeWeights(s, cfg);
  const t0 = performance.now();
  const items = cfg.items.map((item, i) => runItem(attn, s, cfg, weights, item, i));
  return { cfg, weights, items, computeMs: performance.now() - t0 };
}
