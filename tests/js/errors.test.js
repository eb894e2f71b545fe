// Every error case of the issue: the class (AttnkitError, a RangeError, or
// AttnkitTypeError, a TypeError; `instanceof AttnkitError` is true for both),
// e.code, e.parameter, and a message that names the parameter, what was
// expected and what was given. After each error the module still works.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";
import { VARIANTS } from "./helpers.js";
import {
  CACHE_CASES,
  CACHE_CONFIG,
  CASES,
  DECODE_WEIGHTS,
  K,
  MH,
  Q,
  V,
  X,
  t3,
} from "./error-cases.js";

/**
 * Runs fn, which must throw. kind "range": AttnkitError (RangeError); "type":
 * AttnkitTypeError (TypeError). `says` lists substrings the message must hold:
 * the expected and the given value.
 */
function expectError(fn, { kind, code, parameter, says = [] }) {
  let error;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  assert.ok(error, `expected ${parameter} to throw`);
  assert.ok(error instanceof AttnkitError, `instanceof AttnkitError: ${error}`);
  assert.ok(error instanceof Error);
  if (kind === "type") {
    assert.ok(error instanceof AttnkitTypeError, `AttnkitTypeError: ${error}`);
    assert.ok(error instanceof TypeError);
    assert.ok(!(error instanceof RangeError));
    assert.equal(error.name, "AttnkitTypeError");
    assert.equal(error.code, "type");
  } else {
    assert.ok(error instanceof RangeError, `RangeError: ${error}`);
    assert.ok(!(error instanceof AttnkitTypeError));
    assert.equal(error.name, "AttnkitError");
    assert.equal(error.code, code, `code of: ${error.message}`);
  }
  assert.equal(error.parameter, parameter, `parameter of: ${error.message}`);
  assert.ok(
    error.message.startsWith(`${parameter}: expected `),
    `message names the parameter: ${error.message}`,
  );
  assert.match(error.message, /, got /, `message names the given value: ${error.message}`);
  for (const s of says)
    assert.ok(
      error.message.includes(s),
      `message ${JSON.stringify(error.message)} includes ${JSON.stringify(s)}`,
    );
  assertJsWords(error.message, parameter);
  return error;
}

// The maths' dimension names a message may use; any other snake_case word,
// C++ enum constant (kLowerRight) or C spelling of a float (nan, inf) is a
// core name that a JS caller cannot write.
const MATHS_WORDS = [
  "d_model",
  "T_q",
  "T_k",
  "T_past",
  "T_new",
  "T_total",
  "W_Q",
  "W_K",
  "W_V",
  "W_O",
];
function assertJsWords(message, parameter) {
  const words =
    message
      .slice(parameter.length)
      .match(/\b[A-Za-z]+_[A-Za-z_]+\b|\bk[A-Z][a-z]\w*\b|\b(nan|inf)\b|\(\d+, \d+\)/g) ?? [];
  const core = words.filter((w) => !MATHS_WORDS.includes(w) && !/^(options|weights)\./.test(w));
  assert.deepEqual(core, [], `message in the JS API's words: ${message}`);
}

for (const variant of VARIANTS) {
  describe(`errors (${variant.name} build)`, () => {
    let attn, baseline;
    const stillWorks = () => {
      const r = attn.attention(Q, K, V, { causal: true });
      assert.deepEqual(r.data, baseline.data, "a valid call after the error gives the same result");
      assert.deepEqual(attn.multiHeadAttention(X, MH, { numHeads: 2 }).data, baseline.mh.data);
    };
    before(async () => {
      attn = await createAttnkit(variant.options);
      baseline = attn.attention(Q, K, V, { causal: true });
      baseline.mh = attn.multiHeadAttention(X, MH, { numHeads: 2 });
    });

    for (const [label, fn, expectation] of CASES) {
      it(label, () => {
        expectError(() => fn(attn), expectation);
        stillWorks();
      });
    }

    describe("KV cache", () => {
      const cfg = CACHE_CONFIG;
      const D = DECODE_WEIGHTS;

      // The bad inputs (error-cases.js): each on a fresh cache in the state
      // its `prepare` leaves; the failed call leaves the cache as it was.
      for (const [label, config, prepare, call, expectation] of CACHE_CASES) {
        it(label, async () => {
          const cache = attn.createKVCache(config);
          await prepare?.(cache);
          const live = expectation.code !== "disposed";
          const size = live ? cache.size : 0;
          const keys = live && size > 0 ? cache.keys(0, 0) : null;
          expectError(() => call(cache), expectation);
          if (live) {
            assert.equal(cache.size, size, "the failed call leaves the size");
            if (keys) assert.deepEqual(cache.keys(0, 0), keys, "and the cached keys");
          }
          cache.dispose();
          stillWorks();
        });
      }

      it("a full cache takes one more token, then none; reset empties it", () => {
        const cache = attn.createKVCache(cfg);
        cache.append(t3(2, 2, 2, 1), t3(2, 2, 2, 2));
        const out = cache.decode(t3(2, 1, 4), D, { numHeads: 1, dK: 2 });
        assert.deepEqual(out.shape, [2, 1, 2]);
        assert.equal(cache.size, 3);
        assert.throws(() => cache.append(t3(2, 1, 2), t3(2, 1, 2)), { code: "capacity" });
        cache.reset();
        cache.append(t3(2, 3, 2), t3(2, 3, 2));
        assert.equal(cache.size, 3);
        cache.dispose();
      });

      it("after errors a cache of its own batch works", () => {
        const one = attn.createKVCache({ numKvHeads: 1, dK: 2, dV: 2, capacity: 4 });
        const two = attn.createKVCache(cfg);
        one.append(t3(1, 1, 2), t3(1, 1, 2));
        assert.throws(() => one.attend(t3(2, 1, 2), 1), { parameter: "Q.shape[0]" });
        assert.deepEqual(one.attend(t3(1, 1, 2), 1).shape, [1, 1, 2]);
        two.append(t3(2, 1, 2), t3(2, 1, 2));
        assert.deepEqual(two.attend(t3(2, 1, 2), 1).shape, [2, 1, 2]);
        one.dispose();
        two.dispose();
        stillWorks();
      });

      it("dispose twice is fine; the plain properties stay readable", () => {
        const cache = attn.createKVCache(cfg);
        cache.append(t3(2, 1, 2), t3(2, 1, 2));
        cache.dispose();
        cache.dispose();
        cache[Symbol.dispose]();
        assert.throws(() => cache.size, { code: "disposed" });
        assert.deepEqual(
          [cache.batch, cache.numKvHeads, cache.dK, cache.dV, cache.capacity],
          [2, 1, 2, 2, 3],
        );
        stillWorks();
        // A new cache works.
        const fresh = attn.createKVCache(cfg);
        fresh.append(t3(2, 1, 2), t3(2, 1, 2));
        assert.equal(fresh.size, 1);
        fresh.dispose();
      });
    });

    it("many errors in a row (every kind) leave the module working", () => {
      for (let i = 0; i < 200; ++i) {
        const [, fn] = CASES[i % CASES.length];
        assert.throws(() => fn(attn), AttnkitError);
      }
      stillWorks();
    });
  });
}

describe("error classes", () => {
  it("AttnkitError is a RangeError, AttnkitTypeError a TypeError, and both are instanceof AttnkitError", () => {
    const e = new AttnkitError("x: expected y, got z", { code: "shape_mismatch", parameter: "x" });
    assert.ok(e instanceof AttnkitError && e instanceof RangeError && e instanceof Error);
    assert.equal(e.code, "shape_mismatch");
    assert.equal(e.parameter, "x");
    const t = new AttnkitTypeError("x: expected y, got z", { parameter: "x" });
    assert.ok(t instanceof AttnkitTypeError && t instanceof TypeError && t instanceof AttnkitError);
    assert.ok(!(t instanceof RangeError));
    assert.equal(t.code, "type");
    // Plain errors are not AttnkitErrors.
    assert.ok(!(new RangeError("x") instanceof AttnkitError));
    assert.ok(!(new TypeError("x") instanceof AttnkitError));
    assert.ok(!(null instanceof AttnkitError));
  });
});
