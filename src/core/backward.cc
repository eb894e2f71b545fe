// attnkit: the public gradient operations (backward.h). Each checks every
// argument, then computes through one dispatch to the best SIMD target per
// pass: the training forward is the fused kernel of dispatch.cc (an
// AttentionJob whose heads keep their log-sum-exp); the backward's kernels
// (backward-inl.h) compile for every target in files of their own
// (backward-kernels-inl.h), whose entry points this file's tables dispatch to.
#include "attnkit/backward.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "src/core/heads.h"
#include "src/core/internal.h"
#include "src/core/plan.h"
#include "src/core/scratch.h"
#include "src/core/validate.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/core/backward.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "src/core/backward-kernels-inl.h"

#if HWY_ONCE
namespace attnkit {

HWY_EXPORT(AttentionBackwardT);
HWY_EXPORT(MultiHeadBackwardT);
HWY_EXPORT(SmallBackwardT);

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

using internal::CheckOutputsApart;
using internal::NamedView;
using internal::ScratchMatrix;

// A call's temporary [rows, cols] matrix, every float written before it is
// read (scratch.h).
Status Scratch(const char* parameter, const char* what, size_t rows, size_t cols,
               ScratchMatrix* m) {
  return internal::AllocateScratch(parameter, what, rows, cols, /*zero=*/false, m);
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

// The training forward of one head into out and lse, with checked options:
// the fused kernel, as Attention runs it, keeping each row's log-sum-exp; a
// small head on the lean path's small-shape kernel (the fused kernel's sums,
// without a job, a plan or an allocation).
Status RunForTraining(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                      const AttentionOptions& options, MatrixView out, MatrixView lse) {
  if (internal::UseSmallKernel(Q.rows, K.rows, Q.cols, V.cols) &&
      internal::LeanPathDone(internal::RunSmallAttention(
          internal::OneHead(Q, K, V, options, out, lse), internal::ScoreParamsOf(options, Q.cols),
          /*check_inputs=*/false, /*small_kernel=*/true))) {
    return Status::Ok();
  }
  internal::AttentionJob job;
  job.params = internal::ScoreParamsOf(options, Q.cols);
  job.pool = options.pool;
  job.heads.push_back(internal::OneHead(Q, K, V, options, out, lse));
  return internal::RunAttentionJob(job);
}

// The workspace of a small call's gradients (64 KiB), kept per thread: the
// small backward's (kSmallGradFloats), or a small layout's.
constexpr size_t kSmallWorkspaceFloats = 16384;
static_assert(internal::kSmallGradFloats <= kSmallWorkspaceFloats,
              "the small backward's workspace fits the thread's");
float* SmallWorkspace() {
  alignas(64) thread_local float small_workspace[kSmallWorkspaceFloats];
  return small_workspace;
}

// The workspace of a backward whose packed operands take `floats`: this
// thread's small block, else `owned` (scratch kept by the thread between
// calls). Null if the memory is not there. The calling thread's small block
// serves one call at a time: no backward runs inside another's tasks.
float* GradWorkspace(size_t floats, internal::ScratchBuffer* owned) {
  if (floats <= kSmallWorkspaceFloats) return SmallWorkspace();
  return owned->Allocate(floats) ? owned->data() : nullptr;
}

// The lean paths of small calls, as Attention's (plan.h, UseSmallPath): true
// if every check of the call but its inputs' finiteness would pass (the
// checks' twins of validate.h, in the checked path's order) and the small
// kernels take it. The one dispatch then checks the inputs' finiteness; any
// failure goes to the checked path, which names it in its own order.
bool UseLeanTraining(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                     const AttentionOptions& options, MatrixView out, MatrixView lse) {
  using internal::ShapeUsable;
  const size_t T_q = Q.rows, T_k = K.rows, d_k = Q.cols, d_v = V.cols;
  return internal::QKVUsable(Q, K, V) && ShapeUsable(out, T_q, d_v) && ShapeUsable(lse, T_q, 1) &&
         internal::UseSmallKernel(T_q, T_k, d_k, d_v) &&
         internal::OutputsApart({{"out", out}, {"lse", lse}}, {{"Q", Q}, {"K", K}, {"V", V}}) &&
         internal::CheckOptions(options, T_q, T_k, /*batched=*/false, 1, 1).ok();
}

bool UseLeanBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, ConstMatrixView O,
                     ConstMatrixView dO, ConstMatrixView lse, const AttentionOptions& options,
                     MatrixView dQ, MatrixView dK, MatrixView dV) {
  using internal::ShapeUsable;
  const size_t T_q = Q.rows, T_k = K.rows, d_k = Q.cols, d_v = V.cols;
  return internal::QKVUsable(Q, K, V) && ShapeUsable(dO, T_q, d_v) && ShapeUsable(dQ, T_q, d_k) &&
         ShapeUsable(dK, T_k, d_k) && ShapeUsable(dV, T_k, d_v) && ShapeUsable(O, T_q, d_v) &&
         ShapeUsable(lse, T_q, 1) && internal::UseSmallBackward(T_q, T_k, d_k, d_v) &&
         internal::OutputsApart(
             {{"dQ", dQ}, {"dK", dK}, {"dV", dV}},
             {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}, {"dO", dO}, {"lse", lse}}) &&
         internal::CheckOptions(options, T_q, T_k, /*batched=*/false, 1, 1).ok();
}

// Checks and runs the backward from the forward's O and lse (`recompute`:
// the training forward fills them first).
Status RunBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, MatrixView O,
                   ConstMatrixView dO, MatrixView lse, bool recompute,
                   const AttentionOptions& options, MatrixView dQ, MatrixView dK, MatrixView dV) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckOptions(options, Q.rows, K.rows, /*batched=*/false, 1, 1));
  if (recompute) {
    // An overflow of the recomputed forward is the backward's, named "dO" as
    // the saved-forward overload names it.
    const Status forward = RunForTraining(Q, K, V, options, O, lse);
    if (forward.code() == ErrorCode::kOverflow) {
      return internal::OverflowStatus("dO", "the gradients dQ, dK and dV");
    }
    ATTNKIT_RETURN_IF_ERROR(forward);
  }
  internal::GradTask task;
  task.params = internal::ScoreParamsOf(options, Q.cols);
  task.head = internal::OneHead(Q, K, V, options, O, lse);
  task.pool = internal::PoolFor(options.pool,
                                internal::BackwardMultiplyAdds(Q.rows, K.rows, Q.cols, V.cols));
  task.dO = dO;
  task.dQ = dQ;
  task.dK = dK;
  task.dV = dV;
  // The smallest calls take the small backward, which needs no layout.
  const size_t threads = task.pool ? task.pool->num_threads() : 1;
  const uint64_t max_floats =
      std::numeric_limits<size_t>::max() / sizeof(float) / 2;  // room for size arithmetic
  internal::ScratchBuffer workspace;
  if (internal::UseSmallBackward(Q.rows, K.rows, Q.cols, V.cols)) {
    task.small = true;
    task.workspace = SmallWorkspace();
  } else if (!internal::PlanGradLayout(Q.rows, K.rows, Q.cols, V.cols, threads, max_floats,
                                       &task.layout) ||
             (task.workspace = GradWorkspace(task.layout.total, &workspace)) == nullptr) {
    return internal::OutOfMemory("dO", "the packed operands of the gradients", task.layout.total);
  }
  // The small backward through its own entry (inputs checked again, in one
  // pass each), so that its kernel is compiled once.
  const bool ok = task.small ? internal::LeanPathDone(ATTNKIT_GRAD_DISPATCH(SmallBackwardT)(task))
                             : ATTNKIT_GRAD_DISPATCH(AttentionBackwardT)(task);
  if (!ok) return internal::OverflowStatus("dO", "the gradients dQ, dK and dV");
  return Status::Ok();
}

}  // namespace

Status AttentionForTraining(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                            const AttentionOptions& options, MatrixView out, MatrixView lse) {
  if (UseLeanTraining(Q, K, V, options, out, lse) &&
      internal::LeanPathDone(internal::RunSmallAttention(
          internal::OneHead(Q, K, V, options, out, lse), internal::ScoreParamsOf(options, Q.cols),
          /*check_inputs=*/true, /*small_kernel=*/true))) {
    return Status::Ok();
  }
  ATTNKIT_RETURN_IF_ERROR(CheckQKV(Q, K, V));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("out", out, Q.rows, V.cols, "T_q, the rows of Q", "d_v, the columns of V"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("lse", lse, Q.rows, 1, "T_q, the rows of Q", "one log-sum-exp per row"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckOutputsApart({{"out", out}, {"lse", lse}}, {{"Q", Q}, {"K", K}, {"V", V}}));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckOptions(options, Q.rows, K.rows, /*batched=*/false, 1, 1));
  return RunForTraining(Q, K, V, options, out, lse);
}

Status AttentionBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, ConstMatrixView O,
                         ConstMatrixView dO, ConstMatrixView lse, const AttentionOptions& options,
                         MatrixView dQ, MatrixView dK, MatrixView dV) {
  if (UseLeanBackward(Q, K, V, O, dO, lse, options, dQ, dK, dV)) {
    // The kernel only reads O and lse.
    internal::GradTask task;
    task.params = internal::ScoreParamsOf(options, Q.cols);
    task.head = internal::OneHead(
        Q, K, V, options, MatrixView(const_cast<float*>(O.data), O.rows, O.cols, O.stride),
        MatrixView(const_cast<float*>(lse.data), lse.rows, lse.cols, lse.stride));
    task.dO = dO;
    task.dQ = dQ;
    task.dK = dK;
    task.dV = dV;
    task.small = true;
    task.workspace = SmallWorkspace();
    if (internal::LeanPathDone(ATTNKIT_GRAD_DISPATCH(SmallBackwardT)(task))) return Status::Ok();
  }
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
      CheckOutputsApart({{"dQ", dQ}, {"dK", dK}, {"dV", dV}},
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
  ATTNKIT_RETURN_IF_ERROR(CheckOutputsApart({{"dQ", dQ}, {"dK", dK}, {"dV", dV}},
                                            {{"Q", Q}, {"K", K}, {"V", V}, {"dO", dO}}));
  ScratchMatrix O, lse;
  ATTNKIT_RETURN_IF_ERROR(Scratch("Q", "O [T_q, d_v]", T_q, d_v, &O));
  ATTNKIT_RETURN_IF_ERROR(Scratch("Q", "lse [T_q, 1]", T_q, 1, &lse));
  return RunBackward(Q, K, V, O.view(), dO, lse.view(), /*recompute=*/true, options, dQ, dK, dV);
}

namespace {

using MultiShape = internal::MultiHeadShape;

// The pool a multi-head call's checks of its inputs' values split over: the
// call's, if its heads' forward is large enough for it (PoolFor).
ThreadPool* ChecksPool(const MultiShape& m, const AttentionOptions& options) {
  const internal::Heads& h = m.heads;
  return internal::PoolFor(
      options.pool,
      double(m.batch * h.num_heads) * internal::ForwardMultiplyAdds(m.T_q, m.T_k, h.d_k, h.d_v));
}

// Q, K and V as MultiHeadAttentionQKV checks them (CheckMultiHeadQKV, then
// their values), and the options.
Status CheckMultiQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                     const HeadConfig& config, const AttentionOptions& options, MultiShape* m) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckMultiHeadQKV(Q, K, V, batch, config, m));
  ThreadPool* const pool = ChecksPool(*m, options);
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("Q", Q, false, pool));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("K", K, false, pool));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("V", V, false, pool));
  return internal::CheckOptions(options, m->T_q, m->T_k, /*batched=*/true, batch,
                                m->heads.num_heads);
}

// dO shaped as the output (m.OutCols) finite, dQ, dK, dV shaped as Q, K, V;
// `pool` splits the check of dO's values (ChecksPool).
Status CheckMultiGradients(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                           ConstMatrixView dO, const char* dO_name, const MultiShape& m,
                           ThreadPool* pool, MatrixView dQ, MatrixView dK, MatrixView dV) {
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape(dO_name, dO, Q.rows, m.OutCols(), m.OutRowsNote(), m.OutColsNote()));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dQ", dQ, Q.rows, Q.cols, "the rows of Q", "the columns of Q"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dK", dK, K.rows, K.cols, "the rows of K", "the columns of K"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dV", dV, V.rows, V.cols, "the rows of V", "the columns of V"));
  return CheckFinite(dO_name, dO, false, pool);
}

// One head task per (item, query head) of checked Q, K and V in m's layout,
// tasks[b * num_heads + h], with its masks, its block of O (shaped as the
// output) and its rows of lse [B*h*T_q, 1].
std::vector<internal::HeadTask> MultiHeadTasks(ConstMatrixView Q, ConstMatrixView K,
                                               ConstMatrixView V, MatrixView O, MatrixView lse,
                                               const MultiShape& m,
                                               const AttentionOptions& options) {
  const internal::Heads& heads = m.heads;
  std::vector<internal::HeadTask> tasks;
  internal::AddHeadTasks(
      Q, O, m.batch, m.T_q, m.T_k, heads, options,
      [&](size_t b, size_t g, ConstMatrixView* k, ConstMatrixView* v) {
        *k = m.KeyHead(K, b, g, heads.d_k);
        *v = m.KeyHead(V, b, g, heads.d_v);
      },
      &tasks);
  for (size_t k = 0; k < tasks.size(); ++k) tasks[k].lse = lse.Block(k * m.T_q, m.T_q, 0, 1);
  return tasks;
}

// The training forward of every head into O and lse: the fused kernel, as
// MultiHeadAttentionQKV runs it, keeping each row's log-sum-exp.
Status RunMultiForTraining(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, MatrixView O,
                           MatrixView lse, const MultiShape& m, const AttentionOptions& options) {
  internal::AttentionJob job;
  job.params = internal::ScoreParamsOf(options, m.heads.d_k);
  job.pool = options.pool;
  job.heads = MultiHeadTasks(Q, K, V, O, lse, m, options);
  return internal::RunAttentionJob(job);
}

// One GradTask per head task (MultiHeadTasks); the workspace (GradWorkspace:
// the thread's, or `buffer`) holds the packed operands of the heads in flight
// (GroupsInFlight) and the threads' blocks.
Status PrepareMultiTask(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, MatrixView O,
                        MatrixView lse, const MultiShape& m, const AttentionOptions& options,
                        const char* source, internal::MultiGradTask* job,
                        internal::ScratchBuffer* buffer) {
  const internal::Heads& heads = m.heads;
  const std::vector<internal::HeadTask> head_tasks = MultiHeadTasks(Q, K, V, O, lse, m, options);
  const size_t n = head_tasks.size();
  ThreadPool* const pool = internal::PoolFor(
      options.pool, double(n) * internal::BackwardMultiplyAdds(m.T_q, m.T_k, heads.d_k, heads.d_v));
  const size_t threads = pool ? pool->num_threads() : 1;
  const size_t groups = n / heads.group();
  const size_t in_flight_groups = internal::GroupsInFlight(groups, threads);
  const uint64_t max_floats = std::numeric_limits<size_t>::max() / sizeof(float) / 2;
  internal::GradLayout layout;
  const bool fits =
      internal::PlanGradLayout(m.T_q, m.T_k, heads.d_k, heads.d_v, threads, max_floats, &layout);
  // The heads in flight and the threads are few, each region below
  // max_floats: the sum fits in 64 bits.
  const uint64_t in_flight = static_cast<uint64_t>(in_flight_groups) * heads.group();
  const uint64_t total =
      in_flight * layout.threads_at + static_cast<uint64_t>(threads) * layout.thread_floats;
  float* const workspace =
      fits && total <= max_floats ? GradWorkspace(static_cast<size_t>(total), buffer) : nullptr;
  if (workspace == nullptr) {
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
  }
  job->group = heads.group();
  job->whole_groups = internal::WholeGroups(groups, threads);
  job->shared = workspace;
  job->threads = workspace + in_flight * layout.threads_at;
  job->pool = pool;
  return Status::Ok();
}

// Runs the checked multi-head backward from the forward's O and lse
// (`recompute`: the training forward fills them first). `source` names dO in
// errors.
Status RunMultiBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, MatrixView O,
                        ConstMatrixView dO, MatrixView lse, bool recompute, const MultiShape& m,
                        const AttentionOptions& options, const char* source, MatrixView dQ,
                        MatrixView dK, MatrixView dV) {
  if (recompute) ATTNKIT_RETURN_IF_ERROR(RunMultiForTraining(Q, K, V, O, lse, m, options));
  internal::MultiGradTask job;
  internal::ScratchBuffer workspace;
  ATTNKIT_RETURN_IF_ERROR(PrepareMultiTask(Q, K, V, O, lse, m, options, source, &job, &workspace));
  const internal::Heads& heads = m.heads;
  for (size_t k = 0; k < job.tasks.size(); ++k) {
    const size_t b = k / heads.num_heads, h = k % heads.num_heads, g = h / heads.group();
    internal::GradTask& t = job.tasks[k];
    t.dO = m.QueryHead(dO, b, h, heads.d_v);
    t.dQ = m.QueryHead(dQ, b, h, heads.d_k);
    t.dK = m.KeyHead(dK, b, g, heads.d_k);
    t.dV = m.KeyHead(dV, b, g, heads.d_v);
  }
  if (!ATTNKIT_GRAD_DISPATCH(MultiHeadBackwardT)(job)) {
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
  for (const NamedView& in :
       {NamedView{"X", X}, {"W_Q", W_Q}, {"W_K", W_K}, {"W_V", W_V}, {"dO", dO}}) {
    ATTNKIT_RETURN_IF_ERROR(CheckFinite(in.name, in.view));
  }
  ATTNKIT_RETURN_IF_ERROR(CheckOutputsApart(
      {{"dX", grads.dX}, {"dW_Q", grads.dW_Q}, {"dW_K", grads.dW_K}, {"dW_V", grads.dW_V}},
      {{"X", X}, {"W_Q", W_Q}, {"W_K", W_K}, {"W_V", W_V}, {"dO", dO}}));
  ScratchMatrix Q, K, V, O, lse, dQ, dK, dV;
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "Q [T, d_k]", T, d_k, &Q));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "K [T, d_k]", T, d_k, &K));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "V [T, d_v]", T, d_v, &V));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "O [T, d_v]", T, d_v, &O));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "lse [T, 1]", T, 1, &lse));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "dQ [T, d_k]", T, d_k, &dQ));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "dK [T, d_k]", T, d_k, &dK));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "dV [T, d_v]", T, d_v, &dV));
  ATTNKIT_RETURN_IF_ERROR(
      internal::Product(X, W_Q, Q.view(), false, "X", "Q = X W_Q", options.pool));
  ATTNKIT_RETURN_IF_ERROR(
      internal::Product(X, W_K, K.view(), false, "X", "K = X W_K", options.pool));
  ATTNKIT_RETURN_IF_ERROR(
      internal::Product(X, W_V, V.view(), false, "X", "V = X W_V", options.pool));
  ATTNKIT_RETURN_IF_ERROR(RunBackward(Q, K, V, O.view(), dO, lse.view(), /*recompute=*/true,
                                      options, dQ.view(), dK.view(), dV.view()));
  return internal::RunProjectionBackward(X, W_Q, W_K, W_V, dQ, dK, dV, "dO", options.pool, grads.dX,
                                         grads.dW_Q, grads.dW_K, grads.dW_V);
}

Status MultiHeadAttentionQKVForTraining(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                                        size_t batch, const HeadConfig& config,
                                        const AttentionOptions& options, MatrixView out,
                                        MatrixView lse) {
  MultiShape m;
  ATTNKIT_RETURN_IF_ERROR(CheckMultiQKV(Q, K, V, batch, config, options, &m));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("out", out, Q.rows, m.OutCols(), m.OutRowsNote(), m.OutColsNote()));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("lse", lse, m.query_head_rows, 1, "batch * num_heads * T_q",
                                     "one log-sum-exp per row"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckOutputsApart({{"out", out}, {"lse", lse}}, {{"Q", Q}, {"K", K}, {"V", V}}));
  return RunMultiForTraining(Q, K, V, out, lse, m, options);
}

Status MultiHeadAttentionQKVBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                                     ConstMatrixView O, ConstMatrixView dO, ConstMatrixView lse,
                                     size_t batch, const HeadConfig& config,
                                     const AttentionOptions& options, MatrixView dQ, MatrixView dK,
                                     MatrixView dV) {
  MultiShape m;
  ATTNKIT_RETURN_IF_ERROR(CheckMultiQKV(Q, K, V, batch, config, options, &m));
  ThreadPool* const pool = ChecksPool(m, options);
  ATTNKIT_RETURN_IF_ERROR(CheckMultiGradients(Q, K, V, dO, "dO", m, pool, dQ, dK, dV));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("O", O, Q.rows, m.OutCols(), m.OutRowsNote(), m.OutColsNote()));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("lse", lse, m.query_head_rows, 1, "batch * num_heads * T_q",
                                     "one log-sum-exp per row"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("O", O, false, pool));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("lse", lse, /*allow_neg_inf=*/true, pool));
  ATTNKIT_RETURN_IF_ERROR(
      CheckOutputsApart({{"dQ", dQ}, {"dK", dK}, {"dV", dV}},
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
  ATTNKIT_RETURN_IF_ERROR(
      CheckMultiGradients(Q, K, V, dO, "dO", m, ChecksPool(m, options), dQ, dK, dV));
  ATTNKIT_RETURN_IF_ERROR(CheckOutputsApart({{"dQ", dQ}, {"dK", dK}, {"dV", dV}},
                                            {{"Q", Q}, {"K", K}, {"V", V}, {"dO", dO}}));
  ScratchMatrix O, lse;
  ATTNKIT_RETURN_IF_ERROR(Scratch("Q", "O, shaped as the output", Q.rows, m.OutCols(), &O));
  ATTNKIT_RETURN_IF_ERROR(
      Scratch("Q", "lse [batch * num_heads * T_q, 1]", m.query_head_rows, 1, &lse));
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
  std::vector<NamedView> outputs = {
      {"dX", g.dX}, {"dW_Q", g.dW_Q}, {"dW_K", g.dW_K}, {"dW_V", g.dW_V}};
  std::vector<NamedView> inputs = {
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
  return CheckOutputsApart(outputs.data(), outputs.data() + outputs.size(), inputs.data(),
                           inputs.data() + inputs.size());
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
  ATTNKIT_RETURN_IF_ERROR(
      internal::CheckOptions(options, m.T_q, m.T_k, /*batched=*/true, batch, m.heads.num_heads));
  const size_t rows = X.rows, hk = m.heads.num_heads * m.heads.d_k;
  const size_t gk = m.heads.num_kv_heads * m.heads.d_k, gv = m.heads.num_kv_heads * m.heads.d_v;
  const size_t hv = m.heads.num_heads * m.heads.d_v;
  ScratchMatrix Q, K, V, merged, lse, dMerged, dQ, dK, dV;
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "Q [batch*T, num_heads*d_k]", rows, hk, &Q));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "K [batch*T, num_kv_heads*d_k]", rows, gk, &K));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "V [batch*T, num_kv_heads*d_v]", rows, gv, &V));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "merged heads", rows, hv, &merged));
  ATTNKIT_RETURN_IF_ERROR(
      Scratch("X", "lse [batch*num_heads*T, 1]", rows * m.heads.num_heads, 1, &lse));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "dQ", rows, hk, &dQ));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "dK", rows, gk, &dK));
  ATTNKIT_RETURN_IF_ERROR(Scratch("X", "dV", rows, gv, &dV));
  ThreadPool* pool = options.pool;
  ATTNKIT_RETURN_IF_ERROR(
      internal::Product(X, weights.W_Q, Q.view(), false, "X", "Q = X W_Q", pool));
  ATTNKIT_RETURN_IF_ERROR(
      internal::Product(X, weights.W_K, K.view(), false, "X", "K = X W_K", pool));
  ATTNKIT_RETURN_IF_ERROR(
      internal::Product(X, weights.W_V, V.view(), false, "X", "V = X W_V", pool));
  // dMerged = dOut W_O^T (dOut itself without W_O).
  ConstMatrixView d_merged = dOut;
  if (!weights.W_O.empty()) {
    ATTNKIT_RETURN_IF_ERROR(Scratch("dOut", "dMerged", rows, hv, &dMerged));
    ATTNKIT_RETURN_IF_ERROR(internal::Product(dOut, weights.W_O, dMerged.view(), true, "dOut",
                                              "dMerged = dOut W_O^T", pool));
    d_merged = dMerged.view();
  }
  ATTNKIT_RETURN_IF_ERROR(RunMultiBackward(Q, K, V, merged.view(), d_merged, lse.view(),
                                           /*recompute=*/true, m, options, "dOut", dQ.view(),
                                           dK.view(), dV.view()));
  if (!weights.W_O.empty()) {
    ScratchMatrix merged_t;
    ATTNKIT_RETURN_IF_ERROR(internal::Transpose("X", "merged heads transposed", merged, &merged_t));
    ATTNKIT_RETURN_IF_ERROR(
        internal::Product(merged_t, dOut, grads.dW_O, false, "dOut", "dW_O = merged^T dOut", pool));
  }
  return internal::RunProjectionBackward(X, weights.W_Q, weights.W_K, weights.W_V, dQ, dK, dV,
                                         "dOut", pool, grads.dX, grads.dW_Q, grads.dW_K,
                                         grads.dW_V);
}

}  // namespace attnkit
#endif  // HWY_ONCE
