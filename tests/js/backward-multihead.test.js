// Gradients of self-attention and multi-head attention through the npm
// package (selfAttentionBackward, multiHeadAttentionQKVForTraining,
// multiHeadAttentionQKVBackward in both layouts, multiHeadAttentionBackward)
// against the float64 reference of backward-reference.js, itself checked here
// by central finite differences, in the SIMD128, scalar and threads builds.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError } from "attnkit";
import { fromTensor3, randomMatrix, rng, toMatrix, toTensor3 } from "./reference.js";
import { VARIANTS, assertClose, assertIdentical, transposeHeads } from "./helpers.js";
import {
  assertGrad,
  numericGradient,
  refMultiHeadBackward,
  refMultiHeadLoss,
  refMultiHeadQKVBackward,
  refSelfBackward,
} from "./backward-reference.js";

/** A batch [B][T][C] of random values. */
const batchOf = (rand, B, T, C, amp = 1) =>
  Array.from({ length: B }, () => randomMatrix(rand, T, C, amp));

/** Multi-head weights: d_model, h heads of dk, kvh K/V heads of dv, W_O [h*dv, dOut] or none. */
function mhWeights(rand, dModel, h, kvh, dk, dv, dOut) {
  const w = {
    W_Q: randomMatrix(rand, dModel, h * dk),
    W_K: randomMatrix(rand, dModel, kvh * dk),
    W_V: randomMatrix(rand, dModel, kvh * dv),
  };
  if (dOut) w.W_O = randomMatrix(rand, h * dv, dOut);
  return w;
}
const packWeights = (w) => Object.fromEntries(Object.entries(w).map(([k, m]) => [k, toMatrix(m)]));

describe("the float64 reference of the multi-head gradients", () => {
  for (const withWO of [true, false]) {
    it(`equals central finite differences (batch 2, 4 heads, 2 K/V heads, W_O ${withWO})`, () => {
      const rand = rng(withWO ? 1 : 2);
      const h = 4,
        kvh = 2,
        T = 3,
        dModel = 4;
      const Xs = batchOf(rand, 2, T, dModel);
      const w = mhWeights(rand, dModel, h, kvh, 2, 1, withWO ? 3 : 0);
      const G = batchOf(rand, 2, T, withWO ? 3 : h);
      const options = { causal: true, keyLengths: [3, 2], softcap: 2 };
      const ref = refMultiHeadBackward(Xs, w, G, h, kvh, options);
      const names = ["W_Q", "W_K", "W_V", ...(withWO ? ["W_O"] : [])];
      const loss = ([X0, X1, ...ws]) =>
        refMultiHeadLoss(
          [X0, X1],
          Object.fromEntries(names.map((n, i) => [n, ws[i]])),
          G,
          h,
          kvh,
          options,
        );
      const args = [Xs[0], Xs[1], ...names.map((n) => w[n])];
      const tol = { abs: 1e-6, rel: 1e-5 };
      assertClose(ref.dX[0], numericGradient(loss, args, 0), "dX[0]", tol);
      assertClose(ref.dX[1], numericGradient(loss, args, 1), "dX[1]", tol);
      names.forEach((n, i) =>
        assertClose(ref[`d${n}`], numericGradient(loss, args, 2 + i), `d${n}`, tol),
      );
      assert.equal("dW_O" in ref, withWO);
    });
  }
});

// Batch 2, 4 query heads over 2 K/V heads (GQA), T_q 5, T_k 17.
const B = 2,
  h = 4,
  kvh = 2,
  Tq = 5,
  Tk = 17,
  dk = 3,
  dv = 2;

const BUILDS = [...VARIANTS, { name: "threads", options: { threads: 2 } }];

for (const build of BUILDS) {
  describe(`multi-head and self-attention gradients (${build.name} build)`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(build.options);
    });

    for (const [name, T, options] of [
      ["T 1", 1, {}],
      ["T 5, causal", 5, { causal: true }],
      ["T 17, softcap and key length", 17, { softcap: 2, keyLength: 13 }],
      ["T 129, causal", 129, { causal: true, scale: 0.5 }],
    ]) {
      it(`selfAttentionBackward, ${name}`, () => {
        const rand = rng(T);
        const X = randomMatrix(rand, T, 6);
        const w = mhWeights(rand, 6, 1, 1, 4, 3, 0);
        const dO = randomMatrix(rand, T, 3);
        const ref = refSelfBackward(X, w, dO, options);
        const g = attn.selfAttentionBackward(X, w, dO, options);
        assert.deepEqual(Object.keys(g), ["dX", "dW_Q", "dW_K", "dW_V"]);
        for (const n of ["dX", "dW_Q", "dW_K", "dW_V"]) assertGrad(g[n], ref[n], n);
        assert.deepEqual([g.dX.rows, g.dX.cols, g.dW_V.rows, g.dW_V.cols], [T, 6, 6, 3]);
      });
    }

    const cases = [
      ["no options", {}],
      ["causal, key lengths", { causal: true, keyLengths: [17, 9] }],
      ["softcap, scale", { softcap: 1.5, scale: 0.8 }],
      [
        "upper-left causal offsets per item",
        { causal: true, causalAlignment: "upperLeft", causalOffsets: [3, -1] },
      ],
      [
        "bool and additive masks, a fully masked row",
        {
          boolMask: Array.from({ length: Tq }, (_, i) =>
            Array.from({ length: Tk }, (_, j) => i !== 2 && (i + j) % 3 !== 0),
          ),
          additiveMask: Array.from({ length: Tq }, (_, i) =>
            Array.from({ length: Tk }, (_, j) =>
              j === 5 ? -Infinity : Math.fround(0.1 * (i - j)),
            ),
          ),
        },
      ],
    ];
    for (const [name, options] of cases) {
      it(`multiHeadAttentionQKV forward for training and backward, ${name}, both layouts`, () => {
        const rand = rng(name.length);
        const Qs = batchOf(rand, B, Tq, h * dk),
          Ks = batchOf(rand, B, Tk, kvh * dk),
          Vs = batchOf(rand, B, Tk, kvh * dv),
          dOs = batchOf(rand, B, Tq, h * dv);
        const ref = refMultiHeadQKVBackward(Qs, Ks, Vs, dOs, h, kvh, options);
        const config = { numHeads: h, numKvHeads: kvh };
        const [Q, K, V, dO] = [Qs, Ks, Vs, dOs].map(toTensor3);
        const fwd = attn.multiHeadAttentionQKVForTraining(Q, K, V, config, options);
        assert.deepEqual(fwd.out.shape, [B, Tq, h * dv]);
        assert.deepEqual(fwd.lse.shape, [B, h, Tq]);
        assertGrad(fwd.out, ref.out, "out");
        assertClose(fwd.lse, ref.lse, "lse", { abs: 1e-4, rel: 1e-4 });
        const g = attn.multiHeadAttentionQKVBackward(Q, K, V, config, dO, options);
        assert.deepEqual(g.dQ.shape, Q.shape);
        assert.deepEqual(g.dK.shape, K.shape);
        assert.deepEqual(g.dV.shape, V.shape);
        assertGrad(fromTensor3(g.dQ), ref.dQ, "dQ");
        assertGrad(fromTensor3(g.dK), ref.dK, "dK");
        assertGrad(fromTensor3(g.dV), ref.dV, "dV");
        const saved = attn.multiHeadAttentionQKVBackward(Q, K, V, config, dO, {
          ...options,
          saved: fwd,
        });
        for (const n of ["dQ", "dK", "dV"]) assertIdentical(saved[n], g[n], `saved ${n}`);

        // bhsd: the same gradients, in the layout of the inputs.
        const bhsd = (t, H, S, D) => ({
          data: transposeHeads(t.data, B, H, S, D, true),
          shape: [B, H, S, D],
        });
        const [q4, k4, v4, d4] = [
          bhsd(Q, h, Tq, dk),
          bhsd(K, kvh, Tk, dk),
          bhsd(V, kvh, Tk, dv),
          bhsd(dO, h, Tq, dv),
        ];
        const o4 = { ...options, layout: "bhsd" };
        const f4 = attn.multiHeadAttentionQKVForTraining(q4, k4, v4, config, o4);
        assert.deepEqual(f4.out.shape, [B, h, Tq, dv]);
        assertIdentical(f4.out, bhsd(fwd.out, h, Tq, dv), "bhsd out");
        assertIdentical(f4.lse, fwd.lse, "bhsd lse");
        const g4 = attn.multiHeadAttentionQKVBackward(q4, k4, v4, config, d4, {
          ...o4,
          saved: f4,
        });
        assertIdentical(g4.dQ, bhsd(g.dQ, h, Tq, dk), "bhsd dQ");
        assertIdentical(g4.dK, bhsd(g.dK, kvh, Tk, dk), "bhsd dK");
        assertIdentical(g4.dV, bhsd(g.dV, kvh, Tk, dv), "bhsd dV");
        assert.deepEqual(g4.dK.shape, [B, kvh, Tk, dk]);
        const into = new Float32Array(B * kvh * Tk * dk);
        const g5 = attn.multiHeadAttentionQKVBackward(q4, k4, v4, config, d4, {
          ...o4,
          out: { dK: into },
        });
        assert.equal(g5.dK.data, into);
        assertIdentical(g5.dK, g4.dK, "bhsd dK into options.out.dK");
      });
    }
  });

  describe(`multi-head and self-attention gradients (${build.name} build): masks, W_O and bad input`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(build.options);
    });

    it("multiHeadAttentionQKVBackward, mask tensors per item and head, shared rows, short keys", () => {
      const rand = rng(11);
      const Qs = batchOf(rand, B, Tq, h * dk),
        Ks = batchOf(rand, B, Tk, kvh * dk),
        Vs = batchOf(rand, B, Tk, kvh * dv),
        dOs = batchOf(rand, B, Tq, h * dv);
      // boolMask [B, h, T_q, T_k]: a pattern per item and head; row 1 of (item 1, head 2) fully masked.
      const allowed = (b, i, r, c) =>
        (b + 2 * i + r + c) % 4 !== 0 && !(b === 1 && i === 2 && r === 1);
      const boolData = [];
      for (let b = 0; b < B; ++b)
        for (let i = 0; i < h; ++i)
          for (let r = 0; r < Tq; ++r)
            for (let c = 0; c < Tk; ++c) boolData.push(allowed(b, i, r, c));
      // additiveMask [1, h, 1, T_k - 3]: one row per head for every item and query; later keys masked out.
      const short = Tk - 3;
      const bias = (i, c) => Math.fround((0.3 * (i - c)) / (c + 1));
      const addData = [];
      for (let i = 0; i < h; ++i) for (let c = 0; c < short; ++c) addData.push(bias(i, c));
      const options = {
        boolMask: { shape: [B, h, Tq, Tk], data: boolData },
        additiveMask: { shape: [1, h, 1, short], data: new Float32Array(addData) },
      };
      const grid = (f) =>
        Array.from({ length: Tq }, (_, r) => Array.from({ length: Tk }, (_, c) => f(r, c)));
      const headMasks = (b, i) => ({
        boolMask: grid((r, c) => allowed(b, i, r, c) && c < short),
        additiveMask: grid((r, c) => (c < short ? bias(i, c) : 0)),
      });
      const ref = refMultiHeadQKVBackward(Qs, Ks, Vs, dOs, h, kvh, { headMasks });
      const config = { numHeads: h, numKvHeads: kvh };
      const [Q, K, V, dO] = [Qs, Ks, Vs, dOs].map(toTensor3);
      const fwd = attn.multiHeadAttentionQKVForTraining(Q, K, V, config, options);
      assertGrad(fwd.out, ref.out, "out");
      assert.equal(
        fwd.lse.data[(1 * h + 2) * Tq + 1],
        -Infinity,
        "the fully masked row has no key",
      );
      const g = attn.multiHeadAttentionQKVBackward(Q, K, V, config, dO, { ...options, saved: fwd });
      assertGrad(fromTensor3(g.dQ), ref.dQ, "dQ");
      assertGrad(fromTensor3(g.dK), ref.dK, "dK");
      assertGrad(fromTensor3(g.dV), ref.dV, "dV");
      const row = g.dQ.data.subarray(
        (1 * Tq + 1) * h * dk + 2 * dk,
        (1 * Tq + 1) * h * dk + 3 * dk,
      );
      assert.ok(
        row.every((x) => x === 0),
        "a fully masked row gets exactly zero dQ",
      );
    });

    for (const withWO of [true, false]) {
      it(`multiHeadAttentionBackward, batch 2, GQA, key lengths, W_O ${withWO}`, () => {
        const rand = rng(withWO ? 5 : 6);
        const T = 9,
          dModel = 8,
          dOut = withWO ? 5 : h * dv;
        const Xs = batchOf(rand, B, T, dModel);
        const w = mhWeights(rand, dModel, h, kvh, dk, dv, withWO ? dOut : 0);
        const dOs = batchOf(rand, B, T, dOut);
        const options = { causal: true, keyLengths: [9, 6] };
        const ref = refMultiHeadBackward(Xs, w, dOs, h, kvh, options);
        const g = attn.multiHeadAttentionBackward(
          toTensor3(Xs),
          packWeights(w),
          { numHeads: h, numKvHeads: kvh, dK: dk, dV: dv },
          toTensor3(dOs),
          options,
        );
        assert.deepEqual(Object.keys(g), [
          "dX",
          "dW_Q",
          "dW_K",
          "dW_V",
          ...(withWO ? ["dW_O"] : []),
        ]);
        assert.deepEqual(g.dX.shape, [B, T, dModel]);
        assertGrad(fromTensor3(g.dX), ref.dX, "dX");
        for (const n of ["dW_Q", "dW_K", "dW_V", ...(withWO ? ["dW_O"] : [])]) {
          assertGrad(g[n], ref[n], n);
        }
      });
    }

    it("bad input throws naming the parameter, and leaks nothing", () => {
      const rand = rng(9);
      const X = toTensor3(batchOf(rand, 2, 4, 8));
      const w = packWeights(mhWeights(rand, 8, 4, 2, 2, 2, 3));
      const config = { numHeads: 4, numKvHeads: 2 };
      const dO = toTensor3(batchOf(rand, 2, 4, 3));
      const Q = toTensor3(batchOf(rand, 2, 4, 8)),
        K = toTensor3(batchOf(rand, 2, 4, 4)),
        V = toTensor3(batchOf(rand, 2, 4, 4)),
        dQKV = toTensor3(batchOf(rand, 2, 4, 8));
      const Xs = randomMatrix(rand, 4, 8);
      const sw = { W_Q: w.W_Q, W_K: w.W_Q, W_V: w.W_K };
      const fwd = attn.multiHeadAttentionQKVForTraining(Q, K, V, config);
      attn.multiHeadAttentionBackward(X, w, config, dO);
      attn.multiHeadAttentionQKVBackward(Q, K, V, config, dQKV, { saved: fwd });
      const heap = attn.heapBytesInUse();
      const cases = [
        [() => attn.selfAttentionBackward(Xs, sw, randomMatrix(rand, 4, 3)), "dO"],
        [
          () => attn.multiHeadAttentionBackward(X, w, config, toTensor3(batchOf(rand, 2, 4, 4))),
          "dO",
        ],
        [
          () => attn.multiHeadAttentionBackward(X, w, config, toTensor3(batchOf(rand, 2, 3, 3))),
          "dO.shape",
        ],
        [
          () =>
            attn.multiHeadAttentionQKVBackward(Q, K, V, config, toTensor3(batchOf(rand, 2, 4, 6))),
          "dO",
        ],
        [
          () =>
            attn.multiHeadAttentionQKVBackward(Q, K, V, config, toTensor3(batchOf(rand, 1, 8, 8))),
          "dO.shape",
        ],
        [
          () =>
            attn.multiHeadAttentionQKVBackward(Q, K, V, config, dQKV, {
              saved: { out: fwd.out, lse: { data: new Float32Array(4), shape: [4] } },
            }),
          "options.saved.lse",
        ],
        [
          () =>
            attn.multiHeadAttentionQKVBackward(Q, K, V, config, dQKV, {
              saved: { out: dO, lse: fwd.lse },
            }),
          "options.saved.out",
        ],
        [
          () =>
            attn.multiHeadAttentionQKVBackward(Q, K, V, config, dQKV, {
              layout: "bhsd",
            }),
          "Q.shape",
        ],
        [
          () => attn.multiHeadAttentionQKVForTraining(Q, K, V, config, { present: true }),
          "options.present",
        ],
        [
          () =>
            attn.multiHeadAttentionBackward(X, w, config, dO, {
              out: { dW_O: new Float32Array(2) },
            }),
          "options.out.dW_O",
        ],
      ];
      for (const [call, parameter] of cases) {
        assert.throws(call, (e) => {
          assert.ok(e instanceof AttnkitError, `${parameter}: ${e}`);
          assert.equal(e.parameter, parameter, e.message);
          assert.ok(e.message.startsWith(`${parameter}: expected `), e.message);
          return true;
        });
      }
      attn.multiHeadAttentionBackward(X, w, config, dO);
      assert.equal(attn.heapBytesInUse(), heap, "heap bytes in use");
    });
  });
}

describe("the threads build equals one thread bit for bit (multi-head)", () => {
  it("multiHeadAttentionQKVBackward and multiHeadAttentionBackward, batch 2, T 129", async () => {
    const one = await createAttnkit();
    const two = await createAttnkit({ threads: 2 });
    const rand = rng(77);
    const config = { numHeads: 4, numKvHeads: 2 };
    const Q = toTensor3(batchOf(rand, 2, 129, 32)),
      K = toTensor3(batchOf(rand, 2, 129, 16)),
      V = toTensor3(batchOf(rand, 2, 129, 16)),
      dO = toTensor3(batchOf(rand, 2, 129, 32));
    const options = { causal: true, keyLengths: [129, 100] };
    const g1 = one.multiHeadAttentionQKVBackward(Q, K, V, config, dO, options);
    const g2 = two.multiHeadAttentionQKVBackward(Q, K, V, config, dO, options);
    for (const n of ["dQ", "dK", "dV"]) assertIdentical(g2[n], g1[n], n);
    const X = toTensor3(batchOf(rand, 2, 129, 16));
    const w = packWeights(mhWeights(rand, 16, 4, 2, 8, 8, 16));
    const dOut = toTensor3(batchOf(rand, 2, 129, 16));
    const heads = { ...config, dK: 8, dV: 8 };
    const m1 = one.multiHeadAttentionBackward(X, w, heads, dOut, options);
    const m2 = two.multiHeadAttentionBackward(X, w, heads, dOut, options);
    for (const n of ["dX", "dW_Q", "dW_K", "dW_V", "dW_O"]) assertIdentical(m2[n], m1[n], n);
  });
});
