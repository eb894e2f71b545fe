// attnkit: the options of createAttnkit, checked, and the build they choose.
import { describe, rangeError, typeError } from "./errors.js";
import { checkCount, closestKey, editDistance, isObject } from "./convert.js";

/** The most threads a load may ask for. */
export const MAX_THREADS = 64;

/** The options createAttnkit takes. */
export const LOAD_OPTION_KEYS = Object.freeze([
  "simd",
  "threads",
  "model",
  "wasmPaths",
  "wasmBinary",
  "timeout",
]);

/**
 * The loader's options: { simd?: boolean, threads?: number, model?: boolean,
 * wasmPaths?: string | Record<string, string>, wasmBinary?: ArrayBuffer |
 * Uint8Array, timeout?: number }. Returns the build to load, "simd", "scalar" or
 * "threads" (SIMD128 + -pthread), the thread count asked for, whether the build
 * has the model layer (model: true), and the checked
 * wasmPaths, wasmBinary and timeout (ms, default 30000; Infinity waits for ever). `env` tells what the
 * engine has: { simd(): boolean, sharedMemory: boolean } (sharedMemory:
 * SharedArrayBuffer is usable, i.e. Node or a cross-origin isolated page).
 */
export function loaderVariant(options, env) {
  const KEYS = LOAD_OPTION_KEYS;
  const FILES = [
    "attnkit-simd.wasm",
    "attnkit-scalar.wasm",
    "attnkit-simd-model.wasm",
    "attnkit-scalar-model.wasm",
    "attnkit-threads.wasm",
    "attnkit-threads.worker.js",
    "attnkit-threads.mjs",
    "attnkit-threads.node.worker.cjs",
    "attnkit-threads.node.cjs",
    "attnkit-threads-model.wasm",
    "attnkit-threads-model.worker.js",
    "attnkit-threads-model.mjs",
    "attnkit-threads-model.node.worker.cjs",
    "attnkit-threads-model.node.cjs",
  ];
  // An unknown key: an invalid_argument error naming it and the closest valid one.
  const unknown = (name, key, valid, what) => {
    const near = closestKey(key, valid);
    const close =
      near &&
      editDistance(key.toLowerCase(), near.toLowerCase()) <=
        Math.max(2, Math.floor(near.length / 3));
    return rangeError(
      name,
      `one of ${valid.join(", ")}${close ? ` (did you mean ${near}?)` : ""}`,
      what,
    );
  };
  if (options === undefined) options = {};
  if (!isObject(options) || Array.isArray(options)) {
    throw typeError(
      "options",
      "an object { simd?, threads?, model?, wasmPaths?, wasmBinary?, timeout? }",
      options,
    );
  }
  for (const key of Object.keys(options)) {
    if (!KEYS.includes(key)) throw unknown(`options.${key}`, key, KEYS, "an unknown option");
  }
  if (options.simd !== undefined && typeof options.simd !== "boolean")
    throw typeError("options.simd", "a boolean", options.simd);
  if (options.model !== undefined && typeof options.model !== "boolean")
    throw typeError("options.model", "a boolean", options.model);
  const model = options.model === true;
  const { wasmPaths, wasmBinary } = options;
  if (wasmPaths !== undefined) {
    if (typeof wasmPaths === "string") {
      if (!wasmPaths.endsWith("/"))
        throw rangeError("options.wasmPaths", 'a base URL ending in "/"', describe(wasmPaths));
    } else if (isObject(wasmPaths) && !Array.isArray(wasmPaths)) {
      for (const [file, url] of Object.entries(wasmPaths)) {
        if (!FILES.includes(file))
          throw unknown(`options.wasmPaths["${file}"]`, file, FILES, "an unknown file");
        if (typeof url !== "string" || url === "")
          throw typeError(`options.wasmPaths["${file}"]`, "a URL string", url);
      }
    } else {
      throw typeError(
        "options.wasmPaths",
        "a base URL string or an object mapping file names to URLs",
        wasmPaths,
      );
    }
  }
  if (
    wasmBinary !== undefined &&
    !(wasmBinary instanceof ArrayBuffer || wasmBinary instanceof Uint8Array)
  ) {
    throw typeError(
      "options.wasmBinary",
      "an ArrayBuffer or a Uint8Array (the bytes of the build's .wasm)",
      wasmBinary,
    );
  }
  const timeout =
    options.timeout === undefined
      ? 30000
      : options.timeout === Infinity
        ? Infinity
        : checkCount("options.timeout", options.timeout);
  const files = { wasmPaths, wasmBinary, timeout, model };
  const threads =
    options.threads === undefined ? 1 : checkCount("options.threads", options.threads);
  if (threads > MAX_THREADS)
    throw rangeError("options.threads", `at most ${MAX_THREADS}`, String(threads));
  const simd = options.simd ?? env.simd();
  if (threads === 1) return { build: simd ? "simd" : "scalar", threads, ...files };
  if (!simd) {
    const why =
      options.simd === false
        ? "with simd: false (the threads build uses SIMD128)"
        : "on an engine without WebAssembly SIMD128";
    throw rangeError("options.threads", `1 ${why}`, String(threads));
  }
  if (!env.sharedMemory) {
    throw rangeError(
      "options.threads",
      "1 unless SharedArrayBuffer is usable (serve the page cross-origin isolated: " +
        "Cross-Origin-Opener-Policy: same-origin, Cross-Origin-Embedder-Policy: require-corp)",
      String(threads),
    );
  }
  return { build: "threads", threads, ...files };
}
