// model.exportOnnx(): every kind of model the model layer holds (attention-only
// task models, GPT language models, GPT-2 opened from a checkpoint; grouped K/V
// heads, the scale switch off, tied and untied unembeddings, 1 to 8 layers) as
// an ONNX file that both onnxruntimes (onnxruntime-node's native CPU provider
// and onnxruntime-web's wasm, in Node) load with their graph optimisations off
// and at their highest, and that gives attnkit's logits within 1e-4 relative
// in each; with the KV cache as inputs and outputs, 20 tokens generated
// greedily through each (at both levels) equal attnkit's. The files are read back with
// ONNX's schema (onnx-buf) for their opset and metadata.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ModelProtoSchema } from "onnx-buf";
import ortNode from "onnxruntime-node";
import * as ortWeb from "onnxruntime-web";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";
import { createAttnkitWorker } from "attnkit/worker";
import { gpt2Checkpoint } from "./lib/gpt2-checkpoint.js";
import { ONNX_GPT2, ONNX_MODELS, attnkitLogits, emptyPast, sequences } from "./lib/onnx.js";
import { checkOnnxSize } from "../../src/js/onnx-options.js";
import { assertClose } from "./helpers.js";

ortWeb.env.wasm.numThreads = 1;
ortWeb.env.logLevel = "error";

// The onnxruntimes each file runs in, each on one thread with its own
// execution provider named (each package registers its backends in its own
// copy of onnxruntime-common; naming the provider picks the right one even if
// they shared it). `ort` makes the engine's tensors.
const ENGINES = [
  {
    name: "onnxruntime-node",
    ort: ortNode,
    options: { executionProviders: ["cpu"], intraOpNumThreads: 1, interOpNumThreads: 1 },
  },
  { name: "onnxruntime-web", ort: ortWeb, options: { executionProviders: ["wasm"] } },
];

const VOCABULARY = ["\uFFFD", ..." .abcdefghijklmnopqrstuvwxyz"];
// The Language view's default preset (web/src/language/protocol.ts).
const LANGUAGE_DEFAULT = { maxSeqLen: 64, dModel: 96, numLayers: 3, numHeads: 4, dFF: 288 };
const LEVELS = ["disabled", "all"];

/** An int64 tensor of `engine` holding `values` with `dims`. */
const int64 = (engine, values, dims) =>
  new engine.ort.Tensor("int64", BigInt64Array.from(values, BigInt), dims);

/** A session of `engine` on the ONNX file `bytes` at graph optimisation level `level`. */
const session = (engine, bytes, level) =>
  engine.ort.InferenceSession.create(bytes, {
    ...engine.options,
    graphOptimizationLevel: level,
    logSeverityLevel: 3,
  });

/**
 * Runs `model`'s ONNX file (options `options`) on `sequences` in every engine
 * at every optimisation level and asserts onnxruntime's logits are attnkit's.
 */
async function assertSameLogits(model, sequences, options = {}) {
  const bytes = await model.exportOnnx(options);
  assert.deepEqual(readBack(bytes).unused, [], "initializers that no node reads");
  // Written by parts into one buffer, the file is still toBinary's encoding of what it holds.
  assert.deepEqual(toBinary(ModelProtoSchema, fromBinary(ModelProtoSchema, bytes)), bytes);
  const B = sequences.length,
    T = sequences[0].length;
  const want = attnkitLogits(model, sequences);
  for (const engine of ENGINES) {
    for (const level of LEVELS) {
      const s = await session(engine, bytes, level);
      const feeds = { input_ids: int64(engine, sequences.flat(), [B, T]) };
      if (options.cache) Object.assign(feeds, emptyPast(engine.ort, model.config, B));
      const out = await s.run(feeds);
      assert.deepEqual(out.logits.dims, [B, T, model.config.vocabSize]);
      const what = `${engine.name}, ${level}, opset ${options.opset ?? 23}: logits`;
      assertClose(out.logits.data, want, what, { abs: 1e-5, rel: 1e-4 });
      await s.release();
    }
  }
  return bytes;
}

/** The argmax of row `row` of [rows, V] logits. */
function argmax(data, row, V) {
  let best = 0;
  for (let i = 1; i < V; ++i) if (data[row * V + i] > data[row * V + best]) best = i;
  return best;
}

/**
 * `length` tokens generated greedily after `prompt` (token ids) through the
 * cached ONNX file in `engine` at graph optimisation level `level`.
 */
async function generateOnnx(engine, bytes, c, prompt, length, level) {
  const s = await session(engine, bytes, level);
  const feeds = emptyPast(engine.ort, c);
  let ids = Array.from(prompt);
  const tokens = [];
  for (let step = 0; step < length; ++step) {
    feeds.input_ids = int64(engine, ids, [1, ids.length]);
    const out = await s.run(feeds);
    const next = argmax(out.logits.data, ids.length - 1, c.vocabSize);
    tokens.push(next);
    for (let l = 0; l < c.numLayers; ++l) {
      for (const part of ["key", "value"]) {
        const present = out[`present.${l}.${part}`];
        assert.deepEqual(present.dims, [
          1,
          c.numKvHeads,
          ids.length + feeds[`past_key_values.${l}.${part}`].dims[2],
          c.dK,
        ]);
        feeds[`past_key_values.${l}.${part}`] = present;
      }
    }
    ids = [next];
  }
  await s.release();
  return tokens;
}

/** `length` tokens generated greedily after `prompt` (token ids) by `model`'s own logits (inspect). */
function greedyTokens(model, prompt, length) {
  const context = Array.from(prompt);
  for (let i = 0; i < length; ++i) {
    const { logits } = model.inspect(context);
    context.push(argmax(logits.data, context.length - 1, model.config.vocabSize));
  }
  return context.slice(prompt.length);
}

/**
 * Asserts that greedy generation through `model`'s cached ONNX file at each
 * of `opsets`, in every engine at every optimisation level, gives `want`.
 */
async function assertSameGeneration(model, prompt, want, opsets) {
  for (const opset of opsets) {
    const cached = await model.exportOnnx({ cache: true, opset });
    for (const engine of ENGINES) {
      for (const level of LEVELS) {
        const got = await generateOnnx(engine, cached, model.config, prompt, want.length, level);
        assert.deepEqual(got, Array.from(want), `${engine.name}, ${level}, opset ${opset}`);
      }
    }
  }
}

/** The metadata_props of an ONNX file as an object, with its opset and producer. */
function readBack(bytes) {
  const proto = fromBinary(ModelProtoSchema, bytes);
  return {
    opset: Number(proto.opsetImport.find((o) => o.domain === "").version),
    producer: `${proto.producerName} ${proto.producerVersion}`,
    metadata: Object.fromEntries(proto.metadataProps.map((p) => [p.key, p.value])),
    inputs: proto.graph.input.map((v) => v.name),
    outputs: proto.graph.output.map((v) => v.name),
    initializers: proto.graph.initializer.map((t) => t.name),
    unused: proto.graph.initializer
      .map((t) => t.name)
      .filter((name) => !proto.graph.node.some((n) => n.input.includes(name))),
  };
}

/**
 * A model of `config` exported in a Node process of its own: {weights, file}
 * (bytes), `grown`, the growth of the process's peak resident size during
 * exportOnnx(), and `wasmGrown`, of the module's memory.
 */
function exportMemory(config) {
  const code = `
    import { createAttnkit } from "attnkit";
    const attn = await createAttnkit({ model: true });
    const warm = attn.createModel({ vocabSize: 4, maxSeqLen: 4, dModel: 4 });
    await warm.exportOnnx(); // the writer loaded and compiled
    warm.dispose();
    const model = attn.createModel(${JSON.stringify(config)}, { seed: 1 });
    const memory = attn.memoryBytes();
    globalThis.gc();
    // The peak of the export alone: Linux's high-water mark reset here (an
    // earlier peak, such as the model's creation, would count otherwise).
    const { readFileSync, writeFileSync } = await import("node:fs");
    const kB = (field) => {
      const line = readFileSync("/proc/self/status", "utf8").split("\\n").find((l) => l.startsWith(field + ":"));
      return 1024 * parseInt(line.slice(field.length + 1), 10);
    };
    writeFileSync("/proc/self/clear_refs", "5");
    const rss = kB("VmRSS");
    const bytes = await model.exportOnnx();
    const peak = kB("VmHWM");
    console.log(JSON.stringify({
      weights: 4 * model.parameterCount,
      file: bytes.length,
      grown: peak - rss,
      wasmGrown: attn.memoryBytes() - memory,
    }));`;
  const r = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", code], {
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

describe("model.exportOnnx", () => {
  let attn;
  before(async () => {
    attn = await createAttnkit({ model: true });
  });

  for (const [what, config] of ONNX_MODELS) {
    it(`${what}: onnxruntime's logits are attnkit's (opsets 23, 17 and 20); 20 tokens through the cache`, async () => {
      const model = attn.createModel(config, { seed: 11 });
      try {
        const seqs = sequences(2, 9, config.vocabSize, 1);
        for (const opset of [23, 17, 20]) await assertSameLogits(model, seqs, { opset });
        await assertSameLogits(model, seqs, { cache: true });
        await assertSameLogits(model, seqs, { cache: true, opset: 17 });
        // A past that grows to 22 positions: the cache's heads (grouped or not) in every step.
        const prompt = [1, 4, 2];
        await assertSameGeneration(model, prompt, greedyTokens(model, prompt, 20), [23, 17]);
      } finally {
        model.dispose();
      }
    });
  }

  it("the Language view's default preset: logits, 20 greedy tokens through the cache, metadata", async () => {
    const model = attn.createModel(
      { ...LANGUAGE_DEFAULT, layerNorm: true },
      { seed: 5, vocabulary: VOCABULARY },
    );
    try {
      const bytes = await assertSameLogits(model, sequences(2, 64, VOCABULARY.length, 3));
      const back = readBack(bytes);
      assert.equal(back.opset, 23);
      assert.equal(back.producer, `attnkit ${attn.version}`);
      assert.equal(back.metadata.producer, `attnkit ${attn.version}`);
      assert.equal(back.metadata.tokenizer, "characters");
      assert.deepEqual(JSON.parse(back.metadata.vocabulary), VOCABULARY);
      assert.deepEqual(JSON.parse(back.metadata.config), model.config);
      assert.deepEqual(back.inputs, ["input_ids"]);
      assert.deepEqual(back.outputs, ["logits"]);
      const prompt = "the whale ";
      const want = model.generate(prompt, { length: 20, temperature: 0 });
      const ids = model.tokenizer.encode(prompt);
      await assertSameGeneration(model, ids, want.tokens, [23, 17]);
      for (const opset of [23, 17]) {
        const io = readBack(await model.exportOnnx({ cache: true, opset }));
        assert.equal(io.opset, opset);
        assert.deepEqual(io.inputs.slice(0, 3), [
          "input_ids",
          "past_key_values.0.key",
          "past_key_values.0.value",
        ]);
        assert.deepEqual(io.outputs.slice(0, 3), ["logits", "present.0.key", "present.0.value"]);
        assert.equal(io.inputs.length, 1 + 2 * LANGUAGE_DEFAULT.numLayers);
      }
    } finally {
      model.dispose();
    }
  });

  for (const head of ["absent", "untied"]) {
    it(`a tiny GPT-2 checkpoint (${head === "absent" ? "tied" : "untied"} head): logits, greedy tokens, the tokenizer named`, async () => {
      const c = gpt2Checkpoint({ ...ONNX_GPT2, head });
      const model = await attn.openCheckpoint(c.safetensors, { config: c.config });
      try {
        const bytes = await assertSameLogits(model, sequences(2, 12, 300, 5));
        await assertSameLogits(model, sequences(1, 12, 300, 6), { opset: 17 });
        const back = readBack(bytes);
        assert.equal(back.metadata.tokenizer, "gpt2");
        assert.equal(back.metadata.vocabulary, undefined);
        assert.equal(back.initializers.includes("unembedding"), head === "untied");
        // generate() reads text; the same greedy steps from the model's own logits.
        const prompt = [5, 17, 42];
        await assertSameGeneration(model, prompt, greedyTokens(model, prompt, 20), [23, 17]);
      } finally {
        model.dispose();
      }
    });
  }

  it("through attnkit/worker: the same bytes", async () => {
    const worker = await createAttnkitWorker({ model: true });
    try {
      const config = { vocabSize: 8, maxSeqLen: 8, dModel: 8, numHeads: 2 };
      const remote = await worker.createModel(config, { seed: 2 });
      const local = attn.createModel(config, { seed: 2 });
      assert.deepEqual(
        await remote.exportOnnx({ opset: 20 }),
        await local.exportOnnx({ opset: 20 }),
      );
      local.dispose();
    } finally {
      worker.dispose();
    }
  });

  it("bad requests: named errors, and the model keeps working", async () => {
    const model = attn.createModel({ vocabSize: 8, maxSeqLen: 8, dModel: 8 }, { seed: 1 });
    const refuses = (options, parameter, type = AttnkitError) =>
      assert.rejects(model.exportOnnx(options), (e) => {
        assert.ok(e instanceof type, `${e}`);
        assert.equal(e.parameter, parameter);
        assert.match(e.message, new RegExp(`^${parameter.replace(".", "\\.")}: expected `));
        return true;
      });
    await refuses({ opset: 16 }, "options.opset");
    await refuses({ opset: 25 }, "options.opset");
    await refuses({ opset: 23.5 }, "options.opset");
    await refuses({ opset: "23" }, "options.opset", AttnkitTypeError);
    await refuses({ cache: 1 }, "options.cache", AttnkitTypeError);
    await refuses({ opsets: 23 }, "options.opsets");
    await refuses("23", "options", AttnkitTypeError);
    await assert.rejects(
      model.exportOnnx({ opset: 16 }),
      /opset from 17 \(LayerNormalization\) to 24, got 16/,
    );
    assert.ok((await model.exportOnnx()).length > 0);
    model.dispose();
    await assert.rejects(model.exportOnnx(), { code: "disposed" });
  });

  it("memory: the file's bytes besides the model, each weight copied once", () => {
    // 12.6M parameters (50 MB of weights) exported in a process of its own:
    // its peak resident size grows by the file (the weights once), not by
    // copies of the weights or a growing buffer; wasm memory does not grow.
    const config = {
      vocabSize: 8,
      maxSeqLen: 8,
      dModel: 512,
      numLayers: 4,
      numHeads: 8,
      dFF: 2048,
      layerNorm: true,
    };
    const m = exportMemory(config);
    assert.ok(m.file > m.weights, `file ${m.file} bytes, weights ${m.weights}`);
    assert.equal(m.wasmGrown, 0, "wasm memory grew");
    // One copy is 1.0x; a second copy of the weights, or a buffer grown by
    // doubling, 2x or more. What lies between is garbage V8 has not swept yet
    // (up to 1.31x while other test files load both cores).
    assert.ok(
      m.grown < 1.5 * m.weights,
      `peak resident size grew by ${m.grown} bytes: ${(m.grown / m.weights).toFixed(2)}x the weights`,
    );
  });

  it("a model over protobuf's 2 GiB is refused before anything is written", () => {
    // The check exportOnnx makes first (a model of 2^29 parameters takes minutes
    // to create in wasm): the most parameters whose file fits, and one more.
    const fits = { parameterCount: Math.floor((2 ** 31 - 1 - 2 ** 20) / 4) };
    checkOnnxSize(fits);
    const over = { parameterCount: fits.parameterCount + 1 };
    assert.throws(
      () => checkOnnxSize(over),
      (e) => {
        assert.ok(e instanceof AttnkitError);
        assert.equal(e.parameter, "model");
        assert.match(
          e.message,
          /^model: expected a model whose ONNX file fits one protobuf message \(2 GiB/,
        );
        assert.match(e.message, new RegExp(`got ${over.parameterCount} parameters`));
        return true;
      },
    );
  });
});
