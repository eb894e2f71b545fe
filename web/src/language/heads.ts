// What each head of a sentence's attention measurably does, computed from its weights:
// the mean weight a character puts on the character before it, on the one two back, on
// the start of its word (its first letter or the space before it), on earlier occurrences
// of the same character, and on itself. A head is named by its largest score when that is
// at least LABEL_AT. The word's start is scored only where it lies three or more
// characters back, so that a head reading a fixed distance back (one or two) never
// collects it.
import type { Tensor } from "attnkit";

export interface HeadScores {
  previous: number;
  twoBack: number;
  wordStart: number;
  sameCharacter: number;
  self: number;
}

export type HeadKind = keyof HeadScores;

export const HEAD_NAMES: Record<HeadKind, string> = {
  previous: "previous character",
  twoBack: "two characters back",
  wordStart: "start of the word",
  sameCharacter: "same character",
  self: "itself",
};

/**
 * The least score that names a head: about three times what a head spread evenly over the
 * characters so far scores on the default sentence on a single position (the word's start
 * covers two positions, so an even spread scores twice as much there, still well under
 * this), so that no head is named by little more than an even spread gives.
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
    twoBack: mean((t) => (t > 1 ? at(t, t - 2) : null)),
    // The first letter and the space (or mark) before it; only where both are three or
    // more back, out of reach of the previous and two-back scores.
    wordStart: mean((t) => {
      const j = wordStart(chars, t);
      return j >= 0 && j <= t - 3 ? at(t, j) + (j > 0 ? at(t, j - 1) : 0) : null;
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
