// What users of onnxruntime-web and tfjs expect of a module: its version, a
// dispose() that frees it, caller-supplied output buffers, a KV cache that can
// roll back and fork, a module object no importer can change, and memory that
// a rejected oversize call does not keep.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createAttnkit, AttnkitError } from "attnkit";
import * as ref from "./reference.js";
import { VARIANTS, assertClose } from "./helpers.js";

const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
const rand = (n, seed) => {
  let s = seed;
  return Float32Array.from(
    { length: n },
    () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1,
  );
};
const mat = (rows, cols, seed) => ({ data: rand(rows * cols, seed), rows, cols });
const rowsOf = (m) =>
  Array.from({ length: m.rows }, (_, r) =>
    Array.from(m.data.subarray(r * m.cols, (r + 1) * m.cols)),
  );

for (const variant of VARIANTS) {
  describe(`module API (${variant.name})`, () => {
    it("the module's version is the package's", async () => {
      const attn = await createAttnkit(variant.options);
      assert.equal(attn.version, pkg.version);
    });

    it("a trace holds the bindings' matrices in their order, each with its shape", async () => {
      const attn = await createAttnkit(variant.options);
      const X = mat(3, 4, 11);
      const W = { W_Q: mat(4, 2, 12), W_K: mat(4, 2, 13), W_V: mat(4, 5, 14) };
      const names = [
        "Q",
        "K",
        "V",
        "rawScores",
        "scaledScores",
        "maskedScores",
        "weights",
        "output",
      ];
      const t = attn.trace(X, W);
      assert.deepEqual(Object.keys(t), ["X", ...names, "scale"]);
      const shapes = [
        [3, 4],
        [3, 2],
        [3, 2],
        [3, 5],
        [3, 3],
        [3, 3],
        [3, 3],
        [3, 3],
        [3, 5],
      ];
      assert.deepEqual(
        ["X", ...names].map((n) => [t[n].rows, t[n].cols]),
        shapes,
      );
      assert.deepEqual(Object.keys(attn.traceQKV(t.Q, t.K, t.V)), [...names, "scale"]);
    });

    it("results go back in as inputs; a tensor's other fields are ignored", async () => {
      const attn = await createAttnkit(variant.options);
      const X = { data: rand(2 * 3 * 4, 31), shape: [2, 3, 4] };
      const r = attn.multiHeadAttentionQKV(X, X, X, { numHeads: 2 }, { present: true });
      assert.ok(r.presentKey, "the result has presentKey");
      // The result (with presentKey, presentValue) as Q, a named matrix as K.
      const again = attn.multiHeadAttentionQKV(r, X, X, { numHeads: 2 });
      const want = attn.multiHeadAttentionQKV({ data: r.data, shape: r.shape }, X, X, {
        numHeads: 2,
      });
      assert.deepEqual(Array.from(again.data), Array.from(want.data));
      const K = { ...mat(3, 2, 32), name: "keys" };
      const single = attn.attention(mat(2, 2, 33), K, mat(3, 1, 34));
      assert.deepEqual(single.rows, 2);
      // A near-typo of a field is still refused.
      assert.throws(
        () => attn.attention({ ...mat(2, 2, 33), col: 2 }, K, mat(3, 1, 34)),
        (e) =>
          e instanceof AttnkitError &&
          e.parameter === "Q.col" &&
          /did you mean cols/.test(e.message),
      );
    });

    it("the module object is frozen: one importer cannot change it for all", async () => {
      const attn = await createAttnkit(variant.options);
      assert.ok(Object.isFrozen(attn));
      assert.throws(() => {
        "use strict";
        attn.attention = () => 0;
      }, TypeError);
      assert.equal(typeof (await createAttnkit(variant.options)).attention, "function");
    });

    it("options.out: the result is written into the caller's array, which is returned", async () => {
      const attn = await createAttnkit(variant.options);
      const Q = mat(5, 8, 1),
        K = mat(7, 8, 2),
        V = mat(7, 3, 3);
      const out = new Float32Array(15);
      const r = attn.attention(Q, K, V, { causal: true, out });
      assert.equal(r.data, out);
      assert.deepEqual([r.rows, r.cols], [5, 3]);
      assertClose(
        r,
        ref.attention(rowsOf(Q), rowsOf(K), rowsOf(V), { causal: true }),
        "attention into out",
      );
      // Multi-head in both layouts, and a cache call.
      const X = { data: rand(2 * 4 * 8, 4), shape: [2, 4, 8] };
      const W = { W_Q: mat(8, 8, 5), W_K: mat(8, 8, 6), W_V: mat(8, 8, 7) };
      const want = attn.multiHeadAttention(X, W, { numHeads: 2 });
      const mhOut = new Float32Array(64);
      assert.equal(attn.multiHeadAttention(X, W, { numHeads: 2 }, { out: mhOut }).data, mhOut);
      assert.deepEqual(mhOut, want.data);
      const q4 = { data: rand(2 * 2 * 3 * 4, 8), shape: [2, 2, 3, 4] };
      const bhsd = attn.multiHeadAttentionQKV(q4, q4, q4, { numHeads: 2 }, { layout: "bhsd" });
      const into = new Float32Array(bhsd.data.length);
      assert.equal(
        attn.multiHeadAttentionQKV(q4, q4, q4, { numHeads: 2 }, { layout: "bhsd", out: into }).data,
        into,
      );
      assert.deepEqual(into, bhsd.data);
      assert.throws(
        () =>
          attn.multiHeadAttentionQKV(
            q4,
            q4,
            q4,
            { numHeads: 2 },
            { layout: "bhsd", out: new Float32Array(3) },
          ),
        (e) => e instanceof AttnkitError && e.parameter === "options.out",
      );
    });

    it("KV cache: truncate rolls back a token, fork copies the cache and both go their own way", async () => {
      const attn = await createAttnkit(variant.options);
      const cache = attn.createKVCache({ batch: 2, numKvHeads: 1, dK: 4, dV: 4, capacity: 8 });
      const kv = (seed) => ({ data: rand(2 * 1 * 4, seed), shape: [2, 1, 4] });
      cache.append(kv(1), kv(2));
      cache.append(kv(3), kv(4));
      const keysBefore = cache.keys(1, 0);
      // A speculative token, rejected.
      cache.append(kv(5), kv(6));
      assert.equal(cache.size, 3);
      cache.truncate(2);
      assert.equal(cache.size, 2);
      assert.deepEqual(cache.keys(1, 0), keysBefore);
      // A beam: the fork has the same tokens and memory of its own.
      const beam = cache.fork();
      assert.deepEqual(
        [beam.batch, beam.numKvHeads, beam.dK, beam.dV, beam.capacity, beam.size],
        [2, 1, 4, 4, 8, 2],
      );
      assert.deepEqual(beam.keys(0, 0), cache.keys(0, 0));
      beam.append(kv(7), kv(8));
      cache.append(kv(9), kv(10));
      assert.notDeepEqual(beam.keys(0, 0), cache.keys(0, 0));
      assert.deepEqual(beam.keys(1, 0).data.subarray(0, 8), keysBefore.data);
      assert.deepEqual(cache.keys(1, 0).data.subarray(0, 8), keysBefore.data);
      const q = { data: rand(2 * 1 * 4, 11), shape: [2, 1, 4] };
      assert.notDeepEqual(beam.attend(q, 1).data, cache.attend(q, 1).data);
      beam.dispose();
      assert.equal(cache.size, 3); // disposing the fork leaves the original
      cache.dispose();
    });

    it("a cache's handle is private: a copied object cannot free it", async () => {
      const attn = await createAttnkit(variant.options);
      const cache = attn.createKVCache({ numKvHeads: 1, dK: 2, dV: 2, capacity: 4 });
      assert.equal(cache.handle, undefined);
      assert.ok(!Object.keys(cache).some((k) => /handle/i.test(k)));
      const copy = { ...cache };
      assert.equal(typeof copy.dispose, "undefined");
      cache.dispose();
    });

    it("a rejected oversize call leaves the heap free for a large cache", async () => {
      const attn = await createAttnkit(variant.options);
      const before = attn.memoryBytes();
      const A = { data: new Float32Array(20000), rows: 20000, cols: 1 },
        B = { data: new Float32Array(20000), rows: 1, cols: 20000 };
      assert.throws(
        () => attn.matmul(A, B),
        (e) => e instanceof AttnkitError && e.code === "overflow" && e.parameter === "B",
      );
      assert.ok(
        attn.memoryBytes() - before < 64 << 20,
        `wasm memory grew by ${attn.memoryBytes() - before} bytes`,
      );
      // A large call that succeeds does not keep its scratch either.
      const big = attn.matmul(
        { data: new Float32Array(4096 * 64), rows: 4096, cols: 64 },
        { data: new Float32Array(64 * 4096), rows: 64, cols: 4096 },
      );
      assert.equal(big.data.length, 4096 * 4096);
      const inUse = attn.heapBytesInUse();
      const cache = attn.createKVCache({ numKvHeads: 1, dK: 64, dV: 64, capacity: 1 << 20 }); // 512 MiB
      assert.ok(attn.heapBytesInUse() - inUse >= 512 << 20);
      cache.dispose();
      assert.ok(
        attn.heapBytesInUse() < 32 << 20,
        `heap in use after the calls: ${attn.heapBytesInUse()}`,
      );
    });
  });
}

describe("module dispose", () => {
  it("dispose() frees the module: calls then throw 'disposed', and createAttnkit() loads a new one", async () => {
    const attn = await createAttnkit({ simd: false });
    const cache = attn.createKVCache({ numKvHeads: 1, dK: 2, dV: 2, capacity: 4 });
    attn.dispose();
    attn.dispose(); // twice is fine
    const disposed = (e) =>
      e instanceof AttnkitError &&
      e.code === "disposed" &&
      /^attnkit: expected a live module/.test(e.message);
    assert.throws(() => attn.attention([[1]], [[1]], [[1]]), disposed);
    assert.throws(() => attn.createKVCache({ numKvHeads: 1, dK: 2, dV: 2, capacity: 4 }), disposed);
    assert.throws(() => cache.size, disposed);
    cache.dispose(); // a cache of a disposed module can still be disposed
    const fresh = await createAttnkit({ simd: false });
    assert.notEqual(fresh, attn);
    assertClose(
      fresh.attention(
        [[1, 0]],
        [
          [1, 0],
          [0, 1],
        ],
        [[1], [2]],
      ),
      ref.attention(
        [[1, 0]],
        [
          [1, 0],
          [0, 1],
        ],
        [[1], [2]],
      ),
      "fresh module",
    );
  });
});
