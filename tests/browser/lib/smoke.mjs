// The cross-browser suites (firefox.test.mjs, webkit.test.mjs): a browser behind
// a small driver interface with the page served, and the smoke steps every
// browser runs against it. Every page read goes through `evaluate`
// (a function run in the page), so the steps are the same over WebDriver BiDi
// and classic WebDriver.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { createAttnkit } from "attnkit";
import {
  assertClose,
  assertPhoneFit,
  assertUpperTriangleZero,
  checkSeed001,
  decodePng,
} from "./assert.mjs";
import { READY, stepShown, viewShown } from "./page.mjs";
import { dist, requireBuiltPage, shots } from "./paths.mjs";
import {
  PHONE_PAGES,
  PRESETS,
  VIEWS,
  canvasSamples,
  countAll,
  drawerOpen,
  exists,
  outsideRequests,
  phoneFit,
  readMatrix,
  readText,
  setValue,
} from "./reads.mjs";
import { serve } from "./server.mjs";
import { CROSS_BROWSER_WALK_STEPS, stateWalk } from "./walk.mjs";
import { poll } from "./wait.mjs";

/**
 * A browser for the suite registered in the current scope (the file, or a
 * describe block), as node:test hooks: before them the page
 * served (`serveDist(dir)`, default server.mjs's serve) and the browser started;
 * after them both closed. `open(serverUrl)` starts the browser and resolves to a
 * driver:
 *   { label (browser and version), goto(url), evaluate(fn, arg) (fn runs in
 *     the page), click(selector), select(selector, value),
 *     viewport(width, height) (as near as the browser allows),
 *     screenshot(file), problems(): Promise<string[]>, close(),
 *     and optionally recover() }
 * recover(), called when a test throws: if the browser itself died (its
 * process exited or its WebDriver session is gone) it starts a new one and
 * resolves to a report of what died and what it printed; if the browser is
 * alive it resolves to null and the error stands. A test whose browser died
 * runs once more on a freshly loaded page, and the report is printed: a page
 * that kills the browser again fails.
 * Unless `firstPage` is false, the browser then opens the page and reports its timing.
 * Resolves to the suite `s`: s.d the driver, s.server, s.attn (the package) and
 * the driver's actions (driverActions).
 */
export function useDriver(name, open, { serveDist = serve, firstPage = true } = {}) {
  const s = { name };
  Object.assign(s, driverActions(s));
  before(async () => {
    requireBuiltPage();
    s.attn = await createAttnkit();
    s.server = await serveDist(dist);
    const t0 = Date.now();
    s.d = await open(s.server.url);
    if (!firstPage) return;
    const t1 = Date.now();
    await s.d.goto(s.server.url);
    await s.ready();
    const timing = await s.d.evaluate(() => window.__attnkit.timing);
    console.log(
      `${s.d.label}: browser start ${t1 - t0} ms; first render ${timing.firstRenderMs.toFixed(0)} ms after navigation start (wasm load ${timing.loadMs.toFixed(0)} ms; wall ${Date.now() - t1} ms)`,
    );
  });
  after(async () => {
    await s.d?.close();
    await s.server?.close();
  });
  return s;
}

/** The page actions of the smoke steps, on the suite's driver `s.d`. */
function driverActions(s) {
  const text = (sel) => s.d.evaluate(readText, sel);
  const waitFor = (sel, what = sel) => poll(() => s.d.evaluate(exists, sel), what, 5000);
  const ready = () => poll(() => s.d.evaluate(exists, READY), `the page to be ready (${READY})`);
  return {
    ready,
    text,
    waitFor,
    count: (sel) => s.d.evaluate(countAll, sel),
    shot: (file) => s.d.screenshot(path.join(shots, `${s.name}-${file}.png`)),
    async matrix(id) {
      const m = await poll(() => s.d.evaluate(readMatrix, id), `matrix ${id}`, 5000);
      m.values = m.values.map(Number);
      assert.equal(m.values.length, m.rows * m.cols, `matrix ${id}: every value readable`);
      return m;
    },
    async gotoStep(n) {
      await s.d.click(`[data-testid="step-${n}"]`);
      await waitFor(stepShown(n), `step ${n}`);
    },
    async view(v) {
      await s.d.click(`[data-testid="view-${v}"]`);
      await waitFor(viewShown(v), `view ${v}`);
    },
    /** Selects `value` in the select `id` and waits until the state's `key` holds it. */
    async setControl(id, key, value) {
      await s.d.select(`[data-testid="${id}"]`, value);
      await poll(
        () => s.d.evaluate(([k, v]) => window.__attnkit.state()[k] === v, [key, value]),
        `${key} ${value}`,
        5000,
      );
    },
    async noProblems() {
      const found = [
        ...(await s.d.problems()),
        ...(await s.d.evaluate(outsideRequests, s.server.url)).map(
          (u) => `request outside the page: ${u}`,
        ),
      ];
      assert.deepEqual(found, []);
    },
    /** node:test's test(), with one rerun on a fresh page when the browser process died under it (see useDriver). */
    test(title, ...args) {
      const fn = args.pop(),
        options = args[0] ?? {};
      test(title, options, async (t) => {
        try {
          return await fn(t);
        } catch (e) {
          const report = await s.d?.recover?.();
          if (!report) throw e;
          console.log(
            `${title}: the browser died (${e.name}: ${e.message || "no message"}); running the test again in a new one.\n${report}`,
          );
          await s.d.goto(s.server.url);
          await ready();
          return await fn(t);
        }
      });
    },
  };
}

/** Screenshot `file`; every canvas matrix must show its own pixels where the page lays it out. */
async function canvasesPainted(s, file) {
  // Reveal animations paint on animation frames after the page says it is ready:
  // compare only once the canvases hold still across the screenshot.
  let samples = await s.d.evaluate(canvasSamples),
    settled = false;
  for (let tries = 0; tries < 50 && !settled; tries++) {
    await new Promise((r) => setTimeout(r, 100));
    const before = JSON.stringify(samples);
    samples = await s.d.evaluate(canvasSamples);
    if (JSON.stringify(samples) !== before) continue;
    await s.shot(file);
    samples = await s.d.evaluate(canvasSamples);
    settled = JSON.stringify(samples) === before;
  }
  assert.ok(settled, `${file}: the canvases never stopped changing`);
  const { scale, canvases } = samples;
  assert.ok(canvases.length > 0, `${file}: canvas matrices on screen`);
  const png = decodePng(readFileSync(path.join(shots, `${s.name}-${file}.png`)));
  const wrong = [];
  for (const c of canvases) {
    const bad = c.pts.filter(([x, y, ...rgb]) =>
      png
        .pixel(Math.round(x * scale), Math.round(y * scale))
        .some((v, k) => Math.abs(v - rgb[k]) > 6),
    );
    // A few points may sit under an outline drawn over the cells (the selected row).
    if (c.pts.length < 5 || bad.length > 0.2 * c.pts.length) {
      const eg = bad
        .slice(0, 2)
        .map(
          ([x, y, ...rgb]) =>
            `(${x}, ${y}) canvas rgb(${rgb}), screen rgb(${png.pixel(Math.round(x * scale), Math.round(y * scale))})`,
        );
      wrong.push(
        `canvas ${c.id} laid out at (${c.x}, ${c.y}): ${bad.length} of ${c.pts.length} sampled points differ on screen, e.g. ${eg.join(", ")}`,
      );
    }
  }
  assert.deepEqual(
    wrong,
    [],
    `${s.name}-${file}.png: canvas matrices not painted where they are laid out`,
  );
}

/**
 * Registers the smoke steps for the suite `s` (useDriver). `todo` maps a test's
 * key ("canvasPaint", "stateWalk") to the reason it is known to fail in this
 * browser: it then runs and reports, but as a TODO that fails nothing.
 */
export function smokeTests(s, { todo = {} } = {}) {
  renderSteps(s);
  numberSteps(s);
  drawingSteps(s, todo);
  screenSteps(s);
}

/** The page loads clean; every step of every preset and every other view renders. */
function renderSteps(s) {
  const { name } = s;
  s.test(
    `${name}: the page loads with no console errors or warnings and no outside requests`,
    async () => {
      assert.match(await s.text('[data-testid="status"]'), /attnkit/);
      const simd = await s.d.evaluate(() => window.__attnkit.simd);
      console.log(
        `${s.d.label}: attnkit target ${await s.d.evaluate(() => window.__attnkit.target)}, simd ${simd}`,
      );
      await s.noProblems();
    },
  );

  s.test(
    `${name}: every step of every preset and every other view renders (screenshots saved)`,
    async () => {
      for (const preset of PRESETS) {
        await s.setControl("preset", "preset", preset);
        await s.ready();
        for (let n = 1; n <= 8; n++) {
          await s.gotoStep(n);
          const title = await s.text('[data-testid="scene-title"]');
          assert.ok(title.startsWith(`${n}.`), `${preset} step ${n}: title ${title}`);
          assert.ok(
            (await s.count(
              '[data-testid="scene-svg"] rect.cell, [data-testid="scene-svg"] canvas',
            )) > 0,
            `${preset} step ${n}: no cells drawn`,
          );
          await s.shot(`${preset}-step${n}`);
        }
      }
      for (const v of VIEWS) {
        await s.view(v);
        await s.shot(`fox-${v}`);
      }
      await s.view("steps");
      await s.noProblems();
    },
  );
}

/** Seed 001's numbers, the causal zeros, four heads and decoding against the core. */
function numberSteps(s) {
  const { name } = s;
  s.test(
    `${name}: seed 001's numbers on screen are the core's, and q_0 is the printed row`,
    async () => {
      await s.setControl("preset", "preset", "seed001");
      await s.ready();
      await checkSeed001({
        attn: s.attn,
        gotoStep: s.gotoStep,
        matrix: s.matrix,
        text: s.text,
        atStep6: () => s.shot("seed001-numbers-step6"),
      });
      await s.noProblems();
    },
  );

  s.test(`${name}: the causal mask puts 0 in every upper-triangle weight`, async () => {
    await s.setControl("preset", "preset", "train");
    await s.ready();
    await s.setControl("mask", "mask", "causal");
    await s.gotoStep(6);
    const upper = assertUpperTriangleZero(await s.matrix("weights"));
    await s.shot("train-causal-step6");
    await s.gotoStep(5);
    const M = await s.matrix("M");
    assert.equal(M.values.filter((v) => v === -Infinity).length, upper);
    await s.noProblems();
  });

  s.test(`${name}: four heads give four attention maps`, async () => {
    await s.d.select('[data-testid="weights"]', "random");
    await s.d.evaluate(setValue, { sel: '[data-testid="heads"]', value: "4" });
    await poll(() => s.d.evaluate(() => window.__attnkit.state().heads === 4), "heads = 4", 5000);
    await s.gotoStep(8);
    assert.equal(await s.count('[data-testid^="matrix-headmap-"]'), 4);
    assert.match(await s.text('[data-testid="mha-check"]'), /✓/);
    await s.shot("train-4heads-step8");
    await s.view("grid");
    assert.equal(await s.count('[data-testid^="matrix-grid-"]'), 4);
    await s.shot("train-4heads-grid");
    await s.noProblems();
  });

  s.test(
    `${name}: decoding with the KV cache runs to the end and matches the full causal rows`,
    async () => {
      await s.view("decoding");
      await s.d.click('[data-testid="decode-step"]');
      await poll(
        async () => /^1 \//.test(await s.text('[data-testid="decode-pos"]')),
        "decode position 1",
        5000,
      );
      await s.d.click('[data-testid="decode-end"]');
      const [, done, total] = await poll(
        async () => {
          const m = (await s.text('[data-testid="decode-pos"]')).match(/^(\d+) \/ (\d+)/);
          return m && m[1] === m[2] && m;
        },
        "decoding to reach the end",
        5000,
      );
      assert.equal(done, total);
      assert.match(await s.text('[data-testid="decode-check"]'), /✓/);
      assertClose(
        (await s.matrix("decoded")).values,
        (await s.matrix("fullCausal")).values,
        1e-5,
        "decoded vs full causal",
      );
      await s.shot("decoding-end");
      await s.noProblems();
    },
  );
}

/** Canvas matrices painted where they are laid out; the seeded state walk. */
function drawingSteps(s, todo) {
  const { name } = s;
  s.test(
    `${name}: canvas matrices are painted where the page lays them out (4 heads W^O; T = 64)`,
    { todo: todo.canvasPaint },
    async () => {
      await s.d.viewport(1280, 800);
      await s.d.goto(`${s.server.url}?p=train&w=random&h=4&kvh=4&dk=8&dv=8&m=causal&st=8`);
      await s.ready();
      await canvasesPainted(s, "canvas-4heads-step8");
      const words = Array.from(
        { length: 64 },
        (_, i) => ["the", "train", "left", "station", "on", "time", "bank", "check"][i % 8],
      );
      await s.d.goto(
        `${s.server.url}?${new URLSearchParams({ t: words.join(" "), p: "custom", e: "random", dm: "128", w: "random", dk: "16", dv: "16", h: "8", kvh: "8", st: "3" })}`,
      );
      await s.ready();
      await canvasesPainted(s, "canvas-t64-step3");
      await s.noProblems();
    },
  );

  s.test(
    `${name}: state consistency: ${CROSS_BROWSER_WALK_STEPS} seeded random control changes, each page equal to its fresh load`,
    // A guard against a hang only: the walk's time grows with the machine's load.
    { timeout: 600000, todo: todo.stateWalk },
    async () => {
      await s.d.viewport(1280, 800);
      await s.d.goto(s.server.url);
      await s.ready();
      const seed = Number(process.env.WALK_SEED ?? Date.now() % 100000);
      console.log(`${s.d.label}: state walk seed ${seed} (replay: WALK_SEED=${seed})`);
      const r = await stateWalk({
        evaluate: (fn, arg) => s.d.evaluate(fn, arg),
        problems: () => s.d.problems(),
        seed,
        steps: CROSS_BROWSER_WALK_STEPS,
        label: s.d.label,
      });
      console.log(`${s.d.label}: ${r.done} changes (${r.loads} fresh loads) in ${r.ms} ms`);
      assert.ok(
        r.done >= CROSS_BROWSER_WALK_STEPS,
        `only ${r.done} of ${3 * CROSS_BROWSER_WALK_STEPS} actions changed a control`,
      );
    },
  );
}

/** A phone's and a narrow screen's layout. */
function screenSteps(s) {
  const { name } = s;
  s.test(
    `${name}: phone 390 x 844 (or the browser's narrowest window): no part of any step or view lies outside the viewport horizontally`,
    async () => {
      await s.d.viewport(390, 844);
      const width = await s.d.evaluate(() => innerWidth);
      // MiniBrowser's window cannot be narrower than its toolbar (447 px).
      assert.ok(width <= 480, `a phone-sized viewport (${width} px)`);
      for (const q of PHONE_PAGES) {
        await s.d.goto(`${s.server.url}?${q}`);
        await s.ready();
        assertPhoneFit(await s.d.evaluate(phoneFit), `${s.d.label} ${width} px ${q}`);
      }
      await s.shot(`phone-${width}-step8`);
      await s.d.viewport(1280, 800);
      await s.noProblems();
    },
  );

  s.test(
    `${name}: narrow screen (420 px or the browser's narrowest window): the scene shows first, the settings are a drawer`,
    async () => {
      await s.d.viewport(420, 900);
      const width = await s.d.evaluate(() => innerWidth);
      assert.ok(width <= 480, `a narrow viewport (${width} px)`);
      await s.d.goto(`${s.server.url}?p=train&st=6`);
      await s.ready();
      const y = await s.d.evaluate(
        () => document.querySelector('[data-testid="stage"]').getBoundingClientRect().y,
      );
      assert.ok(y < 700, `the scene starts within the first screen (y = ${y})`);
      await s.shot(`narrow-${width}-step6`);
      await s.d.click('[data-testid="controls-toggle"]');
      // The drawer slides in: shoot once it is open and holds still.
      await poll(() => s.d.evaluate(drawerOpen), "the settings drawer to open", 5000);
      await s.shot(`narrow-${width}-drawer`);
      await s.noProblems();
    },
  );
}
