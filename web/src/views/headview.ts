// Head view (seed 000's figure): tokens in two columns, one line per (query, key)
// pair whose opacity is the attention weight, one colour per head. Hover a token to
// isolate its lines; click a head's chip to hide or show it.
import { fmt } from "../format";
import { at, tokenLabels, type Scene, type SceneCtx } from "../scenes/common";
import { headColor } from "./colors";
import { hideTip, showTip } from "./tooltip";

const hidden = new Set<number>();

export function toggleHead(h: number): void {
  if (hidden.has(h)) hidden.delete(h);
  else hidden.add(h);
}

export const headView: Scene = {
  title: "Head view",
  caption: (ctx: SceneCtx) => {
    const chips = ctx.item.heads.map((_, h) =>
      `<button type="button" class="chip head-chip${hidden.has(h) ? "" : " on"}" style="--head:${headColor(h)}" data-toggle-head="${h}" aria-pressed="${!hidden.has(h)}">head ${h}</button>`).join(" ");
    return `<p>Each line joins a token being updated (left) to a token it attends to (right); its opacity is the weight α<sub>ij</sub>, its colour the head.
      Hover a token to isolate its lines. Heads: ${chips}</p>`;
  },
  render: (g, ctx) => {
    const { T } = ctx.cfg;
    const labels = tokenLabels(ctx.item);
    const rowH = Math.max(12, Math.min(34, Math.floor((Math.max(ctx.height, 360) - 60) / T)));
    const colW = Math.min(130, Math.max(100, Math.max(...labels.map((l) => l.length)) * 7.5));
    const gap = Math.min(260, Math.max(140, ctx.width - 2 * colW - 40));
    const font = Math.min(13, rowH * 0.7);
    const top = 24;
    const y = (i: number) => top + i * rowH + rowH / 2;
    g.append("text").attr("class", "m-axis-title").attr("x", colW - 8).attr("y", 10).attr("text-anchor", "end").text("query (updated)");
    g.append("text").attr("class", "m-axis-title").attr("x", colW + gap + 8).attr("y", 10).text("key (attended to)");
    const lines = g.append("g").attr("class", "hv-lines");
    type L = { h: number; i: number; j: number; w: number };
    const data: L[] = [];
    ctx.item.heads.forEach((tr, h) => {
      if (hidden.has(h)) return;
      for (let i = 0; i < T; i++) for (let j = 0; j < T; j++) data.push({ h, i, j, w: at(tr.weights, i, j) });
    });
    const sel = lines.selectAll<SVGLineElement, L>("line").data(data.filter((d) => d.w > 0.005)).join("line")
      .attr("x1", colW).attr("x2", colW + gap).attr("y1", (d) => y(d.i)).attr("y2", (d) => y(d.j))
      .attr("stroke", (d) => headColor(d.h)).attr("stroke-width", 3).attr("stroke-opacity", (d) => d.w)
      .attr("data-value", (d) => String(d.w)).attr("data-head", (d) => d.h);
    const isolate = (side: "i" | "j" | null, k: number) =>
      sel.attr("display", (d) => (side === null || d[side] === k ? null : "none"));
    const tokens = (side: "i" | "j") => {
      const x = side === "i" ? colW - 8 : colW + gap + 8;
      g.append("g").selectAll("text").data(labels).join("text")
        .attr("x", x).attr("y", (_d, k) => y(k)).attr("dominant-baseline", "central")
        .attr("text-anchor", side === "i" ? "end" : "start").attr("font-size", font).style("cursor", "default")
        .attr("data-testid", (_d, k) => `hv-${side === "i" ? "q" : "k"}-${k}`)
        .text((d) => d)
        .on("mouseenter", (e: MouseEvent, d) => {
          const k = labels.indexOf(d);
          isolate(side, k);
          const parts = ctx.item.heads.map((tr, h) => hidden.has(h) ? "" : `head ${h}: ${side === "i" ? "top" : "from"} ${topOf(tr.weights, k, side, labels)}`).filter(Boolean);
          showTip(e, `<b>${d}</b><br>${parts.join("<br>")}`);
        })
        .on("mouseleave", () => { isolate(null, 0); hideTip(); });
    };
    tokens("i");
    tokens("j");
    return { width: 2 * colW + gap + 30, height: top + T * rowH + 10, duration: 0 };
  },
};

function topOf(w: { data: Float32Array; rows: number; cols: number }, k: number, side: "i" | "j", labels: string[]): string {
  const vals = Array.from({ length: w.cols }, (_, j) => ({ j, v: side === "i" ? at(w, k, j) : at(w, j, k) }));
  vals.sort((a, b) => b.v - a.v);
  return vals.slice(0, 3).map((x) => `${labels[x.j]} ${fmt(x.v, 2)}`).join(", ");
}
