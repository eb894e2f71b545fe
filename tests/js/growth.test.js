// Memory growth mid-session: results of earlier calls are JS-owned and stay
// intact when wasm memory grows; calls after the growth (and the big call that
// grew it) give right answers; a KV cache made before the growth keeps working.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit } from "attnkit";
import * as ref from "./reference.js";
import { assertClose, VARIANTS } from "./helpers.js";

const { randomMatrix, rng, toMatrix, toTensor3 } = ref;

for (const variant of VARIANTS) {
  describe(`memory growth (${variant.name} build)`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(variant.options);
    });

    it("earlier results survive growth; later calls are right", () => {
      const rand = rng(77);
      // Early calls of several kinds, kept with copies of their data.
      const Q = randomMatrix(rand, 5, 4),
        K = randomMatrix(rand, 7, 4),
        V = randomMatrix(rand, 7, 3);
      const X = randomMatrix(rand, 6, 8);
      const w = {
        W_Q: randomMatrix(rand, 8, 4),
        W_K: randomMatrix(rand, 8, 4),
        W_V: randomMatrix(rand, 8, 3),
      };
      const mw = {
        W_Q: randomMatrix(rand, 8, 8),
        W_K: randomMatrix(rand, 8, 4),
        W_V: randomMatrix(rand, 8, 4),
        W_O: randomMatrix(rand, 8, 5),
      };
      const config = { numHeads: 4, numKvHeads: 2 };
      const early = {
        attention: attn.attention(Q, K, V, { causal: true }),
        trace: attn.trace(X, w),
        multiHead: attn.multiHeadAttention(toTensor3([X, X]), mw, config, { causal: true }),
        split: attn.splitHeads(X, 2),
      };
      const cache = attn.createKVCache({ numKvHeads: 2, dK: 2, dV: 2, capacity: 6 });
      const Xs = [X];
      const fullCausal = ref.multiHeadAttention(Xs, mw, 4, 2, { causal: true })[0];
      const decoded = [];
      for (let t = 0; t < 3; ++t) decoded.push(cache.decode([X[t]], mw, config));
      const earlyKeys = cache.keys(0, 1);
      const arrays = [
        early.attention,
        ...Object.values(early.trace).filter((m) => m.data),
        early.multiHead,
        early.split,
        ...decoded,
        earlyKeys,
      ].map((m) => m.data);
      const copies = arrays.map((a) => a.slice());
      const mem0 = attn.memoryBytes();

      // Force growth: a trace with T = 2048 holds 4 score matrices of 16 MB.
      const T = 2048,
        dm = 32,
        dk = 16,
        dv = 8;
      const bigX = randomMatrix(rand, T, dm);
      const bw = {
        W_Q: randomMatrix(rand, dm, dk, 0.3),
        W_K: randomMatrix(rand, dm, dk, 0.3),
        W_V: randomMatrix(rand, dm, dv),
      };
      const big = attn.trace(toMatrix(bigX), bw, { causal: true });
      const mem1 = attn.memoryBytes();
      assert.ok(mem1 >= mem0 + 64 * 2 ** 20, `memory grew: ${mem0} -> ${mem1} bytes`);

      // The big call's own results, read after the growth, are right (a few rows checked).
      assert.equal(big.weights.data.length, T * T);
      const Kb = ref.matmul(bigX, bw.W_K),
        Vb = ref.matmul(bigX, bw.W_V);
      for (const i of [0, 1, 777, T - 1]) {
        const qi = ref.matmul([bigX[i]], bw.W_Q);
        const row = ref.attention(qi, Kb.slice(0, i + 1), Vb.slice(0, i + 1), {
          scale: 1 / Math.sqrt(dk),
        });
        assertClose(big.output.data.subarray(i * dv, (i + 1) * dv), row, `big output row ${i}`);
        const wsum = big.weights.data.subarray(i * T, (i + 1) * T).reduce((a, b) => a + b, 0);
        assert.ok(Math.abs(wsum - 1) < 1e-4, `big weights row ${i} sums to ${wsum}`);
      }

      // Earlier results: same length, same values, not detached.
      arrays.forEach((a, i) => {
        assert.equal(a.length, copies[i].length, `early array ${i} not detached`);
        assert.deepEqual(a, copies[i], `early array ${i} intact`);
        assert.ok(a.buffer.byteLength < mem0, `early array ${i} owns its buffer`);
      });

      // New calls after the growth are right and equal to the early ones.
      assert.deepEqual(attn.attention(Q, K, V, { causal: true }).data, early.attention.data);
      assertClose(
        attn.attention(Q, K, V, { causal: true }),
        ref.attention(Q, K, V, { causal: true }),
        "attention after growth",
      );
      assertClose(
        attn.trace(X, w).output,
        ref.selfAttentionTrace(X, w).output,
        "trace after growth",
      );
      assertClose(
        attn.multiHeadAttention(toTensor3([X, X]), mw, config, { causal: true }),
        [fullCausal, fullCausal],
        "multi-head after growth",
      );
      // The KV cache made before the growth: same keys, and decoding continues correctly.
      assert.deepEqual(cache.keys(0, 1).data.subarray(0, earlyKeys.data.length), earlyKeys.data);
      for (let t = 3; t < 6; ++t) decoded.push(cache.decode([X[t]], mw, config));
      decoded.forEach((d, t) => assertClose(d, [fullCausal[t]], `decode token ${t}`));
      cache.dispose();

      // A second growth through the JS input copy (selfAttention on X [2048, 512]).
      const X2 = {
        data: new Float32Array(2048 * 512).map((_, i) => Math.sin(i) * 0.1),
        rows: 2048,
        cols: 512,
      };
      const w2 = {
        W_Q: { data: new Float32Array(512 * 4).fill(0.01), rows: 512, cols: 4 },
        W_K: { data: new Float32Array(512 * 4).fill(0.01), rows: 512, cols: 4 },
        W_V: { data: new Float32Array(512 * 2).fill(0.02), rows: 512, cols: 2 },
      };
      const out2 = attn.selfAttention(X2, w2);
      assert.equal(out2.data.length, 2048 * 2);
      assert.ok(out2.data.every(Number.isFinite));
      // Identical K columns and V columns: each output row is the weighted mean of equal columns.
      for (let i = 0; i < 2048; i += 257)
        assert.ok(Math.abs(out2.data[2 * i] - out2.data[2 * i + 1]) < 1e-6);
      assert.ok(attn.memoryBytes() >= mem1);
      arrays.forEach((a, i) =>
        assert.deepEqual(a, copies[i], `early array ${i} intact after the second call`),
      );
      assertClose(
        attn.attention(Q, K, V, { causal: true }),
        ref.attention(Q, K, V, { causal: true }),
        "attention at the end",
      );
    });
  });
}
