// "Download ONNX" in Chromium: the Language and Train views' button saves the model on
// screen as an ONNX file (docs/onnx.md) that onnxruntime-web opens (its wasm, in Node) and
// runs with the numbers of the weights file the view's own weights button saves, loaded
// into the package here; the GPT-2 view's, with a tiny GPT-2 checkpoint dropped on it,
// with the checkpoint's numbers as the package opens it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import * as ort from "onnxruntime-web";
import { createAttnkit } from "attnkit";
import { usePage } from "./lib/page.mjs";
import { dropArgs, dropOnPanel, tinyGpt2 } from "./lib/gpt2.mjs";
import { poll } from "./lib/wait.mjs";

ort.env.wasm.numThreads = 1;

let server, browser, context, p, problems;
const { open, openLanguage, languageReady, trainReady, shot } = usePage(
  (s) => ({ server, browser, context, page: p, problems } = s),
  { prefix: "onnx-" },
);

let attn;
before(async () => {
  attn = await createAttnkit({ model: true });
});
after(() => attn?.dispose());

/** Clicks the button `testid` and reads the file it saves: {name, bytes}. */
async function saved(testid) {
  const [download] = await Promise.all([
    p.waitForEvent("download"),
    p.click(`[data-testid="${testid}"]`),
  ]);
  const bytes = new Uint8Array(readFileSync(await download.path()));
  return { name: download.suggestedFilename(), bytes };
}

/**
 * Asserts that onnxruntime-web runs the ONNX file `onnx` with the logits of the weights
 * file `weights` (the package's inspect) on `tokens`.
 */
async function assertSameModel(onnx, weights, tokens) {
  const model = weights instanceof Uint8Array ? attn.loadModel(weights) : weights;
  try {
    const session = await ort.InferenceSession.create(onnx);
    const input = BigInt64Array.from(tokens, BigInt);
    const { logits } = await session.run({
      input_ids: new ort.Tensor("int64", input, [1, tokens.length]),
    });
    await session.release();
    assert.deepEqual(logits.dims, [1, tokens.length, model.config.vocabSize]);
    const want = model.inspect(tokens).logits.data;
    for (let i = 0; i < want.length; ++i) {
      const tolerance = 1e-5 + 1e-4 * Math.abs(want[i]);
      assert.ok(
        Math.abs(logits.data[i] - want[i]) <= tolerance,
        `logit ${i}: ${logits.data[i]} vs ${want[i]}`,
      );
    }
  } finally {
    model.dispose();
  }
}

test("the Language and Train views' Download ONNX saves the model on screen; onnxruntime-web runs it", async () => {
  await openLanguage("&lp=small");
  await p.click('[data-testid="lang-step"]');
  await languageReady("one step trained");
  const language = await saved("lang-onnx");
  assert.match(language.name, /^attnkit-language-step1\.onnx$/);
  await assertSameModel(language.bytes, (await saved("lang-download")).bytes, [1, 2, 3, 4, 5]);
  await shot("language");

  await p.goto(`${server.url}?v=train`);
  await trainReady();
  const train = await saved("train-onnx");
  assert.match(train.name, /^attnkit-\w+-step0\.onnx$/);
  await assertSameModel(train.bytes, (await saved("train-download")).bytes, [1, 2, 3]);
  assert.deepEqual(problems, []);
});

test("the GPT-2 view's Download ONNX saves the checkpoint in use; onnxruntime-web runs it", async () => {
  const ckpt = tinyGpt2();
  await open("v=gpt2");
  await p.waitForSelector('[data-testid="gpt2-source"]');
  const files = [
    ["model.safetensors", ckpt.safetensors],
    ["config.json", ckpt.configJson],
  ];
  await p.evaluate(dropOnPanel, dropArgs(server, files));
  await p.waitForSelector('[data-testid="gpt2-confirm"]:not([hidden])');
  await p.click('[data-testid="gpt2-confirm-yes"]');
  await poll(
    async () => !(await p.isDisabled('[data-testid="gpt2-onnx"]')),
    "the model in use",
    60000,
  );
  const gpt2 = await saved("gpt2-onnx");
  assert.equal(gpt2.name, "attnkit-gpt2-model.safetensors.onnx");
  const model = await attn.openCheckpoint(ckpt.safetensors, { config: ckpt.config });
  await assertSameModel(gpt2.bytes, model, [464, 3290, 318]);
  assert.deepEqual(problems, []);
});
