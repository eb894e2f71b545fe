// Browser tests that change the page's controls the way a person does (choose
// options, type into fields, click cells) in Debian's Chromium through
// playwright-core, and check the page against the one loaded fresh from its own
// URL.
import assert from "node:assert/strict";
import { test } from "node:test";
import { watch } from "./lib/launch.mjs";
import { usePage } from "./lib/page.mjs";
import { stateWalk, WALK_STEPS } from "./lib/walk.mjs";

let server, browser, context, page, problems;
const { ready, state, shot, gotoStep, typeInto, settledSearch } = usePage(
  (s) => ({ server, browser, context, page, problems } = s),
  { onPage: (p) => p.goto(server.url).then(() => ready(p)), prefix: "controls-" },
);

/** Everything the stage and caption show: every matrix's size and numbers, and the caption's text. */
function snapshot(p = page) {
  return p.evaluate(() => {
    const svg = document.querySelector('svg[data-testid="scene-svg"]');
    const matrices = {};
    for (const id of window.__attnkit.matrixIds()) {
      const m = window.__attnkit.matrix(id);
      matrices[id] = {
        rows: m.rows,
        cols: m.cols,
        values: Array.from(m.values, (v) =>
          Number.isFinite(v) ? Number(v.toPrecision(6)) : String(v),
        ),
      };
    }
    return {
      view: svg?.getAttribute("data-view"),
      step: svg?.getAttribute("data-step"),
      title: document.querySelector('[data-testid="scene-title"]')?.textContent,
      caption: document
        .querySelector('[data-testid="caption"]')
        ?.textContent.replace(/\s+/g, " ")
        .trim(),
      matrices,
    };
  });
}

/** The page loaded fresh from the current page's URL shows the same. */
async function sameAsFreshLoad(what) {
  await settledSearch();
  const here = await snapshot();
  const fresh = await context.newPage();
  const freshProblems = [];
  watch(fresh, freshProblems);
  try {
    await fresh.goto(page.url());
    await ready(fresh);
    assert.deepEqual(
      await snapshot(fresh),
      here,
      `${what}: the page differs from the page loaded from its URL ${page.url()}`,
    );
    assert.deepEqual(freshProblems, [], `${what}: the fresh page's problems`);
  } finally {
    await fresh.close();
  }
}

/** Clicks cell (r, c) of a matrix on screen (at its centre, where a mouse would). */
async function clickCell(id, r, c) {
  const box = await page
    .locator(`[data-testid="matrix-${id}"] rect.cell[data-row="${r}"][data-col="${c}"]`)
    .boundingBox();
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  await page.waitForSelector('[data-testid="cell-editor"] input');
}

async function cellValue(id, r, c) {
  return Number(
    await page.getAttribute(
      `[data-testid="matrix-${id}"] rect.cell[data-row="${r}"][data-col="${c}"]`,
      "data-value",
    ),
  );
}

test("mask = padding chosen on the default page: 9 x 9 matrices, -inf in M, decoding works, same as a reload", async () => {
  await page.selectOption('[data-testid="mask"]', "padding");
  await page.waitForFunction(() => window.__attnkit.state().mask === "padding");
  await gotoStep(5);
  const T = (await page.evaluate(() => window.__attnkit.matrix("M"))).rows;
  assert.equal(T, 9, "T = 9: seven tokens and two [PAD]");
  const M = await page.evaluate(() => Array.from(window.__attnkit.matrix("M").values));
  assert.equal(M.length, 81);
  assert.equal(M.filter((v) => v === -Infinity).length, 18, "the two [PAD] columns of M are -inf");
  await shot("padding-step5");
  await sameAsFreshLoad("mask = padding, step 5");
  for (const n of [2, 6, 7]) {
    await gotoStep(n);
    await sameAsFreshLoad(`mask = padding, step ${n}`);
  }
  await page.click('[data-testid="view-decoding"]');
  await page.waitForSelector('svg[data-testid="scene-svg"][data-view="decoding"]');
  assert.match(await page.textContent('[data-testid="scene-title"]'), /decod/i);
  assert.ok(
    (await page
      .locator('[data-testid="scene-svg"] rect.cell, [data-testid="scene-svg"] canvas')
      .count()) > 0,
    "decoding: cells drawn",
  );
  await shot("padding-decoding");
  await sameAsFreshLoad("mask = padding, decoding");
  // And back: the mask off again gives the 7 x 7 page.
  await page.selectOption('[data-testid="mask"]', "none");
  await gotoStep(5);
  assert.equal((await page.evaluate(() => window.__attnkit.matrix("M"))).rows, 7);
  await sameAsFreshLoad("mask back to none");
  assert.deepEqual(problems, []);
});

test("a bad cell edit is refused at the cell with the reason; the page stays usable; a good one is applied", async () => {
  const noun = 0,
    train = 1;
  const before = await cellValue("X", train, noun);
  for (const typed of ["1e30", "NaN", "abc", "", "1e400", "-1e7"]) {
    await clickCell("X", train, noun);
    await page.fill('[data-testid="cell-editor"] input', typed);
    await page.press('[data-testid="cell-editor"] input', "Enter");
    const msg = page.locator('[data-testid="cell-editor-error"]');
    await msg.waitFor({ timeout: 3000 });
    const text = await msg.textContent();
    assert.match(
      text,
      /−?1e6|1 000 000|1,000,000/,
      `"${typed}": the message says what is accepted (${text})`,
    );
    assert.ok(
      await page.isVisible('[data-testid="cell-editor"]'),
      `"${typed}": the editor stays open`,
    );
    if (typed === "1e30") await shot("bad-edit-1e30");
    await page.press('[data-testid="cell-editor"] input', "Escape");
    await page.waitForSelector('[data-testid="cell-editor"]', { state: "detached" });
    assert.equal(await cellValue("X", train, noun), before, `"${typed}": the cell keeps its value`);
    assert.deepEqual((await state()).edits, {}, `"${typed}": no edit kept`);
    assert.equal(
      await page.locator('[data-testid="error"]').count(),
      0,
      `"${typed}": no page error`,
    );
  }
  // Still usable: steps change, and a good value is applied.
  await gotoStep(3);
  await gotoStep(1);
  await clickCell("X", train, noun);
  await page.fill('[data-testid="cell-editor"] input', "2.5");
  await page.press('[data-testid="cell-editor"] input', "Enter");
  await page.waitForFunction(() => window.__attnkit.state().edits["X0:1:0"] === 2.5);
  assert.equal(await cellValue("X", train, noun), 2.5);
  await sameAsFreshLoad("after a good edit");
  assert.deepEqual(problems, []);
});

test("a URL with a bad cell value opens with that value dropped and a note saying so", async () => {
  await page.goto(`${server.url}?ed=X0:1:0=1e30,X0:2:1=0.5`);
  await ready();
  const s = await state();
  assert.deepEqual(s.edits, { "X0:2:1": 0.5 }, "the good edit kept, the bad one dropped");
  const note = await page.textContent('[data-testid="url-note"]');
  assert.match(note, /1e\+?30/, `the note names the dropped value (${note})`);
  assert.ok(await page.isVisible('[data-testid="url-note"]'));
  assert.ok(
    (await page.locator('[data-testid="matrix-X"] rect.cell').count()) > 0,
    "the stage is drawn",
  );
  await shot("bad-url-note");
  await page.waitForFunction(
    () => !location.search.includes("1e30") && !location.search.includes("1e+30"),
  );
  await gotoStep(2);
  assert.deepEqual(problems, []);
});

test("adjusted settings: the field shows the value used and the reason sits next to it", async () => {
  // Default weights (identity): heads must divide d_model = 16.
  await typeInto('[data-testid="heads"]', "3");
  // The state, and so the URL, holds the value used.
  await page.waitForFunction(() => window.__attnkit.state().heads === 2);
  assert.equal(await page.inputValue('[data-testid="heads"]'), "2", "heads field: the value used");
  assert.match(
    await page.textContent('[data-testid="adj-heads"]'),
    /3.*2.*divide.*16/,
    "heads: why",
  );
  // d_k, d_v and kv heads are fixed by these weights: the page says so.
  for (const id of ["dK", "dV", "kvHeads"])
    assert.ok(await page.isDisabled(`[data-testid="${id}"]`));
  assert.match(await page.textContent('[data-testid="shape-hint"]'), /seeded random/);
  await shot("adjusted-heads");
  await page.selectOption('[data-testid="weights"]', "random");
  for (const [typed, used] of [
    ["0", "1"],
    ["100000", "256"],
  ]) {
    await typeInto('[data-testid="dK"]', typed);
    await page.waitForFunction((v) => window.__attnkit.state().dK === v, Number(used));
    assert.equal(
      await page.inputValue('[data-testid="dK"]'),
      used,
      `d_k ${typed}: the field shows ${used}`,
    );
    assert.match(
      await page.textContent('[data-testid="adj-dK"]'),
      new RegExp(`${typed}.*${used}`),
      `d_k ${typed}: why`,
    );
    assert.match(
      await page.textContent('[data-testid="adj-dK"]'),
      /1.*256/,
      `d_k ${typed}: the range`,
    );
  }
  await shot("adjusted-dk");
  await typeInto('[data-testid="dK"]', "8");
  await page.waitForFunction(() => window.__attnkit.state().dK === 8);
  assert.equal(
    (await page.textContent('[data-testid="adj-dK"]')).trim(),
    "",
    "no note when the value is used as typed",
  );
  assert.doesNotMatch(
    await page.textContent('[data-testid="shape-hint"]'),
    /d_k/,
    "random weights: d_k is not fixed",
  );
  assert.deepEqual(problems, []);
});

test(
  `state consistency: ${WALK_STEPS} seeded random control changes, each page equal to its fresh load`,
  // A guard against a hang only: the walk's time grows with the machine's load.
  { timeout: 600000 },
  async () => {
    const seed = Number(process.env.WALK_SEED ?? Date.now() % 100000);
    console.log(`# state walk seed ${seed} (replay: WALK_SEED=${seed})`);
    const r = await stateWalk({
      evaluate: (fn, arg) => page.evaluate(fn, arg),
      problems: async () => problems,
      seed,
      steps: WALK_STEPS,
      label: "Chromium",
    });
    console.log(`# Chromium: ${r.done} changes (${r.loads} fresh loads) in ${r.ms} ms`);
    assert.ok(
      r.done >= WALK_STEPS,
      `only ${r.done} of ${3 * WALK_STEPS} actions changed a control`,
    );
  },
);
