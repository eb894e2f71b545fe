// attnkit/simd for Node: the SIMD128 build, and the scalar one for engines
// without SIMD128 (or { simd: false }); no threads, no model, so that an app's
// bundle embeds these two builds only.
import { nodeLoader } from "./node-loader.js";

export { AttnkitError, AttnkitTypeError, simdSupported, version } from "./node-loader.js";

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = nodeLoader("attnkit/simd", {
  simd: async () => require("./attnkit-simd.node.cjs"),
  scalar: async () => require("./attnkit-scalar.node.cjs"),
});

export default createAttnkit;
