// attnkit tests: a plain float64 reference of single-head attention's forward
// and backward, for the backward tests. Nested loops, no tiling, no tricks.
//
// Forward: S = scale Q K^T; with softcap c, C = c tanh(S / c) (else C = S);
// S' = C + additive mask where every mask allows the key, -inf elsewhere;
// P = softmax(S') by rows (a row with no allowed key is all 0); O = P V;
// lse_i = log(sum_j exp(S'_ij)) (-inf for a row with no allowed key).
// Backward, given dO [T_q, d_v]:
//   dV = P^T dO; dP = dO V^T; D_i = rowsum(dO_i * O_i); dS' = P * (dP - D);
//   dS = dS' * (1 - tanh^2(S / c)) (dS = dS' without softcap);
//   dQ = scale dS K; dK = scale dS^T Q.
// Masked entries have P = 0, hence dS = 0: they and fully masked rows add
// exactly nothing to any gradient.
#ifndef ATTNKIT_TESTS_BACKWARD_REFERENCE_H_
#define ATTNKIT_TESTS_BACKWARD_REFERENCE_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "src/core/attention.h"
#include "tests/reference.h"

namespace bwd_ref {

using ref::Mat;

// Does query i (of T_q) see key j (of T_k) under o's causal rule, key length
// and boolean mask? Single-head layouts only: masks [T_q or 1, <= T_k].
inline bool Sees(const attnkit::AttentionOptions& o, size_t T_q, size_t T_k, size_t i, size_t j) {
  size_t keys = o.key_length ? std::min(*o.key_length, T_k) : T_k;
  if (!o.bool_mask.empty()) keys = std::min(keys, o.bool_mask.cols);
  if (!o.additive_mask.empty()) keys = std::min(keys, o.additive_mask.cols);
  if (j >= keys) return false;
  if (o.causal) {
    const long long offset = o.causal_alignment == attnkit::CausalAlignment::kUpperLeft
                                 ? static_cast<long long>(o.causal_offset)
                                 : static_cast<long long>(T_k) - static_cast<long long>(T_q);
    if (static_cast<long long>(j) > static_cast<long long>(i) + offset) return false;
  }
  if (!o.bool_mask.empty()) {
    const size_t r = o.bool_mask.rows == 1 ? 0 : i;
    if (o.bool_mask(r, j) == 0) return false;
  }
  if (!o.additive_mask.empty()) {
    const size_t r = o.additive_mask.rows == 1 ? 0 : i;
    if (o.additive_mask(r, j) == -std::numeric_limits<float>::infinity()) return false;
  }
  return true;
}

inline double AdditiveAt(const attnkit::AttentionOptions& o, size_t i, size_t j) {
  if (o.additive_mask.empty()) return 0.0;
  return o.additive_mask(o.additive_mask.rows == 1 ? 0 : i, j);
}

struct Forward {
  Mat S;    // [T_q, T_k] scale Q K^T (before softcap)
  Mat P;    // [T_q, T_k] weights
  Mat O;    // [T_q, d_v]
  Mat lse;  // [T_q, 1]
  double scale = 0.0;
};

inline double ScaleOf(const attnkit::AttentionOptions& o, size_t d_k) {
  return o.scale ? static_cast<double>(*o.scale) : 1.0 / std::sqrt(static_cast<double>(d_k));
}

inline Forward AttentionForward(const Mat& Q, const Mat& K, const Mat& V,
                                const attnkit::AttentionOptions& o) {
  const size_t T_q = Q.rows, T_k = K.rows, d_k = Q.cols, d_v = V.cols;
  const double c = o.softcap;
  Forward f;
  f.scale = ScaleOf(o, d_k);
  f.S = Mat(T_q, T_k);
  f.P = Mat(T_q, T_k);
  f.O = Mat(T_q, d_v);
  f.lse = Mat(T_q, 1, ref::kNegInf);
  for (size_t i = 0; i < T_q; ++i) {
    double max = ref::kNegInf;
    for (size_t j = 0; j < T_k; ++j) {
      double s = 0.0;
      for (size_t x = 0; x < d_k; ++x) s += Q(i, x) * K(j, x);
      s *= f.scale;
      f.S(i, j) = s;
      if (!Sees(o, T_q, T_k, i, j)) {
        f.P(i, j) = ref::kNegInf;
        continue;
      }
      f.P(i, j) = (c > 0.0 ? c * std::tanh(s / c) : s) + AdditiveAt(o, i, j);
      max = std::max(max, f.P(i, j));
    }
    if (max == ref::kNegInf) {
      for (size_t j = 0; j < T_k; ++j) f.P(i, j) = 0.0;
      continue;
    }
    double sum = 0.0;
    for (size_t j = 0; j < T_k; ++j) sum += std::exp(f.P(i, j) - max);  // exp(-inf) = 0
    for (size_t j = 0; j < T_k; ++j) f.P(i, j) = std::exp(f.P(i, j) - max) / sum;
    f.lse(i, 0) = max + std::log(sum);
    for (size_t j = 0; j < T_k; ++j)
      for (size_t x = 0; x < d_v; ++x) f.O(i, x) += f.P(i, j) * V(j, x);
  }
  return f;
}

struct Gradients {
  Mat dQ, dK, dV;
};

inline Gradients AttentionBackward(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO,
                                   const attnkit::AttentionOptions& o) {
  const size_t T_q = Q.rows, T_k = K.rows, d_k = Q.cols, d_v = V.cols;
  const Forward f = AttentionForward(Q, K, V, o);
  const double c = o.softcap;
  Gradients g{Mat(T_q, d_k), Mat(T_k, d_k), Mat(T_k, d_v)};
  for (size_t i = 0; i < T_q; ++i) {
    double D = 0.0;
    for (size_t x = 0; x < d_v; ++x) D += dO(i, x) * f.O(i, x);
    for (size_t j = 0; j < T_k; ++j) {
      const double p = f.P(i, j);
      if (p == 0.0) continue;  // masked: no gradient at all
      double dP = 0.0;
      for (size_t x = 0; x < d_v; ++x) {
        g.dV(j, x) += p * dO(i, x);
        dP += dO(i, x) * V(j, x);
      }
      double dS = p * (dP - D);
      if (c > 0.0) {
        const double t = std::tanh(f.S(i, j) / c);
        dS *= 1.0 - t * t;
      }
      for (size_t x = 0; x < d_k; ++x) {
        g.dQ(i, x) += f.scale * dS * K(j, x);
        g.dK(j, x) += f.scale * dS * Q(i, x);
      }
    }
  }
  return g;
}

// The loss whose gradients AttentionBackward gives: sum(dO * O).
inline double Loss(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO,
                   const attnkit::AttentionOptions& o) {
  const Mat O = AttentionForward(Q, K, V, o).O;
  double loss = 0.0;
  for (size_t k = 0; k < O.v.size(); ++k) loss += dO.v[k] * O.v[k];
  return loss;
}

}  // namespace bwd_ref

#endif  // ATTNKIT_TESTS_BACKWARD_REFERENCE_H_
