// The language model's report (issue 32): nanoGPT's CPU shape on Moby-Dick,
// from bench/results/language-native.json (bench/language_torch.py: attnkit
// native and PyTorch, one thread, in turns) and language-wasm.json
// (bench/wasm/language.mjs: attnkit wasm and tfjs-backend-wasm in Node, in
// turns). Written to bench/results/language.md; its tokens/s row joins the
// README's table.
import { writeFileSync } from "node:fs";
import { num, readJson, targetTable } from "./format.mjs";

/** Writes bench/results/language.md; returns the README's row (tokens/s of the
 * first preset both platforms trained with their peers), or null. */
export function languageReport(dir) {
  const native = readJson(dir, "language-native.json"),
    node = readJson(dir, "language-wasm.json");
  if (!native && !node) return null;
  const pct = (x) => (x == null ? "–" : `${(100 * x).toFixed(1)}%`);
  const to = (e, target) =>
    e[`stepsTo${target}`]
      ? `${e[`stepsTo${target}`]} steps, ${num(e[`secondsTo${target}`])} s`
      : `not in ${e.steps} steps (${e.validation.at(-1)?.[1].toFixed(3) ?? "–"})`;
  const presets = [
    ...new Set([...(native?.runs ?? []), ...(node?.presets ?? [])].map((r) => r.preset)),
  ];
  let md = "# The language model's benchmark\n\n";
  let readmeRow = null;
  md +=
    "Written by `bench/report.mjs` from `language-native.json` (`bench/language_torch.py`) and " +
    "`language-wasm.json` (`bench/wasm/language.mjs`); `npm run bench -- --only language`" +
    `; commit ${[...new Set([native?.commit, node?.commit].filter(Boolean))].join(", ") || "?"}.\n\n`;
  const targets = [];
  for (const preset of presets) {
    const n = native?.runs.find((r) => r.preset === preset),
      w = node?.presets.find((r) => r.preset === preset);
    const about = n ?? w;
    const c = n?.config ?? {};
    md += `## ${preset}: ${c.num_layers ?? w.config.numLayers} layers, ${c.num_heads ?? w.config.numHeads} heads, d_model ${c.d_model ?? w.config.dModel}, d_ff ${c.d_ff ?? w.config.dFF}, context ${n?.settings.seqLen ?? w.seqLen}, batch ${n?.settings.batch ?? w.batch}, vocabulary ${c.vocab_size ?? w.config.vocabSize}\n\n`;
    const caps = [
      n && `${n.settings.maxSteps} steps natively (validation every ${n.settings.evalEvery})`,
      w &&
        `${w.maxSteps} in Node (validation every ${w.evalEvery}${w.peerSteps < w.maxSteps ? `; tfjs stopped after ${w.peerSteps}` : ""})`,
    ].filter(Boolean);
    md += `${(about.flopsPerStep / 1e9).toFixed(2)} GFLOP per training step (6 per matrix parameter per token, 7 T² d_k per causal head and sequence); validation loss on the same ${n?.settings.validationWindows ?? 128} windows; an engine stops at 2.0 or at the cap: ${caps.join(", ")}${(n ?? w).quick ? " (--quick)" : ""}.\n\n`;
    md +=
      "| engine | tokens/s | ms/step (CPU) | wall ms/step | GFLOP/s | share of peak | to 2.2 | to 2.0 | first loss |\n" +
      "|---|---:|---:|---:|---:|---:|---|---|---:|\n";
    const rows = (run, platform, peak) => {
      for (const e of run?.engines ?? [])
        md += `| ${e.engine}${platform}, 1 thread | ${num(e.tokensPerSecond)} | ${num(e.cpuMsPerStep)} | ${num(e.wallMsPerStep)} | ${num(e.gflops)} | ${pct(e.peakShare)} of ${num(peak)} | ${to(e, "2.2")} | ${to(e, "2.0")} | ${e.firstLoss.toFixed(4)} |\n`;
    };
    rows(n, "", n?.fmaPeakGflops);
    rows(w, ", Node", w?.wasmPeakGflops);
    md += "\n";
    // The largest relative difference of the two engines' validation losses at the steps both evaluated.
    const validAgree = (run) => {
      if (run.engines.length < 2) return ""; // a preset trained without a peer
      const [a, b] = run.engines.map((e) => new Map(e.validation));
      let m = 0,
        k = 0;
      for (const [step, v] of a)
        if (b.has(step)) ((m = Math.max(m, Math.abs(b.get(step) - v) / v)), ++k);
      return k
        ? `; their validation losses within ${m.toExponential(1)} at ${k} evaluation${k > 1 ? "s" : ""}`
        : "";
    };
    const loads = (xs) => `${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}`;
    if (n)
      md += `- Native: PyTorch ${n.torch.version}${n.torch.cpu_capability ? ` (${n.torch.cpu_capability})` : ""}, attnkit's Highway target ${n.settings.target}; the first 20 losses agree within ${n.first20LossMaxRelDiff.toExponential(1)} (relative)${validAgree(n)}; generation (attnkit, KV cache) ${num(n.generation.tokensPerSecond)} tokens/s; load average ${loads(n.loadAverage)}.\n`;
    if (w)
      md += `- Node: ${node.engines["tfjs-backend-wasm"] ? `tfjs-backend-wasm ${node.engines["tfjs-backend-wasm"].version}, ` : ""}Node ${node.engines.node}; ${w.first20LossMaxRelDiff === null ? "attnkit alone (no peer)" : `the first 20 losses agree within ${w.first20LossMaxRelDiff.toExponential(1)}`}${validAgree(w)}; generation (attnkit, KV cache) ${num(w.generation.tokensPerSecond)} tokens/s; module memory ${w.trainingMemoryBytes ? `${(w.trainingMemoryBytes / 2 ** 20).toFixed(1)} MiB after training steps alone, ` : ""}${(w.memoryBytes / 2 ** 20).toFixed(1)} MiB after validation and generation; load average ${loads(w.loadAverage)}.\n`;
    md +=
      "- The machine was shared with other work; the two engines of each platform stepped in turns (one step each on the same batch), so both met the same load. Times are each process's CPU time.\n\n";
    if (n)
      targets.push(
        `| training tokens/s, attnkit native vs PyTorch, ${preset} | ≥ 2× | ${n.ratio.toFixed(2)}× (${num(n.engines[0].tokensPerSecond)} vs ${num(n.engines[1].tokensPerSecond)}) | ${n.ratio >= 2 ? "met" : "**missed**"} |`,
      );
    if (w && w.ratio !== null)
      targets.push(
        `| training tokens/s, attnkit wasm vs tfjs-backend-wasm, ${preset} | ≥ 3× | ${w.ratio.toFixed(2)}× (${num(w.engines[0].tokensPerSecond)} vs ${num(w.engines[1].tokensPerSecond)}) | ${w.ratio >= 3 ? "met" : "**missed**"} |`,
      );
    if (!readmeRow && n?.engines.length > 1 && w?.engines.length > 1) {
      const cell = (e, peer) =>
        `**${num(e.tokensPerSecond)}** (${(e.tokensPerSecond / peer.tokensPerSecond).toFixed(2)}×)`;
      readmeRow =
        `| GPT training on Moby-Dick (${preset}: ${c.num_layers} layers, d_model ${c.d_model}): **tokens/s** | ` +
        `${cell(n.engines[0], n.engines[1])} | ${num(n.engines[1].tokensPerSecond)} ${n.engines[1].engine} | ` +
        `${cell(w.engines[0], w.engines[1])} | ${num(w.engines[1].tokensPerSecond)} ${w.engines[1].engine} |`;
    }
    const s20 = w?.engines[0]["secondsTo2.0"];
    if (w && !w.quick)
      targets.push(
        `| validation loss ≤ 2.0 within 3 minutes of one core in wasm (Node), ${preset} | ≤ 180 s | ${s20 ? `${num(s20)} s (CPU)` : "not reached"} | ${s20 && s20 <= 180 ? "met" : "**missed**"} |`,
      );
  }
  if (targets.length) md += targetTable("target (issue 32)", targets);
  writeFileSync(new URL("language.md", dir), md);
  console.log(md);
  return readmeRow;
}
