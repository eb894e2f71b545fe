// The backward's A/B in WebAssembly (npm run bench -- --ab REV --only backward): two builds of the
// package's SIMD128 Node module, each beside the same JS layer (DIR_A, DIR_B:
// attnkit.node.cjs + attnkit-simd.node.cjs), loaded in one Node process.
// Each round times every shape on A and on B (the order reversed every other
// round) in batches of at least BATCH_MS of process CPU time, then prints per
// shape the medians and the median of the per-round ratios A / B (B's speed:
// above 1, B is faster) with quartiles. A and B's gradients are compared.
// Usage: node --single-threaded-gc bench/wasm/backward_ab.mjs DIR_A DIR_B [ROUNDS]
// --side DIR: that build alone, "name us" lines for bench/ab/pair.mjs (ab.sh --processes).
import { callsPerBatch, loadBuilds, pairedRounds, row, sideIfAsked } from "../lib/paired.mjs";
import { maxDiff, random } from "../lib/stats.mjs";

const [dirA, dirB, roundsArg] = process.argv.slice(2);
const ROUNDS = Number(roundsArg ?? 21);
const BATCH_MS = 20;

const matrix = (data, rows, cols) => ({ data, rows, cols });

function shapes(ak) {
  const out = [];
  const head = (T, d, causal, softcap) => {
    const Q = matrix(random(T * d, 1), T, d),
      K = matrix(random(T * d, 2), T, d),
      V = matrix(random(T * d, 3), T, d),
      dO = matrix(random(T * d, 4), T, d);
    const o = { causal, ...(softcap ? { softcap } : {}) };
    const saved = ak.attentionForTraining(Q, K, V, o);
    const name = `d=${d} T=${T}${causal ? " causal" : ""}${softcap ? " softcap" : ""}`;
    return { Q, K, V, dO, o, saved, name };
  };
  for (const d of [8, 64]) {
    for (const T of [4, 16, 64]) {
      const h = head(T, d, false);
      out.push([`train_fwd ${h.name}`, () => ak.attentionForTraining(h.Q, h.K, h.V, h.o)]);
      out.push([
        `bwd_saved ${h.name}`,
        () => ak.attentionBackward(h.Q, h.K, h.V, h.dO, { ...h.o, saved: h.saved }),
      ]);
    }
  }
  for (const T of [128, 512]) {
    for (const causal of [false, true]) {
      const h = head(T, 64, causal);
      out.push([`train_fwd ${h.name}`, () => ak.attentionForTraining(h.Q, h.K, h.V, h.o)]);
      out.push([
        `bwd_saved ${h.name}`,
        () => ak.attentionBackward(h.Q, h.K, h.V, h.dO, { ...h.o, saved: h.saved }),
      ]);
      out.push([`attention ${h.name}`, () => ak.attention(h.Q, h.K, h.V, h.o)]);
    }
  }
  const h = head(256, 64, true, 30);
  out.push([`bwd_recompute ${h.name}`, () => ak.attentionBackward(h.Q, h.K, h.V, h.dO, h.o)]);
  return out;
}

// The largest |a - b| over dQ, dK, dV of one backward.
// The largest difference between two results' dQ, dK and dV.
const gradientsDiff = (a, b) =>
  Math.max(...["dQ", "dK", "dV"].map((k) => maxDiff(a[k].data ?? a[k], b[k].data ?? b[k])));

await sideIfAsked(process.argv.slice(2), shapes, BATCH_MS);
const [akA, akB] = await loadBuilds(dirA, dirB);
const A = shapes(akA),
  B = shapes(akB);
{
  const T = 77,
    d = 24;
  const Q = matrix(random(T * d, 5), T, d),
    K = matrix(random(T * d, 6), T, d),
    V = matrix(random(T * d, 7), T, d),
    dO = matrix(random(T * d, 8), T, d);
  for (const o of [{}, { causal: true, softcap: 5 }]) {
    const ga = akA.attentionBackward(Q, K, V, dO, o),
      gb = akB.attentionBackward(Q, K, V, dO, o);
    console.log(
      `# max |A - B| of dQ, dK, dV (T=77, d=24, ${JSON.stringify(o)}): ${gradientsDiff(ga, gb).toExponential(1)}`,
    );
  }
}
const timed = A.map(([, run], s) => ({
  runs: [run, B[s][1]],
  calls: callsPerBatch(run, BATCH_MS), // from a first timing on A
}));
const times = pairedRounds(timed, ROUNDS);
let worst = Infinity;
A.forEach(([name], s) => {
  worst = Math.min(worst, row(name, ...times[s]));
});
console.log(`lowest paired median: ${worst.toFixed(3)}`);
