// attnkit for browsers and bundlers: loads the SIMD128 build where the engine
// validates SIMD, else the scalar build; with { threads: n > 1 }, on a
// cross-origin isolated page, the SIMD128 + pthreads build, whose workers run
// attnkit-threads.worker.js (it must sit beside attnkit-threads.mjs). Each build's .wasm sits beside its
// loader and is found through import.meta.url, which bundlers follow.
import { AttnkitError, AttnkitTypeError } from "./api.js";
import { makeLoader } from "./loader.js";
import { simdSupported } from "./simd.js";

export { AttnkitError, AttnkitTypeError, simdSupported };

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = makeLoader((build) => {
  if (build === "threads") return import("./attnkit-threads.mjs").then((m) => m.default);
  return (build === "simd" ? import("./attnkit-simd.mjs") : import("./attnkit-scalar.mjs")).then((m) => m.default);
});

export default createAttnkit;
