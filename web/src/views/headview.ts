// Head view (seed 000's figure): tokens in two columns, one line per (query, key)
// pair whose opacity is the attention weight, one colour per head. Hover a token to
// isolate its lines; click a head's chip to hide or show it (kept in the URL).
// The lines are drawn on a canvas (T = 64 with 8 heads is 32k lines).
import { fmt } from "../format";
import { at, tokenLabels, type Scene, type SceneCtx } from "../scenes/common";
import { hiddenHeads, type State } from "../state";
import { headColor } from "./colors";
import { hideTip, showTip } from "./tooltip";

/** The state patch that hides or shows head h. */
export function toggleHead(s: State, h: number): Partial<State> {
  const hidden = hiddenHeads(s);
  if (hidden.has(h)) hidden.delete(h);
  else hidden.add(h);
  return { hidden: [...hidden].sort((a, b) => a - b).join("_") };
}

export const headView: Scene = {
  title: "Head view",
  caption: (ctx: SceneCtx) => {
    const hidden = hiddenHeads(ctx.state);
    const chips = ctx.item.heads.map((_, h) =>
      `<button type="button" class="chip head-chip${hidden.has(h) ? "" : " on"}" style="--head:${headColor(h)}" data-toggle-head="${h}" data-testid="head-chip-${h}" aria-pressed="${!hidden.has(h)}">head ${h}</button>`).join(" ");
    return `<p>Each line joins a token being updated (left) to a token it attends to (right); its opacity is the weight α<sub>ij</sub>, its colour the head.
      Hover a token to isolate its lines. Heads: ${chips}</p>`;
  },
  render: (g, ctx) => {
    const { T } = ctx.cfg;
    const hidden = hiddenHeads(ctx.state);
    const labels = tokenLabels(ctx.item);
    const rowH = Math.max(12, Math.min(34, Math.floor((Math.max(ctx.height, 360) - 60) / T)));
    const colW = Math.min(130, Math.max(100, Math.max(...labels.map((l) => l.length)) * 7.5));
    const gap = Math.min(260, Math.max(140, ctx.width - 2 * colW - 40));
    const font = Math.min(13, rowH * 0.7);
    const top = 24;
    const y = (i: number) => top + i * rowH + rowH / 2;
    g.append("text").attr("class", "m-axis-title").attr("x", colW - 8).attr("y", 10).attr("text-anchor", "end").text("query (updated)");
    g.append("text").attr("class", "m-axis-title").attr("x", colW + gap + 8).attr("y", 10).text("key (attended to)");
    const H = top + T * rowH + 10;
    const dpr = window.devicePixelRatio || 1;
    const fo = g.append("foreignObject").attr("x", colW).attr("width", gap).attr("height", H).attr("data-testid", "hv-lines");
    const canvas = fo.append("xhtml:canvas").attr("width", Math.round(gap * dpr)).attr("height", Math.round(H * dpr))
      .style("width", `${gap}px`).style("height", `${H}px`).style("display", "block").node() as HTMLCanvasElement;
    const visible = ctx.item.heads.map((_, h) => h).filter((h) => !hidden.has(h));
    fo.attr("data-heads", visible.join(" "));
    const draw = (side: "i" | "j" | null, k: number) => {
      const c = canvas.getContext("2d");
      if (!c) return;
      c.setTransform(dpr, 0, 0, dpr, 0, 0);
      c.clearRect(0, 0, gap, H);
      c.lineWidth = 3;
      // One path per head and opacity level (32 levels): a few hundred strokes, not T²·h.
      const LEVELS = 32;
      for (const h of visible) {
        const w = ctx.item.heads[h].weights;
        c.strokeStyle = headColor(h);
        const paths: (Path2D | undefined)[] = [];
        for (let i = 0; i < T; i++) {
          if (side === "i" && i !== k) continue;
          for (let j = 0; j < T; j++) {
            if (side === "j" && j !== k) continue;
            const a = at(w, i, j);
            if (a <= 0.005) continue;
            const lv = Math.max(1, Math.round(Math.min(1, a) * LEVELS));
            const p = (paths[lv] ??= new Path2D());
            p.moveTo(0, y(i));
            p.lineTo(gap, y(j));
          }
        }
        paths.forEach((p, lv) => {
          if (!p) return;
          c.globalAlpha = lv / LEVELS;
          c.stroke(p);
        });
      }
      c.globalAlpha = 1;
    };
    draw(null, 0);
    const tokens = (side: "i" | "j") => {
      const x = side === "i" ? colW - 8 : colW + gap + 8;
      g.append("g").selectAll("text").data(labels).join("text")
        .attr("x", x).attr("y", (_d, k) => y(k)).attr("dominant-baseline", "central")
        .attr("text-anchor", side === "i" ? "end" : "start").attr("font-size", font).style("cursor", "default")
        .attr("data-testid", (_d, k) => `hv-${side === "i" ? "q" : "k"}-${k}`)
        .text((d) => d)
        .on("mouseenter", (e: MouseEvent, d) => {
          const k = labels.indexOf(d);
          draw(side, k);
          const parts = ctx.item.heads.map((tr, h) => hidden.has(h) ? "" : `head ${h}: ${side === "i" ? "top" : "from"} ${topOf(tr.weights, k, side, labels)}`).filter(Boolean);
          showTip(e, `<b>${d}</b><br>${parts.join("<br>")}`);
        })
        .on("mouseleave", () => { draw(null, 0); hideTip(); });
    };
    tokens("i");
    tokens("j");
    return { width: 2 * colW + gap + 30, height: H, duration: 0 };
  },
};

function topOf(w: { data: Float32Array; rows: number; cols: number }, k: number, side: "i" | "j", labels: string[]): string {
  const vals = Array.from({ length: w.cols }, (_, j) => ({ j, v: side === "i" ? at(w, k, j) : at(w, j, k) }));
  vals.sort((a, b) => b.v - a.v);
  return vals.slice(0, 3).map((x) => `${labels[x.j]} ${fmt(x.v, 2)}`).join(", ");
}
