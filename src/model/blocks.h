// attnkit model: the GPT block as named steps, each a function over the rows
// of the residual stream x [N, d_model] (N = B T training, the new tokens in
// generation), and each step's backward named after it:
//
//   step            forward                                         backward
//   Embed           x = token_embedding[tokens] + position rows     EmbedBackward
//   AttentionBlock  x' = x + MultiHead(LayerNorm(x) W_QKV + b_QKV) W_O + b_O
//                                                                   AttentionBlockBackward
//   MlpBlock        x'' = x' + GELU(LayerNorm2(x') W_1 + b_1) W_2 + b_2
//                                                                   MlpBlockBackward
//   FinalNorm       f = LayerNorm_final(x)                          FinalNormBackward
//   Unembed         logits = f unembedding (f token_embedding^T     UnembedBackward
//                   with tied_unembedding)
//   Loss            mean -log softmax(logits)[target], dlogits      (dlogits is its gradient)
//
// The biases are added only with bias on (a pass over the product's output
// each); without it no step touches them. A bias's gradient is the column
// sums of its product's output gradient.
//
// Training (Model::Forward, Model::Backward), inspection (Model::Inspect) and
// generation (Generator, the same blocks on the new rows with a KV cache per
// layer) run these steps and nothing else of the model's maths. Without
// layer_norm the LayerNorms are the identity (a = x, f = x).
//
// Threads: a step given the model's pool (`pool`, or options.pool; null: the
// caller's thread) splits its products and attention over it where each call
// is large enough (internal::PoolFor), and its row kernels (LayerNorm, GELU,
// the biases, the residual adds, the loss, the embeddings) where the pass is
// (RowsPool). Every split keeps each output's sums in their order: results
// are bit-identical with any pool.
#ifndef ATTNKIT_SRC_MODEL_BLOCKS_H_
#define ATTNKIT_SRC_MODEL_BLOCKS_H_

#include <cstddef>
#include <cstdint>

#include "attnkit/attention.h"
#include "attnkit/kv_cache.h"
#include "attnkit/matrix.h"
#include "attnkit/model.h"
#include "attnkit/multihead.h"
#include "attnkit/ops.h"
#include "attnkit/status.h"

namespace attnkit {
namespace model {

// m [rows, cols], newly allocated: zero, or with `zeroed` false unset (for
// a matrix whose every value is written before any is read).
Status Alloc(Matrix* m, size_t rows, size_t cols, bool zeroed = true);
// m [rows, cols], reusing its memory when it has that shape already: for
// outputs that are overwritten whole (the contents are not zeroed then).
Status Shape(Matrix* m, size_t rows, size_t cols);

// The model's heads (d_v = d_k) and its attention: causal, scores scaled by
// 1 / sqrt(d_k) (scale_by_sqrt_dk) or unscaled.
HeadConfig Heads(const ModelConfig& c);
AttentionOptions CausalOptions(const ModelConfig& c, ThreadPool* pool);

// The pool for the row kernels of a pass over `rows` rows: `pool`, or null
// when the pass's smallest product (x W_O, rows d_model h d_k multiply-adds)
// is below the cut-off (internal::PoolFor): a pass too small for its products
// to gain from threads gains nothing on its lighter row kernels either.
ThreadPool* RowsPool(const ModelConfig& c, size_t rows, ThreadPool* pool);

// y = LayerNorm(x) [N, d] with gain and bias [1, d] and c's
// layer_norm_epsilon; keeps mean and rstd [N, 1].
Status LayerNormForward(const ModelConfig& c, const Matrix& x, const Matrix& gain,
                        const Matrix& bias, LayerNormActivations* out, ThreadPool* pool = nullptr);
// What a LayerNorm step hands on: its output with layer_norm, else x itself.
inline const Matrix& Normed(const ModelConfig& c, const Matrix& x, const LayerNormActivations& n) {
  return c.layer_norm ? n.y : x;
}

// The index of the largest of row [n] (the lowest on ties).
size_t Argmax(const float* row, size_t n);

// x [N, d]: row r = token_embedding[tokens[r]] + position_embedding[first_position
// + r % seq_len] (N a multiple of seq_len: the batch's sequences one after another).
// Here and in EmbedBackward `pool` is the rows' (RowsPool).
void Embed(const Parameters& p, const int32_t* tokens, size_t seq_len, size_t first_position,
           MatrixView x, ThreadPool* pool = nullptr);
// grads' embeddings += dx [N, d] scattered back to the rows Embed read (first_position 0).
void EmbedBackward(const int32_t* tokens, size_t seq_len, ConstMatrixView dx, Parameters* grads,
                   ThreadPool* pool = nullptr);

// W_QKV [d, (h + 2g) d_k] = W_Q | W_K | W_V side by side: Q | K | V in one
// product; with biases also b_QKV [1, (h + 2g) d_k] = b_Q | b_K | b_V.
Status FuseQKV(const LayerParameters& p, Matrix* W_QKV, Matrix* b_QKV);
// Into a's W_QKV and b_QKV.
Status FuseQKV(const LayerParameters& p, BlockActivations* a);

// x_out [N, d] = x [N, d] + z W_O (+ b_O), z [N, h d_k] = MultiHead(Q, K, V),
// Q | K | V = a W_QKV (+ b_QKV) (a->QKVWeights(), QKVBias(): FuseQKV's), a = LayerNorm(x).
// Without a cache: the N rows are `batch` sequences, each attending causally
// to itself, and a->lse [B h T, 1] is kept for the backward. With a cache
// (batch 1): K and V join it and the rows' queries attend everything cached,
// writing their softmax weights [h N, size] into `weights` unless it is empty
// (AttendCached: head h's block at row h N).
// Fills a's norm, QKV, z (and lse); x_out must not be x.
Status AttentionBlock(const ModelConfig& c, const LayerParameters& p, const Matrix& x, size_t batch,
                      const AttentionOptions& options, KVCache* cache, BlockActivations* a,
                      Matrix* x_out, MatrixView weights = MatrixView());
// dx [N, d]: d loss / d x_out in, d loss / d x out; grads' ln_gain, ln_bias
// += and W_Q, W_K, W_V, W_O (and b_Q, b_K, b_V, b_O) = theirs. dz
// (optional) receives d loss / d z.
// The projection's backward is the core's (RunProjectionBackward), which
// takes Q | K | V side by side as one projection: dW_QKV = a^T dQKV and
// da = dQKV W_QKV^T are one product each.
Status AttentionBlockBackward(const ModelConfig& c, const LayerParameters& p, const Matrix& x,
                              const BlockActivations& a, size_t batch,
                              const AttentionOptions& options, LayerParameters* g,
                              BlockBackwardScratch* s, Matrix* dx, Matrix* dz);

// x_out [N, d] = mid [N, d] + GELU(u) W_2 (+ b_2), u = LayerNorm2(mid) W_1
// (+ b_1) [N, d_ff].
// Fills a's norm2, u and act; x_out must not be mid.
Status MlpBlock(const ModelConfig& c, const LayerParameters& p, const Matrix& mid,
                BlockActivations* a, Matrix* x_out, ThreadPool* pool = nullptr);
// dx [N, d]: d loss / d x_out in, d loss / d mid out; grads' ln2_gain,
// ln2_bias += and W_1, W_2 (and b_1, b_2) = theirs.
Status MlpBlockBackward(const ModelConfig& c, const LayerParameters& p, const Matrix& mid,
                        const BlockActivations& a, LayerParameters* g, BlockBackwardScratch* s,
                        Matrix* dx, ThreadPool* pool = nullptr);

// f = LayerNorm_final(x) [N, d] into *f (nothing without layer_norm: f = x, see Normed).
Status FinalNorm(const ModelConfig& c, const Parameters& p, const Matrix& x,
                 LayerNormActivations* f, ThreadPool* pool = nullptr);
// df [N, d] = d loss / d f in; *dx = d loss / d x out (df's memory without
// layer_norm); grads' final_gain, final_bias += theirs.
Status FinalNormBackward(const ModelConfig& c, const Parameters& p, const Matrix& x,
                         const LayerNormActivations& f, Matrix* df, Parameters* grads, Matrix* dx,
                         ThreadPool* pool = nullptr);

// logits [N, vocab_size] = f [N, d] unembedding, or f token_embedding^T
// with tied_unembedding (allocated).
Status Unembed(const ModelConfig& c, const Parameters& p, const Matrix& f, Matrix* logits,
               ThreadPool* pool = nullptr);
// grads' unembedding = f^T dlogits, df [N, d] = dlogits unembedding^T; tied:
// grads' token_embedding = dlogits^T f (overwritten: EmbedBackward's
// scatter adds to it after), df = dlogits token_embedding.
Status UnembedBackward(const ModelConfig& c, const Parameters& p, const Matrix& f,
                       const Matrix& dlogits, Parameters* grads, Matrix* df,
                       ThreadPool* pool = nullptr);

// Over the batch's scored positions (target >= 0): the mean cross-entropy and
// the accuracy of the logits' argmax into *m; dlogits [N, V] = (softmax -
// onehot(target)) / scored, the loss's gradient. `pool`: the rows' (RowsPool).
Status Loss(const Batch& batch, const Matrix& logits, Metrics* m, Matrix* dlogits,
            ThreadPool* pool = nullptr);

// weights [B h T_q, T_k] = softmax(scale Q K^T) of every (item, head), block
// (b, head) at row (b h + head) T_q, from the core's MultiHeadAttentionQKV
// (ScoresStage::kWeights), for Model::AttentionWeights.
Status AttentionWeightsOf(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                          const HeadConfig& heads, const AttentionOptions& options,
                          MatrixView weights);
}  // namespace model
}  // namespace attnkit

#endif  // ATTNKIT_SRC_MODEL_BLOCKS_H_
