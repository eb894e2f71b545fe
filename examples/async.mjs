// attnkit in a worker (docs/api-js.md, "Async and workers"). Run: node examples/async.mjs
import { createAttnkitWorker, AttnkitError } from "attnkit/worker";

// A worker_threads Worker in Node, a module Web Worker in browsers; the options
// of createAttnkit, and the worker's (transfer, workerUrl).
const attn = await createAttnkitWorker({ simd: true });
console.log(`attnkit ${attn.version} in a worker, on ${attn.target}`);

const T = 512,
  d = 64;
const random = () => Float32Array.from({ length: T * d }, () => Math.random() - 0.5);
const [Q, K, V] = [random(), random(), random()].map((data) => ({ data, rows: T, cols: d }));

// The calls of the synchronous API, each returning a Promise, run in order.
const out = await attn.attention(Q, K, V, { causal: true });
console.log(`attention: [${out.shape}], the caller's Q still holds ${Q.data.length} values`);

// Errors arrive as the same classes, with code and parameter.
try {
  await attn.attention(Q, K, { data: V.data, rows: T - 1, cols: d + 1 });
} catch (e) {
  console.log(`${e instanceof AttnkitError ? "AttnkitError" : "?"} [${e.code}] ${e.message}`);
}

// Cancel a call still waiting behind another: an AbortError.
const controller = new AbortController();
const first = attn.attention(Q, K, V);
const second = attn
  .with({ signal: controller.signal })
  .attention(Q, K, V)
  .catch((e) => console.log(`cancelled: ${e.name} (${e.code})`));
controller.abort();
await Promise.all([first, second]);

// Move the inputs instead of copying them: the caller's arrays are detached.
const moved = { data: random(), rows: T, cols: d };
await attn.with({ transfer: true }).attention(moved, moved, moved);
console.log(`moved: the caller's array now holds ${moved.data.length} values`);

// A KV cache held in the worker: its calls are queued like the module's.
const cache = await attn.createKVCache({ numKvHeads: 1, dK: d, dV: d, capacity: 16 });
const token = () => ({
  data: Float32Array.from({ length: d }, () => Math.random()),
  shape: [1, 1, d],
});
for (let t = 0; t < 4; ++t) await cache.append(token(), token());
const next = await cache.attend(token(), 1);
console.log(`KV cache: ${cache.size} tokens, attend -> [${next.shape}]`);
await cache.dispose();

await attn.dispose(); // ends the worker
