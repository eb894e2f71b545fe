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
// They live in bench/package.json (npm ci in bench/), never in the top-level package.
//
// Every engine is { name, platform: "native" | "wasm", maxT, load(), setup(T, causal,
// q, k, v) -> { run() -> Float32Array | Promise<Float32Array>, dispose(), variant? } }.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
// The peers' packages come from bench/package-lock.json (scripts/bench.sh runs npm ci in bench/).
const hint = (err) => new Error(`${err.message.split("\n")[0]}: run npm ci in bench/ (scripts/bench.sh does), ` +
                                "or pass --no-peers to time attnkit and plain JS only");
const need = (name) => { try { return require(name); } catch (err) { throw hint(err); } };
const D = 64;
const modelsDir = fileURLToPath(new URL("./models/", import.meta.url));

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
  let best = null, failure = null;
  for (const variant of names) {
    try {  // a formulation that fails on this shape is left out; all failing is an error
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
function onnxEngine({ name, platform, load, sessionOptions, variants }) {
  let ort = null;
  const sessions = new Map();  // model file -> InferenceSession (T is symbolic)
  const engine = {
    name,
    platform,
    maxT: 8192,
    async load() {
      for (const causal of [false, true]) {
        for (const model of Object.values(variants(causal))) {
          if (!existsSync(`${modelsDir}${model}.onnx`)) {
            throw new Error(`${modelsDir}${model}.onnx is missing: /usr/bin/python3 bench/make_models.py writes it`);
          }
        }
      }
      ort ??= await load();
    },
    async setup(T, causal, q, k, v, options = {}) {
      const feeds = {
        query: new ort.Tensor("float32", q, [1, T, D]),
        key: new ort.Tensor("float32", k, [1, T, D]),
        value: new ort.Tensor("float32", v, [1, T, D]),
      };
      const candidates = {};
      for (const [variant, model] of Object.entries(variants(causal))) {
        candidates[variant] = async () => {
          const file = `${modelsDir}${model}.onnx`;
          if (!sessions.has(file)) sessions.set(file, await ort.InferenceSession.create(file, sessionOptions()));
          const session = sessions.get(file);
          let f = feeds;
          if (model.endsWith("_mask")) {
            const mask = new Float32Array(T * T);
            for (let i = 0; i < T; ++i) mask.fill(-1e9, i * T + i + 1, (i + 1) * T);
            f = { ...feeds, mask: new ort.Tensor("float32", mask, [T, T]) };
          }
          return async () => {
            const { output } = await session.run(f);
            const data = output.data;
            output.dispose?.();
            return data;
          };
        };
      }
      const { variant, run } = await pickFastest(engine, T, candidates, options);
      return { run, dispose() {}, ...(Object.keys(candidates).length > 1 ? { variant } : {}) };
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

const ortWebOptions = () => ({
  executionProviders: ["wasm"],
  executionMode: "sequential",
  graphOptimizationLevel: "all",
});
async function loadOrtWeb() {
  // Node resolves onnxruntime-web to its Node build (ort.node.min.*), which runs the
  // wasm execution provider with its own copy of onnxruntime-common.
  const ort = await import("onnxruntime-web").catch((err) => { throw hint(err); });
  ort.env.wasm.numThreads = 1;  // no worker threads: one core, like every engine here
  ort.env.wasm.simd = true;     // fixed-width SIMD128 (the only wasm binary 1.30 ships)
  return ort;
}

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
      // The threaded build does not initialise under Node; the single-threaded SIMD
      // build is the one-core engine anyway.
      tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", false);
      wasm.setThreadsCount(1);
      if (!(await tf.setBackend("wasm"))) throw new Error("tfjs: the wasm backend did not initialise");
      await tf.ready();
      if (!(await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT"))) throw new Error("tfjs: no SIMD");
    },
    wasmMemoryBytes() {
      return tf.backend().wasm?.HEAPU8?.length;
    },
    async setup(T, causal, q, k, v, options = {}) {
      const Q = tf.tensor2d(q, [T, D]), K = tf.tensor2d(k, [T, D]), V = tf.tensor2d(v, [T, D]);
      // 0 on and below the diagonal, -1e9 above it: built once per shape, like a model's constant.
      const band = causal ? tf.tidy(() => tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([T, T]), -1, 0)), -1e9)) : null;
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
      const best = await pickFastest(this, T, Object.fromEntries(
        Object.entries(formulations).map(([variant, scores]) => [variant, make(scores)])), options);
      return {
        run: best.run,
        variant: best.variant,
        dispose() {
          tf.dispose([Q, K, V]);
          if (band) band.dispose();
        },
      };
    },
  };
}

export function peerEngines() {
  const mha = (causal) => ({ "MultiHeadAttention op": causal ? "mha_causal" : "mha" });
  const matmul = (causal) => causal
    ? { "mask made in the graph": "matmul_causal", "mask as an input": "matmul_causal_mask" }
    : { "plain graph": "matmul" };
  return [
    onnxEngine({ name: "onnxruntime-node MultiHeadAttention", platform: "native", load: loadOrtNode,
                 sessionOptions: ortNodeOptions, variants: mha }),
    onnxEngine({ name: "onnxruntime-node MatMul graph", platform: "native", load: loadOrtNode,
                 sessionOptions: ortNodeOptions, variants: matmul }),
    onnxEngine({ name: "onnxruntime-web MultiHeadAttention", platform: "wasm", load: loadOrtWeb,
                 sessionOptions: ortWebOptions, variants: mha }),
    onnxEngine({ name: "onnxruntime-web MatMul graph", platform: "wasm", load: loadOrtWeb,
                 sessionOptions: ortWebOptions, variants: matmul }),
    tfjsEngine(),
  ];
}
