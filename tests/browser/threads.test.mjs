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
import { buildWithServiceWorker, serveIsolated } from "./lib/threads.mjs";
import { poll } from "./lib/wait.mjs";

// Steps each run takes with the Step button (each one step, then the sentence's maps).
const STEPS = 4;
// The isolated runs' model: the small preset with one layer, d_model 128 and a context of 256,
// so that each attention call (12 x 4 heads x 256^2 x 64 multiply-adds) is past the core's
// cut-off for its pool and 2 threads really split it.
const POOLED = "v=language&lp=small&ll=1&ldm=128&lctx=256&lb=12";

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

/** STEPS presses of Step, as a person does: the run's losses and its sentence's maps after. */
async function stepRun(p) {
  for (let s = 1; s <= STEPS; ++s) {
    await p.click('[data-testid="lang-step"]');
    await poll(async () => (await hook(p)).step === s, `step ${s}`, 30000);
  }
  const h = await poll(
    async () => {
      const x = await hook(p);
      return x.sentence?.step === STEPS && x.losses.length === STEPS && x;
    },
    `the sentence's maps at step ${STEPS}`,
    30000,
  );
  return { threads: h.threads, losses: h.losses, maps: h.sentence.layers };
}

test("served isolated: 2 threads stated, then 1 picked in the control; losses and maps equal bit for bit", async () => {
  const server = await serveIsolated(dist);
  servers.push(server);
  const { context, page: p, problems } = await openPage(`${server.url}?${POOLED}`);
  assert.equal(await p.evaluate(() => crossOriginIsolated), true);
  let h = await languageReady("the model on 2 threads");
  assert.equal(h.threads, 2, "the worker loaded the threads build with 2 threads");
  assert.deepEqual([h.config.numLayers, h.config.dModel, h.config.seqLen], [1, 128, 256]);
  assert.equal(await p.inputValue('[data-testid="lang-threads"]'), "2");
  const status = await p.locator("#lang-status").textContent();
  assert.match(status, /2 threads in a worker/, `the page states it: ${status}`);
  const two = await stepRun(p);
  await shot("isolated-2");

  // The learner picks 1 thread: the trained run keeps its worker until Reset.
  await p.selectOption('[data-testid="lang-threads"]', "1");
  await p.waitForSelector('[data-testid="lang-threads-note"]:has-text("until the next run")');
  await p.click('[data-testid="lang-reset"]');
  h = await poll(
    async () => {
      const x = await languageReady("the model on 1 thread");
      return x.threads === 1 && x.step === 0 && x;
    },
    "the new run on 1 thread",
    60000,
  );
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
