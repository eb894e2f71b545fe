// Loads that fail reject with an AttnkitError in bounded time and may be
// retried (#18, defect 3); where the files load from (wasmPaths, wasmBinary)
// in Node. Each case runs in a child process: a failure mode of the loader is
// a hang or the process exiting.
import test, { after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const dist = fileURLToPath(new URL("../../dist/", import.meta.url));
const WORKER = "attnkit-threads.node.worker.cjs";

// dist/ copied without the threads build's worker script.
const tmp = mkdtempSync(join(tmpdir(), "attnkit-noworker-"));
const copy = join(tmp, "dist");
cpSync(dist, copy, { recursive: true, filter: (src) => !src.endsWith(WORKER) });
after(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs `body` (CommonJS, `attnkit` in scope, `report(x)` prints JSON) and returns what it reported. */
function child(entryDir, body) {
  const source = `const attnkit = require(${JSON.stringify(join(entryDir, "attnkit.node.cjs"))});
const describeError = (e) => ({ attnkit: e instanceof attnkit.AttnkitError, code: e.code, parameter: e.parameter, message: e.message });
const report = (x) => console.log(JSON.stringify(x));
(async () => { ${body} })();`;
  const start = Date.now();
  const r = spawnSync(process.execPath, ["--input-type=commonjs", "-e", source], {
    encoding: "utf8",
    timeout: 60000,
  });
  const ms = Date.now() - start;
  assert.equal(
    r.status,
    0,
    `child exit code ${r.status} after ${ms} ms (signal ${r.signal}); stderr: ${r.stderr.slice(0, 1000)}`,
  );
  return {
    out: r.stdout
      .trim()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l)),
    ms,
    stderr: r.stderr,
  };
}

test("a missing worker script: { threads } rejects with load_failed naming its path, and a retry rejects again", () => {
  const { out, ms } = child(
    copy,
    `
    for (let i = 0; i < 2; ++i) {
      try { const a = await attnkit.createAttnkit({ threads: 2 }); report({ loaded: a.threads }); }
      catch (e) { report(describeError(e)); }
    }
    const one = await attnkit.createAttnkit();
    report({ stillWorks: one.attention([[1]], [[1]], [[3]]).data[0] });`,
  );
  assert.equal(out.length, 3, JSON.stringify(out));
  for (const e of out.slice(0, 2)) {
    assert.deepEqual(
      { ...e, message: undefined },
      { attnkit: true, code: "load_failed", parameter: "options.threads", message: undefined },
    );
    assert.ok(
      e.message.startsWith("options.threads: expected the threads build's worker script at "),
      e.message,
    );
    assert.ok(e.message.includes(join(copy, WORKER)), `the message names the path: ${e.message}`);
  }
  assert.deepEqual(out[2], { stillWorks: 3 });
  assert.ok(ms < 20000, `${ms} ms`);
});

test("a build's loader missing beside the entry point: load_failed naming the file and its path", () => {
  const LOADER = "attnkit-simd.node.cjs";
  const bare = join(tmp, "noloader");
  cpSync(dist, bare, { recursive: true, filter: (src) => !src.endsWith(LOADER) });
  const { out } = child(
    bare,
    `
    for (let i = 0; i < 2; ++i) {
      try { await attnkit.createAttnkit(); report({ loaded: true }); }
      catch (e) { report(describeError(e)); }
    }
    const scalar = await attnkit.createAttnkit({ simd: false });
    report({ stillWorks: scalar.attention([[1]], [[1]], [[3]]).data[0] });`,
  );
  assert.equal(out.length, 3, JSON.stringify(out));
  for (const e of out.slice(0, 2)) {
    assert.deepEqual(
      { ...e, message: undefined },
      { attnkit: true, code: "load_failed", parameter: "options", message: undefined },
    );
    assert.ok(
      e.message.startsWith(`options: expected the simd build's loader ${LOADER} to load from `),
      e.message,
    );
    assert.ok(e.message.includes(join(bare, LOADER)), `the message names the path: ${e.message}`);
  }
  assert.deepEqual(out[2], { stillWorks: 3 });
});

test("the model layer's JS missing beside the entry point: { model: true } rejects with load_failed naming it; the other builds load", () => {
  const LAYER = "model-layer.node.cjs";
  const bare = join(tmp, "nomodellayer");
  cpSync(dist, bare, { recursive: true, filter: (src) => !src.endsWith(LAYER) });
  const { out } = child(
    bare,
    `
    for (let i = 0; i < 2; ++i) {
      try { await attnkit.createAttnkit({ model: true }); report({ loaded: true }); }
      catch (e) { report(describeError(e)); }
    }
    const plain = await attnkit.createAttnkit();
    report({ stillWorks: plain.attention([[1]], [[1]], [[3]]).data[0] });`,
  );
  assert.equal(out.length, 3, JSON.stringify(out));
  for (const e of out.slice(0, 2)) {
    assert.deepEqual(
      { ...e, message: undefined },
      { attnkit: true, code: "load_failed", parameter: "options.model", message: undefined },
    );
    assert.match(
      e.message,
      /^options\.model: expected attnkit's model layer \(model-layer\.mjs or model-layer\.node\.cjs, /,
    );
  }
  assert.deepEqual(out[2], { stillWorks: 3 });
});

test("wasmPaths in Node: a base path or a map entry for the worker script", () => {
  const { out } = child(
    copy,
    `
    const a = await attnkit.createAttnkit({ threads: 2, wasmPaths: ${JSON.stringify(dist)} });
    report({ threads: a.threads, out: a.attention([[1, 0]], [[1, 0], [0, 1]], [[1], [3]]).data[0] });
    a.dispose();
    const b = await attnkit.createAttnkit({ threads: 2, wasmPaths: { ${JSON.stringify(WORKER)}: ${JSON.stringify("file://" + join(dist, WORKER))} } });
    report({ threads: b.threads, fresh: a !== b });
    b.dispose();  // else the next call returns b: one instance per build and thread count
    try { await attnkit.createAttnkit({ threads: 2, wasmPaths: "/nowhere/" }); } catch (e) { report(describeError(e)); }`,
  );
  assert.equal(out[0].threads, 2);
  assert.ok(
    Math.abs(out[0].out - (Math.E ** (1 / Math.SQRT2) + 3) / (Math.E ** (1 / Math.SQRT2) + 1)) <
      1e-5,
    String(out[0].out),
  );
  assert.deepEqual(out[1], { threads: 2, fresh: true });
  assert.equal(out[2].code, "load_failed");
  assert.equal(out[2].parameter, "options.wasmPaths");
  assert.match(out[2].message, /\/nowhere\/attnkit-threads\.node\.worker\.cjs, got no such file/);
});

test("wasmBinary in Node: the build's bytes load; bytes that are not wasm reject with load_failed", () => {
  const { out } = child(
    dist,
    `
    const fs = require("node:fs"), path = require("node:path");
    try { await attnkit.createAttnkit({ simd: true, wasmBinary: new Uint8Array(16) }); report({ loaded: true }); }
    catch (e) { report(describeError(e)); }
    const bytes = fs.readFileSync(path.join(${JSON.stringify(dist)}, "attnkit-simd.wasm"));
    const a = await attnkit.createAttnkit({ simd: true, wasmBinary: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) });
    report({ simd: a.simd, out: a.attention([[1]], [[1]], [[5]]).data[0] });`,
  );
  assert.deepEqual(
    { ...out[0], message: undefined },
    { attnkit: true, code: "load_failed", parameter: "options.wasmBinary", message: undefined },
  );
  assert.match(
    out[0].message,
    /^options\.wasmBinary: expected the bytes of attnkit-simd\.wasm, got bytes that did not instantiate: /,
  );
  assert.deepEqual(out[1], { simd: true, out: 5 });
});

test("wasmBinary: garbage bytes print nothing; another build's bytes are refused, naming both", () => {
  const { out, stderr } = child(
    dist,
    `
    const fs = require("node:fs"), path = require("node:path");
    const read = (f) => new Uint8Array(fs.readFileSync(path.join(${JSON.stringify(dist)}, f)));
    const tries = [
      [{ wasmBinary: new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 9, 9, 9]) }],
      [{ wasmBinary: read("attnkit-scalar.wasm") }],
      [{ simd: false, wasmBinary: read("attnkit-simd.wasm") }],
      [{ model: true, wasmBinary: read("attnkit-simd.wasm") }],
      [{ wasmBinary: read("attnkit-simd-model.wasm") }],
    ];
    for (const [options] of tries) {
      try { const a = await attnkit.createAttnkit(options); report({ loaded: a.target }); a.dispose(); }
      catch (e) { report(describeError(e)); }
    }
    const a = await attnkit.createAttnkit({ simd: false, wasmBinary: read("attnkit-scalar.wasm") });
    report({ simd: a.simd, out: a.attention([[1]], [[1]], [[5]]).data[0] });`,
  );
  assert.equal(stderr, "", "nothing printed to the program's stderr");
  for (const e of out.slice(0, 5)) {
    assert.equal(e.code, "load_failed", JSON.stringify(e));
    assert.equal(e.parameter, "options.wasmBinary");
    assert.doesNotMatch(e.message, /ASSERTIONS/);
  }
  assert.match(
    out[0].message,
    /expected the bytes of attnkit-simd\.wasm, got bytes that did not instantiate/,
  );
  assert.match(
    out[1].message,
    /expected the bytes of attnkit-simd\.wasm .*another build \(target EMU128/,
  );
  assert.match(
    out[2].message,
    /expected the bytes of attnkit-scalar\.wasm .*another build \(target WASM/,
  );
  assert.match(out[3].message, /attnkit-simd-model\.wasm .*without the model layer/);
  assert.match(out[4].message, /attnkit-simd\.wasm .*with the model layer/);
  assert.deepEqual(out[5], { simd: false, out: 5 });
});

test("wasmBinary after the build is loaded: the bytes are still loaded and checked, not ignored", () => {
  const { out } = child(
    dist,
    `
    const fs = require("node:fs"), path = require("node:path");
    const read = (f) => new Uint8Array(fs.readFileSync(path.join(${JSON.stringify(dist)}, f)));
    const first = await attnkit.createAttnkit();
    for (const wasmBinary of [read("attnkit-scalar.wasm"), new Uint8Array([1, 2, 3, 4])]) {
      try { await attnkit.createAttnkit({ wasmBinary }); report({ loaded: true }); }
      catch (e) { report(describeError(e)); }
    }
    const bytes = read("attnkit-simd.wasm");
    const own = await attnkit.createAttnkit({ wasmBinary: bytes });
    report({ separate: own !== first, same: own === (await attnkit.createAttnkit({ wasmBinary: bytes })),
      again: first === (await attnkit.createAttnkit()), out: own.attention([[1]], [[1]], [[5]]).data[0] });`,
  );
  for (const e of out.slice(0, 2)) {
    assert.equal(e.code, "load_failed", JSON.stringify(e));
    assert.equal(e.parameter, "options.wasmBinary");
  }
  assert.deepEqual(out[2], { separate: true, same: true, again: true, out: 5 });
});

test("timeout: a load not finished in time rejects with load_failed; a later load succeeds", () => {
  const { out, ms } = child(
    dist,
    `
    try { await attnkit.createAttnkit({ threads: 2, timeout: 1 }); report({ loaded: true }); }
    catch (e) { report(describeError(e)); }
    const a = await attnkit.createAttnkit({ threads: 2 });
    report({ threads: a.threads, out: a.attention([[1]], [[1]], [[7]]).data[0] });`,
  );
  assert.deepEqual(
    { ...out[0], message: undefined },
    { attnkit: true, code: "load_failed", parameter: "options.timeout", message: undefined },
  );
  assert.match(
    out[0].message,
    /^options\.timeout: expected the threads build to load within 1 ms, got no module in that time/,
  );
  assert.deepEqual(out[1], { threads: 2, out: 7 });
  assert.ok(ms < 20000, `${ms} ms`);
});
