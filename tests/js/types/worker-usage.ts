// attnkit/worker's types as a strict (exactOptionalPropertyTypes) consumer uses
// them: every overload of a synchronous call maps to a Promise of its own
// result, so that what the options ask for is not "possibly undefined".
import { createAttnkitWorker } from "attnkit/worker";
import type { Matrix, Tensor } from "attnkit/worker";

export async function overloads(): Promise<void> {
  const w = await createAttnkitWorker({ model: true });
  const t3 = { data: new Float32Array(2 * 3 * 4), shape: [2, 3, 4] };
  const m = { data: new Float32Array(16), rows: 4, cols: 4 };

  const present = await w.multiHeadAttentionQKV(t3, t3, t3, { numHeads: 2 }, { present: true });
  const presentKey: Tensor = present.presentKey;
  const presentValue: Tensor = present.presentValue;
  const scored = await w.multiHeadAttentionQKV(t3, t3, t3, { numHeads: 2 }, { scores: "weights" });
  const scores: Tensor = scored.scores;
  const both = await w.multiHeadAttentionQKV(
    t3,
    t3,
    t3,
    { numHeads: 2 },
    { present: true, scores: "raw" },
  );
  const all: [Tensor, Tensor] = [both.presentKey, both.scores];
  const plain = await w.multiHeadAttentionQKV(t3, t3, t3, { numHeads: 2 });
  // @ts-expect-error: without present the result may have no presentKey
  const none: Tensor = plain.presentKey;

  const withOutput = await w.multiHeadAttentionBackward(
    t3,
    { W_Q: m, W_K: m, W_V: m, W_O: m },
    { numHeads: 2 },
    t3,
  );
  const dW_O: Matrix = withOutput.dW_O;
  const noOutput = await w.multiHeadAttentionBackward(
    t3,
    { W_Q: m, W_K: m, W_V: m },
    { numHeads: 2 },
    t3,
  );
  // @ts-expect-error: without W_O there may be no dW_O
  const missing: Matrix = noOutput.dW_O;

  // A language model's overload: vocabSize from the vocabulary.
  const model = await w.createModel(
    { maxSeqLen: 8, dModel: 16, numHeads: 2 },
    { vocabulary: ["a", "b", "c"] },
  );
  const scoredInspection = await model.inspect([1, 2], [2, -1]);
  // A held Model's async method: one promise, not a promise of one.
  const onnxFile: Uint8Array = await model.exportOnnx({ cache: true });
  void onnxFile;
  // An async call of the model module: a held Model, its progress across the worker.
  const gpt2 = await w.openCheckpoint("openai-community/gpt2", {
    onProgress: ({ loadedBytes }) => void loadedBytes,
  });
  const pieces = await gpt2.tokenizer?.encode(" world");
  const first: number | undefined = pieces?.[0];
  const info = await w.checkpointInfo(new Uint8Array(8), { config: {}, numHeads: 2 });
  const infoBytes: number = info.totalBytes;
  void [first, infoBytes];
  const loss: number = scoredInspection.loss;
  // Calls through with() keep their overloads.
  const viaWith = await w
    .with({ transfer: true })
    .multiHeadAttentionQKV(t3, t3, t3, { numHeads: 2 }, { present: true });
  const viaWithKey: Tensor = viaWith.presentKey;
  void [presentKey, presentValue, scores, all, none, dW_O, missing, loss, viaWithKey];
  await w.dispose();
}
