// DOM helpers of the page: elements by id, HTML updated by a diff, and the stage's width.

export const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/**
 * The stage's width, read once and then kept by the ResizeObserver: reading it in a
 * render, after the controls were written, would force a synchronous layout.
 */
let stageWidthPx: number | undefined;
export function stageWidth(): number {
  return (stageWidthPx ??= $("stage").clientWidth);
}

/** Calls `redraw` on the next frame when the stage's width changes by more than 8 px. */
export function onStageResize(redraw: () => void): void {
  let lastWidth = stageWidth();
  let resizePending = false;
  new ResizeObserver(() => {
    // Read after layout (no forced layout); the render uses this value.
    const w = (stageWidthPx = $("stage").clientWidth);
    if (Math.abs(w - lastWidth) > 8 && !resizePending) {
      // On the next frame, not inside the observer: the redraw resizes what it observes.
      resizePending = true;
      requestAnimationFrame(() => {
        resizePending = false;
        lastWidth = stageWidthPx = $("stage").clientWidth;
        redraw();
      });
    }
  }).observe($("stage"));
}

/**
 * Sets an element's HTML by changing only what differs from what it shows (a caption
 * that changes one number keeps its other nodes, and an input in it stays the same
 * element while it is dragged).
 */
const shownHtml = new Map<string, string>();
export function setHtml(id: string, html: string): void {
  if (shownHtml.get(id) === html) return;
  shownHtml.set(id, html);
  const tpl = document.createElement("template");
  tpl.innerHTML = html;
  morph($(id), tpl.content);
}

function morph(cur: Node, next: Node): void {
  if (cur instanceof Element && next instanceof Element) {
    for (const a of [...cur.attributes])
      if (!next.hasAttribute(a.name)) cur.removeAttribute(a.name);
    for (const a of [...next.attributes])
      if (cur.getAttribute(a.name) !== a.value) cur.setAttribute(a.name, a.value);
  } else if (cur.nodeType !== Node.ELEMENT_NODE && cur.nodeType !== Node.DOCUMENT_FRAGMENT_NODE) {
    if (cur.nodeValue !== next.nodeValue) cur.nodeValue = next.nodeValue;
    return;
  }
  const cs = [...cur.childNodes],
    ns = [...next.childNodes];
  ns.forEach((n, i) => {
    const c = cs[i];
    if (!c) cur.appendChild(n);
    else if (c.nodeType !== n.nodeType || c.nodeName !== n.nodeName) cur.replaceChild(n, c);
    else if (!c.isEqualNode(n)) morph(c, n);
  });
  for (let i = ns.length; i < cs.length; i++) cs[i].remove();
}
