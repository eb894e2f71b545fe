// attnkit's browser loader, shared by the entry points for browsers and
// bundlers (web.js and the lean ones, web-simd.js ...), each bundled with its
// own copy of it. Each build's .wasm sits beside its loader and is found
// through import.meta.url, which bundlers follow; options.wasmPaths (a base URL
// ending in "/", or a map from file name to URL) moves them. A threads build's
// workers run attnkit-threads.worker.js (attnkit-threads-model.worker.js),
// beside attnkit-threads.mjs (attnkit-threads-model.mjs).
import { AttnkitError, AttnkitTypeError } from "./api.js";
import { makeLoader, version } from "./loader.js";
import { simdSupported } from "./simd.js";

export { AttnkitError, AttnkitTypeError, simdSupported, version };

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

/**
 * createAttnkit for the browser entry point `entry`, which holds `builds`
 * (build name -> a function returning a promise of its Emscripten factory);
 * `model`, for an entry point with the model builds: { layer, extend }, the
 * model layer's file and a model module's further calls (loader.js's makeLoader).
 */
export function webLoader(entry, builds, model) {
  return makeLoader({
    entry,
    builds,
    model,
    hardwareThreads: () => globalThis.navigator?.hardwareConcurrency || 1,
    // Without wasmPaths, no locateFile: the modules' new URL(file, import.meta.url) stays, which bundlers follow.
    files: (build, wasmPaths) => {
      const locateFile = wasmPaths === undefined ? undefined : locate(wasmPaths);
      if (!build.startsWith("threads")) return { locateFile };
      const WORKER = `attnkit-${build}.worker.js`;
      const MAIN = `attnkit-${build}.mjs`;
      const mapped = typeof wasmPaths === "string" || wasmPaths?.[WORKER] !== undefined;
      const url = mapped ? locateFile(WORKER, "") : besideThisModule(WORKER);
      // A moved worker imports its loader from beside itself unless told where it is.
      const main = wasmPaths?.[MAIN] ?? besideThisModule(MAIN);
      return {
        locateFile,
        worker: { url, parameter: mapped ? "options.wasmPaths" : "options.threads" },
        extra: mapped ? { mainScriptUrlOrBlob: main } : {},
      };
    },
    // The browser fetches the worker script itself; a failure is its error event.
    checkWorker: async () => {},
    watchWorker: (w, onError) => w.addEventListener("error", onError),
    loaderFile: (build) => {
      const name = `attnkit-${build}.mjs`;
      return { name, where: besideThisModule(name) };
    },
    started: () => {},
  });
}
