// The model layer for browsers and bundlers (model-layer.js), built as
// dist/model-layer.mjs; its ONNX writer is dist/onnx.mjs, imported on the first
// model.exportOnnx().
import { modelLayerOf } from "./model-layer.js";

export const modelLayer = modelLayerOf(() => import("./onnx.mjs"));
