// attnkit: model.exportOnnx()'s options and limits, checked in the model layer
// before the ONNX writer (onnx.js, a file of its own) loads, and by the writer.
import { describe, rangeError, typeError } from "./errors.js";
import { checkObject } from "./options.js";

// The opsets the writer builds: 17 (LayerNormalization) up to 24. From 20 GELU
// is one Gelu node, from 23 attention one Attention node. The C++ writer's
// include/attnkit/onnx.h repeats these limits; tests/js/onnx-native.test.js
// keeps the two equal.
export const MIN_OPSET = 17;
export const MAX_OPSET = 24;
export const DEFAULT_OPSET = 23;
export const GELU_OPSET = 20;
export const ATTENTION_OPSET = 23;
// One protobuf message is at most 2^31 - 1 bytes; the graph's nodes, names
// and metadata take less than GRAPH_BYTES besides the weights.
export const MAX_MESSAGE_BYTES = 2 ** 31 - 1;
export const GRAPH_BYTES = 2 ** 20;

/** exportOnnx's options, checked: {opset, cache} with their defaults. */
export function checkOnnxOptions(options) {
  if (options === undefined) return { opset: DEFAULT_OPSET, cache: false };
  checkObject("options", options, ["opset", "cache"], "{opset?, cache?}");
  const { opset = DEFAULT_OPSET, cache = false } = options;
  if (typeof opset !== "number") throw typeError("options.opset", "an integer", opset);
  if (!Number.isInteger(opset) || opset < MIN_OPSET || opset > MAX_OPSET) {
    throw rangeError(
      "options.opset",
      `an ONNX opset from ${MIN_OPSET} (LayerNormalization) to ${MAX_OPSET}`,
      describe(opset),
    );
  }
  if (typeof cache !== "boolean") throw typeError("options.cache", "a boolean", cache);
  return { opset, cache };
}

/** Refuses a model whose weights alone do not fit one protobuf message (2 GiB). */
export function checkOnnxSize(model) {
  const bytes = 4 * model.parameterCount;
  if (bytes + GRAPH_BYTES > MAX_MESSAGE_BYTES) {
    const most = Math.floor((MAX_MESSAGE_BYTES - GRAPH_BYTES) / 4);
    throw rangeError(
      "model",
      `a model whose ONNX file fits one protobuf message (2 GiB: at most ${most} parameters)`,
      `${model.parameterCount} parameters (${bytes} bytes of weights)`,
    );
  }
}
