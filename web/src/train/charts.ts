// The Train view's charts: curves against the training step, and the query/key scatter.
// Each keeps its frame (axes' groups, paths) while its size is unchanged and updates the data.
import * as d3 from "d3";
import { axisTitle } from "../draw/labels";
import { retained, setAttr, setText } from "../draw/retain";
import type { SvgGroup } from "../draw/types";
import type { QKMap } from "./qk";

export interface Series {
  label: string;
  color: string;
  x: number[];
  y: number[];
  /** Dots instead of a line (e.g. the evaluations). */
  dots?: boolean;
  dash?: string;
}

export interface ChartState {
  node: SVGGElement;
  w: number;
  h: number;
  title: SVGTextElement;
  xAxis: d3.Selection<SVGGElement, unknown, null, undefined>;
  yAxis: d3.Selection<SVGGElement, unknown, null, undefined>;
  paths: d3.Selection<SVGGElement, unknown, null, undefined>;
  legend: d3.Selection<SVGGElement, unknown, null, undefined>;
  /** The axes' domains last drawn. */
  domains: string;
}

/** At most this many points per line: longer series are thinned (every k-th point). */
const MAX_POINTS = 400;

function thin(xs: number[], ys: number[]): [number, number][] {
  const k = Math.max(1, Math.ceil(xs.length / MAX_POINTS));
  const out: [number, number][] = [];
  for (let i = 0; i < xs.length; i += k) if (Number.isFinite(ys[i])) out.push([xs[i], ys[i]]);
  const last = xs.length - 1;
  if (last >= 0 && last % k !== 0 && Number.isFinite(ys[last])) out.push([xs[last], ys[last]]);
  return out;
}

/** Charts built so far, by id: a chart is rebuilt only when its size changes. */
const built = new Map<string, ChartState>();

/**
 * The frame of a line chart at (x0, y0) in `svg`, a w x h plot area (kept while its size
 * is), its legend below the x axis; draw its data with drawSeries.
 */
export function chartFrame(
  svg: SVGSVGElement,
  id: string,
  x0: number,
  y0: number,
  w: number,
  h: number,
  yLabel: string,
): ChartState {
  let st = built.get(id);
  if (!st || st.w !== w || st.h !== h || !st.node.isConnected) {
    st?.node.remove();
    const gg = d3.select(svg).append("g").attr("data-testid", id).attr("class", "train-chart");
    const t = gg.append("text").attr("class", "m-title").attr("y", -10).node()!;
    gg.append("rect")
      .attr("width", w)
      .attr("height", h)
      .attr("fill", "#fcfcfb")
      .attr("stroke", "#e2e2de");
    const xAxis = gg.append("g").attr("transform", `translate(0,${h})`);
    const yAxis = gg.append("g");
    axisTitle(gg, "training step", w / 2, h + 30);
    axisTitle(gg, yLabel, -42, h / 2, true);
    const paths = gg.append("g");
    const legend = gg.append("g").attr("transform", `translate(0,${h + 44})`);
    st = { node: gg.node()!, w, h, title: t, xAxis, yAxis, paths, legend, domains: "" };
    built.set(id, st);
  }
  setAttr(st.node, "transform", `translate(${x0},${y0})`);
  return st;
}

/** Space a chart takes below its plot area (axis, its title, a legend of n series). */
export function chartBelow(n: number): number {
  return 48 + 15 * n;
}

/** Draws `series` into a chart; y in [0, yMax] (default: the data's largest). */
export function drawSeries(st: ChartState, title: string, series: Series[], yMax?: number): void {
  const { w, h } = st;
  setText(st.title, title);
  // The x axis grows in nice steps, so that its ticks are not rewritten on every step.
  const last = Math.max(10, ...series.map((s) => s.x[s.x.length - 1] ?? 0));
  const unit = 10 ** Math.floor(Math.log10(last));
  const xMax = Math.ceil(last / (unit / 2)) * (unit / 2);
  // Before any data, a y axis up to 1.
  let top = 0;
  for (const s of series) for (const v of s.y) if (v > top) top = v;
  if (!(top > 0)) top = 1 / 1.05;
  const x = d3.scaleLinear().domain([0, xMax]).range([0, w]);
  const y = d3
    .scaleLinear()
    .domain([0, yMax ?? Number((top * 1.05).toPrecision(2))])
    .range([h, 0]);
  const domains = `${xMax}|${y.domain()[1].toPrecision(2)}`;
  if (st.domains !== domains) {
    st.domains = domains;
    st.xAxis.call(d3.axisBottom(x).ticks(Math.max(2, Math.floor(w / 70))));
    st.yAxis.call(d3.axisLeft(y).ticks(5));
  }
  const line = d3
    .line<[number, number]>()
    .x((d) => x(d[0]))
    .y((d) => y(d[1]));
  st.paths
    .selectAll<SVGGElement, Series>("g.series")
    .data(series, (s) => s.label)
    .join((enter) => enter.append("g").attr("class", "series"))
    .each(function (s) {
      const pts = thin(s.x, s.y);
      const sel = d3.select(this);
      setAttr(this, "data-series", s.label);
      if (s.dots) {
        sel
          .selectAll("circle")
          .data(pts)
          .join("circle")
          .attr("r", 2.5)
          .attr("fill", s.color)
          .attr("cx", (d) => x(d[0]))
          .attr("cy", (d) => y(d[1]));
      } else {
        sel
          .selectAll("path")
          .data([pts])
          .join("path")
          .attr("fill", "none")
          .attr("stroke", s.color)
          .attr("stroke-width", 1.5)
          .attr("stroke-dasharray", s.dash ?? null)
          .attr("d", (d) => line(d) ?? "");
      }
    });
  st.legend
    .selectAll<SVGGElement, Series>("g")
    .data(series, (s) => s.label)
    .join((enter) => {
      const e = enter.append("g");
      e.append("rect").attr("y", -4).attr("width", 12).attr("height", 4);
      e.append("text").attr("class", "note").attr("x", 18).attr("y", 1);
      return e;
    })
    .attr("transform", (_s, i) => `translate(0,${i * 15})`)
    .each(function (s) {
      d3.select(this).select("rect").attr("fill", s.color);
      d3.select(this).select("text").text(s.label);
    });
}

interface ScatterState {
  title: SVGTextElement;
  lines: SVGPathElement;
  keys: SVGPathElement;
  queries: SVGPathElement;
}

export const QUERY_COLOR = "#d6604d";
export const KEY_COLOR = "#2166ac";

/**
 * The query/key map of one head in a `size` x `size` box: keys as squares, queries as
 * dots, a line from each query to its most weighted key; one <path> each (redrawn often).
 */
export function qkScatter(
  g: SvgGroup,
  id: string,
  x0: number,
  y0: number,
  size: number,
  title: string,
  map: QKMap,
): void {
  const { entry } = retained<ScatterState>(g.node()!, id, String(size), () => {
    const gg = g.append("g").attr("data-testid", id).attr("class", "qk-map");
    const t = gg.append("text").attr("class", "m-title").attr("y", -8).node()!;
    gg.append("rect")
      .attr("width", size)
      .attr("height", size)
      .attr("fill", "#fcfcfb")
      .attr("stroke", "#e2e2de");
    const lines = gg.append("path").attr("stroke", "#bbb").attr("stroke-width", 0.8).node()!;
    const keys = gg.append("path").attr("fill", KEY_COLOR).attr("opacity", 0.8).node()!;
    const queries = gg.append("path").attr("fill", QUERY_COLOR).attr("opacity", 0.85).node()!;
    return { node: gg.node()!, state: { title: t, lines, keys, queries } };
  });
  const st = entry.state;
  setAttr(entry.node, "transform", `translate(${x0},${y0})`);
  setText(st.title, title);
  let ext = 1e-6;
  for (const [a, b] of [...map.q, ...map.k]) ext = Math.max(ext, Math.abs(a), Math.abs(b));
  ext *= 1.08;
  const sx = (v: number) => (6 + ((v + ext) / (2 * ext)) * (size - 12)).toFixed(1);
  const sy = (v: number) => (size - 6 - ((v + ext) / (2 * ext)) * (size - 12)).toFixed(1);
  setAttr(
    st.lines,
    "d",
    map.top
      .map((j, i) => `M${sx(map.q[i][0])},${sy(map.q[i][1])}L${sx(map.k[j][0])},${sy(map.k[j][1])}`)
      .join(""),
  );
  setAttr(st.keys, "d", map.k.map(([a, b]) => `M${sx(a)},${sy(b)}m-3,-3h6v6h-6z`).join(""));
  setAttr(
    st.queries,
    "d",
    map.q
      .map(([a, b]) => `M${sx(a)},${sy(b)}m-3.2,0a3.2,3.2 0 1,0 6.4,0a3.2,3.2 0 1,0 -6.4,0`)
      .join(""),
  );
}
