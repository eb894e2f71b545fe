// The forward's report (bench/report.mjs): one head against its peers, natively
// and in wasm, from bench/results/native.json (Google Benchmark) and wasm.json
// (every engine timed in Node: attnkit wasm, plain JS and the peers), and the
// other shapes, peak memory, the Highway targets and the issue's targets. A run
// `f` (forwardRun) carries the rows and what every section reads of them.
import { median } from "../stats.mjs";
import { assessRun, ratioText, roundRatio, usefulShare } from "../../fitness.mjs";
import { mb, peakShare, readJson, shareText, tableHead, targetTable, unfit } from "./format.mjs";

export const ATTNKIT_NATIVE = "attnkit (native)",
  ATTNKIT_WASM = "attnkit (wasm SIMD128)";
// attnkit native again, timed by bench/wasm/bench.mjs in the same rounds as
// onnxruntime-node: the native tables' onnxruntime ratios are against it.
export const NATIVE_IN_NODE = "attnkit (native, in Node's rounds)";
export const OPENBLAS_IN_NODE = "OpenBLAS sgemm (in Node's rounds)";

// The forward's results of the folder `dir`.
function readForward(dir) {
  const rows = []; // { platform: native | wasm | js, engine, T, causal, gflops, ms, rssBytes?, wasmBytes?, variant? }
  const extra = []; // other native shapes
  let fmaPeak = null,
    wasmPeak = null,
    skipped = [],
    memoryOnly = [];
  let nativeContext = {},
    engineInfo = {},
    envUnset = null,
    small = null;
  const nativeQueries = []; // { T_q, keys, us }: attnkit_bench --queries
  envUnset = readJson(dir, "env.json")?.unset ?? null;
  small = readJson(dir, "small.json");
  nativeQueries.push(...(readJson(dir, "queries.json")?.sweep ?? []));
  const native = readJson(dir, "native.json");
  if (native) {
    nativeContext = native.context ?? {};
    const names = {
      BM_Attnkit: ATTNKIT_NATIVE,
      BM_OpenBlas: "OpenBLAS sgemm",
      BM_Loop: "C++ loop",
    };
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
  const wasm = readJson(dir, "wasm.json");
  if (wasm) {
    for (const r of wasm.results) rows.push({ platform: r.platform ?? "wasm", ...r });
    wasmPeak = wasm.wasmPeak?.gflops ?? null;
    engineInfo = wasm.engines ?? {};
    skipped = wasm.skipped ?? [];
    memoryOnly = wasm.memoryOnly ?? [];
  }
  return {
    rows,
    extra,
    fmaPeak,
    wasmPeak,
    skipped,
    memoryOnly,
    nativeContext,
    engineInfo,
    envUnset,
    small,
    nativeQueries,
    wasm,
  };
}

/**
 * The forward's run of the results folder `dir`: what readForward read, its
 * fitness (bench/fitness.mjs: the Google Benchmark table's share counts too,
 * attnkit's GFLOP/s over the FMA peak measured once in that run) and the
 * engines and shapes every section lists.
 */
export function forwardRun(dir) {
  const data = readForward(dir);
  const { rows, fmaPeak } = data;
  const gbShares = fmaPeak
    ? rows
        .filter((r) => r.engine === ATTNKIT_NATIVE && !r.causal)
        .map((r) => ({
          what: `${ATTNKIT_NATIVE} (Google Benchmark) at T=${r.T}`,
          share: r.gflops / fmaPeak,
        }))
    : [];
  const fitness = assessRun(data.wasm, gbShares);
  // The SIMD128 peak: the median of the run's rounds (over CPU time), where measured.
  const wasmPeak =
    fitness.peaks.find((p) => p.name === "SIMD128 mul+add peak")?.median ?? data.wasmPeak;
  const find = (engine, T, causal) =>
    rows.find((r) => r.engine === engine && r.T === T && r.causal === causal);
  const Ts = [...new Set(rows.filter((r) => r.T).map((r) => r.T))].sort((a, b) => a - b);
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
  const nativeEngines = [
    ATTNKIT_NATIVE,
    "OpenBLAS sgemm",
    "C++ loop",
    NATIVE_IN_NODE,
    ...nodeNative,
  ];
  const wasmEngines = [
    ATTNKIT_WASM,
    "attnkit (wasm scalar)",
    "plain JS",
    ...wasmPeers,
    ...nodeNative,
  ];
  return {
    ...data,
    wasmPeak,
    fitness,
    find,
    Ts,
    nodeNative,
    wasmPeers,
    nativeEngines,
    wasmEngines,
  };
}

// One table: the reference engine first (with % of its platform's peak), then the
// others with "attnkit N×" = reference GFLOP/s / that engine's GFLOP/s.
function oneHeadTable(f, title, ours, peak, engines, causal) {
  const { rows, fitness, Ts, find } = f;
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

// Whether the run is fit, its peaks across the rounds, and how to read the tables.
function fitnessHeader(f) {
  const { fmaPeak, wasmPeak, fitness } = f;
  let md = "";
  md =
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
  return md;
}

// How every engine ran: what the run removed from the environment, and the
// kernel or ISA each library picked (as far as it says).
function engineLines(f) {
  const { nativeContext, engineInfo, envUnset } = f;
  let md = "";
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
  return md;
}

// Plausibility: every engine's share of the peak measured on its own platform
// (native: the FMA peak, wasm: the SIMD128 mul+add peak), non-causal. Below
// 30% or above 100% is flagged: a library running a lesser kernel than the
// machine has (or forced to), or a measurement that cannot be right.
function plausibility(f) {
  const { rows, fmaPeak, wasmPeak, Ts, find } = f;
  let md = "";
  const plausible = [];
  // The scalar baselines (the C++ loop, attnkit's scalar wasm build) are
  // meant to sit far below the peak: not in this table.
  const engines = [
    ...new Set(rows.filter((r) => r.T && !r.causal && r.platform !== "js").map((r) => r.engine)),
  ].filter((e) => e !== "C++ loop" && e !== "attnkit (wasm scalar)");
  let t = tableHead(
    `share of the same-platform peak, non-causal`,
    Ts.map((x) => `T=${x}`),
  );
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
  return md;
}

// How the peers ran, and the formulation each kept per shape.
function peerNotes(f) {
  const { rows, nodeNative } = f;
  let md = "";
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
  return md;
}

// How much of its core attnkit native's child had while timed (its CPU time over
// wall time, median per shape): below 1, something else ran on that core.
function childShare(f) {
  const { rows } = f;
  let md = "";
  const shares = rows.filter((r) => r.cpuShare !== undefined).map((r) => r.cpuShare);
  if (shares.length) {
    md +=
      `attnkit native's child process had ${(100 * Math.min(...shares)).toFixed(0)}-` +
      `${(100 * Math.max(...shares)).toFixed(0)}% of its core while timed (its CPU time over the wall-clock ` +
      "time, median over each shape's rounds; Node collects its garbage on its main thread before each timed call).\n\n";
  }
  return md;
}

// Shapes a peer could not run (–): grouped by engine and reason.
function skippedNotes(f) {
  const { skipped } = f;
  let md = "";
  const groups = new Map();
  for (const s of skipped) {
    const key = `${s.engine}\u0000${s.reason.replace(/one call took [\d.]+ s/, "one call took over a minute / rounds")}`;
    if (!groups.has(key)) groups.set(key, { engine: s.engine, reason: s.reason, shapes: [] });
    groups.get(key).shapes.push(s.shape ?? `T=${s.T}${s.causal ? " causal" : ""}`);
  }
  for (const g of groups.values())
    md += `Not timed (–): ${g.engine} at ${g.shapes.join(", ")}: ${g.reason}.\n\n`;
  return md;
}

// The other shapes, timed in Node like the one-head tables: one column per shape.
function otherShapes(f) {
  const { rows } = f;
  let md = "";
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
              r.gflops.toFixed(1) +
              (base ? ` (attnkit ${(base.gflops / r.gflops).toFixed(2)}×)` : "")
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
  return md;
}

// Peak memory, measured in a fresh Node process per engine and shape.
function memoryTable(f) {
  const { rows, memoryOnly } = f;
  let md = "";
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
  return md;
}

// Every Highway target the dispatch can pick (attnkit_bench --serve as
// dispatched and --target NAME), each against the FMA peak of its own vector
// width measured right after it in each round, onnxruntime-node and OpenBLAS in
// the same rounds. Shares and ratios: the median over rounds [lowest–highest].
function highwayTargets(f) {
  const { rows, fitness, find } = f;
  let md = "";
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
    md +=
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
      md +=
        `| ${r.target} (${r.bits}-bit)${r.engine === NATIVE_IN_NODE ? ", dispatched" : ", forced"} | T=${r.T}${r.causal ? " causal" : ""} | ` +
        `${r.ms.toPrecision(3)} | ${r.gflops.toFixed(1)} | ` +
        `${share ? `${pct(share.median)} [${pct(share.min)}–${pct(share.max)}]` : "–"} | ` +
        `${vsOrt ? ratioText(vsOrt) : "–"} | ${vsBlas ? ratioText(vsBlas) : "–"} |\n`;
    }
    md +=
      "\nEvery target the dispatch can pick on this CPU, timed in the same interleaved rounds in Node " +
      "(`attnkit_bench --serve --target NAME`: attnkit::targets::ForceForTest), each over the CPU time of " +
      "its timed thread; after each timing the same child measures the FMA peak of its own vector width " +
      "(512, 256 or 128 bits, with the best target's FMA instructions: a 128-bit target without FMA is " +
      "judged against what the core does at that width). Share: the median over rounds of the round's " +
      "GFLOP/s over the round's peak, lowest–highest in brackets; causal shares count the T(T+1)/2 " +
      "query-key pairs computed. vs onnxruntime-node: the median over rounds of onnxruntime-node's " +
      "time (its faster formulation in that round) over attnkit's; vs OpenBLAS: the same for " +
      "OpenBLAS's sgemm attention (`attnkit_bench --serve --openblas`).\n\n";
  }
  return md;
}

// The issue's targets, each with the figure it was judged on.
function issueTargets(f) {
  const { rows, fmaPeak, memoryOnly, Ts, find, nodeNative, wasmPeers } = f;
  let md = "";
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
      targets.push(
        `| ${label} | ≥ ${need}× | ${cells.join("; ")} | ${ok ? "met" : "**missed**"} |`,
      );
  }
  ratioRow("wasm vs best wasm peer, non-causal, T ≥ 512", ATTNKIT_WASM, wasmPeers, false, 1.3, 512);
  ratioRow("wasm vs best wasm peer, causal, T ≥ 512", ATTNKIT_WASM, wasmPeers, true, 2, 512);
  ratioRow("wasm vs plain JS, non-causal", ATTNKIT_WASM, ["plain JS"], false, 6, 0);
  ratioRow("wasm vs plain JS, causal", ATTNKIT_WASM, ["plain JS"], true, 6, 0);
  const nativeVsOrt = rows.some((r) => r.engine === NATIVE_IN_NODE)
    ? NATIVE_IN_NODE
    : ATTNKIT_NATIVE;
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
  if (targets.length) md += `${targetTable("target (issue #5)", targets)}\n`;
  return md;
}

// The other native shapes (Google Benchmark): threads against one thread,
// OpenBLAS against attnkit's one thread.
function nativeShapes(f) {
  const { rows, extra, find } = f;
  let md = "";
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
    return extra.find((o) => o.engine === r.engine && o.shape === r.shape && o.threads === 1)
      ?.value; // same unit: same benchmark
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
  return md;
}

/** The forward's markdown (bench/results/results.md before the small calls). */
export function forwardMarkdown(f) {
  const { fmaPeak, wasmPeak, nativeEngines, wasmEngines } = f;
  let md = fitnessHeader(f) + engineLines(f);
  for (const causal of [false, true])
    md += oneHeadTable(f, "native", ATTNKIT_NATIVE, fmaPeak, nativeEngines, causal) + "\n";
  for (const causal of [false, true])
    md += oneHeadTable(f, "wasm (Node)", ATTNKIT_WASM, wasmPeak, wasmEngines, causal) + "\n";
  md += plausibility(f) + peerNotes(f) + childShare(f) + skippedNotes(f);
  md += otherShapes(f) + memoryTable(f) + highwayTargets(f) + issueTargets(f) + nativeShapes(f);
  return md;
}
