// Paired A/B rounds in one Node process, shared by the wasm A/B questions
// (bench/wasm/{backward,heads,layer,small}_ab.mjs): two builds of the package,
// each its bundled JS layer attnkit.node.cjs beside its SIMD128 module
// (bench/ab/ab.sh makes the folders), timed on the same
// entries in rounds whose order turns every round, so that both builds meet
// the same machine. Times are process CPU time (Node runs with
// --single-threaded-gc, so no GC thread adds to it) in batches of at least
// BATCH_MS, per call in microseconds. The module loaded second runs a few
// percent slower on some entries whatever its code (the same pair in both
// orders shows it), so bench/ab/ab.sh runs each question in both load orders
// (ATTNKIT_AB_LOAD_ORDER=BA loads B first); a build's speed is the geometric
// mean of the two runs' B/A (bench/ab/orders.mjs). With --processes, ab.sh
// runs each build alone instead (QUESTION_ab.mjs --side DIR, timeSide()), one
// process per round and side, paired by bench/ab/pair.mjs as natively: no
// second module then shares the process's heap, memory or load order.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);

import { cpuMs, median, quartile } from "./stats.mjs";

/**
 * The SIMD128 module of each build folder, loaded through its own JS layer, in the order
 * given, or the reverse with ATTNKIT_AB_LOAD_ORDER=BA; returned in the order given.
 */
export async function loadBuilds(...dirs) {
  const reversed = process.env.ATTNKIT_AB_LOAD_ORDER === "BA";
  const modules = [];
  for (const dir of reversed ? [...dirs].reverse() : dirs) modules.push(await loadBuild(dir));
  return reversed ? modules.reverse() : modules;
}

/** The SIMD128 module of one build folder, through its own JS layer. */
export function loadBuild(dir) {
  return require(path.resolve(dir, "attnkit.node.cjs")).createAttnkit();
}

// Batches per entry of a build timed alone (timeSide).
const SIDE_BATCHES = 7;

/**
 * One build alone (QUESTION_ab.mjs --side DIR, for bench/ab/pair.mjs): every
 * entry [name, run, per?] warmed up (its batch size found) before any is
 * timed, so that none is timed while the module's code still tiers up; then
 * SIDE_BATCHES rounds over the entries of one batch each (at least
 * `batchMs`). Prints "name us" lines, the median batch's microseconds per
 * call (divided by `per`).
 */
export function timeSide(entries, batchMs) {
  const calls = entries.map(([, run]) => callsPerBatch(run, batchMs));
  const times = entries.map(() => []);
  for (let b = 0; b < SIDE_BATCHES; ++b) {
    entries.forEach(([, run, per = 1], i) => times[i].push(batch(run, calls[i], per)));
  }
  entries.forEach(([name], i) => console.log(`${name} ${median(times[i])}`));
}

/**
 * With the arguments `--side DIR` (bench/ab/ab.sh --processes), times DIR's build
 * alone (timeSide on entriesOf(its module)) and exits; else returns.
 */
export async function sideIfAsked(args, entriesOf, batchMs) {
  if (args[0] !== "--side") return;
  timeSide(entriesOf(await loadBuild(args[1])), batchMs);
  process.exit(0);
}

/**
 * `make()` once per build: each side of a pair its own input objects with the same values, so
 * that neither JS layer meets objects that the other has shaped (hidden classes, inline
 * caches), as a program that loads one build never does.
 */
export function inputsPerSide(make) {
  return [make(), make()];
}

/** Calls of `run` that fill a batch of `batchMs` (at least `min`). */
export function callsPerBatch(run, batchMs, min = 1) {
  let n = 0;
  const t0 = cpuMs();
  while (cpuMs() - t0 < batchMs) {
    run();
    ++n;
  }
  return Math.max(min, n);
}

/** Microseconds per call (divided by `per`) of a batch of n calls. */
export function batch(run, n, per = 1) {
  const t0 = cpuMs();
  for (let j = 0; j < n; ++j) run();
  return ((cpuMs() - t0) / n / per) * 1e3;
}

/**
 * Rounds over entries [{ runs: [run per engine], calls, per? }]: each round
 * times every entry on every engine, the engines' order turned by one each
 * round. Returns, per entry, one array of microseconds per engine.
 */
export function pairedRounds(entries, rounds) {
  const times = entries.map((e) => e.runs.map(() => []));
  for (let r = 0; r < rounds; ++r) {
    entries.forEach((e, s) => {
      const k = e.runs.length;
      for (let i = 0; i < k; ++i) {
        const which = (i + r) % k;
        times[s][which].push(batch(e.runs[which], e.calls, e.per ?? 1));
      }
    });
  }
  return times;
}

/** B's speed over A's: the median of per-round ratios A / B, with its quartiles. */
export function speed(a, b) {
  const ratios = a.map((x, i) => x / b[i]);
  return {
    median: median(ratios),
    text: `B/A speed ${median(ratios).toFixed(3)} [${quartile(ratios, 0.25).toFixed(3)}, ${quartile(ratios, 0.75).toFixed(3)}]`,
  };
}

/** One printed row: the medians of A and B and B's speed. */
export function row(name, a, b, { width = 40, digits = 2, unit = " us" } = {}) {
  const s = speed(a, b);
  console.log(
    `${name.padEnd(width)} A ${median(a).toFixed(digits).padStart(10)}${unit}  B ${median(b).toFixed(digits).padStart(10)}${unit}  ${s.text}`,
  );
  return s.median;
}
