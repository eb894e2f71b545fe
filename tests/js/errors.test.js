// Every error case of the issue: the class (AttnkitError, a RangeError, or
// AttnkitTypeError, a TypeError; `instanceof AttnkitError` is true for both),
// e.code, e.parameter, and a message that names the parameter, what was
// expected and what was given. After each error the module still works.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";
import { VARIANTS } from "./helpers.js";

const Q = [
  [1, 0, 0],
  [0, 1, 0],
];
const K = [
  [1, 0, 0],
  [0, 1, 0],
  [1, 1, 1],
];
const V = [[1], [2], [3]];
const X = [
  [1, 2, 3, 4],
  [5, 6, 7, 8],
  [1, 1, 1, 1],
]; // T = 3, d_model = 4
const W = {
  W_Q: [
    [1, 0],
    [0, 1],
    [1, 1],
    [0, 0],
  ],
  W_K: [
    [1, 0],
    [0, 1],
    [1, 1],
    [0, 0],
  ],
  W_V: [[1], [0], [0], [1]],
};
const I4 = [
  [1, 0, 0, 0],
  [0, 1, 0, 0],
  [0, 0, 1, 0],
  [0, 0, 0, 1],
];
const MH = { W_Q: I4, W_K: I4, W_V: I4 }; // 4 heads of d 1, or 2 of d 2, ...
const t3 = (B, T, C, fill = 0.5) => ({
  data: new Float32Array(B * T * C).fill(fill),
  shape: [B, T, C],
});

/**
 * Runs fn, which must throw. kind "range": AttnkitError (RangeError); "type":
 * AttnkitTypeError (TypeError). `says` lists substrings the message must hold:
 * the expected and the given value.
 */
function expectError(fn, { kind, code, parameter, says = [] }) {
  let error;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  assert.ok(error, `expected ${parameter} to throw`);
  assert.ok(error instanceof AttnkitError, `instanceof AttnkitError: ${error}`);
  assert.ok(error instanceof Error);
  if (kind === "type") {
    assert.ok(error instanceof AttnkitTypeError, `AttnkitTypeError: ${error}`);
    assert.ok(error instanceof TypeError);
    assert.ok(!(error instanceof RangeError));
    assert.equal(error.name, "AttnkitTypeError");
    assert.equal(error.code, "type");
  } else {
    assert.ok(error instanceof RangeError, `RangeError: ${error}`);
    assert.ok(!(error instanceof AttnkitTypeError));
    assert.equal(error.name, "AttnkitError");
    assert.equal(error.code, code, `code of: ${error.message}`);
  }
  assert.equal(error.parameter, parameter, `parameter of: ${error.message}`);
  assert.ok(
    error.message.startsWith(`${parameter}: expected `),
    `message names the parameter: ${error.message}`,
  );
  assert.match(error.message, /, got /, `message names the given value: ${error.message}`);
  for (const s of says)
    assert.ok(
      error.message.includes(s),
      `message ${JSON.stringify(error.message)} includes ${JSON.stringify(s)}`,
    );
  assertJsWords(error.message, parameter);
  return error;
}

// The maths' dimension names a message may use; any other snake_case word,
// C++ enum constant (kLowerRight) or C spelling of a float (nan, inf) is a
// core name that a JS caller cannot write.
const MATHS_WORDS = [
  "d_model",
  "T_q",
  "T_k",
  "T_past",
  "T_new",
  "T_total",
  "W_Q",
  "W_K",
  "W_V",
  "W_O",
];
function assertJsWords(message, parameter) {
  const words =
    message
      .slice(parameter.length)
      .match(/\b[A-Za-z]+_[A-Za-z_]+\b|\bk[A-Z][a-z]\w*\b|\b(nan|inf)\b|\(\d+, \d+\)/g) ?? [];
  const core = words.filter((w) => !MATHS_WORDS.includes(w) && !/^(options|weights)\./.test(w));
  assert.deepEqual(core, [], `message in the JS API's words: ${message}`);
}

// [label, (attn) => call, expectation]
const CASES = [
  // ---- messages in JS words, shapes as the caller wrote them
  [
    "causalOffset without upperLeft says what to add",
    (a) => a.attention(Q, K, V, { causal: true, causalOffset: 1 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.causalOffset",
      says: ['causalAlignment: "upperLeft"', "got no causalAlignment"],
    },
  ],
  [
    "causalOffsets with lowerRight says what to add",
    (a) =>
      a.multiHeadAttentionQKV(
        t3(2, 3, 4),
        t3(2, 3, 4),
        t3(2, 3, 4),
        { numHeads: 2 },
        {
          causal: true,
          causalAlignment: "lowerRight",
          causalOffsets: [0, 1],
        },
      ),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.causalOffsets",
      says: ['causalAlignment: "upperLeft"', 'got causalAlignment string "lowerRight"'],
    },
  ],
  [
    "a mask's head extent in the mask's own terms",
    (a) =>
      a.multiHeadAttentionQKV(
        t3(1, 3, 4),
        t3(1, 3, 4),
        t3(1, 3, 4),
        { numHeads: 2 },
        {
          boolMask: { data: new Uint8Array(27).fill(1), shape: [3, 3, 3] },
        },
      ),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "options.boolMask",
      says: ["heads dimension of the mask's shape", "numHeads = 2", "got 3"],
    },
  ],
  [
    "NaN is spelled as JS spells it, with its row and column",
    (a) => a.attention([[1], [NaN]], [[1]], [[1]]),
    {
      kind: "range",
      code: "non_finite",
      parameter: "Q",
      says: ["got NaN at row 1, column 0"],
    },
  ],
  [
    "-Infinity in an input",
    (a) => a.attention([[1]], [[-Infinity]], [[1]]),
    { kind: "range", code: "non_finite", parameter: "K", says: ["got -Infinity at row 0"] },
  ],
  [
    "the default dK of a head count that does not divide d_model mentions config.dK",
    (a) =>
      a.multiHeadAttention(t3(1, 3, 4), MH, {
        numHeads: 3,
      }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.numHeads",
      says: ["config.dK", "d_model = 4", "got 3"],
    },
  ],
  [
    "options.out of a multi-head result says the result's own shape",
    (a) => a.multiHeadAttention(t3(2, 3, 4), MH, { numHeads: 2 }, { out: new Float32Array(5) }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "options.out",
      says: ["(the result [2, 3, 4])", "got 5"],
    },
  ],
  [
    "saved.lse of the wrong shape is named in the caller's shape",
    (a) =>
      a.multiHeadAttentionQKVBackward(
        t3(1, 3, 4),
        t3(1, 3, 4),
        t3(1, 3, 4),
        { numHeads: 2 },
        t3(1, 3, 4),
        { saved: { out: t3(1, 3, 4), lse: { data: new Float32Array(3), shape: [3] } } },
      ),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "options.saved.lse",
      says: ["shape [1, 2, 3] (batch, numHeads, T_q)", "got shape [3]"],
    },
  ],
  [
    "a past key of another head size names the caller's shape",
    (a) =>
      a.multiHeadAttentionQKV(
        t3(1, 3, 4),
        t3(1, 3, 4),
        t3(1, 3, 4),
        { numHeads: 2 },
        {
          pastKey: { data: new Float32Array(6), shape: [1, 2, 1, 3] },
          pastValue: { data: new Float32Array(4), shape: [1, 2, 1, 2] },
        },
      ),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "options.pastKey.shape[3]",
      says: ["dK = 2", "got 3 (shape [1, 2, 1, 3])"],
    },
  ],
  [
    "scores past float range in the forward for training: overflow, not a row of zeros",
    (a) => a.attentionForTraining([[1e20]], [[1e20], [1]], [[1], [2]], { scale: 1 }),
    { kind: "range", code: "overflow", parameter: "Q", says: ["float range"] },
  ],
  [
    "scores past float range in the backward: overflow, not zero gradients",
    (a) => a.attentionBackward([[1e30]], [[1e30]], [[1e30]], [[1e30]]),
    { kind: "range", code: "overflow", parameter: "dO", says: ["float range"] },
  ],
  [
    "a DataView as data is a type error",
    (a) => a.attention({ data: new DataView(new ArrayBuffer(4)), rows: 1, cols: 1 }, K, V),
    { kind: "type", parameter: "Q.data", says: ["a Float32Array", "a DataView of 4 bytes"] },
  ],
  // ---- wrong types
  [
    "string matrix",
    (a) => a.attention("abc", K, V),
    { kind: "type", parameter: "Q", says: ["a matrix", 'string "abc"'] },
  ],
  [
    "null matrix",
    (a) => a.attention(Q, null, V),
    { kind: "type", parameter: "K", says: ["a matrix", "got null"] },
  ],
  [
    "undefined matrix",
    (a) => a.attention(Q, K),
    { kind: "type", parameter: "V", says: ["a matrix", "got undefined"] },
  ],
  [
    "a number as a matrix",
    (a) => a.matmul(3, [[1]]),
    { kind: "type", parameter: "A", says: ["a matrix", "got 3"] },
  ],
  [
    "string entry in nested rows",
    (a) => a.attention([[1, "x", 0]], K, V),
    { kind: "type", parameter: "Q[0][1]", says: ["a number", 'string "x"'] },
  ],
  [
    "null entry in data",
    (a) => a.attention({ data: [1, null, 0], rows: 1, cols: 3 }, K, V),
    { kind: "type", parameter: "Q.data[1]", says: ["a number", "got null"] },
  ],
  [
    "a row that is not an array",
    (a) => a.attention([[1, 0, 0], "row"], K, V),
    { kind: "type", parameter: "Q[1]", says: ["a row", 'string "row"'] },
  ],
  [
    "data that is not an array",
    (a) => a.attention({ data: "abc", rows: 1, cols: 3 }, K, V),
    { kind: "type", parameter: "Q.data", says: ["Float32Array", 'string "abc"'] },
  ],
  [
    "tensor data that is not an array",
    (a) => a.multiHeadAttention({ data: 5, shape: [1, 3, 4] }, MH, { numHeads: 2 }),
    { kind: "type", parameter: "X.data", says: ["Float32Array", "got 5"] },
  ],
  [
    "weights null",
    (a) => a.selfAttention(X, null),
    { kind: "type", parameter: "weights", says: ["W_Q, W_K, W_V", "got null"] },
  ],
  [
    "weights without W_K",
    (a) => a.selfAttention(X, { W_Q: W.W_Q, W_V: W.W_V }),
    { kind: "type", parameter: "weights.W_K", says: ["a matrix", "got undefined"] },
  ],
  [
    "options a string",
    (a) => a.attention(Q, K, V, "causal"),
    { kind: "type", parameter: "options", says: ["an object", 'string "causal"'] },
  ],
  [
    "options.scale a string",
    (a) => a.attention(Q, K, V, { scale: "1" }),
    { kind: "type", parameter: "options.scale", says: ["a number", 'string "1"'] },
  ],
  [
    "options.causal a number",
    (a) => a.attention(Q, K, V, { causal: 1 }),
    { kind: "type", parameter: "options.causal", says: ["a boolean", "got 1"] },
  ],
  [
    "unknown option key",
    (a) => a.attention(Q, K, V, { casual: true }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.casual",
      says: ["did you mean causal?", "unknown option"],
    },
  ],
  [
    "layout on a single-head call",
    (a) => a.attention(Q, K, V, { layout: "bhsd" }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.layout",
      says: ["keyLength", "layout is an option of multiHeadAttentionQKV"],
    },
  ],
  // ---- typos in any object the API takes (a silently dropped W_O was a wrong answer)
  [
    "W_o instead of W_O",
    (a) => a.multiHeadAttention(X, { ...MH, W_o: I4 }, { numHeads: 2 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "weights.W_o",
      says: ["did you mean W_O?", "unknown key"],
    },
  ],
  [
    "W_O on a single-head call",
    (a) => a.selfAttention(X, { ...W, W_O: I4 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "weights.W_O",
      says: ["W_Q, W_K, W_V", "unknown key"],
    },
  ],
  [
    "numKVHeads instead of numKvHeads",
    (a) => a.multiHeadAttention(X, MH, { numHeads: 2, numKVHeads: 1 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.numKVHeads",
      says: ["did you mean numKvHeads?", "unknown key"],
    },
  ],
  [
    "cache config typo",
    (a) => a.createKVCache({ numKvHeads: 1, dK: 2, dV: 2, capacty: 4 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.capacty",
      says: ["did you mean capacity?", "unknown key"],
    },
  ],
  [
    "matrix object typo",
    (a) => a.attention({ data: new Float32Array(6), rows: 2, cols: 3, col: 3 }, K, V),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "Q.col",
      says: ["data, rows, cols", "unknown key"],
    },
  ],
  [
    "tensor object typo",
    (a) =>
      a.multiHeadAttention({ data: new Float32Array(12), shape: [1, 3, 4], shap: [] }, MH, {
        numHeads: 2,
      }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "X.shap",
      says: ["did you mean shape?", "unknown key"],
    },
  ],
  // ---- messages that misled
  [
    "2^28 + 1 elements names the input and the limit",
    (a) => a.attention({ data: new Float32Array(0), rows: 2 ** 28 + 1, cols: 1 }, K, V),
    {
      kind: "range",
      code: "overflow",
      parameter: "Q",
      says: ["at most 2^28 = 268435456 elements", "268435457"],
    },
  ],
  [
    "a result over 2^28 elements is refused before any memory is taken",
    (a) =>
      a.matmul(
        { data: new Float32Array(20000), rows: 20000, cols: 1 },
        { data: new Float32Array(20000), rows: 1, cols: 20000 },
      ),
    { kind: "range", code: "overflow", parameter: "B", says: ["2^28", "A B", "400000000"] },
  ],
  [
    "a detached buffer says so",
    (a) => {
      const d = new Float32Array(6);
      structuredClone(d.buffer, { transfer: [d.buffer] });
      return a.attention({ data: d, rows: 2, cols: 3 }, K, V);
    },
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "Q.data",
      says: ["6 values", "got 0", "detached"],
    },
  ],
  [
    "keyLengths: [] is not ignored",
    (a) => a.multiHeadAttention(X, MH, { numHeads: 2 }, { keyLengths: [] }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.keyLengths",
      says: ["one length per batch item", "an empty array"],
    },
  ],
  [
    "one column is singular",
    (a) => a.attention([[1], [2]], [[1, 2]], [[1]]),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "K",
      says: ["expected 1 column (", "got 2"],
    },
  ],
  [
    "options.out of the wrong length",
    (a) => a.attention(Q, K, V, { out: new Float32Array(3) }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "options.out",
      says: ["2 values", "got 3"],
    },
  ],
  [
    "options.out not a Float32Array",
    (a) => a.attention(Q, K, V, { out: [0, 0] }),
    { kind: "type", parameter: "options.out", says: ["a Float32Array", "an array of 2"] },
  ],
  [
    "boolMask a string",
    (a) => a.attention(Q, K, V, { boolMask: "x" }),
    { kind: "type", parameter: "options.boolMask", says: ["a boolean mask", 'string "x"'] },
  ],
  [
    "boolMask entry a string",
    (a) =>
      a.attention(Q, K, V, {
        boolMask: [
          [1, 1, "y"],
          [1, 1, 1],
        ],
      }),
    {
      kind: "type",
      parameter: "options.boolMask[0][2]",
      says: ["a boolean or number", 'string "y"'],
    },
  ],
  [
    "keyLengths a string",
    (a) =>
      a.multiHeadAttentionQKV(
        t3(1, 2, 2),
        t3(1, 2, 2),
        t3(1, 2, 2),
        { numHeads: 1 },
        { keyLengths: "x" },
      ),
    { kind: "type", parameter: "options.keyLengths", says: ["an array", 'string "x"'] },
  ],
  [
    "config missing",
    (a) => a.multiHeadAttention(X, MH),
    { kind: "type", parameter: "config", says: ["numHeads", "got undefined"] },
  ],
  [
    "numHeads missing",
    (a) => a.multiHeadAttention(X, MH, {}),
    { kind: "type", parameter: "config.numHeads", says: ["a positive integer", "got undefined"] },
  ],
  [
    "numHeads a string",
    (a) => a.splitHeads(X, "2"),
    { kind: "type", parameter: "numHeads", says: ["a positive integer", 'string "2"'] },
  ],
  [
    "KV cache config null",
    (a) => a.createKVCache(null),
    { kind: "type", parameter: "config", says: ["capacity", "got null"] },
  ],
  [
    "KV cache capacity missing",
    (a) => a.createKVCache({ numKvHeads: 1, dK: 2, dV: 2 }),
    { kind: "type", parameter: "config.capacity", says: ["a positive integer", "got undefined"] },
  ],

  // ---- wrong lengths
  [
    "data length != rows * cols",
    (a) => a.attention({ data: new Float32Array(5), rows: 2, cols: 3 }, K, V),
    { kind: "range", code: "shape_mismatch", parameter: "Q.data", says: ["6 values", "got 5"] },
  ],
  [
    "ragged nested rows",
    (a) => a.attention([[1, 2, 3], [3]], K, V),
    { kind: "range", code: "shape_mismatch", parameter: "Q[1]", says: ["3 values", "got 1"] },
  ],
  [
    "tensor data length != product of shape",
    (a) =>
      a.multiHeadAttention({ data: new Float32Array(5), shape: [1, 2, 3] }, MH, { numHeads: 1 }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "X.data",
      says: ["6 values", "[1, 2, 3]", "got 5"],
    },
  ],
  [
    "boolMask data length",
    (a) => a.attention(Q, K, V, { boolMask: { data: new Uint8Array(5), rows: 2, cols: 3 } }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "options.boolMask.data",
      says: ["6 values", "got 5"],
    },
  ],
  [
    "empty matrix",
    (a) => a.attention([], K, V),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "Q",
      says: ["at least one row", "an empty array"],
    },
  ],
  [
    "empty row",
    (a) => a.attention([[]], K, V),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "Q[0]",
      says: ["at least one column", "an empty row"],
    },
  ],

  // ---- non-integer, negative, zero sizes
  [
    "rows 1.5",
    (a) => a.attention({ data: new Float32Array(3), rows: 1.5, cols: 2 }, K, V),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "Q.rows",
      says: ["a positive integer", "got 1.5"],
    },
  ],
  [
    "rows -1",
    (a) => a.attention({ data: [], rows: -1, cols: 3 }, K, V),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "Q.rows",
      says: ["a positive integer", "got -1"],
    },
  ],
  [
    "rows 0",
    (a) => a.attention({ data: [], rows: 0, cols: 3 }, K, V),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "Q.rows",
      says: ["a positive integer", "got 0"],
    },
  ],
  [
    "cols NaN",
    (a) => a.attention({ data: [], rows: 1, cols: NaN }, K, V),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "Q.cols",
      says: ["a positive integer", "got NaN"],
    },
  ],
  [
    "shape with a 0",
    (a) => a.multiHeadAttention({ data: [], shape: [2, 0, 3] }, MH, { numHeads: 1 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "X.shape[1]",
      says: ["a positive integer", "got 0"],
    },
  ],
  [
    "shape with 2.5",
    (a) => a.mergeHeads({ data: new Float32Array(5), shape: [2, 2.5, 1] }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "heads.shape[1]",
      says: ["a positive integer", "got 2.5"],
    },
  ],
  [
    "splitHeads numHeads 0",
    (a) => a.splitHeads(X, 0),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "numHeads",
      says: ["a positive integer", "got 0"],
    },
  ],
  [
    "splitHeads numHeads -2",
    (a) => a.splitHeads(X, -2),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "numHeads",
      says: ["a positive integer", "got -2"],
    },
  ],
  [
    "splitHeads numHeads 2.5",
    (a) => a.splitHeads(X, 2.5),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "numHeads",
      says: ["a positive integer", "got 2.5"],
    },
  ],
  [
    "config.numHeads 0",
    (a) => a.multiHeadAttention(X, MH, { numHeads: 0 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.numHeads",
      says: ["a positive integer", "got 0"],
    },
  ],
  [
    "config.numHeads 1.5",
    (a) => a.multiHeadAttention(X, MH, { numHeads: 1.5 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.numHeads",
      says: ["a positive integer", "got 1.5"],
    },
  ],
  [
    "config.dK -1",
    (a) => a.multiHeadAttention(X, MH, { numHeads: 2, dK: -1 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.dK",
      says: ["a positive integer", "got -1"],
    },
  ],
  [
    "KV cache capacity 0",
    (a) => a.createKVCache({ numKvHeads: 1, dK: 2, dV: 2, capacity: 0 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.capacity",
      says: ["a positive integer", "got 0"],
    },
  ],
  [
    "KV cache dK -1",
    (a) => a.createKVCache({ numKvHeads: 1, dK: -1, dV: 2, capacity: 3 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.dK",
      says: ["a positive integer", "got -1"],
    },
  ],
  [
    "KV cache batch 0.5",
    (a) => a.createKVCache({ batch: 0.5, numKvHeads: 1, dK: 1, dV: 2, capacity: 3 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.batch",
      says: ["a positive integer", "got 0.5"],
    },
  ],

  // ---- shapes that do not fit
  [
    "W_Q rows != d_model",
    (a) =>
      a.selfAttention(X, {
        ...W,
        W_Q: [
          [1, 0],
          [0, 1],
          [1, 1],
          [0, 0],
          [1, 1],
        ],
      }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "weights.W_Q",
      says: ["4 rows", "d_model", "got 5"],
    },
  ],
  [
    "W_K cols != W_Q cols",
    (a) => a.selfAttention(X, { ...W, W_K: [[1], [0], [1], [0]] }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "weights.W_K",
      says: ["2 columns", "got 1"],
    },
  ],
  [
    "W_V rows != d_model",
    (a) => a.selfAttention(X, { ...W, W_V: [[1], [0], [0]] }),
    { kind: "range", code: "shape_mismatch", parameter: "weights.W_V", says: ["4 rows", "got 3"] },
  ],
  [
    "crossAttention W_K rows != d_kv",
    (a) =>
      a.crossAttention(
        X,
        [
          [1, 2],
          [3, 4],
        ],
        W,
      ),
    { kind: "range", code: "shape_mismatch", parameter: "weights.W_K", says: ["2 rows", "got 4"] },
  ],
  [
    "K cols != Q cols",
    (a) => a.attention(Q, [[1, 0, 0, 0]], [[1]]),
    { kind: "range", code: "shape_mismatch", parameter: "K", says: ["3 columns", "dK", "got 4"] },
  ],
  [
    "V rows != K rows",
    (a) => a.attention(Q, K, [[1], [2]]),
    { kind: "range", code: "shape_mismatch", parameter: "V", says: ["3 rows", "got 2"] },
  ],
  // Masks may be shorter than the key count (ONNX pads them), not longer.
  [
    "boolMask shape",
    (a) =>
      a.attention(Q, K, V, {
        boolMask: [
          [true, true, true, true],
          [true, true, true, true],
        ],
      }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "options.boolMask",
      says: ["at most T_k = 3", "got 4"],
    },
  ],
  [
    "additiveMask shape",
    (a) =>
      a.attention(Q, K, V, {
        additiveMask: [
          [0, 0, 0],
          [0, 0, 0],
          [0, 0, 0],
        ],
      }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "options.additiveMask",
      says: ["2 rows", "got 3"],
    },
  ],
  [
    "matmul inner sizes",
    (a) => a.matmul([[1, 2]], [[1, 2]]),
    { kind: "range", code: "shape_mismatch", parameter: "B", says: ["2 rows", "got 1"] },
  ],
  [
    "W_O rows != numHeads * dV",
    (a) => a.multiHeadAttention(X, { ...MH, W_O: [[1], [1], [1]] }, { numHeads: 2 }),
    { kind: "range", code: "shape_mismatch", parameter: "weights.W_O", says: ["4 rows", "got 3"] },
  ],
  [
    "multi-head W_K cols != numKvHeads * dK",
    (a) => a.multiHeadAttention(X, { ...MH, W_K: W.W_K }, { numHeads: 2, numKvHeads: 2 }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "weights.W_K",
      says: ["4 columns", "got 2"],
    },
  ],
  [
    "X of rank 4",
    (a) =>
      a.multiHeadAttention({ data: new Float32Array(4), shape: [1, 1, 1, 4] }, MH, { numHeads: 1 }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "X.shape",
      says: ["[batch, seq, features]", "[1, 1, 1, 4]"],
    },
  ],
  [
    "mergeHeads of rank 2",
    (a) => a.mergeHeads([[1, 2]]),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "heads.shape",
      says: ["[numHeads, seq, headDim]", "[1, 2]"],
    },
  ],
  [
    "bhsd with a rank-3 tensor",
    (a) =>
      a.multiHeadAttentionQKV(
        t3(1, 2, 3),
        t3(1, 2, 3),
        t3(1, 2, 3),
        { numHeads: 1 },
        { layout: "bhsd" },
      ),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "Q.shape",
      says: ["[batch, heads, seq, headDim]", "[1, 2, 3]"],
    },
  ],
  [
    "bhsd heads != numHeads",
    (a) =>
      a.multiHeadAttentionQKV(
        { data: new Float32Array(8), shape: [1, 2, 2, 2] },
        { data: new Float32Array(8), shape: [1, 2, 2, 2] },
        { data: new Float32Array(8), shape: [1, 2, 2, 2] },
        { numHeads: 4 },
        { layout: "bhsd" },
      ),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "Q.shape[1]",
      says: ["config.numHeads = 4", "got 2"],
    },
  ],
  [
    "bshd batch of K != batch of Q",
    (a) => a.multiHeadAttentionQKV(t3(2, 2, 2), t3(1, 2, 2), t3(1, 2, 2), { numHeads: 1 }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "K.shape[0]",
      says: ["batch = 2", "got 1"],
    },
  ],
  [
    "unknown layout",
    (a) => a.multiHeadAttentionQKV(Q, K, K, { numHeads: 1 }, { layout: "xyz" }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.layout",
      says: ['"bshd" or "bhsd"', 'string "xyz"'],
    },
  ],

  // ---- heads that do not divide
  [
    "numHeads does not divide d_model",
    (a) => a.multiHeadAttention(X, MH, { numHeads: 3 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.numHeads",
      says: ["a divisor of d_model = 4", "got 3"],
    },
  ],
  [
    "numHeads does not divide the columns (splitHeads)",
    (a) => a.splitHeads(X, 3),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "numHeads",
      says: ["a divisor of the columns of x = 4", "got 3"],
    },
  ],
  [
    "numHeads does not divide Q columns",
    (a) => a.multiHeadAttentionQKV(t3(1, 2, 4), t3(1, 2, 4), t3(1, 2, 4), { numHeads: 3 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.numHeads",
      says: ["a divisor", "= 4", "got 3"],
    },
  ],
  [
    "numKvHeads does not divide numHeads",
    (a) => a.multiHeadAttention(X, MH, { numHeads: 4, numKvHeads: 3 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.numKvHeads",
      says: ["a divisor of numHeads = 4", "got 3"],
    },
  ],
  [
    "numKvHeads does not divide numHeads (QKV)",
    (a) =>
      a.multiHeadAttentionQKV(t3(1, 2, 4), t3(1, 2, 2), t3(1, 2, 2), {
        numHeads: 2,
        numKvHeads: 4,
      }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "config.numKvHeads",
      says: ["a divisor of numHeads = 2", "got 4"],
    },
  ],

  // ---- non-finite values
  [
    "NaN in X",
    (a) => a.selfAttention([[1, NaN, 3, 4]], W),
    {
      kind: "range",
      code: "non_finite",
      parameter: "X",
      says: ["finite values", "got NaN at row 0, column 1"],
    },
  ],
  [
    "Infinity in W_Q",
    (a) =>
      a.selfAttention(X, {
        ...W,
        W_Q: [
          [1, 0],
          [0, Infinity],
          [1, 1],
          [0, 0],
        ],
      }),
    {
      kind: "range",
      code: "non_finite",
      parameter: "weights.W_Q",
      says: ["finite values", "got Infinity at row 1, column 1"],
    },
  ],
  [
    "-Infinity in W_O",
    (a) => a.multiHeadAttention(X, { ...MH, W_O: [[1], [1], [1], [-Infinity]] }, { numHeads: 2 }),
    {
      kind: "range",
      code: "non_finite",
      parameter: "weights.W_O",
      says: ["finite values", "got -Infinity at row 3, column 0"],
    },
  ],
  [
    "NaN in Q",
    (a) => a.attention([[1, NaN, 0]], K, V),
    {
      kind: "range",
      code: "non_finite",
      parameter: "Q",
      says: ["finite values", "got NaN at row 0, column 1"],
    },
  ],
  [
    "Infinity in V",
    (a) => a.attention(Q, K, [[1], [Infinity], [3]]),
    {
      kind: "range",
      code: "non_finite",
      parameter: "V",
      says: ["finite values", "got Infinity at row 1, column 0"],
    },
  ],
  [
    "NaN in Xkv",
    (a) => a.crossAttention(X, [[1, 2, 3, NaN]], W),
    {
      kind: "range",
      code: "non_finite",
      parameter: "Xkv",
      says: ["finite values", "got NaN at row 0, column 3"],
    },
  ],
  [
    "NaN in additiveMask",
    (a) =>
      a.attention(Q, K, V, {
        additiveMask: [
          [0, NaN, 0],
          [0, 0, 0],
        ],
      }),
    {
      kind: "range",
      code: "non_finite",
      parameter: "options.additiveMask",
      says: ["finite values or -Infinity", "got NaN at row 0, column 1"],
    },
  ],
  [
    "+Infinity in additiveMask",
    (a) =>
      a.attention(Q, K, V, {
        additiveMask: [
          [0, 0, 0],
          [0, 0, Infinity],
        ],
      }),
    {
      kind: "range",
      code: "non_finite",
      parameter: "options.additiveMask",
      says: ["finite values or -Infinity", "got Infinity at row 1, column 2"],
    },
  ],
  [
    "NaN in multi-head X",
    (a) =>
      a.multiHeadAttention(
        { data: Float32Array.of(1, 2, 3, 4, 5, 6, 7, NaN), shape: [1, 2, 4] },
        MH,
        { numHeads: 2 },
      ),
    {
      kind: "range",
      code: "non_finite",
      parameter: "X",
      says: ["finite values", "got NaN at row 1, column 3"],
    },
  ],

  // ---- bad options
  [
    "scale NaN",
    (a) => a.attention(Q, K, V, { scale: NaN }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.scale",
      says: ["a finite number > 0", "got NaN"],
    },
  ],
  [
    "scale 0",
    (a) => a.attention(Q, K, V, { scale: 0 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.scale",
      says: ["a finite number > 0", "got 0"],
    },
  ],
  [
    "scale -1",
    (a) => a.attention(Q, K, V, { scale: -1 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.scale",
      says: ["a finite number > 0", "got -1"],
    },
  ],
  [
    "scale Infinity",
    (a) => a.selfAttention(X, W, { scale: Infinity }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.scale",
      says: ["a finite number > 0", "got Infinity"],
    },
  ],
  [
    "scale 1e40 (inf as float32)",
    (a) => a.attention(Q, K, V, { scale: 1e40 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.scale",
      says: ["a finite number > 0", "got 1e+40"],
    },
  ],
  [
    "softcap -1",
    (a) => a.attention(Q, K, V, { softcap: -1 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.softcap",
      says: ["0 (off) or a finite number > 0", "got -1"],
    },
  ],
  [
    "softcap NaN",
    (a) => a.multiHeadAttention(X, MH, { numHeads: 2 }, { softcap: NaN }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.softcap",
      says: ["0 (off) or a finite number > 0", "got NaN"],
    },
  ],
  [
    "keyLength > T_k",
    (a) => a.attention(Q, K, V, { keyLength: 5 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.keyLength",
      says: ["at most T_k = 3", "got 5"],
    },
  ],
  [
    "keyLength -1",
    (a) => a.attention(Q, K, V, { keyLength: -1 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.keyLength",
      says: ["a non-negative integer", "got -1"],
    },
  ],
  [
    "keyLength 1.5",
    (a) => a.attention(Q, K, V, { keyLength: 1.5 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.keyLength",
      says: ["a non-negative integer", "got 1.5"],
    },
  ],
  [
    "keyLengths wrong count",
    (a) =>
      a.multiHeadAttentionQKV(
        t3(2, 2, 3),
        t3(2, 2, 3),
        t3(2, 2, 3),
        { numHeads: 1 },
        { keyLengths: [1, 1, 1] },
      ),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.keyLengths",
      says: ["batch = 2 lengths", "got 3"],
    },
  ],
  [
    "keyLengths wrong count (multiHeadAttention)",
    (a) => a.multiHeadAttention(t3(3, 2, 4), MH, { numHeads: 2 }, { keyLengths: [1] }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.keyLengths",
      says: ["batch = 3 lengths", "got 1"],
    },
  ],
  [
    "keyLengths entry > T_k",
    (a) =>
      a.multiHeadAttentionQKV(
        t3(2, 2, 3),
        t3(2, 2, 3),
        t3(2, 2, 3),
        { numHeads: 1 },
        { keyLengths: [1, 3] },
      ),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.keyLengths[1]",
      says: ["at most T_k = 2", "got 3"],
    },
  ],
  [
    "keyLengths entry -1",
    (a) => a.multiHeadAttention(t3(2, 2, 4), MH, { numHeads: 2 }, { keyLengths: [1, -1] }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.keyLengths[1]",
      says: ["a non-negative integer", "got -1"],
    },
  ],
  [
    "keyLengths on a single sequence",
    (a) => a.attention(Q, K, V, { keyLengths: [1] }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.keyLengths",
      says: ["empty for a single sequence", "use options.keyLength", "got 1 length"],
    },
  ],
];

for (const variant of VARIANTS) {
  describe(`errors (${variant.name} build)`, () => {
    let attn, baseline;
    const stillWorks = () => {
      const r = attn.attention(Q, K, V, { causal: true });
      assert.deepEqual(r.data, baseline.data, "a valid call after the error gives the same result");
      assert.deepEqual(attn.multiHeadAttention(X, MH, { numHeads: 2 }).data, baseline.mh.data);
    };
    before(async () => {
      attn = await createAttnkit(variant.options);
      baseline = attn.attention(Q, K, V, { causal: true });
      baseline.mh = attn.multiHeadAttention(X, MH, { numHeads: 2 });
    });

    for (const [label, fn, expectation] of CASES) {
      it(label, () => {
        expectError(() => fn(attn), expectation);
        stillWorks();
      });
    }

    describe("KV cache", () => {
      const cfg = { batch: 2, numKvHeads: 1, dK: 2, dV: 2, capacity: 3 };
      const D = {
        W_Q: [
          [1, 0],
          [0, 1],
          [1, 1],
          [0, 0],
        ],
        W_K: [
          [1, 0],
          [0, 1],
          [1, 1],
          [0, 0],
        ],
        W_V: [
          [0, 1],
          [1, 0],
          [1, 1],
          [0, 1],
        ],
      };

      it("out of capacity: append and decode throw code 'capacity' and leave the cache unchanged", () => {
        const cache = attn.createKVCache(cfg);
        cache.append(t3(2, 2, 2, 1), t3(2, 2, 2, 2));
        const keys = cache.keys(1, 0);
        expectError(() => cache.append(t3(2, 2, 2), t3(2, 2, 2)), {
          kind: "range",
          code: "capacity",
          parameter: "K",
          says: ["at most 3 cached tokens", "got 2 + 2 new = 4"],
        });
        assert.equal(cache.size, 2);
        assert.deepEqual(cache.keys(1, 0), keys);
        expectError(() => cache.decode(t3(2, 2, 4), D, { numHeads: 1, dK: 2 }), {
          kind: "range",
          code: "capacity",
          parameter: "X",
          says: ["at most 3 cached tokens", "got 2 + 2 new = 4"],
        });
        assert.equal(cache.size, 2);
        assert.deepEqual(cache.keys(1, 0), keys);
        // One more token fits, then the cache is full.
        const out = cache.decode(t3(2, 1, 4), D, { numHeads: 1, dK: 2 });
        assert.deepEqual(out.shape, [2, 1, 2]);
        assert.equal(cache.size, 3);
        expectError(() => cache.append(t3(2, 1, 2), t3(2, 1, 2)), {
          kind: "range",
          code: "capacity",
          parameter: "K",
          says: ["at most 3", "got 3 + 1 new = 4"],
        });
        assert.equal(cache.size, 3);
        cache.reset();
        cache.append(t3(2, 3, 2), t3(2, 3, 2));
        assert.equal(cache.size, 3);
        cache.dispose();
        stillWorks();
      });

      it("bad shapes, values, heads and indices", () => {
        const cache = attn.createKVCache(cfg);
        expectError(() => cache.attend(t3(2, 1, 2), 1), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "Q",
          says: ["at most 0 tokens", "append K and V first", "got 1"],
        });
        expectError(
          () =>
            cache.append(
              [
                [1, 1],
                [1, 1],
                [1, 1],
              ],
              [
                [1, 1],
                [1, 1],
                [1, 1],
              ],
            ),
          {
            kind: "range",
            code: "shape_mismatch",
            parameter: "K",
            says: ["divisible by batch = 2", "got 3"],
          },
        );
        expectError(() => cache.append(t3(2, 1, 3), t3(2, 1, 2)), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "K",
          says: ["2 columns", "got 3"],
        });
        expectError(() => cache.append(t3(2, 1, 2), t3(2, 2, 2)), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "V",
          says: ["2 rows", "got 4"],
        });
        expectError(
          () =>
            cache.append({ data: Float32Array.of(1, NaN, 1, 1), shape: [2, 1, 2] }, t3(2, 1, 2)),
          {
            kind: "range",
            code: "non_finite",
            parameter: "K",
            says: ["finite values", "got NaN at row 0, column 1"],
          },
        );
        expectError(() => cache.append("K", t3(2, 1, 2)), {
          kind: "type",
          parameter: "K",
          says: ["a matrix", 'string "K"'],
        });
        assert.equal(cache.size, 0);
        expectError(
          () =>
            cache.decode(
              t3(2, 1, 4),
              { W_Q: I4, W_K: I4, W_V: I4 },
              { numHeads: 2, numKvHeads: 2 },
            ),
          {
            kind: "range",
            code: "shape_mismatch",
            parameter: "config.numKvHeads",
            says: ["expected 1 (the cache's)", "got 2"],
          },
        );
        expectError(() => cache.decode(t3(2, 1, 4), D, { numHeads: 1, dK: 2, dV: 3 }), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "config.dV",
          says: ["expected 2 (the cache's)", "got 3"],
        });
        expectError(() => cache.decode(t3(2, 1, 4), D, { numHeads: 1, dK: 2 }, { bogus: 1 }), {
          kind: "range",
          code: "invalid_argument",
          parameter: "options.bogus",
          says: ["unknown option"],
        });
        assert.equal(cache.size, 0, "failed decodes leave the cache empty");
        cache.append(t3(2, 1, 2), t3(2, 1, 2));
        expectError(() => cache.attend(t3(2, 1, 3), 1), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "Q",
          says: ["2 columns", "got 3"],
        });
        expectError(() => cache.attend(t3(2, 1, 2), 0), {
          kind: "range",
          code: "invalid_argument",
          parameter: "numHeads",
          says: ["a positive integer", "got 0"],
        });
        expectError(() => cache.attend(t3(2, 1, 2), 1, { scale: -2 }), {
          kind: "range",
          code: "invalid_argument",
          parameter: "options.scale",
          says: ["got -2"],
        });
        expectError(() => cache.attend(t3(2, 1, 2), 1, { keyLengths: [1] }), {
          kind: "range",
          code: "invalid_argument",
          parameter: "options.keyLengths",
          says: ["batch = 2", "got 1"],
        });
        expectError(() => cache.keys(2, 0), {
          kind: "range",
          code: "invalid_argument",
          parameter: "item",
          says: ["below batch = 2", "got 2"],
        });
        expectError(() => cache.values(0, 1), {
          kind: "range",
          code: "invalid_argument",
          parameter: "kvHead",
          says: ["below numKvHeads = 1", "got 1"],
        });
        expectError(() => cache.keys(-1, 0), {
          kind: "range",
          code: "invalid_argument",
          parameter: "item",
          says: ["a non-negative integer", "got -1"],
        });
        expectError(() => cache.keys(0.5, 0), {
          kind: "range",
          code: "invalid_argument",
          parameter: "item",
          says: ["a non-negative integer", "got 0.5"],
        });
        assert.equal(cache.size, 1);
        assert.deepEqual(cache.attend(t3(2, 1, 2), 1).shape, [2, 1, 2]);
        cache.dispose();
        stillWorks();
      });

      it("a rank-3 input's batch must be the cache's: items are never mixed", () => {
        const one = attn.createKVCache({ numKvHeads: 1, dK: 2, dV: 2, capacity: 4 });
        const two = attn.createKVCache(cfg);
        // [1, 2, d] on a batch-2 cache is one item of two tokens, not two items of one.
        expectError(() => two.append(t3(1, 2, 2), t3(1, 2, 2)), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "K.shape[0]",
          says: ["the cache's batch = 2", "got 1"],
        });
        assert.equal(two.size, 0);
        one.append(t3(1, 1, 2), t3(1, 1, 2));
        // [2, 1, d] on a batch-1 cache is two items, not one sequence of two queries.
        expectError(() => one.attend(t3(2, 1, 2), 1), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "Q.shape[0]",
          says: ["the cache's batch = 1", "got 2"],
        });
        expectError(() => one.append(t3(1, 1, 2), t3(2, 1, 2)), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "V.shape[0]",
          says: ["the cache's batch = 1", "got 2"],
        });
        expectError(() => one.decode(t3(2, 1, 4), D, { numHeads: 1, dK: 2 }), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "X.shape[0]",
          says: ["the cache's batch = 1", "got 2"],
        });
        assert.equal(one.size, 1);
        // The cache's own batch works.
        assert.deepEqual(one.attend(t3(1, 1, 2), 1).shape, [1, 1, 2]);
        two.append(t3(2, 1, 2), t3(2, 1, 2));
        assert.deepEqual(two.attend(t3(2, 1, 2), 1).shape, [2, 1, 2]);
        one.dispose();
        two.dispose();
        stillWorks();
      });

      it("truncate: past the size is an error naming size", () => {
        const cache = attn.createKVCache(cfg);
        cache.append(t3(2, 2, 2), t3(2, 2, 2));
        expectError(() => cache.truncate(3), {
          kind: "range",
          code: "invalid_argument",
          parameter: "size",
          says: ["at most the cached tokens per item, 2", "got 3"],
        });
        expectError(() => cache.truncate(-1), {
          kind: "range",
          code: "invalid_argument",
          parameter: "size",
          says: ["a non-negative integer", "got -1"],
        });
        assert.equal(cache.size, 2);
        cache.dispose();
      });

      it("a size product too large for the core is code 'overflow' and names the capacity", () => {
        const e = expectError(
          () => attn.createKVCache({ numKvHeads: 1024, dK: 1024, dV: 1, capacity: 1024 }),
          {
            kind: "range",
            code: "overflow",
            parameter: "config.capacity",
            says: [
              "at most 2^28 = 268435456 elements of cached keys",
              "got 1048576 * 1024 = 1073741824",
            ],
          },
        );
        assert.match(e.parameter, /capacity/);
        stillWorks();
      });

      it("use after dispose throws code 'disposed'; dispose twice is fine", () => {
        const cache = attn.createKVCache(cfg);
        cache.append(t3(2, 1, 2), t3(2, 1, 2));
        cache.dispose();
        cache.dispose();
        cache[Symbol.dispose]();
        const disposed = {
          kind: "range",
          code: "disposed",
          parameter: "cache",
          says: ["a live KVCache", "disposed"],
        };
        expectError(() => cache.append(t3(2, 1, 2), t3(2, 1, 2)), disposed);
        expectError(() => cache.attend(t3(2, 1, 2), 1), disposed);
        expectError(() => cache.decode(t3(2, 1, 4), D, { numHeads: 1, dK: 2 }), disposed);
        expectError(() => cache.keys(0, 0), disposed);
        expectError(() => cache.values(0, 0), disposed);
        expectError(() => cache.reset(), disposed);
        expectError(() => cache.truncate(0), disposed);
        expectError(() => cache.fork(), disposed);
        expectError(() => cache.size, disposed);
        // The plain properties stay readable.
        assert.deepEqual(
          [cache.batch, cache.numKvHeads, cache.dK, cache.dV, cache.capacity],
          [2, 1, 2, 2, 3],
        );
        stillWorks();
        // A new cache works.
        const fresh = attn.createKVCache(cfg);
        fresh.append(t3(2, 1, 2), t3(2, 1, 2));
        assert.equal(fresh.size, 1);
        fresh.dispose();
      });
    });

    it("many errors in a row (every kind) leave the module working", () => {
      for (let i = 0; i < 200; ++i) {
        const [, fn] = CASES[i % CASES.length];
        assert.throws(() => fn(attn), AttnkitError);
      }
      stillWorks();
    });
  });
}

describe("error classes", () => {
  it("AttnkitError is a RangeError, AttnkitTypeError a TypeError, and both are instanceof AttnkitError", () => {
    const e = new AttnkitError("x: expected y, got z", { code: "shape_mismatch", parameter: "x" });
    assert.ok(e instanceof AttnkitError && e instanceof RangeError && e instanceof Error);
    assert.equal(e.code, "shape_mismatch");
    assert.equal(e.parameter, "x");
    const t = new AttnkitTypeError("x: expected y, got z", { parameter: "x" });
    assert.ok(t instanceof AttnkitTypeError && t instanceof TypeError && t instanceof AttnkitError);
    assert.ok(!(t instanceof RangeError));
    assert.equal(t.code, "type");
    // Plain errors are not AttnkitErrors.
    assert.ok(!(new RangeError("x") instanceof AttnkitError));
    assert.ok(!(new TypeError("x") instanceof AttnkitError));
    assert.ok(!(null instanceof AttnkitError));
  });
});
