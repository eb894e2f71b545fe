// attnkit model: the row kernels of the model layer besides the core's
// products and attention: embeddings, LayerNorm, GELU, softmax-cross-entropy
// and the AdamW update. Each checks nothing (the model has) and dispatches
// once per call (per task with a pool) to the best SIMD target (Highway
// dynamic dispatch natively, SIMD128 in WebAssembly), as the core's
// operations do. Matrices are row-major views; outputs must not alias inputs
// unless said.
//
// With a pool (null: the caller's thread) a kernel splits over its threads
// where every output element is computed as on one thread: over rows, or
// over columns where rows are summed (the gradients of LayerNorm's gain and
// bias, a bias's, the embeddings'), each column summing its rows in order.
// Results are bit-identical with any pool or none.
#ifndef ATTNKIT_MODEL_KERNELS_H_
#define ATTNKIT_MODEL_KERNELS_H_

#include <cstddef>
#include <cstdint>

#include "attnkit/matrix.h"
#include "attnkit/thread_pool.h"

namespace attnkit {
namespace model {
namespace kernels {

// x [N, d]: row r = token_embedding[tokens[r]] + position_embedding[r % T].
void Embed(const int32_t* tokens, size_t T, ConstMatrixView token_embedding,
           ConstMatrixView position_embedding, MatrixView x, ThreadPool* pool = nullptr);
// The embeddings' gradients += dx [N, d] scattered back to the rows Embed read.
void EmbedBackward(const int32_t* tokens, size_t T, ConstMatrixView dx, MatrixView token_embedding,
                   MatrixView position_embedding, ThreadPool* pool = nullptr);

// y [n] += x [n].
void AddTo(const float* x, float* y, size_t n, ThreadPool* pool = nullptr);
// y [N, n] += bias [n] on every row (a linear layer's bias).
void AddBias(const float* bias, MatrixView y, ThreadPool* pool = nullptr);
// sums [n] = the sum of dy [N, n]'s rows (a bias's gradient).
void ColumnSums(ConstMatrixView dy, float* sums, ThreadPool* pool = nullptr);
// Sum of x [n]^2 (the gradient's norm for clipping).
double SumOfSquares(const float* x, size_t n);

// y [N, d] = (x - mean) * rstd * gain + bias per row, gain and bias [d];
// mean and rstd [N] receive each row's statistics (rstd = 1 / sqrt(var + eps)).
void LayerNorm(ConstMatrixView x, const float* gain, const float* bias, float epsilon, MatrixView y,
               float* mean, float* rstd, ThreadPool* pool = nullptr);
// LayerNorm's backward for dy [N, d]: dx += d loss / dx (dx may not alias dy),
// dgain, dbias [d] += theirs.
void LayerNormBackward(ConstMatrixView x, const float* mean, const float* rstd, const float* gain,
                       ConstMatrixView dy, MatrixView dx, float* dgain, float* dbias,
                       ThreadPool* pool = nullptr);

// out [N, n] = GELU(u) (the tanh approximation; model.h).
void Gelu(ConstMatrixView u, MatrixView out, ThreadPool* pool = nullptr);
// In place: d [N, n] *= GELU'(u).
void GeluBackward(ConstMatrixView u, MatrixView d, ThreadPool* pool = nullptr);

// Softmax-cross-entropy of logits [N, V] against targets [N] (< 0: not
// scored): dlogits [N, V] = (softmax(row) - onehot(target)) * inv_scored on
// scored rows, 0 on the others; returns the sum over scored rows of
// -log softmax(row)[target], added in the rows' order. dlogits may alias
// logits.
double SoftmaxCrossEntropy(ConstMatrixView logits, const int32_t* targets, float inv_scored,
                           MatrixView dlogits, ThreadPool* pool = nullptr);

// One AdamW step on w, m, v, g [n]: g' = g * clip, m = b1 m + (1 - b1) g',
// v = b2 v + (1 - b2) g'^2, w -= decay w + lr (m c1) / (sqrt(v c2) + eps),
// with c1, c2 the bias corrections 1 / (1 - b^t).
struct AdamWStep {
  float clip, beta1, beta2, c1, c2, lr, decay, epsilon;
};
void AdamWUpdate(const AdamWStep& step, const float* g, float* w, float* m, float* v, size_t n);

}  // namespace kernels
}  // namespace model
}  // namespace attnkit

#endif  // ATTNKIT_MODEL_KERNELS_H_
