// attnkit: a Hugging Face GPT-2 checkpoint opened as a Model
// (attnkit.openCheckpoint, attnkit.checkpointInfo on the model module). The
// config comes from config.json (or the tensors' shapes), the header from the
// safetensors file (safetensors.js), the bytes from a source (sources.js);
// each tensor goes, in file order and in parts of at most PART_BYTES, into a
// staging view of module memory and is handed by its Hugging Face name to the
// model layer's loader (model.js's FILL: it knows GPT-2's names and widens
// F16/BF16 into the model's own matrices). The tokenizer is GPT-2's
// (bpe.js), its ranks loaded before the data and the tokenizer made after
// them on the first open. Built as its own file of dist/ for each
// platform (web-checkpoint.js as checkpoint.mjs, node-checkpoint.js as
// checkpoint.node.cjs), loaded by the entry points on the first call
// (checkpoint-calls.js), so that no other load carries it.
import { AttnkitError, typeError } from "./errors.js";
import { checkObject } from "./options.js";
import { gpt2Tokenizer } from "./bpe.js";
import {
  DTYPE_BYTES,
  PART_BYTES,
  checkpointSizes,
  configFromJson,
  configFromShapes,
  headerLength,
  isRead,
  parseHeader,
} from "./safetensors.js";
import { aborted, checkAborted, checkpointSource } from "./sources.js";

// The most memory a model build's module can grow to (-sMAXIMUM_MEMORY=4GB).
export const MAX_MODULE_BYTES = 4 * 2 ** 30;
const WASM_PAGE = 65536;
const INFO_KEYS = ["hubUrl", "revision", "signal", "numHeads", "config"];
const OPEN_KEYS = [...INFO_KEYS, "onProgress"];

/** The options of checkpointInfo / openCheckpoint, checked. */
function checkOptions(options, keys) {
  if (options === undefined) return {};
  checkObject("options", options, keys, `{${keys.map((k) => `${k}?`).join(", ")}}`);
  const { signal, onProgress, config } = options;
  if (
    signal !== undefined &&
    (signal === null || typeof signal !== "object" || typeof signal.aborted !== "boolean")
  ) {
    throw typeError("options.signal", "an AbortSignal", signal);
  }
  if (onProgress !== undefined && typeof onProgress !== "function") {
    throw typeError(
      "options.onProgress",
      "a function ({loadedBytes, totalBytes, tensor})",
      onProgress,
    );
  }
  if (config !== undefined && (config === null || typeof config !== "object")) {
    throw typeError("options.config", "config.json's object", config);
  }
  return options;
}

/**
 * Reads what a checkpoint is without its tensors' data: config.json (or
 * options.config) and the safetensors header. Returns the open source with
 * the header's tensors, the config and the sizes.
 */
async function readHead(source, o) {
  const signal = o.signal;
  checkAborted(signal);
  const src = checkpointSource(source, o);
  try {
    const json = o.config ?? (await src.config(signal));
    const { first, total } = await src.start(signal);
    const n = headerLength(first, total);
    const header = new Uint8Array(n);
    await src.read(8, header, { signal });
    const { tensors, dataStart } = parseHeader(header, total);
    const { config, tied } = json ? configFromJson(json) : configFromShapes(tensors, o.numHeads);
    return {
      src,
      tensors,
      dataStart,
      total,
      config,
      tied,
      ...checkpointSizes(tensors, config, tied),
    };
  } catch (e) {
    src.close();
    throw e;
  }
}

const GIB = (n) => `${(n / 2 ** 30).toFixed(2)} GiB`;

/**
 * Refuses a model the module cannot hold before anything is allocated: more
 * than a wasm module addresses, or more than this engine gives (a probe
 * memory of the missing size).
 */
function checkMemory(attnkit, needed) {
  const have = attnkit.memoryBytes();
  const wanted = attnkit.heapBytesInUse() + needed;
  if (wanted > MAX_MODULE_BYTES) {
    throw new AttnkitError(
      `source: expected a model that fits the ${GIB(MAX_MODULE_BYTES)} a wasm module addresses, got one ` +
        `needing ${needed} bytes (${GIB(needed)}) beside the ${GIB(wanted - needed)} in use`,
      { code: "capacity", parameter: "source" },
    );
  }
  if (wanted <= have) return;
  try {
    new WebAssembly.Memory({ initial: Math.ceil((wanted - have) / WASM_PAGE) });
  } catch (e) {
    const err = new AttnkitError(
      `source: expected this engine to give the module ${wanted - have} more bytes of memory ` +
        `(${needed} bytes, ${GIB(needed)}, for the model), got a refusal: ${e.message}`,
      { code: "capacity", parameter: "source" },
    );
    err.cause = e;
    throw err;
  }
}

/** checkpointInfo: what the learner confirms before the download. */
async function checkpointInfo(source, options) {
  const o = checkOptions(options, INFO_KEYS);
  const head = await readHead(source, o);
  head.src.close();
  return {
    config: Object.freeze({ ...head.config }),
    totalBytes: head.total,
    dtype: head.dtype,
    parameters: head.parameters,
    memoryBytes: head.memoryBytes,
    source: head.src.description,
  };
}

/** Streams every tensor the model reads into `fill`, in file order, reporting progress. */
async function streamTensors(head, fill, o) {
  const { src, tensors, total, tied } = head;
  let loaded = head.dataStart;
  let tensor = null;
  const report = () => o.onProgress?.({ loadedBytes: loaded, totalBytes: total, tensor });
  report();
  src.streamTo?.(total);
  for (const t of tensors) {
    checkAborted(o.signal);
    if (!isRead(t, tied)) {
      loaded += t.end - t.begin;
      continue;
    }
    tensor = t.name;
    // In parts of at most PART_BYTES (whole values), each read into the
    // staging view and widened into its place in the model.
    const valueBytes = DTYPE_BYTES[t.dtype],
      part = Math.floor(PART_BYTES / valueBytes) * valueBytes;
    let at = t.begin;
    do {
      const size = Math.min(part, t.end - at);
      await src.read(at, fill.staging(size), {
        signal: o.signal,
        onBytes: (n) => {
          loaded += n;
          report();
        },
      });
      checkAborted(o.signal);
      fill.load(t.name, t.dtype, t.shape, (at - t.begin) / valueBytes);
      at += size;
    } while (at < t.end);
  }
  if (loaded !== total) {
    loaded = total;
    report();
  }
}

/**
 * openCheckpoint: the checkpoint as a Model with GPT-2's tokenizer (over
 * `loadRanks`'s ranks), filled through `fill(config)` (the module's FILL).
 */
async function openCheckpoint(attnkit, fill, loadRanks, source, options) {
  const o = checkOptions(options, OPEN_KEYS);
  const head = await readHead(source, o);
  let loader = null;
  try {
    checkMemory(attnkit, head.memoryBytes);
    const tokenizer = await gpt2Tokenizer(loadRanks);
    checkAborted(o.signal);
    loader = fill(head.config);
    await streamTensors(head, loader, o);
    const model = loader.finish(tokenizer());
    loader = null;
    return model;
  } catch (e) {
    loader?.dispose();
    if (o.signal?.aborted && e?.code !== "aborted") throw aborted(o.signal);
    throw e;
  } finally {
    head.src.close();
  }
}

/**
 * The checkpoint reader over `loadRanks()`, a promise of GPT-2's byte-pair
 * ranks (js-tiktoken's "gpt2" object), which each platform's file gives
 * (web-checkpoint.js, node-checkpoint.js): `checkpointMethods(attnkit, fill)`,
 * the checkpoint calls of a model module `attnkit`, `fill(config)` being its
 * model layer's loader (attnkit[FILL]).
 */
export function checkpointReader(loadRanks) {
  return (attnkit, fill) => ({
    openCheckpoint: (source, options) => openCheckpoint(attnkit, fill, loadRanks, source, options),
    checkpointInfo: (source, options) => checkpointInfo(source, options),
  });
}
