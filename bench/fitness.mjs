// Whether a benchmark run is fit to publish (bench/report.mjs writes the README's
// and docs/benchmarks.md's tables only from a fit run), from bench/results/wasm.json
// (every engine and the platforms' peaks timed in the same interleaved rounds
// by bench/wasm/bench.mjs) and native.json (Google Benchmark).
//
// A run is unfit when
// - a peak varies across the run's rounds by more than PEAK_SPREAD_BOUND (max
//   over min, per peak: the FMA peak of each vector width, the SIMD128 peak).
//   The peak loops touch no memory and run the same instructions every time,
//   so on a core of its own they repeat within a few percent; more means that
//   the core was shared or its clock moved during the run, and then engines
//   timed in different rounds saw different machines. 10%: half the margin of
//   the smallest claim the report judges (1.2x, 80% of the peak), so that a
//   drift that large cannot make a claim by itself;
// - any engine's share of its platform's peak is 100% or more (a peak measured
//   low); causal shares count the work done (T (T + 1) / 2 pairs of T^2);
// - no peak was measured in the rounds (a run of an older harness).

export const PEAK_SPREAD_BOUND = 0.1;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// A result's peak series: natively the FMA peak of its vector width, in wasm
// the SIMD128 mul + add peak.
export const peakName = (r) =>
  r.platform === "native" ? `FMA peak, ${r.bits ?? "widest"}-bit vectors` : "SIMD128 mul+add peak";

// Share of the peak counting the work done: causal runs compute T (T + 1) / 2
// of the T^2 query-key pairs that their dense-equivalent GFLOP/s count.
export const usefulShare = (r) => (r.causal ? (r.peakShare * (r.T + 1)) / (2 * r.T) : r.peakShare);

// wasm: the parsed wasm.json (or null); gbShares: [{ what, share }] of the
// Google Benchmark tables (their peak measured once, apart from the kernels).
// Returns { fit, reasons: [string], peaks: [{ name, n, min, median, max, spread }],
// shares: [{ engine, T?, shape?, causal?, share }] }.
export function assessRun(wasm, gbShares = []) {
  const reasons = [];
  const results = wasm?.results ?? [];
  const series = new Map();
  for (const r of results) {
    if (!r.peakRounds?.length) continue;
    const name = peakName(r);
    // Engines of one shape that share one peak series (wasm) add the same
    // values again: max and min do not change.
    series.set(name, [...(series.get(name) ?? []), ...r.peakRounds]);
  }
  const peaks = [...series].map(([name, xs]) => {
    const min = Math.min(...xs),
      max = Math.max(...xs);
    return { name, n: xs.length, min, median: median(xs), max, spread: max / min - 1 };
  });
  if (!peaks.length) reasons.push("no peak was measured in the rounds of the run");
  for (const p of peaks) {
    if (!(p.spread <= PEAK_SPREAD_BOUND))
      reasons.push(
        `the ${p.name} varied by ${(100 * p.spread).toFixed(0)}% across the run's ${p.n} rounds ` +
          `(${p.min.toFixed(1)} to ${p.max.toFixed(1)} GFLOP/s; the bound is ${100 * PEAK_SPREAD_BOUND}%)`,
      );
  }
  const shares = results
    .filter((r) => r.peakShare !== undefined)
    .map((r) => ({
      engine: r.engine,
      ...(r.T ? { T: r.T, causal: r.causal } : { shape: r.shape }),
      share: r.T ? usefulShare(r) : r.peakShare,
    }))
    .concat(gbShares.map((g) => ({ engine: g.what, share: g.share })));
  const over = shares.filter((s) => !(s.share < 1));
  if (over.length)
    reasons.push(
      `${over.length} share${over.length > 1 ? "s" : ""} of the peak at or above 100%: ` +
        over
          .slice(0, 4)
          .map(
            (s) =>
              `${s.engine}${s.T ? ` at T=${s.T}${s.causal ? " causal" : ""}` : s.shape ? `, ${s.shape}` : ""} ${(100 * s.share).toFixed(0)}%`,
          )
          .join(", ") +
        (over.length > 4 ? ", ..." : ""),
    );
  return { fit: reasons.length === 0, reasons, peaks, shares };
}

// attnkit's speed-up over a peer from the same rounds: the median over rounds of
// (peer's CPU time / attnkit's), with the lowest and highest; `peers` may hold
// several formulations of one engine (the fastest of them in each round).
// Null when the rounds do not line up.
export function roundRatio(ours, peers) {
  const list = [peers].flat().filter(Boolean);
  const n = ours?.cpuMsRounds?.length;
  if (!n || !list.length || list.some((p) => p.cpuMsRounds?.length !== n)) return null;
  const ratios = ours.cpuMsRounds.map((t, i) => Math.min(...list.map((p) => p.cpuMsRounds[i])) / t);
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios), n };
}

// "1.23× [1.10–1.31]": a round ratio with its spread.
export const ratioText = (x) => `${x.median.toFixed(2)}× [${x.min.toFixed(2)}–${x.max.toFixed(2)}]`;
