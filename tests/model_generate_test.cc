// Generation's own state (include/attnkit/generate.h): the KV caches sized to
// the context and grown as it grows, and the fused W_Q | W_K | W_V a model
// keeps for its generators (Model::FusedWeights) until its weights change,
// and the weights packed in panels for long prefills (Model::PackedLayerWeights).
// Each against full forwards of the same context (gpt_test.cc covers the
// re-prefill at max_seq_len, sampling and the errors).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "attnkit/generate.h"
#include "attnkit/model.h"
#include "src/core/plan.h"
#include "src/model/blocks.h"
#include "tests/model_test_util.h"

namespace {

using namespace attnkit;
using namespace attnkit::model;
using model_test::GptConfig;
using model_test::LastLogits;
using model_test::Perturb;

// GPT-2's kind of block (biases, tied unembedding) with grouped K/V heads,
// a context long enough for the caches to grow several times.
ModelConfig LongConfig() {
  ModelConfig c = GptConfig(11, 300, 16, 2, 4, 2, 32);
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
  // LongConfig's kind of block, smaller.
  ModelConfig c = GptConfig(11, 20, 8, 2, 2, 0, 32);
  c.bias = true;
  c.tied_unembedding = true;
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

TEST_CASE("generate: the layers' weights packed once give the blocks' outputs bit for bit",
          "[gpt][generate]") {
  for (const size_t d_ff : {size_t(32), size_t(0)}) {
    INFO("d_ff " << d_ff);
    ModelConfig config = LongConfig();
    config.d_ff = d_ff;
    Model m;
    REQUIRE_OK(m.Init(config, 11));
    Perturb(&m, 12);
    const ModelConfig c = m.config();  // resolved: d_k filled in
    const Model& view = m;
    std::shared_ptr<const PackedLayers> a, b;
    REQUIRE_OK(m.PackedLayerWeights(&a));
    REQUIRE_OK(m.PackedLayerWeights(&b));
    CHECK(a == b);  // made once
    REQUIRE(a->layers.size() == c.num_layers);
    const PackedLayer& packed = a->layers[1];
    const LayerParameters& p = view.params().layers[1];
    CHECK(packed.W_QKV.rows == c.d_model);
    CHECK(packed.W_QKV.cols == (c.num_heads + 2 * c.num_kv_heads) * c.d_k);
    CHECK(packed.W_O.panels[0] == p.W_O(0, 0));
    CHECK(packed.W_1.empty() == (d_ff == 0));

    // A block of more rows than kPackMinRows (a long prefill), with the
    // weights packed per product and read from the pack: the same bits.
    const size_t N = internal::kPackMinRows + 5;
    Matrix x(N, c.d_model);
    Rng rng(13);
    for (size_t k = 0; k < x.size(); ++k) x.data()[k] = float(rng.Normal());
    Matrix out[2], mlp_out[2];
    for (int use_pack = 0; use_pack < 2; ++use_pack) {
      BlockActivations act;
      REQUIRE_OK(FuseQKV(p, &act));
      act.packed = use_pack ? &packed : nullptr;
      REQUIRE_OK(
          AttentionBlock(c, p, x, 1, CausalOptions(c, nullptr), nullptr, &act, &out[use_pack]));
      if (d_ff > 0) REQUIRE_OK(MlpBlock(c, p, out[use_pack], &act, &mlp_out[use_pack]));
    }
    REQUIRE(out[0].size() == N * c.d_model);
    CHECK(std::equal(out[0].data(), out[0].data() + out[0].size(), out[1].data()));
    CHECK(std::equal(mlp_out[0].data(), mlp_out[0].data() + mlp_out[0].size(), mlp_out[1].data()));

    // New weights: a new pack.
    Perturb(&m, 14);
    REQUIRE_OK(m.PackedLayerWeights(&b));
    CHECK(a != b);
    CHECK(b->layers[1].W_O.panels[0] == view.params().layers[1].W_O(0, 0));
  }
}

TEST_CASE("generate: a prompt of kPackMinRows tokens and more, then tokens: full forwards",
          "[gpt][generate]") {
  Model m;
  REQUIRE_OK(m.Init(LongConfig(), 15));
  Perturb(&m, 16);
  Model reference = m;
  std::vector<int32_t> prompt(internal::kPackMinRows + 3);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(i * 7 % 11);
  Generator gen;
  REQUIRE_OK(gen.Start(m, prompt, 1));
  SampleOptions greedy;
  greedy.temperature = 0;
  for (int step = 0; step < 3; ++step) {
    const std::vector<int32_t> context = gen.context();
    GeneratedToken token;
    REQUIRE_OK(gen.Next(greedy, &token));
    RequireLogitsOfFullForward(&reference, context, token);
  }
}
