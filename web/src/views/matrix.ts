// A labelled heatmap of one matrix: D3 band scales and axes for the labels, one
// <rect> per cell joined to its value; each cell carries its exact value in
// data-value and explains itself in a tooltip.
import * as d3 from "d3";
import { fmt } from "../format";
import { textOn, type ColorFn } from "./colors";
import { hideTip, showTip } from "./tooltip";

export type G = d3.Selection<SVGGElement, unknown, null, undefined>;

export interface MatrixData {
  data: ArrayLike<number>;
  rows: number;
  cols: number;
}

export interface MatrixOpts {
  /** data-testid = "matrix-" + id */
  id: string;
  title: string;
  shape?: string;
  m: MatrixData;
  x: number;
  y: number;
  cell: number;
  color: ColorFn;
  rowLabels?: string[];
  colLabels?: string[];
  rowAxis?: string;
  colAxis?: string;
  digits?: number;
  /** Tooltip HTML for a cell. */
  tip?: (r: number, c: number, v: number) => string;
  onCell?: (r: number, c: number, e: MouseEvent) => void;
  /** Extra class for row labels (e.g. unknown words). */
  rowLabelClass?: (r: number) => string;
  /** Cells drawn with opacity 0 (revealed by an animation). */
  hidden?: (r: number, c: number) => boolean;
  /** At least this much space above the grid (to align matrices in a row). */
  minTop?: number;
  /** Labels on the right instead of the left. */
  labelsRight?: boolean;
}

export interface MatrixView {
  g: G;
  width: number;
  height: number;
  /** Top-left of the cell grid, relative to the parent. */
  gx: number;
  gy: number;
  cell: number;
  cells: d3.Selection<SVGGElement, Cell, SVGGElement, unknown>;
}

export interface Cell {
  r: number;
  c: number;
  v: number;
}

const CHAR = 6.3;

/** Space the labels need: [left, top]. */
export function labelSpace(o: Pick<MatrixOpts, "rowLabels" | "colLabels" | "cell" | "rowAxis" | "colAxis">): [number, number] {
  const longest = (a?: string[]) => (a && a.length ? Math.max(...a.map((s) => s.length)) : 0);
  const left = o.rowLabels ? Math.min(110, longest(o.rowLabels) * CHAR + 10) + (o.rowAxis ? 14 : 0) : 0;
  const cl = longest(o.colLabels);
  const rotated = o.colLabels && cl * 7 > o.cell - 2;
  const top = 36 + (o.colLabels ? (rotated ? Math.min(80, cl * CHAR * 0.75) + 6 : 16) : 0) + (o.colAxis ? 12 : 0);
  return [left, top];
}

export function drawMatrix(parent: G, o: MatrixOpts): MatrixView {
  const { rows, cols } = o.m;
  const cell = o.cell;
  const [left, top0] = labelSpace(o);
  const top = Math.max(top0, o.minTop ?? 0);
  const lx = o.labelsRight ? 0 : left;
  const g = parent.append("g").attr("transform", `translate(${o.x},${o.y})`)
    .attr("data-testid", `matrix-${o.id}`).attr("data-rows", rows).attr("data-cols", cols);
  const title = g.append("text").attr("class", "m-title").attr("x", lx).attr("y", 14);
  richText(title, o.title);
  if (o.shape) {
    // Beside the title if it fits over the grid, else on a second line.
    const beside = textWidth(o.title) + 8 + o.shape.length * 6 <= cols * cell + (o.labelsRight ? left : 0);
    g.append("text").attr("class", "m-shape").attr("x", lx).attr("y", beside ? 14 : 28)
      .attr("dx", beside ? textWidth(o.title) + 8 : 0).text(o.shape);
  }
  const grid = g.append("g").attr("transform", `translate(${lx},${top})`);
  const xs = d3.scaleBand<number>().domain(d3.range(cols)).range([0, cols * cell]);
  const ys = d3.scaleBand<number>().domain(d3.range(rows)).range([0, rows * cell]);

  const showText = cell >= 25;
  const digits = o.digits ?? 2;
  const fontSize = Math.min(11.5, cell / 3.1);
  const data: Cell[] = [];
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) data.push({ r, c, v: o.m.data[r * cols + c] });

  const cells = grid.selectAll<SVGGElement, Cell>("g.c").data(data).join("g").attr("class", "c")
    .attr("transform", (d) => `translate(${xs(d.c)},${ys(d.r)})`)
    .attr("opacity", (d) => (o.hidden?.(d.r, d.c) ? 0 : 1));
  cells.append("rect").attr("class", "cell").attr("width", cell).attr("height", cell)
    .attr("data-row", (d) => d.r).attr("data-col", (d) => d.c)
    .attr("data-value", (d) => String(d.v))
    .attr("fill", (d) => o.color(d.v));
  if (showText) {
    cells.append("text").attr("class", "cell-text").attr("x", cell / 2).attr("y", cell / 2)
      .attr("font-size", fontSize).style("fill", (d) => textOn(o.color(d.v)))
      .text((d) => fmt(d.v, digits));
  }
  // One delegated listener per matrix, not one per cell (T = 64 means 4096 cells).
  const cellOf = (e: Event): Cell | undefined => {
    const el = (e.target as Element).closest("g.c") as (Element & { __data__?: Cell }) | null;
    return el?.__data__;
  };
  if (o.tip) {
    const tipFn = o.tip;
    const show = (e: MouseEvent) => {
      const d = cellOf(e);
      if (d) showTip(e, tipFn(d.r, d.c, d.v));
    };
    grid.on("mouseover", show).on("mousemove", show).on("mouseleave", hideTip);
  }
  if (o.onCell) {
    const on = o.onCell;
    cells.style("cursor", "pointer");
    grid.on("click", (e: MouseEvent) => {
      const d = cellOf(e);
      if (d) on(d.r, d.c, e);
    });
  }
  // Axes: tokens or dimensions as tick labels.
  const axisFont = Math.min(11, Math.max(7, cell * 0.8));
  const every = Math.max(1, Math.ceil(9 / cell));
  if (o.rowLabels) {
    const labels = o.rowLabels;
    const axis = (o.labelsRight ? d3.axisRight(ys) : d3.axisLeft(ys)).tickSize(0).tickPadding(5)
      .tickValues(d3.range(rows).filter((r) => r % every === 0)).tickFormat((r) => labels[r] ?? "");
    const ag = grid.append("g").attr("class", "m-axis m-rows")
      .attr("transform", o.labelsRight ? `translate(${cols * cell},0)` : null).call(axis);
    ag.selectAll<SVGTextElement, number>("text").attr("font-size", axisFont)
      .attr("class", (r) => o.rowLabelClass?.(r) ?? "");
    if (o.rowAxis) {
      const x = o.labelsRight ? cols * cell + left - 4 : -left + 8;
      grid.append("text").attr("class", "m-axis-title")
        .attr("transform", `translate(${x},${(rows * cell) / 2}) rotate(-90)`)
        .attr("text-anchor", "middle").text(o.rowAxis);
    }
  }
  if (o.colLabels) {
    const labels = o.colLabels;
    const cl = Math.max(...labels.map((s) => s.length));
    const rotated = cl * 7 > cell - 2;
    const axis = d3.axisTop(xs).tickSize(0).tickPadding(4)
      .tickValues(d3.range(cols).filter((c) => c % every === 0)).tickFormat((c) => labels[c] ?? "");
    const ag = grid.append("g").attr("class", "m-axis m-cols").call(axis);
    ag.selectAll("text").attr("font-size", axisFont);
    if (rotated) {
      ag.selectAll("text").attr("text-anchor", "start").attr("dx", "0.4em").attr("dy", "0.35em")
        .attr("transform", "rotate(-50)");
    }
  }
  if (o.colAxis) {
    grid.append("text").attr("class", "m-axis-title").attr("x", (cols * cell) / 2).attr("y", rows * cell + 12)
      .attr("text-anchor", "middle").text(o.colAxis);
  }
  const width = left + cols * cell;
  const height = top + rows * cell + (o.colAxis ? 16 : 2);
  return { g, width, height, gx: o.x + lx, gy: o.y + top, cell, cells };
}

/** Outline a row or a column of a drawn matrix (returns the outline to animate). */
export function outlineRow(parent: G, v: MatrixView, r: number, cols: number) {
  return parent.append("rect").attr("class", "hl-row")
    .attr("x", v.gx - 1).attr("y", v.gy + r * v.cell - 1)
    .attr("width", cols * v.cell + 2).attr("height", v.cell + 2);
}

export function outlineCol(parent: G, v: MatrixView, c: number, rows: number) {
  return parent.append("rect").attr("class", "hl-col")
    .attr("x", v.gx + c * v.cell - 1).attr("y", v.gy - 1)
    .attr("width", v.cell + 2).attr("height", rows * v.cell + 2);
}

export function outlineCell(parent: G, v: MatrixView, r: number, c: number) {
  return parent.append("rect").attr("class", "hl-row")
    .attr("x", v.gx + c * v.cell - 1).attr("y", v.gy + r * v.cell - 1)
    .attr("width", v.cell + 2).attr("height", v.cell + 2);
}

/** An operator symbol (×, =, +, ÷) centred at (x, y). */
export function op(parent: G, x: number, y: number, s: string): void {
  parent.append("text").attr("class", "op").attr("x", x).attr("y", y).text(s);
}

/** Writes "W^Q_h" style text: ^x and _x become raised and lowered tspans. */
export function richText(t: d3.Selection<SVGTextElement, unknown, null, undefined>, s: string): void {
  const parts = s.split(/([\^_][A-Za-z0-9]+)/).filter(Boolean);
  for (const p of parts) {
    if (p[0] === "^" || p[0] === "_") {
      t.append("tspan").attr("baseline-shift", p[0] === "^" ? "super" : "sub").attr("font-size", "72%").text(p.slice(1));
    } else {
      t.append("tspan").text(p);
    }
  }
}

/** Approximate width of a title in px (14px semibold). */
export function textWidth(s: string): number {
  let w = 0;
  for (const p of s.split(/([\^_][A-Za-z0-9]+)/).filter(Boolean)) w += (p[0] === "^" || p[0] === "_" ? (p.length - 1) * 8 : p.length * 8.6);
  return w;
}

/** The space above the grid that aligns matrices of a row: the largest of their label spaces. */
export function commonTop(cell: number, ...colLabels: (string[] | undefined)[]): number {
  return Math.max(...colLabels.map((c) => labelSpace({ colLabels: c, cell })[1]));
}
