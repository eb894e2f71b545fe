// The model layer in JS (src/js/model.js), loaded with createAttnkit({ model:
// true }): training induction to its target with the induction and
// previous-token heads it must form, the SIMD and scalar builds' loss curves,
// the threads model build's training against one thread's (bit for bit; also
// native: tests/model_test.cc), parameters() and inspect() (evaluate's weights,
// dS's rows), the weights file's round trip and corruption,
// every bad configuration's error, no leaks and no use after dispose.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";
import { createAttnkitWorker } from "attnkit/worker";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { fileURLToPath } from "node:url";
import { VARIANTS as BUILDS } from "./helpers.js";
import { MODEL_CASES, modelFixtures } from "./error-cases.js";
import { INDUCTION_MODEL, INDUCTION_TASK } from "./lib/models.js";

// The SIMD and scalar model builds.
const VARIANTS = BUILDS.map((v) => ({ ...v, options: { ...v.options, model: true } }));
const SIMD_MODEL = { simd: true, model: true };

// The settings of docs/model.md ("Settings that train").
const TASK = INDUCTION_TASK;
const CONFIG = INDUCTION_MODEL;
const ADAM = { learningRate: 1e-2, warmupSteps: 50 };
const MODEL_SEED = 1;
const DATA_SEED = 1234;
const EVAL_SEED = 99;
const BATCH = 32;
const EVAL_BATCH = 256;
const NATIVE_LOSSES = fileURLToPath(
  new URL("../../build/native/attnkit_model_losses", import.meta.url),
);
// Relative difference of each of the first 50 losses, native (FMA) against wasm.
const NATIVE_TOLERANCE = 1e-5;

/** Trains `steps` steps (or until evaluate reaches `target`); the losses, steps and last accuracy. */
function train(attn, { steps, target, evalEvery = 25 }) {
  const model = attn.createModel(CONFIG, { seed: MODEL_SEED, task: TASK });
  const trainer = attn.createTrainer(model, ADAM);
  const data = attn.createTaskGenerator(TASK, { seed: DATA_SEED });
  const held = attn.makeBatch(TASK, { batch: EVAL_BATCH, seed: EVAL_SEED });
  const losses = [];
  let accuracy = 0;
  for (let s = 1; s <= steps; ++s) {
    losses.push(trainer.step(data.next(BATCH)).loss);
    if (target !== undefined && s % evalEvery === 0) {
      accuracy = model.evaluate(held).accuracy;
      if (accuracy >= target) break;
    }
  }
  data.dispose();
  return { model, trainer, held, losses, accuracy };
}

/** Mean weight of each head of `w` ([B, H, T, T]) on the column pick(b, t) gives (skipped if < 0). */
function headScores(w, pick) {
  const [B, H, T] = w.shape;
  const scores = [];
  for (let h = 0; h < H; ++h) {
    let sum = 0,
      n = 0;
    for (let b = 0; b < B; ++b) {
      for (let t = 0; t < T; ++t) {
        const j = pick(b, t);
        if (j < 0) continue;
        sum += w.data[((b * H + h) * T + t) * T + j];
        ++n;
      }
    }
    scores.push(sum / n);
  }
  return scores;
}

describe("model: induction trains to 90% with an induction head (simd build)", () => {
  it("reaches >= 90% on the repeat; a layer-2 induction head and a layer-1 previous-token head", async () => {
    const attn = await createAttnkit(SIMD_MODEL);
    const start = performance.now();
    const { model, trainer, held, losses, accuracy } = train(attn, { steps: 1500, target: 0.9 });
    const ms = performance.now() - start;
    console.log(
      `# induction: ${accuracy.toFixed(3)} after ${losses.length} steps in ${ms.toFixed(0)} ms ` +
        `(${(ms / losses.length).toFixed(1)} ms per step incl. evaluation)`,
    );
    assert.ok(accuracy >= 0.9, `accuracy ${accuracy} after ${losses.length} steps`);
    assert.ok(losses.at(-1) < losses[0] / 3, `loss ${losses[0]} -> ${losses.at(-1)}`);

    const metrics = model.evaluate(held);
    assert.equal(metrics.accuracy, accuracy);
    const { tokens, targets, seqLen: T } = held;
    // Layer 2 (index 1): weight on the token after the previous occurrence of
    // the current token, at the scored positions.
    const induction = headScores(model.attentionWeights(1), (b, t) => {
      if (targets[b * T + t] < 0) return -1;
      for (let j = t - 1; j >= 0; --j) if (tokens[b * T + j] === tokens[b * T + t]) return j + 1;
      return -1;
    });
    // Layer 1 (index 0): weight on the previous token.
    const previous = headScores(model.attentionWeights(0), (b, t) => t - 1);
    console.log(`# induction scores (layer 2) ${induction}, previous-token (layer 1) ${previous}`);
    assert.ok(Math.max(...induction) >= 0.5, `induction scores ${induction}`);
    assert.ok(Math.max(...previous) >= 0.5, `previous-token scores ${previous}`);
    // Every head's weights are rows of a causal softmax.
    const w = model.attentionWeights(1);
    assert.deepEqual(w.shape, [EVAL_BATCH, 2, T, T]);
    for (let r = 0; r < 4 * T; ++r) {
      const row = w.data.subarray(r * T, (r + 1) * T);
      assert.ok(Math.abs(row.reduce((a, b) => a + b) - 1) < 1e-4, `row ${r} sums to 1`);
      for (let j = (r % T) + 1; j < T; ++j) assert.equal(row[j], 0, `row ${r} is causal`);
    }
    trainer.dispose();
    model.dispose();
  });
});

describe("model: determinism and builds", () => {
  it("the model builds load with { model: true }; the default builds throw saying so", async () => {
    const withModel = await createAttnkit(SIMD_MODEL);
    const plain = await createAttnkit({ simd: true });
    assert.notEqual(withModel, plain);
    assert.equal(withModel.model, true);
    assert.equal(plain.model, false);
    assert.equal(await createAttnkit({ model: true, simd: true }), withModel, "one instance");
    assert.equal(await createAttnkit({ model: false, simd: true }), plain);
    // A superset: the attention functions give the default build's numbers.
    const X = [
      [1, 2],
      [3, -1],
    ];
    assert.deepEqual(
      withModel.attention(X, X, X, { causal: true }),
      plain.attention(X, X, X, { causal: true }),
    );
    for (const name of [
      "createModel",
      "loadModel",
      "createTrainer",
      "createTaskGenerator",
      "makeBatch",
      "taskSeqLen",
      "taskMinVocab",
    ]) {
      assert.equal(typeof plain[name], "function", name);
      assert.throws(
        () => plain[name](CONFIG),
        (e) =>
          e instanceof AttnkitError &&
          e.code === "invalid_argument" &&
          e.parameter === name &&
          e.message.includes("createAttnkit({ model: true })"),
        name,
      );
    }
    await assert.rejects(
      createAttnkit({ model: "yes" }),
      (e) => e instanceof AttnkitTypeError && e.parameter === "options.model",
    );
  });

  it("the threads model build ({ model: true, threads: 2 }) trains as one thread, bit for bit", async () => {
    const one = await createAttnkit({ model: true });
    const two = await createAttnkit({ model: true, threads: 2 });
    assert.equal(two.model, true);
    assert.equal(two.threads, Math.min(2, availableParallelism()));
    // Large enough that every call of the step splits over the pool (the core's cut-off,
    // kPoolMinMultiplyAdds in src/core/internal.h, is far below 8 x 4 heads x 256^2 x 64).
    const config = { vocabSize: 32, maxSeqLen: 256, dModel: 128, numLayers: 1, numHeads: 4 };
    const rng = (seed) => () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % 32;
    const next = rng(7);
    const tokens = Int32Array.from({ length: 8 * 256 }, next);
    const batch = {
      batch: 8,
      seqLen: 256,
      tokens,
      targets: tokens.map((t, i) => tokens[i + 1] ?? -1),
    };
    const losses = (attn) => {
      const model = attn.createModel(config, { seed: MODEL_SEED });
      const trainer = attn.createTrainer(model, ADAM);
      const out = [0, 1, 2].map(() => trainer.step(batch).loss);
      const weights = model.exportWeights();
      trainer.dispose();
      model.dispose();
      return { out, weights };
    };
    const a = losses(one),
      b = losses(two);
    assert.deepEqual(b.out, a.out);
    assert.deepEqual(b.weights, a.weights);
    two.dispose();
    // attnkit/worker loads the same build with the same options.
    const w = await createAttnkitWorker({ model: true, threads: 2 });
    try {
      assert.equal(w.threads, Math.min(2, availableParallelism()));
      const trainer = await w.createTrainer(
        await w.createModel(config, { seed: MODEL_SEED }),
        ADAM,
      );
      assert.equal((await trainer.step(batch)).loss, a.out[0]);
    } finally {
      await w.dispose();
    }
  });

  it("the first 50 losses agree with the scalar build's and the native library's", async () => {
    // The wasm builds round every product (no FMA) but sum in different
    // orders; the native library fuses multiply-adds: the curves drift apart
    // by rounding, not bit for bit.
    const [simd, scalar] = await Promise.all(VARIANTS.map((v) => createAttnkit(v.options)));
    const a = train(simd, { steps: 50 }),
      b = train(scalar, { steps: 50 });
    const worst = (x, y) => Math.max(...x.map((l, i) => Math.abs(l - y[i]) / l));
    const wasm = worst(a.losses, b.losses);
    console.log(`# simd vs scalar: worst relative loss difference ${wasm.toExponential(2)}`);
    assert.ok(wasm <= 1e-5, `simd vs scalar: worst relative difference ${wasm}`);
    assert.ok(a.losses[49] < a.losses[0], "the loss falls");
    // examples/model_losses.cc, built by scripts/build.sh native.
    if (existsSync(NATIVE_LOSSES)) {
      const out = execFileSync(NATIVE_LOSSES, ["50"], { encoding: "utf8" });
      const native = out.trim().split("\n").map(Number);
      assert.equal(native.length, 50);
      const worstNative = worst(a.losses, native);
      console.log(
        `# simd vs native: worst relative loss difference ${worstNative.toExponential(2)}`,
      );
      assert.ok(
        worstNative <= NATIVE_TOLERANCE,
        `native: worst relative difference ${worstNative}`,
      );
    } else {
      console.log(`# ${NATIVE_LOSSES} not built: compared with the scalar build only`);
    }
    for (const r of [a, b]) {
      r.trainer.dispose();
      r.model.dispose();
    }
  });
});

describe("model: examples/train.mjs", () => {
  it("trains to 90% and shows a previous-token head in layer 1, an induction head in layer 2", () => {
    const root = fileURLToPath(new URL("../../", import.meta.url));
    const r = spawnSync(process.execPath, ["examples/train.mjs"], { cwd: root, encoding: "utf8" });
    assert.equal(r.status, 0, `examples/train.mjs exited with ${r.status}: ${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /^reached \d+\.\d% after \d+ steps$/m);
    const weight = (layer, kind) =>
      Math.max(
        ...[...r.stdout.matchAll(new RegExp(`^layer ${layer} head \\d+: .*`, "gm"))].map((m) =>
          Number(m[0].match(new RegExp(`${kind} weight ([\\d.]+)`))[1]),
        ),
      );
    assert.ok(weight(1, "previous-token") >= 0.5, r.stdout);
    assert.ok(weight(2, "induction") >= 0.5, r.stdout);
  });
});

describe("model: in a worker", () => {
  it("trains in a worker thread and posts every head's weights back", async () => {
    // What a page's Web Worker does: no DOM, only the package and messages.
    const code = `
      const { parentPort, workerData } = require("node:worker_threads");
      import("attnkit").then(async ({ createAttnkit }) => {
        const attn = await createAttnkit({ simd: true, model: true });
        const { task, config } = workerData;
        const model = attn.createModel(config, { seed: 1, task });
        const trainer = attn.createTrainer(model, { learningRate: 1e-2, warmupSteps: 50 });
        const data = attn.createTaskGenerator(task, { seed: 1234 });
        const losses = [];
        for (let s = 0; s < 20; ++s) losses.push(trainer.step(data.next(32)).loss);
        const maps = [0, 1].map((l) => model.attentionWeights(l));
        parentPort.postMessage({ losses, maps }, maps.map((m) => m.data.buffer));
        for (const x of [data, trainer, model]) x.dispose();
      });`;
    const worker = new Worker(code, { eval: true, workerData: { task: TASK, config: CONFIG } });
    const message = await new Promise((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    await worker.terminate();
    const attn = await createAttnkit(SIMD_MODEL);
    const here = train(attn, { steps: 20 });
    assert.deepEqual(message.losses, here.losses, "the same losses as on the main thread");
    for (const l of [0, 1]) {
      assert.deepEqual(message.maps[l].shape, [BATCH, 2, 24, 24]);
      assert.deepEqual(message.maps[l].data, here.model.attentionWeights(l).data);
    }
    here.trainer.dispose();
    here.model.dispose();
  });
});

for (const variant of VARIANTS) {
  describe(`model (${variant.name} build)`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    it("exports and loads weights: the same bytes and the same evaluation", () => {
      const { model, trainer, held } = train(attn, { steps: 5 });
      const bytes = model.exportWeights();
      assert.ok(bytes instanceof Uint8Array);
      // Magic, version, 10 config words, an empty vocabulary's length, the
      // trained steps, the parameter count, the parameters, the hash
      // (docs/model.md, version 4).
      assert.equal(bytes.length, 64 + 4 * model.parameterCount + 4);
      assert.equal(new TextDecoder().decode(bytes.subarray(0, 8)), "ATKMODEL");
      assert.equal(new DataView(bytes.buffer).getUint32(56, true), 5);
      const loaded = attn.loadModel(bytes);
      // The steps come with the weights; a new trainer counts on from them.
      assert.equal(model.trainedSteps, 5);
      assert.equal(loaded.trainedSteps, 5);
      assert.deepEqual(loaded.config, model.config);
      assert.equal(loaded.parameterCount, model.parameterCount);
      assert.deepEqual(loaded.exportWeights(), bytes);
      assert.deepEqual(loaded.evaluate(held), model.evaluate(held));
      assert.deepEqual(loaded.attentionWeights(1), model.attentionWeights(1));
      trainer.dispose();
      model.dispose();
      loaded.dispose();
    });

    it("names the parameter of every bad weights file, configuration, option and batch", async () => {
      // The bad inputs: error-cases.js (worker-parity.test.js runs them through the worker).
      const held = await modelFixtures(attn);
      for (const [label, fn, { parameter, message, type }] of MODEL_CASES) {
        await assert.rejects(
          async () => fn(attn, held),
          (e) => {
            assert.ok(e instanceof (type ? AttnkitTypeError : AttnkitError), `${label}: ${e}`);
            if (parameter !== undefined) assert.equal(e.parameter, parameter, label);
            if (message !== undefined) assert.match(e.message, message, label);
            return true;
          },
          label,
        );
      }
      held.model.dispose();
      assert.equal(attn.taskSeqLen(TASK), 24);
      assert.equal(attn.taskMinVocab(TASK), 10);
      assert.equal(attn.taskSeqLen({ kind: "majority", length: 9, vocabSize: 5 }), 10);

      const model = attn.createModel(CONFIG, { seed: 1 });
      // attentionWeights before any forward pass, and of a layer past the last:
      // the JS call's words and the layer range, whichever comes first.
      assert.throws(
        () => model.attentionWeights(9),
        (e) =>
          e.parameter === "layer" &&
          e.message === "layer: expected a layer index 0 .. 1 (numLayers - 1), got 9",
      );
      assert.throws(
        () => model.attentionWeights(0),
        (e) =>
          e.parameter === "model" &&
          /^model: expected a forward pass first \(evaluate, inspect, a trainer's step or a dataset's validationLoss\), got none$/.test(
            e.message,
          ),
      );
      model.dispose();
    });

    it("frees everything, also after errors; a disposed object refuses every call", () => {
      const round = () => {
        const model = attn.createModel(CONFIG, { seed: 2, task: TASK });
        const trainer = attn.createTrainer(model, ADAM);
        const gen = attn.createTaskGenerator(TASK, { seed: 5 });
        for (let i = 0; i < 3; ++i) trainer.step(gen.next(4));
        model.attentionWeights(0);
        attn.loadModel(model.exportWeights()).dispose();
        for (const f of [
          () => attn.createModel({ ...CONFIG, numKvHeads: 3 }),
          () => attn.createModel(CONFIG, { task: { ...TASK, vocabSize: 9 } }),
          () => attn.loadModel(new Uint8Array(100)),
          () => attn.createTrainer(model, { learningRate: -1 }),
          () => trainer.step({ ...gen.next(2), seqLen: 30 }),
          () => attn.createTaskGenerator({ ...TASK, vocabSize: 3 }),
        ]) {
          assert.throws(f, AttnkitError);
        }
        gen.dispose();
        trainer.dispose();
        model.dispose();
      };
      round();
      const heap0 = attn.heapBytesInUse();
      for (let i = 0; i < 20; ++i) round();
      const heap1 = attn.heapBytesInUse();
      assert.ok(heap1 <= heap0 + 4096, `heap ${heap0} -> ${heap1}`);

      const model = attn.createModel(CONFIG, { seed: 2 });
      const trainer = attn.createTrainer(model);
      const gen = attn.createTaskGenerator(TASK);
      const batch = gen.next(2);
      gen.dispose();
      assert.throws(
        () => gen.next(2),
        (e) => e.code === "disposed" && e.parameter === "generator",
      );
      model.dispose();
      model.dispose(); // twice is harmless
      const disposed = (e) => e instanceof AttnkitError && e.code === "disposed";
      assert.throws(
        () => model.evaluate(batch),
        (e) => disposed(e) && e.parameter === "model",
      );
      assert.throws(() => model.exportWeights(), disposed);
      assert.throws(() => model.attentionWeights(0), disposed);
      assert.throws(
        () => trainer.step(batch),
        (e) => disposed(e) && e.parameter === "trainer.model",
      );
      assert.throws(
        () => attn.createTrainer(model),
        (e) => disposed(e) && e.parameter === "model",
      );
      trainer.dispose();
      assert.throws(
        () => trainer.steps,
        (e) => disposed(e) && e.parameter === "trainer",
      );
    });
  });

  describe(`model (${variant.name} build): parameters() and inspect()`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    it("parameters(): JS-owned copies of every tensor, in the weights file's order", () => {
      for (const layerNorm of [false, true]) {
        const config = { ...CONFIG, layerNorm, numKvHeads: 1 };
        const model = attn.createModel(config, { seed: 4 });
        const p = model.parameters();
        const { vocabSize: V, maxSeqLen: P, dModel: d, dK, numHeads: h } = model.config;
        const shape = (m) => [m.rows, m.cols];
        assert.deepEqual(shape(p.tokenEmbedding), [V, d]);
        assert.deepEqual(shape(p.positionEmbedding), [P, d]);
        assert.deepEqual(shape(p.unembedding), [d, V]);
        assert.equal(p.layers.length, 2);
        const order = [p.tokenEmbedding, p.positionEmbedding];
        for (const l of p.layers) {
          assert.deepEqual(shape(l.W_Q), [d, h * dK]);
          assert.deepEqual(shape(l.W_K), [d, dK]);
          assert.deepEqual(shape(l.W_V), [d, dK]);
          assert.deepEqual(shape(l.W_O), [h * dK, d]);
          assert.equal("lnGain" in l, layerNorm);
          if (layerNorm) {
            assert.deepEqual(shape(l.lnGain), [1, d]);
            assert.deepEqual(shape(l.lnBias), [1, d]);
            order.push(l.lnGain, l.lnBias);
          }
          order.push(l.W_Q, l.W_K, l.W_V, l.W_O);
        }
        assert.equal("finalGain" in p, layerNorm);
        if (layerNorm) order.push(p.finalGain, p.finalBias);
        order.push(p.unembedding);
        // The weights file's floats (after its 64-byte header: no vocabulary; before the hash).
        const bytes = model.exportWeights();
        const floats = new Float32Array(bytes.slice(64, bytes.length - 4).buffer);
        const joined = new Float32Array(model.parameterCount);
        let at = 0;
        for (const m of order) {
          assert.ok(m.data instanceof Float32Array);
          joined.set(m.data, at);
          at += m.data.length;
        }
        assert.equal(at, model.parameterCount);
        assert.deepEqual(joined, floats);
        // Copies: changing one changes nothing in the model; a loaded model gives the same.
        const saved = p.unembedding.data[0];
        p.unembedding.data[0] = saved + 1;
        assert.deepEqual(model.exportWeights(), bytes);
        const loaded = attn.loadModel(bytes);
        const again = loaded.parameters();
        p.unembedding.data[0] = saved;
        assert.deepEqual(again, p);
        loaded.dispose();
        model.dispose();
      }
    });

    it("inspect(): evaluate's weights, dS rows sum to 0 and are 0 above the diagonal", () => {
      const { model, trainer } = train(attn, { steps: 30 });
      trainer.dispose();
      const sample = attn.makeBatch(TASK, { batch: 1, seed: 5 });
      const before = model.exportWeights();
      const ins = model.inspect(sample.tokens, Array.from(sample.targets));
      assert.deepEqual(model.exportWeights(), before, "the weights do not change");
      const T = sample.seqLen;
      const { numHeads: h, numKvHeads: g, dK, dModel: d, vocabSize: V } = model.config;
      assert.deepEqual(ins.tokens, sample.tokens);
      assert.deepEqual([ins.logits.rows, ins.logits.cols], [T, V]);
      for (let t = 0; t < T; ++t) {
        const row = ins.logits.data.subarray(t * V, (t + 1) * V);
        assert.equal(ins.predictions[t], row.indexOf(Math.max(...row)), `prediction ${t}`);
      }
      const metrics = model.evaluate(sample);
      assert.equal(ins.loss, metrics.loss);
      assert.equal(ins.accuracy, metrics.accuracy);
      const params = model.parameters();
      const scale = 1 / Math.sqrt(dK);
      let nonzero = 0;
      ins.layers.forEach((layer, l) => {
        assert.deepEqual([layer.input.rows, layer.input.cols], [T, d]);
        assert.deepEqual(layer.Q.shape, [h, T, dK]);
        assert.deepEqual(layer.K.shape, [g, T, dK]);
        assert.deepEqual(layer.V.shape, [g, T, dK]);
        assert.deepEqual(layer.weights.shape, [h, T, T]);
        assert.deepEqual(layer.dScores.shape, [h, T, T]);
        const w = model.attentionWeights(l);
        assert.deepEqual(w.shape, [1, h, T, T]);
        assert.deepEqual(layer.weights.data, w.data, `layer ${l}: the weights of evaluate`);
        // Q = input W_Q (head 1, query T - 1), and the weights = causal softmax(scale Q K^T).
        const { W_Q } = params.layers[l];
        for (let k = 0; k < dK; ++k) {
          let q = 0;
          for (let r = 0; r < d; ++r)
            q += layer.input.data[(T - 1) * d + r] * W_Q.data[r * h * dK + dK + k];
          const got = layer.Q.data[(T + T - 1) * dK + k];
          assert.ok(Math.abs(got - q) < 1e-4 * (1 + Math.abs(q)), `Q ${got} vs ${q}`);
        }
        for (let head = 0; head < h; ++head) {
          const kv = Math.floor(head / (h / g));
          for (let i = 0; i < T; ++i) {
            const s = [];
            for (let j = 0; j <= i; ++j) {
              let dot = 0;
              for (let k = 0; k < dK; ++k)
                dot += layer.Q.data[(head * T + i) * dK + k] * layer.K.data[(kv * T + j) * dK + k];
              s.push(dot * scale);
            }
            const top = Math.max(...s);
            const e = s.map((x) => Math.exp(x - top));
            const sum = e.reduce((a, b) => a + b);
            const row = layer.weights.data.subarray((head * T + i) * T, (head * T + i + 1) * T);
            const dRow = layer.dScores.data.subarray((head * T + i) * T, (head * T + i + 1) * T);
            let dSum = 0,
              dAbs = 0;
            for (let j = 0; j < T; ++j) {
              if (j > i) {
                assert.equal(row[j], 0, "weights: causal");
                assert.equal(dRow[j], 0, "dScores: exactly 0 above the diagonal");
                continue;
              }
              assert.ok(Math.abs(row[j] - e[j] / sum) < 1e-5, `weights ${l} ${head} ${i} ${j}`);
              dSum += dRow[j];
              dAbs += Math.abs(dRow[j]);
              if (dRow[j] !== 0) ++nonzero;
            }
            // Softmax's Jacobian: each row of dS sums to 0 over the keys it sees.
            assert.ok(Math.abs(dSum) <= 1e-6 + 1e-4 * dAbs, `dS row ${l} ${head} ${i}: ${dSum}`);
          }
        }
      });
      assert.ok(nonzero > T, "dScores is not all zero");
      // Without targets: no loss and no dScores.
      const plain = model.inspect(sample.tokens);
      assert.equal(plain.loss, undefined);
      assert.equal(plain.accuracy, undefined);
      assert.equal(plain.layers[0].dScores, undefined);
      assert.deepEqual(plain.layers[1].weights, ins.layers[1].weights);
      assert.deepEqual(plain.logits, ins.logits);
      model.dispose();
    });
  });

  describe(`model (${variant.name} build): inspect() recomputed, its errors, and the trainer`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    it("the default module recomputes inspect()'s weights from input and parameters()", async () => {
      // What the page's steps view does with a trained layer: one head's columns
      // of W_Q, W_K, W_V, attention of the layer's input through trace().
      const plain = await createAttnkit({ simd: variant.options.simd });
      assert.equal(plain.model, false);
      for (const scaleBySqrtDk of [true, false]) {
        const model = attn.createModel(
          { ...CONFIG, numHeads: 4, numKvHeads: 2, scaleBySqrtDk },
          { seed: 6 },
        );
        const sample = attn.makeBatch(TASK, { batch: 1, seed: 8 });
        const ins = model.inspect(sample.tokens, sample.targets);
        const params = model.parameters();
        const { numHeads: h, numKvHeads: g, dK } = model.config;
        const T = sample.seqLen;
        const columns = (m, from) => ({
          rows: m.rows,
          cols: dK,
          data: Float32Array.from({ length: m.rows * dK }, (_, i) => {
            return m.data[Math.floor(i / dK) * m.cols + from + (i % dK)];
          }),
        });
        ins.layers.forEach((layer, l) => {
          const { W_Q, W_K, W_V } = params.layers[l];
          for (let head = 0; head < h; ++head) {
            const kv = Math.floor(head / (h / g));
            const weights = {
              W_Q: columns(W_Q, head * dK),
              W_K: columns(W_K, kv * dK),
              W_V: columns(W_V, kv * dK),
            };
            const trace = plain.trace(layer.input, weights, {
              causal: true,
              ...(scaleBySqrtDk ? {} : { scale: 1 }),
            });
            const want = layer.weights.data.subarray(head * T * T, (head + 1) * T * T);
            for (let i = 0; i < T * T; ++i) {
              assert.ok(
                Math.abs(trace.weights.data[i] - want[i]) <= 1e-5,
                `layer ${l} head ${head} [${Math.floor(i / T)}, ${i % T}]: ` +
                  `${trace.weights.data[i]} vs ${want[i]}`,
              );
            }
            const Q = layer.Q.data.subarray(head * T * dK, (head + 1) * T * dK);
            for (let i = 0; i < T * dK; ++i) {
              assert.ok(Math.abs(trace.Q.data[i] - Q[i]) <= 1e-5 * (1 + Math.abs(Q[i])));
            }
          }
        });
        model.dispose();
      }
    });

    it("inspect(): errors name tokens and targets; nothing leaks after them", () => {
      const model = attn.createModel(CONFIG, { seed: 1 });
      const sample = attn.makeBatch(TASK, { batch: 1, seed: 2 });
      const bad = (tokens, targets, parameter, message, code = "invalid_argument") =>
        assert.throws(
          () => model.inspect(tokens, targets),
          (e) =>
            e instanceof AttnkitError &&
            e.parameter === parameter &&
            e.code === code &&
            message.test(e.message),
          `${parameter} ${message}`,
        );
      const round = () => {
        bad(
          new Int32Array(25).fill(1),
          undefined,
          "tokens",
          /^tokens: expected 1 \.\. 24 tokens.*, got 25$/,
        );
        bad([], undefined, "tokens", /got 0$/);
        bad([1, 24, 2], undefined, "tokens", /^tokens: entry 1 is 24, expected 0 \.\. 23$/);
        bad(
          sample.tokens,
          sample.targets.subarray(1),
          "targets",
          /^targets: expected 24 entries \(one per token, -1 = not scored\), got 23$/,
          "shape_mismatch",
        );
        bad([1, 2], [-1, 99], "targets", /entry 1 is 99/);
        assert.throws(
          () => model.inspect("1 2 3"),
          (e) => e instanceof AttnkitTypeError && e.parameter === "tokens",
        );
        assert.throws(
          () => model.inspect([1, 2], [0.5, 1]),
          (e) => e instanceof AttnkitTypeError && e.parameter === "targets",
        );
        model.inspect(sample.tokens, sample.targets);
        model.parameters();
      };
      round();
      const heap0 = attn.heapBytesInUse(),
        memory0 = attn.memoryBytes();
      for (let i = 0; i < 20; ++i) round();
      assert.ok(attn.heapBytesInUse() <= heap0 + 4096, `heap ${heap0} -> ${attn.heapBytesInUse()}`);
      assert.equal(attn.memoryBytes(), memory0, "the wasm memory did not grow");
      model.dispose();
      assert.throws(
        () => model.inspect([1]),
        (e) => e.code === "disposed" && e.parameter === "model",
      );
      assert.throws(
        () => model.parameters(),
        (e) => e.code === "disposed",
      );
    });

    it("a trainer counts its steps and warms the learning rate up", () => {
      const model = attn.createModel(CONFIG, { seed: 1 });
      const trainer = attn.createTrainer(model, ADAM);
      assert.deepEqual(trainer.options, {
        ...trainer.options,
        learningRate: 1e-2,
        warmupSteps: 50,
      });
      assert.equal(trainer.steps, 0);
      assert.throws(() => (model.config = {}), TypeError, "model.config is read-only");
      assert.throws(() => (model.config.dModel = 4), TypeError);
      assert.throws(() => (trainer.model = null), TypeError, "trainer.model is read-only");
      const batch = attn.makeBatch(TASK, { batch: 4, seed: 7 });
      const before = model.exportWeights();
      const m = trainer.step(batch);
      assert.equal(trainer.steps, 1);
      assert.notDeepEqual(model.exportWeights(), before);
      assert.ok(m.scored > 0 && m.correct <= m.scored && m.sequences === 4);
      assert.equal(m.accuracy, m.correct / m.scored);
      assert.ok(Math.abs(trainer.learningRate(25) - 5e-3) < 1e-9);
      assert.ok(Math.abs(trainer.learningRate(80) - 1e-2) < 1e-9);
      // The same seed gives the same batch; the generator's stream moves on.
      assert.deepEqual(attn.makeBatch(TASK, { batch: 4, seed: 7 }), batch);
      const gen = attn.createTaskGenerator(TASK, { seed: 7 });
      assert.deepEqual(gen.next(4), batch);
      assert.notDeepEqual(gen.next(4), batch);
      gen.dispose();
      trainer.dispose();
      model.dispose();
    });
  });
}
