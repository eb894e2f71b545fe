// multiHeadAttentionQKV, its forward for training and its backward in layout
// "bhsd" [B, H, T, d], which the package passes to the core as it is (each
// head a contiguous block; no transposition in JS): the same numbers as
// "bshd" bit for bit at awkward sizes (T = 1, 3, 17, 64; d = 1, 5, 64; 1, 3
// and 8 heads with grouped K/V heads), with options, past keys and the
// scores, against the float64 reference, options.out, errors naming the
// parameter and the layout, and no leaks over many calls; in the SIMD128 and
// scalar builds.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError } from "attnkit";
import { fromTensor3, rng, toTensor3 } from "./reference.js";
import * as ref from "./reference.js";
import { VARIANTS, assertClose, assertIdentical, transposeHeads } from "./helpers.js";

// [B, T_q, T_k, numHeads, numKvHeads, dK, dV]
const SHAPES = [
  [1, 1, 1, 1, 1, 1, 1],
  [2, 3, 3, 3, 1, 5, 5],
  [1, 17, 17, 8, 2, 64, 64],
  [2, 64, 64, 8, 4, 5, 1],
  [1, 64, 17, 3, 3, 1, 64],
  [2, 3, 64, 8, 8, 64, 5],
  [1, 17, 3, 1, 1, 64, 1],
];

/** n uniform values in [-1, 1). */
function randomData(rand, n) {
  const out = new Float32Array(n);
  for (let i = 0; i < n; ++i) out[i] = 2 * rand() - 1;
  return out;
}

/** One shape's Q, K, V, dO in both layouts (the same values), and its config. */
function inputsOf([B, Tq, Tk, H, KVH, dk, dv], seed) {
  const rand = rng(seed);
  const bshd = (T, heads, d) => ({
    data: randomData(rand, B * T * heads * d),
    shape: [B, T, heads * d],
  });
  const bhsd = (t, heads, d) => ({
    data: transposeHeads(t.data, B, heads, t.shape[1], d, true),
    shape: [B, heads, t.shape[1], d],
  });
  const Q = bshd(Tq, H, dk),
    K = bshd(Tk, KVH, dk),
    V = bshd(Tk, KVH, dv),
    dO = bshd(Tq, H, dv);
  return {
    seq: { Q, K, V, dO },
    head: { Q: bhsd(Q, H, dk), K: bhsd(K, KVH, dk), V: bhsd(V, KVH, dv), dO: bhsd(dO, H, dv) },
    config: { numHeads: H, numKvHeads: KVH },
    rand,
  };
}

/** The option sets of one shape: none, causal with softcap, per-item key lengths with a per-head additive mask. */
function optionSets([B, Tq, Tk, H], rand) {
  const mask = { data: randomData(rand, H * Tk), shape: [1, H, 1, Tk] };
  mask.data[0] = -Infinity;
  return {
    none: {},
    "causal, softcap": { causal: true, softcap: 2, scale: 0.7 },
    "keyLengths, additiveMask [1, H, 1, T_k]": {
      keyLengths: Array.from({ length: B }, (_, b) => Math.max(0, Tk - 2 * b)),
      additiveMask: mask,
    },
  };
}

/** bhsd data [B, H, T, d] as bshd, to compare with a bshd result. */
const asBshd = (t) => {
  const [B, H, T, d] = t.shape;
  return { data: transposeHeads(t.data, B, H, T, d), shape: [B, T, H * d] };
};

for (const variant of VARIANTS) {
  describe(`layout "bhsd" (${variant.name} build)`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    for (const shape of SHAPES) {
      const [B, Tq, Tk, H, KVH, dk, dv] = shape;
      it(`B ${B}, T_q ${Tq}, T_k ${Tk}, ${H} heads over ${KVH}, dK ${dk}, dV ${dv}: bhsd gives bshd's numbers, forward and backward`, () => {
        const { seq, head, config, rand } = inputsOf(shape, 100 + Tq * 7 + H);
        for (const [name, options] of Object.entries(optionSets(shape, rand))) {
          const label = `${name}`;
          const o4 = { ...options, layout: "bhsd" };
          // Forward.
          const out = attn.multiHeadAttentionQKV(seq.Q, seq.K, seq.V, config, options);
          const out4 = attn.multiHeadAttentionQKV(head.Q, head.K, head.V, config, o4);
          assert.deepEqual(out4.shape, [B, H, Tq, dv], label);
          assertIdentical(asBshd(out4), out, `${label}: out`);
          // Without numKvHeads, bhsd takes it from K's shape.
          const out5 = attn.multiHeadAttentionQKV(head.Q, head.K, head.V, { numHeads: H }, o4);
          assertIdentical(out5, out4, `${label}: numKvHeads from K`);
          // Forward for training and both backward calls.
          const fwd = attn.multiHeadAttentionQKVForTraining(seq.Q, seq.K, seq.V, config, options);
          const fwd4 = attn.multiHeadAttentionQKVForTraining(head.Q, head.K, head.V, config, o4);
          assert.deepEqual(fwd4.out.shape, [B, H, Tq, dv]);
          assertIdentical(asBshd(fwd4.out), fwd.out, `${label}: training out`);
          assertIdentical(fwd4.lse, fwd.lse, `${label}: lse`);
          const g = attn.multiHeadAttentionQKVBackward(
            seq.Q,
            seq.K,
            seq.V,
            config,
            seq.dO,
            options,
          );
          for (const saved of [undefined, fwd4]) {
            const g4 = attn.multiHeadAttentionQKVBackward(head.Q, head.K, head.V, config, head.dO, {
              ...o4,
              ...(saved ? { saved } : {}),
            });
            for (const n of ["dQ", "dK", "dV"]) {
              assert.deepEqual(g4[n].shape, head[n.slice(1)].shape, `${label}: ${n} shape`);
              assertIdentical(asBshd(g4[n]), g[n], `${label}: ${n}, saved ${!!saved}`);
            }
          }
        }
      });
    }

    it("past keys and values, present and scores: bhsd gives bshd's numbers", () => {
      const shape = [2, 5, 7, 6, 2, 5, 3];
      const [B, Tq, , H, KVH, dk, dv] = shape;
      const { seq, head, config, rand } = inputsOf(shape, 77);
      const past = (d) => ({ data: randomData(rand, B * KVH * 4 * d), shape: [B, KVH, 4, d] });
      const extras = {
        pastKey: past(dk),
        pastValue: past(dv),
        present: true,
        scores: "weights",
        causal: true,
        causalAlignment: "upperLeft",
        causalOffset: 4,
      };
      const r = attn.multiHeadAttentionQKV(seq.Q, seq.K, seq.V, config, extras);
      const r4 = attn.multiHeadAttentionQKV(head.Q, head.K, head.V, config, {
        ...extras,
        layout: "bhsd",
      });
      assertIdentical(asBshd(r4), r, "out");
      assert.deepEqual(r4.shape, [B, H, Tq, dv]);
      for (const n of ["presentKey", "presentValue", "scores"]) {
        assert.deepEqual(r4[n].shape, r[n].shape, n);
        assertIdentical(r4[n], r[n], n);
      }
    });

    it("bhsd against the float64 reference", () => {
      const shape = [2, 9, 13, 6, 2, 5, 3];
      const [B, Tq, , H, KVH] = shape;
      const { seq, head, config } = inputsOf(shape, 91);
      const options = { causal: true, keyLengths: [13, 8] };
      const want = ref.multiHeadQKV(
        fromTensor3(seq.Q),
        fromTensor3(seq.K),
        fromTensor3(seq.V),
        H,
        KVH,
        options,
      );
      const out4 = attn.multiHeadAttentionQKV(head.Q, head.K, head.V, config, {
        ...options,
        layout: "bhsd",
      });
      assert.deepEqual(out4.shape, [B, H, Tq, 3]);
      assertClose(asBshd(out4), toTensor3(want).data, "bhsd out");
    });

    it("bhsd inputs reach wasm as they are: no row of them is sliced in JS", () => {
      // A Float32Array that counts subarray() calls: a row-by-row transposition
      // would make one per row.
      let slices = 0;
      class Counting extends Float32Array {
        subarray(...args) {
          ++slices;
          return super.subarray(...args);
        }
      }
      const shape = [2, 17, 17, 8, 2, 5, 5];
      const { head, config } = inputsOf(shape, 5);
      const counted = Object.fromEntries(
        Object.entries(head).map(([k, t]) => [k, { data: new Counting(t.data), shape: t.shape }]),
      );
      const o4 = { layout: "bhsd", causal: true };
      const want = attn.multiHeadAttentionQKV(head.Q, head.K, head.V, config, o4);
      slices = 0;
      const got = attn.multiHeadAttentionQKV(counted.Q, counted.K, counted.V, config, o4);
      const fwd = attn.multiHeadAttentionQKVForTraining(
        counted.Q,
        counted.K,
        counted.V,
        config,
        o4,
      );
      attn.multiHeadAttentionQKVBackward(counted.Q, counted.K, counted.V, config, counted.dO, {
        ...o4,
        saved: { out: { data: new Counting(fwd.out.data), shape: fwd.out.shape }, lse: fwd.lse },
      });
      assert.equal(slices, 0, "rows of bhsd inputs sliced in JS");
      assertIdentical(got, want, "out");
    });
  });

  describe(`layout "bhsd" (${variant.name} build): out arrays, errors and leaks`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    it("options.out in bhsd: the results are written into the caller's arrays", () => {
      const shape = [2, 3, 5, 4, 2, 4, 2];
      const [B, Tq, Tk, H, KVH, dk, dv] = shape;
      const { head, config } = inputsOf(shape, 8);
      const o4 = { layout: "bhsd", softcap: 3 };
      const want = attn.multiHeadAttentionQKV(head.Q, head.K, head.V, config, o4);
      const into = new Float32Array(B * H * Tq * dv);
      const r = attn.multiHeadAttentionQKV(head.Q, head.K, head.V, config, { ...o4, out: into });
      assert.equal(r.data, into);
      assertIdentical(r, want, "out");
      const training = attn.multiHeadAttentionQKVForTraining(head.Q, head.K, head.V, config, o4);
      const intoTraining = new Float32Array(B * H * Tq * dv);
      const f = attn.multiHeadAttentionQKVForTraining(head.Q, head.K, head.V, config, {
        ...o4,
        out: intoTraining,
      });
      assert.equal(f.out.data, intoTraining);
      assertIdentical(f.out, training.out, "training out");
      const g = attn.multiHeadAttentionQKVBackward(head.Q, head.K, head.V, config, head.dO, o4);
      const out = {
        dQ: new Float32Array(B * H * Tq * dk),
        dK: new Float32Array(B * KVH * Tk * dk),
        dV: new Float32Array(B * KVH * Tk * dv),
      };
      const g2 = attn.multiHeadAttentionQKVBackward(head.Q, head.K, head.V, config, head.dO, {
        ...o4,
        out,
      });
      for (const n of ["dQ", "dK", "dV"]) {
        assert.equal(g2[n].data, out[n], n);
        assertIdentical(g2[n], g[n], n);
      }
    });

    it("shapes that do not fit are errors naming the parameter and the layout", () => {
      const shape = [2, 3, 5, 4, 2, 4, 2];
      const [B, Tq, Tk, H, , dk, dv] = shape;
      const { head, config } = inputsOf(shape, 9);
      const o4 = { layout: "bhsd" };
      const fails = (fn, parameter, ...says) =>
        assert.throws(fn, (e) => {
          assert.ok(e instanceof AttnkitError, `${e}`);
          assert.equal(e.parameter, parameter, e.message);
          for (const s of says) assert.ok(e.message.includes(s), `"${e.message}" says ${s}`);
          return true;
        });
      const K1 = { data: head.K.data.subarray(0, B * Tk * dk), shape: [B, 1, Tk, dk] };
      fails(
        () => attn.multiHeadAttentionQKV(head.Q, K1, { ...K1 }, config, o4),
        "K.shape[1]",
        "config.numKvHeads = 2",
        "bhsd",
        "got 1",
      );
      fails(
        () => attn.multiHeadAttentionQKV(head.Q, head.K, head.V, { ...config, dK: 3 }, o4),
        "Q.shape[3]",
        "config.dK = 3",
        "bhsd",
        `got ${dk}`,
      );
      fails(
        () => attn.multiHeadAttentionQKV(head.Q, head.K, head.V, { ...config, dV: 5 }, o4),
        "V.shape[3]",
        "config.dV = 5",
        "bhsd",
      );
      const K5 = { data: new Float32Array(B * 2 * Tk * 5), shape: [B, 2, Tk, 5] };
      fails(
        () => attn.multiHeadAttentionQKV(head.Q, K5, head.V, config, o4),
        "K.shape[3]",
        `${dk}`,
        "bhsd",
        "got 5",
      );
      fails(
        () => attn.multiHeadAttentionQKV(head.Q, head.K, head.V, { numHeads: 2 }, o4),
        "Q.shape[1]",
        "config.numHeads = 2",
        "bhsd",
      );
      fails(
        () =>
          attn.multiHeadAttentionQKV(head.Q, head.K, head.V, config, {
            ...o4,
            out: new Float32Array(7),
          }),
        "options.out",
        `[${B}, ${H}, ${Tq}, ${dv}]`,
        "got 7",
      );
      fails(
        () =>
          attn.multiHeadAttentionQKVBackward(head.Q, head.K, head.V, config, asBshd(head.dO), o4),
        "dO.shape",
        `[${B}, ${H}, ${Tq}, ${dv}]`,
      );
      fails(
        () =>
          attn.multiHeadAttentionQKVBackward(head.Q, head.K, head.V, config, head.dO, {
            ...o4,
            out: { dK: new Float32Array(3) },
          }),
        "options.out.dK",
        `[${B}, 2, ${Tk}, ${dk}]`,
        "got 3",
      );
      fails(
        () => attn.multiHeadAttentionQKV(asBshd(head.Q), head.K, head.V, config, o4),
        "Q.shape",
        "layout bhsd",
      );
    });

    it("no leaks over many bhsd calls, some failing", () => {
      const shape = [2, 9, 11, 4, 2, 8, 4];
      const { head, config } = inputsOf(shape, 10);
      const o4 = { layout: "bhsd", causal: true };
      const bad = { ...config, dK: 3 };
      const call = (i) => {
        try {
          if (i % 4 === 0) return attn.multiHeadAttentionQKV(head.Q, head.K, head.V, config, o4);
          if (i % 4 === 1)
            return attn.multiHeadAttentionQKVForTraining(head.Q, head.K, head.V, config, o4);
          if (i % 4 === 2)
            return attn.multiHeadAttentionQKVBackward(head.Q, head.K, head.V, config, head.dO, o4);
          return attn.multiHeadAttentionQKV(head.Q, head.K, head.V, bad, o4);
        } catch (e) {
          if (!(e instanceof AttnkitError) || i % 4 !== 3) throw e;
          return null;
        }
      };
      for (let i = 0; i < 100; ++i) call(i);
      attn.multiHeadAttentionQKV(head.Q, head.K, head.V, config, o4);
      const heap0 = attn.heapBytesInUse(),
        mem0 = attn.memoryBytes();
      for (let i = 0; i < 5000; ++i) call(i);
      attn.multiHeadAttentionQKV(head.Q, head.K, head.V, config, o4);
      const heap1 = attn.heapBytesInUse();
      assert.ok(heap1 - heap0 <= 4096, `wasm heap in use grew from ${heap0} to ${heap1} bytes`);
      assert.equal(attn.memoryBytes(), mem0, "wasm memory did not grow");
    });
  });
}
