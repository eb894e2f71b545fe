// The benchmarks' reader of attnkit's weights file (bench/wasm/weights.mjs),
// from which the tfjs peers of bench/wasm/train.mjs and language.mjs start:
// every tensor it reads equals the model's own parameters(), for the
// attention-only model and the GPT, so a change of the file's format fails
// here rather than in an hour-long `npm run bench`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit } from "attnkit";
import { readWeights } from "../../bench/wasm/weights.mjs";

const attn = await createAttnkit({ model: true });

function sameTensors(read, own, where = "") {
  for (const [name, t] of Object.entries(own)) {
    if (name === "layers") {
      assert.equal(read.layers.length, t.length);
      t.forEach((layer, l) => sameTensors(read.layers[l], layer, `layers.${l}.`));
      continue;
    }
    assert.ok(read[name], `${where}${name} read`);
    assert.deepEqual([read[name].rows, read[name].cols], [t.rows, t.cols], `${where}${name}`);
    assert.deepEqual(Array.from(read[name].data), Array.from(t.data), `${where}${name}`);
  }
  assert.deepEqual(Object.keys(read).sort(), Object.keys(own).sort(), `${where} tensors`);
}

for (const [kind, config, flags] of [
  [
    "the attention-only model",
    { vocabSize: 7, maxSeqLen: 5, dModel: 8, numLayers: 2, numHeads: 2 },
    {},
  ],
  [
    "the GPT",
    {
      vocabSize: 9,
      maxSeqLen: 6,
      dModel: 8,
      numLayers: 2,
      numHeads: 2,
      numKvHeads: 1,
      dFF: 12,
      layerNorm: true,
    },
    { layerNorm: true },
  ],
]) {
  test(`bench/wasm/weights.mjs reads ${kind}'s exported weights as its parameters`, () => {
    const model = attn.createModel(config, { seed: 3 });
    try {
      const read = readWeights(model.exportWeights());
      assert.equal(read.layerNorm, flags.layerNorm ?? false);
      for (const key of ["vocabSize", "maxSeqLen", "dModel", "numLayers", "numHeads"])
        assert.equal(read.config[key], config[key], key);
      assert.equal(read.config.dFF, config.dFF ?? 0);
      sameTensors(read.weights, model.parameters());
    } finally {
      model.dispose();
    }
  });
}
