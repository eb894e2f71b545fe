// A labelled heatmap of one matrix: D3 band scales and axes for the labels.
// Small matrices (<= SVG_MAX_CELLS cells) get one <rect> per cell joined to its
// value, each carrying its exact value in data-value; larger ones are drawn on a
// <canvas> (inside a <foreignObject>, at devicePixelRatio), the hovered cell found
// from the mouse position. Either way every drawn matrix is registered, so
// window.__attnkit.matrix(id) returns the numbers on screen.
import * as d3 from "d3";
import { fmt } from "../format";
import { MASKED, rgbOf, textOn, type ColorFn } from "./colors";
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
  /** Labels on the right instead of the left. */
  labelsRight?: boolean;
  /** Per-cell opacity (e.g. value rows faded by their weight). */
  opacity?: (r: number, c: number) => number;
  /** Cell border colour (default white). */
  stroke?: string;
  /** Force the renderer (default: canvas above SVG_MAX_CELLS cells). */
  render?: "svg" | "canvas";
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
  reveal: (delay: (r: number, c: number) => number, duration: number | ((r: number, c: number) => number)) => void;
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

/** Canvases of the previous render, reused by matrix id (a new 2D context per redraw is slow). */
let pool = new Map<string, HTMLCanvasElement[]>();
let used = new Map<string, HTMLCanvasElement[]>();

export function clearRegistry(): void {
  registry.length = 0;
  for (const [id, list] of used) pool.set(id, [...(pool.get(id) ?? []), ...list]);
  used = new Map();
  // Keep a bounded pool.
  if ([...pool.values()].reduce((n, l) => n + l.length, 0) > 64) pool = new Map();
}

const gens = new WeakMap<HTMLCanvasElement, number>();

function canvasFor(id: string, w: number, h: number): HTMLCanvasElement {
  const c = pool.get(id)?.pop() ?? document.createElement("canvas");
  if (!used.has(id)) used.set(id, []);
  used.get(id)!.push(c);
  if (c.width !== w) c.width = w;
  if (c.height !== h) c.height = h;
  return c;
}

/** The numbers of the nth drawn matrix with this id (the test hook). */
export function drawnMatrix(id: string, nth = 0): DrawnMatrix | null {
  const hits = registry.filter((e) => e.id === id);
  const e = hits[nth];
  return e ? { id, rows: e.m.rows, cols: e.m.cols, values: Array.from(e.m.data), render: e.render } : null;
}

export function drawnIds(): string[] {
  return registry.map((e) => e.id);
}

const CHAR = 6.3;
const SIN50 = Math.sin((50 * Math.PI) / 180);

/** Space the labels need: [left, top]. */
export function labelSpace(o: Pick<MatrixOpts, "rowLabels" | "colLabels" | "cell" | "rowAxis" | "colAxis">): [number, number] {
  const longest = (a?: string[]) => (a && a.length ? Math.max(...a.map((s) => s.length)) : 0);
  const left = o.rowLabels ? Math.min(110, longest(o.rowLabels) * CHAR + 10) + (o.rowAxis ? 14 : 0) : 0;
  const cl = longest(o.colLabels);
  const rotated = o.colLabels && cl * 7 > o.cell - 2;
  const top = 36 + (o.colLabels ? (rotated ? Math.min(80, cl * CHAR * 0.75) + 6 : 16) : 0) + (o.colAxis ? 12 : 0);
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

export function drawMatrix(parent: G, o: MatrixOpts): MatrixView {
  const { rows, cols } = o.m;
  const cell = o.cell;
  const [left, top0] = labelSpace(o);
  const top = Math.max(top0, o.minTop ?? 0);
  const lx = o.labelsRight ? 0 : left;
  const useCanvas = o.render ? o.render === "canvas" : rows * cols > SVG_MAX_CELLS;
  registry.push({ id: o.id, m: o.m, render: useCanvas ? "canvas" : "svg" });
  const g = parent.append("g").attr("transform", `translate(${o.x},${o.y})`)
    .attr("data-testid", `matrix-${o.id}`).attr("data-rows", rows).attr("data-cols", cols)
    .attr("data-render", useCanvas ? "canvas" : "svg");
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
  const digits = o.digits ?? 2;
  const target = (r: number, c: number) => (o.opacity ? o.opacity(r, c) : 1);
  const value = (r: number, c: number) => o.m.data[r * cols + c];

  let reveal: MatrixView["reveal"];
  if (useCanvas) {
    reveal = drawCanvas(grid, o, target, digits);
  } else {
    reveal = drawSvgCells(grid, o, target, digits, xs, ys);
  }

  // Tooltips and clicks: the cell under the mouse, from its position.
  const hit = (e: MouseEvent): [number, number] | null => {
    const el = grid.select<SVGElement | HTMLCanvasElement>(useCanvas ? "canvas" : "rect.hit").node();
    if (!el) return null;
    const b = el.getBoundingClientRect();
    const c = Math.floor(((e.clientX - b.left) / b.width) * cols);
    const r = Math.floor(((e.clientY - b.top) / b.height) * rows);
    return r >= 0 && r < rows && c >= 0 && c < cols ? [r, c] : null;
  };
  const target2: d3.Selection<Element, unknown, null, undefined> = grid.select<Element>(useCanvas ? "canvas" : "rect.hit");
  if (o.tip) {
    const tipFn = o.tip;
    const show = (e: MouseEvent) => {
      const rc = hit(e);
      if (rc) showTip(e, tipFn(rc[0], rc[1], value(rc[0], rc[1])));
      else hideTip();
    };
    target2.on("mousemove", show).on("mouseleave", hideTip);
  }
  if (o.onCell) {
    const on = o.onCell;
    target2.style("cursor", "pointer").on("click", (e: MouseEvent) => {
      const rc = hit(e);
      if (rc) on(rc[0], rc[1], e);
    });
  }
  // Axes: tokens or dimensions as tick labels, thinned so that none overlap.
  const axisFont = Math.min(11, Math.max(7, cell * 0.8));
  if (o.rowLabels) {
    const labels = o.rowLabels;
    const axis = (o.labelsRight ? d3.axisRight(ys) : d3.axisLeft(ys)).tickSize(0).tickPadding(5)
      .tickValues(tickIndices(rows, cell, axisFont * 1.15)).tickFormat((r) => labels[r] ?? "");
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
    // Rotated labels stack at cell·sin(50°) apart (the font shrinks a little to fit
    // every label before any is dropped); flat ones need their width.
    const colFont = rotated ? Math.max(7, Math.min(axisFont, (cell * SIN50) / 1.1)) : axisFont;
    const space = rotated ? (colFont * 1.1) / SIN50 : cl * colFont * 0.62 + 4;
    const axis = d3.axisTop(xs).tickSize(0).tickPadding(4)
      .tickValues(tickIndices(cols, cell, space)).tickFormat((c) => labels[c] ?? "");
    const ag = grid.append("g").attr("class", "m-axis m-cols").call(axis);
    ag.selectAll("text").attr("font-size", colFont);
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
  return { g, width, height, gx: o.x + lx, gy: o.y + top, cell, canvas: useCanvas, reveal };
}

function drawSvgCells(grid: G, o: MatrixOpts, target: (r: number, c: number) => number, digits: number,
  xs: d3.ScaleBand<number>, ys: d3.ScaleBand<number>): MatrixView["reveal"] {
  const { rows, cols } = o.m;
  const cell = o.cell;
  const data: Cell[] = [];
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) data.push({ r, c, v: o.m.data[r * cols + c] });
  const cells = grid.selectAll<SVGGElement, Cell>("g.c").data(data).join("g").attr("class", "c")
    .attr("transform", (d) => `translate(${xs(d.c)},${ys(d.r)})`)
    .attr("opacity", (d) => (o.hidden?.(d.r, d.c) ? 0 : target(d.r, d.c)));
  const rects = cells.append("rect").attr("class", "cell").attr("width", cell).attr("height", cell)
    .attr("data-row", (d) => d.r).attr("data-col", (d) => d.c)
    .attr("data-value", (d) => String(d.v))
    .attr("fill", (d) => o.color(d.v));
  if (o.stroke) rects.style("stroke", o.stroke);
  if (cell >= 25) {
    const fontSize = Math.min(11.5, cell / 3.1);
    cells.append("text").attr("class", "cell-text").attr("x", cell / 2).attr("y", cell / 2)
      .attr("font-size", fontSize).style("fill", (d) => textOn(o.color(d.v)))
      .text((d) => fmt(d.v, digits));
  }
  // One transparent rect over the grid takes the mouse (the cell comes from the position).
  grid.append("rect").attr("class", "hit").attr("width", cols * cell).attr("height", rows * cell).attr("fill", "transparent");
  return (delay, duration) => {
    const dd = typeof duration === "number" ? () => duration : (d: Cell) => duration(d.r, d.c);
    cells.filter((d) => delay(d.r, d.c) >= 0).transition().delay((d) => delay(d.r, d.c)).duration(dd)
      .attr("opacity", (d) => target(d.r, d.c));
  };
}

function drawCanvas(grid: G, o: MatrixOpts, target: (r: number, c: number) => number, digits: number): MatrixView["reveal"] {
  const { rows, cols } = o.m;
  const cell = o.cell;
  const W = cols * cell, H = rows * cell;
  const dpr = window.devicePixelRatio || 1;
  const fo = grid.append("foreignObject").attr("width", W).attr("height", H);
  const canvas = canvasFor(o.id, Math.round(W * dpr), Math.round(H * dpr));
  fo.node()!.append(canvas);
  // A reused canvas may still run the previous render's animation: this one takes over.
  const gen = (gens.get(canvas) ?? 0) + 1;
  gens.set(canvas, gen);
  d3.select(canvas).attr("data-testid", `canvas-${o.id}`)
    .style("width", `${W}px`).style("height", `${H}px`).style("display", "block")
    .on("mousemove", null).on("mouseleave", null).on("click", null).style("cursor", null);
  const n = rows * cols;
  const colors = new Int32Array(n);
  let anyMasked = false;
  for (let k = 0; k < n; k++) {
    colors[k] = rgbOf(o.color, o.m.data[k]);
    if (colors[k] === MASKED) anyMasked = true;
  }
  const alpha = new Float32Array(n);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) alpha[r * cols + c] = o.hidden?.(r, c) ? 0 : target(r, c);
  // Pixel geometry at device resolution: which cell each pixel column / row is in,
  // and whether it is the cell's border line.
  const Wpx = Math.round(W * dpr), Hpx = Math.round(H * dpr);
  const lines = cell >= 5;
  const colOf = new Int32Array(Wpx), rowOf = new Int32Array(Hpx);
  const colLine = new Uint8Array(Wpx), rowLine = new Uint8Array(Hpx);
  const lw = Math.max(1, Math.round(0.5 * dpr));
  for (let x = 0; x < Wpx; x++) {
    const c = Math.min(cols - 1, Math.floor(x / (cell * dpr)));
    colOf[x] = c;
    colLine[x] = lines && x >= Math.round((c + 1) * cell * dpr) - lw && c < cols - 1 ? 1 : 0;
  }
  for (let y = 0; y < Hpx; y++) {
    const r = Math.min(rows - 1, Math.floor(y / (cell * dpr)));
    rowOf[y] = r;
    rowLine[y] = lines && y >= Math.round((r + 1) * cell * dpr) - lw && r < rows - 1 ? 1 : 0;
  }
  const abgr = (p: number) => 0xff000000 | ((p & 255) << 16) | (p & 0xff00) | ((p >> 16) & 255);
  const strokeP = abgr(o.stroke ? rgbOf(() => o.stroke!, 0) : 0xffffff);
  const hatchBg = abgr(0xe4e4e4), hatchFg = abgr(0x9a9a9a);
  const shown = new Int32Array(n);
  const hatch = Math.round(6 * dpr), hatchW = Math.max(1, Math.round(1.4 * dpr));
  const paint = () => {
    const c2d = canvas.getContext("2d");
    if (!c2d) return;
    for (let k = 0; k < n; k++) {
      const a = alpha[k];
      const p = colors[k] === MASKED ? (a > 0 ? MASKED : 0xffffff) : colors[k];
      if (p === MASKED || a >= 1) shown[k] = p === MASKED ? MASKED : abgr(p);
      else {
        const r = Math.round(255 - (255 - ((p >> 16) & 255)) * a);
        const gg = Math.round(255 - (255 - ((p >> 8) & 255)) * a);
        const b = Math.round(255 - (255 - (p & 255)) * a);
        shown[k] = abgr((r << 16) | (gg << 8) | b);
      }
    }
    const img = c2d.createImageData(Wpx, Hpx);
    const px = new Uint32Array(img.data.buffer);
    let prevRow = -1, prevStart = 0;
    for (let y = 0; y < Hpx; y++) {
      const r = rowOf[y];
      const start = y * Wpx;
      if (rowLine[y]) {
        px.fill(strokeP, start, start + Wpx);
        prevRow = -1;
        continue;
      }
      const base = r * cols;
      let masked = false;
      if (r === prevRow && !anyMasked) {
        px.copyWithin(start, prevStart, prevStart + Wpx);
        continue;
      }
      for (let x = 0; x < Wpx; x++) {
        if (colLine[x]) {
          px[start + x] = strokeP;
          continue;
        }
        const v = shown[base + colOf[x]];
        if (v === MASKED) {
          masked = true;
          px[start + x] = (x + y) % hatch < hatchW ? hatchFg : hatchBg;
        } else px[start + x] = v;
      }
      prevRow = masked ? -1 : r;
      prevStart = start;
    }
    c2d.putImageData(img, 0, 0);
    c2d.setTransform(dpr, 0, 0, dpr, 0, 0);
    if (cell >= 25) {
      c2d.font = `${Math.min(11.5, cell / 3.1)}px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif`;
      c2d.textAlign = "center";
      c2d.textBaseline = "middle";
      for (let k = 0; k < n; k++) {
        if (alpha[k] <= 0) continue;
        const v = o.m.data[k];
        c2d.globalAlpha = alpha[k];
        c2d.fillStyle = textOn(o.color(v));
        c2d.fillText(fmt(v, digits), (k % cols) * cell + cell / 2, Math.floor(k / cols) * cell + cell / 2);
      }
      c2d.globalAlpha = 1;
    }
  };
  paint();
  return (delay, duration) => {
    const start = performance.now();
    const from = Float32Array.from(alpha);
    const d0 = new Float32Array(n), d1 = new Float32Array(n);
    let end = 0;
    for (let k = 0; k < n; k++) {
      const r = Math.floor(k / cols), c = k % cols;
      d0[k] = delay(r, c);
      d1[k] = typeof duration === "number" ? duration : duration(r, c);
      if (d0[k] >= 0) end = Math.max(end, d0[k] + d1[k]);
    }
    const frame = () => {
      if (!canvas.isConnected || gens.get(canvas) !== gen) return;
      const t = performance.now() - start;
      for (let k = 0; k < n; k++) {
        if (d0[k] < 0) continue;
        const f = d1[k] > 0 ? Math.min(1, Math.max(0, (t - d0[k]) / d1[k])) : t >= d0[k] ? 1 : 0;
        const to = target(Math.floor(k / cols), k % cols);
        alpha[k] = from[k] + (to - from[k]) * f;
      }
      paint();
      if (t < end) requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  };
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
