// attnkit: the loader shared by the browser and Node entry points. Checks the
// options, picks the build (SIMD128 where the engine validates it, scalar
// otherwise, SIMD128 + threads when asked), loads each once per thread count
// and wraps it in the JS API.
import { wrap } from "./api.js";
import { loaderVariant } from "./convert.js";
import { simdSupported } from "./simd.js";

/** True if SharedArrayBuffer is usable here (Node, or a cross-origin isolated page). */
function sharedMemory() {
  return typeof SharedArrayBuffer === "function" && globalThis.crossOriginIsolated !== false;
}

/**
 * createAttnkit for one environment. `importFactory(build)` returns a promise of
 * the Emscripten factory of that build ("simd", "scalar" or "threads");
 * `started(M)`, if given, runs once a threads build has its workers.
 */
export function makeLoader(importFactory, started = () => {}) {
  const loaded = new Map();
  return function createAttnkit(options) {
    let variant;
    try {
      variant = loaderVariant(options, { simd: simdSupported, sharedMemory: sharedMemory() });
    } catch (e) {
      return Promise.reject(e);  // bad options reject like a failed load
    }
    const { build, threads } = variant;
    const key = `${build}:${threads}`;
    if (!loaded.has(key)) {
      // The threads build starts its workers with the module (threads - 1 of
      // them), so that the core's pool never waits for one to load.
      const promise = importFactory(build)
        .then((factory) => factory(build === "threads" ? { attnkitWorkers: threads - 1 } : {}))
        .then((M) => {
          if (build === "threads") {
            M.setThreads(threads);
            started(M);
          }
          return wrap(M, { simd: build !== "scalar", threads, onDispose: () => loaded.delete(key) });
        });
      promise.catch(() => loaded.delete(key));  // a failed load may be retried
      loaded.set(key, promise);
    }
    return loaded.get(key);
  };
}
