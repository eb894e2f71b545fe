// Turns bench/results/native.json (Google Benchmark) and wasm.json into
// markdown tables (bench/results/results.md, also copied into the README
// between the bench markers) and an SVG plot of GFLOP/s against T.
import { readFileSync, writeFileSync, existsSync } from "node:fs";

const dir = new URL("./results/", import.meta.url);
const rows = [];  // { platform, engine, T, causal, gflops, ms }
let peak = null;

if (existsSync(new URL("native.json", dir))) {
  const native = JSON.parse(readFileSync(new URL("native.json", dir), "utf8"));
  const names = { BM_Attnkit: "attnkit (native)", BM_OpenBlas: "OpenBLAS sgemm", BM_Loop: "C++ loop" };
  for (const b of native.benchmarks) {
    if (b.aggregate_name && b.aggregate_name !== "median") continue;
    const m = b.run_name.match(/^(BM_\w+)(?:\/T:(\d+)\/causal:(\d))?/);
    if (!m) continue;
    if (m[1] === "BM_FmaPeak") { peak = b.GFLOPs; continue; }
    if (!names[m[1]]) continue;
    rows.push({ platform: "native", engine: names[m[1]], T: +m[2], causal: m[3] === "1", gflops: b.GFLOPs / 1e0 });
  }
  for (const b of native.benchmarks) {
    if (b.aggregate_name && b.aggregate_name !== "median") continue;
    if (b.run_name.startsWith("BM_AttnkitMultiHead")) rows.push({ platform: "native", engine: "attnkit multi-head", extra: "B=1 T=512 d_model=512 h=8", gflops: b.GFLOPs });
    const d = b.run_name.match(/^BM_AttnkitDecode\/cache:(\d+)/);
    if (d) rows.push({ platform: "native", engine: "attnkit decode", extra: `1 query, 8 heads, cache ${d[1]}`, gflops: b.GFLOPs, us: b.real_time });
  }
}
if (existsSync(new URL("wasm.json", dir))) {
  const wasm = JSON.parse(readFileSync(new URL("wasm.json", dir), "utf8"));
  for (const r of wasm.results) rows.push({ platform: "wasm", ...r });
}

function table(platform, causal) {
  const sel = rows.filter((r) => r.platform === platform && r.causal === causal && r.T);
  const Ts = [...new Set(sel.map((r) => r.T))].sort((a, b) => a - b);
  const engines = [...new Set(sel.map((r) => r.engine))];
  const ours = engines[0];
  let md = `| engine (${platform}, ${causal ? "causal" : "non-causal"}, d=64) | ${Ts.map((t) => `T=${t}`).join(" | ")} |\n`;
  md += `|---|${Ts.map(() => "---:").join("|")}|\n`;
  for (const e of engines) {
    md += `| ${e} | ` + Ts.map((T) => {
      const r = sel.find((x) => x.engine === e && x.T === T);
      if (!r) return "–";
      const base = sel.find((x) => x.engine === ours && x.T === T);
      const ratio = e === ours ? "" : ` (attnkit ${(base.gflops / r.gflops).toFixed(2)}×)`;
      const pct = platform === "native" && peak && e === ours ? ` (${(100 * r.gflops / peak).toFixed(0)}% of peak)` : "";
      return `${r.gflops.toFixed(1)}${ratio}${pct}`;
    }).join(" | ") + " |\n";
  }
  return md;
}

let md = "GFLOP/s (4·T²·d per head; median of interleaved repetitions; one core, fp32). " +
  "In parentheses: how many times faster attnkit is than that engine.\n\n";
if (peak) md += `Measured FMA peak of this core (Highway, best target): **${peak.toFixed(0)} GFLOP/s**.\n\n`;
for (const p of ["native", "wasm"]) for (const c of [false, true]) {
  if (rows.some((r) => r.platform === p && r.causal === c && r.T)) md += table(p, c) + "\n";
}
const extra = rows.filter((r) => r.extra);
if (extra.length) {
  md += "| other shapes (native) | GFLOP/s |\n|---|---:|\n";
  for (const r of extra) md += `| ${r.engine}: ${r.extra} | ${r.gflops.toFixed(1)} |\n`;
}
writeFileSync(new URL("results.md", dir), md);

// SVG: GFLOP/s against T (log2), one polyline per engine and platform (non-causal).
const series = {};
for (const r of rows.filter((x) => x.T && !x.causal)) (series[`${r.engine}`] ??= []).push(r);
const W = 640, H = 360, L = 60, B = 40;
const Ts = [...new Set(rows.filter((r) => r.T).map((r) => r.T))].sort((a, b) => a - b);
const maxG = Math.max(1, ...rows.filter((r) => r.T).map((r) => r.gflops));
const x = (T) => L + (W - L - 170) * (Math.log2(T) - Math.log2(Ts[0])) / Math.max(1, Math.log2(Ts.at(-1)) - Math.log2(Ts[0]));
const y = (g) => H - B - (H - B - 20) * g / maxG;
const colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"];
let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">\n`;
svg += `<rect width="${W}" height="${H}" fill="white"/><text x="${L}" y="14">GFLOP/s, one head, d=64, non-causal</text>\n`;
for (const T of Ts) svg += `<text x="${x(T)}" y="${H - B + 16}" text-anchor="middle">${T}</text>`;
svg += `<text x="${(W - 170 + L) / 2}" y="${H - 6}" text-anchor="middle">T (tokens)</text>\n`;
for (let g = 0; g <= maxG; g += Math.max(1, Math.ceil(maxG / 6 / 5) * 5)) {
  svg += `<line x1="${L}" x2="${W - 170}" y1="${y(g)}" y2="${y(g)}" stroke="#ddd"/><text x="${L - 6}" y="${y(g) + 4}" text-anchor="end">${g}</text>\n`;
}
Object.entries(series).forEach(([name, pts], i) => {
  pts.sort((a, b) => a.T - b.T);
  const c = colors[i % colors.length];
  svg += `<polyline fill="none" stroke="${c}" stroke-width="2" points="${pts.map((p) => `${x(p.T)},${y(p.gflops)}`).join(" ")}"/>\n`;
  svg += `<text x="${W - 160}" y="${30 + 16 * i}" fill="${c}">${name}</text>\n`;
});
svg += "</svg>\n";
writeFileSync(new URL("gflops.svg", dir), svg);

// README: replace the text between the markers.
const readmeUrl = new URL("../../README.md", dir);
const readme = readFileSync(readmeUrl, "utf8");
const start = "<!-- bench:start -->", end = "<!-- bench:end -->";
if (readme.includes(start) && readme.includes(end)) {
  const before = readme.slice(0, readme.indexOf(start) + start.length);
  const after = readme.slice(readme.indexOf(end));
  writeFileSync(readmeUrl, `${before}\n${md}\n![GFLOP/s against T](bench/results/gflops.svg)\n\n${after}`);
}
console.log(md);
