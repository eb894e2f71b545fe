// attnkit for Node (CommonJS once built; dist/attnkit.node.mjs re-exports it
// for ESM, so both share one module instance and one set of error classes).
// The wasm is embedded in each loader (-sSINGLE_FILE).
import { wrap, AttnkitError, AttnkitTypeError } from "./api.js";
import { simdSupported } from "./simd.js";
import { loaderVariant } from "./convert.js";

export { AttnkitError, AttnkitTypeError, simdSupported };

const loaded = new Map();

/** Loads the module once per variant; later calls return the same promise. */
export function createAttnkit(options) {
  let simd;
  try {
    simd = loaderVariant(options, simdSupported);
  } catch (e) {
    return Promise.reject(e);  // bad options reject like a failed load
  }
  if (!loaded.has(simd)) {
    // Plain require calls with literal paths: esbuild leaves them (external).
    const factory = simd ? require("./attnkit-simd.node.cjs") : require("./attnkit-scalar.node.cjs");
    const promise = factory().then((M) => wrap(M, simd));
    promise.catch(() => loaded.delete(simd));
    loaded.set(simd, promise);
  }
  return loaded.get(simd);
}

export default createAttnkit;
