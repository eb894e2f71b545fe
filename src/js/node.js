// attnkit for Node (CommonJS once built; dist/attnkit.node.mjs re-exports it
// for ESM, so both share one module instance and one set of error classes).
// The wasm is embedded in each loader (-sSINGLE_FILE).
import { AttnkitError, AttnkitTypeError } from "./api.js";
import { makeLoader } from "./loader.js";
import { simdSupported } from "./simd.js";

export { AttnkitError, AttnkitTypeError, simdSupported };

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = makeLoader(async (simd) =>
  // Plain require calls with literal paths: esbuild leaves them (external).
  simd ? require("./attnkit-simd.node.cjs") : require("./attnkit-scalar.node.cjs"));

export default createAttnkit;
