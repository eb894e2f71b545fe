// attnkit: the safetensors format and a GPT-2 checkpoint's config. A file is
// 8 bytes of little-endian header length N, N bytes of JSON ({name: {dtype,
// shape, data_offsets: [begin, end]}, "__metadata__": {...}}), then the data,
// offsets counted from its first byte. The header is checked as the format's
// own reader checks it: the tensors tile the data exactly, in order, each
// product(shape) x its dtype's bytes. Which tensor of the model each name
// fills is the model layer's (CheckpointLoader in src/model): here are the
// format, the config (config.json's, or read off the shapes) and the sizes.
import { AttnkitError, describe, rangeError } from "./errors.js";

// The format's own limit on a header's JSON.
export const MAX_HEADER_BYTES = 100_000_000;
// Bytes per element of the dtypes attnkit widens to float32.
export const DTYPE_BYTES = Object.freeze({ F32: 4, F16: 2, BF16: 2 });
// The most bytes of a tensor a load stages at once (checkpoint.js reads
// larger ones in parts): the module holds the model and this much beside it.
export const PART_BYTES = 4 << 20;
// Hugging Face's GPT-2 buffers, not parameters: the causal mask and the
// masked score. The model layer skips them too; the reader does not even read them.
const BUFFER = /(^|\.)attn\.(masked_)?bias$/;
const HEAD = "lm_head.weight";
// config.json's activation_function values that are GPT-2's tanh GELU.
const GELU_TANH = ["gelu_new", "gelu_pytorch_tanh"];

/** An error in the checkpoint given as `source`: its file is not what it claims. */
export function badFile(parameter, expected, given) {
  return rangeError(parameter, expected, given);
}

/** The JSON header's length from a file's first 8 bytes, checked against the file's size. */
export function headerLength(first, totalBytes, where = "source") {
  if (totalBytes < 8 || first.length < 8) {
    throw badFile(
      where,
      "a safetensors file (8 bytes of header length, a JSON header, the tensors)",
      `${totalBytes} bytes`,
    );
  }
  const n = new DataView(first.buffer, first.byteOffset, 8).getBigUint64(0, true);
  if (n < 2n || n > BigInt(MAX_HEADER_BYTES)) {
    throw badFile(
      where,
      `a safetensors header length of 2 .. ${MAX_HEADER_BYTES} bytes (is it a safetensors file?)`,
      `${n}`,
    );
  }
  if (8n + n > BigInt(totalBytes)) {
    throw badFile(
      where,
      `a header of at most ${totalBytes - 8} bytes (the file holds ${totalBytes})`,
      `a header length of ${n} (a truncated file, or not a safetensors file)`,
    );
  }
  return Number(n);
}

const isCount = (v) => Number.isSafeInteger(v) && v >= 0;

/**
 * The tensors of a header's JSON bytes `json` in a file of `totalBytes`:
 * {tensors: [{name, dtype, shape, begin, end}] in file order (offsets from
 * the file's start), metadata, dataStart}. Unsupported dtypes are refused
 * here, but for the buffers, which are skipped whatever they hold.
 */
export function parseHeader(json, totalBytes, where = "source") {
  const dataStart = 8 + json.length;
  let header;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(json));
  } catch (e) {
    throw badFile(where, "a safetensors header of JSON", `bytes that do not parse (${e.message})`);
  }
  if (header === null || typeof header !== "object" || Array.isArray(header)) {
    throw badFile(where, "a safetensors header holding a JSON object", describe(header));
  }
  const tensors = [];
  for (const [name, entry] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const at = `${where} tensor "${name}"`;
    const { dtype, shape, data_offsets: offsets } = entry ?? {};
    if (
      typeof dtype !== "string" ||
      !Array.isArray(shape) ||
      !shape.every(isCount) ||
      !Array.isArray(offsets) ||
      offsets.length !== 2 ||
      !offsets.every(isCount)
    ) {
      throw badFile(
        at,
        "{dtype, shape: [sizes], data_offsets: [begin, end]}",
        JSON.stringify(entry)?.slice(0, 120),
      );
    }
    const buffer = BUFFER.test(name);
    if (!buffer && !(dtype in DTYPE_BYTES)) {
      throw new AttnkitError(
        `${at}: expected a dtype of F32, F16 or BF16 (widened to float32), got ${dtype}`,
        { parameter: where },
      );
    }
    const [begin, end] = offsets;
    if (!buffer) {
      const bytes = shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[dtype];
      if (end - begin !== bytes) {
        throw badFile(
          at,
          `${bytes} bytes (shape [${shape}] of ${dtype})`,
          `data_offsets [${begin}, ${end}]`,
        );
      }
    }
    tensors.push({ name, dtype, shape, begin: dataStart + begin, end: dataStart + end, buffer });
  }
  tensors.sort((a, b) => a.begin - b.begin || a.end - b.end);
  // The tensors tile the data: each starts where the last ended, the last ends the file.
  let next = dataStart;
  for (const t of tensors) {
    if (t.begin !== next || t.end < t.begin) {
      const what = t.begin < next ? "overlaps the one before" : "leaves a gap before it";
      throw badFile(
        `${where} tensor "${t.name}"`,
        `data_offsets starting at ${next - dataStart} (the tensors tile the data, in order)`,
        `[${t.begin - dataStart}, ${t.end - dataStart}], which ${what}`,
      );
    }
    next = t.end;
  }
  if (next !== totalBytes) {
    throw badFile(
      where,
      `${next - dataStart} bytes of data after the header (as its offsets say)`,
      `${totalBytes - dataStart} (${next > totalBytes ? "a truncated file, or a header that lies" : "bytes after the last tensor"})`,
    );
  }
  return { tensors, metadata: header.__metadata__ ?? null, dataStart };
}

/** A tensor's name without Hugging Face's "transformer." prefix. */
export const bare = (name) => name.replace(/^transformer\./, "");

/** Checks one of config.json's numbers: a count >= `min`. */
function count(json, key, min = 1) {
  const v = json[key];
  if (!Number.isSafeInteger(v) || v < min) {
    throw rangeError(`config.json ${key}`, `an integer >= ${min}`, describe(v));
  }
  return v;
}

/**
 * The model's config from config.json (a GPT-2: model_type "gpt2", the tanh
 * GELU, scores scaled by 1/sqrt(d_k)): {config (attnkit's ModelConfig), tied}.
 */
export function configFromJson(json) {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw rangeError("config.json", "a JSON object (a Hugging Face config)", describe(json));
  }
  if (json.model_type !== undefined && json.model_type !== "gpt2") {
    throw rangeError(
      "config.json model_type",
      '"gpt2" (GPT2LMHeadModel: gpt2, distilgpt2, gpt2-medium ...)',
      describe(json.model_type),
    );
  }
  const activation = json.activation_function ?? "gelu_new";
  if (!GELU_TANH.includes(activation)) {
    throw rangeError(
      "config.json activation_function",
      `${GELU_TANH.map((a) => JSON.stringify(a)).join(" or ")} (GPT-2's tanh GELU)`,
      describe(activation),
    );
  }
  for (const [key, want] of [
    ["scale_attn_weights", true],
    ["scale_attn_by_inverse_layer_idx", false],
    ["add_cross_attention", false],
  ]) {
    if (json[key] !== undefined && json[key] !== want) {
      throw rangeError(`config.json ${key}`, `${want} (GPT-2's attention)`, describe(json[key]));
    }
  }
  const dModel = count(json, "n_embd");
  const numHeads = count(json, "n_head");
  if (dModel % numHeads !== 0) {
    throw rangeError("config.json n_head", `a divisor of n_embd ${dModel}`, `${numHeads}`);
  }
  const positions = json.n_positions !== undefined ? "n_positions" : "n_ctx";
  const eps = json.layer_norm_epsilon ?? 1e-5;
  if (typeof eps !== "number" || !(eps > 0) || !Number.isFinite(eps)) {
    throw rangeError("config.json layer_norm_epsilon", "a finite number > 0", describe(eps));
  }
  const tied = json.tie_word_embeddings ?? true;
  if (typeof tied !== "boolean")
    throw rangeError("config.json tie_word_embeddings", "a boolean", describe(tied));
  return {
    config: gpt2Config({
      vocabSize: count(json, "vocab_size"),
      maxSeqLen: count(json, positions),
      dModel,
      numLayers: count(json, "n_layer"),
      numHeads,
      dFF:
        json.n_inner === undefined || json.n_inner === null ? 4 * dModel : count(json, "n_inner"),
      tied,
      layerNormEpsilon: eps,
    }),
    tied,
  };
}

/** attnkit's ModelConfig of a GPT-2 of these sizes. */
function gpt2Config({ tied, ...sizes }) {
  return {
    ...sizes,
    layerNorm: true,
    scaleBySqrtDk: true,
    bias: true,
    tiedUnembedding: tied,
  };
}

/**
 * The config read off the tensors' shapes, for a checkpoint without
 * config.json: wte [V, E], wpe [P, E], h.{i} up to the last layer, c_fc
 * [E, F]; lm_head.weight present = untied. The heads cannot be read off:
 * `numHeads` (options.numHeads) gives them.
 */
export function configFromShapes(tensors, numHeads) {
  const byName = new Map(tensors.map((t) => [bare(t.name), t]));
  const shape = (name) => {
    const t = byName.get(name);
    if (!t) {
      throw rangeError(
        "source",
        `a GPT-2 checkpoint (tensors "wte.weight", "wpe.weight", "h.0.*" ...) with or without "transformer."`,
        `no tensor "${name}" (tensors ${[...byName.keys()].slice(0, 4).join(", ")} ...)`,
      );
    }
    return t.shape;
  };
  const [V, E] = shape("wte.weight");
  const [P] = shape("wpe.weight");
  let numLayers = 0;
  for (const name of byName.keys()) {
    const m = /^h\.(\d+)\./.exec(name);
    if (m) numLayers = Math.max(numLayers, Number(m[1]) + 1);
  }
  const [, F] = shape("h.0.mlp.c_fc.weight");
  if (numHeads === undefined) {
    throw new AttnkitError(
      "options.numHeads: expected the number of heads (a checkpoint without config.json: n_head " +
        "cannot be read from the tensors' shapes), got undefined",
      { parameter: "options.numHeads" },
    );
  }
  if (!Number.isSafeInteger(numHeads) || numHeads < 1 || E % numHeads !== 0) {
    throw rangeError(
      "options.numHeads",
      `a divisor of the embedding's width ${E}`,
      describe(numHeads),
    );
  }
  const tied = !byName.has(HEAD);
  return {
    config: gpt2Config({
      vocabSize: V,
      maxSeqLen: P,
      dModel: E,
      numLayers,
      numHeads,
      dFF: F,
      tied,
      layerNormEpsilon: 1e-5,
    }),
    tied,
  };
}

/** Whether the model reads tensor `t` (buffers never; a stored head only when untied). */
export const isRead = (t, tied) => !t.buffer && !(tied && bare(t.name) === HEAD);

/**
 * What a checkpoint holds and takes: its parameters (floats the model holds),
 * the dtype of its tensors ("F32", "F16", "BF16", or "mixed"), and the bytes
 * of module memory the model needs: its float32 weights, the staging of a
 * tensor's part (at most PART_BYTES), and the work memory of a forward over
 * maxSeqLen tokens.
 */
export function checkpointSizes(tensors, config, tied) {
  let parameters = 0,
    largest = 0;
  const dtypes = new Set();
  for (const t of tensors) {
    if (!isRead(t, tied)) continue;
    parameters += t.shape.reduce((a, b) => a * b, 1);
    largest = Math.max(largest, t.end - t.begin);
    dtypes.add(t.dtype);
  }
  const { maxSeqLen: T, dModel: E, numHeads: H, dFF: F, vocabSize: V } = config;
  // A forward over a full context: one layer's activations (Q, K, V, the
  // maps, the MLP) and the logits.
  const work = 4 * (T * (8 * E + H * T + 2 * F) + T * V);
  return {
    parameters,
    dtype: dtypes.size === 1 ? [...dtypes][0] : "mixed",
    memoryBytes: 4 * parameters + Math.min(largest, PART_BYTES) + work,
  };
}
