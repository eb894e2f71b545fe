// attnkit.headScores (src/js/head-scores.js): a two-layer model whose weights are set by
// hand (through its weights file) so that one layer-0 head attends to the previous token
// and one layer-1 head to the token after the earlier copy of the current token scores
// ~1 as previous-token and induction head, its random heads ~0; the scores of the
// caller's own tokens where they are defined; the repeated sequence; every bad argument.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";

// One-hot token embeddings in dims 0 .. V - 1, one-hot positions in V .. V + P - 1, and the
// previous token's one-hot (written by the layer-0 head) in V + P .. 2 V + P - 1.
const V = 16;
const P = 32;
const D = 2 * V + P;
const DK = 32;
const CONFIG = {
  vocabSize: V,
  maxSeqLen: P,
  dModel: D,
  numLayers: 2,
  numHeads: 2,
  dK: DK,
  scaleBySqrtDk: false,
};
/** A score's sharpness: the chosen key's score above the others. */
const C = 30;

/** FNV-1a (32-bit) of bytes (the weights file's hash of every byte before it). */
function fnv1a(bytes) {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h;
}

/**
 * The weights file `bytes` with each tensor `from` (a parameters() matrix) replaced by
 * `to`: found by its values among the file's floats, whatever the file's version.
 */
function withTensors(bytes, pairs) {
  const out = Uint8Array.from(bytes);
  const floats = new Float32Array(out.buffer, 0, Math.floor(out.length / 4));
  for (const [from, to] of pairs) {
    const n = from.data.length;
    let at = -1;
    for (let i = 0; i + n <= floats.length && at < 0; i++) {
      let j = 0;
      while (j < n && Object.is(floats[i + j], from.data[j])) j++;
      if (j === n) at = i;
    }
    assert.ok(at >= 0, "the tensor is in the weights file");
    floats.set(to, at);
  }
  new DataView(out.buffer).setUint32(out.length - 4, fnv1a(out.subarray(0, out.length - 4)), true);
  return out;
}

/** Head 0 of layer 0 copies the previous token; head 0 of layer 1 attends to the token after its earlier copy. */
function inductionModel(attn) {
  const random = attn.createModel(CONFIG, { seed: 3 });
  const p = random.parameters();
  const bytes = random.exportWeights();
  random.dispose();
  const tok = new Float32Array(V * D);
  for (let i = 0; i < V; i++) tok[i * D + i] = 1;
  const pos = new Float32Array(P * D);
  for (let t = 0; t < P; t++) pos[t * D + V + t] = 1;
  // Head 0's columns of W_Q, W_K, W_V are 0 .. DK - 1; its rows of W_O the same.
  const set = (m, r, c, v) => (m[r * m.cols + c] = v);
  const copy = (m) => Object.assign(Float32Array.from(m.data), { cols: m.cols });
  const [l0, l1] = p.layers;
  const q0 = copy(l0.W_Q),
    k0 = copy(l0.W_K),
    v0 = copy(l0.W_V),
    o0 = copy(l0.W_O);
  for (let c = 0; c < DK; c++)
    for (let r = 0; r < D; r++) {
      set(q0, r, c, 0);
      set(k0, r, c, 0);
      set(v0, r, c, 0);
    }
  for (let r = 0; r < DK; r++) for (let c = 0; c < D; c++) set(o0, r, c, 0);
  // Query at t: position t; key at j: position j + 1. Value: the token; out: the previous-token dims.
  for (let t = 0; t < P; t++) set(q0, V + t, t, C);
  for (let j = 0; j + 1 < P; j++) set(k0, V + j, j + 1, 1);
  for (let i = 0; i < V; i++) {
    set(v0, i, i, 1);
    set(o0, i, V + P + i, 1);
  }
  const q1 = copy(l1.W_Q),
    k1 = copy(l1.W_K);
  for (let c = 0; c < DK; c++)
    for (let r = 0; r < D; r++) {
      set(q1, r, c, 0);
      set(k1, r, c, 0);
    }
  // Query at t: its token; key at j: the token before j.
  for (let i = 0; i < V; i++) {
    set(q1, i, i, C);
    set(k1, V + P + i, i, 1);
  }
  return attn.loadModel(
    withTensors(bytes, [
      [p.tokenEmbedding, tok],
      [p.positionEmbedding, pos],
      [l0.W_Q, q0],
      [l0.W_K, k0],
      [l0.W_V, v0],
      [l0.W_O, o0],
      [l1.W_Q, q1],
      [l1.W_K, k1],
    ]),
  );
}

describe("headScores", () => {
  let attn, model;
  before(async () => {
    attn = await createAttnkit({ simd: true, model: true });
    model = inductionModel(attn);
  });
  after(() => {
    model?.dispose();
    attn?.dispose();
  });

  it("a head built to look back one position scores previous-token ~1; one built to copy, induction ~1; random heads ~0", () => {
    const s = attn.headScores(model);
    assert.equal(s.length, P / 2);
    assert.equal(s.numLayers, 2);
    assert.equal(s.numHeads, 2);
    assert.ok(s.previousToken[0][0] > 0.99, `previous-token L0 h0 ${s.previousToken[0][0]}`);
    // Position 0's "previous token" is its own (the head can only attend to itself there),
    // so the second half's first token also attends to position 0: 1/2 of one position.
    assert.ok(s.induction[1][0] > 0.95, `induction L1 h0 ${s.induction[1][0]}`);
    assert.ok(s.induction[1][0] < 1.0001);
    for (const [l, h] of [
      [0, 1],
      [1, 1],
    ]) {
      assert.ok(
        s.induction[l][h] < 0.2,
        `induction of random head L${l} h${h}: ${s.induction[l][h]}`,
      );
      assert.ok(s.previousToken[l][h] < 0.3, `previous of random head L${l} h${h}`);
    }
    // The previous-token head is no induction head, nor the induction head a previous-token one.
    assert.ok(s.induction[0][0] < 0.1);
    assert.ok(s.previousToken[1][0] < 0.1);
    // The duplicate-token score of the induction head: the earlier copy itself is not its target.
    assert.ok(s.duplicateToken[1][0] < 0.1);
  });

  it("scores from the model's own inspect: every score is a mean of its weights", () => {
    const s = attn.headScores(model, { length: 5, seed: 9 });
    const T = 10;
    assert.equal(s.tokens.length, T);
    assert.deepEqual([...s.tokens.slice(0, 5)], [...s.tokens.slice(5)]);
    assert.equal(new Set(s.tokens).size, 5, "distinct tokens in each half");
    const w = model.inspect(s.tokens).layers;
    for (let l = 0; l < 2; l++)
      for (let h = 0; h < 2; h++) {
        const at = (t, j) => w[l].weights.data[(h * T + t) * T + j];
        let prev = 0,
          dup = 0,
          ind = 0;
        for (let t = 1; t < T; t++) prev += at(t, t - 1);
        for (let t = 5; t < T; t++) {
          dup += at(t, t - 5);
          ind += at(t, t - 4);
        }
        assert.ok(Math.abs(s.previousToken[l][h] - prev / (T - 1)) < 1e-6);
        assert.ok(Math.abs(s.duplicateToken[l][h] - dup / 5) < 1e-6);
        assert.ok(Math.abs(s.induction[l][h] - ind / 5) < 1e-6);
      }
    // The same seed draws the same tokens; another, others.
    assert.deepEqual(attn.headScores(model, { length: 5, seed: 9 }).tokens, s.tokens);
    assert.notDeepEqual(attn.headScores(model, { length: 5, seed: 10 }).tokens, s.tokens);
  });

  it("the scores of the caller's tokens where they are defined", () => {
    // No token repeats: neither duplicate nor induction is defined.
    const a = attn.headScores(model, { length: 2, tokens: [1, 2, 3] }).sentence;
    assert.deepEqual([...a.tokens], [1, 2, 3]);
    assert.equal(a.duplicateToken, null);
    assert.equal(a.induction, null);
    assert.ok(a.previousToken[0][0] > 0.99);
    // One token alone: none is.
    const b = attn.headScores(model, { length: 2, tokens: [4] }).sentence;
    assert.equal(b.previousToken, null);
    // A repeat: "4 5 6 7 5" — the last 5 reads the 6 after the first (induction).
    const c = attn.headScores(model, { length: 2, tokens: [4, 5, 6, 7, 5] }).sentence;
    assert.ok(c.induction[1][0] > 0.99, `${c.induction[1][0]}`);
    assert.equal(c.duplicateToken.length, 2);
  });

  it("a vocabulary smaller than the length draws with repeats", async () => {
    const small = attn.createModel({ vocabSize: 3, maxSeqLen: 12, dModel: 8 }, { seed: 1 });
    try {
      const s = attn.headScores(small);
      assert.equal(s.length, 6);
      assert.ok([...s.tokens].every((t) => t >= 0 && t < 3));
      for (const k of ["previousToken", "duplicateToken", "induction"])
        for (const v of s[k].flat()) assert.ok(v >= 0 && v <= 1 + 1e-6, `${k} ${v}`);
    } finally {
      small.dispose();
    }
  });

  it("refuses what it cannot score, naming the parameter; the module works after", async () => {
    const lean = await createAttnkit({ simd: true });
    try {
      assert.throws(() => lean.headScores(model), {
        code: "invalid_argument",
        parameter: "headScores",
      });
    } finally {
      lean.dispose();
    }
    assert.throws(
      () => attn.headScores({}),
      (e) => e instanceof AttnkitTypeError && e.parameter === "model",
    );
    assert.throws(
      () => attn.headScores(model, 3),
      (e) => e.parameter === "options",
    );
    assert.throws(
      () => attn.headScores(model, { lenght: 3 }),
      /options.lenght: .*did you mean length/,
    );
    for (const length of [1, P / 2 + 1])
      assert.throws(
        () => attn.headScores(model, { length }),
        (e) =>
          e instanceof AttnkitError &&
          e.parameter === "options.length" &&
          /2 \.\. 16/.test(e.message),
      );
    assert.throws(
      () => attn.headScores(model, { seed: -1 }),
      (e) => e.parameter === "options.seed",
    );
    assert.throws(
      () => attn.headScores(model, { tokens: [V] }),
      (e) => e.parameter === "tokens",
    );
    const gone = inductionModel(attn);
    gone.dispose();
    assert.throws(
      () => attn.headScores(gone),
      (e) => e.code === "disposed",
    );
    assert.ok(attn.headScores(model).induction[1][0] > 0.95);
  });
});
