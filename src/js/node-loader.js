// attnkit's Node loader, shared by the Node entry points (node.js and the
// lean ones, node-simd.js ...), each bundled with its own copy of it. The wasm is
// embedded in each build's loader (-sSINGLE_FILE); a threads build's worker is
// a file, attnkit-threads.node.worker.cjs (attnkit-threads-model.node.worker.cjs),
// beside the entry point (or where options.wasmPaths says).
import { AttnkitError, AttnkitTypeError } from "./api.js";
import { makeLoader, version } from "./loader.js";
import { simdSupported } from "./simd.js";

export { AttnkitError, AttnkitTypeError, simdSupported, version };

// Node's builtins, from process.getBuiltinModule where Node has it (20.16+): an
// ES module bundle of an app turns require into a shim that throws.
function builtin(name) {
  return typeof process.getBuiltinModule === "function"
    ? process.getBuiltinModule(name)
    : require(name);
}

// The folder of this file: dist/ once built, or the bundle's folder when an app
// bundles attnkit (an ES module bundle has no __dirname: the main script's).
function here() {
  const { dirname, resolve } = builtin("node:path");
  if (typeof __dirname === "string") return __dirname;
  return process.argv[1] ? dirname(resolve(process.argv[1])) : process.cwd();
}

// The file name of a path.
const base = (file) => builtin("node:path").basename(file);

// A path or file: URL from wasmPaths (a base ending in "/", or a map).
function toPath(url) {
  const { isAbsolute, resolve } = builtin("node:path");
  const { fileURLToPath } = builtin("node:url");
  return url.startsWith("file:") ? fileURLToPath(url) : isAbsolute(url) ? url : resolve(url);
}

/**
 * createAttnkit for the Node entry point `entry`, which holds `builds` (build
 * name -> a function returning a promise of its Emscripten factory);
 * `model`, for an entry point with the model builds: { layer, extend }, the
 * model layer's file and a model module's further calls (loader.js's makeLoader).
 */
export function nodeLoader(entry, builds, model) {
  return makeLoader({
    entry,
    builds,
    model,
    hardwareThreads: () => {
      const os = builtin("node:os");
      return typeof os.availableParallelism === "function"
        ? os.availableParallelism()
        : os.cpus().length || 1;
    },
    files: (build, wasmPaths) => {
      if (!build.startsWith("threads")) return {};
      const WORKER = `attnkit-${build}.node.worker.cjs`;
      const MAIN = `attnkit-${build}.node.cjs`;
      // The worker script, and the threads loader it loads (in an app bundle,
      // both must be copied beside the bundle from attnkit's dist/).
      const where = (name) =>
        typeof wasmPaths === "string"
          ? toPath(wasmPaths + name)
          : wasmPaths?.[name]
            ? toPath(wasmPaths[name])
            : builtin("node:path").join(here(), name);
      const path = where(WORKER);
      const main = where(MAIN);
      const parameter =
        typeof wasmPaths === "string" || wasmPaths?.[WORKER] || wasmPaths?.[MAIN]
          ? "options.wasmPaths"
          : "options.threads";
      // Emscripten asks for "attnkit-threads.node.worker.js": ours ships as .cjs,
      // dist/ being inside a "type": "module" package.
      return {
        locateFile: (file, dir) => (file.endsWith(".worker.js") ? path : dir + file),
        worker: { url: path, parameter, files: [path, main] },
        extra: { mainScriptUrlOrBlob: main },
      };
    },
    checkWorker: async ({ parameter, files }) => {
      for (const file of files) {
        if (!builtin("node:fs").existsSync(file)) {
          throw new AttnkitError(
            `${parameter}: expected the threads build's ${file === files[0] ? "worker script" : "loader"} ` +
              `at ${file}, got no such file (an app bundle must ship ${files.map(base).join(" and ")} from attnkit's dist/ ` +
              "beside it, or pass wasmPaths)",
            { code: "load_failed", parameter },
          );
        }
      }
    },
    watchWorker: (w, onError) => w.on("error", onError),
    loaderFile: (build) => {
      const name = `attnkit-${build}.node.cjs`;
      return { name, where: builtin("node:path").join(here(), name) };
    },
    // The workers wait for work in Atomics.wait; they must not keep Node alive.
    started: (M) => {
      for (const w of [...M.PThread.runningWorkers, ...M.PThread.unusedWorkers]) w.unref();
    },
  });
}
