// The page's buttons: the step bar and views, the caption's own controls, export and
// link, the help dialog and the settings drawer of narrow screens.
import { $, setHtml } from "./dom";
import { exportPng, exportSvg } from "./export";
import { escapeHtml } from "./format";
import { page } from "./page";
import { goto, togglePlay } from "./playback";
import { render, set, showError } from "./render";
import { SCENES } from "./scenes";
import type { State, ViewId } from "./state";
import { toggleHead } from "./views/headview";

export function bindNav(): void {
  bindStepBar();
  bindCaption();
  bindExport();
  $("url-note")
    .querySelector("button")!
    .addEventListener("click", () => ($("url-note").hidden = true));
  $("help-open").addEventListener("click", () => $<HTMLDialogElement>("help").showModal());
  bindDrawer();
}

function bindStepBar(): void {
  $("steps").innerHTML = SCENES.map(
    (s, i) =>
      `<li><button type="button" data-step="${i + 1}" data-testid="step-${i + 1}" title="${s.title} (${i + 1})" aria-label="step ${i + 1}: ${s.title}"><span>${i + 1}</span><span class="t"> ${s.title}</span></button></li>`,
  ).join("");
  $("steps").addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-step]");
    if (b) goto(Number(b.dataset.step));
  });
  $("views").addEventListener("click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-view]");
    if (b) set({ view: b.dataset.view as ViewId }, { animate: true });
  });
  $("prev").addEventListener("click", () => goto(page.state.step - 1));
  $("next").addEventListener("click", () => goto(page.state.step + 1));
  $("play").addEventListener("click", togglePlay);
  $("replay").addEventListener("click", () => render(true));
}

/** Controls inside a caption: [data-set] inputs and buttons, decoding steps, head toggles. */
function bindCaption(): void {
  const caption = $("caption");
  const fromCaption = (e: Event) => {
    const state = page.state;
    const t = e.target as HTMLElement;
    const setter = t.closest<HTMLElement>("[data-set]");
    if (setter) {
      const key = setter.dataset.set as keyof State;
      const raw =
        setter instanceof HTMLInputElement || setter instanceof HTMLSelectElement
          ? setter.value
          : (setter.dataset.value ?? "");
      const value = typeof state[key] === "number" ? Number(raw) : raw;
      set({ [key]: value } as Partial<State>, { animate: key === "role" });
      return;
    }
    const dec = t.closest<HTMLElement>("[data-decode]");
    if (dec && e.type === "click") {
      const T = page.model?.cfg.T ?? 0;
      const a = dec.dataset.decode;
      set(
        { decodeStep: a === "reset" ? 0 : a === "end" ? T : state.decodeStep + 1 },
        { animate: true },
      );
      return;
    }
    const hd = t.closest<HTMLElement>("[data-toggle-head]");
    if (hd && e.type === "click") {
      set(toggleHead(state, Number(hd.dataset.toggleHead)));
    }
  };
  caption.addEventListener("click", (e) => {
    if ((e.target as HTMLElement).closest("button")) fromCaption(e);
  });
  caption.addEventListener("input", fromCaption);
}

function bindExport(): void {
  $("export-svg").addEventListener("click", () =>
    exportSvg(currentSvg(), fileName(), exportText()),
  );
  $("export-png").addEventListener(
    "click",
    () => void exportPng(currentSvg(), fileName(), exportText()).catch(showError),
  );
  $("copy-link").addEventListener("click", () => {
    const done = (msg: string) => setHtml("status", escapeHtml(msg));
    navigator.clipboard?.writeText(location.href).then(
      () => done("Link copied."),
      () => done(`Link: ${location.href}`),
    ) ?? done(`Link: ${location.href}`);
  });
}

/** Narrow screens: the settings are a drawer, closed at first so the scene shows. */
function bindDrawer(): void {
  const drawer = $<HTMLButtonElement>("controls-toggle");
  const setDrawer = (open: boolean) => {
    document.body.classList.toggle("controls-open", open);
    drawer.setAttribute("aria-expanded", String(open));
    drawer.textContent = open ? "✕ Settings" : "☰ Settings";
  };
  setDrawer(false);
  drawer.addEventListener("click", () =>
    setDrawer(!document.body.classList.contains("controls-open")),
  );
}

function currentSvg(): SVGSVGElement {
  return $("stage").querySelector("svg") as SVGSVGElement;
}

/** The title and caption an export carries (as the page shows them, and where it comes from). */
function exportText(): { title: string; caption: string } {
  const cap = $("caption");
  const title = cap.querySelector("h2")?.textContent ?? "";
  const rest = [...cap.children]
    .filter((c) => c.tagName !== "H2")
    .map((c) => c.textContent ?? "")
    .join(" ")
    .replace(/\s+/g, " ")
    .trim();
  return {
    title: `attnkit · ${title}`,
    caption: `${rest} (“${page.state.text}”; ${location.href})`,
  };
}

function fileName(): string {
  const state = page.state;
  return state.view === "steps" ? `attnkit-step-${state.step}` : `attnkit-${state.view}`;
}
