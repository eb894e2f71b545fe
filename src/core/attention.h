// attnkit: single-head scaled dot-product attention,
//   O = softmax(mask(softcap(Q K^T * scale))) V.
#ifndef ATTNKIT_ATTENTION_H_
#define ATTNKIT_ATTENTION_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "src/core/matrix.h"
#include "src/core/status.h"

namespace attnkit {

class ThreadPool;  // thread_pool.h

// All masks combine: a key is attended only if every mask allows it, and the
// additive mask is added to the scores of allowed keys.
struct AttentionOptions {
  // Multiplies Q K^T. Default 1/sqrt(d_k) (1/sqrt(d_model) when parameter-free).
  // A caller-given scale is a temperature: 1/(T sqrt(d_k)). Must be finite, > 0.
  std::optional<float> scale;
  // 0 = off. Otherwise s -> softcap * tanh(s / softcap) after scaling and
  // before masking (as in Gemma 2). Must be finite and > 0 when set.
  float softcap = 0.0f;
  // Query i attends to key j only if j <= i + (T_k - T_q). With T_q == T_k this
  // is the usual lower triangle; with a query block appended after a cached
  // prefix it lets each new query see the whole prefix.
  bool causal = false;
  // Key padding for one sequence: only keys [0, key_length) are attended.
  // Default: all keys. Must be <= T_k.
  std::optional<size_t> key_length;
  // Key padding for a batch: one length per batch item (overrides key_length).
  // Only for the batched (multi-head) operations.
  std::vector<size_t> key_lengths;
  // Boolean mask [T_q, T_k], nonzero = may attend. Empty view = none.
  // Shared by every batch item and head.
  MaskView bool_mask;
  // Additive mask [T_q, T_k] added to the scaled scores. May hold -inf (= masked)
  // but not NaN or +inf. Empty view = none. Shared by every batch item and head.
  ConstMatrixView additive_mask;
  // Threads to split the work over (see thread_pool.h); null = the caller's
  // thread only. Results are the same either way. Not owned.
  ThreadPool* pool = nullptr;
};

// Options for attention against a KV cache: causal by default.
struct DecodeOptions : AttentionOptions {
  DecodeOptions() { causal = true; }
};

// A row whose keys are all masked out (fully masked) gets all-zero weights and
// an all-zero output row, never NaN.

// Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v] -> out [T_q, d_v].
// T_q may differ from T_k (cross-attention). out must not alias the inputs.
Status Attention(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                 const AttentionOptions& options, MatrixView out);

// Q = X W_Q, K = X W_K, V = X W_V, then Attention.
// X [T, d_model], W_Q and W_K [d_model, d_k], W_V [d_model, d_v] -> out [T, d_v].
Status SelfAttention(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                     ConstMatrixView W_V, const AttentionOptions& options,
                     MatrixView out);

// Cross-attention: queries from X_q [T_q, d_q], keys and values from
// X_kv [T_k, d_kv]. W_Q [d_q, d_k], W_K [d_kv, d_k], W_V [d_kv, d_v] -> out [T_q, d_v].
Status CrossAttention(ConstMatrixView X_q, ConstMatrixView X_kv, ConstMatrixView W_Q,
                      ConstMatrixView W_K, ConstMatrixView W_V,
                      const AttentionOptions& options, MatrixView out);

// The parameter-free model: Q = K = V = X, default scale 1/sqrt(d_model).
// X [T, d_model] -> out [T, d_model].
Status ParameterFreeAttention(ConstMatrixView X, const AttentionOptions& options,
                              MatrixView out);

// Every intermediate of single-head attention, each with its shape.
struct AttentionTrace {
  Matrix X;              // [T, d_model]; empty for TraceAttentionQKV
  Matrix Q;              // [T_q, d_k]
  Matrix K;              // [T_k, d_k]
  Matrix V;              // [T_k, d_v]
  Matrix raw_scores;     // [T_q, T_k]  Q K^T
  Matrix scaled_scores;  // [T_q, T_k]  raw * scale, then softcap if enabled
  Matrix masked_scores;  // [T_q, T_k]  scaled + additive mask; -inf where masked
  Matrix weights;        // [T_q, T_k]  row softmax; each row sums to 1 or is all 0
  Matrix output;         // [T_q, d_v]  weights V
  float scale = 0.0f;    // the scale that was applied
};

// As SelfAttention, keeping every intermediate.
Status TraceAttention(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                      ConstMatrixView W_V, const AttentionOptions& options,
                      AttentionTrace* trace);

// As Attention, keeping every intermediate (trace->X stays empty).
Status TraceAttentionQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                         const AttentionOptions& options, AttentionTrace* trace);

}  // namespace attnkit

#endif  // ATTNKIT_ATTENTION_H_
