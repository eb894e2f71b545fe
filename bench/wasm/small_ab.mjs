// The small calls' A/B in WebAssembly (npm run bench -- --ab REV --only small): two builds of the
// package's SIMD128 Node module, each beside the same JS layer (DIR_A, DIR_B:
// attnkit.node.cjs + attnkit-simd.node.cjs), loaded in one Node process, and
// the plain JS engines of bench/wasm/plain.mjs (the baseline of issue #35).
// attention, attentionForTraining and attentionBackward with `saved`, d = 8
// and 64, T = T_q = T_k = 1..64, inputs { data: Float32Array, rows, cols }.
// Each round times A, B and plain JS on every shape (in an order that turns
// every round) in batches of at least BATCH_MS of process CPU time; per shape
// the medians, the median of the per-round ratios A / B (B's speed: above 1,
// B is faster) with quartiles, and plain JS's median over B's (above 1,
// attnkit is faster than plain JS). A's and B's results are compared first.
// Usage: node --single-threaded-gc bench/wasm/small_ab.mjs DIR_A DIR_B [ROUNDS]
import { callsPerBatch, inputsPerSide, loadBuilds, pairedRounds, speed } from "../lib/paired.mjs";
import { maxDiff, median, random } from "../lib/stats.mjs";
import { jsAttention, plainBackward, plainForTraining, plainWorkspace } from "./plain.mjs";

const [dirA, dirB, roundsArg] = process.argv.slice(2);
const ROUNDS = Number(roundsArg ?? 21);
const BATCH_MS = 5;

const [akA, akB] = await loadBuilds(dirA, dirB);

// Per shape: [name, run A, run B, run plain].
const shapes = [];
for (const d of [8, 64]) {
  for (const T of [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64]) {
    const q = random(T * d, 1),
      k = random(T * d, 2),
      v = random(T * d, 3),
      g = random(T * d, 4);
    // Each build its own input objects, the same values (see inputsPerSide).
    const [a, b] = inputsPerSide(() =>
      Object.fromEntries(
        Object.entries({ Q: q, K: k, V: v, G: g }).map(([n, x]) => [
          n,
          { data: x.slice(), rows: T, cols: d },
        ]),
      ),
    );
    const ws = plainWorkspace(T, d);
    const out = new Float32Array(T * d);
    const savedA = akA.attentionForTraining(a.Q, a.K, a.V),
      savedB = akB.attentionForTraining(b.Q, b.K, b.V);
    plainForTraining(q, k, v, T, d, ws);
    const shape = `d=${d} T=${T}`;
    for (const [x, y, what] of [
      [akA.attention(a.Q, a.K, a.V).data, akB.attention(b.Q, b.K, b.V).data, "attention"],
      [savedA.out.data, savedB.out.data, "attentionForTraining"],
      [
        akA.attentionBackward(a.Q, a.K, a.V, a.G, { saved: savedA }).dK.data,
        akB.attentionBackward(b.Q, b.K, b.V, b.G, { saved: savedB }).dK.data,
        "attentionBackward dK",
      ],
    ]) {
      if (!(maxDiff(x, y) <= 1e-5)) throw new Error(`${what} ${shape}: A and B differ`);
    }
    shapes.push(
      [
        `attention ${shape}`,
        () => akA.attention(a.Q, a.K, a.V),
        () => akB.attention(b.Q, b.K, b.V),
        () => jsAttention(q, k, v, T, T, 1, false, out, d),
      ],
      [
        `train_fwd ${shape}`,
        () => akA.attentionForTraining(a.Q, a.K, a.V),
        () => akB.attentionForTraining(b.Q, b.K, b.V),
        () => plainForTraining(q, k, v, T, d, ws),
      ],
      [
        `bwd_saved ${shape}`,
        () => akA.attentionBackward(a.Q, a.K, a.V, a.G, { saved: savedA }),
        () => akB.attentionBackward(b.Q, b.K, b.V, b.G, { saved: savedB }),
        () => plainBackward(q, k, v, g, T, d, ws),
      ],
    );
  }
}

// Calls per batch, from a first timing of B (after a warm-up of A and plain JS).
const timed = shapes.map(([, a, b, p]) => {
  for (const run of [a, p]) callsPerBatch(run, BATCH_MS);
  return { runs: [a, b, p], calls: callsPerBatch(b, BATCH_MS) };
});
const times = pairedRounds(timed, ROUNDS);
let worst = Infinity;
shapes.forEach(([name], s) => {
  const [a, b, p] = times[s];
  const sp = speed(a, b);
  worst = Math.min(worst, sp.median);
  console.log(
    `${name.padEnd(24)} A ${median(a).toFixed(3).padStart(9)} us  B ${median(b).toFixed(3).padStart(9)} us` +
      `  ${sp.text}  plain JS ${median(p).toFixed(3).padStart(9)} us  plain/B ${(median(p) / median(b)).toFixed(2)}`,
  );
});
console.log(`lowest paired median: ${worst.toFixed(3)}`);
