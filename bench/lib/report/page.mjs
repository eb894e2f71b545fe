// The page's report: control changes in the built web page at its largest
// layer (T = 64, d_model = 128, 8 heads), from bench/results/page.json
// (bench/wasm/page.mjs, Chromium), the main thread while the Train and Language
// views train, and the default preset's time to 2.0 nats/char on 1 and 2 threads
// (page-threads.json, page.mjs --to-2).
import { readJson, tableHead } from "./format.mjs";

/** The page's section's markdown ("" without results); it has no README row. */
export function pageMarkdown(dir) {
  const run = readJson(dir, "page.json");
  if (!run) return { md: "", readmeRows: [] };
  const over = (ms) => (ms > run.budgetMs ? `**${ms}**` : `${ms}`);
  let md =
    `Control changes in the built page (\`bench/wasm/page.mjs\`, Chromium ${run.chromium}): ` +
    `${run.config}. Milliseconds, timed in the page: recompute + redraw is attnkit's calls and ` +
    `the redraw with style and layout (**bold**: over the ${run.budgetMs} ms of one frame at ` +
    "60 Hz); to the next frame adds the paint.\n\n";
  md += tableHead("page / control", [
    "recompute + redraw",
    "largest",
    "first change",
    "of it attnkit",
    "to the next frame",
  ]);
  for (const [name, r] of Object.entries(run.results))
    md += `| ${name} | ${over(r.render)} | ${over(r.renderMax)} | ${over(r.firstRender)} | ${r.attnkit} | ${r.frame} |\n`;
  const loads = run.loadAverage ?? [];
  md +=
    `\nFirst render ${run.firstRenderMs.toFixed(0)} ms after navigation start; the worst median ` +
    `${run.worstRenderMs} ms${run.overBudget.length ? ` (over the budget: ${run.overBudget.join(", ")})` : ""}` +
    `${loads.length ? `; load average (1 min) ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}` : ""}` +
    `${run.commit ? `; commit ${run.commit}` : ""}${run.quick ? "; a --quick run" : ""}.\n`;
  if (run.training) {
    md +=
      "\nThe main thread while a view trains in its worker, from Train to done: its tasks over " +
      "50 ms (Long Tasks API) and the largest lateness of a 20 ms timer.\n\n";
    md += tableHead("view: run", ["steps", "s", "tasks > 50 ms", "longest, ms", "timer late, ms"]);
    for (const [name, t] of Object.entries(run.training))
      md += `| ${name} | ${t.steps} | ${t.seconds} | ${t.longTasks} | ${t.longestTaskMs} | ${t.timerLatenessMs} |\n`;
  }
  md += threadsMarkdown(readJson(dir, "page-threads.json"));
  return { md, readmeRows: [] };
}

/** The default preset to 2.0 nats/char on 1 and 2 threads (page.mjs --to-2), or "". */
function threadsMarkdown(run) {
  if (!run) return "";
  let md =
    `
The Language view's default preset trained on Moby-Dick in the page served cross-origin ` +
    `isolated (\`bench/wasm/page.mjs --to-2\`, Chromium ${run.chromium}) until its validation loss ` +
    `reached 2.0 nats/char (then on to 1.8 within 3 minutes of training), on 1 and on 2 threads ` +
    `in turns: the page's own training time.\n\n`;
  // Runs from before --to-2 went on to 1.8 have no seconds18.
  const to18 = run.medianSeconds18 !== undefined;
  const secs = (x) => (x === null ? "not within 3 min" : x);
  md += tableHead("threads", [
    "to 2.0: runs, s",
    "median, s",
    "step",
    ...(to18 ? ["to 1.8: runs, s", "median, s", "step"] : []),
  ]);
  for (const threads of [1, 2]) {
    const runs = run.runs.filter((r) => r.threads === threads);
    const cells = [
      runs.map((r) => r.seconds).join(", "),
      run.medianSeconds[threads],
      runs.map((r) => r.step).join(", "),
    ];
    if (to18) {
      cells.push(
        runs.map((r) => secs(r.seconds18)).join(", "),
        secs(run.medianSeconds18[threads]),
        runs.map((r) => r.step18 ?? "-").join(", "),
      );
    }
    md += `| ${threads} | ${cells.join(" | ")} |\n`;
  }
  const loads = run.runs.map((r) => r.load);
  md +=
    `\nTwo threads: ${run.twoThreadsSpeed}x; load average (1 min) ` +
    `${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}.\n`;
  return md;
}
