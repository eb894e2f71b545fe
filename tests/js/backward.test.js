// Gradients through the npm package: attentionForTraining and
// attentionBackward against the float64 reference of backward-reference.js,
// itself checked here by central finite differences of a float64 loss, in the
// SIMD128, scalar and threads builds. The threads
// build must equal the one-thread build bit for bit; bad input throws the
// package's errors, naming the parameter, and leaks nothing.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError, AttnkitTypeError } from "attnkit";
import { matmul, randomMatrix, rng, transpose, zeros } from "./reference.js";
import { assertClose, assertIdentical, VARIANTS } from "./helpers.js";
import {
  assertGrad,
  magnitude,
  numericGradient,
  refBackward,
  refLoss,
} from "./backward-reference.js";

function assertFinite(m, label) {
  for (let i = 0; i < m.data.length; ++i) {
    if (!Number.isFinite(m.data[i])) assert.fail(`${label}: ${m.data[i]} at ${i}`);
  }
}

/** Random single-head inputs: Q [Tq, dk], K [Tk, dk], V [Tk, dv], dO [Tq, dv] (nested). */
function inputs(seed, Tq, Tk, dk, dv, amp = 1) {
  const rand = rng(seed);
  return {
    Q: randomMatrix(rand, Tq, dk, amp),
    K: randomMatrix(rand, Tk, dk, amp),
    V: randomMatrix(rand, Tk, dv),
    dO: randomMatrix(rand, Tq, dv),
  };
}

// The cases every build runs: awkward sizes and every option.
const CASES = [
  { name: "1 query, 1 key", Tq: 1, Tk: 1, dk: 1, dv: 1 },
  { name: "3 x 3", Tq: 3, Tk: 3, dk: 2, dv: 3 },
  { name: "5 queries, 17 keys", Tq: 5, Tk: 17, dk: 7, dv: 5 },
  { name: "17 x 129 (tile boundary)", Tq: 17, Tk: 129, dk: 16, dv: 9 },
  { name: "129 x 5", Tq: 129, Tk: 5, dk: 3, dv: 4 },
  { name: "causal 17 x 17", Tq: 17, Tk: 17, dk: 8, dv: 8, options: { causal: true } },
  { name: "causal lower right 5 x 17", Tq: 5, Tk: 17, dk: 4, dv: 3, options: { causal: true } },
  {
    name: "causal upper left, offset 2",
    Tq: 17,
    Tk: 17,
    dk: 4,
    dv: 3,
    options: { causal: true, causalAlignment: "upperLeft", causalOffset: 2 },
  },
  { name: "key length 11 of 17", Tq: 5, Tk: 17, dk: 4, dv: 4, options: { keyLength: 11 } },
  { name: "softcap 2", Tq: 9, Tk: 17, dk: 8, dv: 3, amp: 2, options: { softcap: 2 } },
  { name: "scale 0.7", Tq: 5, Tk: 3, dk: 4, dv: 2, options: { scale: 0.7 } },
  {
    name: "softcap, scale, causal and key length",
    Tq: 17,
    Tk: 129,
    dk: 5,
    dv: 6,
    amp: 2,
    options: { softcap: 1.5, scale: 0.9, causal: true, keyLength: 100 },
  },
];

/** Bool and additive masks [Tq, Tk] (nested), one fully masked row (row 1). */
function masks(seed, Tq, Tk) {
  const rand = rng(seed);
  const boolMask = zeros(Tq, Tk).map((row, i) => row.map(() => i !== 1 && rand() > 0.3));
  const additiveMask = zeros(Tq, Tk).map((row) =>
    row.map(() => (rand() > 0.9 ? -Infinity : Math.fround(rand() * 2 - 1))),
  );
  return { boolMask, additiveMask };
}

// ---- the reference itself

describe("the float64 reference of the gradients", () => {
  const configs = [
    { Tq: 3, Tk: 4, dk: 2, dv: 3, options: {} },
    { Tq: 4, Tk: 4, dk: 3, dv: 2, options: { causal: true, softcap: 1.5, scale: 0.8 } },
    { Tq: 3, Tk: 5, dk: 2, dv: 2, options: { keyLength: 4, ...masks(3, 3, 5) } },
    {
      Tq: 4,
      Tk: 3,
      dk: 2,
      dv: 2,
      options: { causal: true, causalAlignment: "upperLeft", causalOffset: -1 },
    },
  ];
  configs.forEach(({ Tq, Tk, dk, dv, options }, n) => {
    it(`equals central finite differences of sum(O * dO) (config ${n})`, () => {
      const { Q, K, V, dO } = inputs(100 + n, Tq, Tk, dk, dv);
      const ref = refBackward(Q, K, V, dO, options);
      const loss = ([q, k, v]) => refLoss(q, k, v, dO, options);
      ["dQ", "dK", "dV"].forEach((name, which) => {
        const fd = numericGradient(loss, [Q, K, V], which);
        assertClose(ref[name], fd, `${name} vs finite differences`, { abs: 1e-6, rel: 1e-5 });
      });
      // Not a vacuous check: some gradient is far from zero.
      assert.ok(magnitude(ref.dQ) > 1e-3 || ref.dQ.flat().some((x) => Math.abs(x) > 1e-3));
    });
  });
});

// ---- every build

const BUILDS = [...VARIANTS, { name: "threads", options: { threads: 2 } }];

for (const build of BUILDS) {
  describe(`attentionForTraining and attentionBackward (${build.name} build)`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(build.options);
    });

    for (const c of CASES) {
      it(`${c.name}: out, lse, dQ, dK, dV equal the reference`, () => {
        const { Q, K, V, dO } = inputs(c.Tq * 131 + c.Tk, c.Tq, c.Tk, c.dk, c.dv, c.amp);
        const ref = refBackward(Q, K, V, dO, c.options);
        const fwd = attn.attentionForTraining(Q, K, V, c.options);
        assertGrad(fwd.out, ref.out, "out");
        assert.equal(fwd.lse.rows, c.Tq);
        assert.equal(fwd.lse.cols, 1);
        assertClose(fwd.lse, ref.lse, "lse", { abs: 1e-4, rel: 1e-4 });
        const g = attn.attentionBackward(Q, K, V, dO, c.options);
        assert.deepEqual(Object.keys(g), ["dQ", "dK", "dV"]);
        assert.deepEqual([g.dQ.rows, g.dQ.cols], [c.Tq, c.dk]);
        assert.deepEqual([g.dK.rows, g.dK.cols], [c.Tk, c.dk]);
        assert.deepEqual([g.dV.rows, g.dV.cols], [c.Tk, c.dv]);
        assertGrad(g.dQ, ref.dQ, "dQ");
        assertGrad(g.dK, ref.dK, "dK");
        assertGrad(g.dV, ref.dV, "dV");
        // With the forward's saved results: the same gradients, bit for bit.
        const saved = attn.attentionBackward(Q, K, V, dO, { ...c.options, saved: fwd });
        for (const name of ["dQ", "dK", "dV"]) {
          assertIdentical(saved[name], g[name], `saved ${name}`);
        }
      });
    }

    it("bool and additive masks with a fully masked row: zero gradients there, no NaN", () => {
      const Tq = 5,
        Tk = 17;
      const { Q, K, V, dO } = inputs(7, Tq, Tk, 6, 4);
      const options = masks(8, Tq, Tk);
      const ref = refBackward(Q, K, V, dO, options);
      const fwd = attn.attentionForTraining(Q, K, V, options);
      assert.equal(fwd.lse.data[1], -Infinity, "lse of the fully masked row");
      const g = attn.attentionBackward(Q, K, V, dO, options);
      assertGrad(g.dQ, ref.dQ, "dQ");
      assertGrad(g.dK, ref.dK, "dK");
      assertGrad(g.dV, ref.dV, "dV");
      assert.deepEqual(Array.from(g.dQ.data.subarray(6, 12)), [0, 0, 0, 0, 0, 0]);
      // Keys that no query sees get exactly zero dK and dV.
      const seen = (j) =>
        options.boolMask.some((row, i) => row[j] && options.additiveMask[i][j] > -Infinity);
      for (let j = 0; j < Tk; ++j) {
        if (seen(j)) continue;
        assert.ok(
          g.dK.data.subarray(j * 6, j * 6 + 6).every((x) => x === 0),
          `dK row ${j}`,
        );
        assert.ok(
          g.dV.data.subarray(j * 4, j * 4 + 4).every((x) => x === 0),
          `dV row ${j}`,
        );
      }
      const saved = attn.attentionBackward(Q, K, V, dO, { ...options, saved: fwd });
      assertIdentical(saved.dQ, g.dQ, "saved dQ");
      assertIdentical(saved.dK, g.dK, "saved dK");
    });

    it("no key at all (keyLength 0): every gradient exactly zero", () => {
      const { Q, K, V, dO } = inputs(9, 3, 5, 2, 2);
      const g = attn.attentionBackward(Q, K, V, dO, { keyLength: 0 });
      for (const name of ["dQ", "dK", "dV"]) {
        assert.ok(
          g[name].data.every((x) => Object.is(x, 0)),
          name,
        );
      }
    });

    it("logits near 1e4: finite gradients, dV as the reference", () => {
      const { Q, K, V, dO } = inputs(10, 9, 17, 4, 3, 100);
      const options = { scale: 1 };
      const ref = refBackward(Q, K, V, dO, options);
      assert.ok(magnitude(matmul(Q, transpose(K))) > 5e3, "logits near 1e4");
      const fwd = attn.attentionForTraining(Q, K, V, options);
      assertFinite(fwd.lse, "lse");
      const g = attn.attentionBackward(Q, K, V, dO, { ...options, saved: fwd });
      for (const name of ["dQ", "dK", "dV"]) assertFinite(g[name], name);
      assertGrad(g.dV, ref.dV, "dV");
    });

    it("options.out writes each gradient into the given array", () => {
      const { Q, K, V, dO } = inputs(11, 4, 6, 3, 2);
      const want = attn.attentionBackward(Q, K, V, dO);
      const dQ = new Float32Array(12),
        dV = new Float32Array(12);
      const g = attn.attentionBackward(Q, K, V, dO, { out: { dQ, dV } });
      assert.equal(g.dQ.data, dQ);
      assert.equal(g.dV.data, dV);
      assertIdentical(g.dQ, want.dQ, "dQ");
      assertIdentical(g.dK, want.dK, "dK");
      assertIdentical(g.dV, want.dV, "dV");
      const out = new Float32Array(8);
      assert.equal(attn.attentionForTraining(Q, K, V, { out }).out.data, out);
    });
  });

  describe(`attentionForTraining and attentionBackward (${build.name} build): bad input and the heap`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(build.options);
    });

    it("bad input throws naming the parameter; the module keeps working and leaks nothing", () => {
      const { Q, K, V, dO } = inputs(12, 4, 6, 3, 2);
      const fwd = attn.attentionForTraining(Q, K, V);
      const good = attn.attentionBackward(Q, K, V, dO, { saved: fwd });
      const heap = attn.heapBytesInUse();
      const cases = [
        [
          () => attn.attentionBackward(Q, K, V, randomMatrix(rng(1), 4, 3)),
          AttnkitError,
          "dO",
          "shape_mismatch",
        ],
        [
          () => attn.attentionBackward(Q, K, V, randomMatrix(rng(1), 3, 2)),
          AttnkitError,
          "dO",
          "shape_mismatch",
        ],
        [() => attn.attentionBackward(Q, K, V, "dO"), AttnkitTypeError, "dO", "type"],
        [() => attn.attentionBackward(Q, K, V), AttnkitTypeError, "dO", "type"],
        [
          () => attn.attentionBackward(Q, K, V, [[NaN, 1], ...dO.slice(1)]),
          AttnkitError,
          "dO",
          "non_finite",
        ],
        [
          () => attn.attentionBackward(Q, K, V, dO, { saved: { out: fwd.out, lse: [[0], [0]] } }),
          AttnkitError,
          "options.saved.lse",
          "shape_mismatch",
        ],
        [
          () => attn.attentionBackward(Q, K, V, dO, { saved: { out: [[1, 2]], lse: fwd.lse } }),
          AttnkitError,
          "options.saved.out",
          "shape_mismatch",
        ],
        [
          () => attn.attentionBackward(Q, K, V, dO, { saved: { out: fwd.out } }),
          AttnkitTypeError,
          "options.saved.lse",
          "type",
        ],
        [
          () => attn.attentionBackward(Q, K, V, dO, { saved: { ...fwd, scores: 1 } }),
          AttnkitError,
          "options.saved.scores",
          "invalid_argument",
        ],
        [
          () => attn.attentionBackward(Q, K, V, dO, { saved: 3 }),
          AttnkitTypeError,
          "options.saved",
          "type",
        ],
        [
          () => attn.attentionBackward(Q, K, V, dO, { out: new Float32Array(12) }),
          AttnkitTypeError,
          "options.out",
          "type",
        ],
        [
          () => attn.attentionBackward(Q, K, V, dO, { out: { dK: new Float32Array(17) } }),
          AttnkitError,
          "options.out.dK",
          "shape_mismatch",
        ],
        [
          () => attn.attentionBackward(Q, K, V, dO, { out: { dW: new Float32Array(1) } }),
          AttnkitError,
          "options.out.dW",
          "invalid_argument",
        ],
        [
          () => attn.attentionBackward(Q, K, V, dO, { sav: fwd }),
          AttnkitError,
          "options.sav",
          "invalid_argument",
        ],
        [
          () => attn.attentionForTraining(Q, K, V, { saved: fwd }),
          AttnkitError,
          "options.saved",
          "invalid_argument",
        ],
        [
          () => attn.attentionBackward(Q, K, V, dO, { softcap: -1 }),
          AttnkitError,
          "options.softcap",
          "invalid_argument",
        ],
        [() => attn.attentionBackward(Q, K.slice(1), V, dO), AttnkitError, "V", "shape_mismatch"],
        [() => attn.attentionForTraining(Q, [[1, 2]], V), AttnkitError, "K", "shape_mismatch"],
      ];
      for (const [call, cls, parameter, code] of cases) {
        assert.throws(call, (e) => {
          assert.ok(e instanceof cls, `${parameter}: ${e}`);
          assert.equal(e.parameter, parameter, e.message);
          assert.equal(e.code, code, e.message);
          assert.ok(e.message.startsWith(`${parameter}: expected `), e.message);
          assert.match(e.message, /, got /);
          return true;
        });
        const again = attn.attentionBackward(Q, K, V, dO, { saved: fwd });
        assertIdentical(again.dQ, good.dQ, `after ${parameter}`);
      }
      assert.equal(attn.heapBytesInUse(), heap, "heap bytes in use before and after");
    });

    it("a thousand small calls with and without saved leave the heap as it was", () => {
      const { Q, K, V, dO } = inputs(13, 8, 8, 4, 4);
      const fwd = attn.attentionForTraining(Q, K, V, { causal: true });
      attn.attentionBackward(Q, K, V, dO, { causal: true });
      const heap = attn.heapBytesInUse();
      for (let i = 0; i < 1000; ++i) {
        const f = attn.attentionForTraining(Q, K, V, { causal: true });
        attn.attentionBackward(Q, K, V, dO, i % 2 ? { causal: true, saved: f } : { causal: true });
      }
      assert.equal(attn.heapBytesInUse(), heap);
      assert.ok(fwd.out.data.every(Number.isFinite));
    });
  });
}

describe("the threads build equals one thread bit for bit", () => {
  it("attentionForTraining and attentionBackward, 3 x 129 to 200 x 129", async () => {
    const one = await createAttnkit();
    const two = await createAttnkit({ threads: 2 });
    assert.equal(two.threads, 2);
    for (const [Tq, Tk, options] of [
      [3, 129, {}],
      [200, 129, { causal: true }],
      [130, 300, { softcap: 3, keyLength: 257 }],
    ]) {
      const { Q, K, V, dO } = inputs(Tq + Tk, Tq, Tk, 16, 8);
      const f1 = one.attentionForTraining(Q, K, V, options),
        f2 = two.attentionForTraining(Q, K, V, options);
      assertIdentical(f2.out, f1.out, "out");
      assertIdentical(f2.lse, f1.lse, "lse");
      const g1 = one.attentionBackward(Q, K, V, dO, options),
        g2 = two.attentionBackward(Q, K, V, dO, { ...options, saved: f2 });
      for (const name of ["dQ", "dK", "dV"]) assertIdentical(g2[name], g1[name], name);
    }
  });
});
