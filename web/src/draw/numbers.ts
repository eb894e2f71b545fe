// The numbers written in heatmap cells: their font and how they are shortened to fit.
import { fmt } from "../format";

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
