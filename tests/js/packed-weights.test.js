// packWeights: constant weights packed once in wasm memory for many
// multiHeadAttention calls. Packed and unpacked calls give the same results bit
// for bit over awkward sizes, grouped heads, batches, with and without W_O; a
// pack is a copy; errors name the parameter (mismatched config, X of another
// d_model, a disposed pack, a pack of another module); many packs made and
// disposed leave the heap as it was.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";
import { VARIANTS, assertIdentical } from "./helpers.js";

const rand = (n, seed) => {
  let s = seed;
  return Float32Array.from(
    { length: n },
    () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1,
  );
};
const mat = (rows, cols, seed, scale = 1) => {
  const data = rand(rows * cols, seed);
  for (let i = 0; i < data.length; ++i) data[i] *= scale;
  return { data, rows, cols };
};

/** A layer's weights and config: dOut 0 = no W_O. */
function layer({ dModel, h, kvh, dK, dV, dOut }, seed) {
  const weights = {
    W_Q: mat(dModel, h * dK, seed, 0.5),
    W_K: mat(dModel, kvh * dK, seed + 1, 0.5),
    W_V: mat(dModel, kvh * dV, seed + 2, 0.5),
  };
  if (dOut) weights.W_O = mat(h * dV, dOut, seed + 3, 0.5);
  return { weights, config: { numHeads: h, numKvHeads: kvh, dK, dV } };
}

/** d_model 1, 7, 64, 96; 1, 3 and 8 heads (grouped where they divide); with and without W_O. */
function shapes() {
  const out = [];
  for (const dModel of [1, 7, 64, 96]) {
    for (const h of [1, 3, 8]) {
      const kvh = h === 8 ? 2 : 1;
      const dK = dModel % h === 0 ? dModel / h : 5;
      const dV = dK === 1 ? 3 : dK;
      out.push({ dModel, h, kvh, dK, dV, dOut: dModel, batch: 1, T: 9 });
      out.push({ dModel, h, kvh: h, dK, dV, dOut: 0, batch: 3, T: 5 });
    }
    // 134 rows: the unpacked call packs W itself.
    out.push({ dModel, h: 4, kvh: 2, dK: 16, dV: 8, dOut: 33, batch: 2, T: 67 });
  }
  return out;
}

const isError = (code, parameter, pattern) => (e) =>
  e instanceof AttnkitError &&
  e.code === code &&
  e.parameter === parameter &&
  e.message.startsWith(`${parameter}: `) &&
  (!pattern || pattern.test(e.message));

for (const variant of VARIANTS) {
  describe(`packWeights (${variant.name})`, () => {
    it("packed and unpacked calls give the same results bit for bit", async () => {
      const attn = await createAttnkit(variant.options);
      let seed = 100;
      for (const s of shapes()) {
        const { weights, config } = layer(s, (seed += 10));
        const X = {
          data: rand(s.batch * s.T * s.dModel, seed + 5),
          shape: [s.batch, s.T, s.dModel],
        };
        const packed = attn.packWeights(weights, config);
        assert.equal(packed.dModel, s.dModel);
        assert.equal(packed.dOut, s.dOut || s.h * s.dV);
        assert.deepEqual(
          [packed.numHeads, packed.numKvHeads, packed.dK, packed.dV],
          [s.h, s.kvh, s.dK, s.dV],
        );
        for (const options of [
          undefined,
          { causal: true },
          { keyLengths: [...Array(s.batch)].map((_, i) => s.T - i) },
        ]) {
          const label = `${JSON.stringify(s)} ${JSON.stringify(options)}`;
          const want = attn.multiHeadAttention(X, weights, config, options);
          const got = attn.multiHeadAttention(X, packed, config, options);
          assert.deepEqual(got.shape, want.shape, label);
          assertIdentical(got, want, label);
        }
        packed.dispose();
      }
    });

    it("takes rank-2 X, options.out, derived config fields, and holds a copy of the weights", async () => {
      const attn = await createAttnkit(variant.options);
      const { weights } = layer({ dModel: 16, h: 4, kvh: 4, dK: 4, dV: 4, dOut: 16 }, 700);
      const config = { numHeads: 4 };
      const X = mat(6, 16, 710);
      const want = attn.multiHeadAttention(X, weights, config);
      const packed = attn.packWeights(weights, config);
      assert.deepEqual([packed.numKvHeads, packed.dK, packed.dV, packed.dOut], [4, 4, 4, 16]);
      weights.W_Q.data[0] += 1; // the pack copied the weights
      const got = attn.multiHeadAttention(X, packed, config);
      assert.deepEqual(got.shape, [6, 16]);
      assertIdentical(got, want, "rank 2");
      const out = new Float32Array(6 * 16);
      assert.equal(attn.multiHeadAttention(X, packed, config, { out }).data, out);
      assertIdentical({ data: out }, want, "options.out");
      assert.ok(Object.isFrozen(packed));
      packed.dispose();
    });

    it("errors name the parameter", async () => {
      const attn = await createAttnkit(variant.options);
      const { weights, config } = layer({ dModel: 12, h: 3, kvh: 3, dK: 4, dV: 4, dOut: 6 }, 800);
      const X = mat(5, 12, 810);
      const packed = attn.packWeights(weights, config);
      assert.throws(
        () => attn.multiHeadAttention(X, packed, { numHeads: 2 }),
        isError("invalid_argument", "config.numHeads", /expected 3\b.*got 2\b/),
      );
      assert.throws(
        () => attn.multiHeadAttention(X, packed, { ...config, numKvHeads: 1 }),
        isError("invalid_argument", "config.numKvHeads", /expected 3\b.*got 1\b/),
      );
      assert.throws(
        () => attn.multiHeadAttention(X, packed, { ...config, dV: 5 }),
        isError("invalid_argument", "config.dV", /expected 4\b.*got 5\b/),
      );
      assert.throws(
        () => attn.multiHeadAttention(mat(5, 8, 820), packed, config),
        isError("shape_mismatch", "X", /12\b.*got 8\b/),
      );
      assert.throws(() => attn.multiHeadAttention(X, packed, "3 heads"), AttnkitTypeError);
      // Packing checks the weights as a call would.
      assert.throws(
        () => attn.packWeights({ ...weights, W_K: mat(12, 16, 830) }, config),
        isError("shape_mismatch", "weights.W_K", /16\b/),
      );
      const bad = mat(12, 12, 840);
      bad.data[5] = NaN;
      assert.throws(
        () => attn.packWeights({ ...weights, W_V: bad }, config),
        isError("non_finite", "weights.W_V"),
      );
      assert.throws(() => attn.packWeights(packed, config), AttnkitTypeError);
      // A pack anywhere but multiHeadAttention, or a copy of one: the message says
      // where packs are taken, not that its fields are unknown keys.
      const where = /taken only by multiHeadAttention, as packWeights\(\) returned them/;
      const dO = mat(5, packed.dOut, 850);
      const cache = attn.createKVCache({ numKvHeads: 3, dK: 4, dV: 4, capacity: 8 });
      for (const [what, call, given] of [
        ["packWeights", () => attn.packWeights(packed, config), /got packed weights/],
        ["selfAttention", () => attn.selfAttention(X, packed), /got packed weights/],
        ["kv.decode", () => cache.decode(X, packed, config), /got packed weights/],
        [
          "multiHeadAttentionBackward",
          () => attn.multiHeadAttentionBackward(X, packed, config, dO),
          /got packed weights/,
        ],
        [
          "a spread copy",
          () => attn.multiHeadAttention(X, { ...packed }, config),
          /got a copy of packed weights \(their fields, no handle\)/,
        ],
        [
          "a JSON copy",
          () => attn.multiHeadAttention(X, JSON.parse(JSON.stringify(packed)), config),
          /got a copy of packed weights/,
        ],
      ]) {
        assert.throws(call, (e) => {
          assert.ok(e instanceof AttnkitTypeError, `${what}: ${e.message}`);
          assert.equal(e.parameter, "weights", what);
          assert.match(e.message, /^weights: expected an object \{W_Q, W_K, W_V/, what);
          assert.match(e.message, given, what);
          assert.match(e.message, where, what);
          return true;
        });
      }
      cache.dispose();
      // The pack itself still serves its call.
      assertIdentical(
        attn.multiHeadAttention(X, packed, config),
        attn.multiHeadAttention(X, weights, config),
        "after",
      );
      // A disposed pack, twice disposed.
      packed.dispose();
      packed.dispose();
      assert.throws(
        () => attn.multiHeadAttention(X, packed, config),
        isError("disposed", "weights", /disposed/),
      );
      // A pack of another module.
      const other = await createAttnkit({ simd: !variant.options.simd });
      const foreign = other.packWeights(weights, config);
      assert.throws(
        () => attn.multiHeadAttention(X, foreign, config),
        isError(
          "type",
          "weights",
          /^weights: expected a PackedWeights, got a PackedWeights of another attnkit module/,
        ),
      );
      foreign.dispose();
    });

    it("many packs made and disposed leave the heap as it was", async () => {
      const attn = await createAttnkit(variant.options);
      const { weights, config } = layer({ dModel: 32, h: 4, kvh: 2, dK: 8, dV: 8, dOut: 32 }, 900);
      const X = mat(4, 32, 910);
      const want = attn.multiHeadAttention(X, weights, config);
      const heap0 = attn.heapBytesInUse();
      for (let i = 0; i < 2000; ++i) {
        const packed = attn.packWeights(weights, config);
        if (i % 100 === 0)
          assertIdentical(attn.multiHeadAttention(X, packed, config), want, `${i}`);
        packed.dispose();
      }
      assert.equal(attn.heapBytesInUse(), heap0);
    });
  });
}

describe("packWeights and the module's dispose", () => {
  it("a pack of a disposed module throws 'disposed' and can still be disposed", async () => {
    const attn = await createAttnkit({ simd: true });
    const { weights, config } = layer({ dModel: 8, h: 2, kvh: 2, dK: 4, dV: 4, dOut: 0 }, 1000);
    const packed = attn.packWeights(weights, config);
    attn.dispose();
    assert.throws(
      () => attn.multiHeadAttention(mat(2, 8, 1010), packed, config),
      (e) => e instanceof AttnkitError && e.code === "disposed",
    );
    packed.dispose();
  });
});
