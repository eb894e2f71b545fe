// Every matrix drawn in the current render, with its numbers: the test hook
// window.__attnkit.matrix(id) reads the numbers on screen from here.
import type { MatrixData } from "./types";
import { beginWorkedFrame } from "./worked";

export interface DrawnMatrix {
  id: string;
  rows: number;
  cols: number;
  values: number[];
  render: "svg" | "canvas";
}

/** Every matrix of the current scene, in drawing order (cleared on each render). */
const registry: { id: string; m: MatrixData; render: "svg" | "canvas" }[] = [];

/** Records a matrix as drawn (in drawing order); returns how many were drawn with this id before it. */
export function registerMatrix(id: string, m: MatrixData, render: "svg" | "canvas"): number {
  const nth = registry.filter((e) => e.id === id).length;
  registry.push({ id, m, render });
  return nth;
}

export function clearRegistry(): void {
  registry.length = 0;
  hiddenNumbers = false;
  wholeNumbers.length = 0;
  beginWorkedFrame();
}

/** The numbers of the nth drawn matrix with this id (the test hook). */
export function drawnMatrix(id: string, nth = 0): DrawnMatrix | null {
  const hits = registry.filter((e) => e.id === id);
  const e = hits[nth];
  return e
    ? { id, rows: e.m.rows, cols: e.m.cols, values: Array.from(e.m.data), render: e.render }
    : null;
}

export function drawnIds(): string[] {
  return registry.map((e) => e.id);
}

/** Whether a matrix of the last render had cells too small for their numbers. */
let hiddenNumbers = false;
export function numbersHidden(): boolean {
  return hiddenNumbers;
}

/** Records that a drawn matrix had cells too small for their numbers. */
export function markNumbersHidden(): void {
  hiddenNumbers = true;
}

/** The titles of the matrices of the last render whose numbers lost every decimal to fit their cells. */
const wholeNumbers: string[] = [];
export function roundedToWhole(): readonly string[] {
  return wholeNumbers;
}

/** Records that a drawn matrix (`title`) writes its numbers as whole numbers to fit its cells. */
export function markWholeNumbers(title: string): void {
  if (!wholeNumbers.includes(title)) wholeNumbers.push(title);
}
