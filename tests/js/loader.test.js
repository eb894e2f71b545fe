// The loader: option checks, one instance per variant, the SIMD probe.
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createAttnkit, simdSupported, version, AttnkitError, AttnkitTypeError } from "attnkit";

test("createAttnkit rejects bad options with an AttnkitTypeError naming them", async () => {
  const bad = [
    [null, "options"],
    [{ simd: "yes" }, "options.simd"],
    [{ wasmPaths: 3 }, "options.wasmPaths"],
    [{ wasmPaths: { "attnkit-simd.wasm": 3 } }, 'options.wasmPaths["attnkit-simd.wasm"]'],
    [{ wasmBinary: [0, 97, 115, 109] }, "options.wasmBinary"],
    [{ timeout: "1s" }, "options.timeout"],
  ];
  for (const [options, parameter] of bad) {
    await assert.rejects(createAttnkit(options), (e) => {
      assert.ok(
        e instanceof AttnkitTypeError && e instanceof TypeError && e instanceof AttnkitError,
      );
      assert.equal(e.parameter, parameter);
      assert.ok(e.message.startsWith(`${parameter}: expected `), e.message);
      return true;
    });
  }
});

test("createAttnkit loads each variant once and the default follows simdSupported()", async () => {
  assert.equal(typeof simdSupported(), "boolean");
  assert.equal(simdSupported(), true); // Node 20 supports SIMD128
  const a = await createAttnkit();
  assert.equal(a, await createAttnkit({ simd: true }));
  assert.equal(a.simd, true);
  assert.equal(a.target, "WASM");
  const s = await createAttnkit({ simd: false });
  assert.notEqual(a, s);
  assert.equal(s.simd, false);
  assert.equal(s.target, "EMU128");
});

test("unknown options are an invalid_argument AttnkitError naming the key and the closest valid one", async () => {
  const cases = [
    [
      { thread: 2 },
      "options.thread",
      /^options\.thread: expected one of simd, threads, model, wasmPaths, wasmBinary, timeout \(did you mean threads\?\), got an unknown option$/,
    ],
    [{ wasmPath: "/x/" }, "options.wasmPath", /\(did you mean wasmPaths\?\)/],
    [
      { fast: true },
      "options.fast",
      /^options\.fast: expected one of simd, threads, model, wasmPaths, wasmBinary, timeout, got an unknown option$/,
    ],
    [
      { wasmPaths: { "attnkit-simd.wsm": "/a.wasm" } },
      'options.wasmPaths["attnkit-simd.wsm"]',
      /\(did you mean attnkit-simd\.wasm\?\), got an unknown file$/,
    ],
  ];
  for (const [options, parameter, message] of cases) {
    await assert.rejects(createAttnkit(options), (e) => {
      assert.ok(e instanceof AttnkitError && !(e instanceof TypeError), String(e));
      assert.equal(e.code, "invalid_argument");
      assert.equal(e.parameter, parameter);
      assert.match(e.message, message);
      return true;
    });
  }
  await assert.rejects(
    createAttnkit({ wasmPaths: "https://cdn.example/attnkit" }),
    (e) =>
      e instanceof AttnkitError &&
      e.parameter === "options.wasmPaths" &&
      /ending in "\/"/.test(e.message),
  );
  await assert.rejects(
    createAttnkit({ timeout: 0 }),
    (e) => e instanceof AttnkitError && e.parameter === "options.timeout",
  );
});

test("version is package.json's, from ESM and CommonJS", async () => {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  assert.equal(version, pkg.version);
  assert.equal(createRequire(import.meta.url)("attnkit").version, pkg.version);
  const attn = await createAttnkit();
  assert.equal(attn.version, pkg.version);
});

test("dispose() forgets the instance: a later createAttnkit() loads a new one", async () => {
  const a = await createAttnkit({ simd: false });
  assert.equal(typeof a.dispose, "function");
  a.dispose();
  const b = await createAttnkit({ simd: false });
  assert.notEqual(a, b);
  assert.equal(b.attention([[1]], [[1]], [[2]]).data[0], 2);
});
