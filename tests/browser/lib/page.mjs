// A Chromium suite's page (Playwright): the node:test hooks that open and close
// it, and the actions every suite takes on it, written once: wait until ready,
// open a URL, go to a step, set a field as a person does, click a matrix cell,
// take a screenshot, read the state and the Language and Train views' hooks.
import path from "node:path";
import { after, before, beforeEach } from "node:test";
import { openChromium, watch } from "./launch.mjs";
import { shots } from "./paths.mjs";
import { poll } from "./wait.mjs";

/** The page has drawn its first scene. */
export const READY = "body[data-ready='1']";
/** The stage shows step `n` of the steps view. */
export const stepShown = (n) => `svg[data-testid="scene-svg"][data-step="${n}"][data-view="steps"]`;
/** The stage shows view `v`. */
export const viewShown = (v) => `svg[data-testid="scene-svg"][data-view="${v}"]`;

/** Clicks the centre of cell (r, c) of the matrix `id` drawn on page p, as a person does. */
export async function clickMatrixCell(p, id, r, c) {
  const g = p.locator(`[data-testid="matrix-${id}"]`).first();
  const { rows, cols } = await g.evaluate((el) => ({
    rows: Number(el.dataset.rows),
    cols: Number(el.dataset.cols),
  }));
  const box = await p.locator(`[data-hit="${id}"]`).first().boundingBox();
  await p.mouse.click(
    box.x + ((c + 0.5) * box.width) / cols,
    box.y + ((r + 0.5) * box.height) / rows,
  );
}

/**
 * The actions on a page, each on the suite's current page (`current()`) unless
 * given another as its last argument. `origin()` is the page's server URL;
 * screenshots are `${prefix}${name}.png` in tests/artifacts/screenshots, whole
 * pages when `fullPage`.
 */
export function pageActions(current, origin, { prefix = "", fullPage = false } = {}) {
  const ready = (p = current()) => p.waitForSelector(READY, { timeout: 30000 });
  const language = (p = current()) => p.evaluate(() => window.__attnkit.language());
  const train = (p = current()) => p.evaluate(() => window.__attnkit.train());
  /** Waits for the Language view's text and model to be ready and drawn, nothing training; its hook. */
  const languageReady = (what = "the model to be ready", p = current()) =>
    poll(
      async () => {
        const h = await language(p);
        return h.ready && h.drawn && h.sentence && !h.training && !h.textPending && h;
      },
      what,
      60000,
    );
  return {
    ready,
    language,
    languageReady,
    train,
    /** Waits for the Train view's worker to report a fresh run, not training; its hook. */
    trainReady: (what = "the run to be ready", p = current()) =>
      poll(
        async () => {
          const h = await train(p);
          return h.ready && h.drawn && h.inspectionStep !== null && !h.training && h;
        },
        what,
        60000,
      ),
    /** Loads the page at `?query` (none if empty) and waits until it is ready. */
    async open(query = "", p = current()) {
      await p.goto(`${origin()}${query ? `?${query}` : ""}`);
      await ready(p);
    },
    /** Opens the Language view (`query` after ?v=language); resolves to its ready hook. */
    async openLanguage(query = "&lp=small", p = current()) {
      await p.goto(`${origin()}?v=language${query}`);
      return languageReady(undefined, p);
    },
    async gotoStep(n, p = current()) {
      await p.click(`[data-testid="step-${n}"]`);
      await p.waitForSelector(stepShown(n));
    },
    /** Types `text` into the field `sel` and commits it (Enter), as a person does. */
    async typeInto(sel, text, p = current()) {
      await p.fill(sel, "");
      await p.type(sel, text);
      await p.press(sel, "Enter");
    },
    clickCell: (id, r, c, p = current()) => clickMatrixCell(p, id, r, c),
    state: (p = current()) => p.evaluate(() => window.__attnkit.state()),
    /** The address's parameters, once it follows the state (within 120 ms of a change). */
    async settledSearch(p = current()) {
      await p.waitForFunction(() => location.search.slice(1) === window.__attnkit.query());
      return new URLSearchParams(await p.evaluate(() => location.search));
    },
    shot: (name, p = current(), full = fullPage) =>
      p.screenshot({ path: path.join(shots, `${prefix}${name}.png`), fullPage: full }),
  };
}

/**
 * The set-up every Chromium suite shares, as node:test hooks: before the file's
 * tests, the page served and Chromium launched (openChromium(`context`), after
 * `setUp()`); before each test (or once, with `perTest: false`) a new page whose
 * console errors and uncaught errors go into a new `problems` list, then
 * `onPage(page)`; after them, browser and server closed. `bind(session)` runs
 * whenever the session changes, so that the file's own variables follow it:
 *   let server, browser, context, page, problems;
 *   const { ready, shot } = usePage((s) => ({ server, browser, context, page, problems } = s));
 * Returns pageActions() on the session's page (`prefix`, `fullPage`: its screenshots).
 */
export function usePage(bind, { onPage, setUp, context, perTest = true, ...shotsAs } = {}) {
  const session = { problems: [] };
  const newPage = async () => {
    await session.page?.close();
    session.problems = [];
    session.page = await session.context.newPage();
    watch(session.page, session.problems);
    bind(session);
    await onPage?.(session.page);
  };
  before(async () => {
    await setUp?.();
    Object.assign(session, await openChromium(context));
    bind(session);
    if (!perTest) await newPage();
  });
  if (perTest) beforeEach(newPage);
  after(async () => {
    await session.browser?.close();
    await session.server?.close();
  });
  return pageActions(
    () => session.page,
    () => session.server.url,
    shotsAs,
  );
}
