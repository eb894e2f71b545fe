// attnkit_train_bench: the training benchmark's native side (npm run bench;
// bench/wasm/train.mjs is the Node side). Trains the settings of docs/model.md
// ("Settings that train"), model seed 1, data seed 1234, batches of 32, until
// the accuracy on 256 held-out sequences (seed 99, checked every 25 steps) has
// reached 90% and 300 steps (100 with --quick) have run, or the step cap, once
// on the caller's thread and once on a pool of every thread of the machine.
// Per run: the median ms of the steps after the first 20 (the model's buffers
// are sized then), steps/s, the steps and training seconds (evaluations not
// counted) to 90%, and whether the two runs' losses are bit-identical (the
// model's determinism across thread counts).
// Each step's wall time (steady_clock) and the process's CPU time
// (CLOCK_PROCESS_CPUTIME_ID: on a shared machine the wall time also counts
// other processes' turns; with the pool it also counts the workers' spinning).
// Usage: attnkit_train_bench [--quick] > bench/results/train-native.json
//
// --profile NAME [THREADS] [STEPS]: training steps of one GPT shape of
// --threads, for a profiler (bench/native/phases.mjs).
//
// --threads [ROUNDS [CUTOFF...]]: where two threads start to pay (the pool's cut-off,
// internal::kPoolMinMultiplyAdds). A table on stdout: the pool's cost per
// Run; products [768, K] x [K, N] of several sizes; the multi-head attention's
// training forward and backward at the presets' shapes; and GPT training steps of
// several shapes (the Language presets, nanoGPT's), each on one thread and on
// a pool of two in turns, round by round (ROUNDS, default 7), with each
// CUTOFF given (default: 0, every call splits, and the one built in). Per row the medians and the
// median of the rounds' ratios t1 / t2 (the speed of two threads), and
// whether the two runs' losses and weights are bit-identical. The header and
// the last line give the round trip of a cache line between two threads, at
// the start and at the end: what a pool's threads pay to hand data over,
// which moves with where the host places them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "attnkit/backward.h"
#include "attnkit/model.h"
#include "attnkit/ops.h"
#include "attnkit/random.h"
#include "attnkit/tasks.h"
#include "attnkit/thread_pool.h"
#include "bench/native/harness.h"
#include "src/core/internal.h"

namespace {

using namespace attnkit::model;

constexpr size_t kBatch = 32, kEvalBatch = 256, kEvalEvery = 25, kSkip = 20;
constexpr uint64_t kModelSeed = 1, kDataSeed = 1234, kEvalSeed = 99;
constexpr double kTarget = 0.9;

struct Setting {
  const char* name;
  TaskConfig task;
  size_t num_layers;
  size_t warmup;
  size_t max_steps;
  size_t min_steps;
};

struct Result {
  std::vector<float> losses;
  std::vector<double> step_ms, cpu_ms;
  size_t steps_to_target = 0;  // 0: not reached
  double seconds_to_target = 0, cpu_seconds_to_target = 0;
  float accuracy = 0;
  bool ok = true;
  std::string error;
};

using harness::CpuMs;

using harness::Median;

Result Train(const Setting& s, attnkit::ThreadPool* pool) {
  Result r;
  ModelConfig c;
  c.vocab_size = s.task.vocab_size;
  c.max_seq_len = TaskSeqLen(s.task);
  c.d_model = 32;
  c.num_layers = s.num_layers;
  c.num_heads = 2;
  AdamWConfig adam;
  adam.learning_rate = 1e-2f;
  adam.warmup_steps = s.warmup;
  Trainer trainer;
  TaskGenerator data, held_gen;
  Batch batch, held;
  Metrics m;
  attnkit::Status st = CheckTask(s.task, &c);
  if (st.ok()) st = trainer.Init(c, kModelSeed, adam);
  if (st.ok()) st = data.Init(s.task, kDataSeed);
  if (st.ok()) st = held_gen.Init(s.task, kEvalSeed);
  if (st.ok()) st = held_gen.Next(kEvalBatch, &held);
  trainer.model().set_pool(pool);
  double train_s = 0, cpu_s = 0;
  for (size_t step = 1; st.ok() && step <= s.max_steps; ++step) {
    st = data.Next(kBatch, &batch);
    if (!st.ok()) break;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = CpuMs();
    st = trainer.Step(batch, &m);
    const double cpu = CpuMs() - c0;
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!st.ok()) break;
    r.losses.push_back(m.loss);
    r.step_ms.push_back(ms);
    r.cpu_ms.push_back(cpu);
    train_s += ms / 1e3;
    cpu_s += cpu / 1e3;
    if (!r.steps_to_target && step % kEvalEvery == 0) {
      Metrics e;
      st = trainer.model().Forward(held, &e);
      r.accuracy = e.accuracy();
      if (st.ok() && r.accuracy >= kTarget) {
        r.steps_to_target = step;
        r.seconds_to_target = train_s;
        r.cpu_seconds_to_target = cpu_s;
      }
    }
    // Past 90%, steps go on to min_steps for the median's sake.
    if (r.steps_to_target && step >= s.min_steps) break;
  }
  if (!st.ok()) {
    r.ok = false;
    r.error = st.ToString();
  }
  return r;
}

// The median of the steps after the first kSkip.
double TimedMedian(const std::vector<double>& ms) {
  return Median({ms.begin() + std::min(kSkip, ms.size()), ms.end()});
}

void PrintRun(const Result& r, size_t threads, bool last) {
  const double ms = TimedMedian(r.step_ms), cpu = TimedMedian(r.cpu_ms);
  std::printf(
      "    {\"threads\": %zu, \"steps\": %zu, \"msPerStep\": %.6g, \"cpuMsPerStep\": %.6g, "
      "\"stepsPerSecond\": %.6g, ",
      threads, r.step_ms.size(), ms, cpu, ms > 0 ? 1e3 / ms : 0.0);
  if (r.steps_to_target) {
    std::printf("\"stepsTo90\": %zu, \"secondsTo90\": %.6g, \"cpuSecondsTo90\": %.6g, ",
                r.steps_to_target, r.seconds_to_target, r.cpu_seconds_to_target);
  } else {
    std::printf("\"stepsTo90\": null, \"secondsTo90\": null, \"cpuSecondsTo90\": null, ");
  }
  std::printf("\"accuracy\": %.6g, \"firstLoss\": %.9g, \"lastLoss\": %.9g}%s\n", r.accuracy,
              r.losses.empty() ? 0.0 : r.losses.front(), r.losses.empty() ? 0.0 : r.losses.back(),
              last ? "" : ",");
}

// ---- --threads: one thread against two ----

// The median over rounds of t1 / t2 and the medians of t1 and t2 (ms).
struct Paired {
  double ratio, one, two;
};
Paired PairedMedians(const std::vector<double>& one, const std::vector<double>& two) {
  std::vector<double> ratios;
  for (size_t i = 0; i < one.size(); ++i) ratios.push_back(one[i] / two[i]);
  return {Median(ratios), Median(one), Median(two)};
}

// Nanoseconds per round trip of one cache line between this thread and
// another, each waiting for the other's write.
double RoundTripNs() {
  constexpr int kTrips = 100000;
  std::atomic<int> flag{0};
  std::thread other([&] {
    for (int i = 0; i < kTrips; ++i) {
      while (flag.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      flag.store(2 * i + 2, std::memory_order_release);
    }
  });
  const double t0 = harness::WallSeconds();
  for (int i = 0; i < kTrips; ++i) {
    flag.store(2 * i + 1, std::memory_order_release);
    while (flag.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  const double ns = (harness::WallSeconds() - t0) * 1e9 / kTrips;
  other.join();
  return ns;
}

// Microseconds per Run of `tasks` empty tasks on `pool`, back to back.
double RunMicros(attnkit::ThreadPool& pool, size_t tasks) {
  const size_t calls = 20000;
  std::atomic<size_t> sink{0};
  const double t0 = harness::WallSeconds();
  for (size_t i = 0; i < calls; ++i) {
    pool.Run(tasks, [&](size_t t, size_t) { sink.fetch_add(t, std::memory_order_relaxed); });
  }
  return (harness::WallSeconds() - t0) * 1e6 / calls;
}

// The products C [M, N] = A B (A [M, K], B [K, N]), A B^T (B [N, K]) and
// A^T B (A [K, M]) at the model's shapes (banded over the pool), every call
// splitting.
void ThreadsProducts(attnkit::ThreadPool& pool, size_t rounds) {
  const attnkit::internal::PoolCutoffScope every_call(0);
  std::printf(
      "\n| product | M x K x N | multiply-adds | 1 thread us | 2 threads us | 2 threads' speed "
      "|\n");
  std::printf("|---|---|---:|---:|---:|---:|\n");
  enum Kind { kAB, kABt, kAtB };
  const char* kNames[] = {"A B", "A B^T", "A^T B"};
  const size_t shapes[][4] = {
      {kAB, 16, 16, 16},     {kAB, 32, 32, 32},     {kAB, 64, 32, 64},    {kAB, 128, 32, 64},
      {kAB, 128, 64, 96},    {kAB, 256, 64, 96},    {kAB, 768, 32, 96},   {kAB, 768, 96, 96},
      {kAB, 768, 96, 288},   {kAB, 768, 128, 512},  {kAB, 768, 512, 128}, {kABt, 768, 288, 96},
      {kABt, 768, 512, 128}, {kAtB, 64, 768, 256},  {kAtB, 96, 768, 96},  {kAtB, 96, 768, 288},
      {kAtB, 128, 768, 384}, {kAtB, 128, 768, 512}, {kAtB, 288, 768, 96}, {kAtB, 512, 768, 128}};
  for (const auto& shape : shapes) {
    const size_t kind = shape[0], M = shape[1], K = shape[2], N = shape[3];
    const std::vector<float> a = harness::Random(M * K, 1), b = harness::Random(K * N, 2);
    std::vector<float> c(M * N);
    const attnkit::ConstMatrixView A = kind == kAtB ? attnkit::ConstMatrixView(a.data(), K, M)
                                                    : attnkit::ConstMatrixView(a.data(), M, K);
    const attnkit::ConstMatrixView B = kind == kABt ? attnkit::ConstMatrixView(b.data(), N, K)
                                                    : attnkit::ConstMatrixView(b.data(), K, N);
    const attnkit::MatrixView C(c.data(), M, N);
    std::vector<double> one, two;
    for (size_t r = 0; r < rounds; ++r) {
      for (attnkit::ThreadPool* p : {static_cast<attnkit::ThreadPool*>(nullptr), &pool}) {
        const double us = harness::BestWallMicros(0.02, [&] {
          if (kind == kAtB) {
            (void)attnkit::internal::ProductTransposedA(A, B, C, "A", "A^T B", p);
          } else {
            (void)attnkit::internal::Product(A, B, C, kind == kABt, "A", "A B", p);
          }
        });
        (p ? two : one).push_back(us);
      }
    }
    const Paired m = PairedMedians(one, two);
    std::printf("| %s | %zu x %zu x %zu | %.3g | %.2f | %.2f | %.2fx |\n", kNames[kind], M, K, N,
                double(M * K * N), m.one, m.two, m.ratio);
  }
}

// The GPT's attention at the presets' shapes (causal, bshd, d_v = d_k): the
// training forward and the backward from its O and lse, as the model calls
// them (the cut-off as built), each on one thread and on the pool in turns.
void ThreadsAttention(attnkit::ThreadPool& pool, size_t rounds) {
  struct Shape {
    const char* name;
    size_t batch, seq_len, num_heads, d_k;
  };
  const Shape shapes[] = {{"small", 16, 32, 4, 16},
                          {"default", 12, 64, 4, 24},
                          {"nanogpt", 12, 64, 4, 32},
                          {"one head of T 256", 1, 256, 1, 64}};
  std::printf(
      "\n| attention (B x T, heads x d_k) | pass | 1 thread us | 2 threads us | 2 threads' speed |"
      "\n|---|---|---:|---:|---:|\n");
  for (const Shape& s : shapes) {
    const size_t N = s.batch * s.seq_len, cols = s.num_heads * s.d_k;
    const std::vector<float> q = harness::Random(N * cols, 1), k = harness::Random(N * cols, 2),
                             v = harness::Random(N * cols, 3), dout = harness::Random(N * cols, 4);
    std::vector<float> out(N * cols), lse(N * s.num_heads), dq(N * cols), dk(N * cols),
        dv(N * cols);
    const attnkit::ConstMatrixView Q(q.data(), N, cols), K(k.data(), N, cols), V(v.data(), N, cols),
        dO(dout.data(), N, cols);
    const attnkit::MatrixView O(out.data(), N, cols), L(lse.data(), N * s.num_heads, 1),
        dQ(dq.data(), N, cols), dK(dk.data(), N, cols), dV(dv.data(), N, cols);
    attnkit::HeadConfig heads;
    heads.num_heads = heads.num_kv_heads = s.num_heads;
    heads.d_k = heads.d_v = s.d_k;
    for (const bool backward : {false, true}) {
      std::vector<double> one, two;
      for (size_t r = 0; r < rounds; ++r) {
        for (attnkit::ThreadPool* p : {static_cast<attnkit::ThreadPool*>(nullptr), &pool}) {
          attnkit::AttentionOptions o;
          o.causal = true;
          o.pool = p;
          const double us = harness::BestWallMicros(0.05, [&] {
            if (backward) {
              (void)attnkit::MultiHeadAttentionQKVBackward(Q, K, V, O, dO, L, s.batch, heads, o, dQ,
                                                           dK, dV);
            } else {
              (void)attnkit::MultiHeadAttentionQKVForTraining(Q, K, V, s.batch, heads, o, O, L);
            }
          });
          (p ? two : one).push_back(us);
        }
      }
      const Paired m = PairedMedians(one, two);
      std::printf("| %s (%zu x %zu, %zu x %zu) | %s | %.2f | %.2f | %.2fx |\n", s.name, s.batch,
                  s.seq_len, s.num_heads, s.d_k, backward ? "backward" : "forward", m.one, m.two,
                  m.ratio);
    }
  }
}

struct GptShape {
  const char* name;
  size_t num_layers, num_heads, d_model, d_ff, seq_len, batch, vocab;
};

// The GPT shapes of --threads and --profile: the Language presets and nanoGPT's.
constexpr GptShape kGptShapes[] = {
    {"tiny", 1, 2, 32, 128, 32, 4, 81},
    {"small", 2, 4, 64, 256, 32, 16, 81},
    {"default", 3, 4, 96, 288, 64, 12, 81},
    {"nanogpt", 4, 4, 128, 512, 64, 12, 84},
};

// The model of shape g: LayerNorm, no biases, as the page's models.
ModelConfig GptConfig(const GptShape& g) {
  ModelConfig c;
  c.vocab_size = g.vocab;
  c.max_seq_len = g.seq_len;
  c.d_model = g.d_model;
  c.num_layers = g.num_layers;
  c.num_heads = g.num_heads;
  c.d_ff = g.d_ff;
  c.layer_norm = true;
  return c;
}

// A batch of g's shape, tokens and targets uniform from rng.
void RandomBatch(const GptShape& g, Rng* rng, Batch* batch) {
  batch->batch = g.batch;
  batch->seq_len = g.seq_len;
  batch->tokens.clear();
  batch->targets.clear();
  for (size_t i = 0; i < g.batch * g.seq_len; ++i) {
    batch->tokens.push_back(int32_t(rng->Below(g.vocab)));
    batch->targets.push_back(int32_t(rng->Below(g.vocab)));
  }
}

// One round: `steps` steps of each trainer in turns (one thread, then two),
// on the same batches; the wall ms per step of each.
void GptRound(Trainer* one, Trainer* two, const GptShape& g, Rng* rng, size_t steps, double* ms_one,
              double* ms_two, bool* ok) {
  Batch batch;
  double sum[2] = {0, 0};
  for (size_t s = 0; s < steps; ++s) {
    RandomBatch(g, rng, &batch);
    Metrics m[2];
    Trainer* trainers[2] = {one, two};
    for (size_t t = 0; t < 2; ++t) {
      const double t0 = harness::WallSeconds();
      *ok &= trainers[t]->Step(batch, &m[t]).ok();
      sum[t] += (harness::WallSeconds() - t0) * 1e3;
    }
    *ok &= std::memcmp(&m[0].loss, &m[1].loss, sizeof(float)) == 0;
  }
  *ms_one = sum[0] / double(steps);
  *ms_two = sum[1] / double(steps);
}

void ThreadsGpt(attnkit::ThreadPool& pool, size_t rounds, const std::vector<double>& cutoffs) {
  std::printf(
      "\n| GPT step | cut-off | multiply-adds of x W_O | 1 thread ms | 2 threads ms | "
      "2 threads' speed | identical |\n");
  std::printf("|---|---|---:|---:|---:|---:|---|\n");
  for (const GptShape& g : kGptShapes) {
    for (const double cutoff_ : cutoffs) {
      const attnkit::internal::PoolCutoffScope cutoff(cutoff_);
      const ModelConfig c = GptConfig(g);
      AdamWConfig adam;
      adam.learning_rate = 3e-3f;
      Trainer one, two;
      bool ok = one.Init(c, 1, adam).ok() && two.Init(c, 1, adam).ok();
      two.model().set_pool(&pool);
      Rng rng(5);
      const size_t steps = g.d_model >= 96 ? 4 : 16;
      double warm1, warm2;
      GptRound(&one, &two, g, &rng, 2, &warm1, &warm2, &ok);  // buffers sized
      std::vector<double> t1, t2;
      for (size_t r = 0; r < rounds && ok; ++r) {
        double a, b;
        GptRound(&one, &two, g, &rng, steps, &a, &b, &ok);
        t1.push_back(a);
        t2.push_back(b);
      }
      std::vector<uint8_t> w1, w2;
      ok = ok && ExportWeights(one.model(), &w1).ok() && ExportWeights(two.model(), &w2).ok() &&
           w1 == w2;
      const Paired m = PairedMedians(t1, t2);
      char label[48];
      std::snprintf(label, sizeof(label), "%.3g%s", cutoff_,
                    cutoff_ == 0                                         ? " (every call)"
                    : cutoff_ == attnkit::internal::kPoolMinMultiplyAdds ? " (as built)"
                                                                         : "");
      std::printf(
          "| %s (%zu layers, d %zu, d_ff %zu, T %zu, B %zu) | %s | %.3g | %.3f | %.3f | "
          "%.2fx | %s |\n",
          g.name, g.num_layers, g.d_model, g.d_ff, g.seq_len, g.batch, label,
          double(g.batch * g.seq_len) * double(g.d_model) * double(g.d_model), m.one, m.two,
          m.ratio, ok ? "yes" : "NO");
    }
  }
}

int Threads(size_t rounds, const std::vector<double>& cutoffs) {
  double load[1] = {-1};
  if (getloadavg(load, 1) != 1) load[0] = -1;
  attnkit::ThreadPool pool(2);
  std::printf(
      "# attnkit_train_bench --threads: target %s, %zu threads on this machine, load %.2f, "
      "cut-off as built %.3g multiply-adds, a cache line's round trip between two threads "
      "%.0f ns\n",
      attnkit::targets::Name(attnkit::targets::Current()), attnkit::ThreadPool::MaxThreads(),
      load[0], attnkit::internal::kPoolMinMultiplyAdds, RoundTripNs());
  std::printf("\npool of 2: %.2f us per Run of 2 empty tasks, %.2f us of 16 (back to back)\n",
              RunMicros(pool, 2), RunMicros(pool, 16));
  ThreadsProducts(pool, rounds);
  ThreadsAttention(pool, rounds);
  ThreadsGpt(pool, rounds, cutoffs);
  if (getloadavg(load, 1) != 1) load[0] = -1;
  std::printf("\nload at the end %.2f, a cache line's round trip %.0f ns\n", load[0],
              RoundTripNs());
  return 0;
}

// --profile: `steps` training steps of the GPT shape `name` (kGptShapes) on
// `threads` threads (1: no pool), for a profiler to sample
// (bench/native/phases.mjs); the median wall and CPU ms per step on stderr.
int Profile(const char* name, size_t threads, size_t steps) {
  const GptShape* g = nullptr;
  for (const GptShape& s : kGptShapes) g = std::strcmp(s.name, name) == 0 ? &s : g;
  if (!g) {
    std::fprintf(stderr, "--profile: no GPT shape named %s (tiny, small, default, nanogpt)\n",
                 name);
    return 2;
  }
  AdamWConfig adam;
  adam.learning_rate = 3e-3f;
  Trainer trainer;
  attnkit::Status st = trainer.Init(GptConfig(*g), 1, adam);
  std::optional<attnkit::ThreadPool> pool;
  if (threads > 1) pool.emplace(threads);
  trainer.model().set_pool(pool ? &*pool : nullptr);
  Rng rng(5);
  Batch batch;
  std::vector<double> wall, cpu;
  for (size_t s = 0; st.ok() && s < steps; ++s) {
    RandomBatch(*g, &rng, &batch);
    Metrics m;
    const double t0 = harness::WallSeconds(), c0 = CpuMs();
    st = trainer.Step(batch, &m);
    cpu.push_back(CpuMs() - c0);
    wall.push_back((harness::WallSeconds() - t0) * 1e3);
  }
  if (!st.ok()) {
    std::fprintf(stderr, "--profile: %s\n", st.ToString().c_str());
    return 1;
  }
  double load[1] = {-1};
  if (getloadavg(load, 1) != 1) load[0] = -1;
  std::fprintf(stderr,
               "profile %s: %zu threads, %zu steps, median %.3f ms per step (CPU %.3f ms), "
               "load %.2f\n",
               g->name, threads, steps, TimedMedian(wall), TimedMedian(cpu), load[0]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--threads") == 0) {
    std::vector<double> cutoffs;
    for (int i = 3; i < argc; ++i) cutoffs.push_back(std::atof(argv[i]));
    if (cutoffs.empty()) cutoffs = {0, attnkit::internal::kPoolMinMultiplyAdds};
    return Threads(argc > 2 ? size_t(std::atoi(argv[2])) : 7, cutoffs);
  }
  if (argc > 2 && std::strcmp(argv[1], "--profile") == 0) {
    return Profile(argv[2], argc > 3 ? size_t(std::atoi(argv[3])) : 1,
                   argc > 4 ? size_t(std::atoi(argv[4])) : 200);
  }
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::vector<Setting> settings(2);
  const size_t min_steps = quick ? 100 : 300;
  settings[0] = {"induction", {}, 2, 50, quick ? 600u : 3000u, min_steps};
  settings[0].task.kind = TaskKind::kInduction;
  settings[0].task.length = 8;
  settings[0].task.padding = 8;
  settings[0].task.vocab_size = 24;
  settings[1] = {"copy", {}, 1, 20, quick ? 300u : 2000u, min_steps};
  settings[1].task.kind = TaskKind::kCopy;
  settings[1].task.length = 6;
  settings[1].task.vocab_size = 10;

  // The 1-minute load average (-1 if unknown), at the start and the end.
  double load_start = -1;
  if (getloadavg(&load_start, 1) != 1) load_start = -1;
  const size_t max_threads = attnkit::ThreadPool::MaxThreads();
  std::printf("{\n  \"target\": \"%s\", \"maxThreads\": %zu, \"batch\": %zu, \"quick\": %s,\n",
              attnkit::targets::Name(attnkit::targets::Current()), max_threads, kBatch,
              quick ? "true" : "false");
  std::printf("  \"tasks\": [\n");
  int status = 0;
  for (size_t i = 0; i < settings.size(); ++i) {
    const Setting& s = settings[i];
    const Result one = Train(s, nullptr);
    std::optional<attnkit::ThreadPool> pool;
    if (max_threads > 1) pool.emplace(max_threads);
    const Result all = Train(s, pool ? &*pool : nullptr);
    if (!one.ok || !all.ok) {
      std::fprintf(stderr, "train bench: %s: %s\n", s.name, (one.ok ? all : one).error.c_str());
      status = 1;
    }
    const size_t n = std::min(one.losses.size(), all.losses.size());
    const bool identical =
        one.losses.size() == all.losses.size() &&
        std::memcmp(one.losses.data(), all.losses.data(), n * sizeof(float)) == 0;
    std::printf(
        "  {\"task\": \"%s\", \"seqLen\": %zu, \"vocabSize\": %zu, \"numLayers\": %zu, "
        "\"warmupSteps\": %zu, \"maxSteps\": %zu, \"identicalLosses\": %s, \"runs\": [\n",
        s.name, TaskSeqLen(s.task), s.task.vocab_size, s.num_layers, s.warmup, s.max_steps,
        identical ? "true" : "false");
    PrintRun(one, 1, false);
    PrintRun(all, max_threads, true);
    std::printf("  ]}%s\n", i + 1 < settings.size() ? "," : "");
    std::fprintf(stderr,
                 "native train %s: 1 thread %.3f ms/step (CPU %.3f), %zu threads %.3f ms/step, "
                 "90%% at %zu steps\n",
                 s.name, TimedMedian(one.step_ms), TimedMedian(one.cpu_ms), max_threads,
                 TimedMedian(all.step_ms), one.steps_to_target);
  }
  double load[1] = {-1};
  if (getloadavg(load, 1) != 1) load[0] = -1;
  std::printf("  ],\n  \"loadAverageStart\": %.2f, \"loadAverageEnd\": %.2f\n}\n", load_start,
              load[0]);
  return status;
}
