// The GPT-2 view's part of the URL (in the page's first load: a link must keep it while
// another view is shown): the checkpoint's repository id or URL, the sentence, the head
// shown large and the score the grid is sorted by. The view's own code loads when it opens.
import { queryParts } from "../state";

export const DEFAULT_SENTENCE = "When Mary and John went to the store, John gave a drink to";

export type ScoreKind = "induction" | "previousToken" | "duplicateToken";
export const SCORE_KINDS: readonly ScoreKind[] = ["induction", "previousToken", "duplicateToken"];

export const PARAMS = {
  model: "gm",
  sentence: "gs",
  layer: "gl",
  head: "gh",
  sort: "gsort",
  color: "gc",
} as const;
export const GPT2_PARAMS: readonly string[] = Object.values(PARAMS);

export interface Gpt2Settings {
  /** A Hugging Face repository id or a URL ("" when none, or a file: a file cannot go in a link). */
  model: string;
  sentence: string;
  layer: number;
  head: number;
  /** The score the grid's frames are coloured by. */
  color: ScoreKind;
  /** Whether the grid is sorted by that score (else in the model's order). */
  sort: boolean;
}

function fromQuery(query: string): Gpt2Settings {
  const p = new URLSearchParams(query);
  const whole = (k: string) => {
    const n = Number(p.get(k));
    return Number.isInteger(n) && n >= 0 ? n : 0;
  };
  const color = p.get(PARAMS.color) ?? "";
  return {
    model: p.get(PARAMS.model) ?? "",
    sentence: p.get(PARAMS.sentence) || DEFAULT_SENTENCE,
    layer: whole(PARAMS.layer),
    head: whole(PARAMS.head),
    color: (SCORE_KINDS as readonly string[]).includes(color) ? (color as ScoreKind) : "induction",
    sort: p.get(PARAMS.sort) === "1",
  };
}

export const gpt2Settings: Gpt2Settings = fromQuery(location.search);

queryParts.push(() => {
  const s = gpt2Settings;
  const p = new URLSearchParams();
  if (s.model) p.set(PARAMS.model, s.model);
  if (s.sentence !== DEFAULT_SENTENCE) p.set(PARAMS.sentence, s.sentence);
  if (s.layer) p.set(PARAMS.layer, String(s.layer));
  if (s.head) p.set(PARAMS.head, String(s.head));
  if (s.color !== "induction") p.set(PARAMS.color, s.color);
  if (s.sort) p.set(PARAMS.sort, "1");
  return p.toString();
});
