// attnkit: single-head attention entry points. Each checks every argument,
// builds one AttentionJob and runs it through a single dispatch.
#include "attnkit/attention.h"

#include <utility>

#include "src/core/internal.h"
#include "src/core/plan.h"
#include "src/core/validate.h"

namespace attnkit {
namespace {

using internal::Allocate;
using internal::AllocateCopy;
using internal::AttentionJob;
using internal::CheckedProduct;
using internal::CheckFinite;
using internal::CheckNoOverlap;
using internal::CheckOptions;
using internal::CheckQKV;
using internal::CheckShape;
using internal::CheckView;
using internal::ScoreParamsOf;

// Allocates every [T_q, T_k] matrix of a trace.
// `parameter` names the input whose rows give T_q.
Status AllocateTraceScores(const char* parameter, size_t T_q, size_t T_k, AttentionTrace* trace) {
  for (Matrix* m :
       {&trace->raw_scores, &trace->scaled_scores, &trace->masked_scores, &trace->weights}) {
    ATTNKIT_RETURN_IF_ERROR(Allocate(parameter, "scores [T_q, T_k]", T_q, T_k, m));
  }
  return Status::Ok();
}

// The score stages of a trace, for the job (empty views without a trace).
internal::KeptStages KeptStagesOf(AttentionTrace* trace) {
  if (trace == nullptr) return {};
  return {trace->raw_scores.view(), trace->scaled_scores.view(), trace->masked_scores.view(),
          trace->weights.view()};
}

// Attention on given Q, K, V into `out`, or into trace->output when tracing.
// An overflowed score names `source`, an overflowed output `values`.
Status RunQKV(const char* source, const char* values, ConstMatrixView Q, ConstMatrixView K,
              ConstMatrixView V, const AttentionOptions& options, size_t default_scale_dim,
              MatrixView out, AttentionTrace* trace) {
  AttentionJob job;
  job.source = source;
  job.values = values;
  ATTNKIT_RETURN_IF_ERROR(CheckOptions(options, Q.rows, K.rows, /*batched=*/false, 1, 1));
  job.params = ScoreParamsOf(options, default_scale_dim);
  job.pool = options.pool;
  job.heads.push_back(internal::OneHead(Q, K, V, options, out));
  const internal::KeptStages keep = KeptStagesOf(trace);
  job.trace = trace ? &keep : nullptr;
  ATTNKIT_RETURN_IF_ERROR(internal::RunAttentionJob(job));
  if (trace) trace->scale = job.params.scale;
  return Status::Ok();
}

struct ProjectionNames {
  const char* X_q;
  const char* X_kv;
};

// Projects X_q and X_kv (which may be the same) and attends; writes `out`
// ([T_q, d_v]) or, with a trace, every intermediate.
Status RunProjected(ProjectionNames names, ConstMatrixView X_q, ConstMatrixView X_kv,
                    ConstMatrixView W_Q, ConstMatrixView W_K, ConstMatrixView W_V,
                    const AttentionOptions& options, MatrixView out, AttentionTrace* trace) {
  ATTNKIT_RETURN_IF_ERROR(CheckView(names.X_q, X_q));
  ATTNKIT_RETURN_IF_ERROR(CheckView(names.X_kv, X_kv));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("W_Q", W_Q, X_q.cols, W_Q.cols, "d_model, the columns of X", "d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("W_K", W_K, X_kv.cols, W_Q.cols, "d_model, the columns of X",
                                     "d_k, the columns of W_Q"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("W_V", W_V, X_kv.cols, W_V.cols, "d_model, the columns of X", "d_v"));
  const size_t T_q = X_q.rows, T_k = X_kv.rows, d_k = W_Q.cols, d_v = W_V.cols;
  if (!trace) {
    ATTNKIT_RETURN_IF_ERROR(
        CheckShape("out", out, T_q, d_v, "T, the rows of X", "d_v, the columns of W_V"));
    ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("out", out, names.X_q, X_q));
    ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("out", out, names.X_kv, X_kv));
  }
  ATTNKIT_RETURN_IF_ERROR(CheckFinite(names.X_q, X_q));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite(names.X_kv, X_kv));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("W_Q", W_Q));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("W_K", W_K));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("W_V", W_V));

  AttentionJob job;
  job.source = names.X_q;
  ATTNKIT_RETURN_IF_ERROR(CheckOptions(options, T_q, T_k, /*batched=*/false, 1, 1));
  job.params = ScoreParamsOf(options, d_k);
  job.pool = options.pool;
  // Intermediates are built here and handed over only on success.
  AttentionTrace local;
  AttentionTrace* t = &local;
  ATTNKIT_RETURN_IF_ERROR(Allocate(names.X_q, "Q [T_q, d_k]", T_q, d_k, &t->Q));
  ATTNKIT_RETURN_IF_ERROR(Allocate(names.X_kv, "K [T_k, d_k]", T_k, d_k, &t->K));
  ATTNKIT_RETURN_IF_ERROR(Allocate(names.X_kv, "V [T_k, d_v]", T_k, d_v, &t->V));
  if (trace) {
    ATTNKIT_RETURN_IF_ERROR(AllocateTraceScores(names.X_q, T_q, T_k, t));
    ATTNKIT_RETURN_IF_ERROR(Allocate(names.X_q, "output [T_q, d_v]", T_q, d_v, &t->output));
    ATTNKIT_RETURN_IF_ERROR(AllocateCopy(names.X_q, "X [T, d_model]", X_q, &t->X));
    out = t->output.view();
  }
  job.projections = {{X_q, W_Q, t->Q.view()}, {X_kv, W_K, t->K.view()}, {X_kv, W_V, t->V.view()}};
  internal::HeadTask task;
  task.Q = t->Q.view();
  task.K = t->K.view();
  task.V = t->V.view();
  task.out = out;
  internal::SetHeadMasks(options, 0, 0, &task);
  job.heads.push_back(task);
  const internal::KeptStages keep = KeptStagesOf(t);
  job.trace = trace ? &keep : nullptr;
  ATTNKIT_RETURN_IF_ERROR(internal::RunAttentionJob(job));
  if (trace) {
    t->scale = job.params.scale;
    *trace = std::move(local);
  }
  return Status::Ok();
}

}  // namespace

Status Attention(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                 const AttentionOptions& options, MatrixView out) {
  // Small calls: the lean path (plan.h), one dispatch and no allocation.
  if (internal::UseSmallPath(Q, K, V, options, out) &&
      internal::LeanPathDone(internal::RunSmallAttention(
          internal::OneHead(Q, K, V, options, out), ScoreParamsOf(options, Q.cols),
          /*check_inputs=*/true,
          internal::UseSmallKernelForAttention(Q.rows, K.rows, Q.cols, V.cols)))) {
    return Status::Ok();
  }
  ATTNKIT_RETURN_IF_ERROR(CheckQKV(Q, K, V));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("out", out, Q.rows, V.cols, "T_q, the rows of Q", "d_v, the columns of V"));
  ATTNKIT_RETURN_IF_ERROR(
      internal::CheckOutputsApart({{"out", out}}, {{"Q", Q}, {"K", K}, {"V", V}}));
  return RunQKV("Q", "V", Q, K, V, options, Q.cols, out, nullptr);
}

Status SelfAttention(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                     ConstMatrixView W_V, const AttentionOptions& options, MatrixView out) {
  return RunProjected({"X", "X"}, X, X, W_Q, W_K, W_V, options, out, nullptr);
}

Status CrossAttention(ConstMatrixView X_q, ConstMatrixView X_kv, ConstMatrixView W_Q,
                      ConstMatrixView W_K, ConstMatrixView W_V, const AttentionOptions& options,
                      MatrixView out) {
  return RunProjected({"X_q", "X_kv"}, X_q, X_kv, W_Q, W_K, W_V, options, out, nullptr);
}

Status ParameterFreeAttention(ConstMatrixView X, const AttentionOptions& options, MatrixView out) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("X", X));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("out", out, X.rows, X.cols, "T, the rows of X", "d_model, the columns of X"));
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("out", out, "X", X));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("X", X));
  return RunQKV("X", "X", X, X, X, options, X.cols, out, nullptr);
}

Status TraceAttention(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                      ConstMatrixView W_V, const AttentionOptions& options, AttentionTrace* trace) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("trace", trace));
  return RunProjected({"X", "X"}, X, X, W_Q, W_K, W_V, options, MatrixView(), trace);
}

Status TraceAttentionQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                         const AttentionOptions& options, AttentionTrace* trace) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("trace", trace));
  ATTNKIT_RETURN_IF_ERROR(CheckQKV(Q, K, V));
  AttentionTrace t;
  ATTNKIT_RETURN_IF_ERROR(AllocateTraceScores("Q", Q.rows, K.rows, &t));
  ATTNKIT_RETURN_IF_ERROR(Allocate("Q", "output [T_q, d_v]", Q.rows, V.cols, &t.output));
  ATTNKIT_RETURN_IF_ERROR(AllocateCopy("Q", "Q [T_q, d_k]", Q, &t.Q));
  ATTNKIT_RETURN_IF_ERROR(AllocateCopy("K", "K [T_k, d_k]", K, &t.K));
  ATTNKIT_RETURN_IF_ERROR(AllocateCopy("V", "V [T_k, d_v]", V, &t.V));
  ATTNKIT_RETURN_IF_ERROR(RunQKV("Q", "V", t.Q, t.K, t.V, options, Q.cols, t.output.view(), &t));
  *trace = std::move(t);
  return Status::Ok();
}

}  // namespace attnkit
