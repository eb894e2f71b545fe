// attnkit model: the one translation unit of the model's SIMD kernels
// (kernels-inl.h) for every target, and their dispatch: once per call.
#include "src/model/kernels.h"

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

void Embed(const int32_t* tokens, size_t T, ConstMatrixView token_embedding,
           ConstMatrixView position_embedding, MatrixView x) {
  ATTNKIT_MODEL_DISPATCH(EmbedT)(tokens, T, token_embedding, position_embedding, x);
}
void EmbedBackward(const int32_t* tokens, size_t T, ConstMatrixView dx, MatrixView token_embedding,
                   MatrixView position_embedding) {
  ATTNKIT_MODEL_DISPATCH(EmbedBackwardT)(tokens, T, dx, token_embedding, position_embedding);
}
void AddTo(const float* x, float* y, size_t n) { ATTNKIT_MODEL_DISPATCH(AddToT)(x, y, n); }
void AddBias(const float* bias, MatrixView y) { ATTNKIT_MODEL_DISPATCH(AddBiasT)(bias, y); }
void ColumnSums(ConstMatrixView dy, float* sums) { ATTNKIT_MODEL_DISPATCH(ColumnSumsT)(dy, sums); }
double SumOfSquares(const float* x, size_t n) {
  return ATTNKIT_MODEL_DISPATCH(SumOfSquaresT)(x, n);
}
void LayerNorm(ConstMatrixView x, const float* gain, const float* bias, float epsilon, MatrixView y,
               float* mean, float* rstd) {
  ATTNKIT_MODEL_DISPATCH(LayerNormT)(x, gain, bias, epsilon, y, mean, rstd);
}
void LayerNormBackward(ConstMatrixView x, const float* mean, const float* rstd, const float* gain,
                       ConstMatrixView dy, MatrixView dx, float* dgain, float* dbias) {
  ATTNKIT_MODEL_DISPATCH(LayerNormBackwardT)(x, mean, rstd, gain, dy, dx, dgain, dbias);
}
void Gelu(ConstMatrixView u, MatrixView out) { ATTNKIT_MODEL_DISPATCH(GeluT)(u, out); }
void GeluBackward(ConstMatrixView u, MatrixView d) { ATTNKIT_MODEL_DISPATCH(GeluBackwardT)(u, d); }
double SoftmaxCrossEntropy(ConstMatrixView logits, const int32_t* targets, float inv_scored,
                           MatrixView dlogits) {
  return ATTNKIT_MODEL_DISPATCH(SoftmaxCrossEntropyT)(logits, targets, inv_scored, dlogits);
}
void AdamWUpdate(const AdamWStep& step, const float* g, float* w, float* m, float* v, size_t n) {
  ATTNKIT_MODEL_DISPATCH(AdamWUpdateT)(step, g, w, m, v, n);
}

}  // namespace kernels
}  // namespace model
}  // namespace attnkit
#endif  // HWY_ONCE
