// Every error case of the issue: the class (AttnkitError, a RangeError, or
// AttnkitTypeError, a TypeError; `instanceof AttnkitError` is true for both),
// e.code, e.parameter, and a message that names the parameter, what was
// expected and what was given. After each error the module still works.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";
import { VARIANTS } from "./helpers.js";
import { CASES, I4, K, MH, Q, V, X, t3 } from "./error-cases.js";

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
      const cfg = { batch: 2, numKvHeads: 1, dK: 2, dV: 2, capacity: 3 };
      const D = {
        W_Q: [
          [1, 0],
          [0, 1],
          [1, 1],
          [0, 0],
        ],
        W_K: [
          [1, 0],
          [0, 1],
          [1, 1],
          [0, 0],
        ],
        W_V: [
          [0, 1],
          [1, 0],
          [1, 1],
          [0, 1],
        ],
      };

      it("out of capacity: append and decode throw code 'capacity' and leave the cache unchanged", () => {
        const cache = attn.createKVCache(cfg);
        cache.append(t3(2, 2, 2, 1), t3(2, 2, 2, 2));
        const keys = cache.keys(1, 0);
        expectError(() => cache.append(t3(2, 2, 2), t3(2, 2, 2)), {
          kind: "range",
          code: "capacity",
          parameter: "capacity",
          says: ["at most 3 cached tokens", "got 2 + 2 new = 4"],
        });
        assert.equal(cache.size, 2);
        assert.deepEqual(cache.keys(1, 0), keys);
        expectError(() => cache.decode(t3(2, 2, 4), D, { numHeads: 1, dK: 2 }), {
          kind: "range",
          code: "capacity",
          parameter: "capacity",
          says: ["at most 3 cached tokens", "got 2 + 2 new = 4"],
        });
        assert.equal(cache.size, 2);
        assert.deepEqual(cache.keys(1, 0), keys);
        // One more token fits, then the cache is full.
        const out = cache.decode(t3(2, 1, 4), D, { numHeads: 1, dK: 2 });
        assert.deepEqual(out.shape, [2, 1, 2]);
        assert.equal(cache.size, 3);
        expectError(() => cache.append(t3(2, 1, 2), t3(2, 1, 2)), {
          kind: "range",
          code: "capacity",
          parameter: "capacity",
          says: ["at most 3", "got 3 + 1 new = 4"],
        });
        assert.equal(cache.size, 3);
        cache.reset();
        cache.append(t3(2, 3, 2), t3(2, 3, 2));
        assert.equal(cache.size, 3);
        cache.dispose();
        stillWorks();
      });

      it("bad shapes, values, heads and indices", () => {
        const cache = attn.createKVCache(cfg);
        expectError(() => cache.attend(t3(2, 1, 2), 1), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "Q",
          says: ["at most 0 tokens", "append K and V first", "got 1"],
        });
        expectError(
          () =>
            cache.append(
              [
                [1, 1],
                [1, 1],
                [1, 1],
              ],
              [
                [1, 1],
                [1, 1],
                [1, 1],
              ],
            ),
          {
            kind: "range",
            code: "shape_mismatch",
            parameter: "K",
            says: ["divisible by batch = 2", "got 3"],
          },
        );
        expectError(() => cache.append(t3(2, 1, 3), t3(2, 1, 2)), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "K",
          says: ["2 columns", "got 3"],
        });
        expectError(() => cache.append(t3(2, 1, 2), t3(2, 2, 2)), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "V",
          says: ["2 rows", "got 4"],
        });
        expectError(
          () =>
            cache.append({ data: Float32Array.of(1, NaN, 1, 1), shape: [2, 1, 2] }, t3(2, 1, 2)),
          {
            kind: "range",
            code: "non_finite",
            parameter: "K",
            says: ["finite values", "got NaN at row 0, column 1"],
          },
        );
        expectError(() => cache.append("K", t3(2, 1, 2)), {
          kind: "type",
          parameter: "K",
          says: ["a matrix", 'string "K"'],
        });
        assert.equal(cache.size, 0);
        expectError(
          () =>
            cache.decode(
              t3(2, 1, 4),
              { W_Q: I4, W_K: I4, W_V: I4 },
              { numHeads: 2, numKvHeads: 2 },
            ),
          {
            kind: "range",
            code: "shape_mismatch",
            parameter: "config.numKvHeads",
            says: ["expected 1 (the cache's)", "got 2"],
          },
        );
        expectError(() => cache.decode(t3(2, 1, 4), D, { numHeads: 1, dK: 2, dV: 3 }), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "config.dV",
          says: ["expected 2 (the cache's)", "got 3"],
        });
        expectError(() => cache.decode(t3(2, 1, 4), D, { numHeads: 1, dK: 2 }, { bogus: 1 }), {
          kind: "range",
          code: "invalid_argument",
          parameter: "options.bogus",
          says: ["unknown option"],
        });
        assert.equal(cache.size, 0, "failed decodes leave the cache empty");
        cache.append(t3(2, 1, 2), t3(2, 1, 2));
        expectError(() => cache.attend(t3(2, 1, 3), 1), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "Q",
          says: ["2 columns", "got 3"],
        });
        expectError(() => cache.attend(t3(2, 1, 2), 0), {
          kind: "range",
          code: "invalid_argument",
          parameter: "numHeads",
          says: ["a positive integer", "got 0"],
        });
        expectError(() => cache.attend(t3(2, 1, 2), 1, { scale: -2 }), {
          kind: "range",
          code: "invalid_argument",
          parameter: "options.scale",
          says: ["got -2"],
        });
        expectError(() => cache.attend(t3(2, 1, 2), 1, { keyLengths: [1] }), {
          kind: "range",
          code: "invalid_argument",
          parameter: "options.keyLengths",
          says: ["batch = 2", "got 1"],
        });
        expectError(() => cache.keys(2, 0), {
          kind: "range",
          code: "invalid_argument",
          parameter: "item",
          says: ["below batch = 2", "got 2"],
        });
        expectError(() => cache.values(0, 1), {
          kind: "range",
          code: "invalid_argument",
          parameter: "kvHead",
          says: ["below numKvHeads = 1", "got 1"],
        });
        expectError(() => cache.keys(-1, 0), {
          kind: "range",
          code: "invalid_argument",
          parameter: "item",
          says: ["a non-negative integer", "got -1"],
        });
        expectError(() => cache.keys(0.5, 0), {
          kind: "range",
          code: "invalid_argument",
          parameter: "item",
          says: ["a non-negative integer", "got 0.5"],
        });
        assert.equal(cache.size, 1);
        assert.deepEqual(cache.attend(t3(2, 1, 2), 1).shape, [2, 1, 2]);
        cache.dispose();
        stillWorks();
      });

      it("a rank-3 input's batch must be the cache's: items are never mixed", () => {
        const one = attn.createKVCache({ numKvHeads: 1, dK: 2, dV: 2, capacity: 4 });
        const two = attn.createKVCache(cfg);
        // [1, 2, d] on a batch-2 cache is one item of two tokens, not two items of one.
        expectError(() => two.append(t3(1, 2, 2), t3(1, 2, 2)), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "K.shape[0]",
          says: ["the cache's batch = 2", "got 1"],
        });
        assert.equal(two.size, 0);
        one.append(t3(1, 1, 2), t3(1, 1, 2));
        // [2, 1, d] on a batch-1 cache is two items, not one sequence of two queries.
        expectError(() => one.attend(t3(2, 1, 2), 1), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "Q.shape[0]",
          says: ["the cache's batch = 1", "got 2"],
        });
        expectError(() => one.append(t3(1, 1, 2), t3(2, 1, 2)), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "V.shape[0]",
          says: ["the cache's batch = 1", "got 2"],
        });
        expectError(() => one.decode(t3(2, 1, 4), D, { numHeads: 1, dK: 2 }), {
          kind: "range",
          code: "shape_mismatch",
          parameter: "X.shape[0]",
          says: ["the cache's batch = 1", "got 2"],
        });
        assert.equal(one.size, 1);
        // The cache's own batch works.
        assert.deepEqual(one.attend(t3(1, 1, 2), 1).shape, [1, 1, 2]);
        two.append(t3(2, 1, 2), t3(2, 1, 2));
        assert.deepEqual(two.attend(t3(2, 1, 2), 1).shape, [2, 1, 2]);
        one.dispose();
        two.dispose();
        stillWorks();
      });

      it("truncate: past the size is an error naming size", () => {
        const cache = attn.createKVCache(cfg);
        cache.append(t3(2, 2, 2), t3(2, 2, 2));
        expectError(() => cache.truncate(3), {
          kind: "range",
          code: "invalid_argument",
          parameter: "size",
          says: ["at most the cached tokens per item, 2", "got 3"],
        });
        expectError(() => cache.truncate(-1), {
          kind: "range",
          code: "invalid_argument",
          parameter: "size",
          says: ["a non-negative integer", "got -1"],
        });
        assert.equal(cache.size, 2);
        cache.dispose();
      });

      it("a size product too large for the core is code 'overflow' and names the capacity", () => {
        const e = expectError(
          () => attn.createKVCache({ numKvHeads: 1024, dK: 1024, dV: 1, capacity: 1024 }),
          {
            kind: "range",
            code: "overflow",
            parameter: "config.capacity",
            says: [
              "at most 2^28 = 268435456 elements of cached keys",
              "got 1048576 * 1024 = 1073741824",
            ],
          },
        );
        assert.match(e.parameter, /capacity/);
        stillWorks();
      });

      it("use after dispose throws code 'disposed'; dispose twice is fine", () => {
        const cache = attn.createKVCache(cfg);
        cache.append(t3(2, 1, 2), t3(2, 1, 2));
        cache.dispose();
        cache.dispose();
        cache[Symbol.dispose]();
        const disposed = {
          kind: "range",
          code: "disposed",
          parameter: "cache",
          says: ["a live KVCache", "disposed"],
        };
        expectError(() => cache.append(t3(2, 1, 2), t3(2, 1, 2)), disposed);
        expectError(() => cache.attend(t3(2, 1, 2), 1), disposed);
        expectError(() => cache.decode(t3(2, 1, 4), D, { numHeads: 1, dK: 2 }), disposed);
        expectError(() => cache.keys(0, 0), disposed);
        expectError(() => cache.values(0, 0), disposed);
        expectError(() => cache.reset(), disposed);
        expectError(() => cache.truncate(0), disposed);
        expectError(() => cache.fork(), disposed);
        expectError(() => cache.size, disposed);
        // The plain properties stay readable.
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
