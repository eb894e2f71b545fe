// Small calls (issue #18): the time of one call of attnkit's npm package
// (WebAssembly SIMD128, through its public API from dist/, as a JS user calls
// it) on the small shapes the web page and training make thousands of:
//   square: attention with T_q = T_k = T for T = 1..64, d = 8 and d = 64,
//           attnkit with typed-array inputs ({ data: Float32Array, rows, cols })
//           and with nested arrays ([[...], [...]]), against the plain JS engine
//           of bench/wasm/plain.mjs (Float32Array inputs, its output array
//           reused);
//   sweep:  T_q = 1..9 queries against fixed key counts (d = 64), typed
//           arrays, every query count in the same rounds: how the time grows
//           from one query count to the next.
//   training: attentionForTraining and attentionBackward with `saved` (the
//           forward's out and lse) against plain JS doing the same (below),
//           T = 1..64, d = 8 and 64;
//   fixed:  where a call's fixed cost goes, d = 8, T = 1 and 4: the public
//           call; the binding alone (the wasm module's own function called
//           with an argument block laid out once: bindings and core); an
//           Embind call that does nothing (lastErrorCode). The JS layer is
//           the first less the second, the bindings and core the second less
//           the third.
// Every engine's output is checked against plain JS (nested against typed:
// identical) before timing. Each shape's engines are warmed up, then timed in
// interleaved rounds (each round times every engine once, in a rotating
// order) of a batch of calls that lasts ~2 ms. Garbage is not collected
// between batches: the collections the calls' allocations cause (Node runs
// with --single-threaded-gc, on the timed thread) are part of what a call
// costs. The median over rounds of the time per call is reported, in
// microseconds.
//
// Usage: node --single-threaded-gc bench/wasm/small.mjs [--quick]
//          > bench/results/small.json
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
// The built package's Node entry (what `import "attnkit"` resolves to in Node).
import { createAttnkit } from "../../dist/attnkit.node.mjs";
import { jsAttention, plainBackward, plainForTraining, plainWorkspace } from "./plain.mjs";
import { maxDiff, median, random } from "../lib/stats.mjs";

const quick = process.argv.includes("--quick");
const SQUARE = quick ? [1, 2, 4, 8, 16, 64] : [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64];
const DIMS = [8, 64];
const SWEEP_KEYS = quick ? [64, 1024] : [64, 256, 1024];
const SWEEP_QUERIES = quick ? [1, 2, 3, 4, 5, 6] : [1, 2, 3, 4, 5, 6, 7, 8, 9];
const SWEEP_D = 64;
const ROUNDS = quick ? 9 : 21;
const BATCH_MS = 2;

const nested = (data, rows, cols) =>
  Array.from({ length: rows }, (_, i) => Array.from(data.subarray(i * cols, (i + 1) * cols)));

// engines: [{ name, run }]; returns { name: microseconds per call (median) }.
function timeShape(engines, where) {
  const want = engines.find((e) => e.name === "plain JS")?.run();
  const typed = engines.find((e) => e.name === "attnkit (typed arrays)")?.run();
  for (const e of engines) {
    const got = Float32Array.from(e.run());
    const ref = e.name === "attnkit (nested arrays)" ? typed : want;
    if (ref && !(maxDiff(got, ref) <= (e.name === "attnkit (nested arrays)" ? 0 : 1e-4))) {
      throw new Error(`${e.name} differs at ${where} by ${maxDiff(got, ref)}`);
    }
  }
  // Warm-up (V8 tiers the JS and the wasm up while they run), then the batch
  // size: calls that take ~BATCH_MS.
  const active = engines.map((e) => {
    let n = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < (quick ? 60 : 150)) {
      e.run();
      ++n;
    }
    const perCall = (performance.now() - t0) / n;
    return { e, calls: Math.max(1, Math.round(BATCH_MS / perCall)), times: [] };
  });
  for (let r = 0; r < ROUNDS; ++r) {
    for (let i = 0; i < active.length; ++i) {
      const a = active[(i + r) % active.length];
      const t0 = performance.now();
      for (let j = 0; j < a.calls; ++j) a.e.run();
      a.times.push(((performance.now() - t0) / a.calls) * 1e3);
    }
  }
  return Object.fromEntries(
    active.map((a) => [
      a.e.name,
      { us: median(a.times), usRounds: a.times.map((t) => +t.toPrecision(4)), calls: a.calls },
    ]),
  );
}

const attn = await createAttnkit();
const square = [],
  sweep = [],
  training = [],
  fixed = [];
for (const d of DIMS) {
  for (const T of SQUARE) {
    const q = random(T * d, 1),
      k = random(T * d, 2),
      v = random(T * d, 3);
    const Q = { data: q, rows: T, cols: d },
      K = { data: k, rows: T, cols: d },
      V = { data: v, rows: T, cols: d };
    const Qn = nested(q, T, d),
      Kn = nested(k, T, d),
      Vn = nested(v, T, d);
    const out = new Float32Array(T * d);
    const times = timeShape(
      [
        { name: "attnkit (typed arrays)", run: () => attn.attention(Q, K, V).data },
        { name: "attnkit (nested arrays)", run: () => attn.attention(Qn, Kn, Vn).data },
        { name: "plain JS", run: () => jsAttention(q, k, v, T, T, 1, false, out, d) },
      ],
      `T=${T} d=${d}`,
    );
    for (const [engine, t] of Object.entries(times)) square.push({ engine, d, T, ...t });
    console.error(
      `small calls d=${d} T=${T}: ` +
        Object.entries(times)
          .map(([e, t]) => `${e} ${t.us.toFixed(2)} us`)
          .join(", "),
    );
  }
}
// The training calls: each against plain JS doing the same, in the same rounds.
for (const d of DIMS) {
  for (const T of SQUARE) {
    const q = random(T * d, 1),
      k = random(T * d, 2),
      v = random(T * d, 3),
      dO = random(T * d, 4);
    const Q = { data: q, rows: T, cols: d },
      K = { data: k, rows: T, cols: d },
      V = { data: v, rows: T, cols: d },
      G = { data: dO, rows: T, cols: d };
    const ws = plainWorkspace(T, d);
    const saved = attn.attentionForTraining(Q, K, V);
    plainForTraining(q, k, v, T, d, ws);
    const times = timeShape(
      [
        { name: "plain JS", run: () => plainForTraining(q, k, v, T, d, ws) },
        { name: "attnkit (typed arrays)", run: () => attn.attentionForTraining(Q, K, V).out.data },
      ],
      `forward for training T=${T} d=${d}`,
    );
    const bwd = timeShape(
      [
        { name: "plain JS", run: () => plainBackward(q, k, v, dO, T, d, ws) },
        {
          name: "attnkit (typed arrays)",
          run: () => attn.attentionBackward(Q, K, V, G, { saved }).dQ.data,
        },
      ],
      `backward T=${T} d=${d}`,
    );
    for (const [op, t] of [
      ["attentionForTraining", times],
      ["attentionBackward", bwd],
    ]) {
      for (const [engine, r] of Object.entries(t)) training.push({ op, engine, d, T, ...r });
    }
    console.error(
      `training d=${d} T=${T}: forward ${times["attnkit (typed arrays)"].us.toFixed(2)} us ` +
        `(plain JS ${times["plain JS"].us.toFixed(2)}), backward ` +
        `${bwd["attnkit (typed arrays)"].us.toFixed(2)} us (plain JS ${bwd["plain JS"].us.toFixed(2)})`,
    );
  }
}

// Where the fixed cost goes: the public call, the binding alone with its
// argument block laid out once (inputs, no options: see Args in
// src/bindings/bindings.cc), and an Embind call that does nothing.
{
  const M = await createRequire(import.meta.url)("../../dist/attnkit-simd.node.cjs")();
  for (const T of [1, 4]) {
    const d = 8,
      n = T * d;
    const q = random(n, 1),
      k = random(n, 2),
      v = random(n, 3);
    const Q = { data: q, rows: T, cols: d },
      K = { data: k, rows: T, cols: d },
      V = { data: v, rows: T, cols: d };
    const block = M._malloc(512 + 4 * 16 * Math.ceil(n / 4) * 4);
    const at = (i) => block + 512 + i * 16 * Math.ceil(n / 4);
    [q, k, v].forEach((x, i) => M.HEAPF32.set(x, at(i) >> 2));
    // Q, K, V, out, then the options of no options (flags, scale, softcap,
    // key_length -1, key_lengths, bool mask and its layout, additive mask and
    // its layout, causal offset, causal offsets).
    const views = [0, 1, 2, 3].flatMap((i) => [at(i), T, d]);
    const options = [0, 0, 0, -1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0];
    M.HEAPU32.set(Uint32Array.from([...views, ...options]), block >> 2);
    if (M.attention(block) !== 0) throw new Error("the binding alone failed");
    const want = attn.attention(Q, K, V).data;
    if (!(maxDiff(M.HEAPF32.slice(at(3) >> 2, (at(3) >> 2) + n), want) === 0))
      throw new Error("the binding alone differs from the public call");
    const times = timeShape(
      [
        { name: "public call", run: () => attn.attention(Q, K, V).data },
        { name: "binding alone", run: () => (M.attention(block), want) },
        { name: "empty Embind call", run: () => (M.lastErrorCode(), want) },
      ],
      `fixed cost T=${T}`,
    );
    const us = Object.fromEntries(Object.entries(times).map(([e, t]) => [e, t.us]));
    fixed.push({
      d,
      T,
      us,
      jsLayerUs: us["public call"] - us["binding alone"],
      bindingsAndCoreUs: us["binding alone"] - us["empty Embind call"],
    });
    console.error(
      `fixed cost d=${d} T=${T}: ` +
        Object.entries(us)
          .map(([e, t]) => `${e} ${t.toFixed(3)} us`)
          .join(", "),
    );
    M._free(block);
  }
}

// The sweep: every query count of one key count in the same interleaved
// rounds, so that the ratio of consecutive counts comes from the same state
// of the machine (checked against plain JS first).
for (const keys of SWEEP_KEYS) {
  const d = SWEEP_D,
    K = { data: random(keys * d, 2), rows: keys, cols: d },
    V = { data: random(keys * d, 3), rows: keys, cols: d };
  const engines = SWEEP_QUERIES.map((T_q) => {
    const q = random(T_q * d, 1),
      Q = { data: q, rows: T_q, cols: d };
    const want = jsAttention(q, K.data, V.data, T_q, keys, 1, false, new Float32Array(T_q * d), d);
    const got = attn.attention(Q, K, V).data;
    if (!(maxDiff(got, want) <= 1e-4))
      throw new Error(`attnkit differs at T_q=${T_q} T_k=${keys} by ${maxDiff(got, want)}`);
    return { name: `T_q=${T_q}`, run: () => attn.attention(Q, K, V).data };
  });
  const times = timeShape(engines, `T_k=${keys}`);
  for (const T_q of SWEEP_QUERIES)
    sweep.push({ engine: "attnkit (typed arrays)", d, keys, T_q, ...times[`T_q=${T_q}`] });
  console.error(
    `sweep T_k=${keys}: ` +
      SWEEP_QUERIES.map((T_q) => `${T_q}: ${times[`T_q=${T_q}`].us.toFixed(2)} us`).join(", "),
  );
}
console.log(
  JSON.stringify(
    {
      quick,
      rounds: ROUNDS,
      batchMs: BATCH_MS,
      target: attn.target,
      square,
      training,
      fixed,
      sweep,
    },
    null,
    1,
  ),
);
