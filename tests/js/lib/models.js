// The small models the package's tests build, each written once: the
// induction task and the attention-only model that learns it (docs/model.md,
// "Settings that train"), and two GPTs of pre-LayerNorm blocks whose
// vocabulary is their text's. Plain ES module: no imports.

/** The induction task of docs/model.md's settings: length 8, padding 8, 24 tokens. */
export const INDUCTION_TASK = Object.freeze({
  kind: "induction",
  length: 8,
  padding: 8,
  vocabSize: 24,
});

/** The attention-only model that learns INDUCTION_TASK: 2 layers of 2 heads, d_model 32. */
export const INDUCTION_MODEL = Object.freeze({
  vocabSize: 24,
  maxSeqLen: 24,
  dModel: 32,
  numLayers: 2,
  numHeads: 2,
});

/** A GPT that learns a slice of Moby-Dick's letters in a few hundred steps: 2 blocks, d_ff 192. */
export const LANGUAGE_GPT = Object.freeze({
  maxSeqLen: 32,
  dModel: 48,
  numLayers: 2,
  numHeads: 4,
  dFF: 192,
  layerNorm: true,
});

/** The smallest GPT the language tests train a few steps of: 1 block of 2 heads, d_model 16. */
export const ONE_BLOCK_GPT = Object.freeze({
  maxSeqLen: 16,
  dModel: 16,
  numLayers: 1,
  numHeads: 2,
  dFF: 32,
  layerNorm: true,
});
