// Threads in the page, in Chromium: served cross-origin isolated (the headers of npm start),
// the Language and Train views' workers load the package's threads build with 2 threads and
// say so; the learner picks 1 thread in the control, starts the run again, and its losses and
// the sentence's maps equal the 2-thread run's bit for bit. Served without the headers, the
// page trains on one thread and says why, with a link to the deploy note. Built with its
// service worker (ATTNKIT_WEB_SW=1) and served without the headers, the page reloads once
// and is isolated. Screenshots: tests/artifacts/screenshots/threads-*.png.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";
import { ARGS, CHROMIUM, watch } from "./lib/launch.mjs";
import { pageActions } from "./lib/page.mjs";
import { dist, requireBuiltPage } from "./lib/paths.mjs";
import { serve } from "./lib/server.mjs";
import {
  buildWithServiceWorker,
  freshRunOn,
  POOLED,
  serveIsolated,
  stepRun as stepRunIn,
} from "./lib/threads.mjs";
import { poll } from "./lib/wait.mjs";

// Steps each run takes with the Step button (each one step, then the sentence's maps).
const STEPS = 4;

let browser;
const servers = [];
const folders = [];

before(async () => {
  requireBuiltPage();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
});
after(async () => {
  await browser?.close();
  for (const s of servers) await s.close();
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

// The page of the test running, and the suites' actions on it (lib/page.mjs).
let current;
const {
  language: hook,
  languageReady,
  trainReady,
  shot,
} = pageActions(
  () => current,
  () => "",
  { prefix: "threads-", fullPage: true },
);

/** A page of a new context at `url` with its problems collected; the context's options. */
async function openPage(url, options = {}) {
  const context = await browser.newContext({
    viewport: { width: 1440, height: 900 },
    reducedMotion: "reduce",
    ...options,
  });
  const page = await context.newPage();
  const problems = [];
  watch(page, problems);
  current = page;
  await page.goto(url);
  return { context, page, problems };
}

/** STEPS presses of Step in page `p` (lib/threads.mjs's stepRun). */
const stepRun = (p) =>
  stepRunIn(
    (sel) => p.click(sel),
    () => hook(p),
    STEPS,
  );

test("served isolated: 2 threads stated, then 1 picked in the control; losses and maps equal bit for bit", async () => {
  const server = await serveIsolated(dist);
  servers.push(server);
  const { context, page: p, problems } = await openPage(`${server.url}?${POOLED}`);
  assert.equal(await p.evaluate(() => crossOriginIsolated), true);
  const h = await languageReady("the model on 2 threads");
  assert.equal(h.threads, 2, "the worker loaded the threads build with 2 threads");
  assert.deepEqual([h.config.numLayers, h.config.dModel, h.config.seqLen], [1, 128, 256]);
  assert.match(await p.locator("#caption").textContent(), /A small GPT \(1 layer of 4 heads,/);
  assert.equal(await p.inputValue('[data-testid="lang-threads"]'), "2");
  const status = await p.locator("#lang-status").textContent();
  assert.match(status, /2 threads in a worker/, `the page states it: ${status}`);
  const two = await stepRun(p);
  await shot("isolated-2");

  // The learner picks 1 thread: the trained run keeps its worker until Reset.
  await p.selectOption('[data-testid="lang-threads"]', "1");
  await p.waitForSelector('[data-testid="lang-threads-note"]:has-text("until the next run")');
  await p.click('[data-testid="lang-reset"]');
  await freshRunOn(1, languageReady);
  assert.match(await p.locator("#lang-status").textContent(), /1 thread in a worker/);
  const one = await stepRun(p);
  assert.deepEqual(one.losses, two.losses, "the losses of 1 and 2 threads");
  assert.deepEqual(one.maps, two.maps, "the sentence's maps of 1 and 2 threads");
  await shot("isolated-1");

  // The Train view's worker starts on the count picked; back to 2, its untrained run follows.
  await p.click('[data-testid="view-train"]');
  assert.equal((await trainReady("the Train view's run")).threads, 1);
  await p.selectOption('[data-testid="train-threads"]', "2");
  await poll(
    async () => (await trainReady("the Train view's new run")).threads === 2,
    "the Train view's run on 2 threads",
    60000,
  );
  assert.match(await p.locator("#caption").textContent(), /on 2 threads/);
  await shot("isolated-train");
  assert.deepEqual(problems, []);
  await context.close();
});

test("served without COOP/COEP: one thread, the page says why, and trains", async () => {
  const server = await serve(dist);
  servers.push(server);
  const { context, page: p, problems } = await openPage(`${server.url}?v=language&lp=small`);
  assert.equal(await p.evaluate(() => crossOriginIsolated), false);
  const h = await languageReady("the model on 1 thread");
  assert.equal(h.threads, 1);
  assert.equal(await p.isDisabled('[data-testid="lang-threads"]'), true);
  const note = p.locator('[data-testid="lang-threads-note"]');
  assert.match(await note.textContent(), /One thread: this page is not cross-origin isolated/);
  assert.match(await note.locator("a").getAttribute("href"), /#deploying-the-page$/);
  const run = await stepRun(p);
  assert.ok(run.losses.every(Number.isFinite), "it trains");
  await shot("not-isolated");
  assert.deepEqual(problems, []);
  await context.close();
});

test("built with the service worker, served without headers: isolated after one reload", async () => {
  const out = buildWithServiceWorker();
  folders.push(out);
  const server = await serve(out);
  servers.push(server);
  const { context, page: p, problems } = await openPage(`${server.url}?v=language&lp=small`);
  await poll(
    () => p.evaluate(() => crossOriginIsolated && document.body.dataset.ready === "1"),
    "the page isolated by its service worker",
    30000,
  );
  const h = await languageReady("the model on 2 threads");
  assert.equal(h.threads, 2);
  await shot("service-worker");
  assert.deepEqual(problems, []);
  await context.close();
});
