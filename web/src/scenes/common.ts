// Shared pieces of the step scenes.
import type { AttentionTrace, Attnkit, Matrix } from "attnkit";
import type { Config } from "../config";
import { escapeHtml, fmt, sub } from "../format";
import type { ItemModel, Model } from "../model";
import type { State } from "../state";
import type { MatrixData, MatrixView, SvgGroup } from "../draw/types";
import { headColor } from "../draw/colors";
import { outlineCol } from "../draw/outline";
import { dur } from "../motion";
import { trainedOf } from "../trained";
import { headNames } from "../weights";

export interface SceneCtx {
  attn: Attnkit;
  state: State;
  model: Model;
  cfg: Config;
  item: ItemModel;
  itemIndex: number;
  /** The selected head's trace. */
  trace: AttentionTrace;
  /** Width and height available for this item's drawing. */
  width: number;
  height: number;
  /** Play the scene's entry animation. */
  animate: boolean;
  set: (patch: Partial<State>) => void;
  /** Opens the cell editor for an editable matrix ("X0", "WQ", ...). */
  edit: (name: string, r: number, c: number, value: number, e: MouseEvent) => void;
}

export interface SceneResult {
  width: number;
  height: number;
  /** Length of the entry animation in ms (0 if none). */
  duration: number;
}

export interface Scene {
  title: string;
  /** HTML: the maths and the shapes of this step. */
  caption: (ctx: SceneCtx) => string;
  render: (g: SvgGroup, ctx: SceneCtx) => SceneResult;
}

/** A cell size that fits `unitsW` x `unitsH` cells (plus fixed space) into the box. */
export function fitCell(
  unitsW: number,
  unitsH: number,
  ctx: SceneCtx,
  fixedW = 120,
  fixedH = 120,
  max = 44,
): number {
  const w = (ctx.width - fixedW) / Math.max(1, unitsW);
  const h = (Math.max(ctx.height, 320) - fixedH) / Math.max(1, unitsH);
  return Math.max(3, Math.min(max, Math.floor(Math.min(w, h))));
}

export function tokenLabels(item: ItemModel): string[] {
  return item.item.tokens.map((l, i) => `${l} ${sub(i)}`);
}

/** d_model column labels: feature names or indices. */
export function dimLabels(cfg: Config, n: number): string[] {
  return cfg.featureNames && cfg.featureNames.length === n
    ? cfg.featureNames
    : Array.from({ length: n }, (_, i) => String(i));
}

export function indexLabels(n: number, from = 0): string[] {
  return Array.from({ length: n }, (_, i) => String(from + i));
}

/**
 * Which projections stay in the named feature space: with identity weights
 * Q = K = V = X; the designed heads copy X into V (W^V = W^O = I).
 */
export function featureSpace(ctx: Pick<SceneCtx, "cfg" | "state">): { qk: boolean; v: boolean } {
  const named = !!ctx.cfg.featureNames;
  const w = ctx.state.weights;
  return { qk: named && w === "identity", v: named && (w === "identity" || w === "designed") };
}

/** Column labels of head h's Q or K slice [T, d_k]: feature names when Q = K = X, else indices. */
export function qkLabels(ctx: Pick<SceneCtx, "cfg" | "state">, h: number): string[] {
  const { dK } = ctx.cfg;
  return featureSpace(ctx).qk ? ctx.cfg.featureNames!.slice(h * dK, (h + 1) * dK) : indexLabels(dK);
}

/** Column labels of K/V head g's V slice [T, d_v]: feature names when V = X, else indices. */
export function vLabels(ctx: Pick<SceneCtx, "cfg" | "state">, g: number): string[] {
  const { dV } = ctx.cfg;
  return featureSpace(ctx).v ? ctx.cfg.featureNames!.slice(g * dV, (g + 1) * dV) : indexLabels(dV);
}

export function tokenName(ctx: SceneCtx, i: number): string {
  return escapeHtml(ctx.item.item.labels[i] ?? String(i));
}

export function at(m: MatrixData, r: number, c: number): number {
  return m.data[r * m.cols + c];
}

export function row(m: MatrixData, r: number): number[] {
  return Array.from({ length: m.cols }, (_, c) => m.data[r * m.cols + c]);
}

/** K^T for display: the same numbers laid out by column (a re-layout, no arithmetic). */
export function transposed(m: Matrix): Matrix {
  const t = new Float32Array(m.data.length);
  for (let r = 0; r < m.rows; r++)
    for (let c = 0; c < m.cols; c++) t[c * m.rows + r] = m.data[r * m.cols + c];
  return { data: t, rows: m.cols, cols: m.rows };
}

/** "a₀·b₀ + a₁·b₁ + … = result": the factors written out, the result from attnkit. */
export function expandDot(a: number[], b: number[], result: number, maxTerms = 8): string {
  const terms = a.slice(0, maxTerms).map((x, k) => `${fmt(x)}·${fmt(b[k])}`);
  if (a.length > maxTerms) terms.push(`… (${a.length - maxTerms} more)`);
  return `${terms.join(" + ")} = <b>${fmt(result, 4)}</b>`;
}

/** One term of a worked sum: its label and its two factors, both numbers from attnkit's results. */
export interface Term {
  label: string;
  a: number;
  b: number;
}

/** The line under a cell's tooltip that says a click shows its arithmetic. */
export const CLICK_FOR_WORK = "<br><i>click: every term, at 4 decimals</i>";

/**
 * The worked arithmetic of a cell (the panel a click opens): `what` it is, every term
 * a × b = a·b at 4 decimals, and their sum, which is the cell's value as attnkit gave it.
 * Only the products and their sum are done here, to show them; the value is attnkit's.
 */
export function workedSum(what: string, terms: Term[], value: number): string {
  const lines = terms.map(
    (t) =>
      `<span class="worked-term" data-testid="worked-term"><span class="worked-label">${t.label}</span> ${fmt(t.a, 4)} × ${fmt(t.b, 4)} = <b>${fmt(t.a * t.b, 4)}</b></span>`,
  );
  return `<div class="worked-what">${what}</div><div class="worked-terms">${lines.join("")}</div>
    <div class="worked-total">sum of the ${terms.length} product${terms.length > 1 ? "s" : ""} = <b data-testid="worked-total">${fmt(value, 4)}</b></div>`;
}

/** The terms of the dot product a · b, labelled by their index k. */
export function dotTerms(a: number[], b: number[]): Term[] {
  return a.map((x, k) => ({ label: `k = ${k}:`, a: x, b: b[k] }));
}

/** The temperature as the settings show it (τ = 2, τ = 0.75). */
export function tauText(ctx: Pick<SceneCtx, "state">): string {
  return `τ = ${Number(ctx.state.temperature.toFixed(2))}`;
}

/**
 * The name of the scaled scores as they are computed: Q Kᵀ divided by √dₖ when scaling is on
 * and by the temperature τ (with its value) when it is not 1, as a title (richText-free).
 */
export function scaledName(ctx: Pick<SceneCtx, "state">): string {
  const { scaling, temperature } = ctx.state;
  const tau = temperature !== 1;
  const div = scaling ? (tau ? " / (√dₖ · τ)" : " / √dₖ") : tau ? " / τ" : " (unscaled)";
  return `Q Kᵀ${div}${tau ? `, ${tauText(ctx)}` : ""}`;
}

/** scaledName in HTML (Kᵀ and dₖ with <sup> and <sub>), for the captions' shape lines. */
export function scaledNameHtml(ctx: Pick<SceneCtx, "state">): string {
  return scaledName(ctx).replace("Kᵀ", "K<sup>T</sup>").replace("dₖ", "d<sub>k</sub>");
}

/** The same in HTML, for formulas: q<sub>i</sub> · k<sub>j</sub> / (√d<sub>k</sub> · τ) with τ's value. */
export function scaledFormula(
  ctx: Pick<SceneCtx, "state">,
  dot = "q<sub>i</sub> · k<sub>j</sub>",
): string {
  const { scaling, temperature } = ctx.state;
  const tau = temperature !== 1;
  const div = scaling ? (tau ? " / (√d<sub>k</sub> · τ)" : " / √d<sub>k</sub>") : tau ? " / τ" : "";
  return `${dot}${div}${tau ? ` with ${tauText(ctx)}` : ""}`;
}

export function selectedQuery(ctx: SceneCtx): number {
  return Math.min(Math.max(0, ctx.state.query), ctx.cfg.T - 1);
}

export function headLabel(ctx: SceneCtx): string {
  if (ctx.cfg.heads === 1) return "";
  const g = Math.floor(ctx.state.head / (ctx.cfg.heads / ctx.cfg.kvHeads));
  return ` (head ${ctx.state.head}${ctx.cfg.kvHeads !== ctx.cfg.heads ? `, kv head ${g}` : ""})`;
}

/** Whether cells of X, the weights and the mask can be edited (not a trained model's). */
export function editable(ctx: Pick<SceneCtx, "state">): boolean {
  return !trainedOf(ctx.state);
}

/** A boxed note from the seed comparison. */
export function seedNote(html: string): string {
  return `<div class="seed-note" data-testid="seed-note"><b>Check against the worked example (“2.3 Single-attention head”):</b> ${html}</div>`;
}

export function vec(a: ArrayLike<number>, digits = 2, max = 8): string {
  const v = Array.from(a)
    .slice(0, max)
    .map((x) => fmt(x, digits));
  if (a.length > max) v.push("…");
  return `[${v.join(", ")}]`;
}

/** Largest finite |value| (masked cells are −∞). */
export function maxAbsFinite(m: MatrixData): number {
  let r = 0;
  for (let i = 0; i < m.data.length; i++) {
    const v = Math.abs(m.data[i]);
    if (Number.isFinite(v) && v > r) r = v;
  }
  return r;
}

/** What head h was designed to look for ("" for other weights). */
export function headName(ctx: Pick<SceneCtx, "state" | "cfg">, h: number): string {
  return headNames(ctx.state, ctx.cfg)?.[h] ?? "";
}

/** The designed heads' names, each in its head's colour ("" for other weights). */
export function headNamesHtml(ctx: Pick<SceneCtx, "state" | "cfg">): string {
  const names = headNames(ctx.state, ctx.cfg);
  if (!names) return "";
  const items = names.map(
    (n, h) =>
      `<span class="head-name" style="--head:${headColor(h)}" data-testid="head-name-${h}"><b>head ${h}</b>: ${escapeHtml(n)}</span>`,
  );
  return `<p class="head-names" data-testid="head-names">The hand-designed heads: ${items.join(" ")}</p>`;
}

/**
 * An outline over column 0 of `v` (`rows` tall) that moves to each of its first `count`
 * columns in turn, one every `step` ms, then fades out; returns when it starts fading
 * (ms at speed 1), the time the rest of the product may follow.
 */
export function sweepColumns(
  g: SvgGroup,
  v: MatrixView,
  rows: number,
  count: number,
  step: number,
): number {
  const colHl = outlineCol(g, v, 0, rows).attr("opacity", 0);
  for (let c = 0; c < count; c++) {
    colHl
      .transition()
      .delay(dur(c * step))
      .duration(dur(step * 0.6))
      .attr("opacity", 1)
      .attr("x", v.gx + c * v.cell - 1);
  }
  const rest = count * step + 300;
  colHl.transition().delay(dur(rest)).duration(dur(200)).attr("opacity", 0);
  return rest;
}
