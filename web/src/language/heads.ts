// What each head of a sentence's attention measurably does, computed from its weights:
// the mean weight a character puts on the character before it, on the first letter of
// its word, on earlier occurrences of the same character, and on itself. A head is named
// by its largest score when that is at least LABEL_AT.
import type { Tensor } from "attnkit";

export interface HeadScores {
  previous: number;
  wordStart: number;
  sameCharacter: number;
  self: number;
}

export type HeadKind = keyof HeadScores;

export const HEAD_NAMES: Record<HeadKind, string> = {
  previous: "previous character",
  wordStart: "start of the word",
  sameCharacter: "same character",
  self: "itself",
};

/**
 * The least score that names a head: about three times what a head spread evenly over the
 * characters so far scores on the default sentence (0.09 on the previous character and on
 * itself, 0.085 on the word's start, 0.12 on the same character). Measured on that
 * sentence with the default preset: at step 500 (validation 2.24) one head is named
 * (previous character 0.62); from step 1000 (1.94) to 2000 (1.81) two (previous character
 * 0.89 to 0.91, start of the word 0.33 to 0.39), every other score 0.22 or less (the same
 * character's at most 0.22, under twice an even spread's): a lower threshold would name
 * heads by little more than what an even spread gives.
 */
export const LABEL_AT = 0.3;

const isLetter = (c: string) => /\p{L}|\p{N}/u.test(c);

/** The first letter of the word holding position t (-1: t is no letter). */
export function wordStart(chars: string[], t: number): number {
  if (!isLetter(chars[t])) return -1;
  let j = t;
  while (j > 0 && isLetter(chars[j - 1])) j--;
  return j;
}

/** Head h's scores on `chars` from its weights [H, T, T] (row: query, column: key). */
export function headScores(chars: string[], w: Tensor, h: number): HeadScores {
  const [, T] = w.shape;
  const at = (t: number, j: number) => w.data[(h * T + t) * T + j];
  const mean = (pick: (t: number) => number | null) => {
    let sum = 0,
      n = 0;
    for (let t = 0; t < T; t++) {
      const v = pick(t);
      if (v === null) continue;
      sum += v;
      n++;
    }
    return n ? sum / n : 0;
  };
  return {
    previous: mean((t) => (t > 0 ? at(t, t - 1) : null)),
    // Only where the word's start is neither the character itself nor the one before.
    wordStart: mean((t) => {
      const j = wordStart(chars, t);
      return j >= 0 && j < t - 1 ? at(t, j) : null;
    }),
    sameCharacter: mean((t) => {
      let sum = 0,
        any = false;
      for (let j = 0; j < t; j++)
        if (chars[j] === chars[t]) {
          sum += at(t, j);
          any = true;
        }
      return any ? sum : null;
    }),
    self: mean((t) => (t > 0 ? at(t, t) : null)),
  };
}

/** The head's name: its largest score's kind, or null when no score reaches LABEL_AT. */
export function headKind(s: HeadScores): HeadKind | null {
  let best: HeadKind | null = null;
  for (const k of Object.keys(s) as HeadKind[])
    if (s[k] >= LABEL_AT && (!best || s[k] > s[best])) best = k;
  return best;
}
