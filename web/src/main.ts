// The page: loads the attnkit package, keeps the state (mirrored in the URL),
// computes the model on the package and draws the current step or view.
import "./style.css";
import createAttnkit, { type Attnkit } from "attnkit";
import * as d3 from "d3";
// d3 declares itself side-effect free, so a bundler drops the registration of
// selection.transition/interrupt unless d3-transition is imported for its side effect.
import "d3-transition";
import { bindControls, presetState, syncControls } from "./controls";
import { closeEditor, openEditor } from "./editor";
import { exportPng, exportSvg } from "./export";
import { escapeHtml } from "./format";
import { computeClock, computeModel, type Model } from "./model";
import { dur, reducedMotion, setSpeed } from "./motion";
import { SCENES } from "./scenes";
import type { Scene, SceneCtx } from "./scenes/common";
import {
  cellName,
  DISPLAY_FIELDS,
  editProblem,
  fromQuery,
  omitFields,
  STEP_COUNT,
  toQuery,
  type State,
  type ViewId,
} from "./state";
import { addDefs } from "./draw/colors";
import { decodingView } from "./views/decoding";
import { gridView } from "./views/grid";
import { headView, toggleHead } from "./views/headview";
import { announce, refocusMatrix } from "./draw/cell-keyboard";
import { recycle } from "./draw/heatmap-canvas";
import { clearRegistry, drawnIds, drawnMatrix, numbersHidden } from "./draw/registry";
import { beginFrame, endFrame, isCandidate, setAttr, setText } from "./draw/retain";
import { saturationView } from "./views/saturation";
import { hideTip } from "./draw/tooltip";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const VIEWS: Record<Exclude<ViewId, "steps">, Scene> = {
  headview: headView,
  grid: gridView,
  saturation: saturationView,
  decoding: decodingView,
};

interface Timing {
  loadMs: number;
  firstRenderMs: number;
  lastRenderMs: number;
  /** Of lastRenderMs: computing with attnkit (the model, and results computed on first use). */
  lastComputeMs: number;
  /** Whether the last render recomputed anything (false: only redrawn). */
  lastRecomputed: boolean;
  /** Of lastRenderMs: the browser's style and layout. */
  lastLayoutMs: number;
  renders: number;
}
const timing: Timing = {
  loadMs: 0,
  firstRenderMs: 0,
  lastRenderMs: 0,
  lastComputeMs: 0,
  lastRecomputed: false,
  lastLayoutMs: 0,
  renders: 0,
};

let attn: Attnkit;
/** What the URL held that the page could not use (shown in a note). */
const urlDropped: string[] = [];
let state: State = fromQuery(location.search.slice(1), urlDropped);
if (!location.search) Object.assign(state, presetState(state.preset, state));
let model: Model | null = null;
let modelKey = "";
let playing = false;
/** The entry animation of the last render (durationMs 0: none, e.g. with reduced motion). */
let animation = { step: 0, view: "steps", startedAt: 0, durationMs: 0 };
let playTimer: number | undefined;

/** State fields that change the numbers (the rest only change what is shown). */
function inputsKey(s: State): string {
  const rest = omitFields(s, DISPLAY_FIELDS);
  return JSON.stringify(rest);
}

function set(patch: Partial<State>, opts: { animate?: boolean } = {}): void {
  state = { ...state, ...patch };
  if ("speed" in patch) setSpeed(state.speed);
  saveUrl();
  render(opts.animate ?? false);
}

// The URL follows the state, at most every 120 ms (a dragged slider fires many events;
// browsers throttle frequent history updates).
let urlTimer: number | undefined;
function saveUrl(): void {
  if (urlTimer !== undefined) return;
  urlTimer = window.setTimeout(() => {
    urlTimer = undefined;
    history.replaceState(null, "", `?${toQuery(state)}`);
  }, 120);
}

function sceneOf(s: State): Scene {
  return s.view === "steps" ? SCENES[s.step - 1] : VIEWS[s.view];
}

function showError(err: unknown, then = ""): void {
  const msg =
    (err instanceof Error ? `${err.name}: ${err.message}` : String(err)) +
    (then ? ` (${then})` : "");
  setHtml("status", `<span class="error" data-testid="error">${escapeHtml(msg)}</span>`);
}

/** Computes the whole model for `s` (every result a scene may ask for); throws what attnkit throws. */
function trialModel(s: State): Model {
  const m = computeModel(attn, s, model);
  for (const it of m.items) void [it.rowSums, it.out, it.checkDiff, it.batched];
  return m;
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Applies an edited cell typed into the editor, or says why not: the value must be
 * in the page's range and attnkit must be able to compute with it (a large value
 * can still overflow float32 further on).
 */
function tryEdit(key: string, raw: string): string | null {
  const why = editProblem(raw);
  if (why) return why;
  const edits = { ...state.edits, [key]: Number(raw.trim()) };
  const next = { ...state, edits };
  try {
    model = trialModel(next);
    modelKey = inputsKey(next);
  } catch (err) {
    return `With ${raw.trim()} here attnkit cannot compute (${errorText(err)}). Try a value nearer 0 (accepted: numbers from −1e6 to 1e6).`;
  }
  set({ edits });
  return null;
}

/** Drops the URL's edited cells attnkit cannot compute with, one by one, saying why in urlDropped. */
function dropFailingEdits(): void {
  const entries = Object.entries(state.edits);
  if (!entries.length) return;
  const kept: Record<string, number> = {};
  for (const [k, v] of entries) {
    try {
      trialModel({ ...state, edits: { ...kept, [k]: v } });
      kept[k] = v;
    } catch (err) {
      urlDropped.push(`${cellName(k)} = ${v}: attnkit cannot compute with it (${errorText(err)})`);
    }
  }
  state.edits = kept;
}

function showUrlNote(): void {
  const note = $("url-note");
  if (!urlDropped.length) return;
  note.querySelector("span")!.textContent =
    `This link held values the page cannot use, so they were dropped. ${urlDropped.map((d) => d.replace(/\.$/, "")).join("; ")}.`;
  note.hidden = false;
}

/** The last state drawn without an error: a change that fails is undone back to it. */
let lastGood: State | null = null;

function render(animate: boolean): void {
  try {
    draw(animate);
    lastGood = { ...state, edits: { ...state.edits } };
  } catch (err) {
    const failed = toQuery(state);
    if (lastGood && toQuery(lastGood) !== failed) {
      state = { ...lastGood, edits: { ...lastGood.edits } };
      model = null;
      saveUrl();
      try {
        draw(false);
      } catch {
        // shown below
      }
      showError(err, "the last change was undone");
    } else {
      showError(err);
    }
  }
}

function draw(animate: boolean): void {
  const t0 = performance.now();
  const c0 = computeClock.ms;
  hideTip();
  const key = inputsKey(state);
  timing.lastRecomputed = false;
  if (!model || key !== modelKey) {
    model = computeModel(attn, state, model);
    modelKey = key;
    timing.lastRecomputed = true;
  }
  const m = model;
  const { cfg } = m;
  state.query = Math.min(Math.max(0, state.query), cfg.T - 1);
  state.head = Math.min(Math.max(0, state.head), cfg.heads - 1);
  state.decodeStep = Math.min(Math.max(0, state.decodeStep), cfg.T);
  syncControls(state, cfg);
  syncNav();
  const textNote = $("text-note");
  setText(textNote, cfg.textNotes.join(" "));
  if (textNote.hidden !== !cfg.textNotes.length) textNote.hidden = !cfg.textNotes.length;

  const scene = sceneOf(state);
  const stage = $("stage");
  stage.querySelectorAll("svg").forEach((s) => d3.select(s).selectAll("*").interrupt());
  clearRegistry();
  // One <svg> for the page's life; it keeps the shared <defs> and <style> (a new <style>
  // would restyle the whole document).
  let node = stage.querySelector<SVGSVGElement>("svg[data-testid=scene-svg]");
  if (!node) {
    stage.replaceChildren();
    node = d3.select(stage).append("svg").attr("data-testid", "scene-svg").node()!;
    addDefs(d3.select(node));
  }
  const perItem = state.view !== "saturation" && state.view !== "decoding";
  const items = perItem ? m.items : m.items.slice(0, 1);
  // A redraw of the scene on screen updates its elements in place (draw/retain.ts);
  // another scene starts from an empty <svg>.
  const sceneKey = `${state.view}:${state.step}:${items.length}`;
  const retain = node.dataset.scene === sceneKey;
  node.dataset.scene = sceneKey;
  beginFrame(retain);
  const roots: SVGGElement[] = [];
  const titles: SVGTextElement[] = [];
  if (retain) {
    for (let i = 0; i < items.length; i++) {
      const root = node.querySelector<SVGGElement>(`:scope > g[data-testid=item-${i}]`)!;
      for (const child of [...root.children]) if (!isCandidate(child)) child.remove();
      roots.push(root);
      const title = node.querySelector<SVGTextElement>(`:scope > text[data-item="${i}"]`);
      if (title) titles.push(title);
    }
  } else {
    const old = [...node.children].filter((c) => c.tagName !== "defs" && c.tagName !== "style");
    for (const child of old) child.remove();
    recycle(old);
    for (let i = 0; i < items.length; i++) {
      roots.push(d3.select(node).append("g").attr("data-testid", `item-${i}`).node()!);
      if (items.length > 1)
        titles.push(
          d3
            .select(node)
            .append("text")
            .attr("class", "m-title")
            .attr("data-item", i)
            .attr("y", 16)
            .node()!,
        );
    }
  }
  setAttr(node, "data-view", state.view);
  setAttr(node, "data-step", state.step);
  setAttr(node, "role", "img");
  setAttr(node, "aria-label", scene.title);
  const gap = 36;
  // Scenes lay out for the stage's width; what cannot shrink further is scaled down below.
  const avail = Math.max(640, stageWidth() - 24);
  // A batch's sentences sit side by side when the stage has room for both, else one above the other.
  const stack =
    items.length > 1 && stageWidth() - 24 < items.length * 640 + gap * (items.length - 1);
  const itemWidth = stack ? avail : (avail - gap * (items.length - 1)) / items.length;
  const ctxs: SceneCtx[] = items.map((item, i) => ({
    attn,
    state,
    model: m,
    cfg,
    item,
    itemIndex: i,
    trace: item.heads[state.head],
    width: itemWidth,
    height: Math.max(360, innerHeight - 300),
    animate: animate && !reducedMotion(),
    set,
    edit: (name, r, c, value, e) =>
      openEditor(
        e,
        `${name.replace(/^X\d/, "X")}[${r}, ${c}]`,
        value,
        (raw) => tryEdit(`${name}:${r}:${c}`, raw),
        refocusMatrix,
      ),
  }));
  setHtml(
    "caption",
    `<h2 data-testid="scene-title">${state.view === "steps" ? `${state.step}. ` : ""}${scene.title}</h2>${scene.caption(ctxs[0])}`,
  );
  let x = 0,
    y = 0,
    width = 0,
    height = 0,
    duration = 0;
  const top = items.length > 1 ? 24 : 0;
  ctxs.forEach((ctx, i) => {
    const root = roots[i];
    const ox = stack ? 0 : x,
      oy = stack ? y : 0;
    setAttr(root, "transform", `translate(${ox + 4},${oy + top + 4})`);
    if (items.length > 1) {
      setAttr(titles[i], "x", ox + 4);
      setAttr(titles[i], "y", oy + 16);
      setText(
        titles[i],
        `sentence ${i + 1}: ${ctx.item.item.tokens.filter((t) => t !== "[PAD]").join(" ")}`.slice(
          0,
          80,
        ),
      );
    }
    const r = scene.render(d3.select(root), ctx);
    // What a scene draws beyond the width it reports (a legend, a long note) counts too.
    const bb = root.getBBox();
    const titleW = items.length > 1 ? titles[i].getComputedTextLength() : 0;
    const wi = Math.max(r.width, bb.x + bb.width, titleW);
    if (stack) {
      width = Math.max(width, wi);
      y += r.height + top + gap;
    } else {
      x += wi + gap;
      width = x - gap;
      height = Math.max(height, r.height + top);
    }
    duration = Math.max(duration, r.duration);
  });
  recycle(endFrame());
  setText(
    $("numbers-note"),
    numbersHidden()
      ? "Some cells are too small for their numbers: hover a cell (tap on a touch screen) to read it, or zoom in (Ctrl +) to see more numbers."
      : "",
  );
  // Outlines stay above the matrices (one rebuilt in this frame comes after them).
  for (const root of roots) {
    const kids = [...root.children];
    const first = kids.findIndex((k) => k.matches(".hl-row, .hl-col"));
    if (first >= 0 && kids.slice(first).some((k) => !k.matches(".hl-row, .hl-col"))) {
      for (const k of kids) if (k.matches(".hl-row, .hl-col")) root.append(k);
    }
  }
  const w = Math.ceil(width + 12),
    h = Math.ceil((stack ? y - gap : height) + 12);
  // A scene wider than the stage is scaled to its width (a phone shows all of it; pinch-zoom
  // reads it), down to half size; a wider one (thousands of columns) scrolls inside the stage.
  const room = stageWidth() - 20;
  const k = w > room ? Math.max(MIN_SCALE, room / w) : 1;
  setAttr(node, "width", Math.floor(w * k));
  setAttr(node, "height", Math.ceil(h * k));
  setAttr(node, "data-scale", k === 1 ? null : k.toFixed(3));
  setAttr(node, "viewBox", `0 0 ${w} ${h}`);
  // Style and layout now, so that the time below is the whole redraw but the paint.
  const tl = performance.now();
  void stage.getBoundingClientRect();
  timing.lastLayoutMs = performance.now() - tl;

  timing.lastRenderMs = performance.now() - t0;
  timing.lastComputeMs = computeClock.ms - c0;
  timing.renders++;
  if (timing.renders === 1) timing.firstRenderMs = performance.now();
  const batch = m.items.length > 1 ? " · batch of 2" : "";
  setHtml(
    "status",
    `computed by <b>attnkit</b> (${attn.target}${attn.simd ? ", SIMD128" : ""})${batch} · ${timing.lastRecomputed ? "recomputed" : "no recompute"} · attnkit calls ${timing.lastComputeMs.toFixed(1)} ms · recompute + redraw ${timing.lastRenderMs.toFixed(1)} ms`,
  );
  announceScene(`${state.view === "steps" ? `Step ${state.step}: ` : ""}${scene.title}`);
  document.body.dataset.ready = "1";
  document.body.dataset.renders = String(timing.renders);
  animation = {
    step: state.view === "steps" ? state.step : 0,
    view: state.view,
    startedAt: performance.now(),
    durationMs: duration,
  };
  if (playing) schedule(duration);
}

/** The smallest scale a scene is shown at before the stage scrolls instead. */
const MIN_SCALE = 0.5;

/**
 * Screen readers hear the scene's title when the step or view changes, once it stays
 * for 400 ms (not the whole caption on every slider tick).
 */
let announced = "";
let announceTimer: number | undefined;
function announceScene(title: string): void {
  if (title === announced) return;
  announced = title;
  window.clearTimeout(announceTimer);
  announceTimer = window.setTimeout(() => announce(title), 400);
}

/**
 * The stage's width, read once and then kept by the ResizeObserver: reading it in a
 * render, after the controls were written, would force a synchronous layout.
 */
let stageWidthPx: number | undefined;
function stageWidth(): number {
  return (stageWidthPx ??= $("stage").clientWidth);
}

/**
 * Sets an element's HTML by changing only what differs from what it shows (a caption
 * that changes one number keeps its other nodes, and an input in it stays the same
 * element while it is dragged).
 */
const shownHtml = new Map<string, string>();
function setHtml(id: string, html: string): void {
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

function syncNav(): void {
  // Only what changed is written (an unchanged write still invalidates style).
  d3.selectAll<HTMLButtonElement, unknown>("#views button").each(function () {
    const on = this.dataset.view === state.view;
    if (this.classList.contains("on") !== on) this.classList.toggle("on", on);
    setAttr(this, "aria-pressed", String(on));
  });
  d3.selectAll<HTMLButtonElement, unknown>("#steps button").each(function () {
    const on = state.view === "steps" && Number(this.dataset.step) === state.step;
    if (this.classList.contains("on") !== on) this.classList.toggle("on", on);
    setAttr(this, "aria-current", on ? "step" : null);
  });
  const stepbar = $("stepbar");
  if (stepbar.classList.contains("dim") !== (state.view !== "steps"))
    stepbar.classList.toggle("dim", state.view !== "steps");
  const play = $<HTMLButtonElement>("play");
  setText(play, playing ? "❚❚" : "▶");
  setAttr(play, "aria-label", playing ? "pause" : "play");
}

function goto(step: number, animate = true): void {
  set({ view: "steps", step: Math.min(STEP_COUNT, Math.max(1, step)) }, { animate });
}

function schedule(duration: number): void {
  window.clearTimeout(playTimer);
  playTimer = window.setTimeout(
    () => {
      if (!playing) return;
      if (state.view === "steps" && state.step < STEP_COUNT) goto(state.step + 1);
      else stop();
    },
    duration + Math.max(dur(1600), 1600 / state.speed),
  );
}

function stop(): void {
  playing = false;
  window.clearTimeout(playTimer);
  syncNav();
}

function togglePlay(): void {
  if (playing) return stop();
  playing = true;
  if (state.view !== "steps" || state.step === STEP_COUNT)
    goto(state.view !== "steps" ? state.step : 1);
  else render(true);
}

function bindNav(): void {
  $("steps").innerHTML = SCENES.map(
    (s, i) =>
      `<li><button type="button" data-step="${i + 1}" data-testid="step-${i + 1}" title="${s.title} (${i + 1})" aria-label="step ${i + 1}: ${s.title}"><span>${i + 1}</span><span class="t"> ${s.title}</span></button></li>`,
  ).join("");
  $("steps").addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-step]");
    if (b) goto(Number(b.dataset.step));
  });
  $("views").addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-view]");
    if (b) set({ view: b.dataset.view as ViewId }, { animate: true });
  });
  $("prev").addEventListener("click", () => goto(state.step - 1));
  $("next").addEventListener("click", () => goto(state.step + 1));
  $("play").addEventListener("click", togglePlay);
  $("replay").addEventListener("click", () => render(true));
  const caption = $("caption");
  const fromCaption = (e: Event) => {
    const t = e.target as HTMLElement;
    const setter = t.closest<HTMLElement>("[data-set]");
    if (setter) {
      const key = setter.dataset.set as keyof State;
      const raw =
        setter instanceof HTMLInputElement || setter instanceof HTMLSelectElement
          ? setter.value
          : (setter.dataset.value ?? "");
      const value = typeof state[key] === "number" ? Number(raw) : raw;
      set({ [key]: value } as Partial<State>, { animate: key === "role" });
      return;
    }
    const dec = t.closest<HTMLElement>("[data-decode]");
    if (dec && e.type === "click") {
      const T = model?.cfg.T ?? 0;
      const a = dec.dataset.decode;
      set(
        { decodeStep: a === "reset" ? 0 : a === "end" ? T : state.decodeStep + 1 },
        { animate: true },
      );
      return;
    }
    const hd = t.closest<HTMLElement>("[data-toggle-head]");
    if (hd && e.type === "click") {
      set(toggleHead(state, Number(hd.dataset.toggleHead)));
    }
  };
  caption.addEventListener("click", (e) => {
    if ((e.target as HTMLElement).closest("button")) fromCaption(e);
  });
  caption.addEventListener("input", fromCaption);
  $("export-svg").addEventListener("click", () =>
    exportSvg(currentSvg(), fileName(), exportText()),
  );
  $("export-png").addEventListener(
    "click",
    () => void exportPng(currentSvg(), fileName(), exportText()).catch(showError),
  );
  $("copy-link").addEventListener("click", () => {
    const done = (msg: string) => setHtml("status", escapeHtml(msg));
    navigator.clipboard?.writeText(location.href).then(
      () => done("Link copied."),
      () => done(`Link: ${location.href}`),
    ) ?? done(`Link: ${location.href}`);
  });
  $("url-note")
    .querySelector("button")!
    .addEventListener("click", () => ($("url-note").hidden = true));
  $("help-open").addEventListener("click", () => $<HTMLDialogElement>("help").showModal());
  // Narrow screens: the settings are a drawer, closed at first so the scene shows.
  const drawer = $<HTMLButtonElement>("controls-toggle");
  const setDrawer = (open: boolean) => {
    document.body.classList.toggle("controls-open", open);
    drawer.setAttribute("aria-expanded", String(open));
    drawer.textContent = open ? "✕ Settings" : "☰ Settings";
  };
  setDrawer(false);
  drawer.addEventListener("click", () =>
    setDrawer(!document.body.classList.contains("controls-open")),
  );
}

function currentSvg(): SVGSVGElement {
  return $("stage").querySelector("svg") as SVGSVGElement;
}

/** The title and caption an export carries (as the page shows them, and where it comes from). */
function exportText(): { title: string; caption: string } {
  const cap = $("caption");
  const title = cap.querySelector("h2")?.textContent ?? "";
  const rest = [...cap.children]
    .filter((c) => c.tagName !== "H2")
    .map((c) => c.textContent ?? "")
    .join(" ")
    .replace(/\s+/g, " ")
    .trim();
  return { title: `attnkit · ${title}`, caption: `${rest} (“${state.text}”; ${location.href})` };
}

function fileName(): string {
  return state.view === "steps" ? `attnkit-step-${state.step}` : `attnkit-${state.view}`;
}

function bindKeys(): void {
  document.addEventListener("keydown", (e) => {
    const t = e.target as HTMLElement;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t.closest("input, textarea, select, dialog")) return;
    const T = model?.cfg.T ?? 1;
    const H = model?.cfg.heads ?? 1;
    const views: Record<string, ViewId> = {
      s: "steps",
      h: "headview",
      g: "grid",
      x: "saturation",
      d: "decoding",
    };
    let handled = true;
    if (e.key === "ArrowRight") goto(state.step + 1);
    else if (e.key === "ArrowLeft") goto(state.step - 1);
    else if (e.key === " ") togglePlay();
    else if (/^[1-8]$/.test(e.key)) goto(Number(e.key));
    else if (e.key === "ArrowDown") set({ query: (state.query + 1) % T }, { animate: false });
    else if (e.key === "ArrowUp") set({ query: (state.query - 1 + T) % T }, { animate: false });
    else if (e.key === "]") set({ head: (state.head + 1) % H });
    else if (e.key === "[") set({ head: (state.head - 1 + H) % H });
    else if (e.key === "r") render(true);
    else if (e.key === "c") set({ mask: state.mask === "causal" ? "none" : "causal" });
    else if (e.key === "?") $<HTMLDialogElement>("help").showModal();
    else if (views[e.key]) set({ view: views[e.key] }, { animate: true });
    else if (e.key === "Escape") closeEditor();
    else handled = false;
    if (handled) e.preventDefault();
  });
}

async function main(): Promise<void> {
  const t0 = performance.now();
  try {
    attn = await createAttnkit();
  } catch (err) {
    showError(err);
    return;
  }
  timing.loadMs = performance.now() - t0;
  setSpeed(state.speed);
  // Test hook: timing, the state, and the numbers of every matrix on screen (canvas ones included).
  (window as unknown as { __attnkit: unknown }).__attnkit = {
    timing,
    target: attn.target,
    simd: attn.simd,
    state: () => state,
    animation: () => animation,
    playing: () => playing,
    matrix: (id: string, nth = 0) => drawnMatrix(id, nth),
    matrixIds: () => drawnIds(),
    query: () => toQuery(state),
  };
  bindControls(() => state, set);
  bindNav();
  bindKeys();
  dropFailingEdits();
  showUrlNote();
  render(true);
  history.replaceState(null, "", `?${toQuery(state)}`);
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
        render(false);
      });
    }
  }).observe($("stage"));
}

void main();
