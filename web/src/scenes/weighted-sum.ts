// Step 7: weights times V; the output row as a weighted sum of value rows (seed 003's A(train) expansion).
import { escapeHtml, fmt, maxAbs, shape, sub } from "../format";
import { kvGroup } from "../model";
import { dur } from "../motion";
import { SEED001 } from "../presets";
import { diverging, sequential } from "../draw/colors";
import { signedLegend, weightLegend } from "../draw/legend";
import { drawMatrix } from "../draw/heatmap";
import { roundedShares } from "../draw/numbers";
import { commonTop } from "../draw/labels";
import { outlineRow } from "../draw/outline";
import { op } from "../draw/text";
import type { SvgGroup } from "../draw/types";
import { keyed } from "../draw/retain";
import {
  at,
  CLICK_FOR_WORK,
  fitCell,
  headLabel,
  vLabels,
  row,
  seedNote,
  selectedQuery,
  tokenLabels,
  tokenName,
  vec,
  workedSum,
  type Scene,
  type SceneCtx,
} from "./common";

/** The expansion terms of output row i, largest weights first when there are many. */
function terms(ctx: SceneCtx, i: number): { j: number; a: number }[] {
  const w = row(ctx.trace.weights, i);
  const all = w.map((a, j) => ({ j, a }));
  if (all.length <= 12) return all;
  return all.filter((t) => t.a >= 0.01).slice(0, 16);
}

function expansionText(ctx: SceneCtx, i: number): string[] {
  const name = (j: number) => ctx.item.item.labels[j];
  const ts = terms(ctx, i);
  // The weights as the α column writes them (adding up to 1.00 where they can).
  const shown = roundedShares(row(ctx.trace.weights, i), 1, ctx.cfg.T, 2, "rows");
  const parts = ts.map((t) => `${fmt(shown[t.j], 2)}·v(${name(t.j)})`);
  if (ts.length < ctx.cfg.T) parts.push(`… (${ctx.cfg.T - ts.length} terms < 0.01)`);
  const lines: string[] = [];
  let line = `A(${name(i)}) = `;
  for (const [k, p] of parts.entries()) {
    const piece = (k ? " + " : "") + p;
    if (line.length + piece.length > 92) {
      lines.push(line);
      line = "    ";
    }
    line += piece;
  }
  lines.push(line);
  lines.push(`    = ${vec(row(ctx.trace.output, i), 3, 10)}`);
  return lines;
}

function drawExpansion(g: SvgGroup, ctx: SceneCtx, i: number, y: number): number {
  const lines = expansionText(ctx, i);
  const t = keyed(g.node()!, "text", { class: "expansion", "data-testid": "expansion", y });
  lines.forEach((l, k) => keyed(t, "tspan", { x: 0, dy: k ? 18 : 0 }, l));
  return lines.length * 18 + 6;
}

export const weightedSumScene: Scene = {
  title: "Weighted sum of values",
  caption: (ctx) => {
    const { T, dV } = ctx.cfg;
    const i = selectedQuery(ctx);
    let seed = "";
    if (ctx.cfg.seedMode) {
      seed =
        seedNote(`the seed prints head<sub>0</sub> = ${vec(SEED001.output[0], 3)} = 0.156·v<sub>0</sub>, a consequence of its column softmax.
        With α<sub>00</sub> = 1, the output row 0 is v<sub>0</sub> = ${vec(row(ctx.trace.output, 0), 3)}.`);
    }
    return `<p>The new vector of token <i>i</i> is the weighted sum of the value rows: <b>A(i) = Σ<sub>j</sub> α<sub>ij</sub> v<sub>j</sub></b>.
      For “${tokenName(ctx, i)}”, the value rows are mixed by the weights in its row (the α column beside V)${headLabel(ctx)}.</p>
      <p class="shapes">weights V: ${shape("T", "T")} × ${shape("T", "d_v")} → ${shape("T", "d_v")} = ${shape(T, T)} × ${shape(T, dV)} → ${shape(T, dV)}</p>${seed}`;
  },
  render: (g, ctx) => {
    const { T, dV } = ctx.cfg;
    const tr = ctx.trace;
    const i = selectedQuery(ctx);
    const labels = tokenLabels(ctx.item);
    const cell = fitCell(T + 2 * dV + 6, T + 4, ctx, 300, 200);
    const dims = vLabels(ctx, kvGroup(ctx.cfg, ctx.state.head));
    const top = commonTop(cell, labels, dims);
    const m = Math.max(maxAbs(tr.V.data), maxAbs(tr.output.data), 1e-6);
    const color = diverging(m);
    const Wv = drawMatrix(g, {
      minTop: top,
      id: "weights7",
      title: "weights α",
      shape: shape(T, T),
      m: tr.weights,
      x: 0,
      y: 0,
      cell,
      color: sequential(),
      sums: "rows",
      rowLabels: labels,
      colLabels: labels,
      rowAxis: "query i",
      tip: (r, c, v) =>
        `α${sub(r)}${sub(c)} = <b>${fmt(v, 4)}</b><br><i>click to pick query “${tokenName(ctx, r)}”</i>`,
      onCell: (r) => ctx.set({ query: r }),
    });
    outlineRow(g, Wv, i, T);
    let x = Wv.width + cell * 0.4;
    op(g, x + cell * 0.6, Wv.gy + (T * cell) / 2, "×");
    x += cell * 1.6;
    const alpha = { data: row(tr.weights, i), rows: T, cols: 1 };
    const A = drawMatrix(g, {
      minTop: top,
      id: "alpha",
      title: `α${sub(i)}`,
      m: alpha,
      x,
      y: 0,
      cell,
      color: sequential(),
      sums: "cols",
      colLabels: [""],
      tip: (r, _c, v) =>
        `α${sub(i)}${sub(r)} = <b>${fmt(v, 4)}</b>: weight of v(${escapeHtml(labels[r])}) in A(${tokenName(ctx, i)})`,
    });
    x += A.width + 4;
    const V = drawMatrix(g, {
      minTop: top,
      id: "V7",
      title: "V",
      shape: shape(T, dV),
      m: tr.V,
      x,
      y: 0,
      cell,
      color,
      colLabels: dims,
      rowLabels: labels,
      // Value rows fade with their weight for the selected query.
      opacity: (r) => 0.25 + 0.75 * Math.min(1, at(alpha, r, 0) * 2),
      tip: (r, c, v) => `v${sub(r)}[${c}] = <b>${fmt(v, 4)}</b> (value of “${tokenName(ctx, r)}”)`,
    });
    x += V.width + cell * 0.4;
    op(g, x + cell * 0.6, Wv.gy + (T * cell) / 2, "=");
    x += cell * 1.6;
    const O = drawMatrix(g, {
      minTop: top,
      id: "output",
      title: "output" + headLabel(ctx),
      shape: shape(T, dV),
      m: tr.output,
      x,
      y: 0,
      cell,
      color,
      colLabels: dims,
      rowLabels: labels,
      labelsRight: true,
      hidden: ctx.animate ? (r) => r === i : undefined,
      tip: (r, c, v) => {
        const ts = row(tr.weights, r).map((a, j) => `${fmt(a, 3)}·${fmt(at(tr.V, j, c))}`);
        const shown = ts.length > 8 ? ts.slice(0, 8).concat("…") : ts;
        return `A(${tokenName(ctx, r)})[${c}] = Σ<sub>j</sub> α${sub(r)}<sub>j</sub> v<sub>j</sub>[${c}]<br>= ${shown.join(" + ")} = <b>${fmt(v, 4)}</b>${CLICK_FOR_WORK}`;
      },
      work: (r, c, v) =>
        workedSum(
          `A(${tokenName(ctx, r)})[${c}] = Σ<sub>j</sub> α${sub(r)}<sub>j</sub> v<sub>j</sub>[${c}]: each weight of row ${r} times column ${c} of its value row`,
          row(tr.weights, r).map((a, j) => ({
            label: `α${sub(r)}${sub(j)} · v(${escapeHtml(labels[j])})[${c}]:`,
            a,
            b: at(tr.V, j, c),
          })),
          v,
        ),
    });
    outlineRow(g, O, i, dV);
    const height = Math.max(Wv.height, V.height, O.height);
    const eh = drawExpansion(g, ctx, i, height + 18);
    let lh = weightLegend(g, 8, height + 18 + eh + 8);
    lh = Math.max(lh, signedLegend(g, 260, height + 18 + eh + 8, m, "value"));
    let duration = 0;
    if (ctx.animate) {
      const tspans = g.selectAll<SVGTSpanElement, unknown>("[data-testid=expansion] tspan");
      tspans
        .attr("opacity", 0)
        .transition()
        .delay((_d, k) => dur(300 + k * 500))
        .duration(dur(300))
        .attr("opacity", 1);
      O.reveal((r) => (r === i ? dur(300 + tspans.size() * 500) : -1), dur(300));
      duration = dur(600 + tspans.size() * 500);
    }
    return { width: Math.max(x + O.width, 560), height: height + 18 + eh + 8 + lh, duration };
  },
};
