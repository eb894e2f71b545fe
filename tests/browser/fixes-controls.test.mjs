// Browser tests of what a new user hit in the page's controls (issue 30, items 2, 11
// and 13), each doing what the user did: a mask click in a batch, the keyboard in the
// Train view and after a checkbox, links with bad values, and notes by number fields.
// Debian's Chromium through playwright-core.
import assert from "node:assert/strict";
import { test } from "node:test";
import { usePage } from "./lib/page.mjs";
import { poll } from "./lib/wait.mjs";

let server, browser, context, page, problems;

const { open, ready, state, shot, gotoStep, typeInto, settledSearch } = usePage(
  (s) => ({ server, browser, context, page, problems } = s),
  { prefix: "fixes-controls-" },
);

const note = async (id) => (await page.textContent(`[data-testid="adj-${id}"]`)).trim();

/** Rows of matrix `id` (the nth drawn: a batch draws one per sentence). */
async function rowsOf(id, nth = 0) {
  const m = await page.evaluate(([id, nth]) => window.__attnkit.matrix(id, nth), [id, nth]);
  return Array.from({ length: m.rows }, (_, r) => m.values.slice(r * m.cols, (r + 1) * m.cols));
}

test("batch, causal, a click on the second sentence's M: each sentence keeps its whole causal mask", async () => {
  await open();
  await page.selectOption('[data-testid="preset"]', "flies");
  await page.waitForFunction(() => window.__attnkit.state().batch);
  await page.fill('[data-testid="text"]', "the train left the station on time");
  await page.selectOption('[data-testid="mask"]', "causal");
  await gotoStep(5);
  // Sentence 2 ("fruit flies like a banana") has 5 tokens padded to 7: block "like" -> "flies".
  const M2 = page.locator('[data-testid="matrix-M"]').nth(1);
  await M2.scrollIntoViewIfNeeded();
  const box = await M2.locator('rect.cell[data-row="3"][data-col="1"]').boundingBox();
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  await page.waitForFunction(() => window.__attnkit.state().mask === "custom");
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await shot("batch-mask-click");
  await gotoStep(6);
  for (const [nth, real] of [
    [0, 7],
    [1, 5],
  ]) {
    const W = await rowsOf("weights", nth);
    assert.equal(W.length, 7, `sentence ${nth + 1}: 7 x 7 weights`);
    for (let i = 0; i < 7; i++)
      for (let j = 0; j < 7; j++) {
        const blocked = j > i || j >= real || (i === 3 && j === 1);
        if (blocked) assert.equal(W[i][j], 0, `sentence ${nth + 1}: weight [${i}, ${j}] is masked`);
        else assert.ok(W[i][j] > 0, `sentence ${nth + 1}: weight [${i}, ${j}] is not masked`);
      }
    assert.equal(W[0][0], 1, `sentence ${nth + 1}: the first token attends to itself only`);
  }
  await shot("batch-mask-click-step6");
  // A click on a padding key of the second sentence changes nothing: padding stays masked.
  await gotoStep(5);
  await M2.scrollIntoViewIfNeeded();
  const pad = await M2.locator('rect.cell[data-row="1"][data-col="6"]').boundingBox();
  const custom = (await state()).custom;
  await page.mouse.click(pad.x + pad.width / 2, pad.y + pad.height / 2);
  assert.equal((await state()).custom, custom, "a padding cell does not toggle");
  assert.deepEqual(problems, []);
});

test("keyboard in the Train view: after Enter on Train or Pause the focus is on the other button", async () => {
  await open("v=train");
  await poll(() => page.evaluate(() => window.__attnkit.train().ready), "the worker ready");
  await page.focus('[data-testid="train-go"]');
  await page.keyboard.press("Enter");
  await poll(() => page.evaluate(() => window.__attnkit.train().training), "training");
  await page.waitForSelector('[data-testid="train-go"][disabled]');
  assert.equal(
    await page.evaluate(() => document.activeElement?.dataset.testid),
    "train-pause",
    "after Enter on Train the focus is on Pause",
  );
  await page.keyboard.press("Enter");
  await poll(() => page.evaluate(() => !window.__attnkit.train().training), "paused");
  await page.waitForSelector('[data-testid="train-pause"][disabled]');
  assert.equal(
    await page.evaluate(() => document.activeElement?.dataset.testid),
    "train-go",
    "after Enter on Pause the focus is on Train",
  );
  await shot("train-keyboard");
  assert.deepEqual(problems, []);
});

test("keyboard in the Train view, nothing focused: the arrows move through the snapshots and stay in the view", async () => {
  await open("v=train");
  await poll(() => page.evaluate(() => window.__attnkit.train().ready), "the worker ready");
  await page.click('[data-testid="train-step"]');
  // The arrows need the step done, training stopped and the first snapshot kept.
  await poll(
    () =>
      page.evaluate(() => {
        const t = window.__attnkit.train();
        return t.step === 1 && !t.training && t.snapshots.length >= 1;
      }),
    "one step, stopped, with a snapshot",
  );
  await page.evaluate(() => document.activeElement?.blur());
  const snapshots = (await page.evaluate(() => window.__attnkit.train())).snapshots.length;
  assert.ok(snapshots >= 1, "a snapshot to go back to");
  await page.keyboard.press("ArrowRight");
  assert.equal((await state()).view, "train", "the right arrow stays in the Train view");
  await page.keyboard.press("ArrowLeft");
  await poll(
    () => page.evaluate((n) => window.__attnkit.train().scrub === n - 1, snapshots),
    "the last snapshot shown",
  );
  await page.keyboard.press("ArrowRight");
  await poll(() => page.evaluate(() => window.__attnkit.train().scrub === -1), "the live model");
  assert.equal((await state()).view, "train");
  assert.deepEqual(problems, []);
});

test("keyboard: after a checkbox is toggled, and after Esc in a field, the arrow and digit shortcuts work", async () => {
  await open("st=2");
  await page.click('[data-testid="scaling"]');
  await page.waitForFunction(() => !window.__attnkit.state().scaling);
  assert.equal(await page.evaluate(() => document.activeElement?.id), "scaling");
  await page.keyboard.press("ArrowRight");
  await page.waitForFunction(() => window.__attnkit.state().step === 3);
  await page.keyboard.press("6");
  await page.waitForFunction(() => window.__attnkit.state().step === 6);
  // Esc leaves a field; the shortcuts then work.
  await page.focus('[data-testid="heads"]');
  await page.keyboard.press("Escape");
  await page.keyboard.press("ArrowLeft");
  await page.waitForFunction(() => window.__attnkit.state().step === 5);
  await page.focus('[data-testid="mask"]');
  await page.keyboard.press("Escape");
  await page.keyboard.press("2");
  await page.waitForFunction(() => window.__attnkit.state().step === 2);
  // The checkbox keeps Space; a field keeps the digits typed into it.
  await page.focus('[data-testid="scaling"]');
  await page.keyboard.press(" ");
  await page.waitForFunction(() => window.__attnkit.state().scaling);
  await page.focus('[data-testid="seed"]');
  await page.keyboard.press("4");
  assert.equal((await state()).step, 2, "a digit typed into a field is not a shortcut");
  assert.deepEqual(problems, []);
});

test("a link with bad values: a note names each, the page uses defaults or the nearest values, the address holds them", async () => {
  await open("v=nope&st=99&tau=abc&m=zzz&p=nope&b=yes");
  const s = await state();
  assert.equal(s.view, "steps");
  assert.equal(s.step, 8);
  assert.equal(s.temperature, 1);
  assert.equal(s.mask, "none");
  assert.equal(s.batch, false);
  assert.notEqual(
    await page.inputValue('[data-testid="preset"]'),
    "",
    "the preset box is not blank",
  );
  assert.ok(await page.isVisible('[data-testid="url-note"]'), "the note shows");
  const text = await page.textContent('[data-testid="url-note"]');
  for (const bad of ["v=nope", "st=99", "tau=abc", "m=zzz", "p=nope", "b=yes"])
    assert.ok(text.includes(bad), `the note names ${bad}: ${text}`);
  await shot("bad-link-note");
  const q = await settledSearch();
  assert.equal(q.get("st"), "8");
  for (const k of ["v", "tau", "m", "p", "b"]) assert.equal(q.get(k), null, `no ${k}= left`);

  await open("w=random&h=-3&dk=999&q=40");
  const r = await state();
  assert.equal(r.heads, 1);
  assert.equal(r.dK, 256);
  assert.equal(r.query, 6, "the query is a token of the text");
  const text2 = await page.textContent('[data-testid="url-note"]');
  for (const bad of ["h=-3", "dk=999", "q=40"])
    assert.ok(text2.includes(bad), `the note names ${bad}: ${text2}`);
  const q2 = await settledSearch();
  assert.equal(q2.get("h"), "1");
  assert.equal(q2.get("dk"), "256");
  assert.equal(q2.get("q"), "6");

  // Designed heads must divide d_model = 16: h=3 is used as 2, and the address says 2.
  await open("h=3");
  assert.equal((await state()).heads, 2);
  assert.match(await page.textContent('[data-testid="url-note"]'), /h=3 → 2.*divide/);
  assert.equal((await settledSearch()).get("h"), "2");
  await open("h=2");
  assert.ok(await page.isHidden('[data-testid="url-note"]'), "a good link has no note");
  assert.deepEqual(problems, []);
});

test("notes by number fields speak of the value shown: heads 3 -> 2 then 2; kv heads equal to heads", async () => {
  await open();
  await typeInto('[data-testid="heads"]', "3");
  await page.waitForFunction(() => /3 → 2/.test(document.querySelector("#adj-heads").textContent));
  assert.equal(await page.inputValue('[data-testid="heads"]'), "2");
  assert.match(await note("heads"), /3 → 2: heads must divide d_model = 16/);
  await typeInto('[data-testid="heads"]', "2");
  assert.equal(await note("heads"), "", "typing the value shown clears the note");
  assert.equal((await state()).heads, 2, "the state holds the heads used");
  assert.equal((await settledSearch()).get("h"), "2", "the address holds the heads used");

  await open("w=random");
  await typeInto('[data-testid="heads"]', "20");
  await page.waitForFunction(() => window.__attnkit.state().heads === 16);
  assert.equal((await state()).kvHeads, 16, "kv heads follow heads");
  assert.match(await note("heads"), /20 → 16: a whole number from 1 to 16/);
  assert.equal(await note("kvHeads"), "");
  assert.doesNotMatch(
    await page.textContent('[data-testid="notes"]'),
    /divide/,
    "no note that kv heads must divide heads when they are equal",
  );
  await shot("heads-notes");
  // Another change of the settings: the notes are about it, not the earlier entry.
  await typeInto('[data-testid="kvHeads"]', "3");
  await page.waitForFunction(() => window.__attnkit.state().kvHeads === 2);
  assert.match(await note("kvHeads"), /3 → 2: kv heads must divide heads = 16/);
  assert.equal(await note("heads"), "", "the heads note is gone");
  assert.deepEqual(problems, []);
});

test("reroll at the last seed goes back to the first, and the page equals its fresh load", async () => {
  await open("w=random");
  await typeInto('[data-testid="seed"]', "99999");
  assert.equal((await state()).seed, 99999);
  await page.click('[data-testid="reroll"]');
  assert.equal((await state()).seed, 0, "the seed after 99999");
  const search = await settledSearch();
  const reloaded = await context.newPage();
  await reloaded.goto(`${server.url}?${search}`);
  await ready(reloaded);
  const fresh = await reloaded.evaluate(() => window.__attnkit.state());
  await reloaded.close();
  assert.equal(fresh.seed, 0, `a fresh load of ?${search}`);
  assert.deepEqual(problems, []);
});
