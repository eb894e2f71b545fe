// No leaks: 100,000 mixed calls (every 10th one fails) and 10,000 KV cache
// create/append/dispose cycles (some failing) must leave the wasm heap where it
// was (a few KB of slack) and must not grow wasm memory.
import { describe, it, before } from "node:test";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError } from "attnkit";
import { randomMatrix, rng, toMatrix, toTensor3 } from "./reference.js";
import { VARIANTS } from "./helpers.js";

const CALLS = 100_000;
const CYCLES = 10_000;
const SLACK = 4096; // bytes: the core keeps the last error message

for (const variant of VARIANTS) {
  describe(`leaks (${variant.name} build)`, () => {
    let attn, heap0, mem0, inputs, decodeCache;

    before(async () => {
      attn = await createAttnkit(variant.options);
      const rand = rng(42);
      const X = toMatrix(randomMatrix(rand, 9, 8));
      const Xb = toTensor3([randomMatrix(rand, 5, 8), randomMatrix(rand, 5, 8)]);
      // Single head: d_k 4, d_v 3. Multi-head: 4 heads, 2 K/V heads, d_k = d_v = 2, W_O [8, 6].
      const w = {
        W_Q: toMatrix(randomMatrix(rand, 8, 4)),
        W_K: toMatrix(randomMatrix(rand, 8, 4)),
        W_V: toMatrix(randomMatrix(rand, 8, 3)),
      };
      const mw = {
        W_Q: toMatrix(randomMatrix(rand, 8, 8)),
        W_K: toMatrix(randomMatrix(rand, 8, 4)),
        W_V: toMatrix(randomMatrix(rand, 8, 4)),
        W_O: toMatrix(randomMatrix(rand, 8, 6)),
      };
      const config = { numHeads: 4, numKvHeads: 2 };
      const Q = toMatrix(randomMatrix(rand, 7, 4)),
        K = toMatrix(randomMatrix(rand, 9, 4)),
        V = toMatrix(randomMatrix(rand, 9, 3));
      const bad = { data: Float32Array.of(1, NaN, 3, 4), rows: 1, cols: 4 };
      inputs = {
        X,
        Xb,
        w,
        mw,
        config,
        Q,
        K,
        V,
        bad,
        mask: randomMatrix(rand, 7, 9).map((r) => r.map((v) => v > -0.5)),
      };
    });

    /** Call number i: a mix of every kind; every 10th call throws. */
    function call(i) {
      const { X, Xb, w, mw, config, Q, K, V, bad, mask } = inputs;
      if (i % 10 === 9) {
        switch (((i / 10) % 8) | 0) {
          case 0:
            return attn.attention(Q, K, bad); // shape (core)
          case 1:
            return attn.selfAttention(X, { ...w, W_Q: bad }); // shape (core)
          case 2:
            return attn.attention(bad, bad, bad); // NaN (core)
          case 3:
            return attn.trace(X, w, { scale: -1 }); // option (JS)
          case 4:
            return attn.multiHeadAttention(Xb, mw, { numHeads: 3 }); // heads (core)
          case 5:
            return attn.attention("Q", K, V); // type (JS)
          case 6:
            return decodeCache.decode(Xb, mw, { numHeads: 4, numKvHeads: 1 }); // heads vs cache (core)
          default:
            return attn.multiHeadAttentionQKV(
              Xb,
              Xb,
              Xb,
              { numHeads: 2 },
              { keyLengths: [1, 2, 3] },
            ); // count (core)
        }
      }
      switch (i % 9) {
        case 0:
          return attn.attention(Q, K, V, { causal: true, boolMask: mask });
        case 1:
          return attn.selfAttention(X, w, { keyLength: 5 });
        case 2:
          return attn.trace(X, w, { causal: true });
        case 3:
          return attn.traceQKV(Q, K, V, { softcap: 2 });
        case 4:
          return attn.multiHeadAttention(Xb, mw, config, { causal: true, keyLengths: [3, 5] });
        case 5:
          return attn.multiHeadAttentionQKV(Xb, Xb, Xb, { numHeads: 2 });
        case 6:
          return attn.parameterFreeAttention(X);
        case 7: {
          if (decodeCache.size + 1 > decodeCache.capacity) decodeCache.reset();
          return decodeCache.decode(
            { data: Xb.data.subarray(0, 16), shape: [2, 1, 8] },
            mw,
            config,
          );
        }
        default:
          return attn.mergeHeads(attn.splitHeads(X, 4));
      }
    }

    it(`${CALLS} mixed calls, every 10th failing, and ${CYCLES} KV cache cycles leave the heap as it was`, (t) => {
      decodeCache = attn.createKVCache({ batch: 2, numKvHeads: 2, dK: 2, dV: 2, capacity: 16 });
      // Warm up: every kind of call (the reused scratch block reaches its size).
      for (let i = 0; i < 200; ++i) {
        try {
          call(i);
        } catch (e) {
          if (!(e instanceof AttnkitError)) throw e;
        }
      }
      attn.attention(inputs.Q, inputs.K, inputs.V); // a success last: the core's last message is short
      heap0 = attn.heapBytesInUse();
      mem0 = attn.memoryBytes();

      const t0 = performance.now();
      let failures = 0,
        checksum = 0;
      for (let i = 0; i < CALLS; ++i) {
        try {
          const r = call(i);
          checksum += r.data ? r.data[0] : r.output.data[0];
          assert.ok(i % 10 !== 9, `call ${i} should have failed`);
        } catch (e) {
          if (!(e instanceof AttnkitError)) throw e;
          assert.ok(i % 10 === 9, `call ${i} failed: ${e.message}`);
          ++failures;
        }
      }
      const tCalls = performance.now() - t0;
      assert.equal(failures, CALLS / 10);
      assert.ok(Number.isFinite(checksum));

      // KV cache cycles: create, append, attend, dispose; every 10th cycle fails
      // somewhere (past capacity, bad config, bad shape or use after dispose).
      const t1 = performance.now();
      const kv = { data: new Float32Array(2 * 3 * 4).fill(0.25), shape: [2, 3, 4] };
      const q = { data: new Float32Array(2 * 3 * 8).fill(0.5), shape: [2, 3, 8] };
      let cycleFailures = 0;
      for (let i = 0; i < CYCLES; ++i) {
        const fail = i % 10 === 9;
        let cache = null;
        try {
          cache = attn.createKVCache(
            fail && i % 40 === 9
              ? { batch: 2, numKvHeads: 2, dK: 2, dV: 2, capacity: 0 }
              : { batch: 2, numKvHeads: 2, dK: 2, dV: 2, capacity: 4 },
          );
          cache.append(kv, kv);
          cache.attend(q, 4);
          if (fail && i % 40 === 19) cache.append(kv, kv); // past capacity
          if (fail && i % 40 === 29) cache.append(q, kv); // bad shape
          cache.dispose();
          if (fail && i % 40 === 39) cache.attend(q, 4); // use after dispose
          assert.ok(!fail, `cycle ${i} should have failed`);
        } catch (e) {
          if (!(e instanceof AttnkitError)) throw e;
          ++cycleFailures;
        } finally {
          cache?.dispose();
        }
      }
      const tCycles = performance.now() - t1;
      assert.equal(cycleFailures, CYCLES / 10);

      attn.attention(inputs.Q, inputs.K, inputs.V);
      const heap1 = attn.heapBytesInUse(),
        mem1 = attn.memoryBytes();
      decodeCache.dispose();
      const heap2 = attn.heapBytesInUse();
      t.diagnostic(
        `${variant.name}: ${CALLS} calls in ${tCalls.toFixed(0)} ms, ${CYCLES} cycles in ${tCycles.toFixed(0)} ms; ` +
          `heap in use ${heap0} -> ${heap1} bytes (${heap2} after disposing the decode cache), memory ${mem0} -> ${mem1} bytes`,
      );
      assert.ok(heap1 - heap0 <= SLACK, `wasm heap in use grew from ${heap0} to ${heap1} bytes`);
      assert.ok(heap2 < heap1, "disposing a cache frees its memory");
      assert.equal(mem1, mem0, "wasm memory did not grow");
    });
  });
}

describe("leaks: KV caches that are never disposed", () => {
  it("are freed by the FinalizationRegistry once garbage-collected", () => {
    // A child process with --expose-gc (node --test cannot pass it to this file).
    const script = `
      import { createAttnkit } from "attnkit";
      const attn = await createAttnkit({ simd: true });
      attn.attention([[1]], [[1]], [[1]]);
      const heap0 = attn.heapBytesInUse();
      (() => {
        const kv = { data: new Float32Array(32), shape: [2, 16] };
        for (let i = 0; i < 1000; ++i) attn.createKVCache({ numKvHeads: 2, dK: 8, dV: 8, capacity: 64 }).append(kv, kv);
      })();
      const heapLive = attn.heapBytesInUse();
      for (let i = 0; i < 50 && attn.heapBytesInUse() > heap0 + 4096; ++i) {
        globalThis.gc();
        await new Promise((r) => setTimeout(r, 10));
      }
      console.log(JSON.stringify({ heap0, heapLive, heapAfter: attn.heapBytesInUse() }));`;
    const root = fileURLToPath(new URL("../..", import.meta.url));
    const r = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], {
      cwd: root,
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    const { heap0, heapLive, heapAfter } = JSON.parse(r.stdout.trim().split("\n").pop());
    assert.ok(
      heapLive > heap0 + 1000 * 2 * 64 * 16 * 4,
      `1000 live caches hold memory (${heap0} -> ${heapLive})`,
    );
    assert.ok(heapAfter - heap0 <= 4096, `heap back to ${heap0} after GC, got ${heapAfter}`);
  });
});
