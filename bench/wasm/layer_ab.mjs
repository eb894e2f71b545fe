// The multi-head layer's A/B and time split in WebAssembly (npm run bench -- --ab REV --only layer):
// two builds of the package's SIMD128 Node module, each beside its own
// bundled JS layer (DIR_A, DIR_B: attnkit.node.cjs + attnkit-simd.node.cjs),
// loaded in one Node process. B = 1, d_model = 512, 8 heads of 64, W_Q, W_K,
// W_V and W_O; the parts of bench/native/layer_ab.cc, through the package as
// a JS user calls it:
//   layer T=N           weights packed once (packWeights) where the build has
//                       it, else passed in plain to every call
//   layer_per_call T=N  weights passed in plain to every call (copied into wasm
//                       memory, checked and packed by each)
//   matmul_x4 T=N       the four projections alone (four matmul calls)
//   attention T=N       the attention alone (multiHeadAttentionQKV on Q, K, V)
//   pack_weights        packWeights + dispose (builds that have it; B only)
// Each round times every part on A and on B (the order reversed every other
// round) in batches of at least BATCH_MS of process CPU time, then prints per
// part the medians and the median of the per-round ratios A / B (B's speed:
// above 1, B is faster) with quartiles, and the largest |A - B| of the layer.
// Usage: node --single-threaded-gc bench/wasm/layer_ab.mjs DIR_A DIR_B [ROUNDS]
// --side DIR: that build alone, "name us" lines for bench/ab/pair.mjs (ab.sh --processes).
import {
  callsPerBatch,
  inputsPerSide,
  loadBuilds,
  pairedRounds,
  row,
  sideIfAsked,
} from "../lib/paired.mjs";
import { cpuMs, random } from "../lib/stats.mjs";

const [dirA, dirB, roundsArg] = process.argv.slice(2);
const ROUNDS = Number(roundsArg ?? 15);
const BATCH_MS = 150;
const D_MODEL = 512,
  HEADS = 8;

const matrix = (data, rows, cols) => ({ data, rows, cols });

const weightScale = 1 / Math.sqrt(D_MODEL);
// Each build its own weights and inputs, the same values (see inputsPerSide).
const [weightsA, weightsB] = inputsPerSide(() =>
  Object.fromEntries(
    ["W_Q", "W_K", "W_V", "W_O"].map((k, i) => [
      k,
      matrix(random(D_MODEL * D_MODEL, 5 + i, weightScale), D_MODEL, D_MODEL),
    ]),
  ),
);

/** [name, run] of every part on module `ak` with its own `weights`. */
function parts(ak, weights) {
  const out = [];
  const config = { numHeads: HEADS };
  const packed = ak.packWeights?.(weights, config);
  for (const T of [32, 512]) {
    const X = matrix(random(T * D_MODEL, 4), T, D_MODEL);
    const K = matrix(random(T * D_MODEL, 9), T, D_MODEL),
      V = matrix(random(T * D_MODEL, 10), T, D_MODEL);
    const perCall = () => ak.multiHeadAttention(X, weights, config);
    out.push([`layer T=${T}`, packed ? () => ak.multiHeadAttention(X, packed, config) : perCall]);
    out.push([`layer_per_call T=${T}`, perCall]);
    out.push([
      `matmul_x4 T=${T}`,
      () => {
        for (const W of Object.values(weights)) ak.matmul(X, W);
      },
    ]);
    out.push([`attention T=${T}`, () => ak.multiHeadAttentionQKV(X, K, V, config)]);
  }
  return out;
}

await sideIfAsked(process.argv.slice(2), (ak) => parts(ak, weightsA), BATCH_MS);
const [akA, akB] = await loadBuilds(dirA, dirB);
const A = parts(akA, weightsA),
  B = parts(akB, weightsB);
{
  const X = matrix(random(512 * D_MODEL, 4), 512, D_MODEL);
  const config = { numHeads: HEADS };
  const a = akA.multiHeadAttention(X, weightsA, config).data,
    b = akB.packWeights
      ? akB.multiHeadAttention(X, akB.packWeights(weightsB, config), config).data
      : akB.multiHeadAttention(X, weightsB, config).data;
  let m = 0;
  for (let i = 0; i < a.length; ++i) m = Math.max(m, Math.abs(a[i] - b[i]));
  console.log(`# max |A - B| of the layer at T=512 (B packed where it can): ${m}`);
}
if (akB.packWeights) {
  // packWeights itself, on B only (A may not have it).
  const t0 = cpuMs();
  let n = 0;
  while (cpuMs() - t0 < 300 || n < 2) {
    akB.packWeights(weightsB, { numHeads: HEADS }).dispose();
    ++n;
  }
  console.log(`# B pack_weights: ${(((cpuMs() - t0) / n) * 1e3).toFixed(1)} us per pack`);
}
const timed = A.map(([, run], s) => ({
  runs: [run, B[s][1]],
  calls: callsPerBatch(run, BATCH_MS), // from a first timing on A
}));
const times = pairedRounds(timed, ROUNDS);
A.forEach(([name], s) => row(name, ...times[s], { width: 24, digits: 1 }));
