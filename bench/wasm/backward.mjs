// The backward in Node (npm run bench): forward + backward of one head, d = 64,
// T = 128..2048, causal and not, one thread, the same inputs in the same run:
//   attnkit (wasm SIMD128)  the npm package from dist/: attentionForTraining,
//                           then attentionBackward with its saved { out, lse }
//   tfjs-backend-wasm       tf.grads (tfjs-core's own gradients, bundled by esbuild)
//                           of the forward formulation bench/lib/peers.mjs
//                           times (Q*scale @ K^T by matMul(transposeB) or by an
//                           explicit tf.transpose(K), + a -1e9 band when causal,
//                           softmax, @ V), the faster of the two per shape
//   plain JS                jsAttentionFwdBwd (bench/wasm/plain.mjs); not run at
//                           a larger T once one call took over 3 s
// Every engine's dQ, dK, dV are checked against plain JS's (attnkit's where
// plain JS did not run) before timing; runs are interleaved (each round times
// every engine once, in a rotating order) and the median of the rounds' CPU
// time per call (process.cpuUsage: Node runs with --single-threaded-gc, so the
// process's time is the engine's and its collections'; on a shared machine the
// wall time also counts other processes' turns) is reported, the wall time
// beside it. GFLOP/s: forward 4 T^2 d + backward 10 T^2 d (FlashAttention-2's
// convention, recomputation not counted), halved when causal.
// Then, in a fresh process, one call at T = 16384 (causal; the memory of a
// fused kernel does not depend on the mask) and the module's memoryBytes()
// after it: its linear memory never shrinks, so this is its peak. And the fixed
// cost of small calls, T = 4..64, d = 8 and 64: attention, attentionForTraining
// and attentionBackward (saved) per call, in interleaved ~2 ms batches as
// bench/wasm/small.mjs times them.
//
// Usage: node --expose-gc --single-threaded-gc bench/wasm/backward.mjs [--quick] [--no-peers]
//          > bench/results/backward.json
//   (internal) node bench/wasm/backward.mjs --big T
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
// The built package's Node entry (what `import "attnkit"` resolves to in Node).
import { createAttnkit } from "../../dist/attnkit.node.mjs";
import { jsAttentionFwdBwd } from "./plain.mjs";
import { loadTfjs } from "../lib/engines.mjs";
import { median, random } from "../lib/stats.mjs";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const D = 64;
const sizes = quick ? [128, 512] : [128, 256, 512, 1024, 2048];
const BIG_T = quick ? 4096 : 16384; // the target: 16384
const SMALL_T = quick ? [4, 16, 64] : [4, 8, 16, 32, 64];
const ATTNKIT = "attnkit (wasm SIMD128)",
  TFJS = "tfjs-backend-wasm",
  PLAIN = "plain JS";
const PLAIN_LIMIT_MS = 3000;

const flopsOf = (T, causal, d = D) => 14 * T * T * d * (causal ? 0.5 : 1);
const matrix = (data, rows, cols) => ({ data, rows, cols });

// The largest |a - b| over |b|'s largest entry (at least 1), over dQ, dK, dV.
function relDiff(a, b) {
  let m = 0,
    scale = 1;
  for (const name of ["dQ", "dK", "dV"]) {
    for (let i = 0; i < b[name].length; ++i) scale = Math.max(scale, Math.abs(b[name][i]));
  }
  for (const name of ["dQ", "dK", "dV"]) {
    if (a[name].length !== b[name].length) return Infinity;
    for (let i = 0; i < a[name].length; ++i) m = Math.max(m, Math.abs(a[name][i] - b[name][i]));
  }
  return m / scale;
}

function attnkitBackward(ak) {
  return {
    name: ATTNKIT,
    setup(T, causal, q, k, v, dO) {
      const Q = matrix(q, T, D),
        K = matrix(k, T, D),
        V = matrix(v, T, D),
        dOut = matrix(dO, T, D);
      const run = () => {
        const saved = ak.attentionForTraining(Q, K, V, { causal });
        const g = ak.attentionBackward(Q, K, V, dOut, { causal, saved });
        return { dQ: g.dQ.data, dK: g.dK.data, dV: g.dV.data };
      };
      return { run, dispose() {} };
    },
  };
}

const plainEngine = {
  name: PLAIN,
  setup: (T, causal, q, k, v, dO) => ({
    run: () => jsAttentionFwdBwd(q, k, v, dO, T, causal, D),
    dispose() {},
  }),
};

// tfjs-backend-wasm with its gradients, one thread (bench/lib/engines.mjs).
async function tfjsBackward() {
  const { tf, version } = await loadTfjs();
  return {
    name: TFJS,
    version,
    setup(T, causal, q, k, v, dO) {
      const Q = tf.tensor2d(q, [T, D]),
        K = tf.tensor2d(k, [T, D]),
        V = tf.tensor2d(v, [T, D]),
        dy = tf.tensor2d(dO, [T, D]);
      const band = causal
        ? tf.tidy(() => tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([T, T]), -1, 0)), -1e9))
        : null;
      const scale = 1 / Math.sqrt(D);
      const formulations = {
        "matMul(transposeB)": (q, k) => tf.matMul(tf.mul(q, scale), k, false, true),
        "explicit transpose": (q, k) => tf.matMul(tf.mul(q, scale), tf.transpose(k)),
      };
      const runs = Object.entries(formulations).map(([variant, scores]) => {
        const grads = tf.grads((q, k, v) => {
          let s = scores(q, k);
          if (band) s = tf.add(s, band);
          return tf.matMul(tf.softmax(s), v);
        });
        const run = () => {
          const [dQ, dK, dV] = grads([Q, K, V], dy);
          const r = { dQ: dQ.dataSync(), dK: dK.dataSync(), dV: dV.dataSync() };
          tf.dispose([dQ, dK, dV]);
          return r;
        };
        return { variant, run };
      });
      // The faster formulation at this shape: best of 3 calls each, after one.
      let best = null;
      for (const r of runs) {
        r.run();
        let ms = Infinity;
        for (let i = 0; i < 3; ++i) {
          const t0 = performance.now();
          r.run();
          ms = Math.min(ms, performance.now() - t0);
        }
        if (!best || ms < best.ms) best = { ...r, ms };
      }
      return {
        run: best.run,
        variant: best.variant,
        dispose() {
          tf.dispose([Q, K, V, dy]);
          band?.dispose();
        },
      };
    },
  };
}

async function timeShape(engines, T, causal, results, skipped, slow) {
  const q = random(T * D, 1),
    k = random(T * D, 2),
    v = random(T * D, 3),
    dO = random(T * D, 4);
  const flops = flopsOf(T, causal);
  const rounds = quick ? 3 : T >= 2048 ? 5 : 9;
  const active = [];
  let want = null;
  for (const e of engines) {
    if (slow.has(e.name)) {
      skipped.push({ engine: e.name, T, causal, reason: slow.get(e.name) });
      continue;
    }
    let s, got, firstMs;
    try {
      s = await e.setup(T, causal, q, k, v, dO);
      const t0 = performance.now();
      got = s.run();
      firstMs = performance.now() - t0;
    } catch (err) {
      const reason = `error: ${String(err?.message ?? err).split("\n")[0]}`;
      skipped.push({ engine: e.name, T, causal, reason });
      console.error(`${e.name} at T=${T} causal=${causal}: ${reason}`);
      continue;
    }
    want ??= got; // plain JS first, else attnkit: the reference
    const diff = relDiff(got, want);
    if (!(diff < 1e-3)) {
      if (e.name !== TFJS) throw new Error(`${e.name} differs by ${diff} at T=${T}`);
      skipped.push({ engine: e.name, T, causal, reason: `its gradients differ by ${diff}` });
      s.dispose();
      continue;
    }
    if (e.name === PLAIN && firstMs > PLAIN_LIMIT_MS)
      slow.set(PLAIN, `one call took ${(firstMs / 1e3).toFixed(1)} s at a smaller T`);
    if (e.name === PLAIN && firstMs * rounds > 90e3) {
      skipped.push({ engine: e.name, T, causal, reason: `one call took ${firstMs} ms` });
      continue;
    }
    for (let n = 1, t0 = performance.now(); n < 50 && firstMs + performance.now() - t0 < 300; ++n)
      s.run();
    active.push({ e, s, times: [], wall: [], diff });
  }
  for (let r = 0; r < rounds; ++r) {
    for (let i = 0; i < active.length; ++i) {
      const a = active[(i + r) % active.length];
      const reps = Math.max(1, Math.round(2e8 / flops));
      globalThis.gc?.();
      const t0 = performance.now(),
        c0 = process.cpuUsage();
      for (let j = 0; j < reps; ++j) a.s.run();
      const c = process.cpuUsage(c0);
      a.wall.push((performance.now() - t0) / reps);
      a.times.push((c.user + c.system) / 1e3 / reps);
    }
  }
  for (const a of active) {
    const ms = median(a.times);
    results.push({
      engine: a.e.name,
      T,
      causal,
      ms,
      wallMs: median(a.wall),
      gflops: flops / (ms * 1e6),
      msRounds: a.times.map((t) => +t.toPrecision(4)),
      relDiff: a.diff,
      ...(a.s.variant ? { variant: a.s.variant } : {}),
    });
    a.s.dispose();
  }
  console.error(
    `backward T=${T} causal=${causal}: ` +
      results
        .slice(-active.length)
        .map((r) => `${r.engine} ${r.ms.toFixed(2)} ms`)
        .join(", "),
  );
}

// One call at T = BIG_T (causal) in this fresh process: ms and memoryBytes().
async function big(T) {
  const ak = await createAttnkit();
  const q = random(T * D, 1),
    k = random(T * D, 2),
    v = random(T * D, 3),
    dO = random(T * D, 4);
  const before = ak.memoryBytes();
  const s = attnkitBackward(ak).setup(T, true, q, k, v, dO);
  const t0 = performance.now(),
    c0 = process.cpuUsage();
  const g = s.run();
  const c = process.cpuUsage(c0),
    ms = (c.user + c.system) / 1e3,
    wallMs = performance.now() - t0;
  if (!g.dQ.every(Number.isFinite)) throw new Error("non-finite dQ");
  console.log(
    JSON.stringify({
      engine: ATTNKIT,
      T,
      causal: true,
      ms,
      wallMs,
      gflops: flopsOf(T, true) / (ms * 1e6),
      memoryBytesBefore: before,
      memoryBytes: ak.memoryBytes(),
    }),
  );
}

// Small calls: microseconds per call of the forward, the forward for training
// and the backward with saved, interleaved ~2 ms batches, median of rounds;
// the backward over the forward is the median of the rounds' ratios.
function smallCalls(ak) {
  const rounds = quick ? 9 : 31,
    out = [];
  for (const d of [8, 64]) {
    for (const T of SMALL_T) {
      const Q = matrix(random(T * d, 1), T, d),
        K = matrix(random(T * d, 2), T, d),
        V = matrix(random(T * d, 3), T, d),
        dO = matrix(random(T * d, 4), T, d);
      const saved = ak.attentionForTraining(Q, K, V);
      const calls = {
        attention: () => ak.attention(Q, K, V),
        attentionForTraining: () => ak.attentionForTraining(Q, K, V),
        "attentionBackward (saved)": () => ak.attentionBackward(Q, K, V, dO, { saved }),
      };
      const active = Object.entries(calls).map(([name, run]) => {
        let n = 0;
        const t0 = performance.now();
        while (performance.now() - t0 < (quick ? 60 : 150)) {
          run();
          ++n;
        }
        const perCall = (performance.now() - t0) / n;
        return { name, run, calls: Math.max(1, Math.round(2 / perCall)), times: [] };
      });
      for (let r = 0; r < rounds; ++r) {
        for (let i = 0; i < active.length; ++i) {
          const a = active[(i + r) % active.length];
          const t0 = performance.now();
          for (let j = 0; j < a.calls; ++j) a.run();
          a.times.push(((performance.now() - t0) / a.calls) * 1e3);
        }
      }
      const us = Object.fromEntries(active.map((a) => [a.name, median(a.times)]));
      // The ratio pairs each round's backward with the same round's forward:
      // the host's speed drifts between rounds by more than the calls differ.
      const times = Object.fromEntries(active.map((a) => [a.name, a.times]));
      const ratio = median(
        times["attentionBackward (saved)"].map((t, r) => t / times.attention[r]),
      );
      out.push({ d, T, us, ratio });
      console.error(
        `small calls d=${d} T=${T}: ` +
          Object.entries(us)
            .map(([n, t]) => `${n} ${t.toFixed(2)} us`)
            .join(", "),
      );
    }
  }
  return { rounds, batchMs: 2, sizes: out };
}

async function main() {
  const ak = await createAttnkit();
  const engines = [plainEngine, attnkitBackward(ak)];
  const info = { [ATTNKIT]: { target: ak.target }, node: process.version };
  if (!args.includes("--no-peers")) {
    const tfjs = await tfjsBackward();
    engines.push(tfjs);
    info[TFJS] = { version: tfjs.version };
  }
  const results = [],
    skipped = [],
    slow = new Map();
  for (const causal of [false, true]) {
    slow.clear();
    for (const T of sizes) await timeShape(engines, T, causal, results, skipped, slow);
  }
  let bigResult = null;
  try {
    bigResult = JSON.parse(
      execFileSync(process.execPath, [fileURLToPath(import.meta.url), "--big", String(BIG_T)], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      })
        .trim()
        .split("\n")
        .at(-1),
    );
    console.error(
      `T=${BIG_T} causal: ${(bigResult.ms / 1e3).toFixed(1)} s CPU, memoryBytes ${bigResult.memoryBytes}`,
    );
  } catch (err) {
    bigResult = { error: String(err?.message ?? err).split("\n")[0] };
    console.error(`T=${BIG_T}: ${bigResult.error}`);
  }
  let small = null;
  try {
    small = smallCalls(ak);
  } catch (err) {
    small = { error: String(err?.message ?? err).split("\n")[0] };
    console.error(`small calls: ${small.error}`);
  }
  console.log(
    JSON.stringify(
      { d: D, quick, engines: info, skipped, big: bigResult, small, results },
      null,
      1,
    ),
  );
}

try {
  if (args[0] === "--big") await big(+args[1]);
  else await main();
} catch (err) {
  console.error(`bench: ${err?.message ?? err}`);
  process.exit(1);
}
