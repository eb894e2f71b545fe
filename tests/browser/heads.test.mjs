// The Language view's head scores (web/src/language/heads.ts) on hand-built attention maps
// of each pattern a trained head shows on the default sentence: the character before, the
// one two back, the start of the word (its first letter or the space before it), earlier
// copies of the same character, itself. Each must be named by its own score, and no other
// score may reach the threshold that names a head.
import assert from "node:assert/strict";
import { test } from "node:test";
import { pageModule } from "./lib/paths.mjs";

const { headScores, headKind, wordStart, LABEL_AT, HEAD_NAMES } = await pageModule(
  "web/src/language/heads.ts",
);

const SENTENCE = [..."the train left the station on time"];
const T = SENTENCE.length;

/**
 * A head's [1, T, T] map from `pick(t)`: the key each query t puts weight 1 on (null: on
 * itself; "spread": evenly over the characters so far).
 */
function map(pick) {
  const data = new Float32Array(T * T);
  for (let t = 0; t < T; t++) {
    const j = pick(t);
    if (j === "spread") data.fill(1 / (t + 1), t * T, t * T + t + 1);
    else data[t * T + (j === null || j < 0 || j > t ? t : j)] = 1;
  }
  return { shape: [1, T, T], data };
}

const PATTERNS = {
  previous: map((t) => t - 1),
  twoBack: map((t) => t - 2),
  // The space before the word (its first letter on the sentence's first word).
  wordStart: map((t) => {
    const j = wordStart(SENTENCE, t);
    return j < 0 ? null : Math.max(0, j - 1);
  }),
  // Where no earlier copy exists, spread.
  sameCharacter: map((t) => {
    for (let j = t - 1; j >= 0; j--) if (SENTENCE[j] === SENTENCE[t]) return j;
    return "spread";
  }),
  self: map(() => null),
};

test("each hand-built pattern is named by its own score, and no other score names it", () => {
  for (const [kind, w] of Object.entries(PATTERNS)) {
    const s = headScores(SENTENCE, w, 0);
    assert.equal(headKind(s), kind, `${kind}: ${JSON.stringify(s)}`);
    for (const [other, v] of Object.entries(s))
      if (other !== kind)
        assert.ok(v < LABEL_AT, `${kind} head: its ${other} score ${v.toFixed(2)} names it`);
  }
});

test("a head reading two characters back is not the start of the word", () => {
  // The pattern the issue saw: a band two back, weight 0.5 to 0.9 on almost every row.
  const w = map((t) => t - 2);
  for (let t = 0; t < T; t++)
    if (t >= 2) {
      const v = 0.5 + (0.4 * t) / T;
      w.data.fill(0, t * T, (t + 1) * T);
      w.data[t * T + t - 2] = v;
      w.data[t * T + t] = 1 - v;
    }
  const s = headScores(SENTENCE, w, 0);
  assert.equal(headKind(s), "twoBack", JSON.stringify(s));
  assert.equal(s.wordStart, 0, "the word's start is scored only three or more back");
  assert.equal(HEAD_NAMES.twoBack, "two characters back");
});

test("the word-start score reads the space before the word and the first letter alike", () => {
  const onLetter = map((t) => wordStart(SENTENCE, t));
  const onSpace = map((t) => {
    const j = wordStart(SENTENCE, t);
    return j < 0 ? null : j - 1;
  });
  for (const w of [onLetter, onSpace]) {
    const s = headScores(SENTENCE, w, 0);
    assert.equal(headKind(s), "wordStart", JSON.stringify(s));
    assert.ok(s.wordStart > 0.9, JSON.stringify(s));
  }
  // An even spread over the characters so far names nothing.
  assert.equal(
    headKind(
      headScores(
        SENTENCE,
        map(() => "spread"),
        0,
      ),
    ),
    null,
  );
});
