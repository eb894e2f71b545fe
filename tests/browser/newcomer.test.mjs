// Browser tests of the page as a newcomer meets it (issue #19, the parts after the
// control walk): several designed heads by default with their names shown, layout
// that keeps numbers inside their cells, a phone-sized screen, the keyboard, and
// text input. Debian's Chromium through playwright-core.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { after, before, beforeEach, test } from "node:test";
import { chromium } from "playwright-core";
import { dist, shots } from "./helpers.mjs";
import { serve } from "./server.mjs";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

let server, browser, context, page;
let problems = [];

function watch(p, into) {
  p.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") into.push(`console ${m.type()}: ${m.text()}`);
  });
  p.on("pageerror", (e) => into.push(`page error: ${e.message}`));
}

const ready = (p = page) => p.waitForSelector("body[data-ready='1']", { timeout: 15000 });
const shot = (name, p = page) => p.screenshot({ path: path.join(shots, `newcomer-${name}.png`) });

async function open(query = "", p = page) {
  await p.goto(`${server.url}${query ? `?${query}` : ""}`);
  await ready(p);
}

async function gotoStep(n, p = page) {
  await p.click(`[data-testid="step-${n}"]`);
  await p.waitForSelector(`svg[data-testid="scene-svg"][data-step="${n}"][data-view="steps"]`);
}

before(async () => {
  assert.ok(existsSync(path.join(dist, "index.html")), "web/dist is missing: run `npx vite build web` first");
  mkdirSync(shots, { recursive: true });
  server = await serve(dist);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  context = await browser.newContext({ viewport: { width: 1440, height: 900 }, reducedMotion: "reduce" });
});

beforeEach(async () => {
  await page?.close();
  problems = [];
  page = await context.newPage();
  watch(page, problems);
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test("the default page opens on several designed heads that differ, their names shown", async () => {
  await open();
  const st = await page.evaluate(() => window.__attnkit.state());
  assert.equal(st.weights, "designed");
  assert.ok(st.heads >= 3, `default heads: ${st.heads}`);
  await gotoStep(8);
  const maps = [];
  for (let h = 0; h < st.heads; h++) maps.push((await page.evaluate((id) => window.__attnkit.matrix(id), `headmap-${h}`)).values);
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
  assert.match(await page.textContent('[data-testid="head-names"]'), /nouns look for their determiners/);
  assert.match(await page.textContent('[data-testid="head"]'), /head 1: words look for the same topic/);
  assert.deepEqual(problems, []);
});
