// Axis labels of a heatmap: the space they need and which of them to draw.
import * as d3 from "d3";
import type { MatrixOpts } from "./types";

const CHAR = 6.3;
/** sin(50°): rotated column labels stack this fraction of a cell apart. */
export const SIN50 = Math.sin((50 * Math.PI) / 180);

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
