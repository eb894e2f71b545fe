// Keyboard access to the cells of a heatmap, and the screen-reader announcements.
import * as d3 from "d3";
import { fmt } from "../format";
import { setAttr } from "./retain";
import { hideTip, showTip } from "./tooltip";
import type { MatrixOpts } from "./types";

/** The matrix cell that has the keyboard focus (kept while a redraw rebuilds the matrix, or its editor is open). */
let focused: { id: string; r: number; c: number } | null = null;

/** A mouse event at the centre of cell (r, c) of a drawn matrix (where the tooltip and the editor open). */
function cellEvent(el: Element, rows: number, cols: number, r: number, c: number): MouseEvent {
  const b = el.getBoundingClientRect();
  return new MouseEvent("click", {
    clientX: b.left + ((c + 0.5) * b.width) / cols,
    clientY: b.top + ((r + 0.5) * b.height) / rows,
  });
}

/** Says `text` to screen readers (a polite live region that only this writes). */
let pending: number | undefined;
export function announce(text: string): void {
  window.clearTimeout(pending);
  const el = document.getElementById("announce");
  if (el && el.textContent !== text) el.textContent = text;
}

/**
 * Announces `text` after `ms` unless something is announced first: what the reader did
 * last (a cell moved to) is never overwritten by an older, delayed announcement.
 */
export function announceLater(text: string, ms: number): void {
  window.clearTimeout(pending);
  pending = window.setTimeout(() => announce(text), ms);
}

/**
 * The keyboard: a matrix is one tab stop whose arrow keys move a cell cursor (Home/End:
 * first/last column); the cursor's value is shown and announced; Enter or Space does
 * what a click on the cell does (edit it, toggle a mask cell, open a head).
 */
export function bindKeyboard(
  st: { hit: Element; focusRect: SVGRectElement },
  o: MatrixOpts,
  value: (r: number, c: number) => number,
): void {
  const { rows, cols } = o.m;
  const el = st.hit as SVGElement | HTMLElement;
  setAttr(el, "tabindex", "0");
  setAttr(el, "role", "application");
  setAttr(el, "aria-roledescription", "matrix");
  const name = o.title.replace(/[\^_]/g, "");
  setAttr(
    el,
    "aria-label",
    `${name}, ${rows} by ${cols}: arrow keys move between cells${o.work ? ", Enter shows the cell's arithmetic" : o.onCell ? ", Enter changes the cell" : ""}`,
  );
  const cur = () =>
    focused && focused.id === o.id && focused.r < rows && focused.c < cols
      ? focused
      : { id: o.id, r: 0, c: 0 };
  const show = () => {
    const f = cur();
    const fr = st.focusRect;
    fr.setAttribute("x", String(f.c * o.cell));
    fr.setAttribute("y", String(f.r * o.cell));
    fr.style.display = el.matches(":focus-visible") ? "" : "none";
    const v = value(f.r, f.c);
    if (o.tip && el.matches(":focus-visible"))
      showTip(cellEvent(el, rows, cols, f.r, f.c), o.tip(f.r, f.c, v));
    announce(`${name} row ${f.r}, column ${f.c}: ${fmt(v, 4)}`);
  };
  d3.select(el)
    .on("focus", () => {
      focused = cur();
      show();
    })
    .on("blur", (e: FocusEvent) => {
      st.focusRect.style.display = "none";
      hideTip();
      const to = e.relatedTarget as Element | null;
      if (to && !to.closest(".cell-editor")) focused = null;
    })
    .on("keydown", (e: KeyboardEvent) => {
      let { r, c } = cur();
      if (e.key === "ArrowRight") c = Math.min(cols - 1, c + 1);
      else if (e.key === "ArrowLeft") c = Math.max(0, c - 1);
      else if (e.key === "ArrowDown") r = Math.min(rows - 1, r + 1);
      else if (e.key === "ArrowUp") r = Math.max(0, r - 1);
      else if (e.key === "Home") c = 0;
      else if (e.key === "End") c = cols - 1;
      else if ((e.key === "Enter" || e.key === " ") && o.onCell) {
        e.preventDefault();
        e.stopPropagation();
        focused = { id: o.id, r, c };
        o.onCell(r, c, cellEvent(el, rows, cols, r, c));
        return;
      } else return;
      e.preventDefault();
      e.stopPropagation();
      focused = { id: o.id, r, c };
      show();
    });
  // A redraw that rebuilt the matrix under the keyboard focus gives the focus back.
  if (focused?.id === o.id && document.activeElement === document.body && el.isConnected)
    el.focus({ preventScroll: true });
}

/** Gives the focus back to the matrix cell that had it (after its editor closes). */
export function refocusMatrix(): void {
  if (!focused) return;
  const el = document.querySelector<HTMLElement>(`[data-hit="${CSS.escape(focused.id)}"]`);
  el?.focus({ preventScroll: true });
}
