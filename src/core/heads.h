// attnkit internals shared by multi-head attention and the KV cache: head
// configuration checks and the per-(item, head) task list (heads.cc).
#ifndef ATTNKIT_HEADS_H_
#define ATTNKIT_HEADS_H_

#include <cstddef>
#include <functional>
#include <vector>

#include "src/core/internal.h"
#include "src/core/matrix.h"
#include "src/core/status.h"

namespace attnkit {

struct AttentionOptions;  // attention.h
struct HeadConfig;        // multihead.h
struct MultiHeadWeights;  // multihead.h
namespace internal {

struct Heads {
  size_t num_heads = 0;
  size_t num_kv_heads = 0;
  size_t d_k = 0;
  size_t d_v = 0;
  // Query head h reads K/V head h / group.
  size_t group() const { return num_heads / num_kv_heads; }
};

// Checks num_heads > 0 and num_kv_heads | num_heads; fills in derived d_k
// (q_cols / num_heads, where q_cols is d_model or the columns of Q) and d_v
// (= d_k, unless v_cols is given: v_cols / num_kv_heads). `q_cols_name` names
// what q_cols is for messages ("d_model" or "Q").
Status ResolveHeads(const HeadConfig& config, size_t q_cols, const char* q_cols_name, size_t v_cols,
                    Heads* heads);

// rows / batch, checking batch > 0 and that it divides rows.
Status SequenceLength(const char* name, size_t rows, size_t batch, size_t* seq_len);

// Checks options.key_lengths has 0 or `batch` entries.
Status CheckKeyLengthCount(const AttentionOptions& options, size_t batch);

// The shapes of a multi-head call on concatenated heads.
struct MultiHeadShape {
  Heads heads;
  size_t batch = 1, T_q = 0, T_k = 0;
};

// Q [batch * T_q, h * d_k], K [batch * T_k, kvh * d_k], V [batch * T_k,
// kvh * d_v] of MultiHeadAttentionQKV and its backward: the views, the heads
// (config, the columns of Q and V), T_q and T_k, and the shapes. Values
// (finite) are the caller's to check, after its other shapes.
Status CheckMultiHeadQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                         const HeadConfig& config, MultiHeadShape* m);

// W_Q [d_model, h*d_k], W_K [d_model, kvh*d_k], W_V [d_model, kvh*d_v], and
// W_O [h*d_v, d_out] if given: shapes and values. Sets d_out (h*d_v without W_O).
Status CheckMultiHeadWeights(const MultiHeadWeights& weights, size_t d_model, const Heads& heads,
                             size_t* d_out);

// The projections of multi-head attention: Q, K and V of X [rows, d_model],
// and the merged heads when W_O is applied.
struct Projected {
  Matrix Q, K, V, merged;
  MatrixView heads_out;  // where the heads write: merged, or `out` without W_O
};

// Allocates *p, adds Q = X W_Q, K = X W_K, V = X W_V to job->projections and,
// with W_O, the output projection merged W_O -> out.
Status AddMultiHeadProjections(ConstMatrixView X, const MultiHeadWeights& weights,
                               const Heads& heads, MatrixView out, Projected* p, AttentionJob* job);

// Appends one task per (item, query head): queries from Q [batch*T_q, h*d_k],
// outputs into out [batch*T_q, h*d_v]; keys and values of (item, kv head)
// from kv(item, kv_head, &K, &V).
void AddHeadTasks(ConstMatrixView Q, MatrixView out, size_t batch, size_t T_q, size_t T_k,
                  const Heads& heads, const AttentionOptions& options,
                  const std::function<void(size_t, size_t, ConstMatrixView*, ConstMatrixView*)>& kv,
                  std::vector<HeadTask>* tasks);

}  // namespace internal
}  // namespace attnkit

#endif  // ATTNKIT_HEADS_H_
