// Head view (seed 000's figure): tokens in two columns, one line per (query, key)
// pair whose opacity is the attention weight, one colour per head. Hover a token to
// isolate its lines; click a head's chip to hide or show it (kept in the URL).
// The lines are drawn on a canvas (T = 64 with 8 heads is 32k lines).
import { fmt } from "../format";
import { at, headName, tokenLabels, type Scene, type SceneCtx } from "../scenes/common";
import { hiddenHeads, type State } from "../state";
import { headColor } from "../draw/colors";
import { announce } from "../draw/cell-keyboard";
import type { SvgGroup } from "../draw/types";
import { retained, setAttr } from "../draw/retain";
import { hideTip, showTipBeside } from "../draw/tooltip";

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
    const chips = ctx.item.heads
      .map(
        (_, h) =>
          `<button type="button" class="chip head-chip${hidden.has(h) ? "" : " on"}" style="--head:${headColor(h)}" data-toggle-head="${h}" data-testid="head-chip-${h}" aria-pressed="${!hidden.has(h)}">head ${h}${headName(ctx, h) ? `: ${headName(ctx, h)}` : ""}</button>`,
      )
      .join(" ");
    return `<p>Each line joins a token being updated (left) to a token it attends to (right); its opacity is the weight α<sub>ij</sub>, its colour the head.
      Hover a token to isolate its lines; click or tap it (or Tab to it, arrows, Enter) to keep them. Heads: ${chips}</p>`;
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
    const { entry } = retained<HeadViewState>(g.node()!, "headview", sig, () =>
      buildHeadView(g, labels, rowH, colW, gap, H, dpr),
    );
    const st = entry.state;
    st.ctx = ctx;
    const hidden = hiddenHeads(ctx.state);
    const visible = ctx.item.heads.map((_, h) => h).filter((h) => !hidden.has(h));
    setAttr(st.fo, "data-heads", visible.join(" "));
    drawLines(st, st.pinned?.side ?? null, st.pinned?.k ?? 0);
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
  /** The token whose lines stay isolated (clicked, tapped or Enter). */
  pinned: { side: "i" | "j"; k: number } | null;
  /** What the canvas shows: the weights, the visible heads and the isolated token. */
  drawn: { weights: Float32Array[]; visible: string; side: string } | null;
}

function buildHeadView(
  g: SvgGroup,
  labels: string[],
  rowH: number,
  colW: number,
  gap: number,
  H: number,
  dpr: number,
): { node: SVGGElement; state: HeadViewState } {
  const root = g.append("g").attr("data-testid", "headview");
  const font = Math.min(13, rowH * 0.7);
  const y = (i: number) => TOP + i * rowH + rowH / 2;
  root
    .append("text")
    .attr("class", "m-axis-title")
    .attr("x", colW - 8)
    .attr("y", 10)
    .attr("text-anchor", "end")
    .text("query (updated)");
  root
    .append("text")
    .attr("class", "m-axis-title")
    .attr("x", colW + gap + 8)
    .attr("y", 10)
    .text("key (attended to)");
  const fo = root
    .append("foreignObject")
    .attr("x", colW)
    .attr("width", gap)
    .attr("height", H)
    .attr("data-testid", "hv-lines");
  const canvas = fo
    .append("xhtml:canvas")
    .attr("width", Math.round(gap * dpr))
    .attr("height", Math.round(H * dpr))
    .style("width", `${gap}px`)
    .style("height", `${H}px`)
    .style("display", "block")
    .node() as HTMLCanvasElement;
  const st: HeadViewState = {
    fo: fo.node()!,
    canvas,
    c2d: null,
    rowH,
    gap,
    H,
    dpr,
    ctx: null,
    drawn: null,
    pinned: null,
  };
  drawTokens(root, st, labels, colW, font, y);
  return { node: root.node()!, state: st };
}

/**
 * The query and key tokens either side of the lines: hover or focus isolates a token's
 * lines, a click, tap or Enter pins them, the arrow keys move between tokens.
 */
function drawTokens(
  root: SvgGroup,
  st: HeadViewState,
  labels: string[],
  colW: number,
  font: number,
  y: (i: number) => number,
): void {
  const gap = st.gap;
  const isolate = (side: "i" | "j", k: number, label: Element) => {
    const ctx = st.ctx;
    if (!ctx) return;
    drawLines(st, side, k);
    const hidden = hiddenHeads(ctx.state);
    const parts = ctx.item.heads
      .map((tr, h) =>
        hidden.has(h)
          ? ""
          : `head ${h}${headName(ctx, h) ? ` (${headName(ctx, h)})` : ""}: ${side === "i" ? "top" : "from"} ${topOf(tr.weights, k, side, labels)}`,
      )
      .filter(Boolean);
    // Level with the label, beside the whole view: the tooltip explains the lines, so it covers none of them.
    showTipBeside(
      label.getBoundingClientRect(),
      root.node()!.getBoundingClientRect(),
      side === "i" ? "left" : "right",
      `<b>${labels[k]}</b><br>${parts.join("<br>")}`,
    );
    announce(`${labels[k]}, ${side === "i" ? "query" : "key"}: ${parts.join("; ")}`);
  };
  /** Back to every line, or to the pinned token's. */
  const release = () => {
    drawLines(st, st.pinned?.side ?? null, st.pinned?.k ?? 0);
    hideTip();
  };
  // A click or tap (or Enter) pins a token's lines until it is clicked again, so a touch screen has what hover gives.
  const togglePin = (side: "i" | "j", k: number, el: Element) => {
    const same = st.pinned?.side === side && st.pinned.k === k;
    st.pinned = same ? null : { side, k };
    setAttr(st.fo, "data-pinned", st.pinned ? `${side}${k}` : null);
    if (st.pinned) isolate(side, k, el);
    else release();
  };
  const texts: Record<"i" | "j", SVGTextElement[]> = { i: [], j: [] };
  for (const side of ["i", "j"] as const) {
    const x = side === "i" ? colW - 8 : colW + gap + 8;
    texts[side] = root
      .append("g")
      .selectAll<SVGTextElement, string>("text")
      .data(labels)
      .join("text")
      .attr("x", x)
      .attr("y", (_d, k) => y(k))
      .attr("dominant-baseline", "central")
      .attr("text-anchor", side === "i" ? "end" : "start")
      .attr("font-size", font)
      .style("cursor", "pointer")
      .attr("data-testid", (_d, k) => `hv-${side === "i" ? "q" : "k"}-${k}`)
      .attr("class", "hv-token")
      // One tab stop for all tokens (roving tabindex): arrows move, Enter pins.
      .attr("tabindex", (_d, k) => (side === "i" && k === 0 ? 0 : -1))
      .attr("role", "button")
      .attr("aria-label", (d) => `${d} as ${side === "i" ? "query" : "key"}: show its lines`)
      .text((d) => d)
      .on("mouseenter", function (_e: MouseEvent, d) {
        isolate(side, labels.indexOf(d), this);
      })
      .on("mouseleave", release)
      .on("click", function (_e: MouseEvent, d) {
        togglePin(side, labels.indexOf(d), this);
      })
      .on("focus", function (_e: FocusEvent, d) {
        isolate(side, labels.indexOf(d), this);
      })
      .on("blur", release)
      .on("keydown", function (e: KeyboardEvent, d) {
        const k = labels.indexOf(d);
        let next: SVGTextElement | undefined;
        if (e.key === "ArrowDown") next = texts[side][Math.min(labels.length - 1, k + 1)];
        else if (e.key === "ArrowUp") next = texts[side][Math.max(0, k - 1)];
        else if (e.key === "ArrowRight" || e.key === "ArrowLeft")
          next = texts[e.key === "ArrowRight" ? "j" : "i"][k];
        else if (e.key === "Enter" || e.key === " ") {
          togglePin(side, k, this);
        } else return;
        e.preventDefault();
        e.stopPropagation();
        if (next && next !== this) {
          for (const t of [...texts.i, ...texts.j])
            t.setAttribute("tabindex", t === next ? "0" : "-1");
          next.focus();
        }
      })
      .nodes();
  }
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
  if (
    d &&
    d.visible === key.visible &&
    d.side === key.side &&
    d.weights.length === weights.length &&
    d.weights.every(
      (w, h) => w.length === weights[h].length && w.every((v, n) => v === weights[h][n]),
    )
  )
    return;
  st.drawn = { ...key, weights: weights.map((w) => Float32Array.from(w)) };
  setAttr(st.fo, "data-isolated", side ? `${side}${k}` : null);
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

function topOf(
  w: { data: Float32Array; rows: number; cols: number },
  k: number,
  side: "i" | "j",
  labels: string[],
): string {
  const vals = Array.from({ length: w.cols }, (_, j) => ({
    j,
    v: side === "i" ? at(w, k, j) : at(w, j, k),
  }));
  vals.sort((a, b) => b.v - a.v);
  return vals
    .slice(0, 3)
    .map((x) => `${labels[x.j]} ${fmt(x.v, 2)}`)
    .join(", ");
}
