// Runs attention on the attnkit package for every batch item and head, keeping
// every intermediate the scenes show. All numbers come from the package's API:
// projections (matmul), the reshape into heads (splitHeads), each head's trace
// (traceQKV), concat (mergeHeads), the output projection (matmul), row sums
// (weights times a ones column, matmul), and a cross-check against
// multiHeadAttention / multiHeadAttentionQKV (one batched call for a batch of two).
import type { AttentionOptions, AttentionTrace, Attnkit, Matrix, Tensor } from "attnkit";
import { attentionOptions, batchOptions, resolveConfig, type Config, type Item } from "./config";
import { embed, fromRows, type Embedded } from "./embeddings";
import { seedK, SEED001 } from "./presets";
import { DISPLAY_FIELDS, omitFields, type State } from "./state";
import { trainedKey } from "./trained";
import { makeWeights, type Weights } from "./weights";

export interface ItemModel extends Projected {
  options: AttentionOptions;
  /** One trace per head. */
  heads: AttentionTrace[];
  /** Row sums of each head's weights [T, 1] (computed on first use). */
  readonly rowSums: Matrix[];
  /** Concat of the heads [T, h*d_v] and times W^O [T, d_model] (computed on first use). */
  readonly merged: Matrix;
  readonly out: Matrix;
  /** Largest |out - multiHeadAttention(...)|: the step-by-step path agrees with the one-call API (computed on first use). */
  readonly checkDiff: number;
  /** Batch mode: both sentences through one batched multiHeadAttention call (null otherwise). */
  readonly batched: BatchResult | null;
}

export interface BatchResult {
  /** [batch, T, d_model] */
  out: Tensor;
  keyLengths: number[];
  options: AttentionOptions;
}

export interface Model {
  cfg: Config;
  weights: Weights;
  items: ItemModel[];
  /** Reused while only the mask, scale, temperature or softcap change. */
  projected: Projected[];
  projectionKey: string;
  /** Milliseconds spent in attnkit calls. */
  computeMs: number;
}

/**
 * Milliseconds spent computing with attnkit since the page loaded: the model, and the
 * results scenes ask for on first use. A render reports the part it spent.
 */
export const computeClock = { ms: 0 };
let depth = 0;

/** Runs f, adding its time to computeClock (once, when calls nest). */
export function timed<T>(f: () => T): T {
  const t0 = depth++ === 0 ? performance.now() : 0;
  try {
    return f();
  } finally {
    if (--depth === 0) computeClock.ms += performance.now() - t0;
  }
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

/** The projections of one item: they depend on the text, embeddings and weights, not on the mask or scale. */
export interface Projected extends Embedded {
  item: Item;
  /** Full projections: Q [T, h*d_k], K [T, kvh*d_k], V [T, kvh*d_v]. */
  Q: Matrix;
  K: Matrix;
  V: Matrix;
  /** The same split into heads: [h, T, d_k], [kvh, T, d_k], [kvh, T, d_v]. */
  Qh: Tensor;
  Kh: Tensor;
  Vh: Tensor;
}

function project(
  attn: Attnkit,
  s: State,
  cfg: Config,
  w: Weights,
  item: Item,
  index: number,
): Projected {
  const emb = embed(s, cfg, item, index);
  const Q = attn.matmul(emb.X, w.WQ);
  const K = w.WK ? attn.matmul(emb.X, w.WK) : fromRows(seedK());
  const V = w.WV ? attn.matmul(emb.X, w.WV) : fromRows(SEED001.V);
  const Qh = attn.splitHeads(Q, cfg.heads);
  const Kh = attn.splitHeads(K, cfg.kvHeads);
  const Vh = attn.splitHeads(V, cfg.kvHeads);
  return { ...emb, item, Q, K, V, Qh, Kh, Vh };
}

function headConfig(cfg: Config) {
  return { numHeads: cfg.heads, numKvHeads: cfg.kvHeads, dK: cfg.dK, dV: cfg.dV };
}

function attendItem(
  attn: Attnkit,
  s: State,
  cfg: Config,
  w: Weights,
  p: Projected,
  batched: () => BatchResult | null,
  index: number,
): ItemModel {
  const options = attentionOptions(s, cfg, p.item);
  const heads: AttentionTrace[] = [];
  for (let h = 0; h < cfg.heads; h++) {
    const g = kvGroup(cfg, h);
    heads.push(attn.traceQKV(headSlice(p.Qh, h), headSlice(p.Kh, g), headSlice(p.Vh, g), options));
  }
  // Row sums, concat and W^O only when a scene asks for them.
  let rowSums: Matrix[] | undefined,
    merged: Matrix | undefined,
    out: Matrix | undefined,
    diff: number | undefined;
  const merge = (): Matrix => {
    if (!merged) {
      const outs = new Float32Array(cfg.heads * cfg.T * cfg.dV);
      heads.forEach((tr, h) => outs.set(tr.output.data, h * cfg.T * cfg.dV));
      merged = attn.mergeHeads({ data: outs, shape: [cfg.heads, cfg.T, cfg.dV] });
    }
    return merged;
  };
  // The same attention in one call (for a batch: one batched call for both items), for the check shown in step 8.
  const check = (): number => {
    const b = batched();
    if (b)
      return maxAbsDiff(
        b.out.data.subarray(index * cfg.T * cfg.dModel, (index + 1) * cfg.T * cfg.dModel),
        item.out.data,
      );
    const config = headConfig(cfg);
    if (w.WK && w.WV) {
      const whole = attn.multiHeadAttention(
        p.X,
        { W_Q: w.WQ, W_K: w.WK, W_V: w.WV, W_O: w.WO },
        config,
        options,
      );
      return maxAbsDiff(whole.data, item.out.data);
    }
    const bshd = (m: Matrix) => ({ data: m.data, shape: [1, cfg.T, m.cols] });
    const m = attn.multiHeadAttentionQKV(bshd(p.Q), bshd(p.K), bshd(p.V), config, options);
    return maxAbsDiff(m.data, merge().data);
  };
  const item: ItemModel = {
    ...p,
    options,
    heads,
    get rowSums() {
      rowSums ??= timed(() => heads.map((tr) => attn.matmul(tr.weights, ones(cfg.T))));
      return rowSums;
    },
    get merged() {
      return timed(merge);
    },
    get out() {
      out ??= timed(() => attn.matmul(merge(), w.WO));
      return out;
    },
    get checkDiff() {
      diff ??= timed(check);
      return diff;
    },
    get batched() {
      return timed(batched);
    },
  };
  return item;
}

/**
 * What the projections depend on: the state fields that are not the mask, scale,
 * temperature or softcap, and the resolved tokens and shapes. The mask is left out
 * of the state part but still counts through the tokens: padding adds two [PAD]
 * tokens, so a projection cached before it would have the wrong T.
 */
function projectionKey(s: State, cfg: Config): string {
  const rest = omitFields(s, [
    ...DISPLAY_FIELDS,
    "mask",
    "custom",
    "scaling",
    "temperature",
    "softcap",
  ]);
  const shapes = {
    T: cfg.T,
    dModel: cfg.dModel,
    dK: cfg.dK,
    dV: cfg.dV,
    heads: cfg.heads,
    kvHeads: cfg.kvHeads,
  };
  return JSON.stringify({
    rest,
    shapes,
    tokens: cfg.items.map((it) => it.tokens),
    trained: trainedKey(s),
  });
}

export function computeModel(attn: Attnkit, s: State, prev?: Model | null): Model {
  return timed(() => compute(attn, s, prev));
}

function compute(attn: Attnkit, s: State, prev?: Model | null): Model {
  const cfg = resolveConfig(s);
  const t0 = performance.now();
  const key = projectionKey(s, cfg);
  let weights: Weights, projected: Projected[];
  if (prev && prev.projectionKey === key) {
    weights = prev.weights;
    projected = prev.projected;
  } else {
    weights = makeWeights(s, cfg);
    projected = cfg.items.map((item, i) => project(attn, s, cfg, weights, item, i));
  }
  // A batch of two: the multi-head attention of both sentences in one call, X [2, T, d_model]
  // with keyLengths padding the shorter one.
  let batch: BatchResult | null | undefined;
  const batched = (): BatchResult | null => {
    if (batch !== undefined) return batch;
    batch = null;
    if (projected.length > 1 && weights.WK && weights.WV) {
      const X = new Float32Array(projected.length * cfg.T * cfg.dModel);
      projected.forEach((p, i) => X.set(p.X.data, i * cfg.T * cfg.dModel));
      const options = batchOptions(s, cfg);
      const out = attn.multiHeadAttention(
        { data: X, shape: [projected.length, cfg.T, cfg.dModel] },
        { W_Q: weights.WQ, W_K: weights.WK, W_V: weights.WV, W_O: weights.WO },
        headConfig(cfg),
        options,
      );
      batch = { out, keyLengths: cfg.items.map((it) => it.realLength), options };
    }
    return batch;
  };
  const items = projected.map((p, i) => attendItem(attn, s, cfg, weights, p, batched, i));
  return { cfg, weights, items, projected, projectionKey: key, computeMs: performance.now() - t0 };
}
