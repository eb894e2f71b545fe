// Types shared by the drawing primitives and the scenes that use them.
import type * as d3 from "d3";
import type { ColorFn } from "./colors";

/** An SVG group that drawings append to. */
export type SvgGroup = d3.Selection<SVGGElement, unknown, null, undefined>;

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
  /** Rows (or columns) that are shares of a whole: written so that they add up to their sum. */
  sums?: "rows" | "cols";
  /** Tooltip HTML for a cell. */
  tip?: (r: number, c: number, v: number) => string;
  onCell?: (r: number, c: number, e: MouseEvent) => void;
  /** The worked arithmetic of a cell (HTML), shown under the scene when the cell is clicked. */
  work?: (r: number, c: number, v: number) => string;
  /** Extra class for row labels (e.g. unknown words). */
  rowLabelClass?: (r: number) => string;
  /** Cells drawn with opacity 0 (revealed by an animation). */
  hidden?: (r: number, c: number) => boolean;
  /** At least this much space above the grid (to align matrices in a row). */
  minTop?: number;
  /** Exactly this much space above the grid (overrides the label space and minTop). */
  top?: number;
  /** The smallest font of the axis labels (default 7 px); labels are thinned rather than made smaller. */
  minLabelFont?: number;
  /** Labels on the right instead of the left. */
  labelsRight?: boolean;
  /** Per-cell opacity (e.g. value rows faded by their weight). */
  opacity?: (r: number, c: number) => number;
  /** Cell border colour (default white). */
  stroke?: string;
  /** Force the renderer (default: canvas above SVG_MAX_CELLS cells). */
  render?: "svg" | "canvas";
  /** Title colour (e.g. a head's). */
  titleColor?: string;
  /** Coloured bars over groups of `every` columns, group k in colors[k] (e.g. the heads' columns). */
  bands?: { every: number; colors: string[] };
}

export interface MatrixView {
  g: SvgGroup;
  width: number;
  height: number;
  /** Top-left of the cell grid, relative to the parent. */
  gx: number;
  gy: number;
  cell: number;
  canvas: boolean;
  /** Fades cells in: those with delay >= 0 go to full opacity after `delay` ms over `duration` ms. */
  reveal: (
    delay: (r: number, c: number) => number,
    duration: number | ((r: number, c: number) => number),
  ) => void;
}

export interface Cell {
  r: number;
  c: number;
  v: number;
}
