// attnkit/worker's reused buffers: a module call's copied inputs of 4 KB or
// more go to the worker in buffers the client keeps and gets back with each
// answer. The caller's arrays stay untouched, results equal the synchronous
// call's bit for bit over many calls, options.out still gets the result, an
// error gives the buffers back (the next calls work), and transfer: true
// still moves the caller's own arrays. Queued calls hold no copies: a call
// copies its inputs as it leaves the queue.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError } from "attnkit";
import { createAttnkitWorker } from "attnkit/worker";
import { assertIdentical } from "./helpers.js";

function random(rows, cols, seed) {
  let s = seed >>> 0;
  const data = Float32Array.from({ length: rows * cols }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
  return { data, rows, cols };
}

describe("attnkit/worker: copied inputs in reused buffers", () => {
  let attn, worker;
  before(async () => {
    attn = await createAttnkit({ simd: true });
    worker = await createAttnkitWorker({ simd: true });
  });
  after(async () => {
    await worker?.dispose();
    attn?.dispose();
  });

  it("leaves the caller's arrays as they were and gives the synchronous numbers", async () => {
    for (const [T, d] of [
      [64, 64], // 16 KB inputs: reused buffers
      [4, 8], // 128 B inputs: structured clone
      [100, 33], // a size between two of the buffers' powers of two
    ]) {
      const [Q, K, V, dO] = [1, 2, 3, 4].map((s) => random(T, d, s));
      const copies = [Q, K, V, dO].map((m) => m.data.slice());
      const want = attn.attention(Q, K, V, { causal: true });
      const grads = attn.attentionBackward(Q, K, V, dO);
      for (let i = 0; i < 30; ++i) {
        assertIdentical(
          await worker.attention(Q, K, V, { causal: true }),
          want,
          `T=${T} call ${i}`,
        );
      }
      const g = await worker.attentionBackward(Q, K, V, dO);
      for (const name of ["dQ", "dK", "dV"]) assertIdentical(g[name], grads[name], name);
      [Q, K, V, dO].forEach((m, i) =>
        assertIdentical(m, { data: copies[i] }, `input ${i} untouched`),
      );
    }
  });

  it("writes options.out, and gives the buffers back after an error", async () => {
    const [Q, K, V] = [1, 2, 3].map((s) => random(64, 64, s));
    const want = attn.attention(Q, K, V);
    const out = new Float32Array(64 * 64);
    const r = await worker.attention(Q, K, V, { out });
    assert.equal(r.data, out);
    assertIdentical(r, want, "options.out");
    const bad = { data: Q.data.slice(), rows: 64, cols: 64 };
    bad.data[100] = NaN;
    for (let i = 0; i < 5; ++i) {
      await assert.rejects(worker.attention(bad, K, V), (e) => {
        assert.ok(e instanceof AttnkitError);
        assert.equal(e.parameter, "Q");
        assert.equal(e.code, "non_finite");
        return true;
      });
      assertIdentical(await worker.attention(Q, K, V), want, `after error ${i}`);
    }
    assert.equal(bad.data.length, 64 * 64, "the caller's array stays");
  });

  it("transfer: true moves the caller's own arrays", async () => {
    const [Q, K, V] = [1, 2, 3].map((s) => random(64, 64, s));
    const want = attn.attention(Q, K, V);
    const r = await worker.with({ transfer: true }).attention(Q, K, V);
    assertIdentical(r, want, "transferred");
    assert.equal(Q.data.length, 0, "Q moved");
  });

  it("queued calls hold no copies: a call copies its inputs as it leaves the queue", async () => {
    const T = 512,
      d = 64;
    const [Q, K, V] = [1, 2, 3].map((s) => random(T, d, s));
    const want = attn.attention(Q, K, V, { causal: true });
    await worker.attention(Q, K, V, { causal: true }); // the pool's buffers, once
    const calls = 200; // 384 KiB of inputs each: 75 MiB if each queued call held its copies
    const before = process.memoryUsage().arrayBuffers;
    const results = [];
    for (let i = 0; i < calls; ++i) results.push(worker.attention(Q, K, V, { causal: true }));
    const queued = process.memoryUsage().arrayBuffers - before;
    assert.ok(
      queued < 4 << 20,
      `${(queued / 2 ** 20).toFixed(1)} MiB held by ${calls} queued calls`,
    );
    for (const r of await Promise.all(results)) assertIdentical(r, want, "queued call");
    // An array changed after its call was made but before the call left the
    // queue is read as it is then (docs/api-js.md, "Async and workers").
    const running = worker.attention(Q, K, V);
    const late = { data: Q.data.slice(), rows: T, cols: d };
    const lateCall = worker.attention(late, K, V);
    late.data.set(K.data);
    await running;
    assertIdentical(await lateCall, attn.attention(K, K, V), "read when sent");
  });
});
