// The GPT training step over a thread pool: every split (products by bands
// of rows, attention by (item, head), the row kernels by rows, their sums
// over rows by columns, AdamW by pieces) must give results bit-identical to
// one thread. The pool's cut-off is set to 0 here, so that every call of
// these small models splits (as every call of a large one does), and the
// shapes are odd, so that the bands are uneven and the column bands end
// inside a vector.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "attnkit/model.h"
#include "attnkit/random.h"
#include "attnkit/thread_pool.h"
#include "src/core/internal.h"
#include "src/model/kernels.h"
#include "tests/test_util.h"

namespace {

using namespace attnkit;
using namespace attnkit::model;

// 13 tokens, d_model 21 (3 heads of d_k 7 over 1 K/V head, or 7 of 3 over
// 7), d_ff 37, 3 layers; biases and a tied unembedding as asked.
ModelConfig OddConfig(bool bias, bool tied, bool grouped) {
  ModelConfig c;
  c.vocab_size = 13;
  c.max_seq_len = 11;
  c.d_model = 21;
  c.num_layers = 3;
  c.num_heads = grouped ? 3 : 7;
  c.num_kv_heads = grouped ? 1 : 7;
  c.d_k = grouped ? 7 : 3;
  c.d_ff = 37;
  c.layer_norm = true;
  c.bias = bias;
  c.tied_unembedding = tied;
  return c;
}

struct Trained {
  std::vector<float> losses;
  std::vector<uint8_t> weights;  // ExportWeights: every parameter's bits
};

// `steps` training steps of config c with a pool of `threads` (0: none) on
// seeded batches of 5 sequences of 11 tokens (33 + 22 rows: bands uneven).
Trained Train(const ModelConfig& c, size_t threads, size_t steps) {
  AdamWConfig opt;
  opt.learning_rate = 3e-3f;
  opt.warmup_steps = 2;
  opt.decay_steps = 9;
  opt.clip_norm = 0.5f;  // clips: the norm's sums matter
  Trainer trainer;
  REQUIRE_OK(trainer.Init(c, 7, opt));
  std::unique_ptr<ThreadPool> pool;
  if (threads > 0) pool = std::make_unique<ThreadPool>(threads);
  trainer.model().set_pool(pool.get());
  Rng rng(3);
  Batch batch;
  batch.batch = 5;
  batch.seq_len = 11;
  Trained out;
  for (size_t s = 0; s < steps; ++s) {
    batch.tokens.clear();
    batch.targets.clear();
    for (size_t i = 0; i < batch.batch * batch.seq_len; ++i) {
      batch.tokens.push_back(int32_t(rng.Below(c.vocab_size)));
      batch.targets.push_back(int32_t(rng.Below(c.vocab_size + 1)) - 1);  // some not scored
    }
    Metrics m;
    REQUIRE_OK(trainer.Step(batch, &m));
    out.losses.push_back(m.loss);
  }
  REQUIRE_OK(ExportWeights(trainer.model(), &out.weights));
  return out;
}

TEST_CASE("threads: a GPT's training is bit-identical with 1, 2 and 3 threads", "[threads]") {
  const internal::PoolCutoffScope every_call(0);
  for (const bool bias : {false, true}) {
    for (const bool tied : {false, true}) {
      for (const bool grouped : {false, true}) {
        INFO("bias " << bias << " tied " << tied << " grouped " << grouped);
        const ModelConfig c = OddConfig(bias, tied, grouped);
        const Trained none = Train(c, 0, 6);
        for (const size_t threads : {1, 2, 3}) {
          INFO("threads " << threads);
          const Trained t = Train(c, threads, 6);
          REQUIRE(t.losses.size() == none.losses.size());
          CHECK(std::memcmp(t.losses.data(), none.losses.data(),
                            none.losses.size() * sizeof(float)) == 0);
          CHECK(t.weights == none.weights);
        }
      }
    }
  }
}

TEST_CASE("threads: a GPT under the cut-off trains on one thread, the same", "[threads]") {
  // With the default cut-off these small calls leave the pool idle.
  const ModelConfig c = OddConfig(true, false, true);
  const Trained none = Train(c, 0, 3), two = Train(c, 2, 3);
  CHECK(two.weights == none.weights);
}

// m [rows, cols] of seeded values in [-2, 2).
Matrix Seeded(size_t rows, size_t cols, uint64_t seed) {
  Matrix m(rows, cols);
  Rng rng(seed);
  for (size_t i = 0; i < m.size(); ++i) m.data()[i] = float(rng.Uniform() * 4 - 2);
  return m;
}

bool Same(const Matrix& a, const Matrix& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("threads: each row kernel split over a pool equals one thread", "[threads]") {
  const internal::PoolCutoffScope every_call(0);
  ThreadPool pool(3);
  // 45 rows, 37 columns: row and column bands end inside a vector.
  const size_t N = 45, n = 37, V = 13, T = 9;
  const Matrix x = Seeded(N, n, 1), dy = Seeded(N, n, 2), gain = Seeded(1, n, 3),
               bias = Seeded(1, n, 4);
  std::vector<int32_t> tokens(N), targets(N);
  Rng rng(5);
  for (size_t r = 0; r < N; ++r) {
    tokens[r] = int32_t(rng.Below(V));  // repeated tokens: rows add into one embedding row
    targets[r] = int32_t(rng.Below(V + 1)) - 1;
  }
  // Each kernel once without a pool and once with it, from the same inputs.
  auto both = [&](auto&& run) {
    const auto one = run(nullptr), three = run(&pool);
    for (size_t i = 0; i < one.size(); ++i) {
      INFO("output " << i);
      CHECK(Same(one[i], three[i]));
    }
  };
  both([&](ThreadPool* p) {
    Matrix y(N, n), mean(N, 1), rstd(N, 1);
    kernels::LayerNorm(x, gain.data(), bias.data(), 1e-5f, y, mean.data(), rstd.data(), p);
    Matrix dx = Seeded(N, n, 6), dgain = Seeded(1, n, 7), dbias = Seeded(1, n, 8);
    kernels::LayerNormBackward(x, mean.data(), rstd.data(), gain.data(), dy, dx, dgain.data(),
                               dbias.data(), p);
    return std::vector<Matrix>{y, mean, rstd, dx, dgain, dbias};
  });
  both([&](ThreadPool* p) {
    Matrix act(N, n), d = dy;
    kernels::Gelu(x, act, p);
    kernels::GeluBackward(x, d, p);
    Matrix y = dy, sums(1, n);
    kernels::AddBias(bias.data(), y, p);
    kernels::AddTo(x.data(), y.data(), N * n, p);
    kernels::ColumnSums(dy, sums.data(), p);
    return std::vector<Matrix>{act, d, y, sums};
  });
  both([&](ThreadPool* p) {
    const Matrix te = Seeded(V, n, 9), pe = Seeded(T, n, 10);
    Matrix e(N, n), dte = Seeded(V, n, 11), dpe = Seeded(T, n, 12);
    kernels::Embed(tokens.data(), T, te, pe, e, p);
    kernels::EmbedBackward(tokens.data(), T, dy, dte, dpe, p);
    return std::vector<Matrix>{e, dte, dpe};
  });
  both([&](ThreadPool* p) {
    const Matrix logits = Seeded(N, V, 13);
    Matrix dlogits(N, V);
    const double sum = kernels::SoftmaxCrossEntropy(logits, targets.data(), 0.1f, dlogits, p);
    Matrix bits(1, 2);  // the double's bits, as two floats
    std::memcpy(bits.data(), &sum, sizeof(sum));
    return std::vector<Matrix>{dlogits, bits};
  });
}

TEST_CASE("threads: a pool hands out a Run of more tasks than one word holds", "[threads]") {
  // Run hands out tasks in rounds past ThreadPool's per-word limit (2^19).
  ThreadPool pool(3);
  const size_t tasks = (size_t{1} << 19) * 2 + 77;
  std::vector<std::atomic<uint8_t>> runs(tasks);
  pool.Run(tasks, [&](size_t task, size_t) { runs[task].fetch_add(1, std::memory_order_relaxed); });
  size_t wrong = 0;
  for (size_t t = 0; t < tasks; ++t) wrong += runs[t].load() != 1;
  CHECK(wrong == 0);
}

TEST_CASE("threads: many short Runs in a row, and after the workers sleep", "[threads]") {
  ThreadPool pool(3);
  std::atomic<size_t> sum{0};
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 2000; ++i) {
      pool.Run(5, [&](size_t task, size_t) { sum.fetch_add(task + 1); });
    }
    // Long enough for the workers to stop polling and sleep.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(sum.load() == size_t{3} * 2000 * 15);
}

}  // namespace
