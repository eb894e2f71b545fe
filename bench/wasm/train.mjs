// Training in Node (npm run bench): the attention-only transformer of
// docs/model.md trained by attnkit's npm package and by the same model written
// in tfjs (tfjs-core + tfjs-backend-wasm, its autograd and its Adam), one
// thread, in one process, on the SAME batches (attnkit's task generator) from
// the SAME initial weights (attnkit's, read from its weights file).
//   tasks      induction (n 8, padding 8, vocabulary 24, 2 layers, warm-up 50)
//              and copy (n 6, vocabulary 10, 1 layer, warm-up 20); d_model 32,
//              2 heads, learning rate 1e-2, batches of 32, model seed 1, data
//              seed 1234 (docs/model.md, "Settings that train")
//   attnkit    createAttnkit({ model: true }): createModel, createTrainer
//              (AdamW, betas 0.9 / 0.98, epsilon 1e-8, weight decay 0.01 on the
//              projections, global-norm clip 1, linear warm-up), trainer.step
//   tfjs       tf.variableGrads of the same forward (one-hot @ embedding: the
//              wasm backend has no UnsortedSegmentSum, the gradient of gather;
//              Q K^T by matMul(transposeB), a -1e9 causal band, softmax, @ V;
//              logSoftmax cross-entropy on the scored positions), then
//              tf.train.adam (same betas and epsilon) with what AdamW adds done
//              in tfjs ops: the warm-up (the optimizer's learningRate per step),
//              the decoupled weight decay (w *= 1 - lr * 0.01 before the update)
//              and the global-norm clip. The loss is read back every step (as
//              trainer.step returns it).
//   tfjs, Adam only  the same model with tf.train.adam's optimizer.minimize at a
//              constant learning rate 1e-2: no warm-up, decay or clip (the
//              shortest tfjs training step; its run follows its own path).
// The engines step in turns (attnkit, tfjs, tfjs Adam only, attnkit, ...) so
// that all see the same load on a shared machine. Each stops once its accuracy
// on 256 held-out sequences (seed 99, checked every 25 steps, not timed) has
// reached 90% and it has run MIN_STEPS steps, or at the step cap. Reported per
// engine: the median ms per step after the first 20 (process CPU time: Node
// runs with --single-threaded-gc, so the process's time is the engine's and
// its collections'; the wall time beside it), steps/s, steps and seconds
// (summed step times) to 90%, the first loss (against ln(vocabulary) and
// attnkit's: the same weights and batch must give the same loss), the largest
// relative difference of attnkit's and tfjs's (AdamW) first 50 losses, and the
// load average.
//
// Usage: node --expose-gc --single-threaded-gc bench/wasm/train.mjs [--quick]
//          > bench/results/train.json
//
// --threads [ROUNDS]: the GPT training step of the Language view's presets and nanoGPT's
// shape on the model build (one thread) against the threads model build with 2 threads,
// in turns round by round (ROUNDS, default 7) on the same batches: a table of the medians
// (wall ms per step), the median of the rounds' ratios t1 / t2 (the speed of two threads),
// whether the losses and weights are bit-identical, and the load average (node without
// --single-threaded-gc: the process's CPU time counts the pool's threads).
import os from "node:os";
import { performance } from "node:perf_hooks";
// The built package's Node entry (what `import "attnkit"` resolves to in Node).
import { createAttnkit } from "../../dist/attnkit.node.mjs";
import { readWeights } from "./weights.mjs";
import { loadTfjs } from "../lib/engines.mjs";
import { median } from "../lib/stats.mjs";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const BATCH = 32,
  EVAL_BATCH = 256,
  EVAL_EVERY = 25,
  SKIP = 20,
  MIN_STEPS = quick ? 100 : 300,
  TARGET = 0.9;
const MODEL_SEED = 1,
  DATA_SEED = 1234,
  EVAL_SEED = 99;
const ADAM = { learningRate: 1e-2, beta1: 0.9, beta2: 0.98, epsilon: 1e-8, weightDecay: 0.01 };
const CLIP = 1;
const SETTINGS = [
  {
    name: "induction",
    task: { kind: "induction", length: 8, padding: 8, vocabSize: 24 },
    numLayers: 2,
    warmupSteps: 50,
    maxSteps: quick ? 600 : 3000,
  },
  {
    name: "copy",
    task: { kind: "copy", length: 6, vocabSize: 10 },
    numLayers: 1,
    warmupSteps: 20,
    maxSteps: quick ? 300 : 2000,
  },
];
const ATTNKIT = "attnkit (wasm SIMD128)",
  TFJS = "tfjs-backend-wasm",
  TFJS_ADAM = "tfjs-backend-wasm, Adam only";

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

function attnkitTrainer(ak, setting) {
  const config = {
    vocabSize: setting.task.vocabSize,
    maxSeqLen: ak.taskSeqLen(setting.task),
    dModel: 32,
    numLayers: setting.numLayers,
    numHeads: 2,
  };
  const model = ak.createModel(config, { seed: MODEL_SEED, task: setting.task });
  const trainer = ak.createTrainer(model, { ...ADAM, warmupSteps: setting.warmupSteps });
  return {
    name: ATTNKIT,
    model,
    step: (batch) => trainer.step(batch).loss,
    accuracy: (held) => model.evaluate(held).accuracy,
    dispose() {
      trainer.dispose();
      model.dispose();
    },
  };
}

// The same model in tfjs, from attnkit's initial weights.
function tfjsTrainer(tf, setting, resolved, weightsFile, adamW) {
  const { weights, scaled, layerNorm } = readWeights(weightsFile);
  if (layerNorm) throw new Error("weights: this benchmark's tfjs model has no LayerNorm");
  const { vocabSize: V, dModel: D, numHeads: h, numKvHeads: g, dK } = resolved;
  if (g !== h) throw new Error("this benchmark's tfjs model has no grouped K/V heads");
  const variable = (m, name) =>
    tf.variable(
      tf.tensor2d(m.data, [m.rows, m.cols]),
      true,
      `${setting.name}.${adamW ? "adamw" : "adam"}.${name}`,
    );
  const tokenEmbedding = variable(weights.tokenEmbedding, "tokenEmbedding");
  const positionEmbedding = variable(weights.positionEmbedding, "positionEmbedding");
  const layers = weights.layers.map((l, i) => ({
    W_Q: variable(l.W_Q, `layers.${i}.W_Q`),
    W_K: variable(l.W_K, `layers.${i}.W_K`),
    W_V: variable(l.W_V, `layers.${i}.W_V`),
    W_O: variable(l.W_O, `layers.${i}.W_O`),
  }));
  const unembedding = variable(weights.unembedding, "unembedding");
  const vars = [
    tokenEmbedding,
    positionEmbedding,
    ...layers.flatMap((l) => [l.W_Q, l.W_K, l.W_V, l.W_O]),
    unembedding,
  ];
  const decays = [...layers.flatMap((l) => [l.W_Q, l.W_K, l.W_V, l.W_O]), unembedding];
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
  // logits [B*T, V] of tokens [B*T] (int32).
  const forward = (tokens, B, T) => {
    const heads = (x, W) => tf.transpose(tf.reshape(tf.matMul(x, W), [B, T, h, dK]), [0, 2, 1, 3]);
    const emb = tf.matMul(tf.oneHot(tokens, V), tokenEmbedding); // [B*T, D]
    const pos = tf.slice(positionEmbedding, [0, 0], [T, D]);
    let x = tf.reshape(tf.add(tf.reshape(emb, [B, T, D]), pos), [B * T, D]);
    for (const l of layers) {
      const q = heads(x, l.W_Q),
        k = heads(x, l.W_K),
        v = heads(x, l.W_V);
      const s = tf.add(tf.mul(tf.matMul(q, k, false, true), scale), band(T));
      const z = tf.reshape(tf.transpose(tf.matMul(tf.softmax(s), v), [0, 2, 1, 3]), [
        B * T,
        h * dK,
      ]);
      x = tf.add(x, tf.matMul(z, l.W_O));
    }
    return tf.matMul(x, unembedding);
  };
  const optimizer = tf.train.adam(ADAM.learningRate, ADAM.beta1, ADAM.beta2, ADAM.epsilon);
  let steps = 0;
  const learningRate = (t) => ADAM.learningRate * Math.min(1, t / setting.warmupSteps);
  const step = (batch) => {
    ++steps;
    const lr = adamW ? learningRate(steps) : ADAM.learningRate;
    const loss = tf.tidy(() => {
      const B = batch.batch,
        T = batch.seqLen;
      const tokens = tf.tensor1d(batch.tokens, "int32");
      // Unscored positions (target -1) weigh 0 in the mean.
      let count = 0;
      const weight = Float32Array.from(batch.targets, (t) => (t < 0 ? 0 : (++count, 1)));
      const target = Int32Array.from(batch.targets, (t) => Math.max(t, 0));
      const picked = tf.mul(
        tf.oneHot(tf.tensor1d(target, "int32"), V),
        tf.tensor2d(weight, [weight.length, 1]),
      );
      const lossOf = () => {
        const logp = tf.logSoftmax(forward(tokens, B, T));
        return tf.div(tf.neg(tf.sum(tf.mul(picked, logp))), Math.max(count, 1));
      };
      if (!adamW) return optimizer.minimize(lossOf, true, vars);
      const { value, grads } = tf.variableGrads(lossOf, vars);
      // AdamW's global-norm clip: scale = clip / max(norm, clip).
      const norm = tf.sqrt(tf.addN(vars.map((v) => tf.sum(tf.square(grads[v.name])))));
      const c = tf.div(CLIP, tf.maximum(norm, CLIP));
      const clipped = {};
      for (const v of vars) clipped[v.name] = tf.mul(grads[v.name], c);
      for (const v of decays) v.assign(tf.mul(v, 1 - lr * ADAM.weightDecay));
      optimizer.learningRate = lr;
      optimizer.applyGradients(clipped);
      return value;
    });
    const value = loss.dataSync()[0];
    loss.dispose();
    return value;
  };
  const accuracy = (held) => {
    const predictions = tf.tidy(() =>
      tf.argMax(forward(tf.tensor1d(held.tokens, "int32"), held.batch, held.seqLen), 1),
    );
    const p = predictions.dataSync();
    predictions.dispose();
    let n = 0,
      right = 0;
    for (let i = 0; i < held.targets.length; ++i) {
      if (held.targets[i] < 0) continue;
      ++n;
      if (p[i] === held.targets[i]) ++right;
    }
    return n ? right / n : 0;
  };
  return {
    name: adamW ? TFJS : TFJS_ADAM,
    step,
    accuracy,
    dispose() {
      tf.dispose(vars);
      optimizer.dispose();
      for (const b of bands.values()) b.dispose();
    },
  };
}

async function runSetting(ak, tf, setting) {
  const a = attnkitTrainer(ak, setting);
  const weights = a.model.exportWeights();
  const t = tfjsTrainer(tf, setting, a.model.config, weights, true);
  const plain = tfjsTrainer(tf, setting, a.model.config, weights, false);
  const data = ak.createTaskGenerator(setting.task, { seed: DATA_SEED });
  const held = ak.makeBatch(setting.task, { batch: EVAL_BATCH, seed: EVAL_SEED });
  const loads = [os.loadavg()[0]];
  const runs = [a, t, plain].map((e) => ({
    e,
    losses: [],
    cpu: [],
    wall: [],
    accuracy: 0,
    stepsTo90: null,
    done: false,
  }));
  for (let s = 1; s <= setting.maxSteps && runs.some((r) => !r.done); ++s) {
    const batch = data.next(BATCH);
    if (s % 50 === 0) loads.push(os.loadavg()[0]);
    for (const r of runs) {
      if (r.done) continue;
      const c0 = process.cpuUsage(),
        t0 = performance.now();
      const loss = r.e.step(batch);
      const wall = performance.now() - t0,
        c = process.cpuUsage(c0);
      if (!Number.isFinite(loss)) throw new Error(`${r.e.name}: loss ${loss} at step ${s}`);
      r.losses.push(loss);
      r.cpu.push((c.user + c.system) / 1e3);
      r.wall.push(wall);
      if (r.stepsTo90 === null && s % EVAL_EVERY === 0) {
        r.accuracy = r.e.accuracy(held);
        if (r.accuracy >= TARGET) r.stepsTo90 = s;
      }
      // Past 90%, steps go on to MIN_STEPS for the median's sake.
      if (r.stepsTo90 !== null && s >= MIN_STEPS) r.done = true;
    }
    if (s % 250 === 0)
      console.error(
        `${setting.name} step ${s}: ` +
          runs.map((r) => `${r.e.name} ${r.losses.at(-1).toFixed(4)}`).join(", "),
      );
  }
  data.dispose();
  for (const r of runs) r.e.dispose();
  const lnV = Math.log(setting.task.vocabSize);
  const [ra, rt, rp] = runs;
  const first = Math.min(50, ra.losses.length, rt.losses.length);
  let maxRel = 0;
  for (let i = 0; i < first; ++i)
    maxRel = Math.max(maxRel, Math.abs(rt.losses[i] - ra.losses[i]) / Math.abs(ra.losses[i]));
  const firstDiff = Math.max(
    ...[rt, rp].map((r) => Math.abs(r.losses[0] - ra.losses[0]) / ra.losses[0]),
  );
  // The same weights and the same batch: the first losses must agree.
  if (!(firstDiff < 1e-4))
    throw new Error(
      `${setting.name}: first losses differ: attnkit ${ra.losses[0]}, tfjs ${rt.losses[0]}, ${rp.losses[0]}`,
    );
  const engines = runs.map((r) => {
    const cpu = r.cpu.slice(SKIP),
      wall = r.wall.slice(SKIP);
    const ms = median(cpu);
    return {
      engine: r.e.name,
      steps: r.losses.length,
      msPerStep: ms,
      wallMsPerStep: median(wall),
      stepsPerSecond: 1e3 / ms,
      stepsTo90: r.stepsTo90,
      secondsTo90: r.stepsTo90 ? sum(r.cpu.slice(0, r.stepsTo90)) / 1e3 : null,
      wallSecondsTo90: r.stepsTo90 ? sum(r.wall.slice(0, r.stepsTo90)) / 1e3 : null,
      accuracy: r.accuracy,
      firstLoss: r.losses[0],
      lastLoss: r.losses.at(-1),
      firstMs: r.cpu.slice(0, SKIP).map((x) => +x.toPrecision(4)),
    };
  });
  const out = {
    task: setting.name,
    config: setting.task,
    seqLen: ak.taskSeqLen(setting.task),
    numLayers: setting.numLayers,
    warmupSteps: setting.warmupSteps,
    maxSteps: setting.maxSteps,
    lnVocab: lnV,
    firstLossRelDiff: firstDiff,
    first50LossMaxRelDiff: maxRel,
    // attnkit's speed-up over each tfjs variant; the target is judged on the smaller.
    ratio: engines[1].msPerStep / engines[0].msPerStep,
    ratioAdamOnly: engines[2].msPerStep / engines[0].msPerStep,
    engines,
    // The 1-minute load average, at the start and every 50 steps.
    loadAverage: loads.map((x) => +x.toFixed(2)),
  };
  console.error(
    `${setting.name}: ` +
      engines
        .map(
          (e) =>
            `${e.engine} ${e.msPerStep.toFixed(2)} ms/step, 90% at ${e.stepsTo90 ?? "-"} steps ` +
            `(${e.secondsTo90?.toFixed(1) ?? "-"} s), first loss ${e.firstLoss.toFixed(4)}`,
        )
        .join("; ") +
      `; ratios ${out.ratio.toFixed(2)}x, ${out.ratioAdamOnly.toFixed(2)}x; ln(V) ${lnV.toFixed(4)}; first 50 losses within ${maxRel.toExponential(1)}`,
  );
  return out;
}

async function main() {
  const ak = await createAttnkit({ model: true });
  const { tf, version } = await loadTfjs();
  const tasks = [];
  for (const setting of SETTINGS) {
    globalThis.gc?.();
    tasks.push(await runSetting(ak, tf, setting));
  }
  console.log(
    JSON.stringify(
      {
        quick,
        batch: BATCH,
        dModel: 32,
        numHeads: 2,
        adam: { ...ADAM, clipNorm: CLIP },
        evaluation: { batch: EVAL_BATCH, every: EVAL_EVERY, seed: EVAL_SEED, target: TARGET },
        engines: {
          [ATTNKIT]: { target: ak.target },
          [TFJS]: { version, threads: 1 },
          node: process.version,
        },
        tasks,
      },
      null,
      1,
    ),
  );
}

// The GPT shapes of --threads: the Language view's presets (web/src/language/protocol.ts)
// and nanoGPT's (bench/wasm/language.mjs), on a vocabulary of Moby-Dick's size.
const GPT_SHAPES = [
  { name: "small", numLayers: 2, numHeads: 4, dModel: 64, dFF: 256, seqLen: 32, batch: 16 },
  { name: "default", numLayers: 3, numHeads: 4, dModel: 96, dFF: 288, seqLen: 64, batch: 12 },
  { name: "nanogpt", numLayers: 4, numHeads: 4, dModel: 128, dFF: 512, seqLen: 64, batch: 12 },
];

async function threadsMain(rounds) {
  const one = await createAttnkit({ model: true });
  const two = await createAttnkit({ model: true, threads: 2 });
  const vocabSize = 81;
  console.log(
    `# bench/wasm/train.mjs --threads: ${one.target}, model build against the threads model ` +
      `build with ${two.threads} threads; load ${os.loadavg()[0].toFixed(2)}`,
  );
  console.log("\n| GPT step | 1 thread ms | 2 threads ms | 2 threads' speed | identical |");
  console.log("|---|---:|---:|---:|---|");
  for (const g of GPT_SHAPES) {
    const setup = (ak) => {
      const model = ak.createModel(
        {
          vocabSize,
          maxSeqLen: g.seqLen,
          dModel: g.dModel,
          numLayers: g.numLayers,
          numHeads: g.numHeads,
          dFF: g.dFF,
          layerNorm: true,
        },
        { seed: MODEL_SEED },
      );
      return { model, trainer: ak.createTrainer(model, { learningRate: 3e-3, clipNorm: 1 }) };
    };
    const runs = [setup(one), setup(two)];
    let seed = 5;
    const next = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % vocabSize;
    const steps = g.dModel >= 96 ? 4 : 16;
    const t = [[], []];
    let identical = true;
    for (let r = -1; r < rounds; r++) {
      const sums = [0, 0];
      for (let s = 0; s < steps; s++) {
        const tokens = Int32Array.from({ length: g.batch * g.seqLen }, next);
        const batch = { batch: g.batch, seqLen: g.seqLen, tokens, targets: tokens.map(next) };
        const losses = runs.map(({ trainer }, i) => {
          const t0 = performance.now();
          const loss = trainer.step(batch).loss;
          sums[i] += performance.now() - t0;
          return loss;
        });
        identical &&= Object.is(losses[0], losses[1]);
      }
      if (r >= 0) sums.forEach((x, i) => t[i].push(x / steps)); // round -1 sizes the buffers
    }
    const [w0, w1] = runs.map(({ model }) => model.exportWeights());
    identical &&= w0.length === w1.length && w0.every((b, i) => b === w1[i]);
    for (const { model, trainer } of runs) {
      trainer.dispose();
      model.dispose();
    }
    const ratio = median(t[0].map((x, i) => x / t[1][i]));
    console.log(
      `| ${g.name} (${g.numLayers} layers, d ${g.dModel}, d_ff ${g.dFF}, T ${g.seqLen}, B ${g.batch}) ` +
        `| ${median(t[0]).toFixed(2)} | ${median(t[1]).toFixed(2)} | ${ratio.toFixed(2)}x | ` +
        `${identical ? "yes" : "NO"} |`,
    );
  }
  console.log(`\nload at the end ${os.loadavg()[0].toFixed(2)}`);
  two.dispose();
}

try {
  if (args.includes("--threads")) {
    await threadsMain(Number(args[args.indexOf("--threads") + 1]) || 7);
  } else {
    await main();
  }
} catch (err) {
  console.error(`bench: ${err?.stack ?? err}`);
  process.exit(1);
}
