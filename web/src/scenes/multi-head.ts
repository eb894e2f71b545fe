// Step 8: multi-head. One big projection, the reshape [T, h·d_k] -> [h, T, d_k],
// one attention map per head, concat (mergeHeads) and times W^O. The head slices and the
// maps wrap into a grid, so that the scene fits the stage's width for any number of heads.
import { stageWidth } from "../dom";
import { fmt, maxAbs, shape, sub } from "../format";
import { headSlice, kvGroup, type BatchResult } from "../model";
import { dur } from "../motion";
import { diverging, headColor, sequential } from "../draw/colors";
import { signedLegend, weightLegend } from "../draw/legend";
import { drawMatrix } from "../draw/heatmap";
import { labelSpace } from "../draw/labels";
import { note, op, textWidth } from "../draw/text";
import type { MatrixView, SvgGroup } from "../draw/types";
import {
  CLICK_FOR_WORK,
  featureSpace,
  headName,
  headNamesHtml,
  indexLabels,
  qkLabels,
  tokenLabels,
  tokenName,
  type Scene,
  type SceneCtx,
  editable,
  workedSum,
} from "./common";

/** Space between head slices, between maps, for the "→ splitHeads" arrow and the operators, between rows. */
const SLICE_GAP = 12;
const MAP_GAP = 18;
const ARROW = 84;
const OP = 34;
const ROW_GAP = 22;
/** A slice's title (Q₁₂) needs about this much width; a map's title sits this far above its cells. */
const SLICE_MIN = 22;
const MAP_TOP = 22;
const MAP_MIN = 30;
const LEGEND_H = 54;
/** A line of note text. */
const NOTE_H = 24;
/** Below this width the scene is laid out narrow (Cells.narrow). */
const NARROW = 600;
/** Narrow: labels of at least this many px (thinned where the cells are smaller). */
const NARROW_LABEL_FONT = 9;

/** A map's title that fits `room` px: "head 5 · kv 1", else "h5·kv1", else "h5". */
function mapTitle(ctx: SceneCtx, h: number, room: number): string {
  const gqa = ctx.cfg.kvHeads !== ctx.cfg.heads;
  const g = kvGroup(ctx.cfg, h);
  const titles = [`head ${h}${gqa ? ` · kv ${g}` : ""}`, `h${h}${gqa ? `·kv${g}` : ""}`, `h${h}`];
  return titles.find((t) => textWidth(t) <= room) ?? titles[2];
}

/** Items per row of a grid of n: n, ⌈n/2⌉, ⌈n/3⌉, ... (one, two, three, ... rows). */
function perRowChoices(n: number): number[] {
  const out: number[] = [];
  for (let rows = 1; rows <= n; rows++) {
    const p = Math.ceil(n / rows);
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

/**
 * The fewest grid rows whose cell size, the largest fitting `width(cell, perRow) <= W`
 * up to `max`, is at least `min`; if none, the arrangement with the largest cell.
 */
function fitGrid(
  n: number,
  W: number,
  max: number,
  min: number,
  width: (cell: number, perRow: number) => number,
): { perRow: number; cell: number } {
  let best = { perRow: n, cell: 1 };
  for (const perRow of perRowChoices(n)) {
    let cell = max;
    while (cell > 1 && width(cell, perRow) > W) cell--;
    if (cell >= min) return { perRow, cell };
    if (cell > best.cell) best = { perRow, cell };
  }
  return best;
}

/** Cell sizes: row A (Q and its slices, pA a row), row B (the maps, pB a row), row C (concat and output; W^O's own). */
interface Cells {
  cA: number;
  pA: number;
  cB: number;
  pB: number;
  cC: number;
  /** The output's cells: the concat's, or (narrow, each on its own line) its own. */
  cO: number;
  cW: number;
  /**
   * A narrow stage (a phone): Q above its slices, and concat, W^O and the output one
   * above the other, so that each takes the whole width and stays readable unscaled.
   */
  narrow: boolean;
}

interface Labels {
  tokens: string[];
  qCols: string[];
  /** Every slice's column labels (for the space they need). */
  sliceCols: string[];
  vCols: string[];
  woRows: string[] | undefined;
  woCols: string[];
}

/** Where everything goes for given cell sizes: the tops of the grids, the rows' y, the whole width and height. */
function geometry(ctx: SceneCtx, L: Labels, c: Cells) {
  const { T, dModel, dK, dV, heads } = ctx.cfg;
  const labelW = labelSpace({ rowLabels: L.tokens, cell: 10 })[0];
  const woLabelW = L.woRows ? labelSpace({ rowLabels: L.woRows, cell: 10 })[0] : 0;
  // Row A: Q's grid and the first row of slices line up; a slice has no shape line (the note above gives it).
  const sliceLabelsTop = labelSpace({ colLabels: L.sliceCols, cell: c.cA })[1] - 14;
  const gridTop = Math.max(
    labelSpace({ rowLabels: L.tokens, colLabels: L.qCols, cell: c.cA })[1],
    18 + sliceLabelsTop,
  );
  const sliceTop = gridTop - 18;
  const sliceH = sliceTop + T * c.cA + 10;
  const rowsA = Math.ceil(heads / c.pA);
  const slotW = Math.max(dK * c.cA, SLICE_MIN) + SLICE_GAP;
  // The slices' grid: right of Q and its arrow, or (narrow) under Q and its note.
  const sliceX = c.narrow ? labelW : labelW + heads * dK * c.cA + ARROW;
  const sliceY = c.narrow ? gridTop + T * c.cA + 2 + NOTE_H : 18;
  const heightA = Math.max(
    gridTop + T * c.cA + 2,
    sliceY + (rowsA - 1) * sliceH + sliceTop + T * c.cA + 2,
  );
  const widthA = c.narrow
    ? Math.max(labelW + heads * dK * c.cA, sliceX + c.pA * slotW - SLICE_GAP)
    : sliceX + c.pA * slotW - SLICE_GAP;
  // Row B: a note (two lines when narrow), then the maps.
  const yB = heightA + ROW_GAP + 12 + (c.narrow ? NOTE_H - 8 : 0);
  const mapH = MAP_TOP + T * c.cB + 12;
  const rowsB = Math.ceil(heads / c.pB);
  const mapW = Math.max(T * c.cB, MAP_MIN);
  const widthB = labelW + c.pB * mapW + (c.pB - 1) * MAP_GAP;
  // Row C: concat × W^O = output, their grids' tops aligned.
  const yC = yB + rowsB * mapH - 6 + ROW_GAP;
  const topC = Math.max(
    labelSpace({ rowLabels: L.tokens, colLabels: L.vCols, cell: c.cC })[1],
    labelSpace({ colLabels: L.woCols, cell: c.cW })[1],
    labelSpace({ colLabels: L.woCols, cell: c.narrow ? c.cO : c.cC })[1],
  );
  // Narrow: concat, then "×" W^O, then "=" the output, each under the one before.
  const concatH = topC + T * c.cC + 2;
  const woH = topC + heads * dV * c.cW + 2;
  const yWO = c.narrow ? yC + concatH + ROW_GAP : yC;
  const yOut = c.narrow ? yWO + woH + ROW_GAP : yC;
  const heightC = c.narrow
    ? yOut - yC + topC + T * c.cO + 2
    : topC + Math.max(T * c.cC, heads * dV * c.cW) + 2;
  const widthC = c.narrow
    ? Math.max(labelW + heads * dV * c.cC, woLabelW + dModel * c.cW, dModel * c.cO + labelW)
    : 2 * labelW + woLabelW + (heads * dV + dModel) * c.cC + dModel * c.cW + 2 * OP + 12;
  return {
    labelW,
    gridTop,
    sliceTop,
    sliceH,
    slotW,
    sliceX,
    sliceY,
    heightA,
    yWO,
    yOut,
    yB,
    mapW,
    mapH,
    yC,
    topC,
    width: Math.max(widthA, widthB, widthC),
    height: yC + heightC + 14 + (c.narrow ? 3 : 1) * LEGEND_H,
  };
}

/**
 * Cell sizes that fit the stage's width (always: many heads wrap into rows) and, as far
 * as cells stay readable, the height left in the viewport.
 */
function layout(ctx: SceneCtx, L: Labels): Cells {
  const { T, dModel, dK, dV, heads } = ctx.cfg;
  // The stage may be narrower than the width scenes are given (they are scaled down to fit
  // it): step 8 lays out for the stage itself, so that a phone shows it unscaled.
  // (The stage shows it unscaled if it is at most 32 px narrower: render.ts, sizeSvg.)
  const W = Math.min(ctx.width - 8, stageWidth() - 32);
  const H = Math.max(ctx.height, 360);
  const labelW = labelSpace({ rowLabels: L.tokens, cell: 10 })[0];
  const woLabelW = L.woRows ? labelSpace({ rowLabels: L.woRows, cell: 10 })[0] : 0;
  if (W < NARROW) return narrowLayout(ctx, L, W, labelW, woLabelW);
  const floor = { cA: 3, cB: T <= 16 ? 7 : T <= 32 ? 4 : 3, cC: T <= 16 ? 5 : 3, cW: 2 };
  const a = fitGrid(
    heads,
    W,
    22,
    floor.cA,
    (c, p) =>
      labelW + heads * dK * c + ARROW + p * (Math.max(dK * c, SLICE_MIN) + SLICE_GAP) - SLICE_GAP,
  );
  const b = fitGrid(
    heads,
    W,
    26,
    floor.cB,
    (c, p) => labelW + p * Math.max(T * c, MAP_MIN) + (p - 1) * MAP_GAP,
  );
  let cC = 16;
  while (cC > 1 && 2 * labelW + woLabelW + (heads * dV + 2 * dModel) * cC + 2 * OP + 12 > W) cC--;
  const cells: Cells = {
    cA: a.cell,
    pA: a.perRow,
    cB: b.cell,
    pB: b.perRow,
    cC,
    cO: cC,
    cW: cC,
    narrow: false,
  };
  // Too tall for the viewport: shrink one pixel at a time the cell whose shrinking saves the
  // most height for what it costs (relative to its size), while every cell keeps at least
  // 60% of the size the width allows (W^O, the tallest, may go further).
  const keys = ["cA", "cB", "cC", "cW"] as const;
  const min = {
    cA: Math.min(cells.cA, Math.max(floor.cA, Math.round(cells.cA * 0.6))),
    cB: Math.min(cells.cB, Math.max(floor.cB, Math.round(cells.cB * 0.6))),
    cC: Math.min(cells.cC, Math.max(floor.cC, Math.round(cells.cC * 0.6))),
    cW: Math.min(cells.cW, floor.cW),
  };
  let height = geometry(ctx, L, cells).height;
  for (let guard = 0; guard < 200 && height > H; guard++) {
    let pick: (typeof keys)[number] | null = null,
      pickScore = 0,
      pickHeight = height;
    for (const k of keys) {
      if (cells[k] <= min[k]) continue;
      const trial = { ...cells, [k]: cells[k] - 1 };
      trial.cW = Math.min(trial.cW, trial.cC);
      const h = geometry(ctx, L, trial).height;
      const score = ((height - h) * cells[k]) / min[k];
      if (score > pickScore) [pick, pickScore, pickHeight] = [k, score, h];
    }
    if (!pick) break;
    cells[pick]--;
    cells.cW = Math.min(cells.cW, cells.cC);
    height = pickHeight;
  }
  cells.cO = cells.cC;
  return cells;
}

/**
 * Narrow cells: each matrix as big as the width allows (up to 22 px), slices and maps
 * wrapped into as many a row as fit; a phone scrolls down the page rather than shrink
 * the whole scene and its labels.
 */
function narrowLayout(
  ctx: SceneCtx,
  L: Labels,
  W: number,
  labelW: number,
  woLabelW: number,
): Cells {
  const { T, dModel, dK, dV, heads } = ctx.cfg;
  const fit = (room: number, cols: number, max = 22) =>
    Math.max(3, Math.min(max, Math.floor(room / Math.max(1, cols))));
  // Rotated column labels reach past the last column by up to their length × cos 50°.
  const hang = (labels: string[]) =>
    Math.max(0, ...labels.map((l) => l.length)) * NARROW_LABEL_FONT * 0.6 * Math.cos(0.87) - 6;
  const cA = fit(W - labelW - Math.max(hang(L.qCols), 0), heads * dK);
  const slot = Math.max(dK * cA, SLICE_MIN) + SLICE_GAP;
  const pA = Math.max(1, Math.min(heads, Math.floor((W - labelW + SLICE_GAP) / slot)));
  // As many maps a row as keep their numbers (16 px cells), else one a row.
  const mapCell = (p: number) => fit(W - labelW - (p - 1) * MAP_GAP, p * T, 26);
  let pB = Math.min(heads, 8);
  while (pB > 1 && (mapCell(pB) < 16 || labelW + pB * T * mapCell(pB) + (pB - 1) * MAP_GAP > W))
    pB--;
  const cB = mapCell(pB);
  const cC = Math.min(
    fit(W - labelW - hang(L.vCols), heads * dV),
    fit(W - labelW - hang(L.woCols), dModel),
  );
  const cO = fit(W - labelW - hang(L.woCols), dModel);
  const cW = Math.min(cO, fit(W - woLabelW - hang(L.woCols), dModel));
  return { cA, pA, cB, pB, cC, cO, cW, narrow: true };
}

/** Narrow, the labels keep 9 px (fewer of them, if need be). */
function labelFont(r: Rows): { minLabelFont?: number } {
  return r.cells.narrow ? { minLabelFont: NARROW_LABEL_FONT } : {};
}

/** What the three rows of the scene share. */
interface Rows {
  g: SvgGroup;
  ctx: SceneCtx;
  L: Labels;
  cells: Cells;
  geo: ReturnType<typeof geometry>;
  colors: string[];
  /** Colour scale of Q. */
  mQ: number;
  /** When the slices and the maps have arrived (ms at speed 1). */
  slicesEnd: number;
  mapsEnd: number;
}

/** Row A: Q with its heads' columns marked, then the slices Q_h in a grid; returns its right edge. */
function drawSlices(r: Rows): number {
  const { g, ctx, L, geo, colors, mQ } = r;
  const { T, dK, heads } = ctx.cfg;
  const { cA, pA } = r.cells;
  const it = ctx.item;
  const labels = L.tokens;
  const Qv = drawMatrix(g, {
    ...labelFont(r),
    id: "Qbig",
    title: "Q = X W^Q",
    shape: shape(T, heads * dK),
    m: it.Q,
    x: 0,
    y: 0,
    cell: cA,
    color: diverging(mQ),
    rowLabels: labels,
    colLabels: L.qCols,
    bands: { every: dK, colors },
    top: geo.gridTop,
    tip: (r, c, v) =>
      `Q[${r}, ${c}] = <b>${fmt(v, 4)}</b>: head ${Math.floor(c / dK)}, column ${c % dK}`,
  });
  const x0 = geo.sliceX;
  const slices = `h = ${heads} slice${heads > 1 ? "s" : ""} Q_h, each ${shape(T, dK)}`;
  if (r.cells.narrow) {
    // The arrow points down to the slices under Q.
    const y = Qv.gy + T * cA + 4 + NOTE_H / 2;
    op(g, geo.labelW / 2, y + 6, "↓");
    note(g, x0, y, `splitHeads: ${slices}`, { "data-testid": "slices-note" });
  } else {
    op(g, Qv.width + ARROW / 2 + 2, Qv.gy + (T * cA) / 2, "→");
    note(g, Qv.width + ARROW / 2 + 2, Qv.gy + (T * cA) / 2 + 22, "splitHeads", {
      "text-anchor": "middle",
    });
    note(g, x0, 14, slices, { "data-testid": "slices-note" });
  }
  let maxX = x0 + (r.cells.narrow ? 12 : 0) + slices.length * 6.2;
  for (let h = 0; h < heads; h++) {
    const x = x0 + (h % pA) * geo.slotW;
    const y = geo.sliceY + Math.floor(h / pA) * geo.sliceH;
    const v = drawMatrix(g, {
      ...labelFont(r),
      id: `Qh-${h}`,
      title: `Q${sub(h)}`,
      m: headSlice(it.Qh, h),
      x,
      y,
      cell: cA,
      top: geo.sliceTop,
      color: diverging(mQ),
      colLabels: qkLabels(ctx, h),
      titleColor: colors[h],
      bands: { every: dK, colors: [colors[h]] },
      tip: (r, c, val) => `Q${sub(h)}[${r}, ${c}] = Q[${r}, ${h * dK + c}] = <b>${fmt(val, 4)}</b>`,
    });
    if (ctx.animate) {
      // The slice leaves its columns of Q for its place in the grid.
      const fromX = Qv.gx + h * dK * cA - (v.gx - x),
        fromY = Qv.gy - (v.gy - y);
      v.g
        .attr("transform", `translate(${fromX},${fromY})`)
        .attr("opacity", 0.9)
        .transition()
        .delay(dur(300 + h * 250))
        .duration(dur(700))
        .attr("transform", `translate(${x},${y})`)
        .attr("opacity", 1);
    }
    maxX = Math.max(maxX, x + v.width);
  }
  return maxX;
}

/** Row B: one attention map per head, in a grid; the first of each row has the token labels. */
function drawMaps(r: Rows, maxX: number): number {
  const { g, ctx, geo, colors } = r;
  const { T, heads } = ctx.cfg;
  const { pB, cB } = r.cells;
  const slicesEnd = r.slicesEnd;
  const it = ctx.item;
  const labels = r.L.tokens;
  const maps = `${heads} attention map${heads > 1 ? "s" : ""}`;
  const each = `each ${shape(T, T)}`;
  const axes = "(rows: queries, columns: keys)";
  const lines = r.cells.narrow
    ? [`${maps}, ${each}`, `one per head ${axes}`]
    : [`${maps}, one per head, ${each} ${axes}`];
  lines.forEach((l, k) =>
    note(g, geo.labelW, geo.yB - 8 - (lines.length - 1 - k) * (NOTE_H - 8), l),
  );
  const noteW = Math.max(...lines.map((l) => l.length)) * 6.2;
  maxX = Math.max(maxX, geo.labelW + noteW);
  for (let h = 0; h < heads; h++) {
    const col = h % pB;
    const x = col === 0 ? 0 : geo.labelW + col * (geo.mapW + MAP_GAP);
    const y = geo.yB + Math.floor(h / pB) * geo.mapH;
    const v = drawMatrix(g, {
      ...labelFont(r),
      id: `headmap-${h}`,
      title: mapTitle(ctx, h, geo.mapW + MAP_GAP - 6),
      m: it.heads[h].weights,
      x,
      y,
      cell: cB,
      top: MAP_TOP,
      color: sequential(),
      sums: "rows",
      rowLabels: col === 0 ? labels : undefined,
      titleColor: colors[h],
      tip: (r, c, val) =>
        `head ${h}${headName(ctx, h) ? ` (${headName(ctx, h)})` : ""}: α${sub(r)}${sub(c)} = <b>${fmt(val, 4)}</b><br>“${tokenName(ctx, r)}” → “${tokenName(ctx, c)}”`,
    });
    v.g.attr("data-head", h);
    if (ctx.animate)
      v.g
        .attr("opacity", 0)
        .transition()
        .delay(dur(slicesEnd + h * 200))
        .duration(dur(400))
        .attr("opacity", 1);
    maxX = Math.max(maxX, x + v.width);
  }
  return maxX;
}

/**
 * Row C: head outputs -> concat -> times W^O (its own cell size when it would be too tall),
 * and a batch item's padding mask; returns the right edge, the bottom and the colour scales.
 */
function drawOutput(
  r: Rows,
  maxX: number,
): { maxX: number; bottom: number; mO: number; mWO: number } {
  const { g, ctx, geo } = r;
  const { T } = ctx.cfg;
  const it = ctx.item;
  const cO = r.cells.narrow ? r.cells.cO : r.cells.cC;
  // W^O has its own colour scale (random weights are much smaller than the head outputs).
  const mO = Math.max(maxAbs(it.merged.data), maxAbs(it.out.data), 1e-6);
  const mWO = Math.max(maxAbs(ctx.model.weights.WO.data), 1e-6);
  const Mv = drawConcat(r, mO);
  // Narrow, each matrix has the whole width: its operator goes in its title.
  const narrow = r.cells.narrow;
  let x = narrow ? 0 : Mv.width + 6 + OP;
  const woX = x;
  const Wo = drawWO(r, x, mWO);
  if (!narrow) op(g, x - OP / 2 - 6, Mv.gy + (T * r.cells.cC) / 2, "×");
  x = narrow ? 0 : x + Wo.width + 6 + OP;
  const Ov = drawAttentionOutput(r, x, cO, mO);
  if (ctx.animate) {
    for (const v of [Mv, Wo, Ov])
      v.g
        .attr("opacity", 0)
        .transition()
        .delay(dur(r.mapsEnd))
        .duration(dur(400))
        .attr("opacity", 1);
  }
  if (!narrow) op(g, x - OP / 2 - 6, Ov.gy + (T * cO) / 2, "=");
  maxX = Math.max(maxX, x + Ov.width, woX + Wo.width);
  let bottom =
    (narrow ? geo.yOut + Ov.height : geo.yC + Math.max(Mv.height, Wo.height, Ov.height)) + 14;
  if (it.batched) bottom += drawPaddingMask(r, it.batched, bottom) + 14;
  return { maxX, bottom, mO, mWO };
}

/** concat(heads) [T, h·d_v] at the row's left, its heads' columns banded. */
function drawConcat(r: Rows, mO: number): MatrixView {
  const { g, ctx, L, geo, colors } = r;
  const { T, dV, heads } = ctx.cfg;
  return drawMatrix(g, {
    ...labelFont(r),
    id: "concat",
    title: "concat(heads)",
    shape: shape(T, heads * dV),
    m: ctx.item.merged,
    x: 0,
    y: geo.yC,
    cell: r.cells.cC,
    color: diverging(mO),
    rowLabels: L.tokens,
    colLabels: L.vCols,
    bands: { every: dV, colors },
    top: geo.topC,
    tip: (r, c, v) =>
      `head ${Math.floor(c / dV)} output[${r}, ${c % dV}] = <b>${fmt(v, 4)}</b> (mergeHeads)`,
  });
}

/** W^O [h·d_v, d_model] at x, editable where the weights are. */
function drawWO(r: Rows, x: number, mWO: number): MatrixView {
  const { g, ctx, L, geo } = r;
  const { dModel, dV, heads } = ctx.cfg;
  return drawMatrix(g, {
    ...labelFont(r),
    id: "WO",
    title: r.cells.narrow ? "× W^O" : "W^O",
    shape: shape(heads * dV, dModel),
    m: ctx.model.weights.WO,
    x,
    y: geo.yWO,
    cell: r.cells.cW,
    color: diverging(mWO),
    colLabels: L.woCols,
    rowLabels: L.woRows,
    top: geo.topC,
    tip: (r, c, v) =>
      `W<sup>O</sup>[${r}, ${c}] = <b>${fmt(v, 4)}</b><br>${editable(ctx) ? "<i>click to edit</i>" : "trained"}`,
    onCell: editable(ctx)
      ? (r, c, e) => ctx.edit("WO", r, c, ctx.model.weights.WO.data[r * dModel + c], e)
      : undefined,
  });
}

/**
 * The output [T, d_model] at x, each cell's worked sum over concat and W^O. In a batch,
 * the output shown is this item's slice of the one batched call.
 */
function drawAttentionOutput(r: Rows, x: number, cO: number, mO: number): MatrixView {
  const { g, ctx, L, geo } = r;
  const { T, dModel, dV, heads } = ctx.cfg;
  const it = ctx.item;
  const b = it.batched;
  const out = b
    ? {
        data: b.out.data.subarray(ctx.itemIndex * T * dModel, (ctx.itemIndex + 1) * T * dModel),
        rows: T,
        cols: dModel,
      }
    : it.out;
  return drawMatrix(g, {
    ...labelFont(r),
    id: "out",
    title: `${r.cells.narrow ? "= " : ""}${b ? "output (batched call)" : "output"}`,
    shape: shape(T, dModel),
    m: out,
    x,
    y: geo.yOut,
    cell: cO,
    color: diverging(mO),
    colLabels: L.woCols,
    rowLabels: L.tokens,
    labelsRight: true,
    top: geo.topC,
    tip: (r, c, v) =>
      `out[${r}, ${c}] = concat row ${r} · W<sup>O</sup>[:, ${c}] = <b>${fmt(v, 4)}</b>${b ? `<br>from multiHeadAttention on the batch [${b.keyLengths.length} × ${T} × ${dModel}], item ${ctx.itemIndex}<br>step by step: ${fmt(it.out.data[r * dModel + c], 4)}` : ""}${CLICK_FOR_WORK}`,
    // The terms are the step-by-step concat and W^O; a batch's cell is the batched call's
    // value, equal to the step-by-step one within the check in the caption.
    work: (r, c, v) =>
      workedSum(
        `out[${r}, ${c}] = concat row ${r} · W<sup>O</sup>[:, ${c}] = Σ<sub>k</sub> concat[${r}, k] W<sup>O</sup>[k, ${c}]`,
        Array.from({ length: heads * dV }, (_, k) => ({
          label: `k = ${k}:`,
          a: it.merged.data[r * heads * dV + k],
          b: ctx.model.weights.WO.data[k * dModel + c],
        })),
        v,
      ),
  });
}

/** The padding mask [1, T] of this batch item at y, as the batched call applies it (keyLengths); returns its height. */
function drawPaddingMask(r: Rows, b: BatchResult, y: number): number {
  const { g, ctx, L } = r;
  const { T } = ctx.cfg;
  const n = b.keyLengths[ctx.itemIndex];
  const mask = {
    data: Float32Array.from({ length: T }, (_, j) => (j < n ? 1 : 0)),
    rows: 1,
    cols: T,
  };
  const cP = Math.max(10, Math.min(26, r.cells.cB));
  const Pv = drawMatrix(g, {
    ...labelFont(r),
    id: "padmask",
    title: `key padding mask: keyLengths[${ctx.itemIndex}] = ${n}`,
    shape: shape(1, T),
    m: mask,
    x: 0,
    y,
    cell: cP,
    color: (v) => (v ? "#ffffff" : "url(#masked-hatch)"),
    stroke: "#d4d4d4",
    digits: 0,
    colLabels: L.tokens,
    tip: (_r, c, v) =>
      v
        ? `key ${c} (“${tokenName(ctx, c)}”) is attended`
        : `key ${c} is padding: masked (−∞) for every query`,
  });
  return Pv.height;
}

export const multiHeadScene: Scene = {
  title: "Multi-head",
  caption: (ctx) => {
    const { T, dModel, dK, dV, heads, kvHeads } = ctx.cfg;
    const gqa =
      kvHeads !== heads
        ? ` With ${kvHeads} K/V head${kvHeads > 1 ? "s" : ""} (grouped-query attention), query heads share keys and values: head h reads K/V head ⌊h / ${heads / kvHeads}⌋.`
        : "";
    const ok = ctx.item.checkDiff <= 1e-4;
    const b = ctx.item.batched;
    const call = b
      ? `one batched call to <code>multiHeadAttention</code> on X ${shape(b.keyLengths.length, T, dModel)}${b.options.keyLengths ? ` with keyLengths [${b.keyLengths.join(", ")}] (the shorter sentence padded; its [PAD] keys masked)` : ""}`
      : "one call to <code>multiHeadAttention</code>";
    return `<p>One big projection, then a reshape: Q ${shape("T", "h·d_k")} → ${shape("h", "T", "d_k")} (<code>splitHeads</code>), so each of the <b>h = ${heads}</b> heads attends on its own slice and produces its own attention map.
      The head outputs are concatenated (<code>mergeHeads</code>) and projected by W<sup>O</sup>.${gqa}</p>
      <p class="shapes">${shape(T, `${heads}·${dK}`)} → ${shape(heads, T, dK)} → h maps ${shape(heads, T, T)} → ${shape(heads, T, dV)} → concat ${shape(T, heads * dV)} × W<sup>O</sup> ${shape(heads * dV, dModel)} → ${shape(T, dModel)}</p>
      ${headNamesHtml(ctx)}
      <p class="${ok ? "check-ok" : "check-bad"}" data-testid="mha-check">${ok ? "✓" : "✗"} step by step = ${call}: max |Δ| = ${ctx.item.checkDiff.toExponential(1)}</p>`;
  },
  render: (g, ctx) => {
    const { dModel, dK, dV, heads } = ctx.cfg;
    const it = ctx.item;
    const labels = tokenLabels(it);
    const fs = featureSpace(ctx);
    const named = ctx.cfg.featureNames;
    const vNames = fs.v && named ? named : null;
    const L: Labels = {
      tokens: labels,
      qCols: fs.qk && named ? named : indexLabels(heads * dK),
      sliceCols: Array.from({ length: heads }, (_, h) => qkLabels(ctx, h)).flat(),
      vCols: vNames ?? indexLabels(heads * dV),
      woRows: vNames ?? undefined,
      woCols: vNames ?? indexLabels(dModel),
    };
    const cells = layout(ctx, L);
    const geo = geometry(ctx, L, cells);
    const colors = Array.from({ length: heads }, (_, h) => headColor(h));
    const mQ = Math.max(maxAbs(it.Q.data), 1e-6);
    // The entry animation's timeline, in ms at speed 1 (dur() scales each delay once).
    const slicesEnd = 300 + (heads - 1) * 250 + 700;
    const mapsEnd = slicesEnd + heads * 200 + 400;

    const rows: Rows = { g, ctx, L, cells, geo, colors, mQ, slicesEnd, mapsEnd };
    const { maxX, bottom, mO, mWO } = drawOutput(rows, drawMaps(rows, drawSlices(rows)));
    // The three legends side by side, or (narrow) one under the other.
    let lh: number;
    if (cells.narrow) {
      let y = bottom;
      y += signedLegend(g, 8, y, Math.max(mQ, mO), "value");
      y += weightLegend(g, 8, y);
      y += signedLegend(g, 8, y, mWO, "WO (its own colour scale)");
      lh = y - bottom;
    } else {
      lh = Math.max(
        signedLegend(g, 8, bottom, Math.max(mQ, mO), "value"),
        weightLegend(g, 240, bottom),
        signedLegend(g, 472, bottom, mWO, "WO (its own colour scale)"),
      );
    }
    return { width: maxX, height: bottom + lh, duration: ctx.animate ? dur(mapsEnd + 400) : 0 };
  },
};
