// Splits free text into tokens: words (with apostrophes), numbers, single CJK
// characters, and every other visible character on its own: a punctuation mark or
// an emoji. Characters are user-perceived ones (grapheme clusters, Intl.Segmenter),
// so "❤️" (heart + variation selector) or a family emoji joined by ZWJ is one token.

import { sub } from "./format";

export const MAX_TOKENS = 128;

const WORD_START = /^[\p{L}\p{N}]/u;
const WORD_PART = /^[\p{L}\p{N}'’-]/u;
const CJK = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;
const SPACE = /^\s+$/u;

export interface Tokens {
  tokens: string[];
  /** True if the text had more than MAX_TOKENS tokens. */
  truncated: boolean;
  /** Tokens in the text before cutting. */
  total: number;
  /** The first tokens cut ("" if none), to say where the cut is. */
  cut: string;
}

function graphemes(text: string): string[] {
  if (typeof Intl !== "undefined" && "Segmenter" in Intl) {
    return Array.from(
      new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(text),
      (s) => s.segment,
    );
  }
  return Array.from(text);
}

export function tokenize(text: string): Tokens {
  const all: string[] = [];
  let word = "";
  const end = () => {
    if (word) all.push(word);
    word = "";
  };
  for (const g of graphemes(text)) {
    if (SPACE.test(g)) end();
    else if (CJK.test(g)) {
      end();
      all.push(g);
    } else if (word ? WORD_PART.test(g) : WORD_START.test(g)) word += g;
    else {
      end();
      // A character that draws nothing (a lone variation selector or joiner) is no token.
      if (/[^\p{M}\p{Cf}\u{FE00}-\u{FE0F}]/u.test(g)) all.push(g);
    }
  }
  end();
  const rest = all.slice(MAX_TOKENS);
  const cut = rest.slice(0, 4).join(" ") + (rest.length > 4 ? " …" : "");
  return { tokens: all.slice(0, MAX_TOKENS), truncated: rest.length > 0, total: all.length, cut };
}

/**
 * Labels that stay unique when a word repeats: every occurrence of a repeated word gets its
 * position as a subscript, as the matrices' token labels do ("the ₀" … "the ₃"), and not a
 * raised count ("the²" reads as a square).
 */
export function uniqueLabels(tokens: string[]): string[] {
  const count = new Map<string, number>();
  for (const t of tokens) count.set(t, (count.get(t) ?? 0) + 1);
  return tokens.map((t, i) => (count.get(t)! > 1 ? `${t} ${sub(i)}` : t));
}
