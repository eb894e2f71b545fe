// A browser load whose .wasm is not where the loader looks (a bundle that did
// not copy it, a wrong wasmPaths): createAttnkit rejects with load_failed
// naming the URL it fetched and the option that moves it, and prints nothing
// of Emscripten's own to the page's console.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { ARGS, CHROMIUM } from "../chromium.mjs";

const dist = fileURLToPath(new URL("../../dist/", import.meta.url));
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"></head>
<body><script type="module">
  import createAttnkit from "/dist/attnkit.mjs";
  const report = (e) => ({ name: e.name, code: e.code, parameter: e.parameter, message: e.message });
  const results = [];
  for (const options of [{}, { wasmPaths: "/nowhere/" }, { simd: false }]) {
    try { await createAttnkit(options); results.push({ loaded: true }); }
    catch (e) { results.push(report(e)); }
  }
  window.results = results;
</script></body></html>`;

let server, base, browser;
before(async () => {
  // dist/ without attnkit-simd.wasm: every other file is served from dist.
  server = createServer((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    if (path === "/") {
      res.writeHead(200, { "content-type": "text/html" });
      return res.end(PAGE);
    }
    const name = path.startsWith("/dist/") ? path.slice(6) : "";
    // Also the scalar build's loader: a dynamic import that fails.
    if (
      !name ||
      name.includes("/") ||
      name === "attnkit-simd.wasm" ||
      name === "attnkit-scalar.mjs"
    ) {
      res.writeHead(404);
      return res.end();
    }
    try {
      const type = name.endsWith(".wasm") ? "application/wasm" : "text/javascript";
      const body = readFileSync(join(dist, name));
      res.writeHead(200, { "content-type": type });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
});
after(async () => {
  await browser?.close();
  server?.close();
});

test("Chromium: a missing .wasm or build loader rejects with load_failed naming its URL", async () => {
  const page = await browser.newPage();
  const console = [];
  page.on("console", (m) => console.push(m.text()));
  await page.goto(`${base}/`);
  await page.waitForFunction(() => window.results, null, { timeout: 30000 });
  const [beside, moved, noLoader] = await page.evaluate(() => window.results);
  assert.equal(beside.code, "load_failed", JSON.stringify(beside));
  assert.equal(beside.parameter, "options");
  assert.ok(
    beside.message.includes(`${base}/dist/attnkit-simd.wasm`),
    `names the URL tried: ${beside.message}`,
  );
  assert.match(beside.message, /options\.wasmPaths/);
  assert.doesNotMatch(beside.message, /ASSERTIONS|Aborted/);
  assert.equal(moved.code, "load_failed", JSON.stringify(moved));
  assert.equal(moved.parameter, "options.wasmPaths");
  assert.ok(moved.message.includes("/nowhere/attnkit-simd.wasm"), moved.message);
  // A build's loader that does not import: its file and URL, not the browser's own words alone.
  assert.equal(noLoader.code, "load_failed", JSON.stringify(noLoader));
  assert.equal(noLoader.parameter, "options");
  assert.ok(
    noLoader.message.startsWith("options: expected the scalar build's loader attnkit-scalar.mjs"),
    noLoader.message,
  );
  assert.ok(noLoader.message.includes(`${base}/dist/attnkit-scalar.mjs`), noLoader.message);
  const emscripten = console.filter((l) =>
    /Aborted|ASSERTIONS|wasm streaming|falling back/.test(l),
  );
  assert.deepEqual(emscripten, [], "Emscripten's own lines stay off the console");
});
