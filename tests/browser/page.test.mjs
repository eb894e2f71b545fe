// Browser tests of the web page (web/dist, built by `npx vite build web`), in
// Debian's Chromium through playwright-core. Expected numbers come from the same
// attnkit package loaded in Node.
import assert from "node:assert/strict";
import { writeFileSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { createAttnkit } from "attnkit";
import { assertClose, assertUpperTriangleZero, checkSeed001, SEED001 } from "./lib/assert.mjs";
import { watch } from "./lib/launch.mjs";
import { usePage } from "./lib/page.mjs";
import { shots } from "./lib/paths.mjs";
import { BIG_LAYER, drawerOpen, PRESETS } from "./lib/reads.mjs";

const { X, WQ, KT, V } = SEED001;

let server, browser, context, page, problems, attn;

/**
 * Installed in every page: the pixels of a page canvas, read from a copy (reading the
 * page's own canvas back repeatedly makes Chromium warn on the console).
 */
function readCanvasScript() {
  window.__readCanvas = (sel) => {
    const canvas = document.querySelector(sel);
    const copy = document.createElement("canvas");
    [copy.width, copy.height] = [canvas.width, canvas.height];
    const c2d = copy.getContext("2d", { willReadFrequently: true });
    c2d.drawImage(canvas, 0, 0);
    const data = c2d.getImageData(0, 0, copy.width, copy.height).data;
    let hash = 2166136261;
    for (let k = 0; k < data.length; k++) hash = Math.imul(hash ^ data[k], 16777619);
    const px = (x, y) =>
      Array.from(data.slice((y * copy.width + x) * 4, (y * copy.width + x) * 4 + 3));
    return { width: copy.width, height: copy.height, hash, px };
  };
}

/** watch() of lib/launch.mjs, and every request that fails or leaves the page's server. */
function watchAll(p) {
  watch(p, problems);
  watchRequests(p);
}
function watchRequests(p) {
  p.on("requestfailed", (r) => problems.push(`request failed: ${r.url()}`));
  p.on("request", (r) => {
    const u = r.url();
    if (!u.startsWith(server.url) && !u.startsWith("data:") && !u.startsWith("blob:"))
      problems.push(`network request outside the page: ${u}`);
  });
}

/**
 * A matrix on screen: small ones from their SVG cells (data-value, cell text), canvas
 * ones through the page's test hook (the very arrays it drew).
 */
async function matrix(id, p = page) {
  const g = p.locator(`[data-testid="matrix-${id}"]`).first();
  await g.waitFor();
  const m = await g.evaluate((el) => ({
    render: el.getAttribute("data-render"),
    rows: Number(el.getAttribute("data-rows")),
    cols: Number(el.getAttribute("data-cols")),
    values: [...el.querySelectorAll("rect.cell")].map((r) => Number(r.getAttribute("data-value"))),
    texts: [...el.querySelectorAll("text.cell-text")].map((t) => t.textContent),
  }));
  if (m.render === "canvas") {
    const drawn = await p.evaluate((mid) => window.__attnkit.matrix(mid), id);
    assert.equal(drawn.render, "canvas");
    assert.equal(drawn.rows, m.rows);
    assert.equal(drawn.cols, m.cols);
    m.values = drawn.values;
  }
  assert.equal(m.values.length, m.rows * m.cols, `matrix ${id}: every value readable`);
  return m;
}

const asMatrix = (m) => ({ data: Float32Array.from(m.values), rows: m.rows, cols: m.cols });

async function urlHas(fragment, p = page) {
  await p.waitForFunction((f) => location.search.includes(f), fragment, { timeout: 3000 });
}

const { ready, gotoStep, shot } = usePage(
  (s) => ({ server, browser, context, page, problems } = s),
  {
    perTest: false,
    context: { viewport: { width: 1280, height: 800 }, acceptDownloads: true },
    setUp: async () => {
      attn = await createAttnkit();
    },
    onPage: async () => {
      await context.addInitScript(readCanvasScript);
      watchRequests(page);
      const t0 = Date.now();
      await page.goto(server.url);
      await ready();
      const timing = await page.evaluate(() => window.__attnkit.timing);
      console.log(
        `# first render: ${timing.firstRenderMs.toFixed(0)} ms after navigation start (wasm load ${timing.loadMs.toFixed(0)} ms; wall ${Date.now() - t0} ms)`,
      );
    },
  },
);

test("the page loads with no console errors or warnings and no outside requests", async () => {
  assert.match(await page.textContent('[data-testid="status"]'), /attnkit/);
  assert.deepEqual(problems, []);
});

test("every step of every preset renders (screenshots saved)", async () => {
  for (const preset of PRESETS) {
    await page.selectOption('[data-testid="preset"]', preset);
    await ready();
    for (let n = 1; n <= 8; n++) {
      await gotoStep(n);
      const title = await page.textContent('[data-testid="scene-title"]');
      assert.ok(title.startsWith(`${n}.`), `${preset} step ${n}: title ${title}`);
      const cells = await page
        .locator('[data-testid="scene-svg"] rect.cell, [data-testid="scene-svg"] canvas')
        .count();
      assert.ok(cells > 0, `${preset} step ${n}: no cells drawn`);
      await shot(`${preset}-step${n}`);
    }
  }
  for (const view of ["headview", "grid", "saturation", "decoding"]) {
    await page.click(`[data-testid="view-${view}"]`);
    await page.waitForSelector(`svg[data-testid="scene-svg"][data-view="${view}"]`);
    await shot(`fox-${view}`);
  }
  assert.deepEqual(problems, []);
});

test("seed 001: the numbers on screen are the core's, and q_0 is the printed row", async () => {
  await page.selectOption('[data-testid="preset"]', "seed001");
  await ready();
  const tr = await checkSeed001({
    attn,
    gotoStep,
    matrix,
    text: (selector) => page.textContent(selector),
  });
  assert.equal(tr.scale, 0.5);
  assert.deepEqual(problems, []);
});

test("the causal mask puts 0 in every upper-triangle weight", async () => {
  await page.selectOption('[data-testid="preset"]', "train");
  await ready();
  await page.selectOption('[data-testid="mask"]', "causal");
  await gotoStep(6);
  const upper = assertUpperTriangleZero(await matrix("weights"));
  await shot("train-causal-step6");
  await gotoStep(5);
  const M = await matrix("M");
  assert.equal(M.values.filter((v) => v === -Infinity).length, upper);
  assert.deepEqual(problems, []);
});

test("four heads give four attention maps", async () => {
  await page.selectOption('[data-testid="weights"]', "random");
  await page.fill('[data-testid="heads"]', "4");
  await page.dispatchEvent('[data-testid="heads"]', "change");
  await gotoStep(8);
  assert.equal(await page.locator('[data-testid^="matrix-headmap-"]').count(), 4);
  assert.match(await page.textContent('[data-testid="mha-check"]'), /✓/);
  await shot("train-4heads-step8");
  await page.click('[data-testid="view-grid"]');
  await page.waitForSelector('svg[data-view="grid"]');
  assert.equal(await page.locator('[data-testid^="matrix-grid-"]').count(), 4);
  await shot("train-4heads-grid");
  assert.deepEqual(problems, []);
});

test("decoding with the KV cache runs to the end and matches the full causal rows", async () => {
  await page.click('[data-testid="view-decoding"]');
  await page.waitForSelector('svg[data-view="decoding"]');
  await page.click('[data-testid="decode-step"]');
  assert.match(await page.textContent('[data-testid="decode-pos"]'), /^1 \//);
  await page.click('[data-testid="decode-end"]');
  const pos = await page.textContent('[data-testid="decode-pos"]');
  const [, done, total] = pos.match(/^(\d+) \/ (\d+)/);
  assert.equal(done, total);
  assert.match(await page.textContent('[data-testid="decode-check"]'), /✓/);
  const decoded = await matrix("decoded");
  const full = await matrix("fullCausal");
  assertClose(decoded.values, full.values, 1e-5, "decoded vs full causal");
  await shot("decoding-end");
  assert.deepEqual(problems, []);
});

test("export PNG downloads a PNG of the current view", async () => {
  await gotoStep(3);
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.click('[data-testid="export-png"]'),
  ]);
  const file = path.join(shots, "..", download.suggestedFilename());
  await download.saveAs(file);
  const bytes = readFileSync(file);
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.ok(bytes.length > 2000);
  const [svg] = await Promise.all([
    page.waitForEvent("download"),
    page.click('[data-testid="export-svg"]'),
  ]);
  assert.match(svg.suggestedFilename(), /\.svg$/);
  assert.deepEqual(problems, []);
});

test("the URL holds the state", async () => {
  await page.selectOption('[data-testid="mask"]', "causal");
  await gotoStep(5);
  await urlHas("st=5");
  const url = page.url();
  const p2 = await context.newPage();
  watchAll(p2);
  await p2.goto(url);
  await ready(p2);
  assert.equal(await p2.getAttribute('svg[data-testid="scene-svg"]', "data-step"), "5");
  assert.equal(await p2.inputValue('[data-testid="mask"]'), "causal");
  assert.equal(await p2.inputValue('[data-testid="heads"]'), "4");
  await p2.close();
  assert.deepEqual(problems, []);
});

test("softcap: options.softcap changes the scores and weights as the core computes them", async () => {
  await page.goto(server.url);
  await ready();
  await page.selectOption('[data-testid="preset"]', "seed001");
  await ready();
  const Q = attn.matmul(X, WQ);
  const K = KT[0].map((_, j) => KT.map((r) => r[j]));
  const plain = attn.traceQKV(Q, K, V, { causal: true });
  const capped = attn.traceQKV(Q, K, V, { causal: true, softcap: 2 });
  await gotoStep(6);
  const before = await matrix("weights");
  assertClose(before.values, Array.from(plain.weights.data), 1e-6, "weights without softcap");
  await page.locator('[data-testid="softcap"]').fill("2");
  await page.waitForFunction(() => window.__attnkit.state().softcap === 2);
  const after = await matrix("weights");
  assertClose(after.values, Array.from(capped.weights.data), 1e-6, "weights with softcap 2");
  assert.ok(
    after.values.some((v, k) => Math.abs(v - before.values[k]) > 1e-3),
    "softcap changes the weights",
  );
  await gotoStep(4);
  const scaled = await matrix("scaled");
  assertClose(
    scaled.values,
    Array.from(capped.scaledScores.data),
    1e-5,
    "soft-capped scaled scores",
  );
  assert.ok(
    scaled.values.every((v) => Math.abs(v) <= 2),
    "no capped score exceeds the cap",
  );
  assert.match(await page.textContent('[data-testid="caption"]'), /soft-capped/);
  await shot("seed001-softcap-step4");
  await urlHas("cap=2");
  await page.locator('[data-testid="softcap"]').fill("0");
  await page.waitForFunction(() => window.__attnkit.state().softcap === 0);
  assert.deepEqual(problems, []);
});

test("head view: hidden heads live in the URL", async () => {
  await page.goto(`${server.url}?p=flies&e=features&w=designed&h=2&kvh=2&v=headview`);
  await ready();
  assert.equal(await page.getAttribute('[data-testid="hv-lines"]', "data-heads"), "0 1");
  await page.click('[data-testid="head-chip-1"]');
  await page.waitForFunction(
    () => document.querySelector('[data-testid="hv-lines"]')?.getAttribute("data-heads") === "0",
  );
  await urlHas("hh=1");
  const p2 = await context.newPage();
  watchAll(p2);
  await p2.goto(page.url());
  await ready(p2);
  assert.equal(await p2.getAttribute('[data-testid="head-chip-1"]', "aria-pressed"), "false");
  assert.equal(await p2.getAttribute('[data-testid="hv-lines"]', "data-heads"), "0");
  await shot("flies-headview-hidden1", p2);
  await p2.close();
  assert.deepEqual(problems, []);
});

test("batch: both sentences in one batched multiHeadAttention call, the shorter padded (keyLengths)", async () => {
  await page.goto(server.url);
  await ready();
  await page.selectOption('[data-testid="preset"]', "flies");
  await ready();
  await page.fill('[data-testid="text2"]', "fruit flies");
  await page.waitForFunction(() => window.__attnkit.state().text2 === "fruit flies");
  await gotoStep(8);
  const check = await page.textContent('[data-testid="mha-check"]');
  assert.match(check, /✓/);
  assert.match(check, /batched call/);
  assert.match(check, /keyLengths \[5, 2\]/);
  const pad = await page.evaluate(() => window.__attnkit.matrix("padmask", 1));
  assert.deepEqual(pad.values, [1, 1, 0, 0, 0]);
  await shot("flies-batch-padded-step8", page, true);
  await gotoStep(5);
  const M = await page.evaluate(() => window.__attnkit.matrix("M", 1));
  for (let i = 0; i < 5; i++)
    for (let j = 0; j < 5; j++)
      assert.equal(
        M.values[i * 5 + j],
        j < 2 ? 0 : -Infinity,
        `M[${i}, ${j}] of the padded sentence`,
      );
  await shot("flies-batch-padded-step5");
  assert.deepEqual(problems, []);
});

test("narrow screen (420 px): the scene shows first; the settings are a drawer", async () => {
  const narrow = await browser.newContext({
    viewport: { width: 420, height: 900 },
    reducedMotion: "reduce",
  });
  const p = await narrow.newPage();
  watchAll(p);
  await p.goto(`${server.url}?p=train&st=6`);
  await ready(p);
  const stage = await p.locator('[data-testid="stage"]').boundingBox();
  assert.ok(stage && stage.y < 700, `the scene starts within the first screen (y = ${stage?.y})`);
  assert.equal(await p.isVisible('[data-testid="preset"]'), false, "settings closed at first");
  await shot("narrow-420-step6", p);
  await p.click('[data-testid="controls-toggle"]');
  await p.waitForFunction(drawerOpen);
  assert.equal(await p.isVisible('[data-testid="preset"]'), true, "settings open");
  await shot("narrow-420-drawer", p);
  await p.click('[data-testid="controls-toggle"]');
  await p.waitForFunction(() => !document.body.classList.contains("controls-open"));
  await narrow.close();
  assert.deepEqual(problems, []);
});

test("step 8 at 8 heads fits 1280x800: no sideways scroll, no overlapping titles, a short sentence whole; narrow screens scroll the stage only", async () => {
  const fit = (p) =>
    p.evaluate(() => {
      const stage = document.querySelector('[data-testid="stage"]');
      const svg = stage.querySelector("svg").getBoundingClientRect();
      const titles = [
        ...document.querySelectorAll(
          ':is([data-testid^="matrix-Qh-"], [data-testid^="matrix-headmap-"]) :is(.m-title, .m-shape)',
        ),
      ].map((t) => ({ text: t.textContent, b: t.getBoundingClientRect() }));
      const overlaps = [];
      for (let i = 0; i < titles.length; i++) {
        for (let j = i + 1; j < titles.length; j++) {
          const [a, b] = [titles[i].b, titles[j].b];
          if (
            a.left < b.right - 1 &&
            b.left < a.right - 1 &&
            a.top < b.bottom - 1 &&
            b.top < a.bottom - 1
          )
            overlaps.push(`${titles[i].text} / ${titles[j].text}`);
        }
      }
      return {
        scrollW: stage.scrollWidth,
        clientW: stage.clientWidth,
        docW: document.documentElement.scrollWidth,
        bottom: svg.bottom,
        titles: titles.length,
        overlaps,
      };
    });
  for (const [name, query] of [
    ["train-8heads", "p=train&w=random&h=8&kvh=8"],
    ["train-16heads-4kv", "p=train&w=random&h=16&kvh=4"],
    ["t64-8heads", String(BIG_LAYER)],
  ]) {
    await page.goto(`${server.url}?${query}&st=8`);
    await ready();
    const r = await fit(page);
    await shot(`${name}-step8`);
    assert.ok(
      r.scrollW <= r.clientW,
      `${name}: the scene fits the stage's width (${r.scrollW} > ${r.clientW})`,
    );
    assert.ok(r.docW <= 1280, `${name}: no sideways scroll of the page (${r.docW})`);
    assert.ok(r.titles >= 16, `${name}: slice and map titles found`);
    assert.deepEqual(r.overlaps, [], `${name}: titles overlap`);
    if (name === "train-8heads")
      assert.ok(
        r.bottom <= 800,
        `${name}: the whole scene within the 800 px viewport (bottom at ${r.bottom})`,
      );
  }
  const narrow = await browser.newContext({
    viewport: { width: 420, height: 900 },
    reducedMotion: "reduce",
  });
  const p = await narrow.newPage();
  watchAll(p);
  await p.goto(`${server.url}?p=train&w=random&h=8&kvh=8&st=8`);
  await ready(p);
  const r = await fit(p);
  await shot("narrow-420-8heads-step8", p);
  assert.ok(r.docW <= 420, `narrow: the page does not scroll sideways, the stage does (${r.docW})`);
  assert.deepEqual(r.overlaps, [], "narrow: titles overlap");
  await narrow.close();
  assert.deepEqual(problems, []);
});

// Motion on: the entry animations of steps 2, 3 and 8 (SVG cells, outlines, moving slices) and of a
// canvas matrix, checked mid-way (something is still moving or hidden) and at the end (the same
// numbers and the same picture as the reduced-motion page, which draws the end state at once).
const MOTION_URL = "p=train&w=random&h=4&kvh=4&sp=2";

/** Waits for the entry animation of step n to start; returns it (page clock). */
async function animationOf(p, n) {
  await p.waitForFunction(
    (n) => {
      const a = window.__attnkit.animation();
      return a.view === "steps" && a.step === n && a.durationMs > 0;
    },
    n,
    { timeout: 5000 },
  );
  return p.evaluate(() => window.__attnkit.animation());
}

/** Waits until the page clock reaches t (ms), then one more frame. */
async function until(p, t) {
  await p.waitForFunction((t) => performance.now() >= t, t, { timeout: 30000 });
  await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
}

/**
 * Run in the page: waits for the first animation frame at or after page-clock time t, and
 * reads in it what the mid-way checks need: the opacity of the cells of Q and of the
 * scores, of the column outline, of the last attention map and of the output, and the
 * transforms of the slices Q_h.
 */
function midwayReads(t) {
  // NaN for an element not there: every check on it then fails.
  const opacity = (el) => (el ? Number(el.getAttribute("opacity") ?? 1) : NaN);
  const read = () => ({
    cells: Object.fromEntries(
      ["Q", "scores"].map((id) => [
        id,
        [...document.querySelectorAll(`[data-testid="matrix-${id}"] g.c`)].map(opacity),
      ]),
    ),
    colOutline: opacity(document.querySelector('[data-testid="item-0"] rect.hl-col')),
    transforms: [0, 1, 2, 3].map((h) =>
      document.querySelector(`[data-testid="matrix-Qh-${h}"]`)?.getAttribute("transform"),
    ),
    headmap3: opacity(document.querySelector('[data-testid="matrix-headmap-3"]')),
    out: opacity(document.querySelector('[data-testid="matrix-out"]')),
    at: performance.now(),
  });
  return new Promise((resolve) => {
    const tick = () => (performance.now() >= t ? resolve(read()) : requestAnimationFrame(tick));
    requestAnimationFrame(tick);
  });
}

/**
 * Starts step n's animation on page p and reads it 0.3 of the way through (midwayReads). A
 * read whose frame came after 0.45 of the way (a busy machine held the page's frames) says
 * nothing about the middle: the step is left and started again, up to 4 times.
 */
async function midwayOf(p, n) {
  for (let attempt = 1; ; attempt++) {
    await p.click(`[data-testid="step-${n}"]`);
    const a = await animationOf(p, n);
    const r = await p.evaluate(midwayReads, a.startedAt + 0.3 * a.durationMs);
    r.fraction = (r.at - a.startedAt) / a.durationMs;
    if (r.fraction <= 0.45 || attempt === 4) return { a, r };
    await p.click(`[data-testid="step-${n === 1 ? 2 : n - 1}"]`);
    await p.waitForFunction((n) => window.__attnkit.animation().step !== n, n);
  }
}

/** Opacity of every SVG cell of a matrix. */
const cellOpacities = (p, id) =>
  p.$$eval(`[data-testid="matrix-${id}"] g.c`, (gs) =>
    gs.map((g) => Number(g.getAttribute("opacity") ?? 1)),
  );

/** A screenshot of the scene's <svg>. */
async function sceneShot(p) {
  return p.locator('svg[data-testid="scene-svg"]').screenshot();
}

/**
 * Two PNGs compared pixel by pixel (decoded by the browser): their sizes, how many
 * pixels differ at all and how many by more than 48 in a channel.
 */
async function pixelDiff(a, b) {
  return page.evaluate(
    async ([a, b]) => {
      const load = (s) =>
        new Promise((resolve, reject) => {
          const i = new Image();
          i.onload = () => resolve(i);
          i.onerror = reject;
          i.src = `data:image/png;base64,${s}`;
        });
      const pixels = (i) => {
        const c = document.createElement("canvas");
        [c.width, c.height] = [i.width, i.height];
        const x = c.getContext("2d");
        x.drawImage(i, 0, 0);
        return x.getImageData(0, 0, i.width, i.height).data;
      };
      const [ia, ib] = await Promise.all([load(a), load(b)]);
      const size = [
        [ia.width, ia.height],
        [ib.width, ib.height],
      ];
      if (ia.width !== ib.width || ia.height !== ib.height)
        return { size, differ: Infinity, strong: Infinity };
      const [da, db] = [pixels(ia), pixels(ib)];
      let differ = 0,
        strong = 0;
      for (let k = 0; k < da.length; k += 4) {
        const d = Math.max(
          Math.abs(da[k] - db[k]),
          Math.abs(da[k + 1] - db[k + 1]),
          Math.abs(da[k + 2] - db[k + 2]),
        );
        if (d > 0) differ++;
        if (d > 48) strong++;
      }
      return { size, differ, strong };
    },
    [a.toString("base64"), b.toString("base64")],
  );
}

test("animations with motion: steps 2, 3 and 8 mid-way and at the end, equal to the reduced-motion page; play runs to step 8", async () => {
  const moving = await browser.newContext({
    viewport: { width: 1280, height: 800 },
    reducedMotion: "no-preference",
  });
  await moving.addInitScript(readCanvasScript);
  const p = await moving.newPage();
  watchAll(p);
  await p.goto(`${server.url}?${MOTION_URL}&st=1`);
  await ready(p);
  assert.equal(
    await p.evaluate(() => matchMedia("(prefers-reduced-motion: reduce)").matches),
    false,
    "motion is on",
  );
  // The same state with reduced motion: each step drawn at once in its end state.
  await page.goto(`${server.url}?${MOTION_URL}&st=1`);
  await ready();
  // The mid-way checks read the page within one animation frame (midwayReads): reads made one
  // by one could land far later in the animation on a busy machine.
  const mid = {
    // Step 2: x_i times W^Q fills q_i cell by cell; a column outline walks over W^Q.
    2: async (r) => {
      const op = r.cells.Q;
      const shown = op.filter((o) => o >= 0.99).length;
      assert.ok(
        shown > 0 && shown < op.length,
        `step 2 mid-way: ${shown} of ${op.length} cells of Q shown`,
      );
      assert.ok(r.colOutline > 0, "step 2 mid-way: the column outline over W^Q is visible");
    },
    // Step 3: q_i · k_j fills the query's row of scores; a column outline walks over K^T.
    3: async (r) => {
      const op = r.cells.scores;
      const shown = op.filter((o) => o >= 0.99).length;
      assert.ok(
        shown > 0 && shown < op.length,
        `step 3 mid-way: ${shown} of ${op.length} scores shown`,
      );
      assert.ok(r.colOutline > 0, "step 3 mid-way: the column outline over Kᵀ is visible");
    },
    // Step 8: the slices Q_h slide from their columns of Q; the maps and concat × W^O come later.
    8: async (r) => {
      const moved = [];
      for (let h = 1; h < 4; h++) {
        const sel = `[data-testid="matrix-Qh-${h}"]`;
        moved.push(r.transforms[h] !== (await page.getAttribute(sel, "transform")));
      }
      assert.ok(moved.some(Boolean), "step 8 mid-way: a slice Q_h is still on its way");
      assert.ok(
        r.headmap3 < 0.01,
        `step 8 mid-way: the last attention map is not shown yet (opacity ${r.headmap3} at ${r.fraction.toFixed(2)})`,
      );
      assert.ok(r.out < 0.01, `step 8 mid-way: the output is not shown yet (opacity ${r.out})`);
    },
  };
  const ids = {
    2: ["Q", "WQ", "X2"],
    3: ["Q3", "KT", "scores"],
    8: ["Qbig", "Qh-0", "headmap-0", "headmap-3", "concat", "out"],
  };
  for (const n of [2, 3, 8]) {
    await gotoStep(n);
    const { a, r } = await midwayOf(p, n);
    assert.ok(r.fraction <= 0.45, `step ${n}: a frame mid-way (read at ${r.fraction.toFixed(2)})`);
    await mid[n](r);
    await shot(`motion-step${n}-mid`, p);
    await until(p, a.startedAt + a.durationMs + 150);
    await shot(`motion-step${n}-end`, p);
    for (const id of ids[n]) {
      const [m, r] = [await matrix(id, p), await matrix(id)];
      assert.deepEqual(
        m.values,
        r.values,
        `step ${n}: ${id} after the animation = the reduced-motion numbers`,
      );
      assert.deepEqual(m.texts, r.texts, `step ${n}: ${id} cell texts`);
    }
    if (n !== 8)
      assert.ok(
        (await cellOpacities(p, ids[n][2])).every((o) => o === 1),
        `step ${n}: every cell shown at the end`,
      );
    // The same picture, but for a few anti-aliased text pixels (an element left mid-way, an
    // outline left visible or a matrix not shown would differ in hundreds).
    const [moved, still] = [await sceneShot(p), await sceneShot(page)];
    const diff = await pixelDiff(moved, still);
    if (diff.differ > 0) {
      writeFileSync(path.join(shots, `motion-step${n}-end-scene.png`), moved);
      writeFileSync(path.join(shots, `reduced-step${n}-scene.png`), still);
    }
    assert.ok(
      diff.differ <= 40 && diff.strong <= 10,
      `step ${n}: the end of the animation looks like the reduced-motion page: ${JSON.stringify(diff)} (motion-step${n}-end-scene.png, reduced-step${n}-scene.png)`,
    );
  }

  // A canvas matrix (T = 64): the query's row of scores is revealed first, the rest later.
  await p.goto(`${server.url}?${BIG_LAYER}&sp=4&st=2`);
  await ready(p);
  await p.click('[data-testid="step-3"]');
  const a = await animationOf(p, 3);
  await until(p, a.startedAt + 0.3 * a.durationMs);
  const probe = await p.evaluate(() => {
    const S = window.__attnkit.matrix("scores");
    const q = window.__attnkit.state().query;
    const { width, px } = window.__readCanvas('[data-testid="canvas-scores"]');
    const cell = width / S.cols;
    const at = (r, c) => px(Math.floor((c + 0.5) * cell), Math.floor((r + 0.5) * cell));
    // The strongest of the query's first 8 scores (drawn with a clearly non-white colour).
    let best = 0;
    for (let c = 1; c < 8; c++)
      if (Math.abs(S.values[q * S.cols + c]) > Math.abs(S.values[q * S.cols + best])) best = c;
    return { q, row: at(q, best), other: at(q === 40 ? 41 : 40, 40) };
  });
  await shot("motion-t64-step3-mid", p);
  assert.notDeepEqual(
    probe.row,
    [255, 255, 255],
    "T = 64 step 3 mid-way: the query's row is being revealed",
  );
  assert.deepEqual(
    probe.other,
    [255, 255, 255],
    "T = 64 step 3 mid-way: other rows are still hidden (white)",
  );
  await until(p, a.startedAt + a.durationMs + 150);
  await page.goto(`${server.url}?${BIG_LAYER}&sp=4&st=3`);
  await ready();
  const pixels = (pg) =>
    pg.evaluate(() => window.__readCanvas('[data-testid="canvas-scores"]').hash);
  assert.equal(
    await pixels(p),
    await pixels(page),
    "T = 64 step 3: the canvas at the end = the reduced-motion canvas",
  );

  // Play from step 1 at 4x: every step animates in turn and the player stops on step 8.
  await p.goto(`${server.url}?${MOTION_URL}&sp=4&st=1`);
  await ready(p);
  const seen = [];
  await p.click('[data-testid="play"]');
  for (let n = 1; n <= 8; n++) seen.push((await animationOf(p, n)).step);
  await p.waitForFunction(() => !window.__attnkit.playing(), null, { timeout: 30000 });
  await shot("motion-play-end", p);
  assert.deepEqual(seen, [1, 2, 3, 4, 5, 6, 7, 8]);
  assert.equal(await p.getAttribute('svg[data-testid="scene-svg"]', "data-step"), "8");
  assert.equal(await p.getAttribute('[data-testid="play"]', "aria-label"), "play");
  await moving.close();
  assert.deepEqual(problems, []);
});

test("T = 64: canvas matrices expose the numbers drawn, and they are the core's", async () => {
  await page.goto(`${server.url}?${BIG_LAYER}&st=3`);
  await ready();
  const Q = await matrix("Q3");
  const KTm = await matrix("KT");
  const S = await matrix("scores");
  for (const m of [Q, KTm, S]) assert.equal(m.render, "canvas");
  assertClose(
    S.values,
    Array.from(attn.matmul(asMatrix(Q), asMatrix(KTm)).data),
    1e-3,
    "scores = Q K^T",
  );
  await gotoStep(6);
  const masked = await matrix("masked6");
  const W = await matrix("weights");
  assertClose(
    W.values,
    Array.from(attn.softmax(asMatrix(masked)).data),
    1e-6,
    "weights = softmax(masked)",
  );
  await gotoStep(7);
  const W7 = await matrix("weights7");
  const V7 = await matrix("V7");
  const O = await matrix("output");
  assertClose(
    O.values,
    Array.from(attn.matmul(asMatrix(W7), asMatrix(V7)).data),
    1e-4,
    "output = weights V",
  );
  // Hovering a canvas cell explains it, with its value.
  const box = await page.locator('[data-testid="canvas-output"]').boundingBox();
  const r = 10,
    c = 3;
  await page.mouse.move(
    box.x + ((c + 0.5) * box.width) / O.cols,
    box.y + ((r + 0.5) * box.height) / O.rows,
  );
  const tip = await page.textContent('[data-testid="tooltip"]');
  const v = O.values[r * O.cols + c].toFixed(4).replace("-", "−");
  assert.ok(
    tip.includes(`[${c}]`) && tip.includes(v),
    `tooltip "${tip}" shows output[${r}, ${c}] = ${v}`,
  );
  await page.mouse.move(0, 0);
  // M on a canvas: a 0 cell is white, a −∞ cell hatched (white once drew as the hatch).
  await page.selectOption('[data-testid="mask"]', "causal");
  await gotoStep(5);
  const M = await matrix("M");
  assert.equal(M.render, "canvas");
  const px = await page.evaluate(() => {
    const { width, px } = window.__readCanvas('[data-testid="canvas-M"]');
    const cell = width / 64;
    const at = (r, c) => px(Math.floor((c + 0.5) * cell), Math.floor((r + 0.5) * cell));
    return { keep: at(40, 3), drop: at(3, 40) };
  });
  assert.deepEqual(px.keep, [255, 255, 255], "M[40, 3] = 0: white");
  assert.ok(
    [
      [228, 228, 228],
      [154, 154, 154],
    ].some((h) => h.every((v, k) => v === px.drop[k])),
    `M[3, 40] = −∞: hatched, got rgb(${px.drop})`,
  );
  assert.deepEqual(problems, []);
});
