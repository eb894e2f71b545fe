// attnkit for browsers and bundlers: loads the SIMD128 build where the engine
// validates SIMD, else the scalar build; with { threads: n > 1 }, on a
// cross-origin isolated page, the SIMD128 + pthreads build, whose workers run
// attnkit-threads.worker.js (it must sit beside attnkit-threads.mjs); with
// { model: true }, attnkit-simd-model.mjs or attnkit-scalar-model.mjs. Each build's .wasm sits beside its
// loader and is found through import.meta.url, which bundlers follow; options.wasmPaths
// (a base URL ending in "/", or a map from file name to URL) moves them.
import { AttnkitError, AttnkitTypeError } from "./api.js";
import { makeLoader, version } from "./loader.js";
import { simdSupported } from "./simd.js";

export { AttnkitError, AttnkitTypeError, simdSupported, version };

const WORKER = "attnkit-threads.worker.js";

// Where dist/ is, for messages only (a name, not a literal bundlers would
// follow: the threads module itself points bundlers at its worker).
function besideThisModule(name) {
  try {
    return new URL(name, import.meta.url).href;
  } catch {
    return name;
  }
}

function locate(wasmPaths) {
  if (typeof wasmPaths === "string") return (file) => wasmPaths + file;
  // Files the map leaves out load from their default place (beside the loader).
  return (file, prefix) => wasmPaths[file] ?? prefix + file;
}

/** Loads the module once per variant; later calls return the same promise. */
export const createAttnkit = makeLoader({
  importFactory: (build) => {
    // Literal specifiers, one per build, that bundlers follow.
    const modules = {
      simd: () => import("./attnkit-simd.mjs"),
      scalar: () => import("./attnkit-scalar.mjs"),
      threads: () => import("./attnkit-threads.mjs"),
      "simd-model": () => import("./attnkit-simd-model.mjs"),
      "scalar-model": () => import("./attnkit-scalar-model.mjs"),
    };
    return modules[build]().then((m) => m.default);
  },
  hardwareThreads: () => globalThis.navigator?.hardwareConcurrency || 1,
  // Without wasmPaths, no locateFile: the modules' new URL(file, import.meta.url) stays, which bundlers follow.
  files: (build, wasmPaths) => {
    const locateFile = wasmPaths === undefined ? undefined : locate(wasmPaths);
    if (build !== "threads") return { locateFile };
    const mapped = typeof wasmPaths === "string" || wasmPaths?.[WORKER] !== undefined;
    const url = mapped ? locateFile(WORKER, "") : besideThisModule(WORKER);
    // A moved worker imports attnkit-threads.mjs from beside itself unless told where it is.
    const main = wasmPaths?.["attnkit-threads.mjs"] ?? besideThisModule("attnkit-threads.mjs");
    return {
      locateFile,
      worker: { url, parameter: mapped ? "options.wasmPaths" : "options.threads" },
      extra: mapped ? { mainScriptUrlOrBlob: main } : {},
    };
  },
  // The browser fetches the worker script itself; a failure is its error event.
  checkWorker: async () => {},
  watchWorker: (w, onError) => w.addEventListener("error", onError),
  started: () => {},
});

export default createAttnkit;
