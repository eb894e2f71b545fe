#include "attnkit/generate.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "attnkit/attention.h"
#include "attnkit/multihead.h"
#include "attnkit/ops.h"
#include "src/core/validate.h"
#include "src/model/blocks.h"

namespace attnkit {
namespace model {
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
  std::vector<BlockActivations> blocks(c.num_layers);
  for (size_t l = 0; l < c.num_layers; ++l) {
    ATTNKIT_RETURN_IF_ERROR(
        KVCache::Create(1, c.num_kv_heads, c.d_k, c.d_k, c.max_seq_len, &caches[l]));
    ATTNKIT_RETURN_IF_ERROR(FuseQKV(model.params().layers[l], &blocks[l]));
  }
  model_ = &model;
  caches_ = std::move(caches);
  blocks_ = std::move(blocks);
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
  const size_t n = context_.size() - from, d = c.d_model;
  // Causal with the cache's size before these tokens as the offset.
  const AttentionOptions options = CausalOptions(c, nullptr);

  // The model's blocks on the new tokens at positions from .. from + n - 1,
  // x [n, d] the residual stream.
  Matrix x, next;
  ATTNKIT_RETURN_IF_ERROR(Alloc(&x, n, d));
  Embed(params, context_.data() + from, n, from, x);
  // Each layer's heads' weights over the cache for the last new token, rows
  // n - 1 of the heads' blocks [n, size] of the attention's weights (written
  // straight into weights_ for one new token).
  weights_.assign(c.num_layers, Matrix());
  Matrix all_weights;
  for (size_t l = 0; l < c.num_layers; ++l) {
    const LayerParameters& p = params.layers[l];
    BlockActivations& a = blocks_[l];
    const size_t size = caches_[l].size() + n;
    ATTNKIT_RETURN_IF_ERROR(Alloc(&weights_[l], c.num_heads, size));
    if (n > 1) ATTNKIT_RETURN_IF_ERROR(Shape(&all_weights, c.num_heads * n, size));
    ATTNKIT_RETURN_IF_ERROR(AttentionBlock(c, p, x, 1, options, &caches_[l], &a,
                                           c.d_ff > 0 ? &a.mid : &next,
                                           n > 1 ? all_weights.view() : weights_[l].view()));
    for (size_t head = 0; n > 1 && head < c.num_heads; ++head) {
      const float* row = all_weights.data() + (head * n + n - 1) * size;
      std::copy(row, row + size, weights_[l].data() + head * size);
    }
    if (c.d_ff > 0) ATTNKIT_RETURN_IF_ERROR(MlpBlock(c, p, a.mid, &a, &next));
    std::swap(x, next);
  }
  // The logits of the last new token only.
  Matrix last, logits;
  LayerNormActivations f;
  ATTNKIT_RETURN_IF_ERROR(Alloc(&last, 1, d));
  std::copy(x.data() + (n - 1) * d, x.data() + n * d, last.data());
  ATTNKIT_RETURN_IF_ERROR(FinalNorm(c, params, last, &f));
  ATTNKIT_RETURN_IF_ERROR(Unembed(c, params, Normed(c, last, f), &logits));
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
