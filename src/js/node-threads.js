// attnkit/threads for Node: the SIMD128 + pthreads build, and the
// single-threaded builds it falls back to (one thread, or no SIMD128 with
// { threads: 1 }); no model.
import { nodeLoader } from "./node-loader.js";

export { AttnkitError, AttnkitTypeError, simdSupported, version } from "./node-loader.js";

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = nodeLoader("attnkit/threads", {
  threads: async () => require("./attnkit-threads.node.cjs"),
  simd: async () => require("./attnkit-simd.node.cjs"),
  scalar: async () => require("./attnkit-scalar.node.cjs"),
});

export default createAttnkit;
