// The Train view: a small attention-only transformer trained live by attnkit in a Web
// Worker (worker.ts). The panel (#train in index.html) holds the settings, the buttons,
// the snapshot slider and the loss and accuracy curves; the stage shows, on one sample
// sequence, every head's attention, a query/key map per head and the gradient dS of one head.
import type { Tensor } from "attnkit";
import { $, stageWidth } from "../dom";
import { diverging, headColor, sequential } from "../draw/colors";
import { drawMatrix } from "../draw/heatmap";
import { signedLegend, weightLegend } from "../draw/legend";
import { setAttr } from "../draw/retain";
import { note } from "../draw/text";
import { labelSpace } from "../draw/labels";
import { count, escapeHtml, fmt, maxAbs, shape, sub } from "../format";
import { page, saveUrl } from "../page";
import type { Scene } from "../scenes/common";
import type { SvgGroup } from "../draw/types";
import { queryParts } from "../state";
import { openTrained, tokenLabel } from "../trained";
import {
  chartBelow,
  chartFrame,
  drawSeries,
  QK_BELOW,
  QK_LEFT,
  qkScatter,
  type ChartState,
  type Series,
} from "./charts";
import type { InspectionView, LayerWeights, RunConfig } from "./protocol";
import {
  bindThreadsControl,
  onThreadsChange,
  syncThreadsControl,
  threadChoice,
  threadsControlHtml,
  threadsText,
} from "../threads";
import {
  DEFAULT_CONFIG,
  loadWeights,
  pause,
  redrawPending,
  requestLayer,
  requestWeights,
  reset,
  run,
  scrubTo,
  setConfig,
  startRuns,
  step,
  threadsChanged,
  threadsPending,
  train,
} from "./run";
import { drawSample } from "./sample";
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
  settingsHtml,
  showConfirm,
  takeFile,
  syncOpenButtons,
  syncRunButtons,
  syncScrub,
} from "../panel";
import {
  LEARNING_RATES,
  NUMBER_FIELDS,
  settingsFromQuery,
  settingsQuery,
  stepOfFileName,
  TASKS,
} from "./settings";

// The settings come from the URL, and go back to it (only those that differ from the
// defaults); what the link held that could not be used is noted beside its field.
const fromUrl = settingsFromQuery(location.search, DEFAULT_CONFIG);
run.config = fromUrl.config;
run.compare = fromUrl.compare;
queryParts.push(() => settingsQuery(run.config, run.compare, DEFAULT_CONFIG));

/** The note beside each field (by the field's id): the value used and why, or the link's. */
const fieldNotes: Record<string, string> = { ...fromUrl.notes };

function labels(ins: InspectionView): string[] {
  return ins.tokens.map((t, i) => `${tokenLabel(t)}${sub(i)}`);
}

/** Head h of a [heads, T, T] tensor as a matrix. */
function headMatrix(t: Tensor, h: number) {
  const [, T, Tk] = t.shape;
  return { data: t.data.subarray(h * T * Tk, (h + 1) * T * Tk), rows: T, cols: Tk };
}

/** The smallest cell of an attention map whose labels stay readable (~9 px). */
const READABLE_CELL = 12;
/** The query/key maps' plot areas: at least this wide where several sit side by side, at most this. */
const QK_MIN = 150;
const QK_MAX = 260;

const pct = (v: number) => (Number.isFinite(v) ? `${(100 * v).toFixed(1)}%` : "–");

// The page's redraw, given by the renderer (this view does not import it: the
// renderer imports the view).
let renderPage: () => void = () => {};
export function setTrainRedraw(redrawPage: () => void): void {
  renderPage = redrawPage;
}

function redraw(): void {
  if (page.state.view === "train") renderPage();
}

let bound = false;

/**
 * The curves live in their own <svg> in the panel, outside the stage: redrawing them
 * (several times a second while training) repaints only them.
 */
let charts: { loss: ChartState; accuracy: ChartState } | null = null;

/** Lays the two charts side by side, or one above the other on a narrow screen. */
function layoutCharts(): void {
  const svg = document.getElementById("train-charts") as unknown as SVGSVGElement;
  // The panel is as wide as the stage (whose width the page keeps without a layout).
  const room = Math.max(300, stageWidth() - 10);
  const side = room >= 700;
  const cw = Math.min(460, side ? (room - 184) / 2 : room - 84);
  const ch = 140;
  const below = chartBelow(Math.max(2, run.curves.length + 1));
  const loss = chartFrame(svg, "train-loss", 60, 26, cw, ch, "cross-entropy");
  const accuracy = side
    ? chartFrame(svg, "train-accuracy", 60 + cw + 100, 26, cw, ch, "accuracy on scored tokens")
    : chartFrame(
        svg,
        "train-accuracy",
        60,
        26 + ch + below + 26,
        cw,
        ch,
        "accuracy on scored tokens",
      );
  // Room on the right for half of the last tick's label, centred on the axis' end.
  const width = side ? 60 + 2 * cw + 100 + 24 : cw + 60 + 24;
  const height = (side ? 26 + ch + below : 2 * (26 + ch + below)) + 4;
  setAttr(svg, "width", Math.ceil(width));
  setAttr(svg, "height", Math.ceil(height));
  setAttr(svg, "viewBox", `0 0 ${Math.ceil(width)} ${Math.ceil(height)}`);
  charts = { loss, accuracy };
}

const runLabel = (i: number) => ((i === 0) === run.config.scaled ? "scaled ÷√dₖ" : "unscaled");

/** The steps shown on the charts: where a loaded file's curves would be, the snapshot's. */
function chartMarks() {
  const ins = run.inspection;
  return {
    missingBefore: run.loaded?.step || undefined,
    snapshot: run.scrub >= 0 && ins && ins.snapshot >= 0 ? ins.step : undefined,
  };
}

/** The loss and accuracy curves (every step's training batch; the held-out evaluations). */
function drawCharts(): void {
  if (!charts) return;
  const lossSeries: Series[] = run.curves.map((c, i) => ({
    label: `loss, ${runLabel(i)}`,
    color: i === 0 ? "#2563eb" : "#d6604d",
    x: c.step,
    y: c.loss,
    dash: i === 0 ? undefined : "4 3",
  }));
  const accSeries: Series[] = [
    ...run.curves.map((c, i) => ({
      label: `training batch${run.curves.length > 1 ? `, ${runLabel(i)}` : ""}`,
      color: i === 0 ? "#93b4f5" : "#f4a582",
      x: c.step,
      y: c.accuracy,
      dash: i === 0 ? undefined : "4 3",
    })),
    {
      // The evaluations are of the first run's model only.
      label: `256 held-out sequences${run.curves.length > 1 ? `, ${runLabel(0)} run` : ""}`,
      color: "#1e3a8a",
      x: run.evals.map((e) => e.step),
      y: run.evals.map((e) => e.accuracy),
      dots: true,
    },
  ];
  const c0 = run.curves[0];
  const lastLoss = c0?.loss[c0.loss.length - 1];
  const lastEval = run.evals[run.evals.length - 1];
  const marks = chartMarks();
  drawSeries(
    charts.loss,
    `loss ${lastLoss !== undefined ? fmt(lastLoss, 3) : ""}`,
    lossSeries,
    undefined,
    marks,
  );
  drawSeries(
    charts.accuracy,
    `accuracy ${lastEval ? pct(lastEval.accuracy) : ""}`,
    accSeries,
    1,
    marks,
  );
}

/** Between full draws: only the curves and the panel's status. */
function redrawCurves(): void {
  if (page.state.view !== "train") return;
  syncPanel();
  drawCharts();
}

export const trainView: Scene = {
  title: "Train: watch attention learn",
  caption: () => {
    const c = run.config;
    return `<p>A small attention-only transformer (${c.numLayers} layer${c.numLayers > 1 ? "s" : ""} of ${c.numHeads} head${c.numHeads > 1 ? "s" : ""}, d<sub>model</sub> ${c.dModel}, d<sub>k</sub> ${c.dK}${run.ready ? `, ${count(run.ready.parameterCount)} weights` : ""}) learns the <b>${c.task}</b> task, trained by attnkit's forward and backward passes and AdamW in a Web Worker, on ${threadsText(run.threads || threadChoice.count)}.
      Below: the loss and accuracy, and, on one sample sequence, each head's attention weights, its queries and keys (a query's line goes to the key it weights most) and the gradient dS = ∂loss/∂scores of one head (where the learning signal goes).</p>
      <p class="shapes">sample ${shape("T", "T")} = ${shape(run.ready?.seqLen ?? "T", run.ready?.seqLen ?? "T")} per head; Q, K ${shape("h", "T", "d_k")}; ${run.config.scaled ? "scores ÷ √d<sub>k</sub>" : "scores not scaled"}</p>`;
  },
  render: (g) => {
    if (!bound) {
      bound = true;
      bindPanel();
      startRuns(redraw, redrawCurves, configFromRun);
    }
    syncPanel();
    // The view lays itself out for the stage's own width (a phone's too), so that it is
    // never scaled down: every label keeps its size.
    const W = Math.max(260, stageWidth() - 34);
    layoutCharts();
    drawCharts();
    const ins = run.inspection;
    if (!ins || !run.ready) {
      note(g, 0, 16, run.error ? "" : "Loading attnkit's model build in the worker…");
      return { width: 0, height: 36, duration: 0 };
    }
    const lab = labels(ins);
    const d: Drawing = {
      g,
      ins,
      lab,
      W,
      left: labelSpace({ rowLabels: lab, cell: 14 })[0],
      T: ins.tokens.length,
      H: ins.layers[0].weights.shape[0],
    };
    const flow: Flow = { y: 16, width: 0 };
    drawSampleRow(d, flow);
    drawAttentionMaps(d, flow);
    drawQKMaps(d, flow);
    drawHeadGradient(d, flow);
    return { width: flow.width, height: flow.y + 10, duration: 0 };
  },
};

/** What the view's parts draw: the inspection, its token labels and their width, the stage's width W. */
interface Drawing {
  g: SvgGroup;
  ins: InspectionView;
  lab: string[];
  W: number;
  /** Width of the row labels of a map. */
  left: number;
  /** Tokens of the sample, heads of a layer. */
  T: number;
  H: number;
}

/** Where the next part of the view goes (y) and the width drawn so far: each part advances it. */
interface Flow {
  y: number;
  width: number;
}

/** A line on the sample (step, tokens predicted right), then the sample sequence itself. */
function drawSampleRow({ g, ins, W }: Drawing, flow: Flow): void {
  const scored = ins.targets.filter((t) => t >= 0).length;
  const right = ins.predictions.filter((p, i) => ins.targets[i] >= 0 && p === ins.targets[i]);
  note(
    g,
    0,
    flow.y,
    `${ins.snapshot >= 0 ? `snapshot at step ${ins.step}` : `step ${ins.step}`} · ${W >= 480 ? "one sample sequence: predicted" : "sample:"} right on ${right.length} of ${scored} scored tokens`,
    { "data-testid": "train-sample" },
  );
  flow.y += 14;
  const sample = drawSample(g, 0, flow.y, W, ins);
  flow.y += sample.height + 14;
  flow.width = Math.max(flow.width, sample.width);
}

/**
 * Attention maps: one row per layer, its heads side by side, wrapped onto more rows where
 * cells of at least READABLE_CELL px would not fit; a click on a cell chooses the head of dS.
 */
function drawAttentionMaps({ g, ins, lab, W, left, T, H }: Drawing, flow: Flow): void {
  const gap = 22;
  const cellFor = (n: number) =>
    Math.min(14, Math.floor((W - left - (n - 1) * (gap + left)) / (n * T)));
  let perRow = H;
  while (perRow > 1 && cellFor(perRow) < READABLE_CELL) perRow--;
  const cell = Math.max(4, cellFor(perRow));
  ins.layers.forEach((L, l) => {
    let x = 0,
      rowH = 0;
    for (let h = 0; h < H; h++) {
      if (h > 0 && h % perRow === 0) {
        flow.y += rowH + 12;
        x = 0;
        rowH = 0;
      }
      const v = drawMatrix(g, {
        id: `train-attn-${l}-${h}`,
        title: `layer ${l + 1} · head ${h}`,
        m: headMatrix(L.weights, h),
        x,
        y: flow.y,
        cell,
        color: sequential(),
        // Every map has its labels: on a narrow screen a row may hold one map.
        rowLabels: lab,
        titleColor: headColor(h),
        tip: (r, c, val) =>
          `layer ${l + 1}, head ${h}: α${sub(r)}${sub(c)} = <b>${fmt(val, 4)}</b><br>“${escapeHtml(lab[r])}” → “${escapeHtml(lab[c])}”`,
        onCell: () => {
          run.layer = l;
          run.head = h;
          redraw();
        },
      });
      x += v.width + gap;
      rowH = Math.max(rowH, v.height);
      flow.width = Math.max(flow.width, x - gap);
    }
    flow.y += rowH + 12;
  });
  flow.y += weightLegend(g, 8, flow.y) + 8;
}

/** Query/key maps of every head: as many side by side as fit at QK_MIN px or more. */
function drawQKMaps({ g, ins, lab, W, H }: Drawing, flow: Flow): void {
  const qkGap = 18;
  const qkPerRow = Math.min(H, Math.max(1, Math.floor((W + qkGap) / (QK_MIN + QK_LEFT + qkGap))));
  const size = Math.min(QK_MAX, Math.floor((W + qkGap) / qkPerRow) - QK_LEFT - qkGap);
  note(
    g,
    0,
    flow.y,
    W >= 640
      ? "queries (●) and keys (■) of each head, projected together to 2-D; a line from each query to the key it weights most"
      : "queries (●) and keys (■) of each head in 2-D;",
  );
  if (W < 640) note(g, 0, flow.y + 15, "a line from each query to the key it weights most");
  flow.y += W >= 640 ? 30 : 45;
  ins.layers.forEach((L, l) => {
    for (let h = 0; h < H; h++) {
      const col = h % qkPerRow;
      if (h > 0 && col === 0) flow.y += size + QK_BELOW + 26;
      qkScatter(
        g,
        `train-qk-${l}-${h}`,
        QK_LEFT + col * (size + QK_LEFT + qkGap),
        flow.y,
        size,
        `layer ${l + 1} · head ${h}`,
        L.qk[h],
        lab,
      );
    }
    flow.width = Math.max(flow.width, qkPerRow * (size + QK_LEFT + qkGap) - qkGap);
    flow.y += size + QK_BELOW + 26;
  });
}

/** dS = ∂loss/∂scores of the chosen layer and head, with its legend. */
function drawHeadGradient({ g, ins, lab, W, left, T, H }: Drawing, flow: Flow): void {
  const l = Math.min(run.layer, ins.layers.length - 1),
    h = Math.min(run.head, H - 1);
  const dS = ins.layers[l].dScores;
  if (!dS) return;
  const m = headMatrix(dS, h);
  const mx = maxAbs(m.data) || 1e-9;
  const v = drawMatrix(g, {
    id: "train-dS",
    title: `dS = ∂loss/∂scores, layer ${l + 1} · head ${h}`,
    shape: shape(T, T),
    m,
    x: 0,
    y: flow.y,
    cell: Math.max(4, Math.min(14, Math.floor((W - left) / T))),
    color: diverging(mx),
    rowLabels: lab,
    tip: (r, c, val) =>
      `∂loss/∂s${sub(r)}${sub(c)} = <b>${val.toExponential(3)}</b><br>“${escapeHtml(lab[r])}” → “${escapeHtml(lab[c])}”`,
  });
  flow.y += v.height + 10;
  flow.width = Math.max(flow.width, v.width);
  flow.y += signedLegend(g, 8, flow.y, mx, "∂loss/∂score");
}

// ---- the panel ----

const num = (id: string) => Number($<HTMLInputElement>(id).value);

/**
 * The settings as the panel shows them. A number field whose text is not a number keeps
 * the run's value, one out of range or not whole gets the nearest whole number in range;
 * the field `changed` (the one just edited) gets a note saying so, or loses its note.
 */
function readConfig(changed?: string): RunConfig {
  const c: RunConfig = {
    ...run.config,
    task: $<HTMLSelectElement>("train-task").value as RunConfig["task"],
    learningRate: num("train-lr"),
    scaled: $<HTMLInputElement>("train-scaled").checked,
  };
  for (const f of NUMBER_FIELDS) {
    const [v, why] = fieldValue(f, $<HTMLInputElement>(f.id).value, run.config[f.key]);
    c[f.key] = v;
    if (f.id === changed) fieldNotes[f.id] = why;
  }
  if (changed && !NUMBER_FIELDS.some((f) => f.id === changed)) fieldNotes[changed] = "";
  return c;
}

/** The panel's fields and notes show `c` (default: the run's settings). */
function writeConfig(c: RunConfig = run.config, compare = run.compare): void {
  $<HTMLSelectElement>("train-task").value = c.task;
  for (const f of NUMBER_FIELDS) $<HTMLInputElement>(f.id).value = String(c[f.key]);
  $<HTMLSelectElement>("train-lr").value = String(c.learningRate);
  $<HTMLInputElement>("train-scaled").checked = c.scaled;
  $<HTMLInputElement>("train-compare").checked = compare;
  for (const id of [
    "train-task",
    ...NUMBER_FIELDS.map((f) => f.id),
    "train-lr",
    "train-scaled",
    "train-compare",
  ]) {
    const el = $(`${id}-note`);
    const text = fieldNotes[id] ?? "";
    if (el.textContent !== text) el.textContent = text;
  }
}

/** The run's settings changed in the worker (a loaded file sets the model's): to the panel and the URL. */
function configFromRun(): void {
  writeConfig();
  saveUrl();
}

/**
 * Settings changed while the run holds training the change would discard: they wait
 * for the user to start the new run or keep the current one (training pauses meanwhile).
 */
let pending: { config: RunConfig; compare: boolean; from: string; paused: boolean } | null = null;

const SETTING_NAMES: [keyof RunConfig, string][] = [
  ["task", "the task"],
  ...NUMBER_FIELDS.map((f): [keyof RunConfig, string] => [f.key, f.name]),
  ["learningRate", "the learning rate"],
  ["scaled", "the scale"],
];

/** What differs between the run's settings and `c`, in words. */
function changes(c: RunConfig, compare: boolean): string[] {
  const out = SETTING_NAMES.filter(([k]) => c[k] !== run.config[k]).map(
    ([k, name]) =>
      `${name} ${k === "scaled" ? (c.scaled ? "on" : "off") : `${String(run.config[k])} → ${String(c[k])}`}`,
  );
  if (compare !== run.compare) out.push(compare ? "comparing" : "no comparison");
  return out;
}

/** Steps trained in the current run (since it started, or since its weights file was loaded). */
function trained(): number {
  return run.curves[0]?.step.length ?? 0;
}

function applySettings(c: RunConfig, compare: boolean): void {
  pending = null;
  setConfig(c, compare);
  writeConfig();
  saveUrl();
  redraw();
}

function showPending(): void {
  showConfirm(
    "train",
    pending && {
      change: `Changing ${changes(pending.config, pending.compare).join(", ")}`,
      steps: trained(),
      loaded: run.loaded?.name ?? null,
      paused: pending.paused,
    },
  );
}

/** The panel's fields, buttons and slider (index.html holds their places). */
function buildPanel(): void {
  const n = (key: string) => NUMBER_FIELDS.find((f) => f.key === key)!;
  const num = (key: string, step?: string) =>
    ({ kind: "number", id: n(key).id, name: n(key).name, step }) as const;
  $("train-settings").innerHTML = settingsHtml([
    { kind: "select", id: "train-task", name: "task" },
    num("numLayers"),
    num("numHeads"),
    num("dModel", "4"),
    num("dK"),
    { kind: "select", id: "train-lr", name: "learning rate" },
    num("batch"),
    { kind: "check", id: "train-scaled", name: "scale by 1/√d_k" },
    {
      kind: "check",
      id: "train-compare",
      name: "compare scaled and unscaled",
      title: "Train the same task with the scale flipped, and overlay its loss",
    },
  ]);
  $("train-settings").insertAdjacentHTML("afterend", confirmHtml("train"));
  $("train-run").innerHTML = runButtonsHtml("train", {
    downloadTitle: "Download the weights (.atkmodel)",
    loadTitle: "Continue from a weights file (.atkmodel)",
    loadId: "train-file",
  });
  $("train-scrub-row").insertAdjacentHTML("afterbegin", scrubHtml("train"));
  $("train-run").insertAdjacentHTML("beforeend", threadsControlHtml("train"));
}

function bindPanel(): void {
  buildPanel();
  bindThreadsControl("train");
  onThreadsChange(threadsChanged);
  setOptions(
    "train-task",
    TASKS.map((t) => [t, t]),
  );
  setOptions("train-lr", LEARNING_RATES);
  setRanges(NUMBER_FIELDS);
  writeConfig();
  const panel = $("train");
  panel.addEventListener("change", (e) => {
    const t = e.target as HTMLElement;
    if (t.closest(".train-settings")) {
      const c = readConfig(t.id);
      const compare = $<HTMLInputElement>("train-compare").checked;
      if (!changes(c, compare).length) {
        // Back to the run's settings (or a clamp to them): nothing to start.
        pending = null;
        showPending();
        writeConfig();
        syncPanel();
      } else if (trained() || run.loaded) {
        const paused = run.training || !!pending?.paused;
        if (run.training) pause();
        pending = { config: c, compare, from: t.id, paused };
        // The fields show the values that will be used.
        writeConfig(c, compare);
        showPending();
        syncPanel();
      } else {
        applySettings(c, compare);
      }
    } else if (t.id === "train-head") {
      const [l, h] = ($<HTMLSelectElement>("train-head").value || "0:0").split(":").map(Number);
      run.layer = l;
      run.head = h;
      redraw();
    } else if (t.id === "train-file") {
      const f = takeFile(t as HTMLInputElement);
      if (f)
        void f
          .arrayBuffer()
          .then((b) => loadWeights(new Uint8Array(b), f.name, stepOfFileName(f.name)));
    }
  });
  $("train-confirm-yes").addEventListener("click", () => {
    if (!pending) return;
    const from = pending.from;
    applySettings(pending.config, pending.compare);
    showPending();
    $(from).focus();
  });
  $("train-confirm-no").addEventListener("click", () => {
    const from = pending?.from;
    pending = null;
    for (const id of Object.keys(fieldNotes)) fieldNotes[id] = "";
    writeConfig();
    showPending();
    syncPanel();
    if (from) $(from).focus();
  });
  $("train-scrub").addEventListener("input", () => {
    scrubTo(num("train-scrub"));
    redraw();
  });
  $("train-go").addEventListener("click", () => {
    train();
    redraw();
  });
  $("train-pause").addEventListener("click", pause);
  $("train-step").addEventListener("click", step);
  $("train-reset").addEventListener("click", () => {
    pending = null;
    showPending();
    writeConfig();
    reset();
    redraw();
  });
  $("train-download").addEventListener("click", () =>
    // The name holds the step (a weights file holds the weights only): a load reads it back.
    requestWeights((bytes, s) =>
      downloadBytes(bytes, `attnkit-${run.config.task}-step${s}.atkmodel`),
    ),
  );
  $("train-onnx").addEventListener("click", () =>
    requestWeights(
      (bytes, s) => downloadBytes(bytes, `attnkit-${run.config.task}-step${s}.onnx`),
      "onnx",
    ),
  );
  $("train-open").addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-layer]");
    if (b) requestLayer(Number(b.dataset.layer), openLayer);
  });
}

function openLayer(w: LayerWeights): void {
  const ins = w.inspection;
  const L = ins.layers[w.layer];
  const c = run.config;
  openTrained({
    task: c.task,
    step: w.step,
    tokens: ins.tokens,
    targets: ins.targets,
    layer: w.layer,
    numLayers: ins.layers.length,
    numHeads: L.weights.shape[0],
    numKvHeads: L.K.shape[0],
    dK: L.Q.shape[2],
    dModel: L.input.cols,
    scaled: c.scaled,
    X: L.input,
    W_Q: w.W_Q,
    W_K: w.W_K,
    W_V: w.W_V,
    W_O: w.W_O,
    weights: L.weights,
  });
}

/**
 * Moves the snapshot shown by `delta` (the arrow keys), from the run's own state: the
 * slider is redrawn on the next frame, so a key pressed just after a snapshot arrived
 * must not read it.
 */
export function scrubBy(delta: number): void {
  const to = scrubStep(run, delta);
  if (to === null) return;
  scrubTo(to);
  redraw();
}

/** Buttons, slider, lists and status as the run says. */
function syncPanel(): void {
  const ready = !!run.ready;
  syncThreadsControl("train", run.threads, threadsPending());
  syncRunButtons("train", run, ready && !pending);
  setDisabled("train-download", !ready);
  setDisabled("train-onnx", !ready);
  syncScrub("train", run);
  const ins = run.inspection;
  const layers = ins?.layers.length ?? run.config.numLayers;
  const H = ins?.layers[0].weights.shape[0] ?? run.config.numHeads;
  const heads = $<HTMLSelectElement>("train-head");
  const opts = Array.from({ length: layers * H }, (_, k) => `${Math.floor(k / H)}:${k % H}`);
  if ([...heads.options].map((o) => o.value).join() !== opts.join())
    heads.innerHTML = opts
      .map(
        (v) =>
          `<option value="${v}">layer ${Number(v.split(":")[0]) + 1} · head ${v.split(":")[1]}</option>`,
      )
      .join("");
  heads.value = `${Math.min(run.layer, layers - 1)}:${Math.min(run.head, H - 1)}`;
  syncOpenButtons("train", layers, !!ins);
  const c = run.curves[0];
  const lastEval = run.evals[run.evals.length - 1];
  const status = run.error
    ? `<span class="error" data-testid="train-error">${escapeHtml(run.error)}</span>`
    : !ready
      ? "starting the worker…"
      : `${run.training ? "training" : run.step ? "paused" : "ready"} · step ${run.step}${c?.loss.length ? ` · loss ${fmt(c.loss[c.loss.length - 1], 3)}` : ""}${lastEval ? ` · held-out accuracy ${pct(lastEval.accuracy)}` : ""}${run.reached90Ms !== null ? ` · 90% after ${(run.reached90Ms / 1000).toFixed(1)} s` : ""} · attnkit ${escapeHtml(run.target)} in a worker`;
  const st = $("train-status");
  if (st.innerHTML !== status) st.innerHTML = status;
  const f = run.loaded;
  const fileNote = !f
    ? ""
    : f.step !== null
      ? `Loaded ${f.name}: the weights of step ${f.step} (the step is read from the file's name). A weights file holds the weights only: the curves up to step ${f.step} are not in it, and training continues from there with a fresh optimiser.`
      : `Loaded ${f.name}: its name holds no step, so the steps count from 0. A weights file holds the weights only: the curves are not in it, and training continues with a fresh optimiser.`;
  const fn = $("train-file-note");
  if (fn.textContent !== fileNote) fn.textContent = fileNote;
  // The steps a pending change would discard go on until the pause reaches the worker.
  if (pending) showPending();
}

/** What the browser tests read (window.__attnkit.train()). */
export function trainHook() {
  const ins = run.inspection;
  return {
    training: run.training,
    step: run.step,
    ready: !!run.ready,
    /** The screen shows this state (no redraw is due). */
    drawn: !redrawPending(),
    threads: run.threads,
    error: run.error,
    runs: run.curves.length,
    curves: run.curves.map((c) => ({
      steps: c.step.length,
      lastLoss: c.loss[c.loss.length - 1] ?? null,
    })),
    evals: run.evals.length,
    lastEval: run.evals[run.evals.length - 1] ?? null,
    reached90Ms: run.reached90Ms,
    snapshots: run.snapshots.slice(),
    scrub: run.scrub,
    inspectionStep: ins ? ins.step : null,
    inspectionSnapshot: ins ? ins.snapshot : null,
  };
}

/** The inspection on screen with its weights as plain arrays (window.__attnkit.trainInspection()). */
export function trainInspectionHook() {
  const ins = run.inspection;
  return (
    ins && {
      step: ins.step,
      snapshot: ins.snapshot,
      tokens: ins.tokens,
      targets: ins.targets,
      evalAccuracy: ins.evalAccuracy,
      layers: ins.layers.map((L) => ({
        shape: L.weights.shape,
        weights: Array.from(L.weights.data),
      })),
    }
  );
}
