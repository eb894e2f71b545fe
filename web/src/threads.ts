// How many threads the views' workers (Train, Language, GPT-2) load attnkit with: one choice
// for the page. Threads need SharedArrayBuffer, which a browser gives only to a cross-origin
// isolated page (served with COOP/COEP, or isolated by the service worker coi.js); elsewhere
// one thread, and the page says why. A worker loads its module once, with the count of its
// start: a view applies a new count when its next run starts.
import { escapeHtml } from "./format";

/** The first message a view's worker gets: the threads to load attnkit with. */
export interface WorkerStart {
  type: "start";
  threads: number;
}

/**
 * The default's cap (bench/results/history.md, "the training step over threads"): the
 * training step splits its products, row kernels and attention over the pool, and a second
 * thread shortens the default Language preset's step; more than 2 threads are not yet
 * measured on a machine that has them, and each costs a worker's memory and start-up.
 */
export const DEFAULT_THREADS_CAP = 2;

/** Where the README says how to serve the page with threads. */
export const DEPLOY_NOTE_URL = "https://www.npmjs.com/package/attnkit#deploying-the-page";

const isolated = globalThis.crossOriginIsolated === true;
const hardware = Math.max(1, globalThis.navigator?.hardwareConcurrency || 1);

export const threadChoice = {
  /** Whether the page may use threads (cross-origin isolated). */
  isolated,
  /** The most the learner may pick: the cores the browser reports, 1 without isolation. */
  max: isolated ? hardware : 1,
  /** The threads the next worker starts with. */
  count: isolated ? Math.min(hardware, DEFAULT_THREADS_CAP) : 1,
};

const listeners: (() => void)[] = [];

/** `fn` runs after the learner picks another count. */
export function onThreadsChange(fn: () => void): void {
  listeners.push(fn);
}

export function setThreadCount(n: number): void {
  const c = Math.max(1, Math.min(threadChoice.max, Math.round(n) || 1));
  if (c === threadChoice.count) return;
  threadChoice.count = c;
  for (const fn of listeners) fn();
}

/** What runs a view's model: its Highway target, SIMD128 or not, its threads. */
export interface Engine {
  target: string;
  simd: boolean;
  threads: number;
  /** Why the threads asked for did not load, one thread instead (empty: they did). */
  fallback: string;
}

// Why a view's worker got one thread where more were asked: the browser's, so the same
// for every view; shown beside each threads control.
let fallbackWhy = "";

/** Notes what a view's worker runs on (its fallback's reason, if any). */
export function noteEngine(e: Engine): void {
  if (e.fallback) fallbackWhy = e.fallback;
}

/** "WASM, SIMD128, 2 threads". */
export const engineText = (e: Engine) =>
  `${e.target}${e.simd ? ", SIMD128" : ""}, ${threadsText(e.threads)}`;

/** "2 threads", "1 thread". */
export const threadsText = (n: number) => `${n} thread${n === 1 ? "" : "s"}`;

/** Why the page has one thread, and how to get more (empty where it may have more). */
export function oneThreadWhy(): string {
  if (isolated) return "";
  return `One thread: this page is not cross-origin isolated, so the browser gives it no shared memory; serve it with the headers COOP and COEP (as <code>npm start</code> does) for more, see <a href="${DEPLOY_NOTE_URL}" target="_blank" rel="noopener">deploying the page</a>.`;
}

/** The control (`<prefix>-threads`) and its note (`<prefix>-threads-note`). */
export function threadsControlHtml(prefix: string): string {
  const id = `${prefix}-threads`;
  const options = Array.from({ length: threadChoice.max }, (_, i) => i + 1)
    .map((n) => `<option value="${n}">${n}</option>`)
    .join("");
  return `<span class="threads-control"><label for="${id}">threads</label>
    <select id="${id}" data-testid="${id}"${threadChoice.max === 1 ? " disabled" : ""}>${options}</select>
    <span class="note" id="${id}-note" data-testid="${id}-note"></span></span>`;
}

/**
 * The control's value and note: `running` is the count the view's worker runs (0: none
 * yet), `pending` whether the new count waits for the view's next run.
 */
export function syncThreadsControl(prefix: string, running: number, pending: boolean): void {
  const select = document.getElementById(`${prefix}-threads`) as HTMLSelectElement | null;
  const note = document.getElementById(`${prefix}-threads-note`);
  if (!select || !note) return;
  if (select.value !== String(threadChoice.count)) select.value = String(threadChoice.count);
  const html = !isolated
    ? oneThreadWhy()
    : pending
      ? `${escapeHtml(threadsText(running))} until the next run (Reset starts one on ${threadsText(threadChoice.count)}).`
      : running && running !== threadChoice.count
        ? `${threadsText(threadChoice.count)} asked, ${threadsText(running)} loaded${fallbackWhy ? `: ${escapeHtml(fallbackWhy)}` : ""}.`
        : "";
  if (note.innerHTML !== html) note.innerHTML = html;
}

/** Binds the control of `prefix` to the page's choice. */
export function bindThreadsControl(prefix: string): void {
  const select = document.getElementById(`${prefix}-threads`) as HTMLSelectElement | null;
  select?.addEventListener("change", () => setThreadCount(Number(select.value)));
}
