// The Train view's charts: curves against the training step, and the query/key scatter.
// Each keeps its frame (axes' groups, paths) while its size is unchanged and updates the data.
import * as d3 from "d3";
import { axisTitle } from "../draw/labels";
import { retained, setAttr, setText } from "../draw/retain";
import { hideTip, showTip } from "../draw/tooltip";
import { escapeHtml } from "../format";
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
  /** Drawn over the data: the steps a loaded file has no curves for, the snapshot's step. */
  marks: d3.Selection<SVGGElement, unknown, null, undefined>;
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

/** The background and border of a chart's w x h plot area. */
function plotArea(gg: SvgGroup, w: number, h: number): void {
  gg.append("rect")
    .attr("width", w)
    .attr("height", h)
    .attr("fill", "#fcfcfb")
    .attr("stroke", "#e2e2de");
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
    plotArea(gg, w, h);
    const xAxis = gg.append("g").attr("transform", `translate(0,${h})`);
    const yAxis = gg.append("g").attr("class", "y-axis");
    axisTitle(gg, "training step", w / 2, h + 30);
    axisTitle(gg, yLabel, -42, h / 2, true);
    const paths = gg.append("g");
    const marks = gg.append("g").attr("class", "chart-marks");
    const legend = gg.append("g").attr("transform", `translate(0,${h + 44})`);
    st = { node: gg.node()!, w, h, title: t, xAxis, yAxis, paths, legend, marks, domains: "" };
    built.set(id, st);
  }
  setAttr(st.node, "transform", `translate(${x0},${y0})`);
  return st;
}

/** Space a chart takes below its plot area (axis, its title, a legend of n series). */
export function chartBelow(n: number): number {
  return 48 + 15 * n;
}

export interface ChartMarks {
  /** A loaded weights file's step: the curves before it are not in the file. */
  missingBefore?: number;
  /** The step of the snapshot on screen. */
  snapshot?: number;
  /**
   * Fit the y axis to the points from this step on (the first steps' high losses are drawn
   * at the top edge), so that the range that matters is not squashed; default: from 0.
   */
  fitFrom?: number;
}

/** Draws `series` into a chart; y in [0, yMax] (default: the data's largest). */
export function drawSeries(
  st: ChartState,
  title: string,
  series: Series[],
  yMax?: number,
  marks: ChartMarks = {},
): void {
  const { w, h } = st;
  setText(st.title, title);
  // The x axis grows in nice steps, so that its ticks are not rewritten on every step.
  const last = Math.max(
    10,
    marks.missingBefore ?? 0,
    ...series.map((s) => s.x[s.x.length - 1] ?? 0),
  );
  const unit = 10 ** Math.floor(Math.log10(last));
  const xMax = Math.ceil(last / (unit / 2)) * (unit / 2);
  // Before any data, a y axis up to 1.
  let top = 0;
  let low = Infinity;
  const from = marks.fitFrom ?? 0;
  for (const s of series)
    s.y.forEach((v, i) => {
      // A reference line (two points) spans every step: it counts.
      if (s.x[i] < from && s.x.length > 2) return;
      if (v > top) top = v;
      if (v < low) low = v;
    });
  if (!(top > 0)) top = 1 / 1.05;
  const x = d3.scaleLinear().domain([0, xMax]).range([0, w]);
  const bottom = marks.fitFrom && low < top ? Math.floor(low * 0.95 * 10) / 10 : 0;
  const y = d3
    .scaleLinear()
    .domain([bottom, yMax ?? Number((top * 1.05).toPrecision(2))])
    .range([h, 0])
    .clamp(true);
  const domains = `${xMax}|${y.domain()[0]}|${y.domain()[1].toPrecision(2)}`;
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
  drawMarks(st, x, marks);
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

/** The shaded steps a loaded file has no curves for, and a line at the snapshot's step. */
function drawMarks(st: ChartState, x: d3.ScaleLinear<number, number>, marks: ChartMarks): void {
  const { h } = st;
  const before = marks.missingBefore ? [marks.missingBefore] : [];
  const missing = st.marks
    .selectAll<SVGGElement, number>("g.chart-missing")
    .data(before)
    .join((enter) => {
      const e = enter.append("g").attr("class", "chart-missing");
      e.append("rect").attr("y", 0).attr("height", h).attr("fill", "#ececea");
      e.append("text").attr("class", "note").attr("x", 4).attr("y", 14);
      return e;
    });
  missing.select("rect").attr("width", (b) => x(b));
  missing
    .select("text")
    .attr("data-testid", "chart-missing")
    .text((b) => (x(b) > 110 ? `steps 0–${b}: not in the file` : "not in the file"));
  const snap = marks.snapshot === undefined ? [] : [marks.snapshot];
  const mark = st.marks
    .selectAll<SVGGElement, number>("g.chart-snapshot")
    .data(snap)
    .join((enter) => {
      const e = enter.append("g").attr("class", "chart-snapshot");
      e.append("line")
        .attr("y1", 0)
        .attr("y2", h)
        .attr("stroke", "#3f3f46")
        .attr("stroke-width", 1.2)
        .attr("stroke-dasharray", "4 3");
      // A halo keeps the label legible over the curves.
      e.append("text")
        .attr("class", "note")
        .attr("y", -1)
        .style("paint-order", "stroke")
        .style("stroke", "#fcfcfb")
        .style("stroke-width", "4px");
      return e;
    })
    .attr("data-step", (s) => s)
    .attr("transform", (s) => `translate(${x(s).toFixed(1)},0)`);
  // The label sits on the side with room for it.
  mark
    .select("text")
    .attr("text-anchor", (s) => (x(s) > st.w - 90 ? "end" : "start"))
    .attr("x", (s) => (x(s) > st.w - 90 ? -4 : 4))
    .attr("dy", "1em")
    .text((s) => `snapshot, step ${s}`);
}

interface QKPoint {
  x: number;
  y: number;
  kind: "query" | "key";
  /** The token's position. */
  i: number;
  tip: string;
}

interface ScatterState {
  title: SVGTextElement;
  xAxis: d3.Selection<SVGGElement, unknown, null, undefined>;
  yAxis: d3.Selection<SVGGElement, unknown, null, undefined>;
  lines: SVGPathElement;
  keys: SVGPathElement;
  queries: SVGPathElement;
  labels: d3.Selection<SVGGElement, unknown, null, undefined>;
  /** The points drawn (px in the box), for the labels and the tooltip. */
  points: QKPoint[];
}

export const QUERY_COLOR = "#d6604d";
export const KEY_COLOR = "#2166ac";

/** Space a query/key map takes beside its plot area: its y axis on the left, its x axis below. */
export const QK_LEFT = 34;
export const QK_BELOW = 34;

/** Font size of the maps' point labels and ticks (px, at scale 1). */
const LABEL_FONT = 10;

/**
 * The query/key map of one head in a `size` x `size` box at (x0, y0), its axes (the two
 * principal components, in the units of q and k) outside it: keys as squares, queries as
 * dots, each with its token's label where it does not cover another, a line from each
 * query to its most weighted key; a tooltip names the point under the pointer.
 */
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
    const state = scatterFrame(gg, size);
    bindNearestTip(gg, size, state);
    return { node: gg.node()!, state };
  });
  const st = entry.state;
  setAttr(entry.node, "transform", `translate(${x0},${y0})`);
  setText(st.title, title);
  const [sx, sy] = scatterAxes(st, size, map);
  drawScatterMarks(st, map, sx, sy);
  st.points = scatterPoints(map, labels, sx, sy);
  drawPointLabels(st, size, labels);
}

/** A scatter's frame in `gg`: title, box, axes and their titles, the paths its data is drawn in. */
function scatterFrame(gg: SvgGroup, size: number): ScatterState {
  const t = gg.append("text").attr("class", "m-title").attr("y", -8).node()!;
  plotArea(gg, size, size);
  const xAxis = gg.append("g").attr("class", "qk-axis").attr("transform", `translate(0,${size})`);
  const yAxis = gg.append("g").attr("class", "qk-axis");
  axisTitle(gg, "component 1", size / 2, size + 30);
  axisTitle(gg, "component 2", -QK_LEFT + 8, size / 2, true);
  const lines = gg.append("path").attr("stroke", "#bbb").attr("stroke-width", 0.8).node()!;
  const keys = gg.append("path").attr("fill", KEY_COLOR).attr("opacity", 0.8).node()!;
  const queries = gg.append("path").attr("fill", QUERY_COLOR).attr("opacity", 0.85).node()!;
  const labelsG = gg.append("g").attr("class", "qk-labels").style("font-size", `${LABEL_FONT}px`);
  return { title: t, xAxis, yAxis, lines, keys, queries, labels: labelsG, points: [] };
}

/** The tooltip: the point of `state.points` nearest the pointer, within reach of a finger. */
function bindNearestTip(gg: SvgGroup, size: number, state: ScatterState): void {
  const hit = gg
    .append("rect")
    .attr("class", "qk-hit")
    .attr("width", size)
    .attr("height", size)
    .attr("fill", "transparent")
    .node()!;
  const onPointer = (e: PointerEvent) => {
    const r = hit.getBoundingClientRect();
    const k = size / r.width;
    const px = (e.clientX - r.left) * k,
      py = (e.clientY - r.top) * k;
    let best = -1,
      bestD = (e.pointerType === "touch" ? 16 : 10) ** 2;
    state.points.forEach((p, i) => {
      const d = (p.x - px) ** 2 + (p.y - py) ** 2;
      if (d <= bestD) [best, bestD] = [i, d];
    });
    if (best >= 0) showTip(e, state.points[best].tip);
    else hideTip();
  };
  hit.addEventListener("pointermove", onPointer);
  hit.addEventListener("pointerdown", onPointer);
  hit.addEventListener("pointerleave", hideTip);
}

type Scale = d3.ScaleLinear<number, number>;

/** The scales of a `size` box holding every point of `map` (one extent for both axes), drawn as axes. */
function scatterAxes(st: ScatterState, size: number, map: QKMap): [Scale, Scale] {
  let ext = 1e-6;
  for (const [a, b] of [...map.q, ...map.k]) ext = Math.max(ext, Math.abs(a), Math.abs(b));
  ext *= 1.08;
  const sx = d3
    .scaleLinear()
    .domain([-ext, ext])
    .range([6, size - 6]);
  const sy = d3
    .scaleLinear()
    .domain([-ext, ext])
    .range([size - 6, 6]);
  const ticks = size >= 200 ? 5 : 3;
  st.xAxis.call(d3.axisBottom(sx).ticks(ticks).tickSize(3));
  st.yAxis.call(d3.axisLeft(sy).ticks(ticks).tickSize(3));
  for (const a of [st.xAxis, st.yAxis]) a.selectAll("text").style("font-size", `${LABEL_FONT}px`);
  return [sx, sy];
}

/** Keys as squares, queries as dots, a line from each query to its most weighted key. */
function drawScatterMarks(st: ScatterState, map: QKMap, sx: Scale, sy: Scale): void {
  const f = (v: number) => v.toFixed(1);
  setAttr(
    st.lines,
    "d",
    map.top
      .map(
        (j, i) =>
          `M${f(sx(map.q[i][0]))},${f(sy(map.q[i][1]))}L${f(sx(map.k[j][0]))},${f(sy(map.k[j][1]))}`,
      )
      .join(""),
  );
  setAttr(st.keys, "d", map.k.map(([a, b]) => `M${f(sx(a))},${f(sy(b))}m-3,-3h6v6h-6z`).join(""));
  setAttr(
    st.queries,
    "d",
    map.q
      .map(([a, b]) => `M${f(sx(a))},${f(sy(b))}m-3.2,0a3.2,3.2 0 1,0 6.4,0a3.2,3.2 0 1,0 -6.4,0`)
      .join(""),
  );
}

/** The points in the box with their tooltips: a query names the key it weights most; a key, the queries that weight it most. */
function scatterPoints(map: QKMap, labels: string[], sx: Scale, sy: Scale): QKPoint[] {
  const name = (i: number) => `“${escapeHtml(labels[i] ?? String(i))}”`;
  const queriesOf = (j: number) => map.top.flatMap((t, i) => (t === j ? [name(i)] : []));
  return [
    ...map.q.map(([a, b], i): QKPoint => ({
      x: sx(a),
      y: sy(b),
      kind: "query",
      i,
      tip: `<b>query</b> ${name(i)}: weights key ${name(map.top[i])} most (α = ${map.topWeight[i].toFixed(3)})`,
    })),
    ...map.k.map(([a, b], j): QKPoint => {
      const qs = queriesOf(j);
      return {
        x: sx(a),
        y: sy(b),
        kind: "key",
        i: j,
        tip: `<b>key</b> ${name(j)}: ${qs.length ? `weighted most by ${qs.length === 1 ? "query" : "queries"} ${qs.join(", ")}` : "no query weights it most"}`,
      };
    }),
  ];
}

/** Labels beside their points, each left out where it would cover one already placed or leave the box. */
function drawPointLabels(st: ScatterState, size: number, labels: string[]): void {
  const placed: [number, number, number, number][] = [];
  const shown = st.points.filter((p) => {
    const w = (labels[p.i] ?? "").length * LABEL_FONT * 0.62 + 2;
    const box: [number, number, number, number] = [p.x + 5, p.y - 4, p.x + 5 + w, p.y + 7];
    if (box[2] > size) return false;
    if (placed.some((b) => box[0] < b[2] && box[2] > b[0] && box[1] < b[3] && box[3] > b[1]))
      return false;
    placed.push(box);
    return true;
  });
  st.labels
    .selectAll("text")
    .data(shown)
    .join("text")
    .attr("x", (p) => (p.x + 5).toFixed(1))
    .attr("y", (p) => (p.y + 3.5).toFixed(1))
    .style("fill", (p) => (p.kind === "query" ? QUERY_COLOR : KEY_COLOR))
    .text((p) => labels[p.i] ?? "");
}
