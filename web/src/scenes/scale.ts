// Step 4: divide by sqrt(d_k) (and by the temperature).
import { fmt, maxAbs, shape, sub } from "../format";
import { dur } from "../motion";
import { diverging } from "../draw/colors";
import { signedLegend } from "../draw/legend";
import { drawMatrix } from "../draw/heatmap";
import { commonTop } from "../draw/labels";
import { outlineRow } from "../draw/outline";
import { op } from "../draw/text";
import {
  at,
  fitCell,
  headLabel,
  seedNote,
  selectedQuery,
  tokenLabels,
  tokenName,
  editable,
  CLICK_FOR_WORK,
  scaledName,
  scaledNameHtml,
  tauText,
  workedSum,
  type Scene,
  type SceneCtx,
} from "./common";

export function scaleFormula(ctx: SceneCtx): string {
  const { dK } = ctx.cfg;
  const { scaling, temperature } = ctx.state;
  const trained = !editable(ctx);
  const base = scaling
    ? `1/√d<sub>k</sub> = 1/√${dK}${trained ? " (as the model was trained)" : ""}`
    : trained
      ? "1 (the model was trained without the scale)"
      : "1 (scaling off)";
  const temp = temperature !== 1 ? `, divided by the temperature ${tauText(ctx)}` : "";
  const cap =
    ctx.state.softcap > 0
      ? `; then soft-capped: s → c·tanh(s / c) with c = <b>${fmt(ctx.state.softcap, 1)}</b> (<code>options.softcap</code>), so no score exceeds ±${fmt(ctx.state.softcap, 1)}`
      : "";
  return `${base}${temp} → scale = <b>${fmt(ctx.trace.scale, 4)}</b>${cap}`;
}

export const scaleScene: Scene = {
  title: "Scale by 1/√dₖ",
  caption: (ctx) => {
    const { T } = ctx.cfg;
    const seed = ctx.cfg.seedMode
      ? seedNote(
          "the printed Q K<sup>T</sup>/√4 table is the printed Q K<sup>T</sup> halved (consistent with itself), so it inherits that table's errors; the numbers here follow from the computed scores.",
        )
      : "";
    return `<p>Dot products of d<sub>k</sub>-dimensional vectors grow like √d<sub>k</sub>; large scores saturate the softmax (see the saturation view).
      So every score is multiplied by ${scaleFormula(ctx)}${headLabel(ctx)}.</p>
      <p class="shapes">${scaledNameHtml(ctx)}: ${shape("T", "T")} → ${shape("T", "T")} = ${shape(T, T)}, element-wise</p>${seed}`;
  },
  render: (g, ctx) => {
    const { T } = ctx.cfg;
    const tr = ctx.trace;
    const i = selectedQuery(ctx);
    const labels = tokenLabels(ctx.item);
    // The gap between the matrices holds "× scale" at the .op font (22 px,
    // ~13 px a character): at small cells it sets the gap, and the cells
    // are fitted to what is left.
    const factor = `× ${fmt(tr.scale, 3)}`;
    const labelGap = factor.length * 13 + 16;
    let cell = fitCell(2 * T + 4, T, ctx, 220, 170);
    if (cell * 3 + 30 < labelGap) cell = fitCell(2 * T + 1, T, ctx, 190 + labelGap, 170);
    const gap = Math.max(cell * 3 + 30, labelGap);
    const top = commonTop(cell, labels);
    const m = Math.max(maxAbs(tr.rawScores.data), 1e-6);
    const color = diverging(m);
    const A = drawMatrix(g, {
      minTop: top,
      id: "raw4",
      title: "Q Kᵀ",
      shape: shape(T, T),
      m: tr.rawScores,
      x: 0,
      y: 0,
      cell,
      color,
      rowLabels: labels,
      colLabels: labels,
      rowAxis: "query i",
      colAxis: "key j",
      tip: (r, c, v) => `q${sub(r)} · k${sub(c)} = <b>${fmt(v, 4)}</b>`,
    });
    const x = A.width + gap;
    op(g, A.width + gap / 2, A.gy + (T * cell) / 2, factor);
    const B = drawMatrix(g, {
      minTop: top,
      id: "scaled",
      title: ctx.state.softcap > 0 ? `softcap(${scaledName(ctx)})` : scaledName(ctx),
      shape: shape(T, T),
      m: tr.scaledScores,
      x,
      y: 0,
      cell,
      color,
      colLabels: labels,
      rowLabels: labels,
      labelsRight: true,
      colAxis: "key j",
      hidden: ctx.animate ? () => true : undefined,
      tip: (r, c, v) =>
        `(q${sub(r)} · k${sub(c)}) × scale${ctx.state.softcap > 0 ? `, soft-capped at ${fmt(ctx.state.softcap, 1)}` : ""}<br>= ${ctx.state.softcap > 0 ? `${fmt(ctx.state.softcap, 1)}·tanh(${fmt(at(tr.rawScores, r, c), 4)} × ${fmt(tr.scale, 4)} / ${fmt(ctx.state.softcap, 1)})` : `${fmt(at(tr.rawScores, r, c), 4)} × ${fmt(tr.scale, 4)}`} = <b>${fmt(v, 4)}</b><br>(“${tokenName(ctx, r)}” → “${tokenName(ctx, c)}”)${ctx.state.softcap > 0 ? "" : CLICK_FOR_WORK}`,
      // With a soft cap the cell is c·tanh(...), no sum of products: its tooltip gives the formula.
      work:
        ctx.state.softcap > 0
          ? undefined
          : (r, c, v) =>
              workedSum(
                `(q${sub(r)} · k${sub(c)}) × scale, where scale = ${scaleFormula(ctx)}`,
                [
                  {
                    label: `q${sub(r)} · k${sub(c)} × scale:`,
                    a: at(tr.rawScores, r, c),
                    b: tr.scale,
                  },
                ],
                v,
              ),
    });
    outlineRow(g, A, i, T);
    outlineRow(g, B, i, T);
    const height = Math.max(A.height, B.height);
    const lh = signedLegend(g, 8, height + 14, m, "score (same scale for both)");
    let duration = 0;
    if (ctx.animate) {
      B.reveal((r) => dur(200 + r * 80), dur(300));
      duration = dur(200 + T * 80 + 300);
    }
    return { width: x + B.width, height: height + 14 + lh, duration };
  },
};
