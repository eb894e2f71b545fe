// The attention-only transformer (src/model).
//  - Every parameter's gradient against central finite differences of the
//    float64 reference model (model_reference.h), with and without
//    LayerNorm, grouped K/V heads, scaled and unscaled.
//  - Training is bit-identical with a ThreadPool of 1 and of 3 threads.
//  - Inspect: dS against finite differences of the reference's loss in the
//    scores; its weights, Q, K, logits against Forward's; its errors.
//  - Weights export/import round trip; corrupted files are rejected.
//  - Every bad configuration returns a Status naming the parameter.
//  - Task generators: seeded, the documented layouts.
//  - Training copy and induction (2 layers) to their thresholds with a fixed
//    seed; the induction score of layer 2 and the previous-token score of
//    layer 1 asserted.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "attnkit/model.h"
#include "attnkit/tasks.h"
#include "tests/model_reference.h"
#include "tests/model_test_util.h"

namespace {

using namespace attnkit;
using namespace attnkit::model;
using model_test::GptConfig;
using model_test::RequireGradientsMatchReference;
using model_test::RequireNames;
using model_test::RequireScoreGradientsMatchReference;
using model_test::SmallBatch;
using model_test::SmallConfig;

TEST_CASE("model: every gradient matches finite differences of the float64 reference", "[model]") {
  // 2 layers with grouped K/V heads (2 query heads share 1), and 3 layers of
  // plain multi-head attention (3 heads, 3 K/V heads).
  for (const size_t shape : {0, 1}) {
    for (const bool layer_norm : {false, true}) {
      for (const bool scaled : {true, false}) {
        INFO("shape " << shape << " layer_norm " << layer_norm << " scaled " << scaled);
        ModelConfig config = SmallConfig(layer_norm, scaled);
        if (shape == 1) {
          config.num_layers = 3;
          config.num_heads = 3;
          config.num_kv_heads = 3;
          config.d_k = 2;
        }
        Model m;
        REQUIRE_OK(m.Init(config, 7 + shape));
        if (layer_norm) {
          // Gains and biases away from 1 and 0, so their gradients are generic.
          Rng rng(3);
          for (Matrix* t : m.params().Tensors()) {
            if (t->rows() == 1) {
              for (size_t k = 0; k < t->size(); ++k) t->data()[k] += float(0.3 * rng.Normal());
            }
          }
        }
        CHECK(RequireGradientsMatchReference(&m, SmallBatch()).scored == 7);
      }
    }
  }
}

// Trains `steps` steps of the copy task and returns the exported weights.
std::vector<uint8_t> TrainWithThreads(size_t threads, size_t steps) {
  const ModelConfig c = GptConfig(8, 12, 16, 2, 4, 2, 0);
  AdamWConfig opt;
  opt.learning_rate = 3e-3f;
  opt.warmup_steps = 5;
  Trainer trainer;
  REQUIRE_OK(trainer.Init(c, 11, opt));
  ThreadPool pool(threads);
  trainer.model().set_pool(&pool);
  TaskConfig task;
  task.kind = TaskKind::kCopy;
  task.length = 6;
  task.vocab_size = 8;
  TaskGenerator gen;
  REQUIRE_OK(gen.Init(task, 5));
  Batch batch;
  Metrics metrics;
  for (size_t s = 0; s < steps; ++s) {
    REQUIRE_OK(gen.Next(16, &batch));
    REQUIRE_OK(trainer.Step(batch, &metrics));
  }
  std::vector<uint8_t> bytes;
  REQUIRE_OK(ExportWeights(trainer.model(), &bytes));
  return bytes;
}

TEST_CASE("model: training is bit-identical with 1 and 3 threads", "[model]") {
  const std::vector<uint8_t> one = TrainWithThreads(1, 20);
  const std::vector<uint8_t> three = TrainWithThreads(3, 20);
  REQUIRE(one.size() == three.size());
  CHECK(one == three);
  // And the same seed gives the same initial weights every time.
  Model a, b;
  REQUIRE_OK(a.Init(SmallConfig(true, true), 99));
  REQUIRE_OK(b.Init(SmallConfig(true, true), 99));
  std::vector<uint8_t> wa, wb;
  REQUIRE_OK(ExportWeights(a, &wa));
  REQUIRE_OK(ExportWeights(b, &wb));
  CHECK(wa == wb);
  Model other;
  REQUIRE_OK(other.Init(SmallConfig(true, true), 100));
  std::vector<uint8_t> wo;
  REQUIRE_OK(ExportWeights(other, &wo));
  CHECK(wa != wo);
}

TEST_CASE("model: the initialisation has the documented scales", "[model]") {
  ModelConfig c = GptConfig(64, 64, 64, 1, 4, 0, 0);
  c.d_k = 8;
  Model m;
  REQUIRE_OK(m.Init(c, 1));
  auto std_of = [](const Matrix& t) {
    double s = 0, s2 = 0;
    for (size_t k = 0; k < t.size(); ++k) {
      s += t.data()[k];
      s2 += double(t.data()[k]) * t.data()[k];
    }
    const double mean = s / double(t.size());
    return std::sqrt(s2 / double(t.size()) - mean * mean);
  };
  const Parameters& p = m.params();
  CHECK(std_of(p.token_embedding) == Approx(1.0).epsilon(0.05));
  CHECK(std_of(p.position_embedding) == Approx(1.0).epsilon(0.05));
  CHECK(std_of(p.layers[0].W_Q) == Approx(1.0 / 8).epsilon(0.1));
  CHECK(std_of(p.layers[0].W_O) == Approx(1.0 / std::sqrt(32.0)).epsilon(0.1));
  CHECK(std_of(p.unembedding) == Approx(1.0 / 8).epsilon(0.05));
  CHECK(p.layers[0].ln_gain(0, 3) == 1.0f);
  CHECK(p.final_bias(0, 5) == 0.0f);
  CHECK(p.Count() == 64 * 64 * 3 + 4 * 64 * 32 + 2 * 64 + 2 * 64);
}

TEST_CASE("model: Inspect's dS matches finite differences of the loss in the scores",
          "[model][inspect]") {
  // Grouped K/V heads (2 query heads share 1), with and without LayerNorm and
  // the 1/sqrt(d_k) scale: d_scores is d loss / d S of the float64 reference,
  // moved one score at a time, and exactly 0 above the diagonal.
  for (const bool layer_norm : {false, true}) {
    for (const bool scaled : {true, false}) {
      INFO("layer_norm " << layer_norm << " scaled " << scaled);
      Model m;
      REQUIRE_OK(m.Init(SmallConfig(layer_norm, scaled), 21));
      const std::vector<int32_t> tokens = {1, 4, 0, 2, 3};
      const std::vector<int32_t> targets = {-1, 0, 3, -1, 1};
      std::vector<uint8_t> before, after;
      REQUIRE_OK(ExportWeights(m, &before));
      CHECK(RequireScoreGradientsMatchReference(&m, tokens, targets).scored == 3);
      REQUIRE_OK(ExportWeights(m, &after));
      CHECK(before == after);  // the weights do not change
    }
  }
}

TEST_CASE("model: Inspect gives the forward's weights, Q, K, V, logits and predictions",
          "[model][inspect]") {
  Model m;
  ModelConfig c = SmallConfig(true, true);
  REQUIRE_OK(m.Init(c, 5));
  c = m.config();
  const std::vector<int32_t> tokens = {2, 2, 1, 4};
  const size_t T = tokens.size(), h = c.num_heads, g = c.num_kv_heads, dk = c.d_k;
  Inspection in;
  REQUIRE_OK(m.Inspect(tokens, nullptr, &in));
  CHECK_FALSE(in.has_targets);
  // The same sequence through Forward: the same logits and attention weights.
  Batch batch;
  batch.batch = 1;
  batch.seq_len = T;
  batch.tokens = tokens;
  batch.targets.assign(T, -1);
  Matrix logits;
  REQUIRE_OK(m.Forward(batch, nullptr, &logits));
  REQUIRE(in.logits.rows() == T);
  REQUIRE(in.logits.cols() == c.vocab_size);
  CHECK(std::equal(logits.data(), logits.data() + logits.size(), in.logits.data()));
  REQUIRE(in.predictions.size() == T);
  for (size_t i = 0; i < T; ++i) {
    const float* row = logits.data() + i * c.vocab_size;
    CHECK(in.predictions[i] == std::max_element(row, row + c.vocab_size) - row);
  }
  for (size_t l = 0; l < c.num_layers; ++l) {
    const LayerInspection& li = in.layers[l];
    Matrix weights;
    REQUIRE_OK(m.AttentionWeights(l, &weights));
    REQUIRE(li.weights.rows() == h * T);
    CHECK(std::equal(weights.data(), weights.data() + weights.size(), li.weights.data()));
    CHECK(li.d_scores.size() == 0);
    REQUIRE(li.input.rows() == T);
    REQUIRE(li.input.cols() == c.d_model);
    REQUIRE(li.Q.rows() == h * T);
    REQUIRE(li.K.rows() == g * T);
    REQUIRE(li.V.rows() == g * T);
    // Q = input W_Q, split by heads: head 1's query 2 is columns [d_k, 2 d_k) of row 2.
    const LayerParameters& p = m.params().layers[l];
    for (size_t k = 0; k < dk; ++k) {
      double q = 0, key = 0;
      for (size_t r = 0; r < c.d_model; ++r) {
        q += double(li.input(2, r)) * p.W_Q(r, dk + k);
        key += double(li.input(3, r)) * p.W_K(r, k);
      }
      CHECK(std::abs(li.Q(T + 2, k) - q) < 1e-5);
      CHECK(std::abs(li.K(3, k) - key) < 1e-5);
    }
    // LayerNorm-ed input: each row has mean ~bias mean, not the raw stream.
    if (l == 0) {
      double mean = 0;
      for (size_t r = 0; r < c.d_model; ++r) mean += li.input(0, r);
      double bias = 0;
      for (size_t r = 0; r < c.d_model; ++r) bias += p.ln_bias(0, r);
      CHECK(std::abs(mean - bias) < 1e-4);
    }
  }
}

TEST_CASE("model: Inspect's errors name tokens and targets", "[model][inspect]") {
  Model m;
  REQUIRE_OK(m.Init(SmallConfig(false, true), 1));
  Inspection in;
  const std::vector<int32_t> seven(7, 1), five = {1, 2, 3, 4, 0};
  RequireNames(m.Inspect({}, nullptr, &in), "tokens");
  RequireNames(m.Inspect(seven, nullptr, &in), "tokens");   // max_seq_len is 6
  RequireNames(m.Inspect({1, 5}, nullptr, &in), "tokens");  // vocab_size is 5
  const std::vector<int32_t> short_targets = {1, 2};
  RequireNames(m.Inspect(five, &short_targets, &in), "targets");
  const std::vector<int32_t> bad_target = {1, 2, 5, -1, 0};
  RequireNames(m.Inspect(five, &bad_target, &in), "targets");
  CHECK(in.layers.empty());  // untouched on error
  REQUIRE_OK(m.Inspect(five, nullptr, &in));
  CHECK(in.layers.size() == 2);
}

TEST_CASE("model: the weights file holds the parameters in Tensors() order", "[model]") {
  Model m;
  REQUIRE_OK(m.Init(SmallConfig(true, false), 8));
  std::vector<uint8_t> bytes;
  REQUIRE_OK(ExportWeights(m, &bytes));
  const size_t header = 8 + 4 + 13 * 4;  // version, 10 config words, vocabulary length 0,
                                         // trained steps, count
  size_t at = header;
  for (const Matrix* t : m.params().Tensors()) {
    REQUIRE(at + t->size() * 4 <= bytes.size());
    CHECK(std::memcmp(bytes.data() + at, t->data(), t->size() * 4) == 0);
    at += t->size() * 4;
  }
  CHECK(at + 4 == bytes.size());  // then the hash
  Model loaded;
  REQUIRE_OK(ImportWeights(bytes.data(), bytes.size(), &loaded));
  const std::vector<Matrix*> a = m.params().Tensors(), b = loaded.params().Tensors();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i]->size() == b[i]->size());
    CHECK(std::memcmp(a[i]->data(), b[i]->data(), a[i]->size() * 4) == 0);
  }
}

TEST_CASE("model: weights export and import round trip and corrupted files rejected", "[model]") {
  Model m;
  REQUIRE_OK(m.Init(SmallConfig(true, false), 21));
  std::vector<uint8_t> bytes;
  REQUIRE_OK(ExportWeights(m, &bytes));
  CHECK(bytes.size() == 8 + 56 + 4 * m.params().Count() + 4);
  CHECK(std::string(bytes.begin(), bytes.begin() + 8) == "ATKMODEL");
  Model back;
  REQUIRE_OK(ImportWeights(bytes.data(), bytes.size(), &back));
  CHECK(back.config().d_k == 3);
  CHECK(back.config().num_kv_heads == 1);
  CHECK(back.config().layer_norm);
  CHECK_FALSE(back.config().scale_by_sqrt_dk);
  std::vector<uint8_t> again;
  REQUIRE_OK(ExportWeights(back, &again));
  CHECK(again == bytes);
  Metrics a, b;
  REQUIRE_OK(m.Forward(SmallBatch(), &a));
  REQUIRE_OK(back.Forward(SmallBatch(), &b));
  CHECK(a.loss == b.loss);

  auto rejects = [&](std::vector<uint8_t> file, const std::string& says) {
    Model target;
    REQUIRE_OK(target.Init(SmallConfig(false, true), 1));
    const Status s = ImportWeights(file.data(), file.size(), &target);
    INFO(s.ToString());
    REQUIRE_FALSE(s.ok());
    CHECK(s.parameter() == "weights");
    CHECK(s.detail().find(says) != std::string::npos);
    // A failed import leaves the model as it was.
    CHECK_FALSE(target.config().layer_norm);
  };
  // Rewrites the trailing hash after an edit, so the edit itself is what fails.
  auto rehash = [](std::vector<uint8_t> f) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i + 4 < f.size(); ++i) h = (h ^ f[i]) * 16777619u;
    for (int i = 0; i < 4; ++i) f[f.size() - 4 + i] = uint8_t(h >> (8 * i));
    return f;
  };
  rejects(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 20), "truncated");
  rejects(std::vector<uint8_t>(bytes.begin(), bytes.end() - 8), "truncated");
  std::vector<uint8_t> f = bytes;
  f.push_back(0);
  rejects(f, "trailing");
  f = bytes;
  f[0] = 'X';
  rejects(f, "magic");
  f = bytes;
  f[8] = 5;
  rejects(rehash(f), "version 5");
  f = bytes;
  f[8 + 4 + 4 * 5] = 3;  // num_kv_heads 3 does not divide num_heads 2
  rejects(rehash(f), "num_kv_heads");
  f = bytes;
  f[8 + 4 + 4 * 2] = 7;  // d_model 7: the parameter count no longer matches
  rejects(rehash(f), "parameter count");
  f = bytes;
  f[8 + 4 + 4 * 8] = uint8_t(1u << kConfigFlagCount);  // the first unknown flag
  rejects(rehash(f), "flags");
  f = bytes;
  f[100] ^= 0x10;  // one bit of a parameter
  rejects(f, "hash");
  f = bytes;
  const float nan = std::nanf("");
  std::memcpy(&f[56 + 4 * 10], &nan, 4);
  rejects(rehash(f), "token_embedding");
}

TEST_CASE("model: every bad configuration names its parameter", "[model]") {
  auto config_error = [](void (*edit)(ModelConfig*), const std::string& parameter) {
    ModelConfig c = SmallConfig(false, true);
    edit(&c);
    RequireNames(CheckConfig(c, nullptr), parameter);
    Model m;
    RequireNames(m.Init(c, 1), parameter);
  };
  config_error([](ModelConfig* c) { c->vocab_size = 0; }, "vocab_size");
  config_error([](ModelConfig* c) { c->vocab_size = 1; }, "vocab_size");
  config_error([](ModelConfig* c) { c->max_seq_len = 0; }, "max_seq_len");
  config_error([](ModelConfig* c) { c->d_model = 0; }, "d_model");
  config_error([](ModelConfig* c) { c->num_layers = 0; }, "num_layers");
  config_error([](ModelConfig* c) { c->num_layers = kMaxLayers + 1; }, "num_layers");
  config_error([](ModelConfig* c) { c->d_ff = 8; }, "d_ff");  // GPT blocks need layer_norm
  config_error(
      [](ModelConfig* c) {
        c->layer_norm = true;
        c->d_ff = (1u << 16) + 1;
      },
      "d_ff");
  config_error([](ModelConfig* c) { c->num_heads = 0; }, "num_heads");
  config_error([](ModelConfig* c) { c->num_kv_heads = 3; }, "num_kv_heads");
  config_error([](ModelConfig* c) { c->num_kv_heads = 4; }, "num_kv_heads");
  config_error(
      [](ModelConfig* c) {
        c->d_model = 7;
        c->d_k = 0;
      },
      "d_k");
  {
    ModelConfig c = SmallConfig(false, true);
    c.num_kv_heads = 3;
    const Status s = CheckConfig(c, nullptr);
    CHECK(s.detail().find("must divide num_heads 2, got 3") != std::string::npos);
  }

  // Tasks against the model.
  ModelConfig c = SmallConfig(false, true);  // vocab 5, 6 positions
  TaskConfig task;
  task.kind = TaskKind::kCopy;
  task.length = 3;
  task.vocab_size = 5;
  REQUIRE_OK(CheckTask(task, &c));
  task.length = 4;  // 8 tokens > 6 positions
  RequireNames(CheckTask(task, &c), "max_seq_len");
  task.length = 0;
  RequireNames(CheckTask(task, &c), "length");
  task.length = 2;
  task.vocab_size = 2;
  RequireNames(CheckTask(task, nullptr), "vocab_size");
  task.vocab_size = 6;
  RequireNames(CheckTask(task, &c), "vocab_size");  // differs from the model's
  task.kind = TaskKind::kInduction;
  task.length = 5;
  task.vocab_size = 6;  // 5 distinct symbols, a filler and the separator need 7
  {
    const Status s = CheckTask(task, nullptr);
    RequireNames(s, "vocab_size");
    CHECK(s.detail().find("needs at least 7 tokens, got 6") != std::string::npos);
  }
  task.vocab_size = 7;
  REQUIRE_OK(CheckTask(task, nullptr));
  task.kind = TaskKind::kSort;
  task.vocab_size = 8;
  task.padding = 1;  // only induction takes padding
  RequireNames(CheckTask(task, nullptr), "padding");
  TaskGenerator gen;
  task.padding = 0;
  REQUIRE_OK(gen.Init(task, 1));
  Batch batch;
  RequireNames(gen.Next(0, &batch), "batch");

  // Batches against the model.
  Model m;
  REQUIRE_OK(m.Init(c, 1));
  Metrics metrics;
  Batch b = SmallBatch();
  b.tokens[3] = 5;
  RequireNames(m.Forward(b, &metrics), "tokens");
  b = SmallBatch();
  b.targets[3] = -2;
  RequireNames(m.Forward(b, &metrics), "targets");
  b = SmallBatch();
  b.seq_len = 7;
  b.batch = 1;
  b.tokens.resize(7);
  b.targets.resize(7);
  RequireNames(m.Forward(b, &metrics), "seq_len");
  b = SmallBatch();
  b.tokens.pop_back();
  RequireNames(m.Forward(b, &metrics), "tokens");
  Parameters grads;
  Model fresh;
  REQUIRE_OK(fresh.Init(c, 1));
  RequireNames(fresh.Backward(&grads), "model");
  Matrix weights;
  RequireNames(fresh.AttentionWeights(0, &weights), "model");
  REQUIRE_OK(m.Forward(SmallBatch(), &metrics));
  Matrix w;
  RequireNames(m.AttentionWeights(2, &w), "layer");

  AdamWConfig opt;
  opt.learning_rate = 0;
  RequireNames(CheckAdamWConfig(opt), "learning_rate");
  opt = AdamWConfig();
  opt.beta1 = 1;
  RequireNames(CheckAdamWConfig(opt), "beta1");
  opt = AdamWConfig();
  opt.beta2 = -0.5f;
  RequireNames(CheckAdamWConfig(opt), "beta2");
  opt = AdamWConfig();
  opt.epsilon = 0;
  RequireNames(CheckAdamWConfig(opt), "epsilon");
  opt = AdamWConfig();
  opt.weight_decay = -1;
  RequireNames(CheckAdamWConfig(opt), "weight_decay");
  opt = AdamWConfig();
  opt.clip_norm = std::nanf("");
  RequireNames(CheckAdamWConfig(opt), "clip_norm");
  opt = AdamWConfig();
  opt.warmup_steps = 10;
  opt.decay_steps = 10;  // the cosine needs steps after the warm-up
  RequireNames(CheckAdamWConfig(opt), "decay_steps");
  opt = AdamWConfig();
  opt.min_learning_rate = 2 * opt.learning_rate;
  RequireNames(CheckAdamWConfig(opt), "min_learning_rate");
  opt.min_learning_rate = -1e-4f;
  RequireNames(CheckAdamWConfig(opt), "min_learning_rate");
  opt.min_learning_rate = std::nanf("");
  RequireNames(CheckAdamWConfig(opt), "min_learning_rate");
}

TEST_CASE("model: task generators are seeded and follow the documented layouts", "[model]") {
  for (TaskKind kind : {TaskKind::kCopy, TaskKind::kReverse, TaskKind::kSort, TaskKind::kInduction,
                        TaskKind::kMajority}) {
    INFO(TaskName(kind));
    TaskConfig task;
    task.kind = kind;
    task.length = 6;
    task.vocab_size = 10;
    task.padding = kind == TaskKind::kInduction ? 4 : 0;
    TaskGenerator a, b, c;
    REQUIRE_OK(a.Init(task, 42));
    REQUIRE_OK(b.Init(task, 42));
    REQUIRE_OK(c.Init(task, 43));
    Batch ba, bb, bc;
    REQUIRE_OK(a.Next(8, &ba));
    REQUIRE_OK(b.Next(8, &bb));
    REQUIRE_OK(c.Next(8, &bc));
    CHECK(ba.tokens == bb.tokens);
    CHECK(ba.targets == bb.targets);
    CHECK(ba.tokens != bc.tokens);
    const size_t T = TaskSeqLen(task), n = task.length;
    REQUIRE(ba.seq_len == T);
    for (size_t s = 0; s < ba.batch; ++s) {
      const int32_t* x = &ba.tokens[s * T];
      const int32_t* y = &ba.targets[s * T];
      // The full sequence: the inputs, then the last target.
      std::vector<int32_t> seq(x, x + T);
      seq.push_back(y[T - 1] >= 0 ? y[T - 1] : -1);
      size_t scored = 0;
      for (size_t t = 0; t < T; ++t) {
        if (y[t] >= 0) {
          ++scored;
          if (t + 1 < T) CHECK(y[t] == x[t + 1]);
        }
      }
      if (kind == TaskKind::kInduction) {
        CHECK(scored >= (n + 1) / 2 - 1);
        CHECK(scored <= n - 1);
        // Each scored position's token occurred once before; the target is
        // the token after that occurrence.
        for (size_t t = 0; t < T; ++t) {
          if (y[t] < 0) continue;
          size_t prev = t, count = 0;
          for (size_t j = 0; j < t; ++j) {
            if (x[j] == x[t]) prev = j, ++count;
          }
          CHECK(count == 1);
          CHECK(y[t] == x[prev + 1]);
        }
        continue;
      }
      CHECK(x[n] == kSeparator);
      std::vector<int32_t> in(x, x + n);
      if (kind == TaskKind::kMajority) {
        CHECK(scored == 1);
        const int32_t m = y[n];
        const auto cm = std::count(in.begin(), in.end(), m);
        for (int32_t v = 1; v < 10; ++v) {
          if (v != m) CHECK(std::count(in.begin(), in.end(), v) < cm);
        }
        continue;
      }
      CHECK(scored == n);
      std::vector<int32_t> out(y + n, y + 2 * n);
      if (kind == TaskKind::kReverse) std::reverse(in.begin(), in.end());
      if (kind == TaskKind::kSort) std::sort(in.begin(), in.end());
      CHECK(out == in);
    }
  }
}

// Mean weight a head puts on the token right after the previous occurrence
// of the current token, over the induction task's scored positions; and the
// mean weight on the previous token over positions 1..T-1. weights as
// Model::AttentionWeights returns them.
struct HeadScores {
  std::vector<double> induction, previous_token;
};
HeadScores Scores(const Matrix& weights, const Batch& batch, size_t num_heads) {
  const size_t T = batch.seq_len;
  HeadScores s;
  s.induction.assign(num_heads, 0);
  s.previous_token.assign(num_heads, 0);
  size_t n_ind = 0, n_prev = 0;
  for (size_t b = 0; b < batch.batch; ++b) {
    const int32_t* x = &batch.tokens[b * T];
    for (size_t i = 0; i < T; ++i) {
      const bool prev = i >= 1;
      size_t j = i;
      const bool ind = batch.targets[b * T + i] >= 0;
      if (ind) {
        for (size_t k = 0; k < i; ++k) {
          if (x[k] == x[i]) j = k;
        }
      }
      n_prev += prev;
      n_ind += ind;
      for (size_t h = 0; h < num_heads; ++h) {
        const float* row = weights.data() + ((b * num_heads + h) * T + i) * T;
        if (prev) s.previous_token[h] += row[i - 1];
        if (ind) s.induction[h] += row[j + 1];
      }
    }
  }
  for (size_t h = 0; h < num_heads; ++h) {
    s.induction[h] /= double(n_ind);
    s.previous_token[h] /= double(n_prev);
  }
  return s;
}

// The attention-only model the tasks train (docs/model.md's settings):
// d_model 32, 2 heads, no LayerNorm, over the task's tokens and positions.
ModelConfig TaskModelConfig(const TaskConfig& task, size_t num_layers) {
  ModelConfig c = GptConfig(task.vocab_size, TaskSeqLen(task), 32, num_layers, 2, 0, 0);
  c.layer_norm = false;
  return c;
}

struct Run {
  size_t steps = 0;
  double seconds = 0;
  Metrics eval;
};

// Trains until the accuracy on a fresh evaluation batch reaches `target`
// (checked every 25 steps) or max_steps.
Run TrainTo(Trainer* trainer, const TaskConfig& task, size_t batch_size, double target,
            size_t max_steps, Batch* eval) {
  TaskGenerator gen, eval_gen;
  REQUIRE_OK(gen.Init(task, 1234));
  REQUIRE_OK(eval_gen.Init(task, 999));
  REQUIRE_OK(eval_gen.Next(256, eval));
  Run run;
  Batch batch;
  Metrics metrics;
  const auto start = std::chrono::steady_clock::now();
  while (run.steps < max_steps) {
    REQUIRE_OK(gen.Next(batch_size, &batch));
    REQUIRE_OK(trainer->Step(batch, &metrics));
    ++run.steps;
    if (run.steps % 25 == 0) {
      REQUIRE_OK(trainer->model().Forward(*eval, &run.eval));
      if (run.eval.accuracy() >= target) break;
    }
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_OK(trainer->model().Forward(*eval, &run.eval));
  return run;
}

TEST_CASE("model: trains the copy task", "[model][train]") {
  TaskConfig task;
  task.kind = TaskKind::kCopy;
  task.length = 6;
  task.vocab_size = 10;
  const ModelConfig c = TaskModelConfig(task, 1);
  AdamWConfig opt;
  opt.learning_rate = 1e-2f;
  opt.warmup_steps = 20;
  Trainer trainer;
  REQUIRE_OK(trainer.Init(c, 1, opt));
  Batch eval;
  const Run run = TrainTo(&trainer, task, 32, 0.99, 2000, &eval);
  std::printf("copy: %zu steps, %.2f s, accuracy %.3f, loss %.4f\n", run.steps, run.seconds,
              run.eval.accuracy(), run.eval.loss);
  CHECK(run.eval.accuracy() >= 0.99);
}

TEST_CASE("model: trains the reverse and sort and majority tasks", "[model][train]") {
  struct Case {
    TaskKind kind;
    size_t length, vocab_size, num_layers;
  };
  for (const Case& k : {Case{TaskKind::kReverse, 6, 10, 1}, Case{TaskKind::kSort, 6, 10, 2},
                        Case{TaskKind::kMajority, 9, 5, 1}}) {
    INFO(TaskName(k.kind));
    TaskConfig task;
    task.kind = k.kind;
    task.length = k.length;
    task.vocab_size = k.vocab_size;
    const ModelConfig c = TaskModelConfig(task, k.num_layers);
    AdamWConfig opt;
    opt.learning_rate = 1e-2f;
    opt.warmup_steps = 50;
    Trainer trainer;
    REQUIRE_OK(trainer.Init(c, 1, opt));
    Batch eval;
    const Run run = TrainTo(&trainer, task, 32, 0.95, 1500, &eval);
    std::printf("%s: %zu steps, %.2f s, accuracy %.3f, sequences %zu/%zu\n", TaskName(k.kind),
                run.steps, run.seconds, run.eval.accuracy(), run.eval.sequences_correct,
                run.eval.sequences);
    CHECK(run.eval.accuracy() >= 0.9);
    CHECK(run.eval.sequences == 256);
  }
}

TEST_CASE("model: a 2-layer model learns induction and the heads take their roles",
          "[model][train]") {
  TaskConfig task;
  task.kind = TaskKind::kInduction;
  task.length = 8;
  task.padding = 8;
  task.vocab_size = 24;
  ModelConfig c = TaskModelConfig(task, 2);
  AdamWConfig opt;
  opt.learning_rate = 1e-2f;
  opt.warmup_steps = 50;
  Trainer trainer;
  REQUIRE_OK(trainer.Init(c, 1, opt));
  Batch eval;
  const Run run = TrainTo(&trainer, task, 32, 0.95, 6000, &eval);
  Matrix w1, w2;
  REQUIRE_OK(trainer.model().AttentionWeights(0, &w1));
  REQUIRE_OK(trainer.model().AttentionWeights(1, &w2));
  const HeadScores l1 = Scores(w1, eval, c.num_heads), l2 = Scores(w2, eval, c.num_heads);
  std::printf("induction: %zu steps, %.2f s, accuracy %.3f, loss %.4f\n", run.steps, run.seconds,
              run.eval.accuracy(), run.eval.loss);
  for (size_t h = 0; h < c.num_heads; ++h) {
    std::printf("  head %zu: layer 1 previous-token %.3f, layer 2 induction %.3f\n", h,
                l1.previous_token[h], l2.induction[h]);
  }
  CHECK(run.eval.accuracy() >= 0.9);
  CHECK(*std::max_element(l2.induction.begin(), l2.induction.end()) >= 0.5);
  CHECK(*std::max_element(l1.previous_token.begin(), l1.previous_token.end()) >= 0.5);

  // One layer cannot form the circuit (the key must carry the previous
  // token): with the same steps it stays far below.
  c.num_layers = 1;
  Trainer one_layer;
  REQUIRE_OK(one_layer.Init(c, 1, opt));
  const Run one = TrainTo(&one_layer, task, 32, 2.0, run.steps, &eval);
  std::printf("induction, 1 layer: %zu steps, accuracy %.3f\n", one.steps, one.eval.accuracy());
  CHECK(one.eval.accuracy() < 0.6);
}

}  // namespace
