// The GPT-2 view: a real pretrained model (a Hugging Face GPT-2-family checkpoint, opened
// by attnkit in a worker) or the learner's own language model, on the learner's sentence.
// The panel (#gpt2 in index.html) picks the checkpoint (a file, a URL, a Hub repository id:
// where it comes from, its size and memory shown, the learner confirms before the download),
// the sentence, the grid's score and order, the saves and the generation; the stage shows
// the sentence's tokens, the likeliest next tokens, every layer x head as a small map
// (BertViz's model view) framed by its score with the induction heads named, one head large
// with its tokens, and each head's attention over the cache while tokens are generated.
// This module and its worker load only when the view opens (entry.ts).
import "./gpt2.css";
import * as d3 from "d3";
import type { Tensor } from "attnkit";
import { $, stageWidth } from "../dom";
import { headColor, sequential } from "../draw/colors";
import { drawMatrix } from "../draw/heatmap";
import { weightLegend } from "../draw/legend";
import { note } from "../draw/text";
import type { SvgGroup } from "../draw/types";
import { exportPng, exportSvg } from "../export";
import { count, escapeHtml, fmt } from "../format";
import { charLabel, headMatrix } from "../language/view";
import { requestWeights, run as languageRun } from "../language/run";
import { reducedMotion } from "../motion";
import { saveUrl } from "../page";
import { downloadBytes, onnxButtonHtml } from "../panel";
import { set } from "../render";
import { openTrained } from "../trained";
import type { SceneCtx, SceneResult } from "../scenes/common";
import type { LayerNumbers, Source, SourceInfo } from "./protocol";
import {
  bindRun,
  cancel,
  confirm,
  generate,
  pick,
  requestLayer,
  requestOnnx,
  run,
  setSentence,
  stopGenerate,
} from "./run";
import { gpt2Settings as settings, SCORE_KINDS, type ScoreKind } from "./settings";

/** The ONNX file's name after where the model came from ("the file model.safetensors"). */
const onnxName = (from: string) =>
  `attnkit-gpt2-${from.replace(/^the (file|Hugging Face repository) /, "").replace(/[^\w.-]+/g, "-")}.onnx`;

/** The least induction score that names a head an induction head (an even spread scores ~1 / t). */
export const INDUCTION_AT = 0.3;
/** The most memory a WebAssembly module can hold. */
const WASM_MAX_BYTES = 4 * 1024 ** 3;
/** The most a phone is asked for: a small checkpoint (distilgpt2, GPT-2 small) fits. */
const PHONE_MAX_BYTES = 800 * 1024 ** 2;
/** Generation samples among the TOP_K likeliest tokens (all of a smaller vocabulary). */
const TOP_K = 40;
/** Milliseconds between generated tokens (none with reduced motion). */
const GEN_DELAY_MS = 60;

export const SCORE_NAMES: Record<ScoreKind, string> = {
  induction: "induction",
  previousToken: "previous token",
  duplicateToken: "duplicate token",
};

let redrawPage: () => void = () => {};
let bound = false;

/** A token's text piece as it is read: a space as ␣, a line break as ⏎ (leading spaces visible). */
export function pieceLabel(piece: string): string {
  return [...piece].map(charLabel).join("");
}

const mb = (bytes: number) =>
  bytes >= 1024 ** 3 ? `${fmt(bytes / 1024 ** 3, 2)} GB` : `${fmt(bytes / 1024 ** 2, 1)} MB`;

function isPhone(): boolean {
  return matchMedia("(pointer: coarse)").matches && innerWidth < 700;
}

/**
 * Why this browser cannot hold a model of `memoryBytes` ("" when it can): past what a
 * WebAssembly module holds, past half of what the device reports, or a large one on a phone.
 */
export function memoryRefusal(memoryBytes: number): string {
  const need = `It needs ${mb(memoryBytes)} of memory`;
  if (memoryBytes > WASM_MAX_BYTES)
    return `${need}: a WebAssembly module holds at most 4 GB, so no browser can open it. Pick a smaller checkpoint (distilgpt2, gpt2).`;
  const device = (navigator as { deviceMemory?: number }).deviceMemory;
  if (device && memoryBytes > (device * 1024 ** 3) / 2)
    return `${need}; this device reports ${device} GB of memory, too little to hold it beside the browser. Pick a smaller checkpoint.`;
  if (isPhone() && memoryBytes > PHONE_MAX_BYTES)
    return `${need}: more than a phone's browser gives one tab (at most ${mb(PHONE_MAX_BYTES)} here). Open it on a computer, or pick a smaller checkpoint (distilgpt2).`;
  return "";
}

// ---- the stage ----

export function caption(): string {
  const m = run.model;
  if (!m)
    return `<p>Open a GPT-2-family checkpoint from Hugging Face (a repository id such as <code>openai-community/gpt2</code>, a URL, or a <code>model.safetensors</code> file) or the model you trained in the Language view: attnkit runs it in this tab, in a Web Worker, and shows every head on your sentence.</p>`;
  const found = inductionHeads();
  return `<p>${escapeHtml(m.from)}: ${m.numLayers} layers of ${m.numHeads} heads, d<sub>model</sub> ${m.dModel}, ${count(m.parameterCount)} weights, run by attnkit (${m.target}) in a Web Worker.
    Every head's attention on your sentence, framed by its ${SCORE_NAMES[settings.color]} score (measured by attnkit's <code>headScores</code> on ${m.scoreLength} random tokens repeated twice);
    ${found.length ? `<b data-testid="gpt2-found">induction heads found: ${found.map(([l, h, s]) => `L${l} h${h} (${fmt(s, 2)})`).join(", ")}</b>` : `<span data-testid="gpt2-found">no head scores ${INDUCTION_AT} or more as an induction head</span>`}.</p>`;
}

/** Every head whose induction score reaches INDUCTION_AT, best first: [layer, head, score]. */
export function inductionHeads(): [number, number, number][] {
  const s = run.model?.scores.induction ?? [];
  const out: [number, number, number][] = [];
  s.forEach((row, l) => row.forEach((v, h) => v >= INDUCTION_AT && out.push([l, h, v])));
  return out.sort((a, b) => b[2] - a[2]);
}

export function render(g: SvgGroup, _ctx: SceneCtx): SceneResult {
  if (!bound) {
    bound = true;
    bindPanel();
  }
  syncPanel();
  const W = Math.max(300, stageWidth() - 34);
  const s = run.sentence;
  const m = run.model;
  if (!m || !s) {
    note(g, 0, 16, m ? "Reading the sentence…" : "No model yet: pick one in the panel above.", {
      "data-testid": "gpt2-empty",
    });
    return { width: 320, height: 30, duration: 0 };
  }
  let y = 4;
  y = drawTokens(g, y, W, s.pieces.map(pieceLabel), s.dropped);
  y = drawTop(g, y, W);
  const grid = drawGrid(g, y + 8, W, s.layers, s.pieces.map(pieceLabel));
  y = grid.bottom + 8;
  y += weightLegend(g, 8, y) + 14;
  const head = drawHead(g, y, W, s.layers, s.pieces.map(pieceLabel));
  y = head.bottom + 16;
  const gen = drawGeneration(g, y, W);
  y = gen.bottom;
  return { width: Math.max(grid.width, head.width, gen.width, 320), height: y + 10, duration: 0 };
}

/** The sentence's tokens as chips, leading spaces visible. Returns the y below. */
function drawTokens(g: SvgGroup, y0: number, W: number, labels: string[], dropped: number): number {
  const root = g
    .append("g")
    .attr("data-testid", "gpt2-tokens")
    .attr("transform", `translate(0,${y0})`);
  root
    .append("text")
    .attr("class", "m-title")
    .attr("y", 12)
    .text(
      `${labels.length} tokens${dropped ? ` (the first ${labels.length}: ${dropped} more do not fit the context)` : ""}`,
    );
  let x = 0,
    y = 22;
  labels.forEach((t, i) => {
    const w = Math.max(18, t.length * 7.5 + 10);
    if (x + w > W) {
      x = 0;
      y += 24;
    }
    const chip = root
      .append("g")
      .attr("transform", `translate(${x},${y})`)
      .attr("class", "gpt2-chip");
    chip.append("rect").attr("width", w).attr("height", 20).attr("rx", 4);
    chip
      .append("text")
      .attr("x", w / 2)
      .attr("y", 14)
      .attr("text-anchor", "middle")
      .attr("data-testid", `gpt2-token-${i}`)
      .text(t);
    x += w + 4;
  });
  return y0 + y + 30;
}

/** The likeliest next tokens as bars. Returns the y below. */
function drawTop(g: SvgGroup, y0: number, W: number): number {
  const top = run.sentence!.top;
  const root = g
    .append("g")
    .attr("data-testid", "gpt2-top")
    .attr("transform", `translate(0,${y0})`);
  root.append("text").attr("class", "m-title").attr("y", 12).text("the likeliest next tokens");
  const barW = Math.min(260, W - 160);
  top.forEach((t, i) => {
    const y = 20 + i * 16;
    root
      .append("text")
      .attr("class", "note")
      .attr("x", 110)
      .attr("y", y + 11)
      .attr("text-anchor", "end")
      .text(pieceLabel(t.piece));
    root
      .append("rect")
      .attr("x", 116)
      .attr("y", y + 2)
      .attr("height", 11)
      .attr("width", Math.max(1, t.p * barW))
      .attr("fill", "#4a7fb5");
    root
      .append("text")
      .attr("class", "note")
      .attr("x", 120 + Math.max(1, t.p * barW))
      .attr("y", y + 11)
      .text(`${fmt(100 * t.p, 1)} %`);
  });
  return y0 + 24 + top.length * 16;
}

/** The heads in the grid's order: by the chosen score (best first) or layer by layer. */
function gridOrder(L: number, H: number): [number, number][] {
  const all: [number, number][] = [];
  for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) all.push([l, h]);
  if (!settings.sort) return all;
  const s = run.model!.scores[settings.color];
  return all.sort((a, b) => s[b[0]][b[1]] - s[a[0]][a[1]]);
}

/** A score's frame colour: pale for 0, dark red for 1. */
const scoreColor = (v: number) => d3.interpolateOrRd(0.15 + 0.85 * Math.min(1, Math.max(0, v)));

/** Every layer x head as a small map, framed by its score. */
function drawGrid(
  g: SvgGroup,
  y0: number,
  W: number,
  layers: Tensor[],
  labels: string[],
): { bottom: number; width: number } {
  const m = run.model!;
  const L = layers.length,
    H = layers[0].shape[0],
    T = labels.length;
  const scores = m.scores[settings.color];
  const found = new Set(inductionHeads().map(([l, h]) => `${l}:${h}`));
  note(
    g,
    0,
    y0 + 10,
    `every head (${settings.sort ? `sorted by ${SCORE_NAMES[settings.color]} score` : "a row per layer"}), framed by its ${SCORE_NAMES[settings.color]} score; ★ an induction head. Click a map to show it large.`,
    { "data-testid": "gpt2-grid-title" },
  );
  const gap = 8;
  // As many maps per row as keep each 40 px or more (a row per layer when they fit).
  let perRow = H;
  while (perRow > 1 && (W - (perRow - 1) * gap) / perRow < 40) perRow--;
  const size = Math.min(96, Math.floor((W - (perRow - 1) * gap) / perRow));
  const cell = Math.max(1, Math.floor((size - 6) / T));
  const root = g
    .append("g")
    .attr("data-testid", "gpt2-grid")
    .attr("transform", `translate(0,${y0 + 18})`);
  let width = 0,
    bottom = 0;
  gridOrder(L, H).forEach(([l, h], k) => {
    const x = (k % perRow) * (size + gap);
    const y = Math.floor(k / perRow) * (cell * T + 26);
    const v = scores[l][h];
    const selected = l === settings.layer && h === settings.head;
    root
      .append("rect")
      .attr("x", x - 2)
      .attr("y", y + 14)
      .attr("width", cell * T + 4)
      .attr("height", cell * T + 4)
      .attr("fill", "none")
      .attr("stroke", selected ? "#111" : scoreColor(v))
      .attr("stroke-width", selected ? 3 : 2.5)
      .attr("data-testid", `gpt2-frame-${l}-${h}`)
      .attr("data-score", v);
    drawMatrix(root, {
      id: `gpt2-grid-${l}-${h}`,
      title: `${found.has(`${l}:${h}`) ? "★ " : ""}L${l} h${h} ${fmt(v, 2)}`,
      m: headMatrix(layers[l], h),
      x,
      y,
      top: 16,
      cell,
      color: sequential(),
      render: "canvas",
      tip: (r, c, val) =>
        `layer ${l}, head ${h}: “${escapeHtml(labels[r])}” → “${escapeHtml(labels[c])}” = <b>${fmt(val, 4)}</b><br>${SCORE_KINDS.map((kind) => `${SCORE_NAMES[kind]} ${fmt(m.scores[kind][l][h], 2)}`).join(" · ")}`,
      onCell: () => selectHead(l, h),
    });
    width = Math.max(width, x + size);
    bottom = Math.max(bottom, y + cell * T + 22);
  });
  return { bottom: y0 + 18 + bottom, width };
}

/** The head shown large, with its tokens. */
function drawHead(
  g: SvgGroup,
  y0: number,
  W: number,
  layers: Tensor[],
  labels: string[],
): { bottom: number; width: number } {
  const m = run.model!;
  const l = Math.min(settings.layer, layers.length - 1);
  const h = Math.min(settings.head, layers[0].shape[0] - 1);
  const T = labels.length;
  const cell = Math.max(4, Math.min(30, Math.floor((W - 130) / T)));
  const sentence = run.sentence!.scores;
  const onSentence = SCORE_KINDS.filter((k) => sentence[k])
    .map((k) => `${SCORE_NAMES[k]} ${fmt(sentence[k]![l][h], 2)}`)
    .join(" · ");
  const root = g.append("g").attr("data-testid", "gpt2-head");
  const v = drawMatrix(root, {
    id: "gpt2-head",
    title: `layer ${l}, head ${h}: ${SCORE_KINDS.map((k) => `${SCORE_NAMES[k]} ${fmt(m.scores[k][l][h], 2)}`).join(" · ")}`,
    m: headMatrix(layers[l], h),
    x: 0,
    y: y0,
    cell,
    color: sequential(),
    rowLabels: labels,
    colLabels: labels,
    rowAxis: "query",
    colAxis: "key",
    titleColor: headColor(h),
    render: "canvas",
    tip: (r, c, val) =>
      `“${escapeHtml(labels[r])}”${r} → “${escapeHtml(labels[c])}”${c} = <b>${fmt(val, 4)}</b>`,
  });
  if (onSentence)
    note(g, 0, y0 + v.height + 14, `on this sentence: ${onSentence}`, {
      "data-testid": "gpt2-head-sentence",
    });
  return { bottom: y0 + v.height + 20, width: v.width };
}

/** The last generated token's attention over the cache: per layer, a row per head. */
function drawGeneration(g: SvgGroup, y0: number, W: number): { bottom: number; width: number } {
  const steps = run.gen.steps;
  const gs = steps[steps.length - 1];
  if (!gs) return { bottom: y0, width: 0 };
  let y = y0;
  note(
    g,
    0,
    y + 10,
    `generating “${pieceLabel(gs.piece)}” (token ${gs.index + 1}): each head's attention over the cache, a map per layer`,
    { "data-testid": "gpt2-gen-title" },
  );
  y += 18;
  const all = gs.context.map(pieceLabel);
  const C = Math.min(all.length, Math.max(8, Math.floor((W - 60) / 10)));
  const ctx = all.slice(all.length - C);
  const cell = Math.max(6, Math.min(14, Math.floor((W - 60) / C)));
  let width = 0;
  gs.weights.forEach((w, l) => {
    const [H, full] = w.shape;
    const data = new Float32Array(H * C);
    for (let h = 0; h < H; h++)
      data.set(w.data.subarray(h * full + full - C, (h + 1) * full), h * C);
    const v = drawMatrix(g, {
      id: `gpt2-gen-${l}`,
      title: `layer ${l}`,
      m: { data, rows: H, cols: C },
      x: 0,
      y,
      cell,
      color: sequential(),
      rowLabels: Array.from({ length: H }, (_, h) => `h${h}`),
      colLabels: l === gs.weights.length - 1 ? ctx : undefined,
      render: "canvas",
      tip: (r, c, val) => `layer ${l}, head ${r} → “${escapeHtml(ctx[c])}” = <b>${fmt(val, 4)}</b>`,
    });
    y += v.height + 6;
    width = Math.max(width, v.width);
  });
  return { bottom: y + 10, width };
}

function selectHead(l: number, h: number): void {
  const m = run.model;
  if (!m) return;
  settings.layer = Math.min(Math.max(0, l), m.numLayers - 1);
  settings.head = Math.min(Math.max(0, h), m.numHeads - 1);
  saveUrl();
  redrawPage();
}

/** The view's keys: ← → the head, ↑ ↓ the layer of the head shown large. */
export function gpt2Key(key: string): boolean {
  const m = run.model;
  if (!m) return false;
  const moves: Record<string, [number, number]> = {
    ArrowLeft: [0, -1],
    ArrowRight: [0, 1],
    ArrowUp: [-1, 0],
    ArrowDown: [1, 0],
    "[": [0, -1],
    "]": [0, 1],
  };
  const mv = moves[key];
  if (!mv) return false;
  selectHead(
    (settings.layer + mv[0] + m.numLayers) % m.numLayers,
    (settings.head + mv[1] + m.numHeads) % m.numHeads,
  );
  return true;
}

// ---- saves ----

/**
 * A part of the stage (`testid`: the grid or the head) as an SVG of its own: a copy of
 * the group with the stage's defs and style, its canvases' pixels copied (the export
 * turns them into images).
 */
function partSvg(testid: string): SVGSVGElement {
  const stage = $("stage").querySelector<SVGSVGElement>("svg[data-testid=scene-svg]")!;
  const part = stage.querySelector<SVGGElement>(`[data-testid="${testid}"]`);
  if (!part) throw new Error(`nothing to save: the ${testid.replace("gpt2-", "")} is not drawn`);
  const box = part.getBBox();
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  for (const c of stage.children)
    if (c.tagName === "defs" || c.tagName === "style") svg.append(c.cloneNode(true));
  const copy = part.cloneNode(true) as SVGGElement;
  copy.setAttribute("transform", `translate(${8 - box.x},${8 - box.y})`);
  const from = part.querySelectorAll("canvas");
  copy.querySelectorAll("canvas").forEach((c, k) => c.getContext("2d")?.drawImage(from[k], 0, 0));
  svg.append(copy);
  const w = Math.ceil(box.width + 16),
    h = Math.ceil(box.height + 16);
  svg.setAttribute("width", String(w));
  svg.setAttribute("height", String(h));
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  return svg;
}

function save(part: "grid" | "head", kind: "png" | "svg"): void {
  const m = run.model!;
  const s = run.sentence!;
  const what =
    part === "grid"
      ? `every head of ${m.from}, framed by its ${SCORE_NAMES[settings.color]} score`
      : `layer ${settings.layer}, head ${settings.head} of ${m.from}`;
  const text = { title: `attnkit · ${what}`, caption: `“${s.text}” (${location.href})` };
  const name = `attnkit-gpt2-${part === "grid" ? "grid" : `L${settings.layer}-h${settings.head}`}`;
  const svg = partSvg(`gpt2-${part}`);
  if (kind === "svg") exportSvg(svg, name, text);
  else void exportPng(svg, name, text).catch((e) => showRefused(String(e)));
}

// ---- the panel ----

function panelHtml(): string {
  return `
  <fieldset class="gpt2-source">
    <legend>Model</legend>
    <label>Hugging Face repository or URL
      <input type="text" id="gpt2-source" data-testid="gpt2-source" spellcheck="false"
        placeholder="openai-community/gpt2" aria-describedby="gpt2-refused" /></label>
    <button type="button" id="gpt2-lookup" data-testid="gpt2-lookup">Look up</button>
    <label class="file-button">open files
      <input type="file" id="gpt2-file" data-testid="gpt2-file" multiple accept=".safetensors,.json,.bin,.attnkit" /></label>
    <label>heads <input type="number" id="gpt2-heads" data-testid="gpt2-heads" min="1" max="128"
      title="Only for a model.safetensors without its config.json" /></label>
    <button type="button" id="gpt2-use-language" data-testid="gpt2-use-language"
      title="The model trained in the Language view">the Language view's model</button>
    <p class="hint">or drop a <code>model.safetensors</code> with its <code>config.json</code> (or a weights file saved by the Language view) on this panel; a safetensors file alone needs its number of heads. Nothing is downloaded until you confirm.</p>
    <div id="gpt2-confirm" class="gpt2-confirm" data-testid="gpt2-confirm" role="alertdialog" aria-live="polite" hidden>
      <span id="gpt2-confirm-text" data-testid="gpt2-confirm-text"></span>
      <button type="button" id="gpt2-confirm-yes" data-testid="gpt2-confirm-yes">Download and open</button>
      <button type="button" id="gpt2-confirm-no" data-testid="gpt2-confirm-no">Cancel</button>
    </div>
    <div id="gpt2-loading" class="gpt2-loading" hidden>
      <progress id="gpt2-progress" data-testid="gpt2-progress" max="1" value="0"></progress>
      <span id="gpt2-progress-text" data-testid="gpt2-progress-text"></span>
      <button type="button" id="gpt2-cancel" data-testid="gpt2-cancel">Cancel</button>
    </div>
    <p id="gpt2-refused" class="adj error" data-testid="gpt2-refused" role="alert"></p>
    <p id="gpt2-status" class="hint" data-testid="gpt2-status" role="status"></p>
    <p>${onnxButtonHtml("gpt2")}</p>
  </fieldset>
  <div class="train-settings gpt2-settings">
    <label class="gpt2-wide">Sentence
      <input type="text" id="gpt2-sentence" data-testid="gpt2-sentence" spellcheck="false" /></label>
    <label>Frame by
      <select id="gpt2-color" data-testid="gpt2-color">${SCORE_KINDS.map((k) => `<option value="${k}">${SCORE_NAMES[k]} score</option>`).join("")}</select></label>
    <label class="check"><input type="checkbox" id="gpt2-sort" data-testid="gpt2-sort" /> sorted by it</label>
  </div>
  <div class="train-buttons">
    <button type="button" id="gpt2-steps" data-testid="gpt2-steps">Step through this head (8 steps)</button>
    <span class="gpt2-saves">save the grid
      <button type="button" data-save="grid:png" data-testid="gpt2-save-grid-png">PNG</button>
      <button type="button" data-save="grid:svg" data-testid="gpt2-save-grid-svg">SVG</button>
      · the head
      <button type="button" data-save="head:png" data-testid="gpt2-save-head-png">PNG</button>
      <button type="button" data-save="head:svg" data-testid="gpt2-save-head-svg">SVG</button></span>
  </div>
  <div class="train-buttons">
    <label>tokens <input type="number" id="gpt2-gen-length" data-testid="gpt2-gen-length" min="1" max="200" value="20" /></label>
    <label>temperature <input type="number" id="gpt2-temp" data-testid="gpt2-temp" min="0" max="2" step="0.1" value="0" /></label>
    <button type="button" id="gpt2-generate" data-testid="gpt2-generate">Generate after the sentence</button>
  </div>
  <p class="gpt2-gen" data-testid="gpt2-gen-text" id="gpt2-gen-text" aria-live="polite"></p>`;
}

/** What the learner typed as a source: a URL, or a Hub repository id (owner/name or a canonical name). */
export function typedSource(raw: string): Source | string {
  const t = raw.trim();
  if (!t) return "Type a Hugging Face repository id (such as openai-community/gpt2) or a URL.";
  if (/^https?:\/\//i.test(t)) return { kind: "url", url: t };
  if (/^[\w.-]+(\/[\w.-]+)?$/.test(t)) return { kind: "hub", repo: t };
  return `“${t}” is neither a repository id (owner/name) nor an http(s) URL.`;
}

/**
 * The files dropped or opened: an attnkit weights file (magic ATKMODEL), or a checkpoint
 * with, when it came along, its config.json (else the heads typed in the panel, if any).
 */
async function fileSource(files: File[]): Promise<Source> {
  const config = files.find((f) => f.name.endsWith(".json"));
  const f = files.find((x) => x !== config);
  if (!f) throw new Error("a config.json alone holds no weights: drop model.safetensors with it");
  const head = new Uint8Array(await f.slice(0, 8).arrayBuffer());
  if (new TextDecoder().decode(head) === "ATKMODEL")
    return {
      kind: "weights",
      bytes: new Uint8Array(await f.arrayBuffer()),
      name: `the file ${f.name}`,
    };
  const heads = Number($<HTMLInputElement>("gpt2-heads").value);
  return {
    kind: "file",
    file: f,
    ...(config ? { config: JSON.parse(await config.text()) as Record<string, unknown> } : {}),
    ...(Number.isInteger(heads) && heads > 0 ? { numHeads: heads } : {}),
  };
}

function showRefused(message: string): void {
  run.refused = message;
  syncPanel();
}

function lookUp(): void {
  const s = typedSource($<HTMLInputElement>("gpt2-source").value);
  if (typeof s === "string") return showRefused(s);
  settings.model = s.kind === "hub" ? s.repo : s.kind === "url" ? s.url : "";
  saveUrl();
  pick(s);
  syncPanel();
}

function bindPanel(): void {
  const panel = $("gpt2");
  panel.innerHTML = panelHtml();
  $<HTMLInputElement>("gpt2-source").value = settings.model;
  $<HTMLInputElement>("gpt2-sentence").value = settings.sentence;
  $<HTMLSelectElement>("gpt2-color").value = settings.color;
  $<HTMLInputElement>("gpt2-sort").checked = settings.sort;
  $("gpt2-lookup").addEventListener("click", lookUp);
  $("gpt2-source").addEventListener("keydown", (e) => {
    if (e.key === "Enter") lookUp();
  });
  $("gpt2-file").addEventListener("change", () => {
    const input = $<HTMLInputElement>("gpt2-file");
    const files = [...(input.files ?? [])];
    input.value = "";
    if (files.length) void openFiles(files);
  });
  panel.addEventListener("dragover", (e) => e.preventDefault());
  panel.addEventListener("drop", (e) => {
    e.preventDefault();
    const files = [...(e.dataTransfer?.files ?? [])];
    if (files.length) void openFiles(files);
  });
  // Heads typed for a safetensors file that came without its config.json: that file again.
  // Files with their config (which names the heads) and a cleared field read nothing: the
  // field's change comes when it loses focus, e.g. to the click on "Open" of other files.
  $("gpt2-heads").addEventListener("change", () => {
    const heads = Number($<HTMLInputElement>("gpt2-heads").value);
    const alone = lastFiles && !lastFiles.some((f) => f.name.endsWith(".json"));
    if (!alone || !Number.isInteger(heads) || heads < 1) return;
    if (!run.model?.from.includes(lastFiles![0].name)) void openFiles(lastFiles!);
  });
  $("gpt2-onnx").addEventListener("click", () =>
    requestOnnx((bytes) => downloadBytes(bytes, onnxName(run.model?.from ?? "model"))),
  );
  $("gpt2-use-language").addEventListener("click", () =>
    requestWeights((bytes) => pick({ kind: "weights", bytes, name: "the Language view's model" })),
  );
  $("gpt2-confirm-yes").addEventListener("click", () => {
    confirm();
    syncPanel();
  });
  $("gpt2-confirm-no").addEventListener("click", () => {
    cancel();
    syncPanel();
  });
  $("gpt2-cancel").addEventListener("click", () => {
    cancel();
    syncPanel();
  });
  bindSettings();
  bindRun(() => redrawPage(), syncPanel);
  setSentence(settings.sentence);
  // A repository id in the link is looked up (its size shown), then waits for the learner's confirmation.
  if (settings.model) lookUp();
}

/** The files last dropped or opened. */
let lastFiles: File[] | null = null;

async function openFiles(files: File[]): Promise<void> {
  lastFiles = files;
  settings.model = "";
  $<HTMLInputElement>("gpt2-source").value = "";
  saveUrl();
  try {
    pick(await fileSource(files));
  } catch (err) {
    const names = files.map((f) => f.name).join(", ");
    showRefused(`${names} could not be read: ${err instanceof Error ? err.message : String(err)}`);
  }
  syncPanel();
}

function bindSettings(): void {
  const sentence = $<HTMLInputElement>("gpt2-sentence");
  const applySentence = () => {
    if (!sentence.value.trim() || sentence.value === settings.sentence) return;
    settings.sentence = sentence.value;
    saveUrl();
    setSentence(settings.sentence);
  };
  sentence.addEventListener("keydown", (e) => {
    if (e.key === "Enter") applySentence();
  });
  sentence.addEventListener("change", applySentence);
  $("gpt2-color").addEventListener("change", () => {
    settings.color = $<HTMLSelectElement>("gpt2-color").value as ScoreKind;
    saveUrl();
    redrawPage();
  });
  $("gpt2-sort").addEventListener("change", () => {
    settings.sort = $<HTMLInputElement>("gpt2-sort").checked;
    saveUrl();
    redrawPage();
  });
  $("gpt2-steps").addEventListener("click", () => requestLayer(settings.layer, openLayer));
  $("gpt2").addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-save]");
    if (!b) return;
    const [part, kind] = b.dataset.save!.split(":") as ["grid" | "head", "png" | "svg"];
    try {
      save(part, kind);
    } catch (err) {
      showRefused(err instanceof Error ? err.message : String(err));
    }
  });
  $("gpt2-generate").addEventListener("click", () => {
    if (run.gen.running) return stopGenerate();
    const length = Math.min(
      200,
      Math.max(1, Math.round(Number($<HTMLInputElement>("gpt2-gen-length").value) || 20)),
    );
    const temperature = Math.min(
      2,
      Math.max(0, Number($<HTMLInputElement>("gpt2-temp").value) || 0),
    );
    generate(
      {
        prompt: settings.sentence,
        length,
        temperature,
        topK: Math.min(TOP_K, run.model!.vocabSize),
        seed: 1,
      },
      reducedMotion() ? 0 : GEN_DELAY_MS,
    );
    syncPanel();
  });
}

function openLayer(n: LayerNumbers): void {
  const m = run.model!;
  openTrained({
    task: "gpt2",
    step: 0,
    tokens: n.tokens,
    targets: n.tokens.map(() => -1),
    labels: n.pieces.map(pieceLabel),
    text: n.pieces.join(""),
    layer: n.layer,
    numLayers: m.numLayers,
    numHeads: n.weights.shape[0],
    numKvHeads: n.numKvHeads,
    dK: n.dK,
    dModel: n.input.cols,
    scaled: n.scaled,
    X: n.input,
    W_Q: n.W_Q,
    W_K: n.W_K,
    W_V: n.W_V,
    W_O: n.W_O,
    weights: n.weights,
  });
  // The head shown large is the head the steps follow.
  set({ head: Math.min(settings.head, n.weights.shape[0] - 1) });
}

function confirmText(i: SourceInfo): [string, string] {
  const what = `${i.from}: ${i.what} of ${i.numLayers} layers × ${i.numHeads} heads, d_model ${i.dModel}, ${count(i.parameters)} weights (${i.dtype}).`;
  const refusal = memoryRefusal(i.memoryBytes);
  const ask = `${i.local ? "Read" : "Download"} ${mb(i.totalBytes)} and open it (it needs ${mb(i.memoryBytes)} of memory)?`;
  return [`${what} ${refusal || ask}`, refusal];
}

function syncPanel(): void {
  if (!bound) return;
  const p = run.pending;
  const box = $("gpt2-confirm");
  box.hidden = !p;
  if (p) {
    const [text, refusal] = p.info ? confirmText(p.info) : [`Reading what the model holds…`, ""];
    $("gpt2-confirm-text").textContent = text;
    const yes = $<HTMLButtonElement>("gpt2-confirm-yes");
    yes.hidden = !p.info || !!refusal;
    yes.textContent = p.info?.local ? "Open" : "Download and open";
    box.dataset.refused = refusal ? "1" : "";
  }
  const l = run.loading;
  $("gpt2-loading").hidden = !l;
  if (l) {
    const prog = $<HTMLProgressElement>("gpt2-progress");
    prog.value = l.totalBytes ? l.loadedBytes / l.totalBytes : 0;
    $("gpt2-progress-text").textContent =
      `${mb(l.loadedBytes)} of ${mb(l.totalBytes)} from ${l.from}`;
  }
  $("gpt2-refused").textContent = run.refused || run.error;
  const m = run.model;
  $("gpt2-status").textContent = m
    ? `In use: ${m.from} (${m.numLayers} layers × ${m.numHeads} heads, ${count(m.parameterCount)} weights).`
    : "";
  $<HTMLButtonElement>("gpt2-use-language").disabled = !languageRun.ready;
  $<HTMLButtonElement>("gpt2-onnx").disabled = !m;
  for (const id of ["gpt2-steps", "gpt2-generate"])
    $<HTMLButtonElement>(id).disabled = !m || !run.sentence;
  document
    .querySelectorAll<HTMLButtonElement>("#gpt2 [data-save]")
    .forEach((b) => (b.disabled = !run.sentence));
  $("gpt2-generate").textContent = run.gen.running ? "Stop" : "Generate after the sentence";
  const g = run.gen;
  $("gpt2-gen-text").innerHTML = g.steps.length
    ? `${escapeHtml(g.prompt)}<b>${escapeHtml(g.steps.map((s) => s.piece).join(""))}</b>`
    : "";
}

export function setRedraw(fn: () => void): void {
  redrawPage = fn;
}

/** What the browser tests read (window.__attnkit.gpt2()). */
export function gpt2Hook() {
  const s = run.sentence;
  return {
    loaded: true,
    pending: run.pending && { id: run.pending.id, info: run.pending.info },
    loading: run.loading && { ...run.loading },
    refused: run.refused,
    error: run.error,
    model: run.model,
    settings: { ...settings },
    inductionHeads: inductionHeads(),
    sentence: s && {
      text: s.text,
      tokens: s.tokens,
      pieces: s.pieces,
      top: s.top,
      scores: s.scores,
      layers: s.layers.map((L) => ({ shape: L.shape, weights: Array.from(L.data) })),
    },
    gen: {
      running: run.gen.running,
      tokens: run.gen.steps.map((x) => x.token),
      text: run.gen.steps.map((x) => x.piece).join(""),
      check: run.gen.check,
    },
  };
}
