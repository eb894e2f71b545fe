// Axis labels of a heatmap: the space they need and which of them to draw.
import * as d3 from "d3";
import type { MatrixOpts, SvgGroup } from "./types";

const CHAR = 6.3;
/** sin(50°): rotated column labels stack this fraction of a cell apart. */
const SIN50 = Math.sin((50 * Math.PI) / 180);
/** Rotated labels' lines are at least this many em apart: a glyph is about 1 em tall, so a third of one stays clear between them. */
const ROTATED_PITCH = 1.35;

/**
 * An axis title centred at (x, y): along a horizontal axis, or with `vertical`
 * turned to read upwards beside a vertical one.
 */
export function axisTitle(g: SvgGroup, text: string, x: number, y: number, vertical = false): void {
  const t = g.append("text").attr("class", "m-axis-title").attr("text-anchor", "middle");
  if (vertical) t.attr("transform", `translate(${x},${y}) rotate(-90)`);
  else t.attr("x", x).attr("y", y);
  t.text(text);
}

/** Space the labels need: [left, top]. */
export function labelSpace(
  o: Pick<MatrixOpts, "rowLabels" | "colLabels" | "cell" | "rowAxis" | "colAxis">,
): [number, number] {
  const longest = (a?: string[]) => (a && a.length ? Math.max(...a.map((s) => s.length)) : 0);
  const left = o.rowLabels
    ? Math.min(110, longest(o.rowLabels) * CHAR + 10) + (o.rowAxis ? 14 : 0)
    : 0;
  const cl = longest(o.colLabels);
  const rotated = o.colLabels && cl * 7 > o.cell - 2;
  const top =
    36 +
    (o.colLabels ? (rotated ? Math.min(80, cl * CHAR * 0.75) + 6 : 16) : 0) +
    (o.colAxis ? 12 : 0);
  return [left, top];
}

/** Smallest "nice" stride >= need (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, ...). */
function niceStride(need: number): number {
  const nice = [1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 200, 256];
  return nice.find((n) => n >= need) ?? Math.ceil(need);
}

/** Indices of the labels to draw: every label when they fit, else a regular thinning. */
export function tickIndices(n: number, cell: number, space: number): number[] {
  const every = niceStride(Math.ceil(space / Math.max(cell, 0.1)));
  return d3.range(n).filter((i) => i % every === 0);
}

/** The space above the grid that aligns matrices of a row: the largest of their label spaces. */
export function commonTop(cell: number, ...colLabels: (string[] | undefined)[]): number {
  return Math.max(...colLabels.map((c) => labelSpace({ colLabels: c, cell })[1]));
}

/** The axes of a heatmap: tokens or dimensions as tick labels, thinned so that none overlap. */
export function drawAxes(grid: SvgGroup, o: MatrixOpts, left: number): void {
  const { rows, cols } = o.m;
  const cell = o.cell;
  const xs = d3
    .scaleBand<number>()
    .domain(d3.range(cols))
    .range([0, cols * cell]);
  const ys = d3
    .scaleBand<number>()
    .domain(d3.range(rows))
    .range([0, rows * cell]);
  const minFont = o.minLabelFont ?? 7;
  const axisFont = Math.min(Math.max(11, minFont), Math.max(minFont, cell * 0.8));
  if (o.rowLabels) {
    const labels = o.rowLabels;
    const axis = (o.labelsRight ? d3.axisRight(ys) : d3.axisLeft(ys))
      .tickSize(0)
      .tickPadding(5)
      .tickValues(tickIndices(rows, cell, axisFont * 1.15))
      .tickFormat((r) => labels[r] ?? "");
    const ag = grid
      .append("g")
      .attr("class", "m-axis m-rows")
      .attr("transform", o.labelsRight ? `translate(${cols * cell},0)` : null)
      .call(axis);
    ag.selectAll<SVGTextElement, number>("text")
      .style("font-size", `${axisFont}px`)
      .attr("class", (r) => o.rowLabelClass?.(r) ?? "");
    if (o.rowAxis) {
      const x = o.labelsRight ? cols * cell + left - 4 : -left + 8;
      axisTitle(grid, o.rowAxis, x, (rows * cell) / 2, true);
    }
  }
  if (o.colLabels) {
    const labels = o.colLabels;
    const cl = Math.max(...labels.map((s) => s.length));
    const rotated = cl * 7 > cell - 2;
    // Rotated labels stack at cell·sin(50°) apart (the font shrinks a little to fit
    // every label before any is dropped); flat ones need their width.
    const colFont = rotated
      ? Math.max(minFont, Math.min(axisFont, (cell * SIN50) / ROTATED_PITCH))
      : axisFont;
    const space = rotated ? (colFont * ROTATED_PITCH) / SIN50 : cl * colFont * 0.62 + 4;
    const axis = d3
      .axisTop(xs)
      .tickSize(0)
      .tickPadding(4)
      .tickValues(tickIndices(cols, cell, space))
      .tickFormat((c) => labels[c] ?? "");
    const ag = grid.append("g").attr("class", "m-axis m-cols").call(axis);
    // A style, not an attribute: the stylesheet's .m-axis text size would override an attribute.
    ag.selectAll("text").style("font-size", `${colFont}px`);
    if (rotated) {
      ag.selectAll("text")
        .attr("text-anchor", "start")
        .attr("dx", "0.4em")
        .attr("dy", "0.35em")
        .attr("transform", "rotate(-50)");
    }
  }
  if (o.colAxis) axisTitle(grid, o.colAxis, (cols * cell) / 2, rows * cell + 12);
}
