// attnkit model, internal: the multi-head attention of a layer and its
// backward, in the contract's shapes (grad-contract / backward.h):
// Q [B*T, h*d_k], K, V [B*T, g*d_k], out [B*T, h*d_k], lse [B*h*T, 1] with row
// (b * h + head) * T + i.
#ifndef ATTNKIT_MODEL_ATTEND_H_
#define ATTNKIT_MODEL_ATTEND_H_

#include <cstddef>

#include "src/core/attention.h"
#include "src/core/matrix.h"
#include "src/core/multihead.h"
#include "src/core/status.h"

namespace attnkit {
namespace model {

Status AttendForward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                     const HeadConfig& config, const AttentionOptions& options, MatrixView out,
                     MatrixView lse);
// dQ, dK, dV overwritten.
Status AttendBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, ConstMatrixView O,
                      ConstMatrixView dO, ConstMatrixView lse, size_t batch,
                      const HeadConfig& config, const AttentionOptions& options, MatrixView dQ,
                      MatrixView dK, MatrixView dV);

}  // namespace model
}  // namespace attnkit

#endif  // ATTNKIT_MODEL_ATTEND_H_
