// Native benchmarks (Google Benchmark): attnkit against the peers a C++ user
// would pick instead, on one core, fp32, the same shapes in the same run.
//   attnkit   the fused Highway kernel (dynamic dispatch: AVX-512 here)
//   openblas  S = Q K^T and O = P V with cblas_sgemm on blocks of 64 query
//             rows; causal blocks only multiply the keys they can see (also
//             for the multi-head layer, with sgemm projections, and decoding)
//   loop      a straightforward C++ loop (two passes per query row), -O3
//   peak      the FMA throughput of the best Highway target (bench/native/peak.cc)
// GFLOP/s counts 4 * T_q * T_k * d per head (QK^T and PV, 2 flops per FMA),
// also for causal runs, so a causal figure reads as "dense-equivalent" speed.
// attnkit_bench --queries times T_q = 1..9 queries against T_k keys (d = 64),
// the native side of the small-calls sweep (see Queries); attnkit_bench
// --small the fixed cost of a small call against a plain C++ loop (see
// Small). The JSON's context
// names the kernels
// the libraries picked on this machine: attnkit's Highway target, OpenBLAS's
// core (openblas_get_corename) and build (openblas_get_config).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "attnkit/attnkit.h"
#include "bench/native/harness.h"
#include "bench/native/plain_head.h"
#include "src/core/plan.h"

namespace attnkit_bench {
// GFLOP/s of `iterations` x 16 FMAs (bench/native/peak.cc): over the wall time
// at the widest vector of the best target; over this thread's CPU time at a
// width of `bits` (0: the widest; 0 GFLOP/s if the CPU has no such vector).
double FmaPeakGflops(size_t iterations);
double FmaPeakCpuGflops(size_t iterations, size_t bits);
}  // namespace attnkit_bench

namespace {

constexpr size_t kD = 64;

using harness::Random;

// A weight of the multi-head layer [512, 512]: uniform in +-1/sqrt(512), so
// that projections keep the scale of x (unscaled, the scores reach ~100 and the
// softmax underflows into subnormals, which OpenBLAS then multiplies slowly).
std::vector<float> LayerWeight(uint32_t seed) {
  std::vector<float> w = Random(512 * 512, seed);
  for (float& x : w) x /= std::sqrt(512.0f);
  return w;
}

struct Head {
  size_t T;
  std::vector<float> q, k, v, out;
  explicit Head(size_t t)
      : T(t), q(Random(t * kD, 1)), k(Random(t * kD, 2)), v(Random(t * kD, 3)), out(t * kD) {}
};

void SetFlops(benchmark::State& state, double flops_per_iteration) {
  state.counters["GFLOPs"] =
      benchmark::Counter(flops_per_iteration * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// One head; args T, causal and (BM_AttnkitThreads only) the pool's threads.
void BM_Attnkit(benchmark::State& state) {
  Head h(state.range(0));
  attnkit::AttentionOptions o;
  o.causal = state.range(1) != 0;
  std::optional<attnkit::ThreadPool> pool;
  if (state.range(2) > 1) o.pool = &pool.emplace(state.range(2));
  const attnkit::ConstMatrixView Q(h.q.data(), h.T, kD), K(h.k.data(), h.T, kD),
      V(h.v.data(), h.T, kD);
  for (auto _ : state) {
    const attnkit::Status s =
        attnkit::Attention(Q, K, V, o, attnkit::MatrixView(h.out.data(), h.T, kD));
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(h.out.data());
  }
  SetFlops(state, 4.0 * h.T * h.T * kD);
}

// softmax of row [n] in place, then scaled into p; the row max is subtracted.
void SoftmaxRow(float* row, size_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (size_t j = 0; j < n; ++j) m = std::max(m, row[j]);
  float sum = 0.0f;
  for (size_t j = 0; j < n; ++j) sum += (row[j] = std::exp(row[j] - m));
  const float inv = 1.0f / sum;
  for (size_t j = 0; j < n; ++j) row[j] *= inv;
}

// One head with OpenBLAS: out [T_q, 64] = softmax(q k^T / 8) v for q [T_q, 64],
// k, v [T_k, 64], rows `ld` floats apart (a head's columns of a wider matrix),
// in blocks of 64 query rows (one row: two sgemv); causal (T_q == T_k) blocks
// only multiply the keys they can see. `s` is scratch [64, T_k].
void OpenBlasHead(const float* q, const float* k, const float* v, float* out, size_t T_q,
                  size_t T_k, size_t ld, bool causal, float* s) {
  const size_t kBlock = 64;
  const float scale = 1.0f / std::sqrt(static_cast<float>(kD));
  if (T_q == 1) {  // decoding: sgemv, faster than sgemm on one row
    cblas_sgemv(CblasRowMajor, CblasNoTrans, T_k, kD, scale, k, ld, q, 1, 0.0f, s, 1);
    SoftmaxRow(s, T_k);
    cblas_sgemv(CblasRowMajor, CblasTrans, T_k, kD, 1.0f, v, ld, s, 1, 0.0f, out, 1);
    return;
  }
  for (size_t i0 = 0; i0 < T_q; i0 += kBlock) {
    const size_t rows = std::min(kBlock, T_q - i0);
    const size_t keys = causal ? i0 + rows : T_k;  // skip fully masked key blocks
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, keys, kD, scale, q + i0 * ld, ld, k,
                ld, 0.0f, s, keys);
    for (size_t r = 0; r < rows; ++r) {
      float* row = s + r * keys;
      const size_t n = causal ? i0 + r + 1 : keys;
      for (size_t j = n; j < keys; ++j) row[j] = 0.0f;
      SoftmaxRow(row, n);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, kD, keys, 1.0f, s, keys, v, ld,
                0.0f, out + i0 * ld, ld);
  }
}

void BM_OpenBlas(benchmark::State& state) {
  Head h(state.range(0));
  std::vector<float> s(64 * h.T);
  for (auto _ : state) {
    OpenBlasHead(h.q.data(), h.k.data(), h.v.data(), h.out.data(), h.T, h.T, kD,
                 state.range(1) != 0, s.data());
    benchmark::DoNotOptimize(h.out.data());
  }
  SetFlops(state, 4.0 * h.T * h.T * kD);
}

void BM_Loop(benchmark::State& state) {
  Head h(state.range(0));
  const bool causal = state.range(1) != 0;
  std::vector<float> row(h.T);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kD));
  for (auto _ : state) {
    for (size_t i = 0; i < h.T; ++i) {
      const size_t n = causal ? i + 1 : h.T;
      for (size_t j = 0; j < n; ++j) {
        float dot = 0.0f;
        for (size_t c = 0; c < kD; ++c) dot += h.q[i * kD + c] * h.k[j * kD + c];
        row[j] = dot * scale;
      }
      SoftmaxRow(row.data(), n);
      float* o = h.out.data() + i * kD;
      std::fill(o, o + kD, 0.0f);
      for (size_t j = 0; j < n; ++j)
        for (size_t c = 0; c < kD; ++c) o[c] += row[j] * h.v[j * kD + c];
    }
    benchmark::DoNotOptimize(h.out.data());
  }
  SetFlops(state, 4.0 * h.T * h.T * kD);
}

// Multi-head self-attention with projections and W_O: B=1, T=512, d_model=512,
// 8 heads; state.range(0) threads. With `packed`, the weights are packed once
// (PackMultiHeadWeights) before the timed calls, as a model's constant
// weights are; without, every call checks and packs them.
void MultiHeadLayer(benchmark::State& state, bool packed) {
  const size_t T = 512, dm = 512, h = 8;
  const auto X = Random(T * dm, 4), wq = LayerWeight(5), wk = LayerWeight(6), wv = LayerWeight(7),
             wo = LayerWeight(8);
  std::vector<float> out(T * dm);
  attnkit::MultiHeadWeights w{
      attnkit::ConstMatrixView(wq.data(), dm, dm), attnkit::ConstMatrixView(wk.data(), dm, dm),
      attnkit::ConstMatrixView(wv.data(), dm, dm), attnkit::ConstMatrixView(wo.data(), dm, dm)};
  attnkit::HeadConfig config{h, h, 0, 0};
  attnkit::PackedMultiHeadWeights pack;
  if (packed && !attnkit::PackMultiHeadWeights(w, config, &pack).ok())
    return state.SkipWithError("pack");
  attnkit::ThreadPool pool(state.range(0));
  attnkit::AttentionOptions options;
  options.pool = &pool;
  for (auto _ : state) {
    const attnkit::ConstMatrixView x(X.data(), T, dm);
    const attnkit::MatrixView o(out.data(), T, dm);
    const attnkit::Status s = packed ? attnkit::MultiHeadAttention(x, 1, pack, config, options, o)
                                     : attnkit::MultiHeadAttention(x, 1, w, config, options, o);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(out.data());
  }
  // 4 projections (2 T dm dm each) + attention (4 T T dm over all heads).
  SetFlops(state, 4 * 2.0 * T * dm * dm + 4.0 * T * T * dm);
}
void BM_AttnkitMultiHead(benchmark::State& state) { MultiHeadLayer(state, true); }
void BM_AttnkitMultiHeadPerCall(benchmark::State& state) { MultiHeadLayer(state, false); }

// Decoding: one query (8 heads, d = 64) against a KV cache of `cache` tokens,
// with state.range(1) threads.
void BM_AttnkitDecode(benchmark::State& state) {
  const size_t tokens = state.range(0), h = 8;
  attnkit::KVCache cache;
  if (!attnkit::KVCache::Create(1, h, kD, kD, tokens, &cache).ok())
    return state.SkipWithError("cache");
  const auto kv = Random(tokens * h * kD, 9);
  if (!cache
           .Append(attnkit::ConstMatrixView(kv.data(), tokens, h * kD),
                   attnkit::ConstMatrixView(kv.data(), tokens, h * kD))
           .ok()) {
    return state.SkipWithError("append");
  }
  const auto q = Random(h * kD, 10);
  std::vector<float> out(h * kD);
  attnkit::ThreadPool pool(state.range(1));
  attnkit::DecodeOptions options;
  options.pool = &pool;
  for (auto _ : state) {
    const attnkit::Status s =
        attnkit::AttendCached(attnkit::ConstMatrixView(q.data(), 1, h * kD), cache, h, options,
                              attnkit::MatrixView(out.data(), 1, h * kD));
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(out.data());
  }
  SetFlops(state, 4.0 * tokens * kD * h);
}

// The same layer as BM_AttnkitMultiHead with OpenBLAS: sgemm projections,
// OpenBlasHead on each head's columns, sgemm with W_O.
void BM_OpenBlasMultiHead(benchmark::State& state) {
  const size_t T = 512, dm = 512, h = 8;
  const auto X = Random(T * dm, 4), wq = LayerWeight(5), wk = LayerWeight(6), wv = LayerWeight(7),
             wo = LayerWeight(8);
  std::vector<float> q(T * dm), k(T * dm), v(T * dm), heads(T * dm), out(T * dm), s(64 * T);
  const auto project = [&](const float* x, const std::vector<float>& w, float* y) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, dm, dm, 1.0f, x, dm, w.data(), dm,
                0.0f, y, dm);
  };
  for (auto _ : state) {
    project(X.data(), wq, q.data());
    project(X.data(), wk, k.data());
    project(X.data(), wv, v.data());
    for (size_t i = 0; i < h; ++i) {
      OpenBlasHead(q.data() + i * kD, k.data() + i * kD, v.data() + i * kD, heads.data() + i * kD,
                   T, T, dm, false, s.data());
    }
    project(heads.data(), wo, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  SetFlops(state, 4 * 2.0 * T * dm * dm + 4.0 * T * T * dm);
}

// The same decoding step as BM_AttnkitDecode with OpenBLAS: OpenBlasHead with
// one query row on each head's columns of the cache [tokens, 8 * 64].
void BM_OpenBlasDecode(benchmark::State& state) {
  const size_t tokens = state.range(0), h = 8;
  const auto kv = Random(tokens * h * kD, 9);
  const auto q = Random(h * kD, 10);
  std::vector<float> out(h * kD), s(tokens);
  for (auto _ : state) {
    for (size_t i = 0; i < h; ++i) {
      OpenBlasHead(q.data() + i * kD, kv.data() + i * kD, kv.data() + i * kD, out.data() + i * kD,
                   1, tokens, h * kD, false, s.data());
    }
    benchmark::DoNotOptimize(out.data());
  }
  SetFlops(state, 4.0 * tokens * kD * h);
}

// Training, one head (d = 64, one thread): args T and causal. BM_AttnkitFwdBwd
// times AttentionForTraining then AttentionBackward with its saved O and lse;
// BM_AttnkitBwd the backward alone. GFLOP/s counts the FlashAttention-2
// convention, forward 4 T^2 d and backward 10 T^2 d (recomputation not
// counted), halved when causal.
double TrainFlops(size_t T, bool causal, bool forward) {
  return (forward ? 14.0 : 10.0) * T * T * kD * (causal ? 0.5 : 1.0);
}

struct TrainHead : Head {
  std::vector<float> lse, dout, dq, dk, dv;
  explicit TrainHead(size_t t)
      : Head(t), lse(t), dout(Random(t * kD, 4)), dq(t * kD), dk(t * kD), dv(t * kD) {}
  attnkit::Status Forward(const attnkit::AttentionOptions& o) {
    return attnkit::AttentionForTraining(View(q), View(k), View(v), o,
                                         attnkit::MatrixView(out.data(), T, kD),
                                         attnkit::MatrixView(lse.data(), T, 1));
  }
  attnkit::Status Backward(const attnkit::AttentionOptions& o) {
    return attnkit::AttentionBackward(
        View(q), View(k), View(v), View(out), View(dout),
        attnkit::ConstMatrixView(lse.data(), T, 1), o, attnkit::MatrixView(dq.data(), T, kD),
        attnkit::MatrixView(dk.data(), T, kD), attnkit::MatrixView(dv.data(), T, kD));
  }
  attnkit::ConstMatrixView View(const std::vector<float>& m) const {
    return attnkit::ConstMatrixView(m.data(), T, kD);
  }
};

void BM_AttnkitFwdBwd(benchmark::State& state) {
  TrainHead h(state.range(0));
  attnkit::AttentionOptions o;
  o.causal = state.range(1) != 0;
  for (auto _ : state) {
    attnkit::Status s = h.Forward(o);
    if (s.ok()) s = h.Backward(o);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(h.dq.data());
  }
  SetFlops(state, TrainFlops(h.T, o.causal, true));
}

void BM_AttnkitBwd(benchmark::State& state) {
  TrainHead h(state.range(0));
  attnkit::AttentionOptions o;
  o.causal = state.range(1) != 0;
  if (!h.Forward(o).ok()) return state.SkipWithError("forward");
  for (auto _ : state) {
    const attnkit::Status s = h.Backward(o);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(h.dq.data());
  }
  SetFlops(state, TrainFlops(h.T, o.causal, false));
}

// Training the multi-head layer of BM_AttnkitMultiHead (one thread): its
// forward, then MultiHeadAttentionBackward (dX and the four weights'
// gradients; it recomputes the forward). FLOPs: the forward's, and for the
// backward twice the projections' plus 10 T^2 d per head.
void BM_AttnkitMultiHeadTrain(benchmark::State& state) {
  const size_t T = 512, dm = 512, h = 8;
  const auto X = Random(T * dm, 4), wq = LayerWeight(5), wk = LayerWeight(6), wv = LayerWeight(7),
             wo = LayerWeight(8), dout = Random(T * dm, 9);
  std::vector<float> out(T * dm), dx(T * dm), dw[4];
  for (auto& g : dw) g.resize(dm * dm);
  const auto M = [&](const std::vector<float>& m, size_t rows) {
    return attnkit::ConstMatrixView(m.data(), rows, dm);
  };
  const auto G = [&](std::vector<float>& m, size_t rows) {
    return attnkit::MatrixView(m.data(), rows, dm);
  };
  const attnkit::MultiHeadWeights w{M(wq, dm), M(wk, dm), M(wv, dm), M(wo, dm)};
  const attnkit::MultiHeadGradients grads{G(dx, T), G(dw[0], dm), G(dw[1], dm), G(dw[2], dm),
                                          G(dw[3], dm)};
  const attnkit::HeadConfig config{h, h, 0, 0};
  const attnkit::AttentionOptions options;
  for (auto _ : state) {
    attnkit::Status s = attnkit::MultiHeadAttention(M(X, T), 1, w, config, options, G(out, T));
    if (s.ok())
      s = attnkit::MultiHeadAttentionBackward(M(X, T), 1, w, config, options, M(dout, T), grads);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(dx.data());
  }
  SetFlops(state, 3 * 4 * 2.0 * T * dm * dm + 14.0 * T * T * dm);
}

// GFLOPs: over the wall time, as FmaPeakGflops measures it; GFLOPsCpu: over
// this thread's CPU time, the clock of the other benchmarks' GFLOP/s (on a
// shared core the wall time also counts other processes' turns).
void BM_FmaPeak(benchmark::State& state) {
  double gflops = 0, cpu_gflops = 0;
  for (auto _ : state) {
    const double cpu0 = harness::ThreadCpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    gflops = attnkit_bench::FmaPeakGflops(200000000);
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - t0;
    cpu_gflops = gflops * wall.count() / (harness::ThreadCpuSeconds() - cpu0);
  }
  state.counters["GFLOPs"] = gflops;
  state.counters["GFLOPsCpu"] = cpu_gflops;
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (int64_t causal : {0, 1})
    for (int64_t T : {128, 512, 2048, 8192}) b->Args({T, causal, 1});
  b->ArgNames({"T", "causal", "threads"})->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_FmaPeak)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Attnkit)->Apply(Shapes);
BENCHMARK(BM_OpenBlas)->Apply(Shapes);
BENCHMARK(BM_AttnkitFwdBwd)->Apply(Shapes);
BENCHMARK(BM_AttnkitBwd)->Apply(Shapes);
BENCHMARK(BM_Loop)->Apply(Shapes);
// Threads: 1 and every thread of the machine (the figures above are one thread).
const int64_t kThreads = static_cast<int64_t>(attnkit::ThreadPool::MaxThreads());
BENCHMARK(BM_Attnkit)
    ->Name("BM_AttnkitThreads")
    ->ArgNames({"T", "causal", "threads"})
    ->ArgsProduct({{2048}, {0, 1}, {kThreads}})
    ->UseRealTime()  // wall time: the pool's threads are not in the CPU time
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnkitMultiHead)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(kThreads)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnkitMultiHeadPerCall)
    ->ArgName("threads")
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnkitDecode)
    ->ArgNames({"cache", "threads"})
    ->ArgsProduct({{1024, 4096, 16384, 32768}, {1, kThreads}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OpenBlasMultiHead)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnkitMultiHeadTrain)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OpenBlasDecode)
    ->ArgName("cache")
    ->Arg(1024)
    ->Arg(4096)
    ->Arg(16384)
    ->Arg(32768)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

namespace {

// Reads n floats from `path` into v; false if the file is short or missing.
bool ReadFloats(const std::string& path, size_t n, std::vector<float>* v) {
  v->resize(n);
  std::ifstream in(path, std::ios::binary);
  return static_cast<bool>(in.read(reinterpret_cast<char*>(v->data()), n * sizeof(float)));
}

// The vector width of a Highway target in bits (AVX3*: 512, AVX2: 256, the
// 128-bit targets: 128, scalar: 32).
size_t TargetBits(int64_t target) {
  const std::string name = attnkit::targets::Name(target);
  if (name.rfind("AVX3", 0) == 0) return 512;
  if (name == "AVX2") return 256;
  if (name == "SCALAR") return 32;
  return 128;
}

// attnkit_bench --list-targets: each Highway target attnkit can dispatch to on
// this CPU, best first, one "NAME BITS" line each.
int ListTargets() {
  for (const int64_t t : attnkit::targets::Available())
    std::cout << attnkit::targets::Name(t) << " " << TargetBits(t) << std::endl;
  return 0;
}

// attnkit_bench --serve: attnkit native for bench/wasm/bench.mjs, which times it
// in the same rounds as onnxruntime-node (interleaved, so that both see the same
// state of a noisy machine). One thread. Lines on stdin, one answer line each on
// stdout:
//   load T CAUSAL DIR  one head, d = 64: reads DIR/{q,k,v}.f32 ([T, 64] each)
//   layer T DIR [per-call]  a multi-head layer, 8 heads, d_model = 512: reads
//                      DIR/x.f32 [T, 512] and DIR/{W_Q,W_K,W_V,W_O}.f32 [512, 512],
//                      packed once here (PackMultiHeadWeights); with per-call,
//                      every call takes them unpacked (checks and packs them)
//   decode N DIR       one query [1, 512] (8 heads of 64) against a KV cache of N
//                      tokens: reads DIR/q.f32 and DIR/{k,v}.f32 [N, 512]
//                      each of these runs the call once, writes DIR/out.f32 and
//                      answers "ok" (or "error ...")
//   time REPS          runs REPS calls of the last shape loaded; answers the
//                      milliseconds per call, wall-clock then CPU time of this
//                      thread, where the calls run (below the wall time when it
//                      was not running)
//   peak [BITS]        answers the FMA peak in GFLOP/s over this thread's CPU
//                      time, measured now (~20 ms) at BITS (default: the width
//                      of the target timed), so that a share of the peak of the
//                      same width comes from the same round
//   info               answers the Highway target attnkit dispatches to and its
//                      vector width in bits ("AVX2 256"); with --openblas,
//                      "OpenBLAS CORENAME BITS"
// --serve --target NAME: every attnkit call runs on Highway target NAME (one of
// --list-targets, in any case), forced with attnkit::targets::ForceByName; the peak is
// measured with dispatch restored, at NAME's width. --serve --openblas: `load`
// runs OpenBlasHead on the shape instead of attnkit.
int Serve(const std::string& target_name, bool openblas) {
  constexpr size_t kHeads = 8, kModel = kHeads * kD;
  std::vector<float> q, k, v, x, w[4], out;
  attnkit::KVCache cache;
  attnkit::PackedMultiHeadWeights pack;
  std::function<attnkit::Status()> call;
  std::vector<float> scratch;  // OpenBlasHead's [64, T]
  if (!target_name.empty()) {
    const attnkit::Status s = attnkit::targets::ForceByName(target_name.c_str());
    if (!s.ok()) {
      std::cerr << "attnkit_bench --serve --target: " << s.message() << std::endl;
      return 2;
    }
  }
  const int64_t forced = attnkit::targets::Forced();
  const size_t bits = TargetBits(attnkit::targets::Current());
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command, dir;
    words >> command;
    if (command == "load" || command == "layer" || command == "decode") {
      size_t T = 0;
      int causal = 0;
      words >> T;
      if (command == "load") words >> causal;
      words >> dir;
      const auto read = [&](const char* name, size_t n, std::vector<float>* to) {
        return ReadFloats(dir + "/" + name + ".f32", n, to);
      };
      bool ok = true;
      if (command == "load") {
        ok = read("q", T * kD, &q) && read("k", T * kD, &k) && read("v", T * kD, &v);
        out.assign(T * kD, 0.0f);
        attnkit::AttentionOptions options;
        options.causal = causal != 0;
        if (openblas) {
          scratch.assign(64 * T, 0.0f);
          call = [&, T, options] {
            OpenBlasHead(q.data(), k.data(), v.data(), out.data(), T, T, kD, options.causal,
                         scratch.data());
            return attnkit::Status();
          };
        } else
          call = [&, T, options] {
            return attnkit::Attention(attnkit::ConstMatrixView(q.data(), T, kD),
                                      attnkit::ConstMatrixView(k.data(), T, kD),
                                      attnkit::ConstMatrixView(v.data(), T, kD), options,
                                      attnkit::MatrixView(out.data(), T, kD));
          };
      } else if (command == "layer") {
        const char* names[4] = {"W_Q", "W_K", "W_V", "W_O"};
        ok = read("x", T * kModel, &x);
        for (int i = 0; i < 4; ++i) ok = ok && read(names[i], kModel * kModel, &w[i]);
        std::string mode;
        words >> mode;
        const bool per_call = mode == "per-call";
        out.assign(T * kModel, 0.0f);
        const auto W = [&](int i) { return attnkit::ConstMatrixView(w[i].data(), kModel, kModel); };
        const attnkit::MultiHeadWeights weights{W(0), W(1), W(2), W(3)};
        const attnkit::HeadConfig config{kHeads, kHeads, 0, 0};
        ok = ok && (per_call || attnkit::PackMultiHeadWeights(weights, config, &pack).ok());
        call = [&, T, weights, config, per_call] {
          const attnkit::ConstMatrixView X(x.data(), T, kModel);
          const attnkit::MatrixView o(out.data(), T, kModel);
          if (per_call)
            return attnkit::MultiHeadAttention(X, 1, weights, config, attnkit::AttentionOptions(),
                                               o);
          return attnkit::MultiHeadAttention(X, 1, pack, config, attnkit::AttentionOptions(), o);
        };
      } else {
        ok = read("q", kModel, &q) && read("k", T * kModel, &k) && read("v", T * kModel, &v) &&
             attnkit::KVCache::Create(1, kHeads, kD, kD, T, &cache).ok() &&
             cache
                 .Append(attnkit::ConstMatrixView(k.data(), T, kModel),
                         attnkit::ConstMatrixView(v.data(), T, kModel))
                 .ok();
        out.assign(kModel, 0.0f);
        call = [&] {
          return attnkit::AttendCached(attnkit::ConstMatrixView(q.data(), 1, kModel), cache, kHeads,
                                       attnkit::DecodeOptions(),
                                       attnkit::MatrixView(out.data(), 1, kModel));
        };
      }
      if (!ok) {
        call = nullptr;
        std::cout << "error: cannot read the inputs in " << dir << std::endl;
        continue;
      }
      const attnkit::Status s = call();
      std::ofstream(dir + "/out.f32", std::ios::binary)
          .write(reinterpret_cast<const char*>(out.data()), out.size() * sizeof(float));
      std::cout << (s.ok() ? "ok" : "error: " + s.message()) << std::endl;
    } else if (command == "time" && call) {
      size_t reps = 1;
      words >> reps;
      const double cpu0 = 1e3 * harness::ThreadCpuSeconds();
      const auto t0 = std::chrono::steady_clock::now();
      for (size_t i = 0; i < reps; ++i) (void)call();  // the load checked this shape
      const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
      std::cout << ms.count() / reps << " " << (1e3 * harness::ThreadCpuSeconds() - cpu0) / reps
                << std::endl;
    } else if (command == "peak") {
      size_t peak_bits = bits;
      words >> peak_bits;
      (void)attnkit::targets::Force(0);  // the peak of that width with the best FMA code
      const double gflops = attnkit_bench::FmaPeakCpuGflops(5000000, peak_bits);
      (void)attnkit::targets::Force(forced);  // one of Available(): cannot fail
      std::cout << gflops << std::endl;
    } else if (command == "info") {
      if (openblas)
        std::cout << "OpenBLAS " << openblas_get_corename() << " " << bits << std::endl;
      else
        std::cout << attnkit::targets::Name(attnkit::targets::Current()) << " " << bits
                  << std::endl;
    } else {
      std::cout << "error: unknown command (or nothing loaded): " << line << std::endl;
    }
  }
  return 0;
}

// attnkit_bench --queries [ROUNDS]: T_q = 1..9 queries against 64, 256 and
// 1024 keys, d = 64, one thread, as JSON on stdout ({"sweep": [{"T_q",
// "keys", "us"}]}: microseconds per call). Every T_q of a key count is timed
// in the same rounds (each round times each T_q once, a batch of ~2 ms, in a
// rotating order) and the median over rounds is kept, so that the ratio of
// consecutive T_q comes from the same state of a noisy machine.
int Queries(int rounds) {
  constexpr size_t kMaxQueries = 9;
  std::cout << "{\"sweep\": [";
  const char* sep = "";
  for (size_t T_k : {64, 256, 1024}) {
    const auto k = Random(T_k * kD, 2), v = Random(T_k * kD, 3);
    const auto q = Random(kMaxQueries * kD, 1);
    std::vector<float> out(kMaxQueries * kD);
    const attnkit::AttentionOptions o;
    const auto call = [&](size_t T_q) {
      (void)attnkit::Attention(
          attnkit::ConstMatrixView(q.data(), T_q, kD), attnkit::ConstMatrixView(k.data(), T_k, kD),
          attnkit::ConstMatrixView(v.data(), T_k, kD), o, attnkit::MatrixView(out.data(), T_q, kD));
    };
    std::vector<size_t> calls(kMaxQueries + 1);
    std::vector<std::vector<double>> times(kMaxQueries + 1);
    for (size_t T_q = 1; T_q <= kMaxQueries; ++T_q) {  // warm up; calls per ~2 ms batch
      size_t n = 0;
      const auto t0 = std::chrono::steady_clock::now();
      std::chrono::duration<double, std::milli> ms{0};
      while (ms.count() < 20) {
        call(T_q);
        ++n;
        ms = std::chrono::steady_clock::now() - t0;
      }
      calls[T_q] = std::max<size_t>(1, static_cast<size_t>(2.0 * n / ms.count()));
    }
    for (int r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < kMaxQueries; ++i) {
        const size_t T_q = 1 + (i + r) % kMaxQueries;
        const auto t0 = std::chrono::steady_clock::now();
        for (size_t c = 0; c < calls[T_q]; ++c) call(T_q);
        const std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - t0;
        times[T_q].push_back(us.count() / calls[T_q]);
      }
    }
    for (size_t T_q = 1; T_q <= kMaxQueries; ++T_q) {
      std::cout << sep << "{\"T_q\": " << T_q << ", \"keys\": " << T_k
                << ", \"us\": " << harness::Median(times[T_q]) << "}";
      sep = ", ";
    }
  }
  std::cout << "]}" << std::endl;
  return 0;
}

// attnkit_bench --small [ROUNDS]: the fixed cost of a call through the C++
// API, T = T_q = T_k = 1..64, d = 8 and 64, one thread, against a plain C++
// loop (PlainHead, plain_head.h): Attention, AttentionForTraining and
// AttentionBackward with the forward's O and lse, each also on the general
// path (forced: the A/B of the lean path and the small-shape kernels) and
// against the loop doing the same, as JSON on
// stdout ({"small": [{"op", "engine", "d", "T", "us"}]}: microseconds per
// call). Each shape's engines are timed in the same rounds (a batch of ~1 ms
// each, in a rotating order), the median over rounds kept. Every result is
// checked against the loop's first (max abs difference < 1e-4).
int Small(int rounds) {
  using attnkit::ConstMatrixView;
  using attnkit::MatrixView;
  std::cout << "{\"small\": [";
  const char* sep = "";
  for (size_t d : {8, 64}) {
    for (size_t T : {1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64}) {
      const size_t n = T * d;
      const auto q = Random(n, 1), k = Random(n, 2), v = Random(n, 3), dO = Random(n, 4);
      std::vector<float> out(n), lse(T), dQ(n), dK(n), dV(n);
      std::vector<float> ref_out(n), ref_lse(T), ref_dQ(n), ref_dK(n), ref_dV(n);
      PlainHead plain(T, d);
      const attnkit::AttentionOptions o;
      const ConstMatrixView Q(q.data(), T, d), K(k.data(), T, d), V(v.data(), T, d),
          dOv(dO.data(), T, d);
      struct Engine {
        const char* op;
        const char* engine;
        std::function<void()> run;
      };
      const std::vector<Engine> engines = {
          {"attention", "attnkit",
           [&] { (void)attnkit::Attention(Q, K, V, o, MatrixView(out.data(), T, d)); }},
          // The same call on the general path (AttentionJob, plan, the path
          // the planner picks): what every small call took before the lean path.
          {"attention", "attnkit (general path)",
           [&] {
             attnkit::internal::ForceHeadPathForTest(attnkit::internal::UseFusedPath(T, T, d, d)
                                                         ? attnkit::internal::HeadPath::kFused
                                                         : attnkit::internal::HeadPath::kSplitK);
             (void)attnkit::Attention(Q, K, V, o, MatrixView(out.data(), T, d));
             attnkit::internal::ForceHeadPathForTest(std::nullopt);
           }},
          {"attention", "plain C++",
           [&] { plain.Forward(q.data(), k.data(), v.data(), ref_out.data(), nullptr); }},
          {"attentionForTraining", "attnkit",
           [&] {
             (void)attnkit::AttentionForTraining(Q, K, V, o, MatrixView(out.data(), T, d),
                                                 MatrixView(lse.data(), T, 1));
           }},
          // The general path: the fused kernel through a planned job.
          {"attentionForTraining", "attnkit (general path)",
           [&] {
             attnkit::internal::ForceHeadPathForTest(attnkit::internal::HeadPath::kFused);
             (void)attnkit::AttentionForTraining(Q, K, V, o, MatrixView(out.data(), T, d),
                                                 MatrixView(lse.data(), T, 1));
             attnkit::internal::ForceHeadPathForTest(std::nullopt);
           }},
          {"attentionForTraining", "plain C++",
           [&] { plain.Forward(q.data(), k.data(), v.data(), ref_out.data(), ref_lse.data()); }},
          {"attentionBackward", "attnkit",
           [&] {
             (void)attnkit::AttentionBackward(
                 Q, K, V, ConstMatrixView(ref_out.data(), T, d), dOv,
                 ConstMatrixView(ref_lse.data(), T, 1), o, MatrixView(dQ.data(), T, d),
                 MatrixView(dK.data(), T, d), MatrixView(dV.data(), T, d));
           }},
          // The general path: the tiled backward with its layout.
          {"attentionBackward", "attnkit (general path)",
           [&] {
             attnkit::internal::ForceHeadPathForTest(attnkit::internal::HeadPath::kFused);
             (void)attnkit::AttentionBackward(
                 Q, K, V, ConstMatrixView(ref_out.data(), T, d), dOv,
                 ConstMatrixView(ref_lse.data(), T, 1), o, MatrixView(dQ.data(), T, d),
                 MatrixView(dK.data(), T, d), MatrixView(dV.data(), T, d));
             attnkit::internal::ForceHeadPathForTest(std::nullopt);
           }},
          {"attentionBackward", "plain C++",
           [&] {
             plain.Backward(q.data(), k.data(), v.data(), ref_out.data(), ref_lse.data(), dO.data(),
                            ref_dQ.data(), ref_dK.data(), ref_dV.data());
           }},
      };
      // Correctness first: every attnkit result against the loop's.
      const auto max_diff = [](const std::vector<float>& a, const std::vector<float>& b) {
        float m = 0.0f;
        for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
        return m;
      };
      for (const Engine& e : engines) e.run();
      const float diff =
          std::max({max_diff(out, ref_out), max_diff(lse, ref_lse), max_diff(dQ, ref_dQ),
                    max_diff(dK, ref_dK), max_diff(dV, ref_dV)});
      if (!(diff < 1e-4f)) {
        std::cerr << "attnkit_bench --small: d=" << d << " T=" << T
                  << ": attnkit differs from the loop by " << diff << std::endl;
        return 1;
      }
      std::vector<size_t> calls(engines.size());
      std::vector<std::vector<double>> times(engines.size());
      for (size_t e = 0; e < engines.size(); ++e) {  // warm up; calls per ~1 ms batch
        size_t count = 0;
        const auto t0 = std::chrono::steady_clock::now();
        std::chrono::duration<double, std::milli> ms{0};
        while (ms.count() < 10) {
          engines[e].run();
          ++count;
          ms = std::chrono::steady_clock::now() - t0;
        }
        calls[e] = std::max<size_t>(1, static_cast<size_t>(1.0 * count / ms.count()));
      }
      for (int r = 0; r < rounds; ++r) {
        for (size_t i = 0; i < engines.size(); ++i) {
          const size_t e = (i + r) % engines.size();
          const auto t0 = std::chrono::steady_clock::now();
          for (size_t c = 0; c < calls[e]; ++c) engines[e].run();
          const std::chrono::duration<double, std::micro> us =
              std::chrono::steady_clock::now() - t0;
          times[e].push_back(us.count() / calls[e]);
        }
      }
      for (size_t e = 0; e < engines.size(); ++e) {
        std::cout << sep << "{\"op\": \"" << engines[e].op << "\", \"engine\": \""
                  << engines[e].engine << "\", \"d\": " << d << ", \"T\": " << T
                  << ", \"us\": " << harness::Median(times[e]) << "}";
        sep = ", ";
      }
    }
  }
  std::cout << "]}" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--serve") {
    std::string target;
    bool openblas = false;
    for (int i = 2; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--target" && i + 1 < argc) {
        target = argv[++i];
      } else if (arg == "--openblas") {
        openblas = true;
      } else {
        std::cerr << "attnkit_bench --serve: unknown option " << arg
                  << " (--target NAME, --openblas)" << std::endl;
        return 2;
      }
    }
    return Serve(target, openblas);
  }
  if (argc == 2 && std::string(argv[1]) == "--list-targets") return ListTargets();
  if (argc >= 2 && std::string(argv[1]) == "--queries")
    return Queries(argc >= 3 ? std::atoi(argv[2]) : 21);
  if (argc >= 2 && std::string(argv[1]) == "--small")
    return Small(argc >= 3 ? std::atoi(argv[2]) : 21);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // What each library picked on this machine, in the JSON's context.
  benchmark::AddCustomContext("attnkit_target",
                              attnkit::targets::Name(attnkit::targets::Current()));
  benchmark::AddCustomContext("openblas_corename", openblas_get_corename());
  benchmark::AddCustomContext("openblas_config", openblas_get_config());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
