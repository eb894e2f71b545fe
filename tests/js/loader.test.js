// The loader: option checks, one instance per variant, the SIMD probe.
import test from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, simdSupported, AttnkitError, AttnkitTypeError } from "attnkit";

test("createAttnkit rejects bad options with an AttnkitTypeError naming them", async () => {
  for (const [options, parameter] of [[null, "options"], [{ simd: "yes" }, "options.simd"], [{ fast: true }, "options.fast"]]) {
    await assert.rejects(createAttnkit(options), (e) => {
      assert.ok(e instanceof AttnkitTypeError && e instanceof TypeError && e instanceof AttnkitError);
      assert.equal(e.parameter, parameter);
      assert.match(e.message, new RegExp(`^${parameter.replace(".", "\\.")}: expected .+, got .+`));
      return true;
    });
  }
});

test("createAttnkit loads each variant once and the default follows simdSupported()", async () => {
  assert.equal(typeof simdSupported(), "boolean");
  assert.equal(simdSupported(), true);  // Node 20 supports SIMD128
  const a = await createAttnkit();
  assert.equal(a, await createAttnkit({ simd: true }));
  assert.equal(a.simd, true);
  assert.equal(a.target, "WASM");
  const s = await createAttnkit({ simd: false });
  assert.notEqual(a, s);
  assert.equal(s.simd, false);
  assert.equal(s.target, "EMU128");
});
