// Correctness of every attnkit capability against the float64 reference in
// reference.js, for both builds (SIMD128 and scalar). Tolerance of every
// comparison (unless stated): |got - want| <= 1e-5 + 1e-4 * |want| (helpers.js).
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit } from "attnkit";
import * as ref from "./reference.js";
import { assertClose, assertMatrix, assertTensor, transposeHeads, VARIANTS } from "./helpers.js";

const { randomMatrix, rng, toMatrix, fromMatrix, toTensor3 } = ref;

// Single-head shapes [T_q, T_k, d_k, d_v]: sizes 1, 3, 4, 5, 7, 8, 9, 17, square and not.
const SHAPES = [
  [1, 1, 1, 1],
  [3, 3, 4, 4],
  [4, 4, 8, 8],
  [5, 5, 3, 7],
  [7, 7, 9, 5],
  [8, 8, 17, 4],
  [9, 9, 8, 8],
  [17, 17, 16, 9],
  [3, 7, 5, 2],
  [7, 3, 4, 9],
  [17, 5, 1, 3],
  [1, 17, 9, 9],
  [5, 9, 17, 17],
];

/** A boolean mask [Tq, Tk] (p = 0.7 allowed), row 0 fully masked when Tq > 1. */
function randomBoolMask(rand, Tq, Tk) {
  return Array.from({ length: Tq }, (_, i) =>
    Array.from({ length: Tk }, () => (Tq > 1 && i === 0 ? false : rand() < 0.7)),
  );
}

/** An additive mask [Tq, Tk] in [-2, 2) with some -Infinity, the last row all -Infinity when Tq > 2. */
function randomAdditiveMask(rand, Tq, Tk) {
  return Array.from({ length: Tq }, (_, i) =>
    Array.from({ length: Tk }, () => {
      if (Tq > 2 && i === Tq - 1) return -Infinity;
      return rand() < 0.2 ? -Infinity : Math.fround(4 * rand() - 2);
    }),
  );
}

// Option sets: (rand, Tq, Tk) -> options, used as given by both the package and the reference.
const OPTION_SETS = {
  none: () => ({}),
  causal: () => ({ causal: true }),
  keyLength: (rand, Tq, Tk) => ({ keyLength: 1 + Math.floor(rand() * Tk) }),
  "keyLength 0 (every row fully masked)": () => ({ keyLength: 0 }),
  boolMask: (rand, Tq, Tk) => ({ boolMask: randomBoolMask(rand, Tq, Tk) }),
  additiveMask: (rand, Tq, Tk) => ({ additiveMask: randomAdditiveMask(rand, Tq, Tk) }),
  "scale override": () => ({ scale: 0.37 }),
  softcap: () => ({ scale: 3, softcap: 0.5 }),
  "causal + keyLength": (rand, Tq, Tk) => ({ causal: true, keyLength: Math.max(1, Tk - 1) }),
  "causal + boolMask + additiveMask": (rand, Tq, Tk) => ({
    causal: true,
    boolMask: randomBoolMask(rand, Tq, Tk),
    additiveMask: randomAdditiveMask(rand, Tq, Tk),
  }),
  "all combined": (rand, Tq, Tk) => ({
    causal: true,
    keyLength: Math.max(1, Tk - 1),
    boolMask: randomBoolMask(rand, Tq, Tk),
    additiveMask: randomAdditiveMask(rand, Tq, Tk),
    scale: 0.8,
    softcap: 2,
  }),
};

/** Each weights row sums to 1 (within 1e-5) or is exactly all 0. */
function assertWeightRows(weights, label) {
  for (let r = 0; r < weights.rows; ++r) {
    const row = weights.data.subarray(r * weights.cols, (r + 1) * weights.cols);
    const sum = row.reduce((a, b) => a + b, 0);
    if (row.every((v) => v === 0)) continue;
    assert.ok(Math.abs(sum - 1) <= 1e-5, `${label}: row ${r} sums to ${sum}`);
    assert.ok(
      row.every((v) => v >= 0 && v <= 1),
      `${label}: row ${r} has weights outside [0, 1]`,
    );
  }
}

for (const variant of VARIANTS) {
  describe(`attnkit (${variant.name} build)`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    it("loads the requested build", () => {
      assert.equal(attn.simd, variant.options.simd);
      if (variant.options.simd) assert.equal(attn.target, "WASM");
      else assert.ok(["EMU128", "SCALAR"].includes(attn.target), `target ${attn.target}`);
    });

    it("createAttnkit returns the same module for the same options", async () => {
      assert.equal(await createAttnkit(variant.options), attn);
    });

    describe("attention(Q, K, V)", () => {
      for (const [name, makeOptions] of Object.entries(OPTION_SETS)) {
        it(`${name}, every shape`, () => {
          let seed = 1;
          for (const [Tq, Tk, dk, dv] of SHAPES) {
            const rand = rng(1000 * seed++ + name.length);
            const Q = randomMatrix(rand, Tq, dk),
              K = randomMatrix(rand, Tk, dk),
              V = randomMatrix(rand, Tk, dv);
            const options = makeOptions(rand, Tq, Tk);
            const got = attn.attention(toMatrix(Q), toMatrix(K), toMatrix(V), options);
            assertMatrix(got, Tq, dv, `${name} ${[Tq, Tk, dk, dv]}`);
            assertClose(
              got,
              ref.attention(Q, K, V, options),
              `${name} [${Tq}, ${Tk}, ${dk}, ${dv}]`,
            );
          }
        });
      }

      it("accepts nested rows, {data: number[]}, {data: Float32Array} and {data, shape} alike", () => {
        const rand = rng(7);
        const Q = randomMatrix(rand, 5, 3),
          K = randomMatrix(rand, 7, 3),
          V = randomMatrix(rand, 7, 4);
        const want = attn.attention(toMatrix(Q), toMatrix(K), toMatrix(V));
        const forms = [
          (m) => m,
          (m) => ({ data: m.flat(), rows: m.length, cols: m[0].length }),
          (m) => ({ data: Float64Array.from(m.flat()), rows: m.length, cols: m[0].length }),
          (m) => ({ data: Float32Array.from(m.flat()), shape: [m.length, m[0].length] }),
          (m) => m.map((row) => Float32Array.from(row)),
        ];
        for (const [i, form] of forms.entries()) {
          const got = attn.attention(form(Q), form(K), form(V));
          assert.deepEqual(got.data, want.data, `form ${i}`);
        }
        // A boolean mask as nested booleans, nested numbers, {data: Uint8Array} and {data: boolean[]}.
        const mask = randomBoolMask(rand, 5, 7);
        const masked = attn.attention(Q, K, V, { boolMask: mask });
        assertClose(masked, ref.attention(Q, K, V, { boolMask: mask }), "boolMask");
        for (const m of [
          mask.map((r) => r.map(Number)),
          { data: Uint8Array.from(mask.flat().map(Number)), rows: 5, cols: 7 },
          { data: mask.flat(), rows: 5, cols: 7 },
        ]) {
          assert.deepEqual(attn.attention(Q, K, V, { boolMask: m }).data, masked.data);
        }
      });

      it("leaves the inputs unchanged and returns JS-owned arrays", () => {
        const rand = rng(8);
        const Q = toMatrix(randomMatrix(rand, 4, 4)),
          K = toMatrix(randomMatrix(rand, 4, 4)),
          V = toMatrix(randomMatrix(rand, 4, 4));
        const copies = [Q, K, V].map((m) => m.data.slice());
        const out1 = attn.attention(Q, K, V);
        const keep = out1.data.slice();
        [Q, K, V].forEach((m, i) => assert.deepEqual(m.data, copies[i]));
        const out2 = attn.attention(Q, K, V, { causal: true });
        assert.notEqual(out1.data.buffer, out2.data.buffer);
        assert.deepEqual(out1.data, keep, "an earlier result is not overwritten by a later call");
        assert.notEqual(out1.data.buffer, attn.attention(Q, K, V).data.buffer);
      });

      it("causal with T_q > T_k: the first T_q - T_k rows are fully masked (zeros)", () => {
        const rand = rng(9);
        const Q = randomMatrix(rand, 7, 4),
          K = randomMatrix(rand, 3, 4),
          V = randomMatrix(rand, 3, 5);
        const got = attn.attention(Q, K, V, { causal: true });
        assertClose(got, ref.attention(Q, K, V, { causal: true }), "causal Tq > Tk");
        for (let r = 0; r < 4; ++r) {
          assert.ok(
            got.data.subarray(r * 5, r * 5 + 5).every((v) => v === 0),
            `row ${r} is zero`,
          );
        }
      });

      it("causal with T_q < T_k: query i sees keys j <= i + (T_k - T_q)", () => {
        const rand = rng(10);
        const Q = randomMatrix(rand, 3, 4),
          K = randomMatrix(rand, 8, 4),
          V = randomMatrix(rand, 8, 2);
        const t = attn.traceQKV(Q, K, V, { causal: true });
        for (let i = 0; i < 3; ++i) {
          for (let j = 0; j < 8; ++j) {
            const w = t.weights.data[i * 8 + j];
            if (j > i + 5) assert.equal(w, 0, `(${i}, ${j}) masked`);
            else assert.ok(w > 0, `(${i}, ${j}) visible`);
          }
        }
        assertClose(t.output, ref.attention(Q, K, V, { causal: true }), "output");
      });
    });
  });

  describe(`attnkit (${variant.name} build): masked rows`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    describe("fully masked rows and extreme values", () => {
      it("fully masked rows give zero outputs, never NaN (keyLength 0, boolMask all false, additive all -Infinity)", () => {
        const rand = rng(11);
        const Q = randomMatrix(rand, 4, 3),
          K = randomMatrix(rand, 5, 3),
          V = randomMatrix(rand, 5, 6);
        const allFalse = Array.from({ length: 4 }, () => new Array(5).fill(false));
        const allNegInf = Array.from({ length: 4 }, () => new Array(5).fill(-Infinity));
        for (const options of [
          { keyLength: 0 },
          { boolMask: allFalse },
          { additiveMask: allNegInf },
        ]) {
          const t = attn.traceQKV(Q, K, V, options);
          assert.ok(
            t.output.data.every((v) => v === 0),
            JSON.stringify(Object.keys(options)),
          );
          assert.ok(t.weights.data.every((v) => v === 0));
          assert.ok(t.maskedScores.data.every((v) => v === -Infinity));
        }
        // One masked row among normal ones.
        const boolMask = randomBoolMask(rand, 4, 5);
        boolMask[2].fill(false);
        const got = attn.attention(Q, K, V, { boolMask });
        assert.ok(!got.data.some(Number.isNaN));
        assert.ok(got.data.subarray(12, 18).every((v) => v === 0));
        assertClose(got, ref.attention(Q, K, V, { boolMask }), "one masked row");
      });

      it("softmax of a row of -Infinity is zeros; -Infinity entries get weight exactly 0", () => {
        const x = [
          [1, -Infinity, 2, -Infinity],
          [-Infinity, -Infinity, -Infinity, -Infinity],
          [0, 0, 0, 0],
        ];
        const got = attn.softmax(x);
        assertClose(got, ref.softmaxRows(x), "softmax");
        assert.equal(got.data[1], 0);
        assert.equal(got.data[3], 0);
        assert.deepEqual(Array.from(got.data.subarray(4, 8)), [0, 0, 0, 0]);
      });

      it("huge logits (~1e4) give finite outputs that match the reference", () => {
        const rand = rng(12);
        // dk = 1: scores q * k up to 1e4 with scale 1.
        const Q = [[100], [-100], [50], [1]],
          K = [[100], [99], [-100], [0.5], [-99.9]];
        const V = randomMatrix(rand, 5, 3);
        for (const options of [
          { scale: 1 },
          { scale: 1, causal: true },
          { scale: 1, softcap: 30 },
        ]) {
          const t = attn.traceQKV(Q, K, V, options);
          assert.ok(t.output.data.every(Number.isFinite), "finite outputs");
          assert.ok(Math.max(...t.rawScores.data.map(Math.abs)) >= 1e4 - 1);
          assertWeightRows(t.weights, "weights");
          assertClose(
            t.output,
            ref.attention(Q, K, V, options),
            `huge ${JSON.stringify(options)}`,
            { abs: 1e-4, rel: 1e-3 },
          );
        }
        // Random Q, K of amplitude 60 and d_k = 4: scores up to ~1.4e4 after scaling.
        const Q2 = randomMatrix(rand, 9, 4, 60),
          K2 = randomMatrix(rand, 9, 4, 60),
          V2 = randomMatrix(rand, 9, 4);
        const got = attn.attention(Q2, K2, V2, { scale: 1 });
        assert.ok(got.data.every(Number.isFinite));
        // Scores ~1e4 in float32 carry absolute errors ~1e-3, hence the looser tolerance.
        assertClose(got, ref.attention(Q2, K2, V2, { scale: 1 }), "huge random", {
          abs: 1e-2,
          rel: 1e-2,
        });
        const mh = attn.multiHeadAttentionQKV(
          { data: Float32Array.from(Q2.flat()), shape: [1, 9, 4] },
          { data: Float32Array.from(K2.flat()), shape: [1, 9, 4] },
          { data: Float32Array.from(V2.flat()), shape: [1, 9, 4] },
          { numHeads: 2 },
          { scale: 1 },
        );
        assert.ok(mh.data.every(Number.isFinite));
      });
    });
  });

  describe(`attnkit (${variant.name} build): the attention wrappers`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    describe("selfAttention, crossAttention, parameterFreeAttention", () => {
      const SELF_SHAPES = [
        [1, 1, 1, 1],
        [3, 4, 4, 4],
        [5, 8, 3, 7],
        [7, 9, 5, 5],
        [8, 17, 8, 4],
        [9, 3, 9, 9],
        [17, 16, 17, 5],
      ];
      for (const name of [
        "none",
        "causal",
        "keyLength",
        "boolMask",
        "additiveMask",
        "scale override",
        "softcap",
        "all combined",
      ]) {
        it(`selfAttention: ${name}, every shape`, () => {
          let seed = 1;
          for (const [T, dm, dk, dv] of SELF_SHAPES) {
            const rand = rng(2000 + 37 * seed++ + name.length);
            const X = randomMatrix(rand, T, dm);
            const w = {
              W_Q: randomMatrix(rand, dm, dk),
              W_K: randomMatrix(rand, dm, dk),
              W_V: randomMatrix(rand, dm, dv),
            };
            const options = OPTION_SETS[name](rand, T, T);
            const got = attn.selfAttention(toMatrix(X), w, options);
            assertMatrix(got, T, dv);
            assertClose(
              got,
              ref.selfAttentionTrace(X, w, options).output,
              `${name} [${T}, ${dm}, ${dk}, ${dv}]`,
            );
          }
        });
      }

      it("crossAttention: T_q != T_k, d_q != d_kv, d_k != d_v, with and without masks", () => {
        const CROSS = [
          [3, 7, 4, 5, 3, 2],
          [9, 4, 8, 8, 5, 7],
          [1, 17, 3, 9, 4, 4],
          [17, 1, 5, 3, 8, 3],
          [5, 8, 17, 1, 9, 1],
        ];
        let seed = 1;
        for (const [Tq, Tk, dq, dkv, dk, dv] of CROSS) {
          const rand = rng(3000 + seed++);
          const Xq = randomMatrix(rand, Tq, dq),
            Xkv = randomMatrix(rand, Tk, dkv);
          const w = {
            W_Q: randomMatrix(rand, dq, dk),
            W_K: randomMatrix(rand, dkv, dk),
            W_V: randomMatrix(rand, dkv, dv),
          };
          for (const name of ["none", "causal", "keyLength", "all combined"]) {
            const options = OPTION_SETS[name](rand, Tq, Tk);
            const got = attn.crossAttention(Xq, Xkv, w, options);
            assertMatrix(got, Tq, dv);
            assertClose(
              got,
              ref.crossAttention(Xq, Xkv, w, options),
              `${name} ${[Tq, Tk, dq, dkv, dk, dv]}`,
            );
          }
        }
      });

      it("parameterFreeAttention: Q = K = V = X, default scale 1/sqrt(d_model), overrides", () => {
        let seed = 1;
        for (const [T, dm] of [
          [1, 1],
          [3, 3],
          [4, 4],
          [7, 5],
          [8, 17],
          [17, 9],
        ]) {
          const rand = rng(4000 + seed++);
          const X = randomMatrix(rand, T, dm, 2);
          for (const options of [
            {},
            { causal: true },
            { scale: 0.5 },
            { softcap: 1, keyLength: Math.max(1, T - 2) },
          ]) {
            const got = attn.parameterFreeAttention(X, options);
            assertMatrix(got, T, dm);
            assertClose(
              got,
              ref.parameterFree(X, options),
              `[${T}, ${dm}] ${JSON.stringify(options)}`,
            );
          }
          // The same as attention(X, X, X) whose default scale is 1/sqrt(d_k) = 1/sqrt(d_model).
          assertClose(
            attn.parameterFreeAttention(X),
            attn.attention(X, X, X).data,
            "vs attention(X, X, X)",
            { abs: 1e-6, rel: 1e-6 },
          );
        }
      });
    });
  });

  describe(`attnkit (${variant.name} build): trace and kernels`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    describe("trace and traceQKV", () => {
      it("trace: every intermediate matches the reference; weights rows sum to 1 or are all 0", () => {
        let seed = 1;
        for (const [T, dm, dk, dv] of [
          [1, 2, 1, 3],
          [4, 4, 4, 4],
          [7, 5, 3, 6],
          [9, 8, 8, 8],
          [17, 9, 4, 5],
        ]) {
          for (const name of [
            "none",
            "causal",
            "softcap",
            "all combined",
            "keyLength 0 (every row fully masked)",
          ]) {
            const rand = rng(5000 + 11 * seed++);
            const X = randomMatrix(rand, T, dm);
            const w = {
              W_Q: randomMatrix(rand, dm, dk),
              W_K: randomMatrix(rand, dm, dk),
              W_V: randomMatrix(rand, dm, dv),
            };
            const options = OPTION_SETS[name](rand, T, T);
            const t = attn.trace(X, w, options);
            const r = ref.selfAttentionTrace(X, w, options);
            const label = `${name} [${T}, ${dm}, ${dk}, ${dv}]`;
            const shapes = {
              X: [T, dm],
              Q: [T, dk],
              K: [T, dk],
              V: [T, dv],
              rawScores: [T, T],
              scaledScores: [T, T],
              maskedScores: [T, T],
              weights: [T, T],
              output: [T, dv],
            };
            for (const [key, [rows, cols]] of Object.entries(shapes)) {
              assertMatrix(t[key], rows, cols, `${label} ${key}`);
              assertClose(t[key], r[key], `${label} ${key}`);
            }
            assert.equal(t.X.data.length, T * dm);
            assert.deepEqual(t.X.data, Float32Array.from(X.flat()), "trace.X is the input");
            assert.ok(
              Math.abs(t.scale - r.scale) <= 1e-7 * r.scale,
              `${label} scale ${t.scale} vs ${r.scale}`,
            );
            assertWeightRows(t.weights, label);
            // -Infinity exactly where the reference masks.
            r.maskedScores
              .flat()
              .forEach((v, i) =>
                assert.equal(
                  t.maskedScores.data[i] === -Infinity,
                  v === -Infinity,
                  `${label} mask at ${i}`,
                ),
              );
            // The trace's output equals selfAttention's.
            assertClose(
              attn.selfAttention(X, w, options),
              t.output.data,
              `${label} vs selfAttention`,
              { abs: 1e-6, rel: 1e-6 },
            );
          }
        }
      });

      it("traceQKV: no X, every intermediate matches, cross-attention shapes", () => {
        let seed = 1;
        for (const [Tq, Tk, dk, dv] of SHAPES) {
          const rand = rng(6000 + seed++);
          const Q = randomMatrix(rand, Tq, dk),
            K = randomMatrix(rand, Tk, dk),
            V = randomMatrix(rand, Tk, dv);
          const options = OPTION_SETS["all combined"](rand, Tq, Tk);
          const t = attn.traceQKV(Q, K, V, options);
          const r = ref.attentionTrace(Q, K, V, options);
          assert.equal(t.X, undefined);
          for (const key of [
            "Q",
            "K",
            "V",
            "rawScores",
            "scaledScores",
            "maskedScores",
            "weights",
            "output",
          ]) {
            assertClose(t[key], r[key], `[${Tq}, ${Tk}, ${dk}, ${dv}] ${key}`);
          }
          assert.equal(t.scale, Math.fround(0.8));
          assertWeightRows(t.weights, `[${Tq}, ${Tk}]`);
        }
        // Default scale is 1/sqrt(d_k).
        assert.ok(
          Math.abs(attn.traceQKV([[1, 2, 3]], [[1, 0, 0]], [[1]]).scale - 1 / Math.sqrt(3)) < 1e-7,
        );
      });
    });

    describe("kernels: matmul, softmax, splitHeads, mergeHeads", () => {
      it("matmul matches the reference", () => {
        let seed = 1;
        for (const [m, k, n] of [
          [1, 1, 1],
          [3, 5, 7],
          [17, 9, 1],
          [1, 1, 17],
          [8, 8, 8],
          [4, 17, 3],
        ]) {
          const rand = rng(7000 + seed++);
          const A = randomMatrix(rand, m, k),
            B = randomMatrix(rand, k, n);
          const got = attn.matmul(A, B);
          assertMatrix(got, m, n);
          assertClose(got, ref.matmul(A, B), `matmul [${m}, ${k}] [${k}, ${n}]`);
        }
      });

      it("softmax matches the reference, rows sum to 1", () => {
        const rand = rng(7100);
        for (const [m, n] of [
          [1, 1],
          [3, 5],
          [17, 9],
          [4, 17],
        ]) {
          const x = randomMatrix(rand, m, n, 5);
          const got = attn.softmax(toMatrix(x));
          assertClose(got, ref.softmaxRows(x), `softmax [${m}, ${n}]`);
          assertWeightRows(got, "softmax");
        }
      });

      it("splitHeads / mergeHeads: values as the reference, round trip is exact", () => {
        let seed = 1;
        for (const [T, h, d] of [
          [1, 1, 1],
          [3, 2, 4],
          [5, 4, 3],
          [17, 3, 5],
          [8, 8, 1],
          [9, 1, 7],
        ]) {
          const rand = rng(7200 + seed++);
          const x = randomMatrix(rand, T, h * d);
          const split = attn.splitHeads(toMatrix(x), h);
          assertTensor(split, [h, T, d], "split");
          assert.deepEqual(Array.from(split.data), ref.splitHeads(x, h).flat(2));
          const merged = attn.mergeHeads(split);
          assertMatrix(merged, T, h * d, "merged");
          assert.deepEqual(merged.data, Float32Array.from(x.flat()), "round trip");
        }
      });
    });
  });

  describe(`attnkit (${variant.name} build): multi-head attention`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    describe("multiHeadAttention", () => {
      // [B, T, d_model, numHeads, numKvHeads, dK, dV, d_out (0 = no W_O), rank of X]
      const CONFIGS = [
        [1, 5, 8, 2, 2, 0, 0, 6, 2],
        [2, 7, 12, 4, 2, 3, 5, 7, 3],
        [3, 4, 9, 3, 1, 0, 0, 0, 3],
        [2, 9, 16, 4, 4, 0, 0, 16, 3],
        [1, 17, 8, 8, 4, 0, 0, 0, 3],
        [2, 3, 5, 2, 1, 4, 3, 5, 3],
        [1, 1, 4, 1, 1, 0, 0, 3, 2],
      ];
      for (const name of ["none", "causal", "keyLengths", "all combined"]) {
        it(`${name}: with and without grouped K/V heads and W_O`, () => {
          let seed = 1;
          for (const [B, T, dm, H, KVH, dK, dV, dOut, rank] of CONFIGS) {
            const rand = rng(8000 + 13 * seed++ + name.length);
            const dk = dK || dm / H,
              dv = dV || dk;
            const Xs = Array.from({ length: B }, () => randomMatrix(rand, T, dm));
            const w = {
              W_Q: randomMatrix(rand, dm, H * dk),
              W_K: randomMatrix(rand, dm, KVH * dk),
              W_V: randomMatrix(rand, dm, KVH * dv),
            };
            if (dOut) w.W_O = randomMatrix(rand, H * dv, dOut);
            const config = { numHeads: H };
            if (KVH !== H) config.numKvHeads = KVH;
            if (dK) config.dK = dK;
            if (dV) config.dV = dV;
            let options = {};
            if (name === "causal") options = { causal: true };
            if (name === "keyLengths")
              options = {
                keyLengths: Xs.map((_, b) => (b === 1 ? 0 : 1 + Math.floor(rand() * T))),
              };
            if (name === "all combined") {
              options = {
                ...OPTION_SETS["all combined"](rand, T, T),
                keyLength: undefined,
                keyLengths: Xs.map(() => 1 + Math.floor(rand() * T)),
              };
              delete options.keyLength;
            }
            const X = rank === 2 ? toMatrix(Xs[0]) : toTensor3(Xs);
            const got = attn.multiHeadAttention(X, w, config, options);
            const width = dOut || H * dv;
            assertTensor(got, rank === 2 ? [T, width] : [B, T, width], name);
            assertClose(
              got,
              ref.multiHeadAttention(Xs, w, H, KVH, options),
              `${name} ${[B, T, dm, H, KVH, dK, dV, dOut]}`,
            );
          }
        });
      }

      it("one head without W_O equals selfAttention", () => {
        const rand = rng(8500);
        const X = randomMatrix(rand, 7, 5);
        const w = {
          W_Q: randomMatrix(rand, 5, 5),
          W_K: randomMatrix(rand, 5, 5),
          W_V: randomMatrix(rand, 5, 5),
        };
        const mh = attn.multiHeadAttention(X, w, { numHeads: 1 }, { causal: true });
        assertClose(mh, attn.selfAttention(X, w, { causal: true }).data, "1 head", {
          abs: 1e-6,
          rel: 1e-5,
        });
      });

      it("grouped heads equal full heads with the K/V columns repeated", () => {
        const rand = rng(8600);
        const dm = 8,
          H = 4,
          KVH = 2,
          d = 2;
        const Xs = [randomMatrix(rand, 6, dm), randomMatrix(rand, 6, dm)];
        const W_K = randomMatrix(rand, dm, KVH * d),
          W_V = randomMatrix(rand, dm, KVH * d);
        const w = { W_Q: randomMatrix(rand, dm, H * d), W_K, W_V };
        const repeat = (W) =>
          ref.concatColumns([0, 1, 2, 3].map((h) => ref.columns(W, Math.floor(h / 2) * d, d)));
        const grouped = attn.multiHeadAttention(toTensor3(Xs), w, { numHeads: H, numKvHeads: KVH });
        const full = attn.multiHeadAttention(
          toTensor3(Xs),
          { ...w, W_K: repeat(W_K), W_V: repeat(W_V) },
          { numHeads: H },
        );
        assertClose(grouped, full.data, "grouped vs repeated", { abs: 1e-6, rel: 1e-5 });
      });
    });

    describe("multiHeadAttentionQKV: layouts bshd and bhsd", () => {
      // [B, T_q, T_k, numHeads, numKvHeads, dK, dV]
      const QKV = [
        [1, 4, 4, 2, 2, 3, 3],
        [2, 5, 7, 4, 2, 4, 5],
        [3, 7, 3, 6, 3, 2, 2],
        [2, 9, 9, 4, 1, 8, 4],
        [1, 1, 17, 3, 1, 5, 7],
        [2, 17, 8, 1, 1, 9, 1],
      ];
      for (const name of ["none", "causal", "keyLengths", "all combined"]) {
        it(`${name}: bshd and bhsd agree with the reference and with each other`, () => {
          let seed = 1;
          for (const [B, Tq, Tk, H, KVH, dk, dv] of QKV) {
            const rand = rng(9000 + 17 * seed++ + name.length);
            const Qs = Array.from({ length: B }, () => randomMatrix(rand, Tq, H * dk));
            const Ks = Array.from({ length: B }, () => randomMatrix(rand, Tk, KVH * dk));
            const Vs = Array.from({ length: B }, () => randomMatrix(rand, Tk, KVH * dv));
            let options = {};
            if (name === "causal") options = { causal: true };
            if (name === "keyLengths")
              options = { keyLengths: Qs.map(() => Math.floor(rand() * (Tk + 1))) };
            if (name === "all combined") {
              options = {
                ...OPTION_SETS["all combined"](rand, Tq, Tk),
                keyLengths: Qs.map(() => 1 + Math.floor(rand() * Tk)),
              };
              delete options.keyLength;
            }
            const want = ref.multiHeadQKV(Qs, Ks, Vs, H, KVH, options);
            const label = `${name} ${[B, Tq, Tk, H, KVH, dk, dv]}`;
            const bshd = attn.multiHeadAttentionQKV(
              toTensor3(Qs),
              toTensor3(Ks),
              toTensor3(Vs),
              { numHeads: H, numKvHeads: KVH },
              options,
            );
            assertTensor(bshd, [B, Tq, H * dv], label);
            assertClose(bshd, want, `${label} bshd`);
            // bhsd: [B, heads, seq, headDim] in, the same layout out.
            const q4 = {
              data: transposeHeads(toTensor3(Qs).data, B, H, Tq, dk, true),
              shape: [B, H, Tq, dk],
            };
            const k4 = {
              data: transposeHeads(toTensor3(Ks).data, B, KVH, Tk, dk, true),
              shape: [B, KVH, Tk, dk],
            };
            const v4 = {
              data: transposeHeads(toTensor3(Vs).data, B, KVH, Tk, dv, true),
              shape: [B, KVH, Tk, dv],
            };
            for (const config of [{ numHeads: H, numKvHeads: KVH }, { numHeads: H }]) {
              const bhsd = attn.multiHeadAttentionQKV(q4, k4, v4, config, {
                ...options,
                layout: "bhsd",
              });
              assertTensor(bhsd, [B, H, Tq, dv], `${label} bhsd`);
              const back = transposeHeads(bhsd.data, B, H, Tq, dv);
              assert.deepEqual(back, bshd.data, `${label}: bhsd transposed equals bshd`);
            }
            // An explicit layout "bshd" is the default.
            assert.deepEqual(
              attn.multiHeadAttentionQKV(
                toTensor3(Qs),
                toTensor3(Ks),
                toTensor3(Vs),
                { numHeads: H, numKvHeads: KVH },
                { ...options, layout: "bshd" },
              ).data,
              bshd.data,
            );
          }
        });
      }

      it("rank-2 bshd inputs (batch 1) give a rank-2 output", () => {
        const rand = rng(9500);
        const Q = randomMatrix(rand, 5, 6),
          K = randomMatrix(rand, 7, 3),
          V = randomMatrix(rand, 7, 4);
        const got = attn.multiHeadAttentionQKV(Q, K, V, { numHeads: 2, numKvHeads: 1 });
        assertTensor(got, [5, 8]);
        assertClose(got, ref.multiHeadQKV([Q], [K], [V], 2, 1)[0], "rank 2");
      });
    });
  });

  describe(`attnkit (${variant.name} build): KV cache`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    describe("KV cache", () => {
      // [numHeads, numKvHeads, batch, T, d_model, dK, dV, d_out (0 = no W_O)]
      const CACHE = [
        [1, 1, 1, 7, 4, 4, 4, 4],
        [2, 1, 1, 9, 6, 3, 3, 0],
        [4, 2, 2, 8, 8, 2, 3, 5],
        [3, 3, 2, 5, 9, 3, 3, 9],
        [4, 1, 3, 9, 8, 2, 2, 0],
        [6, 2, 1, 17, 12, 2, 4, 7],
      ];
      function setup(seed, [H, KVH, B, T, dm, dk, dv, dOut]) {
        const rand = rng(seed);
        const Xs = Array.from({ length: B }, () => randomMatrix(rand, T, dm));
        const w = {
          W_Q: randomMatrix(rand, dm, H * dk),
          W_K: randomMatrix(rand, dm, KVH * dk),
          W_V: randomMatrix(rand, dm, KVH * dv),
        };
        if (dOut) w.W_O = randomMatrix(rand, H * dv, dOut);
        const config = { numHeads: H, numKvHeads: KVH, dK: dk, dV: dv };
        return { Xs, w, config, width: dOut || H * dv };
      }
      /** Rows [t0, t1) of every batch item as a [B, t1 - t0, C] tensor. */
      const rowsOf = (items, t0, t1) => toTensor3(items.map((m) => m.slice(t0, t1)));

      it("decode token by token equals full causal multiHeadAttention", () => {
        let seed = 1;
        for (const shape of CACHE) {
          const [H, KVH, B, T, dm, dk, dv] = shape;
          const { Xs, w, config, width } = setup(10000 + seed++, shape);
          const full = attn.multiHeadAttention(toTensor3(Xs), w, config, { causal: true });
          assertClose(
            full,
            ref.multiHeadAttention(Xs, w, H, KVH, { causal: true }),
            `full ${shape}`,
          );
          const cache = attn.createKVCache({
            batch: B,
            numKvHeads: KVH,
            dK: dk,
            dV: dv,
            capacity: T,
          });
          assert.deepEqual(
            [cache.batch, cache.numKvHeads, cache.dK, cache.dV, cache.capacity, cache.size],
            [B, KVH, dk, dv, T, 0],
          );
          const fullItems = ref.fromTensor3(full);
          for (let t = 0; t < T; ++t) {
            const out = cache.decode(rowsOf(Xs, t, t + 1), w, config);
            assertTensor(out, [B, 1, width]);
            assertClose(
              out,
              fullItems.map((m) => m[t]),
              `${shape} token ${t}`,
            );
            assert.equal(cache.size, t + 1);
          }
          // What was appended: K = X W_K, V = X W_V, per item and K/V head.
          for (let b = 0; b < B; ++b) {
            const K = ref.matmul(Xs[b], w.W_K),
              V = ref.matmul(Xs[b], w.W_V);
            for (let g = 0; g < KVH; ++g) {
              const keys = cache.keys(b, g),
                values = cache.values(b, g);
              assertMatrix(keys, T, dk);
              assertMatrix(values, T, dv);
              assertClose(keys, ref.columns(K, g * dk, dk), `keys ${b} ${g}`);
              assertClose(values, ref.columns(V, g * dv, dv), `values ${b} ${g}`);
            }
          }
          cache.dispose();
        }
      });

      it("decode in blocks (3, 1, rest) equals full causal attention; rank-2 X for batch 1", () => {
        let seed = 1;
        for (const shape of CACHE) {
          const [, , B, T, , dk, dv] = shape;
          const { Xs, w, config } = setup(11000 + seed++, shape);
          const fullItems = ref.fromTensor3(
            attn.multiHeadAttention(toTensor3(Xs), w, config, { causal: true }),
          );
          const cache = attn.createKVCache({
            batch: B,
            numKvHeads: config.numKvHeads,
            dK: dk,
            dV: dv,
            capacity: T + 2,
          });
          let t = 0;
          for (const n of [Math.min(3, T), 1, T]) {
            const t1 = Math.min(T, t + n);
            if (t1 === t) break;
            const X = B === 1 && n === 1 ? toMatrix(Xs[0].slice(t, t1)) : rowsOf(Xs, t, t1);
            const out = cache.decode(X, w, config);
            if (B === 1 && n === 1) assert.equal(out.shape.length, 2);
            const want = fullItems.map((m) => m.slice(t, t1));
            assertClose(out, want, `${shape} block [${t}, ${t1})`);
            t = t1;
          }
          assert.equal(cache.size, T);
          cache.dispose();
        }
      });

      it("append + attend token by token equals causal multiHeadAttentionQKV; keys()/values() return what was appended", () => {
        let seed = 1;
        for (const [H, KVH, B, T, , dk, dv] of CACHE) {
          const rand = rng(12000 + seed++);
          const Qs = Array.from({ length: B }, () => randomMatrix(rand, T, H * dk));
          const Ks = Array.from({ length: B }, () => randomMatrix(rand, T, KVH * dk));
          const Vs = Array.from({ length: B }, () => randomMatrix(rand, T, KVH * dv));
          const want = ref.multiHeadQKV(Qs, Ks, Vs, H, KVH, { causal: true });
          const cache = attn.createKVCache({
            batch: B,
            numKvHeads: KVH,
            dK: dk,
            dV: dv,
            capacity: T,
          });
          for (let t = 0; t < T; ++t) {
            cache.append(rowsOf(Ks, t, t + 1), rowsOf(Vs, t, t + 1));
            const out = cache.attend(rowsOf(Qs, t, t + 1), H);
            assertTensor(out, [B, 1, H * dv]);
            assertClose(
              out,
              want.map((m) => [m[t]]),
              `${[H, KVH, B, T]} token ${t}`,
            );
          }
          for (let b = 0; b < B; ++b) {
            for (let g = 0; g < KVH; ++g) {
              assert.deepEqual(
                Array.from(cache.keys(b, g).data),
                ref.columns(Ks[b], g * dk, dk).flat(),
                `keys ${b} ${g}`,
              );
              assert.deepEqual(
                Array.from(cache.values(b, g).data),
                ref.columns(Vs[b], g * dv, dv).flat(),
                `values ${b} ${g}`,
              );
            }
          }
          // The whole query block at once against the full cache, causal by default and not.
          assertClose(cache.attend(toTensor3(Qs), H), want, "block causal");
          assertClose(
            cache.attend(toTensor3(Qs), H, { causal: false }),
            ref.multiHeadQKV(Qs, Ks, Vs, H, KVH),
            "block non-causal",
          );
          // Per-item key padding against the cache.
          const keyLengths = Qs.map((_, b) => (b + 2) % (T + 1));
          assertClose(
            cache.attend(toTensor3(Qs), H, { causal: false, keyLengths }),
            ref.multiHeadQKV(Qs, Ks, Vs, H, KVH, { keyLengths }),
            "keyLengths",
          );
          // reset forgets the tokens and the cache can be filled again.
          cache.reset();
          assert.equal(cache.size, 0);
          assertMatrix(cache.keys(0, 0), 0, dk);
          cache.append(toTensor3(Ks), toTensor3(Vs));
          assert.equal(cache.size, T);
          assertClose(cache.attend(toTensor3(Qs), H), want, "after reset");
          cache[Symbol.dispose]();
          cache.dispose(); // twice is fine
        }
      });
    });
  });

  describe(`attnkit (${variant.name} build): worked example`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    describe("seed 001 worked example (6 tokens, d = 4)", () => {
      const X = [
        [0.1, -0.2, 0.1, 0.2],
        [0.8, 0.8, -0.9, 0.5],
        [-0.6, 0.4, 0.5, -0.9],
        [0.9, -0.7, 0.8, 0.7],
        [0.4, 0.3, 0.4, 0.4],
        [0.8, 0.2, 0.9, -0.2],
      ];
      const WQ = [
        [3.4, -2.1, 0.8, 1.9],
        [-1.2, 0.5, 3.7, -0.8],
        [2.9, 1.1, -3.4, 0.6],
        [0.7, 2.8, 1.3, -2.5],
      ];
      const Qp = [
        [1.01, 0.36, -0.74, -0.09],
        [-0.5, -0.87, 4.49, -0.23],
        [2.17, -1.99, -3.92, 1.71],
        [1.43, 2.59, 1.97, -3.19],
        [0.67, 0.98, 0.61, -0.31],
        [1.97, 0.52, 4.01, -0.51],
      ];
      const KT = [
        [0.15, 1.94, -0.98, 2.53, 1.24, 2.18],
        [0.16, 1.44, 0.64, -2.33, 0.81, 0.44],
        [0.25, 0.35, 1.25, 2.24, 1.14, 3.25],
        [0.28, 1.15, -0.81, 1.93, -0.81, -0.28],
      ];
      const V = [
        [0.43, 0.29, 0.64, 0.83],
        [1.15, 1.19, -0.28, 0.67],
        [-0.21, 0.64, 0.59, -0.82],
        [1.19, -0.45, 0.86, 0.99],
        [0.51, 0.41, 0.51, 0.51],
        [1.19, 0.28, 0.95, -0.15],
      ];
      const QKT0 = [-0.01, 2.12, -1.62, 3.45, 1.83, 3.29];

      it("row 0 of X W^Q is the printed q_0 [1.01, 0.36, -0.74, -0.09] within 0.01", () => {
        const XW = attn.matmul(X, WQ);
        [1.01, 0.36, -0.74, -0.09].forEach((v, c) =>
          assert.ok(Math.abs(XW.data[c] - v) <= 0.01, `column ${c}: ${XW.data[c]}`),
        );
        // Through the traced pipeline too.
        const t = attn.trace(X, { W_Q: WQ, W_K: WQ, W_V: WQ });
        [1.01, 0.36, -0.74, -0.09].forEach((v, c) => assert.ok(Math.abs(t.Q.data[c] - v) <= 0.01));
      });

      it("printed q_0 times printed K^T: the first three printed QK^T entries follow (within 0.01), the last three do not", () => {
        // The seed says its numbers are random; only [-0.01, 2.12, -1.62] follow from q_0 and K^T.
        const row = attn.matmul([Qp[0]], KT);
        for (let c = 0; c < 3; ++c)
          assert.ok(Math.abs(row.data[c] - QKT0[c]) <= 0.01, `column ${c}: ${row.data[c]}`);
        assertClose(row.data.subarray(3), [-0.1148, 0.7733, -0.0196], "computed entries 3..5", {
          abs: 1e-4,
          rel: 0,
        });
        for (let c = 3; c < 6; ++c)
          assert.ok(Math.abs(row.data[c] - QKT0[c]) > 0.5, `column ${c} differs from the print`);
        // The same through attention's own Q K^T.
        const t = attn.traceQKV(Qp, ref.transpose(KT), V);
        assertClose(t.rawScores.data.subarray(0, 6), row.data, "traceQKV raw row 0", {
          abs: 1e-5,
          rel: 1e-5,
        });
      });

      it("with the causal mask every softmax row sums to 1 and the upper triangle is exactly 0", () => {
        const K = ref.transpose(KT);
        const t = attn.traceQKV(Qp, K, V, { causal: true });
        assert.equal(t.scale, 0.5);
        for (let i = 0; i < 6; ++i) {
          let sum = 0;
          for (let j = 0; j < 6; ++j) {
            const w = t.weights.data[i * 6 + j];
            if (j > i) {
              assert.equal(w, 0, `weight (${i}, ${j})`);
              assert.equal(t.maskedScores.data[i * 6 + j], -Infinity);
            }
            sum += w;
          }
          assert.ok(Math.abs(sum - 1) <= 1e-6, `row ${i} sums to ${sum}`);
        }
        // Row 0 sees only key 0: output row 0 is v_0 (the seed's table prints 0.156 * v_0).
        assertClose(t.output.data.subarray(0, 4), V[0], "head_0 = v_0");
        assertClose(t.output, ref.attention(Qp, K, V, { causal: true }), "output");
        // The same through selfAttention on X with W^K = W^V = W^Q.
        const w = { W_Q: WQ, W_K: WQ, W_V: WQ };
        assertClose(
          attn.selfAttention(X, w, { causal: true }),
          ref.selfAttentionTrace(X, w, { causal: true }).output,
          "selfAttention",
        );
      });
    });
  });
}

describe("SIMD and scalar builds agree", () => {
  it("on every single-head shape and on multi-head attention", async () => {
    const simd = await createAttnkit({ simd: true }),
      scalar = await createAttnkit({ simd: false });
    assert.notEqual(simd, scalar);
    let seed = 1;
    for (const [Tq, Tk, dk, dv] of SHAPES) {
      const rand = rng(13000 + seed++);
      const Q = randomMatrix(rand, Tq, dk),
        K = randomMatrix(rand, Tk, dk),
        V = randomMatrix(rand, Tk, dv);
      const options = OPTION_SETS["all combined"](rand, Tq, Tk);
      assertClose(
        simd.attention(Q, K, V, options),
        scalar.attention(Q, K, V, options).data,
        `${[Tq, Tk, dk, dv]}`,
      );
    }
    const rand = rng(13500);
    const Xs = [randomMatrix(rand, 9, 8), randomMatrix(rand, 9, 8)];
    const w = {
      W_Q: randomMatrix(rand, 8, 8),
      W_K: randomMatrix(rand, 8, 4),
      W_V: randomMatrix(rand, 8, 4),
      W_O: randomMatrix(rand, 8, 3),
    };
    const config = { numHeads: 4, numKvHeads: 2 };
    assertClose(
      simd.multiHeadAttention(toTensor3(Xs), w, config, { causal: true }),
      scalar.multiHeadAttention(toTensor3(Xs), w, config, { causal: true }).data,
      "multi-head",
    );
  });
});

// Reference self-checks: the reference itself on hand-computed values.
describe("the float64 reference", () => {
  it("computes a hand-checked 2x2 example", () => {
    // Q = K = I, V = [[1, 2], [3, 4]], scale 1: weights rows softmax([1, 0]) and softmax([0, 1]).
    const e = Math.E,
      a = e / (e + 1),
      b = 1 / (e + 1);
    const out = ref.attention(
      [
        [1, 0],
        [0, 1],
      ],
      [
        [1, 0],
        [0, 1],
      ],
      [
        [1, 2],
        [3, 4],
      ],
      { scale: 1 },
    );
    assertClose(
      out,
      [
        [a + 3 * b, 2 * a + 4 * b],
        [b + 3 * a, 2 * b + 4 * a],
      ],
      "2x2",
      { abs: 1e-12, rel: 0 },
    );
    assert.deepEqual(ref.softmaxRows([[-Infinity, -Infinity]]), [[0, 0]]);
    assert.deepEqual(ref.mergeHeads(ref.splitHeads([[1, 2, 3, 4]], 2)), [[1, 2, 3, 4]]);
    assert.deepEqual(
      fromMatrix(
        toMatrix([
          [1, 2],
          [3, 4],
        ]),
      ),
      [
        [1, 2],
        [3, 4],
      ],
    );
  });
});
