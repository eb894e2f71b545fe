// attnkit: the losses of a text's letter-frequency models, the reference lines a
// language model's validation loss is read against: the unigram model predicts each
// character by its frequency, the bigram model by the frequency of the characters that
// follow the one before it. Both are counted on a dataset's training part and scored on
// its validation windows, the positions TextDataset.validationLoss scores.
import { rangeError, typeError } from "./errors.js";

// Windows per validationBatch call (a batch's memory, as validationLoss's).
const CHUNK = 16;

/**
 * { unigram, bigram }: the mean cross-entropy (nats per character) over `dataset`'s
 * validation windows of add-one smoothed counts of its training part. `text` is the
 * dataset's own text (it holds no copy of its training tokens in JS).
 */
export function referenceLosses(dataset, text) {
  if (typeof text !== "string") throw typeError("text", "a string (the dataset's text)", text);
  const V = dataset.vocabSize;
  const tokens = dataset.tokenizer.encode(text);
  const total = dataset.trainTokens + dataset.validationTokens;
  if (tokens.length !== total)
    throw rangeError(
      "text",
      `the dataset's text (${total} characters)`,
      `a text of ${tokens.length} characters`,
    );
  // Counts of the training part: each character, and each pair of neighbours.
  const train = dataset.trainTokens;
  const unigram = new Float64Array(V);
  const bigram = new Float64Array(V * V);
  const following = new Float64Array(V);
  for (let i = 0; i < train; i++) unigram[tokens[i]]++;
  for (let i = 1; i < train; i++) {
    bigram[tokens[i - 1] * V + tokens[i]]++;
    following[tokens[i - 1]]++;
  }
  // Scored on every validation position: -log p(target) and -log p(target | input).
  let uni = 0,
    bi = 0,
    n = 0;
  for (let first = 0; first < dataset.validationWindows; first += CHUNK) {
    const count = Math.min(CHUNK, dataset.validationWindows - first);
    const b = dataset.validationBatch(first, count);
    for (let p = 0; p < b.targets.length; p++) {
      const prev = b.tokens[p],
        next = b.targets[p];
      if (next < 0) continue;
      uni -= Math.log((unigram[next] + 1) / (train + V));
      bi -= Math.log((bigram[prev * V + next] + 1) / (following[prev] + V));
      n++;
    }
  }
  return { unigram: uni / n, bigram: bi / n };
}
