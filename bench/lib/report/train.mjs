// The training report (issue 22): the model of docs/model.md trained to 90%
// held-out accuracy, from bench/results/train.json (bench/wasm/train.mjs:
// attnkit's npm package and the same model in tfjs-backend-wasm, one thread,
// the same batches) and train-native.json (attnkit_train_bench: one thread and
// every thread).
import { num, readJson, targetTable } from "./format.mjs";

/** The training section's markdown ("" without results) and its README rows. */
export function trainMarkdown(dir) {
  const readmeRows = [];
  const node = readJson(dir, "train.json"),
    native = readJson(dir, "train-native.json");
  const names = [...new Set([...(node?.tasks ?? []), ...(native?.tasks ?? [])].map((t) => t.task))];
  let tmd = "";
  const targets = [];
  for (const task of names) {
    const n = node?.tasks.find((t) => t.task === task),
      nat = native?.tasks.find((t) => t.task === task);
    const about = n ?? nat;
    const c = n?.config;
    tmd += `### ${task}${c ? ` (n = ${c.length}${c.padding ? `, padding ${c.padding}` : ""}, vocabulary ${c.vocabSize})` : ""}, ${about.numLayers} layer${about.numLayers > 1 ? "s" : ""}, d_model 32, 2 heads, batch 32\n\n`;
    tmd +=
      "| engine | ms per step (CPU) | wall ms per step | steps/s | steps to 90% | s to 90% (CPU) | first loss |\n" +
      "|---|---:|---:|---:|---:|---:|---:|\n";
    const base = n?.engines.find((e) => e.engine.startsWith("attnkit"));
    for (const e of n?.engines ?? []) {
      const ratio =
        e === base || !base ? "" : `, attnkit ${(e.msPerStep / base.msPerStep).toFixed(2)}×`;
      tmd += `| ${e.engine}, Node, 1 thread | ${e === base ? `**${num(e.msPerStep)}**` : num(e.msPerStep)}${ratio} | ${num(e.wallMsPerStep)} | ${num(e.stepsPerSecond)} | ${e.stepsTo90 ?? `not reached in ${e.steps} (${(100 * e.accuracy).toFixed(1)}%)`} | ${num(e.secondsTo90)} | ${e.firstLoss.toFixed(4)} |\n`;
    }
    for (const r of nat?.runs ?? []) {
      const pool = r.threads > 1;
      // With a pool the process's CPU time counts every thread: its speed is the wall time's.
      const ms = pool ? r.msPerStep : r.cpuMsPerStep;
      tmd += `| attnkit native, ${r.threads} thread${pool ? "s" : ""} | ${pool ? "–" : num(r.cpuMsPerStep)} | ${num(r.msPerStep)} | ${num(1e3 / ms)}${pool ? " (wall)" : ""} | ${r.stepsTo90 ?? "not reached"} | ${pool ? `${num(r.secondsTo90)} (wall)` : num(r.cpuSecondsTo90)} | ${r.firstLoss.toFixed(4)} |\n`;
    }
    tmd += "\n";
    if (n)
      tmd += `First loss: ln(${c.vocabSize}) = ${n.lnVocab.toFixed(4)}; attnkit and tfjs start from the same weights on the same batch and agree ${n.firstLossRelDiff === 0 ? "exactly" : `within ${n.firstLossRelDiff.toExponential(1)}`} (the first 50 losses within ${n.first50LossMaxRelDiff.toExponential(1)}, relative).${nat ? ` Native: the losses of 1 and ${nat.runs.at(-1).threads} threads are ${nat.identicalLosses ? "bit-identical" : "**not** bit-identical"}.` : ""}\n\n`;
    // The README keeps the first task's row (the other is in docs/benchmarks.md).
    if (n && base && task === names[0]) {
      const peer = n.engines
        .filter((e) => e !== base)
        .reduce((a, b) => (b.msPerStep < a.msPerStep ? b : a));
      const one = nat?.runs.find((r) => r.threads === 1);
      readmeRows.push(
        `| training step, ${task}, batch 32: **ms** (lower is better) | ${one ? num(one.cpuMsPerStep) : "–"} | – | ` +
          `**${num(base.msPerStep)}** (${(peer.msPerStep / base.msPerStep).toFixed(2)}×) | ${num(peer.msPerStep)} ${peer.engine} |`,
      );
    }
    if (n && base) {
      // Against the faster tfjs variant.
      const peer = n.engines
        .filter((e) => e !== base)
        .reduce((a, b) => (b.msPerStep < a.msPerStep ? b : a));
      const ratio = peer.msPerStep / base.msPerStep;
      targets.push(
        `| training steps/s, attnkit (wasm) vs tfjs-backend-wasm (its faster variant: ${peer.engine}), ${task} | ≥ 3× | ${ratio.toFixed(2)}× (${num(base.stepsPerSecond)} vs ${num(peer.stepsPerSecond)} steps/s) | ${ratio >= 3 ? "met" : "**missed**"} |`,
      );
    }
    if (n?.loadAverage)
      tmd += `Load average (1 min) during the Node run: ${Math.min(...n.loadAverage)}-${Math.max(...n.loadAverage)}.\n\n`;
  }
  if (targets.length) tmd += `${targetTable("target (issue 22, training)", targets)}\n`;
  if (node)
    tmd += `- tfjs-backend-wasm ${node.engines["tfjs-backend-wasm"]?.version}, Node ${node.engines.node}; attnkit's Highway target ${node.engines["attnkit (wasm SIMD128)"]?.target} in wasm${native ? `, natively ${native.target} (${native.maxThreads} threads)` : ""}.\n`;
  return { md: tmd, readmeRows };
}
