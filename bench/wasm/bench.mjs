// WebAssembly benchmarks in Node: attnkit's SIMD128 build against its own
// scalar build and a straightforward JS implementation, one head, d = 64,
// the same inputs in the same run. Runs are interleaved (each round times every
// engine once) and the median of the rounds is reported.
// GFLOP/s counts 4 * T * T * d per head, also for causal runs.
// Usage: node bench/wasm/bench.mjs [--quick] > bench/results/wasm.json
import { performance } from "node:perf_hooks";
import { createAttnkit } from "attnkit";

const quick = process.argv.includes("--quick");
const D = 64;
const sizes = quick ? [128, 512] : [128, 512, 2048, 8192];

function random(n, seed) {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; ++i) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

// The plain JS engine: two passes per query row, Float32Array storage.
function jsAttention(q, k, v, T, causal, out) {
  const row = new Float32Array(T);
  const scale = 1 / Math.sqrt(D);
  for (let i = 0; i < T; ++i) {
    const n = causal ? i + 1 : T;
    let max = -Infinity;
    for (let j = 0; j < n; ++j) {
      let dot = 0;
      for (let c = 0; c < D; ++c) dot += q[i * D + c] * k[j * D + c];
      row[j] = dot * scale;
      if (row[j] > max) max = row[j];
    }
    let sum = 0;
    for (let j = 0; j < n; ++j) sum += row[j] = Math.exp(row[j] - max);
    out.fill(0, i * D, i * D + D);
    for (let j = 0; j < n; ++j) {
      const p = row[j] / sum;
      for (let c = 0; c < D; ++c) out[i * D + c] += p * v[j * D + c];
    }
  }
  return out;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function maxDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; ++i) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

const simd = await createAttnkit({ simd: true });
const scalar = await createAttnkit({ simd: false });
const results = [];
for (const causal of [false, true]) {
  for (const T of sizes) {
    const q = random(T * D, 1), k = random(T * D, 2), v = random(T * D, 3);
    const Q = { data: q, rows: T, cols: D }, K = { data: k, rows: T, cols: D }, V = { data: v, rows: T, cols: D };
    const engines = {
      "attnkit (wasm SIMD128)": () => simd.attention(Q, K, V, { causal }).data,
      "attnkit (wasm scalar)": () => scalar.attention(Q, K, V, { causal }).data,
    };
    if (T <= 2048) {
      const out = new Float32Array(T * D);
      engines["plain JS"] = () => jsAttention(q, k, v, T, causal, out);
    }
    // Outputs of every engine are checked against attnkit SIMD before timing.
    const want = engines["attnkit (wasm SIMD128)"]();
    for (const [name, run] of Object.entries(engines)) {
      const diff = maxDiff(run(), want);
      if (!(diff < 1e-4)) throw new Error(`${name} differs from attnkit by ${diff} at T=${T}`);
    }
    const flops = 4 * T * T * D;
    const rounds = T >= 8192 ? 3 : T >= 2048 ? 5 : 9;
    const times = Object.fromEntries(Object.keys(engines).map((n) => [n, []]));
    for (let r = 0; r < rounds; ++r) {
      for (const [name, run] of Object.entries(engines)) {
        const reps = Math.max(1, Math.round(2e8 / flops));
        const t0 = performance.now();
        for (let i = 0; i < reps; ++i) run();
        times[name].push((performance.now() - t0) / reps);
      }
    }
    for (const [name, ts] of Object.entries(times)) {
      const ms = median(ts);
      results.push({ engine: name, T, causal, ms, gflops: flops / (ms * 1e6) });
    }
    console.error(`T=${T} causal=${causal}: ` + results.slice(-Object.keys(engines).length)
      .map((r) => `${r.engine} ${r.gflops.toFixed(2)} GFLOP/s`).join(", "));
  }
}
console.log(JSON.stringify({ d: D, results }, null, 2));
