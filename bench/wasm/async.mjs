// The worker API's added cost (issue #34): attention with T = 512, d = 64 (and
// a small T = 16 call, where the cost is all overhead) through attnkit/worker
// against the same call on the synchronous API, in Node (a worker_threads
// Worker) and in Chromium (a module Web Worker; a page served from loopback
// with cross-origin isolation, so that performance.now() has 5 µs steps,
// under Playwright with Debian's Chromium, as the browser tests launch it).
// Paired rounds: each round times a batch of synchronous calls and a batch of
// awaited async calls one after the other (in alternating order), and the
// added cost is the median over rounds of (async - sync) per call, in
// microseconds; for copied inputs (the default) and moved ones (transfer:
// true, fresh arrays each call: their making is timed on both sides). The
// worker and the caller each need a core: run it on two.
//
// Usage: node bench/wasm/async.mjs [--quick] [--no-browser] > bench/results/async.json
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createAttnkit } from "../../dist/attnkit.node.mjs";
import { createAttnkitWorker } from "../../dist/worker.node.mjs";
import { ARGS, CHROMIUM } from "../../tests/chromium.mjs";
import * as stats from "../lib/stats.mjs";

const quick = process.argv.includes("--quick");
const browser = !process.argv.includes("--no-browser");
const ROUNDS = quick ? 15 : 61;
const SHAPES = [
  [512, 64],
  [16, 64],
];

// One shape's paired rounds, on the synchronous module `attn` and the worker
// `worker`; `stats`: bench/lib/stats.mjs. Self-contained (its source also runs
// in the page, which imports its own `stats`).
async function measure(stats, attn, worker, T, d, transfer, rounds) {
  const { median, random } = stats;
  const inputs = () => [0, 1, 2].map((i) => ({ data: random(T * d, 7 + i), rows: T, cols: d }));
  const fixed = inputs();
  const call = worker.with({ transfer });
  const args = () => (transfer ? inputs() : fixed);
  const want = attn.attention(...fixed).data;
  const got = (await call.attention(...args())).data;
  if (want.some((x, i) => x !== got[i])) throw new Error(`T = ${T}: async != sync`);
  // A batch lasting ~20 ms on the synchronous side.
  let t0 = performance.now();
  for (let i = 0; i < 3; ++i) attn.attention(...args());
  const per = (performance.now() - t0) / 3;
  const n = Math.max(3, Math.ceil(20 / Math.max(per, 1e-3)));
  const syncBatch = () => {
    const s = performance.now();
    for (let i = 0; i < n; ++i) attn.attention(...args());
    return (performance.now() - s) / n;
  };
  const asyncBatch = async () => {
    const s = performance.now();
    for (let i = 0; i < n; ++i) await call.attention(...args());
    return (performance.now() - s) / n;
  };
  for (let w = 0; w < 3; ++w) (syncBatch(), await asyncBatch());
  const sync = [],
    async_ = [],
    added = [];
  for (let r = 0; r < rounds; ++r) {
    let s, a;
    if (r % 2) ((s = syncBatch()), (a = await asyncBatch()));
    else ((a = await asyncBatch()), (s = syncBatch()));
    sync.push(s * 1e3);
    async_.push(a * 1e3);
    added.push((a - s) * 1e3);
  }
  return {
    T,
    d,
    transfer,
    callsPerBatch: n,
    syncUs: median(sync),
    asyncUs: median(async_),
    addedUs: median(added),
    addedUsRounds: added.map((x) => +x.toPrecision(4)),
  };
}

function report(where, r) {
  console.error(
    `${where}: T = ${r.T}, d = ${r.d}, ${r.transfer ? "transfer" : "copy"}: sync ${r.syncUs.toFixed(1)} us, ` +
      `async ${r.asyncUs.toFixed(1)} us, added ${r.addedUs.toFixed(1)} us (median of ${ROUNDS} paired rounds)`,
  );
}

// Node: a worker_threads Worker.
const attn = await createAttnkit({ simd: true });
const worker = await createAttnkitWorker({ simd: true });
const node = [];
for (const [T, d] of SHAPES) {
  for (const transfer of [false, true]) {
    const r = await measure(stats, attn, worker, T, d, transfer, ROUNDS);
    node.push(r);
    report("node", r);
  }
}
await worker.dispose();

// Chromium: the same function in a page whose module Web Worker loads the
// SIMD128 build. The page and dist/ are served from 127.0.0.1 with the
// cross-origin isolation headers.
let chromium = null;
if (browser) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
  const page = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>attnkit/worker bench</title></head><body><script type="module">
import { createAttnkitWorker } from "/dist/worker.mjs";
import createAttnkit from "/dist/attnkit.mjs";
window.stats = await import("/lib/stats.mjs");
window.attn = await createAttnkit({ simd: true });
window.worker = await createAttnkitWorker({ simd: true });
window.ready = true;
</script></body></html>`;
  const TYPES = {
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".wasm": "application/wasm",
  };
  const server = createServer(async (req, res) => {
    const headers = {
      "cross-origin-opener-policy": "same-origin",
      "cross-origin-embedder-policy": "require-corp",
      "cache-control": "no-store",
    };
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/") {
      res.writeHead(200, { ...headers, "content-type": "text/html" }).end(page);
      return;
    }
    const folder = url.pathname.startsWith("/dist/") ? "dist" : "bench/lib";
    const file = path.join(root, folder, path.basename(url.pathname));
    if (!/^\/(dist|lib)\//.test(url.pathname)) return void res.writeHead(404).end();
    try {
      const body = await readFile(file);
      res.writeHead(200, { ...headers, "content-type": TYPES[path.extname(file)] ?? "" });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { chromium: launcher } = await import("playwright-core");
  const b = await launcher.launch({ executablePath: CHROMIUM, args: ARGS });
  try {
    const p = await b.newPage();
    const errors = [];
    p.on("pageerror", (e) => errors.push(e.message));
    await p.goto(`http://127.0.0.1:${server.address().port}/`);
    await p.waitForFunction(() => window.ready === true, null, { timeout: 60_000 });
    const isolated = await p.evaluate(() => self.crossOriginIsolated);
    const results = [];
    for (const [T, d] of SHAPES) {
      for (const transfer of [false, true]) {
        const r = await p.evaluate(
          `(${measure})(window.stats, window.attn, window.worker, ${T}, ${d}, ${transfer}, ${ROUNDS})`,
        );
        results.push(r);
        report("chromium", r);
      }
    }
    if (errors.length) throw new Error(`the page failed: ${errors.join("; ")}`);
    chromium = { version: b.version(), crossOriginIsolated: isolated, results };
  } finally {
    await b.close();
    server.close();
  }
}
console.log(
  JSON.stringify(
    { node: process.version, rounds: ROUNDS, results: node, chromium },
    (k, v) => (k === "addedUsRounds" ? undefined : v),
    2,
  ),
);
