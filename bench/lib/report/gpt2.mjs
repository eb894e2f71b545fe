// GPT-2 small's report (issue #44's targets): from bench/results/gpt2.json
// (bench/wasm/gpt2.mjs: every engine in Node's paired rounds) and gpt2-chromium.json
// (bench/wasm/gpt2-chromium.mjs: the load's memory and the page's speed in Chromium).
// Written to bench/results/gpt2.md; its speed table also into docs/gpt2.md between the
// gpt2 markers (not for a --quick run).
import { writeFileSync } from "node:fs";
import { median } from "../stats.mjs";
import { num, publisher, readJson, targetTable } from "./format.mjs";

const WASM = "attnkit (wasm SIMD128, Node)",
  NATIVE = "attnkit (native)",
  ORT = "onnxruntime-web (wasm, Node)",
  TORCH1 = "PyTorch (CPU), 1 thread";
const MB = (bytes) => `${(bytes / 1e6).toFixed(0)} MB`;

/** Per engine and workload: its times (ms per call, one per round) by the engine's clock. */
const timesOf = (run, w, name) => {
  const e = run.engines.find((x) => x.name === name);
  const slot = w.engines[name];
  return e && slot ? slot[e.clock === "wall" ? "wallMs" : "cpuMs"] : null;
};
// The peer's time over attnkit's, round by round, by the peer's clock (attnkit's wall
// time against a peer timed by the wall clock): {median, lo, hi}.
function ratio(run, w, attnkit, peer) {
  const clock = run.engines.find((x) => x.name === peer)?.clock === "wall" ? "wallMs" : "cpuMs";
  const a = w.engines[attnkit]?.[clock],
    p = w.engines[peer]?.[clock];
  if (!a || !p) return null;
  const r = p.map((x, i) => x / a[i]);
  return { median: median(r), lo: Math.min(...r), hi: Math.max(...r) };
}
const ratioText = (r, who) =>
  r ? ` (${who} ${r.median.toFixed(2)}× [${r.lo.toFixed(2)}–${r.hi.toFixed(2)}])` : "";
const workloadName = (run, w) =>
  w.kind === "prefill" ? `prefill ${w.T}` : `${run.newTokens} tokens after ${w.T}`;

/** The speed table: tokens/s per engine and workload, the peers with attnkit's speed-up. */
export function gpt2SpeedTable(run) {
  const cols = run.workloads;
  let md = `| tokens/s | ${cols.map((w) => workloadName(run, w)).join(" | ")} |\n|---|${cols.map(() => "---:").join("|")}|\n`;
  for (const e of run.engines) {
    const attnkit = e.name === WASM || e.name === NATIVE;
    const against = e.name === ORT ? WASM : e.name.startsWith("PyTorch") ? NATIVE : null;
    const cells = cols.map((w) => {
      const t = timesOf(run, w, e.name);
      if (!t) return "–";
      const rate = num(w.tokens / (median(t) / 1e3));
      return attnkit
        ? `**${rate}**`
        : `${rate}${against ? ratioText(ratio(run, w, against, e.name), "attnkit") : ""}`;
    });
    md += `| ${e.name}${e.clock === "wall" ? " (wall time)" : ""} | ${cells.join(" | ")} |\n`;
  }
  return md;
}

/**
 * Generation's ceiling: a token reads every weight once, so no engine in wasm takes less
 * than the weights' bytes over the limit of reading wasm memory (bench/lib/engines.mjs's
 * wasmReadLimit, measured in each round); the wasm engines' shares of it.
 */
function readLimitText(run) {
  const read = run.wasmRead;
  const w = run.workloads.find((x) => x.kind === "generate");
  if (!read?.gbPerSecond?.length || !w) return "";
  const best = median(read.gbPerSecond),
    floorMs = read.bytes / (best * 1e6);
  const share = (name) => {
    const t = timesOf(run, w, name);
    return t ? `${name} ${((100 * floorMs) / (median(t) / w.tokens)).toFixed(0)}%` : null;
  };
  const ort = timesOf(run, w, ORT);
  const needed = ort ? (100 * floorMs * 1.5) / (median(ort) / w.tokens) : null;
  return (
    `- Generation's ceiling: a token reads every weight once (${MB(read.bytes)} in float32). Reading that ` +
    `many bytes of wasm memory ran at ${best.toFixed(1)} GB/s (the median of the rounds' best passes, ` +
    `${Math.min(...read.gbPerSecond).toFixed(1)}-${Math.max(...read.gbPerSecond).toFixed(1)}), so no engine ` +
    `in wasm generates a token in less than ${floorMs.toFixed(1)} ms (${num(1e3 / floorMs)} tokens/s). ` +
    `Shares of that ceiling, ${workloadName(run, w)}: ${[share(WASM), share(ORT)].filter(Boolean).join(", ")}` +
    (needed ? `; 1.5× onnxruntime-web would be ${needed.toFixed(0)}% of it.\n\n` : ".\n\n")
  );
}

/** The stages of the load in Chromium: the renderer's resident set at each (gpt2-chromium.mjs's marks). */
function stagesTable(c) {
  const stages = (c.stages ?? []).filter((s) => !s.stage.startsWith("memory.grow"));
  if (!stages.length) return "";
  const at = stages.find((s) => s.stage === "model module")?.rss ?? c.renderer.rssBeforeBytes;
  const all = c.stages ?? [];
  const loaded = all.findIndex((s) => s.stage === "loaded");
  const grows = all
    .slice(0, loaded < 0 ? all.length : loaded)
    .filter((s) => s.stage.startsWith("memory.grow(")).length;
  return (
    `The load stage by stage (the page waits at each mark while the renderer's memory is read; ` +
    `the peak is the highest resident set so far, from the load's start on; during the load the module's ` +
    `memory grew ${grows} times as the model's matrices were allocated, each in place):\n\n` +
    "| stage | resident set | above the model module | its peak so far | JS heap |\n|---|---:|---:|---:|---:|\n" +
    stages
      .map(
        (s) =>
          `| ${s.stage} | ${MB(s.rss)} | ${MB(s.rss - at)} | ${s.hwm ? MB(s.hwm) : "–"} | ${s.jsHeap === null ? "–" : MB(s.jsHeap)} |`,
      )
      .join("\n") +
    "\n\n"
  );
}

function chromiumSection(c) {
  const s = c.speed;
  const rate = (x, tokens) => num(tokens / (median(x) / 1e3));
  const over = (bytes) => `${(bytes / c.fileBytes).toFixed(3)}×`;
  const beyond = c.renderer.peakGrowthBytes - (c.weightsBytes ?? 0);
  return (
    `## Opening the checkpoint in Chromium\n\n` +
    `Chromium ${c.chromium}, the package bundled in a plain page, the checkpoint (${MB(c.fileBytes)}) ` +
    `from the local stand-in of the Hub by its repository id: loaded in ${(c.loadMs / 1e3).toFixed(1)} s ` +
    `(${c.megabytesPerSecond.toFixed(0)} MB/s).\n\n` +
    "| memory | bytes | over the file |\n|---|---:|---:|\n" +
    `| renderer's resident set before the load | ${MB(c.renderer.rssBeforeBytes)} | |\n` +
    `| its peak during the load, above that | ${MB(c.renderer.peakGrowthBytes)} | **${c.peakGrowthOverFile.toFixed(3)}×** |\n` +
    (c.weightsBytes
      ? `| of which the model's weights (its parameters in float32) | ${MB(c.weightsBytes)} | ${over(c.weightsBytes)} |\n` +
        `| and the rest, beyond the weights | ${MB(beyond)} | ${over(beyond)} |\n`
      : "") +
    (c.fetchOnly
      ? `| the same file fetched alone in the page (no model; a 1 MB reader into a 4 MB part), its peak above the resident set before | ${MB(c.fetchOnly.peakGrowthBytes)} | ${over(c.fetchOnly.peakGrowthBytes)} |\n`
      : "") +
    (c.fromFile
      ? c.fromFile.error
        ? `| the same checkpoint from a File (an \`<input>\`'s, in a page of its own) | failed: ${c.fromFile.error} | |\n`
        : `| the same checkpoint from a File (an \`<input>\`'s, in a page of its own; loaded in ${(c.fromFile.ms / 1e3).toFixed(1)} s), its peak above the resident set before | ${MB(c.fromFile.peakGrowthBytes)} | **${over(c.fromFile.peakGrowthBytes)}** |\n`
      : "") +
    `| the module's wasm memory, growth (reserved: its untouched pages are not resident) | ${MB(c.wasm.growthBytes)} (${MB(c.wasm.beforeBytes)} → ${MB(c.wasm.afterBytes)}) | ${over(c.wasm.growthBytes)} |\n` +
    `| JS heap (V8), largest sample during the load | ${MB(c.jsHeap.peakUsedSampledBytes)} | ${over(c.jsHeap.peakUsedSampledBytes)} |\n` +
    `| ArrayBuffers' backing stores, largest sample | ${MB(c.jsHeap.peakBackingSampledBytes)} | ${over(c.jsHeap.peakBackingSampledBytes)} |\n` +
    `| renderer's resident set after the load | ${MB(c.renderer.rssAfterBytes)} | |\n\n` +
    stagesTable(c) +
    `In the page (wall time, one core): prefill of ${s.prefill16.T} tokens ${rate(s.prefill16.ms, s.prefill16.T)} tokens/s, ` +
    `of ${s.prefill128.T} tokens ${rate(s.prefill128.ms, s.prefill128.T)} tokens/s; ${s.generate16.tokens} tokens after ` +
    `${s.generate16.T} at ${num(s.generate16.tokens / (s.generate16.ms / 1e3))} tokens/s.\n\n`
  );
}

/**
 * Writes bench/results/gpt2.md from gpt2.json and gpt2-chromium.json (either may be
 * missing) and the speed table into `docsUrl` between its gpt2 markers. Returns the
 * markdown, or null when neither file is there.
 */
export function gpt2Report(dir, docsUrl) {
  const run = readJson(dir, "gpt2.json"),
    chromium = readJson(dir, "gpt2-chromium.json");
  if (!run && !chromium) return null;
  let md = "# GPT-2 small's benchmark\n\n";
  md +=
    "Written by `bench/report.mjs` from `gpt2.json` (`bench/wasm/gpt2.mjs`) and `gpt2-chromium.json` " +
    "(`bench/wasm/gpt2-chromium.mjs`); `npm run bench -- --only gpt2` (`--full`: every shape)" +
    (run ? `; commit ${run.commit}` : "") +
    ".\n\n";
  const targets = [];
  let table = "";
  if (run) {
    const c = run.checkpoint.config;
    const loads = run.loadAverage;
    md +=
      `A GPT-2 of GPT-2 small's shapes (${c.numLayers} layers, ${c.numHeads} heads, d_model ${c.dModel}, ` +
      `vocabulary ${c.vocabSize}, context ${c.maxSeqLen}; ${(run.checkpoint.parameters / 1e6).toFixed(1)} M parameters) ` +
      `with seeded random weights, one ${MB(run.checkpoint.bytes)} model.safetensors that every engine reads. ` +
      `Prefill: the prompt through every layer into the KV cache and the last position's logits; generation: ` +
      `${run.newTokens} greedy tokens through the cache after a prompt. ${run.rounds} paired rounds, every engine in ` +
      `each, in turns; medians over rounds; in parentheses the peer's time over attnkit's (attnkit wasm for ` +
      `onnxruntime-web, attnkit native for PyTorch), the median of the rounds' ratios with the lowest and highest.\n\n`;
    table = gpt2SpeedTable(run);
    md += table + "\n";
    const ck = run.check.engines;
    md +=
      `- Checked before timing: after a ${run.check.prompt}-token prompt and after ${run.check.tokens} greedy tokens, ` +
      `every engine's logits against attnkit wasm's (largest |logit| ${ck[WASM]?.maxAbsLogit.toFixed(1)}): ` +
      Object.entries(ck)
        .filter(([name]) => name !== WASM)
        .map(
          ([name, x]) =>
            `${name} max |Δ| ${x.maxAbsDiffPrefill.toExponential(1)} / ${x.maxAbsDiffAfterTokens.toExponential(1)}`,
        )
        .join(", ") +
      "; the same tokens.\n";
    const info = Object.fromEntries(run.engines.map((e) => [e.name, e.info]));
    md +=
      `- Engines: attnkit ${info[WASM]?.version} (wasm ${info[WASM]?.target}; the model builds have no threads), ` +
      `native Highway target ${info[NATIVE]?.target ?? "–"}; onnxruntime-web ${info[ORT]?.version} (${info[ORT]?.kernel}); ` +
      `PyTorch ${info[TORCH1]?.version}${info[TORCH1]?.cpuCapability ? ` (${info[TORCH1].cpuCapability})` : ""}. ` +
      `Node ${run.node}; CPU ${run.cpu?.model ?? "?"}, ${run.cores} cores.\n`;
    md +=
      `- Times: each process's CPU time (Node's for attnkit wasm and onnxruntime-web), PyTorch on every thread ` +
      `by the wall clock. Load average ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)} over the run` +
      (run.wasmPeakGflops.length
        ? `; SIMD128 peak per round ${Math.min(...run.wasmPeakGflops).toFixed(1)}-${Math.max(...run.wasmPeakGflops).toFixed(1)} GFLOP/s`
        : "") +
      `. attnkit opened the checkpoint in Node in ${(info[WASM]?.openMs / 1e3).toFixed(1)} s; ` +
      `onnxruntime-web its ONNX model in ${(info[ORT]?.loadMs / 1e3).toFixed(1)} s.\n`;
    md += readLimitText(run) || "\n";
    const pick = (w) => run.workloads.find((x) => x.kind === w.kind && x.T === w.T);
    const wanted = [
      { kind: "prefill", T: 128 },
      ...run.workloads.filter((w) => w.kind === "generate"),
    ];
    for (const w0 of wanted) {
      const w = pick(w0);
      if (!w) continue;
      for (const [attnkit, peer, need] of [
        [NATIVE, TORCH1, 1.2],
        [WASM, ORT, 1.5],
      ]) {
        const r = ratio(run, w, attnkit, peer);
        if (!r) continue;
        targets.push(
          `| ${workloadName(run, w)}: ${attnkit} against ${peer} | ≥ ${need}× | ${r.median.toFixed(2)}× [${r.lo.toFixed(2)}–${r.hi.toFixed(2)}] | ${r.median >= need ? "met" : "**missed**"} |`,
        );
      }
    }
  }
  if (chromium) {
    md += chromiumSection(chromium);
    const memoryTarget = (what, x) =>
      `| peak memory of the load in Chromium ${what}, beyond the module's before it | ≤ 1.1× the file | ${x.toFixed(3)}× | ${x <= 1.1 ? "met" : "**missed**"} |`;
    targets.push(memoryTarget("from the Hub's stand-in", chromium.peakGrowthOverFile));
    const file = chromium.fromFile;
    if (file && !file.error)
      targets.push(memoryTarget("from a File", file.peakGrowthBytes / chromium.fileBytes));
  }
  if (targets.length) md += targetTable("target (issue 44)", targets);
  writeFileSync(new URL("gpt2.md", dir), md);
  // A quick run's table stays in bench/results.
  if (table && docsUrl)
    publisher({ fit: !run.quick })(docsUrl, "<!-- gpt2:start -->", "<!-- gpt2:end -->", table);
  console.log(md);
  return md;
}
