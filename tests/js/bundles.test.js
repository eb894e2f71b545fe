// Lean bundles: the packed tarball installed into a fresh project, a minimal app
// bundled by esbuild for Node and for browsers from each entry point. An app
// that imports a lean entry point (attnkit/simd, attnkit/threads, attnkit/model)
// holds only that entry point's builds; "attnkit" holds all six. The Node
// bundles run and print the right number. The sizes measured (and those of a
// Vite app) are the table of docs/api-js.md, which a test keeps true. Also the
// lean entry points' refusals of options that pick a build they do not hold.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { AttnkitError } from "attnkit";
import { installPacked, root, run } from "./lib/packed.js";

const esbuild = join(root, "node_modules/.bin/esbuild");
const BUILDS = ["simd", "scalar", "threads", "simd-model", "scalar-model", "threads-model"];
const BUDGET_GZIP = 150 * 1024;
// The rows of docs/api-js.md's size table (its first column, as written there).
const ROWS = {
  node: "esbuild, Node (`--platform=node`), the bundle",
  web: "esbuild, browser, the bundle (+ `.wasm` files to copy)",
  load: "esbuild, browser, default load: bundle + `attnkit-simd.wasm`",
  loadMin: "the same, `--minify`",
  viteLoad: "Vite, default load: JS + `attnkit-simd.wasm`",
  viteAll: "Vite, everything it emits (`dist/assets`)",
};
// A stated size may differ from the measured one by this much (raw and gzipped):
// the larger of 2% and 2 KB.
const TABLE_TOLERANCE = { relative: 0.02, absolute: 2 * 1024 };

// Each entry point, the options its app loads with, and the builds it must hold.
const ENTRIES = [
  { entry: "attnkit/simd", options: {}, builds: ["simd", "scalar"] },
  { entry: "attnkit/threads", options: { threads: 2 }, builds: ["simd", "scalar", "threads"] },
  {
    entry: "attnkit/model",
    options: { model: true },
    builds: ["simd-model", "scalar-model", "threads-model"],
  },
  { entry: "attnkit", options: {}, builds: BUILDS },
];

/** The app: loads `entry` with `options`, prints what attention([[1]], [[1]], [[2]]) gives. */
function appSource(entry, options, print) {
  return `import createAttnkit from "${entry}";
async function main() { // no top-level await: CommonJS output cannot hold it
  const attn = await createAttnkit(${JSON.stringify(options)});
  const r = { value: attn.attention([[1]], [[1]], [[2]]).data[0], simd: attn.simd, threads: attn.threads, model: attn.model };
  ${print};
}
main();
`;
}

// Set by the before hook of "lean bundles from the packed tarball": its work
// folder, the app folder and the packed package's dist.
let tmp, app, dist;
// A slice from the middle of each build's embedded wasm (Node) and each
// build's wasm reference (browsers): present in a bundle exactly when the
// bundle holds that build.
const nodeMark = {};
const webBuilds = (text) =>
  [...text.matchAll(/new URL\("attnkit-([a-z-]+)\.wasm",\s*import\.meta\.url\)/g)]
    .map((m) => m[1])
    .sort();
const nodeBuilds = (text) => BUILDS.filter((b) => text.includes(nodeMark[b])).sort();
const gz = (file) => gzipSync(readFileSync(file), { level: 9 }).length;
const bytes = (file) => readFileSync(file).length;
// What the tests measured: row key -> entry -> { raw, gz } (bytes).
const measured = {};
const record = (row, entry, files) => {
  measured[row] ??= {};
  measured[row][entry] = {
    raw: files.reduce((n, f) => n + bytes(f), 0),
    gz: files.reduce((n, f) => n + gz(f), 0),
  };
};

describe("lean bundles from the packed tarball", () => {
  before(() => {
    ({ tmp, app } = installPacked("attnkit-bundles-"));
    dist = join(app, "node_modules/attnkit/dist");
    const embedded = {};
    for (const b of BUILDS) {
      const text = readFileSync(join(dist, `attnkit-${b}.node.cjs`), "utf8");
      embedded[b] = /base64,([A-Za-z0-9+/=]{100000,})/.exec(text)?.[1];
      assert.ok(embedded[b], `attnkit-${b}.node.cjs embeds its wasm`);
      assert.deepEqual(webBuilds(readFileSync(join(dist, `attnkit-${b}.mjs`), "utf8")), [b]);
    }
    // The builds share code: a slice of 64 characters that no other build's wasm holds.
    for (const b of BUILDS) {
      const wasm = embedded[b];
      for (let at = 0; at + 64 <= wasm.length && !nodeMark[b]; at += 4096) {
        const slice = wasm.slice(at, at + 64);
        if (BUILDS.every((o) => o === b || !embedded[o].includes(slice))) nodeMark[b] = slice;
      }
      assert.ok(nodeMark[b], `a slice of attnkit-${b}.node.cjs's wasm that is its own`);
    }
  });

  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it("the model layer's JS is in model-layer.mjs and model-layer.node.cjs only, not in an entry point's file", () => {
    // A message of each of its modules: model.js, language.js, head-scores.js.
    const MARKS = [
      "config.layerNormEpsilon",
      "an object {seqLen, seed?, ...}",
      "a maxSeqLen of 4 or more",
    ];
    for (const entry of ["attnkit", "simd", "threads", "model", "worker-host"]) {
      for (const file of [`${entry}.mjs`, `${entry}.node.cjs`]) {
        const text = readFileSync(join(dist, file), "utf8");
        for (const mark of MARKS) assert.ok(!text.includes(mark), `${file} holds "${mark}"`);
      }
    }
    for (const file of ["model-layer.mjs", "model-layer.node.cjs"]) {
      const text = readFileSync(join(dist, file), "utf8");
      for (const mark of MARKS) assert.ok(text.includes(mark), `${file} lacks "${mark}"`);
    }
  });

  describe("Node bundles", nodeBundleTests);
  describe("browser bundles", browserBundleTests);
  describe("docs/api-js.md", sizeTableTests);
});

/** esbuild Node bundles of the app: the builds each holds, that it runs, and its size. */
function nodeBundleTests() {
  for (const { entry, options, builds } of ENTRIES) {
    it(`esbuild Node bundles (ESM, CommonJS) of an app importing ${entry} hold ${builds.join(", ")} and run`, () => {
      const name = entry.replace("/", "-");
      const source = join(app, `${name}-node.js`);
      writeFileSync(source, appSource(entry, options, "console.log(JSON.stringify(r))"));
      // The bundle holds the entry point's JS layer and its builds' loaders (wasm embedded),
      // reindented by esbuild (a few %), nothing else.
      const entryFile = entry === "attnkit" ? "attnkit" : entry.slice("attnkit/".length);
      // An entry point with the model builds also holds the model layer's JS, the
      // checkpoint reader and, after it, GPT-2's tokenizer's ranks (js-tiktoken's),
      // loaded by openCheckpoint, and the ONNX writer, loaded by exportOnnx.
      const checkpoint = builds.some((b) => b.endsWith("-model"))
        ? [
            join(dist, "model-layer.node.cjs"),
            join(dist, "checkpoint.node.cjs"),
            join(dist, "onnx.node.cjs"),
            join(app, "node_modules/js-tiktoken/dist/ranks/gpt2.cjs"),
          ]
        : [];
      const most = [`${entryFile}.node.cjs`, ...builds.map((b) => `attnkit-${b}.node.cjs`)]
        .map((f) => join(dist, f))
        .concat(checkpoint)
        .map((f) => bytes(f))
        .reduce((a, b) => a + b, 0);
      for (const format of ["esm", "cjs"]) {
        const dir = join(app, "out", `${name}-node-${format}`);
        const out = join(dir, format === "esm" ? "app.mjs" : "app.cjs");
        run(
          esbuild,
          [
            source,
            "--bundle",
            "--platform=node",
            `--format=${format}`,
            "--log-level=error",
            `--outfile=${out}`,
          ],
          app,
        );
        if (format === "esm") record("node", entry, [out]);
        const text = readFileSync(out, "utf8");
        assert.deepEqual(
          nodeBuilds(text),
          [...builds].sort(),
          `${entry} ${format}: the builds embedded`,
        );
        assert.ok(
          bytes(out) <= most * 1.1,
          `${entry} ${format}: ${bytes(out)} bytes, more than its builds and JS (${most} bytes)`,
        );
        // The threads build's worker and loader are files beside the bundle.
        if (builds.includes("threads")) {
          for (const f of ["attnkit-threads.node.worker.cjs", "attnkit-threads.node.cjs"])
            copyFileSync(join(dist, f), join(dir, f));
        }
        const r = JSON.parse(run(process.execPath, [out], dir).trim());
        assert.deepEqual(
          r,
          { value: 2, simd: true, threads: options.threads ?? 1, model: options.model === true },
          `${entry} ${format}: what the bundled app printed`,
        );
      }
    });
  }

  it("an esbuild Node bundle of a single-threaded app importing attnkit/simd is under 1.6 MB and under 45% of attnkit's", () => {
    const size = {};
    for (const entry of ["attnkit", "attnkit/simd"]) {
      const source = join(app, `${entry.replace("/", "-")}-size.js`);
      writeFileSync(source, appSource(entry, {}, "console.log(r.value)"));
      const out = join(app, "out", `${entry.replace("/", "-")}-size`, "app.mjs");
      run(
        esbuild,
        [
          source,
          "--bundle",
          "--platform=node",
          "--format=esm",
          "--log-level=error",
          `--outfile=${out}`,
        ],
        app,
      );
      assert.equal(run(process.execPath, [out], app).trim(), "2");
      size[entry] = bytes(out);
    }
    console.log(
      `esbuild Node app: attnkit ${size.attnkit} bytes, attnkit/simd ${size["attnkit/simd"]} bytes`,
    );
    assert.ok(
      size["attnkit/simd"] < 1.6 * 1024 * 1024 && size["attnkit/simd"] < 0.45 * size.attnkit,
      `attnkit/simd bundle: ${size["attnkit/simd"]} bytes (attnkit: ${size.attnkit} bytes)`,
    );
  });
}

/** esbuild browser bundles and Vite apps: what each loads and what each emits. */
function browserBundleTests() {
  it("esbuild browser bundles hold only their entry point's loaders; the attnkit/simd load is under 150 KB gzipped", () => {
    const loads = [];
    for (const { entry, options, builds } of ENTRIES) {
      const name = entry.replace("/", "-");
      const source = join(app, `${name}-web.js`);
      writeFileSync(
        source,
        appSource(entry, options, "document.body.textContent = JSON.stringify(r)"),
      );
      for (const minify of [false, true]) {
        const out = join(app, "out", `${name}-web${minify ? "-min" : ""}`, "app.js");
        const args = [source, "--bundle", "--format=esm", "--log-level=error", `--outfile=${out}`];
        run(esbuild, minify ? [...args, "--minify"] : args, app);
        const text = readFileSync(out, "utf8");
        assert.deepEqual(webBuilds(text), [...builds].sort(), `${entry}: the builds' loaders`);
        // What the page loads by default: the bundle and the first build's .wasm.
        const wasm = join(dist, `attnkit-${builds[0]}.wasm`);
        loads.push({ entry, minify, raw: bytes(out) + bytes(wasm), gz: gz(out) + gz(wasm) });
        if (!minify) record("web", entry, [out]);
        if (builds[0] === "simd") record(minify ? "loadMin" : "load", entry, [out, wasm]);
      }
    }
    const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
    // GPT-2's tokenizer ranks (half a megabyte) are a file the checkpoint reader fetches:
    // an app that never opens a checkpoint does not carry them.
    const ranks = readFileSync(join(app, "node_modules/js-tiktoken/dist/ranks/gpt2.js"), "utf8");
    const slice = ranks.slice(ranks.length / 2, ranks.length / 2 + 64);
    for (const { entry } of ENTRIES) {
      const out = join(app, "out", `${entry.replace("/", "-")}-web`, "app.js");
      assert.ok(!readFileSync(out, "utf8").includes(slice), `${entry}: the bundle holds the ranks`);
    }
    console.log(
      ["| entry | minified | bundle + .wasm raw | gzipped |", "|---|---|---:|---:|"]
        .concat(loads.map((l) => `| ${l.entry} | ${l.minify} | ${kb(l.raw)} | ${kb(l.gz)} |`))
        .join("\n"),
    );
    const simd = loads.find((l) => l.entry === "attnkit/simd" && l.minify);
    assert.ok(simd.gz < BUDGET_GZIP, `attnkit/simd, minified: ${kb(simd.gz)} gzipped`);
  });

  it("Vite apps of attnkit and attnkit/simd: what the page loads by default, and everything emitted", () => {
    for (const entry of ["attnkit", "attnkit/simd"]) {
      const site = join(app, `vite-${entry.replace("/", "-")}`);
      mkdirSync(site);
      writeFileSync(
        join(site, "index.html"),
        '<!doctype html><html><body><script type="module" src="./main.js"></script></body></html>',
      );
      writeFileSync(
        join(site, "main.js"),
        appSource(entry, {}, "document.body.textContent = JSON.stringify(r)"),
      );
      const vite = join(root, "node_modules/vite/bin/vite.js");
      run(process.execPath, [vite, "build", "--manifest", "--logLevel", "warn"], site);
      const built = join(site, "dist");
      const manifest = JSON.parse(readFileSync(join(built, ".vite/manifest.json"), "utf8"));
      // The entry chunk, the SIMD build's loader chunk it imports when it picks
      // that build, their static imports, and the SIMD build's .wasm.
      const files = new Set();
      const add = (key) => {
        const chunk = manifest[key];
        if (files.has(chunk.file)) return;
        files.add(chunk.file);
        for (const k of chunk.imports ?? []) add(k);
      };
      const entryKey = Object.keys(manifest).find((k) => manifest[k].isEntry);
      const simdKey = manifest[entryKey].dynamicImports?.find((k) =>
        k.endsWith("/attnkit-simd.mjs"),
      );
      assert.ok(simdKey, `${entry}: the SIMD build's loader is a chunk of its own`);
      add(entryKey);
      add(simdKey);
      const assets = readdirSync(join(built, "assets"));
      const wasm = assets.filter((f) => /^attnkit-simd-[\w-]{8}\.wasm$/.test(f));
      assert.equal(wasm.length, 1, `${entry}: the SIMD build's .wasm among ${assets.join(", ")}`);
      files.add(`assets/${wasm[0]}`);
      record(
        "viteLoad",
        entry,
        [...files].map((f) => join(built, f)),
      );
      record(
        "viteAll",
        entry,
        assets.map((f) => join(built, "assets", f)),
      );
    }
  });
}

/** The size table of docs/api-js.md against what the tests above measured. */
function sizeTableTests() {
  it("the size table of docs/api-js.md states the sizes measured", () => {
    const doc = readFileSync(join(root, "docs/api-js.md"), "utf8").split("\n");
    const header = doc.findIndex((l) => l.startsWith("| app |"));
    assert.ok(header >= 0, "docs/api-js.md has the size table");
    const entries = doc[header]
      .split("|")
      .slice(2, -1)
      .map((c) => c.trim().replace(/`/g, ""));
    const kb = (n) => `${Math.round(n / 1024).toLocaleString("en-US")} KB`;
    const cell = (m) => (m ? `${kb(m.raw)} (${kb(m.gz)} gz)` : "");
    const parse = (text) => {
      const m = /^([\d,]+) KB \(([\d,]+) KB gz\)$/.exec(text);
      return (
        m && {
          raw: Number(m[1].replace(/,/g, "")) * 1024,
          gz: Number(m[2].replace(/,/g, "")) * 1024,
        }
      );
    };
    const close = (stated, got) =>
      Math.abs(stated - got) <= Math.max(TABLE_TOLERANCE.absolute, TABLE_TOLERANCE.relative * got);
    const wrong = [];
    const rows = doc.slice(header + 2).filter((l) => l.startsWith("| "));
    for (const [key, label] of Object.entries(ROWS)) {
      const line = rows.find((l) => l.split("|")[1].trim() === label);
      assert.ok(line, `the table has the row ${label}`);
      const cells = line
        .split("|")
        .slice(2, -1)
        .map((c) => c.trim());
      entries.forEach((entry, i) => {
        if (!cells[i]) return;
        const stated = parse(cells[i]);
        const got = measured[key]?.[entry];
        assert.ok(stated, `${label}, ${entry}: "${cells[i]}" is "N KB (M KB gz)"`);
        assert.ok(got, `${label}, ${entry}: measured by this file's other tests (run all of it)`);
        if (!close(stated.raw, got.raw) || !close(stated.gz, got.gz))
          wrong.push(`${label}, ${entry}: stated ${cells[i]}, measured ${cell(got)}`);
      });
    }
    // On a mismatch, the table as measured (to paste into docs/api-js.md).
    const table = Object.entries(ROWS).map(([key, label]) => {
      const stated = rows.find((l) => l.split("|")[1].trim() === label);
      const cells = stated
        .split("|")
        .slice(2, -1)
        .map((c) => c.trim());
      return `| ${label} | ${entries.map((e, i) => (cells[i] ? cell(measured[key]?.[e]) : "")).join(" | ")} |`;
    });
    assert.deepEqual(wrong, [], `the table as measured:\n${table.join("\n")}`);
  });
}

describe("the lean entry points refuse options that pick a build they do not hold", () => {
  const CASES = [
    [
      "attnkit/simd",
      { threads: 2 },
      "options.threads",
      /^options\.threads: expected 1 with attnkit\/simd, which holds the builds simd, scalar only \(import "attnkit\/threads" or "attnkit" for threads\), got 2$/,
    ],
    [
      "attnkit/simd",
      { model: true },
      "options.model",
      /^options\.model: expected false with attnkit\/simd, .* \(import "attnkit\/model" or "attnkit" for the model\), got true$/,
    ],
    [
      "attnkit/threads",
      { model: true },
      "options.model",
      /^options\.model: expected false with attnkit\/threads, which holds the builds threads, simd, scalar only/,
    ],
    [
      "attnkit/model",
      {},
      "options.model",
      /^options\.model: expected true with attnkit\/model, which holds the builds simd-model, scalar-model, threads-model only \(import "attnkit\/simd" or "attnkit" without the model\), got false$/,
    ],
    [
      "attnkit/model",
      { simd: false },
      "options.model",
      /^options\.model: expected true with attnkit\/model/,
    ],
  ];
  for (const [entry, options, parameter, message] of CASES) {
    it(`${entry} with ${JSON.stringify(options)} rejects naming ${parameter}`, async () => {
      const { default: createAttnkit } = await import(entry);
      await assert.rejects(createAttnkit(options), (e) => {
        assert.ok(e instanceof AttnkitError, "an AttnkitError (the default entry point's class)");
        assert.equal(e.code, "invalid_argument");
        assert.equal(e.parameter, parameter);
        assert.match(e.message, message);
        return true;
      });
    });
  }

  it("the options they hold load as from attnkit, whatever the hardware's thread count", async () => {
    const simd = await (await import("attnkit/simd")).default({ simd: false });
    assert.deepEqual([simd.simd, simd.model], [false, false]);
    const model = await (await import("attnkit/model")).default({ model: true });
    assert.deepEqual([model.simd, model.model], [true, true]);
    const threads = await (await import("attnkit/threads")).default({ threads: 2 });
    assert.equal(threads.threads, Math.min(2, (await import("node:os")).availableParallelism()));
    threads.dispose();
    assert.equal(model.attention([[1]], [[1]], [[3]]).data[0], 3);
  });
});
