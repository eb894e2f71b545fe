// Small calls: the lean path of attention, attentionForTraining and
// attentionBackward (plain {data: Float32Array, rows, cols} inputs, options
// without arrays: one argument block, one Embind call) against the float64
// reference at T = 1..16, d = 8 and 64, and bit for bit against the general
// path (taken with a mask, or a backward call's options.out); every error of a small call names
// its parameter as before; many small calls leave the wasm heap as it was.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";
import { attention, randomMatrix, rng, toMatrix } from "./reference.js";
import { refBackward, assertGrad } from "./backward-reference.js";
import { VARIANTS, assertClose, assertIdentical } from "./helpers.js";

const SIZES = Array.from({ length: 16 }, (_, i) => i + 1);
const DIMS = [8, 64];

for (const variant of VARIANTS) {
  describe(`small calls (${variant.name} build)`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    it("attention matches the float64 reference and the general path", () => {
      const rand = rng(11);
      for (const d of DIMS) {
        for (const T of SIZES) {
          const [Q, K, V] = [0, 1, 2].map(() => randomMatrix(rand, T, d, 2));
          for (const options of [undefined, { causal: true }, { scale: 0.3, softcap: 2.5 }]) {
            const label = `T=${T} d=${d} ${JSON.stringify(options)}`;
            const got = attn.attention(toMatrix(Q), toMatrix(K), toMatrix(V), options);
            assert.deepEqual(got.shape, [T, d], label);
            assertClose(got, attention(Q, K, V, options ?? {}), label);
            // An additive mask (of zeros) takes the general path: the same numbers.
            const additiveMask = { data: new Float32Array(T * T), rows: T, cols: T };
            const general = attn.attention(toMatrix(Q), toMatrix(K), toMatrix(V), {
              ...options,
              additiveMask,
            });
            assertIdentical(general, got, `${label} (general path)`);
            // options.out: written in place, returned as the result's data.
            const out = new Float32Array(T * d);
            const into = attn.attention(toMatrix(Q), toMatrix(K), toMatrix(V), { ...options, out });
            assert.equal(into.data, out, `${label} options.out`);
            assertIdentical(into, got, `${label} options.out`);
          }
        }
      }
    });

    it("attentionForTraining and attentionBackward match the float64 reference", () => {
      const rand = rng(12);
      for (const d of DIMS) {
        for (const T of SIZES) {
          const [Q, K, V, dO] = [0, 1, 2, 3].map(() => randomMatrix(rand, T, d));
          const label = `T=${T} d=${d}`;
          const want = refBackward(Q, K, V, dO, {});
          const saved = attn.attentionForTraining(toMatrix(Q), toMatrix(K), toMatrix(V));
          assertClose(saved.out, want.out, `${label} out`);
          assertClose(saved.lse, want.lse, `${label} lse`);
          const inputs = [Q, K, V, dO].map(toMatrix);
          for (const options of [{ saved }, undefined]) {
            const g = attn.attentionBackward(...inputs, options);
            const how = `${label} ${options ? "saved" : "recomputed"}`;
            assertGrad(g.dQ.data, want.dQ, `${how} dQ`);
            assertGrad(g.dK.data, want.dK, `${how} dK`);
            assertGrad(g.dV.data, want.dV, `${how} dV`);
            // options.out takes the general path: the same numbers.
            const out = { dQ: new Float32Array(T * d) };
            const general = attn.attentionBackward(...inputs, { ...options, out });
            assertIdentical({ data: out.dQ }, g.dQ, `${how} dQ (general path)`);
            assertIdentical(general.dK, g.dK, `${how} dK (general path)`);
            assertIdentical(general.dV, g.dV, `${how} dV (general path)`);
          }
        }
      }
    });

    it("results and other plain matrices go back in as inputs", () => {
      const rand = rng(13);
      const [Q, K, V] = [0, 1, 2].map(() => toMatrix(randomMatrix(rand, 4, 8)));
      const out = attn.attention(Q, K, V); // {data, rows, cols, shape}
      const again = attn.attention(out, K, V);
      const viaNested = attn.attention(
        Array.from({ length: 4 }, (_, r) => Array.from(out.data.subarray(r * 8, r * 8 + 8))),
        K,
        V,
      );
      assertIdentical(again, viaNested, "a result as Q");
      // A class instance or an object with other fields takes the general path.
      class Mat {
        constructor(m) {
          Object.assign(this, m);
        }
      }
      assertIdentical(attn.attention(new Mat(Q), K, V), out, "a class instance");
      assertIdentical(attn.attention({ ...Q, name: "q" }, K, V), out, "another field");
    });

    it("every error of a small call names its parameter", () => {
      const rand = rng(14);
      const [Q, K, V, dO] = [0, 1, 2, 3].map(() => toMatrix(randomMatrix(rand, 4, 8)));
      const nan = { data: Q.data.slice(), rows: 4, cols: 8 };
      nan.data[5] = NaN;
      const cases = [
        [() => attn.attention(nan, K, V), AttnkitError, "Q", "non_finite"],
        [() => attn.attention(Q, nan, V), AttnkitError, "K", "non_finite"],
        [() => attn.attention(Q, K, nan), AttnkitError, "V", "non_finite"],
        [
          () => attn.attention(Q, { ...K, cols: 4, rows: 8 }, V),
          AttnkitError,
          "K",
          "shape_mismatch",
        ],
        [() => attn.attention(Q, { data: K.data, rows: 4, cols: 4 }, V), AttnkitError, "K.data"],
        [() => attn.attention({ ...Q, col: 8 }, K, V), AttnkitError, "Q.col"],
        [() => attn.attention({ ...Q, rows: 4.5 }, K, V), AttnkitError, "Q.rows"],
        [() => attn.attention({ ...Q, data: [...Q.data] }, K, nan), AttnkitError, "V"],
        [() => attn.attention(Q, K, V, { scale: -1 }), AttnkitError, "options.scale"],
        [() => attn.attention(Q, K, V, { keyLength: 5 }), AttnkitError, "options.keyLength"],
        [() => attn.attention(Q, K, V, { keyLength: 1.5 }), AttnkitError, "options.keyLength"],
        [() => attn.attention(Q, K, V, { causl: true }), AttnkitError, "options.causl"],
        [() => attn.attention(Q, K, "V"), AttnkitTypeError, "V"],
        [
          () => attn.attention(Q, K, V, { out: new Float32Array(31) }),
          AttnkitError,
          "options.out",
          "shape_mismatch",
        ],
        [() => attn.attention(Q, K, V, { out: [] }), AttnkitTypeError, "options.out"],
        [() => attn.attentionForTraining(Q, nan, V), AttnkitError, "K", "non_finite"],
        [() => attn.attentionBackward(Q, K, V, nan), AttnkitError, "dO", "non_finite"],
        [
          () => attn.attentionBackward(Q, K, V, dO, { saved: { out: Q, lse: Q } }),
          AttnkitError,
          "options.saved.lse",
          "shape_mismatch",
        ],
        [
          () => attn.attentionBackward(Q, K, V, dO, { saved: { out: nan, lse: Q } }),
          AttnkitError,
          "options.saved.lse",
          "shape_mismatch",
        ],
      ];
      for (const [call, Class, parameter, code] of cases) {
        assert.throws(call, (e) => {
          assert.ok(e instanceof Class, `${parameter}: ${e}`);
          assert.equal(e.parameter, parameter, e.message);
          assert.ok(e.message.startsWith(`${parameter}: expected `), e.message);
          if (code) assert.equal(e.code, code, e.message);
          return true;
        });
      }
      // And a detached input says so.
      const moved = new Float32Array(32);
      structuredClone(moved, { transfer: [moved.buffer] });
      assert.throws(
        () => attn.attention({ data: moved, rows: 4, cols: 8 }, K, V),
        /Q\.data: expected 32 values .*detached/,
      );
    });

    it("10,000 small calls, some failing, leave the wasm heap as it was", () => {
      const rand = rng(15);
      const [Q, K, V, dO] = [0, 1, 2, 3].map(() => toMatrix(randomMatrix(rand, 4, 8)));
      const bad = { data: Q.data.slice(), rows: 4, cols: 8 };
      bad.data[0] = Infinity;
      const round = (i) => {
        const saved = attn.attentionForTraining(Q, K, V);
        attn.attention(Q, K, V, i % 2 ? { causal: true } : undefined);
        attn.attentionBackward(Q, K, V, dO, { saved });
        if (i % 10 === 0) assert.throws(() => attn.attention(bad, K, V), AttnkitError);
      };
      round(0);
      const heap = attn.heapBytesInUse(),
        memory = attn.memoryBytes();
      for (let i = 0; i < 10_000; ++i) round(i);
      // The core keeps the last error message: a few bytes either way.
      assert.ok(Math.abs(attn.heapBytesInUse() - heap) <= 4096, "heap in use");
      assert.equal(attn.memoryBytes(), memory, "wasm memory");
    });
  });
}
