// Whether a benchmark run is fit to publish (bench/report.mjs writes the README's
// and docs/benchmarks.md's tables only from a fit run), from bench/results/wasm.json
// (every engine and the platforms' peaks timed in the same interleaved rounds
// by bench/wasm/bench.mjs) and native.json (Google Benchmark).
//
// A run is unfit when
// - a peak was disturbed in more than MAX_DISTURBED_SHARE of the run's rounds:
//   a round is disturbed when its peak lies more than half of
//   PEAK_SPREAD_BOUND from the median of that peak over the run (per peak: the
//   FMA peak of each vector width, the SIMD128 peak), so that the steady rounds
//   stay within about PEAK_SPREAD_BOUND of one another. The peak loops touch no
//   memory and run the same instructions every time, so on a core of its own
//   they repeat within a few percent; more means that the core was shared or
//   its clock moved in that round, and the engines timed in it saw a different
//   machine. 10%: half the margin of the smallest claim the report judges
//   (1.2x, 80% of the peak), so that a drift that large cannot make a claim by
//   itself. A disturbed round is left out of every ratio and per-round share
//   (roundRatio with `kept`); if more than one round in ten was, the run as a
//   whole is not trusted;
// - any engine's share of its platform's peak is 100% or more (a peak measured
//   low); causal shares count the work done (T (T + 1) / 2 pairs of T^2);
// - no peak was measured in the rounds (a run of an older harness).

export const PEAK_SPREAD_BOUND = 0.1;
export const MAX_DISTURBED_SHARE = 0.1;

import { median } from "./lib/stats.mjs";

// A result's peak series: natively the FMA peak of its vector width, in wasm
// the SIMD128 mul + add peak.
export const peakName = (r) =>
  r.platform === "native" ? `FMA peak, ${r.bits ?? "widest"}-bit vectors` : "SIMD128 mul+add peak";

// Share of the peak counting the work done: causal runs compute T (T + 1) / 2
// of the T^2 query-key pairs that their dense-equivalent GFLOP/s count.
export const usefulShare = (r) => (r.causal ? (r.peakShare * (r.T + 1)) / (2 * r.T) : r.peakShare);

// wasm: the parsed wasm.json (or null); gbShares: [{ what, share }] of the
// Google Benchmark tables (their peak measured once, apart from the kernels).
// Returns { fit, reasons: [string], peaks: [{ name, n, disturbed, min, median, max,
// spread }] (min, max and spread over the steady rounds), shares: [{ engine, T?,
// shape?, causal?, share }], kept: (result) => [boolean per round] or null }.
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
  const medians = new Map([...series].map(([name, xs]) => [name, median(xs)]));
  const steady = (name, x) => Math.abs(x / medians.get(name) - 1) <= PEAK_SPREAD_BOUND / 2;
  const peaks = [...series].map(([name, xs]) => {
    const kept = xs.filter((x) => steady(name, x));
    const min = Math.min(...kept),
      max = Math.max(...kept);
    return {
      name,
      n: xs.length,
      disturbed: xs.length - kept.length,
      min,
      median: medians.get(name),
      max,
      spread: max / min - 1,
    };
  });
  if (!peaks.length) reasons.push("no peak was measured in the rounds of the run");
  for (const p of peaks) {
    if (!(p.disturbed <= MAX_DISTURBED_SHARE * p.n))
      reasons.push(
        `the ${p.name} was disturbed in ${p.disturbed} of the run's ${p.n} rounds ` +
          `(more than ${(100 * PEAK_SPREAD_BOUND) / 2}% from its median ${p.median.toFixed(1)} GFLOP/s; ` +
          `the bound is ${100 * MAX_DISTURBED_SHARE}% of the rounds)`,
      );
  }
  // Which rounds of result r to count: those whose peak was steady.
  const kept = (r) =>
    r?.peakRounds?.length ? r.peakRounds.map((x) => steady(peakName(r), x)) : null;
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
  return { fit: reasons.length === 0, reasons, peaks, shares, kept };
}

// attnkit's speed-up over a peer from the same rounds: the median over rounds of
// (peer's CPU time / attnkit's), with the lowest and highest; `peers` may hold
// several formulations of one engine (the fastest of them in each round).
// `kept` (assessRun's kept(ours)) leaves out the rounds whose peak was
// disturbed. Null when the rounds do not line up.
export function roundRatio(ours, peers, kept = null) {
  const list = [peers].flat().filter(Boolean);
  const n = ours?.cpuMsRounds?.length;
  if (!n || !list.length || list.some((p) => p.cpuMsRounds?.length !== n)) return null;
  const rounds = ours.cpuMsRounds
    .map((t, i) => Math.min(...list.map((p) => p.cpuMsRounds[i])) / t)
    .filter((_, i) => !kept || kept.length !== n || kept[i]);
  if (!rounds.length) return null;
  return {
    median: median(rounds),
    min: Math.min(...rounds),
    max: Math.max(...rounds),
    n: rounds.length,
  };
}

// "1.23× [1.10–1.31]": a round ratio with its spread.
export const ratioText = (x) => `${x.median.toFixed(2)}× [${x.min.toFixed(2)}–${x.max.toFixed(2)}]`;
