// Colour scales: diverging for signed values, sequential for weights in [0, 1].
import * as d3 from "d3";

/**
 * A colour function. Optional fast paths for canvas drawing: `rgb` gives packed 0xRRGGBB
 * (or MASKED, −1); `ramp` says the colour of a finite v is packed[round(v·a + b)], clamped.
 */
export type ColorFn = ((v: number) => string) & { rgb?: (v: number) => number; ramp?: RampMap };

export interface RampMap {
  packed: Int32Array;
  a: number;
  b: number;
}

export const MASKED = -1;
const parsed = new Map<string, number>();

/** Packed 0xRRGGBB of a colour string (cached), MASKED for the hatch pattern. */
export function packColor(fill: string): number {
  let p = parsed.get(fill);
  if (p === undefined) {
    if (fill.startsWith("url")) p = MASKED;
    else {
      const c = d3.rgb(fill);
      p =
        ((Math.round(c.r) & 255) << 16) | ((Math.round(c.g) & 255) << 8) | (Math.round(c.b) & 255);
    }
    if (parsed.size > 4096) parsed.clear();
    parsed.set(fill, p);
  }
  return p;
}

/** Packed colour of v under fn: the table fast path when there is one. */
export function rgbOf(fn: ColorFn, v: number): number {
  return fn.rgb ? fn.rgb(v) : packColor(fn(v));
}

/** A colour ramp sampled once at N points: "#rrggbb" strings and packed 0xRRGGBB. */
interface Ramp {
  hex: string[];
  packed: Int32Array;
}
const N = 512;
function sampleRamp(interpolate: (t: number) => string): Ramp {
  const hex: string[] = [];
  const packed = new Int32Array(N);
  for (let k = 0; k < N; k++) {
    const c = d3.rgb(interpolate(k / (N - 1)));
    packed[k] =
      ((Math.round(c.r) & 255) << 16) | ((Math.round(c.g) & 255) << 8) | (Math.round(c.b) & 255);
    hex.push(`#${packed[k].toString(16).padStart(6, "0")}`);
    parsed.set(hex[k], packed[k]);
  }
  return { hex, packed };
}
let rdbu: Ramp | null = null,
  blues: Ramp | null = null;

/**
 * A colour function over a ramp: t(v) in [0, 1] picks one of N samples (the same colour
 * for an SVG cell and a canvas pixel); `special` colours non-finite values.
 */
function onRamp(ramp: Ramp, t0: number, t1: number, special: (v: number) => string): ColorFn {
  // t(v) = t0 + t1·v; sample index round(t(v)·(N − 1)) = round(v·a + b).
  const a = t1 * (N - 1),
    b = t0 * (N - 1);
  const index = (v: number) => {
    const k = Math.round(v * a + b);
    return k < 0 ? 0 : k >= N ? N - 1 : k;
  };
  const f = ((v: number) => (Number.isFinite(v) ? ramp.hex[index(v)] : special(v))) as ColorFn;
  f.rgb = (v: number) => (Number.isFinite(v) ? ramp.packed[index(v)] : packColor(special(v)));
  f.ramp = { packed: ramp.packed, a, b };
  return f;
}

export const MASKED_FILL = "url(#masked-hatch)";

// Colour functions are memoised by their domain: a redraw with the same domain gets the
// same function (no new closures, no new tables).
const memo = new Map<string, ColorFn>();
function memoised(key: string, make: () => ColorFn): ColorFn {
  let f = memo.get(key);
  if (!f) {
    if (memo.size > 256) memo.clear();
    memo.set(key, (f = make()));
  }
  return f;
}

/** Red for positive, blue for negative, white at zero; symmetric domain [-m, m]. */
export function diverging(m: number): ColorFn {
  const mm = m || 1;
  return memoised(`d${mm}`, () => {
    rdbu ??= sampleRamp(d3.interpolateRdBu);
    // interpolateRdBu runs red (0) to blue (1): +m -> 0, 0 -> 0.5, -m -> 1.
    return onRamp(rdbu, 0.5, -1 / (2 * mm), (v) => (v === -Infinity ? MASKED_FILL : "#888"));
  });
}

export function sequential(max = 1): ColorFn {
  return memoised(`s${max}`, () => {
    blues ??= sampleRamp((t) => d3.interpolateBlues(0.04 + 0.96 * t));
    return onRamp(blues, 0, 1 / max, () => "#888");
  });
}

const textColors = new Map<string, string>();
/** Dark or light text for a background colour. */
export function textOn(fill: string): string {
  let t = textColors.get(fill);
  if (t === undefined) {
    t = fill.startsWith("url") ? "#333" : d3.lab(fill).l > 58 ? "#1b1b1b" : "#fff";
    if (textColors.size > 4096) textColors.clear();
    textColors.set(fill, t);
  }
  return t;
}

/** One colour per head. */
export function headColor(h: number): string {
  return d3.schemeTableau10[h % 10];
}

/** Adds the shared <defs> (hatch for masked cells) and the SVG style to an svg. */
export function addDefs(svg: d3.Selection<SVGSVGElement, unknown, null, undefined>): void {
  const defs = svg.append("defs");
  const p = defs
    .append("pattern")
    .attr("id", "masked-hatch")
    .attr("width", 6)
    .attr("height", 6)
    .attr("patternUnits", "userSpaceOnUse")
    .attr("patternTransform", "rotate(45)");
  p.append("rect").attr("width", 6).attr("height", 6).attr("fill", "#e4e4e4");
  p.append("line")
    .attr("x1", 0)
    .attr("y1", 0)
    .attr("x2", 0)
    .attr("y2", 6)
    .attr("stroke", "#9a9a9a")
    .attr("stroke-width", 2);
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
.m-focus { fill: none; stroke: #2563eb; stroke-width: 3; pointer-events: none; }
[data-hit]:focus { outline: none; }
.hv-token:focus-visible { outline: 2px solid #2563eb; outline-offset: 2px; }
.op { font-size: 22px; fill: #555; text-anchor: middle; dominant-baseline: central; }
.note { font-size: 12px; fill: #444; }
.hv-label { font-family: ui-monospace, monospace; font-size: 12px; }
.expansion { font-size: 13px; }
.unknown { font-style: italic; fill: #8a5a00; }
.tok-pad { fill: #999; }
.legend-title { font-size: 11px; fill: #555; }
.legend .tick text { font-size: 10px; }
`;
