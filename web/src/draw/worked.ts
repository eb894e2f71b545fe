// The worked arithmetic of a clicked cell, in a panel under the scene: the terms of its dot
// product or weighted sum, so that a learner can check the number by hand. The panel follows
// its cell through redraws (a new query, a new head) and closes when the scene no longer
// draws that matrix, on Esc, or with its close button.
import type { MatrixOpts } from "./types";

/** The cell whose arithmetic is shown: the nth matrix drawn with this id (a batch draws each id once per sentence). */
let picked: { id: string; nth: number; r: number; c: number } | null = null;
/** Whether the current frame drew the picked cell's matrix. */
let drawn = false;

function panel(): HTMLElement | null {
  const el = document.getElementById("worked");
  if (el && !el.dataset.bound) {
    el.dataset.bound = "1";
    el.addEventListener("click", (e) => {
      if ((e.target as Element).closest("[data-worked-close]")) closeWorked();
    });
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && picked) closeWorked();
    });
  }
  return el;
}

function show(html: string, o: MatrixOpts, r: number, c: number): void {
  const el = panel();
  if (!el) return;
  const name = o.title.replace(/[\^_]/g, "");
  el.innerHTML = `<button type="button" class="worked-close" data-worked-close aria-label="close the arithmetic">✕</button><div class="worked-head">${name}, row ${r}, column ${c}</div><div class="worked-body">${html}</div>`;
  el.dataset.cell = `${o.id}:${r}:${c}`;
  el.hidden = false;
}

export function closeWorked(): void {
  picked = null;
  const el = panel();
  if (el && !el.hidden) {
    el.hidden = true;
    el.replaceChildren();
    delete el.dataset.cell;
  }
}

/** A new frame: the panel closes after it unless the frame draws the picked cell's matrix again. */
export function beginWorkedFrame(): void {
  drawn = false;
  // Frames are drawn synchronously: a microtask runs once the whole frame is drawn.
  queueMicrotask(() => {
    if (picked && !drawn) closeWorked();
  });
}

/** Shows the arithmetic of cell (r, c) of the nth matrix drawn as o.id. */
export function pickWorked(o: MatrixOpts, nth: number, r: number, c: number, v: number): void {
  if (!o.work) return;
  picked = { id: o.id, nth, r, c };
  drawn = true;
  show(o.work(r, c, v), o, r, c);
}

/** Called as each matrix is drawn: refreshes the panel if it shows one of this matrix's cells. */
export function redrawWorked(
  o: MatrixOpts,
  nth: number,
  value: (r: number, c: number) => number,
): void {
  if (!picked || picked.id !== o.id || picked.nth !== nth) return;
  const { r, c } = picked;
  if (!o.work || r >= o.m.rows || c >= o.m.cols) return;
  drawn = true;
  show(o.work(r, c, value(r, c)), o, r, c);
}
