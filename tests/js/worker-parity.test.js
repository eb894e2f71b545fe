// Parity of attnkit/worker with the synchronous API on bad inputs: every bad
// input of the error tests (tests/js/error-cases.js, the table errors.test.js
// runs) goes through the worker, and the rejection must be the synchronous
// call's error: the same class, name, message, code and parameter. After each,
// the worker still answers right.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";
import { createAttnkitWorker } from "attnkit/worker";
import { CASES, K, Q, V } from "./error-cases.js";

/** The error `fn` throws (or the rejection of the promise it returns). */
async function errorOf(fn) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  return null;
}

describe("attnkit/worker: the error tests' bad inputs give the synchronous errors", () => {
  let attn, worker, baseline;
  before(async () => {
    attn = await createAttnkit({ simd: true });
    worker = await createAttnkitWorker({ simd: true });
    baseline = attn.attention(Q, K, V, { causal: true });
  });
  after(async () => {
    await worker?.dispose();
  });

  for (const [label, fn] of CASES) {
    it(label, async () => {
      let want;
      try {
        fn(attn);
      } catch (e) {
        want = e;
      }
      assert.ok(want instanceof AttnkitError, `the synchronous call throws: ${want}`);
      const got = await errorOf(() => fn(worker));
      assert.ok(got, "the worker's call rejects");
      assert.ok(got instanceof AttnkitError, `an AttnkitError: ${got}`);
      assert.equal(got instanceof AttnkitTypeError, want instanceof AttnkitTypeError, "class");
      assert.equal(got instanceof TypeError, want instanceof TypeError, "TypeError");
      assert.equal(got instanceof RangeError, want instanceof RangeError, "RangeError");
      for (const key of ["name", "code", "parameter", "message"]) {
        assert.equal(got[key], want[key], key);
      }
      assert.deepStrictEqual(await worker.attention(Q, K, V, { causal: true }), baseline);
    });
  }
});
