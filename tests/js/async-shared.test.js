// attnkit/worker's two paths in Node: the module's copied calls go through
// shared memory (SharedArrayBuffer, woken through Atomics) when the worker is
// idle, and by message otherwise or where the platform lacks
// SharedArrayBuffer or Atomics.waitAsync (simulated here by hiding them while
// the worker is made). Both give the synchronous calls' numbers and errors, in
// order; cancel, terminate and transfer behave the same; an answer larger than
// the block comes by message and the block grows once; many calls leak
// nothing. Which path a call took is seen in the messages posted to the worker.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Worker } from "node:worker_threads";
import createAttnkit from "attnkit";
import { createAttnkitWorker } from "attnkit/worker";

/** A seeded [rows, cols] matrix of values in [-1, 1). */
function random(rows, cols, seed) {
  let s = seed >>> 0 || 1;
  const data = new Float32Array(rows * cols);
  for (let i = 0; i < data.length; ++i) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = s / 2 ** 31 - 1;
  }
  return { data, rows, cols };
}

/** A worker made while `hide` (a global's property) is missing: the platform without it. */
async function workerWithout(object, key) {
  const saved = Object.getOwnPropertyDescriptor(object, key);
  delete object[key];
  try {
    return await createAttnkitWorker({ simd: true });
  } finally {
    Object.defineProperty(object, key, saved);
  }
}

/**
 * The messages posted to any worker_threads Worker while `fn` runs, by their
 * op (but "forget", which a collected proxy sends at any time).
 */
async function postedDuring(fn) {
  const post = Worker.prototype.postMessage;
  const ops = [];
  Worker.prototype.postMessage = function (message, transfer) {
    if (message?.op !== "forget") ops.push(message?.op);
    return post.call(this, message, transfer);
  };
  try {
    await fn();
  } finally {
    Worker.prototype.postMessage = post;
  }
  return ops;
}

const T = 64,
  D = 16;
const Q = random(T, D, 1),
  K = random(T, D, 2),
  V = random(T, D, 3),
  dO = random(T, D, 4);

describe("attnkit/worker: the shared-memory path and the message path (Node)", () => {
  let attn, shared, noWaitAsync, noShared;
  before(async () => {
    attn = await createAttnkit({ simd: true });
    shared = await createAttnkitWorker({ simd: true });
    noWaitAsync = await workerWithout(Atomics, "waitAsync");
    noShared = await workerWithout(globalThis, "SharedArrayBuffer");
  });
  after(async () => {
    for (const w of [shared, noWaitAsync, noShared]) await w?.dispose();
  });

  it("an idle worker's copied calls post no message (but the first, which sends the block)", async () => {
    const ops = await postedDuring(async () => {
      for (let i = 0; i < 10; ++i) {
        assert.deepStrictEqual(await shared.attention(Q, K, V), attn.attention(Q, K, V));
      }
    });
    assert.ok(ops.length <= 1, `posted ${JSON.stringify(ops)}`);
    assert.ok(
      ops.every((op) => op === "shared"),
      `posted ${JSON.stringify(ops)}`,
    );
  });

  it("without Atomics.waitAsync or SharedArrayBuffer every call goes by message", async () => {
    for (const w of [noWaitAsync, noShared]) {
      const ops = await postedDuring(async () => {
        for (let i = 0; i < 5; ++i) {
          assert.deepStrictEqual(await w.attention(Q, K, V), attn.attention(Q, K, V));
        }
      });
      assert.deepEqual(ops, ["call", "call", "call", "call", "call"]);
    }
  });

  it("every path gives the synchronous numbers, errors and outs", async () => {
    const calls = [
      ["attention", [Q, K, V, { causal: true, scale: 0.25 }]],
      ["traceQKV", [Q, K, V, { causal: true }]],
      ["attentionBackward", [Q, K, V, dO, { causal: true }]],
      ["matmul", [Q, random(D, 5, 9)]],
      ["softmax", [Q]],
      ["splitHeads", [Q, 4]],
      // Errors, with values JSON does not keep as they are.
      ["attention", [Q, K, V, { scale: NaN }]],
      ["attention", [Q, K, V, { scale: -Infinity }]],
      ["attention", [Q, K, V, { scale: -0 }]],
      ["attention", [Q, K, V, { sclae: undefined }]],
      ["attention", [Q, K, random(T + 1, D, 5)]],
      ["attention", [Q, [1, 2], V]],
      ["attention", [Q, K, V, { causal: "yes" }]],
      [
        "softmax",
        [
          [
            [1, 2],
            [3, undefined],
          ],
        ],
      ],
    ];
    for (const w of [shared, noWaitAsync, noShared]) {
      for (const [name, args] of calls) {
        let want;
        try {
          want = attn[name](...args);
        } catch (e) {
          want = e;
        }
        const got = await w[name](...args).catch((e) => e);
        if (want instanceof Error) {
          assert.ok(got instanceof Error, `${name}: rejects`);
          for (const key of ["name", "message", "code", "parameter"]) {
            assert.equal(got[key], want[key], `${name} ${JSON.stringify(args[3])}: ${key}`);
          }
        } else {
          assert.deepStrictEqual(got, want, name);
        }
      }
      // options.out: the result written into the caller's array.
      const out = new Float32Array(T * D);
      const r = await w.attention(Q, K, V, { out });
      assert.equal(r.data, out);
      assert.deepEqual(out, attn.attention(Q, K, V).data);
    }
  });

  it("results are the caller's own arrays, not views of reused memory", async () => {
    const a = await shared.attention(Q, K, V);
    const b = await shared.attention(K, Q, V);
    assert.ok(a.data.buffer instanceof ArrayBuffer, "not a SharedArrayBuffer");
    assert.equal(a.data.byteOffset, 0);
    assert.equal(a.data.buffer.byteLength, T * D * 4);
    assert.deepStrictEqual(a, attn.attention(Q, K, V), "unchanged by the next call");
    assert.deepStrictEqual(b, attn.attention(K, Q, V));
  });

  it("an answer larger than the block comes by message; the block grows once", async () => {
    const w = await createAttnkitWorker({ simd: true });
    // traceQKV's answer holds T x T weights: far larger than its inputs.
    const [q, k, v] = [1, 2, 3].map((s) => random(512, 4, s));
    const want = attn.traceQKV(q, k, v);
    const ops = await postedDuring(async () => {
      for (let i = 0; i < 4; ++i) assert.deepStrictEqual(await w.traceQKV(q, k, v), want);
    });
    // The first call sends the block; its answer does not fit; the second
    // sends a block with room for it; the rest post nothing.
    assert.deepEqual(ops, ["shared", "shared"]);
    await w.dispose();
  });

  it("calls made while one runs go by message, in order, mixed with held objects' calls", async () => {
    const cache = await shared.createKVCache({ numKvHeads: 1, dK: D, dV: D, capacity: 64 });
    const made = [];
    const settled = [];
    const calls = [];
    for (let i = 0; i < 20; ++i) {
      const q = random(2 + (i % 7) * 40, D, 100 + i);
      const want = attn.attention(q, K, V);
      made.push(`attention ${i}`);
      calls.push(
        shared.attention(q, K, V).then((got) => {
          settled.push(`attention ${i}`);
          assert.deepStrictEqual(got, want, `call ${i}`);
        }),
      );
      if (i % 5 === 0) {
        const kv = { data: random(1, D, i).data, shape: [1, 1, D] };
        made.push(`append ${i}`);
        calls.push(cache.append(kv, kv).then(() => settled.push(`append ${i}`)));
      }
    }
    await Promise.all(calls);
    assert.deepEqual(settled, made, "settled in the order made");
    assert.equal(cache.size, 4);
    // The next awaited call goes through shared memory again.
    const ops = await postedDuring(() => shared.attention(Q, K, V));
    assert.deepEqual(ops, []);
    await cache.dispose();
  });

  it("a cancelled call queued behind a shared one rejects; the worker serves on", async () => {
    const big = random(1024, 64, 7);
    const running = shared.attention(big, big, big);
    const controller = new AbortController();
    const queued = shared.with({ signal: controller.signal }).attention(Q, K, V);
    const next = shared.attention(Q, K, V);
    controller.abort();
    const e = await queued.catch((error) => error);
    assert.equal(e.name, "AbortError");
    assert.equal(e.parameter, "options.signal");
    assert.equal((await running).rows, 1024);
    assert.deepStrictEqual(await next, attn.attention(Q, K, V));
  });

  it("terminate() during a shared call rejects it; a new worker serves", async () => {
    const w = await createAttnkitWorker({ simd: true });
    const big = random(4096, 64, 2);
    const running = w.attention(big, big, big);
    await new Promise((r) => setTimeout(r, 20));
    w.terminate();
    const e = await running.catch((error) => error);
    assert.equal(e.name, "AbortError");
    assert.equal(e.parameter, "terminate");
    const again = await createAttnkitWorker({ simd: true });
    assert.deepStrictEqual(await again.attention(Q, K, V), attn.attention(Q, K, V));
    await again.dispose();
  });

  it("terminate() right after a call, with the worker waiting for the next, ends its thread", async () => {
    const w = await createAttnkitWorker({ simd: true });
    await w.attention(Q, K, V);
    const terminate = Worker.prototype.terminate;
    const exits = [];
    Worker.prototype.terminate = function () {
      const exited = terminate.call(this);
      exits.push(exited);
      return exited;
    };
    try {
      w.terminate();
    } finally {
      Worker.prototype.terminate = terminate;
    }
    assert.equal(exits.length, 1);
    assert.equal(typeof (await exits[0]), "number", "the thread exited");
    const e = await w.attention(Q, K, V).catch((error) => error);
    assert.equal(e.parameter, "terminate");
  });

  it("copied inputs are left as they were; transfer detaches them only when asked", async () => {
    const q = random(T, D, 1),
      k = random(T, D, 2),
      v = random(T, D, 3);
    const copies = [q.data.slice(), k.data.slice(), v.data.slice()];
    const want = attn.attention(q, k, v);
    assert.deepStrictEqual(await shared.attention(q, k, v), want);
    assert.deepEqual([q.data, k.data, v.data], copies);
    // The caller changes its arrays right after the call: the call has its values.
    const p = shared.attention(q, k, v);
    q.data.fill(0);
    assert.deepStrictEqual(await p, want);
    q.data.set(copies[0]);
    const moved = await shared.with({ transfer: true }).attention(q, k, v);
    assert.deepStrictEqual(moved, want);
    assert.deepEqual([q.data.length, k.data.length, v.data.length], [0, 0, 0]);
  });

  it("many calls: the worker's heap stays, and no block is sent again", async () => {
    const w = await createAttnkitWorker({ simd: true });
    const round = async () => {
      for (let i = 0; i < 500; ++i) {
        await w.attention(Q, K, V, { causal: true });
        await w.attention(Q, K, random(T + 1, D, 1)).catch(() => {});
      }
    };
    await round();
    const heap = await w.heapBytesInUse();
    const memory = await w.memoryBytes();
    const ops = await postedDuring(async () => {
      for (let r = 0; r < 4; ++r) await round();
    });
    assert.deepEqual(ops, []);
    assert.equal(await w.heapBytesInUse(), heap);
    assert.equal(await w.memoryBytes(), memory);
    await w.dispose();
  });
});
