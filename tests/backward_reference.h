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

#include "attnkit/attention.h"
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

// ---------------------------------------------------------------------------
// Multi-head: per (item, head) the single-head reference above, with that
// head's options: its slice of each mask (MaskLayout {batch, heads}, rows
// T_q or one shared row), its item's key length and causal offset.

// The single-head options of head `head` of item b under o.
inline attnkit::AttentionOptions HeadOptions(const attnkit::AttentionOptions& o, size_t b,
                                             size_t head) {
  attnkit::AttentionOptions h = o;
  h.key_lengths.clear();
  h.causal_offsets.clear();
  h.pool = nullptr;
  if (!o.key_lengths.empty()) h.key_length = o.key_lengths[b];
  if (!o.causal_offsets.empty()) h.causal_offset = o.causal_offsets[b];
  auto slice = [&](auto m, attnkit::MaskLayout l) {
    const size_t blocks = l.batch * l.heads, rows = m.rows / blocks;
    const size_t blk = (l.batch == 1 ? 0 : b) * l.heads + (l.heads == 1 ? 0 : head);
    return m.Block(blk * rows, rows, 0, m.cols);
  };
  if (!o.bool_mask.empty()) h.bool_mask = slice(o.bool_mask, o.bool_mask_layout);
  if (!o.additive_mask.empty()) h.additive_mask = slice(o.additive_mask, o.additive_mask_layout);
  return h;
}

struct MultiForward {
  Mat O;    // [B*T_q, h*d_v]
  Mat lse;  // [B*h*T_q, 1]
};

// Q [B*T_q, h*d_k], K [B*T_k, kvh*d_k], V [B*T_k, kvh*d_v].
inline MultiForward MultiHeadForward(const Mat& Q, const Mat& K, const Mat& V, size_t batch,
                                     size_t h, size_t kvh, const attnkit::AttentionOptions& o) {
  const size_t T_q = Q.rows / batch, T_k = K.rows / batch;
  const size_t d_k = Q.cols / h, d_v = V.cols / kvh, group = h / kvh;
  MultiForward f{Mat(batch * T_q, h * d_v), Mat(batch * h * T_q, 1)};
  for (size_t b = 0; b < batch; ++b) {
    for (size_t head = 0; head < h; ++head) {
      const size_t g = head / group;
      const Forward one = AttentionForward(
          Q.Block(b * T_q, T_q, head * d_k, d_k), K.Block(b * T_k, T_k, g * d_k, d_k),
          V.Block(b * T_k, T_k, g * d_v, d_v), HeadOptions(o, b, head));
      f.O.SetBlock(b * T_q, head * d_v, one.O);
      f.lse.SetBlock((b * h + head) * T_q, 0, one.lse);
    }
  }
  return f;
}

// dQ, dK, dV shaped as Q, K, V; dK and dV summed over each group's heads.
inline Gradients MultiHeadBackward(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO,
                                   size_t batch, size_t h, size_t kvh,
                                   const attnkit::AttentionOptions& o) {
  const size_t T_q = Q.rows / batch, T_k = K.rows / batch;
  const size_t d_k = Q.cols / h, d_v = V.cols / kvh, group = h / kvh;
  Gradients g{Mat(Q.rows, Q.cols), Mat(K.rows, K.cols), Mat(V.rows, V.cols)};
  for (size_t b = 0; b < batch; ++b) {
    for (size_t head = 0; head < h; ++head) {
      const size_t kv = head / group;
      const Gradients one = AttentionBackward(
          Q.Block(b * T_q, T_q, head * d_k, d_k), K.Block(b * T_k, T_k, kv * d_k, d_k),
          V.Block(b * T_k, T_k, kv * d_v, d_v), dO.Block(b * T_q, T_q, head * d_v, d_v),
          HeadOptions(o, b, head));
      g.dQ.SetBlock(b * T_q, head * d_k, one.dQ);
      for (size_t t = 0; t < T_k; ++t) {
        for (size_t x = 0; x < d_k; ++x) g.dK(b * T_k + t, kv * d_k + x) += one.dK(t, x);
        for (size_t x = 0; x < d_v; ++x) g.dV(b * T_k + t, kv * d_v + x) += one.dV(t, x);
      }
    }
  }
  return g;
}

struct LayerGradients {
  Mat dX, dW_Q, dW_K, dW_V, dW_O;  // dW_O empty (0 x 0) without W_O
};

// The multi-head layer out = merged W_O (merged without W_O), merged the
// heads of Q = X W_Q, K = X W_K, V = X W_V.
inline Mat LayerForward(const Mat& X, size_t batch, const Mat& W_Q, const Mat& W_K, const Mat& W_V,
                        const Mat& W_O, size_t h, size_t kvh, const attnkit::AttentionOptions& o) {
  const Mat merged = MultiHeadForward(ref::MatMul(X, W_Q), ref::MatMul(X, W_K), ref::MatMul(X, W_V),
                                      batch, h, kvh, o)
                         .O;
  return W_O.rows == 0 ? merged : ref::MatMul(merged, W_O);
}

// The gradients of sum(dOut * LayerForward(...)).
inline LayerGradients LayerBackward(const Mat& X, size_t batch, const Mat& W_Q, const Mat& W_K,
                                    const Mat& W_V, const Mat& W_O, size_t h, size_t kvh,
                                    const Mat& dOut, const attnkit::AttentionOptions& o) {
  const Mat Q = ref::MatMul(X, W_Q), K = ref::MatMul(X, W_K), V = ref::MatMul(X, W_V);
  LayerGradients g;
  Mat d_merged = dOut;
  if (W_O.rows != 0) {
    const Mat merged = MultiHeadForward(Q, K, V, batch, h, kvh, o).O;
    g.dW_O = ref::MatMul(ref::Transpose(merged), dOut);
    d_merged = ref::MatMulT(dOut, W_O);
  }
  const Gradients d = MultiHeadBackward(Q, K, V, d_merged, batch, h, kvh, o);
  const Mat Xt = ref::Transpose(X);
  g.dW_Q = ref::MatMul(Xt, d.dQ);
  g.dW_K = ref::MatMul(Xt, d.dK);
  g.dW_V = ref::MatMul(Xt, d.dV);
  g.dX = ref::MatMulT(d.dQ, W_Q);
  const Mat dx_k = ref::MatMulT(d.dK, W_K), dx_v = ref::MatMulT(d.dV, W_V);
  for (size_t k = 0; k < g.dX.v.size(); ++k) g.dX.v[k] += dx_k.v[k] + dx_v.v[k];
  return g;
}

}  // namespace bwd_ref

#endif  // ATTNKIT_TESTS_BACKWARD_REFERENCE_H_
