// The C++ ONNX export (include/attnkit/onnx.h, through examples/onnx_export.cc:
// build/native/attnkit_onnx_export, built by scripts/build.sh native before
// this suite runs) against the package's model.exportOnnx(): one graph, two
// writers. The same weights (the package's weights file, or the same GPT-2
// checkpoint) and options give the same bytes, for every kind of model at
// opsets 17, 20 and 23, with and without the cache; the C++ files run in
// onnxruntime-node with attnkit's logits; the limits and the errors' messages
// are the same on both sides.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ort from "onnxruntime-node";
import { createAttnkit } from "attnkit";
import { gpt2Checkpoint } from "./lib/gpt2-checkpoint.js";
import { ONNX_GPT2, ONNX_MODELS, attnkitLogits, emptyPast, sequences } from "./lib/onnx.js";
import * as limits from "../../src/js/onnx-options.js";
import { assertClose } from "./helpers.js";

const NATIVE = fileURLToPath(new URL("../../build/native/attnkit_onnx_export", import.meta.url));

// The options each model is exported with, on both sides.
const OPTIONS = [{}, { opset: 17 }, { opset: 20 }, { cache: true }, { cache: true, opset: 17 }];

// Characters JSON.stringify escapes in the metadata's vocabulary, and some it
// does not (the unknown token first, then in code point order).
const VOCABULARY = ["\uFFFD", "\u0001", "\t", "\n", " ", '"', "\\", "a", "b", "\u007f", "é", "😀"];

const MODELS = [
  ...ONNX_MODELS,
  [
    "LayerNorm of epsilon 1e-7 (the config's float as JavaScript prints it)",
    {
      vocabSize: 10,
      maxSeqLen: 12,
      dModel: 16,
      numHeads: 4,
      layerNorm: true,
      layerNormEpsilon: 1e-7,
    },
  ],
  [
    "a GPT language model with its vocabulary",
    { maxSeqLen: 12, dModel: 16, numLayers: 2, numHeads: 2, dFF: 32, layerNorm: true },
    VOCABULARY,
  ],
];

/** The C++ tool's arguments for `options`. */
const nativeOptions = (options) => [
  ...(options.opset ? ["--opset", String(options.opset)] : []),
  ...(options.cache ? ["--cache"] : []),
];

/** Runs the C++ tool; {status, stdout, stderr}. */
function native(args) {
  assert.ok(existsSync(NATIVE), `${NATIVE}: expected it built (bash scripts/build.sh native)`);
  return spawnSync(NATIVE, args, { encoding: "utf8" });
}

/** Asserts two files' bytes are equal, naming the first byte that differs. */
function assertSameBytes(got, want, what) {
  if (Buffer.compare(Buffer.from(got), Buffer.from(want)) === 0) return;
  let at = 0;
  while (at < got.length && at < want.length && got[at] === want[at]) ++at;
  assert.fail(`${what}: C++ ${got.length} bytes, JS ${want.length}; they differ from byte ${at}`);
}

/** The C++ file `bytes` in onnxruntime-node on `sequences`: its logits against attnkit's. */
async function assertRunsInOnnxruntime(model, bytes, sequences, options) {
  const session = await ort.InferenceSession.create(bytes, {
    executionProviders: ["cpu"],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: "all",
    logSeverityLevel: 3,
  });
  const c = model.config;
  const B = sequences.length,
    T = sequences[0].length;
  const feeds = {
    input_ids: new ort.Tensor("int64", BigInt64Array.from(sequences.flat(), BigInt), [B, T]),
  };
  if (options.cache) Object.assign(feeds, emptyPast(ort, c, B));
  const out = await session.run(feeds);
  assert.deepEqual(out.logits.dims, [B, T, c.vocabSize]);
  const what = `onnxruntime-node, the C++ file (${JSON.stringify(options)}): logits`;
  assertClose(out.logits.data, attnkitLogits(model, sequences), what, { abs: 1e-5, rel: 1e-4 });
  await session.release();
}

describe("the C++ ONNX export writes the package's bytes", () => {
  let attn, dir;
  before(async () => {
    attn = await createAttnkit({ model: true });
    dir = mkdtempSync(join(tmpdir(), "attnkit-onnx-native-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Exports `model` (opened by the tool from `source`) on both sides with every option; runs two. */
  async function assertSameFiles(model, source, what) {
    for (const options of OPTIONS) {
      const out = join(dir, "model.onnx");
      const r = native([source, out, ...nativeOptions(options)]);
      assert.equal(r.status, 0, r.stderr);
      const bytes = readFileSync(out);
      assertSameBytes(
        bytes,
        await model.exportOnnx(options),
        `${what}, ${JSON.stringify(options)}`,
      );
      if (!options.opset || options.opset === 17) {
        const seqs = sequences(2, 9, model.config.vocabSize, 1);
        await assertRunsInOnnxruntime(model, bytes, seqs, options);
      }
    }
  }

  for (const [i, [what, config, vocabulary]] of MODELS.entries()) {
    it(`${what}: the same bytes at opsets 17, 20, 23, with and without the cache`, async () => {
      const model = attn.createModel(config, { seed: 11 + i, vocabulary });
      try {
        const weights = join(dir, `model-${i}.weights`);
        writeFileSync(weights, model.exportWeights());
        await assertSameFiles(model, weights, what);
      } finally {
        model.dispose();
      }
    });
  }

  for (const head of ["absent", "untied"]) {
    it(`a tiny GPT-2 checkpoint (${head === "absent" ? "tied" : "untied"} head): the same bytes, the tokenizer gpt2`, async () => {
      const c = gpt2Checkpoint({ ...ONNX_GPT2, head });
      const folder = join(dir, `gpt2-${head}`);
      mkdirSync(folder);
      writeFileSync(join(folder, "model.safetensors"), c.safetensors);
      writeFileSync(join(folder, "config.json"), c.configJson);
      const model = await attn.openCheckpoint(c.safetensors, { config: c.config });
      try {
        await assertSameFiles(model, folder, `GPT-2, head ${head}`);
      } finally {
        model.dispose();
      }
    });
  }

  it("the limits are the package's", () => {
    const r = native(["--limits"]);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      minOpset: limits.MIN_OPSET,
      maxOpset: limits.MAX_OPSET,
      defaultOpset: limits.DEFAULT_OPSET,
      geluOpset: limits.GELU_OPSET,
      attentionOpset: limits.ATTENTION_OPSET,
      maxMessageBytes: limits.MAX_MESSAGE_BYTES,
      graphBytes: limits.GRAPH_BYTES,
    });
  });

  it("bad requests: the package's messages", async () => {
    const model = attn.createModel({ vocabSize: 8, maxSeqLen: 8, dModel: 8 }, { seed: 1 });
    const weights = join(dir, "small.weights");
    writeFileSync(weights, model.exportWeights());
    try {
      for (const opset of [limits.MIN_OPSET - 1, limits.MAX_OPSET + 1]) {
        const r = native([weights, join(dir, "never.onnx"), "--opset", String(opset)]);
        assert.equal(r.status, 1, r.stderr);
        const js = await model.exportOnnx({ opset }).catch((e) => e);
        assert.equal(r.stderr.trim(), js.message);
      }
      const most = Math.floor((limits.MAX_MESSAGE_BYTES - limits.GRAPH_BYTES) / 4);
      assert.equal(native(["--check-size", String(most)]).status, 0);
      const r = native(["--check-size", String(most + 1)]);
      assert.equal(r.status, 1, r.stderr);
      const js = (() => {
        try {
          limits.checkOnnxSize({ parameterCount: most + 1 });
        } catch (e) {
          return e;
        }
      })();
      assert.equal(r.stderr.trim(), js.message);
    } finally {
      model.dispose();
    }
    assert.ok(!existsSync(join(dir, "never.onnx")), "a refused export wrote a file");
    // The tool itself: a missing model file is named.
    assert.throws(() =>
      execFileSync(NATIVE, [join(dir, "missing.weights"), join(dir, "x.onnx")], { stdio: "pipe" }),
    );
  });
});
