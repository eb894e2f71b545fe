// A labelled heatmap of one matrix: D3 band scales and axes for the labels.
// Small matrices (<= SVG_MAX_CELLS cells) get one <rect> per cell joined to its
// value, each carrying its exact value in data-value; larger ones are drawn on a
// <canvas> (inside a <foreignObject>, at devicePixelRatio), the hovered cell found
// from the mouse position. Either way every drawn matrix is registered, so
// window.__attnkit.matrix(id) returns the numbers on screen.
import * as d3 from "d3";
import { fmt } from "../format";
import { MASKED, packColor, textOn, type ColorFn } from "./colors";
import { keyed, retained, setAttr, setText } from "./retain";
import { hideTip, showTip } from "./tooltip";

/** Above this many cells a matrix is drawn on a canvas. */
export const SVG_MAX_CELLS = 400;

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
  /** Exactly this much space above the grid (overrides the label space and minTop). */
  top?: number;
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
  g: G;
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

export interface DrawnMatrix {
  id: string;
  rows: number;
  cols: number;
  values: number[];
  render: "svg" | "canvas";
}

/** Every matrix of the current scene, in drawing order (cleared on each render). */
const registry: { id: string; m: MatrixData; render: "svg" | "canvas" }[] = [];

export function clearRegistry(): void {
  registry.length = 0;
  hiddenNumbers = false;
}

/**
 * Canvases of elements a render dropped, by matrix id, for the next matrix with that id
 * (a new canvas and 2D context per redraw is slow). Retained matrices keep their own.
 */
let pool = new Map<string, HTMLCanvasElement[]>();

/** Gives the canvases inside dropped elements back to the pool. */
export function recycle(nodes: Iterable<Element>): void {
  for (const node of nodes) {
    for (const c of node.querySelectorAll<HTMLCanvasElement>("canvas[data-matrix]")) {
      const id = c.dataset.matrix!;
      if (!pool.has(id)) pool.set(id, []);
      pool.get(id)!.push(c);
    }
  }
  // Keep a bounded pool.
  if ([...pool.values()].reduce((n, l) => n + l.length, 0) > 64) pool = new Map();
}

const gens = new WeakMap<HTMLCanvasElement, number>();

/** The numbers of the nth drawn matrix with this id (the test hook). */
export function drawnMatrix(id: string, nth = 0): DrawnMatrix | null {
  const hits = registry.filter((e) => e.id === id);
  const e = hits[nth];
  return e
    ? { id, rows: e.m.rows, cols: e.m.cols, values: Array.from(e.m.data), render: e.render }
    : null;
}

export function drawnIds(): string[] {
  return registry.map((e) => e.id);
}

/** Cells at least this many px wide show their numbers (shortened or smaller to fit). */
export const NUMBER_MIN_CELL = 16;

/** Font size of the numbers in cells of `cell` px. */
export function numberFont(cell: number): number {
  return Math.min(11.5, Math.max(7, cell / 3.1));
}

/** Width of a number at `font` px (digits and signs of system-ui are at most 0.6 em). */
const numberWidth = (s: string, font: number) => s.length * font * 0.6;

/**
 * A cell's number as it fits `cell` px: with `digits` decimals, fewer, then in exponent
 * form (1e5); "" when none fits (the tooltip still gives it).
 */
export function fitNumber(v: number, digits: number, cell: number): string {
  const font = numberFont(cell);
  const room = cell - 2;
  for (let d = digits; d >= 0; d--) {
    const t = fmt(v, d);
    if (numberWidth(t, font) <= room) return t;
    if (!Number.isFinite(v)) return "";
  }
  const e = v.toExponential(0).replace("e+", "e").replace(/-/g, "−");
  return numberWidth(e, font) <= room ? e : "";
}

/** Whether a matrix of the last render had cells too small for their numbers. */
let hiddenNumbers = false;
export function numbersHidden(): boolean {
  return hiddenNumbers;
}

const CHAR = 6.3;
const SIN50 = Math.sin((50 * Math.PI) / 180);

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

/** What a drawn matrix keeps to update itself in place on the next frame. */
interface MatrixState {
  title: SVGTextElement;
  shape: SVGTextElement | null;
  /** Title and shape, and the title colour, last written. */
  heading: string;
  titleColor: string;
  /** The element that takes the mouse: the canvas or the transparent rect over the cells. */
  hit: Element;
  /** The outline of the cell that has the keyboard focus. */
  focusRect: SVGRectElement;
  cells: SvgCells | CanvasCells;
}

export function drawMatrix(parent: G, o: MatrixOpts): MatrixView {
  const { rows, cols } = o.m;
  const cell = o.cell;
  const [left, top0] = labelSpace(o);
  const top = o.top ?? Math.max(top0, o.minTop ?? 0);
  const lx = o.labelsRight ? 0 : left;
  const useCanvas = o.render ? o.render === "canvas" : rows * cols > SVG_MAX_CELLS;
  registry.push({ id: o.id, m: o.m, render: useCanvas ? "canvas" : "svg" });
  if (cell < NUMBER_MIN_CELL && o.tip) hiddenNumbers = true;
  const dpr = window.devicePixelRatio || 1;
  // Everything but the numbers, their colours and the title: a change rebuilds the element.
  const sig = [
    rows,
    cols,
    cell,
    top,
    lx,
    useCanvas,
    dpr,
    o.labelsRight,
    o.rowAxis,
    o.colAxis,
    o.stroke,
    !!o.tip,
    !!o.onCell,
    o.rowLabels?.join("\u0001"),
    o.rowLabels && o.rowLabelClass
      ? o.rowLabels.map((_, r) => o.rowLabelClass!(r)).join("\u0001")
      : "",
    o.colLabels?.join("\u0001"),
    o.bands ? `${o.bands.every}:${o.bands.colors.join()}` : "",
  ].join("|");
  const { entry } = retained<MatrixState>(parent.node()!, `matrix-${o.id}`, sig, (old) =>
    buildMatrix(parent, o, left, top, lx, useCanvas, old?.state),
  );
  const st = entry.state;
  const node = entry.node as SVGGElement;
  setAttr(node, "transform", `translate(${o.x},${o.y})`);
  // A previous frame's entry animation may have left these mid-way.
  setAttr(node, "opacity", null);
  // Title and shape: beside each other if they fit over the grid, else on two lines.
  const heading = `${o.title}\u0001${o.shape ?? ""}`;
  if (st.heading !== heading) {
    st.heading = heading;
    st.title.replaceChildren();
    richText(d3.select(st.title), o.title);
    if (st.shape) {
      const beside =
        textWidth(o.title) + 8 + (o.shape ?? "").length * 6 <=
        cols * cell + (o.labelsRight ? left : 0);
      setAttr(st.shape, "y", beside ? 14 : 28);
      setAttr(st.shape, "dx", beside ? textWidth(o.title) + 8 : 0);
      setText(st.shape, o.shape ?? "");
    }
  }
  if (st.titleColor !== (o.titleColor ?? ""))
    st.title.style.fill = st.titleColor = o.titleColor ?? "";
  const target = (r: number, c: number) => (o.opacity ? o.opacity(r, c) : 1);
  const digits = o.digits ?? 2;
  const reveal =
    st.cells.kind === "canvas"
      ? updateCanvas(st.cells, o, target, digits)
      : updateSvgCells(st.cells, o, target, digits);

  // Tooltips and clicks: the cell under the mouse, from its position.
  const value = (r: number, c: number) => o.m.data[r * cols + c];
  const hit = (e: MouseEvent): [number, number] | null => {
    const b = st.hit.getBoundingClientRect();
    const c = Math.floor(((e.clientX - b.left) / b.width) * cols);
    const r = Math.floor(((e.clientY - b.top) / b.height) * rows);
    return r >= 0 && r < rows && c >= 0 && c < cols ? [r, c] : null;
  };
  const h = d3.select(st.hit);
  if (o.tip) {
    const tipFn = o.tip;
    h.on("mousemove", (e: MouseEvent) => {
      const rc = hit(e);
      if (rc) showTip(e, tipFn(rc[0], rc[1], value(rc[0], rc[1])));
      else hideTip();
    }).on("mouseleave", hideTip);
  }
  if (o.onCell) {
    const on = o.onCell;
    h.on("click", (e: MouseEvent) => {
      const rc = hit(e);
      if (rc) on(rc[0], rc[1], e);
    });
  }
  if (o.tip || o.onCell) bindKeyboard(st, o, value);
  const width = left + cols * cell;
  const height = top + rows * cell + (o.colAxis ? 16 : 2);
  return {
    g: d3.select(node),
    width,
    height,
    gx: o.x + lx,
    gy: o.y + top,
    cell,
    canvas: useCanvas,
    reveal,
  };
}

/** A new matrix element: title, shape, axes and the cells (no numbers yet). */
function buildMatrix(
  parent: G,
  o: MatrixOpts,
  left: number,
  top: number,
  lx: number,
  useCanvas: boolean,
  old?: MatrixState,
): { node: SVGGElement; state: MatrixState } {
  const { rows, cols } = o.m;
  const cell = o.cell;
  const g = parent
    .append("g")
    .attr("data-testid", `matrix-${o.id}`)
    .attr("data-rows", rows)
    .attr("data-cols", cols)
    .attr("data-render", useCanvas ? "canvas" : "svg");
  const title = g.append("text").attr("class", "m-title").attr("x", lx).attr("y", 14);
  const shapeEl =
    o.shape !== undefined ? g.append("text").attr("class", "m-shape").attr("x", lx) : null;
  const grid = g.append("g").attr("transform", `translate(${lx},${top})`);
  const oldCanvas = old?.cells.kind === "canvas" ? old.cells.canvas : undefined;
  const cells = useCanvas ? buildCanvas(grid, o, oldCanvas) : buildSvgCells(grid, o);
  const hit = useCanvas
    ? (cells as CanvasCells).canvas
    : grid
        .append("rect")
        .attr("class", "hit")
        .attr("width", cols * cell)
        .attr("height", rows * cell)
        .attr("fill", "transparent")
        .node()!;
  if (o.onCell) d3.select(hit).style("cursor", "pointer");
  hit.setAttribute("data-hit", o.id);
  const focusRect = grid
    .append("rect")
    .attr("class", "m-focus")
    .attr("width", cell)
    .attr("height", cell)
    .style("display", "none")
    .node()!;
  if (o.bands) {
    const { every, colors } = o.bands;
    grid
      .append("g")
      .attr("class", "m-bands")
      .selectAll("rect")
      .data(colors)
      .join("rect")
      .attr("x", (_c, k) => k * every * cell)
      .attr("y", -5)
      .attr("width", every * cell - 1)
      .attr("height", 4)
      .attr("fill", (c) => c);
  }
  // Axes: tokens or dimensions as tick labels, thinned so that none overlap.
  const xs = d3
    .scaleBand<number>()
    .domain(d3.range(cols))
    .range([0, cols * cell]);
  const ys = d3
    .scaleBand<number>()
    .domain(d3.range(rows))
    .range([0, rows * cell]);
  const axisFont = Math.min(11, Math.max(7, cell * 0.8));
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
      grid
        .append("text")
        .attr("class", "m-axis-title")
        .attr("transform", `translate(${x},${(rows * cell) / 2}) rotate(-90)`)
        .attr("text-anchor", "middle")
        .text(o.rowAxis);
    }
  }
  if (o.colLabels) {
    const labels = o.colLabels;
    const cl = Math.max(...labels.map((s) => s.length));
    const rotated = cl * 7 > cell - 2;
    // Rotated labels stack at cell·sin(50°) apart (the font shrinks a little to fit
    // every label before any is dropped); flat ones need their width.
    const colFont = rotated ? Math.max(7, Math.min(axisFont, (cell * SIN50) / 1.1)) : axisFont;
    const space = rotated ? (colFont * 1.1) / SIN50 : cl * colFont * 0.62 + 4;
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
  if (o.colAxis) {
    grid
      .append("text")
      .attr("class", "m-axis-title")
      .attr("x", (cols * cell) / 2)
      .attr("y", rows * cell + 12)
      .attr("text-anchor", "middle")
      .text(o.colAxis);
  }
  return {
    node: g.node()!,
    state: {
      title: title.node()!,
      shape: shapeEl?.node() ?? null,
      heading: "",
      titleColor: "",
      hit,
      focusRect,
      cells,
    },
  };
}

/** SVG cells: one <g> per cell (its opacity) holding a rect (its colour) and, if big enough, its number. */
interface SvgCells {
  kind: "svg";
  groups: d3.Selection<SVGGElement, Cell, SVGGElement, unknown>;
  g: SVGGElement[];
  rect: SVGRectElement[];
  text: SVGTextElement[] | null;
  /** Last written value (NaN first), fill and opacity of each cell. */
  value: Float64Array;
  fill: string[];
  opacity: Float64Array;
}

function buildSvgCells(grid: G, o: MatrixOpts): SvgCells {
  const { rows, cols } = o.m;
  const cell = o.cell;
  const data: Cell[] = [];
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) data.push({ r, c, v: NaN });
  const groups = grid
    .selectAll<SVGGElement, Cell>("g.c")
    .data(data)
    .join("g")
    .attr("class", "c")
    .attr("transform", (d) => `translate(${d.c * cell},${d.r * cell})`);
  const rects = groups
    .append("rect")
    .attr("class", "cell")
    .attr("width", cell)
    .attr("height", cell)
    .attr("data-row", (d) => d.r)
    .attr("data-col", (d) => d.c);
  if (o.stroke) rects.style("stroke", o.stroke);
  let texts: SVGTextElement[] | null = null;
  if (cell >= NUMBER_MIN_CELL) {
    texts = groups
      .append("text")
      .attr("class", "cell-text")
      .attr("x", cell / 2)
      .attr("y", cell / 2)
      .attr("font-size", numberFont(cell))
      .nodes();
  }
  const n = rows * cols;
  return {
    kind: "svg",
    groups,
    g: groups.nodes(),
    rect: rects.nodes(),
    text: texts,
    value: new Float64Array(n).fill(NaN),
    fill: new Array<string>(n).fill(""),
    opacity: new Float64Array(n).fill(NaN),
  };
}

/** Writes the cells that changed; returns the reveal animation. */
function updateSvgCells(
  s: SvgCells,
  o: MatrixOpts,
  target: (r: number, c: number) => number,
  digits: number,
): MatrixView["reveal"] {
  const { rows, cols } = o.m;
  for (let r = 0, k = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++, k++) {
      const v = o.m.data[k];
      const fill = o.color(v);
      if (!Object.is(s.value[k], v)) {
        s.value[k] = v;
        s.rect[k].setAttribute("data-value", String(v));
        if (s.text) s.text[k].textContent = fitNumber(v, digits, o.cell);
      }
      if (s.fill[k] !== fill) {
        s.fill[k] = fill;
        s.rect[k].setAttribute("fill", fill);
        if (s.text) s.text[k].style.fill = textOn(fill);
      }
      const a = o.hidden?.(r, c) ? 0 : target(r, c);
      if (s.opacity[k] !== a) {
        s.opacity[k] = a;
        s.g[k].setAttribute("opacity", String(a));
      }
    }
  }
  return (delay, duration) => {
    const dd = typeof duration === "number" ? () => duration : (d: Cell) => duration(d.r, d.c);
    s.groups
      .filter((d) => delay(d.r, d.c) >= 0)
      .transition()
      .delay((d) => delay(d.r, d.c))
      .duration(dd)
      .attr("opacity", (d) => target(d.r, d.c))
      .on("end", (d) => (s.opacity[d.r * cols + d.c] = target(d.r, d.c)));
    // Until the transition ends the cells' opacity is not what was last written.
    for (let r = 0, k = 0; r < rows; r++)
      for (let c = 0; c < cols; c++, k++) if (delay(r, c) >= 0) s.opacity[k] = NaN;
  };
}

/** A canvas matrix: its canvas, the device-pixel bounds of its cells, and what it last painted. */
interface CanvasCells {
  kind: "canvas";
  canvas: HTMLCanvasElement;
  c2d: CanvasRenderingContext2D | null;
  /** One pixel per cell, which the canvas scales up (nearest neighbour), and its pixels. */
  cells: HTMLCanvasElement | null;
  cellsImg: ImageData | null;
  hatch: CanvasPattern | null;
  /** Column c spans device pixels [xs[c], xs[c + 1]), row r [ys[r], ys[r + 1]). */
  xs: Int32Array;
  ys: Int32Array;
  /** The painted colour (packed, or MASKED), opacity and value of each cell, and the colour function. */
  color: Int32Array;
  alpha: Float32Array;
  value: Float64Array;
  colorFn: ColorFn | null;
  painted: boolean;
}

function buildCanvas(grid: G, o: MatrixOpts, old?: HTMLCanvasElement): CanvasCells {
  const { rows, cols } = o.m;
  const cell = o.cell;
  const W = cols * cell,
    H = rows * cell;
  const dpr = window.devicePixelRatio || 1;
  const Wpx = Math.round(W * dpr),
    Hpx = Math.round(H * dpr);
  const fo = grid.append("foreignObject").attr("width", W).attr("height", H);
  const canvas = old ?? pool.get(o.id)?.pop() ?? document.createElement("canvas");
  if (canvas.width !== Wpx) canvas.width = Wpx;
  if (canvas.height !== Hpx) canvas.height = Hpx;
  fo.node()!.append(canvas);
  canvas.dataset.matrix = o.id;
  d3.select(canvas)
    .attr("data-testid", `canvas-${o.id}`)
    .style("width", `${W}px`)
    .style("height", `${H}px`)
    .style("display", "block")
    .on("mousemove", null)
    .on("mouseleave", null)
    .on("click", null)
    .style("cursor", null);
  const xs = Int32Array.from({ length: cols + 1 }, (_, c) => Math.round(c * cell * dpr));
  const ys = Int32Array.from({ length: rows + 1 }, (_, r) => Math.round(r * cell * dpr));
  const n = rows * cols;
  return {
    kind: "canvas",
    canvas,
    c2d: null,
    cells: null,
    cellsImg: null,
    hatch: null,
    xs,
    ys,
    color: new Int32Array(n),
    alpha: new Float32Array(n),
    value: new Float64Array(n),
    colorFn: null,
    painted: false,
  };
}

const abgr = (p: number) => 0xff000000 | ((p & 255) << 16) | (p & 0xff00) | ((p >> 16) & 255);

/** Paints the canvas if its colours, opacities or (when written) numbers changed; returns the reveal animation. */
function updateCanvas(
  s: CanvasCells,
  o: MatrixOpts,
  target: (r: number, c: number) => number,
  digits: number,
): MatrixView["reveal"] {
  const { rows, cols } = o.m;
  const n = rows * cols;
  const data = o.m.data;
  const canvas = s.canvas;
  // A running reveal animation of the previous frame stops here.
  const gen = (gens.get(canvas) ?? 0) + 1;
  gens.set(canvas, gen);
  const alpha = new Float32Array(n);
  if (o.hidden || o.opacity) {
    for (let r = 0, k = 0; r < rows; r++)
      for (let c = 0; c < cols; c++, k++) alpha[k] = o.hidden?.(r, c) ? 0 : target(r, c);
  } else alpha.fill(1);
  // Nothing to paint when the numbers, their colours and the opacities are those last painted.
  let same = s.painted;
  for (let k = 0; same && k < n; k++)
    same = Object.is(data[k], s.value[k]) && alpha[k] === s.alpha[k];
  if (!same || s.colorFn !== o.color) {
    const color = new Int32Array(n);
    const { ramp, rgb } = o.color;
    if (ramp) {
      // The colour table inlined: no call per cell.
      const { packed, a, b } = ramp;
      const last = packed.length - 1;
      for (let k = 0; k < n; k++) {
        const v = data[k];
        if (v - v === 0) {
          const i = Math.round(v * a + b);
          color[k] = packed[i < 0 ? 0 : i > last ? last : i];
        } else color[k] = rgb!(v);
      }
    } else if (rgb) for (let k = 0; k < n; k++) color[k] = rgb(data[k]);
    else for (let k = 0; k < n; k++) color[k] = packColor(o.color(data[k]));
    for (let k = 0; same && k < n; k++) same = color[k] === s.color[k];
    s.colorFn = o.color;
    s.color = color;
  }
  if (!same) {
    s.alpha.set(alpha);
    for (let k = 0; k < n; k++) s.value[k] = data[k];
    paintCanvas(s, o, digits);
  }
  return (delay, duration) => {
    const start = performance.now();
    const from = Float32Array.from(s.alpha);
    const to = new Float32Array(n);
    const d0 = new Float32Array(n),
      d1 = new Float32Array(n);
    let end = 0;
    for (let r = 0, k = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++, k++) {
        d0[k] = delay(r, c);
        d1[k] = typeof duration === "number" ? duration : duration(r, c);
        to[k] = target(r, c);
        if (d0[k] >= 0) end = Math.max(end, d0[k] + d1[k]);
      }
    }
    const frame = () => {
      if (!canvas.isConnected || gens.get(canvas) !== gen) return;
      const t = performance.now() - start;
      for (let k = 0; k < n; k++) {
        if (d0[k] < 0) continue;
        const f = d1[k] > 0 ? Math.min(1, Math.max(0, (t - d0[k]) / d1[k])) : t >= d0[k] ? 1 : 0;
        s.alpha[k] = from[k] + (to[k] - from[k]) * f;
      }
      paintCanvas(s, o, digits);
      if (t < end) requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  };
}

/** The masked-cell hatch at device resolution: pixel (x, y) is a line where (x + y) mod 6·dpr < 1.4·dpr. */
function hatchTile(dpr: number): HTMLCanvasElement {
  const size = Math.round(6 * dpr),
    width = Math.max(1, Math.round(1.4 * dpr));
  const tile = document.createElement("canvas");
  tile.width = tile.height = size;
  const t2d = tile.getContext("2d")!;
  const img = t2d.createImageData(size, size);
  const px = new Uint32Array(img.data.buffer);
  for (let y = 0; y < size; y++)
    for (let x = 0; x < size; x++)
      px[y * size + x] = abgr((x + y) % size < width ? 0x9a9a9a : 0xe4e4e4);
  t2d.putImageData(img, 0, 0);
  return tile;
}

/**
 * Paints the cells: one pixel per cell, scaled up by the canvas without smoothing, then
 * the hatch over masked (−∞) cells and the cell borders as rectangles, and the numbers
 * when cells are big enough.
 */
function paintCanvas(s: CanvasCells, o: MatrixOpts, digits: number): void {
  const { rows, cols } = o.m;
  const n = rows * cols;
  const cell = o.cell;
  const dpr = window.devicePixelRatio || 1;
  // Not an accelerated (composited) canvas: WebKit paints those inside a
  // <foreignObject> at the SVG's origin, ignoring the transforms above them.
  const c2d = (s.c2d ??= s.canvas.getContext("2d", { willReadFrequently: true }));
  if (!c2d) return;
  s.painted = true;
  const Wpx = s.canvas.width,
    Hpx = s.canvas.height;
  const { xs, ys, color, alpha } = s;
  if (!s.cells) {
    s.cells = document.createElement("canvas");
    [s.cells.width, s.cells.height] = [cols, rows];
  }
  const cellsCtx = s.cells.getContext("2d")!;
  const img = (s.cellsImg ??= cellsCtx.createImageData(cols, rows));
  const px = new Uint32Array(img.data.buffer);
  // Each cell's colour faded towards white by its opacity; a masked cell shown hatched.
  const masked: number[] = [];
  for (let k = 0; k < n; k++) {
    const a = alpha[k];
    const p = color[k];
    if (p === MASKED) {
      if (a > 0) masked.push(k);
      px[k] = abgr(a > 0 ? 0xe4e4e4 : 0xffffff);
    } else if (a >= 1) px[k] = abgr(p);
    else {
      const r = Math.round(255 - (255 - ((p >> 16) & 255)) * a);
      const gg = Math.round(255 - (255 - ((p >> 8) & 255)) * a);
      const b = Math.round(255 - (255 - (p & 255)) * a);
      px[k] = abgr((r << 16) | (gg << 8) | b);
    }
  }
  cellsCtx.putImageData(img, 0, 0);
  c2d.setTransform(1, 0, 0, 1, 0, 0);
  c2d.globalAlpha = 1;
  c2d.imageSmoothingEnabled = false;
  c2d.drawImage(s.cells, 0, 0, Wpx, Hpx);
  if (masked.length) {
    c2d.fillStyle = s.hatch ??= c2d.createPattern(hatchTile(dpr), "repeat")!;
    c2d.beginPath();
    for (const k of masked) {
      const r = Math.floor(k / cols),
        c = k % cols;
      c2d.rect(xs[c], ys[r], xs[c + 1] - xs[c], ys[r + 1] - ys[r]);
    }
    c2d.fill();
  }
  if (cell >= 5) {
    // Borders: the last device pixel(s) of every cell but the last row and column.
    const lw = Math.max(1, Math.round(0.5 * dpr));
    c2d.fillStyle = o.stroke ?? "#ffffff";
    for (let c = 1; c < cols; c++) c2d.fillRect(xs[c] - lw, 0, lw, Hpx);
    for (let r = 1; r < rows; r++) c2d.fillRect(0, ys[r] - lw, Wpx, lw);
  }
  if (cell >= NUMBER_MIN_CELL) {
    c2d.setTransform(dpr, 0, 0, dpr, 0, 0);
    c2d.font = `${numberFont(cell)}px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif`;
    c2d.textAlign = "center";
    c2d.textBaseline = "middle";
    for (let k = 0; k < n; k++) {
      if (alpha[k] <= 0) continue;
      const v = o.m.data[k];
      c2d.globalAlpha = alpha[k];
      c2d.fillStyle = textOn(o.color(v));
      c2d.fillText(
        fitNumber(v, digits, cell),
        (k % cols) * cell + cell / 2,
        Math.floor(k / cols) * cell + cell / 2,
      );
    }
    c2d.globalAlpha = 1;
  }
}

/** The matrix cell that has the keyboard focus (kept while a redraw rebuilds the matrix, or its editor is open). */
let focused: { id: string; r: number; c: number } | null = null;

/** A mouse event at the centre of cell (r, c) of a drawn matrix (where the tooltip and the editor open). */
function cellEvent(el: Element, rows: number, cols: number, r: number, c: number): MouseEvent {
  const b = el.getBoundingClientRect();
  return new MouseEvent("click", {
    clientX: b.left + ((c + 0.5) * b.width) / cols,
    clientY: b.top + ((r + 0.5) * b.height) / rows,
  });
}

/** Says `text` to screen readers (a polite live region that only this writes). */
export function announce(text: string): void {
  const el = document.getElementById("announce");
  if (el && el.textContent !== text) el.textContent = text;
}

/**
 * The keyboard: a matrix is one tab stop whose arrow keys move a cell cursor (Home/End:
 * first/last column); the cursor's value is shown and announced; Enter or Space does
 * what a click on the cell does (edit it, toggle a mask cell, open a head).
 */
function bindKeyboard(
  st: MatrixState,
  o: MatrixOpts,
  value: (r: number, c: number) => number,
): void {
  const { rows, cols } = o.m;
  const el = st.hit as SVGElement | HTMLElement;
  setAttr(el, "tabindex", "0");
  setAttr(el, "role", "application");
  setAttr(el, "aria-roledescription", "matrix");
  const name = o.title.replace(/[\^_]/g, "");
  setAttr(
    el,
    "aria-label",
    `${name}, ${rows} by ${cols}: arrow keys move between cells${o.onCell ? ", Enter changes the cell" : ""}`,
  );
  const cur = () =>
    focused && focused.id === o.id && focused.r < rows && focused.c < cols
      ? focused
      : { id: o.id, r: 0, c: 0 };
  const show = () => {
    const f = cur();
    const fr = st.focusRect;
    fr.setAttribute("x", String(f.c * o.cell));
    fr.setAttribute("y", String(f.r * o.cell));
    fr.style.display = el.matches(":focus-visible") ? "" : "none";
    const v = value(f.r, f.c);
    if (o.tip && el.matches(":focus-visible"))
      showTip(cellEvent(el, rows, cols, f.r, f.c), o.tip(f.r, f.c, v));
    announce(`${name} row ${f.r}, column ${f.c}: ${fmt(v, 4)}`);
  };
  d3.select(el)
    .on("focus", () => {
      focused = cur();
      show();
    })
    .on("blur", (e: FocusEvent) => {
      st.focusRect.style.display = "none";
      hideTip();
      const to = e.relatedTarget as Element | null;
      if (to && !to.closest(".cell-editor")) focused = null;
    })
    .on("keydown", (e: KeyboardEvent) => {
      let { r, c } = cur();
      if (e.key === "ArrowRight") c = Math.min(cols - 1, c + 1);
      else if (e.key === "ArrowLeft") c = Math.max(0, c - 1);
      else if (e.key === "ArrowDown") r = Math.min(rows - 1, r + 1);
      else if (e.key === "ArrowUp") r = Math.max(0, r - 1);
      else if (e.key === "Home") c = 0;
      else if (e.key === "End") c = cols - 1;
      else if ((e.key === "Enter" || e.key === " ") && o.onCell) {
        e.preventDefault();
        e.stopPropagation();
        focused = { id: o.id, r, c };
        o.onCell(r, c, cellEvent(el, rows, cols, r, c));
        return;
      } else return;
      e.preventDefault();
      e.stopPropagation();
      focused = { id: o.id, r, c };
      show();
    });
  // A redraw that rebuilt the matrix under the keyboard focus gives the focus back.
  if (focused?.id === o.id && document.activeElement === document.body && el.isConnected)
    el.focus({ preventScroll: true });
}

/** Gives the focus back to the matrix cell that had it (after its editor closes). */
export function refocusMatrix(): void {
  if (!focused) return;
  const el = document.querySelector<HTMLElement>(`[data-hit="${CSS.escape(focused.id)}"]`);
  el?.focus({ preventScroll: true });
}

/** Outline a row or a column of a drawn matrix (returns the outline to animate). */
export function outlineRow(parent: G, v: MatrixView, r: number, cols: number) {
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

export function outlineCol(parent: G, v: MatrixView, c: number, rows: number) {
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

export function outlineCell(parent: G, v: MatrixView, r: number, c: number) {
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

/** An operator symbol (×, =, +, ÷) centred at (x, y). */
export function op(parent: G, x: number, y: number, s: string): void {
  keyed(parent.node()!, "text", { class: "op", x, y }, s);
}

/** A line of note text at (x, y). */
export function note(
  parent: G,
  x: number,
  y: number,
  s: string,
  attrs: Record<string, string | number> = {},
): void {
  keyed(parent.node()!, "text", { class: "note", x, y, ...attrs }, s);
}

/** Writes "W^Q_h" style text: ^x and _x become raised and lowered tspans. */
export function richText(
  t: d3.Selection<SVGTextElement, unknown, null, undefined>,
  s: string,
): void {
  const parts = s.split(/([\^_][A-Za-z0-9]+)/).filter(Boolean);
  for (const p of parts) {
    if (p[0] === "^" || p[0] === "_") {
      t.append("tspan")
        .attr("baseline-shift", p[0] === "^" ? "super" : "sub")
        .attr("font-size", "72%")
        .text(p.slice(1));
    } else {
      t.append("tspan").text(p);
    }
  }
}

/** Approximate width of a title in px (14px semibold). */
export function textWidth(s: string): number {
  let w = 0;
  for (const p of s.split(/([\^_][A-Za-z0-9]+)/).filter(Boolean))
    w += p[0] === "^" || p[0] === "_" ? (p.length - 1) * 8 : p.length * 8.6;
  return w;
}

/** The space above the grid that aligns matrices of a row: the largest of their label spaces. */
export function commonTop(cell: number, ...colLabels: (string[] | undefined)[]): number {
  return Math.max(...colLabels.map((c) => labelSpace({ colLabels: c, cell })[1]));
}
