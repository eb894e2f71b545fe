// attnkit/model for browsers and bundlers: the builds that hold the model layer
// (createAttnkit({ model: true })): SIMD128, its scalar fallback and SIMD128 +
// threads ({ model: true, threads: n > 1 }), only.
import { webLoader } from "./web-loader.js";
import { checkpointCalls } from "./checkpoint-calls.js";

export { AttnkitError, AttnkitTypeError, simdSupported, version } from "./web-loader.js";

const factory = (module) => module.default;

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = webLoader(
  "attnkit/model",
  {
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
