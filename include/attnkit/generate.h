// attnkit model: generating text token by token through the core's KV cache,
// the decoding path of the page: each new token's keys and values are
// appended to every layer's cache and its query attends to the cache, so a
// token costs one row of every product instead of a forward of the whole
// prefix.
//
// When the context reaches max_seq_len tokens (the position embedding has no
// row past it), the caches are rebuilt from the last max_seq_len / 2 tokens
// (a re-prefill), and generation goes on from there: the model then sees
// those tokens at positions 0 .. max_seq_len / 2 - 1, as a full forward of
// that window would.
#ifndef ATTNKIT_MODEL_GENERATE_H_
#define ATTNKIT_MODEL_GENERATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "attnkit/kv_cache.h"
#include "attnkit/matrix.h"
#include "attnkit/model.h"
#include "attnkit/random.h"
#include "attnkit/status.h"

namespace attnkit {
namespace model {

struct SampleOptions {
  // 0 = argmax (the lowest index on ties); > 0 divides the logits before the
  // softmax. Finite, >= 0.
  float temperature = 1.0f;
  // 0 = every token; k > 0 samples among the k largest logits (ties at the
  // k-th broken by the lower index). <= vocab_size.
  size_t top_k = 0;
};

struct GeneratedToken {
  int32_t token = 0;          // the token sampled
  std::vector<float> logits;  // [vocab_size], the logits it was sampled from
  // weights[layer] [num_heads, cache_length]: each head's attention over the
  // cache (the context, the newest token last) for the position whose logits
  // these are. cache_length is the context's length before `token`.
  std::vector<Matrix> weights;
};

class Generator {
 public:
  // Keeps a reference to `model` (it must outlive the generator and not
  // change while generating), shares its fused W_Q | W_K | W_V
  // (Model::FusedWeights, made on the first Start after the weights last
  // changed) and prefills every layer's KV cache with
  // `prompt` (1 .. any number of tokens, each < vocab_size; a prompt longer
  // than max_seq_len keeps its last max_seq_len / 2 tokens, as a re-prefill).
  // The RNG of sampling is seeded with `seed`. Errors name "prompt" or
  // "model".
  Status Start(const Model& model, const std::vector<int32_t>& prompt, uint64_t seed);
  // Samples the next token from the logits of the context's last position,
  // then appends it to the context (its keys and values join the caches;
  // the logits of the following token are computed here, ahead). Errors name
  // "temperature", "top_k" or "generator" (not started).
  Status Next(const SampleOptions& options, GeneratedToken* out);
  // The tokens the caches hold (the context), oldest first.
  const std::vector<int32_t>& context() const { return context_; }

 private:
  // Runs tokens [from, context_.size()) of the context through the model,
  // appending to the caches; leaves the last token's logits and weights.
  Status Advance(size_t from);
  Status Prefill();
  // Room for `tokens` in every layer's cache: each made, or grown with its
  // contents kept, to min(max_seq_len, max(tokens, 2 capacity)) rows, so
  // that a cache holds about what the context needs and grows by copies of
  // amortised O(1) rows per token.
  Status Reserve(size_t tokens);

  const Model* model_ = nullptr;
  // The model's fused W_QKV per layer (Model::FusedWeights) at Start.
  std::shared_ptr<const std::vector<FusedQKV>> fused_;
  // The model's packed weights (Model::PackedLayerWeights), taken natively
  // by the first prefill of at least kPackMinRows (128) tokens.
  std::shared_ptr<const PackedLayers> packed_;
  std::vector<KVCache> caches_;  // one per layer
  // The last Advance's activations of a layer, reused by every layer and call.
  BlockActivations block_;
  Matrix x_, next_, all_weights_;  // Advance's residual stream and weights of every new row
  Matrix last_, last_logits_;      // the last new row [1, d_model] and its logits [1, vocab]
  LayerNormActivations last_norm_;
  std::vector<int32_t> context_;
  std::vector<float> logits_;    // of the context's last position
  std::vector<Matrix> weights_;  // [num_heads, context length] per layer
  Rng rng_{0};
};

}  // namespace model
}  // namespace attnkit

#endif  // ATTNKIT_MODEL_GENERATE_H_
