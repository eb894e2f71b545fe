// The weights file's tensor names (docs/model.md) and the keys of
// model.parameters() that hold them: the model's reader (model.js) and the
// ONNX writer (onnx.js), whose initializers keep the file's names.

export const PARAMETER_KEYS = {
  token_embedding: "tokenEmbedding",
  position_embedding: "positionEmbedding",
  final_gain: "finalGain",
  final_bias: "finalBias",
  unembedding: "unembedding",
};
export const LAYER_KEYS = {
  W_Q: "W_Q",
  W_K: "W_K",
  W_V: "W_V",
  W_O: "W_O",
  ln_gain: "lnGain",
  ln_bias: "lnBias",
  ln2_gain: "ln2Gain",
  ln2_bias: "ln2Bias",
  W_1: "W_1",
  W_2: "W_2",
  b_Q: "b_Q",
  b_K: "b_K",
  b_V: "b_V",
  b_O: "b_O",
  b_1: "b_1",
  b_2: "b_2",
};
