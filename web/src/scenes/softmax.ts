// Step 6: softmax per row; each row sums to 1.
import { fmt, shape, sub } from "../format";
import { dur } from "../motion";
import { SEED001 } from "../presets";
import { diverging, sequential } from "../draw/colors";
import { signedLegend, weightLegend } from "../draw/legend";
import { drawMatrix } from "../draw/heatmap";
import { sharesNotAddingUp } from "../draw/numbers";
import { commonTop } from "../draw/labels";
import { outlineRow } from "../draw/outline";
import { op } from "../draw/text";
import {
  at,
  CLICK_FOR_WORK,
  fitCell,
  headLabel,
  maxAbsFinite,
  row,
  scaledFormula,
  seedNote,
  selectedQuery,
  tokenLabels,
  tokenName,
  vec,
  type Scene,
} from "./common";
import { trainedOf } from "../trained";

/** Rows whose keys are all masked: softmax has nothing to share out, so attnkit gives them 0 (not NaN). */
function emptyRows(ctx: Parameters<Scene["caption"]>[0]): string {
  const sums = ctx.item.rowSums[ctx.state.head];
  const rows: number[] = [];
  for (let r = 0; r < sums.rows; r++) if (Math.abs(at(sums, r, 0)) < 0.5) rows.push(r);
  if (!rows.length) return "";
  const which = rows.length === 1 ? `row ${rows[0]}` : `rows ${rows.join(", ")}`;
  return `, except <b data-testid="empty-rows">${which}</b>: every key of ${rows.length === 1 ? "that query" : "those queries"} is masked, so there is nothing to share out and attnkit gives weight 0 everywhere (sum 0, not NaN)`;
}

/** In trained mode: how far these weights are from the model's own forward pass (a check, not a number shown). */
function trainedCheck(ctx: Parameters<Scene["caption"]>[0]): string {
  const t = trainedOf(ctx.state);
  if (!t) return "";
  const T = ctx.cfg.T;
  const h = ctx.state.head;
  const own = t.weights.data.subarray(h * T * T, (h + 1) * T * T);
  const mine = ctx.trace.weights.data;
  let d = 0;
  for (let i = 0; i < own.length; i++) d = Math.max(d, Math.abs(own[i] - mine[i]));
  return `<p class="shapes" data-testid="trained-check">the trained model's own forward pass gave this head's weights too: ${d === 0 ? "they are these, bit for bit" : `they differ from these by at most ${d.toExponential(1)}`}</p>`;
}

/**
 * The worked arithmetic of weight α_ic (the panel a click opens), from attnkit's scores s and
 * weights a of row i: e_j = exp(s_ij − m_i) for each key j (m_i the row's largest score,
 * which changes no weight and keeps exp from overflowing), their sum Σ, and the cell's share
 * e_c / Σ = α_ic. Every number is attnkit's: the key with the largest score has e = 1, so
 * Σ = 1 / its weight and e_j = α_ij Σ; the page computes no softmax of its own.
 */
function workedSoftmax(s: number[], a: number[], i: number, c: number, names: string[]): string {
  const v = a[c];
  const open = s.filter((x) => x !== -Infinity);
  if (!open.length)
    return `<div class="worked-what">every key of row ${i} is masked: there is nothing to share out, and attnkit gives every weight of the row 0</div>
      <div class="worked-total">α${sub(i)}${sub(c)} = <b data-testid="worked-total">${fmt(v, 4)}</b></div>`;
  const m = Math.max(...open);
  const sum = 1 / a[s.indexOf(m)];
  const e = a.map((w) => w * sum);
  const lines = s.map(
    (x, j) =>
      `<span class="worked-term" data-testid="worked-term"><span class="worked-label">j = ${j} (“${names[j]}”):</span> ${
        x === -Infinity
          ? `masked: exp(−∞) = <b>${fmt(0, 4)}</b>`
          : `exp(${fmt(x, 4)} − ${fmt(m, 4)}) = <b>${fmt(e[j], 4)}</b>`
      }</span>`,
  );
  return `<div class="worked-what">α${sub(i)}${sub(c)} = exp(s${sub(i)}${sub(c)} − m${sub(i)}) / Σ<sub>j</sub> exp(s${sub(i)}<sub>j</sub> − m${sub(i)}), where m${sub(i)} = ${fmt(m, 4)} is the row's largest score (subtracting it changes no weight)</div>
    <div class="worked-terms">${lines.join("")}</div>
    <div class="worked-total">Σ = <b data-testid="worked-sum">${fmt(sum, 4)}</b>; α${sub(i)}${sub(c)} = ${fmt(e[c], 4)} / ${fmt(sum, 4)} = <b data-testid="worked-total">${fmt(v, 4)}</b></div>`;
}

/** Sorted indices as ranges: 0–3, 5. */
function ranges(ks: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < ks.length;) {
    let j = i;
    while (j + 1 < ks.length && ks[j + 1] === ks[j] + 1) j++;
    out.push(j > i + 1 ? `${ks[i]}–${ks[j]}` : j > i ? `${ks[i]}, ${ks[j]}` : `${ks[i]}`);
    i = j + 1;
  }
  return out.join(", ");
}

/**
 * Rows of weights whose cells, at two decimals, cannot add up to their Σ without showing
 * equal weights apart (seven weights of 1/7 show as 0.14): said, with the sum they show.
 */
function roundingNote(ctx: Parameters<Scene["caption"]>[0]): string {
  const w = ctx.trace.weights;
  const rows = sharesNotAddingUp(w.data, w.rows, w.cols, 2, "rows");
  if (!rows.length) return "";
  const r0 = rows[0];
  const shown = row(w, r0).reduce((a, v) => a + Number(v.toFixed(2)), 0);
  const which =
    rows.length === w.rows
      ? "no row of these weights can add up to its Σ"
      : `each row of weights adds up to its Σ except ${rows.length === 1 ? `row ${r0}` : `rows ${ranges(rows)}`}`;
  return `<p data-testid="rounding-note">Rounded to two decimals, ${which}: equal weights must show equal, so their cells are rounded one by one (row ${r0} shows a sum of ${fmt(shown)}; hover a cell for 4 decimals).</p>`;
}

export const softmaxScene: Scene = {
  title: "Softmax per row",
  caption: (ctx) => {
    const { T } = ctx.cfg;
    let seed = "";
    if (ctx.cfg.seedMode) {
      const col0 = SEED001.softmax.map((r) => r[0]);
      seed =
        seedNote(`the seed normalises <b>columns</b> (its column 0: ${vec(col0, 3)} sums to 1, its row 0 sums to ${SEED001.softmax[0][0]}).
        Softmax runs over each query's <b>row</b> of keys: with the causal mask, query 0 sees only key 0, so row 0 here is ${vec(row(ctx.trace.weights, 0), 3)}.`);
    }
    return `<p>Each row becomes a probability distribution over the keys:
      <b>α<sub>ij</sub> = exp(s<sub>ij</sub>) / Σ<sub>j′</sub> exp(s<sub>ij′</sub>)</b>${ctx.state.temperature !== 1 ? `, where the scores are <b data-testid="softmax-tau">s<sub>ij</sub> = ${scaledFormula(ctx)}</b> (step 4: a temperature above 1 flattens each row, below 1 sharpens it)` : ""}. Masked cells (−∞) get weight 0; the Σ column shows every row sums to 1${headLabel(ctx)}${emptyRows(ctx)}.</p>
      <p class="shapes">softmax over the last axis: ${shape("T", "T")} → ${shape(T, T)}; row sums ${shape(T, 1)} = weights × 1</p>${roundingNote(ctx)}${seed}${trainedCheck(ctx)}`;
  },
  render: (g, ctx) => {
    const { T } = ctx.cfg;
    const tr = ctx.trace;
    const sums = ctx.item.rowSums[ctx.state.head];
    const i = selectedQuery(ctx);
    const labels = tokenLabels(ctx.item);
    const cell = fitCell(2 * T + 2, T, ctx, 330, 170);
    // One top for all three grids, so that each row sum sits beside its own row.
    const top = commonTop(cell, labels);
    const m = Math.max(maxAbsFinite(tr.maskedScores), 1e-6);
    const A = drawMatrix(g, {
      top,
      id: "masked6",
      title: "masked scores",
      shape: shape(T, T),
      m: tr.maskedScores,
      x: 0,
      y: 0,
      cell,
      color: diverging(m),
      rowLabels: labels,
      colLabels: labels,
      rowAxis: "query i",
      tip: (r, c, v) => `s${sub(r)}${sub(c)} = <b>${fmt(v, 4)}</b>`,
    });
    let x = A.width + 8;
    op(g, x + 58, A.gy + (T * cell) / 2, "softmax →");
    x += 120;
    const W = drawMatrix(g, {
      top,
      id: "weights",
      title: "weights α",
      shape: shape(T, T),
      m: tr.weights,
      x,
      y: 0,
      cell,
      color: sequential(),
      colLabels: labels,
      digits: 2,
      sums: "rows",
      colAxis: "key j",
      hidden: ctx.animate ? () => true : undefined,
      tip: (r, c, v) =>
        `α${sub(r)}${sub(c)} = softmax(row ${r})[${c}] = <b>${fmt(v, 4)}</b><br>“${tokenName(ctx, r)}” gives ${fmt(v * 100, 1)}% of its attention to “${tokenName(ctx, c)}”${at(tr.maskedScores, r, c) === -Infinity ? "<br>(masked: exp(−∞) = 0)" : ""}<br>row ${r} sums to ${fmt(at(sums, r, 0), 4)}${CLICK_FOR_WORK}`,
      work: (r, c) =>
        workedSoftmax(
          row(tr.maskedScores, r),
          row(tr.weights, r),
          r,
          c,
          labels.map((_, j) => tokenName(ctx, j)),
        ),
    });
    x += W.width + cell * 0.3;
    const S = drawMatrix(g, {
      top,
      id: "rowsums",
      title: "Σ",
      m: sums,
      x,
      y: 0,
      cell,
      color: sequential(),
      digits: 2,
      rowLabels: labels,
      labelsRight: true,
      colLabels: [""],
      hidden: ctx.animate ? () => true : undefined,
      tip: (r, _c, v) => `Σ<sub>j</sub> α${sub(r)}<sub>j</sub> = <b>${fmt(v, 6)}</b>`,
    });
    outlineRow(g, W, i, T);
    const height = Math.max(A.height, W.height, S.height);
    let lh = signedLegend(g, 8, height + 14, m, "score", true);
    lh = Math.max(lh, weightLegend(g, 340, height + 14));
    let duration = 0;
    if (ctx.animate) {
      W.reveal((r) => dur(200 + r * 120), dur(300));
      S.reveal((r) => dur(350 + r * 120), dur(300));
      duration = dur(350 + T * 120 + 300);
    }
    return { width: x + S.width, height: height + 14 + lh, duration };
  },
};
