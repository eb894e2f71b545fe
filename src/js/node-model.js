// attnkit/model for Node: the builds that hold the model layer
// (createAttnkit({ model: true })): SIMD128, its scalar fallback and SIMD128 +
// threads ({ model: true, threads: n > 1 }), only.
import { nodeLoader } from "./node-loader.js";
import { checkpointCalls } from "./checkpoint-calls.js";

export { AttnkitError, AttnkitTypeError, simdSupported, version } from "./node-loader.js";

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = nodeLoader(
  "attnkit/model",
  {
    "simd-model": async () => require("./attnkit-simd-model.node.cjs"),
    "scalar-model": async () => require("./attnkit-scalar-model.node.cjs"),
    "threads-model": async () => require("./attnkit-threads-model.node.cjs"),
  },
  {
    layer: async () => require("./model-layer.node.cjs"),
    extend: checkpointCalls(async () => require("./checkpoint.node.cjs")),
  },
);

export default createAttnkit;
