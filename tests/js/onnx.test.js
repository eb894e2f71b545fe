// ONNX Attention (opset 23/24) through the package's public API, against the
// float64 reference written from the specification (reference.js,
// onnxAttention): masks of every broadcast shape, bool and additive, shorter
// than the key count; the causal frontier with a past, with per-item
// nonpad_kv_seqlen, and without either; past/present K and V; the
// intermediate scores. One multiHeadAttentionQKV call per case: no per-head
// loop. Tolerance: helpers.js (1e-5 + 1e-4 * |want|).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError } from "attnkit";
import * as ref from "./reference.js";
import { VARIANTS, assertClose } from "./helpers.js";

const flat = (nested) => Float32Array.from(nested.flat(Infinity));

// The nested form of each tensor the tests make, for the reference.
const NESTED = new WeakMap();
const nested = (t) => t && NESTED.get(t);

/** A random bhsd tensor { data (float32), shape }. */
function tensor(rand, shape) {
  const data = Float32Array.from(
    { length: shape.reduce((a, b) => a * b, 1) },
    () => 2 * rand() - 1,
  );
  const t = { data, shape };
  NESTED.set(t, ref.nest(Array.from(data), shape));
  return t;
}

/** A random mask of `shape`: booleans (p = 0.75 true) or numbers in [-2, 2) with some -Infinity. */
function mask(rand, shape, bool) {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = Array.from({ length: n }, () =>
    bool ? rand() < 0.75 : rand() < 0.15 ? -Infinity : Math.fround(4 * rand() - 2),
  );
  return {
    shape,
    data,
    package: bool
      ? { data: Uint8Array.from(data, (v) => (v ? 1 : 0)), shape }
      : { data: Float32Array.from(data), shape },
  };
}

// The mask shapes of the spec, for B, H, Tq and T_total (short: the last dimension one less).
function maskShapes(B, H, Tq, T) {
  const shapes = [
    [Tq, T],
    [B, 1, Tq, T],
    [1, H, Tq, T],
    [B, H, Tq, T],
    [H, Tq, T],
    [B, 1, 1, T],
    [1, 1, Tq, T],
  ];
  if (T > 1) shapes.push([Tq, T - 1], [B, H, Tq, T - 1]);
  return shapes;
}

for (const variant of VARIANTS) {
  describe(`ONNX Attention semantics (${variant.name})`, () => {
    it("masks of every broadcast shape, causal with and without a past, present K/V and every score stage", async () => {
      const attn = await createAttnkit(variant.options);
      const rand = ref.rng(23);
      let cases = 0;
      for (const [B, H, kvH] of [
        [1, 2, 1],
        [2, 2, 2],
        [2, 4, 2],
      ]) {
        for (const [Tq, Tk, past] of [
          [1, 1, 0],
          [3, 3, 0],
          [3, 5, 2],
          [5, 2, 3],
          [4, 7, 0],
        ]) {
          const T = past + Tk,
            dk = 3,
            dv = 2;
          const Q = tensor(rand, [B, H, Tq, dk]),
            K = tensor(rand, [B, kvH, Tk, dk]),
            V = tensor(rand, [B, kvH, Tk, dv]);
          const pastKey = past ? tensor(rand, [B, kvH, past, dk]) : null,
            pastValue = past ? tensor(rand, [B, kvH, past, dv]) : null;
          for (const shape of [null, ...maskShapes(B, H, Tq, T)]) {
            for (const bool of shape ? [true, false] : [true]) {
              for (const isCausal of [false, true]) {
                const m = shape && mask(rand, shape, bool);
                const softcap = cases % 3 === 0 ? 1.5 : 0;
                const want = ref.onnxAttention({
                  Q: nested(Q),
                  K: nested(K),
                  V: nested(V),
                  attnMask: m,
                  pastKey: nested(pastKey),
                  pastValue: nested(pastValue),
                  isCausal,
                  softcap,
                });
                const options = {
                  layout: "bhsd",
                  present: true,
                  scores: ["scaled", "masked", "weights"][cases % 3],
                  softcap,
                };
                if (m) options[bool ? "boolMask" : "additiveMask"] = m.package;
                if (past) Object.assign(options, { pastKey, pastValue });
                // ONNX's frontier: j <= i + T_past.
                if (isCausal)
                  Object.assign(options, {
                    causal: true,
                    causalAlignment: "upperLeft",
                    causalOffset: past,
                  });
                const label = `B ${B} H ${H}/${kvH} Tq ${Tq} Tk ${Tk} past ${past} mask ${JSON.stringify(shape)} ${bool ? "bool" : "additive"} causal ${isCausal}`;
                const got = attn.multiHeadAttentionQKV(
                  Q,
                  K,
                  V,
                  { numHeads: H, numKvHeads: kvH },
                  options,
                );
                assert.deepEqual(got.shape, [B, H, Tq, dv], label);
                assertClose(got.data, flat(want.Y), `${label}: Y`);
                assert.deepEqual(got.presentKey.shape, [B, kvH, T, dk]);
                assertClose(got.presentKey.data, flat(want.presentKey), `${label}: present key`, {
                  abs: 0,
                  rel: 0,
                });
                assertClose(
                  got.presentValue.data,
                  flat(want.presentValue),
                  `${label}: present value`,
                  { abs: 0, rel: 0 },
                );
                assert.deepEqual(got.scores.shape, [B, H, Tq, T]);
                assertClose(
                  got.scores.data,
                  flat(want[options.scores]),
                  `${label}: ${options.scores}`,
                );
                ++cases;
              }
            }
          }
        }
      }
      assert.ok(cases > 500, `${cases} cases`);
    });

    it("nonpad_kv_seqlen: per-item key lengths and per-item causal offsets (an external cache)", async () => {
      const attn = await createAttnkit(variant.options);
      const rand = ref.rng(24);
      for (const [B, Tq, Tk] of [
        [2, 1, 6],
        [3, 2, 5],
        [2, 4, 4],
      ]) {
        const Q = tensor(rand, [B, 2, Tq, 4]),
          K = tensor(rand, [B, 1, Tk, 4]),
          V = tensor(rand, [B, 1, Tk, 3]);
        const nonpad = Array.from({ length: B }, (_, b) => Math.max(Tq, Tk - b));
        for (const isCausal of [false, true]) {
          const want = ref.onnxAttention({
            Q: nested(Q),
            K: nested(K),
            V: nested(V),
            nonpadKvSeqlen: nonpad,
            isCausal,
          });
          const options = { layout: "bhsd", keyLengths: nonpad };
          if (isCausal)
            Object.assign(options, {
              causal: true,
              causalAlignment: "upperLeft",
              causalOffsets: nonpad.map((n) => n - Tq),
            });
          const got = attn.multiHeadAttentionQKV(Q, K, V, { numHeads: 2, numKvHeads: 1 }, options);
          assertClose(got.data, flat(want.Y), `B ${B} Tq ${Tq} Tk ${Tk} causal ${isCausal}`);
        }
      }
    });
  });

  describe(`ONNX Attention semantics (${variant.name}): masked rows and bad options`, () => {
    it("a fully masked row gives zeros, never NaN; the raw scores are Q K^T", async () => {
      const attn = await createAttnkit(variant.options);
      const rand = ref.rng(25);
      const Q = tensor(rand, [1, 2, 3, 2]),
        K = tensor(rand, [1, 2, 3, 2]),
        V = tensor(rand, [1, 2, 3, 2]);
      // Head 1, row 0 sees no key.
      const data = Uint8Array.from({ length: 18 }, (_, n) => (n >= 9 && n < 12 ? 0 : 1));
      const got = attn.multiHeadAttentionQKV(
        Q,
        K,
        V,
        { numHeads: 2 },
        { layout: "bhsd", boolMask: { data, shape: [1, 2, 3, 3] }, scores: "weights" },
      );
      assert.deepEqual(Array.from(got.data.subarray(6, 8)), [0, 0]);
      assert.deepEqual(Array.from(got.scores.data.subarray(9, 12)), [0, 0, 0]);
      assert.ok(!got.data.some(Number.isNaN));
      const raw = attn.multiHeadAttentionQKV(
        Q,
        K,
        V,
        { numHeads: 2 },
        { layout: "bhsd", scores: "raw" },
      );
      const want = ref.onnxAttention({ Q: nested(Q), K: nested(K), V: nested(V), scale: 1 });
      assertClose(raw.scores.data, flat(want.scaled), "raw = Q K^T");
    });

    it("bad masks, offsets, pasts and stages name the option", async () => {
      const attn = await createAttnkit(variant.options);
      const x = { data: new Float32Array(2 * 2 * 3 * 2), shape: [2, 2, 3, 2] };
      const cfg = { numHeads: 2 };
      const call = (options) => () =>
        attn.multiHeadAttentionQKV(x, x, x, cfg, { layout: "bhsd", ...options });
      const expect = (fn, parameter, code, says) =>
        assert.throws(fn, (e) => {
          assert.ok(e instanceof AttnkitError, String(e));
          assert.equal(e.parameter, parameter, e.message);
          assert.equal(e.code, code, e.message);
          for (const s of says) assert.ok(e.message.includes(s), `${e.message} includes ${s}`);
          return true;
        });
      expect(
        call({ boolMask: { data: new Uint8Array(3 * 3 * 3), shape: [3, 1, 3, 3] } }),
        "options.boolMask",
        "shape_mismatch",
        ["1 or batch = 2", "got 3"],
      );
      expect(
        call({ additiveMask: { data: new Float32Array(3 * 3 * 3), shape: [1, 3, 3, 3] } }),
        "options.additiveMask",
        "shape_mismatch",
        ["1 or numHeads = 2", "got 3"],
      );
      expect(
        call({ boolMask: { data: new Uint8Array(3 * 4), shape: [3, 4] } }),
        "options.boolMask",
        "shape_mismatch",
        ["at most T_k = 3", "got 4"],
      );
      expect(
        call({ boolMask: { data: new Uint8Array(2 * 3), shape: [2, 3] } }),
        "options.boolMask",
        "shape_mismatch",
        ["3 rows", "got 2"],
      );
      expect(
        call({ boolMask: { data: new Uint8Array(3), shape: [1, 1, 1, 1, 3] } }),
        "options.boolMask.shape",
        "shape_mismatch",
        ["[batch, heads, T_q, T_k]"],
      );
      expect(
        call({ causal: true, causalAlignment: "upperLeft", causalOffsets: [1] }),
        "options.causalOffsets",
        "invalid_argument",
        ["batch = 2", "got 1"],
      );
      expect(
        call({ causalAlignment: "bottomRight" }),
        "options.causalAlignment",
        "invalid_argument",
        ['"lowerRight" or "upperLeft"'],
      );
      expect(call({ causalOffset: 1.5 }), "options.causalOffset", "invalid_argument", [
        "an integer",
      ]);
      expect(call({ pastKey: x }), "options.pastValue", "invalid_argument", ["together"]);
      expect(
        call({ pastKey: { data: new Float32Array(12), shape: [2, 2, 3] }, pastValue: x }),
        "options.pastKey.shape",
        "shape_mismatch",
        ["T_past"],
      );
      expect(call({ scores: "softmax" }), "options.scores", "invalid_argument", ['"weights"']);
      expect(call({ presnt: true }), "options.presnt", "invalid_argument", [
        "did you mean present?",
      ]);
      assert.equal(attn.multiHeadAttentionQKV(x, x, x, cfg, { layout: "bhsd" }).data.length, 24); // still works
    });
  });
}
