// The small calls' report (bench/wasm/small.mjs and attnkit_bench --queries):
// microseconds per call, their own tables and targets, also in
// docs/benchmarks.md between the small-calls markers.
import { num as us, tableHead, targetTable } from "./format.mjs";

/** The small calls' markdown from small.json and the native T_q sweep ("" without small.json). */
export function smallMarkdown(small, nativeQueries) {
  if (!small) return "";
  let smallMd = "";
  const TYPED = "attnkit (typed arrays)",
    NESTED = "attnkit (nested arrays)",
    JS = "plain JS";
  const sq = (engine, d, T) =>
    small.square.find((r) => r.engine === engine && r.d === d && r.T === T);
  const dims = [...new Set(small.square.map((r) => r.d))];
  const smallTargets = [];
  for (const d of dims) {
    const Tsq = [...new Set(small.square.filter((r) => r.d === d).map((r) => r.T))].sort(
      (a, b) => a - b,
    );
    smallMd += tableHead(
      `small calls, d = ${d}, µs per call`,
      Tsq.map((T) => `T=${T}`),
    );
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
  smallMd += targetTable("target (issue #18, small calls)", smallTargets);
  return smallMd;
}
