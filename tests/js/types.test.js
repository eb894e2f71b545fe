// The hand-written TypeScript declarations: tests/js/types-usage.ts uses every
// export of "attnkit" (resolved through package.json "exports" -> "types", i.e.
// dist/attnkit.d.ts) and holds @ts-expect-error lines for wrong uses.
// `tsc --noEmit -p tests/js/tsconfig.json` must exit 0.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

describe("TypeScript declarations", () => {
  it("the shipped .d.ts is the one in src/js", () => {
    assert.equal(readFileSync(`${root}/dist/attnkit.d.ts`, "utf8"), readFileSync(`${root}/src/js/attnkit.d.ts`, "utf8"),
      "dist/attnkit.d.ts is stale: run bash scripts/build.sh package");
  });

  it("tsc --noEmit (strict, module nodenext) accepts the usage file and every @ts-expect-error", () => {
    const tsc = `${root}/node_modules/typescript/bin/tsc`;
    const r = spawnSync(process.execPath, [tsc, "--noEmit", "-p", "tests/js/tsconfig.json", "--listFiles"], { cwd: root, encoding: "utf8" });
    assert.equal(r.status, 0, `tsc failed:\n${r.stdout}\n${r.stderr}`);
    // The declarations came from the package's exports map, not from src/.
    assert.match(r.stdout, /dist\/attnkit\.d\.ts/);
  });
});
