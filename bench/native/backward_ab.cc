// One round of the backward's A/B (scripts/bench.sh --ab REV --only backward): times each shape
// once and prints "name us_per_call", CPU time of this process (one thread), so that a driver can
// alternate two builds of attnkit, round by round, and take the median of the per-round ratios.
// Built against each build's libattnkit_core.a; only the public API, which both builds share.
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "attnkit/attnkit.h"
#include "attnkit/model.h"
#include "attnkit/random.h"
#include "attnkit/tasks.h"
#include "bench/native/harness.h"

namespace {

using harness::Random;

const auto& Time = harness::PrintTime;

struct Head {
  size_t T, d;
  std::vector<float> q, k, v, dout, out, lse, dq, dk, dv;
  Head(size_t T_, size_t d_)
      : T(T_),
        d(d_),
        q(Random(T * d, 1)),
        k(Random(T * d, 2)),
        v(Random(T * d, 3)),
        dout(Random(T * d, 4)),
        out(T * d),
        lse(T),
        dq(T * d),
        dk(T * d),
        dv(T * d) {}
  attnkit::ConstMatrixView C(const std::vector<float>& m, size_t cols) const {
    return attnkit::ConstMatrixView(m.data(), T, cols);
  }
  attnkit::MatrixView M(std::vector<float>& m, size_t cols) {
    return attnkit::MatrixView(m.data(), T, cols);
  }
  bool Forward(const attnkit::AttentionOptions& o) {
    return attnkit::AttentionForTraining(C(q, d), C(k, d), C(v, d), o, M(out, d), M(lse, 1)).ok();
  }
  bool Backward(const attnkit::AttentionOptions& o) {
    return attnkit::AttentionBackward(C(q, d), C(k, d), C(v, d), C(out, d), C(dout, d), C(lse, 1),
                                      o, M(dq, d), M(dk, d), M(dv, d))
        .ok();
  }
  bool Recompute(const attnkit::AttentionOptions& o) {
    return attnkit::AttentionBackward(C(q, d), C(k, d), C(v, d), C(dout, d), o, M(dq, d), M(dk, d),
                                      M(dv, d))
        .ok();
  }
  bool Attention(const attnkit::AttentionOptions& o) {
    return attnkit::Attention(C(q, d), C(k, d), C(v, d), o, M(out, d)).ok();
  }
};

// --pool: where a pool of 2 starts to pay. Causal heads of d 64 by T and a
// model's training step, each with no pool ("pool0") and a pool of 2
// ("pool2"), the best wall time of a call. Between two builds (bench/ab/pair.mjs) it shows the
// cut-off's effect (internal::kPoolMinMultiplyAdds); within one, where the
// pool gains.
int Pool() {
  const double budget = 0.05;
  attnkit::ThreadPool pool2(2);
  for (const size_t T : {32, 64, 128, 192, 256, 384, 512, 1024, 2048}) {
    Head h(T, 64);
    for (attnkit::ThreadPool* pool : {static_cast<attnkit::ThreadPool*>(nullptr), &pool2}) {
      attnkit::AttentionOptions o;
      o.causal = true;
      o.pool = pool;
      const std::string shape =
          "d=64_T=" + std::to_string(T) + "_causal_" + (pool ? "pool2" : "pool0");
      harness::PrintBestWallTime("attention_" + shape, budget, [&] { return h.Attention(o); });
      harness::PrintBestWallTime("train_fwd_" + shape, budget, [&] { return h.Forward(o); });
      h.Forward(o);
      harness::PrintBestWallTime("bwd_saved_" + shape, budget, [&] { return h.Backward(o); });
    }
  }
  using namespace attnkit::model;
  TaskConfig task;
  task.kind = TaskKind::kInduction;
  task.length = 8;
  task.padding = 8;
  task.vocab_size = 24;
  ModelConfig c;
  c.vocab_size = task.vocab_size;
  c.max_seq_len = TaskSeqLen(task);
  c.d_model = 32;
  c.num_layers = 2;
  c.num_heads = 2;
  Trainer trainer;
  TaskGenerator data;
  Batch batch;
  Metrics m;
  if (!trainer.Init(c, 1, AdamWConfig()).ok() || !data.Init(task, 1234).ok() ||
      !data.Next(32, &batch).ok()) {
    return 1;
  }
  for (attnkit::ThreadPool* pool : {static_cast<attnkit::ThreadPool*>(nullptr), &pool2}) {
    trainer.model().set_pool(pool);
    harness::PrintBestWallTime(
        std::string("model_train_step_induction_") + (pool ? "pool2" : "pool0"), budget,
        [&] { return trainer.Step(batch, &m).ok(); });
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--pool") return Pool();
  const double budget = 0.03;
  for (const size_t d : {8, 64}) {
    for (const size_t T : {4, 16, 64}) {
      Head h(T, d);
      attnkit::AttentionOptions o;
      const std::string shape = "d=" + std::to_string(d) + "_T=" + std::to_string(T);
      Time("train_fwd_" + shape, budget, [&] { return h.Forward(o); });
      h.Forward(o);
      Time("bwd_saved_" + shape, budget, [&] { return h.Backward(o); });
    }
  }
  for (const size_t T : {128, 512, 2048}) {
    for (const bool causal : {false, true}) {
      Head h(T, 64);
      attnkit::AttentionOptions o;
      o.causal = causal;
      const std::string shape = "d=64_T=" + std::to_string(T) + (causal ? "_causal" : "");
      Time("train_fwd_" + shape, budget, [&] { return h.Forward(o); });
      h.Forward(o);
      Time("bwd_saved_" + shape, budget, [&] { return h.Backward(o); });
      Time("attention_" + shape, budget, [&] { return h.Attention(o); });
    }
  }
  {
    // The multi-head training forward and backward at the Language view's
    // default preset's shape (batch 12, T 64, 4 heads of d_k 24, causal,
    // Q | K | V side by side as the model holds them).
    const size_t B = 12, T = 64, heads = 4, d_k = 24, N = B * T, cols = heads * d_k;
    const auto qkv = Random(N * 3 * cols, 11), dout = Random(N * cols, 12);
    std::vector<float> out(N * cols), lse(N * heads), dqkv(N * 3 * cols);
    const attnkit::ConstMatrixView QKV(qkv.data(), N, 3 * cols), dO(dout.data(), N, cols);
    const attnkit::MatrixView dQKV(dqkv.data(), N, 3 * cols), O(out.data(), N, cols),
        L(lse.data(), N * heads, 1);
    const attnkit::HeadConfig config{heads, heads, d_k, d_k};
    attnkit::AttentionOptions o;
    o.causal = true;
    const auto part = [&](auto m, size_t i) { return m.Block(0, N, i * cols, cols); };
    Time("mh_train_fwd_B=12_T=64_h=4_dk=24_causal", budget, [&] {
      return attnkit::MultiHeadAttentionQKVForTraining(part(QKV, 0), part(QKV, 1), part(QKV, 2), B,
                                                       config, o, O, L)
          .ok();
    });
    Time("mh_bwd_saved_B=12_T=64_h=4_dk=24_causal", budget, [&] {
      return attnkit::MultiHeadAttentionQKVBackward(part(QKV, 0), part(QKV, 1), part(QKV, 2), O, dO,
                                                    L, B, config, o, part(dQKV, 0), part(dQKV, 1),
                                                    part(dQKV, 2))
          .ok();
    });
  }
  {
    Head h(256, 64);
    attnkit::AttentionOptions o;
    o.softcap = 30.0f;
    o.causal = true;
    Time("bwd_recompute_d=64_T=256_causal_softcap", budget, [&] { return h.Recompute(o); });
  }
  {
    // The multi-head layer's training step: forward, then the backward with
    // dX and every weight's gradient (T = 256, d_model = 256, 4 heads).
    const size_t T = 256, dm = 256, heads = 4;
    const auto X = Random(T * dm, 5), wq = Random(dm * dm, 6), wk = Random(dm * dm, 7),
               wv = Random(dm * dm, 8), wo = Random(dm * dm, 9), dout = Random(T * dm, 10);
    std::vector<float> out(T * dm), dx(T * dm), dw[4];
    for (auto& g : dw) g.resize(dm * dm);
    const auto C = [&](const std::vector<float>& m, size_t rows) {
      return attnkit::ConstMatrixView(m.data(), rows, dm);
    };
    const auto M = [&](std::vector<float>& m, size_t rows) {
      return attnkit::MatrixView(m.data(), rows, dm);
    };
    const attnkit::MultiHeadWeights w{C(wq, dm), C(wk, dm), C(wv, dm), C(wo, dm)};
    const attnkit::MultiHeadGradients g{M(dx, T), M(dw[0], dm), M(dw[1], dm), M(dw[2], dm),
                                        M(dw[3], dm)};
    const attnkit::HeadConfig config{heads, heads, 0, 0};
    attnkit::AttentionOptions o;
    o.causal = true;
    Time("layer_train_T=256_dm=256_h=4_causal", budget, [&] {
      return attnkit::MultiHeadAttention(C(X, T), 1, w, config, o, M(out, T)).ok() &&
             attnkit::MultiHeadAttentionBackward(C(X, T), 1, w, config, o, C(dout, T), g).ok();
    });
  }
  {
    // One training step of the model of bench/native/train.cc's induction
    // setting (2 layers, d_model 32, 2 heads, batch 32), on the same batch.
    using namespace attnkit::model;
    TaskConfig task;
    task.kind = TaskKind::kInduction;
    task.length = 8;
    task.padding = 8;
    task.vocab_size = 24;
    ModelConfig c;
    c.vocab_size = task.vocab_size;
    c.max_seq_len = TaskSeqLen(task);
    c.d_model = 32;
    c.num_layers = 2;
    c.num_heads = 2;
    AdamWConfig adam;
    Trainer trainer;
    TaskGenerator data;
    Batch batch;
    Metrics m;
    if (trainer.Init(c, 1, adam).ok() && data.Init(task, 1234).ok() && data.Next(32, &batch).ok()) {
      Time("model_train_step_induction", budget, [&] { return trainer.Step(batch, &m).ok(); });
    }
  }
  {
    // One training step of a GPT of the Language view's default preset (3
    // layers, 4 heads, d_model 96, d_ff 288, context 64, batch 12), on one
    // seeded batch of an 81-character vocabulary.
    using namespace attnkit::model;
    ModelConfig c;
    c.vocab_size = 81;
    c.max_seq_len = 64;
    c.d_model = 96;
    c.num_layers = 3;
    c.num_heads = 4;
    c.d_ff = 288;
    c.layer_norm = true;
    AdamWConfig adam;
    adam.learning_rate = 3e-3f;
    Trainer trainer;
    Batch batch;
    batch.batch = 12;
    batch.seq_len = 64;
    attnkit::model::Rng rng(5);
    for (size_t i = 0; i < batch.batch * batch.seq_len; ++i) {
      batch.tokens.push_back(int32_t(rng.Below(c.vocab_size)));
      batch.targets.push_back(int32_t(rng.Below(c.vocab_size)));
    }
    Metrics m;
    if (trainer.Init(c, 1, adam).ok()) {
      Time("model_train_step_gpt_default", 0.2, [&] { return trainer.Step(batch, &m).ok(); });
    }
  }
  return 0;
}
