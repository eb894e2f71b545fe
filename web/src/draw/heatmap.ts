// A labelled heatmap of one matrix: D3 band scales and axes for the labels.
// Small matrices (<= SVG_MAX_CELLS cells) get one <rect> per cell joined to its
// value, each carrying its exact value in data-value; larger ones are drawn on a
// <canvas> (inside a <foreignObject>, at devicePixelRatio), the hovered cell found
// from the mouse position. Either way every drawn matrix is registered, so
// window.__attnkit.matrix(id) returns the numbers on screen.
import * as d3 from "d3";
import { bindKeyboard } from "./cell-keyboard";
import { buildCanvas, updateCanvas, type CanvasCells } from "./heatmap-canvas";
import { buildSvgCells, updateSvgCells, type SvgCells } from "./heatmap-svg";
import { drawAxes, labelSpace } from "./labels";
import { NUMBER_MIN_CELL } from "./numbers";
import { markNumbersHidden, markWholeNumbers, registerMatrix } from "./registry";
import { retained, setAttr, setText } from "./retain";
import { richText, textWidth } from "./text";
import { hideTip, showTip } from "./tooltip";
import type { MatrixOpts, MatrixView, SvgGroup } from "./types";
import { pickWorked, redrawWorked } from "./worked";

/** Above this many cells a matrix is drawn on a canvas. */
export const SVG_MAX_CELLS = 400;

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

export function drawMatrix(parent: SvgGroup, o: MatrixOpts): MatrixView {
  const { rows, cols } = o.m;
  const cell = o.cell;
  const [left, top0] = labelSpace(o);
  const top = o.top ?? Math.max(top0, o.minTop ?? 0);
  const lx = o.labelsRight ? 0 : left;
  const useCanvas = o.render ? o.render === "canvas" : rows * cols > SVG_MAX_CELLS;
  const nth = registerMatrix(o.id, o.m, useCanvas ? "canvas" : "svg");
  if (cell < NUMBER_MIN_CELL && o.tip) markNumbersHidden();
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
    o.minLabelFont,
    o.rowAxis,
    o.colAxis,
    o.stroke,
    !!o.tip,
    !!(o.onCell || o.work),
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
  // Numbers that lost every decimal to fit (6.891 written 7) are said so, by name, under the stage.
  const whole = digits > 0 && st.cells.decimals === 0;
  setAttr(node, "data-whole-numbers", whole ? "1" : null);
  if (whole) markWholeNumbers(st.title.textContent ?? o.id);

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
  // A click shows the cell's worked arithmetic (if it has one), then does what the scene asks.
  const onCell =
    o.onCell || o.work
      ? (r: number, c: number, e: MouseEvent) => {
          pickWorked(o, nth, r, c, value(r, c));
          o.onCell?.(r, c, e);
        }
      : undefined;
  if (onCell) {
    h.on("click", (e: MouseEvent) => {
      const rc = hit(e);
      if (rc) onCell(rc[0], rc[1], e);
    });
  }
  if (o.tip || onCell) bindKeyboard(st, { ...o, onCell }, value);
  redrawWorked(o, nth, value);
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
  parent: SvgGroup,
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
  if (o.onCell || o.work) d3.select(hit).style("cursor", "pointer");
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
  drawAxes(grid, o, left);
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
