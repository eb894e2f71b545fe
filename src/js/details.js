// attnkit: a core Status detail in the JS API's words. C++ field names, enum
// constants and number spellings become what a JS caller writes, so that a
// message never asks for something only C++ has; the options' names come
// from their schema (options.js).
import { ATTENTION_OPTIONS, SAMPLING_OPTIONS, TRAINER_OPTIONS, detailWords } from "./options.js";

// The attention layer's words.
const CORE_WORDS = [
  [/\(d_k = ([\w ]+) \/ num_heads\)/g, "(config.dK, when not given, is $1 / numHeads)"],
  [/\bnum_kv_heads\b/g, "numKvHeads"],
  [/\bnum_heads\b/g, "numHeads"],
  [/\bd_k\b/g, "dK"],
  [/\bd_v\b/g, "dV"],
  // Before the options' own names (a word boundary keeps "bool_mask" out of these).
  [/\bcausal_alignment = kUpperLeft\b/g, 'causalAlignment: "upperLeft"'],
  [/ \((bool|additive)_mask_layout\.(batch|heads)\)/g, " (the $2 dimension of the mask's shape)"],
  [/\b(bool|additive)_mask_layout\.(batch|heads)\b/g, "$2"],
  // key_length -> options.keyLength ... (the schema's C++ names).
  ...detailWords(ATTENTION_OPTIONS, "options."),
  [/\bkLowerRight\b/g, '"lowerRight"'],
  [/\bkUpperLeft\b/g, '"upperLeft"'],
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
  // learning_rate -> learningRate, top_k -> topK ... (the schemas' C++ names).
  ...detailWords(TRAINER_OPTIONS, ""),
  ...detailWords(SAMPLING_OPTIONS, ""),
  [/\bd_ff\b/g, "dFF"],
  [/\bvalidation_windows\b/g, "validationWindows"],
  [/\bscale_by_sqrt_dk\b/g, "scaleBySqrtDk"],
  [/\blayer_norm_epsilon\b/g, "layerNormEpsilon"],
  [/\blayer_norm\b/g, "layerNorm"],
  [/\btied_unembedding\b/g, "tiedUnembedding"],
];

/** A core Status detail in the JS API's words (`model`: the model layer's fields too). */
export function jsDetail(detail, { model = false } = {}) {
  let text = detail;
  for (const [from, to] of model ? [...MODEL_WORDS, ...CORE_WORDS] : CORE_WORDS) {
    text = text.replace(from, to);
  }
  return text;
}
