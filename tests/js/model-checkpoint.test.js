// GPT-2's details in the JS model layer (src/js/model.js): the config keys
// bias, tiedUnembedding, gpt2Init and layerNormEpsilon (createModel, the resolved
// config, the weights file's round trip, their errors), and the package's
// internal filler of a model from a checkpoint (attnkit[FILL], over
// model::CheckpointLoader): a c_attn tensor loaded from f16 bytes read back
// through parameters(), every error naming the tensor, and no leak.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";

// A GPT-2 of 2 layers: d_model 4, 2 heads, d_ff 8, 7 tokens, 5 positions.
const GPT2 = {
  vocabSize: 7,
  maxSeqLen: 5,
  dModel: 4,
  numLayers: 2,
  numHeads: 2,
  dFF: 8,
  layerNorm: true,
  bias: true,
};

/** The internal FILL symbol of the package (not exported: found by its description). */
const fillOf = (attn) =>
  Object.getOwnPropertySymbols(attn).find((s) => s.description === "attnkit.fill");

/** Every Hugging Face tensor of config c: [name, shape] (lm_head unless tied). */
function gpt2Tensors(c) {
  const { vocabSize: V, maxSeqLen: P, dModel: d, dFF: f } = c;
  const out = [
    ["transformer.wte.weight", [V, d]],
    ["transformer.wpe.weight", [P, d]],
  ];
  for (let i = 0; i < c.numLayers; ++i) {
    const h = `transformer.h.${i}.`;
    out.push(
      [h + "ln_1.weight", [d]],
      [h + "ln_1.bias", [d]],
      [h + "attn.c_attn.weight", [d, 3 * d]],
      [h + "attn.c_attn.bias", [3 * d]],
      [h + "attn.c_proj.weight", [d, d]],
      [h + "attn.c_proj.bias", [d]],
      [h + "ln_2.weight", [d]],
      [h + "ln_2.bias", [d]],
      [h + "mlp.c_fc.weight", [d, f]],
      [h + "mlp.c_fc.bias", [f]],
      [h + "mlp.c_proj.weight", [f, d]],
      [h + "mlp.c_proj.bias", [d]],
      [h + "attn.bias", [1, 1, P, P]],
    );
  }
  out.push(["transformer.ln_f.weight", [d]], ["transformer.ln_f.bias", [d]]);
  if (!c.tiedUnembedding) out.push(["lm_head.weight", [V, d]]);
  return out;
}

const count = (shape) => shape.reduce((a, b) => a * b, 1);

/** Stages `bytes` and loads them as tensor `name`. */
function loadBytes(fill, name, dtype, shape, bytes) {
  fill.staging(bytes.length).set(bytes);
  fill.load(name, dtype, shape);
}

/** v as IEEE half bits (v a multiple of 1/64 in [-2, 2], exact). */
function halfBits(v) {
  if (v === 0) return 0;
  const f = new Float32Array([v]);
  const u = new Uint32Array(f.buffer)[0];
  return ((u >>> 31) << 15) | ((((u >>> 23) & 0xff) - 127 + 15) << 10) | ((u & 0x7fffff) >>> 13);
}

/** Loads every tensor of c as f32 values i / 64 (mod 129, centred), but those in `skip`. */
function loadAll(fill, c, skip = []) {
  for (const [name, shape] of gpt2Tensors(c)) {
    if (skip.includes(name)) continue;
    const values = Float32Array.from({ length: count(shape) }, (_, i) => ((i % 129) - 64) / 64);
    loadBytes(fill, name, "F32", shape, new Uint8Array(values.buffer));
  }
}

describe("model config: bias, tiedUnembedding, gpt2Init, layerNormEpsilon", () => {
  let attn;
  before(async () => {
    attn = await createAttnkit({ model: true });
  });

  it("are off, untied and 1e-5 by default, and round-trip", () => {
    const model = attn.createModel({ vocabSize: 5, maxSeqLen: 4, dModel: 4 });
    assert.equal(model.config.bias, false);
    assert.equal(model.config.tiedUnembedding, false);
    assert.equal(model.config.gpt2Init, false);
    assert.equal(model.config.layerNormEpsilon, Math.fround(1e-5));
    assert.ok(model.parameters().unembedding);
    model.dispose();

    const config = {
      ...GPT2,
      tiedUnembedding: true,
      gpt2Init: true,
      layerNormEpsilon: 1e-3,
      numKvHeads: 1,
    };
    const gpt = attn.createModel(config, { seed: 4 });
    assert.deepEqual(gpt.config, {
      ...config,
      dK: 2,
      scaleBySqrtDk: true,
      layerNormEpsilon: Math.fround(1e-3),
    });
    const p = gpt.parameters();
    assert.equal(p.unembedding, undefined, "a tied unembedding is no tensor of its own");
    assert.deepEqual([p.layers[1].b_Q.rows, p.layers[1].b_Q.cols], [1, 4]);
    assert.deepEqual([p.layers[1].b_K.rows, p.layers[1].b_K.cols], [1, 2]);
    assert.deepEqual([p.layers[1].b_1.rows, p.layers[1].b_1.cols], [1, 8]);
    assert.deepEqual(Array.from(p.layers[0].b_O.data), [0, 0, 0, 0]);
    const back = attn.loadModel(gpt.exportWeights());
    assert.deepEqual(back.config, gpt.config);
    assert.deepEqual(back.parameters(), p);
    back.dispose();
    gpt.dispose();
  });

  it("gpt2Init draws GPT-2's scales; by default every matrix by its fan-in", () => {
    const config = { ...GPT2, dModel: 64, numHeads: 4, dFF: 256, vocabSize: 64, maxSeqLen: 64 };
    const rms = ({ data }) => Math.sqrt(data.reduce((s, x) => s + x * x, 0) / data.length);
    const [fanIn, gpt2] = [false, true].map((gpt2Init) => {
      const model = attn.createModel({ ...config, gpt2Init }, { seed: 3 });
      const p = model.parameters();
      model.dispose();
      return p;
    });
    // docs/model.md, "Initialisation".
    const near = (m, std) => Math.abs(rms(m) / std - 1) < 0.05;
    assert.ok(near(fanIn.tokenEmbedding, 0.3) && near(gpt2.tokenEmbedding, 0.02));
    assert.ok(near(fanIn.layers[1].W_Q, 1 / 8) && near(gpt2.layers[1].W_Q, 0.02));
    assert.ok(near(fanIn.layers[1].W_2, 1 / 16) && near(gpt2.layers[1].W_2, 0.02 / 2));
    assert.ok(near(fanIn.unembedding, 1 / 8) && near(gpt2.unembedding, 0.02));
  });

  it("are checked, named as the caller wrote them", () => {
    for (const [key, value, Type] of [
      ["bias", 1, AttnkitTypeError],
      ["tiedUnembedding", "yes", AttnkitTypeError],
      ["gpt2Init", 1, AttnkitTypeError],
      ["layerNormEpsilon", "1e-5", AttnkitTypeError],
      ["layerNormEpsilon", 0, AttnkitError],
      ["layerNormEpsilon", -1, AttnkitError],
      ["layerNormEpsilon", Infinity, AttnkitError],
      ["layerNormEpsilon", NaN, AttnkitError],
    ]) {
      assert.throws(
        () => attn.createModel({ ...GPT2, [key]: value }),
        (e) => e instanceof Type && e.parameter === `config.${key}`,
        `${key}: ${value}`,
      );
    }
    assert.throws(
      () => attn.createModel({ ...GPT2, layerNormEpsilon: 0 }),
      /^AttnkitError: config\.layerNormEpsilon: expected a finite value > 0, got 0$/,
    );
    assert.throws(
      () => attn.createModel({ ...GPT2, numLayers: 49 }),
      /config\.numLayers: expected 1 \.\. 48, got 49/,
    );
  });
});

describe("attnkit[FILL]: a model filled from a GPT-2 checkpoint", () => {
  let attn, FILL;
  before(async () => {
    attn = await createAttnkit({ model: true });
    FILL = fillOf(attn);
  });

  it("loads c_attn from f16 bytes into W_Q | W_K | W_V, read back through parameters()", () => {
    assert.equal(typeof FILL, "symbol");
    const fill = attn[FILL](GPT2);
    const name = "transformer.h.1.attn.c_attn.weight";
    loadAll(fill, GPT2, [name]);
    // c_attn [4, 12]: value (r, j) = (r * 12 + j - 24) / 16.
    const values = Array.from({ length: 48 }, (_, i) => (i - 24) / 16);
    const bits = Uint16Array.from(values, halfBits);
    loadBytes(fill, name, "F16", [4, 12], new Uint8Array(bits.buffer));
    const model = fill.finish();
    assert.deepEqual(model.config, {
      ...GPT2,
      numKvHeads: 2,
      dK: 2,
      scaleBySqrtDk: true,
      tiedUnembedding: false,
      gpt2Init: false,
      layerNormEpsilon: Math.fround(1e-5),
    });
    const { W_Q, W_K, W_V } = model.parameters().layers[1];
    for (const [m, col0] of [
      [W_Q, 0],
      [W_K, 4],
      [W_V, 8],
    ]) {
      assert.deepEqual([m.rows, m.cols], [4, 4]);
      for (let r = 0; r < 4; ++r)
        for (let j = 0; j < 4; ++j) assert.equal(m.data[r * 4 + j], values[r * 12 + col0 + j]);
    }
    // lm_head [7, 4] is the unembedding [4, 7] transposed.
    const { unembedding } = model.parameters();
    assert.equal(unembedding.data[1 * 7 + 3], (((3 * 4 + 1) % 129) - 64) / 64);
    assert.throws(() => fill.load(name, "F16", [4, 12]), { code: "disposed" });
    fill.dispose(); // after finish: nothing left to free
    model.dispose();
  });

  it("throws AttnkitErrors naming the tensor; the module keeps working and nothing leaks", () => {
    const expectError = (f, parameter, message, code = "invalid_argument", Type = AttnkitError) =>
      assert.throws(
        f,
        (e) =>
          e instanceof Type &&
          e.parameter === parameter &&
          e.code === code &&
          message.test(e.message),
        `${parameter} ${message}`,
      );
    const f32 = (n) => new Uint8Array(4 * n);
    const round = () => {
      const fill = attn[FILL]({ ...GPT2, tiedUnembedding: true });
      expectError(
        () =>
          loadBytes(
            fill,
            "bert.encoder.layer.0.attention.self.query.weight",
            "F32",
            [4, 4],
            f32(16),
          ),
        "bert.encoder.layer.0.attention.self.query.weight",
        /expected a GPT-2 tensor name .*, got an unknown name$/,
      );
      expectError(
        () => loadBytes(fill, "h.2.ln_1.weight", "F32", [4], f32(4)),
        "h.2.ln_1.weight",
        /expected layer 0 \.\. 1 \(numLayers - 1\), got layer 2$/,
      );
      expectError(
        () => loadBytes(fill, "h.0.attn.c_attn.weight", "F32", [4, 4], f32(16)),
        "h.0.attn.c_attn.weight",
        /^h\.0\.attn\.c_attn\.weight: expected shape \[4, 12\], got \[4, 4\]$/,
        "shape_mismatch",
      );
      expectError(
        () => {
          fill.staging(10);
          fill.load("wte.weight", "F32", [7, 4]);
        },
        "wte.weight",
        /expected staged bytes holding whole values \(4 bytes each, F32\), got 10 staged$/,
        "shape_mismatch",
      );
      const inf = new Uint8Array(new Uint16Array([0x3c00, 0x7c00, 0, 0]).buffer);
      expectError(
        () => loadBytes(fill, "ln_f.bias", "F16", [4], inf),
        "ln_f.bias",
        /expected finite values, got Infinity at element 1$/,
      );
      expectError(
        () => loadBytes(fill, "ln_f.bias", "F64", [4], f32(8)),
        "dtype",
        /expected one of "F32", "F16", "BF16"/,
      );
      expectError(
        () => fill.load(7, "F32", [4]),
        "name",
        /expected a tensor name/,
        "type",
        AttnkitTypeError,
      );
      loadBytes(fill, "ln_f.bias", "F32", [4], f32(4));
      expectError(
        () => loadBytes(fill, "transformer.ln_f.bias", "F32", [4], f32(4)),
        "transformer.ln_f.bias",
        /expected each tensor once, got this one a second time$/,
      );
      // lm_head beside a tied unembedding is skipped.
      loadBytes(fill, "lm_head.weight", "F32", [7, 4], f32(28));
      expectError(() => fill.finish(), "wte.weight", /expected every tensor of the config loaded/);
      // A failed finish frees the loader too.
      expectError(() => fill.staging(4), "loader", /disposed/, "disposed");

      // A loader given up half way.
      const halfway = attn[FILL](GPT2);
      loadAll(halfway, GPT2, ["transformer.wte.weight"]);
      halfway.dispose();
      halfway.dispose();
      expectError(() => halfway.finish(), "loader", /disposed/, "disposed");
      expectError(
        () => attn[FILL]({ ...GPT2, layerNormEpsilon: -1 }),
        "config.layerNormEpsilon",
        /expected a finite value > 0/,
      );
      // A complete one.
      const full = attn[FILL](GPT2);
      loadAll(full, GPT2);
      full.finish().dispose();
    };
    round();
    const heap0 = attn.heapBytesInUse();
    for (let i = 0; i < 20; ++i) round();
    assert.ok(attn.heapBytesInUse() <= heap0 + 4096, `heap ${heap0} -> ${attn.heapBytesInUse()}`);
    // The module keeps working.
    const model = attn.createModel(GPT2);
    assert.equal(model.parameters().layers.length, 2);
    model.dispose();
  });
});
