// The backward's report (issue 21): forward + backward of one head and of the
// multi-head layer, from bench/results/native-backward.json (Google Benchmark:
// BM_AttnkitFwdBwd, BM_AttnkitBwd, BM_AttnkitMultiHeadTrain, BM_FmaPeak),
// torch.json (bench/torch_bench.py) and backward.json (bench/wasm/backward.mjs).
// A run `b` (backwardRun) carries the rows and what every section reads.
import { num, readJson, targetTable } from "./format.mjs";

const NATIVE_FB = "attnkit native (fwd + bwd)",
  NATIVE_B = "attnkit native (backward alone)",
  NATIVE_LAYER = "attnkit native MultiHeadAttention + Backward";
const ATTNKIT_W = "attnkit (wasm SIMD128)";

/** The backward's results of the folder `dir`, and the rows' lookups. */
function backwardRun(dir) {
  const nativeBwd = readJson(dir, "native-backward.json"),
    torch = readJson(dir, "torch.json"),
    wasmBwd = readJson(dir, "backward.json");
  const back = []; // { engine, platform, T?, causal?, shape?, ms, gflops }
  let bwdPeak = null;
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
  const torchPaths = [
    ...new Set(heads.filter((r) => r.engine.startsWith("PyTorch")).map((r) => r.engine)),
  ];
  // attnkit's speed-up over a peer's result r: paired rounds where the peer's
  // benchmark ran attnkit's between its own (torch_bench.py --attnkit), else
  // the ratio of the two medians (base: attnkit's result).
  const speedup = (r, base) => r.pairedRatio ?? (base ? r.ms / base.ms : null);
  const layers = back.filter((r) => r.shape);
  return { back, bwdPeak, torch, wasmBwd, heads, Tb, get, torchPaths, speedup, layers };
}

// The README's rows: forward + backward at T = 2048 against the fastest peer.
function backwardReadmeRows(b) {
  const { get, torchPaths, speedup } = b;
  const readmeRows = [];
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
  return readmeRows;
}

// One table per platform: ms per call (GFLOP/s), each peer with attnkit's
// speed-up over it; then the multi-head layer's.
function backwardTables(b) {
  const { heads, Tb, get, torchPaths, speedup, layers } = b;
  let bmd = "";
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
  return bmd;
}

// The targets of issue 21 (and the small calls' table, which they judge).
function backwardTargets(b) {
  const { bwdPeak, wasmBwd, Tb, get, torchPaths, speedup } = b;
  let bmd = "";
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
  if (targets.length) bmd += `${targetTable("target (issue 21, backward)", targets)}\n`;
  return bmd;
}

// How the peers ran, and what was not run.
function backwardNotes(b) {
  const { torch, wasmBwd, layers } = b;
  let bmd = "";
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
  return bmd;
}

/** The backward section's markdown ("" without results) and its README rows. */
export function backwardMarkdown(dir) {
  const b = backwardRun(dir);
  return {
    md: backwardTables(b) + backwardTargets(b) + backwardNotes(b),
    readmeRows: backwardReadmeRows(b),
  };
}
