// Step 3: Q K^T. A query token's dot product with each key fills one row of scores; then the whole matrix.
import { fmt, maxAbs, shape, sub } from "../format";
import { dur } from "../motion";
import { SEED001 } from "../presets";
import { diverging } from "../draw/colors";
import { signedLegend } from "../draw/legend";
import { drawMatrix } from "../draw/heatmap";
import { commonTop } from "../draw/labels";
import { outlineRow } from "../draw/outline";
import { op } from "../draw/text";
import {
  CLICK_FOR_WORK,
  dotTerms,
  expandDot,
  fitCell,
  headLabel,
  qkLabels,
  row,
  seedNote,
  selectedQuery,
  tokenLabels,
  tokenName,
  transposed,
  vec,
  workedSum,
  type Scene,
  sweepColumns,
} from "./common";

export const scoresScene: Scene = {
  title: "Scores Q Kᵀ",
  caption: (ctx) => {
    const { T, dK } = ctx.cfg;
    const i = selectedQuery(ctx);
    let seed = "";
    if (ctx.cfg.seedMode) {
      seed =
        seedNote(`with the printed q<sub>0</sub> and K<sup>T</sup>, row 0 of Q K<sup>T</sup> is ${vec(row(ctx.trace.rawScores, 0))}.
        The seed prints ${vec(SEED001.QKT[0])}: only its first three entries follow; its rows 1–5 do not follow from its own Q and K<sup>T</sup>.`);
    }
    return `<p>The score of query token <i>i</i> against key token <i>j</i> is the dot product <b>q<sub>i</sub> · k<sub>j</sub></b>: how well what <i>i</i> looks for matches what <i>j</i> offers.
      Query shown: <b>“${tokenName(ctx, i)}”</b> (i = ${i}; click a row of Q or use ↑/↓ to pick another)${headLabel(ctx)}.</p>
      <p class="shapes">Q K<sup>T</sup>: ${shape("T", "d_k")} × ${shape("d_k", "T")} → ${shape("T", "T")} = ${shape(T, dK)} × ${shape(dK, T)} → ${shape(T, T)}</p>${seed}`;
  },
  render: (g, ctx) => {
    const { T, dK } = ctx.cfg;
    const tr = ctx.trace;
    const i = selectedQuery(ctx);
    const labels = tokenLabels(ctx.item);
    const KT = transposed(tr.K);
    const cell = fitCell(dK + 2 * T + 4, Math.max(T, dK) + 0.5 * T, ctx, 160, 170);
    const dims = qkLabels(ctx, ctx.state.head);
    const top = commonTop(cell, labels, dims);
    const mQK = Math.max(maxAbs(tr.Q.data), maxAbs(tr.K.data), 1e-6);
    const mS = Math.max(maxAbs(tr.rawScores.data), 1e-6);
    const Qv = drawMatrix(g, {
      minTop: top,
      id: "Q3",
      title: "Q",
      shape: shape(T, dK),
      m: tr.Q,
      x: 0,
      y: 0,
      cell,
      color: diverging(mQK),
      rowLabels: labels,
      colLabels: dims,
      rowAxis: "query i",
      tip: (r, c, v) =>
        `q${sub(r)}[${c}] = <b>${fmt(v, 4)}</b><br><i>click to make “${tokenName(ctx, r)}” the query</i>`,
      onCell: (r) => ctx.set({ query: r }),
    });
    let x = Qv.width + cell * 0.4;
    op(g, x + cell * 0.6, Qv.gy + (T * cell) / 2, "×");
    x += cell * 1.6;
    const Kv = drawMatrix(g, {
      minTop: top,
      id: "KT",
      title: "Kᵀ",
      shape: shape(dK, T),
      m: KT,
      x,
      y: 0,
      cell,
      color: diverging(mQK),
      colLabels: labels,
      rowLabels: dims,
      colAxis: "key j",
      tip: (r, c, v) => `k${sub(c)}[${r}] = <b>${fmt(v, 4)}</b> (key “${tokenName(ctx, c)}”)`,
    });
    x += Kv.width + cell * 0.4;
    const yS = 0;
    op(g, x + cell * 0.6, Qv.gy + (T * cell) / 2, "=");
    x += Math.max(cell * 1.6, 22);
    // The result may use bigger cells than the operands.
    const cellS = Math.max(
      cell,
      Math.min(
        44,
        Math.floor((ctx.width - x - 110) / T),
        Math.floor((Math.max(ctx.height, 320) - 150) / T),
      ),
    );
    const S = drawMatrix(g, {
      minTop: top,
      id: "scores",
      title: "scores = Q Kᵀ",
      shape: shape(T, T),
      m: tr.rawScores,
      x,
      y: yS,
      cell: cellS,
      color: diverging(mS),
      rowLabels: labels,
      colLabels: labels,
      labelsRight: true,
      hidden: ctx.animate ? () => true : undefined,
      tip: (r, c, v) =>
        `q${sub(r)} · k${sub(c)} (“${tokenName(ctx, r)}” · “${tokenName(ctx, c)}”)<br>= ${expandDot(row(tr.Q, r), row(tr.K, c), v)}${CLICK_FOR_WORK}`,
      work: (r, c, v) =>
        workedSum(
          `score = q${sub(r)} · k${sub(c)} = Σ<sub>k</sub> q${sub(r)}[k] k${sub(c)}[k] (“${tokenName(ctx, r)}” · “${tokenName(ctx, c)}”)`,
          dotTerms(row(tr.Q, r), row(tr.K, c)),
          v,
        ),
      onCell: (r) => ctx.set({ query: r }),
    });
    const height = Math.max(Qv.height, Kv.height, S.height);
    let lh = signedLegend(g, 8, height + 14, mQK, "Q, K value");
    lh = Math.max(lh, signedLegend(g, 260, height + 14, mS, "score"));
    let duration = 0;
    const hl = outlineRow(g, Qv, i, dK);
    if (ctx.animate) {
      const step = Math.max(90, Math.min(420, 3200 / T));
      const rest = sweepColumns(g, Kv, dK, T, step);
      S.reveal(
        (r, c) => (r === i ? dur(c * step + step * 0.5) : dur(rest + r * 40)),
        (r) => (r === i ? dur(200) : dur(250)),
      );
      duration = dur(rest + T * 40 + 250);
    }
    outlineRow(g, S, i, T);
    hl.raise();
    return { width: x + S.width, height: height + 14 + lh, duration };
  },
};
