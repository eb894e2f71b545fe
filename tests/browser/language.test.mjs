// The Language view in Chromium: the default preset (the one the page opens with) trained
// on Moby-Dick in the page's worker to a validation loss below a measured threshold, with
// its sample; the small preset (cheaper) in the other tests: a small text dropped as a file,
// trained and generated from; every kind of bad text named at the field, after which the
// view still trains; the sentence view's maps against the package's own Model.inspect on
// the downloaded weights; generation through the cache against the full forward; the
// settings in the URL; the keyboard, a phone and reduced motion. Screenshots before, during
// and after training, of the sentence view, of generation and of the phone go to
// tests/artifacts/screenshots (language-*.png).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { createAttnkit } from "attnkit";
import { phonePage, watch } from "./lib/launch.mjs";
import { usePage } from "./lib/page.mjs";
import { pageModule } from "./lib/paths.mjs";
import { phoneFit } from "./lib/reads.mjs";
import { assertAnsweredWhileTraining, loadedModelBuild } from "./lib/training.mjs";
import { poll } from "./lib/wait.mjs";

let server, browser, context, p, problems;
const {
  openLanguage: open,
  language: hook,
  languageReady: waitReady,
  shot,
} = usePage((s) => ({ server, browser, context, page: p, problems } = s), {
  prefix: "language-",
  fullPage: true,
});

// Steps of the default preset the first test trains, and the validation loss it must reach.
// Measured in Chromium: 2.0815 nats/char at step 425 (the data and the initialisation are
// seeded, so runs agree to the last digit); 2.1212 at step 400, 2.0282 at step 500; the
// bigram model's is 2.43; nanoGPT's optimiser settings at this size (learning rate 3e-3, beta1
// 0.9) reach 2.1492 at step 425, above the threshold.
// The threshold leaves a margin of 0.038 (2%) for another build of the package's wasm.
const STEPS = 425;
const THRESHOLD = 2.12;
// The small preset at step 200 (measured 2.44, as in language-smoke.mjs).
const SMALL_200 = 2.6;
// Generation through the cache against one full forward (float32, the same wasm build).
const LOGIT_TOL = 1e-3;
const WEIGHT_TOL = 1e-5;

// The page's own scores and names (their unit test: heads.test.mjs), here recomputed on the
// package's weights of the downloaded file.
const { HEAD_NAMES, headScores, LABEL_AT } = await pageModule("web/src/language/heads.ts");

/** Waits for the generation to end and its check; returns the hook's gen. */
function generated(what, timeout = 15000, page = p) {
  return poll(
    async () => {
      const h = await hook(page);
      return !h.gen.running && h.gen.check && h.gen;
    },
    what,
    timeout,
  );
}

/** The generation's maps are drawn at the stage's top, above the sentence's. */
async function assertGenerationOnTop(page = p) {
  const top = async (id) => (await page.locator(`[data-testid="${id}"]`).boundingBox()).y;
  const gen = await top("lang-gen-title");
  const sentence = await top("lang-sentence-title");
  assert.ok(gen < sentence, `the generation's maps at y ${gen}, the sentence's at ${sentence}`);
}

/** Trains until step `n` (pausing there) and returns the hook; `onWay` runs at step n / 3. */
async function trainTo(n, page = p, onWay = async () => {}) {
  await page.click('[data-testid="lang-go"]');
  // onWay runs outside poll, which would swallow its failures.
  await poll(async () => (await hook(page)).step >= n / 3, `step ${n / 3}`, 300000, 100);
  await onWay();
  await poll(async () => (await hook(page)).step >= n, `step ${n}`, 300000, 100);
  await page.click('[data-testid="lang-pause"]');
  return poll(async () => {
    const h = await hook(page);
    return !h.training && h.sentence && h.sentence.step === h.step && h;
  }, "the paused model's sentence view");
}

/** Drops a file of `bytes` named `name` on the view's panel, as a person drags one in. */
async function dropFile(name, bytes, type = "text/plain") {
  await p.evaluate(
    ([n, b, t]) => {
      const dt = new DataTransfer();
      dt.items.add(new File([Uint8Array.from(b)], n, { type: t }));
      document
        .getElementById("language")
        .dispatchEvent(
          new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }),
        );
    },
    [name, Array.from(bytes), type],
  );
}

/**
 * The small preset trained to 200 steps, once per file on a page of its own: its hook at
 * the pause and its weights file as the page downloads it. For the tests about a trained
 * model rather than about training, which load the file through the page's own weights
 * field (loadTrained).
 */
let small200;
function trainedSmall() {
  small200 ??= (async () => {
    const page = await context.newPage();
    const seen = [];
    watch(page, seen);
    try {
      await open("&lp=small", page);
      const trained = await trainTo(200, page);
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.click('[data-testid="lang-download"]'),
      ]);
      assert.equal(download.suggestedFilename(), `attnkit-language-step${trained.step}.atkmodel`);
      const bytes = readFileSync(await download.path());
      assert.deepEqual(seen, [], "the training page's problems");
      return { trained, bytes, name: download.suggestedFilename() };
    } finally {
      await page.close();
    }
  })();
  return small200;
}

/** Loads trainedSmall()'s weights file into the view on page p; resolves to its hook. */
async function loadTrained() {
  const { trained, bytes, name } = await trainedSmall();
  await p.setInputFiles('[data-testid="lang-weights-file"]', {
    name,
    mimeType: "application/octet-stream",
    buffer: bytes,
  });
  await poll(async () => {
    const x = await waitReady("the trained weights");
    return x.step === trained.step && x.sentence.step === trained.step && x;
  }, `the trained model at step ${trained.step}`);
  return trained;
}

test("the default preset learns Moby-Dick below the measured threshold and shows its sample", async () => {
  const h0 = await open("");
  assert.deepEqual(
    [h0.config.numLayers, h0.config.numHeads, h0.config.dModel, h0.config.seqLen],
    [3, 4, 96, 64],
    "the page opens with the default preset",
  );
  assert.equal(await p.inputValue('[data-testid="lang-preset"]'), "default");
  assert.equal(h0.text.source, "moby-dick");
  assert.equal(h0.text.characters, 1190317);
  assert.equal(h0.text.vocabSize, 84);
  assert.match(await p.textContent('[data-testid="lang-text-info"]'), /1,190,317 characters/);
  // The reference lines: the package's numbers, the bigram below the unigram.
  assert.ok(h0.text.bigram < h0.text.unigram - 0.3, JSON.stringify(h0.text));
  // An untrained model guesses among the 84 characters: ln 84 = 4.43 nats, plus half
  // the logits' variance (about 1 with the fan-in initialisation, docs/model.md).
  const untrained = h0.validation[0][1];
  assert.ok(untrained > Math.log(84) - 0.25 && untrained < Math.log(84) + 1, `${untrained}`);
  await shot("before");
  const typed = "a whale of a tale";
  const h = await trainTo(STEPS, p, async () => {
    // While it trains, the sentence's maps follow the weights (not those of step 0).
    await poll(
      async () => {
        const x = await hook();
        return x.training && x.sentence?.step > 0 && x;
      },
      "the sentence's maps of a later step while training",
      30000,
    );
    await shot("during");
    // A sentence typed while it trains: its maps come while training goes on.
    await assertAnsweredWhileTraining({
      hook,
      what: "a sentence typed while training",
      answer: async () => {
        await p.fill('[data-testid="lang-sentence"]', typed);
        const x = await poll(async () => {
          const x = await hook();
          return x.sentence?.text === typed && x;
        }, "the typed sentence's maps");
        return x.sentence.step;
      },
    });
    // Back to the page's sentence, on which the heads below are named.
    await p.fill('[data-testid="lang-sentence"]', h0.sentence.text);
    await poll(
      async () => (await hook()).sentence?.text === h0.sentence.text,
      "the page's sentence again",
    );
  });
  // The model build loads in the worker only: the page's own resources hold none.
  assert.equal(await p.evaluate(loadedModelBuild), false, "the page itself loaded the model build");
  await shot("after");
  // A learner sees a named head (measured after 425 steps: layer 1's heads 1 and 3 the previous
  // character, head 2 two characters back).
  const named = h.sentence.kinds.flatMap((heads, l) =>
    heads.flatMap((k, hh) => (k.kind ? [`L${l + 1} h${hh}: ${HEAD_NAMES[k.kind]}`] : [])),
  );
  console.log(`language: heads named at step ${h.step}: ${named.join(", ") || "none"}`);
  assert.ok(named.length >= 1, "no head is named after training");
  const titles = await p.locator('[data-testid^="matrix-lang-attn-"] .m-title').allTextContents();
  assert.ok(
    titles.some((t) => t.startsWith(named[0])),
    titles.join(" | "),
  );
  const at = h.validation.find(([s]) => s === STEPS);
  assert.ok(at, `a validation loss at step ${STEPS}: ${JSON.stringify(h.validation.slice(-3))}`);
  const seconds = (h.trainingMs / 1000).toFixed(1);
  console.log(
    `language: validation ${at[1].toFixed(4)} nats/char (${(at[1] / Math.LN2).toFixed(2)} bits) after ${STEPS} steps of the default preset, ${seconds} s of training (${(h.trainingMs / h.step).toFixed(0)} ms/step), ${Math.round(h.tokensPerSecond)} characters/s; 2.0 nats/char ${h.reached2Ms === null ? `not reached (the loss reached ${Math.min(...h.validation.map(([, l]) => l)).toFixed(3)})` : `after ${(h.reached2Ms / 1000).toFixed(1)} s`}`,
  );
  assert.ok(at[1] < THRESHOLD, `validation ${at[1]} after ${STEPS} steps (threshold ${THRESHOLD})`);
  assert.ok(at[1] < h.text.bigram, "below the bigram model's loss");
  // The sample: from the fixed prompt, regenerated at the pause.
  assert.equal(h.sample.step, h.step);
  assert.equal(h.sample.prompt, "The whale ");
  assert.doesNotMatch(h.sample.text, /no sample/);
  assert.equal(h.sample.text.length, 180);
  assert.equal(await p.textContent('[data-testid="lang-sample"]'), h.sample.prompt + h.sample.text);
  // The loss is shown in nats and bits.
  assert.match(await p.textContent('[data-testid="lang-status"]'), /nats\/char \(\d\.\d\d bits\)/);
  assert.ok(h.snapshots.length >= STEPS / 100, `snapshots ${h.snapshots}`);
  assert.deepEqual(problems, []);
});

test("the sentence view's maps are the package's Model.inspect of the downloaded weights", async () => {
  await open();
  await loadTrained();
  const sentence = "the cat sat on the mat";
  await p.fill('[data-testid="lang-sentence"]', sentence);
  const h = await poll(async () => {
    const x = await hook();
    return x.sentence?.text === sentence && x;
  }, "the typed sentence's maps");
  await shot("sentence");
  // The head view's key: each head's name in the colour of its lines.
  const key = await p.$$eval('[data-testid="lang-headview"] text', (ts) =>
    ts
      .filter((t) => /^head \d+$/.test(t.textContent))
      .map((t) => [t.textContent, getComputedStyle(t).fill]),
  );
  const lines = await p.$$eval('[data-testid="lang-headview"] line', (ls) => [
    ...new Set(ls.map((l) => getComputedStyle(l).stroke)),
  ]);
  assert.deepEqual(
    key.map(([t]) => t),
    ["head 0", "head 1", "head 2", "head 3"],
  );
  assert.equal(new Set(key.map(([, f]) => f)).size, 4, JSON.stringify(key));
  for (const [, fill] of key) assert.ok(lines.includes(fill), `${fill} is no line's colour`);
  // A head's name shows that head alone (its lines only), pressed again all heads.
  const strokes = () =>
    p.$$eval('[data-testid="lang-headview"] line', (ls) => [
      ...new Set(ls.map((l) => getComputedStyle(l).stroke)),
    ]);
  await p.click('[data-testid="lang-hv-key-2"]');
  await poll(async () => (await strokes()).length === 1, "head 2 alone");
  assert.deepEqual(await strokes(), [key[2][1]]);
  assert.match(await p.textContent('[data-testid="lang-headview"] .m-title'), /head 2 alone/);
  assert.equal(await p.getAttribute('[data-testid="lang-hv-key-2"]', "aria-pressed"), "true");
  await shot("head-alone");
  // By keyboard: the name takes the focus (Tab reaches it) and Enter shows all heads again.
  await p.focus('[data-testid="lang-hv-key-2"]');
  await p.keyboard.press("Enter");
  await poll(async () => (await strokes()).length === 4, "all heads again");
  const [download] = await Promise.all([
    p.waitForEvent("download"),
    p.click('[data-testid="lang-download"]'),
  ]);
  assert.match(
    download.suggestedFilename(),
    new RegExp(`^attnkit-language-step${h.step}\\.atkmodel$`),
  );
  const bytes = readFileSync(await download.path());
  const attn = await createAttnkit({ model: true });
  const model = attn.loadModel(new Uint8Array(bytes));
  const tokens = model.tokenizer.encode(sentence);
  assert.deepEqual(h.sentence.tokens, Array.from(tokens));
  const r = model.inspect(tokens);
  let worst = 0;
  r.layers.forEach((L, l) => {
    assert.deepEqual(h.sentence.layers[l].shape, L.weights.shape);
    L.weights.data.forEach((v, i) => {
      worst = Math.max(worst, Math.abs(v - h.sentence.layers[l].weights[i]));
    });
  });
  assert.ok(worst <= 1e-6, `max |page - package| ${worst}`);
  // The labels come from the maps: each head's scores, recomputed here from the package's
  // weights, name it by the largest when that reaches LABEL_AT, and its map's title says so.
  const chars = h.sentence.characters;
  const T = tokens.length;
  for (const [l, heads] of h.sentence.kinds.entries())
    for (const [hh, k] of heads.entries()) {
      const mine = headScores(chars, r.layers[l].weights, hh);
      for (const key of Object.keys(mine))
        assert.ok(Math.abs(k[key] - mine[key]) < 1e-6, `L${l + 1} h${hh} ${key}: ${k[key]}`);
      const [bestKey, best] = Object.entries(mine).reduce((a, b) => (b[1] > a[1] ? b : a));
      assert.equal(
        k.kind,
        best >= LABEL_AT ? bestKey : null,
        `L${l + 1} h${hh}: ${JSON.stringify(k)}`,
      );
      const title = await p.textContent(`[data-testid="matrix-lang-attn-${l}-${hh}"] .m-title`);
      assert.ok(
        title.startsWith(`L${l + 1} h${hh}: ${k.kind ? HEAD_NAMES[k.kind] : "spread"}`),
        title,
      );
    }
  model.dispose();
  // The file loads back: the same model, the same maps.
  await p.setInputFiles('[data-testid="lang-weights-file"]', await download.path());
  const back = await poll(async () => {
    const x = await waitReady("the loaded weights");
    return x.sentence?.text === sentence && x;
  }, "the loaded model's sentence");
  // The file carries its step: the run goes on from it.
  assert.equal(back.step, h.step);
  assert.deepEqual(back.config, h.config);
  assert.deepEqual(back.sentence.layers, h.sentence.layers);
  // A layer opens in the steps view, recomputed by the page from its input and weights.
  await p.click('[data-testid="lang-open-0"]');
  await p.waitForSelector('svg[data-testid="scene-svg"][data-view="steps"]');
  const shown = await p.evaluate(() => window.__attnkit.trained.headWeights());
  const w0 = h.sentence.layers[0];
  shown.forEach((hw, hh) =>
    hw.forEach((v, i) =>
      assert.ok(Math.abs(v - w0.weights[hh * T * T + i]) < 1e-4, `layer 1 head ${hh} [${i}]`),
    ),
  );
  assert.match(await p.textContent('[data-testid="trained-title"]'), /Trained on language/);
  assert.deepEqual(problems, []);
});

test("generation through the cache equals the full forward", async () => {
  await open();
  const trained = await loadTrained();
  // The small preset learns too: its validation loss at step 200.
  const v200 = trained.validation.find(([s]) => s === 200);
  assert.ok(v200 && v200[1] < SMALL_200, `small preset: ${JSON.stringify(v200)}`);
  await p.fill('[data-testid="lang-prompt"]', "The sea ");
  await p.fill('[data-testid="lang-length"]', "40");
  await p.press('[data-testid="lang-length"]', "Tab");
  await p.click('[data-testid="lang-generate"]');
  const g = await generated("the generation and its check", 60000);
  await shot("generation");
  assert.equal(g.prompt, "The sea ");
  assert.equal([...g.text].length, 40);
  // Context 32: the prompt's 8 characters and the first 24 generated ones fit it.
  assert.equal(g.check.checked, 32 - 8 + 1);
  assert.ok(g.check.maxLogitDelta < LOGIT_TOL, `logits max |Δ| ${g.check.maxLogitDelta}`);
  assert.ok(g.check.maxWeightDelta < WEIGHT_TOL, `weights max |Δ| ${g.check.maxWeightDelta}`);
  console.log(
    `language: cache vs full forward over ${g.check.checked} characters: logits max |Δ| ${g.check.maxLogitDelta.toExponential(2)}, weights ${g.check.maxWeightDelta.toExponential(2)}`,
  );
  assert.match(await p.textContent('[data-testid="lang-gen-check"]'), /max \|Δ\|/);
  assert.equal(await p.textContent('[data-testid="lang-gen-out"]'), g.prompt + g.text);
  // The stage shows each layer's heads over the cache for the last character, at its top:
  // above the sentence's maps, where a person who pressed Generate looks.
  assert.equal(await p.locator('[data-testid="matrix-lang-gen-0"]').count(), 1);
  await assertGenerationOnTop();
  assert.deepEqual(problems, []);
});

test("a dropped text trains and generates; each bad text is named at the field and the view trains after", async () => {
  await open();
  const note = () => p.textContent('[data-testid="lang-text-note"]');
  const enc = new TextEncoder();
  // Too short for one validation window of the context (32): 10 x 33 characters.
  await dropFile("short.txt", enc.encode("too short"));
  await poll(async () => /330/.test(await note()), "the too-short message");
  assert.match(await note(), /text/);
  // Too many distinct characters: 600 CJK characters, each ten times.
  const many = Array.from({ length: 6000 }, (_, i) =>
    String.fromCodePoint(0x4e00 + (i % 600)),
  ).join("");
  await dropFile("many.txt", enc.encode(many));
  await poll(async () => /512/.test(await note()), "the too-many-characters message");
  // Not text: bytes that are not UTF-8, and a binary file with NUL bytes.
  await dropFile("image.png", Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe, 0x00, 0x01]));
  await poll(async () => /not text/.test(await note()), "the not-text message");
  await dropFile("zeros.txt", new Uint8Array(2000));
  await poll(async () => /not text/.test(await note()), "the binary message");
  // Too large: over 8 MB (refused before it is read).
  await p.evaluate(() => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(9 * 1024 * 1024).fill(97)], "big.txt"));
    document
      .getElementById("language")
      .dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  await poll(async () => /8 MB/.test(await note()), "the too-large message");
  await shot("bad-text");
  // Moby-Dick stays, and the source shown says so (not "your text" with an empty field).
  assert.equal(await p.isChecked('[data-testid="lang-src-moby-dick"]'), true);
  assert.equal(await p.isChecked('[data-testid="lang-src-own"]'), false);
  // The view still trains.
  let h = await hook();
  assert.equal(h.text.source, "moby-dick");
  assert.ok(h.ready);
  await p.click('[data-testid="lang-step"]');
  await poll(async () => (await hook()).step === 1, "one step after the bad texts");
  // A small text of its own, dropped as a file.
  const own =
    "She sells sea shells by the sea shore. The shells she sells are surely seashells. ".repeat(30);
  await dropFile("shells.txt", enc.encode(own));
  // A trained step would be lost: the page asks first, as the Train view does.
  await p.click('[data-testid="lang-confirm-yes"]');
  // The file is read before it reaches the worker: wait for its model, not the one still there.
  await poll(async () => (await hook()).text?.name === "shells.txt", "the dropped text");
  h = await waitReady("the dropped text's model");
  assert.equal(h.text.source, "own");
  assert.equal(h.text.name, "shells.txt");
  assert.equal(h.text.characters, own.length);
  assert.equal(await note(), "");
  assert.match(await p.textContent('[data-testid="lang-text-info"]'), /shells\.txt: 2,460 bytes/);
  h = await trainTo(150);
  assert.ok(h.validation.at(-1)[1] < h.validation[0][1] - 1, JSON.stringify(h.validation));
  await p.fill('[data-testid="lang-prompt"]', "She ");
  await p.click('[data-testid="lang-generate"]');
  const g = await generated("the generation");
  assert.equal([...g.text].length, 120);
  assert.ok(g.check.maxWeightDelta < WEIGHT_TOL);
  // After a bad text, the own text stays in use too.
  await dropFile("short.txt", enc.encode("x"));
  await p.click('[data-testid="lang-confirm-yes"]');
  await poll(async () => /shells\.txt/.test(await note()), "the message naming the text in use");
  // Refused: the trained model goes on.
  assert.equal((await hook()).step, h.step);
  assert.deepEqual(problems, []);
});

test("the settings live in the URL and a link restores them", async () => {
  await open();
  await p.fill('[data-testid="lang-layers"]', "3");
  await p.press('[data-testid="lang-layers"]', "Tab");
  await waitReady();
  await p.fill('[data-testid="lang-heads"]', "3");
  await p.press('[data-testid="lang-heads"]', "Tab");
  const h = await waitReady();
  // d_model 64 does not split into 3 heads: the nearest multiple is used and said.
  assert.equal(h.config.numHeads, 3);
  assert.equal(h.config.dModel, 63);
  assert.match(await p.textContent('[data-testid="lang-dmodel-note"]'), /64 → 63/);
  await p.fill('[data-testid="lang-sentence"]', "a whale of a tale");
  await p.waitForFunction(
    () => new URLSearchParams(location.search).get("ls") === "a whale of a tale",
  );
  const url = p.url();
  assert.match(url, /v=language/);
  assert.match(url, /lp=small/);
  assert.match(url, /ll=3/);
  assert.match(url, /lh=3/);
  const again = await open(url.slice(url.indexOf("?") + "?v=language".length));
  assert.deepEqual(again.config, h.config);
  assert.equal(again.sentence.text, "a whale of a tale");
  // A preset picked from the list: its settings in the fields, the model and the URL.
  await p.selectOption('[data-testid="lang-preset"]', "large");
  const large = await poll(async () => {
    const x = await waitReady("the large preset's model");
    return x.config.dModel === 128 && x;
  }, "the large preset");
  assert.deepEqual(
    [large.config.numLayers, large.config.numHeads, large.config.dFF, large.config.seqLen],
    [4, 4, 512, 64],
  );
  assert.equal(await p.inputValue('[data-testid="lang-dmodel"]'), "128");
  await poll(async () => /lp=large/.test(p.url()), "lp=large in the URL");
  // A link's bad value is noted at its field.
  await open("&lp=huge&ll=99");
  assert.match(await p.textContent('[data-testid="lang-preset-note"]'), /huge.*not a preset/);
  assert.match(await p.textContent('[data-testid="lang-layers-note"]'), /99 → 8/);
  assert.deepEqual(problems, []);
});

test("keyboard only: l opens the view, Space trains and pauses, arrows scrub, Enter generates", async () => {
  // The small preset through the link; the view itself is reached by its key.
  await p.goto(`${server.url}?lp=small`);
  await p.waitForSelector("body[data-ready]");
  await p.keyboard.press("l");
  await p.waitForSelector('svg[data-testid="scene-svg"][data-view="language"]');
  await waitReady();
  await p.evaluate(() => document.activeElement?.blur());
  await p.keyboard.press(" ");
  await poll(async () => (await hook()).training, "training from Space");
  await poll(async () => (await hook()).step >= 220, "220 steps", 240000);
  await p.keyboard.press(" ");
  await poll(async () => !(await hook()).training, "paused by Space");
  const n = (await hook()).snapshots.length;
  assert.ok(n >= 3);
  await p.keyboard.press("ArrowLeft");
  await poll(
    async () => (await hook()).sentence?.snapshot === n - 1,
    "the last snapshot's sentence",
  );
  assert.match(await p.textContent('[data-testid="lang-scrub-out"]'), /snapshot at step 200/);
  await p.keyboard.press("ArrowRight");
  await poll(async () => (await hook()).scrub === -1, "back to the live model");
  // Tab reaches the prompt; Enter on Generate.
  await p.focus('[data-testid="lang-prompt"]');
  await p.keyboard.press("Control+a");
  await p.keyboard.type("Ahab ");
  for (let i = 0; i < 8; i++) {
    await p.keyboard.press("Tab");
    if (await p.evaluate(() => document.activeElement?.id === "lang-generate")) break;
  }
  assert.equal(await p.evaluate(() => document.activeElement?.id), "lang-generate");
  await p.keyboard.press("Enter");
  const g = await generated("the generation from Enter");
  assert.equal(g.prompt, "Ahab ");
  // A digit stays in the view and says how to reach a step.
  await p.evaluate(() => document.activeElement?.blur());
  await p.keyboard.press("3");
  assert.match(await p.textContent('[data-testid="lang-key-note"]'), /press s/);
  assert.deepEqual(problems, []);
});

test("a phone: the view fits 390 px, trains and generates by touch", async () => {
  const { context: phone, page } = await phonePage(browser, problems);
  try {
    await open("&lp=small", page);
    const fit = await page.evaluate(phoneFit);
    assert.deepEqual(fit.out.slice(0, 6), [], "scene within the viewport");
    assert.ok(fit.docW <= fit.vw, `the page scrolls sideways (${fit.docW} > ${fit.vw})`);
    await page.tap('[data-testid="lang-go"]');
    await poll(async () => (await hook(page)).step >= 60, "60 steps on the phone", 120000);
    await page.tap('[data-testid="lang-pause"]');
    await poll(async () => !(await hook(page)).training, "paused");
    await page.tap('[data-testid="lang-generate"]');
    await poll(async () => (await hook(page)).gen.check, "a generation on the phone", 60000);
    await assertGenerationOnTop(page);
    const after = await page.evaluate(phoneFit);
    assert.ok(after.docW <= after.vw, `the page scrolls sideways (${after.docW} > ${after.vw})`);
    await shot("phone", page);
    // What the phone's screen shows: the panel's top, then the maps.
    await page.evaluate(() => scrollTo(0, 0));
    await shot("phone-top", page, false);
    await page.evaluate(() => document.getElementById("stage").scrollIntoView());
    await shot("phone-stage", page, false);
  } finally {
    await phone.close();
  }
  assert.deepEqual(problems, []);
});

/**
 * Watches what a person sees in page `page`: every text the generation's output shows
 * (window.__outs) and, on every frame, how many CSS animations and transitions run
 * (window.__moving, the largest count).
 */
function watchMotion(page = p) {
  return page.evaluate(() => {
    window.__outs = [];
    window.__moving = 0;
    const out = document.getElementById("lang-gen-out");
    new MutationObserver(() => window.__outs.push(out.textContent)).observe(out, {
      childList: true,
      characterData: true,
      subtree: true,
    });
    const frame = () => {
      window.__moving = Math.max(window.__moving, document.getAnimations().length);
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  });
}

/** Generates `length` characters from `prompt` and returns the texts the output showed on the way. */
async function generateWatched(prompt, length) {
  await p.evaluate(() => (window.__outs = []));
  await p.fill('[data-testid="lang-prompt"]', prompt);
  await p.fill('[data-testid="lang-length"]', String(length));
  await p.press('[data-testid="lang-length"]', "Tab");
  await p.click('[data-testid="lang-generate"]');
  const g = await generated("the generation");
  assert.equal([...g.text].length, length);
  // The generated part of each text shown (the prompt and the cursor left out).
  const shown = await p.evaluate(() => window.__outs);
  return shown.map((t) => t.replace(/▌$/, "").slice(prompt.length));
}

test("reduced motion: generated text appears at once, nothing moves; with motion, character by character", async () => {
  await open();
  await watchMotion();
  // With motion: the characters come one by one (a person reads them appear).
  await p.emulateMedia({ reducedMotion: "no-preference" });
  // 60 characters, 35 ms apart: about 2 s, for a stage that redraws slowly on a busy core.
  const slow = await generateWatched("The ", 60);
  // (How many depends on how fast the stage redraws: on a busy core, a few.)
  const partial = new Set(slow.filter((t) => t.length > 0 && t.length < 60).map((t) => t.length));
  assert.ok(partial.size >= 3, `with motion, ${partial.size} partial texts shown`);
  // Reduced motion: the output shows the prompt, then the whole text, nothing in between.
  await p.emulateMedia({ reducedMotion: "reduce" });
  const fast = await generateWatched("The ", 200);
  const between = fast.filter((t) => t.length > 0 && t.length < 200);
  assert.deepEqual(between, [], "with reduced motion, no partial text is shown");
  assert.equal(fast.at(-1).length, 200);
  // Its maps over the cache are those of the last character.
  assert.match(await p.textContent('[data-testid="lang-gen-title"]'), /character 200\)/);
  // Training, a snapshot scrubbed to and a map clicked: no CSS animation or transition runs,
  // and the stage is drawn in its final state at once (the same pixels a moment later).
  await trainTo(120);
  await p.keyboard.press("ArrowLeft");
  await poll(async () => (await hook()).sentence?.snapshot === 1, "snapshot 1's maps");
  const stage = p.locator('[data-testid="stage"]');
  await p.waitForTimeout(300);
  const first = await stage.screenshot();
  await p.waitForTimeout(400);
  assert.ok(first.equals(await stage.screenshot()), "the stage moved after it was drawn");
  assert.equal(await p.evaluate(() => window.__moving), 0, "CSS animations ran");
  // The Train view, the same: nothing animates while it trains and when it pauses.
  await p.goto(`${server.url}?v=train`);
  await p.waitForSelector('[data-testid="train-go"]:not([disabled])');
  await p.evaluate(() => {
    window.__moving = 0;
    const frame = () => {
      window.__moving = Math.max(window.__moving, document.getAnimations().length);
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  });
  await p.click('[data-testid="train-go"]');
  await poll(async () => (await p.evaluate(() => window.__attnkit.train())).step >= 60, "60 steps");
  await p.click('[data-testid="train-pause"]');
  await poll(async () => {
    const t = await p.evaluate(() => window.__attnkit.train());
    return !t.training && t.inspectionStep === t.step;
  }, "the Train view paused");
  await p.waitForTimeout(300);
  const trainStage = await stage.screenshot();
  await p.waitForTimeout(400);
  assert.ok(trainStage.equals(await stage.screenshot()), "the Train view's stage moved");
  assert.equal(await p.evaluate(() => window.__moving), 0, "CSS animations ran in the Train view");
  assert.deepEqual(problems, []);
});

test("as a person uses the panel: Step, Enter in the prompt, Reset, paste a text, open a .txt, the reference lines", async () => {
  await open();
  // Every request stayed on the page's own origin (the book is the page's own asset).
  const origins = await p.evaluate(() =>
    performance.getEntriesByType("resource").map((r) => new URL(r.name).origin),
  );
  assert.deepEqual([...new Set(origins)], [new URL(server.url).origin]);
  // The chart draws the text's unigram and bigram losses as labelled reference lines.
  const h0 = await hook();
  const legend = await p.textContent('[data-testid="lang-chart"]');
  assert.match(legend, new RegExp(`unigram: letter frequencies ${h0.text.unigram.toFixed(2)}`));
  assert.match(legend, new RegExp(`bigram: letter after letter ${h0.text.bigram.toFixed(2)}`));
  // Step: each press trains one step, and the sentence's maps are those of the new weights.
  for (const n of [1, 2]) {
    await p.click('[data-testid="lang-step"]');
    await poll(async () => (await hook()).sentence?.step === n, `the maps of step ${n}`, 30000);
  }
  assert.match(await p.textContent('[data-testid="lang-sentence-title"]'), /^step 2 /);
  // Enter in the prompt generates, as the button does.
  await p.fill('[data-testid="lang-prompt"]', "Queequeg ");
  await p.press('[data-testid="lang-prompt"]', "Enter");
  const g = await generated("the generation from Enter in the prompt");
  assert.equal(g.prompt, "Queequeg ");
  // Reset: a new untrained model of the same settings; its curves, maps and text start over.
  await p.click('[data-testid="lang-reset"]');
  const fresh = await poll(async () => {
    const x = await waitReady("the reset model");
    return x.step === 0 && x.sentence.step === 0 && x;
  }, "the reset model");
  assert.equal(fresh.validation.length, 1);
  assert.equal(fresh.gen.text, "");
  assert.match(await p.textContent('[data-testid="lang-status"]'), /ready · step 0/);
  // Paste: a text too short is named at the field; a longer one is used.
  await p.check('[data-testid="lang-src-own"]');
  await p.fill('[data-testid="lang-own"]', "Call me Ishmael.");
  await p.click('[data-testid="lang-own-use"]');
  const note = () => p.textContent('[data-testid="lang-text-note"]');
  await poll(async () => /330/.test(await note()), "the too-short message of a pasted text");
  assert.match(await note(), /goes on with Moby-Dick/);
  const pasted = "It was the best of times, it was the worst of times. ".repeat(20);
  await p.fill('[data-testid="lang-own"]', pasted);
  await p.click('[data-testid="lang-own-use"]');
  let h = await poll(async () => {
    const x = await waitReady("the pasted text's model");
    return x.text.source === "own" && x;
  }, "the pasted text in use");
  assert.equal(h.text.name, "your text");
  assert.equal(h.text.characters, pasted.length);
  assert.equal(await note(), "");
  // Open a .txt: the file picker's text is used.
  const own = "To be, or not to be, that is the question. ".repeat(20);
  await p.setInputFiles('[data-testid="lang-file"]', {
    name: "hamlet.txt",
    mimeType: "text/plain",
    buffer: Buffer.from(own),
  });
  h = await poll(async () => {
    const x = await waitReady("the opened file's model");
    return x.text.name === "hamlet.txt" && x;
  }, "the opened .txt in use");
  assert.equal(h.text.characters, own.length);
  assert.match(await p.textContent('[data-testid="lang-text-info"]'), /hamlet\.txt: 860 bytes/);
  assert.deepEqual(problems, []);
});
