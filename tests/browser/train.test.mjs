// The Train view in Chromium: induction and copy trained live in the page's worker to
// their thresholds, the heads induction needs (checked on the weights the page shows),
// a page that answers the learner while training, Pause / Step / Reset, snapshots,
// the weights file's round trip, the scaled-against-unscaled comparison, the keyboard and
// a phone-sized screen. Screenshots before, during and after training go to
// tests/artifacts/screenshots (train-*.png).
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { watch } from "./lib/launch.mjs";
import { usePage } from "./lib/page.mjs";
import { shots } from "./lib/paths.mjs";
import { assertAnsweredWhileTraining, loadedModelBuild } from "./lib/training.mjs";
import { poll } from "./lib/wait.mjs";

let server, browser, context, p, problems;
const {
  ready,
  shot,
  train: hook,
  trainReady: waitReady,
} = usePage((s) => ({ server, browser, context, page: p, problems } = s), {
  perTest: false,
  onPage: () => p.goto(`${server.url}?v=train`).then(() => ready()),
  prefix: "train-",
  fullPage: true,
});
const inspection = () => p.evaluate(() => window.__attnkit.trainInspection());

/** Mean weight of head h ([H, T, T] flat) on column pick(t) over the rows where pick gives >= 0. */
function headScore(layer, h, pick) {
  const [, T] = layer.shape;
  let sum = 0,
    n = 0;
  for (let t = 0; t < T; t++) {
    const j = pick(t);
    if (j < 0) continue;
    sum += layer.weights[(h * T + t) * T + j];
    n++;
  }
  return sum / n;
}

/** Per head of layer 2: the induction score; per head of layer 1: weight on the previous token. */
function headScores(ins) {
  const { tokens, targets } = ins;
  const [L1, L2] = ins.layers;
  const H = L1.shape[0];
  const induction = [],
    previous = [];
  for (let h = 0; h < H; h++) {
    induction.push(
      headScore(L2, h, (t) => {
        if (targets[t] < 0) return -1;
        for (let j = t - 1; j >= 0; j--) if (tokens[j] === tokens[t]) return j + 1;
        return -1;
      }),
    );
    previous.push(headScore(L1, h, (t) => t - 1));
  }
  return { induction, previous };
}

/**
 * Trains until the held-out accuracy reaches `target`, downloading the weights on the way
 * (a learner's request the page answers while training, lib/training.mjs); pauses there.
 */
async function trainTo(target, label) {
  const t0 = Date.now();
  await p.click('[data-testid="train-go"]');
  await assertAnsweredWhileTraining({
    hook,
    what: `${label}: the weights downloaded while training`,
    answer: async () => {
      const [download] = await Promise.all([
        p.waitForEvent("download"),
        p.click('[data-testid="train-download"]'),
      ]);
      const name = download.suggestedFilename();
      assert.match(name, /^attnkit-[a-z]+-step\d+\.atkmodel$/);
      return Number(/step(\d+)/.exec(name)[1]);
    },
  });
  await poll(async () => (await hook()).step >= 150, `${label}: step 150`, 240000, 100);
  await shot(`${label}-during`);
  const h = await poll(
    async () => {
      const s = await hook();
      return s.lastEval?.accuracy >= target && s;
    },
    `${label}: held-out accuracy >= ${target}`,
    240000,
    250,
  );
  const seconds = (Date.now() - t0) / 1000;
  await p.click('[data-testid="train-pause"]');
  await poll(
    async () => {
      const s = await hook();
      return !s.training && s.inspectionStep === s.step;
    },
    "training to pause and its last step on screen",
    10000,
  );
  const e = h.lastEval;
  console.log(
    `# ${label}: ${(100 * e.accuracy).toFixed(1)}% held-out after ${e.step} steps, ${seconds.toFixed(1)} s from pressing Train (page's own clock to 90%: ${((h.reached90Ms ?? NaN) / 1000).toFixed(1)} s)`,
  );
  // The page's own resources hold no model build, the training worker's do.
  assert.equal(await p.evaluate(loadedModelBuild), false, "the page itself loaded the model build");
  const inWorker = await Promise.all(p.workers().map((w) => w.evaluate(loadedModelBuild)));
  assert.ok(inWorker.includes(true), "no worker of the page loaded the model build");
  return h;
}

test("the Train tab opens the Train view with induction's settings, before training", async () => {
  const h = await waitReady();
  assert.equal(h.step, 0);
  assert.equal(await p.inputValue('[data-testid="train-task"]'), "induction");
  assert.equal(await p.inputValue('[data-testid="train-layers"]'), "2");
  assert.equal((await inspection()).layers.length, 2);
  assert.match(await p.textContent('[data-testid="train-status"]'), /ready · step 0/);
  for (const id of [
    "train-loss",
    "train-accuracy",
    "train-qk-1-1",
    "matrix-train-attn-1-1",
    "matrix-train-dS",
  ]) {
    // Drawn by the redraw that follows the worker's first inspection, which may
    // come a frame after the run reports ready.
    const drawn = await p
      .waitForSelector(`[data-testid="${id}"]`, { state: "attached", timeout: 10000 })
      .catch(() => null);
    assert.ok(drawn, `${id} drawn`);
  }
  // The steps' settings and bar are hidden; the Train tab is pressed.
  assert.equal(await p.isVisible('[data-testid="preset"]'), false);
  assert.equal(await p.getAttribute('[data-testid="view-train"]', "aria-pressed"), "true");
  await shot("before");
  assert.deepEqual(problems, []);
});

test(
  "induction trains to >= 90% with a layer-2 induction head and a layer-1 previous-token head; the page answers while training",
  { timeout: 300000 },
  async () => {
    await trainTo(0.9, "induction");
    const ins = await inspection();
    const { induction, previous } = headScores(ins);
    console.log(
      `# induction scores (layer 2) ${induction.map((v) => v.toFixed(3))}, previous-token (layer 1) ${previous.map((v) => v.toFixed(3))}`,
    );
    assert.ok(Math.max(...induction) >= 0.5, `induction scores ${induction}`);
    assert.ok(Math.max(...previous) >= 0.5, `previous-token scores ${previous}`);
    // The maps on screen are the inspection's weights.
    const m = await p.evaluate(() => window.__attnkit.matrix("train-attn-1-0"));
    const T = ins.tokens.length;
    assert.deepEqual(m.values.map(Number), ins.layers[1].weights.slice(0, T * T));
    await shot("after");
    assert.deepEqual(problems, []);
  },
);

test("Pause holds the step; Step adds one; the snapshot slider (arrow keys) shows older weights; Reset starts over", async () => {
  const h0 = await hook();
  await new Promise((r) => setTimeout(r, 500));
  assert.equal((await hook()).step, h0.step, "paused: the step stays");
  await p.click('[data-testid="train-step"]');
  const h1 = await poll(async () => {
    const h = await hook();
    return h.step === h0.step + 1 && h.inspectionStep === h0.step + 1 && h;
  }, "one step");
  const live = await inspection();
  assert.equal(h1.curves[0].steps, h0.curves[0].steps + 1);
  // Snapshots: every 25 steps from 0; Home shows step 0's weights, End the live model's.
  assert.ok(
    h1.snapshots.length >= 2 && h1.snapshots[0] === 0 && h1.snapshots[1] === 25,
    `snapshots ${h1.snapshots}`,
  );
  await p.focus('[data-testid="train-scrub"]');
  await p.keyboard.press("Home");
  await poll(async () => (await hook()).inspectionSnapshot === 0, "snapshot 0 on screen");
  const s0 = await inspection();
  assert.equal(s0.step, 0);
  assert.match(await p.textContent('[data-testid="train-scrub-out"]'), /step 0/);
  assert.notDeepEqual(s0.layers[1].weights, live.layers[1].weights);
  await shot("snapshot-0");
  await p.keyboard.press("ArrowRight");
  await poll(async () => (await hook()).inspectionStep === 25, "snapshot at step 25");
  await p.keyboard.press("End");
  await poll(async () => (await hook()).inspectionSnapshot === -1, "the live model again");
  await p.click('[data-testid="train-reset"]');
  const r = await poll(async () => {
    const h = await hook();
    return h.ready && h.step === 0 && h.curves[0].steps === 0 && h.inspectionStep === 0 && h;
  }, "the reset run");
  assert.deepEqual(r.snapshots, [0]);
  assert.equal(r.evals, 1);
  assert.deepEqual(problems, []);
});

test("settings changed in quick succession: the run is the panel's last settings", async () => {
  // Each change restarts the run in the worker; its answers to the earlier changes
  // arrive while the later ones are typed, and must neither overwrite them nor win.
  for (const [id, v] of [
    ["train-heads", "4"],
    ["train-dmodel", "28"],
    ["train-dk", "5"],
    ["train-layers", "3"],
  ]) {
    await p.fill(`[data-testid="${id}"]`, v);
    await p.press(`[data-testid="${id}"]`, "Tab");
  }
  await p.selectOption('[data-testid="train-task"]', "sort");
  await waitReady("the run of the last settings");
  await new Promise((r) => setTimeout(r, 500)); // any late answer would land by now
  const ins = await inspection();
  assert.equal(ins.layers.length, 3, "layers");
  const T = ins.tokens.length;
  assert.deepEqual(ins.layers[0].shape, [4, T, T], "weights [h, T, T]");
  const text = await p.evaluate(() => document.body.innerText);
  assert.match(text, /3 layers of 4 heads, dmodel 28, dk 5/, "the run's description");
  for (const [id, v] of [
    ["train-heads", "4"],
    ["train-dmodel", "28"],
    ["train-dk", "5"],
    ["train-layers", "3"],
    ["train-task", "sort"],
  ])
    assert.equal(await p.inputValue(`[data-testid="${id}"]`), v, `${id} on the panel`);
  // The URL holds these settings (a reload keeps them): back to the defaults' URL for the
  // tests that follow.
  await p.goto(`${server.url}?v=train`);
  await p.waitForSelector("body[data-ready='1']");
  await waitReady();
});

test("the weights download as an .atkmodel file and load back", async () => {
  await p.click('[data-testid="train-step"]');
  await poll(async () => (await hook()).step === 1, "one step");
  await poll(async () => (await hook()).inspectionStep === 1, "step 1's inspection");
  const before = await inspection();
  const [download] = await Promise.all([
    p.waitForEvent("download"),
    p.click('[data-testid="train-download"]'),
  ]);
  assert.match(download.suggestedFilename(), /^attnkit-induction-step1\.atkmodel$/);
  // Saved under its own name, which holds the step it was saved at.
  const file = path.join(shots, "..", download.suggestedFilename());
  await download.saveAs(file);
  const bytes = readFileSync(file);
  assert.equal(bytes.toString("latin1", 0, 8), "ATKMODEL");
  await p.click('[data-testid="train-reset"]');
  await poll(async () => (await hook()).inspectionStep === 0 && (await hook()).ready, "reset");
  await p.setInputFiles('[data-testid="train-file"]', file);
  // Loaded: a fresh trainer on the downloaded weights of step 1 (the file's name says so),
  // whose maps are those of step 1.
  const same = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);
  // The hook is read after the inspection: the load's "ready" comes before its inspection,
  // so a hook read later holds the loaded run's step (read first, it may still be the reset's).
  const loaded = await poll(async () => {
    const ins = await inspection();
    const h = await hook();
    return h.ready && ins && same(ins.layers[1].weights, before.layers[1].weights) && h;
  }, "the loaded weights' maps (those of step 1)");
  assert.equal(loaded.step, 1);
  // A file that is not a weights file is refused with the package's error.
  writeFileSync(file, Buffer.from("not weights"));
  await p.setInputFiles('[data-testid="train-file"]', file);
  const err = await poll(async () => (await hook()).error, "the load error");
  assert.match(err, /weights/);
  await poll(
    async () => /weights/.test(await p.textContent('[data-testid="train-status"]')),
    "the error in the status line",
  );
  await p.click('[data-testid="train-reset"]');
  await waitReady();
});

test("copy trains to >= 90%", { timeout: 300000 }, async () => {
  await p.selectOption('[data-testid="train-task"]', "copy");
  const h = await poll(async () => {
    const s = await hook();
    return s.ready && (await inspection())?.tokens.length === 12 && s;
  }, "the copy run");
  assert.equal(h.step, 0);
  await trainTo(0.9, "copy");
  await shot("copy-after");
  assert.deepEqual(problems, []);
});

test("compare: scaled and unscaled runs of the same task, both loss curves drawn", async () => {
  // The copy run trained: the change asks first.
  await p.check('[data-testid="train-compare"]');
  await p.click('[data-testid="train-confirm-yes"]');
  await poll(async () => (await hook()).runs === 2 && (await hook()).ready, "two runs");
  for (let i = 0; i < 5; i++) {
    await p.click('[data-testid="train-step"]');
    await poll(async () => (await hook()).step === i + 1, `step ${i + 1}`);
  }
  const h = await poll(async () => {
    const s = await hook();
    return s.curves.every((c) => c.steps === 5) && s;
  }, "five steps of both runs");
  assert.notEqual(h.curves[0].lastLoss, h.curves[1].lastLoss);
  const series = await p.$$eval('[data-testid="train-loss"] g.series', (gs) =>
    gs.map((g) => g.dataset.series),
  );
  assert.deepEqual(series, ["loss, scaled ÷√dₖ", "loss, unscaled"]);
  await shot("compare");
  await p.uncheck('[data-testid="train-compare"]');
  await p.click('[data-testid="train-confirm-yes"]');
  await poll(async () => (await hook()).runs === 1, "one run");
});

test("keyboard: Enter on Train trains, Space on Pause pauses (the page's shortcuts stay out)", async () => {
  await waitReady();
  // The panel follows the run on its next redraw.
  await p.waitForSelector('[data-testid="train-go"]:not([disabled])');
  await p.focus('[data-testid="train-go"]');
  await p.keyboard.press("Enter");
  await poll(async () => (await hook()).training, "training");
  await p.waitForSelector('[data-testid="train-pause"]:not([disabled])');
  await p.focus('[data-testid="train-pause"]');
  await p.keyboard.press("Space");
  await poll(async () => !(await hook()).training, "paused");
  assert.equal(await p.evaluate(() => window.__attnkit.state().view), "train");
  assert.equal(await p.evaluate(() => window.__attnkit.playing()), false);
  // The view keys: s to the steps, t back to the Train view, which kept its run.
  const step = (await hook()).step;
  await p.focus("body");
  await p.keyboard.press("s");
  await poll(() => p.evaluate(() => window.__attnkit.state().view === "steps"), "the steps view");
  await p.keyboard.press("t");
  await poll(() => p.evaluate(() => window.__attnkit.state().view === "train"), "the Train view");
  assert.ok(await p.isVisible('[data-testid="train-go"]'), "the Train panel shows");
  assert.equal((await hook()).step, step, "the run is kept across views");
});

test("open a trained layer in the steps view: the page's weights are the model's", async () => {
  const ins = await inspection();
  await p.click('[data-testid="train-open-0"]');
  await poll(() => p.evaluate(() => window.__attnkit.state().view === "steps"), "the steps view");
  assert.equal(await p.evaluate(() => window.__attnkit.trained.shown()), true);
  const heads = await p.evaluate(() => window.__attnkit.trained.headWeights());
  const T = ins.tokens.length;
  heads.forEach((w, h) => {
    const model = ins.layers[0].weights.slice(h * T * T, (h + 1) * T * T);
    const worst = Math.max(...w.map((v, i) => Math.abs(v - model[i])));
    assert.ok(worst <= 1e-5, `head ${h}: the page's weights differ from the model's by ${worst}`);
  });
  await shot("opened-in-steps");
  await p.click('[data-testid="view-train"]');
  await poll(
    () => p.evaluate(() => window.__attnkit.state().view === "train"),
    "back to the Train view",
  );
});

test("phone width 375 px: the Train view does not scroll sideways", async () => {
  await p.setViewportSize({ width: 375, height: 800 });
  await p.goto(`${server.url}?v=train`);
  await waitReady();
  const r = await p.evaluate(() => {
    const vw = document.documentElement.clientWidth;
    const out = [];
    for (const el of document.querySelectorAll("#train, #train *, #stage, #stage svg, #caption")) {
      const b = el.getBoundingClientRect();
      if (b.width === 0 && b.height === 0) continue;
      if (b.left < -0.5 || b.right > vw + 0.5)
        out.push(
          `${el.tagName} ${el.id || el.className} ${Math.round(b.left)}..${Math.round(b.right)}`,
        );
    }
    return { vw, out, docW: document.documentElement.scrollWidth };
  });
  assert.deepEqual(r.out, []);
  assert.ok(r.docW <= r.vw, `the page scrolls sideways (${r.docW} > ${r.vw})`);
  await shot("phone-375");
  await p.setViewportSize({ width: 1440, height: 900 });
  assert.deepEqual(problems, []);
});

// ---- Each test below opens its own page, so that it can run alone. ----

/** A new page at `?query`, its run ready; `opts` as Playwright's newContext's. */
async function openTrain(query, opts = {}) {
  const ctx = opts.viewport
    ? await browser.newContext({ reducedMotion: "reduce", ...opts })
    : context;
  const q = await ctx.newPage();
  const seen = [];
  watch(q, seen);
  await q.goto(`${server.url}?${query}`);
  await ready(q);
  await waitReady(undefined, q);
  // ... and drawn.
  await q.waitForSelector('[data-testid="matrix-train-attn-0-0"]');
  return { q, seen, close: () => (ctx === context ? q.close() : ctx.close()) };
}

/** Presses Step n times, each waited for. */
async function stepOn(q, n) {
  const from = (await hook(q)).step;
  for (let i = 1; i <= n; i++) {
    await q.click('[data-testid="train-step"]');
    await poll(async () => (await hook(q)).inspectionStep === from + i, `step ${from + i}`);
  }
}

test("a number field says which value it used and why: 99 layers, 0 heads, an empty d_k", async () => {
  const { q, seen, close } = await openTrain("v=train");
  const note = (id) => q.textContent(`[data-testid="${id}-note"]`);
  await q.fill('[data-testid="train-layers"]', "99");
  await q.press('[data-testid="train-layers"]', "Tab");
  await poll(async () => (await note("train-layers")) !== "", "the layers note");
  assert.equal(await q.inputValue('[data-testid="train-layers"]'), "4");
  assert.match(await note("train-layers"), /99 → 4: layers is a whole number from 1 to 4/);
  await q.fill('[data-testid="train-heads"]', "0");
  await q.press('[data-testid="train-heads"]', "Tab");
  await poll(async () => (await note("train-heads")) !== "", "the heads note");
  assert.equal(await q.inputValue('[data-testid="train-heads"]'), "1");
  assert.match(await note("train-heads"), /0 → 1: heads is a whole number from 1 to 8/);
  // Letters in a number field: the field holds nothing, and the value in use stays.
  await q.click('[data-testid="train-dk"]', { clickCount: 3 });
  await q.keyboard.type("abc");
  await q.keyboard.press("Tab");
  await poll(async () => (await note("train-dk")) !== "", "the d_k note");
  assert.equal(await q.inputValue('[data-testid="train-dk"]'), "16");
  assert.match(
    await note("train-dk"),
    /not a number: d_k is a whole number from 1 to 64\. Kept 16/,
  );
  const h = await waitReady(undefined, q);
  const ins = await q.evaluate(() => window.__attnkit.trainInspection());
  assert.equal(ins.layers.length, 4, "the run has the 4 layers the field shows");
  assert.equal(ins.layers[0].shape[0], 1, "and 1 head");
  assert.equal(h.step, 0);
  await shot("field-notes", q, false);
  // A value the field takes as typed clears its note.
  await q.fill('[data-testid="train-layers"]', "2");
  await q.press('[data-testid="train-layers"]', "Tab");
  await poll(async () => (await note("train-layers")) === "", "the layers note gone");
  assert.deepEqual(seen, []);
  await close();
});

test("the settings are in the URL: a link opens them, with a note for a value it cannot use", async () => {
  const { q, seen, close } = await openTrain(
    "v=train&tt=sort&th=4&tl=99&tlr=0.003&tb=abc&tcmp=1&tsc=0",
  );
  const value = (id) => q.inputValue(`[data-testid="${id}"]`);
  assert.equal(await value("train-task"), "sort");
  assert.equal(await value("train-heads"), "4");
  assert.equal(await value("train-layers"), "4");
  assert.equal(await value("train-lr"), "0.003");
  assert.equal(await value("train-batch"), "32");
  assert.equal(await q.isChecked('[data-testid="train-scaled"]'), false);
  assert.equal(await q.isChecked('[data-testid="train-compare"]'), true);
  assert.match(
    await q.textContent('[data-testid="train-layers-note"]'),
    /The link's tl=99: 99 → 4: layers is a whole number from 1 to 4/,
  );
  assert.match(await q.textContent('[data-testid="train-batch-note"]'), /The link's tb=abc/);
  // The run is the link's.
  const ins = await q.evaluate(() => window.__attnkit.trainInspection());
  assert.equal(ins.layers.length, 4);
  assert.equal(ins.layers[0].shape[0], 4);
  assert.equal(ins.tokens.length, 12, "sort's sequences");
  assert.equal((await hook(q)).runs, 2, "compare: two runs");
  // The address holds the values used, not the link's bad ones.
  const params = () => q.evaluate(() => Object.fromEntries(new URLSearchParams(location.search)));
  const p0 = await poll(async () => {
    const s = await params();
    return s.tl === "4" && s;
  }, "the URL's tl=4");
  assert.equal(p0.tb, undefined);
  assert.equal(p0.tt, "sort");
  await shot("url-notes", q, false);
  // A change goes to the URL, and a reload brings it back.
  await q.fill('[data-testid="train-batch"]', "64");
  await q.press('[data-testid="train-batch"]', "Tab");
  await poll(async () => (await params()).tb === "64", "tb=64 in the URL");
  await q.reload();
  await q.waitForSelector("body[data-ready='1']");
  await waitReady(undefined, q);
  assert.equal(await value("train-batch"), "64");
  assert.equal(await value("train-layers"), "4");
  assert.equal(await q.textContent('[data-testid="train-layers-note"]'), "");
  assert.deepEqual(seen, []);
  await close();
});

test("a loaded weights file shows the step it was saved at and says its curves are not in it", async () => {
  const { q, seen, close } = await openTrain("v=train");
  await stepOn(q, 3);
  const [download] = await Promise.all([
    q.waitForEvent("download"),
    q.click('[data-testid="train-download"]'),
  ]);
  assert.equal(download.suggestedFilename(), "attnkit-induction-step3.atkmodel");
  const file = path.join(shots, "..", download.suggestedFilename());
  await download.saveAs(file);
  await q.click('[data-testid="train-reset"]');
  await poll(async () => (await hook(q)).step === 0 && (await hook(q)).ready, "reset");
  await q.setInputFiles('[data-testid="train-file"]', file);
  const h = await poll(async () => {
    const s = await hook(q);
    return s.ready && s.inspectionStep === 3 && s;
  }, "the loaded weights at step 3");
  assert.equal(h.step, 3);
  // The panel follows on its next redraw.
  const fileNote = await poll(
    async () => q.textContent('[data-testid="train-file-note"]'),
    "the loaded file's note",
  );
  assert.match(await q.textContent('[data-testid="train-status"]'), /step 3/);
  assert.match(fileNote, /attnkit-induction-step3\.atkmodel: the weights of step 3/);
  assert.match(fileNote, /the curves up to step 3 are not in it/);
  assert.match(
    await q.textContent('[data-testid="train-loss"] [data-testid="chart-missing"]'),
    /not in the file/,
  );
  await shot("loaded", q, false);
  // Training goes on from step 3.
  await stepOn(q, 1);
  assert.equal((await hook(q)).step, 4);
  assert.deepEqual(seen, []);
  await close();
});

test("the charts mark the step of the snapshot on screen", async () => {
  const { q, seen, close } = await openTrain("v=train&tt=majority&tl=1&tb=8");
  await q.click('[data-testid="train-go"]');
  await poll(async () => (await hook(q)).snapshots.length >= 3, "three snapshots", 60000);
  await q.click('[data-testid="train-pause"]');
  await poll(async () => !(await hook(q)).training, "paused");
  const marks = () =>
    q.$$eval('[data-testid="train-charts"] .chart-snapshot', (gs) =>
      gs.map((g) => [g.closest(".train-chart").dataset.testid, g.dataset.step, g.textContent]),
    );
  assert.deepEqual(await marks(), [], "the live model: no mark");
  await q.focus('[data-testid="train-scrub"]');
  await q.keyboard.press("Home");
  await q.keyboard.press("ArrowRight");
  await poll(async () => (await hook(q)).inspectionStep === 25, "the snapshot at step 25");
  const m = await poll(async () => {
    const ms = await marks();
    return ms.length === 2 && ms[0][1] === "25" && ms;
  }, "a mark on each chart at step 25");
  assert.deepEqual(m, [
    ["train-loss", "25", "snapshot, step 25"],
    ["train-accuracy", "25", "snapshot, step 25"],
  ]);
  // The mark is at step 25 on the axis.
  const at = await q.evaluate(() => {
    const chart = document.querySelector('[data-testid="train-loss"]');
    const tick = [...chart.querySelectorAll(".tick")].find((t) => t.textContent === "0");
    const mark = chart.querySelector(".chart-snapshot line").getBoundingClientRect().x;
    const x0 = tick.getBoundingClientRect().x + tick.getBoundingClientRect().width / 2;
    return mark - x0;
  });
  assert.ok(at > 5, `the mark is ${at} px right of step 0`);
  await shot("snapshot-mark", q, false);
  await q.keyboard.press("End");
  await poll(async () => (await marks()).length === 0, "no mark on the live model");
  assert.deepEqual(seen, []);
  await close();
});

test("compare: every tick label fits in the charts; the held-out dots say whose run they are", async () => {
  const { q, seen, close } = await openTrain("v=train");
  // A small model, so that training passes step 1000 in seconds.
  await q.selectOption('[data-testid="train-task"]', "majority");
  for (const [id, v] of [
    ["train-layers", "1"],
    ["train-heads", "1"],
    ["train-dmodel", "8"],
    ["train-dk", "4"],
    ["train-batch", "2"],
  ]) {
    await q.fill(`[data-testid="${id}"]`, v);
    await q.press(`[data-testid="${id}"]`, "Tab");
  }
  await q.check('[data-testid="train-compare"]');
  await poll(async () => {
    const h = await hook(q);
    return h.ready && h.runs === 2 && !h.training && h.inspectionStep === 0;
  }, "the two small runs");
  await q.click('[data-testid="train-go"]');
  // Past step 1000 the x axis ends on a four-digit tick ("1,500").
  await poll(async () => (await hook(q)).step > 1000, "step 1000", 120000, 250);
  await q.click('[data-testid="train-pause"]');
  await poll(async () => !(await hook(q)).training, "paused");
  await new Promise((r) => setTimeout(r, 400)); // the last curves' redraw
  const out = await q.evaluate(() => {
    const svg = document.querySelector('[data-testid="train-charts"]').getBoundingClientRect();
    return [...document.querySelectorAll('[data-testid="train-charts"] text')]
      .filter((t) => {
        const b = t.getBoundingClientRect();
        return b.width > 0 && (b.right > svg.right + 0.5 || b.left < svg.left - 0.5);
      })
      .map((t) => t.textContent);
  });
  assert.deepEqual(out, [], "text cut at the charts' edge");
  const series = await q.$$eval('[data-testid="train-accuracy"] g.series', (gs) =>
    gs.map((g) => g.dataset.series),
  );
  assert.ok(series.includes("256 held-out sequences, scaled ÷√dₖ run"), series.join("; "));
  await shot("compare-long", q, false);
  assert.deepEqual(seen, []);
  await close();
});

test("the query/key maps have axes, token labels and a tooltip naming the point", async () => {
  const { q, seen, close } = await openTrain("v=train&tt=copy");
  const map = '[data-testid="train-qk-0-0"]';
  const titles = await q.$$eval(`${map} .m-axis-title`, (ts) => ts.map((t) => t.textContent));
  assert.deepEqual(titles, ["component 1", "component 2"]);
  assert.ok((await q.$$(`${map} .qk-axis .tick`)).length >= 4, "ticks on the axes");
  const ins = await q.evaluate(() => window.__attnkit.trainInspection());
  const names = ins.tokens.map(
    (t, i) => `${t === 0 ? "|" : t}${[...String(i)].map((d) => "₀₁₂₃₄₅₆₇₈₉"[d]).join("")}`,
  );
  const labels = await q.$$eval(`${map} .qk-labels text`, (ts) => ts.map((t) => t.textContent));
  assert.ok(labels.length >= 4, `${labels.length} labels`);
  for (const l of labels) assert.ok(names.includes(l), `label ${l} is a token's`);
  // The pointer on a labelled point: the tooltip names it.
  await q.$eval(map, (g) => g.scrollIntoView({ block: "center" }));
  const pt = await q.$eval(`${map} .qk-labels text`, (t) => {
    const m = t.getScreenCTM();
    const x = Number(t.getAttribute("x")) - 5,
      y = Number(t.getAttribute("y")) - 3.5;
    return { x: m.a * x + m.c * y + m.e, y: m.b * x + m.d * y + m.f, label: t.textContent };
  });
  await q.mouse.move(pt.x, pt.y);
  const tip = await q.waitForSelector('[data-testid="tooltip"]', { state: "visible" });
  const text = await tip.textContent();
  assert.match(text, /^(query|key) /);
  assert.ok(text.includes(`“${pt.label}”`), `${text} names ${pt.label}`);
  await shot("qk-tooltip", q, false);
  assert.deepEqual(seen, []);
  await close();
});

test("the sample shows every target, the last one too, and marks the scored tokens", async () => {
  const { q, seen, close } = await openTrain("v=train&tt=copy");
  const ins = await q.evaluate(() => window.__attnkit.trainInspection());
  const T = ins.tokens.length;
  const label = (t) => (t === 0 ? "|" : String(t));
  // The table as drawn (once the inspection's redraw has come).
  const cols = await poll(async () => {
    const cs = await q.$$eval('[data-testid="train-sample-table"] [data-scored]', (gs) =>
      gs.map((g) => ({
        scored: g.dataset.scored === "1",
        input: g.querySelector('[data-role="input"]').textContent,
        target: g.querySelector('[data-role="target"]').textContent,
        predicted: g.querySelector('[data-role="predicted"]').textContent,
      })),
    );
    return cs.length === T && cs;
  }, `the table of ${T} positions`);
  cols.forEach((c, i) => {
    assert.equal(c.input, label(ins.tokens[i]));
    assert.equal(c.scored, ins.targets[i] >= 0, `position ${i} scored`);
    if (c.scored) assert.equal(c.target, label(ins.targets[i]));
  });
  // Copy scores the last position: its target is a token the input does not show there.
  assert.ok(ins.targets[T - 1] >= 0);
  assert.equal(cols[T - 1].target, label(ins.targets[T - 1]));
  assert.equal(cols.filter((c) => c.scored).length, ins.targets.filter((t) => t >= 0).length);
  assert.match(
    await q.textContent('[data-testid="train-sample"]'),
    new RegExp(`right on \\d+ of ${ins.targets.filter((t) => t >= 0).length} scored tokens`),
  );
  assert.deepEqual(seen, []);
  await close();
});

test("changing the task while training pauses and asks; keeping the run keeps it", async () => {
  const { q, seen, close } = await openTrain("v=train&tt=majority&tl=1&tb=8");
  const T = (await q.evaluate(() => window.__attnkit.trainInspection())).tokens.length;
  await q.click('[data-testid="train-go"]');
  await poll(async () => (await hook(q)).step >= 5, "training");
  await q.selectOption('[data-testid="train-task"]', "sort");
  const confirm = await q.waitForSelector('[data-testid="train-confirm"]', { state: "visible" });
  assert.match(
    await confirm.textContent(),
    /Changing the task majority → sort starts a new run: the \d+ steps trained so far/,
  );
  const h = await poll(async () => {
    const s = await hook(q);
    return !s.training && s;
  }, "training paused");
  assert.ok(h.step >= 5, "the run is kept meanwhile");
  assert.equal(await q.isDisabled('[data-testid="train-go"]'), true, "Train waits for an answer");
  await shot("confirm", q, false);
  await q.click('[data-testid="train-confirm-no"]');
  assert.equal(await q.isVisible('[data-testid="train-confirm"]'), false);
  assert.equal(await q.inputValue('[data-testid="train-task"]'), "majority");
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await hook(q)).step, h.step, "the run kept its steps");
  assert.equal((await q.evaluate(() => window.__attnkit.trainInspection())).tokens.length, T);
  // Asked again, and this time the new run starts.
  await q.selectOption('[data-testid="train-task"]', "sort");
  await q.click('[data-testid="train-confirm-yes"]');
  await poll(async () => {
    const s = await hook(q);
    const ins = s.ready && (await q.evaluate(() => window.__attnkit.trainInspection()));
    return ins && s.step === 0 && ins.tokens.length === 12;
  }, "the sort run");
  assert.equal(await q.isVisible('[data-testid="train-confirm"]'), false);
  assert.deepEqual(seen, []);
  await close();
});

test("phone 390 px, touch: the maps use the width at scale 1, labels at least 9 px", async () => {
  const { q, seen, close } = await openTrain("v=train", {
    viewport: { width: 390, height: 844 },
    hasTouch: true,
    isMobile: true,
    deviceScaleFactor: 2,
  });
  await new Promise((r) => setTimeout(r, 500));
  const r = await q.evaluate(() => {
    const svg = document.querySelector("#stage svg");
    const stage = document.getElementById("stage").getBoundingClientRect();
    const width = (id) =>
      document.querySelector(`[data-testid="${id}"]`).getBoundingClientRect().width;
    const fonts = [
      ...document.querySelectorAll(
        '#stage [data-testid^="matrix-train-attn"] .m-axis text, #stage .qk-map text',
      ),
    ].map((t) => t.getBoundingClientRect().height);
    return {
      scale: svg.dataset.scale ?? "1",
      stage: stage.width,
      attn: width("matrix-train-attn-0-0"),
      qk: width("train-qk-0-0"),
      smallest: Math.min(...fonts),
    };
  });
  assert.equal(r.scale, "1", "the view is not scaled down");
  assert.ok(r.attn >= 0.75 * r.stage, `an attention map is ${r.attn} px of ${r.stage}`);
  assert.ok(r.qk >= 0.75 * r.stage, `a query/key map is ${r.qk} px of ${r.stage}`);
  assert.ok(r.smallest >= 9, `labels ${r.smallest} px high`);
  await shot("phone-390", q);
  assert.deepEqual(seen, []);
  await close();
});
