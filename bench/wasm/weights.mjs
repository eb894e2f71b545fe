// attnkit's weights file (docs/model.md, "Weights file", versions 2 to 4) read into
// the tensors the benchmarks' tfjs models start from, in the file's order.
// One reader for the attention-only model (bench/wasm/train.mjs) and the GPT
// (bench/wasm/language.mjs).

/**
 * @param {Uint8Array} bytes a file from `model.exportWeights()`
 * @returns {{ config: object, weights: object, layerNorm: boolean, scaled: boolean }}
 *   weights: { tokenEmbedding, positionEmbedding, layers: [{ lnGain?, lnBias?, W_Q, W_K,
 *   W_V, W_O, ln2Gain?, ln2Bias?, W_1?, W_2? }], finalGain?, finalBias?, unembedding },
 *   each { rows, cols, data: Float32Array }.
 */
export function readWeights(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = new TextDecoder().decode(bytes.subarray(0, 8));
  const version = view.getUint32(8, true);
  if (magic !== "ATKMODEL" || version < 2 || version > 4)
    throw new Error(`weights: magic ${magic}, version ${version} (expected 2 .. 4)`);
  const w32 = (i) => view.getUint32(12 + 4 * i, true);
  const [V, P, D, L, h, g, dK, dFF, flags] = Array.from({ length: 9 }, (_, i) => w32(i));
  // The peers' models have no biases and an unembedding of their own.
  if (flags & ~3) throw new Error(`weights: flags ${flags} (expected no bias, untied)`);
  const layerNorm = (flags & 1) !== 0;
  let at = version >= 4 ? 52 : 48; // after the config (version 4: the epsilon word)
  at += 4 + 4 * view.getUint32(at, true); // the vocabulary
  if (version >= 3) at += 4; // the trained steps
  const count = view.getUint32(at, true);
  at += 4;
  const floats = new Float32Array(bytes.slice(at, at + 4 * count).buffer);
  let off = 0;
  const take = (rows, cols) => {
    const t = { rows, cols, data: floats.subarray(off, off + rows * cols) };
    off += rows * cols;
    return t;
  };
  const w = { tokenEmbedding: take(V, D), positionEmbedding: take(P, D), layers: [] };
  for (let l = 0; l < L; ++l) {
    const layer = layerNorm ? { lnGain: take(1, D), lnBias: take(1, D) } : {};
    Object.assign(layer, {
      W_Q: take(D, h * dK),
      W_K: take(D, g * dK),
      W_V: take(D, g * dK),
      W_O: take(h * dK, D),
    });
    if (dFF > 0)
      Object.assign(layer, {
        ln2Gain: take(1, D),
        ln2Bias: take(1, D),
        W_1: take(D, dFF),
        W_2: take(dFF, D),
      });
    w.layers.push(layer);
  }
  if (layerNorm) Object.assign(w, { finalGain: take(1, D), finalBias: take(1, D) });
  w.unembedding = take(D, V);
  if (off !== count) throw new Error(`weights: ${count} floats, the config needs ${off}`);
  const config = { vocabSize: V, maxSeqLen: P, dModel: D, numLayers: L, numHeads: h };
  Object.assign(config, { numKvHeads: g, dK, dFF, layerNorm });
  return { config, weights: w, layerNorm, scaled: (flags & 2) !== 0 };
}
