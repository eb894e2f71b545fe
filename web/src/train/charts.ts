// The Train view's charts: curves against the training step, and the query/key scatter.
// Each keeps its frame (axes' groups, paths) while its size is unchanged and updates the data.
import * as d3 from "d3";
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

interface ChartState {
  title: SVGTextElement;
  xAxis: d3.Selection<SVGGElement, unknown, null, undefined>;
  yAxis: d3.Selection<SVGGElement, unknown, null, undefined>;
  paths: d3.Selection<SVGGElement, unknown, null, undefined>;
  legend: d3.Selection<SVGGElement, unknown, null, undefined>;
}

/** At most this many points per line: longer series are thinned (every k-th point). */
const MAX_POINTS = 600;

function thin(xs: number[], ys: number[]): [number, number][] {
  const k = Math.max(1, Math.ceil(xs.length / MAX_POINTS));
  const out: [number, number][] = [];
  for (let i = 0; i < xs.length; i += k) if (Number.isFinite(ys[i])) out.push([xs[i], ys[i]]);
  const last = xs.length - 1;
  if (last >= 0 && last % k !== 0 && Number.isFinite(ys[last])) out.push([xs[last], ys[last]]);
  return out;
}

/** A line chart of `series` at (x0, y0), w x h plot area; y in [0, yMax] (yMax: the data's). */
export function lineChart(
  g: SvgGroup,
  id: string,
  x0: number,
  y0: number,
  w: number,
  h: number,
  title: string,
  yLabel: string,
  series: Series[],
  yMax?: number,
): void {
  const sig = [w, h, yLabel].join("|");
  const { entry } = retained<ChartState>(g.node()!, id, sig, () => {
    const gg = g.append("g").attr("data-testid", id).attr("class", "train-chart");
    const t = gg.append("text").attr("class", "m-title").attr("y", -10).node()!;
    gg.append("rect")
      .attr("width", w)
      .attr("height", h)
      .attr("fill", "#fcfcfb")
      .attr("stroke", "#e2e2de");
    const xAxis = gg.append("g").attr("transform", `translate(0,${h})`);
    const yAxis = gg.append("g");
    gg.append("text")
      .attr("class", "m-axis-title")
      .attr("x", w / 2)
      .attr("y", h + 30)
      .attr("text-anchor", "middle")
      .text("training step");
    gg.append("text")
      .attr("class", "m-axis-title")
      .attr("transform", `translate(-36,${h / 2}) rotate(-90)`)
      .attr("text-anchor", "middle")
      .text(yLabel);
    const paths = gg.append("g");
    const legend = gg.append("g").attr("transform", `translate(${w - 8},8)`);
    return { node: gg.node()!, state: { title: t, xAxis, yAxis, paths, legend } };
  });
  const st = entry.state;
  setAttr(entry.node, "transform", `translate(${x0},${y0})`);
  setText(st.title, title);
  const xMax = Math.max(10, ...series.map((s) => s.x[s.x.length - 1] ?? 0));
  const yTop = yMax ?? Math.max(1e-3, ...series.flatMap((s) => s.y.filter(Number.isFinite))) * 1.05;
  const x = d3.scaleLinear().domain([0, xMax]).range([0, w]);
  const y = d3.scaleLinear().domain([0, yTop]).range([h, 0]);
  st.xAxis.call(d3.axisBottom(x).ticks(Math.max(2, Math.floor(w / 70))));
  st.yAxis.call(d3.axisLeft(y).ticks(5));
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
      setAttr(this, "data-last", s.y.length ? String(s.y[s.y.length - 1]) : "");
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
      e.append("rect").attr("x", -14).attr("width", 12).attr("height", 4);
      e.append("text").attr("class", "note").attr("x", -18).attr("y", 5).attr("text-anchor", "end");
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
  lines: d3.Selection<SVGGElement, unknown, null, undefined>;
  keys: d3.Selection<SVGGElement, unknown, null, undefined>;
  queries: d3.Selection<SVGGElement, unknown, null, undefined>;
}

export const QUERY_COLOR = "#d6604d";
export const KEY_COLOR = "#2166ac";

/** The query/key map of one head in a `size` x `size` box; `labels` name the positions. */
export function qkScatter(
  g: SvgGroup,
  id: string,
  x0: number,
  y0: number,
  size: number,
  title: string,
  map: QKMap,
  labels: string[],
): void {
  const { entry } = retained<ScatterState>(g.node()!, id, String(size), () => {
    const gg = g.append("g").attr("data-testid", id).attr("class", "qk-map");
    const t = gg.append("text").attr("class", "m-title").attr("y", -8).node()!;
    gg.append("rect")
      .attr("width", size)
      .attr("height", size)
      .attr("fill", "#fcfcfb")
      .attr("stroke", "#e2e2de");
    const lines = gg.append("g").attr("class", "qk-lines");
    const keys = gg.append("g").attr("class", "qk-keys");
    const queries = gg.append("g").attr("class", "qk-queries");
    return { node: gg.node()!, state: { title: t, lines, keys, queries } };
  });
  const st = entry.state;
  setAttr(entry.node, "transform", `translate(${x0},${y0})`);
  setText(st.title, title);
  const all = [...map.q, ...map.k];
  const ext = Math.max(1e-6, ...all.map(([a, b]) => Math.max(Math.abs(a), Math.abs(b)))) * 1.08;
  const s = d3
    .scaleLinear()
    .domain([-ext, ext])
    .range([6, size - 6]);
  const sy = d3
    .scaleLinear()
    .domain([-ext, ext])
    .range([size - 6, 6]);
  st.lines
    .selectAll("line")
    .data(map.top)
    .join("line")
    .attr("stroke", "#bbb")
    .attr("stroke-width", 0.8)
    .attr("x1", (_j, i) => s(map.q[i][0]))
    .attr("y1", (_j, i) => sy(map.q[i][1]))
    .attr("x2", (j) => s(map.k[j][0]))
    .attr("y2", (j) => sy(map.k[j][1]));
  st.keys
    .selectAll("rect")
    .data(map.k)
    .join((e) =>
      e
        .append("rect")
        .attr("width", 6)
        .attr("height", 6)
        .attr("fill", KEY_COLOR)
        .attr("opacity", 0.8)
        .call((r) => r.append("title")),
    )
    .attr("x", (d) => s(d[0]) - 3)
    .attr("y", (d) => sy(d[1]) - 3)
    .select("title")
    .text((_d, i) => `key ${labels[i] ?? i}`);
  st.queries
    .selectAll("circle")
    .data(map.q)
    .join((e) =>
      e
        .append("circle")
        .attr("r", 3.2)
        .attr("fill", QUERY_COLOR)
        .attr("opacity", 0.85)
        .call((c) => c.append("title")),
    )
    .attr("cx", (d) => s(d[0]))
    .attr("cy", (d) => sy(d[1]))
    .select("title")
    .text((_d, i) => `query ${labels[i] ?? i} → key ${labels[map.top[i]] ?? map.top[i]}`);
}
