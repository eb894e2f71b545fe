// Shared helpers of the Node test harness (not a test file itself).
import assert from "node:assert/strict";

/** Tolerance of every float comparison against the float64 reference: |got - want| <= ABS + REL * |want|. */
export const ABS = 1e-5;
export const REL = 1e-4;

function flat(x) {
  if (x && typeof x === "object" && "data" in x) return Array.from(x.data);
  if (ArrayBuffer.isView(x)) return Array.from(x);
  return x.flat(Infinity);
}

/**
 * Asserts every value of `got` (a Matrix/Tensor, typed array or nested array)
 * is within abs + rel * |want| of `want` (nested array or typed array). Infinite
 * expected values must match exactly; NaN is never accepted.
 */
export function assertClose(got, want, label = "", { abs = ABS, rel = REL } = {}) {
  const g = flat(got),
    w = flat(want);
  assert.equal(g.length, w.length, `${label}: length ${g.length} != ${w.length}`);
  let worst = -1,
    worstErr = 0;
  for (let i = 0; i < g.length; ++i) {
    if (Number.isNaN(g[i])) assert.fail(`${label}: NaN at ${i}`);
    if (!Number.isFinite(w[i])) {
      if (g[i] !== w[i]) assert.fail(`${label}: at ${i} got ${g[i]}, want ${w[i]}`);
      continue;
    }
    const err = Math.abs(g[i] - w[i]) - (abs + rel * Math.abs(w[i]));
    if (err > worstErr) {
      worstErr = err;
      worst = i;
    }
  }
  if (worst >= 0) {
    assert.fail(
      `${label}: at ${worst} got ${g[worst]}, want ${w[worst]} (tolerance ${abs} + ${rel} * |want|)`,
    );
  }
}

/** Asserts `m` is a Matrix with a Float32Array of rows * cols values. */
export function assertMatrix(m, rows, cols, label = "") {
  assert.ok(m.data instanceof Float32Array, `${label}: data is a Float32Array`);
  assert.equal(m.rows, rows, `${label}: rows`);
  assert.equal(m.cols, cols, `${label}: cols`);
  assert.equal(m.data.length, rows * cols, `${label}: data length`);
}

/** Asserts `t` is a Tensor with the given shape. */
export function assertTensor(t, shape, label = "") {
  assert.ok(t.data instanceof Float32Array, `${label}: data is a Float32Array`);
  assert.deepEqual(t.shape, shape, `${label}: shape`);
  assert.equal(
    t.data.length,
    shape.reduce((a, b) => a * b, 1),
    `${label}: data length`,
  );
}

/** [B, H, S, D] (bhsd) data -> [B, S, H*D] (bshd), or back with inverse. */
export function transposeHeads(data, B, H, S, D, inverse = false) {
  const out = new Float32Array(data.length);
  for (let b = 0; b < B; ++b) {
    for (let h = 0; h < H; ++h) {
      for (let s = 0; s < S; ++s) {
        for (let d = 0; d < D; ++d) {
          const bhsd = ((b * H + h) * S + s) * D + d;
          const bshd = ((b * S + s) * H + h) * D + d;
          if (inverse) out[bhsd] = data[bshd];
          else out[bshd] = data[bhsd];
        }
      }
    }
  }
  return out;
}

/** Both variants of the module: SIMD128 and scalar. */
export const VARIANTS = [
  { name: "simd", options: { simd: true } },
  { name: "scalar", options: { simd: false } },
];

/** Asserts two results' data equal bit for bit (Object.is: -0 and NaN count). */
export function assertIdentical(got, want, label) {
  assert.equal(got.data.length, want.data.length, `${label}: length`);
  for (let i = 0; i < want.data.length; ++i) {
    if (!Object.is(got.data[i], want.data[i])) {
      assert.fail(`${label}: at ${i} got ${got.data[i]}, want ${want.data[i]}`);
    }
  }
}
