// The benchmark's gate (bench/fitness.mjs, bench/report.mjs): a run whose peaks
// moved across its rounds, or whose shares of a peak reach 100%, is unfit and
// must not reach the README or docs/benchmarks.md; a fit run regenerates both.
// Small synthetic result files stand in for `npm run bench`'s.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  MAX_DISTURBED_SHARE,
  PEAK_SPREAD_BOUND,
  assessRun,
  roundRatio,
} from "../../bench/fitness.mjs";

const report = fileURLToPath(new URL("../../bench/report.mjs", import.meta.url));
const NATIVE = "attnkit (native, in Node's rounds)";

// One result of bench/wasm/bench.mjs: one head, d = 64, CPU ms per round, the
// peak measured in each round.
function result(engine, platform, T, causal, cpuMsRounds, peakRounds, extra = {}) {
  const flops = 4 * T * T * 64;
  const ms = [...cpuMsRounds].sort((a, b) => a - b)[Math.floor(cpuMsRounds.length / 2)];
  const r = { engine, platform, T, causal, ms, gflops: flops / (ms * 1e6), cpuMsRounds, ...extra };
  if (peakRounds) {
    const shares = cpuMsRounds.map((t, i) => flops / (t * 1e6) / peakRounds[i]);
    r.peakRounds = peakRounds;
    r.peakShare = [...shares].sort((a, b) => a - b)[Math.floor(shares.length / 2)];
  }
  return r;
}

// A run at T = 512 and 2048 on an AVX-512 host: attnkit as dispatched (AVX3) and
// with AVX2 forced, OpenBLAS and onnxruntime-node in the same rounds, attnkit
// wasm against onnxruntime-web. `peak(i)` gives round i's FMA peak (GFLOP/s).
function run({ peak = () => 100, nativeMs = 1 } = {}) {
  const results = [];
  for (const causal of [false, true]) {
    for (const T of [512, 2048]) {
      const scale = (T / 512) ** 2 * (causal ? 0.5 : 1);
      const rounds = (ms) => [0, 1, 2, 3, 4].map((i) => +(ms * scale * (1 + 0.01 * i)).toFixed(4));
      const peaks = (factor) => [0, 1, 2, 3, 4].map((i) => peak(i) * factor);
      const native = { platform: "native" };
      results.push(
        result(NATIVE, "native", T, causal, rounds(nativeMs), peaks(1), {
          target: "AVX3",
          bits: 512,
        }),
        result("attnkit (native, AVX2 forced)", "native", T, causal, rounds(1.2), peaks(1), {
          target: "AVX2",
          bits: 256,
        }),
        result("OpenBLAS sgemm (in Node's rounds)", "native", T, causal, rounds(2), peaks(1), {
          target: "OpenBLAS Cooperlake",
          bits: 512,
        }),
        result("onnxruntime-node MultiHeadAttention", native.platform, T, causal, rounds(1.5)),
        result("attnkit (wasm SIMD128)", "wasm", T, causal, rounds(5), peaks(0.4)),
        result("onnxruntime-web MultiHeadAttention", "wasm", T, causal, rounds(8)),
      );
    }
  }
  return {
    d: 64,
    wasmPeak: { gflops: 40, accumulators: 12 },
    engines: {
      node: {
        version: "v20.0.0",
        v8: "11",
        execArgv: [],
        NODE_OPTIONS: null,
        cpu: { model: "Test CPU 9000", family: 25, modelNumber: 17, simd: ["avx2", "avx512f"] },
      },
    },
    skipped: [],
    memoryOnly: [],
    results,
  };
}

test("a run with steady peaks and shares below 100% is fit", () => {
  const verdict = assessRun(run());
  assert.equal(verdict.fit, true, verdict.reasons.join("; "));
  assert.deepEqual(verdict.reasons, []);
  assert.ok(verdict.peaks.some((p) => p.name === "FMA peak, 512-bit vectors"));
});

test("a peak disturbed in more than 1 round in 10 makes the run unfit", () => {
  // Round 3 of every shape (1 in 5) saw a peak 20% low.
  const verdict = assessRun(
    run({ peak: (i) => (i === 3 ? 100 * (1 - 2 * PEAK_SPREAD_BOUND) : 100) }),
  );
  assert.equal(verdict.fit, false);
  assert.match(
    verdict.reasons.join(),
    /FMA peak, 512-bit vectors was disturbed in 8 of the run's 40/,
  );
  // Within the bound: fit, and no round is disturbed.
  const within = assessRun(run({ peak: (i) => (i === 3 ? 96 : 100) }));
  assert.equal(within.fit, true);
  assert.ok(within.peaks.every((p) => p.disturbed === 0));
});

test("a disturbed round is left out of the ratios; a few of them keep the run fit", () => {
  // 20 rounds; in round 7 the peak halved and attnkit ran 3x slower (a
  // neighbour on the core): that round's ratio would be 0.5, the others' 2.
  const n = 20;
  const peakRounds = Array.from({ length: n }, (_, i) => (i === 7 ? 50 : 100));
  const ours = result(
    "attnkit (wasm SIMD128)",
    "wasm",
    512,
    false,
    peakRounds.map((_, i) => (i === 7 ? 15 : 5)),
    peakRounds.map((x) => x * 0.4),
  );
  const peer = result(
    "onnxruntime-web MultiHeadAttention",
    "wasm",
    512,
    false,
    peakRounds.map((_, i) => (i === 7 ? 7.5 : 10)),
  );
  const verdict = assessRun({ results: [ours, peer] });
  assert.ok(1 / n <= MAX_DISTURBED_SHARE);
  assert.equal(verdict.fit, true, verdict.reasons.join("; "));
  assert.equal(verdict.peaks[0].disturbed, 1);
  const kept = verdict.kept(ours);
  assert.equal(kept.filter((k) => !k).length, 1);
  assert.equal(kept[7], false);
  assert.deepEqual(roundRatio(ours, peer, kept), { median: 2, min: 2, max: 2, n: n - 1 });
  assert.equal(roundRatio(ours, peer).min, 0.5);
  // A result without peaks in its rounds: every round counts.
  assert.equal(verdict.kept(peer), null);
});

test("a share of the peak at or above 100% makes the run unfit", () => {
  // attnkit at 0.25 ms per call of T = 512: 268 GFLOP/s against a peak of 100.
  const verdict = assessRun(run({ nativeMs: 0.25 }));
  assert.equal(verdict.fit, false);
  assert.match(verdict.reasons.join(), /at or above 100%: attnkit \(native, in Node's rounds\)/);
});

test("causal shares count the work done, not the dense-equivalent flops", () => {
  // Dense-equivalent 150% of the peak, causal: 75% of the pairs' work.
  const r = result("attnkit (native, in Node's rounds)", "native", 512, true, [1, 1, 1], null, {
    bits: 512,
  });
  r.peakRounds = [100, 100, 100];
  r.peakShare = 1.5;
  assert.equal(assessRun({ results: [r] }).fit, true);
});

test("a run without peaks in its rounds is unfit", () => {
  const verdict = assessRun({ results: [] });
  assert.equal(verdict.fit, false);
  assert.match(verdict.reasons[0], /no peak was measured/);
});

test("ratios are the median of per-round ratios, with their spread", () => {
  const ours = { cpuMsRounds: [1, 1, 1, 2] },
    peer = { cpuMsRounds: [2, 1.5, 3, 2] },
    other = { cpuMsRounds: [1.5, 9, 9, 9] };
  assert.deepEqual(roundRatio(ours, peer), { median: 2, min: 1, max: 3, n: 4 });
  // Several formulations: the fastest of them in each round.
  assert.deepEqual(roundRatio(ours, [peer, other]), { median: 1.5, min: 1, max: 3, n: 4 });
  // Rounds that do not line up: no ratio.
  assert.equal(roundRatio(ours, { cpuMsRounds: [1, 2] }), null);
});

// bench/report.mjs on a results folder, with a README and docs file of its own.
function runReport(wasm, extraResults = {}) {
  const root = mkdtempSync(join(tmpdir(), "attnkit-report-"));
  const results = join(root, "results");
  mkdirSync(results);
  writeFileSync(join(results, "wasm.json"), JSON.stringify(wasm));
  for (const [name, json] of Object.entries(extraResults))
    writeFileSync(join(results, name), JSON.stringify(json));
  const docs = "# benchmarks\n\n<!-- bench:start -->\nold tables\n<!-- bench:end -->\n";
  const readme = "# attnkit\n\n<!-- perf:start -->\nold table\n<!-- perf:end -->\n";
  writeFileSync(join(root, "benchmarks.md"), docs);
  writeFileSync(join(root, "README.md"), readme);
  const stdout = execFileSync(
    process.execPath,
    [
      report,
      "--results",
      results,
      "--docs",
      join(root, "benchmarks.md"),
      "--readme",
      join(root, "README.md"),
    ],
    { encoding: "utf8" },
  );
  const read = (name) => readFileSync(join(root, name), "utf8");
  const out = {
    stdout,
    docsChanged: read("benchmarks.md") !== docs,
    readmeChanged: read("README.md") !== readme,
    docs: read("benchmarks.md"),
    readme: read("README.md"),
    record: read("results/results.md"),
    fitness: JSON.parse(read("results/fitness.json")),
  };
  rmSync(root, { recursive: true, force: true });
  return out;
}

test("report: a fit run regenerates the README's table and the docs, with the host", () => {
  const out = runReport(run());
  assert.equal(out.fitness.fit, true);
  assert.ok(out.docsChanged && out.readmeChanged);
  assert.match(out.stdout, /a fit run/);
  assert.match(out.readme, /Test CPU 9000/);
  assert.match(out.readme, /Highway target AVX3 \(512-bit vectors\)/);
  // attnkit native against the fastest native peer of the same rounds (onnxruntime-node, 1.5x).
  assert.match(
    out.readme,
    /\| T = 2048 \| \*\*[\d.]+\*\* \(1\.50× \[1\.50–1\.50\]\) \| [\d.]+ onnxruntime-node/,
  );
  // The per-target table: AVX2 forced, against its own 256-bit peak.
  assert.match(out.docs, /\| AVX2 \(256-bit\), forced \| T=2048 \|/);
  assert.doesNotMatch(out.docs, /old tables/);
});

test("report: an unfit run writes only its record and says why", () => {
  const out = runReport(run({ peak: (i) => (i === 2 ? 60 : 100) }));
  assert.equal(out.fitness.fit, false);
  assert.equal(out.docsChanged, false);
  assert.equal(out.readmeChanged, false);
  assert.match(out.stdout, /UNFIT run/);
  assert.match(out.stdout, /FMA peak, 512-bit vectors was disturbed in \d+ of the run's/);
  assert.match(out.record, /\*\*Unfit run\*\*/);
});

test("report: the language model's tokens/s join the README's table of a fit run", () => {
  // The language benchmark's last record (bench/results), as npm run bench leaves it.
  const load = (name) =>
    JSON.parse(readFileSync(new URL(`../../bench/results/${name}`, import.meta.url), "utf8"));
  const native = load("language-native.json"),
    node = load("language-wasm.json");
  const out = runReport(run(), {
    "language-native.json": native,
    "language-wasm.json": node,
  });
  const [n, torch] = native.runs[0].engines,
    [w, tfjs] = node.presets[0].engines;
  const row = out.readme.split("\n").find((l) => l.includes("GPT training on Moby-Dick"));
  assert.ok(row, out.readme);
  const cells = row.split("|").map((c) => c.trim());
  // attnkit's tokens/s and its ratio to the peer of the same platform, then the peer's.
  const ratio = (a, b) => (a.tokensPerSecond / b.tokensPerSecond).toFixed(2);
  assert.match(cells[2], new RegExp(`\\(${ratio(n, torch)}×\\)$`));
  assert.match(cells[3], /PyTorch/);
  assert.match(cells[4], new RegExp(`\\(${ratio(w, tfjs)}×\\)$`));
  assert.match(cells[5], /tfjs-backend-wasm/);
  // An unfit run leaves the README alone, language row included.
  const unfit = runReport(run({ peak: (i) => (i === 2 ? 60 : 100) }), {
    "language-native.json": native,
    "language-wasm.json": node,
  });
  assert.equal(unfit.readmeChanged, false);
});

test("report: the page's control changes make a section of the record, over-budget times bold", () => {
  const change = (render, renderMax, firstRender, frame) => ({
    render,
    renderMax,
    frame,
    attnkit: 2.5,
    firstRender,
  });
  const page = {
    config: "T=64, d_model=128, d_k=d_v=16, 8 heads",
    chromium: "156.0.0.0",
    budgetMs: 16,
    firstRenderMs: 812.4,
    worstRenderMs: 21.5,
    overBudget: ["step6/head"],
    loadAverage: [1.25, 1.5],
    commit: "abc1234",
    quick: false,
    results: {
      "step6/temperature": change(9.1, 12.4, 30.2, 17.1),
      "step6/head": change(21.5, 25, 14, 29.5),
    },
  };
  const out = runReport(run(), { "page.json": page });
  assert.match(out.record, /\n## The page\n/);
  assert.match(
    out.record,
    /\| step6\/temperature \| 9\.1 \| 12\.4 \| \*\*30\.2\*\* \| 2\.5 \| 17\.1 \|/,
  );
  assert.match(
    out.record,
    /\| step6\/head \| \*\*21\.5\*\* \| \*\*25\*\* \| 14 \| 2\.5 \| 29\.5 \|/,
  );
  assert.match(out.record, /worst median 21\.5 ms \(over the budget: step6\/head\); load average/);
});
