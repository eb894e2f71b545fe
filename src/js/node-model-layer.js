// The model layer for Node (model-layer.js), built as dist/model-layer.node.cjs;
// its ONNX writer is dist/onnx.node.cjs, required on the first model.exportOnnx().
import { modelLayerOf } from "./model-layer.js";

export const modelLayer = modelLayerOf(async () => require("./onnx.node.cjs"));
