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
    before(async () => {
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
