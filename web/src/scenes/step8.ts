// Step 8: multi-head. One big projection, the reshape [T, h·d_k] -> [h, T, d_k],
// one attention map per head, concat (mergeHeads) and times W^O.
import { fmt, maxAbs, shape, sub } from "../format";
import { headSlice, kvGroup } from "../model";
import { dur } from "../motion";
import { diverging, headColor, sequential } from "../views/colors";
import { signedLegend, weightLegend } from "../views/legend";
import { drawMatrix, note, op } from "../views/matrix";
import { featureSpace, indexLabels, qkLabels, tokenLabels, tokenName, type Scene, type SceneCtx } from "./common";

function fit(units: number, ctx: SceneCtx, fixed: number, max = 30): number {
  return Math.max(3, Math.min(max, Math.floor((ctx.width - fixed) / Math.max(1, units))));
}

export const step8: Scene = {
  title: "Multi-head",
  caption: (ctx) => {
    const { T, dModel, dK, dV, heads, kvHeads } = ctx.cfg;
    const gqa = kvHeads !== heads ? ` With ${kvHeads} K/V head${kvHeads > 1 ? "s" : ""} (grouped-query attention), query heads share keys and values: head h reads K/V head ⌊h / ${heads / kvHeads}⌋.` : "";
    const ok = ctx.item.checkDiff <= 1e-4;
    const b = ctx.item.batched;
    const call = b
      ? `one batched call to <code>multiHeadAttention</code> on X ${shape(b.keyLengths.length, T, dModel)}${b.options.keyLengths ? ` with keyLengths [${b.keyLengths.join(", ")}] (the shorter sentence padded; its [PAD] keys masked)` : ""}`
      : "one call to <code>multiHeadAttention</code>";
    return `<p>One big projection, then a reshape: Q ${shape("T", "h·d_k")} → ${shape("h", "T", "d_k")} (<code>splitHeads</code>), so each of the <b>h = ${heads}</b> heads attends on its own slice and produces its own attention map.
      The head outputs are concatenated (<code>mergeHeads</code>) and projected by W<sup>O</sup>.${gqa}</p>
      <p class="shapes">${shape(T, `${heads}·${dK}`)} → ${shape(heads, T, dK)} → h maps ${shape(heads, T, T)} → ${shape(heads, T, dV)} → concat ${shape(T, heads * dV)} × W<sup>O</sup> ${shape(heads * dV, dModel)} → ${shape(T, dModel)}</p>
      <p class="${ok ? "check-ok" : "check-bad"}" data-testid="mha-check">${ok ? "✓" : "✗"} step by step = ${call}: max |Δ| = ${ctx.item.checkDiff.toExponential(1)}</p>`;
  },
  render: (g, ctx) => {
    const { T, dModel, dK, dV, heads } = ctx.cfg;
    const it = ctx.item;
    const labels = tokenLabels(it);
    const mQ = Math.max(maxAbs(it.Q.data), 1e-6);
    // Row A: Q and its heads.
    const fs = featureSpace(ctx);
    const named = ctx.cfg.featureNames;
    const cA = fit(2 * heads * dK + heads * 1.5 + 3, ctx, 200 + heads * 50);
    const colors = Array.from({ length: heads }, (_, h) => headColor(h));
    const Qv = drawMatrix(g, { id: "Qbig", title: "Q = X W^Q", shape: shape(T, heads * dK), m: it.Q, x: 0, y: 0, cell: cA, color: diverging(mQ),
      rowLabels: labels, colLabels: fs.qk && named ? named : indexLabels(heads * dK), bands: { every: dK, colors },
      tip: (r, c, v) => `Q[${r}, ${c}] = <b>${fmt(v, 4)}</b>: head ${Math.floor(c / dK)}, column ${c % dK}` });
    let maxX = 0;
    let x = Qv.width + cA;
    op(g, x + 30, Qv.gy + (T * cA) / 2, "→");
    note(g, x, Qv.gy + (T * cA) / 2 + 22, "splitHeads");
    x += 70;
    let duration = 0;
    let rowH = Qv.height;
    for (let h = 0; h < heads; h++) {
      const v = drawMatrix(g, { id: `Qh-${h}`, title: `Q${sub(h)}`, shape: shape(T, dK), m: headSlice(it.Qh, h), x, y: 0, cell: cA,
        color: diverging(mQ), colLabels: qkLabels(ctx, h), titleColor: colors[h], bands: { every: dK, colors: [colors[h]] },
        tip: (r, c, val) => `Q${sub(h)}[${r}, ${c}] = Q[${r}, ${h * dK + c}] = <b>${fmt(val, 4)}</b>` });
      if (ctx.animate) {
        const fromX = Qv.gx + h * dK * cA - (v.gx - x);
        v.g.attr("transform", `translate(${fromX},0)`).attr("opacity", 0.9)
          .transition().delay(dur(300 + h * 350)).duration(dur(700)).attr("transform", `translate(${x},0)`).attr("opacity", 1);
        duration = Math.max(duration, dur(300 + h * 350 + 700));
      }
      x += v.width + cA * 1.5;
      maxX = Math.max(maxX, x);
      rowH = Math.max(rowH, v.height);
    }
    // Row B: one attention map per head.
    let y = rowH + 24;
    const cB = fit(heads * T + heads * 2, ctx, heads * 70 + 40, 26);
    x = 0;
    let mapH = 0;
    for (let h = 0; h < heads; h++) {
      const tr = it.heads[h];
      const v = drawMatrix(g, { id: `headmap-${h}`, title: `head ${h}${ctx.cfg.kvHeads !== heads ? ` (kv ${kvGroup(ctx.cfg, h)})` : ""}`, shape: shape(T, T),
        m: tr.weights, x, y, cell: cB, color: sequential(), rowLabels: h === 0 ? labels : undefined, titleColor: colors[h],
        tip: (r, c, val) => `head ${h}: α${sub(r)}${sub(c)} = <b>${fmt(val, 4)}</b><br>“${tokenName(ctx, r)}” → “${tokenName(ctx, c)}”` });
      v.g.attr("data-head", h);
      if (ctx.animate) {
        v.g.attr("opacity", 0).transition().delay(dur(duration + h * 250)).duration(dur(400)).attr("opacity", 1);
      }
      x += v.width + cB * 2;
      maxX = Math.max(maxX, x);
      mapH = Math.max(mapH, v.height);
    }
    if (ctx.animate) duration += dur(heads * 250 + 400);
    // Row C: head outputs -> concat -> times W^O.
    y += mapH + 24;
    const mO = Math.max(maxAbs(it.merged.data), maxAbs(it.out.data), maxAbs(ctx.model.weights.WO.data), 1e-6);
    const cC = fit(2 * heads * dV + dModel + 12, ctx, 200, 26);
    const vNames = fs.v && named ? named : null;
    const Mv = drawMatrix(g, { id: "concat", title: "concat(heads)", shape: shape(T, heads * dV), m: it.merged, x: 0, y, cell: cC, color: diverging(mO),
      rowLabels: labels, colLabels: vNames ?? indexLabels(heads * dV), bands: { every: dV, colors },
      tip: (r, c, v) => `head ${Math.floor(c / dV)} output[${r}, ${c % dV}] = <b>${fmt(v, 4)}</b> (mergeHeads)` });
    x = Mv.width + cC * 0.4;
    op(g, x + cC * 0.6 + 4, Mv.gy + (T * cC) / 2, "×");
    x += cC * 1.6 + 8;
    const Wo = drawMatrix(g, { id: "WO", title: "W^O", shape: shape(heads * dV, dModel), m: ctx.model.weights.WO, x, y, cell: cC, color: diverging(mO),
      colLabels: vNames ?? indexLabels(dModel), rowLabels: vNames ?? undefined,
      tip: (r, c, v) => `W<sup>O</sup>[${r}, ${c}] = <b>${fmt(v, 4)}</b><br><i>click to edit</i>`,
      onCell: (r, c, e) => ctx.edit("WO", r, c, ctx.model.weights.WO.data[r * dModel + c], e) });
    x += Wo.width + cC * 0.4;
    op(g, x + cC * 0.6 + 4, Mv.gy + (T * cC) / 2, "=");
    x += cC * 1.6 + 8;
    // In a batch, the output shown is this item's slice of the one batched call.
    const b = it.batched;
    const out = b ? { data: b.out.data.subarray(ctx.itemIndex * T * dModel, (ctx.itemIndex + 1) * T * dModel), rows: T, cols: dModel } : it.out;
    const Ov = drawMatrix(g, { id: "out", title: b ? "output (batched call)" : "output", shape: shape(T, dModel), m: out, x, y, cell: cC, color: diverging(mO),
      colLabels: vNames ?? indexLabels(dModel), rowLabels: labels, labelsRight: true,
      tip: (r, c, v) => `out[${r}, ${c}] = concat row ${r} · W<sup>O</sup>[:, ${c}] = <b>${fmt(v, 4)}</b>${b ? `<br>from multiHeadAttention on the batch [${b.keyLengths.length} × ${T} × ${dModel}], item ${ctx.itemIndex}<br>step by step: ${fmt(it.out.data[r * dModel + c], 4)}` : ""}` });
    if (ctx.animate) {
      for (const v of [Mv, Wo, Ov]) v.g.attr("opacity", 0).transition().delay(dur(duration)).duration(dur(400)).attr("opacity", 1);
      duration += dur(400);
    }
    let bottom = y + Math.max(Mv.height, Wo.height, Ov.height) + 14;
    if (b) {
      // The padding mask of this item, as the batched call applies it (keyLengths).
      const n = b.keyLengths[ctx.itemIndex];
      const mask = { data: Float32Array.from({ length: T }, (_, j) => (j < n ? 1 : 0)), rows: 1, cols: T };
      const cP = Math.max(10, Math.min(26, cB));
      const Pv = drawMatrix(g, { id: "padmask", title: `key padding mask: keyLengths[${ctx.itemIndex}] = ${n}`, shape: shape(1, T), m: mask, x: 0, y: bottom,
        cell: cP, color: (v) => (v ? "#ffffff" : "url(#masked-hatch)"), stroke: "#d4d4d4", digits: 0, colLabels: labels,
        tip: (_r, c, v) => (v ? `key ${c} (“${tokenName(ctx, c)}”) is attended` : `key ${c} is padding: masked (−∞) for every query`) });
      bottom += Pv.height + 14;
    }
    let lh = signedLegend(g, 8, bottom, Math.max(mQ, mO), "value");
    lh = Math.max(lh, weightLegend(g, 260, bottom));
    return { width: Math.max(x + Ov.width, maxX), height: bottom + lh, duration };
  },
};
