// The peers a JS user would pick instead of attnkit, run in Node on one thread,
// one head, d = 64, inputs [T, 64] (as [1, T, 64] where the engine wants a batch):
//   onnxruntime-node  CPU execution provider (native code: a NATIVE peer), with the
//                     com.microsoft MultiHeadAttention op (causal: unidirectional = 1)
//                     and with the plain MatMul/Softmax graph (causal: the faster of a
//                     -1e9 mask made in the graph and the same mask as an input filled
//                     once per shape); bench/make_models.py writes the models
//   onnxruntime-web   its wasm execution provider (SIMD128; 1.30 ships only the SIMD
//                     build), the same models
//   tfjs-backend-wasm @tensorflow/tfjs-core on the wasm backend (XNNPACK, SIMD128),
//                     single-threaded build; its fastest formulation is chosen per
//                     shape: Q*scale @ K^T with matMul(transposeB) or with an
//                     explicit tf.transpose(K), + a -1e9 band when causal,
//                     softmax, @ V
// They live in bench/package.json (npm ci in bench/), never in the top-level package,
// but for onnxruntime-node: a devDependency of the top-level package (its tests).
//
// The other shapes (bench/wasm/bench.mjs's otherShapes): a multi-head layer (8 heads,
// d_model = 512, weights held by the engine: constants in the ONNX models, tensors made
// once in tfjs) and decoding one query against a KV cache of N tokens (onnxruntime:
// the MultiHeadAttention op on [1, N, 512] key and value, and the MatMul graph on a
// cache kept head-major, K transposed; tfjs: K and V tensors [8, N, 64] made once).
//
// Every engine is { name, platform: "native" | "wasm", maxT, load(), setup(T, causal,
// q, k, v) -> { run() -> Float32Array | Promise<Float32Array>, dispose(), variant? },
// setupWorkload(w) -> the same }.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { packageVersion, useTfjsWasm } from "./engines.mjs";

const require = createRequire(import.meta.url);
// The peers' packages come from bench/package-lock.json (scripts/bench.sh runs npm ci in bench/).
const hint = (err) =>
  new Error(
    `${err.message.split("\n")[0]}: run npm ci in bench/ (scripts/bench.sh does), ` +
      "or pass --no-peers to time attnkit and plain JS only",
  );
const need = (name) => {
  try {
    return require(name);
  } catch (err) {
    throw hint(err);
  }
};
const D = 64,
  HEADS = 8,
  D_MODEL = HEADS * D;
const modelsDir = fileURLToPath(new URL("../models/", import.meta.url));
// Whether Node's V8, with its default features (no relaxed SIMD in Node 20),
// accepts a peer's wasm binary: if it does, the binary uses at most
// fixed-width SIMD128.
const validates = (file) =>
  WebAssembly.validate(readFileSync(new URL(`../node_modules/${file}`, import.meta.url)));

// Some engines have more than one way to state the same computation; each keeps
// the fastest for each shape (a short timing of every candidate; maxDiff checks
// happen later, on the one kept). From T = 4096 on, the winner at the largest
// smaller T is kept without timing the others again (a slow call there costs
// seconds). options.variant forces one (the memory pass reuses the timed run's choice).
// candidates: { name: async () => run }, run() -> Float32Array | Promise<Float32Array>.
async function pickFastest(engine, T, candidates, options) {
  let names = Object.keys(candidates);
  if (options.variant) names = [options.variant];
  else if (T >= 4096 && names.includes(engine.lastWinner)) names = [engine.lastWinner];
  if (names.length === 1) return { variant: names[0], run: await candidates[names[0]]() };
  let best = null,
    failure = null;
  for (const variant of names) {
    try {
      // a formulation that fails on this shape is left out; all failing is an error
      const run = await candidates[variant]();
      await run();
      const reps = Math.max(1, Math.min(20, Math.round(5e7 / (4 * T * T * D))));
      const t0 = performance.now();
      for (let i = 0; i < reps; ++i) await run();
      const ms = (performance.now() - t0) / reps;
      if (!best || ms < best.ms) best = { variant, run, ms };
    } catch (err) {
      failure = err;
    }
  }
  if (!best) throw failure;
  if (!options.variant) engine.lastWinner = best.variant;
  return best;
}

// --- onnxruntime (node and web share the session API) ---------------------------
// variants(causal): { name: model file base name }. A model whose name ends in
// "_mask" takes a fourth input, the additive mask [T, T], filled once per shape
// outside the timing (as a model would hold it as a constant).
// workloads: { layer, decode: model file base name }.
function onnxEngine({ name, platform, load, sessionOptions, variants, workloads, info }) {
  let ort = null;
  const sessions = new Map(); // model file -> InferenceSession (T is symbolic)
  // A function that runs `model` (a base name) on `feeds` and returns its output.
  const runner = async (model, feeds) => {
    const file = `${modelsDir}${model}.onnx`;
    if (!sessions.has(file))
      sessions.set(file, await ort.InferenceSession.create(file, sessionOptions()));
    const session = sessions.get(file);
    return async () => {
      const { output } = await session.run(feeds);
      const data = output.data;
      output.dispose?.();
      return data;
    };
  };
  const engine = {
    name,
    platform,
    maxT: 8192,
    async load() {
      for (const models of [variants(false), variants(true), workloads]) {
        for (const model of Object.values(models)) {
          if (!existsSync(`${modelsDir}${model}.onnx`)) {
            throw new Error(
              `${modelsDir}${model}.onnx is missing: /usr/bin/python3 bench/make_models.py writes it`,
            );
          }
        }
      }
      ort ??= await load();
    },
    info: () => info(ort),
    async setup(T, causal, q, k, v, options = {}) {
      const feeds = {
        query: new ort.Tensor("float32", q, [1, T, D]),
        key: new ort.Tensor("float32", k, [1, T, D]),
        value: new ort.Tensor("float32", v, [1, T, D]),
      };
      const candidates = {};
      for (const [variant, model] of Object.entries(variants(causal))) {
        candidates[variant] = async () => {
          if (!model.endsWith("_mask")) return runner(model, feeds);
          const mask = new Float32Array(T * T);
          for (let i = 0; i < T; ++i) mask.fill(-1e9, i * T + i + 1, (i + 1) * T);
          return runner(model, { ...feeds, mask: new ort.Tensor("float32", mask, [T, T]) });
        };
      }
      const { variant, run } = await pickFastest(engine, T, candidates, options);
      return { run, dispose() {}, ...(Object.keys(candidates).length > 1 ? { variant } : {}) };
    },
    async setupWorkload(w) {
      const model = workloads[w.kind];
      const tensor = (data, dims) => new ort.Tensor("float32", data, dims);
      let feeds;
      if (w.kind === "layer") {
        feeds = { x: tensor(w.x, [1, w.T, D_MODEL]) };
      } else if (model.startsWith("mha")) {
        feeds = {
          query: tensor(w.q, [1, 1, D_MODEL]),
          key: tensor(w.k, [1, w.N, D_MODEL]),
          value: tensor(w.v, [1, w.N, D_MODEL]),
        };
      } else {
        // the cache head-major: key_t [1, 8, 64, N], value [1, 8, N, 64]
        const keyT = new Float32Array(w.k.length),
          value = new Float32Array(w.v.length);
        for (let j = 0; j < w.N; ++j) {
          for (let h = 0; h < HEADS; ++h) {
            for (let c = 0; c < D; ++c) {
              keyT[(h * D + c) * w.N + j] = w.k[j * D_MODEL + h * D + c];
              value[(h * w.N + j) * D + c] = w.v[j * D_MODEL + h * D + c];
            }
          }
        }
        feeds = {
          query: tensor(w.q, [1, HEADS, 1, D]),
          key_t: tensor(keyT, [1, HEADS, D, w.N]),
          value: tensor(value, [1, HEADS, w.N, D]),
        };
      }
      return { run: await runner(model, feeds), dispose() {} };
    },
  };
  return engine;
}

const ortNodeOptions = () => ({
  executionProviders: ["cpu"],
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  executionMode: "sequential",
  graphOptimizationLevel: "all",
});
const loadOrtNode = async () => need("onnxruntime-node");

/** onnxruntime-web's session options: its wasm execution provider, every graph optimisation. */
export const ortWebOptions = () => ({
  executionProviders: ["wasm"],
  executionMode: "sequential",
  graphOptimizationLevel: "all",
});
/** onnxruntime-web in Node: its wasm execution provider, one thread, SIMD128. */
export async function loadOrtWeb() {
  // Node resolves onnxruntime-web to its Node build (ort.node.min.*), which runs the
  // wasm execution provider with its own copy of onnxruntime-common.
  const ort = await import("onnxruntime-web").catch((err) => {
    throw hint(err);
  });
  ort.env.wasm.numThreads = 1; // no worker threads: one core, like every engine here
  ort.env.wasm.simd = true; // fixed-width SIMD128 (the only wasm binary 1.30 ships)
  return ort;
}

/** How onnxruntime-web (`ort`, from loadOrtWeb) runs: {version, kernel, how}. */
export const ortWebInfo = async (ort) => {
  const file = "onnxruntime-web/dist/ort-wasm-simd-threaded.wasm";
  return {
    version: packageVersion("onnxruntime-web"),
    kernel:
      `ort-wasm-simd-threaded.wasm (MLAS wasm SIMD128 kernels), env.wasm.simd = ${ort.env.wasm.simd}, ` +
      `numThreads = ${ort.env.wasm.numThreads}; it ${validates(file) ? "validates" : "does not validate"} in Node's V8 without relaxed SIMD`,
    how: "ort.env.wasm; the binary checked with WebAssembly.validate",
  };
};

// --- tfjs-backend-wasm ------------------------------------------------------------
function tfjsEngine() {
  let tf = null;
  return {
    name: "tfjs-backend-wasm",
    platform: "wasm",
    maxT: 8192,
    async load() {
      if (tf) return;
      tf = need("@tensorflow/tfjs-core");
      const wasm = need("@tensorflow/tfjs-backend-wasm");
      await useTfjsWasm(tf, wasm.setThreadsCount);
      if (!(await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT"))) throw new Error("tfjs: no SIMD");
    },
    async info() {
      const simd = await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT");
      const threads = await tf.env().getAsync("WASM_HAS_MULTITHREAD_SUPPORT");
      const file = "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm";
      return {
        version: packageVersion("@tensorflow/tfjs-backend-wasm"),
        kernel:
          `${simd ? "tfjs-backend-wasm-simd.wasm" : "tfjs-backend-wasm.wasm"} (XNNPACK kernels, ` +
          `SIMD ${simd}, threads ${threads}, ${tf.backend().numThreads?.() ?? 1} thread)` +
          (simd
            ? `; it ${validates(file) ? "validates" : "does not validate"} in Node's V8 without relaxed SIMD`
            : ""),
        how: "tf.env() flags WASM_HAS_SIMD_SUPPORT / WASM_HAS_MULTITHREAD_SUPPORT; the binary checked with WebAssembly.validate",
      };
    },
    wasmMemoryBytes() {
      return tf.backend().wasm?.HEAPU8?.length;
    },
    async setup(T, causal, q, k, v, options = {}) {
      const Q = tf.tensor2d(q, [T, D]),
        K = tf.tensor2d(k, [T, D]),
        V = tf.tensor2d(v, [T, D]);
      // 0 on and below the diagonal, -1e9 above it: built once per shape, like a model's constant.
      const band = causal
        ? tf.tidy(() => tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([T, T]), -1, 0)), -1e9))
        : null;
      const scale = 1 / Math.sqrt(D);
      const formulations = {
        "matMul(transposeB)": () => tf.matMul(tf.mul(Q, scale), K, false, true),
        "explicit transpose": () => tf.matMul(tf.mul(Q, scale), tf.transpose(K)),
      };
      const make = (scores) => async () => () => {
        const out = tf.tidy(() => {
          let s = scores();
          if (band) s = tf.add(s, band);
          return tf.matMul(tf.softmax(s), V);
        });
        const data = out.dataSync();
        out.dispose();
        return data;
      };
      const best = await pickFastest(
        this,
        T,
        Object.fromEntries(
          Object.entries(formulations).map(([variant, scores]) => [variant, make(scores)]),
        ),
        options,
      );
      return {
        run: best.run,
        variant: best.variant,
        dispose() {
          tf.dispose([Q, K, V]);
          if (band) band.dispose();
        },
      };
    },
    setupWorkload(w) {
      const scale = 1 / Math.sqrt(D);
      // [rows, 512] -> [8, rows, 64], and back.
      const split = (x) => tf.transpose(tf.reshape(x, [-1, HEADS, D]), [1, 0, 2]);
      const merge = (x) => tf.reshape(tf.transpose(x, [1, 0, 2]), [-1, D_MODEL]);
      const heads = (q, k, v) =>
        tf.matMul(tf.softmax(tf.matMul(tf.mul(q, scale), k, false, true)), v);
      let held, compute;
      if (w.kind === "layer") {
        const X = tf.tensor2d(w.x, [w.T, D_MODEL]);
        const W = Object.fromEntries(
          Object.entries(w.weights).map(([k, data]) => [k, tf.tensor2d(data, [D_MODEL, D_MODEL])]),
        );
        held = [X, ...Object.values(W)];
        compute = () =>
          tf.matMul(
            merge(
              heads(
                split(tf.matMul(X, W.W_Q)),
                split(tf.matMul(X, W.W_K)),
                split(tf.matMul(X, W.W_V)),
              ),
            ),
            W.W_O,
          );
      } else {
        const q = tf.tensor3d(w.q, [HEADS, 1, D]);
        const [K, V] = tf.tidy(() => [
          split(tf.tensor2d(w.k, [w.N, D_MODEL])),
          split(tf.tensor2d(w.v, [w.N, D_MODEL])),
        ]);
        held = [q, K, V];
        compute = () => heads(q, K, V); // [8, 1, 64]: the order of [1, 512]
      }
      return {
        run() {
          const out = tf.tidy(compute);
          const data = out.dataSync();
          out.dispose();
          return data;
        },
        dispose: () => tf.dispose(held),
      };
    },
  };
}

export function peerEngines() {
  const mha = (causal) => ({ "MultiHeadAttention op": causal ? "mha_causal" : "mha" });
  const matmul = (causal) =>
    causal
      ? { "mask made in the graph": "matmul_causal", "mask as an input": "matmul_causal_mask" }
      : { "plain graph": "matmul" };
  // onnxruntime-node's CPU provider runs MLAS, which picks its x86 kernels
  // (SSE, AVX, FMA3/AVX2, AVX-512F) from CPUID and XGETBV when the library
  // loads, with no environment variable to force one; the choice is not
  // exposed through the API. onnxruntime-web ships one SIMD128 binary.
  const ortNodeInfo = async () => {
    return {
      version: packageVersion("onnxruntime-node"),
      kernel:
        "MLAS CPU kernels chosen at load from CPUID/XGETBV (not exposed; on a CPU with AVX-512F its AVX-512F SGEMM)",
      how: "onnxruntime's MLAS source (platform.cpp); not observable through the API",
    };
  };
  const mhaWorkloads = { layer: "mha_layer", decode: "mha_decode" };
  const matmulWorkloads = { layer: "matmul_layer", decode: "matmul_decode" };
  return [
    onnxEngine({
      name: "onnxruntime-node MultiHeadAttention",
      platform: "native",
      load: loadOrtNode,
      sessionOptions: ortNodeOptions,
      variants: mha,
      workloads: mhaWorkloads,
      info: ortNodeInfo,
    }),
    onnxEngine({
      name: "onnxruntime-node MatMul graph",
      platform: "native",
      load: loadOrtNode,
      sessionOptions: ortNodeOptions,
      variants: matmul,
      workloads: matmulWorkloads,
      info: ortNodeInfo,
    }),
    onnxEngine({
      name: "onnxruntime-web MultiHeadAttention",
      platform: "wasm",
      load: loadOrtWeb,
      sessionOptions: ortWebOptions,
      variants: mha,
      workloads: mhaWorkloads,
      info: ortWebInfo,
    }),
    onnxEngine({
      name: "onnxruntime-web MatMul graph",
      platform: "wasm",
      load: loadOrtWeb,
      sessionOptions: ortWebOptions,
      variants: matmul,
      workloads: matmulWorkloads,
      info: ortWebInfo,
    }),
    tfjsEngine(),
  ];
}
