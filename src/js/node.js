// attnkit for Node, every build (CommonJS once built; dist/attnkit.node.mjs
// re-exports it for ESM, so both share one module instance and one set of
// error classes). An app's bundler follows each require below and embeds every
// build: the lean entry points (node-simd.js, node-threads.js, node-model.js)
// hold fewer.
import { nodeLoader } from "./node-loader.js";
import { checkpointCalls } from "./checkpoint-calls.js";

export { AttnkitError, AttnkitTypeError, simdSupported, version } from "./node-loader.js";

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = nodeLoader(
  "attnkit",
  {
    // Plain require calls with literal paths: esbuild leaves them (external).
    simd: async () => require("./attnkit-simd.node.cjs"),
    scalar: async () => require("./attnkit-scalar.node.cjs"),
    threads: async () => require("./attnkit-threads.node.cjs"),
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
