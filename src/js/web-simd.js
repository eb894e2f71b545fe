// attnkit/simd for browsers and bundlers: the SIMD128 build, and the scalar one
// for engines without SIMD128 (or { simd: false }); no threads, no model, so
// that an app's bundle holds these two builds only.
import { webLoader } from "./web-loader.js";

export { AttnkitError, AttnkitTypeError, simdSupported, version } from "./web-loader.js";

const factory = (module) => module.default;

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = webLoader("attnkit/simd", {
  simd: () => import("./attnkit-simd.mjs").then(factory),
  scalar: () => import("./attnkit-scalar.mjs").then(factory),
});

export default createAttnkit;
