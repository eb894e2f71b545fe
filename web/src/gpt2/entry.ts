// The GPT-2 view as the page registers it: this small part is in the page's first load;
// the view's code (view.ts, its styles) and its worker load only when the view opens.
import { note } from "../draw/text";
import type { Scene } from "../scenes/common";

type ViewModule = typeof import("./view");

let view: ViewModule | null = null;
let failed = "";
let loading = false;
let redraw: () => void = () => {};

export function setGpt2Redraw(fn: () => void): void {
  redraw = fn;
  view?.setRedraw(fn);
}

function load(): void {
  if (loading) return;
  loading = true;
  import("./view").then(
    (m) => {
      view = m;
      m.setRedraw(redraw);
      redraw();
    },
    (err) => {
      failed = err instanceof Error ? err.message : String(err);
      redraw();
    },
  );
}

export const gpt2View: Scene = {
  title: "GPT-2: every head of a real model",
  caption: () => (view ? view.caption() : "<p>Loading the GPT-2 view…</p>"),
  render: (g, ctx) => {
    if (view) return view.render(g, ctx);
    load();
    note(
      g,
      0,
      16,
      failed ? `The GPT-2 view could not load: ${failed}` : "Loading the GPT-2 view…",
      { "data-testid": "gpt2-empty" },
    );
    return { width: 320, height: 30, duration: 0 };
  },
};

/** The view's own keys: the arrows and [ ] move the head shown large (nothing until a model is in). */
const VIEW_KEYS = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "[", "]", " "];

/** Whether `key` is the view's (it then never leaves the view). */
export function gpt2Key(key: string): boolean {
  if (!VIEW_KEYS.includes(key)) return false;
  view?.gpt2Key(key);
  return true;
}

/** What the browser tests read (window.__attnkit.gpt2()). */
export const gpt2Hook = () => view?.gpt2Hook() ?? { loaded: false, failed };
