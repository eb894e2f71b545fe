// attnkit/worker in Chromium: a plain page served from the repository imports
// dist/worker.mjs, whose module Web Worker (dist/worker-host.mjs) loads the
// SIMD128 build. The async twins give the synchronous calls' numbers, errors
// keep class, code and parameter, calls run in order, a queued call is
// cancelled, terminate() ends a running one, transfer detaches only when
// asked, a KV cache works through the worker, and the page stays responsive
// while a T = 16384 call runs (its longest main-thread task is reported).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { ARGS, CHROMIUM } from "./lib/launch.mjs";
import { root } from "./lib/paths.mjs";
import { serve } from "./lib/server.mjs";

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>attnkit/worker</title></head><body><script type="module">
import { createAttnkitWorker, AttnkitError, AttnkitTypeError } from "/dist/worker.mjs";
import createAttnkit from "/dist/attnkit.mjs";
window.attnkit = { createAttnkitWorker, createAttnkit, AttnkitError, AttnkitTypeError };
window.ready = true;
</script></body></html>`;

describe("attnkit/worker in Chromium", () => {
  let server, browser, page;
  const problems = [];
  before(async () => {
    server = await serve(root);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    page = await browser.newPage();
    page.on("pageerror", (e) => problems.push(e.message));
    page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
    await page.route("**/async.html", (route) =>
      route.fulfill({ body: PAGE, contentType: "text/html" }),
    );
    await page.goto(`${server.url}async.html`);
    await page.waitForFunction(() => window.ready === true);
    await page.evaluate(async () => {
      const { createAttnkitWorker, createAttnkit } = window.attnkit;
      window.attn = await createAttnkit({ simd: true });
      window.worker = await createAttnkitWorker({ simd: true });
      window.random = (rows, cols, seed) => {
        let s = seed;
        const data = Float32Array.from({ length: rows * cols }, () => {
          s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
          return s / 2 ** 31 - 1;
        });
        return { data, rows, cols };
      };
    });
  });
  after(async () => {
    await browser?.close();
    server?.close();
  });

  it("loads in a module worker; the async twins give the synchronous numbers", async () => {
    const r = await page.evaluate(async () => {
      const { attn, worker, random } = window;
      const [Q, K, V, dO] = [1, 2, 3, 4].map((s) => random(6, 4, s));
      const t = (m) => ({ data: m.data, shape: [1, 6, 4] });
      const pairs = [
        ["attention", [Q, K, V, { causal: true }]],
        ["traceQKV", [Q, K, V]],
        ["attentionBackward", [Q, K, V, dO]],
        ["multiHeadAttentionQKV", [t(Q), t(K), t(V), { numHeads: 2 }, { present: true }]],
        ["softmax", [Q]],
      ];
      const out = { simd: worker.simd, target: worker.target, differ: [] };
      for (const [name, args] of pairs) {
        const a = JSON.stringify(attn[name](...args), (k, v) =>
          ArrayBuffer.isView(v) ? Array.from(v) : v,
        );
        const b = JSON.stringify(await worker[name](...args), (k, v) =>
          ArrayBuffer.isView(v) ? Array.from(v) : v,
        );
        if (a !== b) out.differ.push(name);
      }
      return out;
    });
    assert.deepEqual(r, { simd: true, target: "WASM", differ: [] });
  });

  it("errors keep class, code and parameter; calls run in order", async () => {
    const r = await page.evaluate(async () => {
      const { worker, random, attnkit } = window;
      const Q = random(6, 4, 1);
      const e1 = await worker.attention(Q, Q, random(5, 4, 2)).catch((e) => e);
      const e2 = await worker.attention(Q, "K", Q).catch((e) => e);
      const order = [];
      await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          worker.attention(random(2 + i, 4, i + 1), Q, Q).then((m) => order.push([i, m.rows])),
        ),
      );
      return {
        e1: [e1 instanceof attnkit.AttnkitError, e1.code, e1.parameter],
        e2: [
          e2 instanceof attnkit.AttnkitTypeError,
          e2 instanceof TypeError,
          e2.code,
          e2.parameter,
        ],
        order,
      };
    });
    assert.deepEqual(r.e1, [true, "shape_mismatch", "V"]);
    assert.deepEqual(r.e2, [true, true, "type", "K"]);
    assert.deepEqual(
      r.order,
      Array.from({ length: 12 }, (_, i) => [i, 2 + i]),
    );
  });

  it("cancel a queued call; terminate a running one and start again; transfer only when asked", async () => {
    const r = await page.evaluate(async () => {
      const { worker, random, attnkit } = window;
      const big = random(2048, 64, 1);
      const Q = random(6, 4, 1);
      const running = worker.attention(big, big, big);
      const c = new AbortController();
      const queued = worker.with({ signal: c.signal }).attention(Q, Q, Q);
      c.abort();
      const cancelled = await queued.catch((e) => [e.name, e.code]);
      const ran = (await running).rows;
      // Long enough (T = 8192: 16 times the work of T = 2048) to be running
      // still when terminate comes, on a fast core too.
      const longest = random(8192, 64, 4);
      const w = await attnkit.createAttnkitWorker({ simd: true });
      const long = w.attention(longest, longest, longest);
      await new Promise((res) => setTimeout(res, 20));
      w.terminate();
      const terminated = await long.catch((e) => [e.name, e.code, e.parameter]);
      const w2 = await attnkit.createAttnkitWorker({ simd: true });
      const again = (await w2.attention(Q, Q, Q)).rows;
      await w2.dispose();
      const copied = random(6, 4, 2);
      await worker.attention(copied, copied, copied);
      const moved = random(6, 4, 3);
      await worker.with({ transfer: true }).attention(moved, moved, moved);
      return {
        cancelled,
        ran,
        terminated,
        again,
        copiedLength: copied.data.length,
        movedLength: moved.data.length,
      };
    });
    assert.deepEqual(r, {
      cancelled: ["AbortError", "aborted"],
      ran: 2048,
      terminated: ["AbortError", "aborted", "terminate"],
      again: 6,
      copiedLength: 24,
      movedLength: 0,
    });
  });

  it("a KV cache through the worker decodes as the synchronous one", async () => {
    const r = await page.evaluate(async () => {
      const { attn, worker, random } = window;
      const config = { numKvHeads: 1, dK: 4, dV: 4, capacity: 8 };
      const w = { W_Q: random(8, 4, 1), W_K: random(8, 4, 2), W_V: random(8, 4, 3) };
      const sync = attn.createKVCache(config);
      const cache = await worker.createKVCache(config);
      let same = true;
      for (let t = 0; t < 3; ++t) {
        const x = { data: random(1, 8, 10 + t).data, shape: [1, 1, 8] };
        const a = sync.decode(x, w, { numHeads: 1, dK: 4 }).data;
        const b = (await cache.decode(x, w, { numHeads: 1, dK: 4 })).data;
        same &&= a.every((v, i) => v === b[i]);
      }
      const size = cache.size;
      await cache.dispose();
      sync.dispose();
      return { same, size };
    });
    assert.deepEqual(r, { same: true, size: 3 });
  });

  it("the page stays responsive while a T = 16384 call runs in the worker", async () => {
    const r = await page.evaluate(async () => {
      const { worker, random } = window;
      const T = 16384,
        d = 64;
      const [Q, K, V] = [1, 2, 3].map((s) => random(T, d, s));
      const longTasks = [];
      const observer = new PerformanceObserver((list) => {
        for (const e of list.getEntries()) longTasks.push(e.duration);
      });
      observer.observe({ type: "longtask" });
      // A heartbeat: the main thread's timers while the worker computes.
      let beats = 0,
        last = performance.now(),
        gap = 0;
      const timer = setInterval(() => {
        const now = performance.now();
        gap = Math.max(gap, now - last);
        last = now;
        ++beats;
      }, 10);
      const start = performance.now();
      const out = await worker.attention(Q, K, V, { causal: true });
      const ms = performance.now() - start;
      clearInterval(timer);
      await new Promise((res) => setTimeout(res, 100)); // the observer's last entries
      observer.disconnect();
      return { rows: out.rows, ms, beats, gap, longTasks };
    });
    const longest = Math.max(0, ...r.longTasks);
    console.log(
      `T = 16384, d = 64 in the worker: ${r.ms.toFixed(0)} ms; main thread: ${r.beats} timer ` +
        `beats, largest gap ${r.gap.toFixed(1)} ms, tasks over 50 ms: ${r.longTasks.length}` +
        (r.longTasks.length ? ` (longest ${longest.toFixed(1)} ms)` : ""),
    );
    assert.equal(r.rows, 16384);
    assert.ok(r.beats > 0, "the main thread ran its timers while the worker computed");
    assert.deepEqual(problems, []);
  });
});
