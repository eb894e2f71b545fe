// attnkit model: the one translation unit of the model's SIMD kernels
// (kernels-inl.h) for every target, and their dispatch: once per call.
#include "src/model/kernels.h"

#include <algorithm>
#include <vector>

#include "src/core/internal.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/model/kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "src/model/kernels-inl.h"

#if HWY_ONCE
namespace attnkit {
namespace model {

HWY_EXPORT(EmbedT);
HWY_EXPORT(EmbedBackwardT);
HWY_EXPORT(AddToT);
HWY_EXPORT(AddBiasT);
HWY_EXPORT(ColumnSumsT);
HWY_EXPORT(SumOfSquaresT);
HWY_EXPORT(LayerNormT);
HWY_EXPORT(LayerNormBackwardT);
HWY_EXPORT(LayerNormBackwardDxT);
HWY_EXPORT(LayerNormBackwardParamsT);
HWY_EXPORT(GeluT);
HWY_EXPORT(GeluBackwardT);
HWY_EXPORT(SoftmaxCrossEntropyT);
HWY_EXPORT(AdamWUpdateT);

// Natively the best target the CPU supports; in WebAssembly the static one.
#if HWY_HAVE_RUNTIME_DISPATCH
#define ATTNKIT_MODEL_DISPATCH(fn) HWY_DYNAMIC_DISPATCH(fn)
#else
#define ATTNKIT_MODEL_DISPATCH(fn) HWY_STATIC_DISPATCH(fn)
#endif

namespace kernels {
namespace {

using internal::ParallelRanges;

// The least a task takes: rows, columns (whole vectors of every target, a
// cache line) and elements of a flat array.
constexpr size_t kRowGrain = 8, kColumnGrain = 16, kFlatGrain = 4096;

// Rows [r0, r1) of m.
template <typename T>
MatrixViewT<T> Rows(MatrixViewT<T> m, size_t r0, size_t r1) {
  return m.Block(r0, r1 - r0, 0, m.cols);
}
// Columns [c0, c1) of m.
template <typename T>
MatrixViewT<T> Columns(MatrixViewT<T> m, size_t c0, size_t c1) {
  return m.Block(0, m.rows, c0, c1 - c0);
}

}  // namespace

void Embed(const int32_t* tokens, size_t T, ConstMatrixView token_embedding,
           ConstMatrixView position_embedding, MatrixView x, ThreadPool* pool) {
  // Tasks start at a multiple of T, where row r reads position r % T.
  const size_t sequences = x.rows / T;
  ParallelRanges(pool, sequences, std::max<size_t>(1, kRowGrain / T), [&](size_t s0, size_t s1) {
    ATTNKIT_MODEL_DISPATCH(EmbedT)
    (tokens + s0 * T, T, token_embedding, position_embedding, Rows(x, s0 * T, s1 * T));
  });
}
void EmbedBackward(const int32_t* tokens, size_t T, ConstMatrixView dx, MatrixView token_embedding,
                   MatrixView position_embedding, ThreadPool* pool) {
  // Two rows of dx may add into one embedding row: a split over columns.
  ParallelRanges(pool, dx.cols, kColumnGrain, [&](size_t c0, size_t c1) {
    ATTNKIT_MODEL_DISPATCH(EmbedBackwardT)
    (tokens, T, Columns(dx, c0, c1), Columns(token_embedding, c0, c1),
     Columns(position_embedding, c0, c1));
  });
}
void AddTo(const float* x, float* y, size_t n, ThreadPool* pool) {
  ParallelRanges(pool, n, kFlatGrain, [&](size_t i0, size_t i1) {
    ATTNKIT_MODEL_DISPATCH(AddToT)(x + i0, y + i0, i1 - i0);
  });
}
void AddBias(const float* bias, MatrixView y, ThreadPool* pool) {
  ParallelRanges(pool, y.rows, kRowGrain, [&](size_t r0, size_t r1) {
    ATTNKIT_MODEL_DISPATCH(AddBiasT)(bias, Rows(y, r0, r1));
  });
}
void ColumnSums(ConstMatrixView dy, float* sums, ThreadPool* pool) {
  ParallelRanges(pool, dy.cols, kColumnGrain, [&](size_t c0, size_t c1) {
    ATTNKIT_MODEL_DISPATCH(ColumnSumsT)(Columns(dy, c0, c1), sums + c0);
  });
}
double SumOfSquares(const float* x, size_t n) {
  return ATTNKIT_MODEL_DISPATCH(SumOfSquaresT)(x, n);
}
void LayerNorm(ConstMatrixView x, const float* gain, const float* bias, float epsilon, MatrixView y,
               float* mean, float* rstd, ThreadPool* pool) {
  ParallelRanges(pool, x.rows, kRowGrain, [&](size_t r0, size_t r1) {
    ATTNKIT_MODEL_DISPATCH(LayerNormT)
    (Rows(x, r0, r1), gain, bias, epsilon, Rows(y, r0, r1), mean + r0, rstd + r0);
  });
}
void LayerNormBackward(ConstMatrixView x, const float* mean, const float* rstd, const float* gain,
                       ConstMatrixView dy, MatrixView dx, float* dgain, float* dbias,
                       ThreadPool* pool) {
  if (!pool || pool->num_threads() == 1) {
    ATTNKIT_MODEL_DISPATCH(LayerNormBackwardT)(x, mean, rstd, gain, dy, dx, dgain, dbias);
    return;
  }
  // dx by bands of rows, then dgain and dbias by bands of columns (each sums
  // its rows in order, as the one-thread pass).
  ParallelRanges(pool, x.rows, kRowGrain, [&](size_t r0, size_t r1) {
    ATTNKIT_MODEL_DISPATCH(LayerNormBackwardDxT)
    (Rows(x, r0, r1), mean + r0, rstd + r0, gain, Rows(dy, r0, r1), Rows(dx, r0, r1));
  });
  ParallelRanges(pool, x.cols, kColumnGrain, [&](size_t c0, size_t c1) {
    ATTNKIT_MODEL_DISPATCH(LayerNormBackwardParamsT)
    (Columns(x, c0, c1), mean, rstd, Columns(dy, c0, c1), dgain + c0, dbias + c0);
  });
}
void Gelu(ConstMatrixView u, MatrixView out, ThreadPool* pool) {
  ParallelRanges(pool, u.rows, kRowGrain, [&](size_t r0, size_t r1) {
    ATTNKIT_MODEL_DISPATCH(GeluT)(Rows(u, r0, r1), Rows(out, r0, r1));
  });
}
void GeluBackward(ConstMatrixView u, MatrixView d, ThreadPool* pool) {
  ParallelRanges(pool, u.rows, kRowGrain, [&](size_t r0, size_t r1) {
    ATTNKIT_MODEL_DISPATCH(GeluBackwardT)(Rows(u, r0, r1), Rows(d, r0, r1));
  });
}
double SoftmaxCrossEntropy(ConstMatrixView logits, const int32_t* targets, float inv_scored,
                           MatrixView dlogits, ThreadPool* pool) {
  std::vector<double> losses(logits.rows);
  ParallelRanges(pool, logits.rows, kRowGrain, [&](size_t r0, size_t r1) {
    ATTNKIT_MODEL_DISPATCH(SoftmaxCrossEntropyT)
    (Rows(logits, r0, r1), targets + r0, inv_scored, Rows(dlogits, r0, r1), losses.data() + r0);
  });
  double loss = 0;
  for (const double l : losses) loss += l;  // in the rows' order
  return loss;
}
void AdamWUpdate(const AdamWStep& step, const float* g, float* w, float* m, float* v, size_t n) {
  ATTNKIT_MODEL_DISPATCH(AdamWUpdateT)(step, g, w, m, v, n);
}

}  // namespace kernels
}  // namespace model
}  // namespace attnkit
#endif  // HWY_ONCE
