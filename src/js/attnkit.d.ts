/**
 * attnkit: transformer self-attention computed by a C++17 / Highway SIMD core
 * compiled to WebAssembly. Every function copies its inputs into the module once
 * and returns JS-owned Float32Arrays (never views into wasm memory).
 *
 * Shapes follow the maths: X [T, d_model], Q [T_q, d_k], K [T_k, d_k],
 * V [T_k, d_v], scores and weights [T_q, T_k], output [T_q, d_v].
 */

/**
 * The arrays results hold: new arrays over an ArrayBuffer of their own (never a
 * SharedArrayBuffer or wasm memory), so they go wherever an ArrayBuffer-backed
 * view is asked for, such as `new Blob([r.data])` or `postMessage(m, [m.data.buffer])`.
 * Written through the constructors' `of()` so that it is `Float32Array<ArrayBuffer>`
 * where the lib's typed arrays are generic (TypeScript 5.7 and later) and plain
 * `Float32Array` before.
 */
type Float32Data = ReturnType<Float32ArrayConstructor["of"]>;
type Int32Data = ReturnType<Int32ArrayConstructor["of"]>;
type Uint8Data = ReturnType<Uint8ArrayConstructor["of"]>;

/** A row-major float32 matrix. */
export interface Matrix {
  data: Float32Data;
  rows: number;
  cols: number;
  /**
   * [rows, cols], set on every result (optional so that a Matrix written by hand
   * needs none): with `data`, what `new ort.Tensor("float32", r.data, r.shape)` and
   * `tf.tensor(r.data, r.shape)` take.
   */
  shape?: [number, number];
}

/** A row-major float32 tensor of any rank (e.g. [batch, seq, heads * head_dim]). */
export interface Tensor {
  data: Float32Data;
  shape: number[];
}

/**
 * The typed arrays attnkit reads numbers from. Not DataView, BigInt64Array or
 * BigUint64Array (their elements are not numbers), nor other array-likes such
 * as `{ length: 2, 0: 1, 1: 2 }` or strings: the runtime rejects those.
 */
export type NumericTypedArray =
  | Float32Array
  | Float64Array
  | Int8Array
  | Uint8Array
  | Uint8ClampedArray
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array;

/** Numbers as a real Array or a {@link NumericTypedArray}. */
export type NumberArray = readonly number[] | NumericTypedArray;

/**
 * What functions accept as a matrix: a {@link Matrix} (data may also be another
 * {@link NumberArray}), a tensor of rank 2 `{ data, shape: [rows, cols] }`, or an
 * Array of rows, each an Array of numbers or a typed array, such as `[[1, 2], [3, 4]]`,
 * or an onnxruntime or tfjs tensor of rank 2 ({@link ExternalTensor}).
 */
export type MatrixLike =
  | { readonly data: NumberArray; readonly rows: number; readonly cols: number }
  | { readonly data: NumberArray; readonly shape: readonly [number, number] }
  | readonly NumberArray[]
  | ExternalTensor;

/**
 * A boolean mask [T_q, T_k]: true / nonzero = may attend. `data` (or each row of
 * an Array of rows) holds booleans or numbers, or is a typed array.
 */
export type MaskLike =
  | {
      readonly data: readonly (number | boolean)[] | NumericTypedArray;
      readonly rows: number;
      readonly cols: number;
    }
  | readonly (readonly (number | boolean)[] | NumericTypedArray)[]
  | ExternalTensor;

/**
 * A mask of any shape ONNX Attention's attn_mask takes: a matrix [T_q, T_k], or a
 * tensor `{ data, shape }` of shape [T_q, T_k], [heads, T_q, T_k] or [batch, heads,
 * T_q, T_k], where batch and heads may be 1 (shared), T_q may be 1 (one row for
 * every query) and the last dimension may be shorter than the key count (later
 * keys are masked out, as ONNX pads). Bool masks: `data` holds booleans or 0/1.
 */
export type MaskTensorLike<M> =
  | M
  | {
      readonly data: readonly (number | boolean)[] | NumericTypedArray;
      readonly shape: NumberArray;
    };

/** What functions accept as a tensor: a {@link Tensor} or a {@link MatrixLike} (rank 2). */
export type TensorLike =
  { readonly data: NumberArray; readonly shape: NumberArray } | MatrixLike | ExternalTensor;

/**
 * `typeof Symbol.dispose` where the consumer's lib declares it (lib
 * "esnext.disposable", "esnext", or @types/node), else never: the declarations
 * then compile without it, and KVCache has no `[Symbol.dispose]` member.
 */
type DisposeSymbol = SymbolConstructor extends { readonly dispose: infer S extends symbol }
  ? S
  : never;

/**
 * Options of every attention call. Masks combine: a key is attended only if every
 * mask allows it. Order: raw = Q K^T; scaled = raw * scale, then soft-capped;
 * masked = scaled + additiveMask, -Infinity where a mask forbids; weights =
 * row softmax; output = weights V. A fully masked row gives zero weights and a
 * zero output row, never NaN.
 */
export interface AttentionOptions {
  /** Multiplies Q K^T. Default 1 / sqrt(d_k) (1 / sqrt(d_model) when parameter-free). Finite, > 0. */
  scale?: number | undefined;
  /** 0 (default) = off; else s -> softcap * tanh(s / softcap) after scaling. Finite, >= 0. */
  softcap?: number | undefined;
  /**
   * Query i sees key j only if j <= i + (T_k - T_q) (causalAlignment "lowerRight", the
   * default), or j <= i + offset ("upperLeft"). Default false (true for KV cache calls).
   */
  causal?: boolean | undefined;
  /**
   * "lowerRight" (default): the last query sees every key. "upperLeft": j <= i +
   * causalOffset (ONNX Attention: the past length with pastKey, nonpad_kv_seqlen[b] - T_q
   * with per-item padding, else 0). A row with i + offset < 0 sees no key (zeros).
   */
  causalAlignment?: "lowerRight" | "upperLeft" | undefined;
  /** The offset of "upperLeft" alignment (an integer, may be negative). Default 0. */
  causalOffset?: number | undefined;
  /** "upperLeft" alignment, batched calls: one offset per batch item (overrides causalOffset). */
  causalOffsets?: NumberArray | undefined;
  /** Key padding for one sequence: only keys [0, keyLength) are attended. */
  keyLength?: number | undefined;
  /** Key padding for a batch: one length per item (batched calls only). */
  keyLengths?: NumberArray | undefined;
  /** Boolean mask (true = may attend): [T_q, T_k] for every item and head, or a tensor (see {@link MaskTensorLike}). */
  boolMask?: MaskTensorLike<MaskLike> | undefined;
  /** Additive mask (may hold -Infinity, not NaN or +Infinity), shaped as boolMask. */
  additiveMask?: MaskTensorLike<MatrixLike> | undefined;
  /**
   * The result is written into this array, whose length must equal the result's
   * element count, and returned as the result's `data`: no allocation per call in
   * hot loops. A Float32Array over an ArrayBuffer, as every result's data is.
   */
  out?: Float32Data | undefined;
}

/** Projection weights of one head: W_Q and W_K [d_model, d_k], W_V [d_model, d_v]. */
export interface HeadWeights {
  W_Q: MatrixLike;
  W_K: MatrixLike;
  W_V: MatrixLike;
}

/**
 * Multi-head weights, one big projection per role: W_Q [d_model, h*d_k],
 * W_K [d_model, kvh*d_k], W_V [d_model, kvh*d_v], W_O [h*d_v, d_out] (optional:
 * without it the merged heads [.., h*d_v] are returned).
 */
export interface MultiHeadWeights extends HeadWeights {
  W_O?: MatrixLike;
}

/**
 * A multi-head layer's W_Q, W_K, W_V and W_O, checked and packed once in wasm
 * memory by `packWeights(weights, config)`; multiHeadAttention takes it where it
 * takes the weights, and then neither copies, checks nor packs them again: the
 * same results bit for bit, less work per call. Holds wasm memory: call dispose()
 * (or `using`) when done; a call with a disposed pack throws an AttnkitError with
 * code "disposed".
 */
export interface PackedWeights extends Record<DisposeSymbol, () => void> {
  /** The rows of W_Q: the features X must have. */
  readonly dModel: number;
  /** The features of the result: the columns of W_O, or numHeads * dV without it. */
  readonly dOut: number;
  /** The configuration the weights were packed for, every field resolved. */
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly dK: number;
  readonly dV: number;
  /** Frees the wasm memory. Any later call with this pack throws. Safe to call twice. */
  dispose(): void;
}

/** Head configuration. Omitted: numKvHeads = numHeads, dK = d_model / numHeads, dV = dK. */
export interface HeadConfig {
  numHeads: number;
  /** Must divide numHeads; 1 = multi-query attention. */
  numKvHeads?: number | undefined;
  dK?: number | undefined;
  dV?: number | undefined;
}

/** Every intermediate of single-head attention, each with its shape (traceQKV). */
export interface AttentionTrace {
  /** [T, d_model]; absent for traceQKV (see {@link SelfAttentionTrace}). */
  X?: Matrix;
  Q: Matrix;
  K: Matrix;
  V: Matrix;
  /** Q K^T [T_q, T_k] */
  rawScores: Matrix;
  /** raw * scale, soft-capped if enabled */
  scaledScores: Matrix;
  /** scaled + additive mask, -Infinity where masked */
  maskedScores: Matrix;
  /** row softmax: each row sums to 1, or is all 0 when fully masked */
  weights: Matrix;
  /** weights V [T_q, d_v] */
  output: Matrix;
  /** the scale that was applied */
  scale: number;
}

/** What trace() returns: every intermediate, the input X among them. */
export interface SelfAttentionTrace extends AttentionTrace {
  /** [T, d_model] */
  X: Matrix;
}

/**
 * The forward for training's result: the output, and the log-sum-exp of each
 * row of masked scores (lse_i = log sum_j exp(masked_ij); -Infinity for a row
 * that sees no key), which a backward call takes as `options.saved`.
 */
export interface TrainingForward {
  /** [T_q, d_v], as attention() returns. */
  out: Matrix;
  /** [T_q, 1] */
  lse: Matrix;
}

/**
 * Options of attentionBackward: those of the forward (the same values the
 * forward was called with), plus the forward's saved results.
 */
export interface AttentionBackwardOptions extends Omit<AttentionOptions, "out"> {
  /**
   * The attentionForTraining result for the same Q, K, V and options: the
   * backward then skips recomputing the forward. Gradients equal the
   * recomputing call's bit for bit.
   */
  saved?: { readonly out: MatrixLike | undefined; readonly lse: MatrixLike };
  /** Arrays the gradients are written into (each of their element count) and returned as `data`. */
  out?: { dQ?: Float32Data | undefined; dK?: Float32Data; dV?: Float32Data };
}

/**
 * Gradients of a loss with respect to Q, K and V, given dO = dLoss/dOutput.
 * Masked keys and fully masked rows get exactly zero gradient, never NaN.
 */
export interface AttentionGradients {
  /** [T_q, d_k] */
  dQ: Matrix;
  /** [T_k, d_k] */
  dK: Matrix;
  /** [T_k, d_v] */
  dV: Matrix;
}

/**
 * Every intermediate of the backward of single-head attention (traceBackward,
 * traceBackwardQKV), each with its shape, given dO = dLoss/dOutput.
 */
export interface AttentionBackwardTrace {
  /** The forward's intermediates, as trace() / traceQKV() return them. */
  forward: AttentionTrace;
  /** [T_q, d_v]: the given gradient of the output. */
  dO: Matrix;
  /** [T_k, d_v]: weights^T dO. */
  dV: Matrix;
  /** [T_q, T_k]: dP = dO V^T, the gradient of the weights. */
  dWeights: Matrix;
  /** [T_q, 1]: D = rowsum(dO * output). */
  D: Matrix;
  /** [T_q, T_k]: through the softmax, weights * (dWeights - D); 0 where masked. */
  dMaskedScores: Matrix;
  /** [T_q, T_k]: before the softcap, dMaskedScores * (1 - tanh^2(s / softcap)) (= dMaskedScores without softcap). */
  dScores: Matrix;
  /** [T_q, d_k]: scale dScores K. */
  dQ: Matrix;
  /** [T_k, d_k]: scale dScores^T Q. */
  dK: Matrix;
  /** [T, d_model]; traceBackward only. */
  dX?: Matrix;
  /** [d_model, d_k]; traceBackward only. */
  dW_Q?: Matrix;
  /** [d_model, d_k]; traceBackward only. */
  dW_K?: Matrix;
  /** [d_model, d_v]; traceBackward only. */
  dW_V?: Matrix;
}

/** What traceBackward() returns: the traces with X, and the gradients of X and the projections. */
export interface SelfAttentionBackwardTrace extends AttentionBackwardTrace {
  forward: SelfAttentionTrace;
  dX: Matrix;
  dW_Q: Matrix;
  dW_K: Matrix;
  dW_V: Matrix;
}

/**
 * Layout of multi-head tensors: "bshd" = [batch, seq, heads*head_dim] (PyTorch
 * Linear output, ONNX MultiHeadAttention) or "bhsd" = [batch, heads, seq, head_dim]
 * (PyTorch scaled_dot_product_attention).
 */
export type HeadLayout = "bshd" | "bhsd";

/** Options of multi-head calls on Q, K, V (ONNX Attention's inputs and outputs). */
export interface MultiHeadOptions extends AttentionOptions {
  /**
   * Default "bshd". Outputs use the same layout as the inputs. Either layout is
   * passed to the core as it is (no transposition), options.out too.
   */
  layout?: HeadLayout | undefined;
  /**
   * Keys and values that precede K and V, [batch, numKvHeads, T_past, dK | dV] (ONNX
   * past_key / past_value); both or neither. Attention runs against past + new keys;
   * masks, key lengths and causal offsets count those T_past + T_k keys.
   */
  pastKey?: TensorLike | undefined;
  pastValue?: TensorLike | undefined;
  /** Also return presentKey / presentValue: past followed by K / V, [batch, numKvHeads, T_total, d]. */
  present?: boolean | undefined;
  /** Also return `scores` [batch, numHeads, T_q, T_total] at this stage. */
  scores?: ScoreStage | undefined;
}

/**
 * The stage of multiHeadAttentionQKV's `scores`: "raw" (Q K^T), "scaled" (times
 * scale, then soft-capped: ONNX qk_matmul_output_mode 0/1), "masked" (plus masks,
 * -Infinity where masked: mode 2) or "weights" (softmax: mode 3).
 */
export type ScoreStage = "raw" | "scaled" | "masked" | "weights";

/**
 * The result of multiHeadAttentionQKV: the output, and what the options asked
 * for (non-optional in the result's type when the options say so literally:
 * `present: true`, `scores: "weights"`).
 */
export interface MultiHeadQKVResult extends Tensor {
  presentKey?: Tensor;
  presentValue?: Tensor;
  scores?: Tensor;
}

/** The past keys and values followed by the new ones, as `present: true` returns them. */
export interface PresentKeyValue {
  presentKey: Tensor;
  presentValue: Tensor;
}

/** Options of selfAttentionBackward: those of the forward. */
export interface SelfAttentionBackwardOptions extends Omit<AttentionOptions, "out"> {
  /** Arrays the gradients are written into (each of their element count) and returned as `data`. */
  out?: {
    dX?: Float32Data | undefined;
    dW_Q?: Float32Data;
    dW_K?: Float32Data;
    dW_V?: Float32Data;
  };
}

/** Gradients of self-attention with one head: of X and of the projection weights. */
export interface SelfAttentionGradients {
  /** [T, d_model] */
  dX: Matrix;
  /** [d_model, d_k] */
  dW_Q: Matrix;
  /** [d_model, d_k] */
  dW_K: Matrix;
  /** [d_model, d_v] */
  dW_V: Matrix;
}

/** The multi-head forward for training's result. */
export interface MultiHeadTrainingForward {
  /** As multiHeadAttentionQKV's output, in the layout of the inputs. */
  out: Tensor;
  /** [batch, numHeads, T_q]: the log-sum-exp of each row of masked scores (-Infinity: no key). */
  lse: Tensor;
}

/** Options of multiHeadAttentionQKVForTraining: those of multiHeadAttentionQKV but ONNX's extras. */
export type MultiHeadTrainingOptions = Omit<
  MultiHeadOptions,
  "pastKey" | "pastValue" | "present" | "scores"
>;

/** Options of multiHeadAttentionQKVBackward: those of the forward, and its saved results. */
export interface MultiHeadQKVBackwardOptions extends Omit<MultiHeadTrainingOptions, "out"> {
  /** multiHeadAttentionQKVForTraining's result for the same inputs and options. */
  saved?: { readonly out: TensorLike | undefined; readonly lse: TensorLike };
  /** Arrays the gradients are written into (each of their element count) and returned as `data`. */
  out?: { dQ?: Float32Data | undefined; dK?: Float32Data; dV?: Float32Data };
}

/** Gradients of multi-head attention on Q, K, V, each shaped as its input (same layout). */
export interface MultiHeadQKVGradients {
  dQ: Tensor;
  /** Summed over the query heads of each K/V head. */
  dK: Tensor;
  dV: Tensor;
}

/** Options of multiHeadAttentionBackward: those of multiHeadAttention. */
export interface MultiHeadBackwardOptions extends Omit<AttentionOptions, "out"> {
  /** Arrays the gradients are written into (each of their element count) and returned as `data`. */
  out?: {
    dX?: Float32Data | undefined;
    dW_Q?: Float32Data | undefined;
    dW_K?: Float32Data | undefined;
    dW_V?: Float32Data | undefined;
    dW_O?: Float32Data | undefined;
  };
}

/** Gradients of multi-head attention with projections. */
export interface MultiHeadGradients {
  /** Shaped as X. */
  dX: Tensor;
  /** Shaped as weights.W_Q, summed over the batch. */
  dW_Q: Matrix;
  dW_K: Matrix;
  dW_V: Matrix;
  /** Only when weights.W_O was given. */
  dW_O?: Matrix;
}

/** multiHeadAttentionBackward's gradients when weights.W_O was given. */
export interface MultiHeadGradientsWithOutput extends MultiHeadGradients {
  dW_O: Matrix;
}

/** Creation parameters of a {@link KVCache}. */
export interface KVCacheConfig {
  batch?: number | undefined;
  numKvHeads: number;
  dK: number;
  dV: number;
  /** Maximum tokens per batch item; appending past it throws. */
  capacity: number;
}

/**
 * Keys and values of past tokens, for token-by-token decoding. Layout
 * [batch, numKvHeads, capacity, dK|dV]. Holds wasm memory: call dispose() (or use
 * `using cache = attn.createKVCache(...)` where the lib declares Symbol.dispose)
 * when done.
 */
export interface KVCache extends Record<DisposeSymbol, () => void> {
  readonly batch: number;
  readonly numKvHeads: number;
  readonly dK: number;
  readonly dV: number;
  readonly capacity: number;
  /** Tokens cached per batch item. */
  readonly size: number;
  /** Appends tokens: K [batch, T_new, kvh*dK], V [batch, T_new, kvh*dV] (bshd). */
  append(K: TensorLike, V: TensorLike): void;
  /** Cached keys [size, dK] of one item and K/V head. */
  keys(item: number, kvHead: number): Matrix;
  /** Cached values [size, dV] of one item and K/V head. */
  values(item: number, kvHead: number): Matrix;
  /**
   * The newest queries against the cache (their K/V must be appended already):
   * Q [batch, T_new, numHeads*dK] -> [batch, T_new, numHeads*dV]. Causal by default.
   */
  attend(Q: TensorLike, numHeads: number, options?: AttentionOptions): Tensor;
  /**
   * One decoding step: projects X [batch, T_new, d_model], appends its K and V,
   * attends and applies W_O -> [batch, T_new, d_out]. On error the cache is unchanged.
   */
  decode(
    X: TensorLike,
    weights: MultiHeadWeights,
    config: HeadConfig,
    options?: AttentionOptions,
  ): Tensor;
  /** Forgets every token; keeps the capacity. */
  reset(): void;
  /**
   * Keeps the first `size` tokens of every item; size <= current size, else
   * AttnkitError.
   */
  truncate(size: number): void;
  /**
   * A new cache with the same configuration and contents, e.g. for beam search;
   * dispose it too.
   */
  fork(): KVCache;
  /** Frees the wasm memory. Any later call throws. Safe to call twice. */
  dispose(): void;
}

/**
 * A model's configuration (docs/model.md): 1 to 48 layers of causal multi-head
 * attention over a residual stream; attention-only (dFF 0), or GPT blocks with
 * an MLP of width dFF (docs/language.md).
 */
export interface ModelConfig {
  /** Tokens (the separator 0 of the tasks, the unknown token 0 of a language model, included). */
  vocabSize: number;
  /** Positions of the position embedding: the longest sequence. */
  maxSeqLen: number;
  dModel: number;
  /** 1 .. 48; default 1. */
  numLayers?: number | undefined;
  /** Default 1. */
  numHeads?: number | undefined;
  /** K/V heads (must divide numHeads); 0 or absent: numHeads. */
  numKvHeads?: number | undefined;
  /** Per-head width; 0 or absent: dModel / numHeads (which must divide). */
  dK?: number | undefined;
  /** 0 or absent: attention-only layers; > 0: GPT blocks with an MLP of this width (needs layerNorm). */
  dFF?: number | undefined;
  /** Pre-norm LayerNorm per layer and before the unembedding; default false. */
  layerNorm?: boolean | undefined;
  /** Scores scaled by 1/sqrt(dK); false: unscaled (the scale experiment). Default true. */
  scaleBySqrtDk?: boolean | undefined;
  /** Every linear layer adds a bias (b_Q, b_K, b_V, b_O, b_1, b_2; GPT-2's). Default false. */
  bias?: boolean | undefined;
  /** Logits = f tokenEmbedding^T (GPT-2's tied lm_head); no unembedding tensor. Default false. */
  tiedUnembedding?: boolean | undefined;
  /**
   * createModel draws GPT-2's initial weights (N(0, 0.02^2), W_O and W_2 divided by
   * sqrt(2 numLayers)) instead of the default ones (docs/model.md, "Initialisation"). Default false.
   */
  gpt2Init?: boolean | undefined;
  /** Every LayerNorm's epsilon, finite and > 0, kept as a float32. Default 1e-5. */
  layerNormEpsilon?: number | undefined;
}

/** A config with every field resolved (numKvHeads and dK derived). */
export type ResolvedModelConfig = Resolved<ModelConfig>;

/** Every field of T given: read-only, none optional or undefined. */
export type Resolved<T> = { readonly [K in keyof T]-?: Exclude<T[K], undefined> };

/** The toy tasks (docs/model.md, "Tasks"). */
export type TaskKind = "copy" | "reverse" | "sort" | "induction" | "majority";

/** A task: its kind, sequence length n, vocabulary (the model's) and, for induction, filler tokens. */
export interface TaskConfig {
  kind: TaskKind;
  /** n, >= 1 (induction: >= 2). */
  length: number;
  /** The model's vocabulary; at least attn.taskMinVocab(task). */
  vocabSize: number;
  /** Induction only: filler tokens around the segment; default 0. */
  padding?: number | undefined;
}

/**
 * `batch` sequences of `seqLen` tokens, row b * seqLen + t; targets[i] is the
 * token position i must predict, or -1 (not scored).
 */
export interface ModelBatch {
  batch: number;
  seqLen: number;
  tokens: Int32Array | readonly number[];
  targets: Int32Array | readonly number[];
  /**
   * The tokens' vocabulary (a {@link TextDataset}'s batches carry it): a language
   * model of another vocabulary refuses the batch ("batch.vocabulary").
   */
  vocabulary?: readonly string[] | undefined;
}

/** A batch made by a task generator (JS-owned arrays). */
export interface TaskBatch extends ModelBatch {
  tokens: Int32Data;
  targets: Int32Data;
}

/** Results of a forward pass over the scored positions. */
export interface ModelMetrics {
  /** Mean cross-entropy. */
  loss: number;
  /** correct / scored (0 if nothing is scored). */
  accuracy: number;
  scored: number;
  correct: number;
  /** Sequences with at least one scored position, and of which every scored position is right. */
  sequences: number;
  sequencesCorrect: number;
}

/** Options of {@link Attnkit.createModel}. */
export interface CreateModelOptions {
  /** The initialisation's seed (a non-negative safe integer or a BigInt below 2^64); default 0. */
  seed?: number | bigint | undefined;
  /** A task the model must fit: vocabulary equal, sequence within maxSeqLen. */
  task?: TaskConfig | undefined;
  /**
   * A language model's vocabulary (a {@link Tokenizer}'s or {@link TextDataset}'s): its
   * length is vocabSize (which may then be left out); the weights file carries it.
   */
  vocabulary?: readonly string[] | undefined;
}

/** One layer's parameters (JS-owned copies); h = numHeads, g = numKvHeads. */
export interface LayerParameters {
  /** [dModel, h * dK] */
  W_Q: Matrix;
  /** [dModel, g * dK] */
  W_K: Matrix;
  /** [dModel, g * dK] */
  W_V: Matrix;
  /** [h * dK, dModel] */
  W_O: Matrix;
  /** [1, dModel], only with layerNorm. */
  lnGain?: Matrix;
  /** [1, dModel], only with layerNorm. */
  lnBias?: Matrix;
  /** [1, dModel], the MLP's LayerNorm; only with dFF > 0. */
  ln2Gain?: Matrix;
  /** [1, dModel], only with dFF > 0. */
  ln2Bias?: Matrix;
  /** [dModel, dFF], only with dFF > 0. */
  W_1?: Matrix;
  /** [dFF, dModel], only with dFF > 0. */
  W_2?: Matrix;
  /** [1, h * dK], only with bias (as b_K, b_V [1, g * dK] and b_O [1, dModel]). */
  b_Q?: Matrix;
  b_K?: Matrix;
  b_V?: Matrix;
  b_O?: Matrix;
  /** [1, dFF] and [1, dModel], only with bias and dFF > 0. */
  b_1?: Matrix;
  b_2?: Matrix;
}

/** Every parameter of a model (JS-owned copies), as {@link Model.parameters} returns them. */
export interface ModelParameters {
  /** [vocabSize, dModel] */
  tokenEmbedding: Matrix;
  /** [maxSeqLen, dModel] */
  positionEmbedding: Matrix;
  layers: LayerParameters[];
  /** [1, dModel], only with layerNorm. */
  finalGain?: Matrix;
  /** [1, dModel], only with layerNorm. */
  finalBias?: Matrix;
  /** [dModel, vocabSize]; absent with tiedUnembedding (tokenEmbedding serves). */
  unembedding: Matrix;
}

/**
 * One layer of {@link Model.inspect}; T = the sequence's length, h = numHeads,
 * g = numKvHeads. Scores S = scale Q K^T, scale = 1/sqrt(dK) with scaleBySqrtDk
 * (else 1); weights = causal softmax(S).
 */
export interface LayerInspection {
  /** [T, dModel]: what the layer's attention reads (the residual stream, LayerNorm-ed with layerNorm). */
  input: Matrix;
  /** [h, T, dK] = input W_Q, split by heads. */
  Q: Tensor;
  /** [g, T, dK] */
  K: Tensor;
  /** [g, T, dK] */
  V: Tensor;
  /** [h, T, T] attention weights (causal: 0 above the diagonal); query head i reads K/V head floor(i / (h / g)). */
  weights: Tensor;
  /**
   * [h, T, T] d loss / d S: the gradient of the mean loss with respect to the
   * scores before the softmax (the backward's dS; exactly 0 above the
   * diagonal). Only when targets were given.
   */
  dScores?: Tensor;
}

/** What {@link Model.inspect} returns (JS-owned copies). */
export interface Inspection {
  tokens: Int32Data;
  /** [T, vocabSize] */
  logits: Matrix;
  /** The argmax of each row of logits. */
  predictions: Int32Data;
  /** Mean cross-entropy over the scored positions (with targets). */
  loss?: number;
  /** Correct predictions / scored positions (with targets; 0 if none is scored). */
  accuracy?: number;
  /** One per layer, in order. */
  layers: LayerInspection[];
}

/** What {@link Model.inspect} returns with targets: the loss, the accuracy and each layer's dScores. */
export interface ScoredInspection extends Inspection {
  loss: number;
  accuracy: number;
  layers: (LayerInspection & { dScores: Tensor })[];
}

/**
 * A model in wasm memory. evaluate(), inspect() and a trainer's step() run a
 * forward pass; attentionWeights() then reads that pass. Call dispose() when done.
 */
export interface Model extends Record<DisposeSymbol, () => void> {
  readonly config: ResolvedModelConfig;
  /** Floats in all the weights. */
  readonly parameterCount: number;
  /**
   * Optimiser updates the weights have had, by every trainer (the weights file
   * carries the count; 0 for a new model and for a file of version 2 or 1).
   */
  readonly trainedSteps: number;
  /** A language model's vocabulary (token id -> character), or null. */
  readonly vocabulary: readonly string[] | null;
  /** A language model's tokenizer (of its vocabulary), or null. */
  readonly tokenizer: Tokenizer | null;
  /**
   * A language model's text after `prompt`: `options.length` characters, each
   * sampled through the KV cache with its logits and every layer's attention.
   * Errors name "prompt", "options.length" (above 65536), "options.temperature",
   * "options.topK", "model" (no vocabulary).
   */
  generate(prompt: string, options?: GenerateOptions): Generated;
  /**
   * The same, one character per next() (for showing them as they come).
   * Dispose it when done; the model must outlive it and not train meanwhile.
   */
  sampler(prompt: string, options?: SamplerOptions): Sampler;
  /** A forward pass without an update: its metrics. */
  evaluate(batch: ModelBatch): ModelMetrics;
  /**
   * The attention weights of layer `layer` (0-based) in the last forward pass,
   * [batch, numHeads, seqLen, seqLen] (causal: zero above the diagonal).
   */
  attentionWeights(layer: number): Tensor;
  /** Every parameter, as JS-owned copies (the weights file's tensors by name). */
  parameters(): ModelParameters;
  /**
   * One sequence through the model with every layer's attention laid open:
   * tokens [T] (1 <= T <= maxSeqLen, each < vocabSize); targets (T entries, -1 =
   * not scored) add the loss, the accuracy and each head's dScores, from the
   * model's backward and the core's backward trace. The weights do not change;
   * attentionWeights() then reads this pass (batch 1). Errors name "tokens" or
   * "targets".
   */
  inspect(
    tokens: Int32Array | readonly number[],
    targets: Int32Array | readonly number[],
  ): ScoredInspection;
  inspect(
    tokens: Int32Array | readonly number[],
    targets?: Int32Array | readonly number[],
  ): Inspection;
  /**
   * The model as an ONNX file (docs/onnx.md): input `input_ids` [batch,
   * sequence] int64, output `logits` [batch, sequence, vocabSize] float32; with
   * `options.cache` also `past_key_values.{i}.key/value` in and `present.{i}.key/value`
   * out. The weights are this model's, as parameters() reads them. Its code
   * loads on the first call (dist/onnx.mjs). Errors name "options.opset" (17 ..
   * 24), "options.cache", "model" (over 2 GiB of weights: one protobuf's limit).
   */
  exportOnnx(options?: OnnxExportOptions): Promise<Uint8Data>;
  /** The versioned weights file (docs/model.md). */
  exportWeights(): Uint8Data;
  /** Frees the wasm memory. Any later call throws. Safe to call twice. */
  dispose(): void;
}

/** What {@link Model.exportOnnx} writes. */
export interface OnnxExportOptions {
  /**
   * The ONNX opset, 17 to 24 (default 23): from 23 attention is one `Attention`
   * node, below it MatMul, Where and Softmax; from 20 GELU is one `Gelu` node,
   * below it the tanh formula.
   */
  opset?: number | undefined;
  /**
   * The KV cache as inputs `past_key_values.{i}.key`, `.value` [batch,
   * numKvHeads, past_sequence, dK] and outputs `present.{i}.key`, `.value`
   * [batch, numKvHeads, past_sequence + sequence, dK], for generating token by
   * token (the new tokens' positions follow the past's). Default false.
   */
  cache?: boolean | undefined;
}

/** AdamW with a linear warm-up and a cosine decay; defaults as the C++ AdamWConfig. */
export interface TrainerOptions {
  /** Default 1e-3. */
  learningRate?: number | undefined;
  /** Default 0.9. */
  beta1?: number | undefined;
  /** Default 0.98. */
  beta2?: number | undefined;
  /** Default 1e-8. */
  epsilon?: number | undefined;
  /** On the projection matrices and unembedding; default 0.01. */
  weightDecay?: number | undefined;
  /** Step t uses learningRate * min(1, t / warmupSteps); default 0 (none). */
  warmupSteps?: number | undefined;
  /** The gradient's global L2 norm is clipped to this (0 = off); default 1. */
  clipNorm?: number | undefined;
  /**
   * 0 (default): the rate stays learningRate after the warm-up; else it follows
   * a cosine from learningRate down to minLearningRate at this step (> warmupSteps), then stays.
   */
  decaySteps?: number | undefined;
  /** The cosine's floor, 0 .. learningRate; default 0. */
  minLearningRate?: number | undefined;
}

/** Trains a model: one call into wasm per step. Call dispose() when done (the model stays). */
export interface Trainer extends Record<DisposeSymbol, () => void> {
  readonly model: Model;
  readonly options: Resolved<TrainerOptions>;
  /** Updates done so far. */
  readonly steps: number;
  /** Forward, backward and one AdamW update; the metrics of the forward (before the update). */
  step(batch: ModelBatch): ModelMetrics;
  /** The learning rate of update `step` (1-based). */
  learningRate(step: number): number;
  dispose(): void;
}

/** A seeded stream of a task's sequences. Call dispose() when done. */
export interface TaskGenerator extends Record<DisposeSymbol, () => void> {
  readonly task: Resolved<TaskConfig>;
  /** The model's input length for the task. */
  readonly seqLen: number;
  /** The next `batch` sequences. */
  next(batch: number): TaskBatch;
  dispose(): void;
}

/**
 * A character tokenizer (docs/language.md): one token per Unicode code point;
 * token 0 is the unknown token "\uFFFD", then the text's distinct characters
 * in code point order. A plain object (nothing to dispose).
 */
export interface Tokenizer {
  /** Token id -> its character; vocabulary[0] is "\uFFFD". */
  readonly vocabulary: readonly string[];
  readonly vocabSize: number;
  /** 0; -1 for GPT-2's tokenizer, which has none (every byte is a token). */
  readonly unknownToken: number;
  /** One token per code point; characters outside the vocabulary give 0. Errors name "text". */
  encode(text: string): Int32Data;
  /** The text of token ids (each in 0 .. vocabSize - 1). Errors name "tokens". */
  decode(tokens: Int32Array | readonly number[]): string;
}

/** Options of {@link AttnkitWithModel.createTextDataset}. */
export interface TextDatasetOptions {
  /** The model's input length: windows are seqLen + 1 characters. */
  seqLen: number;
  /** The training windows' order; default 0. */
  seed?: number | bigint | undefined;
  /** Validation windows, evenly spread over the last tenth; default 128 (fewer if they do not fit). */
  validationWindows?: number | undefined;
  /** Encode with this vocabulary (e.g. a loaded model's) instead of the text's own. */
  vocabulary?: readonly string[] | undefined;
}

/**
 * A text as tokens: the first 9/10 for training (seeded random windows), the
 * last 1/10 for validation (fixed windows). Call dispose() when done.
 */
export interface TextDataset extends Record<DisposeSymbol, () => void> {
  readonly tokenizer: Tokenizer;
  readonly vocabulary: readonly string[];
  readonly vocabSize: number;
  readonly seqLen: number;
  readonly trainTokens: number;
  readonly validationTokens: number;
  readonly validationWindows: number;
  /**
   * Characters of the text outside options.vocabulary (each became token 0, read
   * back as "\uFFFD"); 0 without options.vocabulary.
   */
  readonly unknownCharacters: number;
  /** `batch` windows of the training part: inputs and next-character targets. */
  next(batch: number): TaskBatch;
  /** Validation windows first .. first + count - 1 as one batch. */
  validationBatch(first: number, count: number): TaskBatch;
  /**
   * The model's mean loss (nats per character) over every validation window, 8
   * windows per forward pass (no more memory than training batches of 8 or more;
   * attentionWeights() then reads the last of them).
   * Errors name "model" (another vocabulary, or maxSeqLen below seqLen).
   */
  validationLoss(model: Model): number;
  dispose(): void;
}

/** Sampling options of {@link Model.sampler}. */
export interface SamplerOptions {
  /** 0: argmax; > 0 divides the logits; default 1. */
  temperature?: number | undefined;
  /** 0 (default): every token; k: among the k likeliest. */
  topK?: number | undefined;
  /** The sampling's seed; default 0. */
  seed?: number | bigint | undefined;
}

/** Options of {@link Model.generate}. */
export interface GenerateOptions extends SamplerOptions {
  /**
   * Characters to generate, 1 .. 65536 (a longer text: {@link Model.sampler} and
   * next() in a loop); default 100.
   */
  length?: number | undefined;
  /**
   * Keep each character's logits and attention in `steps` (default true); false:
   * `steps` is empty, so that a long text keeps only its characters.
   */
  steps?: boolean | undefined;
}

/** One generated character (JS-owned copies); of a BPE model (GPT-2), one token. */
export interface GeneratedCharacter {
  token: number;
  /**
   * The token's text: its character, or (GPT-2) its piece as the tokenizer's
   * vocabulary shows it (" world"; a piece of a character as byte-level stand-ins).
   */
  character: string;
  /** [vocabSize]: the logits it was sampled from. */
  logits: Float32Data;
  /**
   * Per layer, [numHeads, context]: each head's attention over the context
   * (the prompt and the characters so far, newest last) at the position
   * that predicted this character.
   */
  weights: Tensor[];
}

/** What {@link Model.generate} returns. */
export interface Generated {
  /** The generated characters (without the prompt). */
  text: string;
  tokens: Int32Data;
  /** One per character; empty with options.steps false. */
  steps: GeneratedCharacter[];
}

/** Samples a model's text one character at a time. Call dispose() when done. */
export interface Sampler extends Record<DisposeSymbol, () => void> {
  readonly model: Model;
  readonly options: Readonly<{ temperature: number; topK: number }>;
  next(): GeneratedCharacter;
  dispose(): void;
}

/** Options of {@link AttnkitWithModel.headScores}. */
export interface HeadScoresOptions {
  /** Tokens in each half of the repeated sequence; default min(50, floor(maxSeqLen / 2)). */
  length?: number | undefined;
  /** The random tokens' seed (a non-negative safe integer or a BigInt below 2^64); default 0. */
  seed?: number | bigint | undefined;
  /** A sequence of the caller's own (a sentence's tokens) to score as well. */
  tokens?: Int32Array | readonly number[] | undefined;
}

/**
 * Three scores per head, each [numLayers][numHeads], a mean weight in 0 .. 1 over the
 * positions where it is defined (null where it is defined at none):
 * previousToken: on the token before (t - 1); duplicateToken: on earlier positions that
 * hold the same token; induction: on the token after each earlier copy of the token.
 */
export interface HeadScoreTable {
  previousToken: number[][] | null;
  duplicateToken: number[][] | null;
  induction: number[][] | null;
}

/** What {@link AttnkitWithModel.headScores} returns. */
export interface HeadScores extends HeadScoreTable {
  numLayers: number;
  numHeads: number;
  /** Tokens in each half of the repeated sequence. */
  length: number;
  seed: number | bigint;
  /** The repeated random sequence scored: [2 length]. */
  tokens: Int32Data;
  /** On the repeated sequence every score is defined. */
  previousToken: number[][];
  duplicateToken: number[][];
  induction: number[][];
  /** The scores of options.tokens (when given). */
  sentence?: HeadScoreTable & { tokens: Int32Data };
}

/**
 * Where a checkpoint comes from (docs/gpt2.md): a Node path (a folder with
 * model.safetensors and config.json, or a .safetensors file), an http(s) URL,
 * a Hugging Face Hub repository id ("openai-community/gpt2", or "gpt2" alone),
 * bytes, or a Blob / File (read in slices).
 */
export type CheckpointSource =
  string | { readonly href: string } | Uint8Array | ArrayBuffer | BlobLike;

/** A Blob or File (declared by its members: the DOM lib need not be loaded). */
export interface BlobLike {
  readonly size: number;
  slice(start?: number, end?: number): { arrayBuffer(): Promise<ArrayBuffer> };
}

/** Options of {@link AttnkitWithModel.checkpointInfo}. */
export interface CheckpointOptions {
  /** The Hub a repository id is read from; default "https://huggingface.co". */
  hubUrl?: string | undefined;
  /** A branch, tag or commit of the repository; default "main". */
  revision?: string | undefined;
  /** Cancels the call: it rejects with an AttnkitError (code "aborted") and nothing stays allocated. */
  signal?: AbortSignalLike | undefined;
  /** config.json's object, for a source that has none beside it (bytes, a Blob) or to override it. */
  config?: Record<string, unknown> | undefined;
  /** The heads, for a checkpoint without config.json (the shapes give every other size). */
  numHeads?: number | undefined;
}

/** Options of {@link AttnkitWithModel.openCheckpoint}. */
export interface OpenCheckpointOptions extends CheckpointOptions {
  /** Called as the bytes arrive: the file's bytes read so far, its size, the tensor being read. */
  onProgress?: ((progress: CheckpointProgress) => void) | undefined;
}

/** What {@link OpenCheckpointOptions.onProgress} is given. */
export interface CheckpointProgress {
  loadedBytes: number;
  totalBytes: number;
  /** The tensor being read, by its name in the file; null before the first. */
  tensor: string | null;
}

/** Where {@link CheckpointInfo} came from. */
export type CheckpointSourceInfo =
  | { kind: "hub"; repo: string; revision: string; url: string }
  | { kind: "url"; url: string }
  | { kind: "file"; path: string }
  | { kind: "bytes" }
  | { kind: "blob"; name: string | null };

/** What {@link AttnkitWithModel.checkpointInfo} reads (config.json and the safetensors header only). */
export interface CheckpointInfo {
  /** The model's config as openCheckpoint builds it. */
  config: ResolvedModelConfig;
  /** model.safetensors' size in bytes: what a download reads. */
  totalBytes: number;
  /** The tensors' dtype ("mixed" if they differ); each is widened to float32. */
  dtype: "F32" | "F16" | "BF16" | "mixed";
  /** Floats in the weights (a tied head counted once). */
  parameters: number;
  /**
   * Module memory the model takes, roughly: its float32 weights, the staging of
   * a tensor's part (at most 4 MB) while it loads, and a forward over a full context.
   */
  memoryBytes: number;
  source: CheckpointSourceInfo;
}

/**
 * The loaded module, as `createAttnkit()` returns it. The model layer's functions
 * (createModel ...) are on {@link AttnkitWithModel}, what `createAttnkit({ model: true })`
 * returns: they throw on any other module.
 */
export interface Attnkit {
  /** True if the WebAssembly SIMD128 build was loaded (false: the scalar fallback). */
  readonly simd: boolean;
  /**
   * The threads every call is split over (1 unless loaded with { threads }; at
   * most the hardware's thread count).
   */
  readonly threads: number;
  /**
   * True if loaded with `{ model: true }`: the build with the model layer
   * (then the module is an {@link AttnkitWithModel}).
   */
  readonly model: boolean;
  /** The package version. */
  readonly version: string;
  /** The Highway target the core runs on: "WASM" (the SIMD128 builds) or "EMU128" (the scalar ones). */
  readonly target: "WASM" | "EMU128";

  /** Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v] -> [T_q, d_v]. T_q may differ from T_k. */
  attention(Q: MatrixLike, K: MatrixLike, V: MatrixLike, options?: AttentionOptions): Matrix;
  /** X [T, d_model] projected to Q, K, V, then attention -> [T, d_v]. */
  selfAttention(X: MatrixLike, weights: HeadWeights, options?: AttentionOptions): Matrix;
  /** Queries from Xq [T_q, d_q], keys and values from Xkv [T_k, d_kv] -> [T_q, d_v]. */
  crossAttention(
    Xq: MatrixLike,
    Xkv: MatrixLike,
    weights: HeadWeights,
    options?: AttentionOptions,
  ): Matrix;
  /** Q = K = V = X, scale 1/sqrt(d_model) -> [T, d_model]. */
  parameterFreeAttention(X: MatrixLike, options?: AttentionOptions): Matrix;
  /** As selfAttention, returning every intermediate. */
  trace(X: MatrixLike, weights: HeadWeights, options?: AttentionOptions): SelfAttentionTrace;
  /** As attention, returning every intermediate. */
  traceQKV(Q: MatrixLike, K: MatrixLike, V: MatrixLike, options?: AttentionOptions): AttentionTrace;

  /**
   * The forward for training: as attention(), and also each row's log-sum-exp,
   * for attentionBackward's `options.saved`. Q [T_q, d_k], K [T_k, d_k],
   * V [T_k, d_v] -> { out [T_q, d_v], lse [T_q, 1] }.
   */
  attentionForTraining(
    Q: MatrixLike,
    K: MatrixLike,
    V: MatrixLike,
    options?: AttentionOptions,
  ): TrainingForward;
  /**
   * Gradients of attention(Q, K, V, options) (the fused FlashAttention-2
   * backward): dO [T_q, d_v] = dLoss/dOutput -> { dQ [T_q, d_k], dK [T_k, d_k],
   * dV [T_k, d_v] }. Every option of attention(); `options.saved` skips the
   * recomputed forward. A dO of the wrong shape throws naming "dO".
   */
  attentionBackward(
    Q: MatrixLike,
    K: MatrixLike,
    V: MatrixLike,
    dO: MatrixLike,
    options?: AttentionBackwardOptions,
  ): AttentionGradients;

  /** As selfAttentionBackward, returning every intermediate of the forward and the backward. */
  traceBackward(
    X: MatrixLike,
    weights: HeadWeights,
    dO: MatrixLike,
    options?: AttentionOptions,
  ): SelfAttentionBackwardTrace;
  /** As attentionBackward, returning every intermediate of the forward and the backward. */
  traceBackwardQKV(
    Q: MatrixLike,
    K: MatrixLike,
    V: MatrixLike,
    dO: MatrixLike,
    options?: AttentionOptions,
  ): AttentionBackwardTrace;

  /** A [M, K] B [K, N] -> [M, N]. */
  matmul(A: MatrixLike, B: MatrixLike): Matrix;
  /** Row softmax; -Infinity = masked (weight 0); an all -Infinity row gives zeros. */
  softmax(x: MatrixLike): Matrix;
  /** [T, h*d] -> [h, T, d]. */
  splitHeads(x: MatrixLike, numHeads: number): Tensor;
  /** [h, T, d] -> [T, h*d]. */
  mergeHeads(heads: TensorLike): Matrix;

  /**
   * Multi-head self-attention: X [batch, T, d_model] (or [T, d_model]) -> project ->
   * split -> attend per head (grouped K/V heads) -> merge -> W_O -> [batch, T, d_out].
   * `weights` may be packed (packWeights) for `config`: the same result bit for bit.
   */
  multiHeadAttention(
    X: TensorLike,
    weights: MultiHeadWeights | PackedWeights,
    config: HeadConfig,
    options?: AttentionOptions,
  ): Tensor;
  /**
   * Checks and packs constant weights once for many multiHeadAttention calls with
   * this config (see {@link PackedWeights}); dispose() the pack when done.
   */
  packWeights(weights: MultiHeadWeights, config: HeadConfig): PackedWeights;
  /**
   * Multi-head attention on projected Q, K, V in layout "bshd" (default) or "bhsd";
   * the output has the same layout, with head_dim = dV. With `present: true` the
   * result has presentKey and presentValue, with a `scores` stage its scores.
   */
  multiHeadAttentionQKV(
    Q: TensorLike,
    K: TensorLike,
    V: TensorLike,
    config: HeadConfig,
    options: MultiHeadOptions & { present: true; scores: ScoreStage },
  ): MultiHeadQKVResult & PresentKeyValue & { scores: Tensor };
  multiHeadAttentionQKV(
    Q: TensorLike,
    K: TensorLike,
    V: TensorLike,
    config: HeadConfig,
    options: MultiHeadOptions & { present: true },
  ): MultiHeadQKVResult & PresentKeyValue;
  multiHeadAttentionQKV(
    Q: TensorLike,
    K: TensorLike,
    V: TensorLike,
    config: HeadConfig,
    options: MultiHeadOptions & { scores: ScoreStage },
  ): MultiHeadQKVResult & { scores: Tensor };
  multiHeadAttentionQKV(
    Q: TensorLike,
    K: TensorLike,
    V: TensorLike,
    config: HeadConfig,
    options?: MultiHeadOptions,
  ): MultiHeadQKVResult;

  /**
   * Gradients of selfAttention: X [T, d_model], dO [T, d_v] -> { dX [T, d_model],
   * dW_Q, dW_K [d_model, d_k], dW_V [d_model, d_v] }. Every option of selfAttention.
   */
  selfAttentionBackward(
    X: MatrixLike,
    weights: HeadWeights,
    dO: MatrixLike,
    options?: SelfAttentionBackwardOptions,
  ): SelfAttentionGradients;
  /**
   * The forward for training of multiHeadAttentionQKV: its output and each row's
   * log-sum-exp per head, for multiHeadAttentionQKVBackward's `options.saved`.
   */
  multiHeadAttentionQKVForTraining(
    Q: TensorLike,
    K: TensorLike,
    V: TensorLike,
    config: HeadConfig,
    options?: MultiHeadTrainingOptions,
  ): MultiHeadTrainingForward;
  /**
   * Gradients of multiHeadAttentionQKV: dO shaped as its output -> { dQ, dK, dV }
   * shaped as Q, K, V in `options.layout` ("bshd" default, or "bhsd"); dK and dV sum
   * over the query heads of each K/V head. `options.saved` skips the recomputed forward.
   */
  multiHeadAttentionQKVBackward(
    Q: TensorLike,
    K: TensorLike,
    V: TensorLike,
    config: HeadConfig,
    dO: TensorLike,
    options?: MultiHeadQKVBackwardOptions,
  ): MultiHeadQKVGradients;
  /**
   * Gradients of multiHeadAttention: dO [batch, T, d_out] (shaped as its output) ->
   * { dX (shaped as X), dW_Q, dW_K, dW_V, dW_O (only with W_O) }. Recomputes the forward.
   */
  multiHeadAttentionBackward(
    X: TensorLike,
    weights: MultiHeadWeights & { W_O: MatrixLike },
    config: HeadConfig,
    dO: TensorLike,
    options?: MultiHeadBackwardOptions,
  ): MultiHeadGradientsWithOutput;
  multiHeadAttentionBackward(
    X: TensorLike,
    weights: MultiHeadWeights,
    config: HeadConfig,
    dO: TensorLike,
    options?: MultiHeadBackwardOptions,
  ): MultiHeadGradients;

  /** A KV cache for decoding (see {@link KVCache}). */
  createKVCache(config: KVCacheConfig): KVCache;
  /** Bytes of wasm linear memory (for leak checks). */
  memoryBytes(): number;
  /** Bytes currently allocated on the wasm heap (for leak checks). */
  heapBytesInUse(): number;

  /**
   * Frees the module's wasm memory and threads; afterwards every call throws an
   * AttnkitError with code "disposed"; a later createAttnkit() loads a new
   * instance.
   */
  dispose(): void;
}

/**
 * A module loaded with `createAttnkit({ model: true })`: the build that also holds
 * the model layer (docs/model.md). On a module loaded without it these functions
 * exist but throw an AttnkitError (code "invalid_argument", parameter the
 * function's name) that says so.
 */
export interface AttnkitWithModel extends Attnkit {
  readonly model: true;
  /** A language model: vocabSize may be left out (the vocabulary's length). */
  createModel(
    config: Omit<ModelConfig, "vocabSize"> & { vocabSize?: number },
    options: CreateModelOptions & { vocabulary: readonly string[] },
  ): Model;
  /** A new model, its weights drawn from options.seed (docs/model.md, "Initialisation"). */
  createModel(config: ModelConfig, options?: CreateModelOptions): Model;
  /** A model from a weights file; errors name `weights`. */
  loadModel(weights: Uint8Array): Model;
  /** An AdamW trainer of `model`. */
  createTrainer(model: Model, options?: TrainerOptions): Trainer;
  /** A generator of the task's sequences from a seed (default 0). */
  createTaskGenerator(
    task: TaskConfig,
    options?: { seed?: number | bigint | undefined },
  ): TaskGenerator;
  /** `batch` sequences of the task from a fresh generator seeded with `seed`. */
  makeBatch(
    task: TaskConfig,
    options: { batch: number; seed?: number | bigint | undefined },
  ): TaskBatch;
  /** The model's input length for the task (copy, reverse, sort 2n; induction 2n + padding; majority n + 1). */
  taskSeqLen(task: TaskConfig): number;
  /** The smallest vocabulary the task needs (separator included). */
  taskMinVocab(task: TaskConfig): number;
  /**
   * The character tokenizer of a text (1 byte .. 8 MiB of UTF-8, at most 512
   * distinct characters). Errors name "text".
   */
  createTokenizer(text: string): Tokenizer;
  /**
   * A text's dataset for a language model: at least 10 (seqLen + 1) characters
   * (the last tenth holds a validation window), at most 8 MiB of UTF-8 and 512
   * distinct characters. Errors name "text" and the options.
   */
  createTextDataset(text: string, options: TextDatasetOptions): TextDataset;
  /**
   * The losses of a text's letter-frequency models (nats per character), the reference
   * lines of a validation loss: each character predicted by its frequency (unigram) or
   * by the frequency of what follows the character before it (bigram), counted with
   * add-one smoothing on the dataset's training part and scored on its validation
   * windows (the positions of {@link TextDataset.validationLoss}). `text` is the
   * dataset's own text. Errors name "dataset" and "text".
   */
  referenceLosses(dataset: TextDataset, text: string): { unigram: number; bigram: number };
  /**
   * What each head measurably does (docs/heads.md): per layer and head a previous-token,
   * a duplicate-token and an induction score (Olsson et al. 2022), from `model.inspect` of
   * `options.length` random tokens (distinct when the vocabulary allows) repeated twice;
   * with `options.tokens`, the same scores of those tokens too (`sentence`). Errors name
   * "model", "options.length" (2 .. maxSeqLen / 2), "options.seed" and "tokens".
   */
  headScores(model: Model, options?: HeadScoresOptions): HeadScores;
  /**
   * A Hugging Face GPT-2 checkpoint (GPT2LMHeadModel: gpt2, distilgpt2, gpt2-medium ...;
   * model.safetensors in F32, F16 or BF16, with config.json) as a Model with GPT-2's
   * tokenizer (docs/gpt2.md). Reads tensor by tensor into module memory. Errors
   * (AttnkitError): "source" (a file that is not a safetensors file, a header that
   * lies, a dtype other than F32/F16/BF16, a tensor the model lacks or misses, a
   * download that fails: code "load_failed"; memory the module cannot grow to: code
   * "capacity"), "config.json ..." (not a GPT-2), "options.numHeads", "options.signal"
   * (code "aborted").
   */
  openCheckpoint(source: CheckpointSource, options?: OpenCheckpointOptions): Promise<Model>;
  /** What a checkpoint is and takes, from config.json and its header alone (no tensor is read). */
  checkpointInfo(source: CheckpointSource, options?: CheckpointOptions): Promise<CheckpointInfo>;
}

/**
 * Error codes, as in the C++ core. "invalid_argument" is also used for unknown
 * keys in any object the API takes (weights, config, options, load options,
 * cache config); "disposed" for any use of a disposed cache or module;
 * "load_failed" for a createAttnkit() that could not load its build.
 */
export type ErrorCode =
  | "invalid_argument"
  | "shape_mismatch"
  | "non_finite"
  | "overflow"
  | "capacity"
  | "type"
  | "disposed"
  | "load_failed"
  | "aborted";

/**
 * Every error attnkit throws. Its message names the parameter, what was expected
 * and what was given. Bad values (shapes, sizes, non-finite numbers, capacity, use
 * after dispose) throw AttnkitError, a RangeError; wrong types throw
 * AttnkitTypeError, a TypeError. `e instanceof AttnkitError` is true for both.
 */
export declare class AttnkitError extends RangeError {
  readonly code: ErrorCode;
  /** The parameter at fault, e.g. "W_Q" or "options.scale". */
  readonly parameter: string;
}
/** Wrong types: a string where a matrix was expected, a missing argument. */
export declare class AttnkitTypeError extends TypeError {
  readonly code: ErrorCode;
  readonly parameter: string;
}

/** Loader options. */
export interface LoadOptions {
  /** Force the SIMD (true) or scalar (false) build; default: feature detection. */
  simd?: boolean | undefined;
  /**
   * Split every call over this many threads (default 1): loads the SIMD128 +
   * pthreads build with threads - 1 workers. Needs SharedArrayBuffer: Node, or a
   * page served with Cross-Origin-Opener-Policy: same-origin and
   * Cross-Origin-Embedder-Policy: require-corp; otherwise the load rejects with
   * an AttnkitError. Results equal the single-threaded ones bit for bit. Capped at
   * the hardware's thread count (`attn.threads` tells the count used).
   */
  threads?: number | undefined;
  /**
   * Load the build that also holds the model layer (createModel, createTrainer,
   * ...; docs/model.md): attnkit-simd-model or attnkit-scalar-model, chosen as
   * `simd` says, or attnkit-threads-model with `threads` > 1. Default false: the
   * smaller builds without the model.
   */
  model?: boolean | undefined;
  /**
   * Where the .wasm and worker files load from: a base URL ending in "/", or a
   * map from file name such as "attnkit-simd.wasm" or "attnkit-threads.worker.js"
   * to its URL; browsers and bundlers: the Node build embeds its wasm.
   */
  wasmPaths?: string | Record<string, string> | undefined;
  /** The .wasm bytes of the build to load. */
  wasmBinary?: ArrayBuffer | Uint8Array | undefined;
  /**
   * ms before a load that has not finished rejects, default 30000 (e.g. a worker
   * script that cannot load).
   */
  timeout?: number | undefined;
}

/** True if this engine supports WebAssembly SIMD128 (what createAttnkit checks by default). */
export function simdSupported(): boolean;

/** The package version. */
export const version: string;

/**
 * Loads the module (once per options; later calls return the same promise, until
 * the module is disposed: then a new instance is loaded). With `model: true`
 * (written as the literal `true`) the module has the model layer's functions.
 */
export function createAttnkit(options: LoadOptions & { model: true }): Promise<AttnkitWithModel>;
export function createAttnkit(options?: LoadOptions): Promise<Attnkit>;
export default createAttnkit;

// ---------------------------------------------------------------------------
// Interop: the tensors of onnxruntime and tfjs.

/**
 * An onnxruntime-web / -node Tensor (onnxruntime-common's class), float32, its data
 * on the CPU: taken wherever a matrix or tensor is, read through `data` without a
 * copy (the one copy is into wasm memory). Results go back as
 * `new ort.Tensor("float32", r.data, r.shape)`.
 */
export interface OrtTensorLike {
  readonly type: string;
  readonly dims: readonly number[];
  readonly data: unknown;
  readonly location?: string;
}

/**
 * A tfjs Tensor of dtype float32: read with `dataSync()` by the synchronous API (on
 * the cpu backend the tensor's own array, no copy; GPU backends download it) and with
 * `await tensor.data()` by the worker API. Results go back as `tf.tensor(r.data, r.shape)`.
 */
export interface TfTensorLike {
  readonly shape: number[];
  readonly dtype: string;
  readonly isDisposed: boolean;
  dataSync(): unknown;
  data(): Promise<unknown>;
}

/** A tensor of another library, taken as a {@link TensorLike} (masks also take dtype "bool"). */
export type ExternalTensor = OrtTensorLike | TfTensorLike;

// ---------------------------------------------------------------------------
// attnkit/worker: the API in a worker.

/** What the worker API returns for a value of the synchronous API: held objects as proxies. */
export type Remote<R> = R extends KVCache
  ? AsyncKVCache
  : R extends Trainer
    ? AsyncTrainer
    : R extends Model
      ? AsyncModel
      : R extends TextDataset
        ? AsyncTextDataset
        : R extends TaskGenerator
          ? AsyncTaskGenerator
          : R extends Sampler
            ? AsyncSampler
            : R extends Tokenizer
              ? AsyncTokenizer
              : R extends PackedWeights
                ? AsyncPackedWeights
                : R;

/** An AbortSignal (declared by its members: the DOM lib need not be loaded). */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/** Options of one call: `worker.with({ signal, transfer }).attention(Q, K, V)`. */
export interface CallOptions {
  /**
   * Cancels the call while it waits in the queue: it then rejects with an
   * AttnkitError named "AbortError" (code "aborted", parameter "options.signal",
   * `cause` the signal's reason) and the worker serves the next call. A call that
   * has started runs to its end (its result arrives): terminate() stops it.
   */
  signal?: AbortSignalLike | undefined;
  /** As the worker's `transfer` option, for this call. */
  transfer?: boolean | undefined;
}

/** One signature of a call through the worker: proxies taken for held objects, a Promise of the result. */
export type AsyncSignature<A extends unknown[], R> = (
  ...args: { [I in keyof A]: A[I] | Remote<A[I]> }
) => Promise<Remote<Awaited<R>>>;

/**
 * A call through the worker: every overload of `F` (up to four) as an overload
 * returning a Promise of its own result.
 */
export type AsyncCall<F> = F extends {
  (...args: infer A1): infer R1;
  (...args: infer A2): infer R2;
  (...args: infer A3): infer R3;
  (...args: infer A4): infer R4;
}
  ? AsyncSignature<A1, R1> &
      AsyncSignature<A2, R2> &
      AsyncSignature<A3, R3> &
      AsyncSignature<A4, R4>
  : never;

/**
 * `T`'s calls, each returning a Promise of its result (held objects as proxies),
 * its properties as they were after the object's last call, and with().
 */
export type Async<T> = {
  readonly [K in Exclude<keyof T, DisposeSymbol>]: T[K] extends (...args: never) => unknown
    ? AsyncCall<T[K]>
    : Remote<T[K]>;
} & {
  /** The same calls, each with these call options. */
  with(options: CallOptions): Async<T>;
};

/** Packed weights held in the worker (packWeights there): pass the proxy as the weights. */
export type AsyncPackedWeights = Async<PackedWeights>;
/** A KV cache held in the worker: `size` is as of its last call. */
export type AsyncKVCache = Async<KVCache>;
/** A model held in the worker. */
export type AsyncModel = Async<Model>;
/** A trainer held in the worker: `steps` is as of its last call; `model` the model's proxy. */
export type AsyncTrainer = Async<Trainer>;
/** A task generator held in the worker. */
export type AsyncTaskGenerator = Async<TaskGenerator>;
/** A text dataset held in the worker; `tokenizer` is the tokenizer's proxy. */
export type AsyncTextDataset = Async<TextDataset>;
/** A tokenizer held in the worker: encode and decode return Promises; its vocabulary is a copy. */
export type AsyncTokenizer = Async<Tokenizer>;
/** A sampler held in the worker: next() returns a Promise of the next character. */
export type AsyncSampler = Async<Sampler>;

/** The worker API's own members. */
interface WorkerControl {
  /**
   * Disposes the module in the worker and ends the worker; later calls reject with
   * code "disposed". Safe to call twice.
   */
  dispose(): Promise<void>;
  /**
   * Ends the worker now: the running call and the queued ones reject with an
   * AbortError-like AttnkitError (code "aborted", parameter "terminate"), held
   * objects are gone; createAttnkitWorker() again gives a new worker.
   */
  terminate(): void;
}

/** The module in a worker: every call of {@link Attnkit}, returning a Promise. */
export type AsyncAttnkit = Omit<Async<Attnkit>, "dispose" | "with"> &
  WorkerControl & { with(options: CallOptions): Omit<AsyncAttnkit, "with" | "terminate"> };
/** The model build in a worker: {@link AttnkitWithModel}'s calls too. */
export type AsyncAttnkitWithModel = Omit<Async<AttnkitWithModel>, "dispose" | "with"> &
  WorkerControl & { with(options: CallOptions): Omit<AsyncAttnkitWithModel, "with" | "terminate"> };

/** Options of createAttnkitWorker: the load options, and the worker's. */
export interface WorkerOptions extends LoadOptions {
  /**
   * Move the inputs' ArrayBuffers to the worker instead of copying them (default
   * false: copied, the caller's arrays untouched). Moved buffers are detached
   * (length 0) for the caller; an `options.out` array comes back as the result's
   * `data` over the same memory. Results always move back (no copy). tfjs tensors'
   * data is never moved (tfjs keeps it).
   */
  transfer?: boolean | undefined;
  /**
   * The worker script (a path or URL string, or a URL): default worker-host.mjs (browsers, a module worker) or
   * worker-host.node.cjs (Node) beside the attnkit/worker module, which bundlers
   * that follow `new Worker(new URL(..., import.meta.url))` find.
   */
  workerUrl?: string | { readonly href: string } | undefined;
}
