// The small calls' baseline of the native benchmarks (bench.cc --small,
// small_ab.cc): a plain C++ loop over one head.
#ifndef ATTNKIT_BENCH_NATIVE_PLAIN_HEAD_H_
#define ATTNKIT_BENCH_NATIVE_PLAIN_HEAD_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

// A plain C++ loop over one head of size d (the small calls' baseline): the
// forward (two passes per query row), the forward for training (its output
// and each row's log-sum-exp) and the backward from them (one row of P at a
// time, recomputed from lse). q, k, v, dO [T, d]; row is scratch [T].
struct PlainHead {
  size_t T, d;
  std::vector<float> row;
  PlainHead(size_t t, size_t dim) : T(t), d(dim), row(t) {}

  // row[0, T) = scores of query i, scaled; returns their max.
  float Scores(const float* q, const float* k, size_t i, float scale) {
    float m = -std::numeric_limits<float>::infinity();
    for (size_t j = 0; j < T; ++j) {
      float dot = 0.0f;
      for (size_t c = 0; c < d; ++c) dot += q[i * d + c] * k[j * d + c];
      row[j] = dot * scale;
      m = std::max(m, row[j]);
    }
    return m;
  }
  void Forward(const float* q, const float* k, const float* v, float* out, float* lse) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (size_t i = 0; i < T; ++i) {
      const float m = Scores(q, k, i, scale);
      float sum = 0.0f;
      for (size_t j = 0; j < T; ++j) sum += (row[j] = std::exp(row[j] - m));
      if (lse) lse[i] = m + std::log(sum);
      float* o = out + i * d;
      std::fill(o, o + d, 0.0f);
      for (size_t j = 0; j < T; ++j) {
        const float p = row[j] / sum;
        for (size_t c = 0; c < d; ++c) o[c] += p * v[j * d + c];
      }
    }
  }
  void Backward(const float* q, const float* k, const float* v, const float* out, const float* lse,
                const float* dO, float* dQ, float* dK, float* dV) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    std::fill(dQ, dQ + T * d, 0.0f);
    std::fill(dK, dK + T * d, 0.0f);
    std::fill(dV, dV + T * d, 0.0f);
    for (size_t i = 0; i < T; ++i) {
      float D = 0.0f;  // rowsum(dO * O)
      for (size_t c = 0; c < d; ++c) D += dO[i * d + c] * out[i * d + c];
      for (size_t j = 0; j < T; ++j) {
        float s = 0.0f, dp = 0.0f;
        for (size_t c = 0; c < d; ++c) {
          s += q[i * d + c] * k[j * d + c];
          dp += dO[i * d + c] * v[j * d + c];
        }
        const float p = std::exp(s * scale - lse[i]), ds = p * (dp - D) * scale;
        for (size_t c = 0; c < d; ++c) {
          dV[j * d + c] += p * dO[i * d + c];
          dQ[i * d + c] += ds * k[j * d + c];
          dK[j * d + c] += ds * q[i * d + c];
        }
      }
    }
  }
};

#endif  // ATTNKIT_BENCH_NATIVE_PLAIN_HEAD_H_
