// Every object the package hands out (KV cache, packed weights, model, trainer,
// task generator, text dataset, sampler, tokenizer) passed to every parameter
// that takes one of them, in the synchronous API and through the worker API:
// each wrong kind throws an AttnkitTypeError naming the parameter, the kind
// expected and the kind given, before anything reaches wasm, and the module
// then answers as before (the same attention result, a training step).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";
import { createAttnkitWorker } from "attnkit/worker";

const TEXT = "the cat sat on the mat. the dog sat on the log. ".repeat(8);
const SEQ = 8;
const W = [
  [1, 0],
  [0, 1],
];
const Q = [
  [1, 2],
  [3, 4],
  [5, 6],
];

/** Every kind of object, made by `attn` (sync or worker API; awaited either way). */
async function makeObjects(attn) {
  const dataset = await attn.createTextDataset(TEXT, { seqLen: SEQ });
  const model = await attn.createModel(
    { maxSeqLen: SEQ, dModel: 8, numHeads: 2 },
    { seed: 1, vocabulary: [...dataset.vocabulary] },
  );
  return {
    KVCache: await attn.createKVCache({ numKvHeads: 1, dK: 2, dV: 2, capacity: 4 }),
    PackedWeights: await attn.packWeights({ W_Q: W, W_K: W, W_V: W }, { numHeads: 1 }),
    Model: model,
    Trainer: await attn.createTrainer(model),
    TaskGenerator: await attn.createTaskGenerator({ kind: "copy", length: 2, vocabSize: 4 }),
    TextDataset: dataset,
    Sampler: await model.sampler("the "),
    Tokenizer: await attn.createTokenizer(TEXT),
  };
}

/**
 * Each parameter that takes one of the package's objects: its name in
 * messages, the kind it takes and a call passing `given` to it.
 */
const PARAMETERS = [
  {
    parameter: "model",
    takes: "Model",
    call: (attn, o, given) => attn.createTrainer(given),
    what: "createTrainer(model)",
  },
  {
    parameter: "model",
    takes: "Model",
    call: (attn, o, given) => o.TextDataset.validationLoss(given),
    what: "dataset.validationLoss(model)",
  },
  {
    parameter: "dataset",
    takes: "TextDataset",
    call: (attn, o, given) => attn.referenceLosses(given, TEXT),
    what: "referenceLosses(dataset, text)",
  },
  {
    parameter: "weights",
    takes: "PackedWeights",
    call: (attn, o, given) => attn.multiHeadAttention(Q, given, { numHeads: 1 }),
    what: "multiHeadAttention(X, weights)",
  },
];

/** "a Trainer", "an AsyncModel". */
const article = (kind) => `${/^[AEIOU]/.test(kind) ? "an" : "a"} ${kind}`;

/** Checks the error of passing a `given` object to `parameter`, which takes a `takes`. */
function checkError(e, { parameter, takes, what }, given) {
  const where = `${what} given ${article(given)}`;
  assert.ok(e instanceof AttnkitTypeError, `${where}: ${e?.name}: ${e?.message}`);
  assert.ok(e instanceof AttnkitError, where);
  assert.equal(e.code, "type", where);
  assert.equal(e.parameter, parameter, `${where}: ${e.message}`);
  assert.ok(e.message.startsWith(`${parameter}: expected `), `${where}: ${e.message}`);
  // The packed-weights parameter also takes plain weights: its message names those.
  const expected = takes === "PackedWeights" ? "{W_Q, W_K, W_V" : article(takes);
  assert.ok(e.message.includes(expected), `${where}: ${e.message}`);
  assert.ok(e.message.includes(`got ${article(given)}`), `${where}: ${e.message}`);
  return true;
}

/** What the module answers to a small attention call and a training step on its dataset. */
async function answers(attn, o) {
  const out = await attn.attention(Q, Q, Q, { causal: true });
  const batch = await o.TextDataset.validationBatch(0, 1);
  const loss = (await o.Model.evaluate(batch)).loss;
  return { out: Array.from(out.data), loss };
}

/** Passes every kind but the one taken to every parameter; the module answers as before. */
async function confuseAll(attn, o) {
  const before = await answers(attn, o);
  let cases = 0;
  for (const p of PARAMETERS) {
    for (const [kind, given] of Object.entries(o)) {
      if (kind === p.takes) continue;
      await assert.rejects((async () => p.call(attn, o, given))(), (e) => checkError(e, p, kind));
      assert.deepEqual(await answers(attn, o), before, `after ${p.what} given ${article(kind)}`);
      cases++;
    }
  }
  // The right kinds still work afterwards.
  const trainer = await attn.createTrainer(o.Model);
  const metrics = await trainer.step(await o.TextDataset.next(2));
  assert.ok(Number.isFinite(metrics.loss));
  await trainer.dispose();
  assert.ok(Number.isFinite(await o.TextDataset.validationLoss(o.Model)));
  const { unigram } = await attn.referenceLosses(o.TextDataset, TEXT);
  assert.ok(unigram > 0);
  const packed = await attn.multiHeadAttention(Q, o.PackedWeights, { numHeads: 1 });
  assert.deepEqual(packed.shape, [3, 2]);
  return cases;
}

describe("handles of one kind passed where another is taken", () => {
  it("the synchronous API: every wrong kind to every parameter, an AttnkitTypeError; the module unharmed", async () => {
    const attn = await createAttnkit({ model: true });
    const o = await makeObjects(attn);
    const cases = await confuseAll(attn, o);
    assert.equal(cases, PARAMETERS.length * (Object.keys(o).length - 1));
    // The user's steps of the issue: the trainer and generator that were taken
    // for a model, a dataset for a model, a sampler for a model.
    assert.throws(() => attn.createTrainer(o.Trainer), {
      message: "model: expected a Model, got a Trainer",
    });
    assert.throws(() => o.TextDataset.validationLoss(o.Sampler), {
      message: "model: expected a Model, got a Sampler",
    });
    // Where a plain object is taken (a config, a batch, weights), one of the
    // package's objects is named by its kind, not read for unknown keys.
    assert.throws(() => attn.createKVCache(o.Model), {
      message: "config: expected an object {batch?, numKvHeads, dK, dV, capacity}, got a Model",
    });
    assert.throws(() => o.Model.evaluate(o.Trainer), {
      message:
        "batch: expected an object {batch, seqLen, tokens, targets, vocabulary?}, got a Trainer",
    });
    assert.throws(() => attn.selfAttention(Q, o.Model), {
      message: "weights: expected an object {W_Q, W_K, W_V}, got a Model",
    });
    // A disposed object of the right kind is "disposed"; a copy is no object of the package.
    const spare = attn.createModel({ vocabSize: 4, maxSeqLen: 4, dModel: 4 });
    spare.dispose();
    assert.throws(() => attn.createTrainer(spare), { code: "disposed", parameter: "model" });
    assert.throws(
      () => attn.createTrainer({ ...o.Model }),
      (e) => {
        assert.ok(e instanceof AttnkitTypeError);
        assert.match(e.message, /^model: expected a Model, got an object with keys \{config/);
        return true;
      },
    );
    for (const x of Object.values(o)) x.dispose?.();
    attn.dispose();
  });

  it("another module's object: named as such", async () => {
    const attn = await createAttnkit({ model: true });
    const other = await createAttnkit({ model: true, simd: false });
    const model = other.createModel({ vocabSize: 4, maxSeqLen: 4, dModel: 4 });
    assert.throws(
      () => attn.createTrainer(model),
      (e) => {
        assert.ok(e instanceof AttnkitTypeError);
        assert.equal(e.parameter, "model");
        assert.match(e.message, /^model: expected a Model, got a Model of another attnkit module/);
        return true;
      },
    );
    model.dispose();
    assert.deepEqual(Array.from(attn.attention([[1]], [[1]], [[2]]).data), [2]);
  });

  describe("through the worker API", () => {
    let attn, o;
    before(async () => {
      attn = await createAttnkitWorker({ model: true });
      o = await makeObjects(attn);
    });
    after(async () => {
      await attn?.dispose();
    });
    it("every wrong kind to every parameter, an AttnkitTypeError; the module unharmed", async () => {
      const cases = await confuseAll(attn, o);
      assert.equal(cases, PARAMETERS.length * (Object.keys(o).length - 1));
    });
  });
});
