// GPT-2 small in Chromium (npm run bench -- --only gpt2): the memory of opening its
// checkpoint (issue #44: no more than 1.1x the checkpoint's size in peak memory beyond
// the module's, no second whole copy of it in JS), then its prefill and generation in
// the page. The page is the package in a plain page
// (dist/attnkit.mjs bundled by esbuild with js-tiktoken, as a bundler user has it),
// served from 127.0.0.1 under Playwright with Debian's Chromium; the checkpoint
// (bench/lib/gpt2.mjs: 12 layers, d_model 768, vocabulary 50,257, F32, seeded random
// weights) comes from the tests' local stand-in of the Hub (tests/js/lib/hub-server.js:
// resolve URLs, a redirect, Range requests), opened by its repository id as a learner
// opens one: createAttnkit({ model: true }), then openCheckpoint(repo, { hubUrl }).
// Measured: the renderer process's resident set (/proc/PID/status, the process found
// among this script's descendants by --type=renderer) before the load and its peak
// during it (VmHWM after /proc/PID/clear_refs reset it at the start of the load), with
// its samples every 100 ms; the JS heap (CDP Runtime.getHeapUsage: V8's heap, and
// where Chromium reports it the ArrayBuffers' backing stores) before, sampled during
// and after; the module's wasm memory (attn.memoryBytes()) before and after; the load's
// time; the resident set at each stage of the load (below); and, as the browser's own
// share, the peak of fetching the same file in the same page with no model. Then, by the page's wall clock (pinned as Node, which bench.sh runs on one
// core), the prefill of 16 and 128 tokens (3 samplers each, as bench/wasm/gpt2.mjs
// times them in Node; the prompts cut from Moby-Dick at as many GPT-2 tokens) and 32
// greedy tokens after the 16.
//
// Usage: node bench/wasm/gpt2-chromium.mjs > bench/results/gpt2-chromium.json
import { createServer } from "node:http";
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ARGS, CHROMIUM } from "../../tests/chromium.mjs";
import { startHub } from "../../tests/js/lib/hub-server.js";
import { mobyDick } from "../lib/engines.mjs";
import { gpt2Checkpoint124M, gpt2Dir } from "../lib/gpt2.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const log = (...xs) => console.error("gpt2 chromium:", ...xs);
const REPO = "bench/gpt2-small";

// --- the page: the package bundled with its tokenizer ------------------------------------
const pageDir = `${gpt2Dir}page/`;
mkdirSync(pageDir, { recursive: true });
writeFileSync(
  `${pageDir}entry.mjs`,
  `import createAttnkit from ${JSON.stringify(`${root}dist/attnkit.mjs`)};\nwindow.createAttnkit = createAttnkit;\n`,
);
const { build } = await import("esbuild");
await build({
  entryPoints: [`${pageDir}entry.mjs`],
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "browser",
  outdir: `${pageDir}out`,
  nodePaths: [path.join(root, "node_modules")],
  logLevel: "warning",
});
// Each stage of the load marks itself by a synchronous request to /mark: the page
// waits while this script reads the renderer's memory, so each figure is the
// memory at that point of the load. The stages: the page open, the package's
// code, the model module, each growth of its memory (WebAssembly.Memory's grow:
// before and after), every other new WebAssembly.Memory (a probe), the first
// progress report (the header read, the tokenizer's ranks loaded, the model
// allocated), each tenth of the file, the load's end (the tokenizer made) and
// the first prefill.
const html = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>attnkit GPT-2 memory</title></head><body><input type="file"><script type="module">
window.mark = (stage) => {
  const x = new XMLHttpRequest();
  x.open("GET", "/mark?stage=" + encodeURIComponent(stage) +
    "&heap=" + (performance.memory ? performance.memory.usedJSHeapSize : ""), false);
  x.send();
};
mark("page open");
await import("/out/entry.js");
mark("package code");
window.attn = await window.createAttnkit({ model: true });
mark("model module");
const grow = WebAssembly.Memory.prototype.grow;
WebAssembly.Memory.prototype.grow = function (pages) {
  mark("memory.grow(" + pages + " pages) before");
  const r = grow.call(this, pages);
  mark("memory.grow after: " + this.buffer.byteLength + " bytes");
  return r;
};
const Memory = WebAssembly.Memory;
WebAssembly.Memory = function (descriptor) {
  const m = new Memory(descriptor);
  mark("new WebAssembly.Memory(" + descriptor.initial + " pages)");
  return m;
};
WebAssembly.Memory.prototype = Memory.prototype;
window.ready = true;
</script></body></html>`;
const TYPES = {
  ".js": "text/javascript",
  ".wasm": "application/wasm",
  ".json": "application/json",
};
// /out/* the bundle; the wasm modules and GPT-2's ranks (gpt2-ranks.json) beside it, as the
// package's loader and checkpoint reader ask for them.
const stages = [],
  fileStages = [];
let stageList = stages;
const server = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://x");
  const name = path.basename(url.pathname);
  if (req.url === "/") return void res.writeHead(200, { "content-type": "text/html" }).end(html);
  if (url.pathname === "/mark") {
    // The page's renderer: the largest one under this script.
    const rss = renderers().map((pid) => ({ pid, ...status(pid) }));
    const top = rss.reduce((a, b) => (b.rss > a.rss ? b : a), { rss: 0 });
    const heap = url.searchParams.get("heap");
    stageList.push({
      stage: url.searchParams.get("stage"),
      ms: Math.round(performance.now()),
      rss: top.rss,
      // The peak since the load began (since the page opened, before it).
      hwm: top.hwm,
      ...kinds(top.pid),
      jsHeap: heap ? Number(heap) : null,
    });
    return void res.writeHead(204).end();
  }
  const fromDist = name.endsWith(".wasm") || name === "gpt2-ranks.json";
  const file = fromDist ? `${root}dist/${name}` : `${pageDir}out/${name}`;
  if (!existsSync(file)) return void res.writeHead(404).end();
  res.writeHead(200, {
    "content-type": TYPES[path.extname(file)] ?? "",
    "cache-control": "no-store",
  });
  res.end(readFileSync(file));
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));

// --- the checkpoint on the stand-in Hub --------------------------------------------------
const dir = gpt2Checkpoint124M();
const fileBytes = statSync(`${dir}model.safetensors`).size;
const hub = await startHub();
hub.add(REPO, {
  "config.json": readFileSync(`${dir}config.json`),
  "model.safetensors": readFileSync(`${dir}model.safetensors`),
});

// --- the renderer's memory from /proc -----------------------------------------------------
// A renderer that has ended (Chromium closes spare ones) reads as 0 bytes.
const status = (pid) => {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return { rss: 0, hwm: 0 };
  }
  const kb = (key) =>
    Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN) * 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
};
// The kinds of a process's resident memory (/proc/PID/smaps_rollup): anonymous
// (the heaps, wasm memory), file-backed (code, fonts) and shared memory (IPC
// buffers, e.g. the network's data pipes), each its proportional share.
const kinds = (pid) => {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  } catch {
    return null;
  }
  const kb = (key) =>
    Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN) * 1024;
  return { anon: kb("Pss_Anon"), file: kb("Pss_File"), shmem: kb("Pss_Shmem") };
};
const parentOf = (pid) => {
  try {
    return Number(
      readFileSync(`/proc/${pid}/stat`, "utf8")
        .replace(/^.*\) /, "")
        .split(" ")[1],
    );
  } catch {
    return 0;
  }
};
/** Chromium's renderer processes started under this script. */
function renderers() {
  const out = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let cmd;
    try {
      cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8");
    } catch {
      continue;
    }
    if (!cmd.includes("--type=renderer")) continue;
    for (let p = Number(entry); p > 1; p = parentOf(p)) {
      if (p === process.pid) {
        out.push(Number(entry));
        break;
      }
    }
  }
  return out;
}

/**
 * Opens the checkpoint from a file the learner opens (an <input>'s File, with its
 * config.json's object) in a new page (a renderer of its own, none of `pids`):
 * {ms, rssBeforeBytes, peakGrowthBytes, stages}, or {error} where the page failed or
 * its renderer ended (recorded, so that the run keeps the other figures).
 */
// A load from a File takes seconds; one past this is taken for stalled.
const FILE_LOAD_LIMIT_MS = 120_000;
async function loadFromFile(browser, pids) {
  const page = await (await browser.newContext()).newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(e.message));
  page.on("crash", () => problems.push("the renderer crashed"));
  stageList = fileStages;
  try {
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => window.ready === true, null, { timeout: 120_000 });
    await (await page.context().newCDPSession(page)).send("HeapProfiler.collectGarbage");
    const pid = renderers()
      .filter((p) => !pids.includes(p))
      .reduce((a, b) => (status(b).rss > status(a).rss ? b : a));
    await page.setInputFiles("input", `${dir}model.safetensors`);
    const rssBeforeBytes = status(pid).rss;
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    const loading = page.evaluate(
      async (config) => {
        const t = performance.now();
        const file = document.querySelector("input").files[0];
        const model = await window.attn.openCheckpoint(file, { config });
        const ms = performance.now() - t;
        model.dispose();
        return { ms };
      },
      JSON.parse(readFileSync(`${dir}config.json`, "utf8")),
    );
    // This load has stalled now and then (not understood yet): one that outlasts
    // the limit is recorded as stalled, and the run goes on.
    let timer;
    const stalled = new Promise((_, fail) => {
      timer = setTimeout(
        () => fail(new Error(`no model after ${FILE_LOAD_LIMIT_MS / 1e3} s (the load stalled)`)),
        FILE_LOAD_LIMIT_MS,
      );
    });
    loading.catch(() => {}); // a stalled load ends when its page closes
    const { ms } = await Promise.race([loading, stalled]).finally(() => clearTimeout(timer));
    if (problems.length) throw new Error(problems.join("; "));
    const peakGrowthBytes = status(pid).hwm - rssBeforeBytes;
    return { ms, rssBeforeBytes, peakGrowthBytes, stages: fileStages };
  } catch (e) {
    const error = [...problems, e.message].join("; ");
    log(`the load from a File failed: ${error}`);
    return { error, stages: fileStages };
  } finally {
    await page.close().catch(() => {});
  }
}

const { chromium } = await import("playwright-core");
// Precise performance.memory for the stages' JS heap.
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: [...ARGS, "--enable-precise-memory-info"],
});
let result;
try {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 120_000 });
  const cdp = await page.context().newCDPSession(page);
  const heap = () => cdp.send("Runtime.getHeapUsage");
  await cdp.send("HeapProfiler.collectGarbage");
  const pids = renderers();
  if (!pids.length) throw new Error("no renderer process found under this script");
  const before = {
    heap: await heap(),
    wasmBytes: await page.evaluate(() => window.attn.memoryBytes()),
    rss: Object.fromEntries(pids.map((p) => [p, status(p).rss])),
    kinds: Object.fromEntries(pids.map((p) => [p, kinds(p)])),
  };
  // The peak resident set from here on: writing 5 to clear_refs resets VmHWM to VmRSS.
  for (const p of pids) {
    try {
      writeFileSync(`/proc/${p}/clear_refs`, "5");
    } catch {
      // ended since
    }
  }
  const samples = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const t = performance.now();
      const h = await heap().catch(() => null);
      const rss = pids.map((p) => status(p).rss);
      const top = pids[rss.indexOf(Math.max(...rss))];
      samples.push({
        ms: t,
        rss: Math.max(...rss),
        kinds: kinds(top),
        jsUsed: h?.usedSize ?? null,
        jsBacking: h?.backingStorageSize ?? null,
      });
      await new Promise((ok) => setTimeout(ok, 100));
    }
  })();
  const t0 = performance.now();
  const load = await page.evaluate(
    async ({ repo, hubUrl }) => {
      const t = performance.now();
      let tenth = -1;
      const onProgress = ({ loadedBytes, totalBytes }) => {
        const t = Math.floor((10 * loadedBytes) / totalBytes);
        if (tenth < 0) window.mark("first progress report");
        else if (t > tenth) window.mark(`${t * 10}% of the file`);
        tenth = Math.max(tenth, t);
      };
      window.model = await window.attn.openCheckpoint(repo, { hubUrl, onProgress });
      window.mark("loaded");
      return { ms: performance.now() - t, wasmBytes: window.attn.memoryBytes() };
    },
    { repo: REPO, hubUrl: hub.url },
  );
  sampling = false;
  await sampler;
  for (const s of samples) s.ms -= t0;
  const peaks = Object.fromEntries(pids.map((p) => [p, status(p)]));
  // The page's renderer: the one whose peak grew the most.
  const pid = pids.reduce((a, b) =>
    peaks[b].hwm - before.rss[b] > peaks[a].hwm - before.rss[a] ? b : a,
  );
  await cdp.send("HeapProfiler.collectGarbage");
  const after = { heap: await heap(), rss: status(pid).rss };
  // Prefill and generation in the page, as bench/wasm/gpt2.mjs runs them in Node.
  const speed = await page.evaluate(
    ({ text, n }) => {
      const m = window.model,
        tok = m.tokenizer;
      const cut = (T) => {
        const prompt = tok.decode(tok.encode(text).slice(0, T));
        return { text: prompt, T: tok.encode(prompt).length };
      };
      const out = {};
      for (const T of [16, 128]) {
        const p = cut(T),
          ms = [];
        for (let r = 0; r < 3; ++r) {
          const t = performance.now();
          m.sampler(p.text, { temperature: 0 }).dispose();
          ms.push(performance.now() - t);
          if (T === 16 && r === 0) window.mark("first prefill");
        }
        out[`prefill${T}`] = { T: p.T, ms };
      }
      const p = cut(16),
        s = m.sampler(p.text, { temperature: 0 }),
        t = performance.now();
      for (let i = 0; i < n; ++i) s.next();
      out.generate16 = { T: p.T, tokens: n, ms: performance.now() - t };
      s.dispose();
      return out;
    },
    { text: mobyDick().slice(20000, 30000), n: 32 },
  );
  // The model's weights: its parameters in float32 (checkpointInfo reads the header).
  const info = await page.evaluate(
    async ({ repo, hubUrl }) => {
      const i = await window.attn.checkpointInfo(repo, { hubUrl });
      return { parameters: i.parameters, memoryBytes: i.memoryBytes };
    },
    { repo: REPO, hubUrl: hub.url },
  );
  // The browser's own share: the same file fetched in the same page by a plain
  // read loop (a 1 MB BYOB buffer, as the reader's, copied into a 4 MB part),
  // no model, the peak resident set above the one before it.
  const rssBeforeFetch = status(pid).rss;
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
  const fetchOnly = await page.evaluate(async (url) => {
    const t = performance.now();
    const part = new Uint8Array(4 << 20);
    const response = await fetch(url, { headers: { range: "bytes=0-" } });
    const reader = response.body.getReader({ mode: "byob" });
    let buffer = new ArrayBuffer(1 << 20),
      bytes = 0;
    for (;;) {
      const { value, done } = await reader.read(new Uint8Array(buffer));
      if (done) break;
      part.set(value, (bytes % (4 << 20)) & ~((1 << 20) - 1));
      bytes += value.length;
      buffer = value.buffer;
    }
    return { bytes, ms: performance.now() - t };
  }, `${hub.url}/${REPO}/resolve/main/model.safetensors`);
  fetchOnly.peakGrowthBytes = status(pid).hwm - rssBeforeFetch;
  // The same checkpoint from a file the learner opens, in a page of its own.
  await page.close();
  const fromFile = await loadFromFile(browser, pids);
  if (errors.length) throw new Error(`the page failed: ${errors.join("; ")}`);
  const peakGrowth = peaks[pid].hwm - before.rss[pid];
  const wasmGrowth = load.wasmBytes - before.wasmBytes;
  result = {
    chromium: browser.version(),
    fileBytes,
    served: hub.served(REPO, "model.safetensors"),
    loadMs: load.ms,
    megabytesPerSecond: fileBytes / 1e6 / (load.ms / 1e3),
    wasm: { beforeBytes: before.wasmBytes, afterBytes: load.wasmBytes, growthBytes: wasmGrowth },
    renderer: {
      pid,
      rssBeforeBytes: before.rss[pid],
      peakRssBytes: peaks[pid].hwm,
      rssAfterBytes: after.rss,
      peakGrowthBytes: peakGrowth,
    },
    jsHeap: {
      before: before.heap,
      after: after.heap,
      peakUsedSampledBytes: Math.max(...samples.map((s) => s.jsUsed ?? 0)),
      peakBackingSampledBytes: Math.max(...samples.map((s) => s.jsBacking ?? 0)),
    },
    // The targets' quantities, over the file's size.
    // The largest sample's resident memory by kind, and before the load.
    kindsBefore: before.kinds,
    kindsAtLargestSample: samples.reduce((a, b) => (b.rss > a.rss ? b : a)).kinds,
    peakGrowthOverFile: peakGrowth / fileBytes,
    peakBeyondWasmOverFile: (peakGrowth - wasmGrowth) / fileBytes,
    speed,
    weightsBytes: info.parameters * 4,
    modelMemoryBytes: info.memoryBytes,
    fetchOnly,
    fromFile,
    stages,
    samples: samples.map((s) => ({ ...s, ms: Math.round(s.ms) })),
  };
  const MB = (n) => `${(n / 1e6).toFixed(1)}`;
  for (const s of stages) {
    log(
      `  ${String(s.ms).padStart(7)} ms  rss ${MB(s.rss).padStart(6)} MB  peak ${MB(s.hwm).padStart(6)}  anon ${MB(s.anon).padStart(6)}  ` +
        `file ${MB(s.file).padStart(5)}  shmem ${MB(s.shmem).padStart(5)}  js ${s.jsHeap === null ? "-" : MB(s.jsHeap)}  ${s.stage}`,
    );
  }
  log(
    `${(fileBytes / 1e6).toFixed(0)} MB in ${(load.ms / 1e3).toFixed(1)} s; renderer peak +${(peakGrowth / 1e6).toFixed(0)} MB ` +
      `(${result.peakGrowthOverFile.toFixed(3)}x the file), wasm memory +${(wasmGrowth / 1e6).toFixed(0)} MB, ` +
      `beyond it ${((peakGrowth - wasmGrowth) / 1e6).toFixed(0)} MB; JS heap peak ${(result.jsHeap.peakUsedSampledBytes / 1e6).toFixed(1)} MB; ` +
      `the file fetched alone: peak +${(fetchOnly.peakGrowthBytes / 1e6).toFixed(0)} MB in ${(fetchOnly.ms / 1e3).toFixed(1)} s; ` +
      (fromFile.error
        ? `from a File: failed (${fromFile.error})`
        : `from a File: ${(fromFile.ms / 1e3).toFixed(1)} s, peak +${(fromFile.peakGrowthBytes / 1e6).toFixed(0)} MB ` +
          `(${(fromFile.peakGrowthBytes / fileBytes).toFixed(3)}x the file)`),
  );
} finally {
  await browser.close();
  await hub.close();
  server.close();
}
console.log(JSON.stringify(result, null, 1));
