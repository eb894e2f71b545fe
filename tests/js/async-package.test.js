// attnkit/worker from the tarball the way users get it: `npm pack`, installed
// into a fresh project, used from Node ESM and CommonJS, its types compiled
// with tsc --strict (an .mts and a .cts, wrong uses as @ts-expect-error), from
// an esbuild bundle of a Node app with the worker script copied beside it, and
// from a Vite app in headless Chromium (Vite follows the module's
// new Worker(new URL("./worker-host.mjs", import.meta.url))).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import createAttnkit from "attnkit";
import { ARGS, CHROMIUM } from "../chromium.mjs";
import { serve } from "../browser/lib/server.mjs";
import { installPacked, root, run } from "./lib/packed.js";

// What every consumer computes through the worker: causal attention on fixed
// inputs, an error, a KV cache's size after an append.
const COMPUTE = `
  const Q = { data: Float32Array.from([0.1, -0.2, 0.3, 0.4, 0.5, 0.6, -0.7, 0.8, -0.9, 1, 1.1, -1.2]), rows: 3, cols: 4 };
  async function compute(worker) {
    const out = await worker.attention(Q, Q, Q, { causal: true });
    const error = await worker.attention(Q, "K", Q).catch((e) => [e.name, e.code, e.parameter]);
    const cache = await worker.createKVCache({ numKvHeads: 1, dK: 4, dV: 4, capacity: 4 });
    await cache.append({ data: Q.data, shape: [1, 3, 4] }, { data: Q.data, shape: [1, 3, 4] });
    const size = cache.size;
    await worker.dispose();
    return { out: Array.from(out.data), shape: out.shape, error, size };
  }`;

describe("attnkit/worker, packed and installed", () => {
  let tmp, app, expected;
  const servers = [];
  before(async () => {
    ({ tmp, app } = installPacked("attnkit-async-pack-"));
    const attn = await createAttnkit({ simd: true });
    const Q = {
      data: Float32Array.from([0.1, -0.2, 0.3, 0.4, 0.5, 0.6, -0.7, 0.8, -0.9, 1, 1.1, -1.2]),
      rows: 3,
      cols: 4,
    };
    expected = {
      out: Array.from(attn.attention(Q, Q, Q, { causal: true }).data),
      shape: [3, 4],
      error: ["AttnkitTypeError", "type", "K"],
      size: 3,
    };
  });
  after(() => {
    for (const s of servers) s.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it("Node ESM and CommonJS", () => {
    writeFileSync(
      join(app, "esm.mjs"),
      `import { createAttnkitWorker } from "attnkit/worker";\n${COMPUTE}\n` +
        `console.log(JSON.stringify(await compute(await createAttnkitWorker())));`,
    );
    writeFileSync(
      join(app, "cjs.cjs"),
      `const { createAttnkitWorker } = require("attnkit/worker");\n${COMPUTE}\n` +
        `createAttnkitWorker().then(compute).then((r) => console.log(JSON.stringify(r)));`,
    );
    for (const file of ["esm.mjs", "cjs.cjs"]) {
      assert.deepEqual(JSON.parse(run(process.execPath, [file], app)), expected, file);
    }
  });

  it("an esbuild bundle of a Node app, with the worker script and builds copied beside it", () => {
    writeFileSync(
      join(app, "bundled.js"),
      `import { createAttnkitWorker } from "attnkit/worker";\n${COMPUTE}\n` +
        `createAttnkitWorker().then(compute).then((r) => console.log(JSON.stringify(r)));`,
    );
    const out = join(app, "bundle");
    mkdirSync(out);
    run(
      join(root, "node_modules/.bin/esbuild"),
      ["bundled.js", "--bundle", "--platform=node", "--format=esm", "--outfile=bundle/app.mjs"],
      app,
    );
    const dist = join(app, "node_modules/attnkit/dist");
    for (const f of readdirSync(dist).filter((f) =>
      /^(worker-host|attnkit-[\w-]+)\.node/.test(f),
    )) {
      copyFileSync(join(dist, f), join(out, f));
    }
    assert.deepEqual(JSON.parse(run(process.execPath, ["app.mjs"], out)), expected);
  });

  it("TypeScript strict: the worker API's types from the installed package", () => {
    const usage = (kind) => `
${kind === "cts" ? 'import attnkitWorker = require("attnkit/worker");\nconst { createAttnkitWorker, AttnkitError } = attnkitWorker;' : 'import { createAttnkitWorker, AttnkitError } from "attnkit/worker";'}
import type { AsyncAttnkit, AsyncKVCache, Matrix, Tensor, AsyncModel, AsyncTextDataset, AsyncTokenizer, AsyncSampler } from "attnkit/worker";

async function main(): Promise<void> {
  const attn: AsyncAttnkit = await createAttnkitWorker({ simd: true, transfer: false });
  const Q = { data: new Float32Array(8), rows: 2, cols: 4 };
  const out: Matrix = await attn.attention(Q, Q, Q, { causal: true });
  const shape: [number, number] | undefined = out.shape;
  const c = new AbortController();
  const again: Matrix = await attn.with({ signal: c.signal, transfer: true }).attention(Q, Q, Q);
  const cache: AsyncKVCache = await attn.createKVCache({ numKvHeads: 1, dK: 4, dV: 4, capacity: 4 });
  await cache.append({ data: Q.data, shape: [1, 2, 4] }, { data: Q.data, shape: [1, 2, 4] });
  const size: number = cache.size;
  const step: Tensor = await cache.with({ signal: c.signal }).attend({ data: Q.data, shape: [1, 2, 4] }, 1);
  await cache.dispose();
  const m = await createAttnkitWorker({ model: true });
  const model: AsyncModel = await m.createModel({ vocabSize: 8, maxSeqLen: 4, dModel: 8 });
  const trainer = await m.createTrainer(model);
  const loss: number = (await trainer.step({ batch: 1, seqLen: 4, tokens: [1, 2, 3, 0], targets: [-1, -1, 1, 2] })).loss;
  const steps: number = trainer.steps;
  const same: AsyncModel = trainer.model;
  const data: AsyncTextDataset = await m.createTextDataset("abc ".repeat(100), { seqLen: 4 });
  const tokenizer: AsyncTokenizer = data.tokenizer;
  const ids: Int32Array = await tokenizer.encode("cab");
  const lm: AsyncModel = await m.createModel({ vocabSize: data.vocabSize, maxSeqLen: 4, dModel: 8 }, { vocabulary: data.vocabulary });
  const sampler: AsyncSampler = await lm.sampler("a", { seed: 1 });
  const next: string = (await sampler.next()).character;
  const validation: number = await data.validationLoss(lm);
  // @ts-expect-error: calls return Promises
  const notSync: Matrix = attn.attention(Q, Q, Q);
  // @ts-expect-error: an unknown call option
  attn.with({ signl: c.signal });
  // @ts-expect-error: the model layer is not on a worker loaded without model: true
  await attn.createModel({ vocabSize: 8, maxSeqLen: 4, dModel: 8 }).then((x) => x.parameterCount);
  attn.terminate();
  await m.dispose();
  console.log(shape, again, size, step, loss, steps, same, notSync, AttnkitError, ids, next, validation);
}
void main;
`;
    writeFileSync(join(app, "usage.mts"), usage("mts"));
    writeFileSync(join(app, "usage.cts"), usage("cts"));
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          exactOptionalPropertyTypes: true,
          module: "nodenext",
          target: "es2022",
          lib: ["es2022", "dom"],
          types: [],
          noEmit: true,
        },
        files: ["usage.mts", "usage.cts"],
      }),
    );
    const r = spawnSync(
      process.execPath,
      [join(root, "node_modules/typescript/bin/tsc"), "-p", "."],
      {
        cwd: app,
        encoding: "utf8",
      },
    );
    assert.equal(r.status, 0, `tsc:\n${r.stdout}${r.stderr}`);
  });

  it("a Vite app build, in headless Chromium: the worker and its builds emitted", async () => {
    const site = join(app, "site");
    mkdirSync(site);
    writeFileSync(
      join(site, "index.html"),
      `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"></head>
<body><pre id="result"></pre><script type="module" src="./main.js"></script></body></html>`,
    );
    writeFileSync(
      join(site, "main.js"),
      `import { createAttnkitWorker } from "attnkit/worker";\n${COMPUTE}\n` +
        `createAttnkitWorker().then(compute).then((r) => { document.getElementById("result").textContent = JSON.stringify(r); },
          (e) => { document.getElementById("result").textContent = JSON.stringify({ failed: String(e && e.stack || e) }); });`,
    );
    run(
      process.execPath,
      [join(root, "node_modules/vite/bin/vite.js"), "build", "--logLevel", "warn"],
      site,
    );
    const assets = readdirSync(join(site, "dist/assets"));
    assert.ok(
      assets.some((f) => f.startsWith("worker-host")),
      `a worker chunk: ${assets}`,
    );
    assert.ok(
      assets.some((f) => f.endsWith(".wasm")),
      `the .wasm: ${assets}`,
    );
    const server = await serve(join(site, "dist"));
    servers.push(server);
    const { url } = server;
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    try {
      const page = await browser.newPage();
      const problems = [];
      page.on("pageerror", (e) => problems.push(e.message));
      page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
      await page.goto(url);
      await page.waitForFunction(() => document.getElementById("result").textContent !== "");
      const result = JSON.parse(await page.textContent("#result"));
      assert.deepEqual(result, expected);
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });
});
