// attnkit: what each head of a model measurably does (docs/heads.md), from the model's own
// inspect(): per layer and head a previous-token score, a duplicate-token score and an
// induction score (Olsson et al. 2022, "In-context learning and induction heads"), on a
// repeated random token sequence and, when given, on the caller's own tokens.
import { checkCount, checkKeys, isObject } from "./convert.js";
import { kindOf, rangeError, typeError } from "./errors.js";
import { seedWords } from "./marshal.js";

/** The repeated sequence's half when options.length is absent (at most half the context). */
const DEFAULT_LENGTH = 50;

/**
 * The three scores of every head on `tokens` [T], from each layer's weights [h, T, T]
 * (row: query t, column: key j <= t). Each is a mean over the positions where it is
 * defined, null (for every head) where it is defined at none:
 *   previousToken   w[t][t - 1], over t >= 1;
 *   duplicateToken  the sum of w[t][j] over earlier j with tokens[j] = tokens[t], over the
 *                   t that have one;
 *   induction       the sum of w[t][j + 1] over earlier j with tokens[j] = tokens[t] and
 *                   j + 1 < t (the token after the earlier copy), over the t that have one.
 */
export function scoresOfWeights(tokens, layers) {
  const T = tokens.length;
  // For each t, the earlier positions holding the same token.
  const earlier = Array.from({ length: T }, (_, t) => {
    const js = [];
    for (let j = 0; j < t; j++) if (tokens[j] === tokens[t]) js.push(j);
    return js;
  });
  const dup = earlier.map((js, t) => (js.length ? js : null));
  const ind = earlier.map((js, t) => {
    const next = js.map((j) => j + 1).filter((k) => k < t);
    return next.length ? next : null;
  });
  const prev = Array.from({ length: T }, (_, t) => (t >= 1 ? [t - 1] : null));
  /** Per layer and head, the mean over t of the weight on the columns cols[t] (null: none defined). */
  const score = (cols) => {
    if (!cols.some((c) => c !== null)) return null;
    return layers.map((w) => {
      const [H] = w.shape;
      const out = new Array(H);
      for (let h = 0; h < H; h++) {
        let sum = 0,
          n = 0;
        for (let t = 0; t < T; t++) {
          const c = cols[t];
          if (!c) continue;
          const row = (h * T + t) * T;
          for (const j of c) sum += w.data[row + j];
          n++;
        }
        out[h] = sum / n;
      }
      return out;
    });
  };
  return { previousToken: score(prev), duplicateToken: score(dup), induction: score(ind) };
}

/** Seeded uniform integers in 0 .. n - 1 (SplitMix32's mixing of a counter). */
function randomInts(seed) {
  let state = (seed[0] ^ Math.imul(seed[1], 0x9e3779b9)) >>> 0;
  return (n) => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    z = (z ^ (z >>> 16)) >>> 0;
    return Math.floor((z / 2 ** 32) * n);
  };
}

/**
 * `length` random tokens of 0 .. vocabSize - 1, twice: distinct tokens when the
 * vocabulary has `length` or more (so that each token of the second half has exactly one
 * earlier copy), else drawn with repeats.
 */
export function repeatedRandomTokens(vocabSize, length, seed) {
  const next = randomInts(seed);
  const half = new Int32Array(length);
  if (vocabSize >= length) {
    // A partial Fisher-Yates shuffle of 0 .. vocabSize - 1, its moved entries in a map.
    const moved = new Map();
    for (let i = 0; i < length; i++) {
      const k = i + next(vocabSize - i);
      half[i] = moved.get(k) ?? k;
      moved.set(k, moved.get(i) ?? i);
    }
  } else {
    for (let i = 0; i < length; i++) half[i] = next(vocabSize);
  }
  const tokens = new Int32Array(2 * length);
  tokens.set(half, 0);
  tokens.set(half, length);
  return tokens;
}

/** The scores of `model` (a Model): see docs/heads.md and attnkit.d.ts. */
export function headScores(model, options = {}) {
  if (kindOf(model) !== "Model") throw typeError("model", "a Model", model);
  if (!isObject(options) || Array.isArray(options))
    throw typeError("options", "an object {length?, seed?, tokens?}", options);
  checkKeys("options", options, ["length", "seed", "tokens"]);
  const { maxSeqLen, vocabSize, numLayers, numHeads } = model.config;
  const most = Math.floor(maxSeqLen / 2);
  let length = Math.min(DEFAULT_LENGTH, most);
  if (options.length !== undefined) {
    length = checkCount("options.length", options.length);
    if (length < 2 || length > most)
      throw rangeError(
        "options.length",
        `2 .. ${most} (the sequence is twice as long, within the model's maxSeqLen ${maxSeqLen})`,
        String(length),
      );
  }
  if (length < 2)
    throw rangeError("model", "a maxSeqLen of 4 or more (two copies of 2 tokens)", maxSeqLen);
  const seed = options.seed ?? 0;
  const tokens = repeatedRandomTokens(vocabSize, length, seedWords("options.seed", seed));
  const repeated = scoresOfWeights(
    tokens,
    model.inspect(tokens).layers.map((l) => l.weights),
  );
  const result = {
    numLayers,
    numHeads,
    length,
    seed,
    tokens,
    previousToken: repeated.previousToken,
    duplicateToken: repeated.duplicateToken,
    induction: repeated.induction,
  };
  if (options.tokens !== undefined) {
    // The model's inspect checks the tokens (their count and range) and names "tokens".
    const inspection = model.inspect(options.tokens);
    result.sentence = {
      tokens: inspection.tokens,
      ...scoresOfWeights(
        inspection.tokens,
        inspection.layers.map((l) => l.weights),
      ),
    };
  }
  return result;
}
