// A trained model's layer in the step-by-step views: the Train view hands over one
// layer's attention input X and its W^Q, W^K, W^V, W^O, and the page shows them in
// "trained" mode (state.weights = "trained"), every number recomputed by the page's
// own attnkit calls (model.ts). The numbers live only in memory: the URL keeps
// w=trained and what is shown, and a page loaded from such a URL falls back to the
// example with a note (page.ts). The fields the numbers fix are pinned (pinTrained)
// whatever sets the state, so no control, key or link can contradict them.
import type { Matrix, Tensor } from "attnkit";
import { DEFAULT_STATE, DISPLAY_FIELDS, type State } from "./state";

export interface TrainedLayer {
  /** "induction", ... */
  task: string;
  /** Training step of the weights. */
  step: number;
  /** The sample sequence (token ids), shown as token labels (Inspection.tokens is an Int32Array). */
  tokens: readonly number[] | Int32Array;
  /** -1 = not scored. */
  targets: readonly number[] | Int32Array;
  /** The tokens' labels (a language model's characters); default: the ids (tokenLabel). */
  labels?: readonly string[];
  /** The text the tokens are (a language model's sentence); default: the ids, spaced. */
  text?: string;
  /** 0-based layer whose attention is shown. */
  layer: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  dK: number;
  dModel: number;
  /** Scores scaled by 1/sqrt(dK). */
  scaled: boolean;
  /** [T, dModel]: the layer's attention input (Inspection.layers[layer].input). */
  X: Matrix;
  /** [dModel, h*dK], [dModel, g*dK], [dModel, g*dK], [h*dK, dModel]. */
  W_Q: Matrix;
  W_K: Matrix;
  W_V: Matrix;
  W_O: Matrix;
  /** [h, T, T]: the model's own attention weights of that layer, for a cross-check. */
  weights: Tensor;
}

/** A TrainedLayer as the page keeps it: token ids and targets as plain arrays. */
export type ShownLayer = Omit<TrainedLayer, "tokens" | "targets"> & {
  tokens: number[];
  targets: number[];
};

/** The label of token id `id`: its number; the separator 0 shows as "|". */
export function tokenLabel(id: number): string {
  return id === 0 ? "|" : String(id);
}

let current: ShownLayer | null = null;
/** Bumped by every openTrained: part of the model's cache key (the state alone cannot tell two runs apart). */
let generation = 0;
/** The state before trained mode, restored by "Back to the example". */
let before: State | null = null;
let getState: (() => State) | null = null;
let applyState: ((s: State) => void) | null = null;

/** Called once by main: how to read the page's state and how to replace it and redraw. */
export function bindTrained(get: () => State, apply: (s: State) => void): void {
  getState = get;
  applyState = apply;
  document.getElementById("trained-back")!.addEventListener("click", leaveTrained);
  document
    .querySelector("#trained-note button")!
    .addEventListener("click", () => (document.getElementById("trained-note")!.hidden = true));
}

function check(ok: boolean, what: string, expected: string, given: string): void {
  if (!ok) throw new Error(`openTrained: ${what}: expected ${expected}, given ${given}`);
}

function checkMatrix(m: Matrix, name: string, rows: number, cols: number): void {
  const given = m ? `[${m.rows}, ${m.cols}] with ${m.data?.length} numbers` : String(m);
  check(
    !!m && m.rows === rows && m.cols === cols && m.data?.length === rows * cols,
    name,
    `[${rows}, ${cols}]`,
    given,
  );
}

/** Throws an Error naming the field, the expected and the given shape when `t` is inconsistent. */
function validate(t: ShownLayer): void {
  const T = t.tokens?.length ?? 0;
  const { dModel: d, numHeads: h, numKvHeads: g, dK } = t;
  check(T > 0, "tokens", "at least one token", String(T));
  for (const [k, v] of Object.entries({ dModel: d, numHeads: h, numKvHeads: g, dK }))
    check(Number.isInteger(v) && v > 0, k, "a positive integer", String(v));
  check(h % g === 0, "numKvHeads", `a divisor of numHeads = ${h}`, String(g));
  checkMatrix(t.X, "X", T, d);
  checkMatrix(t.W_Q, "W_Q", d, h * dK);
  checkMatrix(t.W_K, "W_K", d, g * dK);
  checkMatrix(t.W_V, "W_V", d, g * dK);
  checkMatrix(t.W_O, "W_O", h * dK, d);
  const n = t.weights?.data?.length;
  check(n === h * T * T, "weights", `[${h}, ${T}, ${T}] (${h * T * T} numbers)`, `${n} numbers`);
}

/** The state of trained mode on top of `s`: the last scored query, head 0, step 1 of the steps. */
function enterState(s: State, t: ShownLayer): State {
  const scored = t.targets.map((v, i) => (v >= 0 ? i : -1)).filter((i) => i >= 0);
  return pinTrained({
    ...s,
    weights: "trained",
    view: "steps",
    step: 1,
    head: 0,
    hidden: "",
    decodeStep: 0,
    // The last scored position: for induction, a token of the repeat.
    query: scored.length ? scored[scored.length - 1] : t.tokens.length - 1,
  });
}

/** Switches the page to the steps view on these numbers. */
export function openTrained(layer: TrainedLayer): void {
  // Token ids may come as an Int32Array (Inspection.tokens), whose map() would give numbers, not labels.
  const t: ShownLayer = {
    ...layer,
    tokens: Array.from(layer.tokens),
    targets: Array.from(layer.targets),
  };
  validate(t);
  if (!getState || !applyState) throw new Error("openTrained: the page has not loaded yet");
  const s = getState();
  if (s.weights !== "trained") before = { ...s, edits: { ...s.edits } };
  current = t;
  generation++;
  applyState(enterState(s, t));
}

/** True while the page shows a trained layer. */
export function hasTrained(): boolean {
  return current !== null && getState?.().weights === "trained";
}

/** The layer shown when the state is in trained mode (null otherwise). */
export function trainedOf(s: Pick<State, "weights">): ShownLayer | null {
  return s.weights === "trained" ? current : null;
}

/** Distinguishes the layers opened one after another (for the model's cache keys). */
export function trainedKey(s: Pick<State, "weights">): string {
  return s.weights === "trained" ? `trained#${generation}` : "";
}

/** `s` with the fields the trained numbers fix set to them (s itself when not in trained mode). */
export function pinTrained(s: State): State {
  const t = trainedOf(s);
  if (!t) return s;
  return {
    ...s,
    preset: "trained",
    text: t.text ?? t.tokens.map(tokenLabel).join(" "),
    batch: false,
    pe: false,
    dModel: t.dModel,
    dK: t.dK,
    dV: t.dK,
    heads: t.numHeads,
    kvHeads: t.numKvHeads,
    mask: "causal",
    custom: "",
    scaling: t.scaled,
    temperature: 1,
    softcap: 0,
    edits: {},
  };
}

/** "Back to the example": the state before trained mode, at the same view and step. */
export function leaveTrained(): void {
  if (!getState || !applyState) return;
  const s = getState();
  const back = before && before.weights !== "trained" ? before : null;
  current = null;
  before = null;
  const { view, step, speed, satScale, satSource } = s;
  applyState({ ...(back ?? fallbackState(s)), view, step, speed, satScale, satSource });
}

/** The example a trained-mode state falls back to (a reload, a shared link): the default page, keeping what was shown. */
export function fallbackState(s: State): State {
  const kept: Partial<State> = {};
  for (const k of KEPT_ON_FALLBACK) (kept as Record<string, unknown>)[k] = s[k];
  return { ...DEFAULT_STATE, edits: {}, ...kept };
}

/** A one-line description: "Trained on induction, step 250, layer 2 of 2". */
export function trainedTitle(t: ShownLayer): string {
  if (t.task === "gpt2") return `The GPT-2 view's model, layer ${t.layer + 1} of ${t.numLayers}`;
  return `Trained on ${t.task}, step ${t.step}, layer ${t.layer + 1} of ${t.numLayers}`;
}

/** The view that trained the layer, as the page names it. */
export function trainedBy(t: Pick<ShownLayer, "task">): string {
  return t.task === "language" ? "Language view" : t.task === "gpt2" ? "GPT-2 view" : "Train view";
}

/** What the banner says of the tokens and the fixed settings. */
function bannerMore(t: ShownLayer): string {
  const tokens =
    t.task === "language"
      ? "Tokens are the sentence's characters (␣ a space)"
      : t.task === "gpt2"
        ? "Tokens are the sentence's text pieces (␣ a space); with biases, X ends in a column of ones and each W in a row holding its bias"
        : "Tokens are the task's token ids (the separator 0 shows as “|”)";
  return `${tokens}; X is what the layer's attention reads. The inputs, weights, mask and scale are the trained model's (${trainedBy(t)}), so their settings are fixed.`;
}

/**
 * The banner above the scene: what is shown and the way back. It belongs to the steps
 * views: the Train and Language views, which trained the layer, show their own run.
 */
export function syncTrainedBanner(s: State): void {
  const banner = document.getElementById("trained-banner");
  if (!banner) return;
  const t = ["train", "language", "gpt2"].includes(s.view) ? null : trainedOf(s);
  if (banner.hidden !== !t) banner.hidden = !t;
  if (!t) return;
  const more = banner.querySelector<HTMLElement>(".trained-more")!;
  const moreText = bannerMore(t);
  if (more.textContent !== moreText) more.textContent = moreText;
  const text = `${trainedTitle(t)} · ${t.numHeads} head${t.numHeads > 1 ? "s" : ""}, d_model = ${t.dModel}, d_k = ${t.dK}, ${t.scaled ? "scores scaled by 1/√d_k" : "scores not scaled"}, causal.`;
  const title = banner.querySelector<HTMLElement>("[data-testid=trained-title]")!;
  if (title.textContent !== text) title.textContent = text;
}

/** Shows why a page loaded from a trained-mode URL shows the example instead. */
export function showTrainedFallback(): void {
  const note = document.getElementById("trained-note")!;
  note.querySelector("span")!.textContent =
    "This link showed a trained model, whose numbers live only in the browser tab that trained it (a link cannot hold them): the page shows the example instead. Train a model in the Train view and open it in the steps view to see one.";
  note.hidden = false;
}

/** The display fields a fallback keeps (what was shown, not the numbers). */
export const KEPT_ON_FALLBACK: readonly (keyof State)[] = DISPLAY_FIELDS.filter(
  (k) => k !== "preset" && k !== "query" && k !== "head" && k !== "hidden" && k !== "decodeStep",
);
