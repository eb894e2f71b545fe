// SVG text helpers: operators, notes, raised and lowered indices, and title widths.
import type * as d3 from "d3";
import { keyed } from "./retain";
import type { SvgGroup } from "./types";

/** An operator symbol (×, =, +, ÷) centred at (x, y). */
export function op(parent: SvgGroup, x: number, y: number, s: string): void {
  keyed(parent.node()!, "text", { class: "op", x, y }, s);
}

/** A line of note text at (x, y). */
export function note(
  parent: SvgGroup,
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
