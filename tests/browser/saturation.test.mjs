// The saturation view's gradient (web/src/views/saturation.ts), in Debian's Chromium
// through playwright-core: |dS|, the gradient the backward pass sends to the softmax's
// inputs, for every scale c with and without the division by sqrt(d_k). The page's
// numbers are checked against attnkit's backward called directly here in Node, one c
// at a time, and against dS = P (e_t - P_t) from attnkit's softmax.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createAttnkit } from "attnkit";
import { usePage } from "./lib/page.mjs";

let server, browser, context, page, problems, attn;

const experiment = () => page.evaluate(() => window.__attnkit.saturation());
const readout = () =>
  page.$eval('[data-testid="sat-grad"]', (el) => ({
    c: Number(el.getAttribute("data-c")),
    plain: Number(el.getAttribute("data-plain")),
    scaled: Number(el.getAttribute("data-scaled")),
    text: el.textContent,
  }));

/** Moves the c slider as a person's drag does (input events), and waits for the marker. */
async function slide(c) {
  await page.$eval(
    '[data-testid="sat-slider"]',
    (el, v) => {
      el.value = String(v);
      el.dispatchEvent(new Event("input", { bubbles: true }));
    },
    c,
  );
  await page.waitForSelector(`[data-testid="sat-grad"][data-c="${c}"]`);
}

/** |dS| for one c, from one direct traceBackwardQKV call: Q [1, 1] = c, K = z, V = I, dO = e_t. */
function directNorm(z, t, c, scale) {
  const n = z.length;
  const V = Array.from({ length: n }, (_, i) =>
    Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)),
  );
  const dO = [Array.from({ length: n }, (_, j) => (j === t ? 1 : 0))];
  const K = { data: Float32Array.from(z), rows: n, cols: 1 };
  const tr = attn.traceBackwardQKV([[c]], K, V, dO, { scale });
  // The same gradient by its formula, from attnkit's softmax: dS_j = P_j (δ_jt − P_t).
  const P = attn.softmax({
    data: Float32Array.from(z, (v) => Math.fround(c * Math.fround(v)) * scale),
    rows: 1,
    cols: n,
  }).data;
  for (let j = 0; j < n; j++) {
    const expected = P[j] * ((j === t ? 1 : 0) - P[t]);
    assert.ok(
      Math.abs(tr.dScores.data[j] - expected) <= 1e-6,
      `c = ${c}, scale ${scale}: dS[${j}] = ${tr.dScores.data[j]}, P (e_t − P_t) = ${expected}`,
    );
  }
  return Math.sqrt(tr.dScores.data.reduce((a, v) => a + v * v, 0));
}

const { open, shot } = usePage((s) => ({ server, browser, context, page, problems } = s), {
  setUp: async () => {
    attn = await createAttnkit();
  },
  onPage: () => open("v=saturation"),
});

test("moving the c slider moves the marked gradient", async () => {
  const e = await experiment();
  const at1 = await readout();
  assert.equal(at1.c, 1);
  assert.equal(at1.scaled, e.gScaled[0]);
  assert.equal(at1.plain, e.gPlain[0]);
  await slide(60);
  const at60 = await readout();
  assert.equal(at60.scaled, e.gScaled[59], "the marked |dS| with ÷√d_k is c = 60's");
  assert.equal(at60.plain, e.gPlain[59], "the marked |dS| without is c = 60's");
  assert.notEqual(at60.plain, at1.plain, "the marked gradient moved");
  assert.match(at60.text, /^at c = 60: \|dS\| = /);
  const dot = () =>
    page.$eval('[data-testid="sat-gradient"] circle', (el) => Number(el.getAttribute("cx")));
  const x60 = await dot();
  await slide(5);
  assert.ok((await dot()) < x60, "the marker's dot moved left with c");
  await shot("saturation-gradient", page, true);
  assert.deepEqual(problems, []);
});

test("without the division by sqrt(d_k) the gradient at large c is smaller", async () => {
  const e = await experiment();
  assert.ok(e.dK > 1, `d_k = ${e.dK}`);
  for (let c = 50; c <= 100; c++)
    assert.ok(
      e.gPlain[c - 1] < e.gScaled[c - 1],
      `c = ${c}: |dS| without ${e.gPlain[c - 1]}, with ÷√d_k ${e.gScaled[c - 1]}`,
    );
  // The saturated softmax passes almost no gradient: at c = 100 unscaled, a small fraction of its largest.
  assert.ok(e.gPlain[99] < Math.max(...e.gPlain) / 100, `|dS| at c = 100 without: ${e.gPlain[99]}`);
  assert.deepEqual(problems, []);
});

test("the page's |dS| equal direct attnkit backward calls within 1e-6, for random logits and a query's scores", async () => {
  for (const source of ["random", "query"]) {
    if (source === "query") {
      await page.selectOption('[data-testid="sat-source"]', "query");
      await page.waitForFunction(() => window.__attnkit.state().satSource === "query");
    }
    const e = await experiment();
    assert.equal(e.scales.length, 100);
    // The target is the runner-up logit.
    const order = e.z.map((_, j) => j).sort((a, b) => e.z[b] - e.z[a]);
    assert.equal(e.target, order[1], `${source}: target is the runner-up`);
    for (const c of [1, 3, 10, 31, 64, 100]) {
      const plain = directNorm(e.z, e.target, c, 1);
      const scaled = directNorm(e.z, e.target, c, Math.fround(1 / Math.sqrt(e.dK)));
      assert.ok(
        Math.abs(e.gPlain[c - 1] - plain) <= 1e-6,
        `${source}, c = ${c}, unscaled: page ${e.gPlain[c - 1]}, attnkit ${plain}`,
      );
      assert.ok(
        Math.abs(e.gScaled[c - 1] - scaled) <= 1e-6,
        `${source}, c = ${c}, scaled: page ${e.gScaled[c - 1]}, attnkit ${scaled}`,
      );
    }
  }
  assert.deepEqual(problems, []);
});
