// attnkit/threads for browsers and bundlers: the SIMD128 + pthreads build, and
// the single-threaded builds it falls back to (one thread, or no SIMD128 with
// { threads: 1 }); no model.
import { webLoader } from "./web-loader.js";

export { AttnkitError, AttnkitTypeError, simdSupported, version } from "./web-loader.js";

const factory = (module) => module.default;

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = webLoader("attnkit/threads", {
  threads: () => import("./attnkit-threads.mjs").then(factory),
  simd: () => import("./attnkit-simd.mjs").then(factory),
  scalar: () => import("./attnkit-scalar.mjs").then(factory),
});

export default createAttnkit;
