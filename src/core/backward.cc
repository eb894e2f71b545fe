// attnkit: the public gradient operations (backward.h). Each checks every
// argument, then computes through one dispatch to the best SIMD target. The
// kernels (backward-inl.h) compile here, for every target, apart from the
// forward's dispatch.cc.
#include "src/core/backward.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "src/core/internal.h"
#include "src/core/validate.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/core/backward.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "src/core/backward-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

bool AttentionForTrainingT(const internal::GradTask& task) { return grad::Forward(task); }

// With `recompute`, runs the forward first (into task.head.out and lse_out,
// which task.lse then views).
bool AttentionBackwardT(const internal::GradTask& task, bool recompute) {
  if (recompute && !grad::Forward(task)) return false;
  return grad::Backward(task);
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnkit {

HWY_EXPORT(AttentionForTrainingT);
HWY_EXPORT(AttentionBackwardT);

// Natively the best target the CPU supports; WebAssembly has one (SIMD128).
#if HWY_HAVE_RUNTIME_DISPATCH
#define ATTNKIT_GRAD_DISPATCH(fn) HWY_DYNAMIC_DISPATCH(fn)
#else
#define ATTNKIT_GRAD_DISPATCH(fn) HWY_STATIC_DISPATCH(fn)
#endif

namespace {

using internal::CheckFinite;
using internal::CheckNoOverlap;
using internal::CheckQKV;
using internal::CheckShape;
using internal::CheckView;

struct Named {
  const char* name;
  ConstMatrixView view;
};

// Every output against every input, and the outputs against each other.
Status CheckOutputs(std::initializer_list<std::pair<const char*, MatrixView>> outputs,
                    std::initializer_list<Named> inputs) {
  for (const auto& [name, out] : outputs) {
    for (const Named& in : inputs) {
      ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap(name, out, in.name, in.view));
    }
    for (const auto& [other_name, other] : outputs) {
      if (other.data == out.data && other_name == name) continue;
      ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap(name, out, other_name, other));
    }
  }
  return Status::Ok();
}

// Q, K, V (CheckQKV), dO [T_q, d_v] finite, and the shapes of dQ [T_q, d_k],
// dK [T_k, d_k] and dV [T_k, d_v]: what both backward overloads take.
Status CheckGradientArgs(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                         ConstMatrixView dO, MatrixView dQ, MatrixView dK, MatrixView dV) {
  ATTNKIT_RETURN_IF_ERROR(CheckQKV(Q, K, V));
  const size_t T_q = Q.rows, T_k = K.rows, d_k = Q.cols, d_v = V.cols;
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dO", dO, T_q, d_v, "T_q, the rows of Q", "d_v, the columns of V"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dQ", dQ, T_q, d_k, "T_q, the rows of Q", "d_k, the columns of Q"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dK", dK, T_k, d_k, "T_k, the rows of K", "d_k, the columns of K"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dV", dV, T_k, d_v, "T_k, the rows of V", "d_v, the columns of V"));
  return CheckFinite("dO", dO);
}

// Options checked against the head, the task's masks and score parameters
// set, and its workspace allocated into `buffer`.
Status PrepareTask(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                   const AttentionOptions& options, bool backward, internal::GradTask* task,
                   FloatBuffer* buffer) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckOptions(options, Q.rows, K.rows, /*batched=*/false, 1, 1));
  task->params = internal::ScoreParamsOf(options, Q.cols);
  task->head.Q = Q;
  task->head.K = K;
  task->head.V = V;
  internal::SetHeadMasks(options, 0, 0, &task->head);
  task->pool = options.pool;
  const size_t threads = options.pool ? options.pool->num_threads() : 1;
  const uint64_t max_floats =
      std::numeric_limits<size_t>::max() / sizeof(float) / 2;  // room for size arithmetic
  if (!internal::PlanGradLayout(Q.rows, K.rows, Q.cols, V.cols, backward, threads, max_floats,
                                &task->layout) ||
      !buffer->Allocate(task->layout.total)) {
    return internal::OutOfMemory(backward ? "dO" : "Q", "the packed operands of the gradients",
                                 task->layout.total);
  }
  task->workspace = buffer->data();
  return Status::Ok();
}

// Checks and runs the backward; O and lse are the forward's outputs, or
// `recompute` fills them first.
Status RunBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, MatrixView O,
                   ConstMatrixView dO, MatrixView lse, bool recompute,
                   const AttentionOptions& options, MatrixView dQ, MatrixView dK, MatrixView dV) {
  internal::GradTask task;
  FloatBuffer workspace;
  ATTNKIT_RETURN_IF_ERROR(PrepareTask(Q, K, V, options, /*backward=*/true, &task, &workspace));
  task.head.out = O;
  task.lse_out = lse;
  task.lse = lse;
  task.dO = dO;
  task.dQ = dQ;
  task.dK = dK;
  task.dV = dV;
  if (!ATTNKIT_GRAD_DISPATCH(AttentionBackwardT)(task, recompute)) {
    return internal::OverflowStatus("dO", "the gradients dQ, dK and dV");
  }
  return Status::Ok();
}

}  // namespace

Status AttentionForTraining(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                            const AttentionOptions& options, MatrixView out, MatrixView lse) {
  ATTNKIT_RETURN_IF_ERROR(CheckQKV(Q, K, V));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("out", out, Q.rows, V.cols, "T_q, the rows of Q", "d_v, the columns of V"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("lse", lse, Q.rows, 1, "T_q, the rows of Q", "one log-sum-exp per row"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckOutputs({{"out", out}, {"lse", lse}}, {{"Q", Q}, {"K", K}, {"V", V}}));
  internal::GradTask task;
  FloatBuffer workspace;
  ATTNKIT_RETURN_IF_ERROR(PrepareTask(Q, K, V, options, /*backward=*/false, &task, &workspace));
  task.head.out = out;
  task.lse_out = lse;
  if (!ATTNKIT_GRAD_DISPATCH(AttentionForTrainingT)(task)) {
    return internal::OverflowStatus("Q", "the scores and outputs");
  }
  return Status::Ok();
}

Status AttentionBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, ConstMatrixView O,
                         ConstMatrixView dO, ConstMatrixView lse, const AttentionOptions& options,
                         MatrixView dQ, MatrixView dK, MatrixView dV) {
  ATTNKIT_RETURN_IF_ERROR(CheckGradientArgs(Q, K, V, dO, dQ, dK, dV));
  const size_t T_q = Q.rows, d_v = V.cols;
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("O", O, T_q, d_v, "T_q, the rows of Q", "d_v, the columns of V"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("lse", lse, T_q, 1, "T_q, the rows of Q", "one log-sum-exp per row"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("O", O));
  // A fully masked row's log-sum-exp is -inf.
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("lse", lse, /*allow_neg_inf=*/true));
  ATTNKIT_RETURN_IF_ERROR(
      CheckOutputs({{"dQ", dQ}, {"dK", dK}, {"dV", dV}},
                   {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}, {"dO", dO}, {"lse", lse}}));
  // The kernel only reads O and lse: the views are mutable for the overload
  // that computes them.
  return RunBackward(Q, K, V, MatrixView(const_cast<float*>(O.data), O.rows, O.cols, O.stride), dO,
                     MatrixView(const_cast<float*>(lse.data), lse.rows, lse.cols, lse.stride),
                     /*recompute=*/false, options, dQ, dK, dV);
}

Status AttentionBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                         ConstMatrixView dO, const AttentionOptions& options, MatrixView dQ,
                         MatrixView dK, MatrixView dV) {
  ATTNKIT_RETURN_IF_ERROR(CheckGradientArgs(Q, K, V, dO, dQ, dK, dV));
  const size_t T_q = Q.rows, d_v = V.cols;
  ATTNKIT_RETURN_IF_ERROR(CheckOutputs({{"dQ", dQ}, {"dK", dK}, {"dV", dV}},
                                       {{"Q", Q}, {"K", K}, {"V", V}, {"dO", dO}}));
  Matrix O, lse;
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("Q", "O [T_q, d_v]", T_q, d_v, &O));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("Q", "lse [T_q, 1]", T_q, 1, &lse));
  return RunBackward(Q, K, V, O.view(), dO, lse.view(), /*recompute=*/true, options, dQ, dK, dV);
}

Status SelfAttentionBackward(ConstMatrixView, ConstMatrixView, ConstMatrixView, ConstMatrixView,
                             ConstMatrixView, const AttentionOptions&,
                             const SelfAttentionGradients&) {
  return Status(ErrorCode::kInvalidArgument, "X", "not implemented yet");
}

Status MultiHeadAttentionQKVForTraining(ConstMatrixView, ConstMatrixView, ConstMatrixView, size_t,
                                        const HeadConfig&, const AttentionOptions&, MatrixView,
                                        MatrixView) {
  return Status(ErrorCode::kInvalidArgument, "Q", "not implemented yet");
}

Status MultiHeadAttentionQKVBackward(ConstMatrixView, ConstMatrixView, ConstMatrixView,
                                     ConstMatrixView, ConstMatrixView, ConstMatrixView, size_t,
                                     const HeadConfig&, const AttentionOptions&, MatrixView,
                                     MatrixView, MatrixView) {
  return Status(ErrorCode::kInvalidArgument, "Q", "not implemented yet");
}

Status MultiHeadAttentionQKVBackward(ConstMatrixView, ConstMatrixView, ConstMatrixView,
                                     ConstMatrixView, size_t, const HeadConfig&,
                                     const AttentionOptions&, MatrixView, MatrixView, MatrixView) {
  return Status(ErrorCode::kInvalidArgument, "Q", "not implemented yet");
}

Status MultiHeadAttentionBackward(ConstMatrixView, size_t, const MultiHeadWeights&,
                                  const HeadConfig&, const AttentionOptions&, ConstMatrixView,
                                  const MultiHeadGradients&) {
  return Status(ErrorCode::kInvalidArgument, "X", "not implemented yet");
}

}  // namespace attnkit
#endif  // HWY_ONCE
