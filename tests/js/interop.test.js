// Interop with the real packages: onnxruntime-common's Tensor (the class of
// onnxruntime-web and -node) and tfjs-core's Tensor (cpu backend) go in
// wherever a matrix or tensor does, synchronously and through attnkit/worker,
// and every result goes back into them as `new ort.Tensor("float32", r.data,
// r.shape)` and `tf.tensor(r.data, r.shape)`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Tensor as OrtTensor } from "onnxruntime-common";
import * as tf from "@tensorflow/tfjs-core";
import "@tensorflow/tfjs-backend-cpu";
import createAttnkit, { AttnkitError, AttnkitTypeError } from "attnkit";
import { createAttnkitWorker } from "attnkit/worker";

function random(n, seed) {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}
const T = 5,
  D = 4;
const q = random(T * D, 1),
  k = random(T * D, 2),
  v = random(T * D, 3);
const plain = (data) => ({ data, rows: T, cols: D });

describe("interop with onnxruntime and tfjs tensors", () => {
  let attn, worker, want;
  before(async () => {
    await tf.setBackend("cpu");
    attn = await createAttnkit({ simd: true });
    worker = await createAttnkitWorker({ simd: true });
    want = attn.attention(plain(q), plain(k), plain(v), { causal: true });
  });
  after(() => worker?.dispose());

  it("ort.Tensor in: the same result as the plain arrays; results back as ort.Tensor", async () => {
    const [Q, K, V] = [q, k, v].map((d) => new OrtTensor("float32", d, [T, D]));
    const r = attn.attention(Q, K, V, { causal: true });
    assert.deepStrictEqual(r, want);
    const back = new OrtTensor("float32", r.data, r.shape);
    assert.deepEqual(back.dims, [T, D]);
    assert.equal(back.data, r.data, "ort keeps the result's array: no copy");
    // Rank 3 [batch, seq, d] into the multi-head calls, and their results back.
    const [Q3, K3, V3] = [q, k, v].map((d) => new OrtTensor("float32", d, [1, T, D]));
    const m = attn.multiHeadAttentionQKV(Q3, K3, V3, { numHeads: 2 });
    assert.deepStrictEqual(
      m,
      attn.multiHeadAttentionQKV(
        { data: q, shape: [1, T, D] },
        { data: k, shape: [1, T, D] },
        { data: v, shape: [1, T, D] },
        { numHeads: 2 },
      ),
    );
    assert.deepEqual(new OrtTensor("float32", m.data, m.shape).dims, [1, T, D]);
    // Through the worker.
    assert.deepStrictEqual(await worker.attention(Q, K, V, { causal: true }), want);
  });

  it("ort.Tensor of another type or shape: errors naming the parameter", () => {
    const ints = new OrtTensor("int32", new Int32Array(T * D), [T, D]);
    assert.throws(
      () => attn.attention(ints, plain(k), plain(v)),
      (e) => {
        assert.ok(e instanceof AttnkitTypeError);
        assert.equal(e.parameter, "Q.type");
        assert.match(e.message, /Q\.type: expected "float32", got string "int32"/);
        return true;
      },
    );
    const wide = new OrtTensor("float32", q, [1, 1, T, D]);
    assert.throws(() => attn.attention(wide, plain(k), plain(v)), { parameter: "Q.shape" });
  });

  it("tf.Tensor in, read once with dataSync (tfjs's own array); results back as tf.tensor", () => {
    const [Q, K, V] = [q, k, v].map((d) => tf.tensor2d(d, [T, D]));
    // The cpu backend's dataSync hands out the tensor's own array (no copy in tfjs).
    assert.equal(Q.dataSync(), Q.dataSync());
    let reads = 0;
    const original = Q.dataSync;
    Q.dataSync = function () {
      ++reads;
      return original.call(this);
    };
    const r = attn.attention(Q, K, V, { causal: true });
    assert.equal(reads, 1);
    assert.deepStrictEqual(r, want);
    const back = tf.tensor(r.data, r.shape);
    assert.deepEqual(back.shape, [T, D]);
    assert.deepEqual(back.dataSync(), r.data);
    // A bool tensor as a mask.
    const mask = tf.tensor2d(
      Array.from({ length: T * T }, (_, i) => i % T <= Math.floor(i / T)),
      [T, T],
      "bool",
    );
    assert.deepStrictEqual(attn.attention(Q, K, V, { boolMask: mask }), want);
    tf.dispose([Q, K, V, back, mask]);
  });

  it("tf.Tensor of another dtype, or disposed: errors naming the parameter", () => {
    const ints = tf.tensor2d(new Int32Array(T * D), [T, D], "int32");
    assert.throws(
      () => attn.attention(plain(q), ints, plain(v)),
      (e) => {
        assert.ok(e instanceof AttnkitTypeError);
        assert.equal(e.parameter, "K.dtype");
        return true;
      },
    );
    const gone = tf.tensor2d(v, [T, D]);
    gone.dispose();
    assert.throws(
      () => attn.attention(plain(q), plain(k), gone),
      (e) => {
        assert.ok(e instanceof AttnkitError);
        assert.equal(e.code, "disposed");
        assert.equal(e.parameter, "V");
        return true;
      },
    );
    ints.dispose();
  });

  it("through the worker: tf tensors read with data(), never moved; ort data moved only with transfer", async () => {
    const Q = tf.tensor2d(q, [T, D]);
    const K = tf.tensor2d(k, [T, D]);
    let syncReads = 0;
    const original = Q.dataSync;
    Q.dataSync = function () {
      ++syncReads;
      return original.call(this);
    };
    const V = new OrtTensor("float32", v.slice(), [T, D]);
    const r = await worker.with({ transfer: true }).attention(Q, K, V, { causal: true });
    assert.deepStrictEqual(r, want);
    assert.equal(syncReads, 0, "the worker API reads tfjs tensors with await data()");
    assert.deepEqual(await Q.data(), q, "tfjs's own array was not moved");
    assert.equal(V.data.length, 0, "the ort tensor's array was moved (transfer)");
    const copied = new OrtTensor("float32", v.slice(), [T, D]);
    await worker.attention(Q, K, copied);
    assert.equal(copied.data.length, T * D, "copied by default");
    const e = await worker.attention(Q, tf.tensor1d([1, 2], "int32"), copied).catch((x) => x);
    assert.equal(e.parameter, "K.dtype");
    tf.dispose([Q, K]);
  });
});
