// Splits free text into tokens: words (with apostrophes), numbers, single CJK
// characters and single punctuation marks.

export const MAX_TOKENS = 128;

const TOKEN = /\p{Script=Han}|\p{Script=Hiragana}|\p{Script=Katakana}|[\p{L}\p{N}][\p{L}\p{N}'’-]*|[^\s]/gu;

export interface Tokens {
  tokens: string[];
  /** True if the text had more than MAX_TOKENS tokens. */
  truncated: boolean;
}

export function tokenize(text: string): Tokens {
  const all = text.match(TOKEN) ?? [];
  return { tokens: all.slice(0, MAX_TOKENS), truncated: all.length > MAX_TOKENS };
}

/** Labels that stay unique when a word repeats ("the", "the²"). */
export function uniqueLabels(tokens: string[]): string[] {
  const seen = new Map<string, number>();
  return tokens.map((t) => {
    const n = (seen.get(t) ?? 0) + 1;
    seen.set(t, n);
    return n === 1 ? t : `${t}${superscript(n)}`;
  });
}

function superscript(n: number): string {
  const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹";
  return String(n).split("").map((d) => digits[Number(d)]).join("");
}
