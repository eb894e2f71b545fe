// Presets: sentences from the seed texts, and seed 001's printed worked example.
import type { State } from "./state-types";

/** Seed 001's printed tables ("2.3 Single-attention head", Example 1). */
export const SEED001 = {
  tokens: ["List", "new", "ideas", "for", "a", "song"],
  X: [
    [0.1, -0.2, 0.1, 0.2],
    [0.8, 0.8, -0.9, 0.5],
    [-0.6, 0.4, 0.5, -0.9],
    [0.9, -0.7, 0.8, 0.7],
    [0.4, 0.3, 0.4, 0.4],
    [0.8, 0.2, 0.9, -0.2],
  ],
  WQ: [
    [3.4, -2.1, 0.8, 1.9],
    [-1.2, 0.5, 3.7, -0.8],
    [2.9, 1.1, -3.4, 0.6],
    [0.7, 2.8, 1.3, -2.5],
  ],
  Q: [
    [1.01, 0.36, -0.74, -0.09],
    [-0.5, -0.87, 4.49, -0.23],
    [2.17, -1.99, -3.92, 1.71],
    [1.43, 2.59, 1.97, -3.19],
    [0.67, 0.98, 0.61, -0.31],
    [1.97, 0.52, 4.01, -0.51],
  ],
  KT: [
    [0.15, 1.94, -0.98, 2.53, 1.24, 2.18],
    [0.16, 1.44, 0.64, -2.33, 0.81, 0.44],
    [0.25, 0.35, 1.25, 2.24, 1.14, 3.25],
    [0.28, 1.15, -0.81, 1.93, -0.81, -0.28],
  ],
  QKT: [
    [-0.01, 2.12, -1.62, 3.45, 1.83, 3.29],
    [-1.37, 0.51, 7.15, -3.39, 2.35, 2.99],
    [3.49, -6.19, -9.39, 11.19, -3.19, -5.67],
    [2.23, 3.19, 2.35, -0.67, 1.35, 4.37],
    [0.83, 1.42, 0.95, 0.27, 0.69, 1.83],
    [3.35, 1.35, 10.93, -0.95, 3.35, 5.95],
  ],
  softmax: [
    [0.156, 0, 0, 0, 0, 0],
    [0.138, 0.041, 0, 0, 0, 0],
    [0.194, 0.001, 0, 0, 0, 0],
    [0.168, 0.193, 0.042, 0.143, 0, 0],
    [0.142, 0.136, 0.031, 0.051, 0.083, 0],
    [0.201, 0.629, 0.927, 0.806, 0.917, 1],
  ],
  V: [
    [0.43, 0.29, 0.64, 0.83],
    [1.15, 1.19, -0.28, 0.67],
    [-0.21, 0.64, 0.59, -0.82],
    [1.19, -0.45, 0.86, 0.99],
    [0.51, 0.41, 0.51, 0.51],
    [1.19, 0.28, 0.95, -0.15],
  ],
  output: [
    [0.06708, 0.04524, 0.09984, 0.12948],
    [0.15874, 0.15766, 0.05938, 0.08634],
    [0.08382, 0.05966, 0.11566, 0.13938],
    [0.26734, 0.06388, 0.16438, 0.20534],
    [0.15538, 0.13636, 0.08656, 0.09556],
    [1.05279, 0.68873, 1.05273, 0.82373],
  ],
};

/** K = (K^T)^T: a re-layout of printed data, not a computation. */
export function seedK(): number[][] {
  return SEED001.KT[0].map((_, j) => SEED001.KT.map((row) => row[j]));
}

export interface Preset {
  id: string;
  /** Its name in the preset box: short enough to show whole in the sidebar (the text box below shows the sentence). */
  label: string;
  text: string;
  text2?: string;
  /** State fields the preset sets. */
  set: Partial<State>;
}

export const PRESETS: Preset[] = [
  {
    id: "seed001",
    label: "Worked example 2.3",
    text: SEED001.tokens.join(" "),
    set: {
      weights: "seed",
      mask: "causal",
      heads: 1,
      kvHeads: 1,
      pe: false,
      scaling: true,
      temperature: 1,
    },
  },
  {
    id: "train",
    label: "the train left the station",
    text: "the train left the station on time",
    // Four designed heads, each with a different relation, so that step 8 and the head views show
    // differences; the query is the verb "left", which head 0 (verbs look for their nouns) answers.
    set: {
      emb: "features",
      weights: "designed",
      mask: "none",
      heads: 4,
      kvHeads: 4,
      pe: false,
      query: 2,
    },
  },
  {
    id: "bank",
    label: "the check at the bank",
    text: "I cashed the check at the bank",
    set: { emb: "features", weights: "identity", mask: "none", heads: 1, kvHeads: 1, pe: false },
  },
  {
    id: "flies",
    label: "time flies / fruit flies",
    text: "time flies like an arrow",
    text2: "fruit flies like a banana",
    set: {
      emb: "features",
      weights: "designed",
      mask: "none",
      heads: 2,
      kvHeads: 2,
      batch: true,
      pe: false,
    },
  },
  {
    id: "fox",
    label: "the quick brown fox",
    text: "The quick brown fox jumped over the lazy dog",
    set: { emb: "features", weights: "designed", mask: "none", heads: 1, kvHeads: 1, pe: false },
  },
];

export function presetById(id: string): Preset | undefined {
  return PRESETS.find((p) => p.id === id);
}
