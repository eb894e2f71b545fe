// attnkit: a key/value cache for token-by-token decoding.
#ifndef ATTNKIT_KV_CACHE_H_
#define ATTNKIT_KV_CACHE_H_

#include <cstddef>

#include "attnkit/attention.h"
#include "attnkit/matrix.h"
#include "attnkit/multihead.h"
#include "attnkit/status.h"

namespace attnkit {

// Layout: keys   [batch, num_kv_heads, capacity, d_k]
//         values [batch, num_kv_heads, capacity, d_v]
// contiguous; rows [0, size()) of each (item, head) block are filled. Every
// batch item holds the same number of tokens. The capacity is fixed at
// creation: appending past it is an error (ErrorCode::kCapacity) and leaves
// the cache unchanged.
class KVCache {
 public:
  KVCache() = default;  // empty; use Create

  static Status Create(size_t batch, size_t num_kv_heads, size_t d_k, size_t d_v, size_t capacity,
                       KVCache* cache);

  size_t batch() const { return batch_; }
  size_t num_kv_heads() const { return num_kv_heads_; }
  size_t d_k() const { return d_k_; }
  size_t d_v() const { return d_v_; }
  size_t capacity() const { return capacity_; }
  size_t size() const { return size_; }  // tokens cached per batch item

  // Appends T_new tokens per item: K_new [batch*T_new, num_kv_heads*d_k],
  // V_new [batch*T_new, num_kv_heads*d_v] (concatenated-head layout).
  Status Append(ConstMatrixView K_new, ConstMatrixView V_new);

  // The cached keys [size, d_k] / values [size, d_v] of one item and head.
  // Views are valid until the next Append, Reset or Create. Out of range
  // (item >= batch() or kv_head >= num_kv_heads()), and on an empty cache,
  // the result is an empty view (data null, 0 x 0), which every operation
  // refuses with a Status naming its parameter.
  ConstMatrixView Keys(size_t item, size_t kv_head) const;
  ConstMatrixView Values(size_t item, size_t kv_head) const;

  void Reset() { size_ = 0; }  // forget all tokens, keep the capacity

  // Keeps the first `size` tokens of every item (e.g. to drop a rejected
  // speculative token). size must be <= size().
  Status Truncate(size_t size);

  // *copy = a cache with the same configuration and contents (e.g. one per
  // beam in beam search); later appends to either leave the other unchanged.
  Status Clone(KVCache* copy) const;

 private:
  // MultiHeadDecode has checked everything already: it appends without
  // checks and, if the step fails, rolls the cache back to its old size.
  friend Status MultiHeadDecode(ConstMatrixView X_new, const MultiHeadWeights& weights,
                                const HeadConfig& config, const AttentionOptions& options,
                                KVCache* cache, MatrixView out);
  void AppendUnchecked(ConstMatrixView K_new, ConstMatrixView V_new);
  void RollBack(size_t size) { size_ = size; }  // size <= size()

  size_t batch_ = 0, num_kv_heads_ = 0, d_k_ = 0, d_v_ = 0, capacity_ = 0;
  size_t size_ = 0;
  FloatBuffer keys_, values_;
};

// The newest T_new tokens' queries against everything cached (the queries'
// own tokens must already be appended): Q_new [batch*T_new, num_heads*d_k]
// -> out [batch*T_new, num_heads*d_v]. Causal by default with offset
// size - T_new, so row t equals row (size - T_new + t) of full causal attention.
// With `weights` (not empty), also the softmax weights of every query over
// the cache, in the same pass: weights [batch*num_heads*T_new, size], the
// block of (item b, head h) at row (b num_heads + h) T_new.
Status AttendCached(ConstMatrixView Q_new, const KVCache& cache, size_t num_heads,
                    const AttentionOptions& options, MatrixView out,
                    MatrixView weights = MatrixView());

// One decoding step of multi-head self-attention: projects X_new
// [batch*T_new, d_model] to Q, K, V, appends K and V to the cache, attends the
// new queries against the cache and applies W_O -> out [batch*T_new, d_out].
// On error the cache is unchanged.
Status MultiHeadDecode(ConstMatrixView X_new, const MultiHeadWeights& weights,
                       const HeadConfig& config, const AttentionOptions& options, KVCache* cache,
                       MatrixView out);

}  // namespace attnkit

#endif  // ATTNKIT_KV_CACHE_H_
