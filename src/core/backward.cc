// attnkit: the public gradient operations (backward.h). Each checks every
// argument, then computes through one dispatch to the best SIMD target. The
// kernels (backward-inl.h) compile here, for every target, apart from the
// forward's dispatch.cc.
#include "src/core/backward.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "src/core/heads.h"
#include "src/core/ops.h"

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

bool MultiHeadForTrainingT(const internal::MultiGradTask& job) { return grad::MultiForward(job); }

bool MultiHeadBackwardT(const internal::MultiGradTask& job, bool recompute) {
  return grad::MultiBackward(job, recompute);
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnkit {

HWY_EXPORT(AttentionForTrainingT);
HWY_EXPORT(AttentionBackwardT);
HWY_EXPORT(MultiHeadForTrainingT);
HWY_EXPORT(MultiHeadBackwardT);

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
  // A Status is built only for an overlap: a small call's dozens of checks
  // cost comparisons.
  for (const auto& [name, out] : outputs) {
    for (const Named& in : inputs) {
      if (!internal::Disjoint(out, in.view)) return CheckNoOverlap(name, out, in.name, in.view);
    }
    for (const auto& [other_name, other] : outputs) {
      if (other.data == out.data && other_name == name) continue;
      if (!internal::Disjoint(out, other)) return CheckNoOverlap(name, out, other_name, other);
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

// The passes of a backward: with `recompute`, the forward first.
internal::GradPasses PassesOf(bool recompute) {
  return recompute ? internal::GradPasses::kForwardThenBackward : internal::GradPasses::kBackward;
}

// The workspace of a small call's gradients (64 KiB), kept per thread.
constexpr size_t kSmallWorkspaceFloats = 16384;

// Options checked against the head, the task's masks and score parameters
// set, and its workspace: this thread's small one if the layout fits, else
// allocated into `buffer`.
Status PrepareTask(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                   const AttentionOptions& options, internal::GradPasses passes,
                   internal::GradTask* task, FloatBuffer* buffer) {
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
  const bool planned = internal::PlanGradLayout(Q.rows, K.rows, Q.cols, V.cols, passes, threads,
                                                max_floats, &task->layout);
  // Small calls reuse this thread's workspace: no allocation per call.
  if (planned && task->layout.total <= kSmallWorkspaceFloats) {
    alignas(64) thread_local float small_workspace[kSmallWorkspaceFloats];
    task->workspace = small_workspace;
    return Status::Ok();
  }
  if (!planned || !buffer->AllocateUninitialized(task->layout.total)) {
    const bool backward = passes != internal::GradPasses::kForward;
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
  ATTNKIT_RETURN_IF_ERROR(PrepareTask(Q, K, V, options, PassesOf(recompute), &task, &workspace));
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
  ATTNKIT_RETURN_IF_ERROR(
      PrepareTask(Q, K, V, options, internal::GradPasses::kForward, &task, &workspace));
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

namespace {

// C = A B (or A B^T with `transposed`), an overflow naming `source`.
// With a pool, bands of rows of A and C go to the threads: each row of C is
// computed as on one thread, so the result is the same bit for bit.
Status Product(ConstMatrixView A, ConstMatrixView B, MatrixView C, bool transposed,
               const char* source, const char* what, ThreadPool* pool = nullptr) {
  const size_t threads = pool ? pool->num_threads() : 1;
  const size_t band = std::max<size_t>(8, (A.rows + threads - 1) / threads);
  const size_t bands = (A.rows + band - 1) / band;
  std::vector<Status> status(std::max<size_t>(bands, 1));
  auto run = [&](size_t b) {
    const size_t r0 = b * band, rows = std::min(band, A.rows - r0);
    const ConstMatrixView a(A.data + r0 * A.stride, rows, A.cols, A.stride);
    const MatrixView c(C.data + r0 * C.stride, rows, C.cols, C.stride);
    status[b] = transposed ? MatMulTransposed(a, B, c) : MatMul(a, B, c);
  };
  if (bands <= 1) {
    run(0);
  } else {
    pool->Run(bands, [&](size_t b, size_t) { run(b); });
  }
  for (const Status& s : status) {
    if (s.ok()) continue;
    if (s.code() == ErrorCode::kOverflow) return internal::OverflowStatus(source, what);
    return s;
  }
  return Status::Ok();
}

// t = m^T, allocated.
Status Transpose(const char* parameter, const char* what, ConstMatrixView m, Matrix* t) {
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate(parameter, what, m.cols, m.rows, t));
  for (size_t r = 0; r < m.rows; ++r) {
    for (size_t c = 0; c < m.cols; ++c) (*t)(c, r) = m(r, c);
  }
  return Status::Ok();
}

// The gradients of the projections Q = X W_Q, K = X W_K, V = X W_V:
// dW_Q = X^T dQ, dW_K = X^T dK, dW_V = X^T dV, dX = dQ W_Q^T + dK W_K^T +
// dV W_V^T. `source` names the input errors are reported for.
Status ProjectionGradients(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                           ConstMatrixView W_V, ConstMatrixView dQ, ConstMatrixView dK,
                           ConstMatrixView dV, const char* source, ThreadPool* pool, MatrixView dX,
                           MatrixView dW_Q, MatrixView dW_K, MatrixView dW_V) {
  Matrix Xt, part;
  ATTNKIT_RETURN_IF_ERROR(Transpose("X", "X^T [d_model, rows of X]", X, &Xt));
  ATTNKIT_RETURN_IF_ERROR(Product(Xt, dQ, dW_Q, false, source, "dW_Q = X^T dQ", pool));
  ATTNKIT_RETURN_IF_ERROR(Product(Xt, dK, dW_K, false, source, "dW_K = X^T dK", pool));
  ATTNKIT_RETURN_IF_ERROR(Product(Xt, dV, dW_V, false, source, "dW_V = X^T dV", pool));
  ATTNKIT_RETURN_IF_ERROR(
      internal::Allocate("X", "dX [rows of X, d_model]", X.rows, X.cols, &part));
  ATTNKIT_RETURN_IF_ERROR(Product(dQ, W_Q, dX, true, source, "dX = dQ W_Q^T", pool));
  for (const auto& [d, W] : {std::pair<ConstMatrixView, ConstMatrixView>{dK, W_K}, {dV, W_V}}) {
    ATTNKIT_RETURN_IF_ERROR(
        Product(d, W, part.view(), true, source, "dX = dK W_K^T + dV W_V^T", pool));
    for (size_t r = 0; r < X.rows; ++r) {
      for (size_t c = 0; c < X.cols; ++c) dX(r, c) += part(r, c);
    }
  }
  if (!internal::RunAllFinite(dX)) return internal::OverflowStatus(source, "dX");
  return Status::Ok();
}

// The shapes of a checked multi-head call on concatenated Q, K and V.
struct MultiShape {
  internal::Heads heads;
  size_t batch = 1, T_q = 0, T_k = 0;
};

// Q, K and V as MultiHeadAttentionQKV checks them, and the options.
Status CheckMultiQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                     const HeadConfig& config, const AttentionOptions& options, MultiShape* m) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("Q", Q));
  ATTNKIT_RETURN_IF_ERROR(CheckView("K", K));
  ATTNKIT_RETURN_IF_ERROR(CheckView("V", V));
  internal::Heads& heads = m->heads;
  ATTNKIT_RETURN_IF_ERROR(
      internal::ResolveHeads(config, Q.cols, "the columns of Q", V.cols, &heads));
  m->batch = batch;
  ATTNKIT_RETURN_IF_ERROR(internal::SequenceLength("Q", Q.rows, batch, &m->T_q));
  ATTNKIT_RETURN_IF_ERROR(internal::SequenceLength("K", K.rows, batch, &m->T_k));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("Q", Q, Q.rows, heads.num_heads * heads.d_k, "batch * T_q", "num_heads * d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("K", K, K.rows, heads.num_kv_heads * heads.d_k, "batch * T_k",
                                     "num_kv_heads * d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("V", V, K.rows, heads.num_kv_heads * heads.d_v,
                                     "batch * T_k, the rows of K", "num_kv_heads * d_v"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("Q", Q));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("K", K));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("V", V));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckKeyLengthCount(options, batch));
  return internal::CheckOptions(options, m->T_q, m->T_k, /*batched=*/true, batch, heads.num_heads);
}

// dO [B*T_q, h*d_v] finite, dQ, dK, dV shaped as Q, K, V.
Status CheckMultiGradients(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                           ConstMatrixView dO, const char* dO_name, const MultiShape& m,
                           MatrixView dQ, MatrixView dK, MatrixView dV) {
  ATTNKIT_RETURN_IF_ERROR(CheckShape(dO_name, dO, Q.rows, m.heads.num_heads * m.heads.d_v,
                                     "batch * T_q, the rows of Q", "num_heads * d_v"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dQ", dQ, Q.rows, Q.cols, "the rows of Q", "the columns of Q"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dK", dK, K.rows, K.cols, "the rows of K", "the columns of K"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dV", dV, V.rows, V.cols, "the rows of V", "the columns of V"));
  return CheckFinite(dO_name, dO);
}

// One GradTask per (item, query head) of checked Q, K and V, with masks,
// outputs O [B*T_q, h*d_v] and lse [B*h*T_q, 1]; `buffer` holds the packed
// operands of the heads in flight (GroupsInFlight) and the threads' blocks.
Status PrepareMultiTask(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, MatrixView O,
                        MatrixView lse, const MultiShape& m, const AttentionOptions& options,
                        internal::GradPasses passes, const char* source,
                        internal::MultiGradTask* job, FloatBuffer* buffer) {
  const internal::Heads& heads = m.heads;
  std::vector<internal::HeadTask> head_tasks;
  internal::AddHeadTasks(
      Q, O, m.batch, m.T_q, m.T_k, heads, options,
      [&](size_t b, size_t g, ConstMatrixView* k, ConstMatrixView* v) {
        *k = K.Block(b * m.T_k, m.T_k, g * heads.d_k, heads.d_k);
        *v = V.Block(b * m.T_k, m.T_k, g * heads.d_v, heads.d_v);
      },
      &head_tasks);
  const size_t n = head_tasks.size();
  const size_t threads = options.pool ? options.pool->num_threads() : 1;
  const size_t chunk = internal::GroupsInFlight(n / heads.group(), threads);
  const uint64_t max_floats = std::numeric_limits<size_t>::max() / sizeof(float) / 2;
  internal::GradLayout layout;
  const bool fits = internal::PlanGradLayout(m.T_q, m.T_k, heads.d_k, heads.d_v, passes, threads,
                                             max_floats, &layout);
  // The heads in flight and the threads are few, each region below
  // max_floats: the sum fits in 64 bits.
  const uint64_t in_flight = static_cast<uint64_t>(chunk) * heads.group();
  const uint64_t total =
      in_flight * layout.threads_at + static_cast<uint64_t>(threads) * layout.thread_floats;
  if (!fits || total > max_floats || !buffer->AllocateUninitialized(static_cast<size_t>(total))) {
    return internal::OutOfMemory(source, "the packed operands of the gradients",
                                 static_cast<size_t>(std::min<uint64_t>(total, max_floats)));
  }
  const internal::ScoreParams params = internal::ScoreParamsOf(options, heads.d_k);
  job->tasks.assign(n, internal::GradTask());
  for (size_t k = 0; k < n; ++k) {
    internal::GradTask& t = job->tasks[k];
    t.head = head_tasks[k];
    t.params = params;
    t.layout = layout;
    t.lse_out = lse.Block(k * m.T_q, m.T_q, 0, 1);
    t.lse = t.lse_out;
  }
  job->group = heads.group();
  job->chunk = chunk;
  job->shared = buffer->data();
  job->threads = buffer->data() + in_flight * layout.threads_at;
  job->pool = options.pool;
  return Status::Ok();
}

// Runs the checked multi-head backward; O and lse are the forward's outputs,
// or `recompute` fills them first. `source` names dO in errors.
Status RunMultiBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, MatrixView O,
                        ConstMatrixView dO, MatrixView lse, bool recompute, const MultiShape& m,
                        const AttentionOptions& options, const char* source, MatrixView dQ,
                        MatrixView dK, MatrixView dV) {
  internal::MultiGradTask job;
  FloatBuffer workspace;
  ATTNKIT_RETURN_IF_ERROR(
      PrepareMultiTask(Q, K, V, O, lse, m, options, PassesOf(recompute), source, &job, &workspace));
  const internal::Heads& heads = m.heads;
  for (size_t k = 0; k < job.tasks.size(); ++k) {
    const size_t b = k / heads.num_heads, h = k % heads.num_heads, g = h / heads.group();
    internal::GradTask& t = job.tasks[k];
    t.dO = dO.Block(b * m.T_q, m.T_q, h * heads.d_v, heads.d_v);
    t.dQ = dQ.Block(b * m.T_q, m.T_q, h * heads.d_k, heads.d_k);
    t.dK = dK.Block(b * m.T_k, m.T_k, g * heads.d_k, heads.d_k);
    t.dV = dV.Block(b * m.T_k, m.T_k, g * heads.d_v, heads.d_v);
  }
  if (!ATTNKIT_GRAD_DISPATCH(MultiHeadBackwardT)(job, recompute)) {
    return internal::OverflowStatus(source, "the gradients dQ, dK and dV");
  }
  return Status::Ok();
}

MatrixView Mutable(ConstMatrixView v) {
  return MatrixView(const_cast<float*>(v.data), v.rows, v.cols, v.stride);
}

}  // namespace

Status SelfAttentionBackward(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                             ConstMatrixView W_V, ConstMatrixView dO,
                             const AttentionOptions& options, const SelfAttentionGradients& grads) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("X", X));
  ATTNKIT_RETURN_IF_ERROR(CheckView("W_Q", W_Q));
  ATTNKIT_RETURN_IF_ERROR(CheckView("W_V", W_V));
  const size_t T = X.rows, d_model = X.cols, d_k = W_Q.cols, d_v = W_V.cols;
  ATTNKIT_RETURN_IF_ERROR(CheckShape("W_Q", W_Q, d_model, d_k, "d_model, the columns of X", "d_k"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("W_K", W_K, d_model, d_k, "d_model, the columns of X", "d_k, the columns of W_Q"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("W_V", W_V, d_model, d_v, "d_model, the columns of X", "d_v"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dO", dO, T, d_v, "T, the rows of X", "d_v, the columns of W_V"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dX", grads.dX, T, d_model, "T, the rows of X", "d_model, the columns of X"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dW_Q", grads.dW_Q, d_model, d_k, "d_model", "d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dW_K", grads.dW_K, d_model, d_k, "d_model", "d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dW_V", grads.dW_V, d_model, d_v, "d_model", "d_v"));
  for (const Named& in : {Named{"X", X}, {"W_Q", W_Q}, {"W_K", W_K}, {"W_V", W_V}, {"dO", dO}}) {
    ATTNKIT_RETURN_IF_ERROR(CheckFinite(in.name, in.view));
  }
  ATTNKIT_RETURN_IF_ERROR(CheckOutputs(
      {{"dX", grads.dX}, {"dW_Q", grads.dW_Q}, {"dW_K", grads.dW_K}, {"dW_V", grads.dW_V}},
      {{"X", X}, {"W_Q", W_Q}, {"W_K", W_K}, {"W_V", W_V}, {"dO", dO}}));
  Matrix Q, K, V, O, lse, dQ, dK, dV;
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "Q [T, d_k]", T, d_k, &Q));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "K [T, d_k]", T, d_k, &K));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "V [T, d_v]", T, d_v, &V));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "O [T, d_v]", T, d_v, &O));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "lse [T, 1]", T, 1, &lse));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "dQ [T, d_k]", T, d_k, &dQ));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "dK [T, d_k]", T, d_k, &dK));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "dV [T, d_v]", T, d_v, &dV));
  ATTNKIT_RETURN_IF_ERROR(Product(X, W_Q, Q.view(), false, "X", "Q = X W_Q", options.pool));
  ATTNKIT_RETURN_IF_ERROR(Product(X, W_K, K.view(), false, "X", "K = X W_K", options.pool));
  ATTNKIT_RETURN_IF_ERROR(Product(X, W_V, V.view(), false, "X", "V = X W_V", options.pool));
  ATTNKIT_RETURN_IF_ERROR(RunBackward(Q, K, V, O.view(), dO, lse.view(), /*recompute=*/true,
                                      options, dQ.view(), dK.view(), dV.view()));
  return ProjectionGradients(X, W_Q, W_K, W_V, dQ, dK, dV, "dO", options.pool, grads.dX, grads.dW_Q,
                             grads.dW_K, grads.dW_V);
}

Status MultiHeadAttentionQKVForTraining(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                                        size_t batch, const HeadConfig& config,
                                        const AttentionOptions& options, MatrixView out,
                                        MatrixView lse) {
  MultiShape m;
  ATTNKIT_RETURN_IF_ERROR(CheckMultiQKV(Q, K, V, batch, config, options, &m));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("out", out, Q.rows, m.heads.num_heads * m.heads.d_v,
                                     "batch * T_q, the rows of Q", "num_heads * d_v"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("lse", lse, Q.rows * m.heads.num_heads, 1,
                                     "batch * num_heads * T_q", "one log-sum-exp per row"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckOutputs({{"out", out}, {"lse", lse}}, {{"Q", Q}, {"K", K}, {"V", V}}));
  internal::MultiGradTask job;
  FloatBuffer workspace;
  ATTNKIT_RETURN_IF_ERROR(PrepareMultiTask(Q, K, V, out, lse, m, options,
                                           internal::GradPasses::kForward, "Q", &job, &workspace));
  if (!ATTNKIT_GRAD_DISPATCH(MultiHeadForTrainingT)(job)) {
    return internal::OverflowStatus("Q", "the scores and outputs");
  }
  return Status::Ok();
}

Status MultiHeadAttentionQKVBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                                     ConstMatrixView O, ConstMatrixView dO, ConstMatrixView lse,
                                     size_t batch, const HeadConfig& config,
                                     const AttentionOptions& options, MatrixView dQ, MatrixView dK,
                                     MatrixView dV) {
  MultiShape m;
  ATTNKIT_RETURN_IF_ERROR(CheckMultiQKV(Q, K, V, batch, config, options, &m));
  ATTNKIT_RETURN_IF_ERROR(CheckMultiGradients(Q, K, V, dO, "dO", m, dQ, dK, dV));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("O", O, Q.rows, m.heads.num_heads * m.heads.d_v,
                                     "batch * T_q, the rows of Q", "num_heads * d_v"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("lse", lse, Q.rows * m.heads.num_heads, 1,
                                     "batch * num_heads * T_q", "one log-sum-exp per row"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("O", O));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("lse", lse, /*allow_neg_inf=*/true));
  ATTNKIT_RETURN_IF_ERROR(
      CheckOutputs({{"dQ", dQ}, {"dK", dK}, {"dV", dV}},
                   {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}, {"dO", dO}, {"lse", lse}}));
  // The kernel only reads O and lse without `recompute`.
  return RunMultiBackward(Q, K, V, Mutable(O), dO, Mutable(lse), /*recompute=*/false, m, options,
                          "dO", dQ, dK, dV);
}

Status MultiHeadAttentionQKVBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                                     ConstMatrixView dO, size_t batch, const HeadConfig& config,
                                     const AttentionOptions& options, MatrixView dQ, MatrixView dK,
                                     MatrixView dV) {
  MultiShape m;
  ATTNKIT_RETURN_IF_ERROR(CheckMultiQKV(Q, K, V, batch, config, options, &m));
  ATTNKIT_RETURN_IF_ERROR(CheckMultiGradients(Q, K, V, dO, "dO", m, dQ, dK, dV));
  ATTNKIT_RETURN_IF_ERROR(CheckOutputs({{"dQ", dQ}, {"dK", dK}, {"dV", dV}},
                                       {{"Q", Q}, {"K", K}, {"V", V}, {"dO", dO}}));
  Matrix O, lse;
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("Q", "O [batch * T_q, num_heads * d_v]", Q.rows,
                                             m.heads.num_heads * m.heads.d_v, &O));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("Q", "lse [batch * num_heads * T_q, 1]",
                                             Q.rows * m.heads.num_heads, 1, &lse));
  return RunMultiBackward(Q, K, V, O.view(), dO, lse.view(), /*recompute=*/true, m, options, "dO",
                          dQ, dK, dV);
}

namespace {

// The checks of MultiHeadAttentionBackward beyond X, the weights and the
// options: dOut [rows of X, d_out], the gradients' shapes and overlaps.
Status CheckLayerGradients(ConstMatrixView X, const MultiHeadWeights& w, size_t d_out,
                           ConstMatrixView dOut, const MultiHeadGradients& g) {
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dOut", dOut, X.rows, d_out, "batch * T, the rows of X",
                                     w.W_O.empty() ? "num_heads * d_v" : "the columns of W_O"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("dOut", dOut));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dX", g.dX, X.rows, X.cols, "batch * T, the rows of X",
                                     "d_model, the columns of X"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dW_Q", g.dW_Q, w.W_Q.rows, w.W_Q.cols, "the rows of W_Q", "the columns of W_Q"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dW_K", g.dW_K, w.W_K.rows, w.W_K.cols, "the rows of W_K", "the columns of W_K"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dW_V", g.dW_V, w.W_V.rows, w.W_V.cols, "the rows of W_V", "the columns of W_V"));
  std::vector<std::pair<const char*, MatrixView>> outputs = {
      {"dX", g.dX}, {"dW_Q", g.dW_Q}, {"dW_K", g.dW_K}, {"dW_V", g.dW_V}};
  std::vector<Named> inputs = {
      {"X", X}, {"W_Q", w.W_Q}, {"W_K", w.W_K}, {"W_V", w.W_V}, {"dOut", dOut}};
  if (w.W_O.empty()) {
    if (!g.dW_O.empty()) {
      return Status(ErrorCode::kInvalidArgument, "dW_O",
                    "expected an empty view without W_O, got " +
                        internal::ShapeString(g.dW_O.rows, g.dW_O.cols));
    }
  } else {
    ATTNKIT_RETURN_IF_ERROR(CheckShape("dW_O", g.dW_O, w.W_O.rows, w.W_O.cols, "the rows of W_O",
                                       "the columns of W_O"));
    outputs.push_back({"dW_O", g.dW_O});
    inputs.push_back({"W_O", w.W_O});
  }
  for (const auto& [name, out] : outputs) {
    for (const Named& in : inputs) {
      ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap(name, out, in.name, in.view));
    }
    for (const auto& [other_name, other] : outputs) {
      if (other_name == name) continue;
      ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap(name, out, other_name, other));
    }
  }
  return Status::Ok();
}

}  // namespace

Status MultiHeadAttentionBackward(ConstMatrixView X, size_t batch, const MultiHeadWeights& weights,
                                  const HeadConfig& config, const AttentionOptions& options,
                                  ConstMatrixView dOut, const MultiHeadGradients& grads) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("X", X));
  MultiShape m;
  ATTNKIT_RETURN_IF_ERROR(internal::ResolveHeads(config, X.cols, "d_model", 0, &m.heads));
  m.batch = batch;
  ATTNKIT_RETURN_IF_ERROR(internal::SequenceLength("X", X.rows, batch, &m.T_q));
  m.T_k = m.T_q;
  size_t d_out;
  ATTNKIT_RETURN_IF_ERROR(internal::CheckMultiHeadWeights(weights, X.cols, m.heads, &d_out));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("X", X));
  ATTNKIT_RETURN_IF_ERROR(CheckLayerGradients(X, weights, d_out, dOut, grads));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckKeyLengthCount(options, batch));
  ATTNKIT_RETURN_IF_ERROR(
      internal::CheckOptions(options, m.T_q, m.T_k, /*batched=*/true, batch, m.heads.num_heads));
  const size_t rows = X.rows, hk = m.heads.num_heads * m.heads.d_k;
  const size_t gk = m.heads.num_kv_heads * m.heads.d_k, gv = m.heads.num_kv_heads * m.heads.d_v;
  const size_t hv = m.heads.num_heads * m.heads.d_v;
  Matrix Q, K, V, merged, lse, dMerged, dQ, dK, dV;
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "Q [batch*T, num_heads*d_k]", rows, hk, &Q));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "K [batch*T, num_kv_heads*d_k]", rows, gk, &K));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "V [batch*T, num_kv_heads*d_v]", rows, gv, &V));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "merged heads", rows, hv, &merged));
  ATTNKIT_RETURN_IF_ERROR(
      internal::Allocate("X", "lse [batch*num_heads*T, 1]", rows * m.heads.num_heads, 1, &lse));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "dQ", rows, hk, &dQ));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "dK", rows, gk, &dK));
  ATTNKIT_RETURN_IF_ERROR(internal::Allocate("X", "dV", rows, gv, &dV));
  ThreadPool* pool = options.pool;
  ATTNKIT_RETURN_IF_ERROR(Product(X, weights.W_Q, Q.view(), false, "X", "Q = X W_Q", pool));
  ATTNKIT_RETURN_IF_ERROR(Product(X, weights.W_K, K.view(), false, "X", "K = X W_K", pool));
  ATTNKIT_RETURN_IF_ERROR(Product(X, weights.W_V, V.view(), false, "X", "V = X W_V", pool));
  // dMerged = dOut W_O^T (dOut itself without W_O).
  ConstMatrixView d_merged = dOut;
  if (!weights.W_O.empty()) {
    ATTNKIT_RETURN_IF_ERROR(internal::Allocate("dOut", "dMerged", rows, hv, &dMerged));
    ATTNKIT_RETURN_IF_ERROR(
        Product(dOut, weights.W_O, dMerged.view(), true, "dOut", "dMerged = dOut W_O^T", pool));
    d_merged = dMerged.view();
  }
  ATTNKIT_RETURN_IF_ERROR(RunMultiBackward(Q, K, V, merged.view(), d_merged, lse.view(),
                                           /*recompute=*/true, m, options, "dOut", dQ.view(),
                                           dK.view(), dV.view()));
  if (!weights.W_O.empty()) {
    Matrix merged_t;
    ATTNKIT_RETURN_IF_ERROR(Transpose("X", "merged heads transposed", merged, &merged_t));
    ATTNKIT_RETURN_IF_ERROR(
        Product(merged_t, dOut, grads.dW_O, false, "dOut", "dW_O = merged^T dOut", pool));
  }
  return ProjectionGradients(X, weights.W_Q, weights.W_K, weights.W_V, dQ, dK, dV, "dOut", pool,
                             grads.dX, grads.dW_Q, grads.dW_K, grads.dW_V);
}

}  // namespace attnkit
#endif  // HWY_ONCE
