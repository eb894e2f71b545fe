// Outlines over a row, a column or a cell of a drawn heatmap.
import * as d3 from "d3";
import { keyed } from "./retain";
import type { MatrixView, SvgGroup } from "./types";

/** Outline a row or a column of a drawn matrix (returns the outline to animate). */
export function outlineRow(parent: SvgGroup, v: MatrixView, r: number, cols: number) {
  return d3.select(
    keyed(parent.node()!, "rect", {
      class: "hl-row",
      x: v.gx - 1,
      y: v.gy + r * v.cell - 1,
      width: cols * v.cell + 2,
      height: v.cell + 2,
    }),
  );
}

export function outlineCol(parent: SvgGroup, v: MatrixView, c: number, rows: number) {
  return d3.select(
    keyed(parent.node()!, "rect", {
      class: "hl-col",
      x: v.gx + c * v.cell - 1,
      y: v.gy - 1,
      width: v.cell + 2,
      height: rows * v.cell + 2,
    }),
  );
}

export function outlineCell(parent: SvgGroup, v: MatrixView, r: number, c: number) {
  return d3.select(
    keyed(parent.node()!, "rect", {
      class: "hl-row",
      x: v.gx + c * v.cell - 1,
      y: v.gy + r * v.cell - 1,
      width: v.cell + 2,
      height: v.cell + 2,
    }),
  );
}
