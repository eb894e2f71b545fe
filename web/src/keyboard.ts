// The page's keyboard shortcuts (listed in the help dialog of index.html).
import { $ } from "./dom";
import { closeEditor } from "./editor";
import { page } from "./page";
import { goto, togglePlay } from "./playback";
import { render, set } from "./render";
import type { ViewId } from "./state";
import { scrubLanguageBy } from "./language/view";
import { gpt2Key } from "./gpt2/entry";
import { runKey } from "./panel";
import { scrubBy } from "./train/view";

const VIEW_KEYS: Record<string, ViewId> = {
  s: "steps",
  h: "headview",
  g: "grid",
  x: "saturation",
  d: "decoding",
  t: "train",
  l: "language",
  m: "gpt2",
};

const PAGE_KEYS = ["Home", "End", "PageUp", "PageDown"];

/**
 * Whether the focused element uses `key` itself: a text field or a list takes every
 * key, a slider its arrows, a checkbox or button Space (and Enter). Any other key is
 * a shortcut, so a toggled checkbox or a clicked button does not hold the keyboard.
 */
function ownKey(t: Element, key: string): boolean {
  if (t.closest("dialog, [contenteditable='true']")) return true;
  if (t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement) return true;
  const press = key === " " || key === "Enter";
  if (t instanceof HTMLInputElement) {
    if (t.type === "checkbox") return key === " ";
    if (t.type === "radio") return key === " " || key.startsWith("Arrow");
    if (t.type === "range") return key.startsWith("Arrow") || PAGE_KEYS.includes(key);
    if (["button", "submit", "reset", "file"].includes(t.type)) return press;
    return true;
  }
  return press && !!t.closest("button, a[href], summary");
}

export function bindKeys(): void {
  document.addEventListener("keydown", (e) => {
    const t = e.target as Element;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape") {
      // Esc closes the cell editor and leaves a field or button (a dialog closes
      // itself), so the shortcuts work again.
      if (t.closest("dialog")) return;
      closeEditor();
      if (t instanceof HTMLElement && t.matches("input, select, textarea, button")) t.blur();
      return;
    }
    if (ownKey(t, e.key)) return;
    const state = page.state;
    const T = page.model?.cfg.T ?? 1;
    const H = page.model?.cfg.heads ?? 1;
    let handled = true;
    if (state.view === "train" && runKey(e.key, "train", "Train", scrubBy)) {
      // the Train view's own key
    } else if (state.view === "language" && runKey(e.key, "lang", "Language", scrubLanguageBy)) {
      // the Language view's own key
    } else if (state.view === "gpt2" && gpt2Key(e.key)) {
      // the GPT-2 view's own key
    } else if (e.key === "ArrowRight") goto(state.step + 1);
    else if (e.key === "ArrowLeft") goto(state.step - 1);
    else if (e.key === " ") togglePlay();
    else if (/^[1-8]$/.test(e.key)) goto(Number(e.key));
    else if (e.key === "ArrowDown") set({ query: (state.query + 1) % T }, { animate: false });
    else if (e.key === "ArrowUp") set({ query: (state.query - 1 + T) % T }, { animate: false });
    else if (e.key === "]") set({ head: (state.head + 1) % H });
    else if (e.key === "[") set({ head: (state.head - 1 + H) % H });
    else if (e.key === "r") render(true);
    else if (e.key === "c") set({ mask: state.mask === "causal" ? "none" : "causal" });
    else if (e.key === "?") $<HTMLDialogElement>("help").showModal();
    else if (VIEW_KEYS[e.key]) set({ view: VIEW_KEYS[e.key] }, { animate: true });
    else handled = false;
    if (handled) e.preventDefault();
  });
}
