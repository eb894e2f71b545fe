// attnkit: the loader shared by the browser and Node entry points. Checks the
// options, picks the variant (SIMD128 where the engine validates it), loads
// each variant once and wraps it in the JS API.
import { wrap } from "./api.js";
import { loaderVariant } from "./convert.js";
import { simdSupported } from "./simd.js";

/**
 * createAttnkit for one environment. `importFactory(simd)` returns a promise of
 * the Emscripten factory of that variant.
 */
export function makeLoader(importFactory) {
  const loaded = new Map();
  return function createAttnkit(options) {
    let simd;
    try {
      simd = loaderVariant(options, simdSupported);
    } catch (e) {
      return Promise.reject(e);  // bad options reject like a failed load
    }
    if (!loaded.has(simd)) {
      const promise = importFactory(simd).then((factory) => factory()).then((M) => wrap(M, simd));
      promise.catch(() => loaded.delete(simd));  // a failed load may be retried
      loaded.set(simd, promise);
    }
    return loaded.get(simd);
  };
}
