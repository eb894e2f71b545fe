// The native benchmarks' harness: clocks, seeded inputs, the median and the
// timing loops, one copy for every program in bench/native (bench.cc,
// train.cc, language.cc, peak.cc and the A/B rounds *_ab.cc). An A/B program
// is one round, printing "name us_per_call" for bench/ab/pair.mjs to alternate
// two builds round by round; its times are CPU time of this process (one
// thread), or the best wall time of a call where a pool's threads work too
// (BestWallMicros).
#ifndef ATTNKIT_BENCH_NATIVE_HARNESS_H_
#define ATTNKIT_BENCH_NATIVE_HARNESS_H_

#include <time.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace harness {

// Seconds of CPU time of this process (every thread of it).
inline double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

// Milliseconds of CPU time of this process.
inline double CpuMs() { return 1e3 * CpuSeconds(); }

// Seconds of CPU time of the calling thread.
inline double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

// Seconds of a monotonic wall clock: for calls that use a pool (the workers'
// time is not the caller's) and for rates a user sees.
inline double WallSeconds() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

// n values uniform in [-scale, scale), seeded.
inline std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// The median as the upper middle element for an even count (0 when empty), as
// bench/lib/stats.mjs takes it.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Mean microseconds of CPU time per call of fn: one untimed call, then
// batches of calls until `budget` seconds have passed. A batch is at least
// `batch` calls and at least kMinBatchSeconds long: reading the process's CPU
// clock is a system call that costs more than a small call itself.
constexpr double kMinBatchSeconds = 50e-6;
inline double MicrosPerCall(double budget, const std::function<void()>& fn, size_t batch = 1) {
  fn();
  for (double t0 = CpuSeconds();; batch *= 2) {
    for (size_t i = 0; i < batch; ++i) fn();
    const double t1 = CpuSeconds();
    if (t1 - t0 >= kMinBatchSeconds) break;
    t0 = t1;
  }
  const double start = CpuSeconds();
  size_t calls = 0;
  double now = start;
  while (calls == 0 || now - start < budget) {
    for (size_t i = 0; i < batch; ++i) fn();
    calls += batch;
    now = CpuSeconds();
  }
  return (now - start) / calls * 1e6;
}

// Checks fn's first call and prints "name us_per_call" (or "name error").
inline void PrintTime(const std::string& name, double budget, const std::function<bool()>& fn) {
  if (!fn()) {
    std::printf("%s error\n", name.c_str());
    return;
  }
  std::printf("%s %.3f\n", name.c_str(), MicrosPerCall(budget, [&] { fn(); }));
}

// The fewest microseconds of wall time one call of fn took, over calls for
// `budget` seconds: on a shared machine the mean of a call that needs two
// threads at once mostly measures the other programs; its best does not.
inline double BestWallMicros(double budget, const std::function<void()>& fn) {
  fn();
  double best = 1e30;
  for (const double end = WallSeconds() + budget; WallSeconds() < end;) {
    const double start = WallSeconds();
    fn();
    best = std::min(best, WallSeconds() - start);
  }
  return best * 1e6;
}

// As PrintTime, by BestWallMicros (calls with a pool, whose workers' time is
// not the caller's).
inline void PrintBestWallTime(const std::string& name, double budget,
                              const std::function<bool()>& fn) {
  if (!fn()) {
    std::printf("%s error\n", name.c_str());
    return;
  }
  std::printf("%s %.3f\n", name.c_str(), BestWallMicros(budget, [&] { fn(); }));
}

}  // namespace harness

#endif  // ATTNKIT_BENCH_NATIVE_HARNESS_H_
