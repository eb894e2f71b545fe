// The backward trace through the npm package (traceBackward,
// traceBackwardQKV): every intermediate, with its shape, against the float64
// reference of backward-reference.js, in the SIMD128, scalar and threads
// builds; the fused backward equals the trace's gradients; errors leak nothing.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit, AttnkitError } from "attnkit";
import { matmul, randomMatrix, rng } from "./reference.js";
import { VARIANTS, assertClose } from "./helpers.js";
import { assertGrad, refBackward, refSelfBackward } from "./backward-reference.js";

const FORWARD = ["Q", "K", "V", "rawScores", "scaledScores", "maskedScores", "weights", "output"];
const BACKWARD = ["dO", "dV", "dWeights", "D", "dMaskedScores", "dScores", "dQ", "dK"];
const PROJECTIONS = ["dX", "dW_Q", "dW_K", "dW_V"];

const BUILDS = [...VARIANTS, { name: "threads", options: { threads: 2 } }];

for (const build of BUILDS) {
  describe(`traceBackward and traceBackwardQKV (${build.name} build)`, () => {
    let attn;
    before(async () => {
      attn = await createAttnkit(build.options);
    });

    for (const [name, Tq, Tk, options] of [
      ["3 x 5", 3, 5, {}],
      ["17 x 17 causal, softcap", 17, 17, { causal: true, softcap: 1.5 }],
      ["5 x 9, key length 4 (row 0 sees keys)", 5, 9, { keyLength: 4, scale: 0.6 }],
    ]) {
      it(`traceBackwardQKV ${name}: every intermediate as the reference`, () => {
        const rand = rng(Tq * 7 + Tk);
        const Q = randomMatrix(rand, Tq, 4, 2),
          K = randomMatrix(rand, Tk, 4, 2),
          V = randomMatrix(rand, Tk, 3),
          dO = randomMatrix(rand, Tq, 3);
        const ref = refBackward(Q, K, V, dO, options);
        const t = attn.traceBackwardQKV(Q, K, V, dO, options);
        assert.deepEqual(Object.keys(t), ["forward", ...BACKWARD]);
        assert.deepEqual(Object.keys(t.forward), [...FORWARD, "scale"]);
        assertClose(t.forward.weights, ref.trace.weights, "forward.weights");
        const shapes = {
          dO: [Tq, 3],
          dV: [Tk, 3],
          dWeights: [Tq, Tk],
          D: [Tq, 1],
          dMaskedScores: [Tq, Tk],
          dScores: [Tq, Tk],
          dQ: [Tq, 4],
          dK: [Tk, 4],
        };
        for (const n of BACKWARD) {
          assert.deepEqual([t[n].rows, t[n].cols], shapes[n], `${n} shape`);
          assertGrad(t[n], n === "dO" ? dO : ref[n], n);
        }
        // The fused backward equals the one from the materialised weights.
        const g = attn.attentionBackward(Q, K, V, dO, options);
        for (const n of ["dQ", "dK", "dV"]) {
          assertClose(g[n], t[n].data, `fused ${n}`, { abs: 1e-5, rel: 1e-5 });
        }
      });
    }

    it("traceBackward: the projections' gradients too", () => {
      const rand = rng(3);
      const X = randomMatrix(rand, 6, 5);
      const w = {
        W_Q: randomMatrix(rand, 5, 4),
        W_K: randomMatrix(rand, 5, 4),
        W_V: randomMatrix(rand, 5, 3),
      };
      const dO = randomMatrix(rand, 6, 3);
      const options = { causal: true };
      const ref = refSelfBackward(X, w, dO, options);
      const t = attn.traceBackward(X, w, dO, options);
      assert.deepEqual(Object.keys(t), ["forward", ...BACKWARD, ...PROJECTIONS]);
      assert.deepEqual(Object.keys(t.forward), ["X", ...FORWARD, "scale"]);
      assertClose(t.forward.Q, matmul(X, w.W_Q), "forward.Q");
      for (const n of PROJECTIONS) assertGrad(t[n], ref[n], n);
    });

    it("a fully masked row: zeros, no NaN; bad input names dO and leaks nothing", () => {
      const rand = rng(4);
      const Q = randomMatrix(rand, 3, 2),
        K = randomMatrix(rand, 4, 2),
        V = randomMatrix(rand, 4, 2),
        dO = randomMatrix(rand, 3, 2);
      const boolMask = [
        [true, true, false, true],
        [false, false, false, false],
        [true, false, true, true],
      ];
      const t = attn.traceBackwardQKV(Q, K, V, dO, { boolMask });
      for (const n of ["dWeights", "dMaskedScores", "dScores", "dQ", "dK", "dV", "D"]) {
        assert.ok(!t[n].data.some(Number.isNaN), `${n} has no NaN`);
      }
      assert.deepEqual(Array.from(t.dScores.data.subarray(4, 8)), [0, 0, 0, 0]);
      assert.deepEqual(Array.from(t.dQ.data.subarray(2, 4)), [0, 0]);
      const heap = attn.heapBytesInUse();
      assert.throws(
        () => attn.traceBackwardQKV(Q, K, V, randomMatrix(rand, 3, 3)),
        (e) =>
          e instanceof AttnkitError && e.parameter === "dO" && /^dO: expected /.test(e.message),
      );
      // The next call frees the error's message (lastError keeps it until then).
      attn.traceBackwardQKV(Q, K, V, dO, { boolMask });
      assert.equal(attn.heapBytesInUse(), heap, "heap after an error and a trace");
    });
  });
}
