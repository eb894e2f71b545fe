// Rendering: recomputes the model when the numbers changed, then draws the current step
// or view into the stage's one <svg> (a group per sentence of a batch) and writes the
// caption, the navigation and the status line to match.
import * as d3 from "d3";
import { syncControls } from "./controls";
import { $, setHtml, stageWidth } from "./dom";
import { announceLater, refocusMatrix } from "./draw/cell-keyboard";
import { addDefs } from "./draw/colors";
import { recycle } from "./draw/heatmap-canvas";
import { clearRegistry, numbersHidden, roundedToWhole } from "./draw/registry";
import { beginFrame, endFrame, isCandidate, setAttr, setText } from "./draw/retain";
import { hideTip } from "./draw/tooltip";
import { openEditor } from "./editor";
import { escapeHtml } from "./format";
import { computeClock, computeModel, type Model } from "./model";
import { reducedMotion, setSpeed } from "./motion";
import { inputsKey, page, saveUrl } from "./page";
import { SCENES } from "./scenes";
import type { Scene, SceneCtx } from "./scenes/common";
import { editProblem, toQuery, type State, type ViewId } from "./state";
import { errorText, trialModel } from "./url-edits";
import { decodingView } from "./views/decoding";
import { gridView } from "./views/grid";
import { headView } from "./views/headview";
import { saturationView } from "./views/saturation";
import { setTrainRedraw, trainView } from "./train/view";
import { languageView, setLanguageRedraw } from "./language/view";
import { gpt2View, setGpt2Redraw } from "./gpt2/entry";

const VIEWS: Record<Exclude<ViewId, "steps">, Scene> = {
  headview: headView,
  grid: gridView,
  saturation: saturationView,
  decoding: decodingView,
  train: trainView,
  language: languageView,
  gpt2: gpt2View,
};

setTrainRedraw(() => render(false));
setLanguageRedraw(() => render(false));
setGpt2Redraw(() => {
  if (page.state.view === "gpt2") render(false);
});

/** The smallest scale a scene is shown at before the stage scrolls instead. */
const MIN_SCALE = 0.5;

/** Space between the scenes of a batch's sentences. */
const GAP = 36;

export function set(patch: Partial<State>, opts: { animate?: boolean } = {}): void {
  page.state = { ...page.state, ...patch };
  if ("speed" in patch) setSpeed(page.state.speed);
  saveUrl();
  render(opts.animate ?? false);
}

function sceneOf(s: State): Scene {
  return s.view === "steps" ? SCENES[s.step - 1] : VIEWS[s.view];
}

export function showError(err: unknown, then = ""): void {
  const msg =
    (err instanceof Error ? `${err.name}: ${err.message}` : String(err)) +
    (then ? ` (${then})` : "");
  setHtml("status", `<span class="error" data-testid="error">${escapeHtml(msg)}</span>`);
}

/**
 * Applies an edited cell typed into the editor, or says why not: the value must be
 * in the page's range and attnkit must be able to compute with it (a large value
 * can still overflow float32 further on).
 */
function tryEdit(key: string, raw: string): string | null {
  const why = editProblem(raw);
  if (why) return why;
  const edits = { ...page.state.edits, [key]: Number(raw.trim()) };
  const next = { ...page.state, edits };
  try {
    page.model = trialModel(next);
    page.modelKey = inputsKey(next);
  } catch (err) {
    return `With ${raw.trim()} here attnkit cannot compute (${errorText(err)}). Try a value nearer 0 (accepted: numbers from −1e6 to 1e6).`;
  }
  set({ edits });
  return null;
}

export function render(animate: boolean): void {
  try {
    draw(animate);
    page.lastGood = { ...page.state, edits: { ...page.state.edits } };
  } catch (err) {
    const failed = toQuery(page.state);
    const lastGood = page.lastGood;
    if (lastGood && toQuery(lastGood) !== failed) {
      page.state = { ...lastGood, edits: { ...lastGood.edits } };
      page.model = null;
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

/** Called after each draw with the duration of its entry animation. */
let drawnListener: ((durationMs: number) => void) | null = null;
export function onDrawn(fn: (durationMs: number) => void): void {
  drawnListener = fn;
}

/** The model for the state (recomputed only when the numbers changed); clamps what it bounds. */
function updateModel(): Model {
  const state = page.state;
  const key = inputsKey(state);
  page.timing.lastRecomputed = false;
  if (!page.model || key !== page.modelKey) {
    page.model = computeModel(page.attn, state, page.model);
    page.modelKey = key;
    page.timing.lastRecomputed = true;
  }
  const { cfg } = page.model;
  state.query = Math.min(Math.max(0, state.query), cfg.T - 1);
  state.head = Math.min(Math.max(0, state.head), cfg.heads - 1);
  state.decodeStep = Math.min(Math.max(0, state.decodeStep), cfg.T);
  syncControls(state, cfg);
  syncNav();
  const textNote = $("text-note");
  setText(textNote, cfg.textNotes.join(" "));
  if (textNote.hidden !== !cfg.textNotes.length) textNote.hidden = !cfg.textNotes.length;
  return page.model;
}

/** The stage's <svg> and one group (and, for a batch, one title) per item to draw into. */
interface Frame {
  node: SVGSVGElement;
  roots: SVGGElement[];
  titles: SVGTextElement[];
}

function prepareFrame(count: number): Frame {
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
  // A redraw of the scene on screen updates its elements in place (draw/retain.ts);
  // another scene starts from an empty <svg>.
  const sceneKey = `${page.state.view}:${page.state.step}:${count}`;
  const retain = node.dataset.scene === sceneKey;
  node.dataset.scene = sceneKey;
  beginFrame(retain);
  const roots: SVGGElement[] = [];
  const titles: SVGTextElement[] = [];
  if (retain) {
    for (let i = 0; i < count; i++) {
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
    for (let i = 0; i < count; i++) {
      roots.push(d3.select(node).append("g").attr("data-testid", `item-${i}`).node()!);
      if (count > 1)
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
  return { node, roots, titles };
}

function sceneContexts(
  m: Model,
  items: Model["items"],
  width: number,
  animate: boolean,
): SceneCtx[] {
  const state = page.state;
  return items.map((item, i) => ({
    attn: page.attn,
    state,
    model: m,
    cfg: m.cfg,
    item,
    itemIndex: i,
    trace: item.heads[state.head],
    width,
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
}

/** The extent of the drawn items and the longest entry animation. */
interface Extent {
  width: number;
  height: number;
  duration: number;
}

/** Draws each item's scene, side by side or (`stack`) one above the other. */
function drawItems(scene: Scene, ctxs: SceneCtx[], f: Frame, stack: boolean): Extent {
  const n = ctxs.length;
  let x = 0,
    y = 0,
    width = 0,
    height = 0,
    duration = 0;
  const top = n > 1 ? 24 : 0;
  ctxs.forEach((ctx, i) => {
    const root = f.roots[i];
    const ox = stack ? 0 : x,
      oy = stack ? y : 0;
    setAttr(root, "transform", `translate(${ox + 4},${oy + top + 4})`);
    if (n > 1) {
      setAttr(f.titles[i], "x", ox + 4);
      setAttr(f.titles[i], "y", oy + 16);
      setText(
        f.titles[i],
        `sentence ${i + 1}: ${ctx.item.item.tokens.filter((t) => t !== "[PAD]").join(" ")}`.slice(
          0,
          80,
        ),
      );
    }
    const r = scene.render(d3.select(root), ctx);
    // What a scene draws beyond the width it reports (a legend, a long note) counts too.
    const bb = root.getBBox();
    const titleW = n > 1 ? f.titles[i].getComputedTextLength() : 0;
    const wi = Math.max(r.width, bb.x + bb.width, titleW);
    if (stack) {
      width = Math.max(width, wi);
      y += r.height + top + GAP;
    } else {
      x += wi + GAP;
      width = x - GAP;
      height = Math.max(height, r.height + top);
    }
    duration = Math.max(duration, r.duration);
  });
  return { width, height: stack ? y - GAP : height, duration };
}

/** Outlines stay above the matrices (one rebuilt in this frame comes after them). */
function raiseOutlines(roots: SVGGElement[]): void {
  for (const root of roots) {
    const kids = [...root.children];
    const first = kids.findIndex((k) => k.matches(".hl-row, .hl-col"));
    if (first >= 0 && kids.slice(first).some((k) => !k.matches(".hl-row, .hl-col"))) {
      for (const k of kids) if (k.matches(".hl-row, .hl-col")) root.append(k);
    }
  }
}

function sizeSvg(node: SVGSVGElement, e: Extent): void {
  const w = Math.ceil(e.width + 12),
    h = Math.ceil(e.height + 12);
  // A scene wider than the stage is scaled to its width (a phone shows all of it; pinch-zoom
  // reads it), down to half size; a wider one (thousands of columns) scrolls inside the stage.
  const room = stageWidth() - 20;
  const k = w > room ? Math.max(MIN_SCALE, room / w) : 1;
  setAttr(node, "width", Math.floor(w * k));
  setAttr(node, "height", Math.ceil(h * k));
  setAttr(node, "data-scale", k === 1 ? null : k.toFixed(3));
  setAttr(node, "viewBox", `0 0 ${w} ${h}`);
}

function draw(animate: boolean): void {
  const t0 = performance.now();
  const c0 = computeClock.ms;
  hideTip();
  const m = updateModel();
  const state = page.state;
  const timing = page.timing;
  const scene = sceneOf(state);
  const perItem = state.view !== "saturation" && state.view !== "decoding";
  const items = perItem ? m.items : m.items.slice(0, 1);
  const frame = prepareFrame(items.length);
  const node = frame.node;
  setAttr(node, "data-view", state.view);
  setAttr(node, "data-step", state.step);
  setAttr(node, "role", "img");
  setAttr(node, "aria-label", scene.title);
  // Scenes lay out for the stage's width; what cannot shrink further is scaled down below.
  const avail = Math.max(640, stageWidth() - 24);
  // A batch's sentences sit side by side when the stage has room for both, else one above the other.
  const stack =
    items.length > 1 && stageWidth() - 24 < items.length * 640 + GAP * (items.length - 1);
  const itemWidth = stack ? avail : (avail - GAP * (items.length - 1)) / items.length;
  const ctxs = sceneContexts(m, items, itemWidth, animate);
  setHtml(
    "caption",
    `<h2 data-testid="scene-title">${state.view === "steps" ? `${state.step}. ` : ""}${scene.title}</h2>${scene.caption(ctxs[0])}`,
  );
  const extent = drawItems(scene, ctxs, frame, stack);
  recycle(endFrame());
  const whole = roundedToWhole();
  setText(
    $("numbers-note"),
    [
      whole.length
        ? `${listNames(whole)} ${whole.length > 1 ? "are" : "is"} rounded to whole numbers here (the cells are too narrow for decimals): hover or click a cell to read it.`
        : "",
      numbersHidden()
        ? "Some cells are too small for their numbers: hover a cell (tap on a touch screen) to read it, or zoom in (Ctrl +) to see more numbers."
        : "",
    ]
      .filter(Boolean)
      .join(" "),
  );
  raiseOutlines(frame.roots);
  sizeSvg(node, extent);
  // Style and layout now, so that the time below is the whole redraw but the paint.
  const tl = performance.now();
  void $("stage").getBoundingClientRect();
  timing.lastLayoutMs = performance.now() - tl;

  timing.lastRenderMs = performance.now() - t0;
  timing.lastComputeMs = computeClock.ms - c0;
  timing.renders++;
  if (timing.renders === 1) timing.firstRenderMs = performance.now();
  const batch = m.items.length > 1 ? " · batch of 2" : "";
  const attn = page.attn;
  setHtml(
    "status",
    `computed by <b>attnkit</b> (${attn.target}${attn.simd ? ", SIMD128" : ""})${batch} · ${timing.lastRecomputed ? "recomputed" : "no recompute"} · attnkit calls ${timing.lastComputeMs.toFixed(1)} ms · recompute + redraw ${timing.lastRenderMs.toFixed(1)} ms`,
  );
  announceScene(`${state.view === "steps" ? `Step ${state.step}: ` : ""}${scene.title}`);
  document.body.dataset.ready = "1";
  document.body.dataset.renders = String(timing.renders);
  page.animation = {
    step: state.view === "steps" ? state.step : 0,
    view: state.view,
    startedAt: performance.now(),
    durationMs: extent.duration,
  };
  drawnListener?.(extent.duration);
}

/**
 * Screen readers hear the scene's title when the step or view changes, once it stays
 * for 400 ms (not the whole caption on every slider tick).
 */
let announced = "";
function announceScene(title: string): void {
  if (title === announced) return;
  announced = title;
  announceLater(title, 400);
}

/** The step bar and view buttons as the state says; only what changed is written. */
export function syncNav(): void {
  const state = page.state;
  // The stylesheet shows each view's own panels (the Train view's settings, the steps' bar).
  setAttr(document.body, "data-view", state.view);
  // An unchanged write still invalidates style.
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
  setText(play, page.playing ? "❚❚" : "▶");
  setAttr(play, "aria-label", page.playing ? "pause" : "play");
}

/** "a", "a and b", "a, b and c", each in quotes. */
function listNames(names: readonly string[]): string {
  const q = names.map((n) => `“${n}”`);
  return q.length > 1 ? `${q.slice(0, -1).join(", ")} and ${q[q.length - 1]}` : q[0];
}
