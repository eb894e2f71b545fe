// The numbers written in heatmap cells: their font, their decimals and their rounding.
//
// A learner checks these numbers by hand, so a matrix writes all of them alike: one font
// and one number of decimals for every cell (a narrow cell shrinks the font before any
// decimal goes, and then the decimal goes from every cell, so −0.86 never shows as −0.9
// beside 0.31). Rows that are shares of a whole (the softmax weights) are rounded so
// that the numbers shown add up to the sum shown (largest remainder, as tables of
// percentages are): each cell stays within one unit of its last decimal, and the
// arithmetic a learner does on a row (0.14 × 7) gives the 1.00 written beside it.
// The exact value of a cell is in its tooltip and in its worked arithmetic.
import { fmt } from "../format";

/** Cells at least this many px wide show their numbers (shortened or smaller to fit). */
export const NUMBER_MIN_CELL = 16;

/** The smallest font a cell's number is shrunk to before it loses a decimal. */
const MIN_FONT = 7;

/** Font size of the numbers in cells of `cell` px, before fitting the widest number. */
export function numberFont(cell: number): number {
  return Math.min(11.5, Math.max(MIN_FONT, cell / 3.1));
}

/** Width of a number at `font` px (digits and signs of system-ui are at most 0.6 em). */
const numberWidth = (s: string, font: number) => s.length * font * 0.6;

/**
 * Whether `s` fits in `room` px at `font` px. The font was fitted to the widest number as
 * room / (its length × 0.6), and that product can come back a hair over `room` in floating
 * point: without the tolerance the widest number itself would fall to exponent form.
 */
const fits = (s: string, font: number, room: number) => numberWidth(s, font) <= room + 1e-6;

/** Which numbers of a matrix add up to a whole: each row's, or each column's. */
export type Sums = "rows" | "cols";

/** The numbers of a matrix as its cells write them, and the font they share. */
export interface CellTexts {
  font: number;
  texts: string[];
  /** The decimals every cell is written with. */
  decimals: number;
}

/**
 * The text of every cell of a rows × cols matrix of `cell` px: `digits` decimals, or as many
 * as the widest number fits with, the same for every cell; a number too wide even without
 * decimals goes in exponent form (1e5), or "" when nothing fits (the tooltip still gives it);
 * a NaN cell is blank.
 */
export function cellTexts(
  data: ArrayLike<number>,
  rows: number,
  cols: number,
  digits: number,
  cell: number,
  sums?: Sums,
): CellTexts {
  const room = cell - 2;
  const base = numberFont(cell);
  const n = rows * cols;
  let d = digits,
    font = base;
  for (; d >= 0; d--) {
    let widest = 0;
    for (let k = 0; k < n; k++)
      if (!Number.isNaN(data[k])) widest = Math.max(widest, fmt(data[k], d).length);
    font = Math.min(base, room / (widest * 0.6));
    if (font >= MIN_FONT) break;
  }
  if (d < 0) [d, font] = [0, MIN_FONT];
  const shown = sums ? roundedShares(data, rows, cols, d, sums) : null;
  const texts = new Array<string>(n);
  for (let k = 0; k < n; k++) {
    const v = data[k];
    // NaN marks a cell that has no value yet (a row not decoded): it is left blank.
    if (Number.isNaN(v)) {
      texts[k] = "";
      continue;
    }
    const t = fmt(shown ? shown[k] : v, d);
    if (fits(t, font, room)) texts[k] = t;
    else if (!Number.isFinite(v)) texts[k] = "";
    else {
      const e = v.toExponential(0).replace("e+", "e").replace(/-/g, "−");
      texts[k] = fits(e, font, room) ? e : "";
    }
  }
  return { font, texts, decimals: d };
}

/**
 * Values rounded to `d` decimals so that each row (or column) of those shown adds up to its
 * exact sum rounded the same way, where that keeps equal values equal: every value is first
 * rounded down, then the units still missing go to the values with the largest remainders,
 * a whole group of equal values at a time. A row whose missing units would have to split
 * such a group (seven weights of 1/7) is rounded cell by cell instead: that equal scores
 * get equal weights is the first thing a learner checks, before any sum.
 */
export function roundedShares(
  data: ArrayLike<number>,
  rows: number,
  cols: number,
  d: number,
  sums: Sums,
): number[] {
  const out = Array.from(data);
  for (const line of shareLines(rows, cols, sums)) {
    const shown = addingUp(
      line.map((k) => data[k]),
      d,
    );
    if (shown) line.forEach((k, i) => (out[k] = shown[i]));
  }
  return out;
}

/** The rows (or columns) whose numbers shown at `d` decimals cannot add up to their sum shown. */
export function sharesNotAddingUp(
  data: ArrayLike<number>,
  rows: number,
  cols: number,
  d: number,
  sums: Sums,
): number[] {
  return shareLines(rows, cols, sums)
    .map((line, i) =>
      addingUp(
        line.map((k) => data[k]),
        d,
      )
        ? -1
        : i,
    )
    .filter((i) => i >= 0);
}

/** The flat indices of each row (or column). */
function shareLines(rows: number, cols: number, sums: Sums): number[][] {
  const [lines, len] = sums === "rows" ? [rows, cols] : [cols, rows];
  return Array.from({ length: lines }, (_, line) =>
    Array.from({ length: len }, (_, k) => (sums === "rows" ? line * cols + k : k * cols + line)),
  );
}

/** `values` rounded to `d` decimals adding up to their sum rounded, equal values alike; null if none is. */
function addingUp(values: number[], d: number): number[] | null {
  if (!values.every(Number.isFinite)) return null;
  const unit = 10 ** d;
  const scaled = values.map((v) => v * unit);
  // A value already on the grid (0.29 is 28.999... units) counts as on it.
  const down = scaled.map((s) =>
    Math.abs(s - Math.round(s)) < 1e-9 ? Math.round(s) : Math.floor(s),
  );
  let missing = Math.round(scaled.reduce((a, b) => a + b, 0)) - down.reduce((a, b) => a + b, 0);
  // Groups of equal values, largest remainder first.
  const groups = new Map<number, number[]>();
  values.forEach((v, i) => groups.set(v, [...(groups.get(v) ?? []), i]));
  const order = [...groups.values()].sort(
    (a, b) => scaled[b[0]] - down[b[0]] - (scaled[a[0]] - down[a[0]]),
  );
  for (const g of order) {
    if (missing < g.length) break;
    for (const i of g) down[i]++;
    missing -= g.length;
  }
  return missing === 0 ? down.map((n) => n / unit) : null;
}
