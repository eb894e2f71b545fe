// The benchmarks' shared arithmetic: clocks, order statistics, seeded inputs
// and the largest difference between two results. One copy for every harness
// (bench/wasm, bench/ab, the report); pages (bench/wasm/async.mjs, tiles.mjs)
// are served this file and import it too.

/**
 * CPU time of this process in ms, every thread of it (onnxruntime-node runs its
 * calls on a thread of libuv's pool; all of them share the one core of a run).
 * Not the main thread's alone: Node has no precise per-thread CPU clock, and
 * /proc/thread-self/schedstat advances at scheduler ticks, too coarse for
 * batches of a few ms. Time on V8's and libuv's other threads is counted; a
 * round in which they ran shows as a low peak, which bench/fitness.mjs sees.
 */
export const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e3;
};

/** The median, as the upper middle element for an even count. */
export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The element at fraction f of the sorted values (0.25: the lower quartile). */
export const quartile = (xs, f) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(f * xs.length))];

/** Fills `array` with deterministic values in [lo, hi) (a linear congruential generator). */
export function fillRandom(array, seed, lo = -1, hi = 1) {
  let s = seed >>> 0;
  for (let i = 0; i < array.length; ++i) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    array[i] = lo + (hi - lo) * (s / 2 ** 32);
  }
  return array;
}

/** n deterministic values in [-scale, scale). */
export const random = (n, seed, scale = 1) => fillRandom(new Float32Array(n), seed, -scale, scale);

/** The largest |a[i] - b[i]|; Infinity when the lengths differ. */
export function maxDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; ++i) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
