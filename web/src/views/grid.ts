// All heads at a glance: a grid of small attention maps.
import { fmt, shape, sub } from "../format";
import { kvGroup } from "../model";
import { headName, headNamesHtml, tokenLabels, tokenName, type Scene } from "../scenes/common";
import { headColor, sequential } from "../draw/colors";
import { weightLegend } from "../draw/legend";
import { drawMatrix } from "../draw/heatmap";

export const gridView: Scene = {
  title: "All heads",
  caption: (
    ctx,
  ) => `<p>The attention weights of ${ctx.cfg.heads === 1 ? "the only head (set heads above 1 to compare several)" : `all <b>${ctx.cfg.heads}</b> heads side by side`} (rows: queries, columns: keys). Different heads learn different relations; click a map to open that head in the steps.</p>
    <p class="shapes">weights ${shape("h", "T", "T")} = ${shape(ctx.cfg.heads, ctx.cfg.T, ctx.cfg.T)}</p>${headNamesHtml(ctx)}`,
  render: (g, ctx) => {
    const { T, heads } = ctx.cfg;
    const labels = tokenLabels(ctx.item);
    const perRow = Math.max(1, Math.min(heads, Math.floor(ctx.width / 230)));
    const cell = Math.max(
      2,
      Math.min(22, Math.floor((ctx.width / perRow - 40) / T) - (heads > 1 ? 0 : 0)),
    );
    let x = 0,
      y = 0,
      rowH = 0,
      maxW = 0;
    for (let h = 0; h < heads; h++) {
      const v = drawMatrix(g, {
        id: `grid-${h}`,
        title: `head ${h}${ctx.cfg.kvHeads !== heads ? ` · kv ${kvGroup(ctx.cfg, h)}` : ""}`,
        m: ctx.item.heads[h].weights,
        x,
        y,
        cell,
        color: sequential(),
        sums: "rows",
        rowLabels: h % perRow === 0 && cell >= 8 ? labels : undefined,
        colLabels: cell >= 14 ? labels : undefined,
        tip: (r, c, val) =>
          `head ${h}${headName(ctx, h) ? ` (${headName(ctx, h)})` : ""}: α${sub(r)}${sub(c)} = <b>${fmt(val, 4)}</b><br>“${tokenName(ctx, r)}” → “${tokenName(ctx, c)}”`,
        onCell: () => ctx.set({ head: h, view: "steps", step: 6 }),
      });
      v.g.attr("data-head", h).select(".m-title").style("fill", headColor(h));
      x += v.width + 18;
      rowH = Math.max(rowH, v.height);
      maxW = Math.max(maxW, x);
      if ((h + 1) % perRow === 0) {
        x = 0;
        y += rowH + 14;
        rowH = 0;
      }
    }
    const bottom = y + rowH + 14;
    const lh = weightLegend(g, 8, bottom);
    return { width: maxW, height: bottom + lh, duration: 0 };
  },
};
