// The report's writers (bench/report.mjs and its sections in bench/lib/report):
// numbers as the tables print them, a table's head, a table of targets, the
// results' JSON and the markers a fit run rewrites in the docs.
import { existsSync, readFileSync, writeFileSync } from "node:fs";

/** The JSON file `name` of the results folder `dir` (a URL), or null when absent. */
export const readJson = (dir, name) =>
  existsSync(new URL(name, dir)) ? JSON.parse(readFileSync(new URL(name, dir), "utf8")) : null;

/** A time or rate with three significant figures at most ("–" for none). */
export const num = (x) =>
  x == null ? "–" : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);

/** Bytes as MB, one decimal below 10. */
export const mb = (bytes) =>
  bytes / 2 ** 20 >= 10 ? (bytes / 2 ** 20).toFixed(0) : (bytes / 2 ** 20).toFixed(1);

// A share of the platform's peak as published: at or above 100% the peak was
// measured low (a noisy run), so the figure is "unfit", never printed.
export const unfit = (share) => Math.round(100 * share) >= 100;
export const shareText = (share) => (unfit(share) ? "unfit" : `${(100 * share).toFixed(0)}%`);
export const peakShare = (share) =>
  unfit(share) ? " (share of peak unfit)" : ` (${shareText(share)} of peak)`;

/** A table's head: the title column, then right-aligned columns. */
export const tableHead = (title, columns) =>
  `| ${title} | ${columns.join(" | ")} |\n|---|${columns.map(() => "---:").join("|")}|\n`;

/** A table of targets (rows "| what | needed | measured | met |"). */
export const targetTable = (title, rows) =>
  `| ${title} | needed | measured | |\n|---|---|---|---|\n${rows.join("\n")}\n`;

/**
 * publish(url, s0, s1, content): writes `content` between the markers s0 and
 * s1 of the file at url, only for a fit run (fitness.fit).
 */
export const publisher = (fitness) => (url, s0, s1, content) => {
  if (!fitness.fit || !existsSync(url)) return;
  const text = readFileSync(url, "utf8");
  if (!text.includes(s0) || !text.includes(s1)) return;
  writeFileSync(
    url,
    `${text.slice(0, text.indexOf(s0) + s0.length)}\n${content}\n${text.slice(text.indexOf(s1))}`,
  );
};

/** Appends a "## heading" section to dir's results.md. */
export function appendSection(dir, heading, md) {
  writeFileSync(
    new URL("results.md", dir),
    `${readFileSync(new URL("results.md", dir), "utf8")}\n## ${heading}\n\n${md}`,
  );
}
