// The wasm GEMM micro-kernel's tile shapes against the SIMD128 mul + add peak
// (issue 35): times every kernel of build/bench-wasm/tiles.wasm (bench/wasm/tiles.cc:
// attention's two products per key tile, d = 64, 128 keys, for each register
// tile of rows x vectors (x partial sums)) and the peak loop of peak.wasm in
// the same process, in interleaved rounds; each figure is the median over
// rounds of the kernel's GFLOP/s over that round's peak. In the same rounds,
// whole calls of the package's `attention` (T = 512 and 2048, d = 64), for the
// share of the peak a user's call reaches in Node and in Chromium.
//
//   node bench/wasm/tiles.mjs [--rounds N] [--quick] [--chromium]   > tiles.json
//
// --chromium: the same sweep in headless Chromium too (Debian's, through
// playwright-core, the page served from memory: no server, no network).
// The sweep itself (sweep() below) uses no Node API, so that the page imports
// this very file (and bench/lib/stats.mjs); Node times CPU time of the process, the page
// performance.now() (the page is cross-origin isolated: 5 us resolution),
// each the shortest of a few short batches (see sweep).
import { cpuMs, fillRandom, median, random } from "../lib/stats.mjs";

const CASES = {
  // flops per block of R rows: 2 * R * n * K, n * K = 128 * 64 for both.
  scores: { n: 128, K: 64, what: "S [R, 128] = Q_block [R, 64] K_tile^T" },
  values: { n: 64, K: 128, what: "O [R, 64] += P [R, 128] V_tile [128, 64]" },
};
const kRowsMax = 64;

// 4x2: 4 rows x 2 vectors; 4x2x2: two partial sums (even and odd k); 4x2u2:
// two k steps per loop iteration (split 3 in tiles.cc).
const tileName = (rows, cols, split) =>
  `${rows}x${cols}${split === 2 ? "x2" : split === 3 ? "u2" : ""}`;

// A timer over `now` (ms): once(f), and best(f), the shortest of `batches`
// back-to-back runs of f: on a core shared with other processes a batch that
// was descheduled only comes out longer, so the shortest is the machine's (in
// a page there is no CPU-time clock to exclude it otherwise).
function timer(now, batches) {
  const once = (f) => {
    const t0 = now();
    f();
    return now() - t0;
  };
  const best = (f) => {
    let shortest = Infinity;
    for (let b = 0; b < batches; ++b) shortest = Math.min(shortest, once(f));
    return shortest;
  };
  return { once, best };
}

// V8 compiles the optimised code on a background thread: on a single core it
// only runs when this thread waits, hence the pauses after warm-ups.
const yieldToCompiler = () => new Promise((resolve) => setTimeout(resolve, 100));

// The peak loop of peak.wasm: the best number of accumulators, and measure(),
// one measurement of it (batches of ~batchMs), for each round.
async function peakLoop(peak, time, batchMs) {
  for (const n of [8, 10, 12, 14]) {
    for (let w = 0; w < 100; ++w) peak[`muladd${n}`](1e5, 0.999999, 1e-7); // tier up
  }
  await yieldToCompiler();
  let best = null;
  for (const n of [8, 10, 12, 14]) {
    const f = peak[`muladd${n}`];
    for (let r = 0; r < 3; ++r) {
      const iterations = 2e6;
      const gflops = (8 * n * iterations) / (time.best(() => f(iterations, 0.999999, 1e-7)) * 1e6);
      if (!best || gflops > best.gflops) best = { gflops, accumulators: n };
    }
  }
  const loop = peak[`muladd${best.accumulators}`];
  const iterations = Math.round((batchMs * best.gflops * 1e6) / (8 * best.accumulators));
  best.measure = () =>
    (8 * best.accumulators * iterations) /
    (time.best(() => loop(iterations, 0.999999, 1e-7)) * 1e6);
  return best;
}

// tiles.wasm's buffers, Q, K, V in [-1, 1) and P in [0, 1/64) (weights of a
// softmax row), and its kernels: one entry per exported scores_/values_ tile.
function tileKernels(tiles) {
  const view = (which, n) => new Float32Array(tiles.memory.buffer, tiles.buffer(which), n);
  const m = {
    Q: view(0, kRowsMax * 64),
    P: view(1, kRowsMax * 128),
    K: view(2, 128 * 64),
    V: view(3, 128 * 64),
    S: view(4, kRowsMax * 128),
    O: view(5, kRowsMax * 64),
  };
  fillRandom(m.Q, 1, -1, 1);
  fillRandom(m.P, 2, 0, 1 / 64);
  fillRandom(m.K, 3, -1, 1);
  fillRandom(m.V, 4, -1, 1);
  const kernels = [];
  for (const name of Object.keys(tiles)) {
    const match = name.match(/^(scores|values)_(\d+)x(\d+)x(\d+)$/);
    if (!match) continue;
    const [rows, cols, split] = [+match[2], +match[3], +match[4]];
    const blocks = Math.floor(kRowsMax / rows);
    kernels.push({
      name,
      case: match[1],
      rows,
      cols,
      split,
      chains: rows * cols * (split === 2 ? 2 : 1),
      blocks,
      flopsPerCall: 2 * rows * blocks * CASES[match[1]].n * CASES[match[1]].K,
      run: tiles[name],
      pack: () => tiles.pack(4 * cols, rows, 64, 128),
    });
  }
  return { kernels, m };
}

// Kernel k's output against a float64 reference: the largest error relative
// to the sum of |products|; throws where it is not within float32's reach.
function checkKernel(k, { Q, P, K, V, S, O }) {
  k.pack();
  S.fill(NaN);
  O.fill(0);
  const finite = k.run(k.blocks, 1);
  const rowsDone = k.rows * k.blocks;
  let worst = 0;
  const n = CASES[k.case].n;
  for (let i = 0; i < rowsDone; ++i) {
    for (let j = 0; j < n; ++j) {
      let ref = 0,
        mag = 0;
      if (k.case === "scores") {
        for (let c = 0; c < 64; ++c)
          ((ref += Q[i * 64 + c] * K[j * 64 + c]),
            (mag += Math.abs(Q[i * 64 + c] * K[j * 64 + c])));
      } else {
        for (let t = 0; t < 128; ++t)
          ((ref += P[i * 128 + t] * V[t * 64 + j]),
            (mag += Math.abs(P[i * 128 + t] * V[t * 64 + j])));
      }
      const got = k.case === "scores" ? S[i * 128 + j] : O[i * 64 + j];
      worst = Math.max(worst, Math.abs(got - ref) / mag);
    }
  }
  // float32 sums of 64 or 128 products: relative to the sum of |products|,
  // within a few units of 2^-24 times the length.
  if (!(worst < 1e-5) || finite !== k.blocks)
    throw new Error(
      `${k.name}: max error ${worst} relative to sum |a b| (finite blocks ${finite}/${k.blocks})`,
    );
  k.maxError = worst;
}

// Whole calls of the package (attentionCalls below) as kernels, timed in the
// same rounds against the same peak: the share a user's call reaches.
const callKernel = (c) => ({
  name: c.name,
  case: "call",
  blocks: 1,
  flopsPerCall: c.flops,
  run: (_, reps) => {
    for (let i = 0; i < reps; ++i) c.run();
  },
  pack: () => {},
});

// Warm-up (tier up), then reps per call so that a call takes ~batchMs.
async function calibrate(kernels, time, batchMs) {
  for (const k of kernels) {
    k.pack();
    for (let w = 0; w < 20; ++w) k.run(k.blocks, 5);
  }
  await yieldToCompiler();
  for (const k of kernels) {
    k.pack();
    const ms = time.once(() => k.run(k.blocks, 50)) / 50;
    k.reps = Math.max(1, Math.round(batchMs / ms));
  }
}

// Rounds: the peak, then every kernel, in an order rotated each round. Each
// kernel gets k.rounds [{ gflops, peak }]; returns the peaks.
function timeRounds({ kernels, peak, time, O, rounds, log }) {
  const peaks = [];
  for (const k of kernels) k.rounds = [];
  for (let round = 0; round < rounds; ++round) {
    const p = peak.measure();
    peaks.push(p);
    for (let i = 0; i < kernels.length; ++i) {
      const k = kernels[(i + round * 7) % kernels.length];
      k.pack();
      O.fill(0);
      const ms = time.best(() => k.run(k.blocks, k.reps));
      k.rounds.push({ gflops: (k.flopsPerCall * k.reps) / (ms * 1e6), peak: p });
    }
    log(`round ${round + 1}/${rounds}: peak ${p.toFixed(1)} GFLOP/s`);
  }
  return peaks;
}

// A kernel's median GFLOP/s and its share of each round's peak: median, lowest, highest.
function shareStats(k) {
  const shares = k.rounds.map((r) => r.gflops / r.peak);
  return {
    gflops: +median(k.rounds.map((r) => r.gflops)).toFixed(2),
    share: +median(shares).toFixed(3),
    shareMin: +Math.min(...shares).toFixed(3),
    shareMax: +Math.max(...shares).toFixed(3),
  };
}

// Both products of a key tile with one tile shape: their flops over the sum
// of their median times (equal flops: the harmonic mean of the two rates).
function bothProducts(results) {
  const both = [];
  for (const s of results.filter((r) => r.case === "scores")) {
    const v = results.find((r) => r.case === "values" && r.tile === s.tile);
    if (!v) continue;
    both.push({
      case: "both",
      tile: s.tile,
      rows: s.rows,
      cols: s.cols,
      split: s.split,
      chains: s.chains,
      gflops: +(2 / (1 / s.gflops + 1 / v.gflops)).toFixed(2),
      share: +(2 / (1 / s.share + 1 / v.share)).toFixed(3),
    });
  }
  return both;
}

// The sweep: { peak: {gflops, accumulators, spread, rounds}, cases, results: [{ case,
// tile, rows, cols, split, chains, gflops, share, shareMin, shareMax, maxError }],
// calls }. `now` returns ms; each timing is the shortest of `batches`
// back-to-back batches of ~batchMs (timer above).
export async function sweep({
  peakBytes,
  tilesBytes,
  now,
  rounds = 9,
  batchMs = 2,
  batches = 5,
  calls = [],
  log = () => {},
}) {
  const time = timer(now, batches);
  const peak = await peakLoop(
    (await WebAssembly.instantiate(peakBytes, {})).instance.exports,
    time,
    batchMs,
  );
  const tiles = (await WebAssembly.instantiate(tilesBytes, {})).instance.exports;
  const { kernels, m } = tileKernels(tiles);
  for (const k of kernels) checkKernel(k, m);
  kernels.push(...calls.map(callKernel));
  await calibrate(kernels, time, batchMs);
  log(
    `peak: ${peak.gflops.toFixed(1)} GFLOP/s (${peak.accumulators} accumulators); ${kernels.length} kernels, ${rounds} rounds`,
  );
  const peaks = timeRounds({ kernels, peak, time, O: m.O, rounds, log });
  const results = kernels
    .filter((k) => k.case !== "call")
    .map((k) => ({
      case: k.case,
      tile: tileName(k.rows, k.cols, k.split),
      rows: k.rows,
      cols: k.cols,
      split: k.split,
      chains: k.chains,
      ...shareStats(k),
      maxError: +k.maxError.toPrecision(2),
    }));
  return {
    peak: {
      gflops: +median(peaks).toFixed(2),
      accumulators: peak.accumulators,
      spread: +(Math.max(...peaks) / Math.min(...peaks)).toFixed(3),
      rounds: peaks.map((g) => +g.toFixed(2)),
    },
    cases: CASES,
    results: [...results, ...bothProducts(results)],
    calls: kernels
      .filter((k) => k.case === "call")
      .map((k) => ({ call: k.name, ...shareStats(k) })),
  };
}

// attnkit's `attention` (one head, d = 64) at T = 512 and 2048, non-causal and
// causal, as sweep()'s `calls`: the inputs made once, each call copying them
// in and the result out as a user's does. Causal calls count the work done
// (T (T + 1) / 2 of the T^2 query-key pairs), so that a share of the peak is
// what the core computed.
export function attentionCalls(attn, Ts = [512, 2048]) {
  const calls = [];
  for (const T of Ts) {
    const [Q, K, V] = [1, 2, 3].map((seed) => ({ data: random(T * 64, seed), rows: T, cols: 64 }));
    for (const causal of [false, true])
      calls.push({
        name: `attention T=${T}${causal ? " causal" : ""}`,
        flops: causal ? 2 * 64 * T * (T + 1) : 4 * 64 * T * T,
        run: () => attn.attention(Q, K, V, { causal }),
      });
  }
  return calls;
}

// The whole calls' shares of the peak: one row per call.
export function callTable(run) {
  return [
    "| attnkit call (d = 64) | GFLOP/s | share of the SIMD128 peak [lowest–highest round] |",
    "|---|---:|---:|",
    ...run.calls.map(
      (c) =>
        `| ${c.call} | ${c.gflops.toFixed(1)} | ${(100 * c.share).toFixed(0)}% [${(100 * c.shareMin).toFixed(0)}–${(100 * c.shareMax).toFixed(0)}%] |`,
    ),
  ].join("\n");
}

// A table of shares for a terminal or docs: one row per tile, one column per case.
export function table(run) {
  const tiles = [...new Set(run.results.map((r) => r.tile))];
  const get = (c, t) => run.results.find((r) => r.case === c && r.tile === t);
  const lines = [
    "| tile (rows x vectors [x partial sums]) | chains | scores GFLOP/s | share | values GFLOP/s | share | both: share |",
    "|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const t of tiles) {
    const s = get("scores", t),
      v = get("values", t),
      b = get("both", t);
    lines.push(
      `| ${t} | ${s.chains} | ${s.gflops.toFixed(1)} | ${(100 * s.share).toFixed(0)}% | ${v.gflops.toFixed(1)} | ${(100 * v.share).toFixed(0)}% | ${(100 * b.share).toFixed(0)}% |`,
    );
  }
  return lines.join("\n");
}

// The kernels' machine code and a port model of cores this machine is not.
//
// loopMix(dump) reads V8's code for every Rows<> kernel (node
// --print-wasm-code: x64, TurboFan) and counts, per k step of its hottest
// innermost loop, the instructions that compete for a core's resources.
// modelShare() turns such a count into cycles per k step on a core given by
// its published figures: the largest of the FP pipes' time, the load and
// store ports' time, the dispatch width's time and the add chain (each
// accumulator takes one add per k step, so a step cannot be shorter than the
// add latency over the partial sums). The mul is off the loop-carried chain:
// acc += a * b depends on acc only through the add. The peak loop (acc = acc
// * a + b, peak.cc) has the mul on its chain, so it needs (mul + add latency)
// x pairs per cycle accumulators. Only the host's figures are measured; the
// others are derived from these tables and from x64 code (ARM code differs:
// see the note on broadcasts).
export function loopMix(dump) {
  const mix = {};
  for (const block of dump.split("\nname: ").slice(1)) {
    const name = block.slice(0, block.indexOf("\n"));
    const m = name.match(/Rows<(\d+)ul, (\d+)ul, (\d+)ul, (true|false), \d+ul, \d+ul>/);
    if (!m || !block.includes("compiler: TurboFan")) continue;
    const [rows, cols, split] = [+m[1], +m[2], +m[3]];
    const ins = [];
    for (const line of block.split("\n")) {
      const l = line.match(/^0x[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+(.*)$/);
      if (l) ins.push([parseInt(l[1], 16), l[2].trim()]);
    }
    // Loops: backward jumps [target, jump]; innermost: no other loop inside;
    // the hot one: the innermost loop with the most multiplies.
    const loops = [];
    for (const [off, text] of ins) {
      const j = text.match(/^j\w+ 0x[0-9a-f]+\s+<\+0x([0-9a-f]+)>/);
      if (j && parseInt(j[1], 16) < off) loops.push([parseInt(j[1], 16), off]);
    }
    const inner = loops.filter((l) => !loops.some((o) => o !== l && l[0] <= o[0] && o[1] <= l[1]));
    let body = [];
    for (const [lo, hi] of inner) {
      const b = ins.filter(([o]) => lo <= o && o <= hi).map(([, t]) => t);
      const muls = (x) => x.filter((t) => t.startsWith("vmulps")).length;
      if (muls(b) > muls(body)) body = b;
    }
    const count = (re) => body.filter((t) => re.test(t)).length;
    const steps = count(/^vmulps/) / (rows * cols);
    let fused = 0; // cmp/test + jcc dispatch as one op
    for (let i = 0; i + 1 < body.length; ++i)
      if (/^(REX\.W )?(cmp|test)/.test(body[i]) && body[i + 1].startsWith("j")) ++fused;
    const spillLoads = count(/^\w+ [xy]mm\d+,\[rbp/);
    const per = (n) => +(n / steps).toFixed(2);
    mix[`${m[4] === "true" ? "values" : "scores"} ${tileName(rows, cols, split)}`] = {
      rows,
      cols,
      split,
      stepsPerIteration: steps,
      ops: per(body.length - fused),
      mul: per(count(/^vmulps/)),
      add: per(count(/^vaddps/)),
      broadcasts: per(count(/^vbroadcastss/)),
      vectorLoads: per(count(/^(vmovdqu|vmovups|vbroadcastss) xmm\d+,\[/) - spillLoads),
      scalarLoads: per(count(/^(REX\.W )?mov\w* [a-z0-9]+,\[/)),
      spillLoads: per(spillLoads),
      spillStores: per(count(/^\w+ \[rbp[^\]]*\],[xy]mm\d+$/)),
    };
  }
  return mix;
}

// Per core: dispatch width (ops per cycle), 128-bit FP multiply and add
// pipes (mulPorts/addPorts, or fpPorts when both run on the same pipes),
// latencies, vector load and store ports. Sources: LLVM's scheduling models
// (X86ScheduleZnver3/Znver5.td from AMD's Software Optimization Guides for
// family 19h and for Zen 5; X86SchedAlderlakeP.td for Golden Cove;
// AArch64SchedNeoverseN1.td from Arm's Neoverse N1 Software Optimization
// Guide); Gracemont's two 128-bit FP pipes from vfpbench on a Core
// i7-13700 E-core (wlog.flatlib.jp, 2024-01-27) and its 5-wide allocation from
// Chips and Cheese ("Gracemont: Revenge of the Atom Cores"); its latencies
// were not found (null: no chain bound computed). Zen 4 is taken as Zen 3's
// FP and load/store layout (AMD's family 19h guide covers both); the host
// measurement checks it.
export const CORES = [
  {
    core: "Zen 3/Zen 4",
    width: 6,
    mulPorts: 2,
    addPorts: 2,
    latMul: 3,
    latAdd: 3,
    loads: 2,
    stores: 1,
  },
  { core: "Zen 5", width: 8, mulPorts: 2, addPorts: 2, latMul: 3, latAdd: 2, loads: 2, stores: 1 },
  {
    core: "Golden Cove",
    width: 6,
    mulPorts: 2,
    addPorts: 2,
    sharedPort: 1,
    latMul: 4,
    latAdd: 3,
    loads: 3,
    stores: 2,
  },
  { core: "Gracemont", width: 5, fpPorts: 2, latMul: null, latAdd: null, loads: 2, stores: 1 },
  // ld1r (V8's load-and-splat on arm64) takes a load pipe and an FP/ASIMD pipe.
  {
    core: "Neoverse N1",
    width: 8,
    fpPorts: 2,
    latMul: 3,
    latAdd: 2,
    loads: 2,
    stores: 1,
    broadcastOnFp: true,
  },
];

// Cycles for `mul` multiplies and `add` adds (and `other` FP-pipe ops) on a core.
function fpCycles(c, mul, add, other = 0) {
  if (c.fpPorts) return (mul + add + other) / c.fpPorts;
  // Golden Cove: mul on p0/p1, add on p1/p5: p1 is shared.
  const ports = c.mulPorts + c.addPorts - (c.sharedPort ?? 0);
  return Math.max(mul / c.mulPorts, add / c.addPorts, (mul + add + other) / ports);
}

// The peak loop's mul + add pairs per cycle with its best accumulator count
// (8 to 14, as bench/wasm/peak.cc), ~3 loop ops per iteration.
function peakPairsPerCycle(c) {
  let best = 0;
  for (const n of [8, 10, 12, 14]) {
    const cycles = Math.max(
      fpCycles(c, n, n),
      c.latMul != null ? c.latMul + c.latAdd : 0,
      (2 * n + 3) / c.width,
    );
    best = Math.max(best, n / cycles);
  }
  return best;
}

// The modelled share of the peak loop for one kernel's mix on one core, and
// what bounds it.
export function modelShare(mix, c) {
  const pairs = mix.rows * mix.cols;
  const bounds = {
    fp: fpCycles(c, mix.mul, mix.add, c.broadcastOnFp ? mix.broadcasts : 0),
    loads: (mix.vectorLoads + mix.scalarLoads + mix.spillLoads) / c.loads,
    stores: mix.spillStores / c.stores,
    dispatch: mix.ops / c.width,
    chain: c.latAdd != null ? c.latAdd / (mix.split === 2 ? 2 : 1) : 0,
  };
  const [bound, cycles] = Object.entries(bounds).sort((a, b) => b[1] - a[1])[0];
  // Spilled vectors may sit on the add chains (through store forwarding),
  // which this model does not see: their shares are left to the measurement.
  const spills = mix.spillLoads + mix.spillStores > 0;
  return { share: +(pairs / cycles / peakPairsPerCycle(c)).toFixed(3), bound, spills };
}

// Chains each kernel needs on a core to hide the add latency: latency x adds
// per cycle at the FP pipes' rate (the peak loop: mul + add latency).
export function chainsNeeded(c) {
  const pairsPerCycle = 1 / fpCycles(c, 1, 1);
  return c.latAdd == null
    ? null
    : { gemm: c.latAdd * pairsPerCycle, peak: (c.latMul + c.latAdd) * pairsPerCycle };
}

// Measured shares (this host) beside the model's, per tile: both products.
export function modelTable(run, model) {
  const tiles = [...new Set(run.results.map((r) => r.tile))];
  const both = (m, t) => {
    const s = m.tiles[`scores ${t}`],
      v = m.tiles[`values ${t}`];
    if (!s || !v) return "–";
    if (s.spills || v.spills) return "spills";
    return `${(100 * (2 / (1 / s.share + 1 / v.share))).toFixed(0)}%`;
  };
  const lines = [
    `| tile | chains | measured here | ${model.map((m) => `${m.core} (model)`).join(" | ")} |`,
    `|---|---:|---:|${model.map(() => "---:").join("|")}|`,
  ];
  for (const t of tiles) {
    const b = run.results.find((r) => r.case === "both" && r.tile === t);
    lines.push(
      `| ${t} | ${b.chains} | ${(100 * b.share).toFixed(0)}% | ${model
        .map((m) => both(m, t))
        .join(" | ")} |`,
    );
  }
  return lines.join("\n");
}

const isMain =
  typeof process !== "undefined" &&
  process.argv?.[1] &&
  import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href;

if (isMain) {
  const { readFileSync, existsSync } = await import("node:fs");
  const { fileURLToPath } = await import("node:url");
  const args = process.argv.slice(2);
  const quick = args.includes("--quick");
  const ri = args.indexOf("--rounds");
  const rounds = ri >= 0 ? +args[ri + 1] : quick ? 5 : 9;
  const batchMs = 2;
  const peakUrl = new URL("../../build/bench-wasm/peak.wasm", import.meta.url);
  const tilesUrl = new URL("../../build/bench-wasm/tiles.wasm", import.meta.url);
  for (const u of [peakUrl, tilesUrl]) {
    if (!existsSync(u)) {
      console.error(`tiles: ${fileURLToPath(u)} is missing (scripts/bench.sh builds it)`);
      process.exit(1);
    }
  }
  const peakBytes = readFileSync(peakUrl),
    tilesBytes = readFileSync(tilesUrl);
  if (args.includes("--tier-up")) {
    // The child of --code's node --print-wasm-code: every kernel run until
    // TurboFan has compiled it (its code goes to stdout).
    const { exports: e } = (await WebAssembly.instantiate(tilesBytes, {})).instance;
    for (const name of Object.keys(e)) {
      const m = name.match(/^(scores|values)_(\d+)x(\d+)x(\d+)$/);
      if (!m) continue;
      e.pack(4 * +m[3], +m[2], 64, 128);
      for (let i = 0; i < 400; ++i) e[name](Math.floor(kRowsMax / +m[2]), 1);
    }
    process.exit(0);
  }
  const log = (s) => console.error(`tiles: ${s}`);
  // bench/lib/engines.mjs reads Node's files: imported here, not by the page.
  const cpu = (await import("../lib/engines.mjs")).cpuModel();
  const out = {
    host: { cpu: cpu?.model ?? "?", family: cpu?.family ?? NaN, model: cpu?.modelNumber ?? NaN },
    engines: {},
  };
  log(`Node ${process.version} (V8 ${process.versions.v8}), CPU time of the process`);
  const callTs = quick ? [512] : [512, 2048];
  const distUrl = new URL("../../dist/", import.meta.url);
  const { default: createAttnkit } = await import(new URL("simd.node.mjs", distUrl).href);
  const attn = await createAttnkit();
  const node = await sweep({
    peakBytes,
    tilesBytes,
    now: cpuMs,
    rounds,
    batchMs,
    calls: attentionCalls(attn, callTs),
    log,
  });
  out.engines.node = {
    engine: `Node ${process.version}, V8 ${process.versions.v8}`,
    clock: "process CPU time",
    ...node,
  };
  console.error(table(node));
  console.error(callTable(node));

  // The kernels' x64 code in this V8, and the port model of other cores.
  if (process.arch === "x64") {
    const { spawnSync } = await import("node:child_process");
    const dump = spawnSync(
      process.execPath,
      ["--print-wasm-code", fileURLToPath(import.meta.url), "--tier-up"],
      { encoding: "utf8", maxBuffer: 1 << 30 },
    );
    const mix = loopMix(dump.stdout);
    out.code = { engine: `V8 ${process.versions.v8}, x64`, perKStep: mix };
    out.model = CORES.map((c) => ({
      ...c,
      chainsNeeded: chainsNeeded(c),
      tiles: Object.fromEntries(Object.entries(mix).map(([k, m]) => [k, modelShare(m, c)])),
    }));
    console.error(modelTable(node, out.model));
  }

  if (args.includes("--chromium")) {
    const { chromium } = await import("playwright-core");
    const { ARGS, CHROMIUM } = await import("../../tests/chromium.mjs");
    const { mkdtempSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const profile = mkdtempSync(join(tmpdir(), "attnkit-tiles-"));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: ARGS,
      headless: true,
    });
    try {
      const page = await context.newPage();
      page.on("console", (m) => log(`chromium: ${m.text()}`));
      // The page, this module and the two modules from memory, cross-origin
      // isolated (performance.now() at 5 us rather than 100 us).
      // localhost: a potentially trustworthy origin, so that the isolation
      // headers apply (no server listens: every request is routed here).
      const origin = "http://localhost:9";
      const files = {
        "/": ["text/html", '<!doctype html><link rel="icon" href="data:,"><title>tiles</title>'],
        "/tiles.mjs": ["text/javascript", readFileSync(new URL(import.meta.url))],
        // Its one import ("../lib/stats.mjs" resolves to this from "/tiles.mjs").
        "/lib/stats.mjs": [
          "text/javascript",
          readFileSync(new URL("../lib/stats.mjs", import.meta.url)),
        ],
        "/peak.wasm": ["application/wasm", peakBytes],
        "/tiles.wasm": ["application/wasm", tilesBytes],
        // The package's attnkit/simd entry and its SIMD128 build, as a page loads them.
        "/dist/simd.mjs": ["text/javascript", readFileSync(new URL("simd.mjs", distUrl))],
        "/dist/attnkit-simd.mjs": [
          "text/javascript",
          readFileSync(new URL("attnkit-simd.mjs", distUrl)),
        ],
        "/dist/attnkit-simd.wasm": [
          "application/wasm",
          readFileSync(new URL("attnkit-simd.wasm", distUrl)),
        ],
      };
      await page.route(`${origin}/**`, (route) => {
        const file = files[new URL(route.request().url()).pathname];
        if (!file) return route.fulfill({ status: 404, body: "" });
        route.fulfill({
          status: 200,
          contentType: file[0],
          body: file[1],
          headers: {
            "Cross-Origin-Opener-Policy": "same-origin",
            "Cross-Origin-Embedder-Policy": "require-corp",
          },
        });
      });
      await page.goto(`${origin}/`);
      const userAgent = await page.evaluate(() => navigator.userAgent);
      log(`Chromium: ${userAgent}`);
      const browserRun = await page.evaluate(
        async ({ rounds, batchMs, callTs }) => {
          const { sweep, attentionCalls } = await import("/tiles.mjs");
          const { default: createAttnkit } = await import("/dist/simd.mjs");
          const attn = await createAttnkit();
          const [peakBytes, tilesBytes] = await Promise.all(
            ["/peak.wasm", "/tiles.wasm"].map(async (u) => (await fetch(u)).arrayBuffer()),
          );
          return sweep({
            peakBytes,
            tilesBytes,
            now: () => performance.now(),
            rounds,
            batchMs,
            calls: attentionCalls(attn, callTs),
            log: (s) => console.log(s),
          });
        },
        { rounds, batchMs, callTs },
      );
      out.engines.chromium = {
        engine: userAgent,
        clock: "performance.now() (cross-origin isolated)",
        ...browserRun,
      };
      console.error(table(browserRun));
      console.error(callTable(browserRun));
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    }
  }
  process.stdout.write(JSON.stringify(out, null, 1) + "\n");
}
