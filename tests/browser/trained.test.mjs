// A trained layer in the step-by-step views (web/src/trained.ts), in Debian's Chromium
// through playwright-core: the page recomputes the layer's attention with its own
// attnkit calls and must agree with the model's weights; the steps, the head view and
// all heads show it with the task's token labels; the controls the trained numbers fix
// are disabled; "Back to the example" and a reload leave trained mode.
//
// The layer comes from the model in the npm package (createAttnkit({ model: true }):
// a 2-layer model trained for a few steps on induction, layer 2 of one sample); one
// test also opens seeded synthetic X and weights holding the separator 0, whose
// attention weights the test computes in float64.
import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { assertPhoneFit } from "./lib/assert.mjs";
import { watch } from "./lib/launch.mjs";
import { usePage } from "./lib/page.mjs";
import { phoneFit } from "./lib/reads.mjs";
import { prng } from "./lib/walk.mjs";

let server, browser, context, page, problems;
/** The TrainedLayer as plain arrays. */
let layer;

const SUB = "₀₁₂₃₄₅₆₇₈₉";
const sub = (i) => [...String(i)].map((d) => SUB[Number(d)]).join("");
const label = (id) => (id === 0 ? "|" : String(id));

/** The package's model build (ATTNKIT_MODEL_DIST: another package folder's attnkit.node.mjs). */
async function loadModelPackage() {
  const dir = process.env.ATTNKIT_MODEL_DIST;
  const mod = dir ? await import(path.resolve(dir, "attnkit.node.mjs")) : await import("attnkit");
  return (mod.createAttnkit ?? mod.default)({ model: true });
}

const plainMatrix = (m) => ({ rows: m.rows, cols: m.cols, data: Array.from(m.data) });

/** Layer 2 of a 2-layer model trained a few steps on induction, on one sample sequence. */
function modelLayer(attn) {
  const task = { kind: "induction", length: 6, vocabSize: 12 };
  const T = attn.taskSeqLen(task);
  const config = { vocabSize: 12, maxSeqLen: T, dModel: 16, numLayers: 2, numHeads: 2, dK: 8 };
  const model = attn.createModel(config, { seed: 3, task });
  const trainer = attn.createTrainer(model, { learningRate: 3e-3 });
  const gen = attn.createTaskGenerator(task, { seed: 1 });
  const steps = 30;
  for (let i = 0; i < steps; i++) trainer.step(gen.next(16));
  const sample = attn.makeBatch(task, { batch: 1, seed: 99 });
  const ins = model.inspect(sample.tokens, sample.targets);
  const params = model.parameters();
  const l = 1;
  const p = params.layers[l];
  const c = model.config;
  const t = {
    task: "induction",
    step: trainer.steps,
    tokens: Array.from(sample.tokens),
    targets: Array.from(sample.targets),
    layer: l,
    numLayers: c.numLayers,
    numHeads: c.numHeads,
    numKvHeads: c.numKvHeads,
    dK: c.dK,
    dModel: c.dModel,
    scaled: c.scaleBySqrtDk,
    X: plainMatrix(ins.layers[l].input),
    W_Q: plainMatrix(p.W_Q),
    W_K: plainMatrix(p.W_K),
    W_V: plainMatrix(p.W_V),
    W_O: plainMatrix(p.W_O),
    weights: {
      shape: Array.from(ins.layers[l].weights.shape),
      data: Array.from(ins.layers[l].weights.data),
    },
  };
  gen.dispose();
  trainer.dispose();
  model.dispose();
  return t;
}

/** X [T, d] times W [d, n] in float64. */
function matmul(X, W) {
  const out = new Float64Array(X.rows * W.cols);
  for (let i = 0; i < X.rows; i++)
    for (let k = 0; k < X.cols; k++)
      for (let j = 0; j < W.cols; j++)
        out[i * W.cols + j] += X.data[i * X.cols + k] * W.data[k * W.cols + j];
  return { rows: X.rows, cols: W.cols, data: out };
}

/** Causal attention weights [h, T, T] of X with W^Q, W^K (grouped K heads), in float64. */
function referenceWeights(t) {
  const T = t.tokens.length;
  const Q = matmul(t.X, t.W_Q),
    K = matmul(t.X, t.W_K);
  const scale = t.scaled ? 1 / Math.sqrt(t.dK) : 1;
  const out = [];
  for (let h = 0; h < t.numHeads; h++) {
    const g = Math.floor(h / (t.numHeads / t.numKvHeads));
    for (let i = 0; i < T; i++) {
      const s = [];
      for (let j = 0; j <= i; j++) {
        let d = 0;
        for (let k = 0; k < t.dK; k++)
          d += Q.data[i * Q.cols + h * t.dK + k] * K.data[j * K.cols + g * t.dK + k];
        s.push(d * scale);
      }
      const m = Math.max(...s);
      const e = s.map((v) => Math.exp(v - m));
      const z = e.reduce((a, b) => a + b, 0);
      for (let j = 0; j < T; j++) out.push(j <= i ? e[j] / z : 0);
    }
  }
  return out;
}

/** Seeded X and weights: an induction-like sequence (a segment, the separator 0, the segment again). */
function syntheticLayer() {
  const rnd = prng(7);
  const normal = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
  const seg = [5, 3, 9, 3, 7];
  const tokens = [...seg, 0, ...seg];
  const T = tokens.length;
  const dModel = 8,
    numHeads = 2,
    numKvHeads = 1,
    dK = 4;
  const mat = (rows, cols, s) => ({
    rows,
    cols,
    data: Array.from({ length: rows * cols }, () => normal() * s),
  });
  const t = {
    task: "induction",
    step: 250,
    tokens,
    targets: tokens.map((v, i) => (i > seg.length ? v : -1)),
    layer: 1,
    numLayers: 2,
    numHeads,
    numKvHeads,
    dK,
    dModel,
    scaled: true,
    X: mat(T, dModel, 1),
    W_Q: mat(dModel, numHeads * dK, 0.8),
    W_K: mat(dModel, numKvHeads * dK, 0.8),
    W_V: mat(dModel, numKvHeads * dK, 0.5),
    W_O: mat(numHeads * dK, dModel, 0.5),
  };
  // Float32 numbers, as the page holds them.
  for (const k of ["X", "W_Q", "W_K", "W_V", "W_O"])
    t[k].data = Array.from(Float32Array.from(t[k].data));
  t.weights = { shape: [numHeads, T, T], data: referenceWeights(t) };
  return t;
}

async function openLayer(t = layer) {
  await page.evaluate((x) => window.__attnkit.trained.open(x), t);
  await page.waitForFunction(() => window.__attnkit.trained.shown());
  await page.waitForSelector('svg[data-testid="scene-svg"][data-view="steps"][data-step="1"]');
}

function assertNear(actual, expected, tol, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < expected.length; i++)
    worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  assert.ok(worst <= tol, `${what}: largest difference ${worst} > ${tol}`);
}

const { open, ready, state, shot, gotoStep } = usePage(
  (s) => ({ server, browser, context, page, problems } = s),
  {
    setUp: async () => {
      layer = modelLayer(await loadModelPackage());
    },
    onPage: () => open(),
    prefix: "trained-",
  },
);

test("the page's attention weights of every head equal the trained layer's; the banner says what is shown", async (t) => {
  t.diagnostic(`T = ${layer.tokens.length}, tokens ${layer.tokens.join(" ")}`);
  await openLayer();
  const T = layer.tokens.length;
  const weights = await page.evaluate(() => window.__attnkit.trained.headWeights());
  assert.equal(weights.length, layer.numHeads, "one trace per head");
  for (let h = 0; h < layer.numHeads; h++)
    assertNear(weights[h], layer.weights.data.slice(h * T * T, (h + 1) * T * T), 1e-5, `head ${h}`);
  const banner = await page.textContent('[data-testid="trained-banner"]');
  assert.ok(
    banner.includes(
      `Trained on induction, step ${layer.step}, layer ${layer.layer + 1} of ${layer.numLayers}`,
    ),
    banner,
  );
  assert.match(banner, /separator 0 shows as “\|”/);
  const s = await state();
  assert.equal(s.weights, "trained");
  assert.equal(s.mask, "causal");
  assert.equal(s.scaling, layer.scaled);
  assert.equal(s.heads, layer.numHeads);
  assert.equal(
    await page.isChecked('[data-testid="scaling"]'),
    layer.scaled,
    "the scaling box shows the trained scale",
  );
  for (const id of [
    "text",
    "emb",
    "dModel",
    "weights",
    "preset",
    "mask",
    "scaling",
    "temperature",
    "heads",
  ])
    assert.ok(await page.isDisabled(`[data-testid="${id}"]`), `${id} is disabled in trained mode`);
  const options = await page.$$eval('[data-testid="query"] option', (os) =>
    os.map((o) => o.textContent),
  );
  assert.equal(options.length, T);
  // A repeated token is named with its position, as the matrices name it ("6 ₀").
  const named = (i) => {
    const repeated = layer.tokens.filter((t) => t === layer.tokens[i]).length > 1;
    return `${label(layer.tokens[i])}${repeated ? ` ${sub(i)}` : ""}`;
  };
  const first0 = layer.tokens.indexOf(0);
  assert.equal(options[first0]?.split(": ")[1], first0 >= 0 ? named(first0) : undefined);
  assert.equal(options[0], `0: ${named(0)}`);
  // A key press that would change the mask, and a keyboard edit of a cell, leave the numbers alone.
  await page.keyboard.press("c");
  assert.equal((await state()).mask, "causal", "the c key does not unmask a trained layer");
  // The step 1 X is the given X.
  const X = await page.evaluate(() => window.__attnkit.matrix("X"));
  assertNear(X.values, layer.X.data, 0, "X on screen");
  assert.deepEqual(problems, []);
});

test("opening another layer recomputes: an unscaled one gets scale 1 and its own weights", async () => {
  await openLayer();
  const T = layer.tokens.length;
  const unscaled = { ...layer, scaled: false, step: layer.step + 1 };
  unscaled.weights = { shape: [layer.numHeads, T, T], data: referenceWeights(unscaled) };
  await page.evaluate((x) => window.__attnkit.trained.open(x), unscaled);
  await page.waitForFunction(() => window.__attnkit.state().scaling === false);
  assert.equal(
    await page.isChecked('[data-testid="scaling"]'),
    false,
    "the scaling box shows no scale",
  );
  const weights = await page.evaluate(() => window.__attnkit.trained.headWeights());
  for (let h = 0; h < layer.numHeads; h++)
    assertNear(
      weights[h],
      unscaled.weights.data.slice(h * T * T, (h + 1) * T * T),
      1e-5,
      `unscaled head ${h}`,
    );
  await gotoStep(4);
  assert.match(await page.textContent('[data-testid="caption"]'), /scale = 1\b|scale = 1\.0/);
  assert.match(
    await page.textContent('[data-testid="trained-banner"]'),
    new RegExp(`step ${unscaled.step},.*scores not scaled`),
  );
  // “Back” still returns to the page before the first layer was opened.
  await page.click('[data-testid="trained-back"]');
  await page.waitForFunction(() => window.__attnkit.state().weights === "designed");
  assert.deepEqual(problems, []);
});

test("steps 1 to 8, the head view and all heads render the trained layer with the token labels", async () => {
  await openLayer();
  const s = await state();
  const q = s.query;
  const qLabel = `${label(layer.tokens[q])} ${sub(q)}`;
  for (let n = 1; n <= 8; n++) {
    await gotoStep(n);
    const text = await page.textContent('svg[data-testid="scene-svg"]');
    assert.ok(text.includes(qLabel), `step ${n} shows the query's label “${qLabel}”`);
    if (n === 1 || n === 4 || n === 6) await shot(`step${n}`);
  }
  const T = layer.tokens.length;
  await page.click('[data-testid="view-grid"]');
  await page.waitForSelector('svg[data-testid="scene-svg"][data-view="grid"]');
  for (let h = 0; h < layer.numHeads; h++) {
    const m = await page.evaluate((h) => window.__attnkit.matrix(`grid-${h}`), h);
    assertNear(
      m.values,
      layer.weights.data.slice(h * T * T, (h + 1) * T * T),
      1e-5,
      `all heads: head ${h}`,
    );
  }
  await shot("grid");
  await page.click('[data-testid="view-headview"]');
  await page.waitForSelector('svg[data-testid="scene-svg"][data-view="headview"]');
  const hv = await page.textContent('svg[data-testid="scene-svg"]');
  assert.ok(hv.includes(qLabel), "the head view labels the tokens");
  await shot("headview");
  // Decoding with the KV cache and the saturation experiment on the selected query's trained scores.
  await page.click('[data-testid="view-decoding"]');
  await page.waitForSelector('svg[data-testid="scene-svg"][data-view="decoding"]');
  assert.ok(
    (await page.textContent('svg[data-testid="scene-svg"]')).includes(
      `${label(layer.tokens[0])} ${sub(0)}`,
    ),
    "decoding labels the tokens",
  );
  await page.click('[data-testid="view-saturation"]');
  await page.selectOption('[data-testid="sat-source"]', "query");
  await page.waitForFunction(() => window.__attnkit.state().satSource === "query");
  const sat = await page.evaluate(() => window.__attnkit.saturation());
  assert.equal(sat.z.length, T, "the saturation experiment reads the query's trained scores");
  assert.equal(sat.dK, layer.dK);
  assert.deepEqual(problems, []);
});

test("query, head and step controls update the trained view", async () => {
  await openLayer();
  const T = layer.tokens.length;
  await gotoStep(6);
  const weightsOf = () => page.evaluate(() => window.__attnkit.matrix("weights").values);
  const head0 = await weightsOf();
  assertNear(head0, layer.weights.data.slice(0, T * T), 1e-5, "step 6, head 0");
  const check = await page.textContent('[data-testid="trained-check"]');
  const d = /bit for bit$/.test(check) ? 0 : Number(check.match(/at most (\S+)$/)[1]);
  assert.ok(d <= 1e-5, `step 6 says the model's own weights differ by ${d}`);
  await page.selectOption('[data-testid="head"]', "1");
  await page.waitForFunction(() => window.__attnkit.state().head === 1);
  assertNear(await weightsOf(), layer.weights.data.slice(T * T, 2 * T * T), 1e-5, "step 6, head 1");
  const caption = () => page.textContent('[data-testid="caption"]');
  await gotoStep(7);
  const before = await caption();
  await page.selectOption('[data-testid="query"]', "1");
  await page.waitForFunction(() => window.__attnkit.state().query === 1);
  assert.notEqual(await caption(), before, "step 7's caption follows the query");
  await page.keyboard.press("ArrowLeft");
  await page.waitForSelector('svg[data-testid="scene-svg"][data-step="6"]');
  assert.deepEqual(problems, []);
});

test("“Back to the example” restores the page as it was before", async () => {
  const start = await state();
  await openLayer();
  await gotoStep(3);
  await page.click('[data-testid="trained-back"]');
  await page.waitForFunction(() => !window.__attnkit.trained.shown());
  const s = await state();
  for (const k of [
    "text",
    "weights",
    "emb",
    "mask",
    "scaling",
    "heads",
    "dModel",
    "dK",
    "preset",
    "temperature",
  ])
    assert.deepEqual(s[k], start[k], `${k} restored`);
  assert.equal(s.step, 3, "the step shown is kept");
  assert.ok(await page.isHidden('[data-testid="trained-banner"]'));
  for (const id of ["text", "emb", "weights", "preset", "mask", "scaling"])
    assert.ok(await page.isEnabled(`[data-testid="${id}"]`), `${id} enabled again`);
  assert.equal(
    await page.$('[data-testid="weights"] option[value="trained"]'),
    null,
    "no trained option left",
  );
  const tokens = (await page.$$('[data-testid="query"] option')).length;
  assert.equal(tokens, 7, "the default sentence's 7 tokens");
  assert.deepEqual(problems, []);
});

test("a reload of a trained-mode URL shows the example with a note", async () => {
  await openLayer();
  await gotoStep(6);
  // The reload keeps what the address holds: wait until it holds the step shown.
  await page.waitForFunction(() => {
    const q = new URLSearchParams(location.search);
    return q.get("w") === "trained" && q.get("st") === "6";
  });
  await page.reload();
  await ready();
  assert.ok(await page.isVisible('[data-testid="trained-note"]'), "the note is shown");
  assert.match(await page.textContent('[data-testid="trained-note"]'), /cannot hold them/);
  const s = await state();
  assert.equal(s.weights, "designed", "the example's weights");
  assert.equal(s.text, "the train left the station on time");
  assert.equal(s.step, 6, "the step shown is kept");
  assert.ok(await page.isHidden('[data-testid="trained-banner"]'));
  assert.ok(
    !(await page.evaluate(() => location.search)).includes("w=trained"),
    "the URL no longer says trained",
  );
  await shot("reload-note");
  assert.deepEqual(problems, []);
});

test("phone 390 x 844: every step and view of a trained layer fits the width, the banner too", async () => {
  const phone = await browser.newContext({
    viewport: { width: 390, height: 844 },
    reducedMotion: "reduce",
  });
  const p = await phone.newPage();
  const seen = [];
  watch(p, seen);
  try {
    await p.goto(server.url);
    await ready(p);
    await p.evaluate((x) => window.__attnkit.trained.open(x), layer);
    await p.waitForFunction(() => window.__attnkit.trained.shown());
    const pages = [
      ...Array.from({ length: 8 }, (_, i) => ({ view: "steps", step: i + 1 })),
      ...["headview", "grid", "saturation", "decoding"].map((view) => ({ view })),
    ];
    for (const patch of pages) {
      const what = `trained ${patch.view}${patch.step ? ` step ${patch.step}` : ""}`;
      await p.evaluate((n) => {
        const b = document.querySelector(
          n.step ? `[data-testid="step-${n.step}"]` : `[data-testid="view-${n.view}"]`,
        );
        b.click();
      }, patch);
      await p.waitForSelector(
        `svg[data-testid="scene-svg"][data-view="${patch.view}"]${patch.step ? `[data-step="${patch.step}"]` : ""}`,
      );
      assertPhoneFit(await p.evaluate(phoneFit), what);
      const banner = await p.$eval(
        '[data-testid="trained-banner"]',
        (el) => el.getBoundingClientRect().right,
      );
      assert.ok(banner <= 390.5, `${what}: the banner ends at ${banner} px`);
      if (patch.step === 6) await shot("phone-step6", p);
    }
    assert.deepEqual(seen, []);
  } finally {
    await phone.close();
  }
});

test("a TrainedLayer of inconsistent shapes is refused with the field named; the page stays as it was", async () => {
  const bad = { ...layer, W_Q: { ...layer.W_Q, rows: layer.W_Q.rows + 1 } };
  const err = await page.evaluate((x) => {
    try {
      window.__attnkit.trained.open(x);
      return null;
    } catch (e) {
      return e.message;
    }
  }, bad);
  assert.match(err ?? "", /^openTrained: W_Q: expected \[\d+, \d+\], given \[\d+, \d+\]/);
  assert.equal((await state()).weights, "designed");
  assert.equal(await page.evaluate(() => window.__attnkit.trained.shown()), false);
  assert.deepEqual(problems, []);
});

test("a layer whose tokens hold the separator 0 labels it '|'; its weights equal float64's", async () => {
  const synthetic = syntheticLayer();
  await openLayer(synthetic);
  const T = synthetic.tokens.length;
  const weights = await page.evaluate(() => window.__attnkit.trained.headWeights());
  for (let h = 0; h < synthetic.numHeads; h++)
    assertNear(
      weights[h],
      synthetic.weights.data.slice(h * T * T, (h + 1) * T * T),
      1e-5,
      `head ${h}`,
    );
  const options = await page.$$eval('[data-testid="query"] option', (os) =>
    os.map((o) => o.textContent),
  );
  assert.equal(options[synthetic.tokens.indexOf(0)], `${synthetic.tokens.indexOf(0)}: |`);
  assert.deepEqual(problems, []);
});
