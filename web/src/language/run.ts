// The Language view's side of its worker: what the worker reported (the text, each step's
// loss, the validation losses, the sample, the sentence's maps, the characters generated)
// and the commands it is sent. Redraws are batched to at most one per REDRAW_MS.
import type {
  FromWorker,
  GenCheck,
  GenOptions,
  GenStep,
  LangConfig,
  LangLayer,
  SentenceView,
  TextInfo,
  ToWorker,
} from "./protocol";
import { engineText, noteEngine } from "../threads";
import { workerLink } from "../worker-link";

export interface LangRun {
  config: LangConfig;
  text: TextInfo | null;
  /** The text being checked and read by the worker ("" when none). */
  textPending: string;
  /** Why the last text offered was refused (shown at the field). */
  textError: string;
  ready: { parameterCount: number } | null;
  target: string;
  /** The threads the worker's module runs (0 until it is ready). */
  threads: number;
  curve: { step: number[]; loss: number[] };
  validation: { step: number[]; loss: number[] };
  tokensPerSecond: number;
  sample: { step: number; prompt: string; text: string } | null;
  sentence: SentenceView | null;
  snapshots: number[];
  /** Snapshot on screen, or -1 for the live model. */
  scrub: number;
  training: boolean;
  step: number;
  /**
   * The generation: `instant` (reduced motion) shows its characters only when they are all
   * in, at once; otherwise each is drawn as it comes.
   */
  gen: {
    id: number;
    prompt: string;
    steps: GenStep[];
    check: GenCheck | null;
    running: boolean;
    instant: boolean;
  };
  /** Wall-clock ms of training (Train pressed to paused), and when validation first reached 2.0 nats/char. */
  trainingMs: number;
  reached2Ms: number | null;
  /** The step a loaded weights file brought (null: the run started untrained), and its name. */
  loadedAt: number | null;
  loadedName: string | null;
  /** Why the last weights file offered was refused (shown at the load button). */
  weightsError: string;
  error: string;
}

export const run: LangRun = {
  config: null as unknown as LangConfig,
  text: null,
  textPending: "",
  textError: "",
  ready: null,
  target: "",
  threads: 0,
  curve: { step: [], loss: [] },
  validation: { step: [], loss: [] },
  tokensPerSecond: 0,
  sample: null,
  sentence: null,
  snapshots: [],
  scrub: -1,
  training: false,
  step: 0,
  gen: { id: 0, prompt: "", steps: [], check: null, running: false, instant: false },
  trainingMs: 0,
  reached2Ms: null,
  loadedAt: null,
  loadedName: null,
  weightsError: "",
  error: "",
};

const REDRAW_MS = 250;

let redraw: (full: boolean) => void = () => {};
let onReady: () => void = () => {};
let onRefused: (name: string, message: string) => void = () => {};
let onLayer: ((l: LangLayer) => void) | null = null;
let onWeights: ((bytes: Uint8Array, step: number) => void) | null = null;
let timer: number | undefined;
let fullPending = false;
let trainStart = 0;

function schedule(full: boolean): void {
  fullPending ||= full;
  if (timer !== undefined) return;
  timer = window.setTimeout(
    () =>
      requestAnimationFrame(() => {
        timer = undefined;
        const f = fullPending;
        fullPending = false;
        redraw(f);
      }),
    run.training ? REDRAW_MS : 0,
  );
}

/** Whether a redraw is scheduled: the state is ahead of the screen until it runs. */
export const redrawPending = () => timer !== undefined;

let requests = 0;
/** The latest "text" and "reset"/"load" requests: older answers are dropped. */
let textId = 0;
let runId = 0;
/** The weights file being read, and its name (for its message). */
let loadId = 0;
let loadName = "";
let runBeforeLoad = 0;

function receive(msg: FromWorker): void {
  switch (msg.type) {
    case "text":
      if (msg.id && msg.id !== textId) return;
      run.text = msg.info;
      run.textPending = "";
      run.textError = "";
      if (msg.id) onReady();
      break;
    case "text-error": {
      if (msg.id !== textId) return;
      const name = run.textPending;
      run.textPending = "";
      onRefused(name, msg.message);
      break;
    }
    case "ready":
      if (msg.id !== runId) return;
      run.config = msg.config;
      run.ready = { parameterCount: msg.parameterCount };
      run.target = engineText(msg.engine);
      run.threads = msg.engine.threads;
      noteEngine(msg.engine);
      run.curve = { step: [], loss: [] };
      run.validation = { step: [msg.step], loss: [msg.validationLoss] };
      run.snapshots = [];
      run.scrub = -1;
      run.step = msg.step;
      run.loadedAt = msg.loaded ? msg.step : null;
      run.loadedName = msg.loaded ? loadName : null;
      if (msg.id === loadId) run.weightsError = "";
      run.tokensPerSecond = 0;
      run.error = "";
      run.trainingMs = 0;
      run.reached2Ms = null;
      run.gen = { id: 0, prompt: "", steps: [], check: null, running: false, instant: false };
      requestSentence();
      break;
    case "metrics":
      run.curve.step.push(msg.m.step);
      run.curve.loss.push(msg.m.loss);
      if (msg.m.tokensPerSecond) run.tokensPerSecond = msg.m.tokensPerSecond;
      schedule(false);
      return;
    case "validation":
      run.validation.step.push(msg.step);
      run.validation.loss.push(msg.loss);
      if (run.reached2Ms === null && msg.loss <= 2) run.reached2Ms = elapsed();
      schedule(false);
      return;
    case "sample":
      run.sample = { step: msg.step, prompt: msg.prompt, text: msg.text };
      // While it trains, the sentence's maps follow the weights as the sample does.
      if (run.training && run.scrub === -1) requestSentence();
      schedule(false);
      return;
    case "sentence":
      if (msg.view.snapshot === run.scrub) run.sentence = msg.view;
      break;
    case "gen-step":
      if (msg.step.id !== run.gen.id) return;
      run.gen.steps.push(msg.step);
      // An instant generation is drawn once, when it is done.
      if (run.gen.instant) return;
      break;
    case "gen-done":
      if (msg.check.id !== run.gen.id) return;
      run.gen.check = msg.check;
      run.gen.running = false;
      break;
    case "snapshots":
      run.snapshots = msg.steps;
      schedule(false);
      return;
    case "state": {
      const was = run.training;
      run.training = msg.training;
      run.step = msg.step;
      if (was && !msg.training) run.trainingMs += performance.now() - trainStart;
      // The rate is the current stretch's: none is shown until its first slice.
      if (!was && msg.training) {
        trainStart = performance.now();
        run.tokensPerSecond = 0;
      }
      // A paused model's sentence view follows its weights.
      if (was && !msg.training) requestSentence();
      schedule(was !== msg.training);
      return;
    }
    case "weights":
      onWeights?.(msg.bytes, msg.step);
      return;
    case "layer":
      onLayer?.(msg.layer);
      return;
    case "load-error":
      if (msg.id !== loadId) return;
      runId = runBeforeLoad;
      loadId = 0;
      run.weightsError = `${loadName} was not loaded: ${msg.message.replace(/[^.!?]$/, "$&.")} The model goes on as it was.`;
      break;
    case "error":
      run.error = msg.message;
      run.gen.running = false;
      break;
  }
  schedule(true);
}

/** Training time so far (ms), the current stretch included. */
export function elapsed(): number {
  return run.trainingMs + (run.training ? performance.now() - trainStart : 0);
}

const worker = workerLink<ToWorker, FromWorker>(
  () => new Worker(new URL("./worker.ts", import.meta.url), { type: "module" }),
  (msg) => receive(msg),
  (why) => {
    run.error = `the language worker failed: ${why}`;
    schedule(true);
  },
);
const send = worker.send;

/** Whether the page's thread count waits for the next run (the worker runs another). */
export const threadsPending = () => worker.stale();

/**
 * The learner picked another thread count: an untrained run starts again on it at once (a
 * new worker, given the text again); a trained one keeps its worker until the next reset.
 */
export function threadsChanged(): void {
  if (worker.stale() && !run.training && run.step === 0) {
    if (run.text) reset(run.config);
    else if (lastText) restartWorker();
  }
  schedule(true);
}

/** The text last offered, given again to a new worker. */
let lastText: { text: string; source: TextInfo["source"]; name: string } | null = null;

/**
 * A new worker on the page's thread count, given the text: with its request's id while the
 * text is being read (its answer then starts the run), else as the text in use.
 */
function restartWorker(): void {
  worker.restart();
  if (lastText) send({ type: "text", id: run.textPending ? textId : 0, ...lastText });
}

/**
 * `draw(full)` redraws the view (full: the stage too); `textReady` runs when a new text is
 * in, `textRefused` when the package refused the text named `name`.
 */
export function bindRun(
  draw: (full: boolean) => void,
  textReady: () => void,
  textRefused: (name: string, message: string) => void,
): void {
  redraw = draw;
  onReady = textReady;
  onRefused = textRefused;
}

export function offerText(text: string, source: TextInfo["source"], name: string): void {
  textId = ++requests;
  lastText = { text, source, name };
  run.textPending = name;
  run.textError = "";
  send({ type: "text", id: textId, text, source, name });
}

export function reset(config: LangConfig): void {
  run.weightsError = "";
  run.ready = null;
  run.sentence = null;
  run.sample = null;
  run.training = false;
  run.config = config;
  // A run starts on the page's thread count (threads.ts): a new worker if it changed.
  if (worker.stale()) restartWorker();
  runId = ++requests;
  send({ type: "reset", id: runId, config });
}

/** The sentence the learner typed (the view keeps it). */
let sentenceText = "";
export function setSentence(s: string): void {
  sentenceText = s;
  requestSentence();
}
function requestSentence(): void {
  if (run.ready && sentenceText) send({ type: "sentence", text: sentenceText, index: run.scrub });
}

export function train(): void {
  run.scrub = -1;
  send({ type: "train" });
}
export const pause = () => send({ type: "pause" });
export function step(): void {
  run.scrub = -1;
  send({ type: "step" });
  // The worker answers in order: the maps of the model after the step.
  requestSentence();
}

export function scrubTo(index: number): void {
  run.scrub = index >= run.snapshots.length ? -1 : index;
  requestSentence();
}

/** Generates with `delayMs` between characters; 0 (reduced motion): shown at once when done. */
export function generate(options: GenOptions, delayMs: number): void {
  run.gen = {
    id: ++requests,
    prompt: options.prompt,
    steps: [],
    check: null,
    running: true,
    instant: delayMs === 0,
  };
  send({ type: "generate", id: run.gen.id, options, index: run.scrub, delayMs });
}

export function stopGenerate(): void {
  run.gen.running = false;
  send({ type: "stop-generate" });
}

export function requestWeights(
  then: (bytes: Uint8Array, step: number) => void,
  format: "weights" | "onnx" = "weights",
): void {
  onWeights = then;
  send({ type: "export", format });
}

/** Loads a weights file named `name`; a refused one leaves the run as it was (run.weightsError says why). */
export function loadWeights(bytes: Uint8Array, name: string): void {
  runBeforeLoad = runId;
  runId = loadId = ++requests;
  loadName = name;
  run.weightsError = "";
  send({ type: "load", id: runId, bytes }, [bytes.buffer]);
}

export function requestLayer(layer: number, then: (l: LangLayer) => void): void {
  onLayer = then;
  send({ type: "layer", layer, text: sentenceText, index: run.scrub });
}
