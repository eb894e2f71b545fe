// Colour scales: diverging for signed values, sequential for weights in [0, 1].
import * as d3 from "d3";

export type ColorFn = (v: number) => string;

export const MASKED_FILL = "url(#masked-hatch)";

/** Red for positive, blue for negative, white at zero; symmetric domain [-m, m]. */
export function diverging(m: number): ColorFn {
  const s = d3.scaleDiverging(d3.interpolateRdBu).domain([m || 1, 0, -(m || 1)]).clamp(true);
  return (v) => (v === -Infinity ? MASKED_FILL : Number.isFinite(v) ? s(v) : "#888");
}

export function sequential(max = 1): ColorFn {
  const s = d3.scaleSequential((t) => d3.interpolateBlues(0.04 + 0.96 * t)).domain([0, max]).clamp(true);
  return (v) => (Number.isFinite(v) ? s(v) : "#888");
}

/** Dark or light text for a background colour. */
export function textOn(fill: string): string {
  if (fill.startsWith("url")) return "#333";
  const c = d3.lab(fill);
  return c.l > 58 ? "#1b1b1b" : "#fff";
}

/** One colour per head. */
export function headColor(h: number): string {
  return d3.schemeTableau10[h % 10];
}

/** Adds the shared <defs> (hatch for masked cells) and the SVG style to an svg. */
export function addDefs(svg: d3.Selection<SVGSVGElement, unknown, null, undefined>): void {
  const defs = svg.append("defs");
  const p = defs.append("pattern").attr("id", "masked-hatch").attr("width", 6).attr("height", 6)
    .attr("patternUnits", "userSpaceOnUse").attr("patternTransform", "rotate(45)");
  p.append("rect").attr("width", 6).attr("height", 6).attr("fill", "#e4e4e4");
  p.append("line").attr("x1", 0).attr("y1", 0).attr("x2", 0).attr("y2", 6).attr("stroke", "#9a9a9a").attr("stroke-width", 2);
  svg.append("style").text(SVG_CSS);
}

/** Styles inside every SVG, so exported files look like the page. */
export const SVG_CSS = `
text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; fill: #1b1b1b; }
.m-title { font-size: 14px; font-weight: 600; }
.m-shape { font-size: 11px; fill: #666; }
.m-axis text { font-size: 11px; }
.m-axis path, .m-axis line { stroke: none; }
.m-axis-title { font-size: 10px; fill: #777; font-style: italic; }
.cell { stroke: #fff; stroke-width: 0.5; }
.cell-text { pointer-events: none; text-anchor: middle; dominant-baseline: central; }
.hl-row, .hl-col { fill: none; stroke: #f59e0b; stroke-width: 2.5; pointer-events: none; }
.op { font-size: 22px; fill: #555; text-anchor: middle; dominant-baseline: central; }
.note { font-size: 12px; fill: #444; }
.expansion { font-size: 13px; }
.unknown { font-style: italic; fill: #8a5a00; }
.tok-pad { fill: #999; }
.legend-title { font-size: 11px; fill: #555; }
.legend .tick text { font-size: 10px; }
`;
