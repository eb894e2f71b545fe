// The head layouts' A/B in WebAssembly (npm run bench -- --ab REV --only heads): two builds of the
// package (DIR_A, DIR_B: each its own bundled JS layer attnkit.node.cjs beside
// its SIMD128 module attnkit-simd.node.cjs), loaded in one Node process. 32
// heads of d = 64 at T = 64 and T = 512, batch 1, one thread:
//   attention / bwd_attention   one head (attention, attentionBackward with
//                               the saved forward), us per call
//   mha_bshd / bwd_bshd         multiHeadAttentionQKV (its backward) on
//                               [1, T, 32 * 64], us per head
//   mha_bhsd / bwd_bhsd         the same on [1, 32, T, 64], us per head
//   ratio_*                     a multi-head time per head over the single-head
//                               time of the same batch of rounds (per build)
// Each round times every entry on A and on B (the order reversed every other
// round) in batches of at least BATCH_MS of process CPU time, then prints per
// entry the medians and the median of the per-round ratios A / B (B's speed:
// above 1, B is faster) with quartiles. A's and B's outputs are compared.
// Usage: node --single-threaded-gc bench/wasm/heads_ab.mjs DIR_A DIR_B [ROUNDS]
// --side DIR: that build alone, "name us" lines for bench/ab/pair.mjs (ab.sh --processes).
import { callsPerBatch, loadBuilds, pairedRounds, row, sideIfAsked } from "../lib/paired.mjs";
import { random } from "../lib/stats.mjs";

const [dirA, dirB, roundsArg] = process.argv.slice(2);
const ROUNDS = Number(roundsArg ?? 11);
const BATCH_MS = 40;
const H = 32,
  D = 64;

/** [1, T, H*D] data as [1, H, T, D]. */
function toHeads(data, T) {
  const out = new Float32Array(data.length);
  for (let h = 0; h < H; ++h)
    for (let t = 0; t < T; ++t)
      out.set(data.subarray((t * H + h) * D, (t * H + h + 1) * D), (h * T + t) * D);
  return out;
}

// [name, fn, per]: fn() runs one call of `per` heads.
function entries(ak, T) {
  const n = T * H * D;
  const data = [1, 2, 3, 4].map((seed) => random(n, seed + T));
  const [Q, K, V, dO] = data.map((d) => ({ data: d, shape: [1, T, H * D] }));
  const [q4, k4, v4, d4] = data.map((d) => ({ data: toHeads(d, T), shape: [1, H, T, D] }));
  const one = (t) => ({ data: t.data.subarray(0, T * D), rows: T, cols: D });
  const [q1, k1, v1, d1] = [q4, k4, v4, d4].map(one);
  const config = { numHeads: H };
  const seq = {},
    head = { layout: "bhsd" };
  const saved = ak.multiHeadAttentionQKVForTraining(Q, K, V, config, seq);
  const saved4 = ak.multiHeadAttentionQKVForTraining(q4, k4, v4, config, head);
  const saved1 = ak.attentionForTraining(q1, k1, v1);
  return [
    ["attention", () => ak.attention(q1, k1, v1), 1],
    ["mha_bshd", () => ak.multiHeadAttentionQKV(Q, K, V, config, seq), H],
    ["mha_bhsd", () => ak.multiHeadAttentionQKV(q4, k4, v4, config, head), H],
    ["bwd_attention", () => ak.attentionBackward(q1, k1, v1, d1, { saved: saved1 }), 1],
    ["bwd_bshd", () => ak.multiHeadAttentionQKVBackward(Q, K, V, config, dO, { saved }), H],
    [
      "bwd_bhsd",
      () => ak.multiHeadAttentionQKVBackward(q4, k4, v4, config, d4, { ...head, saved: saved4 }),
      H,
    ],
  ].map(([name, fn, per]) => [`${name}_T=${T}`, fn, per]);
}

await sideIfAsked(
  process.argv.slice(2),
  (ak) => [64, 512].flatMap((T) => entries(ak, T)),
  BATCH_MS,
);
const [akA, akB] = await loadBuilds(dirA, dirB);
const A = [64, 512].flatMap((T) => entries(akA, T)),
  B = [64, 512].flatMap((T) => entries(akB, T));
{
  // A and B compute the same numbers.
  let worst = 0;
  for (let s = 0; s < A.length; ++s) {
    const a = A[s][1](),
      b = B[s][1]();
    for (const key of a.data ? ["data"] : ["dQ", "dK", "dV"]) {
      const x = a[key].data ?? a[key],
        y = b[key].data ?? b[key];
      for (let i = 0; i < x.length; ++i) worst = Math.max(worst, Math.abs(x[i] - y[i]));
    }
  }
  console.log(`# max |A - B| over every entry's output: ${worst.toExponential(1)}`);
}
const timed = A.map(([, run, per], s) => ({
  runs: [run, B[s][1]],
  calls: callsPerBatch(run, BATCH_MS, 2), // from a first timing on A
  per,
}));
const times = pairedRounds(timed, ROUNDS);
const us = { width: 28 },
  ratio = { width: 28, digits: 3, unit: "" };
const index = Object.fromEntries(A.map(([name], s) => [name, s]));
A.forEach(([name], s) => row(name, ...times[s], us));
// Per head over one head, round by round within each build.
for (const T of [64, 512]) {
  for (const [multi, single] of [
    ["mha_bshd", "attention"],
    ["mha_bhsd", "attention"],
    ["bwd_bshd", "bwd_attention"],
    ["bwd_bhsd", "bwd_attention"],
  ]) {
    const [ma, mb] = times[index[`${multi}_T=${T}`]],
      [oa, ob] = times[index[`${single}_T=${T}`]];
    row(
      `ratio_${multi}_T=${T}`,
      ma.map((x, i) => x / oa[i]),
      mb.map((x, i) => x / ob[i]),
      ratio,
    );
  }
}
