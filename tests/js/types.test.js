// The hand-written TypeScript declarations, checked as a consumer sees them:
// `tsc --strict` (never skipLibCheck) resolves "attnkit" through package.json
// "exports" to dist/attnkit.d.ts ("import") or dist/attnkit.d.cts ("require"),
// for each kind of consumer in tests/js/types/tsconfig.*.json:
//   node      an ES module .ts (types-usage.ts: every export, and @ts-expect-error
//             lines for wrong uses), an .mts and a .cts, under --module node16
//             and --module nodenext;
//   bundler   the .ts and .mts under moduleResolution bundler, module esnext;
//   preserve  the .ts and the .cts under moduleResolution bundler, module preserve;
// each over --target es2020 / es2022 / es2023 / es2024 / es2025 (if this tsc knows
// it) / esnext, with --lib the target alone and the target + esnext.disposable
// (then also `using` a KV cache: the *.using.json configs), plus the target's
// default lib (DOM) and @types/node. Configs run in parallel, a few at a time.
// Every config has strict and exactOptionalPropertyTypes; one run goes without the
// latter. The JavaScript snippets of the README and docs/api-js.md compile too,
// as a TypeScript user pastes them.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tsc = `${root}/node_modules/typescript/bin/tsc`;
const tscMajor = Number(
  JSON.parse(readFileSync(`${root}/node_modules/typescript/package.json`, "utf8")).version.split(
    ".",
  )[0],
);
// TypeScript 7 checks with several threads by default; the runs here go in parallel instead.
const tscFlags = tscMajor >= 7 ? ["--singleThreaded"] : [];

/** Runs tsc with `args` from the repo root: { status, output }. */
function runTsc(args) {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [tsc, ...tscFlags, ...args],
      { cwd: root, encoding: "utf8", maxBuffer: 1 << 26 },
      (error, stdout, stderr) => {
        resolve({ status: error ? (error.code ?? 1) : 0, output: `${stdout}${stderr}` });
      },
    );
  });
}

/** Runs `jobs` (functions returning promises) at most `limit` at a time; results in order. */
async function pool(jobs, limit) {
  const results = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, worker));
  return results;
}

/** True if this tsc takes `--target value` (older TypeScript lacks es2025). */
function knowsTarget(value) {
  const r = spawnSync(
    process.execPath,
    [tsc, "-p", "tests/js/types/tsconfig.node.json", "--target", value, "--showConfig"],
    { cwd: root, encoding: "utf8" },
  );
  return r.status === 0;
}

// Consumers: the config (tests/js/types/tsconfig.<config>[.using].json) and extra flags.
const CONSUMERS = [
  {
    name: "node16 (.ts ESM, .mts, .cts)",
    config: "node",
    flags: ["--module", "node16"],
    cjs: true,
  },
  {
    name: "nodenext (.ts ESM, .mts, .cts)",
    config: "node",
    flags: ["--module", "nodenext"],
    cjs: true,
  },
  { name: "bundler, module esnext (.ts, .mts)", config: "bundler", flags: [], cjs: false },
  { name: "bundler, module preserve (.ts, .cts)", config: "preserve", flags: [], cjs: true },
];

/** The --target / --lib / --types combinations, and whether `using` type-checks there. */
function libs(es2025) {
  const targets = ["es2020", "es2022", "es2023", "es2024", ...(es2025 ? ["es2025"] : []), "esnext"];
  const out = [];
  for (const t of targets) {
    // lib "esnext" has esnext.disposable: there is no "without" for it.
    if (t !== "esnext")
      out.push({ label: `${t}, lib ${t}`, flags: ["--target", t, "--lib", t], disposable: false });
    out.push({
      label: `${t}, lib ${t} + esnext.disposable`,
      flags: ["--target", t, "--lib", `${t},esnext.disposable`],
      disposable: true,
    });
  }
  // The target's default lib (with DOM), and @types/node (which brings esnext.disposable).
  out.push({
    label: "es2022, lib es2022 + dom",
    flags: ["--target", "es2022", "--lib", "es2022,dom,dom.iterable"],
    disposable: false,
  });
  out.push({
    label: "es2022, lib es2022, types node",
    flags: ["--target", "es2022", "--lib", "es2022", "--types", "node"],
    disposable: true,
  });
  return out;
}

describe("TypeScript declarations", () => {
  it("the shipped .d.ts and .d.cts are src/js/attnkit.d.ts", () => {
    const src = readFileSync(`${root}/src/js/attnkit.d.ts`, "utf8");
    for (const file of ["attnkit.d.ts", "attnkit.d.cts"]) {
      assert.equal(
        readFileSync(`${root}/dist/${file}`, "utf8"),
        src,
        `dist/${file} is stale: run bash scripts/build.sh package`,
      );
    }
  });

  it("package.json exports types for both the import and the require condition", () => {
    const pkg = JSON.parse(readFileSync(`${root}/package.json`, "utf8"));
    const dot = pkg.exports["."];
    // The lean entry points have the same exports, hence the same declarations.
    for (const path of [".", "./simd", "./threads", "./model"]) {
      for (const env of ["node", "default"]) {
        const where = `${path} ${env}`;
        assert.equal(pkg.exports[path][env].import.types, "./dist/attnkit.d.ts", where);
        assert.equal(pkg.exports[path][env].require.types, "./dist/attnkit.d.cts", where);
      }
    }
    assert.equal(dot.node.import.default, "./dist/attnkit.node.mjs");
    assert.equal(dot.node.require.default, "./dist/attnkit.node.cjs");
    assert.equal(pkg.types, "./dist/attnkit.d.ts");
    assert.ok(
      pkg.files.includes("dist/attnkit.d.ts") && pkg.files.includes("dist/attnkit.d.cts"),
      "files ships both",
    );
  });

  it("tsc --strict accepts every consumer over every target and lib, and every @ts-expect-error", async () => {
    const jobs = [];
    const es2025 = knowsTarget("es2025");
    for (const consumer of CONSUMERS) {
      for (const lib of libs(es2025)) {
        const config = `tests/js/types/tsconfig.${consumer.config}${lib.disposable ? ".using" : ""}.json`;
        const args = [
          "-p",
          config,
          "--strict",
          "--noEmit",
          "--listFiles",
          ...consumer.flags,
          ...lib.flags,
        ];
        jobs.push(async () => ({ consumer, lib, args, ...(await runTsc(args)) }));
      }
    }
    // Without exactOptionalPropertyTypes, as most projects compile.
    jobs.push(async () => {
      const args = ["-p", "tests/js/types/tsconfig.node.json", "--listFiles"];
      const off = [...args, "--exactOptionalPropertyTypes", "false"];
      return {
        consumer: CONSUMERS[1],
        lib: { label: "exactOptionalPropertyTypes false" },
        args: off,
        ...(await runTsc(off)),
      };
    });
    // The hand-run config (nodenext, es2022 + esnext.disposable) too.
    jobs.push(async () => ({
      consumer: { name: "tests/js/tsconfig.json", cjs: false },
      lib: { label: "as written" },
      args: ["-p", "tests/js/tsconfig.json", "--listFiles"],
      ...(await runTsc(["-p", "tests/js/tsconfig.json", "--listFiles"])),
    }));
    const results = await pool(jobs, Math.max(2, availableParallelism()));
    const failures = [];
    for (const r of results) {
      const what = `${r.consumer.name}, ${r.lib.label}: tsc ${r.args.join(" ")}`;
      const errors = r.output.split("\n").filter((line) => / error TS\d+/.test(line));
      if (r.status !== 0) {
        failures.push(
          `${what}\n  exit ${r.status}\n  ${(errors.length ? errors : [r.output.trim()]).join("\n  ")}`,
        );
        continue;
      }
      // Resolved through package.json exports to dist/, never to src/.
      const files = r.output.split("\n");
      const missing = [
        "/dist/attnkit.d.ts",
        ...(r.consumer.cjs ? ["/dist/attnkit.d.cts"] : []),
      ].filter((f) => !files.some((line) => line.endsWith(f)));
      if (missing.length) failures.push(`${what}\n  did not load ${missing.join(", ")}`);
      if (files.some((line) => line.includes("/src/js/")))
        failures.push(`${what}\n  loaded src/js instead of dist/`);
    }
    assert.equal(
      failures.length,
      0,
      `${failures.length} of ${results.length} tsc runs failed:\n${failures.join("\n")}`,
    );
  });
});

/** The ```js blocks of a Markdown file, in order. */
function jsBlocks(file) {
  const text = readFileSync(`${root}/${file}`, "utf8");
  return [...text.matchAll(/^```js\n([\s\S]*?)^```/gm)].map((m) => m[1]);
}

/**
 * A Markdown file's JavaScript snippets as the scripts a reader runs: a block
 * that loads its own module (`const attn = ...`) starts a script, the blocks after
 * it carry on in it; a script that loads none starts with the README quickstart's
 * import and load, as the text says to do first.
 */
function snippetScripts(file) {
  const quickstart = jsBlocks("README.md")[0].split("\n");
  const imports = quickstart.filter((line) => line.startsWith("import "));
  const load = quickstart.find((line) => line.startsWith("const attn ="));
  const scripts = [];
  for (const block of jsBlocks(file)) {
    const loads = /\bconst attn\b/.test(block);
    if (loads || scripts.length === 0) {
      scripts.push([
        ...(/from "attnkit(\/\w+)?"/.test(block) ? [] : imports),
        ...(loads ? [] : [load]),
      ]);
    }
    scripts[scripts.length - 1].push(block);
  }
  return scripts.map((lines) => `${lines.join("\n")}\nexport {};\n`);
}

describe("The JavaScript snippets of the README and the JS API docs", () => {
  it("compile as TypeScript under strict and exactOptionalPropertyTypes", async () => {
    // A project of its own that has attnkit installed (a link to this repository,
    // resolved through package.json "exports" to dist/), with @types/node for console.
    const dir = mkdtempSync(`${tmpdir()}/attnkit-snippets-`);
    try {
      mkdirSync(`${dir}/node_modules`);
      symlinkSync(root, `${dir}/node_modules/attnkit`, "dir");
      const files = [];
      for (const doc of ["README.md", "docs/api-js.md"]) {
        snippetScripts(doc).forEach((script, i) => {
          const name = `${doc.replace(/\W/g, "-")}-${i + 1}.mts`;
          writeFileSync(`${dir}/${name}`, script);
          files.push(name);
        });
      }
      assert.ok(files.length >= 4, `${files.length} scripts: ${files.join(", ")}`);
      writeFileSync(
        `${dir}/tsconfig.json`,
        JSON.stringify({
          compilerOptions: {
            strict: true,
            exactOptionalPropertyTypes: true,
            module: "nodenext",
            target: "es2022",
            lib: ["es2022"],
            types: ["node"],
            typeRoots: [`${root}/node_modules/@types`],
            noEmit: true,
          },
          files,
        }),
      );
      const r = await runTsc(["-p", `${dir}/tsconfig.json`]);
      assert.equal(r.status, 0, `tsc failed on ${files.join(", ")}:\n${r.output}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
