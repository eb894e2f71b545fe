// The Language view as a newcomer meets it (issue 41, items 15-23), each by the learner's own
// steps in Chromium: weights downloaded and loaded back keep their step; a wrong weights
// file leaves the trained model as it was; the characters/s rate is the current stretch's;
// a change that would discard a trained run asks first; a layer opened in the steps view
// reads as the Language view's; a refused text behaves the same whether pasted or dropped,
// in the page's words; generation's maps in sight, the head view brought to sight, the help
// lists the view's keys, unknown characters said, a prompt from the learner's text; the
// cosmetic fixes (titles, labels, layout, the loss axis, number formats, button widths).
// Screenshots: tests/artifacts/screenshots/lang-newcomer-*.png.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { createAttnkit } from "attnkit";
import { phonePage } from "./lib/launch.mjs";
import { clickMatrixCell, usePage } from "./lib/page.mjs";
import { poll } from "./lib/wait.mjs";

let server, browser, p, problems;
const {
  openLanguage: open,
  language: hook,
  languageReady: waitReady,
  shot,
} = usePage((s) => ({ server, browser, page: p, problems } = s), { prefix: "lang-newcomer-" });

const text = (id, page = p) => page.textContent(`[data-testid="${id}"]`);

/** Presses Step `n` times, each answered before the next. */
async function steps(n, page = p) {
  const from = (await hook(page)).step;
  for (let i = 1; i <= n; i++) {
    await page.click('[data-testid="lang-step"]');
    await poll(async () => (await hook(page)).step === from + i, `step ${from + i}`, 30000);
  }
  return poll(async () => {
    const h = await hook(page);
    return h.sentence?.step === h.step && h;
  }, "the maps of the last step");
}

/** Downloads the weights by the button; returns the file's path and its suggested name. */
async function download() {
  const [d] = await Promise.all([
    p.waitForEvent("download"),
    p.click('[data-testid="lang-download"]'),
  ]);
  return { file: await d.path(), name: d.suggestedFilename() };
}

/** The FNV-1a hash the weights file ends with (docs/model.md). */
function rehash(bytes) {
  let h = 0x811c9dc5;
  for (const b of bytes.subarray(0, bytes.length - 4)) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  new DataView(bytes.buffer, bytes.byteOffset).setUint32(bytes.length - 4, h, true);
  return bytes;
}

test("15: weights downloaded and loaded back keep their step; an older file loads at step 0", async () => {
  await open();
  const h = await steps(3);
  const { file, name } = await download();
  assert.equal(name, "attnkit-language-step3.atkmodel");
  // A learner starts over, then loads the file back.
  await p.click('[data-testid="lang-reset"]');
  await poll(async () => (await hook()).step === 0 && (await hook()).ready, "the reset model");
  await p.setInputFiles('[data-testid="lang-weights-file"]', {
    name,
    mimeType: "application/octet-stream",
    buffer: readFileSync(file),
  });
  const back = await poll(async () => {
    const x = await waitReady("the loaded weights");
    return x.step === 3 && x.sentence.step === 3 && x.sample?.step === 3 && x;
  }, "the loaded model at step 3");
  assert.deepEqual(back.sentence.layers, h.sentence.layers);
  const status = await text("lang-status");
  assert.match(
    status,
    /^loaded · step 3 \(loaded at step 3 from attnkit-language-step3\.atkmodel\)/,
  );
  assert.match(status, /0 s trained here/);
  assert.match(await text("lang-sample-title"), /^Sample at step 3 /);
  assert.match(await text("lang-sentence-title"), /^step 3 /);
  await shot("loaded");
  // Training goes on from the file's step.
  await steps(1);
  assert.match(await text("lang-status"), /^paused · step 4 /);
  // The layer opens in the steps view at the file's step.
  await p.click('[data-testid="lang-open-0"]');
  await p.waitForSelector('svg[data-testid="scene-svg"][data-view="steps"]');
  assert.match(await text("trained-title"), /^Trained on language, step 4, layer 1 of 2/);
  // A file of the format's version 2 (no epsilon word, no step) still loads, at step 0:
  // the downloaded version 4 without its epsilon word (byte 48) and its steps word.
  const v4 = new Uint8Array(readFileSync(file));
  const V = new DataView(v4.buffer).getUint32(52, true);
  const stepsAt = 56 + 4 * V;
  const v2 = new Uint8Array(v4.length - 8);
  v2.set(v4.subarray(0, 48));
  v2.set(v4.subarray(52, stepsAt), 48);
  v2.set(v4.subarray(stepsAt + 4), stepsAt - 4);
  new DataView(v2.buffer).setUint32(8, 2, true);
  await p.keyboard.press("l");
  await waitReady();
  await p.setInputFiles('[data-testid="lang-weights-file"]', {
    name: "older.atkmodel",
    mimeType: "application/octet-stream",
    buffer: Buffer.from(rehash(v2)),
  });
  const older = await poll(async () => {
    const x = await waitReady("the older file");
    return x.step === 0 && x.sentence.step === 0 && x;
  }, "the older file at step 0");
  assert.deepEqual(older.sentence.layers, h.sentence.layers);
  assert.equal(await text("lang-weights-note"), "");
  assert.deepEqual(problems, []);
});

test("17: a wrong weights file after training leaves the trained model as it was", async () => {
  await open();
  const h = await steps(2);
  const attn = await createAttnkit({ model: true });
  // A Train-view file: a task model, with no vocabulary.
  const task = attn.createModel({ vocabSize: 8, maxSeqLen: 8, dModel: 8 });
  const wrong = [
    ["induction-step40.atkmodel", Buffer.from(task.exportWeights()), /not a language model's/],
    [
      "notes.txt",
      Buffer.from("These are my notes, not weights.\n".repeat(20)),
      /not a weights file/,
    ],
  ];
  task.dispose();
  for (const [name, buffer, says] of wrong) {
    await p.setInputFiles('[data-testid="lang-weights-file"]', {
      name,
      mimeType: "application/octet-stream",
      buffer,
    });
    await poll(async () => says.test(await text("lang-weights-note")), `the message of ${name}`);
    const note = await text("lang-weights-note");
    assert.ok(note.startsWith(`${name} was not loaded: `), note);
    assert.match(note, /\. The model goes on as it was\.$/);
    // The run is as it was: its step, its maps, no error in the status line.
    const x = await hook();
    assert.equal(x.ready, true);
    assert.equal(x.step, 2);
    assert.equal(x.error, "");
    assert.deepEqual(x.sentence.layers, h.sentence.layers);
    assert.doesNotMatch(await text("lang-status"), /error|not a/);
    for (const id of ["lang-go", "lang-step", "lang-download", "lang-generate"])
      assert.equal(await p.isEnabled(`[data-testid="${id}"]`), true, `${id} is disabled`);
  }
  await shot("wrong-weights");
  // It trains and generates on.
  await steps(1);
  await p.click('[data-testid="lang-generate"]');
  await poll(async () => (await hook()).gen.check, "a generation after the wrong files", 60000);
  assert.deepEqual(problems, []);
});

test("18: characters/s is the current stretch's: none after Reset, a new text, or while paused", async () => {
  await open();
  const rate = async () => /characters\/s/.test(await text("lang-status"));
  await p.click('[data-testid="lang-go"]');
  await poll(rate, "characters/s while training", 30000);
  await p.click('[data-testid="lang-pause"]');
  await poll(async () => !(await hook()).training && !(await rate()), "paused, without a rate");
  await p.click('[data-testid="lang-reset"]');
  const fresh = await poll(async () => {
    const x = await waitReady("the reset model");
    return x.step === 0 && x;
  }, "the reset model");
  assert.equal(fresh.tokensPerSecond, 0);
  assert.equal(await rate(), false, "a rate after Reset");
  // Training again, then a new text: no rate of the old run.
  await p.click('[data-testid="lang-go"]');
  await poll(rate, "characters/s while training", 30000);
  await p.click('[data-testid="lang-pause"]');
  await p.check('[data-testid="lang-src-own"]');
  await p.fill(
    '[data-testid="lang-own"]',
    "It was the best of times, it was the worst. ".repeat(20),
  );
  await p.click('[data-testid="lang-own-use"]');
  await p.click('[data-testid="lang-confirm-yes"]');
  const own = await poll(async () => {
    const x = await waitReady("the new text's model");
    return x.text.source === "own" && x;
  }, "the new text");
  assert.equal(own.tokensPerSecond, 0);
  assert.equal(await rate(), false, "a rate after a new text");
  assert.deepEqual(problems, []);
});

test("19: a change that would discard a trained run asks first, in the Train view's box", async () => {
  await open();
  await steps(2);
  const box = '[data-testid="lang-confirm"]';
  // The batch: asked, kept.
  await p.fill('[data-testid="lang-batch"]', "20");
  await p.press('[data-testid="lang-batch"]', "Tab");
  await p.waitForSelector(`${box}:not([hidden])`);
  assert.match(
    await p.textContent(box),
    /Changing batch 16 → 20 starts a new run: the 2 steps trained so far and their curves will be discarded/,
  );
  assert.match(await p.textContent(box), /Start the new run\s+Keep the current run/);
  await shot("confirm");
  await p.click('[data-testid="lang-confirm-no"]');
  assert.equal(await p.isHidden(box), true);
  let h = await hook();
  assert.equal(h.step, 2);
  assert.equal(h.config.batch, 16);
  assert.equal(await p.inputValue('[data-testid="lang-batch"]'), "16");
  // The preset: asked, kept, the list back on "small".
  await p.selectOption('[data-testid="lang-preset"]', "default");
  await p.waitForSelector(`${box}:not([hidden])`);
  assert.match(await p.textContent(box), /Changing the preset small → default/);
  await p.click('[data-testid="lang-confirm-no"]');
  assert.equal(await p.inputValue('[data-testid="lang-preset"]'), "small");
  assert.equal((await hook()).step, 2);
  // A text: asked, kept; the source buttons back on Moby-Dick.
  await p.check('[data-testid="lang-src-own"]');
  await p.fill(
    '[data-testid="lang-own"]',
    "It was the best of times, it was the worst. ".repeat(20),
  );
  await p.click('[data-testid="lang-own-use"]');
  await p.waitForSelector(`${box}:not([hidden])`);
  assert.match(await p.textContent(box), /Changing the text to your text/);
  await p.click('[data-testid="lang-confirm-no"]');
  h = await hook();
  assert.equal(h.text.source, "moby-dick");
  assert.equal(h.step, 2);
  assert.equal(await p.isChecked('[data-testid="lang-src-moby-dick"]'), true);
  // While it trains: training pauses, the box says so; Start: the new run.
  await p.click('[data-testid="lang-go"]');
  await poll(async () => (await hook()).training, "training");
  await p.fill('[data-testid="lang-batch"]', "20");
  await p.press('[data-testid="lang-batch"]', "Tab");
  await p.waitForSelector(`${box}:not([hidden])`);
  await poll(async () => !(await hook()).training, "paused by the question");
  assert.match(await p.textContent(box), /Training is paused\./);
  await p.click('[data-testid="lang-confirm-yes"]');
  h = await poll(async () => {
    const x = await waitReady("the new run");
    return x.step === 0 && x.config.batch === 20 && x;
  }, "the new run of batch 20");
  assert.equal(await p.isHidden(box), true);
  // An untrained run is changed without a question.
  await p.selectOption('[data-testid="lang-preset"]', "default");
  await poll(async () => (await hook()).config.dModel === 96, "the default preset at once");
  assert.equal(await p.isHidden(box), true);
  assert.deepEqual(problems, []);
});

test("20: a layer opened in the steps view reads as the Language view's; its banner stays there", async () => {
  await open();
  const h = await steps(1);
  await p.click('[data-testid="lang-open-1"]');
  await p.waitForSelector('svg[data-testid="scene-svg"][data-view="steps"]');
  // The Text field holds the sentence's characters, not token ids.
  assert.equal(await p.inputValue('[data-testid="text"]'), h.sentence.characters.join(""));
  const banner = await text("trained-banner");
  assert.match(banner, /Tokens are the sentence's characters/);
  assert.match(banner, /trained model's \(Language view\)/);
  assert.doesNotMatch(banner, /separator|token ids|Train view/);
  const caption = await text("caption");
  assert.match(caption, /The sentence, as the language model reads it: T = \d+ characters/);
  assert.match(caption, /1 training step in\./);
  assert.doesNotMatch(caption, /separator|token id/);
  const option = await p.$eval(
    '[data-testid="weights"] option[value="trained"]',
    (o) => o.textContent,
  );
  assert.equal(option, "trained model (Language view)");
  await shot("steps-view", p, true);
  // Back to the Language view: no banner there.
  await p.keyboard.press("l");
  await p.waitForSelector('svg[data-testid="scene-svg"][data-view="language"]');
  assert.equal(await p.isHidden('[data-testid="trained-banner"]'), true);
  // And in the steps view again, it is back.
  await p.keyboard.press("s");
  await p.waitForSelector('svg[data-testid="scene-svg"][data-view="steps"]');
  assert.equal(await p.isVisible('[data-testid="trained-banner"]'), true);
  assert.deepEqual(problems, []);
});

test("21: a refused text behaves the same pasted or dropped, in the page's words", async () => {
  await open();
  const note = () => text("lang-text-note");
  const sameBehaviour = async (what) => {
    // The source buttons on the text in use, the field open with the refused text.
    assert.equal(await p.isChecked('[data-testid="lang-src-moby-dick"]'), true, what);
    assert.equal(await p.isVisible('[data-testid="lang-own"]'), true, what);
    assert.equal((await hook()).text.source, "moby-dick", what);
  };
  // Pasted, too short.
  await p.check('[data-testid="lang-src-own"]');
  await p.fill('[data-testid="lang-own"]', "Call me Ishmael.");
  await p.click('[data-testid="lang-own-use"]');
  await poll(async () => /330/.test(await note()), "the too-short message");
  const short = await note();
  assert.match(short, /^your text was not used: expected at least 330 characters/);
  assert.match(short, /\(10 windows of the context \+ 1,/);
  assert.match(short, /got 16\. The model goes on with Moby-Dick\.$/);
  assert.doesNotMatch(short, /seqLen|seq_len/);
  await sameBehaviour("a refused paste");
  assert.equal(await p.inputValue('[data-testid="lang-own"]'), "Call me Ishmael.");
  await shot("refused-paste");
  // Dropped, too short: the same.
  await p.evaluate(() => {
    const dt = new DataTransfer();
    dt.items.add(new File(["too short"], "short.txt", { type: "text/plain" }));
    document
      .getElementById("language")
      .dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  await poll(
    async () => /^short\.txt was not used/.test(await note()),
    "the dropped file's message",
  );
  await sameBehaviour("a refused file");
  assert.equal(await p.inputValue('[data-testid="lang-own"]'), "too short");
  // Pasted, too large (4,400,000 characters of 8,745,000 bytes): bytes for bytes, with
  // separators.
  await p.evaluate(() => {
    document.getElementById("lang-own").value = ("é".repeat(79) + "\n").repeat(55_000);
  });
  await p.click('[data-testid="lang-own-use"]');
  await poll(async () => /8,745,000 bytes/.test(await note()), "the too-large message");
  assert.match(
    await note(),
    /^your text is 8\.3 MB \(8,745,000 bytes\): a text of at most 8 MB \(8,388,608 bytes\) trains in a tab\. The model goes on with Moby-Dick\.$/,
  );
  await sameBehaviour("a refused large paste");
  assert.deepEqual(problems, []);
});

test("22: generation's maps in sight, the head view brought to sight, the help, unknown characters, the learner's prompt", async () => {
  await open("");
  await steps(1);
  await p.evaluate(() => scrollTo(0, 0));
  await p.click('[data-testid="lang-generate"]');
  await poll(async () => (await hook()).gen.check, "the generation", 60000);
  // Every layer's map over the cache is within the 1440 x 900 window.
  await poll(async () => {
    const boxes = await p.$$eval('[data-testid^="matrix-lang-gen-"]', (gs) =>
      gs.map((g) => g.getBoundingClientRect().toJSON()),
    );
    const inner = await p.evaluate(() => innerHeight);
    return boxes.length === 3 && boxes.every((b) => b.top >= 0 && b.bottom <= inner);
  }, "the generation's maps in the window");
  await shot("generating");
  // A click on a map of layer 3: the head view shows layer 3, and it is in sight.
  await p.locator('[data-testid="matrix-lang-attn-2-1"]').scrollIntoViewIfNeeded();
  await clickMatrixCell(p, "lang-attn-2-1", 5, 3);
  await poll(
    async () => /head view, layer 3/.test(await p.textContent('[data-testid="lang-headview"]')),
    "the head view of layer 3",
  );
  await poll(async () => {
    // Its title and first lines in the window.
    return p.$eval('[data-testid="lang-headview"]', (g) => {
      const b = g.getBoundingClientRect();
      return b.top >= 0 && b.top + 100 < innerHeight;
    });
  }, "the head view in the window");
  await shot("head-view-shown");
  // The help lists the Language view's keys.
  await p.evaluate(() => document.activeElement?.blur());
  await p.keyboard.press("?");
  const help = await text("help");
  assert.match(help, /Train and Language views: train \/ pause/);
  assert.match(help, /Language view, in the prompt or another generation field: generate/);
  await p.keyboard.press("Escape");
  // A character outside the vocabulary is said, in the sentence and in the prompt.
  await p.fill('[data-testid="lang-sentence"]', "the café at noon");
  await poll(
    async () => /“é” is not in the text's vocabulary/.test(await text("lang-sentence-note")),
    "the note of é",
  );
  await p.fill('[data-testid="lang-prompt"]', "Ahab’s ζ ");
  await p.press('[data-testid="lang-prompt"]', "Tab");
  assert.match(await text("lang-prompt-note"), /“ζ” is not in .*as � \(unknown\)/);
  // The learner's own text: the sample's prompt and the generation's come from it.
  await p.fill('[data-testid="lang-prompt"]', "Call me Ishmael. ");
  await p.press('[data-testid="lang-prompt"]', "Tab");
  await p.check('[data-testid="lang-src-own"]');
  await p.fill(
    '[data-testid="lang-own"]',
    "She sells sea shells by the sea shore. The shells she sells are surely seashells. ".repeat(30),
  );
  await p.click('[data-testid="lang-own-use"]');
  await p.click('[data-testid="lang-confirm-yes"]');
  const own = await poll(async () => {
    const x = await waitReady("the own text's model");
    return x.text.source === "own" && x.sample && x;
  }, "the own text's sample");
  assert.equal(own.sample.prompt, "She sells ");
  assert.match(await text("lang-sample-title"), /prompt “She sells”/);
  assert.equal(await p.inputValue('[data-testid="lang-prompt"]'), "She sells ");
  assert.deepEqual(problems, []);
});

test("23: labels, layout, the loss axis, number formats and button widths", async () => {
  await open();
  // Number formats: one formatter.
  assert.match(await text("caption"), /, \d{1,3}(,\d{3})+ weights\)/);
  assert.match(await text("lang-schedule"), /cosine to 3e-4 at step 1,500/);
  // 4 heads: one row of 4 or rows of 2, never 3 + 1.
  const rows = await p.$$eval('[data-testid^="matrix-lang-attn-0-"]', (gs) =>
    gs.map((g) => Math.round(g.getBoundingClientRect().top)),
  );
  const perRow = Object.values(rows.reduce((a, y) => ({ ...a, [y]: (a[y] ?? 0) + 1 }), {})).sort();
  assert.ok(
    JSON.stringify(perRow) === "[4]" || JSON.stringify(perRow) === "[2,2]",
    `rows of ${perRow}`,
  );
  // Generate and Stop take one width.
  const width = () => p.$eval('[data-testid="lang-generate"]', (b) => b.offsetWidth);
  const idle = await width();
  await p.fill('[data-testid="lang-length"]', "400");
  await p.press('[data-testid="lang-length"]', "Tab");
  await p.emulateMedia({ reducedMotion: "no-preference" });
  await p.click('[data-testid="lang-generate"]');
  assert.equal(await text("lang-generate"), "■ Stop");
  assert.equal(await width(), idle, "Generate and Stop differ in width");
  await p.click('[data-testid="lang-generate"]');
  await p.emulateMedia({ reducedMotion: "reduce" });
  // The loss chart's y axis fits the losses after the first steps (not from 0).
  await p.click('[data-testid="lang-go"]');
  await poll(async () => (await hook()).step >= 120, "120 steps", 120000);
  await p.click('[data-testid="lang-pause"]');
  await poll(async () => !(await hook()).training, "paused");
  await shot("chart");
  const yTicks = await p.$$eval('[data-testid="lang-chart"] .y-axis .tick text', (ts) =>
    ts.map((t) => Number(t.textContent)),
  );
  assert.ok(yTicks.length >= 2, `y ticks ${yTicks}`);
  assert.ok(Math.min(...yTicks) >= 1, `the y axis starts at ${Math.min(...yTicks)}`);
  // A generation of one character: "the first character".
  await p.fill('[data-testid="lang-prompt"]', "The sea ");
  await p.fill('[data-testid="lang-length"]', "1");
  await p.press('[data-testid="lang-length"]', "Tab");
  await p.click('[data-testid="lang-generate"]');
  await poll(async () => (await hook()).gen.check, "a generation of one character");
  assert.match(
    await text("lang-gen-check"),
    /over the first character \(those within the context of 32\)/,
  );
  // The picture exported: the head view's labels as on screen (the page's font and size).
  const onScreen = await p.$eval('[data-testid="lang-headview"] .hv-label', (t) => {
    const cs = getComputedStyle(t);
    return [cs.fontSize, cs.fontFamily];
  });
  const [svgFile] = await Promise.all([
    p.waitForEvent("download"),
    p.click('[data-testid="export-svg"]'),
  ]);
  const svg = readFileSync(await svgFile.path(), "utf8");
  const viewer = await p.context().newPage();
  await viewer.setContent(svg);
  const exported = await viewer.$eval(".hv-label", (t) => {
    const cs = getComputedStyle(t);
    return [cs.fontSize, cs.fontFamily];
  });
  await viewer.close();
  assert.deepEqual(exported, onScreen, "the exported labels differ from the page's");
  assert.equal(onScreen[0], "12px");
  assert.match(onScreen[1], /monospace/);
  // The default preset's cosine ends at 5e-4; a learning rate below that, from a link or the
  // box, takes the floor down with it (AdamW's floor is at most its rate), and the model trains.
  let d = await open("&lp=default&llr=3e-4");
  assert.equal(await p.inputValue('[data-testid="lang-lr"]'), "0.0003");
  assert.match(await text("lang-schedule"), /cosine to 3e-4 at step 1,500/);
  assert.deepEqual([d.config.learningRate, d.config.minLearningRate], [3e-4, 3e-4]);
  await p.selectOption('[data-testid="lang-lr"]', "0.005");
  await poll(async () => (await hook()).config.learningRate === 5e-3, "the run at 5e-3");
  d = await waitReady("the run at 5e-3");
  assert.equal(d.config.minLearningRate, 5e-4);
  assert.match(await text("lang-schedule"), /cosine to 5e-4 at step 1,500/);
  await steps(1);
  assert.equal((await hook()).error, "");
  // The steps view's sidebar shows the hand-designed heads' whole name.
  await p.goto(`${server.url}?w=designed`);
  await p.waitForSelector("body[data-ready]");
  const cut = await p.$eval('[data-testid="weights"]', (sel) => {
    const c = document.createElement("canvas").getContext("2d");
    const cs = getComputedStyle(sel);
    c.font = `${cs.fontSize} ${cs.fontFamily}`;
    const label = sel.options[sel.selectedIndex].textContent;
    // The text's room: the box less its padding and the arrow.
    const room = sel.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20;
    return { label, need: c.measureText(label).width, room };
  });
  assert.ok(cut.need <= cut.room, `"${cut.label}" needs ${cut.need} px, has ${cut.room}`);
  assert.deepEqual(problems, []);
});

test("23: a phone: every head's row labelled in the generation's maps; the Decoding view's titles apart", async () => {
  const { context: phone, page } = await phonePage(browser, problems);
  try {
    // The default preset: a context of 64 characters, wider than the phone's maps hold.
    await open("", page);
    await page.tap('[data-testid="lang-step"]');
    await poll(async () => (await hook(page)).step === 1, "a step on the phone");
    await page.fill('[data-testid="lang-prompt"]', "The whale swam on and on through the sea ");
    await page.tap('[data-testid="lang-generate"]');
    await poll(async () => (await hook(page)).gen.check, "a generation on the phone", 60000);
    assert.match(
      await text("lang-gen-cut", page),
      /^the newest \d+ of the \d+ characters in the cache$/,
    );
    for (let l = 0; l < 3; l++) {
      const labels = await page.$$eval(`[data-testid="matrix-lang-gen-${l}"] .m-rows text`, (ts) =>
        ts.map((t) => t.textContent),
      );
      assert.deepEqual(labels, ["h0", "h1", "h2", "h3"], `layer ${l + 1}`);
    }
    await page.evaluate(() => document.getElementById("stage").scrollIntoView());
    await shot("phone-generation", page);
    // The Decoding view: its two titles do not run into each other.
    await page.goto(`${server.url}?v=decoding`);
    await page.waitForSelector('svg[data-testid="scene-svg"][data-view="decoding"]');
    const [a, b] = await Promise.all(
      ["decoded", "fullCausal"].map((id) =>
        page.$eval(`[data-testid="matrix-${id}"]`, (g) => {
          const r = [...g.querySelectorAll(".m-title, .m-shape")].map((t) =>
            t.getBoundingClientRect(),
          );
          return {
            left: Math.min(...r.map((x) => x.left)),
            right: Math.max(...r.map((x) => x.right)),
          };
        }),
      ),
    );
    assert.ok(a.right <= b.left, `the titles overlap: ${a.right} > ${b.left}`);
    await page.evaluate(() => document.getElementById("stage").scrollIntoView());
    await shot("phone-decoding", page);
  } finally {
    await phone.close();
  }
  assert.deepEqual(problems, []);
});
