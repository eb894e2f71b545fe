// The scalar build really has no SIMD, the SIMD build really uses it: binaryen's
// validator (wasm-opt, no passes) with the MVP plus the post-MVP features
// emscripten uses, but not SIMD, accepts the scalar module and rejects the SIMD
// one; with --enable-simd it accepts both. A second, independent look: the
// disassembly (wasm-dis) of each module, counting v128 instructions. Checked for
// the browser .wasm files and for the modules embedded in the Node loaders.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createAttnkit } from "attnkit";

const root = fileURLToPath(new URL("../..", import.meta.url));
const WASM_OPT = "/usr/bin/wasm-opt",
  WASM_DIS = "/usr/bin/wasm-dis";
const NO_SIMD = [
  "--mvp-features",
  "--enable-bulk-memory",
  "--enable-sign-ext",
  "--enable-mutable-globals",
  "--enable-nontrapping-float-to-int",
];
const SIMD_OP = /\b(v128\.|[if](8x16|16x8|32x4|64x2)\.)/g;

function validate(file, extra = []) {
  const r = spawnSync(WASM_OPT, [...NO_SIMD, ...extra, file, "-o", "/dev/null"], {
    encoding: "utf8",
    stdio: ["ignore", "ignore", "pipe"],
    maxBuffer: 256 << 20,
  });
  return { status: r.status, stderr: r.stderr ?? "" };
}

function simdInstructions(file) {
  const r = spawnSync(WASM_DIS, [file], { encoding: "utf8", maxBuffer: 512 << 20 });
  assert.equal(r.status, 0, r.stderr);
  return (r.stdout.match(SIMD_OP) ?? []).length;
}

/** The wasm module embedded (-sSINGLE_FILE) in a Node loader, as bytes. */
function embedded(loader) {
  const m = readFileSync(join(root, "dist", loader), "utf8").match(
    /data:application\/octet-stream;base64,([A-Za-z0-9+/=]{100,})/,
  );
  assert.ok(m, `${loader} embeds a base64 wasm module`);
  const bytes = Buffer.from(m[1], "base64");
  assert.deepEqual([...bytes.subarray(0, 4)], [0x00, 0x61, 0x73, 0x6d], "wasm magic");
  return bytes;
}

describe("WebAssembly features of the builds", () => {
  let dir;
  const files = {};
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "attnkit-wasm-"));
    files["simd (browser)"] = join(root, "dist/attnkit-simd.wasm");
    files["scalar (browser)"] = join(root, "dist/attnkit-scalar.wasm");
    for (const v of ["simd", "scalar"]) {
      const f = join(dir, `${v}.node.wasm`);
      writeFileSync(f, embedded(`attnkit-${v}.node.cjs`));
      files[`${v} (node)`] = f;
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const v of ["scalar", "simd"]) {
    for (const where of ["browser", "node"]) {
      it(`${v} (${where}): ${v === "scalar" ? "validates without SIMD and has no v128 instruction" : "does not validate without SIMD, does with it, and has many v128 instructions"}`, () => {
        const file = files[`${v} (${where})`];
        const noSimd = validate(file);
        const count = simdInstructions(file);
        if (v === "scalar") {
          assert.equal(
            noSimd.status,
            0,
            `the scalar module must validate without SIMD:\n${noSimd.stderr.slice(0, 2000)}`,
          );
          assert.equal(count, 0, "no SIMD instruction in the scalar module");
        } else {
          assert.notEqual(noSimd.status, 0, "the SIMD module must not validate without SIMD");
          assert.match(noSimd.stderr, /SIMD is disabled/);
          assert.equal(
            validate(file, ["--enable-simd"]).status,
            0,
            "the SIMD module validates with --enable-simd",
          );
          assert.ok(count > 100, `SIMD instructions: ${count}`);
        }
      });
    }
  }

  it("the loaded modules report their Highway target", async () => {
    assert.equal((await createAttnkit({ simd: true })).target, "WASM");
    assert.equal((await createAttnkit({ simd: false })).target, "EMU128");
  });
});
