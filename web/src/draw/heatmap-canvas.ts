// The canvas heatmap renderer: one pixel per cell scaled up, for matrices too big for SVG.
import * as d3 from "d3";
import { MASKED, packColor, textOn, type ColorFn } from "./colors";
import { cellTexts, NUMBER_MIN_CELL } from "./numbers";
import type { MatrixOpts, MatrixView, SvgGroup } from "./types";

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

/** A canvas matrix: its canvas, the device-pixel bounds of its cells, and what it last painted. */
export interface CanvasCells {
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
  /** The decimals the cells' numbers were last painted with (-1: none painted). */
  decimals: number;
}

export function buildCanvas(grid: SvgGroup, o: MatrixOpts, old?: HTMLCanvasElement): CanvasCells {
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
    decimals: -1,
  };
}

const abgr = (p: number) => 0xff000000 | ((p & 255) << 16) | (p & 0xff00) | ((p >> 16) & 255);

/** Paints the canvas if its colours, opacities or (when written) numbers changed; returns the reveal animation. */
export function updateCanvas(
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
    const nums = cellTexts(o.m.data, rows, cols, digits, cell, o.sums);
    s.decimals = nums.decimals;
    c2d.setTransform(dpr, 0, 0, dpr, 0, 0);
    c2d.font = `${nums.font}px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif`;
    c2d.textAlign = "center";
    c2d.textBaseline = "middle";
    for (let k = 0; k < n; k++) {
      if (alpha[k] <= 0) continue;
      const v = o.m.data[k];
      c2d.globalAlpha = alpha[k];
      c2d.fillStyle = textOn(o.color(v));
      c2d.fillText(
        nums.texts[k],
        (k % cols) * cell + cell / 2,
        Math.floor(k / cols) * cell + cell / 2,
      );
    }
    c2d.globalAlpha = 1;
  }
}
