// Shared by the browser tests that do not use Playwright (firefox.test.mjs,
// webkit.test.mjs): seed 001's printed tables, float comparisons, and one smoke
// suite written against a small driver interface, so each browser file only says
// how to start its browser. Every page read goes through `evaluate` (a function
// run in the page), so the suite is the same over WebDriver BiDi and classic
// WebDriver.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { after, before, beforeEach, test } from "node:test";
import { fileURLToPath } from "node:url";
import { inflateSync } from "node:zlib";
import { createAttnkit } from "attnkit";
import { chromium } from "playwright-core";
import { ARGS, CHROMIUM } from "../chromium.mjs";
import { serve } from "./server.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, "../..");
// ATTNKIT_WEB_DIST: the page built elsewhere (vite.config.ts reads the same variable).
export const dist = process.env.ATTNKIT_WEB_DIST ?? path.join(root, "web/dist");
export const shots = path.join(root, "tests/artifacts/screenshots");

export { ARGS, CHROMIUM };

/**
 * The built page served on loopback and Debian's Chromium with a context without
 * motion (1440 x 900 unless `contextOptions` say otherwise, as Playwright's
 * newContext takes them), for the Chromium suites. Close browser and server after.
 */
export async function openChromium(contextOptions = {}) {
  assert.ok(
    existsSync(path.join(dist, "index.html")),
    "web/dist is missing: run `npx vite build web` first",
  );
  mkdirSync(shots, { recursive: true });
  const server = await serve(dist);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  const context = await browser.newContext({
    viewport: { width: 1440, height: 900 },
    reducedMotion: "reduce",
    ...contextOptions,
  });
  return { server, browser, context };
}

/** Clicks the centre of cell (r, c) of the matrix `id` drawn on page p, as a person does. */
export async function clickMatrixCell(p, id, r, c) {
  const g = p.locator(`[data-testid="matrix-${id}"]`).first();
  const { rows, cols } = await g.evaluate((el) => ({
    rows: Number(el.dataset.rows),
    cols: Number(el.dataset.cols),
  }));
  const box = await p.locator(`[data-hit="${id}"]`).first().boundingBox();
  await p.mouse.click(
    box.x + ((c + 0.5) * box.width) / cols,
    box.y + ((r + 0.5) * box.height) / rows,
  );
}

/**
 * A phone's page in `browser`: 390 x 844, touch, mobile, no motion; its errors
 * go into `problems`. Close the context after.
 */
export async function phonePage(browser, problems) {
  const context = await browser.newContext({
    viewport: { width: 390, height: 844 },
    hasTouch: true,
    isMobile: true,
    reducedMotion: "reduce",
  });
  const page = await context.newPage();
  watch(page, problems);
  return { context, page };
}

/**
 * The set-up every Chromium suite shares, as node:test hooks: before the file's
 * tests, the page served and Chromium launched (openChromium(`context`), after
 * `setUp()`); before each test (or once, with `perTest: false`) a new page whose
 * console errors and uncaught errors go into a new `problems` list, then
 * `open(page)`; after them, browser and server closed. `bind(session)` runs
 * whenever the session changes, so that the file's own variables follow it:
 *   let server, browser, context, page, problems;
 *   usePage((s) => ({ server, browser, context, page, problems } = s), { open });
 */
export function usePage(bind, { open, setUp, context, perTest = true } = {}) {
  const session = { problems: [] };
  const newPage = async () => {
    await session.page?.close();
    session.problems = [];
    session.page = await session.context.newPage();
    watch(session.page, session.problems);
    bind(session);
    await open?.(session.page);
  };
  before(async () => {
    await setUp?.();
    Object.assign(session, await openChromium(context));
    bind(session);
    if (!perTest) await newPage();
  });
  if (perTest) beforeEach(newPage);
  after(async () => {
    await session.browser?.close();
    await session.server?.close();
  });
}

/** Collects page p's console errors and warnings and its uncaught errors into `into`. */
export function watch(p, into) {
  p.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning")
      into.push(`console ${m.type()}: ${m.text()}`);
  });
  p.on("pageerror", (e) => into.push(`page error: ${e.message}`));
}
export const PRESETS = ["seed001", "train", "bank", "flies", "fox"];
export const VIEWS = ["headview", "grid", "saturation", "decoding"];

// Seed 001's printed tables.
export const SEED001 = {
  X: [
    [0.1, -0.2, 0.1, 0.2],
    [0.8, 0.8, -0.9, 0.5],
    [-0.6, 0.4, 0.5, -0.9],
    [0.9, -0.7, 0.8, 0.7],
    [0.4, 0.3, 0.4, 0.4],
    [0.8, 0.2, 0.9, -0.2],
  ],
  WQ: [
    [3.4, -2.1, 0.8, 1.9],
    [-1.2, 0.5, 3.7, -0.8],
    [2.9, 1.1, -3.4, 0.6],
    [0.7, 2.8, 1.3, -2.5],
  ],
  KT: [
    [0.15, 1.94, -0.98, 2.53, 1.24, 2.18],
    [0.16, 1.44, 0.64, -2.33, 0.81, 0.44],
    [0.25, 0.35, 1.25, 2.24, 1.14, 3.25],
    [0.28, 1.15, -0.81, 1.93, -0.81, -0.28],
  ],
  V: [
    [0.43, 0.29, 0.64, 0.83],
    [1.15, 1.19, -0.28, 0.67],
    [-0.21, 0.64, 0.59, -0.82],
    [1.19, -0.45, 0.86, 0.99],
    [0.51, 0.41, 0.51, 0.51],
    [1.19, 0.28, 0.95, -0.15],
  ],
  Q0_PRINTED: [1.01, 0.36, -0.74, -0.09],
};

export function assertClose(actual, expected, tol, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i],
      e = expected[i];
    if (e === -Infinity) assert.equal(a, -Infinity, `${what}[${i}]`);
    else assert.ok(Math.abs(a - e) <= tol, `${what}[${i}]: page ${a}, core ${e}`);
  }
}

/** Calls `fn` until it returns something truthy; throws after `timeout` ms. */
export async function poll(fn, what, timeout = 15000, interval = 50) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() - t0 > timeout)
      throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, interval));
  }
}

/**
 * Injected first into the page's <head> for drivers that report no console
 * events (classic WebDriver): records console.error / console.warn calls,
 * uncaught errors, unhandled rejections, failed resource loads, fetches
 * answered with an HTTP error and CSP violations in window.__problems.
 */
export const CONSOLE_HOOK = `(() => {
  const problems = (window.__problems = []);
  const err = (x) => (x instanceof Error ? x.name + ": " + x.message + (x.stack ? "\\n" + x.stack : "") : String(x));
  const text = (a) => a.map((x) => (x instanceof Error ? err(x) : x && typeof x === "object" ? JSON.stringify(x) : String(x))).join(" ");
  for (const level of ["error", "warn"]) {
    const orig = console[level].bind(console);
    console[level] = (...a) => { problems.push("console " + level + ": " + text(a)); orig(...a); };
  }
  addEventListener("error", (e) => {
    const t = e.target;
    if (t && t !== window && (t.src || t.href)) problems.push("failed to load: " + (t.src || t.href));
    else problems.push("page error: " + (e.error ? err(e.error) : e.message));
  }, true);
  addEventListener("unhandledrejection", (e) => problems.push("unhandled rejection: " + err(e.reason)));
  addEventListener("securitypolicyviolation", (e) => problems.push("CSP violation: " + e.violatedDirective + " " + e.blockedURI));
  const f = window.fetch.bind(window);
  window.fetch = (...a) => f(...a).then((r) => { if (!r.ok) problems.push("HTTP " + r.status + ": " + r.url); return r; });
})();`;

/**
 * serve() from server.mjs behind a pass-through server that inserts `script` at
 * the start of every HTML page's <head>. Resolves to { url, close }.
 */
export async function serveWithScript(dir, script) {
  const inner = await serve(dir);
  const outer = createServer(async (req, res) => {
    try {
      const r = await fetch(new URL(req.url ?? "/", inner.url));
      const type = r.headers.get("content-type") ?? "application/octet-stream";
      let body = Buffer.from(await r.arrayBuffer());
      if (type.startsWith("text/html"))
        body = Buffer.from(
          body.toString("utf8").replace("<head>", `<head><script>${script}</script>`),
        );
      res.writeHead(r.status, { "content-type": type, "cache-control": "no-store" }).end(body);
    } catch (e) {
      res.writeHead(502).end(String(e));
    }
  });
  await new Promise((r) => outer.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${outer.address().port}/`,
    close: async () => {
      outer.closeAllConnections?.();
      await new Promise((r) => outer.close(r));
      await inner.close();
    },
  };
}

/** Decodes an 8-bit, non-interlaced RGB or RGBA PNG (what the browsers' screenshots are): { width, height, pixel(x, y) }. */
export function decodePng(buf) {
  assert.equal(buf.toString("latin1", 1, 4), "PNG", "a PNG file");
  let width = 0,
    height = 0,
    channels = 0;
  const idat = [];
  for (let o = 8; o < buf.length;) {
    const len = buf.readUInt32BE(o),
      type = buf.toString("latin1", o + 4, o + 8),
      body = buf.subarray(o + 8, o + 8 + len);
    if (type === "IHDR") {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      assert.ok(
        body[8] === 8 && body[12] === 0 && (body[9] === 2 || body[9] === 6),
        `PNG: 8-bit RGB(A), not interlaced (depth ${body[8]}, colour type ${body[9]}, interlace ${body[12]})`,
      );
      channels = body[9] === 6 ? 4 : 3;
    } else if (type === "IDAT") idat.push(body);
    o += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels,
    px = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)],
      src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? px[y * stride + i - channels] : 0,
        b = y ? px[(y - 1) * stride + i] : 0;
      const c = i >= channels && y ? px[(y - 1) * stride + i - channels] : 0;
      const p = a + b - c,
        pa = Math.abs(p - a),
        pb = Math.abs(p - b),
        pc = Math.abs(p - c);
      const pred =
        f === 0
          ? 0
          : f === 1
            ? a
            : f === 2
              ? b
              : f === 3
                ? (a + b) >> 1
                : pa <= pb && pa <= pc
                  ? a
                  : pb <= pc
                    ? b
                    : c;
      px[y * stride + i] = (src[i] + pred) & 255;
    }
  }
  return {
    width,
    height,
    pixel: (x, y) => [...px.subarray(y * stride + x * channels, y * stride + x * channels + 3)],
  };
}

/**
 * The centres of 7 x 7 cells spread over every canvas-drawn matrix on screen,
 * with the colour the canvas holds there (opaque pixels only): what a
 * screenshot must show at those points. Cell centres, since a browser may
 * resample a canvas placed at a fractional position, blending cell borders.
 */
function canvasSamples() {
  const out = [];
  for (const g of document.querySelectorAll('[data-render="canvas"]')) {
    const c = g.querySelector("canvas");
    const rows = Number(g.getAttribute("data-rows")),
      cols = Number(g.getAttribute("data-cols"));
    const r = c?.getBoundingClientRect();
    if (!c || !c.width || !c.height || r.width < 8 || r.height < 8) continue;
    const img = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    const pts = [];
    const pick = (n) => [
      ...new Set(Array.from({ length: 7 }, (_, i) => Math.floor(((i + 0.5) * n) / 7))),
    ];
    for (const row of pick(rows)) {
      for (const col of pick(cols)) {
        const x = Math.floor(r.left + ((col + 0.5) * r.width) / cols),
          y = Math.floor(r.top + ((row + 0.5) * r.height) / rows);
        if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) continue;
        const k =
          (Math.floor(((row + 0.5) * c.height) / rows) * c.width +
            Math.floor(((col + 0.5) * c.width) / cols)) *
          4;
        if (img[k + 3] === 255) pts.push([x, y, img[k], img[k + 1], img[k + 2]]);
      }
    }
    out.push({
      id: g.getAttribute("data-testid"),
      x: Math.round(r.left),
      y: Math.round(r.top),
      pts,
    });
  }
  return { scale: devicePixelRatio, canvases: out };
}

// ---- page reads, each one function run in the page ----

/** A matrix on screen: SVG cells, or for canvas ones the arrays the page drew (window.__attnkit.matrix). */
function readMatrix(id) {
  const el = document.querySelector(`[data-testid="matrix-${id}"]`);
  if (!el) return null;
  const m = {
    render: el.getAttribute("data-render"),
    rows: Number(el.getAttribute("data-rows")),
    cols: Number(el.getAttribute("data-cols")),
    values: [...el.querySelectorAll("rect.cell")].map((r) => Number(r.getAttribute("data-value"))),
    texts: [...el.querySelectorAll("text.cell-text")].map((t) => t.textContent),
  };
  if (m.render === "canvas") m.values = Array.from(window.__attnkit.matrix(id).values);
  // Classic WebDriver carries JSON, which has no -Infinity: send non-finite values as strings.
  m.values = m.values.map((v) => (Number.isFinite(v) ? v : String(v)));
  return m;
}

const readText = (sel) => document.querySelector(sel)?.textContent ?? null;
const countAll = (sel) => document.querySelectorAll(sel).length;
const exists = (sel) => document.querySelector(sel) !== null;
function setValue({ sel, value }) {
  const el = document.querySelector(sel);
  el.value = value;
  el.dispatchEvent(new Event("input", { bubbles: true }));
  el.dispatchEvent(new Event("change", { bubbles: true }));
}
/** Resources the page loaded from anywhere but its own server. */
const outsideRequests = (origin) =>
  performance
    .getEntriesByType("resource")
    .map((e) => e.name)
    .filter((u) => !u.startsWith(origin) && !u.startsWith("data:") && !u.startsWith("blob:"));

/**
 * Asserts every upper-triangle weight of a square matrix read from the page is 0 and
 * shown as "0.00"; returns how many there are.
 */
export function assertUpperTriangleZero(w) {
  let upper = 0;
  for (let i = 0; i < w.rows; i++) {
    for (let j = i + 1; j < w.cols; j++) {
      assert.equal(w.values[i * w.cols + j], 0, `weight (${i}, ${j})`);
      assert.equal(w.texts[i * w.cols + j], "0.00", `weight (${i}, ${j}) as shown`);
      upper++;
    }
  }
  assert.equal(upper, (w.rows * (w.rows - 1)) / 2);
  return upper;
}

/**
 * On the seed 001 preset: walks steps 1-7 and checks every matrix on screen against
 * the core's trace (and q_0 against the seed's printed row, within its rounding).
 * `matrix(id)` reads a matrix's values and texts, `text(selector)` an element's text;
 * `atStep6` runs at step 6 (a screenshot). Returns the trace.
 */
export async function checkSeed001({ attn, gotoStep, matrix, text, atStep6 = async () => {} }) {
  const { X, WQ, KT, V, Q0_PRINTED } = SEED001;
  const Q = attn.matmul(X, WQ);
  const K = KT[0].map((_, j) => KT.map((r) => r[j]));
  const tr = attn.traceQKV(Q, K, V, { causal: true });
  await gotoStep(1);
  assertClose((await matrix("X")).values, X.flat(), 1e-6, "X");
  await gotoStep(2);
  const q = await matrix("Q");
  assertClose(q.values, Array.from(Q.data), 1e-6, "Q");
  assertClose(q.values.slice(0, 4), Q0_PRINTED, 0.01, "q_0 vs the seed's printed row");
  assert.deepEqual(q.texts.slice(0, 4), ["1.01", "0.36", "−0.74", "−0.09"]);
  await gotoStep(3);
  assertClose((await matrix("scores")).values, Array.from(tr.rawScores.data), 1e-5, "Q K^T");
  await gotoStep(4);
  assertClose((await matrix("scaled")).values, Array.from(tr.scaledScores.data), 1e-5, "scaled");
  await gotoStep(5);
  assertClose((await matrix("masked")).values, Array.from(tr.maskedScores.data), 1e-5, "masked");
  await gotoStep(6);
  assertClose((await matrix("weights")).values, Array.from(tr.weights.data), 1e-6, "weights");
  assertClose((await matrix("rowsums")).values, [1, 1, 1, 1, 1, 1], 1e-5, "row sums");
  await atStep6();
  await gotoStep(7);
  assertClose((await matrix("output")).values, Array.from(tr.output.data), 1e-5, "output");
  assert.match(await text('[data-testid="caption"]'), /Check against the worked example/);
  assert.doesNotMatch(
    await text('[data-testid="caption"]'),
    /seed 00\d/i,
    "captions name the source, not its file number",
  );
  return tr;
}

/**
 * Registers the smoke suite for one browser. `open(serverUrl)` starts the
 * browser and resolves to a driver:
 *   { label (browser and version), goto(url), evaluate(fn, arg) (fn runs in
 *     the page), click(selector), select(selector, value),
 *     viewport(width, height) (as near as the browser allows),
 *     screenshot(file), problems(): Promise<string[]>, close(),
 *     and optionally recover() }
 * recover(), called when a test throws: if the browser itself died (its
 * process exited or its WebDriver session is gone) it starts a new one and
 * resolves to a report of what died and what it printed; if the browser is
 * alive it resolves to null and the error stands. A test whose browser died
 * runs once more on a freshly loaded page, and the report is printed: a page
 * that kills the browser again fails.
 * `serveDist(dir)` serves the built page (default: server.mjs's serve).
 * `todo` maps a test's key ("canvasPaint") to the reason it is known to fail in
 * this browser: it then runs and reports, but as a TODO that fails nothing.
 */
export function smokeTests(name, open, { serveDist = serve, todo = {} } = {}) {
  let server, d, attn;
  const shot = (file) => d.screenshot(path.join(shots, `${name}-${file}.png`));
  const ready = () =>
    poll(
      () => d.evaluate(exists, "body[data-ready='1']"),
      "the page to be ready (body[data-ready='1'])",
    );
  const text = (sel) => d.evaluate(readText, sel);
  const count = (sel) => d.evaluate(countAll, sel);
  const waitFor = (sel, what = sel) => poll(() => d.evaluate(exists, sel), what, 5000);
  async function matrix(id) {
    const m = await poll(() => d.evaluate(readMatrix, id), `matrix ${id}`, 5000);
    m.values = m.values.map(Number);
    assert.equal(m.values.length, m.rows * m.cols, `matrix ${id}: every value readable`);
    return m;
  }
  async function gotoStep(n) {
    await d.click(`[data-testid="step-${n}"]`);
    await waitFor(`svg[data-testid="scene-svg"][data-step="${n}"][data-view="steps"]`, `step ${n}`);
  }
  async function view(v) {
    await d.click(`[data-testid="view-${v}"]`);
    await waitFor(`svg[data-testid="scene-svg"][data-view="${v}"]`, `view ${v}`);
  }
  /** Screenshot `file`; every canvas matrix must show its own pixels where the page lays it out. */
  async function canvasesPainted(file) {
    // Reveal animations paint on animation frames after the page says it is ready:
    // compare only once the canvases hold still across the screenshot.
    let samples = await d.evaluate(canvasSamples),
      settled = false;
    for (let tries = 0; tries < 50 && !settled; tries++) {
      await new Promise((r) => setTimeout(r, 100));
      const before = JSON.stringify(samples);
      samples = await d.evaluate(canvasSamples);
      if (JSON.stringify(samples) !== before) continue;
      await shot(file);
      samples = await d.evaluate(canvasSamples);
      settled = JSON.stringify(samples) === before;
    }
    assert.ok(settled, `${file}: the canvases never stopped changing`);
    const { scale, canvases } = samples;
    assert.ok(canvases.length > 0, `${file}: canvas matrices on screen`);
    const png = decodePng(readFileSync(path.join(shots, `${name}-${file}.png`)));
    const wrong = [];
    for (const c of canvases) {
      const bad = c.pts.filter(([x, y, ...rgb]) =>
        png
          .pixel(Math.round(x * scale), Math.round(y * scale))
          .some((v, k) => Math.abs(v - rgb[k]) > 6),
      );
      // A few points may sit under an outline drawn over the cells (the selected row).
      if (c.pts.length < 5 || bad.length > 0.2 * c.pts.length) {
        const eg = bad
          .slice(0, 2)
          .map(
            ([x, y, ...rgb]) =>
              `(${x}, ${y}) canvas rgb(${rgb}), screen rgb(${png.pixel(Math.round(x * scale), Math.round(y * scale))})`,
          );
        wrong.push(
          `canvas ${c.id} laid out at (${c.x}, ${c.y}): ${bad.length} of ${c.pts.length} sampled points differ on screen, e.g. ${eg.join(", ")}`,
        );
      }
    }
    assert.deepEqual(
      wrong,
      [],
      `${name}-${file}.png: canvas matrices not painted where they are laid out`,
    );
  }
  /** node:test's test(), with one rerun on a fresh page when the browser process died under it (see recover above). */
  function browserTest(title, ...args) {
    const fn = args.pop(),
      options = args[0] ?? {};
    test(title, options, async (t) => {
      try {
        return await fn(t);
      } catch (e) {
        const report = await d?.recover?.();
        if (!report) throw e;
        console.log(
          `${title}: the browser died (${e.name}: ${e.message || "no message"}); running the test again in a new one.\n${report}`,
        );
        await d.goto(server.url);
        await ready();
        return await fn(t);
      }
    });
  }
  async function noProblems() {
    const found = [
      ...(await d.problems()),
      ...(await d.evaluate(outsideRequests, server.url)).map(
        (u) => `request outside the page: ${u}`,
      ),
    ];
    assert.deepEqual(found, []);
  }

  before(async () => {
    assert.ok(
      existsSync(path.join(dist, "index.html")),
      "web/dist is missing: run `npx vite build web` first",
    );
    mkdirSync(shots, { recursive: true });
    attn = await createAttnkit();
    server = await serveDist(dist);
    const t0 = Date.now();
    d = await open(server.url);
    const t1 = Date.now();
    await d.goto(server.url);
    await ready();
    const timing = await d.evaluate(() => window.__attnkit.timing);
    console.log(
      `${d.label}: browser start ${t1 - t0} ms; first render ${timing.firstRenderMs.toFixed(0)} ms after navigation start (wasm load ${timing.loadMs.toFixed(0)} ms; wall ${Date.now() - t1} ms)`,
    );
  });

  after(async () => {
    await d?.close();
    await server?.close();
  });

  browserTest(
    `${name}: the page loads with no console errors or warnings and no outside requests`,
    async () => {
      assert.match(await text('[data-testid="status"]'), /attnkit/);
      const simd = await d.evaluate(() => window.__attnkit.simd);
      console.log(
        `${d.label}: attnkit target ${await d.evaluate(() => window.__attnkit.target)}, simd ${simd}`,
      );
      await noProblems();
    },
  );

  browserTest(
    `${name}: every step of every preset and every other view renders (screenshots saved)`,
    async () => {
      for (const preset of PRESETS) {
        await d.select('[data-testid="preset"]', preset);
        await poll(
          () => d.evaluate((p) => window.__attnkit.state().preset === p, preset),
          `preset ${preset}`,
          5000,
        );
        await ready();
        for (let n = 1; n <= 8; n++) {
          await gotoStep(n);
          const title = await text('[data-testid="scene-title"]');
          assert.ok(title.startsWith(`${n}.`), `${preset} step ${n}: title ${title}`);
          assert.ok(
            (await count('[data-testid="scene-svg"] rect.cell, [data-testid="scene-svg"] canvas')) >
              0,
            `${preset} step ${n}: no cells drawn`,
          );
          await shot(`${preset}-step${n}`);
        }
      }
      for (const v of VIEWS) {
        await view(v);
        await shot(`fox-${v}`);
      }
      await view("steps");
      await noProblems();
    },
  );

  browserTest(
    `${name}: seed 001's numbers on screen are the core's, and q_0 is the printed row`,
    async () => {
      await d.select('[data-testid="preset"]', "seed001");
      await poll(
        () => d.evaluate(() => window.__attnkit.state().preset === "seed001"),
        "preset seed001",
        5000,
      );
      await ready();
      await checkSeed001({
        attn,
        gotoStep,
        matrix,
        text,
        atStep6: () => shot("seed001-numbers-step6"),
      });
      await noProblems();
    },
  );

  browserTest(`${name}: the causal mask puts 0 in every upper-triangle weight`, async () => {
    await d.select('[data-testid="preset"]', "train");
    await poll(
      () => d.evaluate(() => window.__attnkit.state().preset === "train"),
      "preset train",
      5000,
    );
    await ready();
    await d.select('[data-testid="mask"]', "causal");
    await poll(
      () => d.evaluate(() => window.__attnkit.state().mask === "causal"),
      "mask causal",
      5000,
    );
    await gotoStep(6);
    const upper = assertUpperTriangleZero(await matrix("weights"));
    await shot("train-causal-step6");
    await gotoStep(5);
    const M = await matrix("M");
    assert.equal(M.values.filter((v) => v === -Infinity).length, upper);
    await noProblems();
  });

  browserTest(`${name}: four heads give four attention maps`, async () => {
    await d.select('[data-testid="weights"]', "random");
    await d.evaluate(setValue, { sel: '[data-testid="heads"]', value: "4" });
    await poll(() => d.evaluate(() => window.__attnkit.state().heads === 4), "heads = 4", 5000);
    await gotoStep(8);
    assert.equal(await count('[data-testid^="matrix-headmap-"]'), 4);
    assert.match(await text('[data-testid="mha-check"]'), /✓/);
    await shot("train-4heads-step8");
    await view("grid");
    assert.equal(await count('[data-testid^="matrix-grid-"]'), 4);
    await shot("train-4heads-grid");
    await noProblems();
  });

  browserTest(
    `${name}: decoding with the KV cache runs to the end and matches the full causal rows`,
    async () => {
      await view("decoding");
      await d.click('[data-testid="decode-step"]');
      await poll(
        async () => /^1 \//.test(await text('[data-testid="decode-pos"]')),
        "decode position 1",
        5000,
      );
      await d.click('[data-testid="decode-end"]');
      const [, done, total] = await poll(
        async () => {
          const m = (await text('[data-testid="decode-pos"]')).match(/^(\d+) \/ (\d+)/);
          return m && m[1] === m[2] && m;
        },
        "decoding to reach the end",
        5000,
      );
      assert.equal(done, total);
      assert.match(await text('[data-testid="decode-check"]'), /✓/);
      assertClose(
        (await matrix("decoded")).values,
        (await matrix("fullCausal")).values,
        1e-5,
        "decoded vs full causal",
      );
      await shot("decoding-end");
      await noProblems();
    },
  );

  browserTest(
    `${name}: canvas matrices are painted where the page lays them out (4 heads W^O; T = 64)`,
    { todo: todo.canvasPaint },
    async () => {
      await d.viewport(1280, 800);
      await d.goto(`${server.url}?p=train&w=random&h=4&kvh=4&dk=8&dv=8&m=causal&st=8`);
      await ready();
      await canvasesPainted("canvas-4heads-step8");
      const words = Array.from(
        { length: 64 },
        (_, i) => ["the", "train", "left", "station", "on", "time", "bank", "check"][i % 8],
      );
      await d.goto(
        `${server.url}?${new URLSearchParams({ t: words.join(" "), p: "custom", e: "random", dm: "128", w: "random", dk: "16", dv: "16", h: "8", kvh: "8", st: "3" })}`,
      );
      await ready();
      await canvasesPainted("canvas-t64-step3");
      await noProblems();
    },
  );

  browserTest(
    `${name}: state consistency: 200 seeded random control changes, each page equal to its fresh load`,
    { timeout: 300000, todo: todo.stateWalk },
    async () => {
      await d.viewport(1280, 800);
      await d.goto(server.url);
      await ready();
      const seed = Number(process.env.WALK_SEED ?? Date.now() % 100000);
      console.log(`${d.label}: state walk seed ${seed} (replay: WALK_SEED=${seed})`);
      const r = await stateWalk({
        evaluate: (fn, arg) => d.evaluate(fn, arg),
        problems: () => d.problems(),
        seed,
        steps: 200,
        budgetMs: 270000,
        label: d.label,
      });
      console.log(`${d.label}: ${r.done} changes in ${r.ms} ms`);
      assert.ok(r.done >= 200, `only ${r.done} changes within the time budget`);
    },
  );

  browserTest(
    `${name}: phone 390 x 844 (or the browser's narrowest window): no part of any step or view lies outside the viewport horizontally`,
    async () => {
      await d.viewport(390, 844);
      const width = await d.evaluate(() => innerWidth);
      // MiniBrowser's window cannot be narrower than its toolbar (447 px).
      assert.ok(width <= 480, `a phone-sized viewport (${width} px)`);
      for (const q of PHONE_PAGES) {
        await d.goto(`${server.url}?${q}`);
        await ready();
        assertPhoneFit(await d.evaluate(phoneFit), `${d.label} ${width} px ${q}`);
      }
      await shot(`phone-${width}-step8`);
      await d.viewport(1280, 800);
      await noProblems();
    },
  );

  browserTest(
    `${name}: narrow screen (420 px or the browser's narrowest window): the scene shows first, the settings are a drawer`,
    async () => {
      await d.viewport(420, 900);
      const width = await d.evaluate(() => innerWidth);
      assert.ok(width <= 480, `a narrow viewport (${width} px)`);
      await d.goto(`${server.url}?p=train&st=6`);
      await ready();
      const y = await d.evaluate(
        () => document.querySelector('[data-testid="stage"]').getBoundingClientRect().y,
      );
      assert.ok(y < 700, `the scene starts within the first screen (y = ${y})`);
      await shot(`narrow-${width}-step6`);
      await d.click('[data-testid="controls-toggle"]');
      await poll(
        () => d.evaluate(() => document.body.classList.contains("controls-open")),
        "the settings drawer to open",
        5000,
      );
      await new Promise((r) => setTimeout(r, 300));
      await shot(`narrow-${width}-drawer`);
      await noProblems();
    },
  );
}

// ---- phone-sized screens (issue #19, defect 5) ----

/** Every step, then every other view: what a phone test visits. */
export const PHONE_PAGES = [
  ...Array.from({ length: 8 }, (_, i) => `st=${i + 1}`),
  ...VIEWS.map((v) => `v=${v}`),
];

/**
 * Run in the page: the elements of the active scene (stage and caption) that reach
 * outside the viewport horizontally, the page's own sideways scroll, and the height
 * of the header and step bar.
 */
export function phoneFit() {
  const vw = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll(
    "#stage, #stage svg, #stage svg *, #caption, #caption *",
  )) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.left < -0.5 || r.right > vw + 0.5)
      out.push(
        `<${el.tagName.toLowerCase()} ${el.getAttribute("data-testid") ?? el.getAttribute("class") ?? ""}> ${Math.round(r.left)}..${Math.round(r.right)}`,
      );
  }
  // Row labels of a matrix (tokens, features) that overlap their neighbours.
  const overlaps = [];
  for (const axis of document.querySelectorAll("#stage .m-rows")) {
    const r = [...axis.querySelectorAll(".tick text")]
      .map((t) => t.getBoundingClientRect())
      .filter((b) => b.height > 0)
      .sort((a, b) => a.top - b.top);
    // A text's box includes its line's leading (about a third of it): boxes overlapping by more means the letters do.
    for (let k = 1; k < r.length; k++)
      if (r[k].top < r[k - 1].bottom - 0.35 * r[k - 1].height)
        overlaps.push(
          `${axis.closest("[data-testid]")?.getAttribute("data-testid")} row labels ${k - 1} and ${k}`,
        );
  }
  const top =
    document.querySelector("header.top").getBoundingClientRect().height +
    document.querySelector("#stepbar").getBoundingClientRect().height;
  return { vw, out, overlaps, docW: document.documentElement.scrollWidth, top: Math.round(top) };
}

/** Asserts one phoneFit() result for `what`. */
export function assertPhoneFit(r, what) {
  assert.deepEqual(
    r.out.slice(0, 6),
    [],
    `${what}: ${r.out.length} elements of the scene outside the ${r.vw} px viewport`,
  );
  assert.ok(r.docW <= r.vw, `${what}: the page scrolls sideways (${r.docW} > ${r.vw})`);
  assert.ok(r.top <= 160, `${what}: header and step bar take ${r.top} px`);
  assert.deepEqual(r.overlaps.slice(0, 4), [], `${what}: overlapping row labels`);
}

// ---- the state-consistency walk (issue #19) ----

/** A seeded PRNG (mulberry32): the same seed replays the same walk. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Run in the page: one control change, made with the events a person's input
 * fires (a select's change, a field's input + change on commit, a checkbox's or
 * button's click, a slider's input, a click on a matrix cell and a value typed
 * into its editor). `a.pick` in [0, 1) chooses among what the control offers.
 * Returns what it did (for the replay log), or null if the control is not there.
 */
function pageAction(a) {
  const q = (sel) => document.querySelector(sel);
  const at = (list) => list[Math.floor(a.pick * list.length) % list.length];
  const fire = (el, ...types) => {
    for (const t of types) el.dispatchEvent(new Event(t, { bubbles: true }));
  };
  const usable = (el) => el && !el.disabled && el.getClientRects().length > 0;
  if (a.kind === "select") {
    const el = q(`[data-testid="${a.id}"]`);
    if (!usable(el) || !el.options.length) return null;
    const v = at([...el.options].map((o) => o.value));
    el.value = v;
    fire(el, "input", "change");
    return `select ${a.id} = ${v}`;
  }
  if (a.kind === "check" || a.kind === "click") {
    const el = q(`[data-testid="${a.id}"]`);
    if (!usable(el)) return null;
    el.click();
    return `click ${a.id}`;
  }
  if (a.kind === "slider") {
    const el = q(`[data-testid="${a.id}"]`);
    if (!usable(el)) return null;
    const lo = Number(el.min),
      hi = Number(el.max),
      st = Number(el.step);
    el.value = String(lo + Math.round((a.pick * (hi - lo)) / st) * st);
    fire(el, "input", "change");
    return `slider ${a.id} = ${el.value}`;
  }
  if (a.kind === "number") {
    const el = q(`[data-testid="${a.id}"]`);
    if (!usable(el)) return null;
    el.focus();
    el.value = a.text;
    fire(el, "input", "change");
    el.blur();
    return `type ${a.id} = ${a.text}`;
  }
  if (a.kind === "text") {
    const el = q(`[data-testid="${a.id}"]`);
    if (!usable(el)) return null;
    el.value = a.text;
    fire(el, "input");
    return `type ${a.id} = "${a.text}"`;
  }
  if (a.kind === "cell") {
    const cells = [
      ...document.querySelectorAll(
        '[data-testid="scene-svg"] g[data-testid^="matrix-X"] rect.cell, [data-testid="scene-svg"] g[data-testid^="matrix-W"] rect.cell',
      ),
    ];
    if (!cells.length) return null;
    const cell = at(cells);
    const b = cell.getBoundingClientRect();
    const x = b.left + b.width / 2,
      y = b.top + b.height / 2;
    const target = document.elementFromPoint(x, y);
    if (!target) return null;
    target.dispatchEvent(new MouseEvent("click", { bubbles: true, clientX: x, clientY: y }));
    const form = q('[data-testid="cell-editor"]');
    if (!form) return null;
    const input = form.querySelector("input");
    input.value = a.text;
    fire(input, "input");
    form.requestSubmit();
    const refused = q('[data-testid="cell-editor"]');
    if (refused)
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    const g = cell.closest("g[data-testid^='matrix-']").getAttribute("data-testid");
    return `edit ${g}[${cell.getAttribute("data-row")}, ${cell.getAttribute("data-col")}] = "${a.text}"${refused ? " (refused)" : ""}`;
  }
  return null;
}

/**
 * Run in the page: checks (b) and (c) of the walk. (b) the stage is drawn and the
 * caption's title is the active view's; (c) the page loaded fresh from this page's
 * URL (in a same-size iframe) shows the same. Resolves to a list of problems.
 */
async function pageConsistency() {
  // What the stage and caption show: every matrix's size and numbers, the caption's text.
  function snapshot(win = window) {
    const doc = win.document;
    const svg = doc.querySelector('svg[data-testid="scene-svg"]');
    const matrices = {};
    for (const id of win.__attnkit.matrixIds()) {
      const m = win.__attnkit.matrix(id);
      matrices[id] = {
        rows: m.rows,
        cols: m.cols,
        values: Array.from(m.values, (v) =>
          Number.isFinite(v) ? Number(v.toPrecision(6)) : String(v),
        ).join(" "),
      };
    }
    return {
      view: svg?.getAttribute("data-view"),
      step: svg?.getAttribute("data-step"),
      title: doc.querySelector('[data-testid="scene-title"]')?.textContent,
      caption: doc
        .querySelector('[data-testid="caption"]')
        ?.textContent.replace(/\s+/g, " ")
        .trim(),
      matrices,
    };
  }
  const out = [];
  // The URL follows the state within 120 ms.
  for (let i = 0; i < 40 && location.search.slice(1) !== window.__attnkit.query(); i++)
    await new Promise((r) => setTimeout(r, 20));
  if (location.search.slice(1) !== window.__attnkit.query())
    out.push(`the URL ${location.search} is not the state ${window.__attnkit.query()}`);
  const s = window.__attnkit.state();
  const here = snapshot(window);
  const drawn = document.querySelectorAll(
    '[data-testid="scene-svg"] rect.cell, [data-testid="scene-svg"] canvas, [data-testid="scene-svg"] rect, [data-testid="scene-svg"] path',
  ).length;
  if (!drawn) out.push("the stage is blank");
  if (here.view !== s.view) out.push(`the stage shows view ${here.view}, the state says ${s.view}`);
  const nav = document.querySelector(`[data-testid="view-${s.view}"]`);
  if (!nav?.classList.contains("on")) out.push(`the ${s.view} tab is not the one lit`);
  if (document.querySelectorAll("#views button.on").length !== 1)
    out.push("not exactly one view tab lit");
  if (s.view === "steps") {
    if (!here.title?.startsWith(`${s.step}. `))
      out.push(`caption title "${here.title}" for step ${s.step}`);
  } else if (!here.title?.toLowerCase().includes(nav.textContent.trim().toLowerCase())) {
    out.push(`caption title "${here.title}" for view ${s.view}`);
  }
  if (document.querySelector('[data-testid="error"]'))
    out.push(`error shown: ${document.querySelector('[data-testid="error"]').textContent}`);
  const frame = document.createElement("iframe");
  frame.style.cssText = `position:fixed;left:0;top:0;width:${innerWidth}px;height:${innerHeight}px;opacity:0;pointer-events:none;z-index:-1;border:0`;
  frame.src = location.href;
  document.body.append(frame);
  try {
    const t0 = performance.now();
    for (;;) {
      const w = frame.contentWindow;
      if (w?.document?.body?.dataset.ready === "1") break;
      if (w?.document?.querySelector('[data-testid="error"]')) break;
      if (performance.now() - t0 > 10000) {
        out.push("the fresh page did not get ready in 10 s");
        return out;
      }
      await new Promise((r) => setTimeout(r, 15));
    }
    const fresh = snapshot(frame.contentWindow);
    for (const k of ["view", "step", "title", "caption"])
      if (fresh[k] !== here[k]) out.push(`${k}: page "${here[k]}", fresh load "${fresh[k]}"`);
    const ids = new Set([...Object.keys(here.matrices), ...Object.keys(fresh.matrices)]);
    for (const id of ids) {
      const a = here.matrices[id],
        b = fresh.matrices[id];
      if (!a || !b)
        out.push(`matrix ${id}: ${a ? "not on the fresh page" : "only on the fresh page"}`);
      else if (a.rows !== b.rows || a.cols !== b.cols)
        out.push(`matrix ${id}: page ${a.rows} x ${a.cols}, fresh load ${b.rows} x ${b.cols}`);
      else if (a.values !== b.values) out.push(`matrix ${id}: numbers differ from the fresh load`);
    }
    const fs = frame.contentWindow.__attnkit.state();
    if (JSON.stringify(fs) !== JSON.stringify(s))
      out.push(`state: page ${JSON.stringify(s)}, fresh load ${JSON.stringify(fs)}`);
    return out;
  } finally {
    frame.remove();
  }
}

const WALK_SENTENCES = [
  "the train left the station on time",
  "I cashed the check at the bank",
  "time flies like an arrow",
  "the quick brown fox jumps over the lazy dog",
  "a",
  "",
  "bank bank bank bank bank bank bank bank bank bank",
];
const WALK_NUMBERS = ["1", "2", "3", "4", "8", "16", "0", "-3", "2.5", "100000", ""]; // a number field takes no letters
const WALK_CELLS = ["0.5", "-2", "3", "1e5", "1e30", "NaN", "abc", "", "1e400", "-0.25"];

/** The next random control change of the walk. */
function walkAction(rnd) {
  const pick = rnd();
  const r = rnd();
  const one = (list) => list[Math.floor(rnd() * list.length)];
  if (r < 0.08) return { kind: "select", id: "preset", pick };
  if (r < 0.18)
    return {
      kind: "select",
      id: one(["mask", "mask", "weights", "emb", "query", "head", "speed"]),
      pick,
    };
  if (r < 0.26) return { kind: "check", id: one(["batch", "pe", "scaling"]) };
  if (r < 0.32) return { kind: "slider", id: one(["temperature", "softcap"]), pick };
  if (r < 0.44)
    return {
      kind: "number",
      id: one(["dModel", "seed", "dK", "dV", "heads", "kvHeads"]),
      text: one(WALK_NUMBERS),
    };
  if (r < 0.48) return { kind: "text", id: one(["text", "text2"]), text: one(WALK_SENTENCES) };
  if (r < 0.58) return { kind: "cell", pick, text: one(WALK_CELLS) };
  if (r < 0.72)
    return {
      kind: "click",
      id: `view-${one(["steps", "headview", "grid", "saturation", "decoding"])}`,
    };
  if (r < 0.92) return { kind: "click", id: `step-${1 + Math.floor(rnd() * 8)}` };
  return {
    kind: "click",
    id: one(["decode-step", "decode-end", "decode-reset", "reroll", "reset-edits", "next", "prev"]),
  };
}

/**
 * The state-consistency walk: from the page as loaded, `steps` seeded random
 * control changes; after each, (a) no new problem (uncaught error, console error),
 * (b) the stage is drawn with the active view's caption, (c) the page equals the
 * page loaded fresh from its URL. `evaluate(fn, arg)` runs fn in the page;
 * `problems()` resolves to the problems seen so far. Throws with the seed and the
 * steps so far on the first failure. Stops early after `budgetMs`.
 */
export async function stateWalk({
  evaluate,
  problems,
  seed,
  steps = 200,
  budgetMs = 60000,
  label = "",
}) {
  const rnd = prng(seed);
  const log = [];
  const t0 = Date.now();
  const seen = (await problems()).length;
  let done = 0;
  for (let i = 0; i < steps * 3 && done < steps; i++) {
    if (Date.now() - t0 > budgetMs) break;
    const did = await evaluate(pageAction, walkAction(rnd));
    if (!did) continue;
    done++;
    log.push(did);
    const found = [...(await problems()).slice(seen), ...(await evaluate(pageConsistency))];
    if (found.length) {
      const url = await evaluate(() => location.href);
      throw new Error(
        `${label} state walk, seed ${seed} (replay: WALK_SEED=${seed}), after ${done} changes:\n  ${log.slice(-12).join("\n  ")}\nat ${url}\n${found.join("\n")}`,
      );
    }
  }
  return { done, ms: Date.now() - t0, log };
}

/**
 * A module of the page's own source (TypeScript, `rel` from the repository's root) as Node
 * imports it: esbuild strips its types. For the page's modules that import no other.
 */
export async function pageModule(rel) {
  const { transform } = await import("esbuild");
  const { code } = await transform(readFileSync(path.resolve(root, rel), "utf8"), {
    loader: "ts",
    format: "esm",
  });
  return import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`);
}
