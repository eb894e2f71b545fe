// attnkit: the planner (plan.h). Plain C++: no SIMD, run once per call
// before the one dispatch.
#include "src/core/plan.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "src/core/validate.h"

namespace attnkit {
namespace internal {

namespace {

std::optional<HeadPath> forced_path;  // see ForceHeadPathForTest

// Rows [0, rows) of projection `index` in tasks of kTaskRows.
void AddProjectionWork(size_t index, size_t rows, std::vector<ProjectionWork>* work) {
  for (size_t r = 0; r < rows; r += kTaskRows) {
    work->push_back({index, r, std::min(rows, r + kTaskRows)});
  }
}

// Picks head h's path, adds its tasks and sets *floats to the scratch it
// needs per thread: a score row [T_k] on the kRows path, the packed K^T and V
// ([d_k + d_v rounded up to a panel, T_k rounded up to the tile]) and a
// task's queries packed ([kTaskQueries, d_k]) on the fused path, a chunk of
// scores on the split-K path. Split-K partials, [chunks, T_q, 2 + d_v] per
// head of more than one chunk, are counted in *partials.
Status PlanHead(const AttentionJob& job, size_t h, AttentionPlan* plan, size_t* floats,
                size_t* partials) {
  const HeadTask& t = job.heads[h];
  const bool rows = job.trace != nullptr || job.keep_stage != KeepStage::kNone;
  // The training forward (a head that keeps its log-sum-exp) is fused only:
  // the backward recomputes P = exp(S - lse) with the fused kernel's GEMM and
  // exp, so lse must come from the same sums, or large logits give P != 1.
  const bool training = !t.lse.empty();
  // A head that keeps its weights takes split-K, where they are a by-product.
  const bool fused =
      !rows && (training || (t.weights.empty() &&
                             (forced_path ? *forced_path == HeadPath::kFused
                                          : UseFusedPath(t.Q.rows, t.K.rows, t.K.cols, t.V.cols))));
  if (rows) {
    plan->heads[h].path = HeadPath::kRows;
    *floats = t.K.rows;
    if (!job.trace) plan->head_work.push_back({h, 0, t.Q.rows});
  } else if (fused) {
    plan->heads[h].path = HeadPath::kFused;
    // At most kSmallMaxQueries <= kTaskQueries queries: one task below.
    static_assert(kSmallMaxQueries <= kTaskQueries, "a small head is one task");
    plan->heads[h].small = UseSmallKernel(t.Q.rows, t.K.rows, t.K.cols, t.V.cols);
    const size_t packed_rows = t.K.cols + RoundUp(t.V.cols, kMaxPanel);
    ATTNKIT_RETURN_IF_ERROR(CheckedProduct(job.source, "packed K^T and V [d_k + d_v, T_k]",
                                           packed_rows, RoundUp(t.K.rows, kFlashTileKeys), floats));
    // kTaskQueries * d_k < *floats: no overflow in the product.
    static_assert(kTaskQueries <= kFlashTileKeys, "a task's queries take less room than K^T");
    const size_t queries = kTaskQueries * t.K.cols;
    if (*floats > std::numeric_limits<size_t>::max() - queries) {
      return OutOfMemory(job.source, "packed queries", *floats);
    }
    *floats += queries;
    for (size_t r = 0; r < t.Q.rows; r += kTaskQueries) {
      plan->head_work.push_back({h, r, std::min(t.Q.rows, r + kTaskQueries)});
    }
  } else {
    plan->heads[h].path = HeadPath::kSplitK;
    *floats = kDecodeChunkKeys;
    const size_t chunks = DecodeChunks(t.K.rows);
    for (size_t c = 0; c < chunks; ++c) plan->head_work.push_back({h, c, c + 1});
    if (chunks == 1) return Status::Ok();  // the whole head in place: no partials
    size_t head_partials;                  // chunks * T_q: split-K heads have few queries per key
    ATTNKIT_RETURN_IF_ERROR(CheckedProduct(job.source, "split-K partials", chunks * t.Q.rows,
                                           2 + t.V.cols, &head_partials));
    plan->heads[h].partials_at = *partials;
    *partials += head_partials;
  }
  return Status::Ok();
}

// Room for the weights of projections with enough rows, packed in panels
// ([K, N] rounded up to the widest panel), from offset *shared on: sets
// *at (the offset, or max for none) and advances *shared. Weights packed
// once (p.panels) need none.
Status PlanPacking(const AttentionJob& job, const Projection& p, size_t* shared, size_t* at) {
  *at = std::numeric_limits<size_t>::max();
  if (p.src.rows < kPackMinRows || p.panels != nullptr) return Status::Ok();
  size_t n;
  ATTNKIT_RETURN_IF_ERROR(
      CheckedProduct(job.source, "packed weights", p.W.rows, RoundUp(p.W.cols, kMaxPanel), &n));
  if (n > std::numeric_limits<size_t>::max() - *shared) {
    return OutOfMemory(job.source, "packed weights", n);
  }
  *at = *shared;
  *shared += n;
  return Status::Ok();
}

}  // namespace

void ForceHeadPathForTest(std::optional<HeadPath> path) { forced_path = path; }

bool UseSmallKernel(size_t T_q, size_t T_k, size_t d_k, size_t d_v) {
  return !forced_path && T_q <= kSmallMaxQueries && T_k <= kSmallMaxKeys && d_k <= kSmallMaxDim &&
         d_v <= kSmallMaxDim;
}

bool UseSmallBackward(size_t T_q, size_t T_k, size_t d_k, size_t d_v) {
  return !forced_path && T_q <= kGradQueryBlock && T_k <= kGradKeyBlock && d_k <= kSmallMaxDim &&
         d_v <= kSmallMaxDim;
}

bool UseSmallPath(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                  const AttentionOptions& options, MatrixView out) {
  if (forced_path) return false;  // a test asked for a path of the general one
  const size_t T_q = Q.rows, T_k = K.rows, d_k = Q.cols, d_v = V.cols;
  if (!QKVUsable(Q, K, V) || !ShapeUsable(out, T_q, d_v)) return false;
  // The small-shape kernel, or else split-K with one chunk where the general
  // path would take it.
  const bool small = UseSmallKernelForAttention(T_q, T_k, d_k, d_v);
  if (!small && (T_k > kDecodeChunkKeys || UseFusedPath(T_q, T_k, d_k, d_v))) return false;
  // One output: OutputsApart's tests, without its lists (a tenth of a
  // one-token call).
  return Disjoint(out, Q) && Disjoint(out, K) && Disjoint(out, V) &&
         CheckOptions(options, T_q, T_k, /*batched=*/false, 1, 1).ok();
}

Status PlanAttention(const AttentionJob& job, AttentionPlan* plan) {
  for (size_t i = 0; i < job.projections.size(); ++i) {
    AddProjectionWork(i, job.projections[i].dst.rows, &plan->projection_work);
  }
  if (!job.output.W.empty()) AddProjectionWork(0, job.output.dst.rows, &plan->output_work);
  size_t floats = 0, partials = 0;
  plan->heads.assign(job.heads.size(), HeadPlan());
  for (size_t h = 0; h < job.heads.size(); ++h) {
    size_t n = 0;
    ATTNKIT_RETURN_IF_ERROR(PlanHead(job, h, plan, &n, &partials));
    floats = std::max(floats, n);
  }
  // In WebAssembly a projection that reads W in panels packs a task's rows of
  // X first (MatMulPackedRows in steps-inl.h): [kTaskRows, K] per thread.
#if defined(__wasm__)
  const auto rows_room = [&](const Projection& p) -> Status {
    if (p.W.empty() || (p.panels == nullptr && p.src.rows < kPackMinRows)) return Status::Ok();
    size_t n;
    ATTNKIT_RETURN_IF_ERROR(
        CheckedProduct(job.source, "a task's rows packed", kTaskRows, p.src.cols, &n));
    floats = std::max(floats, n);
    return Status::Ok();
  };
  for (const Projection& p : job.projections) ATTNKIT_RETURN_IF_ERROR(rows_room(p));
  ATTNKIT_RETURN_IF_ERROR(rows_room(job.output));
#endif
  // After the partials: the packed weights of the projections, then of the
  // output projection.
  size_t shared = partials;
  std::vector<size_t> packed_at(job.projections.size());
  for (size_t i = 0; i < job.projections.size(); ++i) {
    ATTNKIT_RETURN_IF_ERROR(PlanPacking(job, job.projections[i], &shared, &packed_at[i]));
  }
  size_t output_at = std::numeric_limits<size_t>::max();
  if (!job.output.W.empty()) {
    ATTNKIT_RETURN_IF_ERROR(PlanPacking(job, job.output, &shared, &output_at));
  }
  double work = 0;
  for (const HeadTask& t : job.heads)
    work += ForwardMultiplyAdds(t.Q.rows, t.K.rows, t.Q.cols, t.V.cols);
  for (const Projection& p : job.projections) work += double(p.src.rows) * p.src.cols * p.dst.cols;
  if (!job.output.W.empty())
    work += double(job.output.src.rows) * job.output.src.cols * job.output.dst.cols;
  plan->pool = PoolFor(job.pool, work);
  const size_t threads = plan->pool ? plan->pool->num_threads() : 1;
  size_t total;
  ATTNKIT_RETURN_IF_ERROR(
      CheckedProduct(job.source, "scratch per thread", floats, threads, &total));
  if (total > std::numeric_limits<size_t>::max() - shared) {
    return OutOfMemory(job.source, "scratch", total);
  }
  // Every float of it is written before it is read (the packed keys and
  // weights hold only what the GEMMs read): no zeroing.
  if (!plan->memory.Allocate(total + shared)) {
    return OutOfMemory(job.source, "scratch", total + shared);
  }
  plan->scratch = plan->memory.data();
  plan->scratch_floats = floats;
  plan->partials = plan->memory.data() + total;
  const auto room = [&](size_t at) {
    return at == std::numeric_limits<size_t>::max() ? nullptr : plan->partials + at;
  };
  for (size_t at : packed_at) plan->packed.push_back(room(at));
  plan->output_packed = room(output_at);
  return Status::Ok();
}

bool PlanGradLayout(size_t T_q, size_t T_k, size_t d_k, size_t d_v, size_t threads,
                    uint64_t max_floats, GradLayout* w) {
  const uint64_t pad = kGradPad, kb = kGradKeyBlock, qb = kGradQueryBlock;
  const uint64_t dk_p = (d_k + pad - 1) / pad * pad, dv_p = (d_v + pad - 1) / pad * pad;
  const uint64_t Tk_p = T_k <= kb ? (T_k + pad - 1) / pad * pad : (T_k + kb - 1) / kb * kb;
  const uint64_t Tq = T_q;
  // Every factor is below 2^29 (views hold at most 2^28 elements) and the
  // thread count is small, so each product fits in 64 bits; the sums are
  // checked as they grow.
  bool fits = true;
  auto region = [&](uint64_t* at, uint64_t floats) {
    const uint64_t start = *at;
    *at += floats;
    if (*at > max_floats) fits = false;
    return static_cast<size_t>(fits ? start : 0);
  };
  uint64_t at = 0, per = 0;
  w->dk_p = static_cast<size_t>(dk_p);
  w->dv_p = static_cast<size_t>(dv_p);
  w->Tk_p = static_cast<size_t>(Tk_p);
  w->kb = static_cast<size_t>(std::min(Tk_p, kb));
  w->kt = region(&at, Tk_p * d_k);
  w->vt = region(&at, Tk_p * d_v);
  w->kp = region(&at, Tk_p * dk_p);
  w->q_in_place = dk_p == d_k;
  w->do_in_place = dv_p == d_v;
  w->qp = region(&at, w->q_in_place ? 0 : Tq * dk_p);
  w->dop = region(&at, w->do_in_place ? 0 : Tq * dv_p);
  w->dqp = region(&at, w->q_in_place ? 0 : Tq * dk_p);
  w->D = region(&at, Tq);
  w->s = region(&per, qb * kb);
  w->dp = region(&per, qb * kb);
  w->g = region(&per, qb * kb);
  w->dkb = region(&per, kb * dk_p);
  w->dvb = region(&per, kb * dv_p);
  w->threads_at = region(&at, 0);
  w->thread_floats = static_cast<size_t>(per);
  region(&at, per * threads);
  w->total = static_cast<size_t>(fits ? at : 0);
  return fits;
}

}  // namespace internal
}  // namespace attnkit
