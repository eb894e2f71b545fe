// Benchmarks run in Node: attnkit's WebAssembly SIMD128 build against its own
// scalar build, a straightforward JS implementation and the peers of
// bench/lib/peers.mjs (onnxruntime-node, onnxruntime-web, tfjs-backend-wasm), one
// head, d = 64, then a multi-head layer and decoding against a KV cache (see
// otherShapes), the same inputs in the same run, one thread each. Every engine's
// output is checked against attnkit SIMD's before timing, then each is warmed up
// (0.3 s). Runs are interleaved
// (each round times every engine once, in a rotating order) and the median of the
// rounds is reported. GFLOP/s counts 4 * T * T * d per head, also for causal runs.
// The same run measures the wasm machine limit: the SIMD128 mul + add loop of
// bench/wasm/peak.cc (built by bench/CMakeLists.txt into build/bench-wasm/peak.wasm).
// Then each (engine, T, causal) runs once more in a fresh Node process to measure
// its peak memory: growth of the resident set (VmHWM, reset just before) over the
// process with the engine loaded and warmed up (one call at T = 16) and the inputs
// in JS arrays, and for engines in wasm whose module is reachable (attnkit, tfjs)
// the size of their linear memory after the call (it never shrinks: the peak).
//
// attnkit native takes part too, so that its ratios to onnxruntime-node come from
// the same rounds: build/bench/attnkit_bench --serve (bench/native/bench.cc), a
// child process that times its own calls (no pipe round trip in the figure),
// once as dispatched and once per other Highway target this CPU supports
// (--serve --target NAME), and OpenBLAS's attention (--serve --openblas).
// After each of its calls, each child also measures the FMA peak of its own
// vector width (~20 ms), so that its share of the peak comes from the same
// rounds too; each round also measures the SIMD128 mul + add peak in Node.
// Every time is CPU time, beside the wall time: a child's, of its timed
// thread; in Node, of the Node process (process.cpuUsage: onnxruntime-node
// runs its calls on a thread of libuv's pool; every thread is pinned to the
// one core; see cpuMs in bench/lib/stats.mjs). Each result keeps its rounds (cpuMsRounds, peakRounds), in the same
// order for every engine of a shape, for per-round ratios in bench/report.mjs.
//
// Usage: node --expose-gc --single-threaded-gc bench/wasm/bench.mjs [--quick] [--no-peers]
//          [--no-memory] [--native-only] [--layer-only] > bench/results/wasm.json
//   --quick: T = 512 and 2048 (the per-target table's shapes), fewer decoding shapes;
//   --native-only: only the native engines (attnkit per target, OpenBLAS,
//   onnxruntime-node), no wasm or JS engine, no memory measurement
//   (internal) node --expose-gc bench/wasm/bench.mjs --memory NAME T CAUSAL [VARIANT]
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
// The built package's Node entry (what `import "attnkit"` resolves to in Node).
import { createAttnkit } from "../../dist/attnkit.node.mjs";
import { cpuModel, wasmPeak } from "../lib/engines.mjs";
import { cpuMs, maxDiff, median, random } from "../lib/stats.mjs";
import { jsAttention } from "./plain.mjs";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
// --layer-only: the multi-head layer alone, 21 rounds (attnkit, its per-call
// rows and the peers, the platforms' peaks in the same rounds; not the scalar
// build or plain JS), no one-head or decoding shapes, no memory measurement.
const layerOnly = args.includes("--layer-only");
const nativeOnly = args.includes("--native-only");
const D = 64;
const sizes = quick ? [512, 2048] : [128, 512, 2048, 8192];
const REFERENCE = "attnkit (wasm SIMD128)";
const NATIVE = "attnkit (native, in Node's rounds)";
// The layer with its weights passed in plain to every call (each call checks
// and packs them), beside the rows above, whose layer packs them once.
const WASM_PER_CALL = "attnkit (wasm SIMD128, weights packed per call)";
const NATIVE_PER_CALL = "attnkit (native, weights packed per call)";
const nativeBench = fileURLToPath(new URL("../../build/bench/attnkit_bench", import.meta.url));

// The plain JS engine (jsAttention, d = 64 here) and the inputs (random) are
// shared with bench/wasm/small.mjs.
// c [m, n] = a [m, k] b [k, n], row-major.
function jsMatMul(a, b, m, k, n) {
  const c = new Float32Array(m * n);
  for (let i = 0; i < m; ++i) {
    for (let p = 0; p < k; ++p) {
      const x = a[i * k + p];
      for (let j = 0; j < n; ++j) c[i * n + j] += x * b[p * n + j];
    }
  }
  return c;
}

// The other shapes of issue #5, beside one head: a multi-head self-attention
// layer (B = 1, T = 512, d_model = 512, 8 heads of 64, projections W_Q, W_K, W_V
// and W_O) and decoding (one query of 8 heads against a KV cache of N tokens).
// GFLOP/s counts 2 * T * 512 * 512 per projection plus 4 * T * T * 64 per head,
// and 4 * N * 64 per head for decoding. Engines run them through
// setupWorkload(w) -> session (or undefined: not supported).
const HEADS = 8,
  D_MODEL = HEADS * D;
// The layer's weights: random(512 * 512, seed) / sqrt(512). bench/make_models.py
// bakes the same weights into its layer models (as constants, like a real model).
const WEIGHT_SEEDS = { W_Q: 5, W_K: 6, W_V: 7, W_O: 8 };
function otherShapes() {
  const weights = Object.fromEntries(
    Object.entries(WEIGHT_SEEDS).map(([name, seed]) => {
      const w = random(D_MODEL * D_MODEL, seed);
      for (let i = 0; i < w.length; ++i) w[i] /= Math.sqrt(D_MODEL);
      return [name, w];
    }),
  );
  const T = 512;
  const shapes = [
    {
      kind: "layer",
      T,
      label: `layer T=${T}`,
      flops: 4 * 2 * T * D_MODEL * D_MODEL + 4 * T * T * D_MODEL,
      rounds: layerOnly ? 21 : 7,
      x: random(T * D_MODEL, 4),
      weights,
    },
  ];
  for (const N of quick ? [1024, 4096] : [1024, 4096, 16384, 32768]) {
    shapes.push({
      kind: "decode",
      N,
      label: `decode, cache ${N}`,
      flops: 4 * N * D_MODEL,
      rounds: N >= 16384 ? 7 : 15,
      q: random(D_MODEL, 10),
      k: random(N * D_MODEL, 11),
      v: random(N * D_MODEL, 12),
    });
  }
  return shapes;
}

// layerPerCall: the engine runs the layer only, with its weights passed in
// plain on every call (checked and packed by each call), beside the packed
// row of the same module.
function attnkitEngine(name, simd, { layerPerCall = false } = {}) {
  let ak = null;
  return {
    name,
    platform: "wasm",
    maxT: 8192,
    async load() {
      ak ??= await createAttnkit({ simd });
    },
    info: async () => ({
      version: JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
        .version,
      kernel: `Highway target ${ak.target} (static dispatch: the build's only target)`,
      how: "attn.target",
    }),
    wasmMemoryBytes: () => ak.memoryBytes(),
    async setup(T, causal, q, k, v) {
      if (layerPerCall) return null;
      const Q = { data: q, rows: T, cols: D },
        K = { data: k, rows: T, cols: D },
        V = { data: v, rows: T, cols: D };
      return { run: () => ak.attention(Q, K, V, { causal }).data, dispose() {} };
    },
    setupWorkload(w) {
      const matrix = (data) => ({ data, rows: D_MODEL, cols: D_MODEL });
      if (layerPerCall && w.kind !== "layer") return null;
      if (w.kind === "layer") {
        const X = { data: w.x, shape: [1, w.T, D_MODEL] };
        const config = { numHeads: HEADS };
        const weights = Object.fromEntries(
          Object.entries(w.weights).map(([k, data]) => [k, matrix(data)]),
        );
        if (layerPerCall) {
          return { run: () => ak.multiHeadAttention(X, weights, config).data, dispose() {} };
        }
        // The weights are constants of the layer: packed once, as a model's are.
        const packed = ak.packWeights(weights, config);
        return {
          run: () => ak.multiHeadAttention(X, packed, config).data,
          dispose: () => packed.dispose(),
        };
      }
      // The cache holds the N tokens; each call attends the newest query to all of them.
      const cache = ak.createKVCache({ numKvHeads: HEADS, dK: D, dV: D, capacity: w.N });
      cache.append(
        { data: w.k, shape: [1, w.N, D_MODEL] },
        { data: w.v, shape: [1, w.N, D_MODEL] },
      );
      const Q = { data: w.q, shape: [1, 1, D_MODEL] };
      return { run: () => cache.attend(Q, HEADS).data, dispose: () => cache.dispose() };
    },
  };
}

// A file of float32s. (A small file's Buffer can be a view of a shared pool:
// copy exactly its bytes.)
function readFloats(path) {
  const bytes = readFileSync(path);
  return new Float32Array(
    bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
  );
}

// attnkit native in a child process (attnkit_bench --serve [serveArgs]): inputs
// and output go through files, and the child reports the milliseconds per call
// itself. serveArgs: [] (attnkit as dispatched), ["--target", NAME] (attnkit on
// one Highway target), ["--openblas"] (OpenBLAS's attention, one head only).
// layerPerCall: the layer only, its weights unpacked on every call ("layer T
// DIR per-call"); else the layer's weights are packed once in the child.
function nativeEngine(name = NATIVE, serveArgs = [], { layerPerCall = false } = {}) {
  let child = null,
    lines = null,
    dir = null;
  const ask = (line) =>
    new Promise((resolve, reject) => {
      const onLine = (answer) => {
        child.off("exit", onExit);
        answer.startsWith("error")
          ? reject(new Error(`attnkit_bench --serve: ${answer}`))
          : resolve(answer);
      };
      const onExit = (code) => {
        lines.off("line", onLine);
        reject(new Error(`attnkit_bench --serve exited (${code})`));
      };
      lines.once("line", onLine);
      child.once("exit", onExit);
      child.stdin.write(`${line}\n`);
    });
  // Sends a load command (the inputs are in dir already); a session of that shape.
  const loaded = async (command) => {
    await ask(command);
    const out = readFloats(join(dir, "out.f32"));
    const session = {
      run: async () => {
        await ask("time 1");
        return out;
      },
      // Wall-clock ms per call; the child's CPU ms per call is kept in cpuMs.
      time: async (reps) => {
        const [wall, cpu] = (await ask(`time ${reps}`)).split(" ").map(Number);
        session.cpuMs = cpu;
        return wall;
      },
      dispose() {},
    };
    return session;
  };
  const engine = {
    name,
    platform: "native",
    maxT: 8192,
    async load() {
      if (child) return;
      dir = mkdtempSync(join(tmpdir(), "attnkit-bench-"));
      child = spawn(nativeBench, ["--serve", ...serveArgs], { stdio: ["pipe", "pipe", "inherit"] });
      lines = createInterface({ input: child.stdout });
      // "AVX2 256" or "OpenBLAS Cooperlake 512": the target and its vector width.
      const words = (await ask("info")).split(" ");
      engine.bits = +words.at(-1);
      engine.target = words.slice(0, -1).join(" ");
    },
    info: async () => ({
      kernel: serveArgs.includes("--openblas")
        ? `${engine.target} (openblas_get_corename), FMA peak of ${engine.bits}-bit vectors`
        : `Highway target ${engine.target} (${engine.bits}-bit vectors; ${serveArgs.includes("--target") ? "forced with attnkit::targets::ForceForTest" : "dynamic dispatch: the best the CPU supports"})`,
      how: "attnkit_bench --serve info",
    }),
    close() {
      // the child ends when its stdin does
      child?.stdin.end();
      child = null;
      rmSync(dir, { recursive: true, force: true });
    },
    async setup(T, causal, q, k, v) {
      if (layerPerCall) return null;
      for (const [name, x] of [
        ["q", q],
        ["k", k],
        ["v", v],
      ])
        writeFileSync(join(dir, `${name}.f32`), x);
      const session = await loaded(`load ${T} ${causal ? 1 : 0} ${dir}`);
      session.peak = async () => +(await ask("peak"));
      return session;
    },
    async setupWorkload(w) {
      if (serveArgs.length) return null; // the other shapes: attnkit as dispatched only
      if (layerPerCall && w.kind !== "layer") return null;
      const files = w.kind === "layer" ? { x: w.x, ...w.weights } : { q: w.q, k: w.k, v: w.v };
      for (const [name, x] of Object.entries(files)) writeFileSync(join(dir, `${name}.f32`), x);
      const session = await loaded(
        w.kind === "layer"
          ? `layer ${w.T} ${dir}${layerPerCall ? " per-call" : ""}`
          : `decode ${w.N} ${dir}`,
      );
      // The FMA peak right after each timing, as for one head: the layer's
      // share of the peak, and the ceiling of its ratios to the peers.
      if (w.kind === "layer") session.peak = async () => +(await ask("peak"));
      return session;
    },
  };
  return engine;
}

// The Highway targets attnkit can dispatch to on this CPU, best first: [{ name, bits }].
function nativeTargets() {
  return execFileSync(nativeBench, ["--list-targets"], { encoding: "utf8" })
    .trim()
    .split("\n")
    .map((line) => ({ name: line.split(" ")[0], bits: +line.split(" ")[1] }));
}

const jsEngine = {
  name: "plain JS",
  platform: "js",
  maxT: 2048,
  async load() {},
  info: async () => ({
    kernel: `V8 ${process.versions.v8} (JIT, scalar float64 arithmetic on Float32Array storage)`,
    how: "process.versions",
  }),
  async setup(T, causal, q, k, v) {
    const out = new Float32Array(T * D);
    return { run: () => jsAttention(q, k, v, T, T, 1, causal, out), dispose() {} };
  },
  setupWorkload(w) {
    if (w.kind === "decode") {
      const out = new Float32Array(D_MODEL);
      return { run: () => jsAttention(w.q, w.k, w.v, 1, w.N, HEADS, false, out), dispose() {} };
    }
    const { W_Q, W_K, W_V, W_O } = w.weights,
      T = w.T;
    const run = () => {
      const [q, k, v] = [W_Q, W_K, W_V].map((W) => jsMatMul(w.x, W, T, D_MODEL, D_MODEL));
      const heads = jsAttention(q, k, v, T, T, HEADS, false, new Float32Array(T * D_MODEL));
      return jsMatMul(heads, W_O, T, D_MODEL, D_MODEL);
    };
    return { run, dispose() {} };
  },
};

async function allEngines(withPeers) {
  const engines = nativeOnly
    ? []
    : [
        attnkitEngine(REFERENCE, true),
        attnkitEngine(WASM_PER_CALL, true, { layerPerCall: true }),
        ...(layerOnly ? [] : [attnkitEngine("attnkit (wasm scalar)", false), jsEngine]),
      ];
  // attnkit native: built by scripts/bench.sh (CMake's build/bench). As
  // dispatched, then on each other target with vectors of 128 bits or more
  // (the dispatch's pick is the first), then OpenBLAS in the same rounds.
  if (existsSync(nativeBench)) {
    engines.push(nativeEngine());
    engines.push(nativeEngine(NATIVE_PER_CALL, [], { layerPerCall: true }));
    for (const t of nativeTargets()
      .slice(1)
      .filter((t) => t.bits >= 128 && t.name !== "EMU128"))
      engines.push(nativeEngine(`attnkit (native, ${t.name} forced)`, ["--target", t.name]));
    engines.push(nativeEngine("OpenBLAS sgemm (in Node's rounds)", ["--openblas"]));
  } else
    console.error(
      `${nativeBench} is missing (scripts/bench.sh builds it): attnkit native is not timed in Node`,
    );
  if (withPeers) {
    const { peerEngines } = await import("../lib/peers.mjs");
    engines.push(...peerEngines().filter((e) => !nativeOnly || e.platform === "native"));
  }
  return engines;
}

function procStatusKb(field) {
  const m = readFileSync("/proc/self/status", "utf8").match(
    new RegExp(`^${field}:\\s+(\\d+) kB`, "m"),
  );
  return m ? +m[1] : NaN;
}

// One engine, one shape, once, in this (fresh) process: its peak memory.
async function memoryChild([name, Tstr, causalStr, variant]) {
  const T = +Tstr,
    causal = causalStr === "1";
  const engine = (await allEngines(!name.startsWith("attnkit") && name !== "plain JS")).find(
    (e) => e.name === name,
  );
  if (!engine) throw new Error(`no engine ${name}`);
  await engine.load();
  // A warm engine: one call at a small T first (ORT creates its session and
  // arena, onnxruntime-web instantiates its wasm module, on first use).
  const w = 16,
    warm = await engine.setup(w, causal, random(w * D, 1), random(w * D, 2), random(w * D, 3), {
      variant: variant || undefined,
    });
  await warm.run();
  warm.dispose();
  const q = random(T * D, 1),
    k = random(T * D, 2),
    v = random(T * D, 3);
  globalThis.gc?.();
  writeFileSync("/proc/self/clear_refs", "5"); // VmHWM := VmRSS
  const baseKb = procStatusKb("VmRSS");
  const s = await engine.setup(T, causal, q, k, v, { variant: variant || undefined });
  await s.run();
  const peakKb = procStatusKb("VmHWM");
  s.dispose();
  engine.close?.(); // a served child (native engines) would keep this process alive
  console.log(
    JSON.stringify({
      rssBytes: Math.max(0, peakKb - baseKb) * 1024,
      wasmBytes: engine.wasmMemoryBytes?.() ?? null,
    }),
  );
}

// Times every engine that can run one shape, in interleaved rounds, after
// checking its output against attnkit SIMD's (the first engine). `key` names the
// shape in results and skipped entries; setup(engine) returns a session
// ({ run, dispose, time?, peak?, variant? }), a promise of one, or null if the
// engine does not run this shape. Engines slower than a minute per shape go to
// `slow` and are not timed again.
async function timeShape(
  engines,
  key,
  { flops, rounds, setup },
  { results, skipped, slow, simdPeak },
) {
  const where = Object.entries(key)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
  const active = [];
  let want = null;
  for (const e of engines) {
    if (slow.has(e.name)) continue;
    const ours = e.name.startsWith("attnkit") || e.platform === "js";
    let s, got, firstMs;
    try {
      s = await setup(e);
      if (!s) continue;
      const t0 = performance.now();
      got = await s.run();
      firstMs = performance.now() - t0;
    } catch (err) {
      if (ours) throw err;
      // A peer that cannot run this shape is reported, not timed.
      const reason = String(err?.message ?? err)
        .split("\n")[0]
        .replace(/\/\S*?\/onnxruntime\//g, "onnxruntime/");
      skipped.push({ engine: e.name, ...key, reason: `error: ${reason}` });
      console.error(`${e.name} at ${where}: ${reason}`);
      continue;
    }
    // Outputs are checked against attnkit SIMD before timing.
    // (--native-only: against the first engine, attnkit native as dispatched.)
    if (e.name === REFERENCE || want === null) want = Float32Array.from(got);
    const diff = maxDiff(got, want);
    const tol = ours ? 1e-4 : 1e-3;
    if (!(diff < tol)) {
      if (ours) throw new Error(`${e.name} differs from attnkit by ${diff} at ${where}`);
      skipped.push({
        engine: e.name,
        ...key,
        reason: `its output differs from attnkit's by ${diff}`,
      });
      s.dispose();
      continue;
    }
    if (firstMs * rounds > 60e3) {
      slow.add(e.name);
      skipped.push({
        engine: e.name,
        ...key,
        reason: `one call took ${(firstMs / 1e3).toFixed(1)} s`,
      });
      s.dispose();
      continue;
    }
    // Warm up (V8 compiles wasm with a baseline compiler first and tiers hot
    // functions up in the background): calls until 0.3 s have passed, at most 50.
    for (let n = 1, t0 = performance.now(); n < 50 && firstMs + performance.now() - t0 < 300; ++n)
      await s.run();
    active.push({ e, s, times: [], cpuTimes: [], peaks: [], cpuShares: [], diff });
  }
  // The SIMD128 peak, measured in every round (in the rotation) for the wasm
  // engines' shares of it; the native children measure their own.
  const simdPeaks = [];
  const slots = active.length + (simdPeak && active.some((a) => a.e.platform === "wasm") ? 1 : 0);
  for (let r = 0; r < rounds; ++r) {
    for (let i = 0; i < slots; ++i) {
      if ((i + r) % slots === active.length) {
        simdPeaks.push(simdPeak.measure());
        continue;
      }
      const a = active[(i + r) % slots];
      const reps = Math.max(1, Math.round(2e8 / flops));
      // Garbage of the engines before, collected now on this thread (Node runs
      // with --expose-gc --single-threaded-gc): V8's background GC threads
      // shared the one core with the engine being timed. Without this, attnkit
      // native's child had as little as half of the core at T = 8192 causal
      // and 0.8-0.9 of it while decoding (its CPU time over the wall time,
      // kept as cpuShare); with it, 0.96-1.03 in four runs, but for one
      // decoding shape at 0.32-0.35 in two of them.
      globalThis.gc?.();
      if (a.s.time) {
        // an engine that times itself (attnkit native, out of process)
        a.times.push(await a.s.time(reps));
        if (a.s.cpuMs !== undefined) {
          a.cpuTimes.push(a.s.cpuMs);
          a.cpuShares.push(a.s.cpuMs / a.times.at(-1));
        }
        // The FMA peak of its width right after, for its share of the peak in this round.
        if (a.s.peak) a.peaks.push(await a.s.peak());
        continue;
      }
      const c0 = cpuMs(),
        t0 = performance.now();
      for (let j = 0; j < reps; ++j) await a.s.run();
      a.times.push((performance.now() - t0) / reps);
      a.cpuTimes.push((cpuMs() - c0) / reps);
    }
  }
  for (const a of active) {
    // CPU time where there is one (every engine here), else the wall time.
    const cpu = a.cpuTimes.length === a.times.length ? a.cpuTimes : a.times;
    const ms = median(cpu);
    const peaks = a.peaks.length ? a.peaks : a.e.platform === "wasm" ? simdPeaks : [];
    results.push({
      engine: a.e.name,
      platform: a.e.platform,
      ...key,
      ms,
      wallMs: median(a.times),
      gflops: flops / (ms * 1e6),
      msRounds: a.times.map((t) => +t.toPrecision(4)),
      cpuMsRounds: cpu.map((t) => +t.toPrecision(4)),
      maxDiff: a.diff,
      ...(a.e.bits ? { target: a.e.target, bits: a.e.bits } : {}),
      // The platform's peak in each round (natively: of the engine's own vector
      // width, right after it; wasm: the SIMD128 peak) and the median over
      // rounds of (GFLOP/s / the peak of the same round).
      ...(peaks.length === cpu.length
        ? {
            peakShare: median(cpu.map((t, i) => flops / (t * 1e6) / peaks[i])),
            peakRounds: peaks.map((g) => +g.toPrecision(4)),
          }
        : {}),
      // Median share of the core the child had while timed (CPU / wall time).
      ...(a.cpuShares.length ? { cpuShare: +median(a.cpuShares).toFixed(3) } : {}),
      ...(a.s.variant ? { variant: a.s.variant } : {}),
    });
    a.s.dispose();
  }
  console.error(
    `${where}: ` +
      results
        .slice(-active.length)
        .map((r) => `${r.engine} ${r.gflops.toFixed(2)}`)
        .join(", ") +
      " GFLOP/s",
  );
}

async function main() {
  const withPeers = !args.includes("--no-peers");
  const engines = await allEngines(withPeers);
  for (const e of engines) await e.load();
  // What each engine runs on this machine (versions, the kernel or ISA it
  // picked, and how that is known), for the report.
  const engineInfo = {};
  for (const e of engines) {
    try {
      engineInfo[e.name] = (await e.info?.()) ?? null;
    } catch (err) {
      engineInfo[e.name] = { kernel: `unknown (${err.message})` };
    }
  }
  engineInfo.node = {
    version: process.version,
    v8: process.versions.v8,
    execArgv: process.execArgv,
    NODE_OPTIONS: process.env.NODE_OPTIONS ?? null,
    cpu: cpuModel(),
  };
  const peakBefore = wasmPeak();
  if (!peakBefore)
    console.error("wasm peak: build/bench-wasm/peak.wasm is missing (scripts/bench.sh builds it)");
  const results = [];
  const skipped = [];
  const slow = new Set(); // engines that took > 60 s per shape: not run at larger shapes
  const simdPeak = peakBefore;
  for (const causal of layerOnly ? [] : [false, true]) {
    for (const T of sizes) {
      const q = random(T * D, 1),
        k = random(T * D, 2),
        v = random(T * D, 3);
      await timeShape(
        engines,
        { T, causal },
        {
          flops: 4 * T * T * D,
          rounds: T >= 8192 ? 5 : T >= 2048 ? 7 : 15,
          setup: (e) => (T > e.maxT ? null : e.setup(T, causal, q, k, v)),
        },
        { results, skipped, slow, simdPeak },
      );
    }
  }
  // The other shapes: a multi-head layer and decoding against a KV cache.
  slow.clear();
  for (const w of otherShapes().filter((w) => !layerOnly || w.kind === "layer")) {
    await timeShape(
      engines,
      { shape: w.label },
      {
        flops: w.flops,
        rounds: w.rounds,
        setup: (e) => e.setupWorkload?.(w) ?? null,
      },
      { results, skipped, slow, simdPeak },
    );
  }
  for (const e of engines) e.close?.();
  const peakAfter = wasmPeak();
  const wasmPeakResult =
    [peakBefore, peakAfter].filter(Boolean).sort((a, b) => b.gflops - a.gflops)[0] ?? null;
  if (wasmPeakResult)
    console.error(`wasm SIMD128 mul+add peak: ${wasmPeakResult.gflops.toFixed(1)} GFLOP/s`);

  const memoryOnly = [];
  if (!args.includes("--no-memory") && !nativeOnly && !layerOnly) {
    const self = fileURLToPath(import.meta.url);
    const measure = (engine, T, causal, variant) => {
      try {
        return JSON.parse(
          execFileSync(
            process.execPath,
            ["--expose-gc", self, "--memory", engine, String(T), causal ? "1" : "0", variant ?? ""],
            { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] },
          )
            .trim()
            .split("\n")
            .at(-1),
        );
      } catch (err) {
        console.error(
          `memory of ${engine} at T=${T}: the measuring process failed (${err.message.split("\n")[0]})`,
        );
        return { rssBytes: null, wasmBytes: null };
      }
    };
    // The engines served by attnkit_bench (attnkit native on each target,
    // OpenBLAS; their results carry a vector width) compute in a child process
    // of their own: a Node process's peak RSS says nothing of them.
    for (const r of results) {
      if (!r.bits && r.T) Object.assign(r, measure(r.engine, r.T, r.causal, r.variant));
    }
    // The memory target: one head, T = 32768, d = 64 in wasm within 64 MB
    // (causal: half the work of non-causal, the same memory for a fused kernel).
    if (!quick)
      memoryOnly.push({
        engine: REFERENCE,
        T: 32768,
        causal: true,
        ...measure(REFERENCE, 32768, true),
      });
    console.error("memory: measured in one fresh process per engine and shape");
  }
  console.log(
    JSON.stringify(
      {
        d: D,
        quick,
        nativeOnly,
        wasmPeak: wasmPeakResult && {
          gflops: wasmPeakResult.gflops,
          accumulators: wasmPeakResult.accumulators,
        },
        engines: engineInfo,
        skipped,
        memoryOnly,
        results,
      },
      null,
      2,
    ),
  );
}

// Errors are printed here: the attnkit module's Node loader rethrows unhandled
// rejections, which would print its whole one-line source instead of the message.
try {
  if (args[0] === "--memory") await memoryChild(args.slice(1));
  else await main();
} catch (err) {
  console.error(`bench: ${err?.message ?? err}`);
  process.exit(1);
}
