// Turns bench/results/native.json (Google Benchmark) and wasm.json (every engine
// timed in Node: attnkit wasm, plain JS and the peers) into markdown tables
// (bench/results/results.md, also copied into docs/benchmarks.md between the
// bench markers, and the README's performance table between the perf markers)
// and an SVG plot of GFLOP/s against T for every engine; then the backward's,
// the training's, the page's, the language model's and GPT-2's sections from
// their own JSON. Only a fit run (bench/fitness.mjs) is written into the README
// and docs; an unfit one goes to bench/results/ alone, as a record, and the
// reasons are printed. Each section is a module of bench/lib/report.
//
// Usage: node bench/report.mjs [--results DIR] [--docs FILE] [--readme FILE] [--language]
//          [--gpt2]
//   (defaults: bench/results/, docs/benchmarks.md, README.md; --language: only
//   bench/results/language.md; --gpt2: only bench/results/gpt2.md and docs/gpt2.md's table)
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { backwardMarkdown } from "./lib/report/backward.mjs";
import { appendSection, publisher } from "./lib/report/format.mjs";
import { forwardMarkdown, forwardRun } from "./lib/report/forward.mjs";
import { gpt2Report } from "./lib/report/gpt2.mjs";
import { languageReport } from "./lib/report/language.mjs";
import { pageMarkdown } from "./lib/report/page.mjs";
import { forwardReadmeRows, publishReadme } from "./lib/report/readme.mjs";
import { smallMarkdown } from "./lib/report/small.mjs";
import { gflopsSvg } from "./lib/report/svg.mjs";
import { trainMarkdown } from "./lib/report/train.mjs";

const option = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 && process.argv[i + 1] ? pathToFileURL(process.argv[i + 1]) : fallback;
};
const dir = new URL(
  `${option("--results", new URL("./results/", import.meta.url)).href.replace(/\/?$/, "/")}`,
);
const docsUrl = option("--docs", new URL("../docs/benchmarks.md", import.meta.url));
const readmeUrl = option("--readme", new URL("../README.md", import.meta.url));
const gpt2DocsUrl = new URL("../docs/gpt2.md", import.meta.url);

/** The whole report: results.md, gflops.svg, fitness.json, language.md and, for a fit run, the docs. */
function report() {
  const f = forwardRun(dir);
  const publish = publisher(f.fitness);
  writeFileSync(new URL("fitness.json", dir), `${JSON.stringify(f.fitness, null, 2)}\n`);
  const md = forwardMarkdown(f);
  const smallMd = smallMarkdown(f.small, f.nativeQueries);
  writeFileSync(new URL("results.md", dir), md + (smallMd ? `${smallMd}\n` : ""));
  writeFileSync(new URL("gflops.svg", dir), gflopsSvg(f));
  const readmeRows = forwardReadmeRows(f);
  publish(
    docsUrl,
    "<!-- bench:start -->",
    "<!-- bench:end -->",
    `${md}\n![GFLOP/s against T](../bench/results/gflops.svg)\n`,
  );
  if (smallMd) publish(docsUrl, "<!-- small:start -->", "<!-- small:end -->", smallMd);
  console.log(md);
  for (const [heading, marker, section] of [
    ["Backward", "backward", backwardMarkdown(dir)],
    ["Training", "train", trainMarkdown(dir)],
    ["The page", "page", pageMarkdown(dir)],
  ]) {
    readmeRows.push(...section.readmeRows);
    if (!section.md) continue;
    appendSection(dir, heading, section.md);
    publish(docsUrl, `<!-- ${marker}:start -->`, `<!-- ${marker}:end -->`, section.md);
    console.log(section.md);
  }
  gpt2Report(dir, gpt2DocsUrl);
  const languageRow = languageReport(dir);
  if (languageRow) readmeRows.push(languageRow);
  publishReadme(f, readmeRows, readmeUrl, publish);
  console.log(
    f.fitness.fit
      ? "bench: a fit run: the README's table and docs/benchmarks.md were regenerated."
      : `bench: an UNFIT run, kept in ${dir.pathname} only (the README and docs/benchmarks.md are unchanged): ` +
          f.fitness.reasons.join("; "),
  );
}

if (process.argv.includes("--language")) languageReport(dir);
else if (process.argv.includes("--gpt2")) gpt2Report(dir, gpt2DocsUrl);
else report();
