// The page's keyboard shortcuts (listed in the help dialog of index.html).
import { $ } from "./dom";
import { closeEditor } from "./editor";
import { page } from "./page";
import { goto, togglePlay } from "./playback";
import { render, set } from "./render";
import type { ViewId } from "./state";

const VIEW_KEYS: Record<string, ViewId> = {
  s: "steps",
  h: "headview",
  g: "grid",
  x: "saturation",
  d: "decoding",
  t: "train",
};

export function bindKeys(): void {
  document.addEventListener("keydown", (e) => {
    const t = e.target as HTMLElement;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t.closest("input, textarea, select, dialog")) return;
    const state = page.state;
    const T = page.model?.cfg.T ?? 1;
    const H = page.model?.cfg.heads ?? 1;
    let handled = true;
    if (e.key === "ArrowRight") goto(state.step + 1);
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
    else if (e.key === "Escape") closeEditor();
    else handled = false;
    if (handled) e.preventDefault();
  });
}
