// The threads build (SIMD128 + pthreads): createAttnkit({ threads }) in Node.
// The core cuts work into tasks of fixed size, so every result must equal the
// single-threaded build's bit for bit; bad thread counts are refused.
import test from "node:test";
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";

// The loader caps the thread count at the hardware's.
const HW = availableParallelism();

function random(n, seed) {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32) * 4 - 2;
  });
}
const mat = (rows, cols, seed) => ({ data: random(rows * cols, seed), rows, cols });
const tensor = (shape, seed) => ({
  data: random(
    shape.reduce((a, b) => a * b),
    seed,
  ),
  shape,
});

function assertIdentical(got, want, label) {
  assert.equal(got.data.length, want.data.length, label);
  for (let i = 0; i < want.data.length; ++i) {
    if (!Object.is(got.data[i], want.data[i]))
      assert.fail(`${label}: at ${i} got ${got.data[i]}, want ${want.data[i]}`);
  }
}

test("createAttnkit({ threads }) loads the pthreads build once per thread count", async () => {
  const one = await createAttnkit();
  const two = await createAttnkit({ threads: 2 });
  assert.equal(one.threads, 1);
  assert.equal(two.threads, 2);
  assert.equal(two.simd, true);
  assert.equal(two.target, "WASM");
  assert.equal(two, await createAttnkit({ threads: 2, simd: true }));
  if (HW >= 3) assert.notEqual(two, await createAttnkit({ threads: 3 }));
  assert.equal(await createAttnkit({ threads: 1 }), one);
});

test("more threads than the hardware runs at once are capped at its count (#18, defect 9)", async () => {
  const start = performance.now();
  const many = await createAttnkit({ threads: 64 });
  const ms = performance.now() - start;
  assert.equal(many.threads, Math.min(64, HW), "attn.threads reports the count used");
  assert.equal(
    many,
    await createAttnkit({ threads: Math.min(64, HW) }),
    "one instance per count used",
  );
  if (HW < 64) assert.ok(ms < 5000, `{ threads: 64 } loaded in ${ms.toFixed(0)} ms`);
  const Q = mat(64, 8, 30),
    K = mat(64, 8, 31),
    V = mat(64, 8, 32);
  assertIdentical(
    many.attention(Q, K, V),
    (await createAttnkit()).attention(Q, K, V),
    "capped threads",
  );
});

test("bad thread counts reject with an AttnkitError naming options.threads", async () => {
  const cases = [
    [0, AttnkitError, /^options\.threads: expected a positive integer, got 0$/],
    [1.5, AttnkitError, /^options\.threads: expected a positive integer, got 1\.5$/],
    [65, AttnkitError, /^options\.threads: expected at most 64, got 65$/],
    ["2", AttnkitTypeError, /^options\.threads: expected a positive integer, got string "2"$/],
  ];
  for (const [threads, cls, message] of cases) {
    await assert.rejects(createAttnkit({ threads }), (e) => {
      assert.ok(e instanceof cls, `${threads}: ${e}`);
      assert.equal(e.parameter, "options.threads");
      assert.match(e.message, message);
      return true;
    });
  }
  await assert.rejects(createAttnkit({ threads: 2, simd: false }), (e) => {
    assert.ok(e instanceof AttnkitError);
    assert.equal(e.parameter, "options.threads");
    assert.match(
      e.message,
      /^options\.threads: expected 1 with simd: false \(the threads build uses SIMD128\), got 2$/,
    );
    return true;
  });
});

test("with 2 and 3 threads every operation equals the single-threaded result bit for bit", async () => {
  const one = await createAttnkit();
  for (const threads of [2, 3]) {
    const many = await createAttnkit({ threads });
    const label = `${threads} threads`;
    // One head, long enough for several query tasks, with every mask kind.
    const T = 200,
      dk = 24,
      dv = 20;
    const Q = mat(T, dk, 1),
      K = mat(T, dk, 2),
      V = mat(T, dv, 3);
    const boolMask = {
      data: Uint8Array.from(random(T * T, 4), (x) => (x > -1.2 ? 1 : 0)),
      rows: T,
      cols: T,
    };
    for (const options of [
      {},
      { causal: true },
      { causal: true, keyLength: 150 },
      { boolMask, softcap: 4 },
    ]) {
      assertIdentical(
        many.attention(Q, K, V, options),
        one.attention(Q, K, V, options),
        `${label} attention ${JSON.stringify(Object.keys(options))}`,
      );
    }
    // Multi-head: batch 2, grouped K/V heads, padding, W_O.
    const X = tensor([2, 70, 32], 5);
    const w = {
      W_Q: mat(32, 32, 6),
      W_K: mat(32, 16, 7),
      W_V: mat(32, 16, 8),
      W_O: mat(32, 12, 9),
    };
    const config = { numHeads: 4, numKvHeads: 2 };
    const mho = { causal: true, keyLengths: [70, 41] };
    assertIdentical(
      many.multiHeadAttention(X, w, config, mho),
      one.multiHeadAttention(X, w, config, mho),
      `${label} multi-head`,
    );
    // Decoding one token against a cache of 1000 (split-K over key chunks).
    const caches = [one, many].map((a) =>
      a.createKVCache({ numKvHeads: 2, dK: 8, dV: 8, capacity: 1001 }),
    );
    const Kc = tensor([1000, 16], 10),
      Vc = tensor([1000, 16], 11);
    for (const c of caches)
      c.append({ data: Kc.data, rows: 1000, cols: 16 }, { data: Vc.data, rows: 1000, cols: 16 });
    const q = mat(1, 32, 12);
    assertIdentical(caches[1].attend(q, 4), caches[0].attend(q, 4), `${label} cached attend`);
    const xw = { W_Q: mat(32, 32, 13), W_K: mat(32, 16, 14), W_V: mat(32, 16, 15) };
    const x = mat(1, 32, 16);
    assertIdentical(
      caches[1].decode(x, xw, { numHeads: 4, numKvHeads: 2 }),
      caches[0].decode(x, xw, { numHeads: 4, numKvHeads: 2 }),
      `${label} decode`,
    );
    for (const c of caches) c.dispose();
  }
});

test("the threads build reports errors, keeps working and leaks nothing", async () => {
  const attn = await createAttnkit({ threads: 2 });
  const Q = mat(64, 8, 20),
    K = mat(64, 8, 21),
    V = mat(64, 8, 22);
  // Warm up: the scratch block, and the last-error string's capacity.
  assert.throws(() => attn.attention(Q, mat(64, 7, 23), V), AttnkitError);
  attn.attention(Q, K, V);
  const before = attn.heapBytesInUse();
  for (let i = 0; i < 200; ++i) {
    assert.throws(
      () => attn.attention(Q, mat(64, 7, 23), V),
      (e) => e instanceof AttnkitError && e.parameter === "K",
    );
    const out = attn.attention(Q, K, V, { causal: i % 2 === 0 });
    assert.ok(out.data.every(Number.isFinite));
  }
  assert.equal(attn.heapBytesInUse(), before, "heap bytes in use after 200 calls and 200 errors");
});
