// Browser tests of the page as a newcomer meets it: several designed heads by
// default with their names shown, layout that keeps numbers inside their cells,
// a phone-sized screen, the keyboard, and text input. Debian's Chromium through
// playwright-core.
import assert from "node:assert/strict";
import { test } from "node:test";
import { assertPhoneFit } from "./lib/assert.mjs";
import { phonePage, watch } from "./lib/launch.mjs";
import { usePage } from "./lib/page.mjs";
import { PHONE_PAGES, phoneFit } from "./lib/reads.mjs";

let server, browser, context, page, problems;

const { open, gotoStep, shot } = usePage(
  (s) => ({ server, browser, context, page, problems } = s),
  { prefix: "newcomer-" },
);

test("the default page opens on several designed heads that differ, their names shown", async () => {
  await open();
  const st = await page.evaluate(() => window.__attnkit.state());
  assert.equal(st.weights, "designed");
  assert.ok(st.heads >= 3, `default heads: ${st.heads}`);
  await gotoStep(8);
  const maps = [];
  for (let h = 0; h < st.heads; h++)
    maps.push((await page.evaluate((id) => window.__attnkit.matrix(id), `headmap-${h}`)).values);
  for (let a = 0; a < maps.length; a++) {
    for (let b = a + 1; b < maps.length; b++) {
      const d = Math.max(...maps[a].map((v, k) => Math.abs(v - maps[b][k])));
      assert.ok(d > 0.1, `heads ${a} and ${b} attend alike (max difference ${d})`);
    }
  }
  const names = await page.textContent('[data-testid="head-names"]');
  assert.match(names, /verbs look for their nouns/);
  assert.match(names, /head 3/);
  await shot("step8-default");
  await page.click('[data-testid="view-headview"]');
  await page.waitForSelector('svg[data-view="headview"]');
  assert.match(await page.textContent('[data-testid="head-chip-0"]'), /verbs look for their nouns/);
  await page.click('[data-testid="view-grid"]');
  await page.waitForSelector('svg[data-view="grid"]');
  assert.match(
    await page.textContent('[data-testid="head-names"]'),
    /nouns look for their determiners/,
  );
  assert.match(
    await page.textContent('[data-testid="head"]'),
    /head 1: words look for the same topic/,
  );
  assert.deepEqual(problems, []);
});

/** Presses Tab until the focused element matches `sel` (at most `max` presses); fails if it never does. */
async function tabTo(sel, max = 120) {
  for (let n = 0; n < max; n++) {
    await page.keyboard.press("Tab");
    if (await page.evaluate((s) => document.activeElement?.matches(s), sel)) return n + 1;
  }
  throw new Error(`Tab never reached ${sel}`);
}

const cellValue = (id, r, c) =>
  page.evaluate(
    ([id, r, c]) => {
      const m = window.__attnkit.matrix(id);
      return m.values[r * m.cols + c];
    },
    [id, r, c],
  );

test("keyboard only: edit a cell of X, toggle a mask cell, open a head, isolate a token", async () => {
  await open();
  await tabTo('[data-hit="X"]');
  await page.keyboard.press("ArrowRight");
  await page.keyboard.press("ArrowRight");
  await page.keyboard.press("ArrowDown");
  assert.match(await page.textContent('[data-testid="announce"]'), /X row 1, column 2/);
  // A step's title is announced 400 ms after the step changes; a cell moved to since then
  // stays what the reader hears (the title must not overwrite it).
  await page.evaluate(() => document.querySelector('[data-testid="step-2"]').click());
  await page.evaluate(() => document.querySelector('[data-testid="step-1"]').click());
  await page.focus('[data-hit="X"]');
  await page.keyboard.press("ArrowUp");
  await page.keyboard.press("ArrowDown");
  await page.waitForTimeout(600);
  assert.match(await page.textContent('[data-testid="announce"]'), /X row 1, column 2/);
  await page.keyboard.press("Enter");
  await page.waitForSelector('[data-testid="cell-editor"] input');
  assert.match(await page.textContent('[data-testid="cell-editor"]'), /X\[1, 2\]/);
  await page.keyboard.press("Control+A");
  await page.keyboard.type("0.75");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => !document.querySelector('[data-testid="cell-editor"]'));
  assert.equal(await cellValue("X", 1, 2), 0.75, "X[1, 2] edited from the keyboard");
  assert.ok(
    await page.evaluate(() => document.activeElement?.getAttribute("data-hit") === "X"),
    "the focus is back on X",
  );
  await shot("keyboard-x-edited");
  // The edited cell's tooltip says where its value came from: the reader, not the lexicon.
  const xBox = await page.locator('[data-hit="X"]').boundingBox();
  const xCols = (await page.evaluate(() => window.__attnkit.matrix("X"))).cols;
  const xRows = (await page.evaluate(() => window.__attnkit.matrix("X"))).rows;
  const hover = async (r, c) => {
    await page.mouse.move(
      xBox.x + ((c + 0.5) * xBox.width) / xCols,
      xBox.y + ((r + 0.5) * xBox.height) / xRows,
    );
    return page.textContent('[data-testid="tooltip"]');
  };
  assert.match(await hover(1, 2), /edited by you/);
  assert.doesNotMatch(await hover(0, 0), /edited by you/, "an unedited cell names its source");

  await open("m=custom&st=5");
  await tabTo('[data-hit="M"]');
  for (let k = 0; k < 3; k++) await page.keyboard.press("ArrowRight");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => window.__attnkit.state().custom === "0.3");
  assert.equal(
    await cellValue("masked", 0, 3),
    -Infinity,
    "the mask cell toggled from the keyboard masks that score",
  );
  assert.ok(
    await page.evaluate(() => document.activeElement?.getAttribute("data-hit") === "M"),
    "the focus stays on M",
  );
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => window.__attnkit.state().custom === "");

  await open("v=grid");
  await tabTo('[data-hit="grid-2"]');
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => {
    const s = window.__attnkit.state();
    return s.view === "steps" && s.head === 2 && s.step === 6;
  });

  await open("v=headview");
  await tabTo('[data-testid="hv-q-0"]');
  assert.equal(
    await page.getAttribute('[data-testid="hv-lines"]', "data-isolated"),
    "i0",
    "focus isolates the token's lines",
  );
  await page.keyboard.press("ArrowDown");
  assert.equal(
    await page.evaluate(() => document.activeElement?.getAttribute("data-testid")),
    "hv-q-1",
  );
  await page.keyboard.press("ArrowRight");
  assert.equal(
    await page.evaluate(() => document.activeElement?.getAttribute("data-testid")),
    "hv-k-1",
  );
  await page.keyboard.press("Enter");
  assert.equal(
    await page.getAttribute('[data-testid="hv-lines"]', "data-pinned"),
    "j1",
    "Enter pins the key's lines",
  );
  assert.deepEqual(problems, []);
});

test("screen readers: sliders have their own names; the caption is not a live region; a step change is announced once", async () => {
  await open();
  assert.equal(await page.getByRole("slider", { name: "temperature τ" }).count(), 1);
  assert.equal(await page.getByRole("slider", { name: /softcap/ }).count(), 1);
  assert.equal(
    await page.getAttribute('[data-testid="caption"]', "aria-live"),
    null,
    "the caption does not re-announce itself",
  );
  await page.keyboard.press("3");
  await page.waitForFunction(() =>
    /Step 3/.test(document.querySelector('[data-testid="announce"]').textContent),
  );
  // Slider ticks redraw the scene but announce nothing new.
  await page.evaluate(() => {
    window.__said = [];
    new MutationObserver(() =>
      window.__said.push(document.querySelector('[data-testid="announce"]').textContent),
    ).observe(document.querySelector('[data-testid="announce"]'), {
      childList: true,
      characterData: true,
      subtree: true,
    });
  });
  await page.focus('[data-testid="temperature"]');
  for (let k = 0; k < 6; k++) await page.keyboard.press("ArrowRight");
  await page.waitForTimeout(600);
  assert.deepEqual(
    await page.evaluate(() => window.__said),
    [],
    "nothing announced while the slider moves",
  );
  assert.deepEqual(problems, []);
});

test("a tap on a head-view token keeps its lines (the touch form of hover)", async () => {
  const { context: phone, page: p } = await phonePage(browser, problems);
  await open("v=headview", p);
  await p.tap('[data-testid="hv-k-4"]');
  assert.equal(await p.getAttribute('[data-testid="hv-lines"]', "data-pinned"), "j4");
  assert.equal(await p.getAttribute('[data-testid="hv-lines"]', "data-isolated"), "j4");
  assert.ok(await p.isVisible('[data-testid="tooltip"]'), "the tap shows the token's top keys");
  await shot("phone-headview-tap", p);
  await p.tap('[data-testid="hv-k-4"]');
  assert.equal(
    await p.getAttribute('[data-testid="hv-lines"]', "data-pinned"),
    null,
    "a second tap lets go",
  );
  await phone.close();
  assert.deepEqual(problems, []);
});

test("phone 390 x 844: every step and view of the default and the batch preset fits the width; header and step bar are short", async () => {
  const { context: phone, page: p } = await phonePage(browser, problems);
  for (const base of [
    "",
    "p=flies&b=1&w=designed&h=2&kvh=2&t=time%20flies%20like%20an%20arrow&t2=fruit%20flies%20like%20a%20banana",
  ]) {
    for (const q of PHONE_PAGES) {
      await open([base, q].filter(Boolean).join("&"), p);
      assertPhoneFit(await p.evaluate(phoneFit), `${base ? "batch" : "default"} ${q}`);
      if (!base) await shot(`phone-${q.replace("=", "-")}`, p);
    }
  }
  await phone.close();
  assert.deepEqual(problems, []);
});

/** Run in the page: cell numbers that reach outside their cell, and legend tick labels that touch. */
function layoutProblems() {
  const out = [];
  for (const g of document.querySelectorAll('[data-testid^="matrix-"]')) {
    const rects = g.querySelectorAll("rect.cell");
    g.querySelectorAll("text.cell-text").forEach((t, k) => {
      if (!t.textContent) return;
      const a = t.getBoundingClientRect(),
        b = rects[k].getBoundingClientRect();
      if (a.left < b.left - 1 || a.right > b.right + 1)
        out.push(
          `${g.dataset.testid} cell ${k}: “${t.textContent}” ${a.width.toFixed(0)} px wide in a ${b.width.toFixed(0)} px cell`,
        );
    });
  }
  for (const lg of document.querySelectorAll('[data-testid="legend"]')) {
    const ticks = [...lg.querySelectorAll(".tick text")]
      .map((t) => t.getBoundingClientRect())
      .sort((a, b) => a.left - b.left);
    for (let k = 1; k < ticks.length; k++)
      if (ticks[k].left < ticks[k - 1].right + 1) out.push(`legend ticks ${k - 1} and ${k} touch`);
  }
  const legends = [...document.querySelectorAll('[data-testid="legend"]')].map((l) =>
    l.getBoundingClientRect(),
  );
  for (let i = 0; i < legends.length; i++) {
    for (let j = i + 1; j < legends.length; j++) {
      const [a, b] = [legends[i], legends[j]];
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
        out.push(`legends ${i} and ${j} overlap`);
    }
  }
  const svg = document.querySelector('[data-testid="scene-svg"]').getBoundingClientRect();
  for (const [k, l] of legends.entries())
    if (l.right > svg.right + 1 || l.bottom > svg.bottom + 1)
      out.push(`legend ${k} cut off by the scene's edge`);
  // Every matrix is drawn whole within the scene (a scroll reaches it, nothing clips it).
  for (const g of document.querySelectorAll('[data-testid^="matrix-"]')) {
    const r = g.getBoundingClientRect();
    if (r.right > svg.right + 1) out.push(`${g.dataset.testid} cut off by the scene's edge`);
  }
  // A scene too wide even at half size scrolls inside the stage, never the page.
  const stage = document.querySelector('[data-testid="stage"]').getBoundingClientRect();
  if (stage.right > innerWidth)
    out.push(`the stage runs off the page (${stage.right} > ${innerWidth})`);
  if (document.documentElement.scrollWidth > innerWidth)
    out.push(`the page scrolls sideways (${document.documentElement.scrollWidth})`);
  return out;
}

/** The top of each named matrix's grid (its first cell), in page pixels. */
const gridTops = (ids) =>
  page.evaluate(
    (ids) =>
      ids.map(
        (id) =>
          document
            .querySelector(
              `[data-testid="matrix-${id}"] rect.cell, [data-testid="matrix-${id}"] canvas`,
            )
            .getBoundingClientRect().top,
      ),
    ids,
  );

test("layout: 1e5 in a cell stays in its cell, legend ticks do not touch, legends do not overlap, wide scenes fit", async () => {
  await open("ed=X0:1:2=100000");
  assert.deepEqual(await page.evaluate(layoutProblems), [], "1e5 in X");
  assert.match(
    await page.textContent('[data-testid="matrix-X"]'),
    /100000|1e5/,
    "the big value is shown",
  );
  await shot("x-1e5");
  for (const n of [2, 3, 6, 8]) {
    await gotoStep(n);
    assert.deepEqual(await page.evaluate(layoutProblems), [], `1e5 in X, step ${n}`);
  }
  await open(
    "p=flies&b=1&w=designed&h=2&kvh=2&t=time%20flies%20like%20an%20arrow&t2=fruit%20flies%20like%20a%20banana&st=6",
  );
  assert.deepEqual(await page.evaluate(layoutProblems), [], "batch, step 6");
  await shot("batch-step6");
  for (const q of [
    "w=random&h=16&kvh=16&dk=256&dv=256&e=random&dm=256&st=2",
    "w=random&h=16&kvh=16&dk=256&dv=256&e=random&dm=256&st=8",
    "st=2",
    "w=random&h=16&kvh=16&dk=256&dv=256&e=random&dm=256&v=grid",
  ]) {
    await open(q);
    assert.deepEqual(await page.evaluate(layoutProblems), [], q);
  }
  await shot("q-7x4096-16heads");
  for (const q of [
    "st=2",
    "st=2&r=V",
    "w=random&st=2",
    "st=8",
    "p=flies&b=1&w=designed&h=2&kvh=2&t=time%20flies%20like%20an%20arrow&t2=fruit%20flies%20like%20a%20banana&st=6",
  ]) {
    await open(q);
    const [sw, cw] = await page.evaluate(() => {
      const s = document.querySelector('[data-testid="stage"]');
      return [s.scrollWidth, s.clientWidth];
    });
    assert.ok(
      sw <= cw,
      `${q}: the scene fits the stage at 1440 px without scrolling (${sw} > ${cw})`,
    );
  }
  assert.deepEqual(problems, []);
});

test("layout: the weights, the row sums and M line up with the scores beside them", async () => {
  await open("st=6");
  const [a, w, s] = await gridTops(["masked6", "weights", "rowsums"]);
  assert.ok(Math.abs(a - w) < 1 && Math.abs(w - s) < 1, `step 6 grid tops ${a}, ${w}, ${s}`);
  await open("st=5");
  const [x, m, b] = await gridTops(["scaled5", "M", "masked"]);
  assert.ok(Math.abs(x - m) < 1 && Math.abs(m - b) < 1, `step 5 grid tops ${x}, ${m}, ${b}`);
  assert.deepEqual(problems, []);
});

test("colour: W^Q and W^O have their own scale, so random weights are not a flat grey block", async () => {
  await open("w=random&st=2");
  const spread = (id) =>
    page.evaluate((id) => {
      const fills = [...document.querySelectorAll(`[data-testid="matrix-${id}"] rect.cell`)].map(
        (r) => r.getAttribute("fill"),
      );
      return new Set(fills).size / fills.length;
    }, id);
  const sat = (id) =>
    page.evaluate((id) => {
      // How far the cells' colours are from grey, on average (0: all grey).
      const fills = [...document.querySelectorAll(`[data-testid="matrix-${id}"] rect.cell`)].map(
        (r) => [1, 3, 5].map((k) => parseInt(r.getAttribute("fill").slice(k, k + 2), 16)),
      );
      return (
        fills.reduce((s, [r, g, b]) => s + Math.max(r, g, b) - Math.min(r, g, b), 0) / fills.length
      );
    }, id);
  assert.ok(
    (await sat("WQ")) > 50,
    `W^Q's colours are close to grey (mean spread ${await sat("WQ")})`,
  );
  assert.ok((await spread("WQ")) > 0.3, "W^Q's cells take many colours");
  await open("w=random&h=2&kvh=2&st=8");
  assert.ok(
    (await sat("WO")) > 45,
    `W^O's colours are close to grey (mean spread ${await sat("WO")})`,
  );
  assert.equal(
    await page.locator('[data-testid="legend"]', { hasText: "own colour scale" }).count(),
    1,
    "step 8 has W^O's legend",
  );
  assert.deepEqual(problems, []);
});

test("text: emoji are one token each; empty text and a cut text say so; no seed numbers, no “all 1 heads”", async () => {
  await open();
  await page.fill('[data-testid="text"]', "I ❤️ trains 👨‍👩‍👧‍👦");
  await page.waitForFunction(() => window.__attnkit.state().text.includes("👨"));
  await page.waitForFunction(() =>
    /^4 tokens/.test(document.querySelector('[data-testid="token-info"]').textContent),
  );
  const options = await page.$$eval('[data-testid="query"] option', (os) =>
    os.map((o) => o.textContent),
  );
  assert.deepEqual(options, ["0: I", "1: ❤️", "2: trains", "3: 👨‍👩‍👧‍👦"]);
  assert.equal(
    await page.isVisible('[data-testid="text-note"]'),
    false,
    "no note for a text that is used whole",
  );

  await page.fill('[data-testid="text"]', "");
  await page.waitForFunction(() => window.__attnkit.state().text === "");
  assert.ok(await page.isVisible('[data-testid="text-note"]'));
  assert.match(await page.textContent('[data-testid="text-note"]'), /empty: type a sentence/);
  await shot("empty-text");

  const long = Array.from({ length: 500 }, (_, i) => `w${i}`).join(" ");
  await page.fill('[data-testid="text"]', long);
  await page.waitForFunction(() => window.__attnkit.state().text.length > 1000);
  assert.match(
    await page.textContent('[data-testid="text-note"]'),
    /500 tokens.*at most 128.*last 372.*“w128 w129 w130 w131 …”/,
  );
  await page.fill('[data-testid="text"]', "the train left");
  await page.waitForFunction(() => window.__attnkit.state().text === "the train left");
  assert.equal(await page.isVisible('[data-testid="text-note"]'), false);

  for (const q of [
    "v=grid&h=1&kvh=1",
    "v=saturation",
    "p=seed001&w=seed&m=causal&h=1&kvh=1&st=1",
    "p=seed001&w=seed&m=causal&h=1&kvh=1&st=2",
  ]) {
    await open(q);
    const caption = await page.textContent('[data-testid="caption"]');
    assert.doesNotMatch(
      caption,
      /seed 00\d/i,
      `${q}: the caption names the source, not its file number`,
    );
    assert.doesNotMatch(caption, /all 1 heads/, `${q}: grammar`);
  }
  assert.doesNotMatch(
    await page.textContent('[data-testid="preset"]'),
    /seed 00\d/i,
    "preset names",
  );
  assert.deepEqual(problems, []);
});

test("a fully masked row: step 6 says why its sum is 0", async () => {
  const row0 = Array.from({ length: 7 }, (_, j) => `0.${j}`).join("_");
  await open(`m=custom&cm=${row0}&st=6`);
  const sums = await page.evaluate(() => window.__attnkit.matrix("rowsums").values);
  assert.equal(sums[0], 0, "row 0 sums to 0");
  assert.equal(await page.textContent('[data-testid="empty-rows"]'), "row 0");
  assert.match(
    await page.textContent('[data-testid="caption"]'),
    /every key of that query is masked/,
  );
  await open("st=6");
  assert.equal(
    await page.locator('[data-testid="empty-rows"]').count(),
    0,
    "no such note when every row sums to 1",
  );
  assert.deepEqual(problems, []);
});

test("exports carry the view's title and caption", async () => {
  const ctx = await browser.newContext({
    viewport: { width: 1440, height: 900 },
    reducedMotion: "reduce",
    acceptDownloads: true,
  });
  const p = await ctx.newPage();
  watch(p, problems);
  await open("st=6", p);
  const [download] = await Promise.all([
    p.waitForEvent("download"),
    p.click('[data-testid="export-svg"]'),
  ]);
  const svg = await (await import("node:fs/promises")).readFile(await download.path(), "utf8");
  assert.match(svg, /<title>attnkit · 6\. Softmax per row<\/title>/);
  assert.match(svg, /data-export="caption"[^]*probability distribution over the keys/);
  const words = svg.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ");
  assert.match(words, /the train left the station on time/, "the caption names the text");
  await ctx.close();
  assert.deepEqual(problems, []);
});

/** The page still works: no error shown, cells drawn, and a step change draws that step. */
async function usable(what) {
  assert.equal(
    await page.locator('[data-testid="error"]').count(),
    0,
    `${what}: an error is shown`,
  );
  assert.ok(
    (await page
      .locator('[data-testid="scene-svg"] rect.cell, [data-testid="scene-svg"] canvas')
      .count()) > 0,
    `${what}: the stage is blank`,
  );
}

test("malformed and out-of-range input at every number field: a message next to it, the page stays usable", async () => {
  const fields = {
    dModel: "e=random&w=random",
    seed: "w=random",
    dK: "w=random",
    dV: "w=random",
    heads: "w=random",
    kvHeads: "w=random",
  };
  for (const [id, q] of Object.entries(fields)) {
    await open(q);
    const sel = `[data-testid="${id}"]`;
    for (const bad of ["1e", "1e400", "-7", "99999999", "2.5"]) {
      await page.fill(sel, "");
      await page.type(sel, bad);
      await page.press(sel, "Enter");
      await page.waitForTimeout(50);
      const note = (await page.textContent(`[data-testid="adj-${id}"]`)).trim();
      const used = await page.inputValue(sel);
      // A value the page adjusts or refuses says so; one it uses as typed needs no note.
      if (String(Number(bad)) !== used)
        assert.ok(note.length > 0, `${id} = ${bad}: no message (field shows ${used})`);
      assert.ok(
        used !== "" && Number.isFinite(Number(used)),
        `${id} = ${bad}: the field shows a number (${used})`,
      );
      await usable(`${id} = ${bad}`);
    }
    await page.fill(sel, "");
    const good = { dModel: 8, seed: 4, dK: 4, dV: 4, heads: 2, kvHeads: 1 }[id];
    await page.type(sel, String(good));
    await page.press(sel, "Enter");
    await page.waitForFunction(([id, good]) => window.__attnkit.state()[id] === good, [id, good]);
    assert.equal(
      (await page.textContent(`[data-testid="adj-${id}"]`)).trim(),
      "",
      `${id}: a good value clears the message`,
    );
    await gotoStep(3);
    await usable(`${id}: after the bad values`);
  }
  assert.deepEqual(problems, []);
});

test("malformed and out-of-range input at a cell of every editable matrix: refused at the cell with a reason", async () => {
  const cells = [
    ["X", "st=1"],
    ["WQ", "w=random&st=2"],
    ["WK", "w=random&st=2&r=K"],
    ["WV", "w=random&st=2&r=V"],
    ["WO", "w=random&h=2&kvh=2&st=8"],
  ];
  for (const [id, q] of cells) {
    await open(q);
    for (const bad of ["abc", "", "1e400", "1e30", "NaN"]) {
      const before = await page.evaluate((id) => window.__attnkit.matrix(id).values[1], id);
      const box = await page
        .locator(`[data-testid="matrix-${id}"] rect.cell[data-row="0"][data-col="1"]`)
        .boundingBox();
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      await page.waitForSelector('[data-testid="cell-editor"] input');
      await page.fill('[data-testid="cell-editor"] input', bad);
      await page.press('[data-testid="cell-editor"] input', "Enter");
      await page.waitForSelector('[data-testid="cell-editor-error"]:not([hidden])');
      assert.match(
        await page.textContent('[data-testid="cell-editor-error"]'),
        /number|range|float32|compute/,
        `${id} = “${bad}”: the reason`,
      );
      await page.press('[data-testid="cell-editor"] input', "Escape");
      assert.equal(
        await page.evaluate((id) => window.__attnkit.matrix(id).values[1], id),
        before,
        `${id} = “${bad}”: the cell keeps its value`,
      );
      await usable(`${id} = “${bad}”`);
    }
  }
  assert.deepEqual(problems, []);
});

test("numbers: shown in Q, step 7, all heads and decoding where they fit; a note says how to read the rest", async () => {
  const shown = (id) =>
    page.evaluate((id) => {
      const g = document.querySelector(`[data-testid="matrix-${id}"]`);
      const texts = [...g.querySelectorAll("text.cell-text")].map((t) => t.textContent);
      const values = [...g.querySelectorAll("rect.cell")].map((r) =>
        Number(r.getAttribute("data-value")),
      );
      return { texts, values };
    }, id);
  for (const [q, ids] of [
    ["st=2", ["Q"]],
    ["st=7", ["weights7", "V7", "output"]],
    ["v=grid", ["grid-0", "grid-3"]],
    ["v=decoding", ["fullCausal"]],
  ]) {
    await open(q);
    for (const id of ids) {
      const { texts, values } = await shown(id);
      assert.equal(texts.length, values.length, `${q}: ${id} shows a number in every cell`);
      // Each number is its cell's value, rounded as shown.
      texts.forEach((t, k) =>
        assert.ok(
          Math.abs(Number(t.replace("−", "-")) - values[k]) <= 0.006,
          `${q}: ${id} cell ${k} shows ${t} for ${values[k]}`,
        ),
      );
    }
    assert.equal(
      (await page.textContent('[data-testid="numbers-note"]')).trim(),
      "",
      `${q}: no note when every number is shown`,
    );
  }
  await open("w=random&e=random&dm=64&h=8&kvh=8&dk=8&dv=8&st=8");
  assert.match(
    await page.textContent('[data-testid="numbers-note"]'),
    /too small for their numbers: hover a cell \(tap on a touch screen\)/,
  );
  assert.deepEqual(problems, []);
});

test("decoding: the weights' colour scale appears with the first row of weights, not before", async () => {
  await open("v=decoding");
  const legends = () => page.locator('svg[data-testid="scene-svg"] [data-testid="legend"]').count();
  assert.equal(await legends(), 1, "before the first step only the values' scale is drawn");
  await page.click('[data-testid="decode-step"]');
  await page.waitForFunction(() =>
    /^1 \//.test(document.querySelector('[data-testid="decode-pos"]')?.textContent ?? ""),
  );
  await page.waitForFunction(
    () =>
      document.querySelectorAll('svg[data-testid="scene-svg"] [data-testid="legend"]').length === 2,
  );
  await page.click('[data-testid="decode-reset"]');
  await page.waitForFunction(
    () =>
      document.querySelectorAll('svg[data-testid="scene-svg"] [data-testid="legend"]').length === 1,
  );
  assert.deepEqual(problems, []);
});
