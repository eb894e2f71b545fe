// attnkit for Node (CommonJS once built; dist/attnkit.node.mjs re-exports it
// for ESM, so both share one module instance and one set of error classes).
// The wasm is embedded in each loader (-sSINGLE_FILE).
import { AttnkitError, AttnkitTypeError } from "./api.js";
import { makeLoader } from "./loader.js";
import { simdSupported } from "./simd.js";

export { AttnkitError, AttnkitTypeError, simdSupported };

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = makeLoader(
  async (build) => {
    // Plain require calls with literal paths: esbuild leaves them (external).
    if (build === "threads") {
      // Its worker ships as .cjs: dist/ is inside a "type": "module" package.
      const factory = require("./attnkit-threads.node.cjs");
      return (args) => factory({ ...args, locateFile: (path, dir) => dir + path.replace(/\.js$/, ".cjs") });
    }
    return build === "simd" ? require("./attnkit-simd.node.cjs") : require("./attnkit-scalar.node.cjs");
  },
  // The workers wait for work in Atomics.wait; they must not keep Node alive.
  (M) => {
    for (const w of [...M.PThread.runningWorkers, ...M.PThread.unusedWorkers]) w.unref();
  });

export default createAttnkit;
