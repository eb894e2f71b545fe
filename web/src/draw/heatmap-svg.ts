// The SVG heatmap renderer: one element per cell, each with its exact value in data-value.
import * as d3 from "d3";
import { textOn } from "./colors";
import { cellTexts, numberFont, NUMBER_MIN_CELL } from "./numbers";
import type { Cell, MatrixOpts, MatrixView, SvgGroup } from "./types";

/** SVG cells: one <g> per cell (its opacity) holding a rect (its colour) and, if big enough, its number. */
export interface SvgCells {
  kind: "svg";
  groups: d3.Selection<SVGGElement, Cell, SVGGElement, unknown>;
  g: SVGGElement[];
  rect: SVGRectElement[];
  text: SVGTextElement[] | null;
  /** Last written value (NaN first), text, font, fill and opacity of each cell. */
  value: Float64Array;
  shown: string[];
  font: number;
  /** The decimals the cells' numbers were last written with (-1: none written). */
  decimals: number;
  fill: string[];
  opacity: Float64Array;
}

export function buildSvgCells(grid: SvgGroup, o: MatrixOpts): SvgCells {
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
    shown: new Array<string>(n).fill(""),
    font: numberFont(cell),
    decimals: -1,
    fill: new Array<string>(n).fill(""),
    opacity: new Float64Array(n).fill(NaN),
  };
}

/** Writes the cells that changed; returns the reveal animation. */
export function updateSvgCells(
  s: SvgCells,
  o: MatrixOpts,
  target: (r: number, c: number) => number,
  digits: number,
): MatrixView["reveal"] {
  const { rows, cols } = o.m;
  const nums = s.text ? cellTexts(o.m.data, rows, cols, digits, o.cell, o.sums) : null;
  s.decimals = nums ? nums.decimals : -1;
  if (s.text && nums && s.font !== nums.font) {
    s.font = nums.font;
    for (const t of s.text) t.setAttribute("font-size", String(nums.font));
  }
  for (let r = 0, k = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++, k++) {
      const v = o.m.data[k];
      const fill = o.color(v);
      if (!Object.is(s.value[k], v)) {
        s.value[k] = v;
        s.rect[k].setAttribute("data-value", String(v));
      }
      if (s.text && nums && s.shown[k] !== nums.texts[k])
        s.text[k].textContent = s.shown[k] = nums.texts[k];
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
