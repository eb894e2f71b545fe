// The bad inputs of the error tests, one table for every suite that runs them:
// errors.test.js (the synchronous calls, each build) and worker-parity.test.js
// (the same calls through attnkit/worker). Each case calls the API it is given,
// sync or async, so that one list feeds both.
import { INDUCTION_MODEL, INDUCTION_TASK, LANGUAGE_GPT } from "./lib/models.js";

export const Q = [
  [1, 0, 0],
  [0, 1, 0],
];
export const K = [
  [1, 0, 0],
  [0, 1, 0],
  [1, 1, 1],
];
export const V = [[1], [2], [3]];
export const X = [
  [1, 2, 3, 4],
  [5, 6, 7, 8],
  [1, 1, 1, 1],
]; // T = 3, d_model = 4
export const W = {
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
export const I4 = [
  [1, 0, 0, 0],
  [0, 1, 0, 0],
  [0, 0, 1, 0],
  [0, 0, 0, 1],
];
export const MH = { W_Q: I4, W_K: I4, W_V: I4 }; // 4 heads of d 1, or 2 of d 2, ...
export const t3 = (B, T, C, fill = 0.5) => ({
  data: new Float32Array(B * T * C).fill(fill),
  shape: [B, T, C],
});

// [label, (attn) => call, expectation]
export const CASES = [
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
    "a rank-4 tensor without a layout: the message hints layout bhsd",
    (a) =>
      a.multiHeadAttentionQKV(
        { data: new Float32Array(8), shape: [1, 2, 2, 2] },
        { data: new Float32Array(8), shape: [1, 2, 2, 2] },
        { data: new Float32Array(8), shape: [1, 2, 2, 2] },
        { numHeads: 2 },
      ),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "Q.shape",
      says: ['needs options.layout: "bhsd"', "got [1, 2, 2, 2]"],
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
  [
    "a KV cache whose size product is too large for the core: code 'overflow', naming the capacity",
    (a) => a.createKVCache({ numKvHeads: 1024, dK: 1024, dV: 1, capacity: 1024 }),
    {
      kind: "range",
      code: "overflow",
      parameter: "config.capacity",
      says: ["at most 2^28 = 268435456 elements of cached keys", "got 1048576 * 1024 = 1073741824"],
    },
  ],
];

// ---- KV caches: [label, config, prepare(cache) (calls made first: the cache's
// state), call(cache), expectation]. prepare returns what its calls return
// (Promises through the worker): await it.
export const CACHE_CONFIG = { batch: 2, numKvHeads: 1, dK: 2, dV: 2, capacity: 3 };
const ONE_ITEM = { numKvHeads: 1, dK: 2, dV: 2, capacity: 4 };
/** Decoder weights for CACHE_CONFIG: d_model 4 -> dK = dV = 2. */
export const DECODE_WEIGHTS = {
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
const D = DECODE_WEIGHTS;
const HEAD = { numHeads: 1, dK: 2 };
const appendOne = (c) => c.append(t3(2, 1, 2), t3(2, 1, 2));
const appendTwo = (c) => c.append(t3(2, 2, 2, 1), t3(2, 2, 2, 2));
const disposed = async (c) => {
  await c.append(t3(2, 1, 2), t3(2, 1, 2));
  await c.dispose();
  await c.dispose();
};
const DISPOSED = {
  kind: "range",
  code: "disposed",
  parameter: "cache",
  says: ["a live KVCache", "disposed"],
};

export const CACHE_CASES = [
  // ---- out of capacity: the cache unchanged
  [
    "append past the capacity",
    CACHE_CONFIG,
    appendTwo,
    (c) => c.append(t3(2, 2, 2), t3(2, 2, 2)),
    {
      kind: "range",
      code: "capacity",
      parameter: "K",
      says: ["at most 3 cached tokens", "got 2 + 2 new = 4"],
    },
  ],
  [
    "decode past the capacity",
    CACHE_CONFIG,
    appendTwo,
    (c) => c.decode(t3(2, 2, 4), D, HEAD),
    {
      kind: "range",
      code: "capacity",
      parameter: "X",
      says: ["at most 3 cached tokens", "got 2 + 2 new = 4"],
    },
  ],
  [
    "append to a full cache",
    CACHE_CONFIG,
    async (c) => {
      await appendTwo(c);
      await c.decode(t3(2, 1, 4), D, HEAD);
    },
    (c) => c.append(t3(2, 1, 2), t3(2, 1, 2)),
    {
      kind: "range",
      code: "capacity",
      parameter: "K",
      says: ["at most 3", "got 3 + 1 new = 4"],
    },
  ],
  // ---- bad shapes, values, heads and indices
  [
    "attend on an empty cache",
    CACHE_CONFIG,
    null,
    (c) => c.attend(t3(2, 1, 2), 1),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "Q",
      says: ["at most 0 tokens", "append K and V first", "got 1"],
    },
  ],
  [
    "K rows not divisible by the batch",
    CACHE_CONFIG,
    null,
    (c) =>
      c.append(
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
  ],
  [
    "K of another width",
    CACHE_CONFIG,
    null,
    (c) => c.append(t3(2, 1, 3), t3(2, 1, 2)),
    { kind: "range", code: "shape_mismatch", parameter: "K", says: ["2 columns", "got 3"] },
  ],
  [
    "V of other rows than K",
    CACHE_CONFIG,
    null,
    (c) => c.append(t3(2, 1, 2), t3(2, 2, 2)),
    { kind: "range", code: "shape_mismatch", parameter: "V", says: ["2 rows", "got 4"] },
  ],
  [
    "a NaN in K",
    CACHE_CONFIG,
    null,
    (c) => c.append({ data: Float32Array.of(1, NaN, 1, 1), shape: [2, 1, 2] }, t3(2, 1, 2)),
    {
      kind: "range",
      code: "non_finite",
      parameter: "K",
      says: ["finite values", "got NaN at row 0, column 1"],
    },
  ],
  [
    "K a string",
    CACHE_CONFIG,
    null,
    (c) => c.append("K", t3(2, 1, 2)),
    { kind: "type", parameter: "K", says: ["a matrix", 'string "K"'] },
  ],
  [
    "decode with other KV heads than the cache's",
    CACHE_CONFIG,
    null,
    (c) => c.decode(t3(2, 1, 4), { W_Q: I4, W_K: I4, W_V: I4 }, { numHeads: 2, numKvHeads: 2 }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "config.numKvHeads",
      says: ["expected 1 (the cache's)", "got 2"],
    },
  ],
  [
    "decode with another dV than the cache's",
    CACHE_CONFIG,
    null,
    (c) => c.decode(t3(2, 1, 4), D, { numHeads: 1, dK: 2, dV: 3 }),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "config.dV",
      says: ["expected 2 (the cache's)", "got 3"],
    },
  ],
  [
    "decode with an unknown option",
    CACHE_CONFIG,
    null,
    (c) => c.decode(t3(2, 1, 4), D, HEAD, { bogus: 1 }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.bogus",
      says: ["unknown option"],
    },
  ],
  [
    "attend with Q of another width",
    CACHE_CONFIG,
    appendOne,
    (c) => c.attend(t3(2, 1, 3), 1),
    { kind: "range", code: "shape_mismatch", parameter: "Q", says: ["2 columns", "got 3"] },
  ],
  [
    // No config in this call: numHeads is blamed, against the cache's K/V heads.
    "attend with heads that are no multiple of the cache's K/V heads",
    { numKvHeads: 2, dK: 2, dV: 2, capacity: 4 },
    async () => {},
    (c) => c.attend(t3(1, 1, 6), 3),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "numHeads",
      says: ["a multiple of the cache's numKvHeads = 2", "got 3"],
    },
  ],
  [
    "attend with 0 heads",
    CACHE_CONFIG,
    appendOne,
    (c) => c.attend(t3(2, 1, 2), 0),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "numHeads",
      says: ["a positive integer", "got 0"],
    },
  ],
  [
    "attend with a negative scale",
    CACHE_CONFIG,
    appendOne,
    (c) => c.attend(t3(2, 1, 2), 1, { scale: -2 }),
    { kind: "range", code: "invalid_argument", parameter: "options.scale", says: ["got -2"] },
  ],
  [
    "attend with keyLengths of another batch",
    CACHE_CONFIG,
    appendOne,
    (c) => c.attend(t3(2, 1, 2), 1, { keyLengths: [1] }),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "options.keyLengths",
      says: ["batch = 2", "got 1"],
    },
  ],
  [
    "keys of an item past the batch",
    CACHE_CONFIG,
    appendOne,
    (c) => c.keys(2, 0),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "item",
      says: ["below batch = 2", "got 2"],
    },
  ],
  [
    "values of a KV head past numKvHeads",
    CACHE_CONFIG,
    appendOne,
    (c) => c.values(0, 1),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "kvHead",
      says: ["below numKvHeads = 1", "got 1"],
    },
  ],
  [
    "keys of item -1",
    CACHE_CONFIG,
    appendOne,
    (c) => c.keys(-1, 0),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "item",
      says: ["a non-negative integer", "got -1"],
    },
  ],
  [
    "keys of item 0.5",
    CACHE_CONFIG,
    appendOne,
    (c) => c.keys(0.5, 0),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "item",
      says: ["a non-negative integer", "got 0.5"],
    },
  ],
  // ---- a rank-3 input's batch must be the cache's: items are never mixed
  [
    "[1, 2, d] on a batch-2 cache (one item of two tokens, not two of one)",
    CACHE_CONFIG,
    null,
    (c) => c.append(t3(1, 2, 2), t3(1, 2, 2)),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "K.shape[0]",
      says: ["the cache's batch = 2", "got 1"],
    },
  ],
  [
    "[2, 1, d] queries on a batch-1 cache (two items, not two queries)",
    ONE_ITEM,
    (c) => c.append(t3(1, 1, 2), t3(1, 1, 2)),
    (c) => c.attend(t3(2, 1, 2), 1),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "Q.shape[0]",
      says: ["the cache's batch = 1", "got 2"],
    },
  ],
  [
    "V of batch 2 on a batch-1 cache",
    ONE_ITEM,
    (c) => c.append(t3(1, 1, 2), t3(1, 1, 2)),
    (c) => c.append(t3(1, 1, 2), t3(2, 1, 2)),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "V.shape[0]",
      says: ["the cache's batch = 1", "got 2"],
    },
  ],
  [
    "decode X of batch 2 on a batch-1 cache",
    ONE_ITEM,
    (c) => c.append(t3(1, 1, 2), t3(1, 1, 2)),
    (c) => c.decode(t3(2, 1, 4), D, HEAD),
    {
      kind: "range",
      code: "shape_mismatch",
      parameter: "X.shape[0]",
      says: ["the cache's batch = 1", "got 2"],
    },
  ],
  // ---- truncate: past the size is an error naming size
  [
    "truncate past the size",
    CACHE_CONFIG,
    (c) => c.append(t3(2, 2, 2), t3(2, 2, 2)),
    (c) => c.truncate(3),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "size",
      says: ["at most the cached tokens per item, 2", "got 3"],
    },
  ],
  [
    "truncate to -1",
    CACHE_CONFIG,
    (c) => c.append(t3(2, 2, 2), t3(2, 2, 2)),
    (c) => c.truncate(-1),
    {
      kind: "range",
      code: "invalid_argument",
      parameter: "size",
      says: ["a non-negative integer", "got -1"],
    },
  ],
  // ---- use after dispose: code "disposed"
  [
    "append after dispose",
    CACHE_CONFIG,
    disposed,
    (c) => c.append(t3(2, 1, 2), t3(2, 1, 2)),
    DISPOSED,
  ],
  ["attend after dispose", CACHE_CONFIG, disposed, (c) => c.attend(t3(2, 1, 2), 1), DISPOSED],
  ["decode after dispose", CACHE_CONFIG, disposed, (c) => c.decode(t3(2, 1, 4), D, HEAD), DISPOSED],
  ["keys after dispose", CACHE_CONFIG, disposed, (c) => c.keys(0, 0), DISPOSED],
  ["values after dispose", CACHE_CONFIG, disposed, (c) => c.values(0, 0), DISPOSED],
  ["reset after dispose", CACHE_CONFIG, disposed, (c) => c.reset(), DISPOSED],
  ["truncate after dispose", CACHE_CONFIG, disposed, (c) => c.truncate(0), DISPOSED],
  ["fork after dispose", CACHE_CONFIG, disposed, (c) => c.fork(), DISPOSED],
  ["size after dispose", CACHE_CONFIG, disposed, (c) => c.size, DISPOSED],
];

// ---- The model layer (a model build): [label, (attn, held) => call,
// { parameter, message, type }] where `held` is what modelFixtures(attn)
// made; `type`: an AttnkitTypeError (else an AttnkitError of any code).
/** A model of INDUCTION_MODEL, its weights file and a batch of INDUCTION_TASK (awaited: sync or worker). */
export async function modelFixtures(a) {
  const model = await a.createModel(INDUCTION_MODEL, { seed: 1 });
  const bytes = await model.exportWeights();
  const batch = await a.makeBatch(INDUCTION_TASK, { batch: 2, seed: 1 });
  const long = await a.makeBatch(
    { kind: "copy", length: 13, vocabSize: 24 },
    { batch: 2, seed: 1 },
  );
  return { model, bytes, batch, long };
}

/** `bytes` with the byte at `at` changed by `edit`. */
const edited = (bytes, at, edit) => {
  const out = bytes.slice();
  out[at] = edit(out[at]);
  return out;
};
const badConfig = (label, config, options, parameter, message) => [
  label,
  (a) => a.createModel(config, options),
  { parameter, message },
];
const C = INDUCTION_MODEL;
const TASK = INDUCTION_TASK;

export const MODEL_CASES = [
  // ---- weights files
  [
    "weights with a flipped bit",
    (a, h) => a.loadModel(edited(h.bytes, 100, (b) => b ^ 1)),
    { parameter: "weights", message: /^weights: hash mismatch/ },
  ],
  [
    "weights one byte short",
    (a, h) => a.loadModel(h.bytes.subarray(0, h.bytes.length - 1)),
    { parameter: "weights", message: /^weights: / },
  ],
  [
    "weights of 10 bytes",
    (a, h) => a.loadModel(h.bytes.subarray(0, 10)),
    { parameter: "weights", message: /^weights: truncated/ },
  ],
  [
    "weights of version 5",
    (a, h) => a.loadModel(edited(h.bytes, 8, () => 5)),
    { parameter: "weights", message: /^weights: version 5 is not supported/ },
  ],
  ["weights a plain array", (a) => a.loadModel([1, 2]), { type: true }],
  // ---- configurations
  badConfig(
    "dModel 0",
    { ...C, dModel: 0 },
    {},
    "config.dModel",
    /^config\.dModel: expected 1 \.\. \d+, got 0$/,
  ),
  badConfig("vocabSize 0", { ...C, vocabSize: 0 }, {}, "config.vocabSize", /got 0/),
  badConfig("maxSeqLen 0", { ...C, maxSeqLen: 0 }, {}, "config.maxSeqLen", /got 0/),
  badConfig("numLayers 0", { ...C, numLayers: 0 }, {}, "config.numLayers", /got 0/),
  badConfig("numLayers 49", { ...C, numLayers: 49 }, {}, "config.numLayers", /got 49/),
  badConfig("numHeads 0", { ...C, numHeads: 0 }, {}, "config.numHeads", /got 0/),
  badConfig(
    "numKvHeads not dividing numHeads",
    { ...C, numHeads: 4, numKvHeads: 3 },
    {},
    "config.numKvHeads",
    /./,
  ),
  badConfig("numHeads not dividing dModel", { ...C, numHeads: 3 }, {}, "config.dK", /./),
  badConfig(
    "dModel -1",
    { ...C, dModel: -1 },
    {},
    "config.dModel",
    /expected a non-negative integer, got -1/,
  ),
  badConfig("a typo: dmodel", { ...C, dmodel: 32 }, {}, "config.dmodel", /did you mean dModel/),
  badConfig("seed -1", C, { seed: -1 }, "options.seed", /got -1/),
  // The task against the model: vocabulary, positions, sizes.
  badConfig(
    "a task's vocabulary too small for it",
    { ...C, vocabSize: 9 },
    { task: { ...TASK, vocabSize: 9 } },
    "task.vocabSize",
    /needs at least 10 tokens, got 9/,
  ),
  badConfig(
    "a task's vocabulary not the model's",
    C,
    { task: { ...TASK, vocabSize: 30 } },
    "task.vocabSize",
    /differs from the model's 24/,
  ),
  badConfig(
    "a task's sequence longer than the model's positions",
    { ...C, maxSeqLen: 20 },
    { task: TASK },
    "config.maxSeqLen",
    /sequence of 24 tokens is longer than the model's 20/,
  ),
  badConfig(
    "a task of length 0",
    C,
    { task: { ...TASK, length: 0 } },
    "task.length",
    /needs length >= 2, got 0/,
  ),
  badConfig(
    "an unknown task kind",
    C,
    { task: { ...TASK, kind: "bracket" } },
    "task.kind",
    /expected one of "copy"/,
  ),
  ["createModel(null)", (a) => a.createModel(null), { type: true }],
  // ---- task generators
  [
    "a generator of a task of length 0",
    (a) => a.createTaskGenerator({ kind: "copy", length: 0, vocabSize: 10 }, { seed: 1 }),
    { parameter: "task.length", message: /got 0/ },
  ],
  [
    "a generator of a sort over 2 tokens",
    (a) => a.createTaskGenerator({ kind: "sort", length: 4, vocabSize: 2 }, { seed: 1 }),
    { parameter: "task.vocabSize", message: /needs at least 3 tokens, got 2/ },
  ],
  // ---- trainer options
  ...[
    [{ learningRate: -1 }, "options.learningRate"],
    [{ beta1: 1 }, "options.beta1"],
    [{ weightDecay: -0.5 }, "options.weightDecay"],
    [{ learningRate: NaN }, "options.learningRate"],
    [{ warmup: 5 }, "options.warmup"],
  ].map(([options, parameter]) => [
    `a trainer with ${parameter} ${options[parameter.slice(8)]}`,
    (a, h) => a.createTrainer(h.model, options),
    { parameter, message: /./ },
  ]),
  // ---- batches: longer than the positions, tokens out of the vocabulary, wrong counts
  [
    "a batch longer than the model's positions",
    (a, h) => h.model.evaluate(h.long),
    { parameter: "batch.seqLen", message: /got 26/ },
  ],
  [
    "a batch with a token out of the vocabulary",
    (a, h) =>
      h.model.evaluate({ ...h.batch, tokens: h.batch.tokens.map((t, i) => (i === 3 ? 24 : t)) }),
    { parameter: "batch.tokens", message: /entry 3 is 24/ },
  ],
  [
    "a batch with a target short",
    (a, h) => h.model.evaluate({ ...h.batch, targets: h.batch.targets.subarray(1) }),
    { parameter: "batch.targets", message: /./ },
  ],
  [
    "a batch of 0 sequences",
    (a, h) => h.model.evaluate({ ...h.batch, batch: 0 }),
    { parameter: "batch.batch", message: /./ },
  ],
  [
    "a batch whose tokens are a string",
    (a, h) => h.model.evaluate({ ...h.batch, tokens: "abc" }),
    { type: true },
  ],
  [
    "the attention weights of a layer past the model's",
    async (a, h) => {
      await h.model.evaluate(h.batch);
      return h.model.attentionWeights(2);
    },
    { parameter: "layer", message: /./ },
  ],
];

// ---- The language model (a model build): [label, (attn, held) => call,
// { parameter, message, type }] as MODEL_CASES; `held` is what
// languageFixtures(attn, text) made from a text of a few thousand characters
// or more (language.test.js: a slice of Moby-Dick).
/** A tokenizer of "ab", a dataset of `text`, models of its vocabulary (awaited: sync or worker). */
export async function languageFixtures(a, text) {
  const tokenizer = await a.createTokenizer("ab");
  const data = await a.createTextDataset(text, { seqLen: 8 });
  const { vocabulary } = data;
  const config = { ...LANGUAGE_GPT, vocabSize: vocabulary.length };
  const model = await a.createModel(config, { seed: 1, vocabulary });
  const other = await a.createModel(
    { ...LANGUAGE_GPT, maxSeqLen: 8 },
    { vocabulary: ["\uFFFD", "a"] },
  );
  const short = await a.createModel({ ...LANGUAGE_GPT, maxSeqLen: 4 }, { vocabulary });
  const held = { text, tokenizer, data, model, other, short, vocabSize: vocabulary.length };
  held.dispose = async () => {
    for (const o of [data, model, other, short]) await o.dispose();
  };
  return held;
}

const textCase = (label, call, parameter, message, type = false) => [
  label,
  call,
  { parameter, message, type },
];
const MANY = Array.from({ length: 513 }, (_, i) => String.fromCodePoint(0x100 + i)).join("");
const L = LANGUAGE_GPT;

export const LANGUAGE_CASES = [
  // ---- the tokenizer
  textCase(
    "a tokenizer of a number",
    (a) => a.createTokenizer(42),
    "text",
    /expected a string, got 42$/,
    true,
  ),
  textCase(
    "a tokenizer of undefined",
    (a) => a.createTokenizer(undefined),
    "text",
    /got undefined$/,
    true,
  ),
  textCase(
    "a tokenizer of an empty text",
    (a) => a.createTokenizer(""),
    "text",
    /at least one character, got an empty text$/,
  ),
  textCase(
    "a tokenizer of a text with a lone high surrogate",
    (a) => a.createTokenizer("ab\uD800c"),
    "text",
    /well-formed string .*, got a lone surrogate \\uD800 at index 2$/,
  ),
  textCase(
    "a tokenizer of a lone low surrogate",
    (a) => a.createTokenizer("\uDC00"),
    "text",
    /lone surrogate \\uDC00 at index 0$/,
  ),
  textCase(
    "a tokenizer of too many characters",
    (a) => a.createTokenizer("a".repeat(8 * 2 ** 20 + 1)),
    "text",
    /at most 8388608 bytes of UTF-8, got 8388609 characters$/,
  ),
  // 3 bytes per character: within the characters, over the bytes.
  textCase(
    "a tokenizer of too many bytes",
    (a) => a.createTokenizer("中".repeat(3 * 2 ** 20)),
    "text",
    /at most 8388608 bytes of UTF-8, got 9437184 bytes$/,
  ),
  textCase(
    "a tokenizer of 513 distinct characters",
    (a) => a.createTokenizer(MANY),
    "text",
    /at most 512 distinct characters, got 513$/,
  ),
  textCase(
    "decode a token past the vocabulary",
    (a, h) => h.tokenizer.decode([1, 3]),
    "tokens",
    /0 \.\. 2, got 3 at entry 1$/,
  ),
  textCase("decode token -1", (a, h) => h.tokenizer.decode([-1]), "tokens", /got -1 at entry 0$/),
  textCase("decode a string", (a, h) => h.tokenizer.decode("ab"), "tokens", /Int32Array/, true),
  textCase(
    "decode a fraction names its entry",
    (a, h) => h.tokenizer.decode([1.5]),
    "tokens",
    /array of integers\), got 1\.5 at entry 0$/,
    true,
  ),
  textCase(
    "decode NaN names its entry",
    (a, h) => h.tokenizer.decode([1, 2, NaN]),
    "tokens",
    /got NaN at entry 2$/,
    true,
  ),
  textCase(
    "decode a string entry names it",
    (a, h) => h.tokenizer.decode([1, "2"]),
    "tokens",
    /got string "2" at entry 1$/,
    true,
  ),
  textCase("encode null", (a, h) => h.tokenizer.encode(null), "text", /a string, got null$/, true),
  // ---- the text dataset
  textCase(
    "a dataset of a number",
    (a) => a.createTextDataset(7, { seqLen: 8 }),
    "text",
    /a string, got 7$/,
    true,
  ),
  textCase(
    "a dataset of too short a text",
    (a) => a.createTextDataset("a".repeat(89), { seqLen: 8 }),
    "text",
    /at least 90 characters \(10 windows of seqLen \+ 1, .*\), got 89$/,
  ),
  textCase(
    "a dataset of a text with a lone surrogate",
    (a) => a.createTextDataset("x\uD83D", { seqLen: 8 }),
    "text",
    /lone surrogate \\uD83D/,
  ),
  textCase(
    "a dataset without options",
    (a, h) => a.createTextDataset(h.text),
    "options",
    /got undefined$/,
    true,
  ),
  textCase(
    "a dataset without seqLen",
    (a, h) => a.createTextDataset(h.text, {}),
    "options.seqLen",
    /got undefined$/,
    true,
  ),
  textCase(
    "a dataset of seqLen 0",
    (a, h) => a.createTextDataset(h.text, { seqLen: 0 }),
    "options.seqLen",
    /got 0$/,
  ),
  textCase(
    "a dataset of seqLen 2.5",
    (a, h) => a.createTextDataset(h.text, { seqLen: 2.5 }),
    "options.seqLen",
    /got 2.5$/,
  ),
  textCase(
    "a dataset of seed -1",
    (a, h) => a.createTextDataset(h.text, { seqLen: 8, seed: -1 }),
    "options.seed",
    /got -1$/,
  ),
  textCase(
    "a dataset of 0 validation windows",
    (a, h) => a.createTextDataset(h.text, { seqLen: 8, validationWindows: 0 }),
    "options.validationWindows",
    /got 0$/,
  ),
  textCase(
    "a dataset option typo: seqlen",
    (a, h) => a.createTextDataset(h.text, { seqLen: 8, seqlen: 8 }),
    "options.seqlen",
    /did you mean seqLen\?/,
  ),
  textCase(
    "a dataset vocabulary without the unknown token first",
    (a, h) => a.createTextDataset(h.text, { seqLen: 8, vocabulary: ["a", "b"] }),
    "options.vocabulary",
    /U\+FFFD \(the unknown token\) first, got U\+0061$/,
  ),
  textCase(
    "a dataset vocabulary entry of two characters",
    (a, h) => a.createTextDataset(h.text, { seqLen: 8, vocabulary: ["\uFFFD", "ab"] }),
    "options.vocabulary[1]",
    /one character/,
    true,
  ),
  textCase(
    "a dataset vocabulary that is a string",
    (a, h) => a.createTextDataset(h.text, { seqLen: 8, vocabulary: "abc" }),
    "options.vocabulary",
    /an array of characters/,
    true,
  ),
  textCase("a batch of 0 windows", (a, h) => h.data.next(0), "batch", /got 0$/),
  textCase(
    "validation windows past the last",
    (a, h) => h.data.validationBatch(120, 9),
    "count",
    /within 0 \.\. \d+ .*, got 120 \.\. 129$/,
  ),
  textCase(
    "a validation loss of a model of another vocabulary",
    (a, h) => h.data.validationLoss(h.other),
    "model",
    /this dataset's vocabulary/,
  ),
  textCase(
    "a validation loss of a model of too few positions",
    (a, h) => h.data.validationLoss(h.short),
    "model",
    /maxSeqLen >= 8/,
  ),
  textCase(
    "a validation loss of an object not a model",
    (a, h) => h.data.validationLoss({}),
    "model",
    /expected a Model, got an object/,
  ),
  textCase(
    "a disposed dataset",
    async (a, h) => {
      const data = await a.createTextDataset(h.text, { seqLen: 8 });
      await data.dispose();
      return data.next(1);
    },
    "dataset",
    /disposed/,
  ),
  // ---- generation
  textCase(
    "a prompt of a number",
    (a, h) => h.model.generate(5),
    "prompt",
    /a string, got 5$/,
    true,
  ),
  textCase(
    "a prompt with a lone surrogate",
    (a, h) => h.model.generate("a\uDFFF"),
    "prompt",
    /lone surrogate \\uDFFF at index 1$/,
  ),
  textCase("an empty prompt", (a, h) => h.model.generate(""), "prompt", /./),
  textCase("length 0", (a, h) => h.model.generate("a", { length: 0 }), "options.length", /got 0$/),
  textCase(
    "an unbounded length is refused before sampling",
    (a, h) => h.model.generate("a", { length: 1e9 }),
    "options.length",
    /at most 65536 characters per generate call .*, got 1000000000$/,
  ),
  textCase(
    "length one past the limit",
    (a, h) => h.model.generate("a", { length: 65537 }),
    "options.length",
    /got 65537$/,
  ),
  textCase(
    "steps a string",
    (a, h) => h.model.generate("a", { steps: "no" }),
    "options.steps",
    /a boolean, got string "no"$/,
    true,
  ),
  textCase(
    "trainer options print as the caller wrote them",
    (a, h) => a.createTrainer(h.model, { learningRate: -1 }),
    "options.learningRate",
    /, got -1$/,
  ),
  textCase(
    "a minimum learning rate above the rate, in JS numbers",
    (a, h) => a.createTrainer(h.model, { minLearningRate: 0.5 }),
    "options.minLearningRate",
    /learningRate 0\.001, got 0\.5$/,
  ),
  textCase(
    "temperature -1",
    (a, h) => h.model.generate("a", { temperature: -1 }),
    "options.temperature",
    /got -1$/,
  ),
  textCase(
    "temperature NaN",
    (a, h) => h.model.generate("a", { temperature: NaN }),
    "options.temperature",
    /got NaN$/,
  ),
  textCase(
    "temperature a string",
    (a, h) => h.model.generate("a", { temperature: "hot" }),
    "options.temperature",
    /a number/,
    true,
  ),
  textCase("topK 1.5", (a, h) => h.model.generate("a", { topK: 1.5 }), "options.topK", /got 1.5$/),
  textCase(
    "topK past the vocabulary",
    (a, h) => h.model.generate("a", { topK: h.vocabSize + 1 }),
    "options.topK",
    /got \d+/,
  ),
  textCase("seed 0.5", (a, h) => h.model.generate("a", { seed: 0.5 }), "options.seed", /got 0.5$/),
  textCase(
    "a generate option typo: lenght",
    (a, h) => h.model.generate("a", { lenght: 3 }),
    "options.lenght",
    /did you mean length/,
  ),
  textCase(
    "a sampler of a length",
    (a, h) => h.model.sampler("a", { length: 3 }),
    "options.length",
    /unknown key/,
  ),
  textCase(
    "a model vocabulary out of order",
    (a) => a.createModel({ ...L }, { vocabulary: ["\uFFFD", "b", "a"] }),
    "options.vocabulary",
    /ascending .* got U\+0061 at token 2$/,
  ),
  textCase(
    "a model vocabulary of another size than vocabSize",
    (a) => a.createModel({ ...L, vocabSize: 5 }, { vocabulary: ["\uFFFD", "a"] }),
    "options.vocabulary",
    /expected 5 characters \(config.vocabSize\), got 2$/,
  ),
  textCase(
    "dFF without layerNorm",
    (a) => a.createModel({ ...L, vocabSize: 5, dFF: 8, layerNorm: false }),
    "config.dFF",
    /expected layerNorm on, got off$/,
  ),
  textCase(
    "a model without vocabSize or vocabulary",
    (a) => a.createModel({ ...L }),
    "config.vocabSize",
    /got undefined$/,
    true,
  ),
  textCase(
    "a trainer of decaySteps 1.5",
    (a, h) => a.createTrainer(h.model, { decaySteps: 1.5 }),
    "options.decaySteps",
    /got 1.5$/,
  ),
  textCase(
    "a trainer of minLearningRate -1",
    (a, h) => a.createTrainer(h.model, { minLearningRate: -1 }),
    "options.minLearningRate",
    /./,
  ),
];
