// The ONNX tests' shared helpers (tests/js/onnx-export.test.js, the package's
// writer; tests/js/onnx-native.test.js, the C++ writer's files).

/**
 * The kinds of model both writers' tests export, [what, config]: attention-only,
 * grouped K/V heads, the scale switch off, 8 GPT layers with a tied unembedding.
 * Their context holds a prompt of 3 tokens and 20 generated.
 */
export const ONNX_MODELS = [
  ["a tiny attention-only task model", { vocabSize: 8, maxSeqLen: 24, dModel: 16, numHeads: 2 }],
  [
    "grouped K/V heads (8 query heads on 2), LayerNorm, biases",
    {
      vocabSize: 10,
      maxSeqLen: 24,
      dModel: 32,
      numHeads: 8,
      numKvHeads: 2,
      layerNorm: true,
      bias: true,
    },
  ],
  [
    "one K/V head, the scale switch off",
    {
      vocabSize: 10,
      maxSeqLen: 24,
      dModel: 16,
      numHeads: 4,
      numKvHeads: 1,
      scaleBySqrtDk: false,
    },
  ],
  [
    "8 GPT layers with biases and a tied unembedding",
    {
      vocabSize: 12,
      maxSeqLen: 24,
      dModel: 16,
      numLayers: 8,
      numHeads: 2,
      dFF: 32,
      layerNorm: true,
      bias: true,
      tiedUnembedding: true,
    },
  ],
];

/** The tiny GPT-2 checkpoint both writers' tests export (gpt2Checkpoint's options but the head). */
export const ONNX_GPT2 = {
  numLayers: 2,
  dModel: 16,
  numHeads: 2,
  vocabSize: 300,
  nPositions: 32,
  seed: 4,
};

/** B sequences of T token ids below V, a fixed pattern from `seed`. */
export const sequences = (B, T, V, seed) =>
  Array.from({ length: B }, (_, b) =>
    Array.from({ length: T }, (_, t) => (seed + 7 * b + 3 * t * t) % V),
  );

/** The model's logits for each of `sequences` (equal lengths) through model.inspect: [B * T * V]. */
export function attnkitLogits(model, sequences) {
  const parts = sequences.map((s) => model.inspect(s).logits.data);
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}

/** The empty past of each layer ([batch, g, 0, dK]) for a model of config `c`, as tensors of `ort`. */
export function emptyPast(ort, c, batch = 1) {
  const feeds = {};
  for (let l = 0; l < c.numLayers; ++l) {
    for (const part of ["key", "value"]) {
      const dims = [batch, c.numKvHeads, 0, c.dK];
      feeds[`past_key_values.${l}.${part}`] = new ort.Tensor("float32", new Float32Array(0), dims);
    }
  }
  return feeds;
}
