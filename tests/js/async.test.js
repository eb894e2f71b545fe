// attnkit/worker in Node (a worker_threads Worker): every call of the
// synchronous API through the worker returns the same numbers (the same build,
// so bit for bit), errors keep their class, code and parameter, calls run in
// order, a queued call can be cancelled, terminate() ends a running one, inputs
// are moved only when asked, KV caches and models are usable through the
// worker, and its heap does not grow over many calls.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath, pathToFileURL } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";
import { Tensor as OrtTensor } from "onnxruntime-common";
import * as tf from "@tensorflow/tfjs-core";
import "@tensorflow/tfjs-backend-cpu";
import createAttnkit, { AttnkitError, AttnkitTypeError } from "attnkit";
import { createAttnkitWorker } from "attnkit/worker";
import { assertClose } from "./helpers.js";
import { ONE_BLOCK_GPT } from "./lib/models.js";
import * as ref from "./reference.js";

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
const tensor = (m, shape) => ({ data: m.data, shape });
const rowsOf = (m) =>
  Array.from({ length: m.rows }, (_, r) =>
    Array.from(m.data.subarray(r * m.cols, (r + 1) * m.cols)),
  );

const T = 6,
  D = 4;
const Q = random(T, D, 1),
  K = random(T, D, 2),
  V = random(T, D, 3),
  dO = random(T, D, 4),
  X = random(T, 8, 5);
const W = { W_Q: random(8, D, 6), W_K: random(8, D, 7), W_V: random(8, D, 8) };
const MW = { ...W, W_O: random(D, 8, 9) };
const HEADS = { numHeads: 2, dK: 2 };
const Q3 = tensor(Q, [1, T, D]),
  K3 = tensor(K, [1, T, D]),
  V3 = tensor(V, [1, T, D]),
  dO3 = tensor(dO, [1, T, D]),
  X3 = tensor(X, [1, T, 8]),
  dX3 = tensor(random(T, 8, 10), [1, T, 8]);
const TASK = { kind: "copy", length: 3, vocabSize: 8 };

// Every call of the synchronous API but those that make held objects (tested
// below) and the memory counters, with arguments.
const CALLS = {
  attention: [Q, K, V, { causal: true }],
  selfAttention: [X, W, { softcap: 5 }],
  crossAttention: [X, random(4, 8, 11), W],
  parameterFreeAttention: [X, { causal: true }],
  trace: [X, W],
  traceQKV: [Q, K, V, { causal: true }],
  traceBackward: [X, W, dO],
  traceBackwardQKV: [Q, K, V, dO],
  attentionForTraining: [Q, K, V, { causal: true }],
  attentionBackward: [Q, K, V, dO, { causal: true }],
  selfAttentionBackward: [X, W, dO],
  multiHeadAttention: [X3, MW, HEADS, { causal: true }],
  multiHeadAttentionQKV: [Q3, K3, V3, HEADS, { present: true, scores: "weights" }],
  multiHeadAttentionQKVForTraining: [Q3, K3, V3, HEADS],
  multiHeadAttentionQKVBackward: [Q3, K3, V3, HEADS, dO3],
  multiHeadAttentionBackward: [X3, MW, HEADS, dX3],
  matmul: [Q, random(D, 3, 12)],
  softmax: [rowsOf(Q)],
  splitHeads: [X, 2],
  mergeHeads: [tensor(X, [2, T, 4])],
  makeBatch: [TASK, { batch: 2, seed: 3 }],
  taskSeqLen: [TASK],
  taskMinVocab: [TASK],
};
/** The error `fn` throws. */
function thrown(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  assert.fail("expected a throw");
}

/** Asserts `got` (through the worker) is `want` (the synchronous call's): class, name, message, code, parameter. */
function assertSameError(got, want, label) {
  assert.ok(
    want instanceof AttnkitError,
    `${label}: the synchronous error is an AttnkitError: ${want}`,
  );
  assert.ok(got instanceof AttnkitError, `${label}: ${got}`);
  assert.equal(got instanceof AttnkitTypeError, want instanceof AttnkitTypeError, label);
  assert.equal(got instanceof RangeError, want instanceof RangeError, label);
  for (const key of ["name", "message", "code", "parameter"]) {
    assert.equal(got[key], want[key], `${label}: ${key}`);
  }
}

/** The rejection of `promise`. */
const rejection = (promise) =>
  promise.then(
    () => assert.fail("expected a rejection"),
    (e) => e,
  );

// A full collection in this thread, so that dropped proxies are finalized.
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc");

/**
 * Collects the dropped proxies: their finalizers run after a collection, as
 * tasks of their own; then a call on `worker` waits for it to have handled
 * their messages.
 */
async function collect(worker) {
  for (let i = 0; i < 10; ++i) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  await worker.taskSeqLen({ kind: "copy", length: 3, vocabSize: 8 });
}

const HELD = [
  "createKVCache",
  "packWeights",
  "createModel",
  "loadModel",
  "createTrainer",
  "createTaskGenerator",
  "createTokenizer",
  "createTextDataset",
  "referenceLosses",
  "headScores",
];
const COUNTERS = ["memoryBytes", "heapBytesInUse", "dispose"];
// Through the worker in checkpoint.test.js.
const CHECKPOINTS = ["openCheckpoint", "checkpointInfo"];

// The synchronous module and the worker of "attnkit/worker in Node", set by its
// before hook and used by the tests of its nested describes.
let attn, worker;

describe("attnkit/worker in Node", () => {
  before(async () => {
    attn = await createAttnkit({ simd: true, model: true });
    worker = await createAttnkitWorker({ simd: true, model: true });
  });
  after(() => worker?.dispose());

  describe("the calls and their results", callTests);
  describe("cancelling, terminating and transferring", cancelAndTransferTests);
  describe("objects held in the worker", heldObjectTests);
  describe("options and tensors", optionsAndTensorTests);
  describe("arguments and proxies", proxyTests);
});

/** Every call's twin: its results, its errors and their order. */
function callTests() {
  it("loads the build the options pick and tells what it loaded", () => {
    for (const key of ["simd", "threads", "model", "version", "target"]) {
      assert.equal(worker[key], attn[key], key);
    }
  });

  it("has an async twin of every synchronous call, and nothing else but with and terminate", () => {
    const syncCalls = Object.keys(attn).filter((k) => typeof attn[k] === "function");
    const asyncCalls = Object.keys(worker).filter((k) => typeof worker[k] === "function");
    assert.deepEqual(asyncCalls.sort(), [...syncCalls, "with", "terminate"].sort());
    assert.deepEqual(
      syncCalls.filter(
        (k) =>
          !(k in CALLS) && !HELD.includes(k) && !COUNTERS.includes(k) && !CHECKPOINTS.includes(k),
      ),
      [],
      "every call is in CALLS (same numbers) or tested below",
    );
  });

  for (const [name, args] of Object.entries(CALLS)) {
    it(`${name}: the same result as the synchronous call`, async () => {
      const want = attn[name](...args);
      const got = await worker[name](...args);
      assert.deepStrictEqual(got, want);
    });
  }

  it("attention through the worker agrees with the float64 reference", async () => {
    const got = await worker.attention(Q, K, V, { causal: true });
    assertClose(got, ref.attention(rowsOf(Q), rowsOf(K), rowsOf(V), { causal: true }), "attention");
    assert.deepEqual(got.shape, [T, D]);
  });

  it("errors arrive as the same classes with the same message, code and parameter", async () => {
    const cases = [
      ["attention", [Q, K, random(T + 1, D, 1)]],
      ["attention", [Q, K, V, { scale: -1 }]],
      ["attention", [Q, "K", V]],
      ["selfAttention", [X, { W_Q: W.W_Q, W_K: W.W_K }]],
      ["attention", [Q, K, V, { sclae: 1 }]],
      ["multiHeadAttention", [X3, MW, { numHeads: 3 }]],
      ["createKVCache", [{ numKvHeads: 1, dK: 0, dV: 2, capacity: 4 }]],
    ];
    for (const [name, args] of cases) {
      let want;
      try {
        attn[name](...args);
      } catch (e) {
        want = e;
      }
      assert.ok(want, `${name} throws`);
      const got = await worker[name](...args).then(
        () => assert.fail(`${name} resolved`),
        (e) => e,
      );
      assert.equal(got.constructor.name, want.constructor.name);
      assert.equal(got instanceof AttnkitError, true);
      assert.equal(got instanceof AttnkitTypeError, want instanceof AttnkitTypeError);
      assert.equal(got instanceof TypeError, want instanceof TypeError);
      assert.equal(got instanceof RangeError, want instanceof RangeError);
      for (const key of ["name", "message", "code", "parameter"]) {
        assert.equal(got[key], want[key], `${name}: ${key}`);
      }
    }
    // The worker serves on after errors.
    assert.deepStrictEqual(await worker.attention(Q, K, V), attn.attention(Q, K, V));
  });

  it("runs calls in the order they were made, each with its own result", async () => {
    const order = [];
    const calls = Array.from({ length: 24 }, (_, i) => {
      const q = random(3 + (i % 5), D, 100 + i);
      const want = attn.attention(q, K, V);
      return worker.attention(q, K, V).then((got) => {
        order.push(i);
        assert.deepStrictEqual(got, want, `call ${i}`);
      });
    });
    await Promise.all(calls);
    assert.deepEqual(order, [...Array(24).keys()]);
  });
}

/** Signals, terminate(), transferred inputs and options.out. */
function cancelAndTransferTests() {
  it("a queued call cancelled by its signal rejects with an AbortError; the worker serves on", async () => {
    const big = random(1024, 64, 1);
    const running = worker.attention(big, big, big);
    const controller = new AbortController();
    const queued = worker.with({ signal: controller.signal }).attention(Q, K, V);
    const next = worker.attention(Q, K, V);
    controller.abort();
    const e = await queued.then(
      () => assert.fail("the cancelled call resolved"),
      (error) => error,
    );
    assert.equal(e.name, "AbortError");
    assert.equal(e.code, "aborted");
    assert.equal(e.parameter, "options.signal");
    assert.ok(e instanceof AttnkitError);
    assert.equal(e.cause?.name, "AbortError", "the signal's reason as the cause");
    assert.equal((await running).rows, 1024, "the running call finishes");
    assert.deepStrictEqual(await next, attn.attention(Q, K, V), "the next call runs");
    // A signal aborted before the call: rejected at once, nothing sent.
    const before = await worker
      .with({ signal: AbortSignal.abort() })
      .attention(Q, K, V)
      .catch((error) => error);
    assert.equal(before.name, "AbortError");
    // A signal aborted once its call runs: the call finishes (terminate() ends it).
    const late = new AbortController();
    const started = worker.with({ signal: late.signal }).attention(big, big, big);
    await new Promise((r) => setTimeout(r, 5));
    late.abort();
    assert.equal((await started).rows, 1024);
  });

  it("terminate() ends the running call and the queued ones; a new worker serves again", async () => {
    const w = await createAttnkitWorker({ simd: true });
    const big = random(4096, 64, 2);
    const running = w.attention(big, big, big);
    const queued = w.attention(Q, K, V);
    await new Promise((r) => setTimeout(r, 20));
    w.terminate();
    for (const [what, p] of [
      ["running", running],
      ["queued", queued],
    ]) {
      const e = await p.then(
        () => assert.fail(`the ${what} call resolved`),
        (error) => error,
      );
      assert.equal(e.name, "AbortError", what);
      assert.equal(e.code, "aborted", what);
      assert.equal(e.parameter, "terminate", what);
    }
    const later = await w.attention(Q, K, V).catch((e) => e);
    assert.ok(later instanceof AttnkitError, String(later));
    assert.equal(later.code, "disposed", "a terminated worker takes no more calls");
    assert.equal(later.parameter, "attnkit");
    w.terminate(); // twice is safe
    const again = await createAttnkitWorker({ simd: true });
    assert.deepStrictEqual(await again.attention(Q, K, V), attn.attention(Q, K, V));
    await again.dispose();
  });

  it("copies inputs by default; with transfer the caller's buffers are moved (detached)", async () => {
    const q = random(T, D, 1),
      k = random(T, D, 2),
      v = random(T, D, 3);
    const want = attn.attention(q, k, v);
    const copies = [q.data.slice(), k.data.slice(), v.data.slice()];
    assert.deepStrictEqual(await worker.attention(q, k, v), want);
    assert.deepEqual([q.data, k.data, v.data], copies, "copied: the caller's arrays unchanged");

    const moved = await worker.with({ transfer: true }).attention(q, k, v);
    assert.deepStrictEqual(moved, want);
    for (const m of [q, k, v]) {
      assert.equal(m.data.buffer.byteLength, 0, "moved: detached");
      assert.equal(m.data.length, 0);
    }

    // A worker that moves by default, and a call that copies.
    const w = await createAttnkitWorker({ simd: true, transfer: true });
    const a = random(T, D, 1);
    assert.deepStrictEqual(
      await w.with({ transfer: false }).attention(a, a, a),
      attn.attention(a, a, a),
    );
    assert.equal(a.data.length, T * D, "with({ transfer: false }) copies");
    await w.attention(a, a, a);
    assert.equal(a.data.length, 0, "transfer: true moves");
    await w.dispose();
  });

  it("a detached input is refused naming it, as the synchronous call does", async () => {
    const q = random(T, D, 1);
    structuredClone(q.data, { transfer: [q.data.buffer] });
    const got = await worker.attention(q, K, V).catch((error) => error);
    assert.equal(got.parameter, "Q.data");
    assert.equal(got.code, "shape_mismatch");
  });

  it("options.out: the result in the caller's array (copied), or moved and back (transfer)", async () => {
    const want = attn.attention(Q, K, V);
    const out = new Float32Array(T * D);
    const r = await worker.attention(Q, K, V, { out });
    assert.equal(r.data, out, "the caller's array is the result's data");
    assert.deepEqual(out, want.data);

    const out2 = new Float32Array(T * D);
    const [q, k, v] = [1, 2, 3].map((seed) => random(T, D, seed));
    const moved = await worker.with({ transfer: true }).attention(q, k, v, { out: out2 });
    assert.equal(out2.length, 0, "moved to the worker");
    assert.deepEqual(moved.data, want.data, "and back as the result's data");

    const grads = new Float32Array(T * D);
    const g = await worker.attentionBackward(Q, K, V, dO, { out: { dQ: grads } });
    assert.equal(g.dQ.data, grads);
    assert.deepEqual(grads, attn.attentionBackward(Q, K, V, dO).dQ.data);
  });
}

/** Packed weights, KV caches, models and language models held in the worker; its heap. */
function heldObjectTests() {
  it("weights packed in the worker give the synchronous call's numbers; a disposed pack is refused", async () => {
    const want = attn.multiHeadAttention(X3, MW, HEADS, { causal: true });
    const pack = await worker.packWeights(MW, HEADS);
    const got = await worker.multiHeadAttention(X3, pack, HEADS, { causal: true });
    assert.deepStrictEqual(got, want);
    await pack.dispose();
    await assert.rejects(worker.multiHeadAttention(X3, pack, HEADS), (e) => {
      assert.ok(e instanceof AttnkitError, String(e));
      assert.equal(e.code, "disposed");
      assert.equal(e.parameter, "weights");
      return true;
    });
    // The worker keeps serving.
    assert.deepStrictEqual(await worker.multiHeadAttention(X3, MW, HEADS, { causal: true }), want);
  });

  it("a KV cache held in the worker decodes as the synchronous one; size follows its calls", async () => {
    const config = { numKvHeads: 1, dK: D, dV: D, capacity: 8 };
    const sync = attn.createKVCache(config);
    const cache = await worker.createKVCache(config);
    assert.equal(Object.prototype.toString.call(cache), "[object AsyncKVCache]");
    assert.equal(cache.capacity, 8);
    assert.equal(cache.size, 0);
    const dec = {
      W_Q: random(8, D, 1),
      W_K: random(8, D, 2),
      W_V: random(8, D, 3),
      W_O: random(D, 8, 4),
    };
    const cfg = { numHeads: 1, dK: D };
    for (let t = 0; t < 4; ++t) {
      const x = tensor(random(1, 8, 20 + t), [1, 1, 8]);
      assert.deepStrictEqual(
        await cache.decode(x, dec, cfg),
        sync.decode(x, dec, cfg),
        `step ${t}`,
      );
      assert.equal(cache.size, t + 1);
    }
    assert.deepStrictEqual(await cache.keys(0, 0), sync.keys(0, 0));
    const fork = await cache.fork();
    assert.equal(fork.size, 4);
    await fork.truncate(2);
    assert.equal(fork.size, 2);
    assert.equal(cache.size, 4, "the fork is its own cache");
    await fork.dispose();
    const e = await fork.append(Q3, V3).catch((error) => error);
    assert.equal(e.code, "disposed");
    assert.equal(e.parameter, "cache");
    // Aborting a cache call waiting behind others.
    const controller = new AbortController();
    const running = worker.attention(random(512, 64, 1), random(512, 64, 2), random(512, 64, 3));
    const queued = cache.with({ signal: controller.signal }).reset();
    controller.abort();
    assert.equal((await queued.catch((error) => error)).name, "AbortError");
    await running;
    assert.equal(cache.size, 4, "the cancelled reset did not run");
    await cache.dispose();
    sync.dispose();
  });

  it("a model trains through the worker with the same losses; generation, export and load", async () => {
    const task = { kind: "copy", length: 3, vocabSize: 8 };
    const config = { vocabSize: 8, maxSeqLen: 6, dModel: 16, numHeads: 2 };
    const train = async (api) => {
      const model = await api.createModel(config, { seed: 1, task });
      const trainer = await api.createTrainer(model, { learningRate: 1e-2 });
      const data = await api.createTaskGenerator(task, { seed: 2 });
      const losses = [];
      for (let s = 0; s < 10; ++s) losses.push((await trainer.step(await data.next(8))).loss);
      return { model, trainer, data, losses };
    };
    const want = await train(attn);
    const got = await train(worker);
    assert.deepEqual(got.losses, want.losses);
    assert.equal(got.trainer.steps, 10, "steps as of the last call");
    assert.equal(got.trainer.model, got.model, "the trainer's model is the model's proxy");
    assert.deepStrictEqual(got.model.config, want.model.config);
    // Greedy generation: each step's argmax appended.
    const generate = async (model) => {
      const tokens = [1, 2, 3, 0];
      while (tokens.length < 6) {
        const { predictions } = await model.inspect(tokens);
        tokens.push(predictions[tokens.length - 1]);
      }
      return tokens;
    };
    assert.deepEqual(await generate(got.model), await generate(want.model));
    const bytes = await got.model.exportWeights();
    assert.deepEqual(bytes, want.model.exportWeights());
    const loaded = await worker.loadModel(bytes);
    assert.deepStrictEqual(await loaded.parameters(), want.model.parameters());
    for (const o of [got.trainer, got.data, got.model, loaded]) await o.dispose();
    const e = await worker.createTrainer(got.model).catch((error) => error);
    assert.equal(e.code, "disposed");
    assert.equal(e.parameter, "model");
    for (const o of [want.trainer, want.data, want.model]) o.dispose();
  });

  it("a language model through the worker: text, tokenizer, training, losses, sampling", async () => {
    // A text of its own, long enough for validation windows: the same in both.
    const words = ["the", "whale", "sea", "ship", "captain", "white", "call", "me"];
    let text = "";
    for (let i = 0; text.length < 4000; ++i) text += words[(i * 7 + (i >> 3)) % words.length] + " ";
    const run = async (api) => {
      const tokenizer = await api.createTokenizer("hello, world");
      const data = await api.createTextDataset(text, { seqLen: 16, seed: 3 });
      const model = await api.createModel(
        { ...ONE_BLOCK_GPT, vocabSize: data.vocabSize },
        { seed: 1, vocabulary: data.vocabulary },
      );
      const trainer = await api.createTrainer(model, { learningRate: 1e-2 });
      const losses = [];
      for (let s = 0; s < 5; ++s) losses.push((await trainer.step(await data.next(4))).loss);
      const sampler = await model.sampler("the ", { seed: 5, topK: 3 });
      const sampled = [];
      for (let i = 0; i < 4; ++i) sampled.push((await sampler.next()).character);
      return {
        objects: [sampler, trainer, model, data],
        encoded: Array.from(await tokenizer.encode("hello?")),
        decoded: await tokenizer.decode([1, 2, 3]),
        vocabulary: tokenizer.vocabulary,
        losses,
        validation: await data.validationLoss(model),
        references: await api.referenceLosses(data, text),
        scores: await api.headScores(model, { length: 8, seed: 4 }),
        generated: (await model.generate("the ", { length: 8, seed: 2 })).text,
        sampled: sampled.join(""),
      };
    };
    const want = await run(attn);
    const got = await run(worker);
    for (const key of ["encoded", "decoded", "vocabulary", "losses", "validation"]) {
      assert.deepStrictEqual(got[key], want[key], key);
    }
    for (const key of ["references", "scores", "generated", "sampled"]) {
      assert.deepStrictEqual(got[key], want[key], key);
    }
    assert.ok(got.losses[4] < got.losses[0], `${got.losses}`);
    for (const o of got.objects) await o.dispose();
    for (const o of want.objects) o.dispose();
  });

  it("the worker's heap does not grow over many calls, caches and failed calls", async () => {
    const round = async () => {
      for (let i = 0; i < 200; ++i) {
        await worker.attention(Q, K, V, { causal: true });
        const cache = await worker.createKVCache({ numKvHeads: 1, dK: D, dV: D, capacity: 4 });
        const kv = tensor(random(1, D, i), [1, 1, D]);
        await cache.append(kv, kv);
        await cache.dispose();
        await worker.attention(Q, K, random(T + 1, D, 1)).catch(() => {});
      }
    };
    await round();
    const heap = await worker.heapBytesInUse();
    const memory = await worker.memoryBytes();
    for (let r = 0; r < 4; ++r) await round();
    assert.equal(await worker.heapBytesInUse(), heap, "heap bytes in use");
    assert.equal(await worker.memoryBytes(), memory, "linear memory");
  });

  it("dispose() ends the worker: later calls reject with code disposed; twice is safe", async () => {
    const w = await createAttnkitWorker({ simd: false });
    assert.equal(w.simd, false);
    assert.equal(w.target, "EMU128");
    await w.dispose();
    await w.dispose();
    const e = await w.attention(Q, K, V).catch((error) => error);
    assert.equal(e.code, "disposed");
    assert.ok(e instanceof AttnkitError);
  });
}

/** The worker's own options, and tensors it refuses as the synchronous calls do. */
function optionsAndTensorTests() {
  it("options.workerUrl: the worker script as a path or a file: URL", async () => {
    const script = fileURLToPath(new URL("../../dist/worker-host.node.cjs", import.meta.url));
    for (const workerUrl of [script, pathToFileURL(script), pathToFileURL(script).href]) {
      const w = await createAttnkitWorker({ simd: true, workerUrl });
      assert.deepStrictEqual(await w.attention(Q, K, V), attn.attention(Q, K, V));
      await w.dispose();
    }
    const e = await createAttnkitWorker({ workerUrl: "/no/such/worker.cjs" }).catch((x) => x);
    assert.ok(e instanceof AttnkitError);
    assert.equal(e.code, "load_failed");
    assert.equal(e.parameter, "options.workerUrl");
  });

  it("bad options reject with errors naming them, as createAttnkit's do", async () => {
    for (const [options, parameter] of [
      [{ trasnfer: true }, "options.trasnfer"],
      [{ transfer: 1 }, "options.transfer"],
      [{ workerUrl: 3 }, "options.workerUrl"],
    ]) {
      const e = await createAttnkitWorker(options).catch((error) => error);
      assert.ok(e instanceof AttnkitError, JSON.stringify(options));
      assert.equal(e.parameter, parameter);
    }
    const load = await createAttnkitWorker({ threads: 0 }).catch((error) => error);
    const want = await createAttnkit({ threads: 0 }).catch((error) => error);
    assert.equal(load.message, want.message);
    assert.equal(load.parameter, want.parameter);
    assert.throws(() => worker.with({ signal: "now" }), { parameter: "options.signal" });
  });

  it("a tensor of another element type is refused as the synchronous call refuses it", async () => {
    const eye = () => new OrtTensor("float32", new Float32Array([1, 0, 0, 1]), [2, 2]);
    const cases = [
      [
        "ort float16 Q",
        () => [
          new OrtTensor("float16", new Uint16Array([0x3c00, 0x4000, 0x4200, 0x4400]), [2, 2]),
          eye(),
          eye(),
        ],
      ],
      [
        "ort int32 Q",
        () => [new OrtTensor("int32", new Int32Array([1, 2, 3, 4]), [2, 2]), eye(), eye()],
      ],
      [
        "ort float64 K",
        () => [eye(), new OrtTensor("float64", new Float64Array([1, 2, 3, 4]), [2, 2]), eye()],
      ],
      [
        "ort bool V",
        () => [eye(), eye(), new OrtTensor("bool", new Uint8Array([1, 0, 0, 1]), [2, 2])],
      ],
      [
        "ort uint8 boolMask",
        () => [
          eye(),
          eye(),
          eye(),
          { boolMask: new OrtTensor("uint8", new Uint8Array([1, 0, 1, 1]), [2, 2]) },
        ],
      ],
      ["tf int32 Q", () => [tf.tensor2d([1, 2, 3, 4], [2, 2], "int32"), eye(), eye()]],
      ["tf bool K", () => [eye(), tf.tensor2d([1, 0, 0, 1], [2, 2], "bool"), eye()]],
    ];
    for (const [label, args] of cases) {
      const want = thrown(() => attn.attention(...args()));
      assertSameError(await rejection(worker.attention(...args())), want, label);
      // Moved (transfer) as copied.
      const moved = worker.with({ transfer: true }).attention(...args());
      assertSameError(await rejection(moved), want, `${label}, transfer`);
    }
    const big = new OrtTensor("float64", new Float64Array(64 * 64), [64, 64]);
    const wantBig = thrown(() => attn.attention(big, big, big));
    assertSameError(await rejection(worker.attention(big, big, big)), wantBig, "float64 64 x 64");
    // A bool tensor where one is taken: the same result.
    const mask = new OrtTensor("bool", new Uint8Array([1, 0, 1, 1]), [2, 2]);
    assert.deepStrictEqual(
      await worker.attention(eye(), eye(), eye(), { boolMask: mask }),
      attn.attention(eye(), eye(), eye(), { boolMask: mask }),
    );
  });

  it("a GPU-resident ort tensor: the synchronous call's named error", async () => {
    const gpu = OrtTensor.fromGpuBuffer({ size: 16 }, { dataType: "float32", dims: [2, 2] });
    const I = { data: new Float32Array([1, 0, 0, 1]), rows: 2, cols: 2 };
    for (const args of [
      [gpu, I, I],
      [I, I, gpu],
    ]) {
      const want = thrown(() => attn.attention(...args));
      assertSameError(await rejection(worker.attention(...args)), want, "gpu");
    }
  });
}

/** Uncloneable arguments, foreign proxies, proxies' properties and their lifetime. */
function proxyTests() {
  it("a function or symbol argument gets the synchronous call's error; an uncloneable object is named", async () => {
    const cases = [
      ["attention", [() => 1, K, V]],
      ["attention", [Q, K, V, { scale: Symbol("s") }]],
      ["attention", [Q, K, V, { causal: function causal() {} }]],
      ["attention", [Symbol("q"), K, V]],
      ["createKVCache", [{ numKvHeads: 1, dK: () => 2, dV: 2, capacity: 4 }]],
    ];
    for (const [name, args] of cases) {
      const want = thrown(() => attn[name](...args));
      assertSameError(await rejection(worker[name](...args)), want, `${name} ${String(args[0])}`);
    }
    // A value structured clone refuses (here a class instance holding a function).
    class Holder {
      constructor() {
        this.f = () => 1;
      }
    }
    const e = await rejection(worker.attention(Q, K, V, { out: new Holder() }));
    assert.ok(e instanceof AttnkitError, String(e));
    assert.equal(e.code, "invalid_argument");
    assert.equal(e.parameter, "arguments[3].out");
    assert.deepStrictEqual(await worker.attention(Q, K, V), attn.attention(Q, K, V));
  });

  it("a proxy of another worker, or the module itself, is an invalid_argument naming the parameter", async () => {
    const other = await createAttnkitWorker({ simd: true, model: true });
    const config = { vocabSize: 8, maxSeqLen: 6, dModel: 16, numHeads: 2 };
    const foreign = await other.createModel(config, { seed: 1 });
    const want = thrown(() => attn.createTrainer({}));
    for (const given of [foreign, worker, other]) {
      const e = await rejection(worker.createTrainer(given));
      assert.ok(e instanceof AttnkitError, String(e));
      assert.equal(e.code, want.code);
      assert.equal(e.parameter, "model");
    }
    const cache = await other.createKVCache({ numKvHeads: 1, dK: D, dV: D, capacity: 4 });
    const e = await rejection(worker.referenceLosses(cache, "abc"));
    assert.ok(e instanceof AttnkitError, `${e}`);
    // The worker and the other one serve on.
    assert.deepStrictEqual(await worker.attention(Q, K, V), attn.attention(Q, K, V));
    assert.ok((await foreign.exportWeights()).length > 0, "the other worker serves on");
    await other.dispose();
  });

  it("with() takes only a real AbortSignal", () => {
    for (const signal of [{ aborted: false }, { aborted: false, addEventListener() {} }, 3]) {
      assert.throws(
        () => worker.with({ signal }),
        (e) => {
          assert.ok(e instanceof AttnkitTypeError, String(e));
          assert.equal(e.parameter, "options.signal");
          return true;
        },
      );
    }
    assert.equal(
      typeof worker.with({ signal: new AbortController().signal }).attention,
      "function",
    );
  });

  it("a proxy's properties read as the synchronous object's: disposed throws, config frozen", async () => {
    const config = { numKvHeads: 1, dK: D, dV: D, capacity: 4 };
    const sync = attn.createKVCache(config);
    const cache = await worker.createKVCache(config);
    sync.dispose();
    await cache.dispose();
    const want = thrown(() => sync.size);
    assertSameError(
      thrown(() => cache.size),
      want,
      "cache.size",
    );
    assert.equal(cache.capacity, sync.capacity, "plain properties stay readable");
    const modelConfig = { vocabSize: 8, maxSeqLen: 6, dModel: 16, numHeads: 2 };
    const model = await worker.createModel(modelConfig, { seed: 1 });
    const syncModel = attn.createModel(modelConfig, { seed: 1 });
    assert.equal(Object.isFrozen(syncModel.config), true);
    assert.equal(Object.isFrozen(model.config), true, "model.config frozen");
    assert.throws(() => (model.config.dModel = 4), TypeError);
    assert.deepStrictEqual(model.config, syncModel.config);
    await model.dispose();
    syncModel.dispose();
  });

  it("dropped proxies free their objects in the worker: its heap stays bounded", async () => {
    const config = { vocabSize: 8, maxSeqLen: 6, dModel: 16, numHeads: 2 };
    const made = await worker.createModel(config, { seed: 1 });
    const bytes = await made.exportWeights();
    const trainer = await worker.createTrainer(made, { learningRate: 1e-2 });
    const task = await worker.createTaskGenerator({ kind: "copy", length: 3, vocabSize: 8 });
    const round = async () => {
      for (let i = 0; i < 100; ++i) await worker.loadModel(bytes);
      await collect(worker);
    };
    await round();
    const heap = await worker.heapBytesInUse();
    for (let r = 0; r < 5; ++r) await round();
    assert.equal(
      await worker.heapBytesInUse(),
      heap,
      "heap bytes in use after 500 more dropped models",
    );
    assert.equal(
      typeof (await trainer.step(await task.next(4))).loss,
      "number",
      "the kept model trains",
    );
    for (const o of [trainer, task, made]) await o.dispose();
  });

  it("an object another held object uses lives on after its proxy is dropped", async () => {
    const tokenizer = await worker.createTokenizer("hello world");
    const { vocabulary } = tokenizer;
    const config = { vocabSize: vocabulary.length, maxSeqLen: 16, dModel: 16, numHeads: 2 };
    let model = await worker.createModel(config, { seed: 1, vocabulary });
    const sampler = await model.sampler("he", { seed: 5, topK: 3 });
    const syncModel = attn.createModel(config, { seed: 1, vocabulary });
    const syncSampler = syncModel.sampler("he", { seed: 5, topK: 3 });
    model = null; // the sampler still uses the model
    await collect(worker);
    for (let i = 0; i < 4; ++i) {
      assert.deepStrictEqual(await sampler.next(), syncSampler.next(), `character ${i}`);
    }
    await sampler.dispose();
    syncSampler.dispose();
    syncModel.dispose();
  });
}
