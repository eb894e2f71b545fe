#include "attnkit/generate.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "attnkit/attention.h"
#include "attnkit/multihead.h"
#include "attnkit/ops.h"
#include "src/core/validate.h"
#include "src/model/kernels.h"

namespace attnkit {
namespace model {
namespace {

// Weights and activations only: the products skip their input scans (see model.cc).
constexpr FiniteInputs kFinite{};

constexpr float kLayerNormEpsilon = 1e-5f;  // as the model's

Status Alloc(Matrix* m, size_t rows, size_t cols) {
  if (!m->Reset(rows, cols)) {
    return Status(ErrorCode::kOverflow, "memory",
                  "cannot allocate " + std::to_string(rows) + " x " + std::to_string(cols));
  }
  return Status::Ok();
}

// y = LayerNorm(x) with gain and bias (the statistics are not kept).
Status Normalize(const Matrix& x, const Matrix& gain, const Matrix& bias, Matrix* y) {
  Matrix mean, rstd;
  ATTNKIT_RETURN_IF_ERROR(Alloc(y, x.rows(), x.cols()));
  ATTNKIT_RETURN_IF_ERROR(Alloc(&mean, x.rows(), 1));
  ATTNKIT_RETURN_IF_ERROR(Alloc(&rstd, x.rows(), 1));
  kernels::LayerNorm(x, gain.data(), bias.data(), kLayerNormEpsilon, *y, mean.data(), rstd.data());
  return Status::Ok();
}

}  // namespace

Status Generator::Start(const Model& model, const std::vector<int32_t>& prompt, uint64_t seed) {
  const ModelConfig& c = model.config();
  if (model.params().layers.empty()) {
    return Status(ErrorCode::kInvalidArgument, "model", "not initialised");
  }
  if (prompt.empty()) {
    return Status(ErrorCode::kInvalidArgument, "prompt", "expected at least 1 token, got 0");
  }
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || size_t(prompt[i]) >= c.vocab_size) {
      return Status(ErrorCode::kInvalidArgument, "prompt",
                    "entry " + std::to_string(i) + " is " + std::to_string(prompt[i]) +
                        ", expected 0 .. " + std::to_string(c.vocab_size - 1));
    }
  }
  std::vector<KVCache> caches(c.num_layers);
  for (KVCache& cache : caches) {
    ATTNKIT_RETURN_IF_ERROR(
        KVCache::Create(1, c.num_kv_heads, c.d_k, c.d_k, c.max_seq_len, &cache));
  }
  model_ = &model;
  caches_ = std::move(caches);
  context_ = prompt;
  rng_ = Rng(seed);
  const Status s = Prefill();
  if (!s.ok()) model_ = nullptr;
  return s;
}

// Empties the caches and runs the context through them, keeping its last
// max(1, max_seq_len / 2) tokens if it is longer than max_seq_len.
Status Generator::Prefill() {
  const size_t L = model_->config().max_seq_len;
  if (context_.size() > L) {
    const size_t keep = std::max<size_t>(1, L / 2);
    context_.erase(context_.begin(), context_.end() - ptrdiff_t(keep));
  }
  for (KVCache& cache : caches_) cache.Reset();
  return Advance(0);
}

Status Generator::Advance(size_t from) {
  const ModelConfig& c = model_->config();
  const Parameters& params = model_->params();
  const size_t n = context_.size() - from, d = c.d_model, h = c.num_heads, dk = c.d_k;
  const size_t hd = h * dk, gd = c.num_kv_heads * dk;
  AttentionOptions options;
  options.causal = true;  // offset: the cache's size before these tokens
  const float scale = c.scale_by_sqrt_dk ? 1.0f / std::sqrt(float(dk)) : 1.0f;
  options.scale = scale;

  // x [n, d]: the new tokens at positions from .. from + n - 1.
  Matrix x, a, Q, K, V, z, projected, b, u, act;
  ATTNKIT_RETURN_IF_ERROR(Alloc(&x, n, d));
  kernels::Embed(context_.data() + from, n, params.token_embedding,
                 params.position_embedding.view().Block(from, n, 0, d), x);
  ATTNKIT_RETURN_IF_ERROR(Alloc(&Q, n, hd));
  ATTNKIT_RETURN_IF_ERROR(Alloc(&K, n, gd));
  ATTNKIT_RETURN_IF_ERROR(Alloc(&V, n, gd));
  ATTNKIT_RETURN_IF_ERROR(Alloc(&z, n, hd));
  ATTNKIT_RETURN_IF_ERROR(Alloc(&projected, n, d));
  weights_.assign(c.num_layers, Matrix());
  for (size_t l = 0; l < c.num_layers; ++l) {
    const LayerParameters& p = params.layers[l];
    KVCache& cache = caches_[l];
    if (c.layer_norm) ATTNKIT_RETURN_IF_ERROR(Normalize(x, p.ln_gain, p.ln_bias, &a));
    const Matrix& in = c.layer_norm ? a : x;
    ATTNKIT_RETURN_IF_ERROR(MatMul(in, p.W_Q, Q, kFinite));
    ATTNKIT_RETURN_IF_ERROR(MatMul(in, p.W_K, K, kFinite));
    ATTNKIT_RETURN_IF_ERROR(MatMul(in, p.W_V, V, kFinite));
    ATTNKIT_RETURN_IF_ERROR(cache.Append(K, V));
    ATTNKIT_RETURN_IF_ERROR(AttendCached(Q, cache, h, options, z));
    // Each head's weights over the cache for the last new token:
    // softmax(scale q K^T) with q its query head, K its K/V head's cache.
    const size_t size = cache.size();
    Matrix& w = weights_[l];
    ATTNKIT_RETURN_IF_ERROR(Alloc(&w, h, size));
    for (size_t head = 0; head < h; ++head) {
      const size_t kv = head / (h / c.num_kv_heads);
      const MatrixView row = w.view().Block(head, 1, 0, size);
      ATTNKIT_RETURN_IF_ERROR(MatMulTransposed(Q.view().Block(n - 1, 1, head * dk, dk),
                                               cache.Keys(0, kv), row, kFinite));
      ATTNKIT_RETURN_IF_ERROR(ScaleScores(row, scale, 0.0f));
      ATTNKIT_RETURN_IF_ERROR(SoftmaxRows(row));
    }
    ATTNKIT_RETURN_IF_ERROR(MatMul(z, p.W_O, projected, kFinite));
    kernels::AddTo(projected.data(), x.data(), n * d);
    if (c.d_ff == 0) continue;
    ATTNKIT_RETURN_IF_ERROR(Normalize(x, p.ln2_gain, p.ln2_bias, &b));
    ATTNKIT_RETURN_IF_ERROR(Alloc(&u, n, c.d_ff));
    ATTNKIT_RETURN_IF_ERROR(Alloc(&act, n, c.d_ff));
    ATTNKIT_RETURN_IF_ERROR(MatMul(b, p.W_1, u, kFinite));
    kernels::Gelu(u, act);
    ATTNKIT_RETURN_IF_ERROR(MatMul(act, p.W_2, projected, kFinite));
    kernels::AddTo(projected.data(), x.data(), n * d);
  }
  // The logits of the last new token only.
  Matrix last, f, logits;
  ATTNKIT_RETURN_IF_ERROR(Alloc(&last, 1, d));
  std::copy(x.data() + (n - 1) * d, x.data() + n * d, last.data());
  if (c.layer_norm)
    ATTNKIT_RETURN_IF_ERROR(Normalize(last, params.final_gain, params.final_bias, &f));
  ATTNKIT_RETURN_IF_ERROR(Alloc(&logits, 1, c.vocab_size));
  ATTNKIT_RETURN_IF_ERROR(MatMul(c.layer_norm ? f : last, params.unembedding, logits, kFinite));
  logits_.assign(logits.data(), logits.data() + c.vocab_size);
  return Status::Ok();
}

Status Generator::Next(const SampleOptions& options, GeneratedToken* out) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("out", out));
  if (model_ == nullptr) {
    return Status(ErrorCode::kInvalidArgument, "generator", "not started (call Start first)");
  }
  const size_t V = model_->config().vocab_size;
  if (!std::isfinite(options.temperature) || options.temperature < 0) {
    return Status(
        ErrorCode::kInvalidArgument, "temperature",
        "expected a finite value >= 0 (0 = argmax), got " + std::to_string(options.temperature));
  }
  if (options.top_k > V) {
    return Status(ErrorCode::kInvalidArgument, "top_k",
                  "expected 0 (every token) .. vocab_size " + std::to_string(V) + ", got " +
                      std::to_string(options.top_k));
  }
  // The candidates: every token, or the top_k largest logits (ties to the
  // lower index), best first.
  std::vector<int32_t> order(V);
  for (size_t j = 0; j < V; ++j) order[j] = int32_t(j);
  const auto better = [&](int32_t i, int32_t j) {
    return logits_[i] > logits_[j] || (logits_[i] == logits_[j] && i < j);
  };
  const size_t k = options.top_k == 0 ? V : options.top_k;
  std::partial_sort(order.begin(), order.begin() + ptrdiff_t(k), order.end(), better);
  int32_t token = order[0];
  if (options.temperature > 0 && k > 1) {
    // p_j ~ exp((logit_j - max) / temperature) over the candidates; one
    // uniform draw walks their cumulative sum.
    std::vector<double> p(k);
    double sum = 0;
    for (size_t i = 0; i < k; ++i) {
      p[i] = std::exp((double(logits_[order[i]]) - logits_[order[0]]) / options.temperature);
      sum += p[i];
    }
    double draw = rng_.Uniform() * sum;
    token = order[k - 1];
    for (size_t i = 0; i < k; ++i) {
      if (draw < p[i]) {
        token = order[i];
        break;
      }
      draw -= p[i];
    }
  }
  GeneratedToken result;
  result.token = token;
  result.logits = logits_;
  result.weights = weights_;
  // The token joins the context: one more row of every cache, or a re-prefill
  // when the context would pass max_seq_len.
  context_.push_back(token);
  const Status s =
      context_.size() > model_->config().max_seq_len ? Prefill() : Advance(context_.size() - 1);
  if (!s.ok()) {
    model_ = nullptr;  // the caches are no longer the context's
    return s;
  }
  *out = std::move(result);
  return Status::Ok();
}

}  // namespace model
}  // namespace attnkit
