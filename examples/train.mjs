// Train a 2-layer attention-only transformer on induction, then look inside it (Node).
// Run: node examples/train.mjs (exits 1 if it does not reach 90%).
import createAttnkit from "attnkit";

// The model layer is in its own build: load it with { model: true }.
const attn = await createAttnkit({ model: true });

// The settings of docs/model.md ("Settings that train").
const task = { kind: "induction", length: 8, padding: 8, vocabSize: 24 };
const model = attn.createModel(
  { vocabSize: 24, maxSeqLen: attn.taskSeqLen(task), dModel: 32, numLayers: 2, numHeads: 2 },
  { seed: 1, task },
);
const trainer = attn.createTrainer(model, { learningRate: 1e-2, warmupSteps: 50 });
const data = attn.createTaskGenerator(task, { seed: 1234 });
const held = attn.makeBatch(task, { batch: 256, seed: 99 });
let accuracy = 0;
let step = 0;
while (step < 1500 && accuracy < 0.9) {
  const { loss } = trainer.step(data.next(32));
  if (++step % 50 === 0) {
    accuracy = model.evaluate(held).accuracy;
    console.log(`step ${step}: loss ${loss.toFixed(3)}, held-out accuracy ${accuracy.toFixed(3)}`);
  }
}

// One sequence laid open: each head's weights and, with targets, dS = d loss / d scores.
const sample = attn.makeBatch(task, { batch: 1, seed: 5 });
const { loss, layers } = model.inspect(sample.tokens, sample.targets);
const T = sample.seqLen;
const { tokens, targets } = sample;
// Per head, the mean weight over the scored positions t on t - 1 (the previous token) and on
// the position after the earlier occurrence of token t (what an induction head attends to).
const scored = [...targets.keys()].filter((t) => targets[t] >= 0);
for (const [l, layer] of layers.entries()) {
  for (let head = 0; head < model.config.numHeads; ++head) {
    const w = (t, j) => layer.weights.data[(head * T + t) * T + j];
    let previous = 0,
      induction = 0;
    for (const t of scored) {
      previous += w(t, t - 1) / scored.length;
      induction += w(t, tokens.lastIndexOf(tokens[t], t - 1) + 1) / scored.length;
    }
    console.log(
      `layer ${l + 1} head ${head}: previous-token weight ${previous.toFixed(2)}, ` +
        `induction weight ${induction.toFixed(2)}`,
    );
  }
}
const dS = layers[1].dScores.data;
const biggest = dS.reduce((a, x) => Math.max(a, Math.abs(x)), 0);
console.log(`sample loss ${loss.toFixed(4)}; largest |dS| in layer 2: ${biggest.toExponential(2)}`);
for (const x of [data, trainer, model]) x.dispose();
if (accuracy < 0.9) {
  console.log(`accuracy ${accuracy} after ${step} steps: below 90%`);
  process.exit(1);
}
console.log(`reached ${(accuracy * 100).toFixed(1)}% after ${step} steps`);
