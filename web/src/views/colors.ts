// Colour scales: diverging for signed values, sequential for weights in [0, 1].
import * as d3 from "d3";

/** A colour function; `rgb` (optional) is a fast path for canvas drawing: packed 0xRRGGBB, or MASKED (−1). */
export type ColorFn = ((v: number) => string) & { rgb?: (v: number) => number };

export const MASKED = -1;
const parsed = new Map<string, number>();

/** Packed 0xRRGGBB of a colour string (cached), MASKED for the hatch pattern. */
export function packColor(fill: string): number {
  let p = parsed.get(fill);
  if (p === undefined) {
    if (fill.startsWith("url")) p = MASKED;
    else {
      const c = d3.rgb(fill);
      p = ((Math.round(c.r) & 255) << 16) | ((Math.round(c.g) & 255) << 8) | (Math.round(c.b) & 255);
    }
    if (parsed.size > 4096) parsed.clear();
    parsed.set(fill, p);
  }
  return p;
}

/** Packed colour of v under fn: the LUT fast path when there is one. */
export function rgbOf(fn: ColorFn, v: number): number {
  return fn.rgb ? fn.rgb(v) : packColor(fn(v));
}

/** Adds a 256-step lookup table over [lo, hi] (built on first use) as fn.rgb. */
function withLut(fn: (v: number) => string, lo: number, hi: number): ColorFn {
  const f = fn as ColorFn;
  let lut: Int32Array | null = null;
  const N = 256;
  f.rgb = (v: number) => {
    if (v === -Infinity) return packColor(fn(v));
    if (!Number.isFinite(v)) return 0x888888;
    if (!lut) {
      lut = new Int32Array(N);
      for (let k = 0; k < N; k++) lut[k] = packColor(fn(lo + ((hi - lo) * k) / (N - 1)));
    }
    const k = Math.round(((v - lo) / (hi - lo || 1)) * (N - 1));
    return lut[k < 0 ? 0 : k >= N ? N - 1 : k];
  };
  return f;
}

export const MASKED_FILL = "url(#masked-hatch)";

/** Red for positive, blue for negative, white at zero; symmetric domain [-m, m]. */
export function diverging(m: number): ColorFn {
  const s = d3.scaleDiverging(d3.interpolateRdBu).domain([m || 1, 0, -(m || 1)]).clamp(true);
  const mm = m || 1;
  return withLut((v) => (v === -Infinity ? MASKED_FILL : Number.isFinite(v) ? s(v) : "#888"), -mm, mm);
}

export function sequential(max = 1): ColorFn {
  const s = d3.scaleSequential((t) => d3.interpolateBlues(0.04 + 0.96 * t)).domain([0, max]).clamp(true);
  return withLut((v) => (Number.isFinite(v) ? s(v) : "#888"), 0, max);
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
