// Generation's own state (include/attnkit/generate.h): the KV caches sized to
// the context and grown as it grows, and the fused W_Q | W_K | W_V a model
// keeps for its generators (Model::FusedWeights) until its weights change.
// Each against full forwards of the same context (gpt_test.cc covers the
// re-prefill at max_seq_len, sampling and the errors).
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <vector>

#include "attnkit/generate.h"
#include "attnkit/model.h"
#include "tests/model_test_util.h"

namespace {

using namespace attnkit;
using namespace attnkit::model;
using model_test::LastLogits;
using model_test::Perturb;

// GPT-2's kind of block (biases, tied unembedding) with grouped K/V heads,
// a context long enough for the caches to grow several times.
ModelConfig LongConfig() {
  ModelConfig c;
  c.vocab_size = 11;
  c.max_seq_len = 300;
  c.d_model = 16;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.d_ff = 32;
  c.layer_norm = true;
  c.bias = true;
  c.tied_unembedding = true;
  return c;
}

// The generator's logits equal a full forward's of its context before the token.
void RequireLogitsOfFullForward(Model* reference, const std::vector<int32_t>& context,
                                const GeneratedToken& token) {
  const std::vector<float> full = LastLogits(reference, context);
  REQUIRE(token.logits.size() == full.size());
  for (size_t j = 0; j < full.size(); ++j) {
    // float32 through different orders of summation: 1e-4 of the logits' scale.
    REQUIRE(std::abs(token.logits[j] - full[j]) <= 1e-4f * (1 + std::abs(full[j])));
  }
}

}  // namespace

TEST_CASE("generate: the caches grow with the context and equal a full forward",
          "[gpt][generate]") {
  // A 3-token prompt, then 250 tokens: the caches start at 64 rows and grow
  // to 128, 256 and max_seq_len (300), their rows copied each time, and the
  // context is re-prefilled at 300.
  Model m;
  REQUIRE_OK(m.Init(LongConfig(), 4));
  Perturb(&m, 9);
  Model reference = m;
  Generator gen;
  REQUIRE_OK(gen.Start(m, {3, 1, 4}, 42));
  SampleOptions options;
  options.temperature = 0.9f;
  for (size_t step = 0; step < 250; ++step) {
    INFO("step " << step);
    const std::vector<int32_t> context = gen.context();
    GeneratedToken token;
    REQUIRE_OK(gen.Next(options, &token));
    RequireLogitsOfFullForward(&reference, context, token);
    REQUIRE(token.weights.size() == 2);
    REQUIRE(token.weights[1].cols() == context.size());
  }
}

TEST_CASE("generate: a model's fused weights are shared until its weights change",
          "[gpt][generate]") {
  Model m;
  REQUIRE_OK(m.Init(LongConfig(), 5));
  const Model& view = m;  // reads through const params() keep the fused weights
  std::shared_ptr<const std::vector<FusedQKV>> a, b;
  REQUIRE_OK(m.FusedWeights(&a));
  REQUIRE_OK(m.FusedWeights(&b));
  CHECK(a == b);  // made once
  REQUIRE(a->size() == 2);
  const ModelConfig c = m.config();
  CHECK((*a)[0].W.rows() == c.d_model);
  CHECK((*a)[0].W.cols() == (c.num_heads + 2 * c.num_kv_heads) * c.d_k);
  CHECK((*a)[0].W(1, 2) == view.params().layers[0].W_Q(1, 2));
  CHECK((*a)[0].b.cols() == (*a)[0].W.cols());

  // Weights written through params(): a generator started after sees them.
  SampleOptions greedy;
  greedy.temperature = 0;
  GeneratedToken old_token, new_token;
  Generator before;
  REQUIRE_OK(before.Start(m, {1, 2, 3}, 1));
  REQUIRE_OK(before.Next(greedy, &old_token));
  REQUIRE_OK(m.FusedWeights(&b));
  CHECK(a == b);  // generation kept them
  Perturb(&m, 6);
  REQUIRE_OK(m.FusedWeights(&b));
  CHECK(a != b);
  CHECK((*b)[1].W(0, c.num_heads * c.d_k) == view.params().layers[1].W_K(0, 0));
  Model reference = m;
  Generator after;
  REQUIRE_OK(after.Start(m, {1, 2, 3}, 1));
  REQUIRE_OK(after.Next(greedy, &new_token));
  RequireLogitsOfFullForward(&reference, {1, 2, 3}, new_token);
  CHECK(old_token.logits != new_token.logits);

  // Init and ImportWeights replace the weights: new fused weights.
  std::vector<uint8_t> file;
  REQUIRE_OK(ExportWeights(m, &file));
  REQUIRE_OK(ImportWeights(file.data(), file.size(), &m));
  std::shared_ptr<const std::vector<FusedQKV>> imported;
  REQUIRE_OK(m.FusedWeights(&imported));
  CHECK(imported != b);
  CHECK((*imported)[1].W(0, c.num_heads * c.d_k) == (*b)[1].W(0, c.num_heads * c.d_k));
  REQUIRE_OK(m.Init(LongConfig(), 5));
  REQUIRE_OK(m.FusedWeights(&b));
  CHECK((*b)[0].W(1, 2) == (*a)[0].W(1, 2));
}

TEST_CASE("generate: a generator started again on another model", "[gpt][generate]") {
  Model big, small;
  REQUIRE_OK(big.Init(LongConfig(), 7));
  Perturb(&big, 8);
  ModelConfig c = LongConfig();
  c.d_model = 8;
  c.num_heads = 2;
  c.num_kv_heads = 0;
  c.max_seq_len = 20;
  REQUIRE_OK(small.Init(c, 9));
  Perturb(&small, 10);
  Model reference = small;
  Generator gen;
  SampleOptions options;
  GeneratedToken token;
  REQUIRE_OK(gen.Start(big, std::vector<int32_t>(100, 2), 1));
  REQUIRE_OK(gen.Next(options, &token));
  REQUIRE_OK(gen.Start(small, {5, 6}, 1));
  for (size_t step = 0; step < 30; ++step) {
    const std::vector<int32_t> context = gen.context();
    REQUIRE_OK(gen.Next(options, &token));
    RequireLogitsOfFullForward(&reference, context, token);
  }
}
