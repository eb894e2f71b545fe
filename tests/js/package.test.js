// The tarball the way users get it: `npm pack`, install the .tgz into a fresh
// temporary project, then use it from Node ESM `import`, Node CommonJS
// `require`, a plain HTML page with an import map in headless Chromium, and a
// Vite app build in headless Chromium (playwright-core driving Debian's
// chromium). Also prints the package size table and checks the budget.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createServer } from "node:http";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { availableParallelism } from "node:os";
import { extname, join, normalize, posix, resolve, sep } from "node:path";
import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { createAttnkit } from "attnkit";
import * as ref from "./reference.js";
import { assertClose } from "./helpers.js";
import { ARGS as CHROMIUM_ARGS, CHROMIUM } from "../chromium.mjs";
import { installPacked, root, run } from "./lib/packed.js";

const BUDGET_GZIP = 150 * 1024;

// The computation every consumer runs: causal attention on fixed inputs, its gradient dQ
// (dO = V), plus an error check.
const INPUT = {
  Q: [
    [0.1, -0.2, 0.3, 0.4],
    [0.5, 0.6, -0.7, 0.8],
    [-0.9, 1.0, 1.1, -1.2],
  ],
  K: [
    [0.2, 0.1, -0.1, 0.3],
    [-0.4, 0.5, 0.6, 0.1],
    [0.7, -0.8, 0.2, 0.4],
  ],
  V: [
    [1, 2],
    [3, -4],
    [-5, 6],
  ],
};
const COMPUTE = `
  const input = ${JSON.stringify(INPUT)};
  function compute(attn, AttnkitError) {
    const out = attn.attention(input.Q, input.K, input.V, { causal: true });
    const dQ = Array.from(attn.attentionBackward(input.Q, input.K, input.V, input.V, { causal: true }).dQ.data);
    let error = null;
    try { attn.attention("not a matrix", input.K, input.V); } catch (e) {
      error = { attnkit: e instanceof AttnkitError, type: e instanceof TypeError, code: e.code, parameter: e.parameter, message: e.message };
    }
    return { simd: attn.simd, threads: attn.threads, target: attn.target, data: Array.from(out.data), rows: out.rows, cols: out.cols, dQ, error };
  }
  // The model builds: a tiny model's loss on one batch; a default instance's createModel error.
  const MODEL_CONFIG = { vocabSize: 8, maxSeqLen: 8, dModel: 8, numLayers: 1, numHeads: 2 };
  const MODEL_TASK = { kind: "copy", length: 3, vocabSize: 8 };
  function modelLoss(attn) {
    const model = attn.createModel(MODEL_CONFIG, { seed: 1 });
    const loss = model.evaluate(attn.makeBatch(MODEL_TASK, { batch: 2, seed: 1 })).loss;
    model.dispose();
    return { simd: attn.simd, model: attn.model, loss };
  }
  function modelError(attn) {
    try { attn.createModel(MODEL_CONFIG); return null; } catch (e) {
      return { code: e.code, parameter: e.parameter, message: e.message, model: attn.model };
    }
  }`;

const MIME = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".wasm": "application/wasm",
  ".json": "application/json",
  ".css": "text/css",
};

/** A static file server for `dir` on 127.0.0.1 and a free port. */
async function serve(dir, { isolated = false } = {}) {
  const base = resolve(dir);
  // Cross-origin isolation (SharedArrayBuffer, hence the threads build).
  const isolation = isolated
    ? {
        "cross-origin-opener-policy": "same-origin",
        "cross-origin-embedder-policy": "require-corp",
      }
    : {};
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    let file = normalize(join(base, path));
    if (file !== base && !file.startsWith(base + sep)) {
      res.writeHead(403).end();
      return;
    }
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, "index.html");
    if (!existsSync(file)) {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200, {
      "content-type": MIME[extname(file)] ?? "application/octet-stream",
      "cache-control": "no-store",
      ...isolation,
    });
    res.end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

/**
 * The relative link targets of a Markdown text: [text](target), ![alt](target),
 * reference definitions `[label]: target` and HTML href / src, outside code.
 */
function relativeLinks(markdown) {
  const text = markdown.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
  return [
    ...[...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]),
    ...[...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]),
    ...[...text.matchAll(/\b(?:href|src)="([^"]+)"/g)].map((m) => m[1]),
  ].filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("#"));
}

// Set by the before hook of "the npm package, packed and installed" and used by
// the tests of its nested describes and the helpers below.
let tmp, app, tarball, tarballFiles, browser, expected, expectedDQ, expectedModelLoss;
const servers = [];

/**
 * Loads `url` in a fresh page, waits for #result and returns it parsed; fails on console errors
 * other than those `allow` matches.
 */
async function loadPage(url, { allow = /^$/ } = {}) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console.error: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) =>
    problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`),
  );
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  try {
    await page.goto(url);
    await page.waitForFunction(() => document.getElementById("result")?.textContent, null, {
      timeout: 20000,
    });
    const text = await page.textContent("#result");
    assert.deepEqual(
      problems.filter((p) => !allow.test(p)),
      [],
      "no console errors, page errors or failed requests",
    );
    return JSON.parse(text);
  } finally {
    await context.close();
  }
}

function checkResult(r, label, simd) {
  if (r.failed) assert.fail(`${label}: ${r.failed}`);
  if (simd !== undefined) assert.equal(r.simd, simd, `${label}: simd`);
  assert.equal(r.target, r.simd ? "WASM" : r.target);
  assert.deepEqual([r.rows, r.cols], [3, 2], label);
  assertClose(r.data, expected, `${label} vs Node`, { abs: 1e-6, rel: 1e-6 });
  assertClose(r.dQ, expectedDQ, `${label}: dQ vs Node`, { abs: 1e-6, rel: 1e-6 });
  assert.deepEqual(
    {
      attnkit: r.error.attnkit,
      type: r.error.type,
      code: r.error.code,
      parameter: r.error.parameter,
    },
    { attnkit: true, type: true, code: "type", parameter: "Q" },
    `${label}: the error`,
  );
  assert.match(r.error.message, /^Q: expected a matrix .*, got string "not a matrix"$/);
}

/**
 * The model builds from the installed tarball: the same attention, a tiny model's loss as the
 * repo's build gives; a default instance's createModel throws the error that says how to load.
 */
function checkModel(out, label) {
  out.withModel.forEach((r, i) => {
    checkResult(r, `${label} model: true, simd: ${i === 0}`, i === 0);
    assert.equal(r.model, true);
    assert.equal(r.loss, expectedModelLoss[i], `${label}: the model's loss`);
  });
  assert.equal(out.plainModel?.model, false, `${label}: the default load has no model`);
  assert.equal(out.plainModel.code, "invalid_argument");
  assert.equal(out.plainModel.parameter, "createModel");
  assert.match(
    out.plainModel.message,
    /^createModel: expected .*createAttnkit\(\{ model: true \}\)/,
  );
}

describe("the npm package, packed and installed", () => {
  before(async () => {
    ({ tmp, app, tarball, files: tarballFiles } = installPacked("attnkit-pack-"));
    // What the repo's own build computes (SIMD), and the float64 reference.
    const attn = await createAttnkit({ simd: true });
    expected = Array.from(attn.attention(INPUT.Q, INPUT.K, INPUT.V, { causal: true }).data);
    const grads = attn.attentionBackward(INPUT.Q, INPUT.K, INPUT.V, INPUT.V, { causal: true });
    expectedDQ = Array.from(grads.dQ.data);
    // The model builds' loss in this repo's dist (COMPUTE's modelLoss, run here).
    const modelLoss = new Function(`${COMPUTE}; return modelLoss;`)();
    expectedModelLoss = [];
    for (const simd of [true, false]) {
      expectedModelLoss.push(modelLoss(await createAttnkit({ simd, model: true })).loss);
    }
    assertClose(
      expected,
      ref.attention(INPUT.Q, INPUT.K, INPUT.V, { causal: true }),
      "repo result vs reference",
    );
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is installed`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      headless: true,
    });
  });

  after(async () => {
    await browser?.close();
    for (const s of servers) s.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  describe("the tarball and its types", tarballTests);
  describe("Node and browser pages", loadTests);
  describe("bundlers and worker scripts", bundlerTests);
  describe("where the wasm loads from, and its size", wasmLocationTests);
});

/** The tarball's files, its docs' links, and its types under strict TypeScript. */
function tarballTests() {
  it("the tarball holds the dist files, README, LICENSE, package.json, docs, examples and the docs' figure only", () => {
    const files = [...tarballFiles].sort();
    // The README links to every doc and example: all of them ship.
    const shipped = (dir) => readdirSync(join(root, dir)).map((name) => `${dir}/${name}`);
    assert.deepEqual(files, [
      "LICENSE",
      "README.md",
      "bench/results/gflops.svg",
      "dist/attnkit-scalar-model.mjs",
      "dist/attnkit-scalar-model.node.cjs",
      "dist/attnkit-scalar-model.wasm",
      "dist/attnkit-scalar.mjs",
      "dist/attnkit-scalar.node.cjs",
      "dist/attnkit-scalar.wasm",
      "dist/attnkit-simd-model.mjs",
      "dist/attnkit-simd-model.node.cjs",
      "dist/attnkit-simd-model.wasm",
      "dist/attnkit-simd.mjs",
      "dist/attnkit-simd.node.cjs",
      "dist/attnkit-simd.wasm",
      "dist/attnkit-threads-model.mjs",
      "dist/attnkit-threads-model.node.cjs",
      "dist/attnkit-threads-model.node.worker.cjs",
      "dist/attnkit-threads-model.wasm",
      "dist/attnkit-threads-model.worker.js",
      "dist/attnkit-threads.mjs",
      "dist/attnkit-threads.node.cjs",
      "dist/attnkit-threads.node.worker.cjs",
      "dist/attnkit-threads.wasm",
      "dist/attnkit-threads.worker.js",
      "dist/attnkit.d.cts",
      "dist/attnkit.d.ts",
      "dist/attnkit.mjs",
      "dist/attnkit.node.cjs",
      "dist/attnkit.node.mjs",
      "dist/checkpoint.mjs",
      "dist/checkpoint.node.cjs",
      "dist/gpt2-ranks.json",
      "dist/model-layer.mjs",
      "dist/model-layer.node.cjs",
      "dist/model.mjs",
      "dist/model.node.cjs",
      "dist/model.node.mjs",
      "dist/onnx.mjs",
      "dist/onnx.node.cjs",
      "dist/simd.mjs",
      "dist/simd.node.cjs",
      "dist/simd.node.mjs",
      "dist/threads.mjs",
      "dist/threads.node.cjs",
      "dist/threads.node.mjs",
      "dist/worker-host.mjs",
      "dist/worker-host.node.cjs",
      "dist/worker.d.cts",
      "dist/worker.d.ts",
      "dist/worker.mjs",
      "dist/worker.node.cjs",
      "dist/worker.node.mjs",
      ...shipped("docs").sort(),
      ...shipped("examples").sort(),
      "package.json",
    ]);
    const installed = JSON.parse(
      readFileSync(join(app, "node_modules/attnkit/package.json"), "utf8"),
    );
    assert.equal(installed.name, "attnkit");
    // One runtime dependency: GPT-2's tokenizer, imported when a checkpoint opens.
    assert.deepEqual(Object.keys(installed.dependencies ?? {}), ["js-tiktoken"]);
  });

  it("every relative link of the README and docs in the tarball resolves to a file in the tarball", () => {
    const pkg = join(app, "node_modules/attnkit");
    const inTarball = new Set(tarballFiles);
    const docs = tarballFiles.filter((f) => f.endsWith(".md"));
    assert.ok(docs.includes("README.md") && docs.includes("docs/api-js.md"), docs.join(", "));
    const broken = [];
    let count = 0;
    for (const doc of docs) {
      for (const target of relativeLinks(readFileSync(join(pkg, doc), "utf8"))) {
        count++;
        const path = decodeURIComponent(target.replace(/[?#].*$/, ""));
        const file = posix.normalize(posix.join(posix.dirname(doc), path));
        if (!inTarball.has(file)) broken.push(`${doc}: ${target} (${file})`);
      }
    }
    assert.ok(count >= 20, `${count} relative links found`);
    assert.deepEqual(broken, [], "links to files the tarball lacks");
    // The README is a user's door; depth belongs in docs/.
    const readme = readFileSync(join(pkg, "README.md")).length;
    assert.ok(readme <= 12 * 1024, `README.md is ${readme} bytes, over 12 KB`);
  });

  it("TypeScript strict with exactOptionalPropertyTypes: tests/js/types-usage.ts against the installed types", () => {
    writeFileSync(join(app, "usage.ts"), readFileSync(join(root, "tests/js/types-usage.ts")));
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          exactOptionalPropertyTypes: true,
          module: "nodenext",
          target: "es2022",
          lib: ["es2022"],
          types: [],
          noEmit: true,
          skipLibCheck: false,
        },
        files: ["usage.ts"],
      }),
    );
    const tsc = join(root, "node_modules/typescript/bin/tsc");
    const r = spawnSync(process.execPath, [tsc, "-p", "tsconfig.json", "--listFiles"], {
      cwd: app,
      encoding: "utf8",
    });
    assert.equal(r.status, 0, `tsc:\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /\/app\/node_modules\/attnkit\/dist\/attnkit\.d\.ts$/m);
  });
}

/** The installed package loaded by Node (ESM, CommonJS) and by pages in Chromium. */
function loadTests() {
  it('Node ESM: import createAttnkit, { AttnkitError } from "attnkit"', () => {
    const script = `
      import createAttnkit, { AttnkitError, createAttnkit as named } from "attnkit";
      import { createRequire } from "node:module";
      ${COMPUTE}
      const results = [];
      for (const simd of [true, false]) results.push(compute(await createAttnkit({ simd }), AttnkitError));
      results.push(compute(await createAttnkit(), AttnkitError));  // feature detection
      results.push(compute(await createAttnkit({ threads: 2 }), AttnkitError));  // SIMD128 + pthreads
      const cjs = createRequire(import.meta.url)("attnkit");
      const shared = cjs.createAttnkit === named && cjs.AttnkitError === AttnkitError && (await cjs.createAttnkit({ simd: true })) === (await named({ simd: true }));
      const withModel = [];
      for (const simd of [true, false]) {
        const attn = await createAttnkit({ simd, model: true });
        withModel.push({ ...compute(attn, AttnkitError), ...modelLoss(attn) });
      }
      const plainModel = modelError(await createAttnkit());
      console.log(JSON.stringify({ results, shared, withModel, plainModel, resolved: import.meta.resolve("attnkit") }));`;
    writeFileSync(join(app, "esm.mjs"), script);
    const out = JSON.parse(run(process.execPath, ["esm.mjs"], app).trim());
    assert.match(out.resolved, /\/app\/node_modules\/attnkit\/dist\/attnkit\.node\.mjs$/);
    checkResult(out.results[0], "ESM simd", true);
    checkResult(out.results[1], "ESM scalar", false);
    checkResult(out.results[2], "ESM default", true);
    checkResult(out.results[3], "ESM threads", true);
    assert.deepEqual(
      out.results.map((r) => r.threads),
      [1, 1, 1, 2],
    );
    assert.equal(
      out.shared,
      true,
      "ESM and CommonJS share one module instance and one set of classes",
    );
    checkModel(out, "ESM");
  });

  it('Node CommonJS: const { createAttnkit } = require("attnkit")', () => {
    const script = `
      const { createAttnkit, AttnkitError, AttnkitTypeError } = require("attnkit");
      ${COMPUTE}
      (async () => {
        const results = [];
        for (const simd of [true, false]) results.push(compute(await createAttnkit({ simd }), AttnkitError));
        results.push(compute(await createAttnkit({ threads: 3 }), AttnkitError));
        const withModel = [];
        for (const simd of [true, false]) {
          const attn = await createAttnkit({ simd, model: true });
          withModel.push({ ...compute(attn, AttnkitError), ...modelLoss(attn) });
        }
        const plainModel = modelError(await createAttnkit({ simd: true }));
        console.log(JSON.stringify({ results, withModel, plainModel, resolved: require.resolve("attnkit"), typeErrorClass: typeof AttnkitTypeError }));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    writeFileSync(join(app, "cjs.cjs"), script);
    const out = JSON.parse(run(process.execPath, ["cjs.cjs"], app).trim());
    assert.match(out.resolved, /\/app\/node_modules\/attnkit\/dist\/attnkit\.node\.cjs$/);
    assert.equal(out.typeErrorClass, "function");
    checkResult(out.results[0], "CJS simd", true);
    checkResult(out.results[1], "CJS scalar", false);
    checkResult(out.results[2], "CJS threads", true);
    assert.equal(
      out.results[2].threads,
      Math.min(3, availableParallelism()),
      "capped at the hardware's threads",
    );
    checkModel(out, "CJS");
  });

  it("a plain HTML page with an import map, in headless Chromium (SIMD, scalar, model)", async () => {
    for (const [name, load] of [
      ["index", "{}"],
      ["scalar", "{ simd: false }"],
      ["model", "{ model: true }"],
      ["scalar-model", "{ model: true, simd: false }"],
    ]) {
      writeFileSync(
        join(app, `${name}.html`),
        `<!doctype html>
<html><head><meta charset="utf-8"><title>attnkit</title><link rel="icon" href="data:,">
<script type="importmap">{"imports": {"attnkit": "./node_modules/attnkit/dist/attnkit.mjs"}}</script>
</head><body><pre id="result"></pre>
<script type="module">
  import createAttnkit, { AttnkitError } from "attnkit";
  ${COMPUTE}
  try {
    const attn = await createAttnkit(${load});
    const result = compute(attn, AttnkitError);
    if (attn.model) Object.assign(result, modelLoss(attn));
    else result.modelError = modelError(attn);
    document.getElementById("result").textContent = JSON.stringify(result);
  } catch (e) {
    document.getElementById("result").textContent = JSON.stringify({ failed: String(e && e.stack || e) });
  }
</script></body></html>`,
      );
    }
    const { server, url } = await serve(app);
    servers.push(server);
    checkResult(await loadPage(`${url}/index.html`), "browser page (feature detection)", true);
    checkResult(await loadPage(`${url}/scalar.html`), "browser page (scalar)", false);
    for (const [name, simd] of [
      ["model", true],
      ["scalar-model", false],
    ]) {
      const r = await loadPage(`${url}/${name}.html`);
      checkResult(r, `browser page (${name})`, simd);
      assert.equal(r.model, true);
      assert.equal(r.loss, expectedModelLoss[simd ? 0 : 1], `browser page (${name}): the loss`);
    }
  });

  it("threads in Chromium: a cross-origin isolated page loads the pthreads build; a plain page is refused", async () => {
    writeFileSync(
      join(app, "threads.html"),
      `<!doctype html>
<html><head><meta charset="utf-8"><title>attnkit threads</title><link rel="icon" href="data:,">
<script type="importmap">{"imports": {"attnkit": "./node_modules/attnkit/dist/attnkit.mjs"}}</script>
</head><body><pre id="result"></pre>
<script type="module">
  import createAttnkit, { AttnkitError } from "attnkit";
  ${COMPUTE}
  try {
    const attn = await createAttnkit({ threads: 2 });
    document.getElementById("result").textContent = JSON.stringify({ isolated: crossOriginIsolated, ...compute(attn, AttnkitError) });
  } catch (e) {
    document.getElementById("result").textContent = JSON.stringify({
      isolated: crossOriginIsolated, refused: { attnkit: e instanceof AttnkitError, code: e.code, parameter: e.parameter, message: e.message } });
  }
</script></body></html>`,
    );
    const isolated = await serve(app, { isolated: true });
    servers.push(isolated.server);
    const r = await loadPage(`${isolated.url}/threads.html`);
    assert.equal(r.isolated, true, "the page is cross-origin isolated");
    checkResult(r, "browser page (threads)", true);
    assert.equal(r.threads, 2);

    const plain = await serve(app);
    servers.push(plain.server);
    const p = await loadPage(`${plain.url}/threads.html`);
    assert.equal(p.isolated, false);
    assert.deepEqual(
      { ...p.refused, message: undefined },
      { attnkit: true, code: "invalid_argument", parameter: "options.threads", message: undefined },
    );
    assert.match(
      p.refused.message,
      /^options\.threads: expected 1 unless SharedArrayBuffer is usable .*Cross-Origin-Embedder-Policy: require-corp\), got 2$/,
    );
  });
}

/** Vite and esbuild builds of apps, and a worker script that is missing. */
function bundlerTests() {
  it("a Vite app build, in headless Chromium", async () => {
    const site = join(app, "site");
    mkdirSync(site);
    writeFileSync(
      join(site, "index.html"),
      `<!doctype html>
<html><head><meta charset="utf-8"><title>attnkit + vite</title><link rel="icon" href="data:,"></head>
<body><pre id="result"></pre><script type="module" src="./main.js"></script></body></html>`,
    );
    writeFileSync(
      join(site, "main.js"),
      `
import createAttnkit, { AttnkitError } from "attnkit";
${COMPUTE}
createAttnkit().then((attn) => {
  document.getElementById("result").textContent = JSON.stringify(compute(attn, AttnkitError));
}, (e) => {
  document.getElementById("result").textContent = JSON.stringify({ failed: String(e && e.stack || e) });
});`,
    );
    run(
      process.execPath,
      [join(root, "node_modules/vite/bin/vite.js"), "build", "--logLevel", "warn"],
      site,
    );
    const built = join(site, "dist");
    const assets = execFileSync("ls", ["-1", join(built, "assets")], { encoding: "utf8" })
      .trim()
      .split("\n");
    assert.ok(
      assets.some((f) => f.endsWith(".wasm")),
      `the build emits the .wasm: ${assets.join(", ")}`,
    );
    // The bundle came from the installed tarball (the temp project's node_modules).
    assert.ok(existsSync(join(app, "node_modules/attnkit/dist/attnkit.mjs")));
    const { server, url } = await serve(built);
    servers.push(server);
    checkResult(await loadPage(`${url}/`), "Vite app", true);
  });

  it("esbuild bundles of a Node app, ESM and CommonJS (--platform=node), threads with the worker beside them", () => {
    const bundles = join(app, "bundles");
    mkdirSync(bundles);
    writeFileSync(
      join(app, "bundled-app.js"),
      `
      import createAttnkit, { AttnkitError, version } from "attnkit";
      ${COMPUTE}
      async function main() {  // no top-level await: CommonJS output cannot hold it
        const results = [compute(await createAttnkit(), AttnkitError), compute(await createAttnkit({ simd: false }), AttnkitError)];
        let threads;
        try { threads = compute(await createAttnkit({ threads: 2 }), AttnkitError); }
        catch (e) { threads = { failed: { attnkit: e instanceof AttnkitError, code: e.code, parameter: e.parameter, message: e.message } }; }
        console.log(JSON.stringify({ results, threads, version }));
      }
      main();`,
    );
    const esbuild = join(root, "node_modules/.bin/esbuild");
    const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
    for (const format of ["esm", "cjs"]) {
      const dir = join(bundles, format);
      mkdirSync(dir);
      const out = join(dir, format === "esm" ? "app.mjs" : "app.cjs");
      const entry = "bundled-app.js";
      run(
        esbuild,
        [
          entry,
          "--bundle",
          "--platform=node",
          `--format=${format}`,
          "--log-level=error",
          `--outfile=${out}`,
        ],
        app,
      );
      // Without the worker script beside the bundle, { threads } rejects naming where it looked.
      const without = JSON.parse(run(process.execPath, [out], dir).trim());
      checkResult(without.results[0], `esbuild ${format} bundle, simd`, true);
      checkResult(without.results[1], `esbuild ${format} bundle, scalar`, false);
      assert.equal(without.version, version);
      assert.deepEqual(
        { ...without.threads.failed, message: undefined },
        { attnkit: true, code: "load_failed", parameter: "options.threads", message: undefined },
        `${format}: ${JSON.stringify(without.threads)}`,
      );
      assert.ok(
        without.threads.failed.message.includes(join(dir, "attnkit-threads.node.worker.cjs")),
        without.threads.failed.message,
      );
      // With it and the threads loader it loads (what a bundler user copies from node_modules/attnkit/dist/), threads load.
      for (const f of ["attnkit-threads.node.worker.cjs", "attnkit-threads.node.cjs"])
        copyFileSync(join(app, "node_modules/attnkit/dist", f), join(dir, f));
      const withWorker = JSON.parse(run(process.execPath, [out], dir).trim());
      checkResult(withWorker.threads, `esbuild ${format} bundle, threads`, true);
      assert.equal(withWorker.threads.threads, 2);
    }
  });

  it("Chromium: a worker script that 404s rejects { threads } with load_failed naming its URL", async () => {
    // A copy of dist/ without the browser worker script, on a cross-origin isolated server.
    const site = join(app, "noworker");
    const copy = join(site, "dist");
    mkdirSync(copy, { recursive: true });
    const dist = join(app, "node_modules/attnkit/dist");
    for (const f of [
      "attnkit.mjs",
      "attnkit-simd.mjs",
      "attnkit-simd.wasm",
      "attnkit-threads.mjs",
      "attnkit-threads.wasm",
    ]) {
      copyFileSync(join(dist, f), join(copy, f));
    }
    writeFileSync(
      join(site, "index.html"),
      `<!doctype html>
<html><head><meta charset="utf-8"><title>attnkit 404 worker</title><link rel="icon" href="data:,"></head>
<body><pre id="result"></pre>
<script type="module">
  import createAttnkit, { AttnkitError } from "./dist/attnkit.mjs";
  const t0 = performance.now();
  const describe = (e) => ({ attnkit: e instanceof AttnkitError, code: e.code, parameter: e.parameter, message: e.message });
  const result = {};
  try { await createAttnkit({ threads: 2, timeout: 15000 }); result.loaded = true; } catch (e) { result.error = describe(e); }
  result.ms = performance.now() - t0;
  // A retry fails the same way, and the single-threaded build still loads.
  try { await createAttnkit({ threads: 2, timeout: 15000 }); } catch (e) { result.retry = describe(e); }
  result.single = (await createAttnkit()).attention([[1]], [[1]], [[4]]).data[0];
  document.getElementById("result").textContent = JSON.stringify(result);
</script></body></html>`,
    );
    const { server, url } = await serve(site, { isolated: true });
    servers.push(server);
    const r = await loadPage(`${url}/`, {
      allow: /attnkit-threads\.worker\.js|404|worker sent an error|Event/,
    });
    const workerUrl = `${url}/dist/attnkit-threads.worker.js`;
    for (const e of [r.error, r.retry]) {
      assert.deepEqual(
        { ...e, message: undefined },
        { attnkit: true, code: "load_failed", parameter: "options.threads", message: undefined },
        JSON.stringify(r),
      );
      assert.ok(e.message.includes(workerUrl), `the message names ${workerUrl}: ${e.message}`);
    }
    assert.ok(r.ms < 10000, `rejected after ${r.ms} ms (the timeout was 15000)`);
    assert.equal(r.single, 4);
  });
}

/** wasmPaths and wasmBinary in Chromium, and the size of the browser load. */
function wasmLocationTests() {
  it("Chromium: wasmPaths (a base URL, a map) and wasmBinary load the wasm from elsewhere", async () => {
    // The loaders in /lib, the .wasm and the worker in /assets (nothing beside the loaders).
    const site = join(app, "moved");
    mkdirSync(join(site, "lib"), { recursive: true });
    mkdirSync(join(site, "assets"));
    const dist = join(app, "node_modules/attnkit/dist");
    for (const f of [
      "attnkit.mjs",
      "attnkit-simd.mjs",
      "attnkit-scalar.mjs",
      "attnkit-threads.mjs",
    ])
      copyFileSync(join(dist, f), join(site, "lib", f));
    for (const f of [
      "attnkit-simd.wasm",
      "attnkit-scalar.wasm",
      "attnkit-threads.wasm",
      "attnkit-threads.worker.js",
    ]) {
      copyFileSync(join(dist, f), join(site, "assets", f));
    }
    copyFileSync(join(dist, "attnkit-scalar.wasm"), join(site, "assets", "renamed-scalar.wasm"));
    writeFileSync(
      join(site, "index.html"),
      `<!doctype html>
<html><head><meta charset="utf-8"><title>attnkit wasmPaths</title><link rel="icon" href="data:,"></head>
<body><pre id="result"></pre>
<script type="module">
  import createAttnkit, { AttnkitError, version } from "./lib/attnkit.mjs";
  ${COMPUTE}
  try {
    const simd = compute(await createAttnkit({ wasmPaths: "/assets/" }), AttnkitError);
    const scalar = compute(await createAttnkit({ simd: false, wasmPaths: { "attnkit-scalar.wasm": "/assets/renamed-scalar.wasm" } }), AttnkitError);
    const many = await createAttnkit({ threads: 64, wasmPaths: "/assets/" });
    const threads = compute(many, AttnkitError);
    many.dispose();
    const bytes = await (await fetch("/assets/attnkit-simd.wasm")).arrayBuffer();
    // Its own load: bytes given are never served by an instance loaded from elsewhere.
    const binary = compute(await createAttnkit({ wasmBinary: new Uint8Array(bytes) }), AttnkitError);
    document.getElementById("result").textContent = JSON.stringify({ simd, scalar, threads, binary, version, hw: navigator.hardwareConcurrency });
  } catch (e) {
    document.getElementById("result").textContent = JSON.stringify({ failed: String(e && e.stack || e) });
  }
</script></body></html>`,
    );
    const { server, url } = await serve(site, { isolated: true });
    servers.push(server);
    const r = await loadPage(`${url}/`);
    if (r.failed) assert.fail(r.failed);
    checkResult(r.simd, "wasmPaths base URL", true);
    checkResult(r.scalar, "wasmPaths map", false);
    checkResult(r.threads, "wasmPaths base URL, threads", true);
    assert.equal(
      r.threads.threads,
      Math.min(64, r.hw),
      "threads capped at navigator.hardwareConcurrency",
    );
    checkResult(r.binary, "wasmBinary", true);
    assert.equal(r.version, JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version);
  });

  it("package size: the browser SIMD load (without the model) is under 150 KB gzipped", () => {
    const dist = join(app, "node_modules/attnkit/dist");
    const size = (names) => {
      let raw = 0,
        gz = 0;
      for (const n of names) {
        const bytes = readFileSync(join(dist, n));
        raw += bytes.length;
        gz += gzipSync(bytes, { level: 9 }).length;
      }
      return { raw, gz };
    };
    const rows = [
      ["browser, SIMD", ["attnkit.mjs", "attnkit-simd.mjs", "attnkit-simd.wasm"]],
      ["browser, scalar", ["attnkit.mjs", "attnkit-scalar.mjs", "attnkit-scalar.wasm"]],
      ["Node, SIMD", ["attnkit.node.cjs", "attnkit-simd.node.cjs"]],
      ["Node, scalar", ["attnkit.node.cjs", "attnkit-scalar.node.cjs"]],
      [
        "browser, SIMD, { model: true }",
        ["attnkit.mjs", "attnkit-simd-model.mjs", "attnkit-simd-model.wasm", "model-layer.mjs"],
      ],
      [
        "browser, scalar, { model: true }",
        ["attnkit.mjs", "attnkit-scalar-model.mjs", "attnkit-scalar-model.wasm", "model-layer.mjs"],
      ],
      ["  attnkit-simd.wasm alone", ["attnkit-simd.wasm"]],
      ["  attnkit.mjs + attnkit-simd.mjs (JS)", ["attnkit.mjs", "attnkit-simd.mjs"]],
    ].map(([label, names]) => ({ label, files: names.join(" + "), ...size(names) }));
    const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
    const lines = [
      "| load | files | raw | gzipped |",
      "|---|---|---:|---:|",
      ...rows.map((r) => `| ${r.label} | ${r.files} | ${kb(r.raw)} | ${kb(r.gz)} |`),
    ];
    console.log(lines.join("\n"));
    const simd = rows[0];
    assert.ok(
      simd.gz < BUDGET_GZIP,
      `browser SIMD load is ${kb(simd.gz)} gzipped, budget ${kb(BUDGET_GZIP)}`,
    );
  });
}
