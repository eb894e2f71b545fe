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
import { computeModel, type Model } from "./model";
import { dur, reducedMotion, setSpeed } from "./motion";
import { SCENES } from "./scenes";
import type { Scene, SceneCtx } from "./scenes/common";
import { fromQuery, STEP_COUNT, toQuery, type State, type ViewId } from "./state";
import { addDefs } from "./views/colors";
import { decodingView } from "./views/decoding";
import { gridView } from "./views/grid";
import { headView, toggleHead } from "./views/headview";
import { clearRegistry, drawnIds, drawnMatrix, type G } from "./views/matrix";
import { saturationView } from "./views/saturation";
import { hideTip } from "./views/tooltip";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const VIEWS: Record<Exclude<ViewId, "steps">, Scene> = {
  headview: headView, grid: gridView, saturation: saturationView, decoding: decodingView,
};

interface Timing {
  loadMs: number;
  firstRenderMs: number;
  lastRenderMs: number;
  lastComputeMs: number;
  /** Whether the last render recomputed anything (false: only redrawn). */
  lastRecomputed: boolean;
  /** Of lastRenderMs: the browser's style and layout. */
  lastLayoutMs: number;
  renders: number;
}
const timing: Timing = { loadMs: 0, firstRenderMs: 0, lastRenderMs: 0, lastComputeMs: 0, lastRecomputed: false, lastLayoutMs: 0, renders: 0 };

let attn: Attnkit;
let state: State = fromQuery(location.search.slice(1));
if (!location.search) Object.assign(state, presetState(state.preset, state));
let model: Model | null = null;
let modelKey = "";
let playing = false;
let playTimer: number | undefined;

/** State fields that change the numbers (the rest only change what is shown). */
function inputsKey(s: State): string {
  const { view: _v, step: _s, query: _q, head: _h, role: _r, speed: _sp, satScale: _c, satSource: _ss, decodeStep: _d, preset: _p, hidden: _hh, ...rest } = s;
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

function showError(err: unknown): void {
  const msg = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  $("status").innerHTML = `<span class="error" data-testid="error">${escapeHtml(msg)}</span>`;
}

function render(animate: boolean): void {
  const t0 = performance.now();
  hideTip();
  const key = inputsKey(state);
  timing.lastRecomputed = false;
  if (!model || key !== modelKey) {
    try {
      model = computeModel(attn, state, model);
      modelKey = key;
      timing.lastRecomputed = true;
    } catch (err) {
      showError(err);
      return;
    }
  }
  const m = model;
  const { cfg } = m;
  state.query = Math.min(Math.max(0, state.query), cfg.T - 1);
  state.head = Math.min(Math.max(0, state.head), cfg.heads - 1);
  state.decodeStep = Math.min(Math.max(0, state.decodeStep), cfg.T);
  syncControls(state, cfg);
  syncNav();

  const scene = sceneOf(state);
  const stage = $("stage");
  stage.querySelectorAll("svg").forEach((s) => d3.select(s).selectAll("*").interrupt());
  clearRegistry();
  // One <svg> for the page's life: each render replaces its content but keeps the
  // shared <defs> and <style> (a new <style> would restyle the whole document).
  let node = stage.querySelector<SVGSVGElement>("svg[data-testid=scene-svg]");
  if (!node) {
    stage.replaceChildren();
    node = d3.select(stage).append("svg").attr("data-testid", "scene-svg").node()!;
    addDefs(d3.select(node));
  }
  for (const child of [...node.children]) if (child.tagName !== "defs" && child.tagName !== "style") child.remove();
  const svg = d3.select(node)
    .attr("data-view", state.view).attr("data-step", state.step).attr("role", "img")
    .attr("aria-label", `${scene.title}`);
  const perItem = state.view !== "saturation" && state.view !== "decoding";
  const items = perItem ? m.items : m.items.slice(0, 1);
  const gap = 36;
  // Narrow screens: the scene keeps a readable size and the stage scrolls sideways.
  const avail = Math.max(640, stage.clientWidth - 24);
  const itemWidth = (avail - gap * (items.length - 1)) / items.length;
  const ctxs: SceneCtx[] = items.map((item, i) => ({
    attn, state, model: m, cfg, item, itemIndex: i, trace: item.heads[state.head],
    width: itemWidth, height: Math.max(360, innerHeight - 300), animate: animate && !reducedMotion(),
    set, edit: (name, r, c, value, e) => openEditor(e, `${name.replace(/^X\d/, "X")}[${r}, ${c}]`, value, (v) => set({ edits: { ...state.edits, [`${name}:${r}:${c}`]: v } })),
  }));
  setHtml("caption", `<h2 data-testid="scene-title">${state.view === "steps" ? `${state.step}. ` : ""}${scene.title}</h2>${scene.caption(ctxs[0])}`);
  let x = 0, height = 0, duration = 0;
  const top = items.length > 1 ? 24 : 0;
  ctxs.forEach((ctx, i) => {
    const g: G = svg.append("g").attr("transform", `translate(${x + 4},${top + 4})`).attr("data-testid", `item-${i}`);
    if (items.length > 1) {
      svg.append("text").attr("class", "m-title").attr("x", x + 4).attr("y", 16)
        .text(`sentence ${i + 1}: ${ctx.item.item.tokens.filter((t) => t !== "[PAD]").join(" ")}`.slice(0, 80));
    }
    const r = scene.render(g, ctx);
    x += r.width + gap;
    height = Math.max(height, r.height);
    duration = Math.max(duration, r.duration);
  });
  const w = Math.ceil(x - gap + 12), h = Math.ceil(height + top + 12);
  svg.attr("width", w).attr("height", h).attr("viewBox", `0 0 ${w} ${h}`);
  // Style and layout now, so that the time below is the whole redraw but the paint.
  const tl = performance.now();
  void stage.getBoundingClientRect();
  timing.lastLayoutMs = performance.now() - tl;

  timing.lastRenderMs = performance.now() - t0;
  timing.lastComputeMs = timing.lastRecomputed ? m.computeMs : 0;
  timing.renders++;
  if (timing.renders === 1) timing.firstRenderMs = performance.now();
  const batch = m.items.length > 1 ? " · batch of 2" : "";
  $("status").innerHTML = `computed by <b>attnkit</b> (${attn.target}${attn.simd ? ", SIMD128" : ""})${batch} · ${timing.lastRecomputed ? `attnkit calls ${m.computeMs.toFixed(1)} ms` : "no recompute"} · redraw ${timing.lastRenderMs.toFixed(1)} ms`;
  document.body.dataset.ready = "1";
  document.body.dataset.renders = String(timing.renders);
  if (playing) schedule(duration);
}

/** Sets innerHTML only when it changes (no relayout of an unchanged caption). */
function setHtml(id: string, html: string): void {
  const el = $(id);
  if (el.dataset.html !== html) {
    el.innerHTML = html;
    el.dataset.html = html;
  }
}

function syncNav(): void {
  d3.selectAll<HTMLButtonElement, unknown>("#views button").each(function () {
    const on = this.dataset.view === state.view;
    this.classList.toggle("on", on);
    this.setAttribute("aria-pressed", String(on));
  });
  d3.selectAll<HTMLButtonElement, unknown>("#steps button").each(function () {
    const on = state.view === "steps" && Number(this.dataset.step) === state.step;
    this.classList.toggle("on", on);
    if (on) this.setAttribute("aria-current", "step");
    else this.removeAttribute("aria-current");
  });
  $("stepbar").classList.toggle("dim", state.view !== "steps");
  const play = $<HTMLButtonElement>("play");
  play.textContent = playing ? "❚❚" : "▶";
  play.setAttribute("aria-label", playing ? "pause" : "play");
}

function goto(step: number, animate = true): void {
  set({ view: "steps", step: Math.min(STEP_COUNT, Math.max(1, step)) }, { animate });
}

function schedule(duration: number): void {
  window.clearTimeout(playTimer);
  playTimer = window.setTimeout(() => {
    if (!playing) return;
    if (state.view === "steps" && state.step < STEP_COUNT) goto(state.step + 1);
    else stop();
  }, duration + Math.max(dur(1600), 1600 / state.speed));
}

function stop(): void {
  playing = false;
  window.clearTimeout(playTimer);
  syncNav();
}

function togglePlay(): void {
  if (playing) return stop();
  playing = true;
  if (state.view !== "steps" || state.step === STEP_COUNT) goto(state.view !== "steps" ? state.step : 1);
  else render(true);
}

function bindNav(): void {
  $("steps").innerHTML = SCENES.map((s, i) =>
    `<li><button type="button" data-step="${i + 1}" data-testid="step-${i + 1}" title="${s.title} (${i + 1})"><span>${i + 1}</span> ${s.title}</button></li>`).join("");
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
      const raw = setter instanceof HTMLInputElement || setter instanceof HTMLSelectElement ? setter.value : setter.dataset.value ?? "";
      const value = typeof state[key] === "number" ? Number(raw) : raw;
      set({ [key]: value } as Partial<State>, { animate: key === "role" });
      return;
    }
    const dec = t.closest<HTMLElement>("[data-decode]");
    if (dec && e.type === "click") {
      const T = model?.cfg.T ?? 0;
      const a = dec.dataset.decode;
      set({ decodeStep: a === "reset" ? 0 : a === "end" ? T : state.decodeStep + 1 }, { animate: true });
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
  $("export-svg").addEventListener("click", () => exportSvg(currentSvg(), fileName()));
  $("export-png").addEventListener("click", () => void exportPng(currentSvg(), fileName()).catch(showError));
  $("copy-link").addEventListener("click", () => {
    const done = (msg: string) => ($("status").textContent = msg);
    navigator.clipboard?.writeText(location.href).then(() => done("Link copied."), () => done(`Link: ${location.href}`)) ?? done(`Link: ${location.href}`);
  });
  $("help-open").addEventListener("click", () => $<HTMLDialogElement>("help").showModal());
  // Narrow screens: the settings are a drawer, closed at first so the scene shows.
  const drawer = $<HTMLButtonElement>("controls-toggle");
  const setDrawer = (open: boolean) => {
    document.body.classList.toggle("controls-open", open);
    drawer.setAttribute("aria-expanded", String(open));
    drawer.textContent = open ? "✕ Settings" : "☰ Settings";
  };
  setDrawer(false);
  drawer.addEventListener("click", () => setDrawer(!document.body.classList.contains("controls-open")));
}

function currentSvg(): SVGSVGElement {
  return $("stage").querySelector("svg") as SVGSVGElement;
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
    const views: Record<string, ViewId> = { s: "steps", h: "headview", g: "grid", x: "saturation", d: "decoding" };
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
    timing, target: attn.target, simd: attn.simd, state: () => state,
    matrix: (id: string, nth = 0) => drawnMatrix(id, nth), matrixIds: () => drawnIds(),
  };
  bindControls(() => state, set);
  bindNav();
  bindKeys();
  render(true);
  history.replaceState(null, "", `?${toQuery(state)}`);
  let lastWidth = $("stage").clientWidth;
  new ResizeObserver(() => {
    const w = $("stage").clientWidth;
    if (Math.abs(w - lastWidth) > 8) {
      lastWidth = w;
      render(false);
    }
  }).observe($("stage"));
}

void main();
