// The report's plot (bench/results/gflops.svg): GFLOP/s (log scale) against T
// (log2), one panel per masking, one polyline per engine; native engines
// solid, wasm dashed, JS dotted; the two peaks as grey lines.
import { ATTNKIT_NATIVE, ATTNKIT_WASM, NATIVE_IN_NODE } from "./forward.mjs";

/** The SVG of the forward's run f (bench/lib/report/forward.mjs). */
export function gflopsSvg(f) {
  const { rows, fmaPeak, wasmPeak, Ts, find, nativeEngines, wasmEngines } = f;
  const engines = [
    ...nativeEngines,
    ...wasmEngines.filter((e) => !nativeEngines.includes(e)),
  ].filter((e) => e !== NATIVE_IN_NODE && rows.some((r) => r.engine === e && r.T));
  const palette = {
    [ATTNKIT_NATIVE]: "#1f4fb4",
    [ATTNKIT_WASM]: "#d62728",
    "attnkit (wasm scalar)": "#f28e8e",
    "OpenBLAS sgemm": "#ff7f0e",
    "C++ loop": "#8c564b",
    "plain JS": "#7f7f7f",
    "onnxruntime-node MultiHeadAttention": "#2ca02c",
    "onnxruntime-node MatMul graph": "#17becf",
    "onnxruntime-web MultiHeadAttention": "#9467bd",
    "onnxruntime-web MatMul graph": "#e377c2",
    "tfjs-backend-wasm": "#bcbd22",
  };
  const spare = ["#393b79", "#637939", "#8c6d31", "#843c39"];
  const colorOf = (e, i) => palette[e] ?? spare[i % spare.length];
  const W = 1020,
    H = 380,
    top = 30,
    bottom = 44,
    left = 54,
    panelW = 300,
    gap = 40,
    legendX = left + 2 * panelW + gap + 20;
  const all = rows
    .filter((r) => r.T)
    .map((r) => r.gflops)
    .concat([fmaPeak, wasmPeak].filter(Boolean));
  const gMin = Math.min(...all) / 1.5,
    gMax = Math.max(...all) * 1.5;
  const ticks = [];
  for (let p = Math.floor(Math.log10(gMin)); p <= Math.ceil(Math.log10(gMax)); ++p) {
    for (const m of [1, 2, 5])
      if (m * 10 ** p >= gMin && m * 10 ** p <= gMax) ticks.push(+(m * 10 ** p).toPrecision(1));
  }
  const y = (g) =>
    top +
    (H - top - bottom) *
      (1 - (Math.log10(g) - Math.log10(gMin)) / (Math.log10(gMax) - Math.log10(gMin)));
  const style = (e) => {
    const p = rows.find((r) => r.engine === e)?.platform;
    return p === "native" ? "" : p === "js" ? ' stroke-dasharray="2 3"' : ' stroke-dasharray="6 3"';
  };
  let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">\n`;
  svg += `<rect width="${W}" height="${H}" fill="white"/>\n`;
  [false, true].forEach((causal, p) => {
    const x0 = left + p * (panelW + gap);
    const x = (T) =>
      x0 +
      panelW *
        (Ts.length > 1
          ? (Math.log2(T) - Math.log2(Ts[0])) / (Math.log2(Ts.at(-1)) - Math.log2(Ts[0]))
          : 0.5);
    svg += `<text x="${x0}" y="${top - 12}" font-size="12">GFLOP/s, one head, d=64, ${causal ? "causal" : "non-causal"}</text>\n`;
    for (const g of ticks) {
      svg += `<line x1="${x0}" x2="${x0 + panelW}" y1="${y(g)}" y2="${y(g)}" stroke="#ddd"/>`;
      svg += `<text x="${x0 - 4}" y="${y(g) + 4}" text-anchor="end">${g}</text>\n`;
    }
    for (const T of Ts)
      svg += `<text x="${x(T)}" y="${H - bottom + 15}" text-anchor="middle">${T}</text>`;
    svg += `<text x="${x0 + panelW / 2}" y="${H - 8}" text-anchor="middle">T (tokens)</text>\n`;
    for (const [name, g] of [
      ["FMA peak (native)", fmaPeak],
      ["SIMD128 peak (wasm)", wasmPeak],
    ]) {
      if (g)
        svg += `<line x1="${x0}" x2="${x0 + panelW}" y1="${y(g)}" y2="${y(g)}" stroke="#999" stroke-width="1.5" stroke-dasharray="1 2"/><text x="${x0 + panelW - 2}" y="${y(g) - 3}" text-anchor="end" fill="#777">${name}</text>\n`;
    }
    engines.forEach((e, i) => {
      const pts = Ts.map((T) => find(e, T, causal)).filter(Boolean);
      if (!pts.length) return;
      const c = colorOf(e, i);
      svg += `<polyline fill="none" stroke="${c}" stroke-width="${e.startsWith("attnkit") ? 3 : 1.8}"${style(e)} points="${pts.map((r) => `${x(r.T).toFixed(1)},${y(r.gflops).toFixed(1)}`).join(" ")}"/>\n`;
      for (const r of pts)
        svg += `<circle cx="${x(r.T).toFixed(1)}" cy="${y(r.gflops).toFixed(1)}" r="2.5" fill="${c}"/>`;
      svg += "\n";
    });
  });
  engines.forEach((e, i) => {
    const c = colorOf(e, i),
      yy = top + 16 * i;
    const label =
      rows.find((r) => r.engine === e)?.platform === "native" &&
      !e.includes("native") &&
      e.startsWith("onnxruntime-node")
        ? `${e} (native)`
        : e;
    svg += `<line x1="${legendX}" x2="${legendX + 22}" y1="${yy - 4}" y2="${yy - 4}" stroke="${c}" stroke-width="${e.startsWith("attnkit") ? 3 : 1.8}"${style(e)}/><text x="${legendX + 28}" y="${yy}" fill="${c}">${label}</text>\n`;
  });
  svg += `<text x="${legendX}" y="${top + 16 * engines.length + 10}" fill="#555">solid: native · dashed: wasm · dotted: JS</text>\n`;
  svg += "</svg>\n";
  return svg;
}
