// The softmax saturation experiment (seed 000): logits z scaled by c = 1..100, the
// softmax with and without the division by sqrt(d_k), the entropy, and the gradient
// the backward pass sends to the softmax's inputs. The softmax, the entropy's sum, the
// gradient (traceBackwardQKV) and its norm come from attnkit (softmax, matmul).
import type { Attnkit, Matrix } from "attnkit";
import * as d3 from "d3";
import { fmt, shape } from "../format";
import { normal } from "../random";
import { row, selectedQuery, type Scene, type SceneCtx } from "../scenes/common";
import { note } from "../draw/text";
import { axisTitle } from "../draw/labels";
import type { SvgGroup } from "../draw/types";
import { retained, setAttr, setText } from "../draw/retain";
import { timed } from "../model";

const N_RANDOM = 8;
const SCALES = d3.range(1, 101);

function logits(ctx: SceneCtx): { z: number[]; names: string[]; source: string } {
  if (ctx.state.satSource === "query") {
    const i = selectedQuery(ctx);
    return {
      z: row(ctx.trace.rawScores, i),
      names: ctx.item.item.labels,
      source: `the raw scores q·k of “${ctx.item.item.labels[i]}”`,
    };
  }
  const rnd = normal(ctx.state.seed * 31 + 7);
  return {
    z: Array.from({ length: N_RANDOM }, () => rnd()),
    names: d3.range(N_RANDOM).map(String),
    source: `${N_RANDOM} random N(0, 1) numbers (seed ${ctx.state.seed})`,
  };
}

/** Rows: c·z / divisor for every c in SCALES (the experiment's inputs). */
function scaled(z: number[], divisor: number): Matrix {
  const m = {
    data: new Float32Array(SCALES.length * z.length),
    rows: SCALES.length,
    cols: z.length,
  };
  SCALES.forEach((c, r) => z.forEach((v, j) => (m.data[r * z.length + j] = (c * v) / divisor)));
  return m;
}

/** Entropy of each row of P: the diagonal of P (−ln P)^T, one matmul. */
function entropies(attn: Attnkit, P: Matrix): number[] {
  const L = { data: new Float32Array(P.data.length), rows: P.cols, cols: P.rows };
  for (let r = 0; r < P.rows; r++)
    for (let j = 0; j < P.cols; j++)
      L.data[j * P.rows + r] = -Math.log(Math.max(P.data[r * P.cols + j], 1e-30));
  const PL = attn.matmul(P, L);
  return d3.range(P.rows).map((r) => PL.data[r * P.rows + r]);
}

/** The key whose value the gradient's loss asks for: the runner-up logit (not the one the softmax saturates on). */
function runnerUp(z: number[]): number {
  const order = z.map((_, j) => j).sort((a, b) => z[b] - z[a]);
  return order[Math.min(1, order.length - 1)];
}

/**
 * |dS| for every c: the gradient reaching the softmax's inputs s = scale·c·z when the
 * loss asks for more of key t's value. One traceBackwardQKV call covers every c: query
 * row r is c_r (Q [n_c, 1]), the keys are z (K [n, 1]), V = I [n, n] (so the output
 * row is the softmax itself) and dO row r = e_t. Row r of dScores is dS for c_r; its
 * norm is sqrt((dS ∘ dS) 1), the sum by a matmul.
 */
function gradientNorms(attn: Attnkit, z: number[], t: number, scale: number): number[] {
  const n = z.length,
    nc = SCALES.length;
  const Q = { data: Float32Array.from(SCALES), rows: nc, cols: 1 };
  const K = { data: Float32Array.from(z), rows: n, cols: 1 };
  const V = { data: new Float32Array(n * n), rows: n, cols: n };
  for (let j = 0; j < n; j++) V.data[j * n + j] = 1;
  const dO = { data: new Float32Array(nc * n), rows: nc, cols: n };
  for (let r = 0; r < nc; r++) dO.data[r * n + t] = 1;
  const dS = attn.traceBackwardQKV(Q, K, V, dO, { scale }).dScores;
  const sq = { data: dS.data.map((v) => v * v), rows: nc, cols: n };
  const sums = attn.matmul(sq, { data: new Float32Array(n).fill(1), rows: n, cols: 1 });
  return Array.from(sums.data, Math.sqrt);
}

export interface SatResult {
  z: number[];
  plain: Matrix;
  scaledP: Matrix;
  hPlain: number[];
  hScaled: number[];
  /** The key the gradient's loss asks for. */
  target: number;
  /** |dS| per c, without and with the division by sqrt(d_k). */
  gPlain: number[];
  gScaled: number[];
}

// The experiment covers every c at once, so moving the slider needs no new computation:
// results are kept by logits and d_k.
const memo = new Map<string, SatResult>();

export function saturation(
  attn: Attnkit,
  ctx: SceneCtx,
): SatResult & { names: string[]; source: string; dK: number } {
  const { z, names, source } = logits(ctx);
  const dK = ctx.cfg.dK;
  const key = `${dK}|${z.join(",")}`;
  let r = memo.get(key);
  if (!r) {
    const plain = attn.softmax(scaled(z, 1));
    const scaledP = attn.softmax(scaled(z, Math.sqrt(dK)));
    const target = runnerUp(z);
    r = {
      z,
      plain,
      scaledP,
      hPlain: entropies(attn, plain),
      hScaled: entropies(attn, scaledP),
      target,
      gPlain: gradientNorms(attn, z, target, 1),
      gScaled: gradientNorms(attn, z, target, 1 / Math.sqrt(dK)),
    };
    if (memo.size > 32) memo.clear();
    memo.set(key, r);
  }
  last = { ...r, names, source, dK };
  return last;
}

let last: (SatResult & { names: string[]; source: string; dK: number }) | null = null;

/** The last experiment drawn: its logits, target key and gradient norms (read by the test hook). */
export function lastSaturation(): {
  z: number[];
  target: number;
  dK: number;
  scales: number[];
  gPlain: number[];
  gScaled: number[];
} | null {
  return (
    last && {
      z: last.z,
      target: last.target,
      dK: last.dK,
      scales: SCALES,
      gPlain: last.gPlain,
      gScaled: last.gScaled,
    }
  );
}

/** A bar chart of one softmax row; axes and bars kept while the layout is, the bars' heights updated. */
function bars(
  g: SvgGroup,
  x0: number,
  y0: number,
  w: number,
  h: number,
  p: number[],
  names: string[],
  title: string,
  color: string,
  id: string,
): void {
  const sig = [w, h, p.length, names.join("\u0001"), color].join("|");
  const { entry } = retained(g.node()!, id, sig, () => {
    const gg = g.append("g").attr("data-testid", id);
    const x = d3.scaleBand<number>().domain(d3.range(p.length)).range([0, w]).padding(0.15);
    const y = d3.scaleLinear().domain([0, 1]).range([h, 0]);
    const titleEl = gg.append("text").attr("class", "m-title").attr("y", -10).node()!;
    gg.append("g").call(d3.axisLeft(y).ticks(5));
    gg.append("g")
      .attr("transform", `translate(0,${h})`)
      .call(d3.axisBottom(x).tickFormat((j) => names[j] ?? String(j)))
      .selectAll("text")
      .attr("transform", p.length > 10 ? "rotate(-45)" : null)
      .attr("text-anchor", p.length > 10 ? "end" : "middle");
    const rects = gg
      .selectAll<SVGRectElement, number>("rect.bar")
      .data(p)
      .join("rect")
      .attr("class", "bar")
      .attr("x", (_d, j) => x(j) ?? 0)
      .attr("width", x.bandwidth())
      .attr("fill", color)
      .nodes();
    axisTitle(gg, "softmax probability", -32, h / 2, true);
    return { node: gg.node()!, state: { titleEl, rects, y } };
  });
  const { titleEl, rects, y } = entry.state;
  setAttr(entry.node, "transform", `translate(${x0},${y0})`);
  setText(titleEl, title);
  p.forEach((v, j) => {
    setAttr(rects[j], "y", y(v));
    setAttr(rects[j], "height", h - y(v));
    setAttr(rects[j], "data-value", String(v));
  });
}

export const saturationView: Scene = {
  title: "Softmax saturation",
  caption: (ctx) => {
    const c = ctx.state.satScale;
    return `<p>Multiply a vector of logits by <b>c</b> and the softmax saturates: almost all weight on the largest logit, almost none elsewhere (an experiment from the notes “Single-head self-attention”).
      Dividing by √d<sub>k</sub> (d<sub>k</sub> = ${ctx.cfg.dK}) keeps it in its sensitive range for longer; the entropy (in nats; ln n is uniform, 0 is one-hot) measures how spread out it is.</p>
      <p><label>c = <b data-testid="sat-c">×${c}</b> <input type="range" min="1" max="100" step="1" value="${c}" data-set="satScale" data-testid="sat-slider" aria-label="logit multiplier"></label>
      <label>logits: <select data-set="satSource" data-testid="sat-source" aria-label="logit source">
        <option value="random"${ctx.state.satSource === "random" ? " selected" : ""}>random N(0,1)</option>
        <option value="query"${ctx.state.satSource === "query" ? " selected" : ""}>the selected query's scores</option></select></label></p>
      <p>Below, what this does to learning: the gradient the backward pass sends to the softmax's inputs, dS = P ∘ (dP − D) (attnkit's <code>traceBackwardQKV</code>), when the loss asks for more of one key's value (dO = e<sub>t</sub>, t = the runner-up logit).
      A saturated softmax passes almost no gradient: once P is one-hot, |dS| falls towards 0 and Q and K stop learning. Without ÷√d<sub>k</sub> that happens at a smaller c.</p>
      <p class="shapes">softmax over ${shape(SCALES.length, "n")} rows (one per c), with and without ÷√d<sub>k</sub>; one backward call per curve: Q ${shape(SCALES.length, 1)} (the c's), K = z ${shape("n", 1)}, V = I ${shape("n", "n")}, dO ${shape(SCALES.length, "n")} → dS ${shape(SCALES.length, "n")}, |dS| per row</p>`;
  },
  render: (g, ctx) => {
    const r = timed(() => saturation(ctx.attn, ctx));
    const c = ctx.state.satScale;
    const k = c - 1;
    const n = r.z.length;
    const pRow = (m: Matrix) => row(m, k);
    const W = Math.min(ctx.width, 1000);
    const bw = Math.max(240, (W - 120) / 2 - 30);
    const bh = 170;
    note(g, 0, 12, `logits z: ${r.source}`);
    bars(
      g,
      50,
      50,
      bw,
      bh,
      pRow(r.plain),
      r.names,
      `softmax(${c}·z)   H = ${fmt(r.hPlain[k], 3)} nats`,
      "#d6604d",
      "sat-plain",
    );
    bars(
      g,
      50 + bw + 70,
      50,
      bw,
      bh,
      pRow(r.scaledP),
      r.names,
      `softmax(${c}·z / √${r.dK})   H = ${fmt(r.hScaled[k], 3)} nats`,
      "#4393c3",
      "sat-scaled",
    );
    // Entropy against c: the curves are kept while z and d_k are; the marker at c moves.
    const y0 = 50 + bh + 80;
    const ew = Math.min(W - 80, 2 * bw + 70),
      eh = 150;
    const x = d3.scaleLog().domain([1, 100]).range([0, ew]);
    const sig = [ew, eh, n, r.dK, r.hPlain.join(","), r.hScaled.join(",")].join("|");
    const { entry } = retained(g.node()!, "sat-entropy", sig, () => {
      const gg = g.append("g").attr("data-testid", "sat-entropy");
      const y = d3
        .scaleLinear()
        .domain([0, Math.log(n) * 1.05])
        .range([eh, 0]);
      gg.append("text")
        .attr("class", "m-title")
        .attr("y", -10)
        .text("entropy of the softmax against c");
      cAxes(gg, x, d3.axisLeft(y).ticks(5), ew, eh, -34, "entropy (nats)");
      gg.append("line")
        .attr("x1", 0)
        .attr("x2", ew)
        .attr("y1", y(Math.log(n)))
        .attr("y2", y(Math.log(n)))
        .attr("stroke", "#aaa")
        .attr("stroke-dasharray", "4 3");
      gg.append("text")
        .attr("class", "note")
        .attr("x", ew - 4)
        .attr("y", y(Math.log(n)) - 4)
        .attr("text-anchor", "end")
        .text(`ln ${n} (uniform)`);
      const line = d3
        .line<number>()
        .x((_d, i) => x(SCALES[i]))
        .y((d) => y(d));
      gg.append("path")
        .attr("d", line(r.hPlain))
        .attr("fill", "none")
        .attr("stroke", "#d6604d")
        .attr("stroke-width", 2);
      gg.append("path")
        .attr("d", line(r.hScaled))
        .attr("fill", "none")
        .attr("stroke", "#4393c3")
        .attr("stroke-width", 2);
      const marker = cMarker(gg, eh);
      scaleLegend(gg, ew - 190, eh * 0.3, r.dK);
      return { node: gg.node()!, state: marker };
    });
    setAttr(entry.node, "transform", `translate(50,${y0})`);
    setAttr(entry.state, "x1", x(c));
    setAttr(entry.state, "x2", x(c));
    const y1 = y0 + eh + 90;
    const gh = gradientChart(g, r, c, k, x, ew, eh, y1);
    return { width: Math.max(ew, 2 * bw + 70) + 60, height: y1 + gh, duration: 0 };
  },
};

/** 2.12e-3 -> "2.12·10⁻³". */
function sci(v: number): string {
  if (v === 0) return "0";
  const [m, e] = v.toExponential(2).split("e");
  if (e === "+0") return m;
  const sup = "⁰¹²³⁴⁵⁶⁷⁸⁹";
  const digits = e.replace(/^[+-]/, "").replace(/\d/g, (d) => sup[Number(d)]);
  return `${m}·10${e.startsWith("-") ? "⁻" : ""}${digits}`;
}

/**
 * |dS| against c, both log scales: the curves are kept while the experiment is; the
 * marker at c, its dots and its line of text move. Returns the chart's height.
 */
function gradientChart(
  g: SvgGroup,
  r: ReturnType<typeof saturation>,
  c: number,
  k: number,
  x: d3.ScaleLogarithmic<number, number>,
  ew: number,
  eh: number,
  y0: number,
): number {
  const positive = [...r.gPlain, ...r.gScaled].filter((v) => v > 0);
  // The bottom line holds what float32 rounds to 0 (and anything below 10^-30).
  const floor = Math.max(1e-30, Math.min(1e-3, ...positive) / 3);
  const top = Math.max(...positive, floor * 10) * 2;
  const sig = [ew, eh, r.dK, r.target, r.gPlain.join(","), r.gScaled.join(",")].join("|");
  const y = d3.scaleLog().domain([floor, top]).range([eh, 0]).clamp(true);
  const { entry } = retained(g.node()!, "sat-gradient", sig, () => {
    const gg = g.append("g").attr("data-testid", "sat-gradient");
    gg.append("text")
      .attr("class", "m-title")
      .attr("y", -10)
      .text(
        `gradient reaching the logits, |dS|, against c (the loss asks for key ${r.names[r.target]})`,
      );
    cAxes(gg, x, d3.axisLeft(y).ticks(5, "~e"), ew, eh, -44, "|dS| (log scale)");
    const line = d3
      .line<number>()
      .x((_d, i) => x(SCALES[i]))
      .y((d) => y(Math.max(d, floor)));
    const curves: [number[], string, string][] = [
      [r.gPlain, "#d6604d", "plain"],
      [r.gScaled, "#4393c3", "scaled"],
    ];
    for (const [v, col, id] of curves)
      gg.append("path")
        .attr("d", line(v))
        .attr("fill", "none")
        .attr("stroke", col)
        .attr("stroke-width", 2)
        .attr("data-testid", `sat-grad-${id}`);
    const marker = cMarker(gg, eh);
    scaleLegend(gg, 12, eh - 40, r.dK);
    const dots = curves.map(([, col]) =>
      gg.append("circle").attr("r", 4).attr("fill", col).attr("stroke", "#fff").node()!,
    );
    const readout = gg
      .append("text")
      .attr("class", "note")
      .attr("y", eh + 50)
      .attr("data-testid", "sat-grad")
      .node()!;
    return { node: gg.node()!, state: { marker, dots, readout } };
  });
  const { marker, dots, readout } = entry.state;
  setAttr(entry.node, "transform", `translate(50,${y0})`);
  setAttr(marker, "x1", x(c));
  setAttr(marker, "x2", x(c));
  [r.gPlain[k], r.gScaled[k]].forEach((v, i) => {
    setAttr(dots[i], "cx", x(c));
    setAttr(dots[i], "cy", y(Math.max(v, floor)));
  });
  setAttr(readout, "data-c", String(c));
  setAttr(readout, "data-plain", String(r.gPlain[k]));
  setAttr(readout, "data-scaled", String(r.gScaled[k]));
  setText(
    readout,
    `at c = ${c}: |dS| = ${sci(r.gScaled[k])} with ÷√${r.dK}, ${sci(r.gPlain[k])} without${r.gPlain[k] < floor || r.gScaled[k] < floor ? " (values below the bottom line are drawn on it)" : ""}`,
  );
  return eh + 60;
}

/** The vertical line that marks the current c on a plot of height h. */
function cMarker(g: SvgGroup, h: number): SVGLineElement {
  return g
    .append("line")
    .attr("y1", 0)
    .attr("y2", h)
    .attr("stroke", "#f59e0b")
    .attr("stroke-width", 2)
    .node()!;
}

/** The legend of the two curves, without and with the division by √d_k, at (x, y). */
function scaleLegend(g: SvgGroup, x: number, y: number, dK: number): void {
  const lg = g.append("g").attr("transform", `translate(${x},${y})`);
  [
    ["without ÷√dₖ", "#d6604d"],
    [`with ÷√${dK}`, "#4393c3"],
  ].forEach(([t, col], i) => {
    lg.append("rect")
      .attr("y", i * 16)
      .attr("width", 14)
      .attr("height", 4)
      .attr("fill", col);
    lg.append("text")
      .attr("class", "note")
      .attr("x", 20)
      .attr("y", i * 16 + 5)
      .text(t);
  });
}

/** The axes of a plot against c (log scale, w x h): c below, `left` with its title at dx. */
function cAxes(
  g: SvgGroup,
  x: d3.ScaleLogarithmic<number, number>,
  left: d3.Axis<d3.NumberValue>,
  w: number,
  h: number,
  dx: number,
  title: string,
): void {
  g.append("g").attr("transform", `translate(0,${h})`).call(d3.axisBottom(x).ticks(5, "~g"));
  g.append("g").call(left);
  axisTitle(g, "c (log scale)", w / 2, h + 32);
  axisTitle(g, title, dx, h / 2, true);
}
