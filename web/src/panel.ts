// What the Train and Language views' panels share: their settings fields (each with the note
// that says which value was used and why), the run's buttons, the snapshot slider, the
// buttons that open a layer in the steps view, and the keys of a view that trains.
import { $ } from "./dom";
import { count } from "./format";

/** A number field: its key in the settings, its <input>'s id (its note "<id>-note"), its URL parameter. */
export interface NumberField<K extends string = string> {
  key: K;
  id: string;
  param: string;
  name: string;
  lo: number;
  hi: number;
  /** Whole numbers only (default true). */
  whole?: boolean;
}

/**
 * The value a number field's text gives and, when it is not the text's own value, why:
 * text that is not a number keeps `kept` (the value in use); a number out of range (or
 * not whole where it must be) becomes the nearest value in range.
 */
export function fieldValue(
  f: Pick<NumberField, "name" | "lo" | "hi" | "whole">,
  raw: string,
  kept: number,
): [number, string] {
  const whole = f.whole ?? true;
  const t = raw.trim();
  const v = Number(t);
  const range = `${f.name} is a ${whole ? "whole " : ""}number from ${f.lo} to ${f.hi}`;
  if (t === "" || !Number.isFinite(v))
    return [
      kept,
      `${t === "" ? "Empty or not a number" : `“${t}” is not a number`}: ${range}. Kept ${kept}.`,
    ];
  const r = whole ? Math.round(v) : v;
  const used = Math.min(f.hi, Math.max(f.lo, r));
  return [used, used === v ? "" : `${t} → ${used}: ${range}.`];
}

/** One field of a settings row; `name` is its label's text. */
export type SettingItem =
  | { kind: "number"; id: string; name: string; step?: string }
  | { kind: "select"; id: string; name: string }
  | { kind: "check"; id: string; name: string; title?: string };

const note = (id: string) =>
  `<small class="adj" id="${id}-note" data-testid="${id}-note" aria-live="polite"></small>`;
const ids = (id: string) => `id="${id}" data-testid="${id}" aria-describedby="${id}-note"`;

/** A settings row's fields: a number or a list in its label with its note under it; a checkbox with its note beside. */
export function settingsHtml(items: readonly SettingItem[]): string {
  return items
    .map((f) =>
      f.kind === "number"
        ? `<label>${f.name}<input type="number" ${ids(f.id)}${f.step ? ` step="${f.step}"` : ""} />${note(f.id)}</label>`
        : f.kind === "select"
          ? `<label>${f.name}<select ${ids(f.id)}></select>${note(f.id)}</label>`
          : `<label class="check"${f.title ? ` title="${f.title}"` : ""}><input type="checkbox" ${ids(f.id)} /> ${f.name}</label>${note(f.id)}`,
    )
    .join("");
}

/** Sets each number field's range on its <input>. */
export function setRanges(fields: readonly NumberField[]): void {
  for (const f of fields) {
    const el = $<HTMLInputElement>(f.id);
    el.min = String(f.lo);
    el.max = String(f.hi);
  }
}

/** The "Download ONNX" button `<prefix>-onnx`: the model as an ONNX file (docs/onnx.md). */
export function onnxButtonHtml(prefix: string): string {
  return `<button type="button" id="${prefix}-onnx" data-testid="${prefix}-onnx" title="Download ONNX: the model as an ONNX file, for onnxruntime (Python, Node, web) or Netron (.onnx)">⤓ ONNX</button>`;
}

/** The run's buttons of the panel whose ids start with `prefix` ("train", "lang"). */
export function runButtonsHtml(
  prefix: string,
  weights: { downloadTitle: string; loadTitle: string; loadId: string },
): string {
  const b = (name: string, text: string) =>
    `<button type="button" id="${prefix}-${name}" data-testid="${prefix}-${name}">${text}</button>`;
  return `${b("go", "▶ Train")} ${b("pause", "❚❚ Pause")} ${b("step", "Step")} ${b("reset", "↺ Reset")}
    <button type="button" id="${prefix}-download" data-testid="${prefix}-download" title="${weights.downloadTitle}">⤓ weights</button>
    ${onnxButtonHtml(prefix)}
    <label class="file-button" title="${weights.loadTitle}">⤒ load weights <input type="file" id="${weights.loadId}" data-testid="${weights.loadId}" accept=".atkmodel" /></label>`;
}

/**
 * The box that asks before a change discards a run's training (`<prefix>-confirm`, shown by
 * showConfirm): what the change discards, "Start the new run" (`<prefix>-confirm-yes`) and
 * "Keep the current run" (`<prefix>-confirm-no`).
 */
export function confirmHtml(prefix: string): string {
  return `<p id="${prefix}-confirm" class="url-note" data-testid="${prefix}-confirm" role="alert" hidden>
    <span></span>
    <button type="button" id="${prefix}-confirm-yes" data-testid="${prefix}-confirm-yes">Start the new run</button>
    <button type="button" id="${prefix}-confirm-no" data-testid="${prefix}-confirm-no">Keep the current run</button>
  </p>`;
}

/**
 * Shows the box: `change` (e.g. "Changing the batch 12 → 16") starts a new run, which
 * discards the `steps` trained so far (or, with none, the weights loaded from `loaded`);
 * null hides it.
 */
export function showConfirm(
  prefix: string,
  ask: { change: string; steps: number; loaded: string | null; paused: boolean } | null,
): void {
  const box = $(`${prefix}-confirm`);
  if (!ask) {
    box.hidden = true;
    return;
  }
  const n = ask.steps;
  const lost = n
    ? `the ${count(n)} step${n > 1 ? "s" : ""} trained so far and ${n > 1 ? "their" : "its"} curves`
    : `the weights loaded from ${ask.loaded ?? "the file"}`;
  const text = `${ask.change} starts a new run: ${lost} will be discarded (⤓ weights saves them first).${ask.paused ? " Training is paused." : ""}`;
  const span = box.querySelector("span")!;
  if (span.textContent !== text) span.textContent = text;
  box.hidden = false;
}

/** The snapshot slider (`<prefix>-scrub`) and what it shows (`<prefix>-scrub-out`). */
export function scrubHtml(prefix: string): string {
  return `<label class="train-scrub">snapshot <input type="range" id="${prefix}-scrub" data-testid="${prefix}-scrub" aria-label="snapshot of the weights" min="0" max="0" step="1" /> <output id="${prefix}-scrub-out" data-testid="${prefix}-scrub-out"></output></label>`;
}

/** The options of select `id`: each a value and the label shown. */
export function setOptions(
  id: string,
  options: readonly (readonly [string | number, string])[],
): void {
  $<HTMLSelectElement>(id).innerHTML = options
    .map(([v, label]) => `<option value="${v}">${label}</option>`)
    .join("");
}

/** The file chosen in `input`, which is emptied so that choosing the same file again is a change. */
export function takeFile(input: HTMLInputElement): File | undefined {
  const f = input.files?.[0];
  input.value = "";
  return f;
}

export function setDisabled(id: string, d: boolean): void {
  const b = $<HTMLButtonElement>(id);
  if (b.disabled !== d) b.disabled = d;
}

export function setText(id: string, text: string): void {
  const el = $(id);
  if (el.textContent !== text) el.textContent = text;
}

/** What a panel's run shows: its snapshots' steps, the one on screen (-1: live), its step. */
export interface RunView {
  snapshots: number[];
  scrub: number;
  step: number;
  training: boolean;
}

/**
 * Train, Pause and Step as the run says; a button disabled under the focus (Enter on Train
 * or Pause) hands it to the other one.
 */
export function syncRunButtons(prefix: string, r: RunView, canTrain: boolean): void {
  const focused = document.activeElement;
  setDisabled(`${prefix}-go`, !canTrain || r.training);
  setDisabled(`${prefix}-pause`, !r.training);
  setDisabled(`${prefix}-step`, !canTrain || r.training);
  if (
    focused instanceof HTMLButtonElement &&
    focused.disabled &&
    [`${prefix}-go`, `${prefix}-pause`, `${prefix}-step`].includes(focused.id)
  )
    $(r.training ? `${prefix}-pause` : `${prefix}-go`).focus();
}

/** The snapshot slider: one position per snapshot and the last for the live model. */
export function syncScrub(prefix: string, r: RunView): void {
  const scrub = $<HTMLInputElement>(`${prefix}-scrub`);
  const n = r.snapshots.length;
  if (scrub.max !== String(n)) scrub.max = String(n);
  const pos = r.scrub < 0 ? n : r.scrub;
  if (scrub.value !== String(pos)) scrub.value = String(pos);
  scrub.disabled = r.training || n === 0;
  const at = r.scrub < 0 ? `now (step ${r.step})` : `snapshot at step ${r.snapshots[r.scrub]}`;
  setText(`${prefix}-scrub-out`, at);
  scrub.setAttribute("aria-valuetext", at);
}

/** The position the arrow keys move the snapshot slider to (`delta` -1 or 1), or null. */
export function scrubStep(r: RunView, delta: number): number | null {
  const n = r.snapshots.length;
  if (r.training || n === 0) return null;
  const pos = r.scrub < 0 ? n : r.scrub;
  return Math.min(n, Math.max(0, pos + delta));
}

/** One button per layer in `<prefix>-open` that opens it in the steps view. */
export function syncOpenButtons(prefix: string, layers: number, enabled: boolean): void {
  const open = $(`${prefix}-open`);
  if (open.children.length !== layers)
    open.innerHTML = Array.from(
      { length: layers },
      (_, l) =>
        `<button type="button" data-layer="${l}" data-testid="${prefix}-open-${l}" aria-label="open layer ${l + 1} in the steps view">layer ${l + 1} in steps view</button>`,
    ).join(" ");
  for (const b of open.querySelectorAll("button")) b.disabled = !enabled;
}

/** Saves `bytes` as a file named `name`. */
export function downloadBytes(bytes: Uint8Array, name: string): void {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([bytes as BlobPart], { type: "application/octet-stream" }));
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

/**
 * The keys of a view that trains (`prefix` its panel's, `view` its name): ← → move through
 * the snapshots, Space trains or pauses. The digits, which jump to a step elsewhere, stay
 * in the view and say how to reach a step: a key that left the view would drop the run's
 * charts from sight without a word. Returns whether the key was the view's.
 */
export function runKey(
  key: string,
  prefix: string,
  view: string,
  scrubBy: (delta: number) => void,
): boolean {
  const keyNote = $(`${prefix}-key-note`);
  if (/^[1-8]$/.test(key)) {
    keyNote.textContent = `${key} jumps to step ${key} outside the ${view} view: press s for the steps, then ${key}.`;
    return true;
  }
  keyNote.textContent = "";
  if (key === "ArrowLeft" || key === "ArrowRight") {
    scrubBy(key === "ArrowLeft" ? -1 : 1);
    return true;
  }
  if (key === " ") {
    const go = $<HTMLButtonElement>(`${prefix}-go`);
    (go.disabled ? $<HTMLButtonElement>(`${prefix}-pause`) : go).click();
    return true;
  }
  return false;
}
