// attnkit: checking the API's arguments (options, weights, head configs,
// batched shapes, ONNX extras) and sizing results, before anything crosses
// into wasm. Every error names the JS parameter, what was expected and what
// was given.
import { AttnkitTypeError, describe, kindOf, rangeError, typeError } from "./errors.js";
import { checkCount, checkKeys, count, isObject, toMatrix, toTensor } from "./convert.js";
import { ATTENTION_OPTIONS, attentionBits, givenOptions, lowestBit } from "./options.js";

// The options every attention call takes, in the schema's order (options.js).
const OPTION_KEYS = ATTENTION_OPTIONS.map((e) => e.name);
const CHECKED = attentionBits((e) => e.check);
const INPUTS = attentionBits((e) => e.input);
const isArray = (e) => e.word === "array" || e.word === "mask";
const ARRAYS = ATTENTION_OPTIONS.filter(isArray);
/** The options with inputs in wasm memory ("array" and "mask"), in optionInputs()' order. */
export const ARRAY_OPTIONS = ARRAYS;
// Options of other calls, named as such when given to a call without them
// (an edit distance would suggest an unrelated option).
const OTHER_CALLS_OPTIONS = {
  layout: "multiHeadAttentionQKV and its forward for training and backward",
  pastKey: "multiHeadAttentionQKV",
  pastValue: "multiHeadAttentionQKV",
  present: "multiHeadAttentionQKV",
  scores: "multiHeadAttentionQKV",
  saved: "attentionBackward and multiHeadAttentionQKVBackward",
};
/** The extra options of multiHeadAttentionQKV (ONNX Attention's inputs and outputs). */
export const QKV_KEYS = ["layout", "pastKey", "pastValue", "present", "scores"];
const SCORE_STAGES = ["raw", "scaled", "masked", "weights"];
const CONFIG_KEYS = ["numHeads", "numKvHeads", "dK", "dV"];

/**
 * Checks an options object and returns it (for validation only). `outKeys`:
 * the gradients a backward call may write into (options.out is then an object
 * of Float32Arrays under those names, not one Float32Array).
 */
export function checkOptions(options, extraKeys = [], outKeys = null) {
  if (options === undefined) return {};
  if (!isObject(options) || Array.isArray(options)) {
    throw typeError("options", "an object", options);
  }
  const valid = [...OPTION_KEYS, ...extraKeys];
  for (const key of Object.keys(options)) {
    if (valid.includes(key) || !(key in OTHER_CALLS_OPTIONS)) continue;
    throw rangeError(
      `options.${key}`,
      `one of ${valid.join(", ")} (${key} is an option of ${OTHER_CALLS_OPTIONS[key]})`,
      "an option this call does not take",
    );
  }
  checkKeys("options", options, valid, "option");
  // In the schema's order, whatever the order of the keys given.
  for (let bits = givenOptions(options) & CHECKED; bits !== 0; bits &= bits - 1) {
    const e = ATTENTION_OPTIONS[lowestBit(bits)];
    e.check(options[e.name], options, outKeys);
  }
  return options;
}

/**
 * The outputs of a backward call ({name, rows, cols}) as Marshal.run()
 * outputs, each written into options.out[name] when given (its length checked).
 */
export function gradientOutputs(options, grads) {
  const out = options?.out;
  return grads.map(({ name, rows, cols, shape, blame }) => {
    const into = out?.[name];
    if (into !== undefined && into.length !== rows * cols) {
      throw rangeError(
        `options.out.${name}`,
        `a Float32Array of ${count(rows * cols, "value")} (${name} [${(shape ?? [rows, cols]).join(", ")}])`,
        `${into.length}`,
        "shape_mismatch",
      );
    }
    return { rows, cols, into, blame: blame ?? name };
  });
}

/**
 * options.saved of a backward call: the forward's { out, lse } as two inputs
 * (null when absent), each converted by `convert(name, value)`.
 */
export function savedInputs(options, convert) {
  const saved = options?.saved;
  if (saved === undefined) return null;
  if (!isObject(saved) || Array.isArray(saved)) {
    throw typeError(
      "options.saved",
      "an object {out, lse} (the forward for training's result)",
      saved,
    );
  }
  checkKeys("options.saved", saved, ["out", "lse"]);
  return [convert("options.saved.out", saved.out), convert("options.saved.lse", saved.lse)];
}

/**
 * The options' arrays, checked, as call inputs (null when absent), in the
 * order of ARRAY_OPTIONS; the other options checked at this point
 * (keyLength) too, all in the schema's order.
 */
export function optionInputs(options) {
  const inputs = ARRAYS.map(() => null);
  if (options === undefined) return inputs;
  for (let bits = givenOptions(options) & INPUTS; bits !== 0; bits &= bits - 1) {
    const e = ATTENTION_OPTIONS[lowestBit(bits)];
    const input = e.input(options[e.name]);
    if (isArray(e)) inputs[ARRAYS.indexOf(e)] = input;
  }
  return inputs;
}

/** W_Q, W_K, W_V (and W_O or null, `withOutput`) as matrices. */
export function weightMats(weights, withOutput) {
  const names = withOutput ? ["W_Q", "W_K", "W_V", "W_O?"] : ["W_Q", "W_K", "W_V"];
  const pack = packGiven(weights);
  if (pack) {
    throw new AttnkitTypeError(
      `weights: expected an object {${names.join(", ")}} of plain weights, got ${pack}: ` +
        "packed weights are taken only by multiHeadAttention, as packWeights() returned them " +
        "(the same module's; a copy has no handle)",
      { parameter: "weights" },
    );
  }
  if (!isObject(weights) || Array.isArray(weights) || kindOf(weights)) {
    throw typeError("weights", `an object {${names.join(", ")}}`, weights);
  }
  checkKeys(
    "weights",
    weights,
    names.map((n) => n.replace("?", "")),
  );
  const mats = ["W_Q", "W_K", "W_V"].map((k) => toMatrix(`weights.${k}`, weights[k]));
  if (withOutput) {
    mats.push(weights.W_O !== undefined ? toMatrix("weights.W_O", weights.W_O) : null);
  }
  return mats;
}

// The fields of packed weights (PackedWeights): a copy of a pack has these only.
const PACK_FIELDS = ["dModel", "dOut", "numHeads", "numKvHeads", "dK", "dV"];

/** How `weights` is packed weights or a copy of them, else "". */
export function packGiven(weights) {
  if (kindOf(weights) === "PackedWeights") return "packed weights";
  if (!isObject(weights) || Array.isArray(weights)) return "";
  const keys = Object.keys(weights);
  const copy = keys.length > 0 && keys.every((k) => PACK_FIELDS.includes(k));
  return copy ? "a copy of packed weights (their fields, no handle)" : "";
}

/** A head config {numHeads, numKvHeads?, dK?, dV?}, with 0 for "derive". */
export function checkConfig(config) {
  if (!isObject(config) || Array.isArray(config)) {
    throw typeError("config", "an object {numHeads, numKvHeads?, dK?, dV?}", config);
  }
  checkKeys("config", config, CONFIG_KEYS);
  const heads = {
    numHeads: checkCount("config.numHeads", config.numHeads),
    numKvHeads: 0,
    dK: 0,
    dV: 0,
  };
  for (const key of ["numKvHeads", "dK", "dV"]) {
    if (config[key] !== undefined) heads[key] = checkCount(`config.${key}`, config[key]);
  }
  return heads;
}

/** Rows, cols of a rank-2 or rank-3 tensor as [batch * seq, cols] with its batch. */
export function asBatchRows(name, t) {
  if (t.shape.length === 2) return { batch: 1, seq: t.shape[0], cols: t.shape[1] };
  if (t.shape.length === 3) return { batch: t.shape[0], seq: t.shape[1], cols: t.shape[2] };
  throw rangeError(
    `${name}.shape`,
    "[batch, seq, features] or [seq, features]",
    `[${t.shape.join(", ")}]`,
    "shape_mismatch",
  );
}

/**
 * A cache input as rows [batch * T_new, cols]: a rank-3 tensor's batch must be
 * the cache's (rank 2 holds the items' rows one after the other).
 */
export function cacheRows(name, t, batch) {
  const r = asBatchRows(name, t);
  if (t.shape.length === 3 && r.batch !== batch) {
    throw rangeError(
      `${name}.shape[0]`,
      `the cache's batch = ${batch}`,
      `${r.batch} (shape [${t.shape.join(", ")}])`,
      "shape_mismatch",
    );
  }
  return {
    data: t.data,
    rows: r.batch * r.seq,
    cols: r.cols,
    seq: t.shape.length === 3 ? r.seq : 0,
  };
}

/** A cache result [batch * T_new, cols] in the caller's rank. */
export const cacheShape = (r, cols, batch) => (r.seq ? [batch, r.seq, cols] : [r.rows, cols]);

/**
 * d_out of a multi-head call: the width of the output block laid out before
 * the call. The core resolves the heads again and checks every shape; this
 * only sizes the result (asking the core first would add a boundary crossing
 * to every call).
 */
export function headsOut(heads, dModel, W_O, V_cols) {
  if (W_O) return W_O.cols;
  const kvh = heads.numKvHeads || heads.numHeads;
  const dV =
    heads.dV ||
    (V_cols ? Math.floor(V_cols / kvh) : heads.dK || Math.floor(dModel / heads.numHeads));
  return heads.numHeads * dV;
}

/** options.pastKey and options.pastValue as rows [batch * kvHeads * T_past, d], checked. */
function pastInputs(o, batch, kvh, dK, dV) {
  if ((o.pastKey === undefined) !== (o.pastValue === undefined)) {
    const missing = o.pastKey === undefined ? "options.pastKey" : "options.pastValue";
    throw rangeError(
      missing,
      "past keys and values together",
      "only one of them",
      "invalid_argument",
    );
  }
  const inputs = [];
  let past = 0;
  if (o.pastKey === undefined) return { inputs, past };
  for (const [name, value, width, widthName] of [
    ["options.pastKey", o.pastKey, dK, "dK"],
    ["options.pastValue", o.pastValue, dV, "dV"],
  ]) {
    const t = toTensor(name, value);
    const shape = `[${t.shape.join(", ")}]`;
    if (t.shape.length !== 4) {
      throw rangeError(
        `${name}.shape`,
        "[batch, kvHeads, T_past, headDim]",
        shape,
        "shape_mismatch",
      );
    }
    const [b, h, T, d] = t.shape;
    if (b !== batch || h !== kvh) {
      throw rangeError(
        `${name}.shape`,
        `[${batch}, ${kvh}, T_past, headDim] (batch and K/V heads of the call)`,
        shape,
        "shape_mismatch",
      );
    }
    if (d !== width) {
      throw rangeError(
        `${name}.shape[3]`,
        `${widthName} = ${width} (the head size of the call's ${widthName === "dK" ? "keys" : "values"})`,
        `${d} (shape ${shape})`,
        "shape_mismatch",
      );
    }
    if (inputs.length && T !== past) {
      throw rangeError(
        `${name}.shape[2]`,
        `T_past = ${past} (as options.pastKey)`,
        `${T}`,
        "shape_mismatch",
      );
    }
    past = T;
    inputs.push({ name: t.name, data: t.data, rows: b * h * T, cols: d });
  }
  return { inputs, past };
}

/**
 * The ONNX extras of multiHeadAttentionQKV: past keys and values (inputs,
 * [batch, kvHeads, T_past, d] each), present keys and values and the scores
 * of one stage (outputs), as Marshal.run() inputs and outputs. `stage`: 0 none,
 * 1 raw, 2 scaled, 3 masked, 4 weights (the binding's ScoresStage order).
 */
export function qkvExtras(options, heads, { batch, seqQ, seqK, dK, dV }) {
  const o = options ?? {};
  const kvh = heads.numKvHeads || heads.numHeads;
  const { inputs, past } = pastInputs(o, batch, kvh, dK, dV);
  if (o.present !== undefined && typeof o.present !== "boolean") {
    throw typeError("options.present", "a boolean", o.present);
  }
  const stage = o.scores === undefined ? 0 : SCORE_STAGES.indexOf(o.scores) + 1;
  if (stage === 0 && o.scores !== undefined) {
    const stages = SCORE_STAGES.map((s) => `"${s}"`).join(", ");
    throw rangeError("options.scores", stages, describe(o.scores));
  }
  const total = past + seqK;
  const outputs = [];
  if (o.present) {
    outputs.push(
      { rows: batch * kvh * total, cols: dK, blame: "K" },
      { rows: batch * kvh * total, cols: dV, blame: "V" },
    );
  }
  if (stage) {
    outputs.push({
      rows: batch * heads.numHeads * seqQ,
      cols: total,
      blame: "options.scores",
      what: " in the scores [batch, heads, T_q, T_k]",
    });
  }
  return { inputs, outputs, present: o.present === true, stage };
}

/** options.layout of a multi-head call on Q, K, V: "bshd" (the default) or "bhsd". */
export function layoutOf(options) {
  const layout = options?.layout ?? "bshd";
  if (layout !== "bshd" && layout !== "bhsd") {
    throw rangeError("options.layout", '"bshd" or "bhsd"', describe(layout));
  }
  return layout;
}

/**
 * The inputs of a layer's call on X (multiHeadAttention and its training
 * backward), checked: X [batch?, seq, d_model], the weights, the heads, X's
 * rows as one matrix (xm) and the heads' output width (dOut).
 */
export function layerInputs(X, weights, config) {
  const x = toTensor("X", X);
  const mats = weightMats(weights, true);
  const heads = checkConfig(config);
  const r = asBatchRows("X", x);
  const xm = { name: x.name, data: x.data, rows: r.batch * r.seq, cols: r.cols };
  return { x, mats, heads, r, xm, dOut: headsOut(heads, r.cols, mats[3], 0) };
}

/**
 * The inputs of a call on Q, K, V (multiHeadAttentionQKV and its training
 * forward and backward), checked: options.layout, the heads, the tensors and
 * their rows as the core reads them (qkvRows).
 */
export function qkvInputs(Q, K, V, config, options) {
  const layout = layoutOf(options);
  const heads = checkConfig(config);
  const q = toTensor("Q", Q),
    k = toTensor("K", K),
    v = toTensor("V", V);
  return { layout, heads, q, k, v, rows: qkvRows(layout, q, k, v, heads) };
}

/**
 * Q, K, V of multiHeadAttentionQKV (and its gradients) as the core takes them,
 * their data passed as it is, never copied: "bshd" tensors [batch, seq,
 * heads * d] (or [seq, heads * d]) as rows [batch * seq, heads * d], "bhsd"
 * tensors [batch, heads, seq, d] as rows [batch * heads * seq, d], each head
 * a contiguous block. With the batch, the query and key lengths, the head
 * sizes, the layout's word for the bindings (0 bshd, 1 bhsd) and the output
 * ({rows, cols, shape}: out and dO in the same layout). A bhsd call's
 * numKvHeads comes from K's shape when the config leaves it out.
 */
export function qkvRows(layout, q, k, v, heads) {
  const mismatch = (name, expected, given) => rangeError(name, expected, given, "shape_mismatch");
  const h = heads.numHeads;
  const qkv = [
    ["Q", q],
    ["K", k],
    ["V", v],
  ];
  if (layout === "bshd") {
    for (const [name, t] of qkv) {
      if (t.shape.length === 4) {
        const expected =
          '[batch, seq, heads * headDim] or [seq, heads * headDim] (layout "bshd", the default; ' +
          'a [batch, heads, seq, headDim] tensor needs options.layout: "bhsd")';
        throw mismatch(`${name}.shape`, expected, `[${t.shape.join(", ")}]`);
      }
    }
    const rq = asBatchRows("Q", q),
      rk = asBatchRows("K", k),
      rv = asBatchRows("V", v);
    if (rk.batch !== rq.batch)
      throw mismatch("K.shape[0]", `batch = ${rq.batch} (as Q)`, `${rk.batch}`);
    if (rv.batch !== rq.batch)
      throw mismatch("V.shape[0]", `batch = ${rq.batch} (as Q)`, `${rv.batch}`);
    // The core resolves and checks the heads again; these only size the results.
    const dV = headsOut(heads, 0, null, rv.cols) / h;
    return {
      qm: { name: q.name, data: q.data, rows: rq.batch * rq.seq, cols: rq.cols },
      km: { name: k.name, data: k.data, rows: rk.batch * rk.seq, cols: rk.cols },
      vm: { name: v.name, data: v.data, rows: rv.batch * rv.seq, cols: rv.cols },
      batch: rq.batch,
      seqQ: rq.seq,
      seqK: rk.seq,
      dK: heads.dK || Math.floor(rq.cols / h),
      dV,
      layoutWord: 0,
      out: {
        rows: rq.batch * rq.seq,
        cols: h * dV,
        shape: q.shape.length === 3 ? [rq.batch, rq.seq, h * dV] : [rq.seq, h * dV],
      },
    };
  }
  for (const [name, t] of qkv) {
    if (t.shape.length !== 4) {
      const expected = "[batch, heads, seq, headDim] (layout bhsd)";
      throw mismatch(`${name}.shape`, expected, `[${t.shape.join(", ")}]`);
    }
  }
  const [B, H, Tq, dK] = q.shape;
  const [, KH, Tk, dK2] = k.shape;
  const [, VH, Tv, dV] = v.shape;
  if (H !== h) throw mismatch("Q.shape[1]", `config.numHeads = ${h} (layout bhsd)`, `${H}`);
  // The core sees rows [batch * heads * seq, d]: the heads and head sizes of
  // the config are checked against the shapes here, where they are apart.
  if (heads.numKvHeads === 0) heads.numKvHeads = KH;
  if (KH !== heads.numKvHeads) {
    const expected = `config.numKvHeads = ${heads.numKvHeads} (layout bhsd)`;
    throw mismatch("K.shape[1]", expected, `${KH}`);
  }
  for (const [name, t] of [
    ["K", k],
    ["V", v],
  ]) {
    if (t.shape[0] !== B)
      throw mismatch(`${name}.shape[0]`, `batch = ${B} (as Q)`, `${t.shape[0]}`);
  }
  if (VH !== KH || Tv !== Tk) {
    const expected = `[${B}, ${KH}, ${Tk}, dV] (heads and seq as K)`;
    throw mismatch("V.shape", expected, `[${v.shape.join(", ")}]`);
  }
  for (const [name, given, key, want] of [
    ["Q.shape[3]", dK, "dK", heads.dK],
    ["K.shape[3]", dK2, "dK", heads.dK || dK],
    ["V.shape[3]", dV, "dV", heads.dV],
  ]) {
    if (want && given !== want) {
      const from = heads[key] ? `config.${key}` : "dK, the head size of Q";
      throw mismatch(name, `${from} = ${want} (layout bhsd)`, `${given}`);
    }
  }
  return {
    qm: { name: q.name, data: q.data, rows: B * H * Tq, cols: dK },
    km: { name: k.name, data: k.data, rows: B * KH * Tk, cols: dK2 },
    vm: { name: v.name, data: v.data, rows: B * VH * Tv, cols: dV },
    batch: B,
    seqQ: Tq,
    seqK: Tk,
    dK,
    dV,
    layoutWord: 1,
    out: { rows: B * H * Tq, cols: dV, shape: [B, H, Tq, dV] },
  };
}
