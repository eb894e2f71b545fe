// The marshalling module (src/js/marshal.js) on a module of plain memory: the
// name tables, the argument block's writer and readers (Cursor), and the
// layout of a call's block and arrays. The calls themselves are tested
// through the API (api, model, language, errors).
import test from "node:test";
import assert from "node:assert/strict";
import {
  ARG_BYTES,
  CORE_NAMES,
  Cursor,
  Marshal,
  NUM_HEADS_NAMES,
  floatBits,
  names,
  readMatrix,
  withViews,
} from "../../src/js/marshal.js";
import { AttnkitError } from "../../src/js/errors.js";

/** A stand-in for an Embind module: one buffer of memory and a bump allocator. */
function plainModule(bytes = 1 << 20) {
  const buffer = new ArrayBuffer(bytes);
  let next = 64;
  return {
    HEAPU8: new Uint8Array(buffer),
    HEAP32: new Int32Array(buffer),
    HEAPU32: new Uint32Array(buffer),
    HEAPF32: new Float32Array(buffer),
    _malloc(n) {
      const at = next;
      next += (n + 15) & ~15;
      return next <= bytes ? at : 0;
    },
    _free() {},
  };
}

/** What a module's memory growth does: new heaps over a larger buffer, the old one detached. */
function grow(M) {
  const bigger = new ArrayBuffer(M.HEAPU8.length * 2);
  new Uint8Array(bigger).set(M.HEAPU8);
  structuredClone(M.HEAPU8.buffer, { transfer: [M.HEAPU8.buffer] });
  Object.assign(M, {
    HEAPU8: new Uint8Array(bigger),
    HEAP32: new Int32Array(bigger),
    HEAPU32: new Uint32Array(bigger),
    HEAPF32: new Float32Array(bigger),
  });
}

test("a name table looks a name up in itself, then in its base, else keeps it", () => {
  const model = names({ d_model: "config.dModel", num_heads: "config.heads" });
  const task = names({ kind: "task.kind" }, model);
  assert.equal(task.kind, "task.kind");
  assert.equal(task.d_model, "config.dModel");
  // An entry of a table hides its base's.
  assert.equal(model.num_heads, "config.heads");
  assert.equal(CORE_NAMES.num_heads, "config.numHeads");
  assert.equal(NUM_HEADS_NAMES.num_heads, "numHeads");
  // Every table ends in CORE_NAMES, whose base is none.
  assert.equal(task.X_q, "Xq");
  assert.equal(task.no_such_name, undefined);
  assert.equal(CORE_NAMES.constructor, undefined);
  assert.ok(Object.isFrozen(task) && Object.isFrozen(CORE_NAMES));
});

test("a Cursor writes an argument block in order and reads what follows it", () => {
  const M = plainModule();
  const at = 256;
  // A view, a number and an array of words, as Args reads them.
  const args = new Cursor(M, at).put({ ptr: 1024, rows: 2, cols: 3 }, 7, [8, 9]);
  assert.equal(args.start, at);
  assert.deepEqual(Array.from(M.HEAPU32.subarray(at >> 2, (at >> 2) + 6)), [1024, 2, 3, 7, 8, 9]);
  // What a binding writes after its arguments: a float, a word, a matrix, an array.
  M.HEAPF32.set([1, 2, 3, 4, 5, 6], 1024 >> 2);
  M.HEAP32.set([-1, 5], 2048 >> 2);
  M.HEAPU32.set([floatBits(0.5), 11, 1024, 2, 3, 2048, 2, 0, 0, 0], args.i);
  assert.equal(args.float(), 0.5);
  assert.equal(args.word(), 11);
  const m = args.matrix();
  assert.deepEqual(m.shape, [2, 3]);
  assert.deepEqual(Array.from(m.data), [1, 2, 3, 4, 5, 6]);
  // A copy: the module's memory may change under it.
  M.HEAPF32[1024 >> 2] = 9;
  assert.equal(m.data[0], 1);
  assert.deepEqual(Array.from(args.array(Int32Array)), [-1, 5]);
  // Address 0: an empty matrix.
  const empty = args.matrix();
  assert.deepEqual([empty.rows, empty.cols, empty.data.length], [0, 0, 0]);
  assert.deepEqual(readMatrix(M, 0, 3, 4).data, new Float32Array(0));
});

test("withViews hands out views of the memory, and refuses a result read from detached ones", () => {
  const M = plainModule();
  M.HEAPF32.set([1, 2, 3, 4, 5, 6], 1024 >> 2);
  const words = [1024, 2, 3, 0, 0, 0];
  const block = () => new Cursor(M, 256).put(words).skip(-words.length);
  // Views, not copies: they see the memory as it is when read; address 0 is an empty matrix.
  const sums = withViews("parameters", (views) => {
    const args = block();
    const [m, empty] = [views.matrix(args), views.matrix(args)];
    M.HEAPF32[1024 >> 2] = 10;
    assert.deepEqual([empty.rows, empty.cols, empty.data.length], [0, 0, 0]);
    return m.data.reduce((a, b) => a + b, 0);
  });
  assert.equal(sums, 30);
  // A call that grows the memory after the views were read detaches them: fn reads them as
  // empty (a length of 0), or fails on them (a detached array's reduce throws); either way
  // the views' error is thrown instead.
  const detached = (e) =>
    e instanceof AttnkitError &&
    e.parameter === "parameters" &&
    /^parameters: views of the module's memory, read before a call that grew that memory \(1 of 2 detached\)/.test(
      e.message,
    );
  for (const use of [(m) => m.data.length, (m) => m.data.reduce((a, b) => a + b, 0)])
    assert.throws(
      () =>
        withViews("parameters", (views) => {
          const args = block();
          const [m] = [views.matrix(args), views.matrix(args)];
          grow(M);
          return use(m);
        }),
      detached,
    );
  // Views read after the growth are of the new memory.
  assert.equal(
    withViews("parameters", (views) => views.matrix(block()).data[1]),
    2,
  );
});

test("Marshal.layout puts the argument block first, then each array aligned", () => {
  const M = plainModule();
  const mem = new Marshal(M);
  const tokens = Int32Array.from([1, -2, 3]);
  const bytes = Uint8Array.from([7, 8, 9, 10, 11]);
  const codes = Uint32Array.from([65533, 97]);
  const [base, t, b, c] = mem.layout("text", [tokens, bytes, codes]);
  assert.equal(t, base + ARG_BYTES);
  assert.equal(b, t + 16);
  assert.equal(c, b + 16);
  assert.deepEqual(Array.from(M.HEAP32.subarray(t >> 2, (t >> 2) + 3)), [1, -2, 3]);
  assert.deepEqual(Array.from(M.HEAPU8.subarray(b, b + 5)), [7, 8, 9, 10, 11]);
  assert.deepEqual(Array.from(M.HEAPU32.subarray(c >> 2, (c >> 2) + 2)), [65533, 97]);
  // The block is the call's scratch: a later call without arrays reuses it.
  assert.equal(mem.layout("model")[0], base);
  assert.equal(mem.cursor(base).start, base);
});
