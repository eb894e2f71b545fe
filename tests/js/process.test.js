// Loading attnkit leaves Node's process-wide error handling alone (#18, defect
// 1): no uncaughtException / unhandledRejection handlers, no process.exit. Each
// case runs in a child process that loads a build (simd, scalar, threads) from
// ESM or CommonJS, then misbehaves the way a user's own code does.
import test from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const dist = fileURLToPath(new URL("../../dist/", import.meta.url));
const esmEntry = pathToFileURL(join(dist, "attnkit.node.mjs")).href;
const cjsEntry = join(dist, "attnkit.node.cjs");
const BUILDS = { simd: { simd: true }, scalar: { simd: false }, threads: { threads: 2 } };

const COUNTS = `const counts = () => ["uncaughtException", "unhandledRejection"].map((e) => process.listenerCount(e));`;

/** The child's script: load `build`, print the listener counts, then run `then` (code). */
function script(kind, build, then) {
  const options = JSON.stringify(BUILDS[build]);
  if (kind === "esm") {
    return `import { createAttnkit } from ${JSON.stringify(esmEntry)};
${COUNTS}
const before = counts();
const attn = await createAttnkit(${options});
attn.attention([[1, 2]], [[3, 4]], [[5]]);
console.log(JSON.stringify({ before, after: counts(), threads: attn.threads }));
${then}`;
  }
  return `const { createAttnkit } = require(${JSON.stringify(cjsEntry)});
${COUNTS}
const before = counts();
createAttnkit(${options}).then((attn) => {
  attn.attention([[1, 2]], [[3, 4]], [[5]]);
  console.log(JSON.stringify({ before, after: counts(), threads: attn.threads }));
  setTimeout(() => { ${then} });
});`;
}

function runChild(kind, source, nodeArgs = []) {
  const args = [
    ...nodeArgs,
    ...(kind === "esm" ? ["--input-type=module"] : ["--input-type=commonjs"]),
    "-e",
    source,
  ];
  return spawnSync(process.execPath, args, { encoding: "utf8", timeout: 60000 });
}

function checkCounts(r, label) {
  const line = r.stdout.split("\n").find((l) => l.startsWith("{"));
  assert.ok(
    line,
    `${label}: the child loaded attnkit (stdout ${r.stdout}, stderr ${r.stderr.slice(0, 2000)})`,
  );
  const { before, after } = JSON.parse(line);
  assert.deepEqual(
    after,
    before,
    `${label}: listener counts of uncaughtException, unhandledRejection`,
  );
}

for (const kind of ["esm", "cjs"]) {
  for (const build of Object.keys(BUILDS)) {
    test(`${kind}, ${build} build: a throw in the user's code exits with code 1 and the user's message only`, () => {
      const r = runChild(kind, script(kind, build, `throw new Error("user bug 42");`));
      const label = `${kind} ${build}`;
      checkCounts(r, label);
      assert.equal(r.status, 1, `${label}: exit code (stderr: ${r.stderr.slice(0, 500)})`);
      assert.match(r.stderr, /Error: user bug 42/);
      assert.ok(
        r.stderr.length < 4000,
        `${label}: stderr is the error and its stack, not the loader's source (${r.stderr.length} chars)`,
      );
      assert.doesNotMatch(r.stderr, /createAttnkitModule|Module\[|ExitStatus/);
    });
  }
}

for (const build of Object.keys(BUILDS)) {
  test(`--unhandled-rejections=warn: a user's unhandled rejection does not end the process (${build})`, () => {
    const r = runChild(
      "esm",
      script(
        "esm",
        build,
        `Promise.reject(new Error("ignored rejection")); setTimeout(() => console.log("still alive"), 50);`,
      ),
      ["--unhandled-rejections=warn"],
    );
    checkCounts(r, build);
    assert.equal(r.status, 0, `${build}: exit code (stderr: ${r.stderr.slice(0, 500)})`);
    assert.match(r.stdout, /still alive/);
    assert.match(r.stderr, /ignored rejection/);
  });
}

test("no file in dist/ installs process handlers, calls process.exit or sets a global Worker", () => {
  const files = readdirSync(dist).filter((f) => /\.(c|m)?js$/.test(f));
  assert.ok(files.length >= 10, files.join(", "));
  for (const f of files) {
    const text = readFileSync(join(dist, f), "utf8");
    for (const bad of [
      '"uncaughtException"',
      '"unhandledRejection"',
      "'uncaughtException'",
      "'unhandledRejection'",
      'process["exit"]',
      "process.exit(",
      "global.Worker=",
    ]) {
      assert.ok(!text.includes(bad), `${f} contains ${bad}`);
    }
  }
});
