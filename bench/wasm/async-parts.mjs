// Where an async call's added time goes (issue #34), part by part, for the
// sizes of attention with T = 512, d = 64 (three 128 KB inputs, one 128 KB
// result), in Node (worker_threads) and in Chromium (a Web Worker in a
// cross-origin isolated page): a message's round trip, empty and carrying the
// arrays (cloned, or moved there and back), a round trip through a
// SharedArrayBuffer woken by Atomics (the worker waiting in Atomics.wait or in
// its event loop through Atomics.waitAsync, the caller always through
// Atomics.waitAsync), and the copies the shared path adds. Each part is the
// median over rounds of a batch's mean, in microseconds. The worker and the
// caller each need a core.
//
// Usage: node bench/wasm/async-parts.mjs [--quick] [--no-browser] > build/async-parts.json
// (a dated record of a run goes to bench/results/history.md)
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { Worker } from "node:worker_threads";
import { ARGS, CHROMIUM } from "../../tests/chromium.mjs";
import * as stats from "../lib/stats.mjs";

const quick = process.argv.includes("--quick");
const browser = !process.argv.includes("--no-browser");
const ROUNDS = quick ? 9 : 31;

// The worker's side (its source runs as a worker script): echoes messages,
// and answers through the shared block ctl = [request, answer, stop].
function workerMain(post, listen) {
  let ctl = null;
  let data = null;
  const answer = () => {
    // The work of a call: read the inputs (summed), write a result.
    Atomics.store(ctl, 1, Atomics.load(ctl, 0));
    Atomics.notify(ctl, 1);
  };
  const copyWork = () => {
    const n = 3 * 32768;
    let s = 0;
    for (let i = 0; i < n; i += 1024) s += data[i];
    data[n] = s;
  };
  listen((m) => {
    if (m.op === "echo") return post(m, m.back ?? []);
    if (m.op === "result") {
      const out = new Float32Array(32768);
      return post({ out, spare: m.back }, [out.buffer, ...(m.back ?? [])]);
    }
    if (m.op === "copyTime") {
      // The worker's copy of the inputs (as into wasm memory): just written by
      // the caller's core, then again (in this core's caches).
      const local = new Float32Array(3 * 32768);
      const times = [];
      for (let k = 0; k < 2; ++k) {
        const s = performance.now();
        local.set(data.subarray(0, 3 * 32768));
        times.push((performance.now() - s) * 1e3);
      }
      return post({ times }, []);
    }
    if (m.op === "shared") {
      ({ ctl, data } = m);
      return post({ ok: true }, []);
    }
    if (m.op === "pm-answer") {
      copyWork();
      return answer();
    }
    if (m.op === "wait") {
      // Blocks in Atomics.wait until stopped: no messages meanwhile.
      let seen = Atomics.load(ctl, 0);
      for (;;) {
        Atomics.wait(ctl, 0, seen);
        if (Atomics.load(ctl, 2)) break;
        seen = Atomics.load(ctl, 0);
        copyWork();
        answer();
      }
      Atomics.store(ctl, 2, 0);
      return post({ ok: true }, []);
    }
    if (m.op === "waitAsync") {
      let seen = Atomics.load(ctl, 0);
      const loop = () => {
        const w = Atomics.waitAsync(ctl, 0, seen);
        const go = () => {
          if (Atomics.load(ctl, 2)) {
            Atomics.store(ctl, 2, 0);
            return post({ ok: true }, []);
          }
          seen = Atomics.load(ctl, 0);
          copyWork();
          answer();
          loop();
        };
        if (w.async) w.value.then(go);
        else go();
      };
      loop();
    }
  });
}

// The caller's side: every part's median microseconds. `stats`:
// bench/lib/stats.mjs; `w` = { post, next }: next() resolves with the worker's
// next message. Self-contained (its source also runs in the page).
async function parts(stats, w, rounds) {
  const { median } = stats;
  const time = async (n, fn) => {
    for (let i = 0; i < 3; ++i) await fn();
    const per = [];
    for (let r = 0; r < rounds; ++r) {
      const s = performance.now();
      for (let i = 0; i < n; ++i) await fn();
      per.push(((performance.now() - s) / n) * 1e3);
    }
    return +median(per).toFixed(1);
  };
  const T = 512,
    d = 64,
    n = T * d;
  const inputs = [0, 1, 2].map(() => new Float32Array(n).fill(0.5));
  const out = {};
  out.emptyRoundTrip = await time(200, async () => {
    w.post({ op: "echo" }, []);
    await w.next();
  });
  out.clonedInputsRoundTrip = await time(50, async () => {
    w.post({ op: "result", args: inputs }, []);
    await w.next();
  });
  let pool = [0, 1, 2].map(() => new ArrayBuffer(n * 4));
  out.pooledInputsRoundTrip = await time(50, async () => {
    const args = pool.map((b, i) => {
      const x = new Float32Array(b);
      x.set(inputs[i]);
      return x;
    });
    w.post({ op: "result", args, back: pool }, pool);
    pool = (await w.next()).spare;
  });
  out.movedInputsRoundTrip = await time(50, async () => {
    const args = inputs.map((x) => x.slice());
    w.post(
      { op: "result", args },
      args.map((x) => x.buffer),
    );
    await w.next();
  });
  // The shared block: three inputs and a result.
  const ctl = new Int32Array(new SharedArrayBuffer(16));
  const data = new Float32Array(new SharedArrayBuffer(4 * n * 4));
  w.post({ op: "shared", ctl, data }, []);
  await w.next();
  const sharedCall = async (request) => {
    const seq = Atomics.load(ctl, 0) + 1;
    const before = Atomics.load(ctl, 1);
    request(seq);
    const r = Atomics.waitAsync(ctl, 1, before);
    if (r.async) await r.value;
  };
  const byAtomics = (seq) => {
    Atomics.store(ctl, 0, seq);
    Atomics.notify(ctl, 0);
  };
  out.messageThenAtomicsRoundTrip = await time(200, () =>
    sharedCall((seq) => {
      Atomics.store(ctl, 0, seq);
      w.post({ op: "pm-answer" }, []);
    }),
  );
  for (const mode of ["wait", "waitAsync"]) {
    w.post({ op: mode }, []);
    out[`atomicsRoundTrip_${mode}`] = await time(200, () => sharedCall(byAtomics));
    Atomics.store(ctl, 2, 1);
    byAtomics(Atomics.load(ctl, 0) + 1);
    await w.next();
  }
  // The worker's copy of inputs the caller's core has just written, and again.
  const fresh = [],
    again = [];
  for (let r = 0; r < rounds * 4; ++r) {
    for (let i = 0; i < 3; ++i) data.set(inputs[i], i * n);
    w.post({ op: "copyTime" }, []);
    const { times } = await w.next();
    fresh.push(times[0]);
    again.push(times[1]);
  }
  out.workerCopyIn_justWritten = +median(fresh).toFixed(1);
  out.workerCopyIn_again = +median(again).toFixed(1);
  // The copies the shared path adds: the inputs into the block, the result out of it.
  const copies = async (target) => {
    for (let i = 0; i < 3; ++i) target.set(inputs[i], i * n);
    return target.slice(3 * n, 4 * n);
  };
  out.copyInOut_shared = await time(200, () => copies(data));
  out.copyInOut_plain = await time(200, () => copies(new Float32Array(4 * n)));
  out.newResultArray = await time(200, async () => new Float32Array(n));
  return out;
}

const workerSource = `(${workerMain})`;

// Node: a worker_threads Worker from the same source.
const nodeWorker = new Worker(
  `const { parentPort } = require("node:worker_threads");
   ${workerSource}((m, t) => parentPort.postMessage(m, t), (fn) => parentPort.on("message", fn));`,
  { eval: true },
);
const nodeSide = {
  post: (m, t) => nodeWorker.postMessage(m, t),
  next: () => new Promise((resolve) => nodeWorker.once("message", resolve)),
};
const node = await parts(stats, nodeSide, ROUNDS);
console.error("node", node);
await nodeWorker.terminate();

let chromium = null;
if (browser) {
  const page = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>async parts</title></head><body><script type="module">
const source = ${JSON.stringify(workerSource)} +
  "((m, t) => self.postMessage(m, t), (fn) => self.addEventListener('message', (e) => fn(e.data)));";
const worker = new Worker(URL.createObjectURL(new Blob([source], { type: "text/javascript" })));
window.side = {
  post: (m, t) => worker.postMessage(m, t),
  next: () => new Promise((resolve) =>
    worker.addEventListener("message", (e) => resolve(e.data), { once: true })),
};
window.stats = await import("/lib/stats.mjs");
window.ready = true;
</script></body></html>`;
  const statsSource = readFileSync(new URL("../lib/stats.mjs", import.meta.url));
  const server = createServer((req, res) => {
    const lib = req.url === "/lib/stats.mjs";
    res
      .writeHead(200, {
        "cross-origin-opener-policy": "same-origin",
        "cross-origin-embedder-policy": "require-corp",
        "content-type": lib ? "text/javascript" : "text/html",
      })
      .end(lib ? statsSource : page);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { chromium: launcher } = await import("playwright-core");
  const b = await launcher.launch({ executablePath: CHROMIUM, args: ARGS });
  try {
    const p = await b.newPage();
    await p.goto(`http://127.0.0.1:${server.address().port}/`);
    await p.waitForFunction(() => window.ready === true);
    const isolated = await p.evaluate(() => self.crossOriginIsolated);
    const results = await p.evaluate(`(${parts})(window.stats, window.side, ${ROUNDS})`);
    console.error("chromium", results);
    chromium = { version: b.version(), crossOriginIsolated: isolated, results };
  } finally {
    await b.close();
    server.close();
  }
}
console.log(
  JSON.stringify({ node: process.version, rounds: ROUNDS, results: node, chromium }, null, 2),
);
