// A colour legend: a gradient bar with a D3 axis.
import * as d3 from "d3";
import type { SvgGroup } from "./types";
import { retained, setAttr } from "./retain";

let uid = 0;

export interface LegendOpts {
  x: number;
  y: number;
  width: number;
  title: string;
  domain: [number, number];
  interpolate: (t: number) => string;
  /** Show a hatched "−∞ (masked)" swatch. */
  masked?: boolean;
  /** Names the colour ramp (a redraw with the same kind and title keeps the legend and updates its axis). */
  kind: string;
}

export function drawLegend(parent: SvgGroup, o: LegendOpts): number {
  const sig = [o.kind, o.width, o.title, !!o.masked].join("|");
  const { entry } = retained(parent.node()!, "legend", sig, () => buildLegend(parent, o));
  setAttr(entry.node, "transform", `translate(${o.x},${o.y})`);
  // The axis follows the domain (a D3 axis updates its ticks in place).
  const domain = o.domain.join(",");
  if (entry.state.domain !== domain) {
    entry.state.domain = domain;
    const x = d3.scaleLinear().domain(o.domain).range([0, o.width]);
    // Large values in the short SI form (100k), tiny ones (gradients) as 2e-4, and as
    // many ticks as fit without touching.
    const top = Math.max(Math.abs(o.domain[0]), Math.abs(o.domain[1]));
    const big = top >= 1000,
      tiny = top > 0 && top < 0.01;
    const ticks = Math.max(2, Math.floor(o.width / (big || tiny ? 45 : 36)));
    const format = big ? d3.format(".2~s") : tiny ? d3.format(".1~e") : x.tickFormat(ticks);
    entry.state.axis
      .call(d3.axisBottom(x).ticks(ticks).tickSize(3).tickFormat(format))
      .call((a) => a.select(".domain").remove());
  }
  return 40;
}

interface LegendState {
  axis: d3.Selection<SVGGElement, unknown, null, undefined>;
  domain: string;
}

function buildLegend(parent: SvgGroup, o: LegendOpts): { node: SVGGElement; state: LegendState } {
  const id = `legend-grad-${++uid}`;
  const g = parent.append("g").attr("class", "legend").attr("data-testid", "legend");
  const grad = g.append("defs").append("linearGradient").attr("id", id);
  d3.range(0, 1.0001, 0.1).forEach((t) =>
    grad
      .append("stop")
      .attr("offset", `${t * 100}%`)
      .attr("stop-color", o.interpolate(t)),
  );
  g.append("text").attr("class", "legend-title").attr("y", 0).text(o.title);
  g.append("rect")
    .attr("y", 6)
    .attr("width", o.width)
    .attr("height", 10)
    .attr("fill", `url(#${id})`)
    .attr("stroke", "#ccc");
  const axis = g.append("g").attr("transform", "translate(0,16)");
  if (o.masked) {
    g.append("rect")
      .attr("x", o.width + 16)
      .attr("y", 6)
      .attr("width", 14)
      .attr("height", 10)
      .attr("fill", "url(#masked-hatch)")
      .attr("stroke", "#ccc");
    g.append("text")
      .attr("class", "legend-title")
      .attr("x", o.width + 34)
      .attr("y", 15)
      .text("−∞ (masked)");
  }
  return { node: g.node()!, state: { axis, domain: "" } };
}

/** The diverging legend for signed values in [-m, m]. */
export function signedLegend(
  parent: SvgGroup,
  x: number,
  y: number,
  m: number,
  title: string,
  masked = false,
): number {
  return drawLegend(parent, {
    x,
    y,
    width: 180,
    title,
    domain: [-(m || 1), m || 1],
    masked,
    kind: "signed",
    interpolate: (t) => d3.interpolateRdBu(1 - t),
  });
}

export function weightLegend(
  parent: SvgGroup,
  x: number,
  y: number,
  title = "attention weight",
): number {
  return drawLegend(parent, {
    x,
    y,
    width: 180,
    title,
    domain: [0, 1],
    kind: "weight",
    interpolate: (t) => d3.interpolateBlues(0.04 + 0.96 * t),
  });
}
