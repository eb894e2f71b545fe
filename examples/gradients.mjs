// Gradients of attention, checked by central finite differences (Node).
// Run: node examples/gradients.mjs (exits 1 if a gradient is off).
import createAttnkit from "attnkit";

const attn = await createAttnkit();

// One causal head: Q, K [T=3, d_k=2], V [3, d_v=2]. The loss is sum(output * G),
// so dLoss/dOutput = G.
const Q = [
  [0.1, 0.2],
  [0.3, -0.4],
  [0.5, 0.6],
];
const K = [
  [0.2, -0.1],
  [0.4, 0.3],
  [-0.5, 0.1],
];
const V = [
  [1, 2],
  [3, 4],
  [5, 6],
];
const G = [
  [1, 0],
  [0, 1],
  [1, 1],
];
const options = { causal: true };

// The forward for training keeps each row's log-sum-exp, so the backward does
// not run the forward again.
const saved = attn.attentionForTraining(Q, K, V, options);
const grads = attn.attentionBackward(Q, K, V, G, { ...options, saved });

const loss = (q, k, v) =>
  attn.attention(q, k, v, options).data.reduce((s, o, i) => s + o * G.flat()[i], 0);
const nudged = (m, r, c, delta) =>
  m.map((row, i) => row.map((x, j) => (i === r && j === c ? x + delta : x)));

// Central differences of the float32 loss: a step of 1e-2 keeps rounding small.
const h = 1e-2;
let worst = 0;
for (const [name, m, lossOf] of [
  ["dQ", Q, (q) => loss(q, K, V)],
  ["dK", K, (k) => loss(Q, k, V)],
  ["dV", V, (v) => loss(Q, K, v)],
]) {
  for (let r = 0; r < m.length; r++) {
    for (let c = 0; c < m[0].length; c++) {
      const numeric = (lossOf(nudged(m, r, c, h)) - lossOf(nudged(m, r, c, -h))) / (2 * h);
      const analytic = grads[name].data[r * m[0].length + c];
      worst = Math.max(worst, Math.abs(analytic - numeric));
      console.log(
        `${name}[${r}][${c}] = ${analytic.toFixed(5)}, by differences ${numeric.toFixed(5)}`,
      );
    }
  }
}
console.log(`largest difference: ${worst.toExponential(1)}`);
if (worst > 1e-3) process.exit(1);
