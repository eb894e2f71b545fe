// Step 5: add the mask M (0 = may attend, −∞ = may not).
import type { Matrix } from "attnkit";
import { fmt, maxAbs, shape } from "../format";
import { dur } from "../motion";
import { customCells } from "../state";
import { diverging } from "../draw/colors";
import { signedLegend } from "../draw/legend";
import { drawMatrix } from "../draw/heatmap";
import { commonTop } from "../draw/labels";
import { op } from "../draw/text";
import {
  at,
  editable,
  fitCell,
  headLabel,
  scaledName,
  scaledNameHtml,
  seedNote,
  tokenLabels,
  tokenName,
  type Scene,
  type SceneCtx,
} from "./common";

/** M as the core applied it: −∞ where the masked scores are −∞, else 0. */
function maskOf(masked: Matrix): Matrix {
  return {
    data: masked.data.map((v) => (v === -Infinity ? -Infinity : 0)),
    rows: masked.rows,
    cols: masked.cols,
  };
}

function reason(ctx: SceneCtx, r: number, c: number): string {
  const why: string[] = [];
  if (ctx.state.mask === "causal" && c > r) why.push("key j comes after query i (causal mask)");
  if (c >= ctx.item.item.realLength) why.push("key j is padding");
  if (ctx.state.mask === "custom" && customCells(ctx.state).has(`${r}.${c}`))
    why.push("blocked in the custom mask");
  return why.join("; ") || "—";
}

/**
 * The cells the mask kind blocks, for every query and key of the T x T grid. One
 * custom mask serves every sentence of a batch (padding is each sentence's own, from
 * its length), so a click starts from the kind shown, not from the clicked sentence's M.
 */
function blockedByKind(ctx: SceneCtx): Set<string> {
  const { T } = ctx.cfg;
  const blocked = new Set<string>();
  if (ctx.state.mask === "causal") {
    for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) blocked.add(`${i}.${j}`);
  } else if (ctx.state.mask === "custom") {
    for (const cell of customCells(ctx.state)) {
      const [i, j] = cell.split(".").map(Number);
      if (i < T && j < T) blocked.add(cell);
    }
  }
  return blocked;
}

/** A padding key stays masked whatever is clicked; any other cell toggles in the custom mask. */
function toggle(ctx: SceneCtx, r: number, c: number): void {
  if (c >= ctx.item.item.realLength) return;
  const blocked = blockedByKind(ctx);
  const key = `${r}.${c}`;
  if (blocked.has(key)) blocked.delete(key);
  else blocked.add(key);
  ctx.set({ mask: "custom", custom: [...blocked].join("_") });
}

export const maskScene: Scene = {
  title: "Mask",
  caption: (ctx) => {
    const { T } = ctx.cfg;
    const kinds: Record<string, string> = {
      none: "No mask: every token may attend to every token (M = 0).",
      causal:
        "Causal mask: token <i>i</i> may only attend to tokens j ≤ i, as when generating text one token at a time.",
      padding: "Padding mask: [PAD] keys are masked so real tokens ignore them.",
      custom: `Custom mask: the cells you clicked are −∞${ctx.model.items.length > 1 ? " (one mask for both sentences)" : ""}.`,
    };
    const seed = ctx.cfg.seedMode ? seedNote("the seed's M is the causal mask shown here.") : "";
    return `<p>${kinds[ctx.state.mask]} A cell of M is 0 (keep) or −∞ (drop): after the softmax, e<sup>−∞</sup> = 0. ${editable(ctx) ? "<b>Click cells of M</b> to build a custom mask" : "The trained model was trained with this causal mask"}${headLabel(ctx)}.</p>
      <p class="shapes">${scaledNameHtml(ctx)} + M: ${shape("T", "T")} + ${shape("T", "T")} → ${shape(T, T)}</p>${seed}`;
  },
  render: (g, ctx) => {
    const { T } = ctx.cfg;
    const tr = ctx.trace;
    const labels = tokenLabels(ctx.item);
    const M = maskOf(tr.maskedScores);
    const cell = fitCell(3 * T + 4, T, ctx, 260, 170);
    const top = commonTop(cell, labels);
    const m = Math.max(maxAbs(tr.scaledScores.data), 1e-6);
    const color = diverging(m);
    const A = drawMatrix(g, {
      top,
      id: "scaled5",
      title: scaledName(ctx),
      shape: shape(T, T),
      m: tr.scaledScores,
      x: 0,
      y: 0,
      cell,
      color,
      rowLabels: labels,
      colLabels: labels,
      rowAxis: "query i",
      tip: (r, c, v) =>
        `scaled score (“${tokenName(ctx, r)}” → “${tokenName(ctx, c)}”) = <b>${fmt(v, 4)}</b>`,
    });
    let x = A.width + cell * 0.4;
    op(g, x + cell * 0.6, A.gy + (T * cell) / 2, "+");
    x += cell * 1.6;
    const Mv = drawMatrix(g, {
      top,
      id: "M",
      title: "M",
      shape: shape(T, T),
      m: M,
      x,
      y: 0,
      cell,
      color: (v) => (v === -Infinity ? "url(#masked-hatch)" : "#ffffff"),
      colLabels: labels,
      colAxis: editable(ctx) ? "click to toggle" : undefined,
      digits: 0,
      stroke: "#d4d4d4",
      tip: (r, c, v) =>
        `M[${r}, ${c}] = <b>${fmt(v)}</b><br>${v === -Infinity ? reason(ctx, r, c) : "query i may attend to key j"}${editable(ctx) ? `<br><i>${c >= ctx.item.item.realLength ? "padding stays masked" : "click to toggle"}</i>` : ""}`,
      onCell: editable(ctx) ? (r, c) => toggle(ctx, r, c) : undefined,
    });
    x += Mv.width + cell * 0.4;
    op(g, x + cell * 0.6, A.gy + (T * cell) / 2, "=");
    x += cell * 1.6;
    const B = drawMatrix(g, {
      top,
      id: "masked",
      title: "masked scores",
      shape: shape(T, T),
      m: tr.maskedScores,
      x,
      y: 0,
      cell,
      color,
      colLabels: labels,
      rowLabels: labels,
      labelsRight: true,
      hidden: ctx.animate ? () => true : undefined,
      tip: (r, c, v) =>
        `${fmt(at(tr.scaledScores, r, c), 4)} + ${fmt(at(M, r, c))} = <b>${fmt(v, 4)}</b>${v === -Infinity ? `<br>${reason(ctx, r, c)}` : ""}`,
    });
    const height = Math.max(A.height, Mv.height, B.height);
    const lh = signedLegend(g, 8, height + 14, m, "score", true);
    let duration = 0;
    if (ctx.animate) {
      B.reveal((r, c) => dur(200 + (r + c) * 40), dur(250));
      duration = dur(200 + 2 * T * 40 + 250);
    }
    g.attr("data-mask-cells", M.data.filter((v) => v === -Infinity).length);
    return { width: x + B.width, height: height + 14 + lh, duration };
  },
};
