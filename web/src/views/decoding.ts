// Token-by-token decoding with the KV cache (seed 001 "utilisation"): each step
// appends one K/V row to the cache, computes one query row against it, and shows it
// equals the same row of the full causal computation.
import type { Attnkit, Matrix } from "attnkit";
import { fmt, maxAbs, shape, sub } from "../format";
import { headSlice, kvGroup, timed } from "../model";
import { dur } from "../motion";
import { tokenLabels, tokenName, type Scene, type SceneCtx } from "../scenes/common";
import { diverging, sequential } from "../draw/colors";
import { signedLegend, weightLegend } from "../draw/legend";
import { drawMatrix } from "../draw/heatmap";
import { outlineRow } from "../draw/outline";

export interface Decoded {
  /** Tokens decoded so far. */
  t: number;
  /** Output rows from KVCache.attend [t, h*d_v]. */
  outputs: Matrix;
  /** The full causal computation [T, h*d_v] (multiHeadAttentionQKV, causal). */
  full: Matrix;
  /** The newest query's weights over the cache (selected head) [1, t]. */
  weights: Matrix | null;
  keys: Matrix | null;
  values: Matrix | null;
  maxDiff: number;
}

function rowTensor(m: Matrix, r: number) {
  return { data: m.data.slice(r * m.cols, (r + 1) * m.cols), shape: [1, 1, m.cols] };
}

function capOf(ctx: SceneCtx): { softcap?: number } {
  return ctx.state.softcap > 0 ? { softcap: ctx.state.softcap } : {};
}

// The caption and the drawing share one decoding run per model, step and head.
const memo = new WeakMap<object, Map<string, Decoded>>();

export function decode(attn: Attnkit, ctx: SceneCtx): Decoded {
  let byKey = memo.get(ctx.item);
  if (!byKey) memo.set(ctx.item, (byKey = new Map()));
  const key = `${ctx.state.decodeStep}:${ctx.state.head}`;
  let d = byKey.get(key);
  if (!d) byKey.set(key, (d = timed(() => runDecode(attn, ctx))));
  return d;
}

function runDecode(attn: Attnkit, ctx: SceneCtx): Decoded {
  const { T, heads, kvHeads, dK, dV, scale } = ctx.cfg;
  const it = ctx.item;
  const t = Math.min(Math.max(0, ctx.state.decodeStep), T);
  const config = { numHeads: heads, numKvHeads: kvHeads, dK, dV };
  const bshd = (m: Matrix) => ({ data: m.data, shape: [1, T, m.cols] });
  const fullT = attn.multiHeadAttentionQKV(bshd(it.Q), bshd(it.K), bshd(it.V), config, {
    ...capOf(ctx),
    scale,
    causal: true,
  });
  const full = { data: fullT.data, rows: T, cols: heads * dV };
  const outputs = { data: new Float32Array(t * heads * dV), rows: t, cols: heads * dV };
  let weights: Matrix | null = null,
    keys: Matrix | null = null,
    values: Matrix | null = null;
  const cache = attn.createKVCache({ batch: 1, numKvHeads: kvHeads, dK, dV, capacity: T });
  try {
    for (let s = 0; s < t; s++) {
      cache.append(rowTensor(it.K, s), rowTensor(it.V, s));
      const out = cache.attend(rowTensor(it.Q, s), heads, { ...capOf(ctx), scale });
      outputs.data.set(out.data, s * heads * dV);
    }
    if (t > 0) {
      const h = Math.min(ctx.state.head, heads - 1);
      const g = kvGroup(ctx.cfg, h);
      keys = cache.keys(0, g);
      values = cache.values(0, g);
      const q = headSlice(it.Qh, h);
      const qRow = { data: q.data.slice((t - 1) * dK, t * dK), rows: 1, cols: dK };
      weights = attn.traceQKV(qRow, keys, values, { ...capOf(ctx), scale }).weights;
    }
  } finally {
    cache.dispose();
  }
  let maxDiff = 0;
  for (let i = 0; i < outputs.data.length; i++)
    maxDiff = Math.max(maxDiff, Math.abs(outputs.data[i] - full.data[i]));
  return { t, outputs, full, weights, keys, values, maxDiff };
}

export const decodingView: Scene = {
  title: "Decoding with a KV cache",
  caption: (ctx) => {
    const { T } = ctx.cfg;
    const t = Math.min(ctx.state.decodeStep, T);
    const d = decode(ctx.attn, ctx);
    const ok = d.maxDiff <= 1e-4;
    const notes =
      ctx.state.mask === "padding" || ctx.state.mask === "custom"
        ? " (decoding is causal; the padding/custom mask is not applied here)"
        : "";
    return `<p>When generating, tokens arrive one at a time. Step <i>t</i> appends k<sub>t</sub>, v<sub>t</sub> to the cache and attends with q<sub>t</sub> only:
      <b>α<sub>tj</sub> = softmax<sub>j≤t</sub>(q<sub>t</sub>·k<sub>j</sub>/√d<sub>k</sub>)</b>, <b>head(x<sub>t</sub>) = Σ<sub>j≤t</sub> α<sub>tj</sub> v<sub>j</sub></b>${notes}.</p>
      <p><button type="button" class="btn" data-decode="reset" data-testid="decode-reset">reset</button>
      <button type="button" class="btn" data-decode="step" data-testid="decode-step" ${t >= T ? "disabled" : ""}>step ▶</button>
      <button type="button" class="btn" data-decode="end" data-testid="decode-end" ${t >= T ? "disabled" : ""}>run to end ▶▶</button>
      <span data-testid="decode-pos">${t} / ${T} tokens decoded${t > 0 ? `: “${tokenName(ctx, t - 1)}”` : ""}</span></p>
      <p class="shapes">cache K ${shape(t, "kvh·d_k")}, V ${shape(t, "kvh·d_v")}; query ${shape(1, "h·d_k")} → output ${shape(1, "h·d_v")}${t < T ? `; <span data-testid="decode-pending">the grey rows of the decoded rows are not decoded yet</span>` : ""}</p>
      ${t > 0 ? `<p class="${ok ? "check-ok" : "check-bad"}" data-testid="decode-check">${ok ? "✓" : "✗"} ${t === 1 ? "the decoded row equals row 0" : `the ${t} decoded rows equal rows 0–${t - 1}`} of the full causal computation: max |Δ| = ${d.maxDiff.toExponential(1)}</p>` : ""}`;
  },
  render: (g, ctx) => {
    const { T, heads, dK, dV } = ctx.cfg;
    const d = decode(ctx.attn, ctx);
    const labels = tokenLabels(ctx.item);
    const cell = Math.max(
      4,
      Math.min(26, Math.floor((ctx.width - 300) / Math.max(dK + dV + T + 4, 2 * heads * dV + 4))),
    );
    const m = Math.max(maxAbs(ctx.item.K.data), maxAbs(ctx.item.V.data), maxAbs(d.full.data), 1e-6);
    const color = diverging(m);
    const h = Math.min(ctx.state.head, heads - 1);
    let x = 0;
    const y = 0;
    let height = 0;
    if (d.keys && d.values && d.weights) {
      const Kc = drawMatrix(g, {
        id: "cacheK",
        title: `K cache${heads > 1 ? ` (kv ${kvGroup(ctx.cfg, h)})` : ""}`,
        shape: shape(d.t, dK),
        m: d.keys,
        x,
        y,
        cell,
        color,
        rowLabels: labels.slice(0, d.t),
        hidden: ctx.animate ? (r) => r === d.t - 1 : undefined,
        tip: (r, c, v) => `cached k${sub(r)}[${c}] = <b>${fmt(v, 4)}</b>`,
      });
      // Room for the titles, which start after the row labels (at gx).
      x += Math.max(Kc.width, Kc.gx - x + 130) + 14;
      const Vc = drawMatrix(g, {
        id: "cacheV",
        title: "V cache",
        shape: shape(d.t, dV),
        m: d.values,
        x,
        y,
        cell,
        color,
        tip: (r, c, v) => `cached v${sub(r)}[${c}] = <b>${fmt(v, 4)}</b>`,
      });
      x += Math.max(Vc.width, Vc.gx - x + 90) + 14;
      const Wr = drawMatrix(g, {
        id: "decodeWeights",
        title: `α of q${sub(d.t - 1)}`,
        shape: shape(1, d.t),
        m: d.weights,
        x,
        y,
        cell,
        color: sequential(),
        colLabels: labels.slice(0, d.t),
        tip: (_r, c, v) => `α${sub(d.t - 1)}${sub(c)} = <b>${fmt(v, 4)}</b>`,
      });
      if (ctx.animate) Kc.reveal((r) => (r === d.t - 1 ? 0 : -1), dur(400));
      x += Wr.width + 24;
      height = Math.max(Kc.height, Vc.height, Wr.height) + 16;
    }
    x = 0;
    const y2 = height;
    const O = drawMatrix(g, {
      id: "decoded",
      title: "decoded rows (KVCache.attend)",
      shape: shape(T, heads * dV),
      m: {
        data: Float32Array.from({ length: T * heads * dV }, (_, k) =>
          k < d.outputs.data.length ? d.outputs.data[k] : NaN,
        ),
        rows: T,
        cols: heads * dV,
      },
      x,
      y: y2,
      cell,
      color: (v) => (Number.isNaN(v) ? "#f3f3f3" : color(v)),
      rowLabels: labels,
      tip: (r, c, v) =>
        Number.isNaN(v)
          ? "not decoded yet"
          : `step ${r}: output[${c}] = <b>${fmt(v, 4)}</b><br>full causal: ${fmt(d.full.data[r * heads * dV + c], 4)}`,
    });
    // Past the title's end too (a narrow stage's cells leave it wider than the matrix).
    const titleEnd = (O.g.node() as SVGGElement | null)?.getBBox?.();
    x += Math.max(O.width + 14, 250, titleEnd ? titleEnd.x + titleEnd.width + 14 : 0);
    const F = drawMatrix(g, {
      id: "fullCausal",
      title: "full causal (multiHeadAttentionQKV)",
      shape: shape(T, heads * dV),
      m: d.full,
      x,
      y: y2,
      cell,
      color,
      rowLabels: labels,
      tip: (r, c, v) => `row ${r} of the full causal computation, [${c}] = <b>${fmt(v, 4)}</b>`,
    });
    if (d.t > 0) {
      outlineRow(g, O, d.t - 1, heads * dV);
      outlineRow(g, F, d.t - 1, heads * dV);
    }
    height = y2 + Math.max(O.height, F.height);
    let lh = signedLegend(g, 8, height + 14, m, "value");
    // The weights' colour scale only when a row of weights is drawn (t > 0).
    if (d.weights) lh = Math.max(lh, weightLegend(g, 260, height + 14));
    return { width: x + F.width, height: height + 14 + lh, duration: 0 };
  },
};
