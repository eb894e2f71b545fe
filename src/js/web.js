// attnkit for browsers and bundlers: loads the SIMD128 build where the engine
// validates SIMD, else the scalar build. Each build's .wasm sits beside its
// loader and is found through import.meta.url, which bundlers follow.
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
    const factory = simd ? import("./attnkit-simd.mjs") : import("./attnkit-scalar.mjs");
    const promise = factory.then((m) => m.default()).then((M) => wrap(M, simd));
    promise.catch(() => loaded.delete(simd));  // a failed load may be retried
    loaded.set(simd, promise);
  }
  return loaded.get(simd);
}

export default createAttnkit;
