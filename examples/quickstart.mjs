// The README's JavaScript example (Node). Run: node examples/quickstart.mjs
import createAttnkit, { AttnkitError } from "attnkit";

const attn = await createAttnkit(); // loads the SIMD128 build where supported
console.log(`attnkit on ${attn.target} (simd: ${attn.simd})`);

// X [T=3, d_model=4]: nested arrays or { data: Float32Array, rows, cols }.
const X = [
  [1, 0, 1, 0],
  [0, 2, 0, 2],
  [1, 1, 1, 1],
];
const weights = {
  W_Q: [
    [1, 0],
    [0, 1],
    [1, 0],
    [0, 1],
  ], // [d_model, d_k = 2]
  W_K: [
    [0, 1],
    [1, 0],
    [0, 1],
    [1, 0],
  ], // [d_model, d_k = 2]
  W_V: [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
    [1, 1, 1],
  ], // [d_model, d_v = 3]
};

// Every intermediate, each a { data: Float32Array, rows, cols }.
const trace = attn.trace(X, weights, { causal: true });
for (let i = 0; i < trace.weights.rows; ++i) {
  const row = trace.weights.data.subarray(i * trace.weights.cols, (i + 1) * trace.weights.cols);
  console.log(`weights row ${i}:`, Array.from(row, (w) => w.toFixed(3)).join(" "));
}

// Multi-head attention on a batch [B=2, T=3, d_model=4], 2 heads sharing 1 K/V head.
const Xb = { data: new Float32Array(2 * 3 * 4).map((_, i) => Math.sin(i)), shape: [2, 3, 4] };
const eye = (n) =>
  Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => +(i === j)));
const out = attn.multiHeadAttention(
  Xb,
  {
    W_Q: eye(4),
    W_K: eye(4).map((r) => r.slice(0, 2)),
    W_V: eye(4).map((r) => r.slice(2)),
    W_O: eye(4),
  },
  { numHeads: 2, numKvHeads: 1 },
  { causal: true },
);
console.log("multi-head output shape:", out.shape);

// Token-by-token decoding with a KV cache: step t's output equals row t of the
// full causal computation above.
const cache = attn.createKVCache({ batch: 2, numKvHeads: 1, dK: 2, dV: 2, capacity: 16 });
const step = (t) => ({
  data: Xb.data.filter((_, i) => Math.floor(i / 4) % 3 === t),
  shape: [2, 1, 4],
});
const decodeWeights = {
  W_Q: eye(4),
  W_K: eye(4).map((r) => r.slice(0, 2)),
  W_V: eye(4).map((r) => r.slice(2)),
  W_O: eye(4),
};
for (let t = 0; t < 3; ++t) {
  const y = cache.decode(step(t), decodeWeights, { numHeads: 2, numKvHeads: 1 });
  console.log(
    `decode step ${t}: item 0 ->`,
    Array.from(y.data.subarray(0, 4), (v) => v.toFixed(3)).join(" "),
  );
}
console.log(
  "full causal row 2, item 0 ->",
  Array.from(out.data.subarray(8, 12), (v) => v.toFixed(3)).join(" "),
);
cache.dispose(); // frees its wasm memory (also: `using cache = ...` where supported)

// Bad input throws an AttnkitError (a RangeError) naming the parameter.
try {
  attn.selfAttention(X, {
    ...weights,
    W_Q: [
      [1, 0],
      [0, 1],
    ],
  });
} catch (e) {
  if (!(e instanceof AttnkitError)) throw e;
  console.log(`${e.name} [${e.code}] ${e.message}`);
}
