// One floating tooltip for the whole page.

let el: HTMLDivElement | null = null;

function tip(): HTMLDivElement {
  if (!el) {
    el = document.createElement("div");
    el.className = "tooltip";
    el.setAttribute("role", "tooltip");
    el.dataset.testid = "tooltip";
    document.body.append(el);
  }
  return el;
}

export function showTip(e: MouseEvent, html: string): void {
  const t = tip();
  t.innerHTML = html;
  t.style.display = "block";
  const pad = 14;
  const w = t.offsetWidth,
    h = t.offsetHeight;
  let x = e.clientX + pad,
    y = e.clientY + pad;
  if (x + w > innerWidth - 4) x = e.clientX - w - pad;
  if (y + h > innerHeight - 4) y = e.clientY - h - pad;
  t.style.left = `${Math.max(4, x)}px`;
  t.style.top = `${Math.max(4, y)}px`;
}

/**
 * Shows the tooltip level with `anchor` (a label) but outside `clear` (the drawing the label
 * belongs to), so that it covers none of what it explains: beside `clear` on the label's
 * `side` if the window has room there, else on its other side; when neither has room (a
 * phone), under `clear` (or over it).
 */
export function showTipBeside(
  anchor: DOMRect,
  clear: DOMRect,
  side: "left" | "right",
  html: string,
): void {
  const t = tip();
  t.innerHTML = html;
  t.style.display = "block";
  const gap = 8;
  const w = t.offsetWidth,
    h = t.offsetHeight;
  const left = clear.left - w - gap,
    right = clear.right + gap;
  const fitsLeft = left >= 4,
    fitsRight = right + w <= innerWidth - 4;
  let x: number,
    y = anchor.top + anchor.height / 2 - h / 2;
  if (side === "left" ? fitsLeft : fitsRight) x = side === "left" ? left : right;
  else if (side === "left" ? fitsRight : fitsLeft) x = side === "left" ? right : left;
  else {
    // No room beside it (a phone): under the drawing, or over it, whichever the window has
    // room for (else the larger of the two), so that it still covers none of it.
    x = clear.left;
    const below = clear.bottom + gap,
      above = clear.top - gap - h;
    if (below + h <= innerHeight - 4) y = below;
    else if (above >= 4) y = above;
    else y = innerHeight - clear.bottom > clear.top ? below : above;
  }
  t.style.left = `${Math.min(Math.max(4, x), Math.max(4, innerWidth - w - 4))}px`;
  t.style.top = `${Math.min(Math.max(4, y), Math.max(4, innerHeight - h - 4))}px`;
}

export function hideTip(): void {
  if (el) el.style.display = "none";
}
