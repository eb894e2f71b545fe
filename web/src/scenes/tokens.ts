// Step 1: tokens -> embeddings X [T, d_model] (+ positional encodings).
import { count, fmt, maxAbs, shape, sub } from "../format";
import { FEATURES } from "../lexicon";
import { dur } from "../motion";
import { diverging } from "../draw/colors";
import { signedLegend } from "../draw/legend";
import { drawMatrix } from "../draw/heatmap";
import { op } from "../draw/text";
import { trainedOf } from "../trained";
import { dimLabels, fitCell, tokenLabels, tokenName, type Scene } from "./common";

export const tokensScene: Scene = {
  title: "Tokens → embeddings",
  caption: (ctx) => {
    const { T, dModel } = ctx.cfg;
    const pe = ctx.state.pe;
    const trained = trainedOf(ctx.state);
    if (trained)
      return `<p>${
        trained.task === "language"
          ? `The sentence, as the language model reads it: <b>T = ${T}</b> characters (␣ a space; the small number after each is the position).`
          : `The sample sequence of the task “${trained.task}”: <b>T = ${T}</b> tokens, each a token id (the separator 0 shows as “|”; the small number after it is the position).`
      }
      Row <b>x<sub>i</sub></b> of X is what layer ${trained.layer + 1}'s attention reads at position <i>i</i>: the learned token and position embeddings${trained.layer > 0 ? " plus the outputs of the layers below" : ""}, ${count(trained.step)} training step${trained.step === 1 ? "" : "s"} in.</p>
      <p class="shapes">X ${shape("T", "d_model")} = ${shape(T, dModel)}, given by the trained model (not editable).</p>`;
    const src = ctx.cfg.seedMode
      ? "The worked example of “2.3 Single-attention head” prints X directly (6 tokens, d_model = 4)."
      : ctx.state.emb === "features"
        ? `Each word is looked up in a small lexicon whose ${FEATURES.length} dimensions have names; unknown words (<i class="unknown">italic</i>) get a deterministic hashed vector.`
        : `Each word gets a seeded random vector of d_model = ${dModel} numbers (same word, same vector).`;
    return `<p>The text is split into <b>T = ${T}</b> tokens; token <i>i</i> becomes a row <b>x<sub>i</sub></b>.
      ${src} ${pe ? "The sinusoidal positional encoding P (Vaswani et al.) is added: X = E + P." : ""}</p>
      <p class="shapes">X ${shape("T", "d_model")} = ${shape(T, dModel)}${pe ? ` = E ${shape(T, dModel)} + P ${shape(T, dModel)}` : ""}. Click any cell of X to edit it.</p>`;
  },
  render: (g, ctx) => {
    const { T, dModel } = ctx.cfg;
    const it = ctx.item;
    const pe = ctx.state.pe;
    const units = pe ? dModel * 3 + 4 : dModel;
    const cell = fitCell(units, T, ctx, pe ? 120 : 130, 160);
    const m = Math.max(maxAbs(it.X.data), maxAbs(it.E.data), 1e-6);
    const color = diverging(m);
    const labels = tokenLabels(it);
    const cols = dimLabels(ctx.cfg, dModel);
    const trained = trainedOf(ctx.state);
    const tokenTip = (r: number) =>
      trained
        ? `the residual stream at position ${r} (trained, step ${trained.step})`
        : it.unknown[r]
          ? "unknown word: hashed vector"
          : ctx.cfg.seedMode
            ? "printed in the worked example"
            : ctx.state.emb === "features"
              ? "from the lexicon"
              : `random, seed ${ctx.state.seed}`;
    let x = 0;
    const parts = [];
    if (pe) {
      const e = drawMatrix(g, {
        id: "E",
        title: "E",
        shape: shape(T, dModel),
        m: it.E,
        x,
        y: 0,
        cell,
        color,
        rowLabels: labels,
        colLabels: cols,
        rowLabelClass: (r) => (it.unknown[r] ? "unknown" : ""),
        tip: (r, c, v) =>
          `E[${tokenName(ctx, r)}][${cols[c]}] = <b>${fmt(v, 4)}</b><br>${tokenTip(r)}`,
      });
      x += e.width + cell * 0.5;
      op(g, x + cell * 0.5, e.gy + (T * cell) / 2, "+");
      x += cell * 1.5;
      const p = drawMatrix(g, {
        id: "P",
        title: "P",
        shape: shape(T, dModel),
        m: it.P,
        x,
        y: 0,
        cell,
        color,
        colLabels: cols.map((_, i) => String(i)),
        tip: (r, c, v) =>
          `PE(pos ${r}, ${c}) = ${c % 2 === 0 ? "sin" : "cos"}(${r} / 10000^(${c - (c % 2)}/${dModel})) = <b>${fmt(v, 4)}</b>`,
      });
      x += p.width + cell * 0.5;
      op(g, x + cell * 0.5, e.gy + (T * cell) / 2, "=");
      x += cell * 1.5;
      parts.push(e, p);
    }
    const X = drawMatrix(g, {
      id: "X",
      title: "X",
      shape: shape(T, dModel),
      m: it.X,
      x,
      y: 0,
      cell,
      color,
      rowLabels: pe ? undefined : labels,
      colLabels: cols,
      rowAxis: pe ? undefined : "token i",
      colAxis: ctx.cfg.featureNames ? "feature (d_model)" : "dimension (d_model)",
      rowLabelClass: (r) =>
        it.unknown[r] ? "unknown" : it.item.tokens[r] === "[PAD]" ? "tok-pad" : "",
      tip: (r, c, v) => {
        const source =
          ctx.state.edits[`X${ctx.itemIndex}:${r}:${c}`] !== undefined
            ? "edited by you"
            : pe
              ? `E ${fmt(it.E.data[r * dModel + c], 3)} + P ${fmt(it.P.data[r * dModel + c], 3)}`
              : tokenTip(r);
        return `x${sub(r)}[${cols[c]}] = <b>${fmt(v, 4)}</b> (token “${tokenName(ctx, r)}”)<br>${source}${trained ? "" : "<br><i>click to edit</i>"}`;
      },
      onCell: trained
        ? undefined
        : (r, c, e) => ctx.edit(`X${ctx.itemIndex}`, r, c, it.X.data[r * dModel + c], e),
      hidden: ctx.animate ? () => true : undefined,
    });
    const height = Math.max(X.height, ...parts.map((p) => p.height));
    const lh = signedLegend(g, 8, height + 14, m, "value (diverging: blue < 0 < red)");
    let duration = 0;
    if (ctx.animate) {
      X.reveal((r) => dur(r * 60), dur(250));
      duration = dur(T * 60 + 250);
    }
    return { width: x + X.width, height: height + 14 + lh, duration };
  },
};
