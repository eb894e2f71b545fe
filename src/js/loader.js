// attnkit: the loader shared by the browser and Node entry points. Checks the
// options, picks the build (SIMD128 where the engine validates it, scalar
// otherwise, SIMD128 + threads when asked; with { model: true } the one of
// these that also holds the model layer), loads each once per thread
// count and model flag and wraps it in the JS API. A load that fails (a missing worker script, bad
// wasm bytes, the timeout) rejects with an AttnkitError and may be retried.
//
// Nothing here, nor in the Emscripten modules (linked with
// -sNODEJS_CATCH_EXIT=0 -sNODEJS_CATCH_REJECTION=0), touches process-wide
// state: no uncaughtException / unhandledRejection handlers, no process.exit.
import { wrap } from "./api.js";
import { loaderVariant } from "./load-options.js";
import { AttnkitError, rangeError } from "./errors.js";
import { simdSupported } from "./simd.js";

import { version } from "./version.js";

export { version };

/** True if SharedArrayBuffer is usable here (Node, or a cross-origin isolated page). */
function sharedMemory() {
  return typeof SharedArrayBuffer === "function" && globalThis.crossOriginIsolated !== false;
}

function loadFailed(parameter, message) {
  return new AttnkitError(`${parameter}: ${message}`, { code: "load_failed", parameter });
}

/**
 * The load_failed error of a module that did not instantiate: the option that
 * chose its bytes, the URL they were fetched from (the build's loader records
 * it as Module.attnkitWasmUrl; Node's builds embed their bytes) and what went
 * wrong, without Emscripten's advice to rebuild it.
 */
function loadError(build, { wasmPaths, wasmBinary }, url, error, printed) {
  const file = `attnkit-${build}.wasm`;
  const why = String(error?.message ?? error)
    .replace(/^Aborted\((.*)\)\.?.*$/s, "$1")
    .replace(/\s*Build with -s ASSERTIONS=1 for more info\.?/, "");
  // Emscripten's lines, less its abort (already `why`) and its retries.
  const lines = printed.filter((l) => !/ASSERTIONS=1|^Aborted\(|falling back/.test(l)).slice(-2);
  const detail =
    lines.length && !lines.every((l) => why.includes(l)) ? ` (${lines.join("; ")})` : "";
  if (wasmBinary) {
    return loadFailed(
      "options.wasmBinary",
      `expected the bytes of ${file}, got bytes that did not instantiate: ${why}${detail}`,
    );
  }
  const where = url ? ` from ${url}` : "";
  const hint = wasmPaths
    ? " (options.wasmPaths sets that URL: is the file served there?)"
    : url
      ? ` (serve ${file} at that URL, beside the module that loads it: a bundle must copy it; or set options.wasmPaths to where it is served)`
      : "";
  return loadFailed(
    wasmPaths ? "options.wasmPaths" : "options",
    `expected the ${build} build's WebAssembly file ${file} to load${where}${hint}, got: ${why}${detail}`,
  );
}

/**
 * Checks that caller-given wasm bytes are those of `build`: the scalar build's
 * Highway target is EMU128, the SIMD128 one's WASM, and only the model builds
 * bind the model layer. Other bytes may instantiate and then run the wrong code.
 */
function checkBuild(M, build) {
  const simd = !build.startsWith("scalar");
  const target = M.target();
  const model = typeof M.modelCreate === "function";
  if ((target === "WASM") === simd && model === build.endsWith("-model")) return;
  const got = `${simd === (target === "WASM") ? "" : `target ${target}, `}${model ? "with" : "without"} the model layer`;
  throw loadFailed(
    "options.wasmBinary",
    `expected the bytes of attnkit-${build}.wasm (the build these options load), got those of ` +
      `another build (${got})`,
  );
}

/**
 * The error of options that pick a build the entry point does not hold (an
 * entry point holds only some builds, so that an app's bundle holds only
 * those), or null. Checked before the thread count is capped to the hardware:
 * whether options load depends on the import, never on the machine.
 */
function missingBuild({ entry, builds }, { build, threads, model }) {
  const wanted = model ? `${build}-model` : build;
  if (wanted in builds) return null;
  const holds = Object.keys(builds).join(", ");
  const holdsModel = Object.keys(builds).some((b) => b.endsWith("-model"));
  const [parameter, expected, given, other] =
    build === "threads" && (holdsModel || !model)
      ? ["options.threads", "1", String(threads), `"attnkit/threads" or "attnkit" for threads`]
      : model
        ? ["options.model", "false", "true", `"attnkit/model" or "attnkit" for the model`]
        : ["options.model", "true", "false", `"attnkit/simd" or "attnkit" without the model`];
  return rangeError(
    parameter,
    `${expected} with ${entry}, which holds the builds ${holds} only (import ${other})`,
    given,
  );
}

/**
 * The model layer's functions (model-layer.js's modelLayer) through `model.layer()`,
 * the entry point's import or require of its file; a file that does not load
 * rejects with load_failed.
 */
async function loadModelLayer(model) {
  try {
    return (await model.layer()).modelLayer;
  } catch (e) {
    throw loadFailed(
      "options.model",
      "expected attnkit's model layer (model-layer.mjs or model-layer.node.cjs, beside the " +
        `entry point: a bundle or a copy of dist/ must keep it) to load, got: ${String(e?.message ?? e).split("\n")[0]}`,
    );
  }
}

/** Stops a threads build's workers (started, or still loading). */
function stopWorkers(M) {
  const P = M?.PThread;
  if (!P) return;
  try {
    P.terminateAllThreads();
  } catch {
    for (const w of [...P.runningWorkers, ...P.unusedWorkers]) w.terminate();
  }
}

/**
 * createAttnkit for one entry point in one environment. `platform` gives:
 *   entry: the entry point's import specifier ("attnkit", "attnkit/simd", ...);
 *   builds: for each build the entry point holds ("simd", "scalar", "threads",
 *     "simd-model", "scalar-model" or "threads-model"), a function that returns a promise of
 *     its Emscripten factory. A load whose options pick another build rejects;
 *   model: for an entry point holding the model builds, { layer, extend }:
 *     layer() returns a promise of the model layer's module (model-layer.js,
 *     its own file: loaded with a model build only), extend(api) gives a model
 *     module's further calls (checkpoint-calls.js); undefined for the others;
 *   hardwareThreads(): how many threads the hardware runs at once (the cap);
 *   files(build, wasmPaths): { locateFile?, worker?: { url, parameter }, extra? }: where
 *     the build's files load from (locateFile for the factory, undefined for the
 *     default) and, for a threads build, its worker script's URL or path and
 *     the option that set it (for messages); extra: more factory arguments;
 *   checkWorker(worker): resolves if the worker script can load, else rejects
 *     with an AttnkitError (Node: the file exists);
 *   watchWorker(w, onError): calls onError(event) if worker w fails to start;
 *   started(M): runs once a threads build has its workers;
 *   loaderFile(build): { name, where }: the build's loader file and its path
 *     or URL (for the message when it does not load).
 */
export function makeLoader(platform) {
  const loaded = new Map();
  // Where a load's bytes come from is part of what it loads: caller-given
  // bytes (each ArrayBuffer or Uint8Array its own) or wasmPaths.
  const binaries = new WeakMap();
  let binaryCount = 0;
  const source = ({ wasmBinary, wasmPaths }) => {
    if (wasmBinary && !binaries.has(wasmBinary)) binaries.set(wasmBinary, ++binaryCount);
    const bytes = wasmBinary ? `bytes ${binaries.get(wasmBinary)}` : "";
    return `${bytes}:${JSON.stringify(wasmPaths ?? null)}`;
  };
  return function createAttnkit(options) {
    let variant;
    try {
      variant = loaderVariant(options, { simd: simdSupported, sharedMemory: sharedMemory() });
    } catch (e) {
      return Promise.reject(e); // bad options reject like a failed load
    }
    let { build, threads } = variant;
    const missing = missingBuild(platform, variant);
    if (missing) return Promise.reject(missing);
    // More threads than the hardware runs at once only cost memory and start-up.
    threads = Math.max(1, Math.min(threads, platform.hardwareThreads()));
    if (threads === 1 && build === "threads") build = "simd";
    // The model builds are their own files (the default ones stay small).
    if (variant.model) build += "-model";
    const key = `${build}:${threads}:${source(variant)}`;
    if (!loaded.has(key)) {
      const promise = loadBuild(platform, build, threads, variant, () => {
        if (loaded.get(key) === promise) loaded.delete(key);
      });
      promise.catch(() => {
        if (loaded.get(key) === promise) loaded.delete(key); // a failed load may be retried
      });
      loaded.set(key, promise);
    }
    return loaded.get(key);
  };
}

/**
 * Loads `build` with `threads` threads for makeLoader's `platform` (the
 * variant's wasmPaths, wasmBinary, timeout and model): a promise of the
 * wrapped module. `forget()` runs when the user disposes it.
 */
function loadBuild(platform, build, threads, { wasmPaths, wasmBinary, timeout, model }, forget) {
  const { locateFile, worker, extra } = platform.files(build, wasmPaths);
  // A model build's JS layer loads beside its module.
  const layer = model ? loadModelLayer(platform.model) : null;
  layer?.catch(() => {}); // awaited below, once the module is in
  // The factory's Module object (MODULARIZE fills in the one it is given).
  const args = { ...extra };
  if (locateFile) args.locateFile = locateFile;
  if (wasmBinary) args.wasmBinary = wasmBinary;
  // The threads build starts its workers with the module (threads - 1 of
  // them), so that the core's pool never waits for one to load.
  if (build.startsWith("threads")) args.attnkitWorkers = threads - 1;
  // What Emscripten would print (an abort's lines) goes into the error, not
  // onto the program's console.
  const printed = [];
  args.print = args.printErr = (line) => printed.push(String(line));
  let failed = false;
  let timer;
  return new Promise((resolve, reject) => {
    const fail = (e) => {
      if (failed) return;
      failed = true;
      stopWorkers(args);
      reject(e);
    };
    if (timeout !== Infinity) {
      timer = setTimeout(
        () =>
          fail(
            loadFailed(
              "options.timeout",
              `expected the ${build} build to load within ${timeout} ms, got no module in that time` +
                (worker ? ` (is its worker script ${worker.url} served?)` : ""),
            ),
          ),
        timeout,
      );
    }
    (async () => {
      if (worker) await platform.checkWorker(worker);
      let factory;
      try {
        factory = await platform.builds[build]();
      } catch (e) {
        const file = platform.loaderFile(build);
        throw loadFailed(
          "options",
          `expected the ${build} build's loader ${file.name} to load from ${file.where} ` +
            "(it ships beside the entry point: a bundle or a copy of dist/ must keep it), got: " +
            String(e?.message ?? e).split("\n")[0],
        );
      }
      if (failed) return;
      const ready = factory(args);
      if (worker) {
        // Emscripten rethrows a worker's error in the worker's event handler,
        // and its ready promise never settles: reject here instead.
        for (const w of args.PThread?.unusedWorkers ?? []) {
          platform.watchWorker(w, (e) =>
            fail(
              loadFailed(
                worker.parameter,
                `expected the threads build's worker script at ${worker.url} to load, got ` +
                  `${e?.message ? `an error: ${e.message}` : "an error event (is it served, with the page's origin?)"}`,
              ),
            ),
          );
        }
      }
      let M;
      try {
        M = await ready;
      } catch (e) {
        throw loadError(build, { wasmPaths, wasmBinary }, args.attnkitWasmUrl, e, printed);
      }
      if (failed) {
        stopWorkers(M);
        return;
      }
      if (wasmBinary) checkBuild(M, build);
      const modelLayer = model ? await layer : undefined;
      if (failed) return;
      if (build.startsWith("threads")) {
        M.setThreads(threads);
        platform.started(M);
      }
      const attn = wrap(M, {
        simd: !build.startsWith("scalar"),
        threads,
        model,
        version,
        modelLayer,
        extend: platform.model?.extend,
        // attn.dispose(): a later createAttnkit() loads a new instance.
        onDispose: () => {
          forget();
          stopWorkers(M);
        },
      });
      clearTimeout(timer);
      resolve(attn);
    })().catch(fail);
  }).finally(() => clearTimeout(timer));
}
