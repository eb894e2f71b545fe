#include "attnkit/generate.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "attnkit/attention.h"
#include "attnkit/multihead.h"
#include "attnkit/ops.h"
#include "src/core/plan.h"
#include "src/core/validate.h"
#include "src/model/blocks.h"

namespace attnkit {
namespace model {
Status Model::FusedWeights(std::shared_ptr<const std::vector<FusedQKV>>* out) const {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("out", out));
  std::shared_ptr<const std::vector<FusedQKV>> kept = std::atomic_load(&fused_);
  if (!kept) {
    auto made = std::make_shared<std::vector<FusedQKV>>(params_.layers.size());
    for (size_t l = 0; l < params_.layers.size(); ++l) {
      ATTNKIT_RETURN_IF_ERROR(FuseQKV(params_.layers[l], &(*made)[l].W, &(*made)[l].b));
    }
    kept = std::move(made);
    std::atomic_store(&fused_, kept);
  }
  *out = std::move(kept);
  return Status::Ok();
}

Status Model::PackedLayerWeights(std::shared_ptr<const PackedLayers>* out) const {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("out", out));
  std::shared_ptr<const PackedLayers> kept = std::atomic_load(&packed_);
  if (!kept) {
    std::shared_ptr<const std::vector<FusedQKV>> fused;
    ATTNKIT_RETURN_IF_ERROR(FusedWeights(&fused));
    std::vector<ConstMatrixView> matrices;
    for (size_t l = 0; l < params_.layers.size(); ++l) {
      const LayerParameters& p = params_.layers[l];
      matrices.insert(matrices.end(), {(*fused)[l].W, p.W_O, p.W_1, p.W_2});
    }
    auto made = std::make_shared<PackedLayers>();
    ATTNKIT_RETURN_IF_ERROR(PackMatrices(matrices, &made->matrices));
    for (size_t l = 0; l < params_.layers.size(); ++l) {
      const PackedMatrices& m = made->matrices;
      made->layers.push_back({m[4 * l], m[4 * l + 1], m[4 * l + 2], m[4 * l + 3]});
    }
    kept = std::move(made);
    std::atomic_store(&packed_, kept);
  }
  *out = std::move(kept);
  return Status::Ok();
}

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
  std::shared_ptr<const std::vector<FusedQKV>> fused;
  ATTNKIT_RETURN_IF_ERROR(model.FusedWeights(&fused));
  model_ = &model;
  fused_ = std::move(fused);
  packed_.reset();  // the model's, taken by the first long prefill
  caches_.clear();  // made for this model by Reserve
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

Status Generator::Reserve(size_t tokens) {
  const ModelConfig& c = model_->config();
  const size_t have = caches_.empty() ? 0 : caches_[0].capacity();
  if (tokens <= have) return Status::Ok();
  constexpr size_t kMinCapacity = 64;
  const size_t capacity = std::min(c.max_seq_len, std::max({tokens, 2 * have, kMinCapacity}));
  const size_t g = c.num_kv_heads, d_k = c.d_k;
  std::vector<KVCache> grown(c.num_layers);
  Matrix K, V;  // a cache's rows in the layout Append takes: [size, g d_k], head j at column j d_k
  for (size_t l = 0; l < c.num_layers; ++l) {
    ATTNKIT_RETURN_IF_ERROR(KVCache::Create(1, g, d_k, d_k, capacity, &grown[l]));
    const size_t size = caches_.empty() ? 0 : caches_[l].size();
    if (size == 0) continue;
    ATTNKIT_RETURN_IF_ERROR(Shape(&K, size, g * d_k));
    ATTNKIT_RETURN_IF_ERROR(Shape(&V, size, g * d_k));
    for (size_t j = 0; j < g; ++j) {
      const ConstMatrixView keys = caches_[l].Keys(0, j), values = caches_[l].Values(0, j);
      for (size_t t = 0; t < size; ++t) {
        std::copy(keys.Row(t), keys.Row(t) + d_k, K.data() + t * g * d_k + j * d_k);
        std::copy(values.Row(t), values.Row(t) + d_k, V.data() + t * g * d_k + j * d_k);
      }
    }
    ATTNKIT_RETURN_IF_ERROR(grown[l].Append(K, V));
  }
  caches_ = std::move(grown);
  return Status::Ok();
}

Status Generator::Advance(size_t from) {
  const ModelConfig& c = model_->config();
  const Parameters& params = model_->params();
  const size_t n = context_.size() - from, d = c.d_model;
  ATTNKIT_RETURN_IF_ERROR(Reserve(context_.size()));
  // Causal with the cache's size before these tokens as the offset.
  const AttentionOptions options = CausalOptions(c, nullptr);
  // Natively, a prefill of many tokens reads the weights packed once (kept
  // with the model); in WebAssembly, where memory is the limit, and without
  // the memory for the pack, each product packs its weights.
#if !defined(__wasm__)
  if (n >= internal::kPackMinRows && !packed_ && !model_->PackedLayerWeights(&packed_).ok()) {
    packed_.reset();
  }
#endif

  // The model's blocks on the new tokens at positions from .. from + n - 1,
  // x_ [n, d] the residual stream.
  ATTNKIT_RETURN_IF_ERROR(Shape(&x_, n, d));
  Embed(params, context_.data() + from, n, from, x_);
  // Each layer's heads' weights over the cache for the last new token, rows
  // n - 1 of the heads' blocks [n, size] of the attention's weights (written
  // straight into weights_ for one new token).
  weights_.assign(c.num_layers, Matrix());
  for (size_t l = 0; l < c.num_layers; ++l) {
    const LayerParameters& p = params.layers[l];
    block_.kept = &(*fused_)[l];
    block_.packed = packed_ && n > 1 ? &packed_->layers[l] : nullptr;
    const size_t size = caches_[l].size() + n;
    ATTNKIT_RETURN_IF_ERROR(Alloc(&weights_[l], c.num_heads, size));
    if (n > 1) ATTNKIT_RETURN_IF_ERROR(Shape(&all_weights_, c.num_heads * n, size));
    ATTNKIT_RETURN_IF_ERROR(AttentionBlock(c, p, x_, 1, options, &caches_[l], &block_,
                                           c.d_ff > 0 ? &block_.mid : &next_,
                                           n > 1 ? all_weights_.view() : weights_[l].view()));
    for (size_t head = 0; n > 1 && head < c.num_heads; ++head) {
      const float* row = all_weights_.data() + (head * n + n - 1) * size;
      std::copy(row, row + size, weights_[l].data() + head * size);
    }
    if (c.d_ff > 0) ATTNKIT_RETURN_IF_ERROR(MlpBlock(c, p, block_.mid, &block_, &next_));
    std::swap(x_, next_);
  }
  // The logits of the last new token only.
  ATTNKIT_RETURN_IF_ERROR(Shape(&last_, 1, d));
  std::copy(x_.data() + (n - 1) * d, x_.data() + n * d, last_.data());
  ATTNKIT_RETURN_IF_ERROR(FinalNorm(c, params, last_, &last_norm_));
  ATTNKIT_RETURN_IF_ERROR(Unembed(c, params, Normed(c, last_, last_norm_), &last_logits_));
  logits_.assign(last_logits_.data(), last_logits_.data() + c.vocab_size);
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
  // lower index), best first; argmax alone (the first candidate) without
  // sampling.
  const size_t k = options.top_k == 0 ? V : options.top_k;
  int32_t token = int32_t(Argmax(logits_.data(), V));
  if (options.temperature > 0 && k > 1) {
    std::vector<int32_t> order(V);
    for (size_t j = 0; j < V; ++j) order[j] = int32_t(j);
    // A strict total order: every sort gives the same candidates in the same order.
    const auto better = [&](int32_t i, int32_t j) {
      return logits_[i] > logits_[j] || (logits_[i] == logits_[j] && i < j);
    };
    if (k == V) {
      std::sort(order.begin(), order.end(), better);
    } else {
      std::partial_sort(order.begin(), order.begin() + ptrdiff_t(k), order.end(), better);
    }
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
  result.logits = std::move(logits_);  // Advance makes the next ones
  result.weights = std::move(weights_);
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
