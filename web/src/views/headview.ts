// Head view (seed 000's figure): tokens in two columns, one line per (query, key)
// pair whose opacity is the attention weight, one colour per head. Hover a token to
// isolate its lines; click a head's chip to hide or show it (kept in the URL).
// The lines are drawn on a canvas (T = 64 with 8 heads is 32k lines).
import { fmt } from "../format";
import { at, headName, tokenLabels, type Scene, type SceneCtx } from "../scenes/common";
import { hiddenHeads, type State } from "../state";
import { headColor } from "./colors";
import type { G } from "./matrix";
import { retained, setAttr } from "./retain";
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
      `<button type="button" class="chip head-chip${hidden.has(h) ? "" : " on"}" style="--head:${headColor(h)}" data-toggle-head="${h}" data-testid="head-chip-${h}" aria-pressed="${!hidden.has(h)}">head ${h}${headName(ctx, h) ? `: ${headName(ctx, h)}` : ""}</button>`).join(" ");
    return `<p>Each line joins a token being updated (left) to a token it attends to (right); its opacity is the weight α<sub>ij</sub>, its colour the head.
      Hover a token to isolate its lines. Heads: ${chips}</p>`;
  },
  render: (g, ctx) => {
    const { T } = ctx.cfg;
    const labels = tokenLabels(ctx.item);
    const rowH = Math.max(12, Math.min(34, Math.floor((Math.max(ctx.height, 360) - 60) / T)));
    const colW = Math.min(130, Math.max(100, Math.max(...labels.map((l) => l.length)) * 7.5));
    const gap = Math.min(260, Math.max(140, ctx.width - 2 * colW - 40));
    const H = TOP + T * rowH + 10;
    const dpr = window.devicePixelRatio || 1;
    // The labels, the canvas and its 2D context stay while the layout does; a redraw only strokes the lines again.
    const sig = [T, rowH, colW, gap, dpr, labels.join("\u0001")].join("|");
    const { entry } = retained<HeadViewState>(g.node()!, "headview", sig, () => buildHeadView(g, labels, rowH, colW, gap, H, dpr));
    const st = entry.state;
    st.ctx = ctx;
    const hidden = hiddenHeads(ctx.state);
    const visible = ctx.item.heads.map((_, h) => h).filter((h) => !hidden.has(h));
    setAttr(st.fo, "data-heads", visible.join(" "));
    drawLines(st, null, 0);
    return { width: 2 * colW + gap + 30, height: H, duration: 0 };
  },
};

const TOP = 24;

interface HeadViewState {
  fo: SVGForeignObjectElement;
  canvas: HTMLCanvasElement;
  c2d: CanvasRenderingContext2D | null;
  rowH: number;
  gap: number;
  H: number;
  dpr: number;
  /** The scene's latest context (the token labels' handlers read it). */
  ctx: SceneCtx | null;
  /** What the canvas shows: the weights, the visible heads and the isolated token. */
  drawn: { weights: Float32Array[]; visible: string; side: string } | null;
}

function buildHeadView(g: G, labels: string[], rowH: number, colW: number, gap: number, H: number, dpr: number): { node: SVGGElement; state: HeadViewState } {
  const root = g.append("g").attr("data-testid", "headview");
  const font = Math.min(13, rowH * 0.7);
  const y = (i: number) => TOP + i * rowH + rowH / 2;
  root.append("text").attr("class", "m-axis-title").attr("x", colW - 8).attr("y", 10).attr("text-anchor", "end").text("query (updated)");
  root.append("text").attr("class", "m-axis-title").attr("x", colW + gap + 8).attr("y", 10).text("key (attended to)");
  const fo = root.append("foreignObject").attr("x", colW).attr("width", gap).attr("height", H).attr("data-testid", "hv-lines");
  const canvas = fo.append("xhtml:canvas").attr("width", Math.round(gap * dpr)).attr("height", Math.round(H * dpr))
    .style("width", `${gap}px`).style("height", `${H}px`).style("display", "block").node() as HTMLCanvasElement;
  const st: HeadViewState = { fo: fo.node()!, canvas, c2d: null, rowH, gap, H, dpr, ctx: null, drawn: null };
  for (const side of ["i", "j"] as const) {
    const x = side === "i" ? colW - 8 : colW + gap + 8;
    root.append("g").selectAll("text").data(labels).join("text")
      .attr("x", x).attr("y", (_d, k) => y(k)).attr("dominant-baseline", "central")
      .attr("text-anchor", side === "i" ? "end" : "start").attr("font-size", font).style("cursor", "default")
      .attr("data-testid", (_d, k) => `hv-${side === "i" ? "q" : "k"}-${k}`)
      .text((d) => d)
      .on("mouseenter", (e: MouseEvent, d) => {
        const ctx = st.ctx;
        if (!ctx) return;
        const k = labels.indexOf(d);
        drawLines(st, side, k);
        const hidden = hiddenHeads(ctx.state);
        const parts = ctx.item.heads.map((tr, h) => hidden.has(h) ? "" : `head ${h}${headName(ctx, h) ? ` (${headName(ctx, h)})` : ""}: ${side === "i" ? "top" : "from"} ${topOf(tr.weights, k, side, labels)}`).filter(Boolean);
        showTip(e, `<b>${d}</b><br>${parts.join("<br>")}`);
      })
      .on("mouseleave", () => {
        drawLines(st, null, 0);
        hideTip();
      });
  }
  return { node: root.node()!, state: st };
}

/**
 * Strokes the lines of the visible heads (all, or only those of token k on one side),
 * unless the canvas already shows exactly these.
 */
function drawLines(st: HeadViewState, side: "i" | "j" | null, k: number): void {
  const ctx = st.ctx;
  if (!ctx) return;
  const { T } = ctx.cfg;
  const hidden = hiddenHeads(ctx.state);
  const visible = ctx.item.heads.map((_, h) => h).filter((h) => !hidden.has(h));
  const weights = ctx.item.heads.map((tr) => tr.weights.data);
  const key = { weights, visible: visible.join(" "), side: side ? `${side}${k}` : "" };
  const d = st.drawn;
  if (d && d.visible === key.visible && d.side === key.side && d.weights.length === weights.length &&
    d.weights.every((w, h) => w.length === weights[h].length && w.every((v, n) => v === weights[h][n]))) return;
  st.drawn = { ...key, weights: weights.map((w) => Float32Array.from(w)) };
  const c = (st.c2d ??= st.canvas.getContext("2d"));
  if (!c) return;
  const { rowH, gap, H, dpr } = st;
  const y = (i: number) => TOP + i * rowH + rowH / 2;
  c.setTransform(dpr, 0, 0, dpr, 0, 0);
  c.clearRect(0, 0, gap, H);
  // One path per head and opacity level (LEVELS levels): a few hundred strokes, not T²·h.
  // A weight below half a level rounds to opacity 0 and is not drawn.
  const LEVELS = 32;
  const paths: (Path2D | undefined)[][] = [];
  let lines = 0;
  for (const h of visible) {
    const w = ctx.item.heads[h].weights;
    const byLevel: (Path2D | undefined)[] = (paths[h] = []);
    for (let i = 0; i < T; i++) {
      if (side === "i" && i !== k) continue;
      for (let j = 0; j < T; j++) {
        if (side === "j" && j !== k) continue;
        const lv = Math.round(Math.min(1, at(w, i, j)) * LEVELS);
        if (lv <= 0) continue;
        const p = (byLevel[lv] ??= new Path2D());
        p.moveTo(0, y(i));
        p.lineTo(gap, y(j));
        lines++;
      }
    }
  }
  // Thick lines for a few hundred, hairlines for more (a thick stroke costs many times more
  // to rasterise, and close rows of many lines read better thin).
  c.lineWidth = lines <= 800 && rowH >= 14 ? 3 : 1;
  for (const h of visible) {
    c.strokeStyle = headColor(h);
    paths[h].forEach((p, lv) => {
      if (!p) return;
      c.globalAlpha = lv / LEVELS;
      c.stroke(p);
    });
  }
  c.globalAlpha = 1;
}

function topOf(w: { data: Float32Array; rows: number; cols: number }, k: number, side: "i" | "j", labels: string[]): string {
  const vals = Array.from({ length: w.cols }, (_, j) => ({ j, v: side === "i" ? at(w, k, j) : at(w, j, k) }));
  vals.sort((a, b) => b.v - a.v);
  return vals.slice(0, 3).map((x) => `${labels[x.j]} ${fmt(x.v, 2)}`).join(", ");
}
