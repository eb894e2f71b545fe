// The worker API's added cost (issue #34): attention with T = 512, d = 64 (and
// a small T = 16 call, where the cost is all overhead) through attnkit/worker
// against the same call on the synchronous API, in Node (a worker_threads
// Worker). Paired rounds: each round times a batch of synchronous calls and a
// batch of awaited async calls one after the other (in alternating order), and
// the added cost is the median over rounds of (async - sync) per call, in
// microseconds; for copied inputs (the default) and moved ones (transfer: true,
// fresh arrays each call: their making is timed on both sides).
//
// Usage: node bench/wasm/async.mjs [--quick] > bench/results/async.json
import { performance } from "node:perf_hooks";
import { createAttnkit } from "../../dist/attnkit.node.mjs";
import { createAttnkitWorker } from "../../dist/worker.node.mjs";
import { random } from "./plain.mjs";

const quick = process.argv.includes("--quick");
const ROUNDS = quick ? 15 : 61;

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

async function measure(attn, worker, T, d, transfer) {
  const inputs = () => [0, 1, 2].map((i) => ({ data: random(T * d, 7 + i), rows: T, cols: d }));
  const fixed = inputs();
  const call = worker.with({ transfer });
  const args = () => (transfer ? inputs() : fixed);
  const want = attn.attention(...fixed).data;
  const got = (await call.attention(...args())).data;
  if (want.some((x, i) => x !== got[i])) throw new Error(`T = ${T}: async != sync`);
  // A batch lasting ~5 ms on the synchronous side.
  const t0 = performance.now();
  attn.attention(...args());
  const n = Math.max(3, Math.ceil(5 / Math.max(performance.now() - t0, 1e-3)));
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
  for (let r = 0; r < ROUNDS; ++r) {
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
  };
}

const attn = await createAttnkit({ simd: true });
const worker = await createAttnkitWorker({ simd: true });
const results = [];
for (const [T, d] of [
  [512, 64],
  [16, 64],
]) {
  for (const transfer of [false, true]) {
    const r = await measure(attn, worker, T, d, transfer);
    results.push(r);
    console.error(
      `T = ${T}, d = ${d}, ${transfer ? "transfer" : "copy"}: sync ${r.syncUs.toFixed(1)} us, ` +
        `async ${r.asyncUs.toFixed(1)} us, added ${r.addedUs.toFixed(1)} us (median of ${ROUNDS} paired rounds)`,
    );
  }
}
await worker.dispose();
console.log(JSON.stringify({ node: process.version, rounds: ROUNDS, results }, null, 2));
