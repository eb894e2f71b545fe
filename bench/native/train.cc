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
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "attnkit/model.h"
#include "attnkit/ops.h"
#include "attnkit/tasks.h"
#include "attnkit/thread_pool.h"
#include "bench/native/harness.h"

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

}  // namespace

int main(int argc, char** argv) {
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
