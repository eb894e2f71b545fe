// The worker API's added cost (issue #34): attention with T = 512, d = 64 (and
// a small T = 16 call, where the cost is all overhead) through attnkit/worker
// against the same call on the synchronous API, in Node (a worker_threads
// Worker) and in Chromium (a module Web Worker; a page served from loopback
// with cross-origin isolation, so that performance.now() has 5 µs steps,
// under Playwright with Debian's Chromium, as the browser tests launch it).
// Paired rounds: each round times a batch of synchronous calls and a batch of
// awaited async calls through each path (in an order that rotates), and a
// path's added cost is the median over rounds of (async - sync) per call, in
// microseconds. The paths: copied inputs (the default) through shared memory
// (where SharedArrayBuffer and Atomics.waitAsync are usable: Node, an isolated
// page) and by message (elsewhere; a worker made with Atomics.waitAsync
// hidden), and moved ones (transfer: true, fresh arrays each call: their
// making is timed on both sides). The worker and the caller each need a core:
// run it on two. --baseline DIR adds the default path of another build of the
// package (DIR: its dist/), for an A/B in the same rounds.
//
// Usage: node bench/wasm/async.mjs [--quick] [--no-browser] [--baseline DIR] > bench/results/async.json
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createAttnkit } from "../../dist/attnkit.node.mjs";
import { createAttnkitWorker } from "../../dist/worker.node.mjs";
import { ARGS, CHROMIUM } from "../../tests/chromium.mjs";

const quick = process.argv.includes("--quick");
const browser = !process.argv.includes("--no-browser");
const ROUNDS = quick ? 15 : 61;
const SHAPES = [
  [512, 64],
  [16, 64],
];

// One shape's paired rounds: the synchronous module `attn` against each of
// `paths` ({ name, worker, transfer, hide? }: a worker and how its calls send
// their inputs). Each round times a batch of synchronous calls with the same
// inputs, one with fresh inputs (made in the batch, as a moving path makes
// them), and a batch of awaited calls through each path, in an order that
// rotates from round to round; a path's added cost is the median over rounds
// of (its batch - the synchronous batch with the same kind of inputs) per call.
// Self-contained (its source also runs in the page).
async function measure(attn, paths, T, d, rounds) {
  const random = (n, seed) => {
    let s = seed >>> 0;
    const out = new Float32Array(n);
    for (let i = 0; i < n; ++i) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      out[i] = s / 2 ** 31 - 1;
    }
    return out;
  };
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const inputs = () => [0, 1, 2].map((i) => ({ data: random(T * d, 7 + i), rows: T, cols: d }));
  const fixed = inputs();
  const want = attn.attention(...fixed).data;
  for (const p of paths) {
    const got = (await p.worker.with({ transfer: p.transfer }).attention(...inputs())).data;
    if (want.some((x, i) => x !== got[i])) throw new Error(`T = ${T}, ${p.name}: async != sync`);
  }
  // A batch lasting ~20 ms on the synchronous side.
  let t0 = performance.now();
  for (let i = 0; i < 3; ++i) attn.attention(...fixed);
  const per = (performance.now() - t0) / 3;
  const n = Math.max(3, Math.ceil(20 / Math.max(per, 1e-3)));
  const syncBatch = (fresh) => {
    const s = performance.now();
    for (let i = 0; i < n; ++i) attn.attention(...(fresh ? inputs() : fixed));
    return ((performance.now() - s) / n) * 1e3;
  };
  const asyncBatch = async (p) => {
    const call = p.worker.with({ transfer: p.transfer });
    const s = performance.now();
    for (let i = 0; i < n; ++i) await call.attention(...(p.transfer ? inputs() : fixed));
    return ((performance.now() - s) / n) * 1e3;
  };
  const steps = [
    { name: "sync", run: () => syncBatch(false) },
    { name: "sync fresh", run: () => syncBatch(true) },
    ...paths.map((p) => ({ name: p.name, run: () => asyncBatch(p) })),
  ];
  const times = Object.fromEntries(steps.map((s) => [s.name, []]));
  for (let r = -3; r < rounds; ++r) {
    const k = ((r % steps.length) + steps.length) % steps.length;
    const round = {};
    for (const s of [...steps.slice(k), ...steps.slice(0, k)]) round[s.name] = await s.run();
    if (r < 0) continue; // warm-up rounds
    for (const s of steps) times[s.name].push(round[s.name]);
  }
  return {
    T,
    d,
    callsPerBatch: n,
    syncUs: median(times.sync),
    syncFreshUs: median(times["sync fresh"]),
    paths: paths.map((p) => {
      const base = times[p.transfer ? "sync fresh" : "sync"];
      const added = times[p.name].map((t, i) => t - base[i]);
      return { name: p.name, asyncUs: median(times[p.name]), addedUs: median(added) };
    }),
  };
}

function report(where, r) {
  const paths = r.paths.map((p) => `${p.name} ${p.addedUs.toFixed(1)} us`).join(", ");
  console.error(
    `${where}: T = ${r.T}, d = ${r.d}: sync ${r.syncUs.toFixed(1)} us (fresh inputs ` +
      `${r.syncFreshUs.toFixed(1)} us); added: ${paths} (median of ${ROUNDS} paired rounds)`,
  );
}

// A worker made while SharedArrayBuffer's wake-up (Atomics.waitAsync) is hidden
// takes the message path for every call, as where it is missing. Self-contained.
async function withoutShared(create) {
  const waitAsync = Atomics.waitAsync;
  delete Atomics.waitAsync;
  try {
    return await create();
  } finally {
    Atomics.waitAsync = waitAsync;
  }
}

// The paths: copied inputs through shared memory (the default where it is
// usable), copied inputs by message (where it is not), moved inputs
// (transfer: true); with --baseline DIR, the default path of DIR's package
// (an A/B against an older dist/).
const baselineIndex = process.argv.indexOf("--baseline");
const baseline = baselineIndex > 0 ? path.resolve(process.argv[baselineIndex + 1]) : null;

// Node: worker_threads Workers.
const attn = await createAttnkit({ simd: true });
const shared = await createAttnkitWorker({ simd: true });
const message = await withoutShared(() => createAttnkitWorker({ simd: true }));
const nodePaths = [
  { name: "copy (shared memory)", worker: shared, transfer: false },
  { name: "copy (message)", worker: message, transfer: false },
  { name: "transfer", worker: shared, transfer: true },
];
if (baseline) {
  const old = await import(pathToFileURL(path.join(baseline, "worker.node.mjs")).href);
  nodePaths.push({
    name: "baseline copy",
    worker: await old.createAttnkitWorker({ simd: true }),
    transfer: false,
  });
}
const node = [];
for (const [T, d] of SHAPES) {
  const r = await measure(attn, nodePaths, T, d, ROUNDS);
  node.push(r);
  report("node", r);
}
for (const p of nodePaths) if (p.transfer === false) await p.worker.dispose();

// Chromium: the same function in a page whose module Web Workers load the
// SIMD128 build. The page and dist/ (and the baseline's, under /base/) are
// served from 127.0.0.1 with the cross-origin isolation headers.
let chromium = null;
if (browser) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
  const page = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>attnkit/worker bench</title></head><body><script type="module">
import { createAttnkitWorker } from "/dist/worker.mjs";
import createAttnkit from "/dist/attnkit.mjs";
const withoutShared = ${withoutShared};
window.attn = await createAttnkit({ simd: true });
const shared = await createAttnkitWorker({ simd: true });
const message = await withoutShared(() => createAttnkitWorker({ simd: true }));
window.paths = [
  { name: "copy (shared memory)", worker: shared, transfer: false },
  { name: "copy (message)", worker: message, transfer: false },
  { name: "transfer", worker: shared, transfer: true },
];
if (${baseline !== null}) {
  const old = await import("/base/worker.mjs");
  const worker = await old.createAttnkitWorker({ simd: true });
  window.paths.push({ name: "baseline copy", worker, transfer: false });
}
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
    const dir = url.pathname.startsWith("/dist/")
      ? path.join(root, "dist")
      : url.pathname.startsWith("/base/") && baseline;
    if (!dir) return void res.writeHead(404).end();
    const file = path.join(dir, path.basename(url.pathname));
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
      const r = await p.evaluate(`(${measure})(window.attn, window.paths, ${T}, ${d}, ${ROUNDS})`);
      results.push(r);
      report("chromium", r);
    }
    if (errors.length) throw new Error(`the page failed: ${errors.join("; ")}`);
    chromium = { version: b.version(), crossOriginIsolated: isolated, results };
  } finally {
    await b.close();
    server.close();
  }
}
console.log(
  JSON.stringify({ node: process.version, rounds: ROUNDS, results: node, chromium }, null, 2),
);
