// What a learner still hit on the page after the first round of issue 30 (the tryout's
// W1..W7 and its observations): each test does what the learner did, at the same window
// size, and checks what the page shows. Debian's Chromium through playwright-core, on the
// page built by Vite.
import assert from "node:assert/strict";
import { test } from "node:test";
import { phonePage } from "./lib/launch.mjs";
import { usePage } from "./lib/page.mjs";

let server, browser, context, page, problems;

const { open, shot, clickCell } = usePage(
  (s) => ({ server, browser, context, page, problems } = s),
  { context: { viewport: { width: 1400, height: 900 } } },
);

/** A number as the page writes it (− for minus). */
const num = (t) => Number(t.replace(/−/g, "-"));

/** One SVG matrix of the scene: its exact values and the text of each cell. */
const svgMatrix = (id, p = page) =>
  p.$eval(`#stage [data-testid="matrix-${id}"]`, (g) => ({
    rows: Number(g.dataset.rows),
    cols: Number(g.dataset.cols),
    values: [...g.querySelectorAll("rect.cell")].map((r) => Number(r.dataset.value)),
    texts: [...g.querySelectorAll("text.cell-text")].map((t) => t.textContent),
  }));

const overlap = (a, b) =>
  Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x) > 0.5 &&
  Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y) > 0.5;

test("W1: step 5 writes the scores of a matrix at one number of decimals, no exponent form", async () => {
  const base = "w=random&e=random&dm=8&m=causal&t=a+b+c+a+b";
  const written = {};
  for (const [st, ids] of [
    [4, ["scaled"]],
    [5, ["scaled5", "masked"]],
    [6, ["masked6"]],
  ]) {
    await open(`${base}&st=${st}`);
    if (st === 5) await shot("tryout-w1-step5");
    for (const id of ids) {
      const m = await svgMatrix(id).catch(() => null);
      if (!m) continue;
      const decimals = new Set();
      m.texts.forEach((t, k) => {
        if (!Number.isFinite(m.values[k])) return;
        assert.doesNotMatch(t, /e/, `step ${st} ${id}[${k}]: ${m.values[k]} written "${t}"`);
        decimals.add((t.split(".")[1] ?? "").length);
        assert.ok(
          Math.abs(num(t) - m.values[k]) <= 0.5 * 10 ** -(t.split(".")[1] ?? "").length + 1e-6,
          `step ${st} ${id}[${k}]: "${t}" is ${m.values[k]}`,
        );
        written[`${st} ${id}`] ??= [];
        written[`${st} ${id}`].push(t);
      });
      assert.equal(decimals.size, 1, `step ${st} ${id}: one number of decimals (${[...decimals]})`);
    }
  }
  // −11.80, as steps 4 and 6 write it, is in step 5's matrices too.
  assert.ok(written["5 scaled5"].includes("−11.80"), written["5 scaled5"].join(" "));
  assert.ok(written["5 masked"].includes("−11.80"), written["5 masked"].join(" "));
  assert.ok(written["4 scaled"].includes("−11.80"), written["4 scaled"].join(" "));
  assert.deepEqual(problems, []);
});

test("W2: decoding: rows not decoded yet are blank and grey, never NaN; one row is 'row 0'", async () => {
  await open("v=decoding");
  let m = await svgMatrix("decoded");
  assert.equal(
    m.texts.filter((t) => /NaN/.test(t)).length,
    0,
    `no cell reads NaN before any step: ${m.texts.slice(0, 8).join(" ")}`,
  );
  assert.ok(
    m.texts.every((t) => t === ""),
    "before any step every decoded cell is blank",
  );
  assert.match(await page.textContent('[data-testid="decode-pending"]'), /not decoded yet/);
  await shot("tryout-w2-decoding-initial");
  await page.click('[data-testid="decode-step"]');
  await page.waitForSelector('[data-testid="decode-check"]');
  m = await svgMatrix("decoded");
  const rowTexts = (r) => m.texts.slice(r * m.cols, (r + 1) * m.cols);
  assert.ok(
    rowTexts(0).every((t) => t !== "" && !/NaN/.test(t)),
    `row 0 is written: ${rowTexts(0)}`,
  );
  for (let r = 1; r < m.rows; r++)
    assert.ok(
      rowTexts(r).every((t) => t === ""),
      `row ${r} is not decoded yet: blank (${rowTexts(r).slice(0, 3)})`,
    );
  const check = await page.textContent('[data-testid="decode-check"]');
  assert.match(check, /row 0 of the full causal/);
  assert.doesNotMatch(check, /0–0/);
  await shot("tryout-w2-decoding-step1");
  await page.click('[data-testid="decode-step"]');
  await page.waitForFunction(() =>
    /rows 0–1/.test(document.querySelector('[data-testid="decode-check"]')?.textContent ?? ""),
  );
  assert.deepEqual(problems, []);
});

test("W3: phone, a tap on a head-view token: its tooltip covers none of the lines and no token", async () => {
  const { context: phone, page: p } = await phonePage(browser, problems);
  await open("v=headview&t=the+cat+saw+the+cat+and+the+dog", p);
  for (const id of ["hv-q-4", "hv-k-1", "hv-q-7", "hv-k-0"]) {
    await p.tap(`[data-testid="${id}"]`);
    await p.waitForSelector('[data-testid="tooltip"]', { state: "visible" });
    const tip = await p.locator('[data-testid="tooltip"]').boundingBox();
    const lines = await p.locator('[data-testid="hv-lines"]').boundingBox();
    if (id === "hv-q-4") await shot("tryout-w3-phone-headview-tap", p);
    assert.ok(
      !overlap(tip, lines),
      `${id}: the tooltip ${JSON.stringify(tip)} is clear of the lines ${JSON.stringify(lines)}`,
    );
    const tokens = await p.$$eval(".hv-token", (ts) =>
      ts.map((t) => {
        const b = t.getBoundingClientRect();
        return { id: t.dataset.testid, x: b.x, y: b.y, width: b.width, height: b.height };
      }),
    );
    const covered = tokens.filter((t) => overlap(tip, t)).map((t) => t.id);
    assert.deepEqual(covered, [], `${id}: the tooltip covers no token`);
    assert.ok(tip.y >= 0 && tip.y + tip.height <= 844 && tip.x >= 0 && tip.x + tip.width <= 390);
    await p.tap(`[data-testid="${id}"]`);
  }
  await phone.close();
  assert.deepEqual(problems, []);
});

test("W4: a link with bad values: every note gives the value used, and the address holds it", async () => {
  await open("v=nope&st=99&tau=abc&h=-3&dk=999&p=nope");
  await page.waitForSelector('[data-testid="url-note"]:not([hidden])');
  const text = await page.textContent('[data-testid="url-note"]');
  await shot("tryout-w4-badparams");
  // Designed weights fix d_k = 16 / heads: with h=-3 → 1, d_k = 16, as the sidebar says.
  const dkShown = await page.inputValue('[data-testid="dK"]');
  assert.equal(dkShown, "16", "the sidebar's d_k");
  assert.match(text, /dk=999 → 16\b/, `the note gives the d_k used: ${text}`);
  assert.doesNotMatch(text, /→ 256/, text);
  for (const bad of ["v=nope", "st=99 → 8", "tau=abc", "h=-3 → 1", "p=nope"])
    assert.ok(text.includes(bad), `the note names ${bad}: ${text}`);
  await page.waitForFunction(() => new URL(location.href).searchParams.get("dk") === "16");
  const q = new URL(page.url()).searchParams;
  assert.equal(q.get("h"), "1");
  assert.equal(q.get("st"), "8");
  // The address, loaded afresh, is the same page with no note.
  await open(new URL(page.url()).search.slice(1));
  assert.ok(await page.isHidden('[data-testid="url-note"]'), "the address it wrote has no note");
  assert.equal(await page.inputValue('[data-testid="dK"]'), "16");
  assert.deepEqual(problems, []);
});

test("a link with a parameter the page does not know: a note names it, the address drops it", async () => {
  await open("st=3&zoom=2&foo");
  await page.waitForSelector('[data-testid="url-note"]:not([hidden])');
  const text = await page.textContent('[data-testid="url-note"]');
  assert.match(text, /zoom=2: not a setting of this page; ignored/);
  assert.match(text, /foo: not a setting/);
  await page.waitForFunction(() => !new URL(location.href).searchParams.has("zoom"));
  assert.equal(new URL(page.url()).searchParams.get("st"), "3");
  // The Train view's own parameters are settings of this page.
  await open("v=train&tt=sort&tl=2");
  assert.ok(
    await page.isHidden('[data-testid="url-note"]'),
    "no note for the Train view's settings",
  );
  assert.deepEqual(problems, []);
});

test("W5: a click on a weight of step 6 shows its softmax: exp(s − max) per key, their sum, its share", async () => {
  await open("st=6&m=causal&tau=2");
  const S = await page.evaluate(() => window.__attnkit.matrix("masked6"));
  const A = await page.evaluate(() => window.__attnkit.matrix("weights"));
  const at = (m, r, c) => m.values[r * m.cols + c];
  const [r, c] = [2, 1];
  await clickCell("weights", r, c);
  await page.waitForSelector('[data-testid="worked"]:not([hidden])', { timeout: 3000 });
  const w = await page.$eval('[data-testid="worked"]', (el) => ({
    cell: el.dataset.cell,
    terms: [...el.querySelectorAll('[data-testid="worked-term"]')].map((t) => t.textContent),
    sum: el.querySelector('[data-testid="worked-sum"]')?.textContent,
    total: el.querySelector('[data-testid="worked-total"]')?.textContent,
    text: el.textContent,
  }));
  await shot("tryout-w5-softmax-worked");
  assert.equal(w.cell, `weights:${r}:${c}`);
  assert.equal(w.terms.length, S.cols, "one term per key of the row");
  const s = Array.from({ length: S.cols }, (_, j) => at(S, r, j));
  const m = Math.max(...s.filter((x) => x !== null && Number.isFinite(x)));
  let written = 0;
  w.terms.forEach((t, j) => {
    const e = /=\s*([−\d.]+)\s*$/.exec(t);
    assert.ok(e, `term ${j}: ${t}`);
    assert.match(e[1], /\.\d{4}$/, `term ${j} at 4 decimals`);
    const exact = Number.isFinite(s[j]) ? Math.exp(s[j] - m) : 0;
    assert.ok(Math.abs(num(e[1]) - exact) <= 5e-5, `term ${j}: ${t} is exp(${s[j]} − ${m})`);
    if (Number.isFinite(s[j])) assert.match(t, /exp\(/);
    else assert.match(t, /masked/);
    written += num(e[1]);
  });
  assert.ok(Math.abs(num(w.sum) - written) <= S.cols * 5e-5 + 1e-9, `Σ ${w.sum} of ${written}`);
  const v = at(A, r, c);
  assert.equal(w.total, v.toFixed(4), "the share is the cell's value");
  const share =
    Math.exp(s[c] - m) / s.reduce((a, x) => a + (Number.isFinite(x) ? Math.exp(x - m) : 0), 0);
  assert.ok(Math.abs(share - v) <= 5e-5, `e_c / Σ = ${share}, attnkit ${v}`);
  assert.deepEqual(problems, []);
});

test("W7: numbers rounded to whole numbers to fit are said so by name, under the stage", async () => {
  await open("w=random&e=random&dm=8&m=causal&t=a+b+c+a+b&st=8");
  const whole = await page.$$eval('[data-whole-numbers="1"]', (gs) =>
    gs.map((g) => g.dataset.testid),
  );
  await shot("tryout-w7-step8");
  for (const id of ["concat", "out"]) {
    const m = await svgMatrix(id);
    assert.ok(
      m.texts.every((t) => /^−?\d+$/.test(t)),
      `${id} writes whole numbers here: ${m.texts.slice(0, 6)}`,
    );
    assert.ok(whole.includes(`matrix-${id}`), `${id} is marked as whole numbers`);
  }
  const note = await page.textContent('[data-testid="numbers-note"]');
  assert.match(note, /“concat\(heads\)” and “output” are rounded to whole numbers/, note);
  assert.match(note, /hover or click a cell/, note);
  // Where every number keeps its decimals, no such note.
  await open("w=random&e=random&dm=8&m=causal&t=a+b+c+a+b&st=7");
  assert.doesNotMatch(await page.textContent('[data-testid="numbers-note"]'), /whole numbers/);
  assert.deepEqual(problems, []);
});

test("Train view: a digit key stays in the view and says how to reach that step", async () => {
  await open("v=train");
  await page.evaluate(() => document.activeElement?.blur());
  await page.keyboard.press("3");
  const s = await page.evaluate(() => window.__attnkit.state());
  assert.equal(s.view, "train", "pressing 3 stays in the Train view");
  assert.match(await page.textContent('[data-testid="train-key-note"]'), /press s .* then 3/);
  await shot("tryout-train-digit");
  // Elsewhere the digits still jump to a step.
  await page.keyboard.press("s");
  await page.waitForSelector('svg[data-view="steps"]');
  await page.keyboard.press("3");
  await page.waitForSelector('svg[data-step="3"]');
  assert.deepEqual(problems, []);
});
