// Retained drawing. A redraw of the scene on screen keeps the elements of the previous
// frame in place: a drawing asks for its element by key under its parent, and gets the
// previous one back when its layout signature is unchanged, to update only what changed
// (cell colours, values). A control change then creates no DOM, restyles no unchanged
// node and makes no new 2D context; only a change of layout rebuilds an element.
//
// render.ts brackets each render: beginFrame(retain), the scene draws, endFrame() removes
// the previous frame's keyed elements that were not asked for again.

export interface Entry<S = unknown> {
  node: SVGElement;
  sig: string;
  /** Whatever the drawing keeps to update itself (geometry, last painted values). */
  state: S;
}

type Entries = Map<string, Entry>;

/** The keyed elements of the previous frame, by parent; those of this frame. */
let prev = new Map<Element, Entries>();
let prevNodes = new Set<Element>();
let cur = new Map<Element, Entries>();
/** Occurrences of each key under each parent in this frame (a key may repeat). */
let seen = new Map<Element, Map<string, number>>();
let retaining = false;

/** Starts a frame; with retain = false nothing of the previous frame is reused. */
export function beginFrame(retain: boolean): void {
  retaining = retain;
  if (!retain) {
    prev = new Map();
    prevNodes = new Set();
  }
  cur = new Map();
  seen = new Map();
}

/**
 * Children of `parent` the frame about to be drawn may reuse (the previous frame's
 * keyed elements): render.ts removes every other child before the scene draws.
 */
export function isCandidate(node: Element): boolean {
  return retaining && prevNodes.has(node);
}

/** Ends a frame: removes the previous frame's keyed elements not used again (returned for recycling). */
export function endFrame(): Element[] {
  const used = new Set<Element>();
  for (const m of cur.values()) for (const e of m.values()) used.add(e.node);
  const dropped: Element[] = [];
  for (const [parent, m] of prev) {
    for (const e of m.values()) {
      if (!used.has(e.node) && e.node.parentNode === parent) {
        e.node.remove();
        dropped.push(e.node);
      }
    }
  }
  prev = cur;
  prevNodes = used;
  cur = new Map();
  return dropped;
}

/**
 * The element for `key` under `parent`: the previous frame's if its signature is `sig`
 * (reused: true), else a new one from `build`, which gets the previous entry, if any,
 * to take parts from (a canvas and its 2D context).
 */
export function retained<S>(
  parent: Element,
  key: string,
  sig: string,
  build: (old: Entry<S> | undefined) => { node: SVGElement; state: S },
): { entry: Entry<S>; reused: boolean } {
  let counts = seen.get(parent);
  if (!counts) seen.set(parent, (counts = new Map()));
  const n = counts.get(key) ?? 0;
  counts.set(key, n + 1);
  const k = `${key}#${n}`;
  const old = retaining ? (prev.get(parent)?.get(k) as Entry<S> | undefined) : undefined;
  let mine = cur.get(parent);
  if (!mine) cur.set(parent, (mine = new Map()));
  if (old && old.sig === sig && old.node.parentNode === parent) {
    mine.set(k, old as Entry);
    return { entry: old, reused: true };
  }
  const made = build(old && old.node.parentNode === parent ? old : undefined);
  const entry: Entry<S> = { node: made.node, sig, state: made.state };
  mine.set(k, entry as Entry);
  return { entry, reused: false };
}

/** Sets an attribute only when it changes (an unchanged write still invalidates style). */
export function setAttr(el: Element, name: string, value: string | number | null): void {
  if (value === null) {
    if (el.hasAttribute(name)) el.removeAttribute(name);
    return;
  }
  const v = String(value);
  if (el.getAttribute(name) !== v) el.setAttribute(name, v);
}

/** Sets text content only when it changes. */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

/**
 * A simple SVG element under `parent` (an operator, an outline, a line of text), kept
 * from the previous frame when there is one of the same tag in the same order: exactly
 * `attrs` are set (any other attribute, e.g. one an animation left, is removed).
 */
export function keyed<K extends keyof SVGElementTagNameMap>(
  parent: Element,
  tag: K,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const { entry, reused } = retained(parent, `el:${tag}`, tag, () => ({
    node: parent.appendChild(document.createElementNS("http://www.w3.org/2000/svg", tag)),
    state: null,
  }));
  const el = entry.node as SVGElementTagNameMap[K];
  if (reused)
    for (const a of [...el.attributes]) if (!(a.name in attrs)) el.removeAttribute(a.name);
  for (const [name, value] of Object.entries(attrs)) setAttr(el, name, value);
  if (text !== undefined) setText(el, text);
  return el;
}
