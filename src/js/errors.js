// attnkit: the errors the package throws. Every message names the parameter,
// what was expected and what was given.

const BRAND = Symbol.for("attnkit.error");
const TYPE_BRAND = Symbol.for("attnkit.typeError");

/** Bad values: shapes, sizes, non-finite numbers, capacity, use after dispose. */
export class AttnkitError extends RangeError {
  constructor(message, { code = "invalid_argument", parameter = "" } = {}) {
    super(message);
    this.name = "AttnkitError";
    this.code = code;
    this.parameter = parameter;
  }
  // `e instanceof AttnkitError` is true for AttnkitTypeError too.
  static [Symbol.hasInstance](value) {
    return value != null && value[BRAND] === true;
  }
}
Object.defineProperty(AttnkitError.prototype, BRAND, { value: true });

/** Wrong types: a string where a matrix was expected, a missing argument. */
export class AttnkitTypeError extends TypeError {
  constructor(message, { parameter = "" } = {}) {
    super(message);
    this.name = "AttnkitTypeError";
    this.code = "type";
    this.parameter = parameter;
  }
  // Every entry point (attnkit, attnkit/simd, attnkit/worker ...) bundles its
  // own copy of the classes: `e instanceof AttnkitTypeError` holds across them.
  static [Symbol.hasInstance](value) {
    return value != null && value[TYPE_BRAND] === true;
  }
}
Object.defineProperty(AttnkitTypeError.prototype, BRAND, { value: true });
Object.defineProperty(AttnkitTypeError.prototype, TYPE_BRAND, { value: true });

// The kind of every object the package gives out ("Model", "Trainer" ...), in
// every module and every entry point's bundle (a registered symbol, not
// enumerable: copies lack it). handles.js gives it.
export const KIND = Symbol.for("attnkit.kind");

/** The kind of one of the package's objects ("Trainer" ...), else undefined. */
export function kindOf(value) {
  return value != null && typeof value === "object" ? value[KIND] : undefined;
}

/** "a Trainer", "an AsyncModel": `kind` with its article. */
export const withArticle = (kind) => `${/^[AEIOU]/.test(kind) ? "an" : "a"} ${kind}`;

/** A short description of a value for messages: "string \"abc\"", "array of 3", "null", "a Trainer". */
export function describe(value) {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "number") return Number.isNaN(value) ? "NaN" : String(value);
  if (typeof value === "string")
    return `string ${JSON.stringify(value.length > 20 ? value.slice(0, 20) + "…" : value)}`;
  if (typeof value === "boolean" || typeof value === "bigint") return `${typeof value} ${value}`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value instanceof DataView) return `a DataView of ${value.byteLength} bytes`;
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name} of ${value.length}`;
  if (typeof value === "function") return "a function";
  if (kindOf(value)) return withArticle(kindOf(value));
  return `an object with keys {${Object.keys(value).slice(0, 6).join(", ")}}`;
}

export function typeError(parameter, expected, value) {
  return new AttnkitTypeError(`${parameter}: expected ${expected}, got ${describe(value)}`, {
    parameter,
  });
}

export function rangeError(parameter, expected, given, code = "invalid_argument") {
  return new AttnkitError(`${parameter}: expected ${expected}, got ${given}`, { code, parameter });
}

// The core's words in a Status detail -> the words of the JS API: C++ field
// names, enum constants and number spellings, so that a message never asks a
// JS caller for something only C++ has.
const CORE_WORDS = [
  [/\(d_k = ([\w ]+) \/ num_heads\)/g, "(config.dK, when not given, is $1 / numHeads)"],
  [/\bnum_kv_heads\b/g, "numKvHeads"],
  [/\bnum_heads\b/g, "numHeads"],
  [/\bd_k\b/g, "dK"],
  [/\bd_v\b/g, "dV"],
  [/\bkey_lengths\b/g, "options.keyLengths"],
  [/\bkey_length\b/g, "options.keyLength"],
  [/\bcausal_alignment = kUpperLeft\b/g, 'causalAlignment: "upperLeft"'],
  [/\bcausal_alignment\b/g, "options.causalAlignment"],
  [/\bkLowerRight\b/g, '"lowerRight"'],
  [/\bkUpperLeft\b/g, '"upperLeft"'],
  [/\bcausal_offsets\b/g, "options.causalOffsets"],
  [/\bcausal_offset\b/g, "options.causalOffset"],
  [/ \((bool|additive)_mask_layout\.(batch|heads)\)/g, " (the $2 dimension of the mask's shape)"],
  [/\b(bool|additive)_mask_layout\.(batch|heads)\b/g, "$2"],
  [/\bbool_mask\b/g, "options.boolMask"],
  [/\badditive_mask\b/g, "options.additiveMask"],
  [/\bpast_K\b/g, "options.pastKey"],
  [/\bpast_V\b/g, "options.pastValue"],
  [/\bpresent_[KV]\b/g, "options.present"],
  [/\bscores_stage\b/g, "options.scores"],
  [/\bk(Raw|Scaled|Masked|Weights)\b/g, (_, s) => `"${s.toLowerCase()}"`],
  [/\b([XQKV])_new\b/g, "$1"],
  [/\bseq_len\b/g, "seq"],
  [/\bX_q\b/g, "Xq"],
  [/\bX_kv\b/g, "Xkv"],
  [/(^|[^\w-])(-?)inf\b/g, "$1$2Infinity"],
  [/\bnan\b/g, "NaN"],
  [/ at \((\d+), (\d+)\)/g, " at row $1, column $2"],
];
// The model layer's words besides (its config and options fields).
const MODEL_WORDS = [
  [
    /^AttentionWeights needs a Forward first$/,
    "expected a forward pass first (evaluate, inspect, a trainer's step or a dataset's validationLoss), got none",
  ],
  [/\bd_model\b/g, "dModel"],
  [/\bvocab_size\b/g, "vocabSize"],
  [/\bmax_seq_len\b/g, "maxSeqLen"],
  [/\bnum_layers\b/g, "numLayers"],
  [/\bseq_len\b/g, "seqLen"],
  [/\bmin_learning_rate\b/g, "minLearningRate"],
  [/\blearning_rate\b/g, "learningRate"],
  [/\bdecay_steps\b/g, "decaySteps"],
  [/\bd_ff\b/g, "dFF"],
  [/\btop_k\b/g, "topK"],
  [/\bvalidation_windows\b/g, "validationWindows"],
  [/\bweight_decay\b/g, "weightDecay"],
  [/\bclip_norm\b/g, "clipNorm"],
  [/\bwarmup_steps\b/g, "warmupSteps"],
  [/\bscale_by_sqrt_dk\b/g, "scaleBySqrtDk"],
  [/\blayer_norm\b/g, "layerNorm"],
];

/** A core Status detail in the JS API's words (`model`: the model layer's fields too). */
export function jsDetail(detail, { model = false } = {}) {
  let text = detail;
  for (const [from, to] of model ? [...MODEL_WORDS, ...CORE_WORDS] : CORE_WORDS) {
    text = text.replace(from, to);
  }
  return text;
}
