// Type-checked (never run) by types.test.js: `tsc --noEmit -p tests/js/tsconfig.json`.
// Exercises every export of attnkit's .d.ts with correct types, and a few wrong
// uses marked @ts-expect-error (tsc fails if any of them stops being an error).
import createAttnkitDefault, { createAttnkit, simdSupported, AttnkitError, AttnkitTypeError } from "attnkit";
import type {
  Attnkit, AttentionOptions, AttentionTrace, ErrorCode, HeadConfig, HeadLayout, HeadWeights, KVCache,
  KVCacheConfig, LoadOptions, MaskLike, Matrix, MatrixLike, MultiHeadOptions, MultiHeadWeights, Tensor, TensorLike,
} from "attnkit";

/** Marks values as used (no DOM or Node types here: the .d.ts must stand alone). */
const use = (..._values: unknown[]): void => {};

const load: LoadOptions = { simd: true };
const attn: Attnkit = await createAttnkit(load);
const attn2: Attnkit = await createAttnkitDefault();
const hasSimd: boolean = simdSupported();
const isSimd: boolean = attn.simd && attn2.simd;
const target: string = attn.target;

const Q: Matrix = { data: new Float32Array(6), rows: 2, cols: 3 };
const nested: MatrixLike = [[1, 0, 0], [0, 1, 0], [0, 0, 1]];
const plain: MatrixLike = { data: [1, 2, 3], rows: 1, cols: 3 };
const mask: MaskLike = [[true, false, true], [true, true, false]];
const maskBytes: MaskLike = { data: new Uint8Array(6), rows: 2, cols: 3 };
const options: AttentionOptions = {
  scale: 0.5, softcap: 30, causal: true, keyLength: 2, boolMask: mask, additiveMask: [[0, -Infinity, 0], [0, 0, 0]],
};
const out: Matrix = attn.attention(Q, nested, nested, options);
const outData: Float32Array = out.data;
attn.attention(Q, plain.rows === 1 ? nested : plain, nested, { boolMask: maskBytes });

const weights: HeadWeights = { W_Q: nested, W_K: nested, W_V: [[1], [2], [3]] };
const self: Matrix = attn.selfAttention(nested, weights, { causal: true });
const cross: Matrix = attn.crossAttention(Q, nested, weights);
const pf: Matrix = attn.parameterFreeAttention(nested, { scale: 1 });
const trace: AttentionTrace = attn.trace(nested, weights);
const traceQKV: AttentionTrace = attn.traceQKV(Q, nested, nested, {});
const traceX: Matrix | undefined = traceQKV.X;
const weightRows: number = trace.weights.rows + trace.rawScores.cols + trace.scaledScores.rows + trace.maskedScores.cols;
const usedScale: number = trace.scale;
const traceParts: Matrix[] = [trace.Q, trace.K, trace.V, trace.output];

const product: Matrix = attn.matmul(nested, nested);
const probabilities: Matrix = attn.softmax([[1, 2, -Infinity]]);
const split: Tensor = attn.splitHeads({ data: new Float32Array(8), rows: 2, cols: 4 }, 2);
const shape: number[] = split.shape;
const merged: Matrix = attn.mergeHeads(split);

const X: TensorLike = { data: new Float32Array(2 * 3 * 4), shape: [2, 3, 4] };
const mhWeights: MultiHeadWeights = { W_Q: nested, W_K: nested, W_V: nested, W_O: nested };
const config: HeadConfig = { numHeads: 2, numKvHeads: 1, dK: 2, dV: 2 };
const mh: Tensor = attn.multiHeadAttention(X, mhWeights, config, { causal: true, keyLengths: [3, 2] });
const mhNoWO: Tensor = attn.multiHeadAttention(X, { W_Q: nested, W_K: nested, W_V: nested }, { numHeads: 1 });
const layout: HeadLayout = "bhsd";
const mhOptions: MultiHeadOptions = { layout, causal: false, keyLengths: new Uint32Array([1, 2]) };
const qkv: Tensor = attn.multiHeadAttentionQKV(X, X, X, { numHeads: 2 }, mhOptions);
attn.multiHeadAttentionQKV(X, X, X, { numHeads: 2 }, { layout: "bshd" });

const cacheConfig: KVCacheConfig = { batch: 2, numKvHeads: 1, dK: 2, dV: 2, capacity: 16 };
const cache: KVCache = attn.createKVCache(cacheConfig);
cache.append(X, X);
const keys: Matrix = cache.keys(0, 0);
const values: Matrix = cache.values(1, 0);
const attended: Tensor = cache.attend(X, 2, { causal: true });
const decoded: Tensor = cache.decode(X, mhWeights, config);
const sizes: number[] = [cache.batch, cache.numKvHeads, cache.dK, cache.dV, cache.capacity, cache.size];
cache.reset();
cache.dispose();
cache[Symbol.dispose]();
{
  using scoped = attn.createKVCache({ numKvHeads: 1, dK: 1, dV: 1, capacity: 1 });
  scoped.append([[1]], [[1]]);
}

const memory: number = attn.memoryBytes() + attn.heapBytesInUse();

try {
  attn.attention(Q, Q, Q);
} catch (e) {
  if (e instanceof AttnkitError) {
    const code: ErrorCode = e.code;
    const parameter: string = e.parameter;
    const isRange: RangeError = e;
    use(code, parameter, isRange.message);
  }
  if (e instanceof AttnkitTypeError) {
    const code: ErrorCode = e.code;
    const asType: TypeError = e;
    use(code, e.parameter, asType.message);
  }
}
const codes: ErrorCode[] = ["invalid_argument", "shape_mismatch", "non_finite", "overflow", "capacity", "type", "disposed"];

use(isSimd, target, outData, self, cross, pf, traceX, weightRows, usedScale, traceParts, product, probabilities,
  shape, merged, mh, mhNoWO, qkv, keys, values, attended, decoded, sizes, memory, codes);

// ---- wrong uses: each line below must be a type error.

// @ts-expect-error a string is not a matrix
attn.attention("abc", Q, Q);
// @ts-expect-error a matrix needs rows and cols
attn.attention({ data: new Float32Array(4) }, Q, Q);
// @ts-expect-error numHeads is required
attn.multiHeadAttention(X, mhWeights, {});
// @ts-expect-error splitHeads needs the number of heads
attn.splitHeads(Q);
// @ts-expect-error an unknown option (a typo of causal)
attn.attention(Q, Q, Q, { casual: true });
// @ts-expect-error causal is a boolean
attn.attention(Q, Q, Q, { causal: 1 });
// @ts-expect-error layouts are "bshd" or "bhsd"
attn.multiHeadAttentionQKV(X, X, X, { numHeads: 2 }, { layout: "bsdh" });
// @ts-expect-error the layout option belongs to multiHeadAttentionQKV only
attn.attention(Q, Q, Q, { layout: "bhsd" });
// @ts-expect-error HeadWeights needs W_V
attn.selfAttention(Q, { W_Q: Q, W_K: Q });
// @ts-expect-error the KV cache needs a capacity
attn.createKVCache({ numKvHeads: 1, dK: 2, dV: 2 });
// @ts-expect-error simd is read-only
attn.simd = false;
// @ts-expect-error size is read-only
cache.size = 3;
// @ts-expect-error not an error code
const badCode: ErrorCode = "bogus";
// @ts-expect-error results are Float32Array, not number[]
const asNumbers: number[] = out.data;
// @ts-expect-error the loader option is a boolean
await createAttnkit({ simd: "yes" });
use(badCode, asNumbers);
