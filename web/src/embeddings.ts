// Page data: token embeddings X [T, d_model] (feature, hashed or seeded random)
// and the sinusoidal positional encoding of Vaswani et al. (2017); or a trained
// layer's input, as given (trained.ts).
import type { Matrix } from "attnkit";
import type { Config, Item } from "./config";
import { PAD } from "./config";
import { FEATURES, lookup } from "./lexicon";
import { SEED001 } from "./presets";
import { hashString, normal } from "./random";
import type { State } from "./state";
import { trainedOf } from "./trained";

export function zeros(rows: number, cols: number): Matrix {
  return { data: new Float32Array(rows * cols), rows, cols };
}

export function fromRows(rows: number[][]): Matrix {
  const m = zeros(rows.length, rows[0].length);
  rows.forEach((r, i) => m.data.set(r, i * m.cols));
  return m;
}

/** A deterministic vector for a word the lexicon does not know. */
function hashedFeatures(word: string): Float32Array {
  const rnd = normal(hashString(word.toLowerCase()));
  const v = new Float32Array(FEATURES.length);
  for (let i = 0; i < v.length; i++) v[i] = Math.round(rnd() * 0.4 * 100) / 100;
  return v;
}

export interface Embedded {
  /** E: the token embeddings. */
  E: Matrix;
  /** P: the positional encodings (zeros when off). */
  P: Matrix;
  /** X = E + P, with the user's edits applied. */
  X: Matrix;
  /** Tokens the lexicon does not know (hashed vectors). */
  unknown: boolean[];
}

export function positionalEncoding(T: number, d: number): Matrix {
  const P = zeros(T, d);
  for (let pos = 0; pos < T; pos++) {
    for (let i = 0; i < d; i += 2) {
      const angle = pos / Math.pow(10000, i / d);
      P.data[pos * d + i] = Math.sin(angle);
      if (i + 1 < d) P.data[pos * d + i + 1] = Math.cos(angle);
    }
  }
  return P;
}

export function embed(s: State, cfg: Config, item: Item, index: number): Embedded {
  const { T, dModel } = cfg;
  const unknown = item.tokens.map(() => false);
  const trained = trainedOf(s);
  // A trained layer's X is what its attention reads: the residual stream (token and
  // position embeddings plus the earlier layers' outputs), given whole.
  if (trained) {
    const X = { data: Float32Array.from(trained.X.data), rows: T, cols: dModel };
    return { E: X, P: zeros(T, dModel), X, unknown };
  }
  let E: Matrix;
  if (cfg.seedMode) {
    E = fromRows(SEED001.X);
  } else {
    E = zeros(T, dModel);
    item.tokens.forEach((tok, t) => {
      if (tok === PAD) return;
      let v: Float32Array;
      if (s.emb === "features") {
        const known = lookup(tok);
        unknown[t] = !known;
        v = known ?? hashedFeatures(tok);
      } else {
        const rnd = normal((hashString(tok.toLowerCase()) ^ Math.imul(s.seed, 0x9e3779b1)) >>> 0);
        v = Float32Array.from({ length: dModel }, () => rnd());
      }
      E.data.set(v, t * dModel);
    });
  }
  const P = s.pe ? positionalEncoding(T, dModel) : zeros(T, dModel);
  const X = zeros(T, dModel);
  for (let i = 0; i < X.data.length; i++) X.data[i] = E.data[i] + P.data[i];
  applyEdits(X, s.edits, `X${index}`);
  return { E, P, X, unknown };
}

/** Overwrites the edited cells of a matrix ("name:r:c" keys). */
export function applyEdits(m: Matrix, edits: Record<string, number>, name: string): void {
  for (const [key, value] of Object.entries(edits)) {
    const [n, r, c] = key.split(":");
    if (n !== name) continue;
    const row = Number(r),
      col = Number(c);
    if (row < m.rows && col < m.cols) m.data[row * m.cols + col] = value;
  }
}
