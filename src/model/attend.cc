// Per (item, head) through the core's single-head training forward and
// backward on strided views of the concatenated layout.
#include "src/model/attend.h"

#include "src/core/backward.h"

namespace attnkit {
namespace model {

Status AttendForward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                     const HeadConfig& config, const AttentionOptions& options, MatrixView out,
                     MatrixView lse) {
  const size_t h = config.num_heads, group = h / config.num_kv_heads, dk = config.d_k;
  const size_t T = Q.rows / batch;
  for (size_t b = 0; b < batch; ++b) {
    for (size_t head = 0; head < h; ++head) {
      const size_t g = head / group;
      ATTNKIT_RETURN_IF_ERROR(AttentionForTraining(
          Q.Block(b * T, T, head * dk, dk), K.Block(b * T, T, g * dk, dk),
          V.Block(b * T, T, g * dk, dk), options, out.Block(b * T, T, head * dk, dk),
          lse.Block((b * h + head) * T, T, 0, 1)));
    }
  }
  return Status::Ok();
}

Status AttendBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, ConstMatrixView O,
                      ConstMatrixView dO, ConstMatrixView lse, size_t batch,
                      const HeadConfig& config, const AttentionOptions& options, MatrixView dQ,
                      MatrixView dK, MatrixView dV) {
  const size_t h = config.num_heads, group = h / config.num_kv_heads, dk = config.d_k;
  const size_t T = Q.rows / batch;
  Matrix dk_head(T, dk), dv_head(T, dk);
  for (size_t r = 0; r < dK.rows; ++r) {
    for (size_t c = 0; c < dK.cols; ++c) dK(r, c) = 0;
    for (size_t c = 0; c < dV.cols; ++c) dV(r, c) = 0;
  }
  for (size_t b = 0; b < batch; ++b) {
    for (size_t head = 0; head < h; ++head) {
      const size_t g = head / group;
      ATTNKIT_RETURN_IF_ERROR(AttentionBackward(
          Q.Block(b * T, T, head * dk, dk), K.Block(b * T, T, g * dk, dk),
          V.Block(b * T, T, g * dk, dk), O.Block(b * T, T, head * dk, dk),
          dO.Block(b * T, T, head * dk, dk), lse.Block((b * h + head) * T, T, 0, 1), options,
          dQ.Block(b * T, T, head * dk, dk), dk_head, dv_head));
      // Heads of a group in increasing order: a fixed summation order.
      for (size_t i = 0; i < T; ++i) {
        for (size_t c = 0; c < dk; ++c) {
          dK(b * T + i, g * dk + c) += dk_head(i, c);
          dV(b * T + i, g * dk + c) += dv_head(i, c);
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace model
}  // namespace attnkit
