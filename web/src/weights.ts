// Page data: projection weights W^Q [d_model, h*d_k], W^K [d_model, kvh*d_k],
// W^V [d_model, kvh*d_v] and W^O [h*d_v, d_model]: seeded random, identity
// (parameter-free: Q = K = V = X), hand-designed heads on the feature embeddings, or
// a trained model's layer (trained.ts).
import type { Matrix } from "attnkit";
import type { Config } from "./config";
import { applyEdits, fromRows, zeros } from "./embeddings";
import { FEATURES, TOPICS, type Feature } from "./lexicon";
import { SEED001 } from "./presets";
import { normal } from "./random";
import type { State } from "./state";
import { trainedOf } from "./trained";

export interface Weights {
  WQ: Matrix;
  /** Absent when K and V are given directly (seed 001 prints K^T and V, not W^K, W^V). */
  WK?: Matrix;
  WV?: Matrix;
  WO: Matrix;
}

/** A designed head: query feature -> key feature pairs. */
interface Pattern {
  name: string;
  pairs: [Feature, Feature, number][];
}

export const PATTERNS: Pattern[] = [
  {
    name: "verbs look for their nouns",
    pairs: [
      ["verb", "noun", 1],
      ["verb", "pronoun", 0.8],
    ],
  },
  {
    name: "words look for the same topic",
    pairs: TOPICS.map((t): [Feature, Feature, number] => [t, t, 0.5]),
  },
  {
    name: "nouns look for their determiners and adjectives",
    pairs: [
      ["noun", "determiner", 1],
      ["noun", "adjective", 1.2],
    ],
  },
  {
    name: "verbs and prepositions look for places and times",
    pairs: [
      ["verb", "place", 0.6],
      ["preposition", "place", 0.6],
      ["preposition", "time", 0.6],
      ["verb", "time", 0.5],
    ],
  },
];

/** The designed pattern(s) of head h of `heads`. */
export function headPatterns(h: number, heads: number): Pattern[] {
  return heads === 1 ? [PATTERNS[0], PATTERNS[1]] : [PATTERNS[h % PATTERNS.length]];
}

/**
 * What each head was designed to look for (null unless the designed heads are in use:
 * they need the feature embeddings).
 */
export function headNames(
  s: Pick<State, "weights">,
  cfg: Pick<Config, "heads" | "featureNames" | "seedMode">,
): string[] | null {
  if (s.weights !== "designed" || !cfg.featureNames || cfg.seedMode) return null;
  return Array.from({ length: cfg.heads }, (_, h) =>
    headPatterns(h, cfg.heads)
      .map((p) => p.name)
      .join("; "),
  );
}

function identity(n: number): Matrix {
  const m = zeros(n, n);
  for (let i = 0; i < n; i++) m.data[i * n + i] = 1;
  return m;
}

function random(rows: number, cols: number, seed: number, sigma: number): Matrix {
  const rnd = normal(seed);
  const m = zeros(rows, cols);
  for (let i = 0; i < m.data.length; i++) m.data[i] = Math.round(rnd() * sigma * 100) / 100;
  return m;
}

function designed(cfg: Config): Weights {
  const { dModel: d, heads, dK } = cfg;
  const WQ = zeros(d, heads * dK);
  const WK = zeros(d, heads * dK);
  // Strength so that a matching pair scores about 3 after the 1/sqrt(d_k) scaling.
  const a = Math.sqrt(3 * Math.sqrt(dK));
  for (let h = 0; h < heads; h++) {
    let col = 0;
    for (const p of headPatterns(h, heads)) {
      for (const [qf, kf, w] of p.pairs) {
        const c = h * dK + (col++ % dK);
        WQ.data[FEATURES.indexOf(qf) * WQ.cols + c] += a * Math.sqrt(w);
        WK.data[FEATURES.indexOf(kf) * WK.cols + c] += a * Math.sqrt(w);
      }
    }
  }
  // Values: head h copies its own block of features, so the merged heads are X.
  return { WQ, WK, WV: identity(d), WO: identity(d) };
}

export function makeWeights(s: State, cfg: Config): Weights {
  const { dModel: d, heads, kvHeads, dK, dV } = cfg;
  const trained = trainedOf(s);
  // The trained matrices as they are (the page never writes into them: no edits in trained mode).
  if (trained) return { WQ: trained.W_Q, WK: trained.W_K, WV: trained.W_V, WO: trained.W_O };
  let w: Weights;
  if (cfg.seedMode) {
    w = { WQ: fromRows(SEED001.WQ), WO: identity(4) };
  } else if (s.weights === "identity") {
    w = { WQ: identity(d), WK: identity(d), WV: identity(d), WO: identity(d) };
  } else if (s.weights === "designed" && cfg.featureNames) {
    w = designed(cfg);
  } else {
    const sigma = 2 / Math.sqrt(d);
    w = {
      WQ: random(d, heads * dK, s.seed * 4 + 1, sigma),
      WK: random(d, kvHeads * dK, s.seed * 4 + 2, sigma),
      WV: random(d, kvHeads * dV, s.seed * 4 + 3, sigma),
      WO: random(heads * dV, d, s.seed * 4 + 4, 1 / Math.sqrt(heads * dV)),
    };
  }
  applyEdits(w.WQ, s.edits, "WQ");
  if (w.WK) applyEdits(w.WK, s.edits, "WK");
  if (w.WV) applyEdits(w.WV, s.edits, "WV");
  applyEdits(w.WO, s.edits, "WO");
  return w;
}
