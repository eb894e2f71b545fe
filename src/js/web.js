// attnkit for browsers and bundlers, every build: the SIMD128 build where the
// engine validates SIMD128, else the scalar one; with { threads: n > 1 }, on a
// cross-origin isolated page, the SIMD128 + pthreads build; with { model: true },
// the one of these that also holds the model layer, with the model layer's JS
// (model-layer.mjs). Each build is a dynamic import of its own, which bundlers
// that split (Vite) load only when picked. The lean entry points (web-simd.js,
// web-threads.js, web-model.js) hold fewer builds.
import { webLoader } from "./web-loader.js";
import { checkpointCalls } from "./checkpoint-calls.js";

export { AttnkitError, AttnkitTypeError, simdSupported, version } from "./web-loader.js";

const factory = (module) => module.default;

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = webLoader(
  "attnkit",
  {
    // Literal specifiers, one per build, that bundlers follow.
    simd: () => import("./attnkit-simd.mjs").then(factory),
    scalar: () => import("./attnkit-scalar.mjs").then(factory),
    threads: () => import("./attnkit-threads.mjs").then(factory),
    "simd-model": () => import("./attnkit-simd-model.mjs").then(factory),
    "scalar-model": () => import("./attnkit-scalar-model.mjs").then(factory),
    "threads-model": () => import("./attnkit-threads-model.mjs").then(factory),
  },
  {
    layer: () => import("./model-layer.mjs"),
    extend: checkpointCalls(() => import("./checkpoint.mjs")),
  },
);

export default createAttnkit;
