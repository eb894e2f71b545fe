// The benchmarks' harness is written once (docs/benchmarks.md, "Asking a
// question"): bench/lib for JavaScript, bench/native/harness.h for C++. These
// tests read bench/ and fail when a script defines a helper of its own again
// (a median, a seeded generator, a CPU clock, the tfjs setup, ...) instead of
// importing it, or when an A/B is compiled outside CMake.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const bench = join(root, "bench");

/** Every file under bench/ with one of the extensions (not node_modules, models or results). */
function files(exts, dir = bench) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      if (!["node_modules", "models", "results"].includes(e.name)) out.push(...files(exts, path));
    } else if (exts.some((x) => e.name.endsWith(x))) out.push(path);
  }
  return out;
}

/** "file:line: text" for every line of the files outside `home` that matches a pattern. */
function offenders(list, home, patterns) {
  const found = [];
  for (const file of list) {
    const name = relative(root, file);
    if (name.startsWith(home)) continue;
    readFileSync(file, "utf8")
      .split("\n")
      .forEach((line, i) => {
        if (patterns.some((p) => p.test(line))) found.push(`${name}:${i + 1}: ${line.trim()}`);
      });
  }
  return found;
}

const js = files([".mjs", ".js"]);
const cxx = files([".cc", ".h"]);

test("JS helpers are defined only in bench/lib", () => {
  const defines = (name) => new RegExp(`(function\\s+${name}\\b|(const|let|var)\\s+${name}\\s*=)`);
  const patterns = [
    ...["median", "quartile", "random", "fillRandom", "maxDiff", "cpuMs", "cpuNow"].map(defines),
    ...["loadTfjs", "useTfjsWasm", "wasmPeak", "cpuModel", "mobyDick", "packageVersion"].map(
      defines,
    ),
    ...["pairedRounds", "callsPerBatch", "readJson", "num", "mb"].map(defines),
    /function\s+publish\b/,
    /1664525/, // the generator's multiplier: a seeded generator of its own
    /sort\(\(a, b\) => a - b\)\[/, // an order statistic of its own
    /setBackend\("wasm"\)/, // tfjs's backend set up again
  ];
  assert.deepEqual(offenders(js, "bench/lib/", patterns), []);
});

test("every script that uses a helper imports it from bench/lib", () => {
  const helpers = ["median", "quartile", "random", "maxDiff", "cpuMs"];
  const missing = [];
  for (const file of js) {
    const name = relative(root, file);
    if (name.startsWith("bench/lib/")) continue;
    const text = readFileSync(file, "utf8");
    for (const h of helpers) {
      const used = new RegExp(`(?<![\\w.])${h}\\(`).test(text);
      const imported = new RegExp(
        `import\\s*\\{[^}]*\\b${h}\\b[^}]*\\}\\s*from\\s*"[./]*lib/stats\\.mjs"`,
      ).test(text);
      const given = new RegExp(`\\{[^}]*\\b${h}\\b[^}]*\\}\\s*=\\s*stats`).test(text);
      if (used && !imported && !given) missing.push(`${name}: ${h}`);
    }
  }
  assert.deepEqual(missing, []);
});

test("C++ helpers are defined only in bench/native/harness.h", () => {
  const patterns = [
    /clock_gettime\(/,
    /std::mt19937/,
    /\bdouble\s+(Median|CpuMs|CpuSeconds|MicrosPerCall)\s*\(/,
    /std::sort\(/, // a median of its own
  ];
  assert.deepEqual(offenders(cxx, "bench/native/harness.h", patterns), []);
});

test("the A/B and the native benchmarks are built by CMake, not by hand", () => {
  const scripts = files([".sh"]);
  assert.deepEqual(offenders(scripts, "-", [/\b(g\+\+|clang\+\+|c\+\+)\s+-/]), []);
  assert.deepEqual(offenders([...cxx, ...scripts], "-", [/ATTNKIT_AB_OLD_API|__has_include/]), []);
  const cmake = readFileSync(join(bench, "CMakeLists.txt"), "utf8");
  for (const source of cxx.filter((f) => f.endsWith(".cc")).map((f) => relative(bench, f))) {
    const question = source.match(/^native\/(\w+)_ab\.cc$/)?.[1];
    assert.ok(
      question ? cmake.includes(question) : cmake.includes(source),
      `${source} is not built by bench/CMakeLists.txt`,
    );
  }
});
