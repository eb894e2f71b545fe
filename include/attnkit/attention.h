// attnkit: single-head scaled dot-product attention,
//   O = softmax(mask(softcap(Q K^T * scale))) V.
#ifndef ATTNKIT_ATTENTION_H_
#define ATTNKIT_ATTENTION_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "attnkit/matrix.h"
#include "attnkit/status.h"

namespace attnkit {

class ThreadPool;  // thread_pool.h

// The leading extents of a mask tensor [batch, heads, queries, keys] (ONNX's
// attn_mask broadcast to [B, num_heads, T_q, T_k]), stored as a stacked matrix
// [batch * heads * queries, keys]: block (b, h) starts at row
// (b * heads + h) * queries. `queries` is not stored: it is the view's rows /
// (batch * heads), and must be T_q or 1 (one row shared by every query).
// `keys` (the view's columns) may be shorter than T_k: later keys are masked
// out, as ONNX pads a short mask with false / -inf.
// {1, 1} (the default) is one [T_q, T_k] mask shared by every item and head;
// ONNX's rank-3 [H, T_q, T_k] is {1, H}; [B, 1, T_q, T_k] is {B, 1}.
struct MaskLayout {
  size_t batch = 1;  // 1 (shared by every batch item) or the call's batch
  size_t heads = 1;  // 1 (shared by every head) or the call's num_heads
};

// Where the causal diagonal lies (see AttentionOptions::causal).
enum class CausalAlignment {
  kLowerRight,  // key j <= i + (T_k - T_q): the last query sees every key
  kUpperLeft,   // key j <= i + offset (ONNX Attention: offset = past length)
};

// All masks combine: a key is attended only if every mask allows it, and the
// additive mask is added to the scores of allowed keys.
struct AttentionOptions {
  // Multiplies Q K^T. Default 1/sqrt(d_k) (1/sqrt(d_model) when parameter-free).
  // A caller-given scale is a temperature: 1/(T sqrt(d_k)). Must be finite, > 0.
  std::optional<float> scale;
  // 0 = off. Otherwise s -> softcap * tanh(s / softcap) after scaling and
  // before masking (as in Gemma 2). Must be finite and > 0 when set.
  float softcap = 0.0f;
  // With kLowerRight alignment (the default), query i attends to key j only
  // if j <= i + (T_k - T_q). With T_q == T_k this is the usual lower
  // triangle; with a query block appended after a cached prefix it lets each
  // new query see the whole prefix. With kUpperLeft, j <= i + offset, where
  // offset is causal_offsets[item] if given, else causal_offset (ONNX: 0, the
  // past length with past K/V, or nonpad_kv_seqlen[b] - T_q per item). A row
  // with i + offset < 0 sees no key (all-zero output).
  bool causal = false;
  CausalAlignment causal_alignment = CausalAlignment::kLowerRight;
  // The offset of kUpperLeft alignment; any value there, 0 with kLowerRight.
  int64_t causal_offset = 0;
  // kUpperLeft only: one offset per batch item (overrides causal_offset).
  // Only for the batched (multi-head) operations.
  std::vector<int64_t> causal_offsets;
  // Key padding for one sequence: only keys [0, key_length) are attended.
  // Default: all keys. Must be <= T_k.
  std::optional<size_t> key_length;
  // Key padding for a batch: one length per batch item (overrides key_length).
  // Only for the batched (multi-head) operations.
  std::vector<size_t> key_lengths;
  // Boolean mask, nonzero = may attend. Empty view = none. [T_q, T_k] shared
  // by every batch item and head by default; with bool_mask_layout,
  // [batch * heads * (T_q or 1), keys <= T_k] (see MaskLayout).
  MaskView bool_mask;
  MaskLayout bool_mask_layout;
  // Additive mask added to the scaled scores, laid out as bool_mask (see
  // MaskLayout). May hold -inf (= masked) but not NaN or +inf. Empty view =
  // none.
  ConstMatrixView additive_mask;
  MaskLayout additive_mask_layout;
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
                     ConstMatrixView W_V, const AttentionOptions& options, MatrixView out);

// Cross-attention: queries from X_q [T_q, d_q], keys and values from
// X_kv [T_k, d_kv]. W_Q [d_q, d_k], W_K [d_kv, d_k], W_V [d_kv, d_v] -> out [T_q, d_v].
Status CrossAttention(ConstMatrixView X_q, ConstMatrixView X_kv, ConstMatrixView W_Q,
                      ConstMatrixView W_K, ConstMatrixView W_V, const AttentionOptions& options,
                      MatrixView out);

// The parameter-free model: Q = K = V = X, default scale 1/sqrt(d_model).
// X [T, d_model] -> out [T, d_model].
Status ParameterFreeAttention(ConstMatrixView X, const AttentionOptions& options, MatrixView out);

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
                      ConstMatrixView W_V, const AttentionOptions& options, AttentionTrace* trace);

// As Attention, keeping every intermediate (trace->X stays empty).
Status TraceAttentionQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                         const AttentionOptions& options, AttentionTrace* trace);

}  // namespace attnkit

#endif  // ATTNKIT_ATTENTION_H_
