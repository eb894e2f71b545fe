// CommonJS: require("attnkit") (the exports map's node/require condition ->
// dist/attnkit.node.cjs) works, computes the same as the reference and shares
// its module instance and error classes with the ESM import.
const { describe, it } = require("node:test");
const assert = require("node:assert/strict");
const attnkit = require("attnkit");

const Q = [
  [0.1, -0.2],
  [0.3, 0.4],
  [-0.5, 0.6],
];
const V = [[1], [2], [3]];

/** Plain float64 causal attention with Q = K (a small independent reference). */
function reference(Q, V) {
  const d = Q[0].length;
  return Q.map((q, i) => {
    const s = Q.slice(0, i + 1).map((k) => q.reduce((a, x, c) => a + x * k[c], 0) / Math.sqrt(d));
    const m = Math.max(...s);
    const e = s.map((x) => Math.exp(x - m));
    const z = e.reduce((a, b) => a + b, 0);
    return e.reduce((a, w, j) => a + (w / z) * V[j][0], 0);
  });
}

describe('CommonJS require("attnkit")', () => {
  it("resolves to the Node CommonJS build and exports the API", () => {
    assert.match(require.resolve("attnkit"), /dist[\\/]attnkit\.node\.cjs$/);
    assert.equal(typeof attnkit.createAttnkit, "function");
    assert.equal(attnkit.default, attnkit.createAttnkit);
    assert.equal(typeof attnkit.AttnkitError, "function");
    assert.equal(typeof attnkit.AttnkitTypeError, "function");
  });

  for (const simd of [true, false]) {
    it(`computes causal attention (${simd ? "SIMD" : "scalar"}) and throws AttnkitError`, async () => {
      const attn = await attnkit.createAttnkit({ simd });
      assert.equal(attn.simd, simd);
      const out = attn.attention(Q, Q, V, { causal: true });
      reference(Q, V).forEach((v, i) =>
        assert.ok(Math.abs(out.data[i] - v) <= 1e-5 + 1e-4 * Math.abs(v), `row ${i}`),
      );
      assert.throws(
        () => attn.attention(Q, Q, [[1]]),
        (e) => e instanceof attnkit.AttnkitError && e instanceof RangeError && e.parameter === "V",
      );
      assert.throws(
        () => attn.attention(null, Q, V),
        (e) =>
          e instanceof attnkit.AttnkitError &&
          e instanceof attnkit.AttnkitTypeError &&
          e instanceof TypeError,
      );
    });
  }

  it('shares one module instance and one set of error classes with import "attnkit"', async () => {
    const esm = await import("attnkit");
    assert.equal(esm.createAttnkit, attnkit.createAttnkit);
    assert.equal(esm.AttnkitError, attnkit.AttnkitError);
    assert.equal(
      await esm.createAttnkit({ simd: true }),
      await attnkit.createAttnkit({ simd: true }),
    );
  });
});
