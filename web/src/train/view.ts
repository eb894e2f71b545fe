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
import { escapeHtml, fmt, maxAbs, shape, sub } from "../format";
import { page } from "../page";
import { render } from "../render";
import type { Scene } from "../scenes/common";
import { openTrained, tokenLabel } from "../trained";
import {
  chartBelow,
  chartFrame,
  drawSeries,
  qkScatter,
  type ChartState,
  type Series,
} from "./charts";
import type { InspectionView, LayerWeights, RunConfig } from "./protocol";
import {
  loadWeights,
  pause,
  requestLayer,
  requestWeights,
  reset,
  run,
  scrubTo,
  setConfig,
  startRuns,
  step,
  train,
  TASKS,
} from "./run";

function labels(ins: InspectionView): string[] {
  return ins.tokens.map((t, i) => `${tokenLabel(t)}${sub(i)}`);
}

/** Head h of a [heads, T, T] tensor as a matrix. */
function headMatrix(t: Tensor, h: number) {
  const [, T, Tk] = t.shape;
  return { data: t.data.subarray(h * T * Tk, (h + 1) * T * Tk), rows: T, cols: Tk };
}

const pct = (v: number) => (Number.isFinite(v) ? `${(100 * v).toFixed(1)}%` : "–");

function redraw(): void {
  if (page.state.view === "train") render(false);
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
  const cw = Math.min(460, side ? (room - 170) / 2 : room - 70);
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
  const width = side ? 60 + 2 * cw + 110 : cw + 70;
  const height = (side ? 26 + ch + below : 2 * (26 + ch + below)) + 4;
  setAttr(svg, "width", Math.ceil(width));
  setAttr(svg, "height", Math.ceil(height));
  setAttr(svg, "viewBox", `0 0 ${Math.ceil(width)} ${Math.ceil(height)}`);
  charts = { loss, accuracy };
}

const runLabel = (i: number) => ((i === 0) === run.config.scaled ? "scaled ÷√dₖ" : "unscaled");

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
      label: "256 held-out sequences",
      color: "#1e3a8a",
      x: run.evals.map((e) => e.step),
      y: run.evals.map((e) => e.accuracy),
      dots: true,
    },
  ];
  const c0 = run.curves[0];
  const lastLoss = c0?.loss[c0.loss.length - 1];
  const lastEval = run.evals[run.evals.length - 1];
  drawSeries(charts.loss, `loss ${lastLoss !== undefined ? fmt(lastLoss, 3) : ""}`, lossSeries);
  drawSeries(charts.accuracy, `accuracy ${lastEval ? pct(lastEval.accuracy) : ""}`, accSeries, 1);
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
    return `<p>A small attention-only transformer (${c.numLayers} layer${c.numLayers > 1 ? "s" : ""} of ${c.numHeads} head${c.numHeads > 1 ? "s" : ""}, d<sub>model</sub> ${c.dModel}, d<sub>k</sub> ${c.dK}${run.ready ? `, ${run.ready.parameterCount} weights` : ""}) learns the <b>${c.task}</b> task, trained by attnkit's forward and backward passes and AdamW in a Web Worker, on one core.
      Below: the loss and accuracy, and, on one sample sequence, each head's attention weights, its queries and keys (a query's line goes to the key it weights most) and the gradient dS = ∂loss/∂scores of one head (where the learning signal goes).</p>
      <p class="shapes">sample ${shape("T", "T")} = ${shape(run.ready?.seqLen ?? "T", run.ready?.seqLen ?? "T")} per head; Q, K ${shape("h", "T", "d_k")}; ${run.config.scaled ? "scores ÷ √d<sub>k</sub>" : "scores not scaled"}</p>`;
  },
  render: (g, ctx) => {
    if (!bound) {
      bound = true;
      bindPanel();
      startRuns(redraw, redrawCurves, writeConfig);
    }
    syncPanel();
    const W = Math.max(600, ctx.width - 10);
    layoutCharts();
    drawCharts();
    let y = 16;
    let width = 0;
    const ins = run.inspection;
    if (!ins || !run.ready) {
      note(g, 0, y, run.error ? "" : "Loading attnkit's model build in the worker…");
      return { width, height: y + 20, duration: 0 };
    }
    const T = ins.tokens.length;
    const lab = labels(ins);
    const H = ins.layers[0].weights.shape[0];
    const scored = (i: number) => ins.targets[i] >= 0;
    note(
      g,
      0,
      y,
      `${ins.snapshot >= 0 ? `snapshot at step ${ins.step}` : `step ${ins.step}`} · sample: ${ins.tokens.map(tokenLabel).join(" ")} · predicted right on ${ins.predictions.filter((p, i) => scored(i) && p === ins.targets[i]).length} of ${ins.targets.filter((t) => t >= 0).length} scored tokens`,
      { "data-testid": "train-sample" },
    );
    y += 22;
    // Attention maps: one row per layer.
    const cell = Math.max(4, Math.min(14, Math.floor((W - 60 - H * 70) / (H * T))));
    ins.layers.forEach((L, l) => {
      let x = 0,
        rowH = 0;
      for (let h = 0; h < H; h++) {
        const v = drawMatrix(g, {
          id: `train-attn-${l}-${h}`,
          title: `layer ${l + 1} · head ${h}`,
          m: headMatrix(L.weights, h),
          x,
          y,
          cell,
          color: sequential(),
          rowLabels: h === 0 ? lab : undefined,
          titleColor: headColor(h),
          tip: (r, c, val) =>
            `layer ${l + 1}, head ${h}: α${sub(r)}${sub(c)} = <b>${fmt(val, 4)}</b><br>“${escapeHtml(lab[r])}” → “${escapeHtml(lab[c])}”`,
          onCell: () => {
            run.layer = l;
            run.head = h;
            redraw();
          },
        });
        x += v.width + 22;
        rowH = Math.max(rowH, v.height);
      }
      width = Math.max(width, x);
      y += rowH + 12;
    });
    y += weightLegend(g, 8, y) + 8;
    // Query/key maps.
    const size = Math.max(150, Math.min(220, Math.floor((W - 20) / H) - 24));
    note(
      g,
      0,
      y,
      "queries (●) and keys (■) of each head, projected together to 2-D; a line from each query to the key it weights most",
    );
    y += 30;
    ins.layers.forEach((L, l) => {
      for (let h = 0; h < H; h++) {
        qkScatter(
          g,
          `train-qk-${l}-${h}`,
          h * (size + 24),
          y,
          size,
          `layer ${l + 1} · head ${h}`,
          L.qk[h],
        );
      }
      width = Math.max(width, H * (size + 24));
      y += size + 34;
    });
    // dS of the chosen head.
    const l = Math.min(run.layer, ins.layers.length - 1),
      h = Math.min(run.head, H - 1);
    const dS = ins.layers[l].dScores;
    if (dS) {
      const m = headMatrix(dS, h);
      const mx = maxAbs(m.data) || 1e-9;
      const v = drawMatrix(g, {
        id: "train-dS",
        title: `dS = ∂loss/∂scores, layer ${l + 1} · head ${h}`,
        shape: shape(T, T),
        m,
        x: 0,
        y,
        cell: Math.max(cell, Math.min(14, Math.floor((W - 80) / T))),
        color: diverging(mx),
        rowLabels: lab,
        tip: (r, c, val) =>
          `∂loss/∂s${sub(r)}${sub(c)} = <b>${val.toExponential(3)}</b><br>“${escapeHtml(lab[r])}” → “${escapeHtml(lab[c])}”`,
      });
      y += v.height + 10;
      width = Math.max(width, v.width);
      y += signedLegend(g, 8, y, mx, "∂loss/∂score");
    }
    return { width, height: y + 10, duration: 0 };
  },
};

// ---- the panel ----

const num = (id: string) => Number($<HTMLInputElement>(id).value);

/** The settings as the panel shows them (each kept within its input's range). */
function readConfig(): Partial<RunConfig> {
  const clampIn = (id: string) => {
    const el = $<HTMLInputElement>(id);
    const v = Math.round(Number(el.value));
    return Math.min(
      Number(el.max),
      Math.max(Number(el.min), Number.isFinite(v) ? v : Number(el.min)),
    );
  };
  return {
    task: $<HTMLSelectElement>("train-task").value as RunConfig["task"],
    numLayers: clampIn("train-layers"),
    numHeads: clampIn("train-heads"),
    dModel: clampIn("train-dmodel"),
    dK: clampIn("train-dk"),
    learningRate: num("train-lr"),
    batch: clampIn("train-batch"),
    scaled: $<HTMLInputElement>("train-scaled").checked,
  };
}

function writeConfig(): void {
  const c = run.config;
  $<HTMLSelectElement>("train-task").value = c.task;
  $<HTMLInputElement>("train-layers").value = String(c.numLayers);
  $<HTMLInputElement>("train-heads").value = String(c.numHeads);
  $<HTMLInputElement>("train-dmodel").value = String(c.dModel);
  $<HTMLInputElement>("train-dk").value = String(c.dK);
  $<HTMLSelectElement>("train-lr").value = String(c.learningRate);
  $<HTMLInputElement>("train-batch").value = String(c.batch);
  $<HTMLInputElement>("train-scaled").checked = c.scaled;
  $<HTMLInputElement>("train-compare").checked = run.compare;
}

function bindPanel(): void {
  $<HTMLSelectElement>("train-task").innerHTML = TASKS.map(
    (t) => `<option value="${t}">${t}</option>`,
  ).join("");
  writeConfig();
  const panel = $("train");
  panel.addEventListener("change", (e) => {
    const t = e.target as HTMLElement;
    if (t.closest(".train-settings")) {
      setConfig(readConfig(), $<HTMLInputElement>("train-compare").checked);
      writeConfig();
      redraw();
    } else if (t.id === "train-head") {
      const [l, h] = ($<HTMLSelectElement>("train-head").value || "0:0").split(":").map(Number);
      run.layer = l;
      run.head = h;
      redraw();
    } else if (t.id === "train-file") {
      const input = t as HTMLInputElement;
      const f = input.files?.[0];
      input.value = "";
      if (f) void f.arrayBuffer().then((b) => loadWeights(new Uint8Array(b)));
    }
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
    reset();
    redraw();
  });
  $("train-download").addEventListener("click", () =>
    requestWeights((bytes, s) => {
      const a = document.createElement("a");
      a.href = URL.createObjectURL(
        new Blob([bytes as BlobPart], { type: "application/octet-stream" }),
      );
      a.download = `attnkit-${run.config.task}-step${s}.atkmodel`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 1000);
    }),
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

function setDisabled(id: string, d: boolean): void {
  const b = $<HTMLButtonElement>(id);
  if (b.disabled !== d) b.disabled = d;
}

/** Buttons, slider, lists and status as the run says. */
function syncPanel(): void {
  const ready = !!run.ready;
  const focused = document.activeElement;
  setDisabled("train-go", !ready || run.training);
  setDisabled("train-pause", !run.training);
  setDisabled("train-step", !ready || run.training);
  setDisabled("train-download", !ready);
  // A button disabled under the focus (Enter on Train or Pause) hands it to the other one.
  if (
    focused instanceof HTMLButtonElement &&
    focused.disabled &&
    /^train-(go|pause|step)$/.test(focused.id)
  )
    $(run.training ? "train-pause" : "train-go").focus();
  const scrub = $<HTMLInputElement>("train-scrub");
  const n = run.snapshots.length;
  if (scrub.max !== String(n)) scrub.max = String(n);
  const pos = run.scrub < 0 ? n : run.scrub;
  if (scrub.value !== String(pos)) scrub.value = String(pos);
  scrub.disabled = run.training || n === 0;
  const at =
    run.scrub < 0 ? `now (step ${run.step})` : `snapshot at step ${run.snapshots[run.scrub]}`;
  $("train-scrub-out").textContent = at;
  scrub.setAttribute("aria-valuetext", at);
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
  const open = $("train-open");
  if (open.children.length !== layers)
    open.innerHTML = Array.from(
      { length: layers },
      (_, l) =>
        `<button type="button" data-layer="${l}" data-testid="train-open-${l}" aria-label="open layer ${l + 1} in the steps view">layer ${l + 1} in steps view</button>`,
    ).join(" ");
  for (const b of open.querySelectorAll("button")) b.disabled = !ins;
  const c = run.curves[0];
  const lastEval = run.evals[run.evals.length - 1];
  const status = run.error
    ? `<span class="error" data-testid="train-error">${escapeHtml(run.error)}</span>`
    : !ready
      ? "starting the worker…"
      : `${run.training ? "training" : run.step ? "paused" : "ready"} · step ${run.step}${c?.loss.length ? ` · loss ${fmt(c.loss[c.loss.length - 1], 3)}` : ""}${lastEval ? ` · held-out accuracy ${pct(lastEval.accuracy)}` : ""}${run.reached90Ms !== null ? ` · 90% after ${(run.reached90Ms / 1000).toFixed(1)} s` : ""} · attnkit ${escapeHtml(run.target)} in a worker`;
  const st = $("train-status");
  if (st.innerHTML !== status) st.innerHTML = status;
}

/** What the browser tests read (window.__attnkit.train()). */
export function trainHook() {
  const ins = run.inspection;
  return {
    training: run.training,
    step: run.step,
    ready: !!run.ready,
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
