// Allocation failures: a call whose buffers do not fit in wasm memory (2 GB
// at most) must throw an AttnkitError like any other bad input, leak nothing
// and leave the module usable, never abort the module. Each variant's module
// grows towards its memory limit here, so this file runs in its own process
// (node --test runs every file in a separate process).
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError } from "attnkit";
import { VARIANTS } from "./helpers.js";

for (const variant of VARIANTS) {
  describe(`allocation failures (${variant.name} build)`, () => {
    let attn, heap0;
    const Q = [
      [1, 0],
      [0, 1],
    ];
    let want;
    const stillWorks = (label) => {
      assert.deepEqual(
        Array.from(attn.attention(Q, Q, [[1], [2]]).data),
        want,
        `${label}: a valid call still works`,
      );
      // Nothing stays allocated (a few KB of slack for the last error message).
      const heap = attn.heapBytesInUse();
      assert.ok(
        heap - heap0 <= 8192,
        `${label}: wasm heap in use grew from ${heap0} to ${heap} bytes`,
      );
    };
    // One 1 GiB array whose views are the large inputs.
    let big;
    // An overflow AttnkitError naming one of the call's parameters, not "input".
    const overflowOf = (names) => (e) => {
      assert.ok(e instanceof AttnkitError, `an AttnkitError: ${e}`);
      assert.equal(e.code, "overflow", e.message);
      const name = e.parameter.replace(/\.(rows|cols|shape\[\d\])$/, "");
      assert.ok(names.includes(name), `names one of ${names}: ${e.parameter}`);
      assert.ok(e.message.startsWith(`${e.parameter}: expected `), e.message);
      return true;
    };
    before(async () => {
      big = new Float32Array(2 ** 28);
      attn = await createAttnkit(variant.options);
      want = Array.from(attn.attention(Q, Q, [[1], [2]]).data);
      heap0 = attn.heapBytesInUse();
    });

    it("inputs that do not fit (matmul of two 512 MB matrices)", () => {
      const data = new Float32Array(2 ** 27);
      const A = { data, rows: 2 ** 14, cols: 2 ** 13 },
        B = { data, rows: 2 ** 13, cols: 2 ** 14 };
      assert.throws(
        () => attn.matmul(A, B),
        (e) =>
          e instanceof AttnkitError &&
          e instanceof RangeError &&
          e.code === "overflow" &&
          /memory/.test(e.message),
      );
      stillWorks("matmul");
    });

    it("a call past 4 GiB in all: an overflow naming an input, and the next call right", () => {
      // Three inputs of 2^28 floats and a result as large: 4 GiB + the
      // argument block, which a 32-bit size would wrap to a few bytes.
      const M = { data: big, rows: 2 ** 22, cols: 64 };
      const e = assert.throws(() => attn.attention(M, M, M), overflowOf(["Q", "K", "V"]));
      assert.deepEqual(Array.from(attn.attention([[1]], [[1]], [[2]]).data), [2]);
      stillWorks("attention past 4 GiB");
      return e;
    });

    // Around 2^31 and 2^32 bytes of inputs and result: Q and the result
    // [q, 1], K and V [k, 1], 8 (q + k) bytes. Every one is refused before
    // memory is touched (past 4 GiB: the test above).
    for (const [label, q, k] of [
      ["2^31 - 8", 2 ** 27, 2 ** 27 - 1],
      ["2^31", 2 ** 27, 2 ** 27],
      ["2^31 + 8", 2 ** 27, 2 ** 27 + 1],
      ["2^32 - 8", 2 ** 28, 2 ** 28 - 1],
      ["2^32", 2 ** 28, 2 ** 28],
    ]) {
      it(`inputs and result of ${label} bytes`, () => {
        const Q = { data: big.subarray(0, q), rows: q, cols: 1 };
        const KV = { data: big.subarray(0, k), rows: k, cols: 1 };
        assert.throws(() => attn.attention(Q, KV, KV), overflowOf(["Q", "K", "V"]));
        stillWorks(label);
      });
    }

    it("matrices of 2^30, 2^31 and 2^32 elements, as rows x cols and as shapes", () => {
      for (const elements of [2 ** 30, 2 ** 31 - 1, 2 ** 31, 2 ** 31 + 1, 2 ** 32, 2 ** 32 + 1]) {
        const cols = elements % 2 === 0 ? 2 : 1;
        const byRows = { data: new Float32Array(1), rows: elements / cols, cols };
        assert.throws(() => attn.attention(byRows, [[1]], [[1]]), overflowOf(["Q"]));
        const byShape = { data: new Float32Array(1), shape: [elements / cols, cols] };
        assert.throws(() => attn.attention([[1]], byShape, [[1]]), overflowOf(["K"]));
      }
      stillWorks("element counts");
    });

    it("a KV cache whose storage does not fit (2 x 1 GB)", () => {
      assert.throws(
        () => attn.createKVCache({ numKvHeads: 1, dK: 16384, dV: 16384, capacity: 16384 }),
        (e) =>
          e instanceof AttnkitError &&
          /capacity|memory/.test(e.parameter) &&
          /expected/.test(e.message),
        "an AttnkitError, not a RuntimeError from abort()",
      );
      stillWorks("createKVCache");
    });

    it("a trace whose score matrices do not fit (T = 12000: 4 x 576 MB)", () => {
      const T = 12000;
      const X = { data: new Float32Array(T).fill(0.1), rows: T, cols: 1 };
      assert.throws(
        () => attn.trace(X, { W_Q: [[1]], W_K: [[1]], W_V: [[1]] }),
        (e) => e instanceof AttnkitError && /expected/.test(e.message),
        "an AttnkitError, not a RuntimeError from abort()",
      );
      stillWorks("trace");
    });
  });
}
