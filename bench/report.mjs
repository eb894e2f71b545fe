// Turns bench/results/native.json (Google Benchmark) and wasm.json (every engine
// timed in Node: attnkit wasm, plain JS and the peers) into markdown tables
// (bench/results/results.md, also copied into docs/benchmarks.md between the
// bench markers, and the README's performance table between the perf markers)
// and an SVG plot of GFLOP/s against T for every engine. Only a fit run
// (bench/fitness.mjs) is written into the README and docs; an unfit one goes to
// bench/results/ alone, as a record, and the reasons are printed.
//
// Usage: node bench/report.mjs [--results DIR] [--docs FILE] [--readme FILE]
//   (defaults: bench/results/, docs/benchmarks.md, README.md)
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { median } from "./lib/stats.mjs";
import { assessRun, peakName, ratioText, roundRatio, usefulShare } from "./fitness.mjs";

const option = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 && process.argv[i + 1] ? pathToFileURL(process.argv[i + 1]) : fallback;
};
const dir = new URL(
  `${option("--results", new URL("./results/", import.meta.url)).href.replace(/\/?$/, "/")}`,
);
const docsUrl = option("--docs", new URL("../docs/benchmarks.md", import.meta.url));
const readmeFileUrl = option("--readme", new URL("../README.md", import.meta.url));
// --language: only bench/results/language.md (scripts/bench.sh --language).
if (process.argv.includes("--language")) {
  languageReport();
  process.exit(0);
}
const rows = []; // { platform: native | wasm | js, engine, T, causal, gflops, ms, rssBytes?, wasmBytes?, variant? }
const extra = []; // other native shapes
let fmaPeak = null,
  wasmPeak = null,
  skipped = [],
  memoryOnly = [];

const ATTNKIT_NATIVE = "attnkit (native)",
  ATTNKIT_WASM = "attnkit (wasm SIMD128)";
// attnkit native again, timed by bench/wasm/bench.mjs in the same rounds as
// onnxruntime-node: the native tables' onnxruntime ratios are against it.
const NATIVE_IN_NODE = "attnkit (native, in Node's rounds)";

let nativeContext = {},
  engineInfo = {},
  envUnset = null,
  small = null;
const nativeQueries = []; // { T_q, keys, us }: attnkit_bench --queries
if (existsSync(new URL("env.json", dir)))
  envUnset = JSON.parse(readFileSync(new URL("env.json", dir), "utf8")).unset;
if (existsSync(new URL("small.json", dir)))
  small = JSON.parse(readFileSync(new URL("small.json", dir), "utf8"));
if (existsSync(new URL("queries.json", dir)))
  nativeQueries.push(...JSON.parse(readFileSync(new URL("queries.json", dir), "utf8")).sweep);
if (existsSync(new URL("native.json", dir))) {
  const native = JSON.parse(readFileSync(new URL("native.json", dir), "utf8"));
  nativeContext = native.context ?? {};
  const names = { BM_Attnkit: ATTNKIT_NATIVE, BM_OpenBlas: "OpenBLAS sgemm", BM_Loop: "C++ loop" };
  for (const b of native.benchmarks) {
    if (b.aggregate_name && b.aggregate_name !== "median") continue;
    if (b.run_name.startsWith("BM_FmaPeak")) {
      fmaPeak = Math.max(fmaPeak ?? 0, b.GFLOPs);
      continue;
    }
    const m = b.run_name.match(/^(BM_\w+)\/T:(\d+)\/causal:(\d)/);
    if (m && names[m[1]]) {
      rows.push({
        platform: "native",
        engine: names[m[1]],
        T: +m[2],
        causal: m[3] === "1",
        gflops: b.GFLOPs,
        ms: b.real_time,
      });
      continue;
    }
    const t = b.run_name.match(/^BM_AttnkitThreads\/T:(\d+)\/causal:(\d)\/threads:(\d+)/);
    if (t)
      extra.push({
        engine: "attnkit one head",
        shape: `T=${t[1]}${t[2] === "1" ? " causal" : ""}`,
        threads: +t[3],
        gflops: b.GFLOPs,
        time: `${b.real_time.toFixed(2)} ms`,
        value: b.real_time,
      });
    const h = b.run_name.match(/^BM_AttnkitMultiHead\/threads:(\d+)/);
    if (h)
      extra.push({
        engine: "attnkit multi-head",
        shape: "B=1 T=512 d_model=512 h=8",
        threads: +h[1],
        gflops: b.GFLOPs,
        time: `${b.real_time.toFixed(2)} ms`,
        value: b.real_time,
      });
    const d = b.run_name.match(/^BM_AttnkitDecode\/cache:(\d+)\/threads:(\d+)/);
    if (d)
      extra.push({
        engine: "attnkit decode",
        shape: `1 query, 8 heads, cache ${d[1]}`,
        threads: +d[2],
        gflops: b.GFLOPs,
        time: `${b.real_time.toFixed(1)} µs`,
        value: b.real_time,
      });
    // OpenBLAS on the same shapes (one thread): compared with attnkit's one-thread row.
    if (b.run_name.startsWith("BM_OpenBlasMultiHead"))
      extra.push({
        engine: "OpenBLAS sgemm multi-head",
        peerOf: "attnkit multi-head",
        shape: "B=1 T=512 d_model=512 h=8",
        threads: 1,
        gflops: b.GFLOPs,
        time: `${b.real_time.toFixed(2)} ms`,
        value: b.real_time,
      });
    const od = b.run_name.match(/^BM_OpenBlasDecode\/cache:(\d+)/);
    if (od)
      extra.push({
        engine: "OpenBLAS sgemm decode",
        peerOf: "attnkit decode",
        shape: `1 query, 8 heads, cache ${od[1]}`,
        threads: 1,
        gflops: b.GFLOPs,
        time: `${b.real_time.toFixed(1)} µs`,
        value: b.real_time,
      });
  }
}
if (existsSync(new URL("wasm.json", dir))) {
  const wasm = JSON.parse(readFileSync(new URL("wasm.json", dir), "utf8"));
  for (const r of wasm.results) rows.push({ platform: r.platform ?? "wasm", ...r });
  wasmPeak = wasm.wasmPeak?.gflops ?? null;
  engineInfo = wasm.engines ?? {};
  skipped = wasm.skipped ?? [];
  memoryOnly = wasm.memoryOnly ?? [];
}

// Fit to publish? (bench/fitness.mjs) The Google Benchmark table's share counts
// too: attnkit's GFLOP/s over the FMA peak measured once in that run.
const wasmJson = existsSync(new URL("wasm.json", dir))
  ? JSON.parse(readFileSync(new URL("wasm.json", dir), "utf8"))
  : null;
const gbShares = fmaPeak
  ? rows
      .filter((r) => r.engine === ATTNKIT_NATIVE && !r.causal)
      .map((r) => ({
        what: `${ATTNKIT_NATIVE} (Google Benchmark) at T=${r.T}`,
        share: r.gflops / fmaPeak,
      }))
  : [];
const fitness = assessRun(wasmJson, gbShares);
// The SIMD128 peak: the median of the run's rounds (over CPU time), where measured.
wasmPeak = fitness.peaks.find((p) => p.name === "SIMD128 mul+add peak")?.median ?? wasmPeak;
writeFileSync(new URL("fitness.json", dir), `${JSON.stringify(fitness, null, 2)}\n`);
// Writes `content` between the markers s0 and s1 of the file at url, only for a fit run.
function publish(url, s0, s1, content) {
  if (!fitness.fit || !existsSync(url)) return;
  const text = readFileSync(url, "utf8");
  if (!text.includes(s0) || !text.includes(s1)) return;
  writeFileSync(
    url,
    `${text.slice(0, text.indexOf(s0) + s0.length)}\n${content}\n${text.slice(text.indexOf(s1))}`,
  );
}

const find = (engine, T, causal) =>
  rows.find((r) => r.engine === engine && r.T === T && r.causal === causal);
const Ts = [...new Set(rows.filter((r) => r.T).map((r) => r.T))].sort((a, b) => a - b);
const mb = (bytes) =>
  bytes / 2 ** 20 >= 10 ? (bytes / 2 ** 20).toFixed(0) : (bytes / 2 ** 20).toFixed(1);

// A share of the platform's peak as published: at or above 100% the peak was
// measured low (a noisy run), so the figure is "unfit", never printed.
const unfit = (share) => Math.round(100 * share) >= 100;
const shareText = (share) => (unfit(share) ? "unfit" : `${(100 * share).toFixed(0)}%`);
const peakShare = (share) =>
  unfit(share) ? " (share of peak unfit)" : ` (${shareText(share)} of peak)`;

// One table: the reference engine first (with % of its platform's peak), then the
// others with "attnkit N×" = reference GFLOP/s / that engine's GFLOP/s.
function table(title, ours, peak, engines, causal) {
  const list = engines.filter((e) => Ts.some((T) => find(e, T, causal)));
  if (!list.includes(ours)) return "";
  let md = `| ${title}, ${causal ? "causal" : "non-causal"} | ${Ts.map((t) => `T=${t}`).join(" | ")} |\n`;
  md += `|---|${Ts.map(() => "---:").join("|")}|\n`;
  for (const e of list) {
    const label =
      rows.find((r) => r.engine === e)?.platform === "native" && title.startsWith("wasm")
        ? `${e} (native)`
        : e;
    md +=
      `| ${label} | ` +
      Ts.map((T) => {
        const r = find(e, T, causal);
        if (!r) return "–";
        // Causal shares: of the T(T+1)/2 pairs computed (usefulShare).
        if (e === NATIVE_IN_NODE)
          return r.gflops.toFixed(1) + (r.peakShare ? peakShare(usefulShare(r)) : "");
        const base =
          (e.startsWith("onnxruntime") && title === "native" && find(NATIVE_IN_NODE, T, causal)) ||
          find(ours, T, causal);
        // Its share: the median of per-round shares where the rounds measured a peak.
        if (e === ours)
          return (
            `**${r.gflops.toFixed(1)}**` +
            (r.peakShare !== undefined
              ? peakShare(usefulShare(r)) // causal: of the T(T+1)/2 pairs computed
              : peak
                ? peakShare(usefulShare({ ...r, peakShare: r.gflops / peak }))
                : "")
          );
        // The median of per-round ratios where both were timed in the same rounds.
        const rr = base && roundRatio(base, r, fitness.kept(base));
        return (
          `${r.gflops.toFixed(1)}` +
          (rr
            ? ` (attnkit ${ratioText(rr)})`
            : base
              ? ` (attnkit ${(base.gflops / r.gflops).toFixed(2)}×)`
              : "")
        );
      }).join(" | ") +
      " |\n";
  }
  return md;
}

const nodeNative = [
  ...new Set(
    rows
      .filter((r) => r.platform === "native" && r.engine.startsWith("onnxruntime"))
      .map((r) => r.engine),
  ),
];
const wasmPeers = [
  ...new Set(
    rows
      .filter((r) => r.platform === "wasm" && !r.engine.startsWith("attnkit"))
      .map((r) => r.engine),
  ),
];
const nativeEngines = [ATTNKIT_NATIVE, "OpenBLAS sgemm", "C++ loop", NATIVE_IN_NODE, ...nodeNative];
const wasmEngines = [
  ATTNKIT_WASM,
  "attnkit (wasm scalar)",
  "plain JS",
  ...wasmPeers,
  ...nodeNative,
];

let md =
  (fitness.fit
    ? "Fit run: "
    : "**Unfit run** (kept in bench/results/ as a record, not published): " +
      fitness.reasons.join("; ") +
      ".\n\nPeaks across the rounds: ") +
  fitness.peaks
    .map(
      (p) =>
        `${p.name} ${p.median.toFixed(1)} GFLOP/s (${p.min.toFixed(1)}–${p.max.toFixed(1)} over ${p.n - p.disturbed} steady rounds of ${p.n}; ${p.disturbed} disturbed, left out of the ratios)`,
    )
    .join("; ") +
  ` (a round is disturbed when its peak lies more than 5% from the peak's median, so that the steady rounds stay within about 10% of one another; a run is fit when no more than 1 round in 10 is disturbed and no share of a peak reaches 100%).\n\n`;
md +=
  "GFLOP/s (4·T²·d per head, also for causal runs; median of interleaved repetitions; one core, one thread, fp32; " +
  "one head, d = 64). **Bold**: attnkit, with its share of the measured peak of that platform. " +
  "In parentheses: how many times faster attnkit is than that engine (below 1: slower). " +
  "Every engine's output was checked against attnkit's before timing (max abs difference < 1e-3).\n\n";
const peaks = [];
if (fmaPeak)
  peaks.push(`FMA peak of this core (Highway, best target): **${fmaPeak.toFixed(0)} GFLOP/s**`);
if (wasmPeak)
  peaks.push(`WebAssembly SIMD128 mul+add peak in Node: **${wasmPeak.toFixed(1)} GFLOP/s**`);
if (peaks.length) md += `Measured in the same run: ${peaks.join("; ")}.\n\n`;

// How every engine ran: what the run removed from the environment, and the
// kernel or ISA each library picked (as far as it says).
{
  const lines = [];
  if (envUnset) {
    const names = Object.entries(envUnset);
    lines.push(
      names.length
        ? `Environment: \`npm run bench\` removed ${names.map(([k, v]) => `\`${k}=${v}\``).join(", ")} for the whole run ` +
            "(variables that force a library's kernel, cache sizes or threads; OpenBLAS then runs as on a user's machine)"
        : "Environment: no variable that forces a library's kernel, cache sizes or threads was set",
    );
  }
  if (nativeContext.openblas_corename) {
    lines.push(
      `OpenBLAS: core **${nativeContext.openblas_corename}** (\`openblas_get_corename\`), build ` +
        `\`${nativeContext.openblas_config}\` (\`openblas_get_config\`), one thread`,
    );
  }
  if (nativeContext.attnkit_target)
    lines.push(
      `attnkit native: Highway target **${nativeContext.attnkit_target}** (dynamic dispatch)`,
    );
  const byText = new Map(); // engines with the same description share a line
  for (const [name, info] of Object.entries(engineInfo)) {
    if (!info || name === "node") continue;
    const text = `${info.version ? ` ${info.version}` : ""}: ${info.kernel}${info.how ? ` (${info.how})` : ""}`;
    byText.set(text, [...(byText.get(text) ?? []), name]);
  }
  for (const [text, names] of byText) lines.push(`${names.join(", ")}${text}`);
  const node = engineInfo.node;
  if (node) {
    lines.push(
      `Node ${node.version} (V8 ${node.v8}), flags \`${node.execArgv.join(" ")}\`, NODE_OPTIONS ${node.NODE_OPTIONS ? `\`${node.NODE_OPTIONS}\`` : "unset"}` +
        (node.cpu
          ? `; CPU ${node.cpu.model} (family ${node.cpu.family}, model ${node.cpu.modelNumber}; ${node.cpu.simd.join(", ")})`
          : ""),
    );
  }
  if (lines.length) md += "How each engine ran:\n" + lines.map((l) => `- ${l}`).join("\n") + "\n\n";
}

for (const causal of [false, true])
  md += table("native", ATTNKIT_NATIVE, fmaPeak, nativeEngines, causal) + "\n";
for (const causal of [false, true])
  md += table("wasm (Node)", ATTNKIT_WASM, wasmPeak, wasmEngines, causal) + "\n";
// Plausibility: every engine's share of the peak measured on its own platform
// (native: the FMA peak, wasm: the SIMD128 mul+add peak), non-causal. Below
// 30% or above 100% is flagged: a library running a lesser kernel than the
// machine has (or forced to), or a measurement that cannot be right.
const plausible = [];
{
  // The scalar baselines (the C++ loop, attnkit's scalar wasm build) are
  // meant to sit far below the peak: not in this table.
  const engines = [
    ...new Set(rows.filter((r) => r.T && !r.causal && r.platform !== "js").map((r) => r.engine)),
  ].filter((e) => e !== "C++ loop" && e !== "attnkit (wasm scalar)");
  let t = `| share of the same-platform peak, non-causal | ${Ts.map((x) => `T=${x}`).join(" | ")} |\n|---|${Ts.map(() => "---:").join("|")}|\n`;
  let any = false;
  for (const e of engines) {
    const platform = rows.find((r) => r.engine === e).platform;
    // Engines timed in Node's rounds (attnkit native's child, onnxruntime-node)
    // against the FMA peak the child measured in those rounds (median), the
    // Google Benchmark engines against its FMA peak.
    const inNode =
      platform === "native" && !["attnkit (native)", "OpenBLAS sgemm", "C++ loop"].includes(e);
    const peakAt = (T) => {
      const child = inNode ? find(NATIVE_IN_NODE, T, false) : null;
      if (child?.peakRounds?.length) return median(child.peakRounds);
      return platform === "native" ? fmaPeak : wasmPeak;
    };
    if (!Ts.some((T) => peakAt(T))) continue;
    any = true;
    t +=
      `| ${e}${e.includes(platform) ? "" : ` (${platform})`} | ` +
      Ts.map((T) => {
        const r = find(e, T, false);
        if (!r || !peakAt(T)) return "–";
        // Its own per-round share where it has one (the same width's peak).
        const share = r.peakShare !== undefined ? r.peakShare : r.gflops / peakAt(T);
        const flag = share < 0.3 || unfit(share);
        if (flag) plausible.push(`${e} at T=${T}: ${shareText(share)}`);
        return `${shareText(share)}${flag ? " ⚠" : ""}`;
      }).join(" | ") +
      " |\n";
  }
  if (any) {
    md +=
      t +
      "\n⚠: below 30% of the peak measured on the same platform, or unfit (at or above 100% of it: that peak was measured low) (native: the FMA peak, for the " +
      "engines timed in Node the median of the peaks attnkit's child measured in the same rounds; wasm: the SIMD128 " +
      "mul+add peak), flagged for a second look (the scalar baselines, far below it by design, are left out). " +
      (plausible.length
        ? `Flagged: ${plausible.join("; ")}. Small shapes (T = 128) pay fixed costs per call and sit ` +
          "low for every engine; a flag at T ≥ 512 means the engine ran well below the machine."
        : "Nothing flagged.") +
      "\n\n";
  }
}
if (nodeNative.length) {
  md +=
    "Native engines: attnkit, OpenBLAS and the C++ loop run in Google Benchmark; onnxruntime-node (CPU EP, " +
    "`intraOpNumThreads` = `interOpNumThreads` = 1, sequential) runs in Node in the same `npm run bench`. Its ratios " +
    `are against the row "${NATIVE_IN_NODE}": the same attnkit build (\`attnkit_bench --serve\`, a child process that ` +
    "times its own calls) timed in the same interleaved rounds as onnxruntime-node, so that both see the same state of " +
    "a noisy machine; its share of the peak is the median over those rounds of its GFLOP/s over the FMA peak that the " +
    "child measured right after it. In the wasm tables the onnxruntime-node rows are for reference: " +
    "ratios there are attnkit wasm against native code. Peers: onnxruntime-node/-web with the com.microsoft " +
    "MultiHeadAttention op (causal: `unidirectional = 1`) and with the plain MatMul/Softmax graph (causal: a -1e9 " +
    "additive mask, made in the graph or given as an input filled once per shape, whichever is faster) from " +
    "`bench/make_models.py`; onnxruntime-web: wasm EP, `numThreads` = 1, SIMD; tfjs-backend-wasm: single-threaded " +
    "SIMD build, `setThreadsCount(1)`, (Q·scale)·Kᵀ (`matMul` with `transposeB` or an explicit `transpose`, whichever " +
    "is faster) + a -1e9 band made once per shape, softmax, ·V. Causal GFLOP/s are dense-equivalent (about half " +
    "the work is done), so a causal share of the peak overstates how busy the core was.\n";
  const variants = new Map();
  for (const r of rows.filter((x) => x.variant)) {
    const key = `${r.engine}: ${r.variant}`;
    variants.set(key, [...(variants.get(key) ?? []), `${r.T}${r.causal ? "c" : ""}`]);
  }
  if (variants.size) {
    md +=
      "Fastest formulation kept per shape (T; c = causal): " +
      [...variants].map(([k, shapes]) => `${k} (${shapes.join(", ")})`).join("; ") +
      ".\n";
  }
  md += "\n";
}
// How much of its core attnkit native's child had while timed (its CPU time over
// wall time, median per shape): below 1, something else ran on that core.
{
  const shares = rows.filter((r) => r.cpuShare !== undefined).map((r) => r.cpuShare);
  if (shares.length) {
    md +=
      `attnkit native's child process had ${(100 * Math.min(...shares)).toFixed(0)}-` +
      `${(100 * Math.max(...shares)).toFixed(0)}% of its core while timed (its CPU time over the wall-clock ` +
      "time, median over each shape's rounds; Node collects its garbage on its main thread before each timed call).\n\n";
  }
}
// Shapes a peer could not run (–): grouped by engine and reason.
const groups = new Map();
for (const s of skipped) {
  const key = `${s.engine}\u0000${s.reason.replace(/one call took [\d.]+ s/, "one call took over a minute / rounds")}`;
  if (!groups.has(key)) groups.set(key, { engine: s.engine, reason: s.reason, shapes: [] });
  groups.get(key).shapes.push(s.shape ?? `T=${s.T}${s.causal ? " causal" : ""}`);
}
for (const g of groups.values())
  md += `Not timed (–): ${g.engine} at ${g.shapes.join(", ")}: ${g.reason}.\n\n`;

// The other shapes, timed in Node like the one-head tables: one column per shape.
const shapeRows = rows.filter((r) => r.shape);
if (shapeRows.length) {
  const shapes = [...new Set(shapeRows.map((r) => r.shape))];
  const engines = [ATTNKIT_WASM, ...new Set(shapeRows.map((r) => r.engine))].filter(
    (e, i, all) => all.indexOf(e) === i && shapeRows.some((r) => r.engine === e),
  );
  const at = (e, shape) => shapeRows.find((r) => r.engine === e && r.shape === shape);
  md += `| other shapes (Node, one thread) | ${shapes.join(" | ")} |\n|---|${shapes.map(() => "---:").join("|")}|\n`;
  for (const e of engines) {
    const platform = shapeRows.find((r) => r.engine === e).platform;
    const ours = platform === "native" ? NATIVE_IN_NODE : ATTNKIT_WASM;
    md +=
      `| ${platform === "native" && !e.includes("native") ? `${e} (native)` : e} | ` +
      shapes
        .map((shape) => {
          const r = at(e, shape),
            base = at(ours, shape);
          if (!r) return "–";
          if (e === ours) return `**${r.gflops.toFixed(1)}**`;
          return (
            r.gflops.toFixed(1) + (base ? ` (attnkit ${(base.gflops / r.gflops).toFixed(2)}×)` : "")
          );
        })
        .join(" | ") +
      " |\n";
  }
  md +=
    "\nGFLOP/s, medians of the same interleaved rounds. Layer: one multi-head self-attention layer, " +
    "x [1, 512, 512] → x W_Q, x W_K, x W_V → 8 heads of 64 → W_O, counted as 8·T·d_model² + 4·T²·d_model flops " +
    '(the projections are two thirds of the work); attnkit\'s `multiHeadAttention` with the weights packed once (`packWeights`; the rows "per call" pack them on every call), the ' +
    "ONNX models with them as constants (onnxruntime may prepack them), tfjs with them as tensors made once. " +
    "Decode: one query of 8 heads of 64 against a KV cache of N tokens, 4·N·512 flops; attnkit's KV cache " +
    "(`createKVCache`, `attend`), onnxruntime's MultiHeadAttention op on key and value [1, N, 512] and its MatMul " +
    "graph on a cache kept head-major with K transposed, tfjs on K and V tensors [8, N, 64] made once. Ratios of " +
    "native engines are against attnkit native in the same rounds, of the others against attnkit wasm SIMD128.\n\n";
}

// Peak memory, measured in a fresh Node process per engine and shape.
const memRows = rows.filter((r) => r.rssBytes != null);
if (memRows.length) {
  const memTs = [...new Set(memRows.map((r) => r.T))].sort((a, b) => a - b);
  const engines = [...new Set(memRows.map((r) => r.engine))];
  md += `| peak memory, MB (Node engines, non-causal / causal) | ${memTs.map((t) => `T=${t}`).join(" | ")} |\n`;
  md += `|---|${memTs.map(() => "---:").join("|")}|\n`;
  for (const e of engines) {
    md +=
      `| ${e} | ` +
      memTs
        .map((T) => {
          const a = memRows.find((r) => r.engine === e && r.T === T && !r.causal),
            b = memRows.find((r) => r.engine === e && r.T === T && r.causal);
          const cell = (r) =>
            r ? mb(r.rssBytes) + (r.wasmBytes ? ` [${mb(r.wasmBytes)}]` : "") : "–";
          return `${cell(a)} / ${cell(b)}`;
        })
        .join(" | ") +
      " |\n";
  }
  md +=
    "\nGrowth of the resident set for one call (setup for that shape included), in a fresh process with the engine " +
    "loaded and warmed up at T = 16 and the inputs already in JS arrays; [in brackets] the engine's whole wasm linear " +
    "memory after the call (it never shrinks), where the module is reachable.";
  for (const r of memoryOnly)
    md += ` ${r.engine} at T=${r.T}${r.causal ? " causal" : ""}: wasm memory ${mb(r.wasmBytes)} MB, resident growth ${mb(r.rssBytes)} MB.`;
  md += "\n\n";
}

// Every Highway target the dispatch can pick (attnkit_bench --serve as
// dispatched and --target NAME), each against the FMA peak of its own vector
// width measured right after it in each round, onnxruntime-node and OpenBLAS in
// the same rounds. Shares and ratios: the median over rounds [lowest–highest].
const OPENBLAS_IN_NODE = "OpenBLAS sgemm (in Node's rounds)";
const perRoundShare = (r) => {
  if (!r.peakRounds || r.peakRounds.length !== r.cpuMsRounds?.length) return null;
  const done = r.causal ? (r.T + 1) / (2 * r.T) : 1; // causal: the pairs computed
  const kept = fitness.kept(r);
  const xs = r.cpuMsRounds
    .map((t, i) => (done * 4 * r.T * r.T * 64) / (t * 1e6) / r.peakRounds[i])
    .filter((_, i) => kept[i]);
  if (!xs.length) return null;
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
};
let targetMd = "";
{
  const byTarget = rows
    .filter(
      (r) =>
        r.platform === "native" &&
        r.T >= 512 &&
        r.target &&
        (r.engine === NATIVE_IN_NODE || r.engine.endsWith(" forced)")),
    )
    .sort((a, b) => b.bits - a.bits || a.causal - b.causal || a.T - b.T);
  if (byTarget.length) {
    targetMd +=
      "| attnkit native, Highway target (vector width) | shape, d = 64 | ms (CPU) | GFLOP/s | share of the same-width FMA peak | vs onnxruntime-node | vs OpenBLAS |\n" +
      "|---|---|---:|---:|---:|---:|---:|\n";
    for (const r of byTarget) {
      const ort = rows.filter(
        (o) => o.engine.startsWith("onnxruntime-node") && o.T === r.T && o.causal === r.causal,
      );
      const vsOrt = roundRatio(r, ort, fitness.kept(r)),
        vsBlas = roundRatio(r, find(OPENBLAS_IN_NODE, r.T, r.causal), fitness.kept(r)),
        share = perRoundShare(r);
      const pct = (x) => `${(100 * x).toFixed(0)}%`;
      targetMd +=
        `| ${r.target} (${r.bits}-bit)${r.engine === NATIVE_IN_NODE ? ", dispatched" : ", forced"} | T=${r.T}${r.causal ? " causal" : ""} | ` +
        `${r.ms.toPrecision(3)} | ${r.gflops.toFixed(1)} | ` +
        `${share ? `${pct(share.median)} [${pct(share.min)}–${pct(share.max)}]` : "–"} | ` +
        `${vsOrt ? ratioText(vsOrt) : "–"} | ${vsBlas ? ratioText(vsBlas) : "–"} |\n`;
    }
    targetMd +=
      "\nEvery target the dispatch can pick on this CPU, timed in the same interleaved rounds in Node " +
      "(`attnkit_bench --serve --target NAME`: attnkit::targets::ForceForTest), each over the CPU time of " +
      "its timed thread; after each timing the same child measures the FMA peak of its own vector width " +
      "(512, 256 or 128 bits, with the best target's FMA instructions: a 128-bit target without FMA is " +
      "judged against what the core does at that width). Share: the median over rounds of the round's " +
      "GFLOP/s over the round's peak, lowest–highest in brackets; causal shares count the T(T+1)/2 " +
      "query-key pairs computed. vs onnxruntime-node: the median over rounds of onnxruntime-node's " +
      "time (its faster formulation in that round) over attnkit's; vs OpenBLAS: the same for " +
      "OpenBLAS's sgemm attention (`attnkit_bench --serve --openblas`).\n\n";
    md += targetMd;
  }
}

// The issue's targets, each with the figure it was judged on.
const targets = [];
const atLeast = (T) => Ts.filter((t) => t >= T);
function ratioRow(label, ours, peers, causal, need, minT) {
  const cells = [];
  let ok = true,
    any = false;
  for (const T of atLeast(minT)) {
    const base = find(ours, T, causal);
    const best = peers
      .map((p) => find(p, T, causal))
      .filter(Boolean)
      .sort((a, b) => b.gflops - a.gflops)[0];
    if (!base || !best) continue;
    any = true;
    const ratio = base.gflops / best.gflops;
    ok &&= ratio >= need;
    // Three decimals where two would round a miss up to the target (0.997 -> 1.00).
    const digits = ratio < need && +ratio.toFixed(2) >= need ? 3 : 2;
    cells.push(`T=${T}: ${ratio.toFixed(digits)}× (vs ${best.engine})`);
  }
  if (any)
    targets.push(`| ${label} | ≥ ${need}× | ${cells.join("; ")} | ${ok ? "met" : "**missed**"} |`);
}
ratioRow("wasm vs best wasm peer, non-causal, T ≥ 512", ATTNKIT_WASM, wasmPeers, false, 1.3, 512);
ratioRow("wasm vs best wasm peer, causal, T ≥ 512", ATTNKIT_WASM, wasmPeers, true, 2, 512);
ratioRow("wasm vs plain JS, non-causal", ATTNKIT_WASM, ["plain JS"], false, 6, 0);
ratioRow("wasm vs plain JS, causal", ATTNKIT_WASM, ["plain JS"], true, 6, 0);
const nativeVsOrt = rows.some((r) => r.engine === NATIVE_IN_NODE) ? NATIVE_IN_NODE : ATTNKIT_NATIVE;
ratioRow(
  "native vs onnxruntime-node, non-causal, T ≥ 512",
  nativeVsOrt,
  nodeNative,
  false,
  1.0,
  512,
);
ratioRow("native vs onnxruntime-node, causal, T ≥ 512", nativeVsOrt, nodeNative, true, 1.5, 512);
// The share of the FMA peak: from Node's rounds, where the child measured the
// peak right after each of its timings, when there; Google Benchmark's medians
// (the kernel and the peak timed up to minutes apart) alongside.
const n2048 = find(ATTNKIT_NATIVE, 2048, false),
  inRounds = find(NATIVE_IN_NODE, 2048, false);
if ((n2048 && fmaPeak) || inRounds?.peakShare) {
  const gb = n2048 && fmaPeak ? (100 * n2048.gflops) / fmaPeak : null;
  const gbText =
    gb === null
      ? ""
      : `Google Benchmark medians: ${shareText(gb / 100)} (${n2048.gflops.toFixed(1)} of ${fmaPeak.toFixed(0)} GFLOP/s)`;
  const pct = inRounds?.peakShare ? 100 * inRounds.peakShare : gb;
  const text = inRounds?.peakShare
    ? `${shareText(pct / 100)} (median over ${inRounds.peakRounds.length} of Node's rounds of attnkit's GFLOP/s over the FMA peak measured right after it` +
      `${gbText ? `; ${gbText}` : ""})`
    : gbText;
  targets.push(
    `| native share of the FMA peak, T = 2048, non-causal | ≥ 70% | ${text} | ${pct >= 70 ? "met" : "**missed**"} |`,
  );
}
for (const r of memoryOnly) {
  targets.push(
    `| wasm memory, one head, T = ${r.T}, d = 64 | ≤ 64 MB | ${mb(r.wasmBytes)} MB | ${r.wasmBytes <= 64 * 2 ** 20 ? "met" : "**missed**"} |`,
  );
}
if (targets.length)
  md += `| target (issue #5) | needed | measured | |\n|---|---|---|---|\n${targets.join("\n")}\n\n`;

const cacheOf = (r) => parseInt(r.shape.match(/cache (\d+)/)?.[1] ?? 0);
// attnkit's rows of a shape, then OpenBLAS on the same shape.
extra.sort(
  (a, b) =>
    (a.peerOf ?? a.engine).localeCompare(b.peerOf ?? b.engine) ||
    cacheOf(a) - cacheOf(b) ||
    a.shape.localeCompare(b.shape) ||
    !!a.peerOf - !!b.peerOf ||
    a.threads - b.threads,
);
// Speed-up over one thread of the same shape (for one head: the table above).
const oneThreadMs = (r) => {
  if (r.engine === "attnkit one head") {
    const [, T, causal] = r.shape.match(/T=(\d+)( causal)?/);
    return find(ATTNKIT_NATIVE, +T, !!causal)?.ms;
  }
  return extra.find((o) => o.engine === r.engine && o.shape === r.shape && o.threads === 1)?.value; // same unit: same benchmark
};
if (extra.length) {
  md +=
    "| other shapes (native, Google Benchmark) | threads | GFLOP/s | time | vs 1 thread (vs OpenBLAS) |\n|---|---:|---:|---:|---:|\n";
  for (const r of extra) {
    let note = "";
    if (r.peerOf) {
      // OpenBLAS: how many times faster attnkit's one thread is
      const ours = extra.find(
        (o) => o.engine === r.peerOf && o.shape === r.shape && o.threads === 1,
      );
      if (ours) note = `(attnkit ${(r.value / ours.value).toFixed(2)}×)`;
    } else {
      const base = oneThreadMs(r);
      if (r.threads > 1 && base) note = `${(base / r.value).toFixed(2)}×`;
    }
    md += `| ${r.engine}: ${r.shape} | ${r.threads} | ${r.gflops.toFixed(1)} | ${r.time} | ${note} |\n`;
  }
}
// Small calls (bench/wasm/small.mjs and BM_AttnkitQueries): microseconds per
// call, their own tables and targets, also in docs/benchmarks.md between the
// small-calls markers.
let smallMd = "";
if (small) {
  const TYPED = "attnkit (typed arrays)",
    NESTED = "attnkit (nested arrays)",
    JS = "plain JS";
  const sq = (engine, d, T) =>
    small.square.find((r) => r.engine === engine && r.d === d && r.T === T);
  const us = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  const dims = [...new Set(small.square.map((r) => r.d))];
  const smallTargets = [];
  for (const d of dims) {
    const Tsq = [...new Set(small.square.filter((r) => r.d === d).map((r) => r.T))].sort(
      (a, b) => a - b,
    );
    smallMd += `| small calls, d = ${d}, µs per call | ${Tsq.map((T) => `T=${T}`).join(" | ")} |\n|---|${Tsq.map(() => "---:").join("|")}|\n`;
    smallMd += `| ${TYPED} | ${Tsq.map((T) => `**${us(sq(TYPED, d, T).us)}**`).join(" | ")} |\n`;
    smallMd += `| ${JS} | ${Tsq.map((T) => {
      const j = sq(JS, d, T),
        a = sq(TYPED, d, T);
      return `${us(j.us)} (attnkit ${(j.us / a.us).toFixed(2)}×)`;
    }).join(" | ")} |\n`;
    smallMd += `| ${NESTED} | ${Tsq.map((T) => {
      const n = sq(NESTED, d, T),
        a = sq(TYPED, d, T);
      return `${us(n.us)} (${(n.us / a.us).toFixed(2)}× typed)`;
    }).join(" | ")} |\n\n`;
    // attnkit at least as fast as plain JS from T = 4 (d = 8) / T = 2 (d = 64).
    const from = d === 8 ? 4 : d === 64 ? 2 : null;
    if (from !== null) {
      const cells = Tsq.filter((T) => T >= from).map((T) => ({
        T,
        r: sq(JS, d, T).us / sq(TYPED, d, T).us,
      }));
      const bad = cells.filter((c) => c.r < 1);
      const worst = cells.reduce((a, b) => (b.r < a.r ? b : a));
      smallTargets.push(
        `| attnkit (typed) at least as fast as plain JS, d = ${d}, T ≥ ${from} | ≥ 1× | ` +
          (bad.length
            ? `slower at ${bad.map((c) => `T=${c.T}: ${c.r.toFixed(2)}×`).join(", ")}`
            : `slowest ratio ${worst.r.toFixed(2)}× (T=${worst.T})`) +
          ` | ${bad.length ? "**missed**" : "met"} |`,
      );
    }
  }
  {
    const cells = small.square
      .filter((r) => r.engine === NESTED)
      .map((r) => ({ d: r.d, T: r.T, r: r.us / sq(TYPED, r.d, r.T).us }));
    const bad = cells.filter((c) => c.r > 1.2);
    const worst = cells.reduce((a, b) => (b.r > a.r ? b : a));
    smallTargets.push(
      `| nested arrays no slower than 1.2× typed arrays | ≤ 1.2× | ` +
        (bad.length
          ? `over at ${bad.map((c) => `d=${c.d} T=${c.T}: ${c.r.toFixed(c.r.toFixed(2) === "1.20" ? 3 : 2)}×`).join(", ")}`
          : `worst ${worst.r.toFixed(2)}× (d=${worst.d}, T=${worst.T})`) +
        ` | ${bad.length ? "**missed**" : "met"} |`,
    );
  }
  // The T_q sweep: wasm (the package) and native (Google Benchmark), with the
  // ratio of each time to the previous T_q's.
  const sweepRows = [];
  for (const keys of [...new Set(small.sweep.map((r) => r.keys))]) {
    const pts = small.sweep
      .filter((r) => r.keys === keys && r.engine === TYPED)
      .sort((a, b) => a.T_q - b.T_q);
    sweepRows.push({
      label: `${keys} keys, wasm (package)`,
      where: "wasm",
      keys,
      pts: pts.map((p) => ({ T_q: p.T_q, us: p.us })),
    });
    const nat = nativeQueries.filter((r) => r.keys === keys).sort((a, b) => a.T_q - b.T_q);
    if (nat.length)
      sweepRows.push({ label: `${keys} keys, native`, where: "native", keys, pts: nat });
  }
  const Tqs = [...new Set(sweepRows.flatMap((r) => r.pts.map((p) => p.T_q)))].sort((a, b) => a - b);
  smallMd +=
    `| T_q queries against T_k keys, d = 64, µs per call (× the previous T_q) | ${Tqs.map((t) => `T_q=${t}`).join(" | ")} |\n` +
    `|---|${Tqs.map(() => "---:").join("|")}|\n`;
  for (const row of sweepRows) {
    smallMd +=
      `| ${row.label} | ` +
      Tqs.map((t) => {
        const i = row.pts.findIndex((p) => p.T_q === t);
        if (i < 0) return "–";
        const p = row.pts[i],
          prev = row.pts[i - 1];
        return (
          `${row.where === "js" ? us(p.us) : `**${us(p.us)}**`}` +
          (prev && prev.T_q === t - 1 ? ` (${(p.us / prev.us).toFixed(2)}×)` : "")
        );
      }).join(" | ") +
      " |\n";
  }
  for (const where of ["wasm", "native"]) {
    const steps = [];
    for (const row of sweepRows.filter((r) => r.where === where)) {
      for (let i = 1; i < row.pts.length; ++i) {
        const a = row.pts[i - 1],
          b = row.pts[i];
        if (b.T_q === a.T_q + 1)
          steps.push({ keys: row.keys, from: a.T_q, r: b.us / a.us, work: b.T_q / a.T_q });
      }
    }
    if (!steps.length) continue;
    const over = steps.filter((s) => s.r > 1.2);
    // Beyond the added work: the time ratio over the ratio of query counts.
    const beyond = steps.filter((s) => s.r / s.work > 1.2);
    const worst = steps.reduce((a, b) => (b.r / b.work > a.r / a.work ? b : a));
    smallTargets.push(
      `| no step up of more than 1.2× between consecutive T_q (${where}) | ≤ 1.2× | ` +
        (over.length
          ? `time ratio over 1.2× at ${over.map((s) => `${s.keys} keys ${s.from}→${s.from + 1}: ${s.r.toFixed(s.r.toFixed(2) === "1.20" ? 3 : 2)}×`).join(", ")}`
          : "every time ratio ≤ 1.2×") +
        `; divided by the added queries ((T_q + 1) / T_q), the worst is ${(worst.r / worst.work).toFixed(2)}× (${worst.keys} keys, ${worst.from}→${worst.from + 1})` +
        ` | ${over.length ? (beyond.length ? "**missed**" : "**missed** as a time ratio (the time grows with the work; no step beyond it)") : "met"} |`,
    );
  }
  smallMd +=
    "\nSmall calls: one call of the npm package's `attention(Q, K, V)` (wasm SIMD128, from `dist/`, as a JS user " +
    "calls it) against the plain JS engine (Float32Array inputs, its output array reused), median over " +
    `${small.rounds} interleaved rounds of ~${small.batchMs} ms batches in one Node process, µs per call (lower is better; ` +
    "in parentheses plain JS's time over attnkit's, and nested arrays' over typed arrays'). Typed arrays: " +
    "`{ data: Float32Array, rows, cols }`; nested: `[[...], [...]]`. The T_q table: T_q queries against fixed " +
    "keys, in wasm through the package (typed arrays) and natively (`attnkit_bench --queries`), every T_q of a key " +
    "count in the same interleaved rounds, each with its time over the previous T_q's.\n\n";
  smallMd += `| target (issue #18, small calls) | needed | measured | |\n|---|---|---|---|\n${smallTargets.join("\n")}\n`;
}
writeFileSync(new URL("results.md", dir), md + (smallMd ? `${smallMd}\n` : ""));

// SVG: GFLOP/s (log scale) against T (log2), one panel per masking, one polyline
// per engine; native engines solid, wasm dashed, JS dotted; the two peaks as grey lines.
const engines = [...nativeEngines, ...wasmEngines.filter((e) => !nativeEngines.includes(e))].filter(
  (e) => e !== NATIVE_IN_NODE && rows.some((r) => r.engine === e && r.T),
);
const palette = {
  [ATTNKIT_NATIVE]: "#1f4fb4",
  [ATTNKIT_WASM]: "#d62728",
  "attnkit (wasm scalar)": "#f28e8e",
  "OpenBLAS sgemm": "#ff7f0e",
  "C++ loop": "#8c564b",
  "plain JS": "#7f7f7f",
  "onnxruntime-node MultiHeadAttention": "#2ca02c",
  "onnxruntime-node MatMul graph": "#17becf",
  "onnxruntime-web MultiHeadAttention": "#9467bd",
  "onnxruntime-web MatMul graph": "#e377c2",
  "tfjs-backend-wasm": "#bcbd22",
};
const spare = ["#393b79", "#637939", "#8c6d31", "#843c39"];
const colorOf = (e, i) => palette[e] ?? spare[i % spare.length];
const W = 1020,
  H = 380,
  top = 30,
  bottom = 44,
  left = 54,
  panelW = 300,
  gap = 40,
  legendX = left + 2 * panelW + gap + 20;
const all = rows
  .filter((r) => r.T)
  .map((r) => r.gflops)
  .concat([fmaPeak, wasmPeak].filter(Boolean));
const gMin = Math.min(...all) / 1.5,
  gMax = Math.max(...all) * 1.5;
const ticks = [];
for (let p = Math.floor(Math.log10(gMin)); p <= Math.ceil(Math.log10(gMax)); ++p) {
  for (const m of [1, 2, 5])
    if (m * 10 ** p >= gMin && m * 10 ** p <= gMax) ticks.push(+(m * 10 ** p).toPrecision(1));
}
const y = (g) =>
  top +
  (H - top - bottom) *
    (1 - (Math.log10(g) - Math.log10(gMin)) / (Math.log10(gMax) - Math.log10(gMin)));
const style = (e) => {
  const p = rows.find((r) => r.engine === e)?.platform;
  return p === "native" ? "" : p === "js" ? ' stroke-dasharray="2 3"' : ' stroke-dasharray="6 3"';
};
let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">\n`;
svg += `<rect width="${W}" height="${H}" fill="white"/>\n`;
[false, true].forEach((causal, p) => {
  const x0 = left + p * (panelW + gap);
  const x = (T) =>
    x0 +
    panelW *
      (Ts.length > 1
        ? (Math.log2(T) - Math.log2(Ts[0])) / (Math.log2(Ts.at(-1)) - Math.log2(Ts[0]))
        : 0.5);
  svg += `<text x="${x0}" y="${top - 12}" font-size="12">GFLOP/s, one head, d=64, ${causal ? "causal" : "non-causal"}</text>\n`;
  for (const g of ticks) {
    svg += `<line x1="${x0}" x2="${x0 + panelW}" y1="${y(g)}" y2="${y(g)}" stroke="#ddd"/>`;
    svg += `<text x="${x0 - 4}" y="${y(g) + 4}" text-anchor="end">${g}</text>\n`;
  }
  for (const T of Ts)
    svg += `<text x="${x(T)}" y="${H - bottom + 15}" text-anchor="middle">${T}</text>`;
  svg += `<text x="${x0 + panelW / 2}" y="${H - 8}" text-anchor="middle">T (tokens)</text>\n`;
  for (const [name, g] of [
    ["FMA peak (native)", fmaPeak],
    ["SIMD128 peak (wasm)", wasmPeak],
  ]) {
    if (g)
      svg += `<line x1="${x0}" x2="${x0 + panelW}" y1="${y(g)}" y2="${y(g)}" stroke="#999" stroke-width="1.5" stroke-dasharray="1 2"/><text x="${x0 + panelW - 2}" y="${y(g) - 3}" text-anchor="end" fill="#777">${name}</text>\n`;
  }
  engines.forEach((e, i) => {
    const pts = Ts.map((T) => find(e, T, causal)).filter(Boolean);
    if (!pts.length) return;
    const c = colorOf(e, i);
    svg += `<polyline fill="none" stroke="${c}" stroke-width="${e.startsWith("attnkit") ? 3 : 1.8}"${style(e)} points="${pts.map((r) => `${x(r.T).toFixed(1)},${y(r.gflops).toFixed(1)}`).join(" ")}"/>\n`;
    for (const r of pts)
      svg += `<circle cx="${x(r.T).toFixed(1)}" cy="${y(r.gflops).toFixed(1)}" r="2.5" fill="${c}"/>`;
    svg += "\n";
  });
});
engines.forEach((e, i) => {
  const c = colorOf(e, i),
    yy = top + 16 * i;
  const label =
    rows.find((r) => r.engine === e)?.platform === "native" &&
    !e.includes("native") &&
    e.startsWith("onnxruntime-node")
      ? `${e} (native)`
      : e;
  svg += `<line x1="${legendX}" x2="${legendX + 22}" y1="${yy - 4}" y2="${yy - 4}" stroke="${c}" stroke-width="${e.startsWith("attnkit") ? 3 : 1.8}"${style(e)}/><text x="${legendX + 28}" y="${yy}" fill="${c}">${label}</text>\n`;
});
svg += `<text x="${legendX}" y="${top + 16 * engines.length + 10}" fill="#555">solid: native · dashed: wasm · dotted: JS</text>\n`;
svg += "</svg>\n";
writeFileSync(new URL("gflops.svg", dir), svg);

// The README's performance table (a fit run only): attnkit against the fastest
// peer of the same rounds, natively and in wasm; more rows from the backward
// and training sections below (readmeRows), written at the end.
const readmeRows = [];
{
  const fastest = (list) => [...list].sort((a, b) => b.gflops - a.gflops)[0];
  const cell = (ours, peers) => {
    if (!ours) return ["–", "–"];
    const best = fastest(peers);
    if (!best) return [`**${ours.gflops.toFixed(1)}**`, "–"];
    const rr = roundRatio(ours, peers, fitness.kept(ours));
    const ratio = rr ? ratioText(rr) : `${(ours.gflops / best.gflops).toFixed(2)}×`;
    return [
      `**${ours.gflops.toFixed(1)}** (${ratio})`,
      `${best.gflops.toFixed(1)} ${best.engine.replace(/ \(in Node's rounds\)$/, "")}`,
    ];
  };
  const nativePeer = (r) =>
    r.platform === "native" &&
    (r.engine.startsWith("onnxruntime") || r.engine === OPENBLAS_IN_NODE);
  const wasmPeer = (r) => r.platform === "wasm" && !r.engine.startsWith("attnkit");
  const bigT = Ts.includes(2048) ? 2048 : Ts.at(-1);
  const shapes = [
    ...[false, true].map((causal) => ({
      label: `T = ${bigT}${causal ? ", causal" : ""}`,
      at: (r) => r.T === bigT && r.causal === causal,
    })),
    { label: "layer: T = 512, d_model = 512, 8 heads", at: (r) => r.shape === "layer T=512" },
    {
      label: "decode: 1 query, 8 heads, 4096 cached tokens",
      at: (r) => r.shape === "decode, cache 4096",
    },
  ];
  for (const { label, at } of shapes) {
    const here = rows.filter((r) => at(r));
    const [n, np] = cell(
      here.find((r) => r.engine === NATIVE_IN_NODE),
      here.filter(nativePeer),
    );
    const [w, wp] = cell(
      here.find((r) => r.engine === ATTNKIT_WASM),
      here.filter(wasmPeer),
    );
    if (n !== "–" || w !== "–") readmeRows.push(`| ${label} | ${n} | ${np} | ${w} | ${wp} |`);
  }
}

// docs/benchmarks.md: replace the text between the markers (a fit run only).
const readmeUrl = docsUrl;
publish(
  readmeUrl,
  "<!-- bench:start -->",
  "<!-- bench:end -->",
  `${md}\n![GFLOP/s against T](../bench/results/gflops.svg)\n`,
);
if (smallMd) publish(readmeUrl, "<!-- small:start -->", "<!-- small:end -->", smallMd);
console.log(md);

// --- The backward (issue 21): forward + backward of one head and of the
// multi-head layer, from bench/results/native-backward.json (Google Benchmark:
// BM_AttnkitFwdBwd, BM_AttnkitBwd, BM_AttnkitMultiHeadTrain, BM_FmaPeak),
// torch.json (bench/torch_bench.py) and backward.json (bench/wasm/backward.mjs).
// Written into results.md (appended) and docs/benchmarks.md between the
// backward markers.
{
  const load = (name) =>
    existsSync(new URL(name, dir)) ? JSON.parse(readFileSync(new URL(name, dir), "utf8")) : null;
  const nativeBwd = load("native-backward.json"),
    torch = load("torch.json"),
    wasmBwd = load("backward.json");
  const back = []; // { engine, platform, T?, causal?, shape?, ms, gflops }
  let bwdPeak = null;
  const NATIVE_FB = "attnkit native (fwd + bwd)",
    NATIVE_B = "attnkit native (backward alone)",
    NATIVE_LAYER = "attnkit native MultiHeadAttention + Backward";
  for (const b of nativeBwd?.benchmarks ?? []) {
    if (b.error_occurred || (b.aggregate_name && b.aggregate_name !== "median")) continue;
    if (b.run_name.startsWith("BM_FmaPeak")) {
      // Over CPU time, the clock of the GFLOP/s counters.
      bwdPeak = Math.max(bwdPeak ?? 0, b.GFLOPsCpu ?? b.GFLOPs);
      continue;
    }
    const m = b.run_name.match(/^BM_Attnkit(FwdBwd|Bwd)\/T:(\d+)\/causal:(\d)/);
    if (m)
      back.push({
        engine: m[1] === "FwdBwd" ? NATIVE_FB : NATIVE_B,
        platform: "native",
        T: +m[2],
        causal: m[3] === "1",
        ms: b.cpu_time,
        wallMs: b.real_time,
        gflops: b.GFLOPs,
      });
    if (b.run_name.startsWith("BM_AttnkitMultiHeadTrain"))
      back.push({
        engine: NATIVE_LAYER,
        platform: "native",
        shape: "layer T=512",
        ms: b.cpu_time,
        wallMs: b.real_time,
        gflops: b.GFLOPs,
      });
  }
  for (const r of torch?.results ?? []) back.push({ platform: "native", ...r });
  for (const r of wasmBwd?.results ?? []) back.push({ platform: "wasm", ...r });
  const heads = back.filter((r) => r.T);
  const Tb = [...new Set(heads.map((r) => r.T))].sort((a, b) => a - b);
  const get = (e, T, causal) =>
    heads.find((r) => r.engine === e && r.T === T && r.causal === causal);
  const num = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  const torchPaths = [
    ...new Set(heads.filter((r) => r.engine.startsWith("PyTorch")).map((r) => r.engine)),
  ];
  const ATTNKIT_W = "attnkit (wasm SIMD128)";
  // attnkit's speed-up over a peer's result r: paired rounds where the peer's
  // benchmark ran attnkit's between its own (torch_bench.py --attnkit), else
  // the ratio of the two medians (base: attnkit's result).
  const speedup = (r, base) => r.pairedRatio ?? (base ? r.ms / base.ms : null);
  // One table per platform: ms per call (GFLOP/s), each peer with attnkit's speed-up over it.
  const table = (title, base, engines) => {
    const present = engines.filter((e) => heads.some((r) => r.engine === e));
    if (!present.length) return "";
    const cols = [];
    const own = Tb.filter((T) => heads.some((r) => r.T === T && present.includes(r.engine)));
    for (const causal of [false, true]) for (const T of own) cols.push({ T, causal });
    let t = `| ${title} | ${cols.map((c) => `T=${c.T}${c.causal ? " causal" : ""}`).join(" | ")} |\n`;
    t += `|---|${cols.map(() => "---:").join("|")}|\n`;
    for (const e of present) {
      const cells = cols.map(({ T, causal }) => {
        const r = get(e, T, causal);
        if (!r) return "–";
        const b = get(base, T, causal);
        if (e === base) return `**${num(r.ms)} ms** (${num(r.gflops)})`;
        if (e === NATIVE_B) return `${num(r.ms)} ms (${num(r.gflops)})`;
        const ratio = speedup(r, b);
        return `${num(r.ms)} ms (${num(r.gflops)})${ratio ? `, attnkit ${ratio.toFixed(2)}×` : ""}`;
      });
      t += `| ${e} | ${cells.join(" | ")} |\n`;
    }
    return `${t}\n`;
  };
  for (const causal of [false, true]) {
    const n = get(NATIVE_FB, 2048, causal),
      w = get(ATTNKIT_W, 2048, causal),
      tf = get("tfjs-backend-wasm", 2048, causal);
    const pt = torchPaths
      .map((e) => get(e, 2048, causal))
      .filter(Boolean)
      .sort((a, b) => a.ms - b.ms)[0];
    if (!n && !w) continue;
    const r = (x, p) => (x && p ? ` (${speedup(p, x).toFixed(2)}×)` : "");
    readmeRows.push(
      `| forward + backward, T = 2048${causal ? ", causal" : ""} | ${n ? `**${num(n.gflops)}**${r(n, pt)}` : "–"} | ` +
        `${pt ? `${num(pt.gflops)} ${pt.engine}` : "–"} | ${w ? `**${num(w.gflops)}**${r(w, tf)}` : "–"} | ${tf ? `${num(tf.gflops)} tfjs-backend-wasm` : "–"} |`,
    );
  }
  let bmd = "";
  if (heads.length) {
    bmd += "### Forward + backward, one head, d = 64, one thread\n\n";
    bmd +=
      "CPU ms per forward + backward (the median of repetitions; on a shared machine the wall time " +
      "also counts other processes' turns on the core, and is kept in the JSON) (GFLOP/s: forward 4·T²·d + backward 10·T²·d, FlashAttention-2's " +
      "convention, recomputation not counted, halved when causal); each peer's time over attnkit's " +
      "(attnkit N×: attnkit is N times faster). attnkit: `AttentionForTraining`, then " +
      "`AttentionBackward` with its saved O and lse (natively); `attentionForTraining`, then " +
      "`attentionBackward` with `saved` (the npm package, wasm).\n\n";
    bmd += table("native, ms (GFLOP/s)", NATIVE_FB, [NATIVE_FB, NATIVE_B, ...torchPaths]);
    bmd += table("wasm / JS, ms (GFLOP/s)", ATTNKIT_W, [
      ATTNKIT_W,
      "tfjs-backend-wasm",
      "plain JS",
    ]);
  }
  const layers = back.filter((r) => r.shape);
  if (layers.length) {
    const base = layers.find((r) => r.engine === NATIVE_LAYER);
    bmd +=
      "| multi-head layer B=1 T=512 d_model=512 h=8, forward + backward | ms | GFLOP/s | |\n|---|---:|---:|---|\n";
    for (const r of layers) {
      const ratio = r === base ? null : speedup(r, base);
      bmd += `| ${r.engine} | ${num(r.ms)} | ${num(r.gflops)} | ${ratio ? `attnkit ${ratio.toFixed(2)}×` : ""} |\n`;
    }
    bmd += "\n";
  }
  // The targets of issue 21.
  const targets = [];
  const ratioRange = (peer, causal, minT, base) => {
    const rs = Tb.filter((T) => T >= minT)
      .map((T) => ({ T, a: get(base, T, causal), p: get(peer, T, causal) }))
      .filter((x) => x.a && x.p)
      .map((x) => ({ T: x.T, ratio: x.p.ms / x.a.ms }));
    return rs;
  };
  const row = (what, needed, rs, need) => {
    if (!rs.length) return targets.push(`| ${what} | ≥ ${needed}× | not measured | – |`);
    const worst = rs.reduce((a, b) => (b.ratio < a.ratio ? b : a));
    targets.push(
      `| ${what} | ≥ ${needed}× | ${rs.map((x) => `T=${x.T}: ${x.ratio.toFixed(2)}×`).join(", ")} | ${worst.ratio >= need ? "met" : `**missed** (${worst.ratio.toFixed(2)}× at T=${worst.T})`} |`,
    );
  };
  for (const causal of [false, true]) {
    const c = causal ? "causal" : "non-causal";
    row(
      `wasm fwd+bwd vs tfjs-backend-wasm, ${c}, T ≥ 512`,
      2,
      ratioRange("tfjs-backend-wasm", causal, 512, ATTNKIT_W),
      2,
    );
    row(
      `wasm fwd+bwd vs plain JS, ${c}, T ≥ 512`,
      10,
      ratioRange("plain JS", causal, 512, ATTNKIT_W),
      10,
    );
    const need = causal ? 2.5 : 1.5;
    // Against PyTorch's fastest path measured at each T.
    const rs = Tb.filter((T) => T >= 512)
      .map((T) => {
        const a = get(NATIVE_FB, T, causal);
        const ps = torchPaths.map((e) => get(e, T, causal)).filter(Boolean);
        if (!a || !ps.length) return null;
        return { T, ratio: Math.min(...ps.map((p) => speedup(p, a))) };
      })
      .filter(Boolean);
    row(`native fwd+bwd vs PyTorch CPU (its fastest path), ${c}, T ≥ 512`, need, rs, need);
  }
  for (const causal of [false, true]) {
    const r = get(NATIVE_FB, 2048, causal);
    if (r && bwdPeak)
      targets.push(
        `| native fwd+bwd share of the FMA peak (${num(bwdPeak)} GFLOP/s), T=2048${causal ? " causal" : ""} | ≥ 55% | ${((100 * r.gflops) / bwdPeak).toFixed(0)}% (${num(r.gflops)} GFLOP/s) | ${r.gflops / bwdPeak >= 0.55 ? "met" : "**missed**"} |`,
      );
  }
  const big = wasmBwd?.big;
  if (big?.memoryBytes)
    targets.push(
      `| wasm fwd+bwd T=${big.T} causal: module memory (memoryBytes) | ≤ 64 MiB | ${(big.memoryBytes / 2 ** 20).toFixed(1)} MiB (${(big.ms / 1e3).toFixed(1)} s per call) | ${big.memoryBytes <= 64 * 2 ** 20 ? "met" : "**missed**"} |`,
    );
  else if (big)
    targets.push(
      `| wasm fwd+bwd T=16384 within 64 MiB | ≤ 64 MiB | not measured (${big.error}) | – |`,
    );
  const small = wasmBwd?.small;
  if (small?.sizes?.length) {
    const worst = small.sizes.reduce((a, b) => (b.ratio > a.ratio ? b : a));
    targets.push(
      `| wasm backward (saved) / forward time per call, T = ${small.sizes[0].T}..${small.sizes.at(-1).T} | ≤ 2× | ${small.sizes.map((s) => `d=${s.d} T=${s.T}: ${s.ratio.toFixed(2)}×`).join(", ")} | ${worst.ratio <= 2 ? "met" : `**missed** (${worst.ratio.toFixed(2)}× at d=${worst.d} T=${worst.T})`} |`,
    );
    bmd += `| small calls, wall-clock µs per call (median of ${small.rounds} interleaved rounds of ~2 ms batches) | ${small.sizes.map((s) => `d=${s.d} T=${s.T}`).join(" | ")} |\n|---|${small.sizes.map(() => "---:").join("|")}|\n`;
    for (const name of Object.keys(small.sizes[0].us))
      bmd += `| ${name} | ${small.sizes.map((s) => num(s.us[name])).join(" | ")} |\n`;
    bmd += `| backward / attention (median of the rounds' ratios) | ${small.sizes.map((s) => `${s.ratio.toFixed(2)}×`).join(" | ")} |\n\n`;
  } else if (small?.error)
    targets.push(
      `| wasm backward / forward at T = 4..64 | ≤ 2× | not measured (${small.error}) | – |`,
    );
  if (targets.length)
    bmd += `| target (issue 21, backward) | needed | measured | |\n|---|---|---|---|\n${targets.join("\n")}\n\n`;
  const notes = [];
  if (torch) {
    notes.push(
      `PyTorch ${torch.torch.version} (Debian's python3-torch), ${torch.torch.threads} thread` +
        (torch.torch.sdpa
          ? "; paths: autograd of the plain formulation and `scaled_dot_product_attention`."
          : "; `torch.nn.functional.scaled_dot_product_attention` (the fused path) is not in this torch: only autograd of the plain formulation softmax(Q Kᵀ · scale + mask) V is measured."),
    );
    if (torch.paired)
      notes.push(
        "attnkit's speed-ups over PyTorch are paired: after each round of PyTorch, a run of attnkit's benchmark of the same shape on the same core, and the median over rounds of PyTorch's time over attnkit's (a shared host's speed drifts during a run by more than the engines differ). They need not equal the ratio of the two medians shown.",
      );
  }
  for (const s of wasmBwd?.skipped ?? [])
    if (!s.reason.startsWith("one call took"))
      notes.push(`${s.engine} at T=${s.T}${s.causal ? " causal" : ""}: ${s.reason}.`);
  const plainSlow = (wasmBwd?.skipped ?? []).filter(
    (s) => s.engine === "plain JS" && s.reason.startsWith("one call took"),
  );
  if (plainSlow.length)
    notes.push(
      `plain JS not run at ${plainSlow.map((s) => `T=${s.T}${s.causal ? " causal" : ""}`).join(", ")}: one call took over 3 s at a smaller T.`,
    );
  if (!layers.some((r) => r.engine === NATIVE_LAYER) && layers.length)
    notes.push(
      "attnkit's multi-head layer row is missing: MultiHeadAttentionBackward was not in this build.",
    );
  if (notes.length) bmd += `${notes.map((n) => `- ${n}`).join("\n")}\n`;
  if (bmd) {
    writeFileSync(
      new URL("results.md", dir),
      `${readFileSync(new URL("results.md", dir), "utf8")}\n## Backward\n\n${bmd}`,
    );
    publish(readmeUrl, "<!-- backward:start -->", "<!-- backward:end -->", bmd);
    console.log(bmd);
  }
}

// --- Training (issue 22): the model of docs/model.md trained to 90% held-out
// accuracy, from bench/results/train.json (bench/wasm/train.mjs: attnkit's npm
// package and the same model in tfjs-backend-wasm, one thread, the same batches)
// and train-native.json (attnkit_train_bench: one thread and every thread).
// Written into results.md (appended) and docs/benchmarks.md between the train
// markers.
{
  const load = (name) =>
    existsSync(new URL(name, dir)) ? JSON.parse(readFileSync(new URL(name, dir), "utf8")) : null;
  const node = load("train.json"),
    native = load("train-native.json");
  const num = (x) =>
    x == null ? "–" : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
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
  if (targets.length)
    tmd += `| target (issue 22, training) | needed | measured | |\n|---|---|---|---|\n${targets.join("\n")}\n\n`;
  if (node)
    tmd += `- tfjs-backend-wasm ${node.engines["tfjs-backend-wasm"]?.version}, Node ${node.engines.node}; attnkit's Highway target ${node.engines["attnkit (wasm SIMD128)"]?.target} in wasm${native ? `, natively ${native.target} (${native.maxThreads} threads)` : ""}.\n`;
  if (tmd) {
    writeFileSync(
      new URL("results.md", dir),
      `${readFileSync(new URL("results.md", dir), "utf8")}\n## Training\n\n${tmd}`,
    );
    publish(readmeUrl, "<!-- train:start -->", "<!-- train:end -->", tmd);
    console.log(tmd);
  }
}

// --- The language model (issue 32): nanoGPT's CPU shape on Moby-Dick, from
// bench/results/language-native.json (bench/language_torch.py: attnkit native
// and PyTorch, one thread, in turns) and language-wasm.json
// (bench/wasm/language.mjs: attnkit wasm and tfjs-backend-wasm in Node, in
// turns). Written to bench/results/language.md; its tokens/s row joins the
// README's table.
const languageRow = languageReport();
if (languageRow) readmeRows.push(languageRow);

// The README's performance table, with the host it ran on (a fit run only).
if (readmeRows.length) {
  const cpu = engineInfo.node?.cpu;
  const target = rows.find((r) => r.engine === NATIVE_IN_NODE && r.target);
  const host =
    `Measured on ${cpu ? `${cpu.model} (/proc/cpuinfo: ${cpu.simd.join(", ")})` : "an unknown CPU"}` +
    (target
      ? `, attnkit native on Highway target ${target.target} (${target.bits}-bit vectors)`
      : "") +
    ".";
  publish(
    readmeFileUrl,
    "<!-- perf:start -->",
    "<!-- perf:end -->",
    `${host}\n\n| shape | attnkit native | fastest native peer | attnkit wasm | fastest wasm peer |\n` +
      `|---|---:|---:|---:|---:|\n${readmeRows.join("\n")}\n`,
  );
}
console.log(
  fitness.fit
    ? "bench: a fit run: the README's table and docs/benchmarks.md were regenerated."
    : `bench: an UNFIT run, kept in ${dir.pathname} only (the README and docs/benchmarks.md are unchanged): ` +
        fitness.reasons.join("; "),
);
/** Writes bench/results/language.md; returns the README's row (tokens/s of the
 * first preset both platforms trained with their peers), or null. */
function languageReport() {
  const load = (name) =>
    existsSync(new URL(name, dir)) ? JSON.parse(readFileSync(new URL(name, dir), "utf8")) : null;
  const native = load("language-native.json"),
    node = load("language-wasm.json");
  if (!native && !node) return null;
  const num = (x) =>
    x == null ? "–" : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
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
    "`language-wasm.json` (`bench/wasm/language.mjs`); `npm run bench -- --language`" +
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
  if (targets.length)
    md += `| target (issue 32) | needed | measured | |\n|---|---|---|---|\n${targets.join("\n")}\n`;
  writeFileSync(new URL("language.md", dir), md);
  console.log(md);
  return readmeRow;
}
