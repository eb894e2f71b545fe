// The benchmarks' shared arithmetic: clocks, order statistics, seeded inputs
// and the largest difference between two results. One copy for every harness
// (bench/wasm, bench/ab, the report); bench/wasm/async.mjs keeps its own
// seeded inputs because its measuring function also runs in a page, as source.

/** CPU time of this process in ms (every thread of it). */
export const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e3;
};

/** The median, as the upper middle element for an even count. */
export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The element at fraction f of the sorted values (0.25: the lower quartile). */
export const quartile = (xs, f) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(f * xs.length))];

/** Deterministic values in [-scale, scale) (a linear congruential generator). */
export function random(n, seed, scale = 1) {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; ++i) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 2 ** 31 - 1) * scale;
  }
  return out;
}

/** The largest |a[i] - b[i]|; Infinity when the lengths differ. */
export function maxDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; ++i) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
