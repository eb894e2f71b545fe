// The GPT-2 view's side of its worker: what the worker reported (a checkpoint's size and
// memory, the download's progress, the model, the sentence's maps, the tokens generated)
// and the requests it is sent. Answers to an older request than the latest are dropped.
import { workerLink } from "../worker-link";
import type {
  FromWorker,
  GenCheck,
  GenOptions,
  GenStep,
  LayerNumbers,
  ModelSummary,
  SentenceView,
  Source,
  SourceInfo,
  ToWorker,
} from "./protocol";

export interface Gpt2Run {
  /** The source picked, waiting for the learner's confirmation (with what it holds, once read). */
  pending: { id: number; source: Source; info: SourceInfo | null } | null;
  /** The download under way. */
  loading: { id: number; from: string; loadedBytes: number; totalBytes: number } | null;
  model: ModelSummary | null;
  sentence: SentenceView | null;
  /** Why the last source was refused (the model in use, if any, stays). */
  refused: string;
  gen: {
    id: number;
    prompt: string;
    steps: GenStep[];
    check: GenCheck | null;
    running: boolean;
  };
  error: string;
}

export const run: Gpt2Run = {
  pending: null,
  loading: null,
  model: null,
  sentence: null,
  refused: "",
  gen: { id: 0, prompt: "", steps: [], check: null, running: false },
  error: "",
};

let redraw: () => void = () => {};
let redrawPanel: () => void = () => {};
/** A panel redraw asked for in this frame (the download's progress comes in many messages). */
let panelPending = false;
let onLayer: ((l: LayerNumbers) => void) | null = null;
let onOnnx: ((bytes: Uint8Array) => void) | null = null;
let requests = 0;
let sentenceId = 0;
let sentenceText = "";

/** The Hub the page fetches from: huggingface.co, or the tests' stand-in (window.__attnkitHubUrl). */
function hubUrl(): string | undefined {
  return (globalThis as { __attnkitHubUrl?: string }).__attnkitHubUrl;
}

function receive(msg: FromWorker): void {
  switch (msg.type) {
    case "info":
      if (run.pending?.id !== msg.id) return;
      run.pending.info = msg.info;
      break;
    case "progress":
      if (run.loading?.id !== msg.id) return;
      run.loading.loadedBytes = msg.loadedBytes;
      run.loading.totalBytes = msg.totalBytes;
      // Only the panel's progress bar changes: at most once a frame.
      if (!panelPending) {
        panelPending = true;
        requestAnimationFrame(() => {
          panelPending = false;
          redrawPanel();
        });
      }
      return;
    case "ready":
      if (run.loading?.id !== msg.id) return;
      run.loading = null;
      run.model = msg.model;
      run.sentence = null;
      run.refused = "";
      run.gen = { id: 0, prompt: "", steps: [], check: null, running: false };
      requestSentence();
      break;
    case "refused":
      if (run.pending?.id === msg.id) run.pending = null;
      else if (run.loading?.id === msg.id) run.loading = null;
      else return;
      run.refused = msg.message;
      break;
    case "sentence":
      if (msg.id !== sentenceId) return;
      run.sentence = msg.view;
      break;
    case "gen-step":
      if (msg.step.id !== run.gen.id) return;
      run.gen.steps.push(msg.step);
      break;
    case "gen-done":
      if (msg.check.id !== run.gen.id) return;
      run.gen.check = msg.check;
      run.gen.running = false;
      break;
    case "layer":
      onLayer?.(msg.layer);
      return;
    case "onnx":
      onOnnx?.(msg.bytes);
      return;
    case "error":
      run.error = msg.message;
      run.gen.running = false;
      break;
  }
  redraw();
}

const worker = workerLink<ToWorker, FromWorker>(
  () => new Worker(new URL("./worker.ts", import.meta.url), { type: "module" }),
  receive,
  (why) => {
    run.error = `the GPT-2 worker failed: ${why}`;
    redraw();
  },
);

/** `draw` redraws the view; `panel` the panel alone (the download's progress). */
export function bindRun(draw: () => void, panel: () => void): void {
  redraw = draw;
  redrawPanel = panel;
}

/** Reads what `source` holds (its size and memory) for the learner to confirm. */
export function pick(source: Source): void {
  // A new thread count loads with the first model (a model in use stays in its worker).
  if (worker.stale() && !run.model && !run.loading) worker.restart();
  run.refused = "";
  run.pending = { id: ++requests, source, info: null };
  worker.send({ type: "info", id: run.pending.id, source, hubUrl: hubUrl() });
}

/** The learner confirmed: the download (or the read) of the pending source. */
export function confirm(): void {
  const p = run.pending;
  if (!p?.info) return;
  run.pending = null;
  // The worker stops a generation under way: the module loads nothing else meanwhile.
  run.gen.running = false;
  run.loading = { id: p.id, from: p.info.from, loadedBytes: 0, totalBytes: p.info.totalBytes };
  worker.send({ type: "open", id: p.id, source: p.source, hubUrl: hubUrl() });
}

/** Drops the pending source, or cancels the download under way. */
export function cancel(): void {
  if (run.loading) worker.send({ type: "cancel", id: run.loading.id });
  run.pending = null;
}

export function setSentence(text: string): void {
  sentenceText = text;
  requestSentence();
}

function requestSentence(): void {
  if (!run.model || !sentenceText) return;
  sentenceId = ++requests;
  worker.send({ type: "sentence", id: sentenceId, text: sentenceText });
}

/** Generates `options.length` tokens, `delayMs` apart (0: as fast as they come). */
export function generate(options: GenOptions, delayMs: number): void {
  run.gen = { id: ++requests, prompt: options.prompt, steps: [], check: null, running: true };
  worker.send({ type: "generate", id: run.gen.id, options, delayMs });
}

export function stopGenerate(): void {
  run.gen.running = false;
  worker.send({ type: "stop-generate" });
}

export function requestLayer(layer: number, then: (l: LayerNumbers) => void): void {
  onLayer = then;
  worker.send({ type: "layer", layer, text: sentenceText });
}

/** The model in use as an ONNX file (docs/onnx.md). */
export function requestOnnx(then: (bytes: Uint8Array) => void): void {
  onOnnx = then;
  worker.send({ type: "onnx" });
}
