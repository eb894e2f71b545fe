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

export function hideTip(): void {
  if (el) el.style.display = "none";
}
