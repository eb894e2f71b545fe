// The numbers a learner checks by hand, and the labels around them (issue 30, items 9, 10,
// 14 and 15): every cell of a matrix written alike, rows of weights that add up to the sum
// beside them, a clicked cell's arithmetic from the package's own numbers, the temperature
// named where it divides, one name for a repeated token, a head-view tooltip beside its
// lines, a preset box that shows its text, step 8's labels clear of each other and readable
// on a phone. Debian's Chromium through playwright-core, on the page built by Vite.
import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { phonePage } from "./lib/launch.mjs";
import { usePage } from "./lib/page.mjs";
import { shots } from "./lib/paths.mjs";

let server, browser, context, page, problems;

const { open, shot, clickCell, gotoStep } = usePage(
  (s) => ({ server, browser, context, page, problems } = s),
  { perTest: false },
);

// Presets as their URLs hold them (a URL gives the state, not the preset's settings).
const FOX = "The%20quick%20brown%20fox%20jumped%20over%20the%20lazy%20dog";
const FLIES =
  "p=flies&b=1&w=designed&h=2&kvh=2&t=time%20flies%20like%20an%20arrow&t2=fruit%20flies%20like%20a%20banana";

/** A number as the page writes it (− for minus). */
const num = (t) => Number(t.replace("−", "-"));

/** Every SVG matrix of the scene: its id, its exact values and the text of each cell. */
const svgMatrices = (p = page) =>
  p.$$eval('#stage [data-testid^="matrix-"][data-render="svg"]', (gs) =>
    gs.map((g) => ({
      id: g.dataset.testid.slice("matrix-".length),
      rows: Number(g.dataset.rows),
      cols: Number(g.dataset.cols),
      values: [...g.querySelectorAll("rect.cell")].map((r) => Number(r.dataset.value)),
      texts: [...g.querySelectorAll("text.cell-text")].map((t) => t.textContent),
    })),
  );

/** The numbers of a drawn matrix as the page computed them with attnkit (the test hook). */
const drawn = (id, p = page) => p.evaluate((id) => window.__attnkit.matrix(id), id);

/** The worked-arithmetic panel: its terms (label, a, b, product as written) and its total. */
async function worked(p = page) {
  await p.waitForSelector('[data-testid="worked"]:not([hidden])', { timeout: 3000 });
  return p.$eval('[data-testid="worked"]', (el) => ({
    cell: el.dataset.cell,
    text: el.textContent,
    terms: [...el.querySelectorAll('[data-testid="worked-term"]')].map((t) => {
      const m = t.textContent.match(/([−\d.]+) × ([−\d.]+) = ([−\d.]+)\s*$/);
      return m ? m.slice(1) : [t.textContent];
    }),
    total: el.querySelector('[data-testid="worked-total"]').textContent,
  }));
}

/** Checks a worked sum: its factors are attnkit's numbers, its products theirs, its total the cell's. */
function checkWorked(w, factors, value, what) {
  assert.equal(w.terms.length, factors.length, `${what}: one term per product`);
  let exact = 0,
    shown = 0;
  w.terms.forEach(([a, b, prod], k) => {
    const [fa, fb] = factors[k];
    assert.ok(Math.abs(num(a) - fa) <= 5e-5, `${what} term ${k}: ${a} is ${fa} at 4 decimals`);
    assert.ok(Math.abs(num(b) - fb) <= 5e-5, `${what} term ${k}: ${b} is ${fb} at 4 decimals`);
    assert.ok(Math.abs(num(prod) - fa * fb) <= 5e-5, `${what} term ${k}: ${prod} = ${fa}·${fb}`);
    assert.match(a, /\.\d{4}$/, `${what}: factors at 4 decimals`);
    exact += fa * fb;
    shown += num(prod);
  });
  assert.ok(
    Math.abs(exact - value) <= 1e-5,
    `${what}: the products add up to the cell (${exact} vs ${value})`,
  );
  assert.equal(
    w.total,
    value.toFixed(4).replace("-", "−"),
    `${what}: the total is the cell's value`,
  );
  assert.ok(
    Math.abs(shown - num(w.total)) <= factors.length * 5e-5 + 1e-9,
    `${what}: the products written add up to the total written (${shown} vs ${w.total})`,
  );
}

test("every cell of a matrix has the same decimals, negatives as positives, on desktop and phone", async () => {
  const { context: phone, page: p } = await phonePage(browser, problems);
  const bad = [];
  for (const [where, pg] of [
    ["desktop", page],
    ["phone", p],
  ]) {
    for (const base of [
      "p=train&w=random&h=2&kvh=2",
      "p=seed001&w=seed&m=causal&h=1&kvh=1",
      `p=fox&h=1&kvh=1&t=${FOX}`,
    ]) {
      // One load per preset, then its steps as a person steps through them.
      await open(`${base}&st=1`, pg);
      for (let st = 1; st <= 8; st++) {
        if (st > 1) await gotoStep(st, pg);
        for (const m of await svgMatrices(pg)) {
          if (!m.texts.length) continue;
          const decimals = new Set();
          m.texts.forEach((t, k) => {
            if (!Number.isFinite(m.values[k]) || !/^[−\d.]+$/.test(t)) return;
            decimals.add((t.split(".")[1] ?? "").length);
          });
          if (decimals.size > 1) {
            const sample = m.texts.filter((t) => t.startsWith("−")).slice(0, 2);
            bad.push(`${where} ${base} step ${st} ${m.id}: decimals ${[...decimals]} (${sample})`);
          }
        }
      }
    }
  }
  await shot("numbers-phone-step3", p);
  await phone.close();
  assert.deepEqual(bad, []);
  assert.deepEqual(problems, []);
});

test("softmax rows: the weights written add up to the Σ written, and equal weights are written equal", async () => {
  // Seeded random weights and no repeated word: no two weights of a row are equal, so every row can add up.
  for (const tau of [1, 0.5]) {
    await open(`p=train&t=a+cat+sat+on+my+mat+today&e=random&w=random&tau=${tau}&st=6`);
    const w = await svgMatrices();
    const weights = w.find((m) => m.id === "weights");
    const sums = w.find((m) => m.id === "rowsums");
    for (let r = 0; r < weights.rows; r++) {
      const row = weights.texts.slice(r * weights.cols, (r + 1) * weights.cols).map(num);
      const shown = row.reduce((a, b) => a + b, 0);
      assert.ok(
        Math.abs(shown - num(sums.texts[r])) < 1e-9,
        `tau ${tau}, row ${r}: ${row.join(" + ")} = ${shown.toFixed(2)} beside Σ ${sums.texts[r]}`,
      );
      const exact = weights.values.slice(r * weights.cols, (r + 1) * weights.cols);
      row.forEach((v, c) =>
        assert.ok(
          Math.abs(v - exact[c]) < 0.01,
          `row ${r}, ${c}: ${v} within a unit of ${exact[c]}`,
        ),
      );
    }
    assert.equal(await page.$('[data-testid="rounding-note"]'), null, "no rounding note");
  }
  // The same in step 7's α column (a row of weights, written down a column).
  await open("p=train&t=a+cat+sat+on+my+mat+today&e=random&w=random&st=7&q=3");
  const alpha = (await svgMatrices()).find((m) => m.id === "alpha");
  assert.equal(
    alpha.texts
      .map(num)
      .reduce((a, b) => a + b, 0)
      .toFixed(2),
    "1.00",
    "α column adds up",
  );

  // Hand-designed heads: "the" twice, so equal scores and equal weights in every row; seven
  // weights of 1/7 cannot add up to 1.00 written alike, so they are written alike and the caption says why.
  await open("p=train&st=6");
  const m = (await svgMatrices()).find((x) => x.id === "weights");
  for (let r = 0; r < m.rows; r++)
    for (let a = 0; a < m.cols; a++)
      for (let b = 0; b < m.cols; b++) {
        const [ka, kb] = [r * m.cols + a, r * m.cols + b];
        if (m.values[ka] === m.values[kb])
          assert.equal(
            m.texts[ka],
            m.texts[kb],
            `row ${r}: equal weights ${a} and ${b} written alike`,
          );
      }
  const note = await page.textContent('[data-testid="rounding-note"]');
  assert.match(note, /no row of these weights can add up/);
  assert.match(note, /sum of 0\.98/);
  await shot("numbers-softmax-rounding");
  assert.deepEqual(problems, []);
});

test("a clicked cell shows its arithmetic: attnkit's factors, their products and their sum, which is the cell", async () => {
  await open("p=train&w=random&h=2&kvh=2&st=3");
  const Q = await drawn("Q3");
  const KT = await drawn("KT");
  const S = await drawn("scores");
  const dK = Q.cols;
  await clickCell("scores", 2, 5);
  let w = await worked();
  const at = (m, r, c) => m.values[r * m.cols + c];
  checkWorked(
    w,
    Array.from({ length: dK }, (_, k) => [at(Q, 2, k), at(KT, k, 5)]),
    at(S, 2, 5),
    "step 3, score (2, 5)",
  );
  assert.equal(w.cell, "scores:2:5");
  await shot("numbers-worked-step3");
  // A click on row 4 also makes token 4 the query (a redraw); the panel follows its cell.
  await clickCell("scores", 4, 0);
  await page.waitForFunction(() => new URL(location.href).searchParams.get("q") === "4");
  w = await worked();
  checkWorked(
    w,
    Array.from({ length: dK }, (_, k) => [at(Q, 4, k), at(KT, k, 0)]),
    at(S, 4, 0),
    "step 3, score (4, 0)",
  );

  // Step 7: an output cell is the weighted sum of a column of V.
  await open("p=train&w=random&h=2&kvh=2&st=7");
  const A = await drawn("weights7");
  const V = await drawn("V7");
  const O = await drawn("output");
  await clickCell("output", 3, 1);
  w = await worked();
  checkWorked(
    w,
    Array.from({ length: A.cols }, (_, j) => [at(A, 3, j), at(V, j, 1)]),
    at(O, 3, 1),
    "step 7, output (3, 1)",
  );
  await shot("numbers-worked-step7");
  // A new head redraws the same cell from that head's numbers.
  await page.keyboard.press("Escape");
  await page.waitForSelector('[data-testid="worked"][hidden]', { state: "attached" });

  // Step 2: a projection is x_i · a column of W.
  await open("p=train&w=random&st=2");
  const X = await drawn("X2");
  const WQ = await drawn("WQ");
  const Qp = await drawn("Q");
  await clickCell("Q", 1, 2);
  checkWorked(
    await worked(),
    Array.from({ length: X.cols }, (_, k) => [at(X, 1, k), at(WQ, k, 2)]),
    at(Qp, 1, 2),
    "step 2, Q (1, 2)",
  );
  // Another step does not draw that matrix: the panel closes.
  await page.click('[data-testid="step-3"]');
  await page.waitForSelector('svg[data-step="3"]');
  assert.equal(await page.$eval('[data-testid="worked"]', (el) => el.hidden), true);
  assert.deepEqual(problems, []);
});

test("temperature: where the scores are divided by tau, the title and the formulas say so, with its value", async () => {
  await open("p=train&tau=2&st=4");
  const title = await page.textContent('[data-testid="matrix-scaled"] .m-title');
  assert.match(title, /Q Kᵀ \/ \(√dₖ · τ\)/, `step 4's title names τ: ${title}`);
  assert.match(title, /τ = 2/);
  assert.match(await page.textContent('[data-testid="caption"]'), /τ = 2/);
  await clickCell("scaled", 1, 2);
  const w = await worked();
  assert.match(w.text, /τ = 2/, "the worked scale names τ");
  await shot("numbers-tau-step4");
  // Step 5 masks these same scores: its title says the same.
  await open("p=train&tau=2&st=5");
  assert.match(
    await page.textContent('[data-testid="matrix-scaled5"] .m-title'),
    /Q Kᵀ \/ \(√dₖ · τ\), τ = 2/,
  );
  await open("p=train&tau=2&st=6");
  assert.match(
    await page.textContent('[data-testid="softmax-tau"]'),
    /s\s*ij = q\s*i · k\s*j \/ \(√d\s*k · τ\) with τ = 2/,
  );
  // At tau = 1 nothing about τ.
  await open("p=train&st=4");
  assert.equal(await page.textContent('[data-testid="matrix-scaled"] .m-title'), "Q Kᵀ / √dₖ");
  await open("p=train&st=6");
  assert.equal(await page.$('[data-testid="softmax-tau"]'), null);
  assert.deepEqual(problems, []);
});

test("a repeated token has one name everywhere: its position as a subscript, never a raised number", async () => {
  await open("p=train&st=7&q=3");
  const options = await page.$$eval('[data-testid="query"] option', (os) =>
    os.map((o) => o.textContent),
  );
  assert.ok(
    options.includes("3: the ₃"),
    `the query list names the second "the" as the grids do: ${options}`,
  );
  assert.ok(options.includes("0: the ₀"), `and the first: ${options}`);
  const expansion = await page.textContent('[data-testid="expansion"]');
  assert.match(expansion, /A\(the ₃\)/);
  assert.match(expansion, /v\(the ₀\)/);
  const rowLabels = await page.$$eval('[data-testid="matrix-weights7"] .m-rows text', (ts) =>
    ts.map((t) => t.textContent),
  );
  assert.ok(rowLabels.includes("the ₃"));
  for (const t of [...options, expansion]) assert.doesNotMatch(t, /[⁰¹²³⁴⁵⁶⁷⁸⁹]/, t);
  assert.deepEqual(problems, []);
});

test("head view: a token's tooltip sits beside its label, not over the lines it describes", async () => {
  await open("p=train&v=headview");
  const lines = await page.locator('[data-testid="hv-lines"]').boundingBox();
  for (const id of ["hv-q-2", "hv-k-4", "hv-q-6"]) {
    await page.hover(`[data-testid="${id}"]`);
    await page.waitForSelector('[data-testid="tooltip"]', { state: "visible" });
    const tip = await page.locator('[data-testid="tooltip"]').boundingBox();
    const overlap =
      Math.min(tip.x + tip.width, lines.x + lines.width) - Math.max(tip.x, lines.x) > 0 &&
      Math.min(tip.y + tip.height, lines.y + lines.height) - Math.max(tip.y, lines.y) > 0;
    assert.ok(
      !overlap,
      `${id}: the tooltip ${JSON.stringify(tip)} is clear of the lines ${JSON.stringify(lines)}`,
    );
    if (id === "hv-q-2") await shot("numbers-headview-tooltip");
  }
  assert.deepEqual(problems, []);
});

test("the preset box shows each preset's whole name", async () => {
  await open("p=train");
  const r = await page.$eval('[data-testid="preset"]', (s) => {
    const cs = getComputedStyle(s);
    const c = document.createElement("canvas").getContext("2d");
    c.font = cs.font;
    // The text's room: the box less its padding and the arrow.
    const room = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20;
    return {
      room,
      widths: [...s.options].map((o) => [o.textContent, c.measureText(o.textContent).width]),
    };
  });
  for (const [text, w] of r.widths)
    assert.ok(w <= r.room, `"${text}" (${w.toFixed(0)} px) fits ${r.room} px`);
  assert.deepEqual(problems, []);
});

/** Rotated column labels of step 8: how many em apart their lines are (the least, per matrix). */
const labelPitch = (p) =>
  p.evaluate(() =>
    [...document.querySelectorAll("#stage .m-cols")].map((g) => {
      const ts = [...g.querySelectorAll("text")].filter((t) => t.getAttribute("transform"));
      let min = Infinity;
      for (let i = 1; i < ts.length; i++) {
        const [a, b] = [ts[i - 1].getBoundingClientRect(), ts[i].getBoundingClientRect()];
        // On screen: the font scaled with the drawing (the SVG's viewBox).
        const svg = g.ownerSVGElement;
        const k = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
        const font = parseFloat(getComputedStyle(ts[i]).fontSize) * k;
        min = Math.min(min, ((b.left - a.left) * Math.sin((50 * Math.PI) / 180)) / font);
      }
      return { id: g.closest("[data-testid]").dataset.testid, min };
    }),
  );

test("step 8: rotated column labels keep clear of each other", async () => {
  for (const q of [
    "p=train",
    "p=train&w=random&h=8&kvh=8",
    "p=train&w=random&h=2&kvh=2",
    `p=fox&h=1&kvh=1&t=${FOX}`,
    FLIES,
  ]) {
    await open(`${q}&st=8`);
    for (const { id, min } of await labelPitch(page))
      assert.ok(min >= 1.3, `${q} ${id}: rotated labels ${min.toFixed(2)} em apart`);
  }
  await shot("numbers-step8-labels");
  assert.deepEqual(problems, []);
});

test("phone 390 px: step 8 uses the width at full scale, its labels at least 9 px", async () => {
  const { context: phone, page: p } = await phonePage(browser, problems);
  for (const q of ["", "p=train&w=random&h=8&kvh=8&", `${FLIES}&`]) {
    await open(`${q}st=8`, p);
    const r = await p.evaluate(() => {
      const stage = document.querySelector("#stage");
      const svg = stage.querySelector("svg");
      const fonts = [...svg.querySelectorAll(".m-axis text, .m-title, .note")]
        .filter((t) => t.getBoundingClientRect().height > 0 && t.textContent.trim())
        .map((t) => {
          // The font on screen: the SVG's viewBox scales it.
          const k = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
          return { text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * k };
        });
      return {
        scale: Number(svg.dataset.scale ?? 1),
        used: svg.getBoundingClientRect().width / (stage.clientWidth - 8),
        small: fonts.filter((f) => f.px < 8.95).slice(0, 5),
        docW: document.documentElement.scrollWidth,
      };
    });
    const name = `numbers-phone-step8${q ? `-${q.split("&")[0].slice(2)}${q.includes("h=8") ? "-8heads" : ""}` : ""}`;
    await p.locator("#stage").screenshot({ path: path.join(shots, `${name}.png`) });
    assert.ok(r.scale >= 0.95, `${q}: step 8 at scale ${r.scale}`);
    assert.ok(r.used >= 0.85, `${q}: step 8 uses ${(r.used * 100).toFixed(0)}% of the width`);
    assert.deepEqual(r.small, [], `${q}: labels under 9 px`);
    assert.ok(r.docW <= 390, `${q}: no sideways scroll (${r.docW})`);
  }
  await phone.close();
  assert.deepEqual(problems, []);
});
