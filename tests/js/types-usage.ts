// Type-checked (never run) by types.test.js, as an ES module (.ts in a "type":
// "module" package) under module node16 / nodenext and moduleResolution bundler,
// for every target and lib it tests, under strict and exactOptionalPropertyTypes;
// `tsc -p tests/js/tsconfig.json` checks it (with types/using.ts) by hand. Exercises every export of attnkit's .d.ts with
// correct types, and wrong uses marked @ts-expect-error (tsc fails if any of them
// stops being an error). No `using` or Symbol.dispose here: they need a lib with
// esnext.disposable (see types/using.ts).
import createAttnkitDefault, {
  createAttnkit,
  simdSupported,
  version,
  AttnkitError,
  AttnkitTypeError,
} from "attnkit";
import type {
  Attnkit,
  AttnkitWithModel,
  CheckpointInfo,
  CheckpointProgress,
  CheckpointSourceInfo,
  OpenCheckpointOptions,
  AttentionBackwardTrace,
  AttentionBackwardOptions,
  AttentionGradients,
  AttentionOptions,
  AttentionTrace,
  ErrorCode,
  HeadConfig,
  HeadLayout,
  HeadWeights,
  Inspection,
  KVCache,
  KVCacheConfig,
  LayerInspection,
  LayerParameters,
  LoadOptions,
  MaskLike,
  Matrix,
  MatrixLike,
  Model,
  ModelBatch,
  ModelConfig,
  ModelMetrics,
  ModelParameters,
  OnnxExportOptions,
  MultiHeadBackwardOptions,
  MultiHeadGradients,
  MultiHeadGradientsWithOutput,
  MultiHeadOptions,
  MultiHeadQKVBackwardOptions,
  MultiHeadQKVGradients,
  MultiHeadTrainingForward,
  MultiHeadWeights,
  NumberArray,
  NumericTypedArray,
  ResolvedModelConfig,
  ScoredInspection,
  ScoreStage,
  SelfAttentionBackwardTrace,
  SelfAttentionGradients,
  SelfAttentionTrace,
  TaskBatch,
  TaskConfig,
  TaskGenerator,
  TaskKind,
  Tokenizer,
  TextDataset,
  TextDatasetOptions,
  Sampler,
  SamplerOptions,
  GenerateOptions,
  Generated,
  GeneratedCharacter,
  Tensor,
  TensorLike,
  Trainer,
  TrainerOptions,
  TrainingForward,
  PackedWeights,
} from "attnkit";

/** Marks values as used (no DOM or Node types here: the .d.ts must stand alone). */
const use = (..._values: unknown[]): void => {};
/**
 * What DOM's Blob and BufferSource, and Node's Buffer.from, take: a view over an
 * ArrayBuffer (not a SharedArrayBuffer), as `new Blob([r.data])` asks for.
 */
const needsArrayBuffer = (..._views: ArrayBufferView<ArrayBuffer>[]): void => {};

const load: LoadOptions = { simd: true };
const attn: Attnkit = await createAttnkit(load);
const attn2: Attnkit = await createAttnkitDefault();
// onnxruntime-common's and tfjs-core's Tensor classes as their .d.ts declare
// them (their public members; attnkit's types never import those packages):
// taken wherever a matrix, a mask or a tensor is, as the runtime takes them.
declare class OrtTensor {
  constructor(type: "float32", data: Float32Array, dims: readonly number[]);
  readonly dims: readonly number[];
  readonly type: "float32" | "float16" | "int32" | "bool" | "uint8" | "string";
  readonly data: Float32Array | Uint16Array | Int32Array | Uint8Array | string[];
  readonly location: "none" | "cpu" | "cpu-pinned" | "texture" | "gpu-buffer" | "ml-tensor";
  readonly size: number;
  getData(releaseData?: boolean): Promise<Float32Array | Int32Array | Uint8Array>;
  dispose(): void;
  reshape(dims: readonly number[]): OrtTensor;
}
declare class TfTensor {
  readonly id: number;
  readonly shape: number[];
  readonly size: number;
  readonly dtype: "float32" | "int32" | "bool" | "complex64" | "string";
  readonly rank: number;
  readonly strides: number[];
  get isDisposed(): boolean;
  dataSync(): Float32Array | Int32Array | Uint8Array;
  data(): Promise<Float32Array | Int32Array | Uint8Array>;
  arraySync(): number[][];
  dispose(): void;
}
const externalTensors = (ortQ: OrtTensor, tfQ: TfTensor, ortMask: OrtTensor): void => {
  use(attn.attention(ortQ, ortQ, ortQ, { causal: true }));
  use(attn.attention(tfQ, tfQ, tfQ, { boolMask: ortMask, additiveMask: tfQ }));
  use(attn.attention(ortQ, tfQ, ortQ, { boolMask: tfQ, additiveMask: ortQ }));
  use(attn.selfAttention(tfQ, { W_Q: ortQ, W_K: tfQ, W_V: ortQ }));
  use(attn.multiHeadAttention(ortQ, { W_Q: tfQ, W_K: tfQ, W_V: tfQ, W_O: ortQ }, { numHeads: 2 }));
  const ortMatrix: MatrixLike = ortQ;
  const tfMask: MaskLike = tfQ;
  use(ortMatrix, tfMask);
};
use(externalTensors);
const hasSimd: boolean = simdSupported();
const isSimd: boolean = attn.simd && attn2.simd;
const target: "WASM" | "EMU128" = attn.target;
// @ts-expect-error no build reports the target SCALAR
const scalarTarget: boolean = attn.target === "SCALAR";
const versions: string[] = [version, attn.version];
const loads: LoadOptions[] = [
  { threads: 4, wasmPaths: "https://cdn.example/attnkit/dist/", timeout: 5000 },
  { wasmPaths: { "attnkit-simd.wasm": "/a.wasm", "attnkit-threads.worker.js": "/w.js" } },
  { simd: false, wasmBinary: new ArrayBuffer(8) },
  { wasmBinary: new Uint8Array(8) },
];

const Q: Matrix = { data: new Float32Array(6), rows: 2, cols: 3 };
const nested: MatrixLike = [
  [1, 0, 0],
  [0, 1, 0],
  [0, 0, 1],
];
const plain: MatrixLike = { data: [1, 2, 3], rows: 1, cols: 3 };
const mask: MaskLike = [
  [true, false, true],
  [true, true, false],
];
const maskBytes: MaskLike = { data: new Uint8Array(6), rows: 2, cols: 3 };
const options: AttentionOptions = {
  scale: 0.5,
  softcap: 30,
  causal: true,
  keyLength: 2,
  boolMask: mask,
  additiveMask: [
    [0, -Infinity, 0],
    [0, 0, 0],
  ],
};
const out: Matrix = attn.attention(Q, nested, nested, options);
// Results are new arrays over an ArrayBuffer of their own.
const outData: Float32Array<ArrayBuffer> = out.data;
needsArrayBuffer(out.data, out.data.subarray(1));
const outBuffer: ArrayBuffer = out.data.buffer;
// A rank-2 tensor is a matrix.
const rank2: MatrixLike = { data: new Float32Array(6), shape: [2, 3] };
attn.attention(rank2, { data: [1, 2, 3, 4, 5, 6], shape: [2, 3] as const }, rank2);
// @ts-expect-error a rank-3 tensor is not a matrix
attn.attention({ data: new Float32Array(6), shape: [1, 2, 3] }, rank2, rank2);
attn.attention(Q, plain.rows === 1 ? nested : plain, nested, { boolMask: maskBytes });

const weights: HeadWeights = { W_Q: nested, W_K: nested, W_V: [[1], [2], [3]] };
const self: Matrix = attn.selfAttention(nested, weights, { causal: true });
const cross: Matrix = attn.crossAttention(Q, nested, weights);
const pf: Matrix = attn.parameterFreeAttention(nested, { scale: 1 });
// An option held in a variable that may be undefined, as the runtime takes it
// (exactOptionalPropertyTypes would refuse `scale?: number` alone).
const maybeScale: number | undefined = pf.rows > 1 ? 0.5 : undefined;
attn.attention(Q, nested, nested, { scale: maybeScale, causal: undefined });
attn.multiHeadAttention(
  nested,
  weights,
  { numHeads: 1, numKvHeads: undefined },
  { softcap: undefined },
);
const trace: SelfAttentionTrace = attn.trace(nested, weights);
const traceQKV: AttentionTrace = attn.traceQKV(Q, nested, nested, {});
const traceX: Matrix | undefined = traceQKV.X;
// trace() has X: its input.
const traceInput: Matrix = attn.trace(nested, weights, { causal: true }).X;
// @ts-expect-error traceQKV() has no X
const traceQKVInput: Matrix = traceQKV.X;
const weightRows: number =
  trace.weights.rows + trace.rawScores.cols + trace.scaledScores.rows + trace.maskedScores.cols;
const usedScale: number = trace.scale;
const traceParts: Matrix[] = [trace.Q, trace.K, trace.V, trace.output];

const training: TrainingForward = attn.attentionForTraining(Q, nested, nested, { causal: true });
const lseRows: number = training.lse.rows + training.out.cols;
const backwardOptions: AttentionBackwardOptions = {
  causal: true,
  saved: training,
  out: { dQ: new Float32Array(4) },
};
const grads: AttentionGradients = attn.attentionBackward(Q, nested, nested, Q, backwardOptions);
const gradParts: Matrix[] = [grads.dQ, grads.dK, grads.dV];
attn.attentionBackward(Q, nested, nested, Q, { saved: { out: [[1]], lse: [[0]] } });

const product: Matrix = attn.matmul(nested, nested);
const probabilities: Matrix = attn.softmax([[1, 2, -Infinity]]);
const split: Tensor = attn.splitHeads({ data: new Float32Array(8), rows: 2, cols: 4 }, 2);
const shape: number[] = split.shape;
const merged: Matrix = attn.mergeHeads(split);

const X: TensorLike = { data: new Float32Array(2 * 3 * 4), shape: [2, 3, 4] };
const mhWeights: MultiHeadWeights = { W_Q: nested, W_K: nested, W_V: nested, W_O: nested };
const config: HeadConfig = { numHeads: 2, numKvHeads: 1, dK: 2, dV: 2 };
const mh: Tensor = attn.multiHeadAttention(X, mhWeights, config, {
  causal: true,
  keyLengths: [3, 2],
});
const mhNoWO: Tensor = attn.multiHeadAttention(
  X,
  { W_Q: nested, W_K: nested, W_V: nested },
  { numHeads: 1 },
);
// Packed weights go where the weights go; a pack is not weights to pack again.
const packedWeights: PackedWeights = attn.packWeights(mhWeights, config);
const mhPacked: Tensor = attn.multiHeadAttention(X, packedWeights, config, { causal: true });
const packedSizes: number = packedWeights.dModel + packedWeights.dOut + packedWeights.numKvHeads;
// @ts-expect-error the fields of a pack are read-only
packedWeights.dOut = 3;
// @ts-expect-error packWeights takes plain weights
attn.packWeights(packedWeights, config);
packedWeights.dispose();
const layout: HeadLayout = "bhsd";
const mhOptions: MultiHeadOptions = { layout, causal: false, keyLengths: new Uint32Array([1, 2]) };
const qkv: Tensor = attn.multiHeadAttentionQKV(X, X, X, { numHeads: 2 }, mhOptions);
attn.multiHeadAttentionQKV(X, X, X, { numHeads: 2 }, { layout: "bshd" });
// ONNX Attention: broadcast masks, the upper-left causal frontier, past/present, scores.
const past: TensorLike = { data: new Float32Array(2 * 1 * 2 * 2), shape: [2, 1, 2, 2] };
const onnx = attn.multiHeadAttentionQKV(
  X,
  X,
  X,
  { numHeads: 2, numKvHeads: 1 },
  {
    boolMask: { data: new Uint8Array(2 * 3 * 5), shape: [2, 1, 3, 5] },
    causal: true,
    causalAlignment: "upperLeft",
    causalOffset: 2,
    causalOffsets: [2, 1],
    pastKey: past,
    pastValue: past,
    present: true,
    scores: "weights",
  },
);
// What the options ask for is in the result's type.
const presentKey: Tensor = onnx.presentKey;
const presentValue: Tensor = onnx.presentValue;
const scores: number[] = onnx.scores.shape;
const stage: ScoreStage = "masked";
const onlyPresent = attn.multiHeadAttentionQKV(X, X, X, { numHeads: 2 }, { present: true });
const onlyScores = attn.multiHeadAttentionQKV(X, X, X, { numHeads: 2 }, { scores: stage });
const asked: Tensor[] = [onlyPresent.presentKey, onlyPresent.presentValue, onlyScores.scores];
// @ts-expect-error scores were not asked for
const notAsked: Tensor = onlyPresent.scores;
// @ts-expect-error present was not asked for
const notPresent: Tensor = onlyScores.presentKey;
// @ts-expect-error nothing was asked for
const plainQKV: Tensor = attn.multiHeadAttentionQKV(X, X, X, { numHeads: 2 }).presentKey;
// A result is a tensor: it goes back in as an input.
attn.multiHeadAttentionQKV(onnx, onlyPresent.presentKey, onlyScores, { numHeads: 2 });
attn.attention(nested, nested, nested, {
  additiveMask: { data: [0, -Infinity], shape: [1, 1, 1, 2] },
});
// @ts-expect-error the score stages are named
attn.multiHeadAttentionQKV(X, X, X, { numHeads: 2 }, { scores: "softmax" });
// @ts-expect-error two causal alignments only
attn.attention(nested, nested, nested, { causalAlignment: "bottomRight" });

const cacheConfig: KVCacheConfig = { batch: 2, numKvHeads: 1, dK: 2, dV: 2, capacity: 16 };
const cache: KVCache = attn.createKVCache(cacheConfig);
cache.append(X, X);
const keys: Matrix = cache.keys(0, 0);
const values: Matrix = cache.values(1, 0);
const attended: Tensor = cache.attend(X, 2, { causal: true });
const decoded: Tensor = cache.decode(X, mhWeights, config);
const sizes: number[] = [
  cache.batch,
  cache.numKvHeads,
  cache.dK,
  cache.dV,
  cache.capacity,
  cache.size,
];
cache.truncate(1);
const beam: KVCache = cache.fork();
beam.dispose();
cache.reset();
cache.dispose();

// Every array the runtime takes: real Arrays and numeric typed arrays.
const typed: NumericTypedArray[] = [
  new Float32Array(1),
  new Float64Array(1),
  new Int8Array(1),
  new Uint8Array(1),
  new Uint8ClampedArray(1),
  new Int16Array(1),
  new Uint16Array(1),
  new Int32Array(1),
  new Uint32Array(1),
];
const numbers: NumberArray = [1, 2];
const readonlyRows: readonly (readonly number[])[] = [
  [1, 2],
  [3, 4],
];
const asConst = [
  [1, 2],
  [3, 4],
] as const;
const rowsOfTyped: MatrixLike = [new Float32Array(2), new Float64Array([1, 2]), [3, 4]];
const matrices: MatrixLike[] = [
  readonlyRows,
  asConst,
  rowsOfTyped,
  { data: new Int32Array(4), rows: 2, cols: 2 },
  { data: numbers, rows: 1, cols: 2 },
  { data: Object.freeze([1, 2]), rows: 2, cols: 1 },
];
const masks: MaskLike[] = [
  [
    [1, 0],
    [true, false],
  ],
  [new Uint8Array(2), [0, 1]],
  { data: [true, 1], rows: 1, cols: 2 },
  { data: new Uint8Array(4), rows: 2, cols: 2 },
  { data: new Int32Array(4), rows: 2, cols: 2 },
];
const tensors: TensorLike[] = [
  { data: [1, 2, 3, 4], shape: [1, 2, 2] },
  { data: new Float64Array(4), shape: new Int32Array([2, 2]) },
  { data: new Float32Array(4), shape: [2, 2] as const },
  nested,
];
const mhOut = new Float32Array(2 * 3 * 4);
const intoOut: Float32Array = attn.multiHeadAttention(X, mhWeights, config, {
  out: mhOut,
  keyLengths: new Int32Array([3, 2]),
}).data;
attn.attention(Q, Q, Q, {
  out: new Float32Array(6),
  additiveMask: { data: new Float64Array(4), rows: 2, cols: 2 },
});
attn.multiHeadAttentionQKV(X, X, X, { numHeads: 2 }, { out: mhOut, layout: "bshd" });

const memory: number = attn.memoryBytes() + attn.heapBytesInUse();
attn.dispose();

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
const codes: ErrorCode[] = [
  "invalid_argument",
  "shape_mismatch",
  "non_finite",
  "overflow",
  "capacity",
  "type",
  "disposed",
];

const selfGrads: SelfAttentionGradients = attn.selfAttentionBackward(nested, weights, Q, {
  causal: true,
  out: { dX: new Float32Array(6) },
});
const mhTrain: MultiHeadTrainingForward = attn.multiHeadAttentionQKVForTraining(
  X,
  X,
  X,
  { numHeads: 2 },
  { layout: "bshd", causal: true },
);
const mhBackOptions: MultiHeadQKVBackwardOptions = { layout: "bshd", saved: mhTrain };
const mhQKVGrads: MultiHeadQKVGradients = attn.multiHeadAttentionQKVBackward(
  X,
  X,
  X,
  { numHeads: 2 },
  X,
  mhBackOptions,
);
const mhBack: MultiHeadBackwardOptions = { keyLengths: [3, 2], out: { dW_O: new Float32Array(9) } };
const mhGrads: MultiHeadGradientsWithOutput = attn.multiHeadAttentionBackward(
  X,
  { W_Q: nested, W_K: nested, W_V: nested, W_O: nested },
  { numHeads: 2 },
  X,
  mhBack,
);
// With W_O given, dW_O is there.
const dWO: Matrix = mhGrads.dW_O;
const mhGradsNoWO: MultiHeadGradients = attn.multiHeadAttentionBackward(
  X,
  { W_Q: nested, W_K: nested, W_V: nested },
  { numHeads: 2 },
  X,
);
// @ts-expect-error without W_O there is no dW_O
const noDWO: Matrix = mhGradsNoWO.dW_O;
const gradTensors: Tensor[] = [mhQKVGrads.dQ, mhQKVGrads.dK, mhQKVGrads.dV, mhGrads.dX];
const maybeWO: Matrix | undefined = mhGrads.dW_O;
const selfParts: Matrix[] = [selfGrads.dX, selfGrads.dW_Q, selfGrads.dW_K, selfGrads.dW_V];
const lseShape: number[] = mhTrain.lse.shape;

const backTrace: SelfAttentionBackwardTrace = attn.traceBackward(nested, weights, Q, {
  causal: true,
});
const backTraceQKV: AttentionBackwardTrace = attn.traceBackwardQKV(Q, nested, nested, Q);
// traceBackward() has the gradients of X and of the projections, and the forward's X.
const projectionGrads: Matrix[] = [
  backTrace.dX,
  backTrace.dW_Q,
  backTrace.dW_K,
  backTrace.dW_V,
  backTrace.forward.X,
];
// @ts-expect-error traceBackwardQKV() has no dX
const noDX: Matrix = backTraceQKV.dX;
const backParts: Matrix[] = [
  backTrace.dO,
  backTrace.dV,
  backTrace.dWeights,
  backTrace.D,
  backTrace.dMaskedScores,
  backTrace.dScores,
  backTrace.dQ,
  backTrace.dK,
  backTraceQKV.forward.weights,
];
const backX: Matrix | undefined = backTrace.dX ?? backTraceQKV.dW_Q;

use(
  hasSimd,
  isSimd,
  target,
  scalarTarget,
  outBuffer,
  traceInput,
  traceQKVInput,
  presentValue,
  asked,
  notAsked,
  notPresent,
  plainQKV,
  dWO,
  noDWO,
  projectionGrads,
  noDX,
  versions,
  loads,
  outData,
  self,
  cross,
  pf,
  traceX,
  weightRows,
  usedScale,
  traceParts,
  lseRows,
  gradParts,
  gradTensors,
  maybeWO,
  selfParts,
  lseShape,
  backParts,
  backX,
  product,
  probabilities,
  shape,
  merged,
  mh,
  mhNoWO,
  qkv,
  keys,
  values,
  attended,
  decoded,
  sizes,
  typed,
  matrices,
  masks,
  tensors,
  intoOut,
  memory,
  codes,
);

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
// @ts-expect-error attentionBackward needs dO
attn.attentionBackward(Q, Q, Q);
// @ts-expect-error a backward call's out names each gradient
attn.attentionBackward(Q, Q, Q, Q, { out: new Float32Array(4) });
// @ts-expect-error saved needs the lse too
attn.attentionBackward(Q, Q, Q, Q, { saved: { out: Q } });
// @ts-expect-error the forward for training has no ONNX scores
attn.multiHeadAttentionQKVForTraining(X, X, X, { numHeads: 2 }, { scores: "raw" });
// @ts-expect-error multiHeadAttentionBackward needs dO
attn.multiHeadAttentionBackward(X, mhWeights, { numHeads: 2 });
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

// Array-likes the runtime rejects (it takes real Arrays and numeric typed arrays only).
// @ts-expect-error an array-like object is not an array of rows
attn.attention({ length: 1, 0: [1, 2] }, Q, Q);
// @ts-expect-error an array-like object is not a row
attn.attention([{ length: 2, 0: 1, 1: 2 }], Q, Q);
// @ts-expect-error an array-like object is not matrix data
attn.matmul({ data: { length: 2, 0: 1, 1: 2 }, rows: 1, cols: 2 }, Q);
// @ts-expect-error a DataView is not matrix data
attn.softmax({ data: new DataView(new ArrayBuffer(8)), rows: 1, cols: 2 });
// @ts-expect-error a DataView is not a row
attn.softmax([new DataView(new ArrayBuffer(8))]);
// @ts-expect-error BigInt64Array holds bigints, not numbers
attn.softmax({ data: new BigInt64Array(2), rows: 1, cols: 2 });
// @ts-expect-error a string is not a row
attn.softmax(["12"]);
// @ts-expect-error a typed array of rows is one row, not rows
attn.softmax(new Float32Array(4));
// @ts-expect-error an array-like object is not tensor data
attn.mergeHeads({ data: { length: 1, 0: 1 }, shape: [1, 1, 1] });
// @ts-expect-error an array-like object is not a shape
attn.mergeHeads({ data: new Float32Array(1), shape: { length: 3, 0: 1, 1: 1, 2: 1 } });
// @ts-expect-error a string is not a shape
attn.mergeHeads({ data: new Float32Array(1), shape: "111" });
// @ts-expect-error mask rows hold booleans or numbers, not strings
attn.attention(Q, Q, Q, { boolMask: [["yes", "no"]] });
// @ts-expect-error an array-like object is not a mask row
attn.attention(Q, Q, Q, { boolMask: [{ length: 1, 0: true }] });
// @ts-expect-error a DataView is not mask data
attn.attention(Q, Q, Q, { boolMask: { data: new DataView(new ArrayBuffer(4)), rows: 2, cols: 2 } });
// @ts-expect-error keyLengths is an Array or a typed array
attn.multiHeadAttention(X, mhWeights, config, { keyLengths: { length: 2, 0: 3, 1: 2 } });
// @ts-expect-error keyLengths is an Array or a typed array
attn.multiHeadAttention(X, mhWeights, config, { keyLengths: new DataView(new ArrayBuffer(8)) });
// @ts-expect-error out is a Float32Array
attn.attention(Q, Q, Q, { out: new Float64Array(6) });
// @ts-expect-error out is a Float32Array
attn.attention(Q, Q, Q, { out: [0, 0, 0, 0, 0, 0] });
// @ts-expect-error out is over an ArrayBuffer, as every result's data is
attn.attention(Q, Q, Q, { out: new Float32Array(new SharedArrayBuffer(24)) });

// Misspelled keys (the runtime rejects unknown keys with "invalid_argument").
// @ts-expect-error W_o is not W_O
attn.multiHeadAttention(X, { W_Q: nested, W_K: nested, W_V: nested, W_o: nested }, config);
// @ts-expect-error numKVHeads is not numKvHeads
attn.multiHeadAttention(X, mhWeights, { numHeads: 2, numKVHeads: 1 });
// @ts-expect-error w_q is not W_Q
attn.selfAttention(Q, { w_q: Q, W_K: Q, W_V: Q });
// @ts-expect-error capacty is not capacity
attn.createKVCache({ numKvHeads: 1, dK: 2, dV: 2, capacity: 4, capacty: 4 });
// @ts-expect-error thread is not threads
await createAttnkit({ thread: 2 });
// @ts-expect-error wasmPath is not wasmPaths
await createAttnkit({ wasmPath: "/dist/" });
// @ts-expect-error keyLenghts is not keyLengths
attn.multiHeadAttention(X, mhWeights, config, { keyLenghts: [1, 2] });
// @ts-expect-error cols, not columns
attn.softmax({ data: [1, 2], rows: 1, columns: 2 });

// The new API's types.
// @ts-expect-error version is read-only
attn.version = "1";
// @ts-expect-error wasmPaths is a string or a map of strings
await createAttnkit({ wasmPaths: { "attnkit-simd.wasm": 1 } });
// @ts-expect-error wasmBinary is bytes, not a URL
await createAttnkit({ wasmBinary: "attnkit-simd.wasm" });
// @ts-expect-error timeout is a number of ms
await createAttnkit({ timeout: "30s" });
// @ts-expect-error truncate takes the size to keep
cache.truncate();
// @ts-expect-error dispose returns nothing
const disposed: Attnkit = attn.dispose();
use(disposed);

// The model layer: create, train, read every head, export and load.
// Only a module loaded with the literal `model: true` has the model layer's functions.
const withModel: AttnkitWithModel = await createAttnkit({ model: true, simd: false });
const hasModel: true = withModel.model;
const asPlain: Attnkit = withModel;
const modelLoad: LoadOptions = { model: true };
const maybeModel: Attnkit = await createAttnkit(modelLoad);
const isModel: boolean = maybeModel.model;
use(hasModel, asPlain, isModel);
const taskForDefault: TaskConfig = { kind: "copy", length: 2, vocabSize: 4 };
// @ts-expect-error the default module has no model layer (createModel would throw)
attn.createModel({ vocabSize: 4, maxSeqLen: 4, dModel: 8 });
// @ts-expect-error nor task helpers
attn.taskSeqLen(taskForDefault);
// @ts-expect-error model: false is the default module
(await createAttnkit({ model: false })).createTrainer;
// @ts-expect-error model: boolean may be either
maybeModel.loadModel(new Uint8Array(8));
const taskKind: TaskKind = "induction";
const task: TaskConfig = { kind: taskKind, length: 8, padding: 8, vocabSize: 24 };
const modelConfig: ModelConfig = {
  vocabSize: 24,
  maxSeqLen: withModel.taskSeqLen(task),
  dModel: 32,
  numLayers: 2,
  numHeads: 2,
};
const model: Model = withModel.createModel(modelConfig, { seed: 1, task });
const resolved: ResolvedModelConfig = model.config;
const trainerOptions: TrainerOptions = { learningRate: 1e-2, warmupSteps: 50 };
const trainer: Trainer = withModel.createTrainer(model, trainerOptions);
const generator: TaskGenerator = withModel.createTaskGenerator(task, { seed: 1234n });
const taskBatch: TaskBatch = generator.next(32);
const stepMetrics: ModelMetrics = trainer.step(taskBatch);
const ownBatch: ModelBatch = { batch: 1, seqLen: 2, tokens: [1, 2], targets: [-1, 3] };
const evalMetrics: ModelMetrics = model.evaluate(ownBatch);
const heads: Tensor[] = Array.from({ length: resolved.numLayers }, (_, l) =>
  model.attentionWeights(l),
);
const params: ModelParameters = model.parameters();
const firstLayer: LayerParameters = params.layers[0];
const lnGain: Matrix | undefined = firstLayer.lnGain;
use(
  params.tokenEmbedding.rows,
  params.unembedding.data,
  firstLayer.W_O.cols,
  lnGain,
  params.finalGain,
);
const sample = withModel.makeBatch(task, { batch: 1, seed: 3 });
const inspection: ScoredInspection = model.inspect(sample.tokens, sample.targets);
const seen: Inspection = model.inspect([1, 2, 3]);
const inspected = inspection.layers[1];
const layerView: LayerInspection = inspected;
// With targets, the loss, the accuracy and every layer's dScores are there.
const dScores: Tensor = inspected.dScores;
const loss: number = inspection.loss;
const accuracy: number = inspection.accuracy;
const targetsIfAny = (): readonly number[] | undefined => undefined;
const maybeScored: Inspection = model.inspect([1, 2, 3], targetsIfAny());
// @ts-expect-error without targets there is no loss
const noLoss: number = seen.loss;
use(accuracy, maybeScored, noLoss, layerView);
const tokensData: Int32Array<ArrayBuffer> = inspection.predictions;
const batchData: Int32Array<ArrayBuffer> = sample.targets;
needsArrayBuffer(tokensData, batchData, model.parameters().tokenEmbedding.data);
use(inspected.input.cols, inspected.Q.shape, inspected.K, inspected.V, inspected.weights.data);
use(dScores, loss, inspection.accuracy, inspection.predictions[0], inspection.logits, seen.tokens);
const bytes: Uint8Array<ArrayBuffer> = model.exportWeights();
const reloaded: Model = withModel.loadModel(bytes);
const onnxOptions: OnnxExportOptions = { opset: 20, cache: true };
const onnxFile: Promise<Uint8Array<ArrayBuffer>> = model.exportOnnx(onnxOptions);
// @ts-expect-error an opset is a number
void model.exportOnnx({ opset: "23" });
use(onnxFile, model.exportOnnx());
use(stepMetrics.loss, evalMetrics.accuracy, heads, trainer.steps, trainer.learningRate(1));
use(
  withModel.makeBatch(task, { batch: 4, seed: 7 }).tokens,
  withModel.taskMinVocab(task),
  generator.seqLen,
);
// exactOptionalPropertyTypes: undefined leaves an optional field to its default,
// as the runtime does, and resolved fields are never undefined.
const maybeCount = (): number | undefined => undefined;
const configWithUndefined: ModelConfig = {
  vocabSize: 24,
  maxSeqLen: 8,
  dModel: 16,
  numLayers: maybeCount(),
  numHeads: undefined,
  numKvHeads: undefined,
  dK: undefined,
  dFF: undefined,
  layerNorm: undefined,
  scaleBySqrtDk: undefined,
};
withModel.createModel(configWithUndefined).dispose();
withModel.createTaskGenerator(task, { seed: maybeCount() }).dispose();
use(withModel.makeBatch(task, { batch: 1, seed: undefined }).seqLen);
const resolvedLayers: number = resolved.numLayers;
const resolvedLayerNorm: boolean = resolved.layerNorm;
const trainerRate: number = trainer.options.learningRate;
const taskPadding: number = generator.task.padding;
use(resolvedLayers, resolvedLayerNorm, trainerRate, taskPadding);
reloaded.dispose();
generator.dispose();
trainer.dispose();
model.dispose();
// The language model: tokenizer, dataset, a GPT, generation.
const tokenizer: Tokenizer = withModel.createTokenizer("Call me Ishmael.");
const charTokens: Int32Array<ArrayBuffer> = tokenizer.encode("Call");
const decodedText: string = tokenizer.decode(charTokens);
const datasetOptions: TextDatasetOptions = { seqLen: 8, seed: 2n, validationWindows: 4 };
const textData: TextDataset = withModel.createTextDataset(
  "Call me Ishmael. ".repeat(20),
  datasetOptions,
);
const gpt: Model = withModel.createModel(
  { maxSeqLen: 8, dModel: 16, numHeads: 2, dFF: 64, layerNorm: true },
  { seed: 1, vocabulary: textData.vocabulary },
);
const gptTrainer: Trainer = withModel.createTrainer(gpt, {
  decaySteps: 100,
  minLearningRate: 1e-4,
});
gptTrainer.step(textData.next(4));
const validation: number = textData.validationLoss(gpt);
const generateOptions: GenerateOptions = { length: 10, temperature: 0.8, topK: 5, seed: 3 };
const generated: Generated = gpt.generate("Call", generateOptions);
const firstStep: GeneratedCharacter | undefined = generated.steps[0];
const samplerOptions: SamplerOptions = { temperature: 0 };
const sampler: Sampler = gpt.sampler("Call", samplerOptions);
const nextCharacter: string = sampler.next().character;
const gptVocabulary: readonly string[] | null = gpt.vocabulary;
const gptTokenizer: Tokenizer | null = gpt.tokenizer;
use(decodedText, validation, generated.text, firstStep?.weights[0]?.shape, nextCharacter);
use(gptVocabulary, gptTokenizer?.vocabSize, textData.trainTokens, gpt.config.dFF);
const unknownCount: number = textData.unknownCharacters;
const textOnly: Generated = gpt.generate("Call", { length: 1000, steps: false });
use(unknownCount, textOnly.text);
sampler.dispose();
gptTrainer.dispose();
gpt.dispose();
textData.dispose();
// A Hugging Face GPT-2 checkpoint: from bytes, a path, a URL or a repository id.
const checkpointOptions: OpenCheckpointOptions = {
  hubUrl: "http://localhost:8000",
  revision: "main",
  onProgress: (p: CheckpointProgress) => use(p.loadedBytes / p.totalBytes, p.tensor),
};
const info: CheckpointInfo = await withModel.checkpointInfo(
  "openai-community/gpt2",
  checkpointOptions,
);
const where: CheckpointSourceInfo = info.source;
if (where.kind === "hub") use(where.repo, where.revision);
use(info.totalBytes, info.parameters, info.memoryBytes, info.dtype, info.config.numLayers);
const gpt2: Model = await withModel.openCheckpoint(new Uint8Array(8), {
  config: { n_embd: 16 },
  numHeads: 2,
});
const gpt2Pieces: readonly string[] | undefined = gpt2.tokenizer?.vocabulary;
use(gpt2Pieces, await withModel.openCheckpoint(new ArrayBuffer(8)));
// @ts-expect-error onprogress is not onProgress
withModel.openCheckpoint("gpt2", { onprogress: () => {} });
// @ts-expect-error a source is not a number
withModel.checkpointInfo(42);
// @ts-expect-error a task model needs its vocabSize
withModel.createModel({ maxSeqLen: 4, dModel: 8 }, { seed: 1 });
// @ts-expect-error a tokenizer's text is a string
withModel.createTokenizer(["a"]);
// @ts-expect-error a dataset needs its seqLen
withModel.createTextDataset("abc", { seed: 1 });
// @ts-expect-error topk is not topK
gpt.generate("a", { topk: 3 });
// @ts-expect-error "bracket" is not a task
withModel.createTaskGenerator({ kind: "bracket", length: 4, vocabSize: 5 });
// @ts-expect-error dmodel is not dModel
withModel.createModel({ vocabSize: 5, maxSeqLen: 4, dmodel: 8 });
// @ts-expect-error learningrate is not learningRate
withModel.createTrainer(model, { learningrate: 1e-2 });
// @ts-expect-error weights are bytes
withModel.loadModel([1, 2, 3]);
// @ts-expect-error makeBatch needs a batch size
withModel.makeBatch(task, { seed: 1 });
// @ts-expect-error the config is read-only
model.config.dModel = 4;
// @ts-expect-error model is a boolean
await createAttnkit({ model: "yes" });
// @ts-expect-error tokens are integers, not a string
model.inspect("1 2 3");
// @ts-expect-error dScores may be absent (no targets)
const mustHave: Tensor = seen.layers[0].dScores;
use(mustHave);
// @ts-expect-error attn.model is read-only
withModel.model = false;
