// The page's state: what is shown (mirrored in the URL), the model computed from it,
// and the playback and timing that the test hooks read.
import type { Attnkit } from "attnkit";
import { presetState, settleLink } from "./controls";
import type { Model } from "./model";
import { DISPLAY_FIELDS, fromQuery, omitFields, toQuery, unknownParams, type State } from "./state";
import { LANGUAGE_PARAMS } from "./language/settings";
import { TRAIN_PARAMS } from "./train/settings";
import { GPT2_PARAMS } from "./gpt2/settings";
import { fallbackState, pinTrained, trainedKey } from "./trained";

export interface Timing {
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

/** The entry animation of the last render (durationMs 0: none, e.g. with reduced motion). */
export interface Animation {
  step: number;
  view: string;
  startedAt: number;
  durationMs: number;
}

export interface Page {
  /** The attnkit module (loaded by main before the first render). */
  attn: Attnkit;
  state: State;
  model: Model | null;
  /** inputsKey of the state the model was computed for. */
  modelKey: string;
  playing: boolean;
  animation: Animation;
  /** The last state drawn without an error: a change that fails is undone back to it. */
  lastGood: State | null;
  /** What the URL held that the page could not use (shown in a note). */
  urlDropped: string[];
  timing: Timing;
  /** The URL asked for a trained layer, whose numbers it cannot hold: the example is shown (with a note). */
  trainedFallback: boolean;
}

const urlDropped: string[] = [];
const fromUrl = fromQuery(location.search.slice(1), urlDropped);
unknownParams(
  location.search.slice(1),
  [...TRAIN_PARAMS, ...LANGUAGE_PARAMS, ...GPT2_PARAMS],
  urlDropped,
);
const trainedFallback = fromUrl.weights === "trained";
let initial = trainedFallback ? fallbackState(fromUrl) : fromUrl;
if (!location.search || trainedFallback)
  Object.assign(initial, presetState(initial.preset, initial));
else initial = settleLink(initial, urlDropped, location.search.slice(1));

// Every write of the state goes through pinTrained: in trained mode the fields the
// trained numbers fix keep their values whatever sets them.
let state = initial;

export const page: Page = {
  attn: null as unknown as Attnkit,
  get state() {
    return state;
  },
  set state(s: State) {
    state = pinTrained(s);
  },
  model: null,
  modelKey: "",
  playing: false,
  animation: { step: 0, view: "steps", startedAt: 0, durationMs: 0 },
  lastGood: null,
  urlDropped,
  trainedFallback,
  timing: {
    loadMs: 0,
    firstRenderMs: 0,
    lastRenderMs: 0,
    lastComputeMs: 0,
    lastRecomputed: false,
    lastLayoutMs: 0,
    renders: 0,
  },
};

/** The state fields that change the numbers, as a key (the rest only change what is shown). */
export function inputsKey(s: State): string {
  return JSON.stringify(omitFields(s, DISPLAY_FIELDS)) + trainedKey(s);
}

// The URL follows the state at once (once the change being made is done: a microtask),
// so that a reload right after a click keeps it; changes that come faster (a dragged slider
// fires many events; browsers throttle frequent history updates) are written together at
// most every 120 ms.
let urlPending = false;
let urlWritten = -Infinity;
export function saveUrl(): void {
  if (urlPending) return;
  urlPending = true;
  const write = () => {
    urlPending = false;
    urlWritten = performance.now();
    history.replaceState(null, "", `?${toQuery(page.state)}`);
  };
  const wait = urlWritten + 120 - performance.now();
  if (wait > 0) window.setTimeout(write, wait);
  else queueMicrotask(write);
}
