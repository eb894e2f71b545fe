// attnkit: the KV cache and attention against it.
#include "attnkit/kv_cache.h"

#include <cstring>
#include <string>

#include "attnkit/attention.h"
#include "src/core/heads.h"
#include "src/core/internal.h"
#include "src/core/validate.h"

namespace attnkit {

using internal::CheckFinite;
using internal::CheckNoOverlap;
using internal::CheckShape;
using internal::CheckView;
using internal::Heads;

namespace {

std::string Str(size_t v) { return std::to_string(v); }

Status CheckCreated(const KVCache& cache) {
  if (cache.batch() == 0) {
    return Status(ErrorCode::kInvalidArgument, "cache",
                  "expected a cache made by KVCache::Create, got an empty one");
  }
  return Status::Ok();
}

// The new tokens' input (`parameter`, T_new tokens per item) must fit in the
// room left: the error names that input, as the signature does.
Status CheckRoom(const char* parameter, const KVCache& cache, size_t T_new) {
  if (T_new > cache.capacity() - cache.size()) {
    return Status(ErrorCode::kCapacity, parameter,
                  "expected at most " + Str(cache.capacity()) + " cached tokens, got " +
                      Str(cache.size()) + " + " + Str(T_new) +
                      " new = " + Str(cache.size() + T_new));
  }
  return Status::Ok();
}

}  // namespace

Status KVCache::Create(size_t batch, size_t num_kv_heads, size_t d_k, size_t d_v, size_t capacity,
                       KVCache* cache) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("cache", cache));
  const std::pair<const char*, size_t> sizes[] = {{"batch", batch},
                                                  {"num_kv_heads", num_kv_heads},
                                                  {"d_k", d_k},
                                                  {"d_v", d_v},
                                                  {"capacity", capacity}};
  for (const auto& [name, value] : sizes) {
    if (value == 0) {
      return Status(ErrorCode::kInvalidArgument, name, "expected at least 1, got 0");
    }
  }
  size_t blocks, rows, nk, nv;
  ATTNKIT_RETURN_IF_ERROR(
      internal::CheckedProduct("batch", "batch * num_kv_heads", batch, num_kv_heads, &blocks));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckedProduct(
      "capacity", "cached tokens (batch * num_kv_heads * capacity)", blocks, capacity, &rows));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckedProduct(
      "capacity", "cached keys (batch * num_kv_heads * capacity * d_k)", rows, d_k, &nk));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckedProduct(
      "capacity", "cached values (batch * num_kv_heads * capacity * d_v)", rows, d_v, &nv));
  KVCache c;
  c.batch_ = batch;
  c.num_kv_heads_ = num_kv_heads;
  c.d_k_ = d_k;
  c.d_v_ = d_v;
  c.capacity_ = capacity;
  if (!c.keys_.Allocate(nk)) return internal::OutOfMemory("capacity", "cached keys", nk);
  if (!c.values_.Allocate(nv)) return internal::OutOfMemory("capacity", "cached values", nv);
  *cache = std::move(c);
  return Status::Ok();
}

Status KVCache::Truncate(size_t size) {
  ATTNKIT_RETURN_IF_ERROR(CheckCreated(*this));
  if (size > size_) {
    return Status(
        ErrorCode::kInvalidArgument, "size",
        "expected at most the cached tokens per item, " + Str(size_) + ", got " + Str(size));
  }
  size_ = size;
  return Status::Ok();
}

Status KVCache::Clone(KVCache* copy) const {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("copy", copy));
  ATTNKIT_RETURN_IF_ERROR(CheckCreated(*this));
  KVCache c;
  ATTNKIT_RETURN_IF_ERROR(Create(batch_, num_kv_heads_, d_k_, d_v_, capacity_, &c));
  // Whole blocks, filled rows only: [batch, num_kv_heads] blocks of [capacity, d].
  for (size_t block = 0; block < batch_ * num_kv_heads_; ++block) {
    std::memcpy(c.keys_.data() + block * capacity_ * d_k_, keys_.data() + block * capacity_ * d_k_,
                size_ * d_k_ * sizeof(float));
    std::memcpy(c.values_.data() + block * capacity_ * d_v_,
                values_.data() + block * capacity_ * d_v_, size_ * d_v_ * sizeof(float));
  }
  c.size_ = size_;
  *copy = std::move(c);
  return Status::Ok();
}

ConstMatrixView KVCache::Keys(size_t item, size_t kv_head) const {
  if (item >= batch_ || kv_head >= num_kv_heads_) return ConstMatrixView();
  return ConstMatrixView(keys_.data() + (item * num_kv_heads_ + kv_head) * capacity_ * d_k_, size_,
                         d_k_);
}

ConstMatrixView KVCache::Values(size_t item, size_t kv_head) const {
  if (item >= batch_ || kv_head >= num_kv_heads_) return ConstMatrixView();
  return ConstMatrixView(values_.data() + (item * num_kv_heads_ + kv_head) * capacity_ * d_v_,
                         size_, d_v_);
}

Status KVCache::Append(ConstMatrixView K_new, ConstMatrixView V_new) {
  ATTNKIT_RETURN_IF_ERROR(CheckCreated(*this));
  ATTNKIT_RETURN_IF_ERROR(CheckView("K_new", K_new));
  size_t T_new;
  ATTNKIT_RETURN_IF_ERROR(internal::SequenceLength("K_new", K_new.rows, batch_, &T_new));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("K_new", K_new, K_new.rows, num_kv_heads_ * d_k_,
                                     "batch * T_new", "num_kv_heads * d_k of the cache"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("V_new", V_new, K_new.rows, num_kv_heads_ * d_v_,
                                     "batch * T_new, the rows of K_new",
                                     "num_kv_heads * d_v of the cache"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("K_new", K_new));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("V_new", V_new));
  ATTNKIT_RETURN_IF_ERROR(CheckRoom("K_new", *this, T_new));
  AppendUnchecked(K_new, V_new);
  return Status::Ok();
}

void KVCache::AppendUnchecked(ConstMatrixView K_new, ConstMatrixView V_new) {
  const size_t T_new = K_new.rows / batch_;
  for (size_t b = 0; b < batch_; ++b) {
    for (size_t g = 0; g < num_kv_heads_; ++g) {
      float* k = keys_.data() + ((b * num_kv_heads_ + g) * capacity_ + size_) * d_k_;
      float* v = values_.data() + ((b * num_kv_heads_ + g) * capacity_ + size_) * d_v_;
      for (size_t t = 0; t < T_new; ++t) {
        std::memcpy(k + t * d_k_, K_new.Row(b * T_new + t) + g * d_k_, d_k_ * sizeof(float));
        std::memcpy(v + t * d_v_, V_new.Row(b * T_new + t) + g * d_v_, d_v_ * sizeof(float));
      }
    }
  }
  size_ += T_new;
}

namespace {

// Heads of the queries against a cache: the config must match the cache.
Status CheckHeadsMatchCache(const Heads& heads, const KVCache& cache) {
  if (heads.num_kv_heads != cache.num_kv_heads()) {
    return Status(
        ErrorCode::kShapeMismatch, "num_kv_heads",
        "expected " + Str(cache.num_kv_heads()) + " (the cache's), got " + Str(heads.num_kv_heads));
  }
  if (heads.d_k != cache.d_k()) {
    return Status(ErrorCode::kShapeMismatch, "d_k",
                  "expected " + Str(cache.d_k()) + " (the cache's), got " + Str(heads.d_k));
  }
  if (heads.d_v != cache.d_v()) {
    return Status(ErrorCode::kShapeMismatch, "d_v",
                  "expected " + Str(cache.d_v()) + " (the cache's), got " + Str(heads.d_v));
  }
  return Status::Ok();
}

// Tasks of every (item, query head) against the cache holding T_k tokens.
void AddCachedTasks(ConstMatrixView Q, MatrixView out, const KVCache& cache, size_t T_q, size_t T_k,
                    const Heads& heads, const AttentionOptions& options,
                    std::vector<internal::HeadTask>* tasks) {
  internal::AddHeadTasks(
      Q, out, cache.batch(), T_q, T_k, heads, options,
      [&](size_t b, size_t g, ConstMatrixView* k, ConstMatrixView* v) {
        // Rows [0, T_k): the views may run past size() before the append
        // that fills them; the storage is allocated for the full capacity.
        const ConstMatrixView keys = cache.Keys(b, g), values = cache.Values(b, g);
        *k = ConstMatrixView(keys.data, T_k, keys.cols);
        *v = ConstMatrixView(values.data, T_k, values.cols);
      },
      tasks);
}

}  // namespace

Status AttendCached(ConstMatrixView Q_new, const KVCache& cache, size_t num_heads,
                    const AttentionOptions& options, MatrixView out, MatrixView weights) {
  ATTNKIT_RETURN_IF_ERROR(CheckCreated(cache));
  ATTNKIT_RETURN_IF_ERROR(CheckView("Q_new", Q_new));
  HeadConfig config;
  config.num_heads = num_heads;
  config.num_kv_heads = cache.num_kv_heads();
  config.d_k = cache.d_k();
  config.d_v = cache.d_v();
  Heads heads;
  ATTNKIT_RETURN_IF_ERROR(
      internal::ResolveHeads(config, Q_new.cols, "the columns of Q_new", 0, &heads));
  size_t T_new;
  ATTNKIT_RETURN_IF_ERROR(internal::SequenceLength("Q_new", Q_new.rows, cache.batch(), &T_new));
  if (T_new > cache.size()) {
    return Status(ErrorCode::kShapeMismatch, "Q_new",
                  "expected at most " + Str(cache.size()) +
                      " tokens per item (the cache's size; append K and V first), got " +
                      Str(T_new));
  }
  ATTNKIT_RETURN_IF_ERROR(CheckShape("Q_new", Q_new, Q_new.rows, num_heads * cache.d_k(),
                                     "batch * T_new", "num_heads * d_k of the cache"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("out", out, Q_new.rows, num_heads * cache.d_v(),
                                     "batch * T_new, the rows of Q_new", "num_heads * d_v"));
  if (weights.empty()) {
    ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("out", out, "Q_new", Q_new));
  } else {
    ATTNKIT_RETURN_IF_ERROR(CheckShape("weights", weights, Q_new.rows * num_heads, cache.size(),
                                       "batch * num_heads * T_new", "the cache's size"));
    ATTNKIT_RETURN_IF_ERROR(
        internal::CheckOutputsApart({{"out", out}, {"weights", weights}}, {{"Q_new", Q_new}}));
  }
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("Q_new", Q_new));
  internal::AttentionJob job;
  job.source = "Q_new";
  job.values = "cache";
  ATTNKIT_RETURN_IF_ERROR(internal::CheckOptions(options, T_new, cache.size(), /*batched=*/true,
                                                 cache.batch(), num_heads));
  job.params = internal::ScoreParamsOf(options, cache.d_k());
  job.pool = options.pool;
  AddCachedTasks(Q_new, out, cache, T_new, cache.size(), heads, options, &job.heads);
  if (!weights.empty()) {
    // Tasks in (item, head) order: task k's queries are rows [k T_new, +T_new).
    for (size_t k = 0; k < job.heads.size(); ++k) {
      job.heads[k].weights = weights.Block(k * T_new, T_new, 0, cache.size());
    }
  }
  return internal::RunAttentionJob(job);
}

Status MultiHeadDecode(ConstMatrixView X_new, const MultiHeadWeights& weights,
                       const HeadConfig& config, const AttentionOptions& options, KVCache* cache,
                       MatrixView out) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("cache", cache));
  ATTNKIT_RETURN_IF_ERROR(CheckCreated(*cache));
  ATTNKIT_RETURN_IF_ERROR(CheckView("X_new", X_new));
  Heads heads;
  ATTNKIT_RETURN_IF_ERROR(internal::ResolveHeads(config, X_new.cols, "d_model", 0, &heads));
  ATTNKIT_RETURN_IF_ERROR(CheckHeadsMatchCache(heads, *cache));
  size_t T_new;
  ATTNKIT_RETURN_IF_ERROR(internal::SequenceLength("X_new", X_new.rows, cache->batch(), &T_new));
  size_t d_out;
  ATTNKIT_RETURN_IF_ERROR(internal::CheckMultiHeadWeights(weights, X_new.cols, heads, &d_out));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("out", out, X_new.rows, d_out, "batch * T_new, the rows of X_new",
                 weights.W_O.empty() ? "num_heads * d_v" : "the columns of W_O"));
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("out", out, "X_new", X_new));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("X_new", X_new));
  ATTNKIT_RETURN_IF_ERROR(CheckRoom("X_new", *cache, T_new));
  const size_t T_k = cache->size() + T_new;
  internal::AttentionJob job;
  job.source = "X_new";
  ATTNKIT_RETURN_IF_ERROR(internal::CheckOptions(options, T_new, T_k, /*batched=*/true,
                                                 cache->batch(), heads.num_heads));
  job.params = internal::ScoreParamsOf(options, heads.d_k);
  job.pool = options.pool;
  internal::Projected p;
  ATTNKIT_RETURN_IF_ERROR(internal::AddMultiHeadProjections(X_new, weights, heads, out, &p, &job));
  job.after_projections = [&] { cache->AppendUnchecked(p.K.view(), p.V.view()); };
  AddCachedTasks(p.Q.view(), p.heads_out, *cache, T_new, T_k, heads, options, &job.heads);
  const size_t size_before = cache->size();
  const Status status = internal::RunAttentionJob(job);
  if (!status.ok()) cache->RollBack(size_before);  // leave the cache as it was
  return status;
}

}  // namespace attnkit
