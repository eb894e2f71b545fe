// attnkit for browsers and bundlers: loads the SIMD128 build where the engine
// validates SIMD, else the scalar build. Each build's .wasm sits beside its
// loader and is found through import.meta.url, which bundlers follow.
import { AttnkitError, AttnkitTypeError } from "./api.js";
import { makeLoader } from "./loader.js";
import { simdSupported } from "./simd.js";

export { AttnkitError, AttnkitTypeError, simdSupported };

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = makeLoader((simd) =>
  (simd ? import("./attnkit-simd.mjs") : import("./attnkit-scalar.mjs")).then((m) => m.default));

export default createAttnkit;
