// Tiny GPT-2 checkpoints in Hugging Face's exact layout (GPT2LMHeadModel's
// model.safetensors and config.json), with seeded random weights, for the tests
// of the package (Node) and of the page (its browser tests' server). Plain ES
// module: no Node builtins, so that a page can import it as well.
//
// The safetensors format: 8 bytes little-endian header length N, N bytes of
// JSON ({name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__"}),
// padded with spaces to a multiple of 8, then the data; offsets count from the
// first byte after the header.

import { rng } from "../reference.js";

const encoder = new TextEncoder();

/** A seeded uniform generator on [0, 1) (mulberry32, the tests' own). */
export const seededRandom = rng;

/** A seeded standard normal generator (Box-Muller over seededRandom). */
export function seededNormal(seed) {
  const uniform = seededRandom(seed);
  return () => {
    const u = 1 - uniform(),
      v = uniform();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
}

// Bytes per element of the float dtypes attnkit reads.
export const DTYPE_BYTES = { F32: 4, F16: 2, BF16: 2 };

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The bits of `x` as an IEEE half (round to nearest even; overflow to infinity). */
export function toHalfBits(x) {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let m = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    if (rest > half || (rest === half && m & 1)) m += 1;
    return sign | m;
  }
  let m = mant >>> 13;
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && m & 1)) {
    m += 1;
    if (m === 0x400) {
      m = 0;
      e += 1;
      if (e >= 0x1f) return sign | 0x7c00;
    }
  }
  return sign | (e << 10) | m;
}

/** The value of IEEE half bits. */
export function fromHalfBits(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** The bits of `x` as a bfloat16 (round to nearest even). */
export function toBfloat16Bits(x) {
  f32[0] = x;
  const b = u32[0];
  if ((b & 0x7f800000) === 0x7f800000 && b & 0x7fffff) return (b >>> 16) | 0x40;
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The value of bfloat16 bits. */
export function fromBfloat16Bits(h) {
  u32[0] = (h & 0xffff) << 16;
  return f32[0];
}

/**
 * `data` (floats) stored as `dtype` ("F32", "F16", "BF16"): its little-endian
 * bytes, and the values the file then holds, widened to float32.
 */
export function encodeFloats(data, dtype) {
  const n = data.length;
  const bytes = new Uint8Array(n * DTYPE_BYTES[dtype]);
  const view = new DataView(bytes.buffer);
  const stored = new Float32Array(n);
  for (let i = 0; i < n; ++i) {
    if (dtype === "F32") {
      view.setFloat32(4 * i, data[i], true);
      stored[i] = data[i];
    } else if (dtype === "F16") {
      const h = toHalfBits(data[i]);
      view.setUint16(2 * i, h, true);
      stored[i] = fromHalfBits(h);
    } else if (dtype === "BF16") {
      const h = toBfloat16Bits(data[i]);
      view.setUint16(2 * i, h, true);
      stored[i] = fromBfloat16Bits(h);
    } else {
      throw new Error(`encodeFloats: unknown dtype ${dtype}`);
    }
  }
  return { bytes, stored };
}

/**
 * A safetensors file of `header` (the JSON header as an object, written as it
 * is: offsets and all) and `data` (the bytes after it). `headerLength`
 * overrides the 8-byte length (a file that lies about it).
 */
export function rawSafetensors(header, data, { headerLength, pad = true } = {}) {
  let json = JSON.stringify(header);
  if (pad) json += " ".repeat((8 - ((8 + encoder.encode(json).length) % 8)) % 8);
  const text = encoder.encode(json);
  const out = new Uint8Array(8 + text.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLength ?? text.length), true);
  out.set(text, 8);
  out.set(data, 8 + text.length);
  return out;
}

/**
 * A safetensors file of `entries` [{name, dtype, shape, data}] in that order:
 * `data` a float array (stored as dtype) or a Uint8Array of raw bytes (any
 * dtype, e.g. "I64"). Returns {bytes, stored: Map name -> float32 values as
 * stored (float entries only)}.
 */
export function writeSafetensors(entries, { metadata = { format: "pt" } } = {}) {
  const header = {};
  if (metadata) header.__metadata__ = metadata;
  const chunks = [];
  const stored = new Map();
  let offset = 0;
  for (const { name, dtype, shape, data } of entries) {
    let bytes = data;
    if (!(data instanceof Uint8Array)) {
      const encoded = encodeFloats(data, dtype);
      bytes = encoded.bytes;
      stored.set(name, encoded.stored);
    }
    header[name] = { dtype, shape, data_offsets: [offset, offset + bytes.length] };
    chunks.push(bytes);
    offset += bytes.length;
  }
  const data = new Uint8Array(offset);
  let at = 0;
  for (const c of chunks) {
    data.set(c, at);
    at += c.length;
  }
  return { bytes: rawSafetensors(header, data), stored };
}

/** Random floats: N(0, scale^2), seeded. */
function randomArray(normal, n, scale) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; ++i) a[i] = normal() * scale;
  return a;
}

/**
 * GPT-2's tensors as [name, shape] (Hugging Face's names without the
 * "transformer." prefix, in the module's order; Conv1D weights [in, out])
 * for config.json's sizes; with `untied`, lm_head.weight [vocab, n_embd] last.
 */
export function gpt2Shapes(
  { n_embd: E, n_layer: L, n_positions: P, vocab_size: V, n_inner },
  { untied = false } = {},
) {
  const F = n_inner ?? 4 * E;
  const shapes = [
    ["wte.weight", [V, E]],
    ["wpe.weight", [P, E]],
  ];
  for (let l = 0; l < L; ++l) {
    const h = `h.${l}`;
    shapes.push(
      [`${h}.ln_1.weight`, [E]],
      [`${h}.ln_1.bias`, [E]],
      [`${h}.attn.c_attn.weight`, [E, 3 * E]],
      [`${h}.attn.c_attn.bias`, [3 * E]],
      [`${h}.attn.c_proj.weight`, [E, E]],
      [`${h}.attn.c_proj.bias`, [E]],
      [`${h}.ln_2.weight`, [E]],
      [`${h}.ln_2.bias`, [E]],
      [`${h}.mlp.c_fc.weight`, [E, F]],
      [`${h}.mlp.c_fc.bias`, [F]],
      [`${h}.mlp.c_proj.weight`, [F, E]],
      [`${h}.mlp.c_proj.bias`, [E]],
    );
  }
  shapes.push(["ln_f.weight", [E]], ["ln_f.bias", [E]]);
  if (untied) shapes.push(["lm_head.weight", [V, E]]);
  return shapes;
}

/**
 * A tiny GPT-2's weights, seeded: {config (config.json's object), tensors:
 * [{name, shape, data}]} as gpt2Shapes names them. LayerNorm gains are near 1
 * and biases small, so that every part matters.
 */
export function gpt2Weights({
  numLayers = 1,
  dModel = 16,
  numHeads = 2,
  vocabSize = 100,
  nPositions = 32,
  nInner = null,
  epsilon = 1e-5,
  seed = 1,
  untied = false,
  scale = 0.3,
} = {}) {
  const config = {
    architectures: ["GPT2LMHeadModel"],
    model_type: "gpt2",
    activation_function: "gelu_new",
    n_embd: dModel,
    n_layer: numLayers,
    n_head: numHeads,
    n_positions: nPositions,
    n_ctx: nPositions,
    n_inner: nInner,
    vocab_size: vocabSize,
    layer_norm_epsilon: epsilon,
    scale_attn_weights: true,
    tie_word_embeddings: !untied,
    bos_token_id: vocabSize - 1,
    eos_token_id: vocabSize - 1,
  };
  const normal = seededNormal(seed);
  // Each tensor's spread: embeddings and head 0.5 / 0.2, biases 0.1, gains 1 + N(0, 0.1^2).
  const SPREAD = { "wte.weight": 0.5, "wpe.weight": 0.2, "lm_head.weight": 0.5 };
  const tensors = gpt2Shapes(config, { untied }).map(([name, shape]) => {
    const gain = /(^|\.)ln_[12f]\.weight$/.test(name);
    const spread = SPREAD[name] ?? (gain || name.endsWith(".bias") ? 0.1 : scale);
    const data = randomArray(
      normal,
      shape.reduce((a, b) => a * b, 1),
      spread,
    );
    if (gain) for (let i = 0; i < data.length; ++i) data[i] += 1;
    return { name, shape, data };
  });
  return { config, tensors };
}

/** The causal mask buffer attn.bias [1, 1, P, P] (lower triangle of ones). */
function causalMask(P) {
  const m = new Float32Array(P * P);
  for (let i = 0; i < P; ++i) for (let j = 0; j <= i; ++j) m[i * P + j] = 1;
  return m;
}

/**
 * A tiny GPT-2 checkpoint as Hugging Face writes one. Options: those of
 * gpt2Weights, and
 *   dtype    "F32" | "F16" | "BF16" (every tensor, as torch's .half() would)
 *   prefix   names with "transformer." (lm_head.weight never has it)
 *   buffers  the attn.bias [1, 1, P, P] and attn.masked_bias [] buffers
 *   head     "absent" (tied, no lm_head), "tied" (lm_head stored, equal to
 *            wte), "untied" (lm_head stored, its own; tie_word_embeddings false)
 *   order    "sorted" (safetensors' own order: by name) or "model" (the
 *            module's order)
 * Returns {config, configJson (its bytes), safetensors (the file's bytes),
 * weights (Map of unprefixed name -> float32 values as the file stores them,
 * the head's included when stored), tensorNames (as in the file)}.
 */
export function gpt2Checkpoint(options = {}) {
  const {
    dtype = "F32",
    prefix = false,
    buffers = false,
    head = "absent",
    order = "sorted",
    ...sizes
  } = options;
  const { config, tensors } = gpt2Weights({ ...sizes, untied: head === "untied" });
  const entries = tensors.map((t) => ({ ...t, dtype }));
  if (head === "tied") {
    const wte = tensors.find((t) => t.name === "wte.weight");
    entries.push({ name: "lm_head.weight", dtype, shape: wte.shape, data: wte.data });
  }
  if (buffers) {
    const P = config.n_positions;
    for (let l = 0; l < config.n_layer; ++l) {
      entries.push({ name: `h.${l}.attn.bias`, dtype, shape: [1, 1, P, P], data: causalMask(P) });
      entries.push({
        name: `h.${l}.attn.masked_bias`,
        dtype,
        shape: [],
        data: Float32Array.of(-1e4),
      });
    }
  }
  const named = entries.map((e) => ({
    ...e,
    name: prefix && !e.name.startsWith("lm_head.") ? `transformer.${e.name}` : e.name,
  }));
  if (order === "sorted") named.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const { bytes, stored } = writeSafetensors(named);
  const weights = new Map();
  for (const [name, values] of stored) {
    if (/\.attn\.(masked_)?bias$/.test(name)) continue;
    weights.set(name.replace(/^transformer\./, ""), values);
  }
  return {
    config,
    configJson: encoder.encode(JSON.stringify(config, null, 2)),
    safetensors: bytes,
    weights,
    tensorNames: named.map((e) => e.name),
  };
}

/** The byte ranges of a safetensors file: {headerLength, dataStart, header (parsed)}. */
export function safetensorsLayout(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  return { headerLength, dataStart: 8 + headerLength, header };
}
