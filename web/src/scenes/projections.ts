// Step 2: X W^Q -> Q, X W^K -> K, X W^V -> V; one row times the matrix, then the whole product.
import type { Matrix } from "attnkit";
import { fmt, maxAbs, shape, sub } from "../format";
import { kvGroup } from "../model";
import { dur } from "../motion";
import { SEED001 } from "../presets";
import { diverging } from "../draw/colors";
import { signedLegend } from "../draw/legend";
import { drawMatrix } from "../draw/heatmap";
import { commonTop } from "../draw/labels";
import { outlineRow } from "../draw/outline";
import { op } from "../draw/text";
import type { MatrixView, SvgGroup } from "../draw/types";
import {
  at,
  CLICK_FOR_WORK,
  dimLabels,
  dotTerms,
  expandDot,
  fitCell,
  headLabel,
  indexLabels,
  qkLabels,
  vLabels,
  row,
  seedNote,
  selectedQuery,
  tokenLabels,
  vec,
  workedSum,
  type Scene,
  type SceneCtx,
  type SceneResult,
  editable,
  sweepColumns,
} from "./common";

const ROLE_NAME = { Q: "query", K: "key", V: "value" } as const;

/** Columns [c0, c0 + n) of W: head h's slice of a big projection (a re-layout for display). */
function columns(W: Matrix, c0: number, n: number): Matrix {
  const d = new Float32Array(W.rows * n);
  for (let r = 0; r < W.rows; r++)
    for (let c = 0; c < n; c++) d[r * n + c] = W.data[r * W.cols + c0 + c];
  return { data: d, rows: W.rows, cols: n };
}

function roleInfo(ctx: SceneCtx) {
  const role = ctx.state.role;
  const h = ctx.state.head;
  const g = kvGroup(ctx.cfg, h);
  const { dK, dV } = ctx.cfg;
  const width = role === "V" ? dV : dK;
  const headIndex = role === "Q" ? h : g;
  const W =
    role === "Q"
      ? ctx.model.weights.WQ
      : role === "K"
        ? ctx.model.weights.WK
        : ctx.model.weights.WV;
  const result = role === "Q" ? ctx.trace.Q : role === "K" ? ctx.trace.K : ctx.trace.V;
  return { role, W, width, headIndex, result, name: `W${role}` };
}

/** Seed 001: K and V are printed, not computed from X. */
function drawPrinted(
  g: SvgGroup,
  ctx: SceneCtx,
  info: ReturnType<typeof roleInfo>,
  labels: string[],
  outLabels: string[],
): SceneResult {
  const { T } = ctx.cfg;
  const cell = fitCell(info.width, T, ctx, 140, 160);
  const m = maxAbs(info.result.data);
  const v = drawMatrix(g, {
    id: info.role,
    title: `${info.role} (printed in the worked example)`,
    shape: shape(T, info.width),
    m: info.result,
    x: 0,
    y: 0,
    cell,
    color: diverging(m),
    rowLabels: labels,
    colLabels: outLabels,
    tip: (r, c, val) =>
      `${info.role.toLowerCase()}${sub(r)}[${c}] = <b>${fmt(val, 4)}</b><br>printed by the seed (${info.role === "K" ? "its K^T, transposed" : "its V"})`,
  });
  const lh = signedLegend(g, 8, v.height + 14, m, "value");
  return { width: v.width, height: v.height + 14 + lh, duration: 0 };
}

/** One row times the matrix: x_i against each column of W fills q_i; then the whole product. Returns its duration. */
function animateProduct(
  g: SvgGroup,
  ctx: SceneCtx,
  views: { X: MatrixView; Wv: MatrixView; R: MatrixView },
  i: number,
  width: number,
): number {
  const { T, dModel } = ctx.cfg;
  const { X, Wv, R } = views;
  const step = 380;
  const rowHl = outlineRow(g, X, i, dModel);
  const rest = sweepColumns(g, Wv, dModel, width, step);
  rowHl.transition().delay(dur(rest)).duration(dur(200)).attr("opacity", 0).remove();
  R.reveal(
    (r, c) => (r === i ? dur(c * step + step * 0.5) : dur(rest + r * 50)),
    (r) => (r === i ? dur(200) : dur(250)),
  );
  return dur(rest + T * 50 + 250);
}

export const projectionsScene: Scene = {
  title: "Projections Q, K, V",
  caption: (ctx) => {
    const { T, dModel, dK, dV, heads, kvHeads } = ctx.cfg;
    const r = roleInfo(ctx);
    const buttons = (["Q", "K", "V"] as const)
      .map(
        (x) =>
          `<button type="button" class="chip${x === r.role ? " on" : ""}" data-set="role" data-value="${x}" data-testid="role-${x}" aria-pressed="${x === r.role}">${x} = X W<sup>${x}</sup></button>`,
      )
      .join(" ");
    const big =
      heads > 1
        ? ` The big projections are W<sup>Q</sup> ${shape(dModel, `${heads}·${dK}`)}, W<sup>K</sup> ${shape(dModel, `${kvHeads}·${dK}`)}, W<sup>V</sup> ${shape(dModel, `${kvHeads}·${dV}`)}; this shows the columns of one head${headLabel(ctx)}.`
        : "";
    let seed = "";
    if (ctx.cfg.seedMode) {
      const q1 = row(ctx.item.Q, 1);
      seed =
        seedNote(`q<sub>0</sub> = x<sub>0</sub> W<sup>Q</sup> = ${vec(row(ctx.item.Q, 0))} matches the printed q<sub>0</sub> = ${vec(SEED001.Q[0])}.
        The printed q<sub>1</sub>…q<sub>5</sub> do not follow from the printed X and W<sup>Q</sup> (e.g. printed q<sub>1</sub> = ${vec(SEED001.Q[1])}, the core computes ${vec(q1)}): here Q is computed.
        The seed prints K<sup>T</sup> and V but not W<sup>K</sup> and W<sup>V</sup>, so K and V are taken as printed.`);
    }
    return `<p>${buttons}</p><p>Every token's vector is multiplied by three weight matrices: <b>q<sub>i</sub> = x<sub>i</sub> W<sup>Q</sup></b>, <b>k<sub>i</sub> = x<sub>i</sub> W<sup>K</sup></b>, <b>v<sub>i</sub> = x<sub>i</sub> W<sup>V</sup></b>
      (the ${ROLE_NAME[r.role]}: ${r.role === "Q" ? "what the token is looking for" : r.role === "K" ? "what the token offers to be found by" : "what the token passes on"}).${big}</p>
      <p class="shapes">${r.role} = X W<sup>${r.role}</sup>: ${shape("T", "d_model")} × ${shape("d_model", r.role === "V" ? "d_v" : "d_k")} → ${shape("T", r.role === "V" ? "d_v" : "d_k")} = ${shape(T, dModel)} × ${shape(dModel, r.width)} → ${shape(T, r.width)}</p>${seed}`;
  },
  render: (g, ctx) => {
    const { T, dModel } = ctx.cfg;
    const it = ctx.item;
    const info = roleInfo(ctx);
    const i = selectedQuery(ctx);
    const labels = tokenLabels(it);
    const sup = info.role;
    const outLabels = info.W
      ? info.role === "V"
        ? vLabels(ctx, info.headIndex)
        : qkLabels(ctx, info.headIndex)
      : indexLabels(info.width);
    if (!info.W) return drawPrinted(g, ctx, info, labels, outLabels);
    const W = columns(info.W, info.headIndex * info.width, info.width);
    const cell = fitCell(dModel + 2 * info.width + 4, Math.max(T, dModel), ctx, 150, 150);
    const top = commonTop(cell, dimLabels(ctx.cfg, dModel), outLabels);
    // W has its own colour scale: random weights are much smaller than X's features.
    const m = Math.max(maxAbs(it.X.data), maxAbs(info.result.data), 1e-6);
    const color = diverging(m);
    const mW = Math.max(maxAbs(W.data), 1e-6);
    const X = drawMatrix(g, {
      minTop: top,
      id: "X2",
      title: "X",
      shape: shape(T, dModel),
      m: it.X,
      x: 0,
      y: 0,
      cell,
      color,
      rowLabels: labels,
      colLabels: dimLabels(ctx.cfg, dModel),
      rowAxis: "token i",
      tip: (r, c, v) => `x${sub(r)}[${c}] = <b>${fmt(v, 4)}</b>`,
    });
    let x = X.width + cell * 0.4;
    op(g, x + cell * 0.6, X.gy + (T * cell) / 2, "×");
    x += cell * 1.6;
    const Wv = drawMatrix(g, {
      minTop: top,
      id: `W${sup}`,
      title: `W^${sup}${ctx.cfg.heads > 1 ? `_${info.headIndex}` : ""}`,
      shape: shape(dModel, info.width),
      m: W,
      x,
      y: 0,
      cell,
      color: diverging(mW),
      colLabels: outLabels,
      rowLabels: ctx.cfg.featureNames ? dimLabels(ctx.cfg, dModel) : undefined,
      tip: (r, c, v) =>
        `W<sup>${sup}</sup>[${r}, ${c}] = <b>${fmt(v, 4)}</b><br>${editable(ctx) ? "<i>click to edit</i>" : "trained"}`,
      onCell: editable(ctx)
        ? (r, c, e) =>
            ctx.edit(info.name, r, info.headIndex * info.width + c, W.data[r * W.cols + c], e)
        : undefined,
    });
    x += Wv.width + cell * 0.4;
    op(g, x + cell * 0.6, X.gy + (T * cell) / 2, "=");
    x += cell * 1.6;
    const letter = sup.toLowerCase();
    const R = drawMatrix(g, {
      minTop: top,
      id: sup,
      title: ctx.cfg.heads > 1 ? `${sup}_${info.headIndex}` : sup,
      shape: shape(T, info.width),
      m: info.result,
      x,
      y: 0,
      cell,
      color,
      rowLabels: labels,
      colLabels: outLabels,
      labelsRight: true,
      hidden: ctx.animate ? () => true : undefined,
      tip: (r, c, v) =>
        `${letter}${sub(r)}[${c}] = x${sub(r)} · W<sup>${sup}</sup>[:, ${c}]<br>= ${expandDot(
          row(it.X, r),
          Array.from({ length: W.rows }, (_, k) => at(W, k, c)),
          v,
        )}${CLICK_FOR_WORK}`,
      work: (r, c, v) =>
        workedSum(
          `${letter}${sub(r)}[${c}] = x${sub(r)} · W<sup>${sup}</sup>[:, ${c}] = Σ<sub>k</sub> x${sub(r)}[k] W<sup>${sup}</sup>[k, ${c}]`,
          dotTerms(
            row(it.X, r),
            Array.from({ length: W.rows }, (_, k) => at(W, k, c)),
          ),
          v,
        ),
    });
    const height = Math.max(X.height, Wv.height, R.height);
    const lh = Math.max(
      signedLegend(g, 8, height + 14, m, `X and ${sup}`),
      signedLegend(g, 250, height + 14, mW, `W${sup} (its own colour scale)`),
    );
    const duration = ctx.animate ? animateProduct(g, ctx, { X, Wv, R }, i, info.width) : 0;
    return { width: x + R.width, height: height + 14 + lh, duration };
  },
};
