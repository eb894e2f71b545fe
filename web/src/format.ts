// Number and label formatting.

export function fmt(v: number, digits = 2): string {
  if (v === -Infinity) return "−∞";
  if (v === Infinity) return "∞";
  if (Number.isNaN(v)) return "NaN";
  const s = v.toFixed(digits);
  // "-0.00" -> "0.00"; minus sign for readability
  return (Number(s) === 0 ? s.replace("-", "") : s).replace("-", "−");
}

/** A count with thousands separators: 300,096. */
export function count(n: number): string {
  return Math.round(n).toLocaleString("en");
}

/** A learning rate as the settings list it: 3e-3, 3e-4. */
export function rate(v: number): string {
  return v.toExponential();
}

/** Digits that keep a cell's text short. */
export function cellDigits(maxAbs: number): number {
  return maxAbs >= 100 ? 0 : maxAbs >= 10 ? 1 : 2;
}

const SUB = "₀₁₂₃₄₅₆₇₈₉";
export function sub(n: number): string {
  return String(n)
    .split("")
    .map((d) => SUB[Number(d)] ?? d)
    .join("");
}

export function shape(...dims: (number | string)[]): string {
  return `[${dims.join(" × ")}]`;
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function maxAbs(data: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < data.length; i++) {
    const v = Math.abs(data[i]);
    if (Number.isFinite(v) && v > m) m = v;
  }
  return m;
}
