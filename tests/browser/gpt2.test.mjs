// The GPT-2 view (web/src/gpt2) in Chromium: its code loads only when it opens; a
// learner's own language model (a Language-view weights file) and tiny GPT-2 checkpoints
// (dropped, and fetched from a local stand-in of the Hugging Face Hub, never the real one)
// open after the learner confirms what they hold; the grid and the head drawn equal the
// package's inspect (1e-6); the scores and the induction heads are the package's
// headScores; generation through the cache; the steps view with the head's real numbers;
// saves; URL state; keyboard; a refused file, a failed download, the memory message and a
// phone's refusal. Clicks and typing as a person does.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { gzipSync } from "node:zlib";
import { readFileSync } from "node:fs";
import path from "node:path";
import { createAttnkit } from "attnkit";
import { phonePage } from "./lib/launch.mjs";
import { usePage, viewShown } from "./lib/page.mjs";
import { dist } from "./lib/paths.mjs";
import { poll } from "./lib/wait.mjs";
import {
  dropArgs,
  dropOnPanel,
  languageWeights as weightsOf,
  largeCheckpoint,
  mapsDelta,
  startLargeHub,
  tinyGpt2,
} from "./lib/gpt2.mjs";
import { startHub } from "../js/lib/hub-server.js";

let server, browser, context, p, problems;
const { ready, open, shot, typeInto } = usePage(
  (s) => ({ server, browser, context, page: p, problems } = s),
  { prefix: "gpt2-" },
);

let attn;
before(async () => {
  attn = await createAttnkit({ model: true });
});
after(() => attn?.dispose());
const languageWeights = (seed) => weightsOf(attn, seed);

const hook = (page = p) => page.evaluate(() => window.__attnkit.gpt2());
const SENTENCE = "When Mary and John went to the store, John gave a drink to";

/** Drops files, each [name, bytes], together on the view's panel, as a person drags them. */
const dropFiles = (files, page = p) => page.evaluate(dropOnPanel, dropArgs(server, files));
/** Drops a file named `name` holding `bytes`. */
const dropFile = (name, bytes, page = p) => dropFiles([[name, bytes]], page);

/** Opens the view (clicking its button) and waits for its panel. */
async function openView(query = "", page = p) {
  await open(query, page);
  await page.click('[data-testid="view-gpt2"]');
  await page.waitForSelector('[data-testid="gpt2-source"]');
}

/** Waits for the confirm box to state what the source holds; its text. */
async function confirmText(page = p) {
  await page.waitForSelector('[data-testid="gpt2-confirm"]:not([hidden])');
  return poll(
    async () => {
      const t = await page.textContent('[data-testid="gpt2-confirm-text"]');
      return !/Reading/.test(t) && t;
    },
    "what the source holds",
    30000,
  );
}

/** Confirms and waits for the model and the sentence's maps; the hook. */
async function confirmAndWait(page = p, what = "the model and its sentence") {
  await page.click('[data-testid="gpt2-confirm-yes"]');
  return poll(
    async () => {
      const h = await hook(page);
      return h.model && h.sentence && !h.loading && h;
    },
    what,
    60000,
  );
}

/** Asserts the page's maps (hook and drawn) equal the model's own inspect of the sentence, 1e-6. */
async function assertMapsEqual(model, h, page = p) {
  const tokens = Array.from(model.tokenizer.encode(h.sentence.text)).slice(
    0,
    model.config.maxSeqLen,
  );
  assert.deepEqual(h.sentence.tokens, tokens);
  const r = model.inspect(tokens);
  const T = tokens.length;
  let worst = mapsDelta(model, h.sentence);
  assert.ok(worst <= 1e-6, `hook maps max |Δ| ${worst}`);
  // What is drawn: every small map of the grid and the head shown large.
  const H = model.config.numHeads;
  const drawn = await page.evaluate(
    ([L, H]) => {
      const out = {};
      for (let l = 0; l < L; l++)
        for (let h = 0; h < H; h++)
          out[`${l}:${h}`] = window.__attnkit.matrix(`gpt2-grid-${l}-${h}`);
      out.head = window.__attnkit.matrix("gpt2-head");
      return out;
    },
    [model.config.numLayers, H],
  );
  worst = 0;
  for (let l = 0; l < model.config.numLayers; l++)
    for (let hd = 0; hd < H; hd++) {
      const m = drawn[`${l}:${hd}`];
      assert.equal(m.rows, T);
      const w = r.layers[l].weights.data;
      for (let i = 0; i < T * T; i++)
        worst = Math.max(worst, Math.abs(m.values[i] - w[hd * T * T + i]));
    }
  const { layer, head } = h.settings;
  const w = r.layers[layer].weights.data;
  for (let i = 0; i < T * T; i++)
    worst = Math.max(worst, Math.abs(drawn.head.values[i] - w[head * T * T + i]));
  assert.ok(worst <= 1e-6, `drawn maps max |Δ| ${worst}`);
}

/** Asserts the scores and the induction heads are the package's headScores. */
function assertScores(model, h) {
  const s = attn.headScores(model);
  for (const k of ["induction", "previousToken", "duplicateToken"])
    s[k].forEach((row, l) =>
      row.forEach((v, hd) =>
        assert.ok(Math.abs(h.model.scores[k][l][hd] - v) < 1e-9, `${k} L${l} h${hd}`),
      ),
    );
  const named = [];
  s.induction.forEach((row, l) => row.forEach((v, hd) => v >= 0.3 && named.push([l, hd])));
  assert.deepEqual(h.inductionHeads.map(([l, hd]) => [l, hd]).sort(), named.sort());
}

/** The steps view's weights (the page's own) equal layer `layer`'s of the model's inspect (1e-5). */
async function assertStepsWeights(model, tokens, layer) {
  const w = await p.evaluate(() => window.__attnkit.trained.headWeights());
  const want = model.inspect(tokens).layers[layer].weights.data;
  const T = tokens.length;
  let worst = 0;
  w.forEach((hw, hd) =>
    hw.forEach((v, i) => (worst = Math.max(worst, Math.abs(v - want[hd * T * T + i])))),
  );
  assert.ok(worst < 1e-5, `steps view weights |Δ| ${worst}`);
}

test("the page's first load holds none of the view's code; the view loads when it opens", async () => {
  const loaded = [];
  p.on("request", (r) => loaded.push(new URL(r.url()).pathname));
  await open();
  const js = loaded.filter((u) => u.endsWith(".js"));
  assert.ok(!loaded.some((u) => /\/view-|worker/.test(u)), `first load: ${loaded.join(", ")}`);
  const gz = js.reduce((n, u) => n + gzipSync(readFileSync(path.join(dist, u))).length, 0);
  assert.ok(gz <= 150 * 1024, `the first load's JavaScript is ${gz} bytes gzipped`);
  console.log(`# the first load's JavaScript: ${(gz / 1024).toFixed(1)} KB gzipped`);
  await p.click('[data-testid="view-gpt2"]');
  await p.waitForSelector('[data-testid="gpt2-source"]');
  assert.ok(
    loaded.some((u) => /\/view-/.test(u)),
    "the view's code loaded when it opened",
  );
  await p.waitForSelector(viewShown("gpt2"));
  assert.match(await p.textContent('[data-testid="gpt2-empty"]'), /No model yet/);
  // The arrows and Space belong to the view: they do not leave it for the steps.
  await p.click('[data-testid="gpt2-empty"]');
  for (const key of ["ArrowRight", "ArrowDown", " "]) await p.keyboard.press(key);
  assert.equal((await p.evaluate(() => window.__attnkit.state())).view, "gpt2");
  assert.deepEqual(problems, []);
});

test("the learner's own language model: confirmed, drawn equal to inspect, scored, generated, stepped through", async () => {
  const bytes = languageWeights();
  const model = attn.loadModel(bytes);
  try {
    await openView();
    await dropFile("my-model.attnkit", bytes);
    const text = await confirmText();
    assert.match(text, /the file my-model\.attnkit/);
    assert.match(text, /a language model of characters of 2 layers × 4 heads/);
    assert.match(text, /Read 0\.1 MB and open it/);
    await shot("confirm");
    const h = await confirmAndWait();
    await shot("own-model");
    assert.equal(h.sentence.text, SENTENCE);
    await assertMapsEqual(model, h);
    assertScores(model, h);
    // Tokens shown with their spaces visible.
    assert.equal(await p.textContent('[data-testid="gpt2-token-4"]'), "␣");
    // The top next tokens are the model's softmax of the last logits.
    const r = model.inspect(h.sentence.tokens);
    const V = model.config.vocabSize;
    const last = r.logits.data.slice((h.sentence.tokens.length - 1) * V);
    const max = Math.max(...last);
    const z = last.reduce((s, v) => s + Math.exp(v - max), 0);
    const best = last.indexOf(max);
    assert.equal(h.sentence.top[0].token, best);
    assert.ok(Math.abs(h.sentence.top[0].p - Math.exp(0) / z) < 1e-6);

    // Another head, with the keyboard: → and ↓ move the head shown large.
    await p.click('[data-testid="gpt2-grid-title"]');
    await p.keyboard.press("ArrowRight");
    await p.keyboard.press("ArrowDown");
    let h2 = await poll(async () => {
      const x = await hook();
      return x.settings.head === 1 && x.settings.layer === 1 && x;
    }, "the head moved by the keys");
    await assertMapsEqual(model, h2);
    // A click on a small map shows it large.
    const box = await p.locator('[data-hit="gpt2-grid-0-2"]').boundingBox();
    await p.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    h2 = await poll(async () => {
      const x = await hook();
      return x.settings.head === 2 && x.settings.layer === 0 && x;
    }, "the clicked head");
    await assertMapsEqual(model, h2);
    const q = new URLSearchParams(await p.evaluate(() => location.search));
    assert.equal(q.get("v"), "gpt2");
    assert.equal(q.get("gh"), "2");

    // A new sentence, typed.
    await typeInto('[data-testid="gpt2-sentence"]', "John gave a drink to John");
    const h3 = await poll(async () => {
      const x = await hook();
      return x.sentence?.text === "John gave a drink to John" && x;
    }, "the new sentence");
    await assertMapsEqual(model, h3);

    // Generation through the cache, greedy: the package's own greedy text.
    await p.fill('[data-testid="gpt2-gen-length"]', "12");
    await p.fill('[data-testid="gpt2-temp"]', "0");
    await p.click('[data-testid="gpt2-generate"]');
    const done = await poll(
      async () => {
        const x = await hook();
        return (x.error || (!x.gen.running && x.gen.check)) && x;
      },
      "a generation and its check",
      60000,
    );
    assert.equal(done.error, "");
    const g = done.gen;
    const want = model.generate("John gave a drink to John", { length: 12, temperature: 0 });
    assert.deepEqual(g.tokens, Array.from(want.tokens));
    assert.ok(g.check.checked > 0);
    assert.ok(g.check.maxWeightDelta < 1e-5, `weights |Δ| ${g.check.maxWeightDelta}`);
    assert.ok(g.check.maxLogitDelta < 1e-3, `logits |Δ| ${g.check.maxLogitDelta}`);
    await p.waitForSelector('[data-testid="matrix-gpt2-gen-1"]');
    await shot("generated");

    // The 8 steps of attention with the head's real Q, K, V: the page's own weights equal the model's.
    await p.click('[data-testid="gpt2-steps"]');
    await p.waitForSelector(viewShown("steps"));
    await assertStepsWeights(model, h3.sentence.tokens, 0);
    await shot("steps");
    assert.deepEqual(problems, []);
  } finally {
    model.dispose();
  }
});

test("saves the grid and a head as PNG and SVG (the view opened by its key, m)", async () => {
  await open();
  await p.keyboard.press("m");
  await p.waitForSelector('[data-testid="gpt2-source"]');
  await dropFile("my-model.attnkit", languageWeights(2));
  await confirmText();
  await confirmAndWait();
  for (const [part, kind] of [
    ["grid", "png"],
    ["grid", "svg"],
    ["head", "png"],
    ["head", "svg"],
  ]) {
    const [download] = await Promise.all([
      p.waitForEvent("download"),
      p.click(`[data-testid="gpt2-save-${part}-${kind}"]`),
    ]);
    const file = await download.path();
    const data = readFileSync(file);
    assert.match(download.suggestedFilename(), new RegExp(`^attnkit-gpt2-.*\\.${kind}$`));
    if (kind === "png") assert.deepEqual([...data.subarray(1, 4)], [0x50, 0x4e, 0x47]);
    else {
      const svg = data.toString("utf8");
      assert.match(svg, /^<svg/);
      // The maps' canvases became images of their pixels.
      assert.match(svg, /<image[^>]+href="data:image\/png;base64,/);
      assert.match(svg, part === "grid" ? /every head of/ : /layer 0, head 0/);
    }
  }
  assert.deepEqual(problems, []);
});

test("the model trained in the Language view opens in the view", async () => {
  await open("v=language&lp=small");
  await poll(
    async () => (await p.evaluate(() => window.__attnkit.language())).ready,
    "the Language view's model",
    60000,
  );
  await p.click('[data-testid="view-gpt2"]');
  await p.waitForSelector('[data-testid="gpt2-use-language"]:not([disabled])');
  await p.click('[data-testid="gpt2-use-language"]');
  assert.match(await confirmText(), /the Language view's model: .*2 layers × 4 heads/);
  const h = await confirmAndWait();
  const lang = await p.evaluate(() => window.__attnkit.language());
  assert.equal(h.model.numLayers, lang.config.numLayers);
  assert.equal(h.model.dModel, lang.config.dModel);
  // Its context (32 characters) holds the sentence's start; the page says what is left out.
  assert.equal(h.sentence.pieces.join(""), SENTENCE.slice(0, lang.config.seqLen));
  assert.match(
    await p.textContent('[data-testid="gpt2-tokens"]'),
    new RegExp(
      `the first ${lang.config.seqLen}: ${SENTENCE.length - lang.config.seqLen} more do not fit the context`,
    ),
  );
  await shot("language-model");
  assert.deepEqual(problems, []);
});

test("a file that is no model is refused with a reason; the view works after", async () => {
  await openView();
  await dropFile("notes.txt", new TextEncoder().encode("just some notes, not a checkpoint"));
  await poll(
    async () => (await p.textContent('[data-testid="gpt2-refused"]')).length > 0,
    "the refusal",
  );
  const why = await p.textContent('[data-testid="gpt2-refused"]');
  assert.ok(why.length > 10, why);
  await shot("refused-file");
  await dropFile("my-model.attnkit", languageWeights());
  await confirmText();
  const h = await confirmAndWait();
  assert.equal(h.refused, "");
  assert.deepEqual(problems, []);
});

test("on a phone: the panel and a small model's maps fit its width", async () => {
  const phone = await phonePage(browser, problems);
  try {
    const pp = phone.page;
    await openView("", pp);
    await dropFile("my-model.attnkit", languageWeights(), pp);
    await confirmText(pp);
    await confirmAndWait(pp);
    await pp.waitForSelector('[data-testid="matrix-gpt2-head"]');
    const fit = await pp.evaluate(() => {
      const vw = document.documentElement.clientWidth;
      const wide = [...document.querySelectorAll("#gpt2 *, #stage svg")]
        .map((el) => [el, el.getBoundingClientRect()])
        .filter(([, r]) => r.width > 0 && (r.left < -0.5 || r.right > vw + 0.5))
        .map(
          ([el, r]) =>
            `${el.tagName} ${el.id || el.getAttribute("data-testid") || ""} ${Math.round(r.left)}..${Math.round(r.right)}`,
        );
      return { vw, wide, docW: document.documentElement.scrollWidth };
    });
    assert.deepEqual(fit.wide, []);
    assert.ok(fit.docW <= fit.vw + 1, `the page scrolls sideways: ${fit.docW} > ${fit.vw}`);
    await shot("phone", pp, true);
    assert.deepEqual(problems, []);
  } finally {
    await phone.context.close();
  }
});

// ---- GPT-2 checkpoints ----

/** Sets the Hub the page fetches from (the tests' stand-in), now and on the next loads. */
async function useHub(url, page = p) {
  await page.addInitScript((u) => (window.__attnkitHubUrl = u), url);
  await page.evaluate((u) => (window.__attnkitHubUrl = u), url);
}

/** Types a repository id or URL and looks it up, as a person does. */
async function lookUp(source, page = p) {
  await page.fill('[data-testid="gpt2-source"]', "");
  await page.type('[data-testid="gpt2-source"]', source);
  await page.click('[data-testid="gpt2-lookup"]');
}

/** The problems but the browser's own console line for each failed fetch the test caused. */
const unexpected = (list) => list.filter((x) => !/Failed to load resource/.test(x));

test("a tiny GPT-2 checkpoint dropped: its tokens GPT-2's pieces, its maps equal openCheckpoint's inspect", async () => {
  const ckpt = tinyGpt2();
  const model = await attn.openCheckpoint(ckpt.safetensors, { config: ckpt.config });
  try {
    await openView();
    // Alone, the file cannot say its heads: the page says what it needs.
    await dropFile("model.safetensors", ckpt.safetensors);
    const why = await poll(
      async () => (await hook()).refused,
      "the refusal of a file without its config",
    );
    assert.match(why, /numHeads|heads/);
    assert.match(await p.textContent('[data-testid="gpt2-refused"]'), /config\.json/);
    // Its heads typed, the same file opens.
    await typeInto('[data-testid="gpt2-heads"]', "3");
    assert.match(await confirmText(), /2 layers × 3 heads/);
    await p.click('[data-testid="gpt2-confirm-no"]');
    // With its config.json beside it.
    await p.fill('[data-testid="gpt2-heads"]', "");
    await dropFiles([
      ["model.safetensors", ckpt.safetensors],
      ["config.json", ckpt.configJson],
    ]);
    const text = await confirmText();
    assert.match(text, /the file model\.safetensors/);
    assert.match(text, /a GPT-2-family model of 2 layers × 3 heads/);
    assert.match(text, /Read \d+(\.\d)? MB and open it \(it needs [\d.]+ MB of memory\)/);
    // The cleared heads field loses focus (to the click on Open): the files are not read again,
    // so the confirmation the learner clicks stays the one shown.
    const asked = (await hook()).pending.id;
    await p.dispatchEvent('[data-testid="gpt2-heads"]', "change");
    await p.waitForTimeout(300);
    assert.equal((await hook()).pending?.id, asked);
    const h = await confirmAndWait();
    await shot("checkpoint");
    assert.deepEqual(h.sentence.tokens, Array.from(model.tokenizer.encode(SENTENCE)));
    // GPT-2's pieces, their leading spaces visible: "When", "␣Mary", ...
    assert.equal(await p.textContent('[data-testid="gpt2-token-0"]'), "When");
    assert.equal(await p.textContent('[data-testid="gpt2-token-1"]'), "␣Mary");
    await assertMapsEqual(model, h);
    assertScores(model, h);
    // Sorted by the previous-token score, the grid's first map is the best such head.
    await p.selectOption('[data-testid="gpt2-color"]', "previousToken");
    await p.check('[data-testid="gpt2-sort"]');
    await poll(async () => (await hook()).settings.sort, "sorted");
    const first = await p.evaluate(() => {
      const g = document.querySelector(
        '[data-testid="gpt2-grid"] [data-testid^="matrix-gpt2-grid-"]',
      );
      return g.getAttribute("data-testid");
    });
    const s = attn.headScores(model).previousToken;
    const best = s
      .flatMap((row, l) => row.map((v, hd) => [v, l, hd]))
      .sort((a, b) => b[0] - a[0])[0];
    assert.equal(first, `matrix-gpt2-grid-${best[1]}-${best[2]}`);
    await shot("sorted");
    // Greedy generation through the cache: the package's own greedy tokens.
    await p.fill('[data-testid="gpt2-gen-length"]', "8");
    await p.fill('[data-testid="gpt2-temp"]', "0");
    await p.click('[data-testid="gpt2-generate"]');
    const done = await poll(
      async () => {
        const x = await hook();
        return (x.error || (!x.gen.running && x.gen.check)) && x;
      },
      "a generation and its check",
      60000,
    );
    assert.equal(done.error, "");
    const want = model.generate(SENTENCE, { length: 8, temperature: 0 });
    assert.deepEqual(done.gen.tokens, Array.from(want.tokens));
    assert.ok(done.gen.check.maxWeightDelta < 1e-5, `weights |Δ| ${done.gen.check.maxWeightDelta}`);
    // The steps view on layer 1 with its biases (a column of ones in X): the model's own weights.
    await p.keyboard.press("ArrowDown");
    await poll(async () => (await hook()).settings.layer === 1, "layer 1");
    await p.click('[data-testid="gpt2-steps"]');
    await p.waitForSelector(viewShown("steps"));
    await assertStepsWeights(model, h.sentence.tokens, 1);
    await shot("checkpoint-steps");
    assert.deepEqual(problems, []);
  } finally {
    model.dispose();
  }
});

test("from the Hub stand-in by its repository id: nothing downloaded before the learner confirms; a link opens it after confirming", async () => {
  const hub = await startHub();
  const ckpt = tinyGpt2();
  hub.add("tiny/gpt2", { "config.json": ckpt.configJson, "model.safetensors": ckpt.safetensors });
  const model = await attn.openCheckpoint(ckpt.safetensors, { config: ckpt.config });
  try {
    await openView();
    await useHub(hub.url);
    await lookUp("tiny/gpt2");
    const text = await confirmText();
    assert.match(text, /the Hugging Face repository tiny\/gpt2/);
    assert.match(text, /Download [\d.]+ MB and open it/);
    const before = hub.served("tiny/gpt2", "model.safetensors");
    assert.ok(before < ckpt.safetensors.length / 2, `read before confirming: ${before} bytes`);
    const h = await confirmAndWait();
    assert.equal(
      hub.served("tiny/gpt2", "model.safetensors") - before >= ckpt.safetensors.length / 2,
      true,
    );
    await assertMapsEqual(model, h);
    const q = new URLSearchParams(await p.evaluate(() => location.search));
    assert.equal(q.get("gm"), "tiny/gpt2");

    // The link: the repository is looked up, and waits for the learner.
    hub.reset();
    await p.goto(`${server.url}?${q}`);
    await ready();
    const again = await confirmText();
    assert.match(again, /tiny\/gpt2/);
    assert.ok(hub.served("tiny/gpt2", "model.safetensors") < ckpt.safetensors.length / 2);
    assert.equal((await hook()).model, null);
    await shot("link-confirm");
    const h2 = await confirmAndWait();
    await assertMapsEqual(model, h2);
    assert.deepEqual(problems, []);
  } finally {
    model.dispose();
    await hub.close();
  }
});

test("a failed download and a missing repository are named; the model in use stays", async () => {
  const hub = await startHub();
  const ckpt = tinyGpt2();
  hub.add("tiny/gpt2", { "config.json": ckpt.configJson, "model.safetensors": ckpt.safetensors });
  try {
    await openView();
    await useHub(hub.url);
    await dropFile("mine.attnkit", languageWeights());
    await confirmText();
    await confirmAndWait();
    // Cut mid-body: the download fails after the learner confirmed.
    await lookUp("tiny/gpt2");
    await confirmText();
    hub.fault("tiny/gpt2", "model.safetensors", { cutAfter: 1000 });
    await p.click('[data-testid="gpt2-confirm-yes"]');
    const h = await poll(
      async () => {
        const x = await hook();
        return x.refused && !x.loading && x;
      },
      "the failed download",
      30000,
    );
    assert.match(h.model.from, /mine\.attnkit/);
    assert.ok(h.sentence);
    assert.equal(await p.textContent('[data-testid="gpt2-refused"]'), h.refused);
    await shot("failed-download");
    // Not on the Hub: the 404 is said before anything is confirmed.
    await lookUp("nobody/nothing");
    const h2 = await poll(
      async () => {
        const x = await hook();
        return x.refused && !x.pending && x;
      },
      "the missing repository",
      30000,
    );
    assert.match(h2.refused, /404|not found/i);
    assert.match(h2.model.from, /mine\.attnkit/);
    // Not a repository id nor a URL.
    await lookUp("what is this?");
    await poll(async () => /neither a repository id/.test((await hook()).refused), "the bad id");
    assert.deepEqual(unexpected(problems), []);
  } finally {
    await hub.close();
  }
});

test("a checkpoint larger than a browser can hold is refused before its download; a phone refuses a large one", async () => {
  const big = await startLargeHub();
  big.add(
    "big/xl",
    largeCheckpoint({
      numLayers: 48,
      dModel: 1600,
      numHeads: 25,
      vocabSize: 50257,
      nPositions: 1024,
    }),
  );
  big.add(
    "mid/medium",
    largeCheckpoint({
      numLayers: 24,
      dModel: 1024,
      numHeads: 16,
      vocabSize: 50257,
      nPositions: 1024,
    }),
  );
  try {
    await openView();
    await useHub(big.url);
    await lookUp("big/xl");
    const text = await confirmText();
    assert.match(text, /48 layers × 25 heads/);
    assert.match(text, /needs [\d.]+ GB of memory: a WebAssembly module holds at most 4 GB/);
    assert.equal(await p.isHidden('[data-testid="gpt2-confirm-yes"]'), true);
    await shot("memory");
    // The medium one fits a computer's browser: it asks.
    await lookUp("mid/medium");
    assert.match(await confirmText(), /Download [\d.]+ GB and open it/);
    await p.click('[data-testid="gpt2-confirm-no"]');
    assert.ok(
      big.served("big/xl") < 1024 * 1024,
      `bytes read of the large one: ${big.served("big/xl")}`,
    );
    // A phone refuses the medium one, saying why.
    const phone = await phonePage(browser, problems);
    try {
      await openView("", phone.page);
      await useHub(big.url, phone.page);
      await lookUp("mid/medium", phone.page);
      assert.match(await confirmText(phone.page), /more than a phone's browser gives one tab/);
      assert.equal(await phone.page.isHidden('[data-testid="gpt2-confirm-yes"]'), true);
      await shot("phone-refused", phone.page);
    } finally {
      await phone.context.close();
    }
    assert.deepEqual(problems, []);
  } finally {
    await big.close();
  }
});

test("the download's progress shows; Cancel stops it and the model in use stays", async () => {
  const big = await startLargeHub();
  // About 64 MB, streamed at 4 MB a second.
  const slow = largeCheckpoint({
    numLayers: 4,
    dModel: 256,
    numHeads: 4,
    vocabSize: 50257,
    nPositions: 256,
  });
  big.add("slow/gpt2", slow, { rate: 4 * 1024 * 1024 });
  try {
    await openView();
    await useHub(big.url);
    await dropFile("mine.attnkit", languageWeights());
    await confirmText();
    await confirmAndWait();
    await lookUp("slow/gpt2");
    await confirmText();
    await p.click('[data-testid="gpt2-confirm-yes"]');
    const during = await poll(
      async () => {
        const x = await hook();
        return x.loading?.loadedBytes > 0 && x;
      },
      "the download's progress",
      30000,
    );
    assert.equal(during.loading.totalBytes, slow.size);
    assert.ok(await p.isVisible('[data-testid="gpt2-progress"]'));
    assert.match(
      await p.textContent('[data-testid="gpt2-progress-text"]'),
      /MB of [\d.]+ MB from the Hugging Face repository slow\/gpt2/,
    );
    await shot("progress");
    await p.click('[data-testid="gpt2-cancel"]');
    const h = await poll(
      async () => {
        const x = await hook();
        return !x.loading && x.refused && x;
      },
      "the cancelled download",
      30000,
    );
    assert.match(h.model.from, /mine\.attnkit/);
    assert.ok(big.served("slow/gpt2") < slow.size, "the download stopped");
    assert.equal(await p.isHidden('[data-testid="gpt2-progress"]'), true);
    // The model in use still answers.
    await typeInto('[data-testid="gpt2-sentence"]', "John went");
    await poll(
      async () => (await hook()).sentence?.text === "John went",
      "the sentence after the cancel",
    );
    assert.deepEqual(unexpected(problems), []);
  } finally {
    await big.close();
  }
});
