// attnkit tests: a plain, obviously-correct float64 reference implementation
// of everything the core computes. No SIMD, no tricks: nested loops over
// std::vector<double>. The core's float32 results are compared against it.
#ifndef ATTNKIT_TESTS_REFERENCE_H_
#define ATTNKIT_TESTS_REFERENCE_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <vector>

#include "attnkit/attnkit.h"

namespace ref {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Row-major dense double matrix.
struct Mat {
  size_t rows = 0;
  size_t cols = 0;
  std::vector<double> v;

  Mat() = default;
  Mat(size_t r, size_t c, double fill = 0.0) : rows(r), cols(c), v(r * c, fill) {}
  Mat(std::initializer_list<std::initializer_list<double>> init) {
    rows = init.size();
    cols = rows ? init.begin()->size() : 0;
    for (const auto& row : init) {
      for (double x : row) v.push_back(x);
    }
  }
  double& operator()(size_t r, size_t c) { return v[r * cols + c]; }
  double operator()(size_t r, size_t c) const { return v[r * cols + c]; }

  Mat Block(size_t r0, size_t nr, size_t c0, size_t nc) const {
    Mat out(nr, nc);
    for (size_t r = 0; r < nr; ++r)
      for (size_t c = 0; c < nc; ++c) out(r, c) = (*this)(r0 + r, c0 + c);
    return out;
  }
  void SetBlock(size_t r0, size_t c0, const Mat& b) {
    for (size_t r = 0; r < b.rows; ++r)
      for (size_t c = 0; c < b.cols; ++c) (*this)(r0 + r, c0 + c) = b(r, c);
  }
  double MaxAbs() const {
    double m = 0.0;
    for (double x : v)
      if (std::isfinite(x)) m = std::max(m, std::fabs(x));
    return m;
  }
};

// Reads any float view (honouring its stride) into a double matrix.
inline Mat FromView(attnkit::ConstMatrixView m) {
  Mat out(m.rows, m.cols);
  for (size_t r = 0; r < m.rows; ++r)
    for (size_t c = 0; c < m.cols; ++c) out(r, c) = m(r, c);
  return out;
}

inline Mat Transpose(const Mat& a) {
  Mat t(a.cols, a.rows);
  for (size_t r = 0; r < a.rows; ++r)
    for (size_t c = 0; c < a.cols; ++c) t(c, r) = a(r, c);
  return t;
}

// C = A B.
inline Mat MatMul(const Mat& A, const Mat& B) {
  Mat C(A.rows, B.cols);
  for (size_t i = 0; i < A.rows; ++i)
    for (size_t j = 0; j < B.cols; ++j) {
      double s = 0.0;
      for (size_t k = 0; k < A.cols; ++k) s += A(i, k) * B(k, j);
      C(i, j) = s;
    }
  return C;
}

// C = A B^T.
inline Mat MatMulT(const Mat& A, const Mat& B) {
  Mat C(A.rows, B.rows);
  for (size_t i = 0; i < A.rows; ++i)
    for (size_t j = 0; j < B.rows; ++j) {
      double s = 0.0;
      for (size_t k = 0; k < A.cols; ++k) s += A(i, k) * B(j, k);
      C(i, j) = s;
    }
  return C;
}

// s -> s * scale, then softcap * tanh(s / softcap) if softcap > 0.
inline Mat Scale(Mat s, double scale, double softcap) {
  for (double& x : s.v) {
    x *= scale;
    if (softcap > 0.0) x = softcap * std::tanh(x / softcap);
  }
  return s;
}

// Row softmax; -inf entries get 0; a row of only -inf becomes all zeros.
inline Mat SoftmaxRows(Mat s) {
  for (size_t r = 0; r < s.rows; ++r) {
    double mx = kNegInf;
    for (size_t c = 0; c < s.cols; ++c) mx = std::max(mx, s(r, c));
    if (mx == kNegInf) {
      for (size_t c = 0; c < s.cols; ++c) s(r, c) = 0.0;
      continue;
    }
    double sum = 0.0;
    for (size_t c = 0; c < s.cols; ++c) {
      const double e = s(r, c) == kNegInf ? 0.0 : std::exp(s(r, c) - mx);
      s(r, c) = e;
      sum += e;
    }
    for (size_t c = 0; c < s.cols; ++c) s(r, c) /= sum;
  }
  return s;
}

// The attention options, copied out of attnkit::AttentionOptions into plain
// data so that the reference owns everything it reads.
struct Options {
  std::optional<double> scale;
  double softcap = 0.0;
  bool causal = false;
  std::optional<size_t> key_length;
  std::vector<size_t> key_lengths;  // per batch item (multi-head only)
  bool has_bool_mask = false;
  std::vector<std::vector<uint8_t>> bool_mask;  // [T_q][T_k]
  bool has_additive = false;
  Mat additive;  // [T_q, T_k]
};

inline Options FromAttnkit(const attnkit::AttentionOptions& o) {
  Options r;
  if (o.scale) r.scale = *o.scale;
  r.softcap = o.softcap;
  r.causal = o.causal;
  r.key_length = o.key_length;
  r.key_lengths = o.key_lengths;
  if (!o.bool_mask.empty()) {
    r.has_bool_mask = true;
    r.bool_mask.assign(o.bool_mask.rows, std::vector<uint8_t>(o.bool_mask.cols));
    for (size_t i = 0; i < o.bool_mask.rows; ++i)
      for (size_t j = 0; j < o.bool_mask.cols; ++j) r.bool_mask[i][j] = o.bool_mask(i, j);
  }
  if (!o.additive_mask.empty()) {
    r.has_additive = true;
    r.additive = FromView(o.additive_mask);
  }
  return r;
}

// Every intermediate of single-head attention.
struct Trace {
  Mat raw;      // Q K^T
  Mat scaled;   // raw * scale, then softcap
  Mat masked;   // scaled + additive where allowed, -inf where masked
  Mat weights;  // row softmax
  Mat output;   // weights V
  double scale = 0.0;
};

// May query i attend key j? Every mask must allow it.
inline bool Allowed(const Options& o, size_t key_len, size_t T_q, size_t T_k, size_t i, size_t j) {
  if (j >= key_len) return false;
  if (o.causal) {
    const long long limit =
        static_cast<long long>(i) + static_cast<long long>(T_k) - static_cast<long long>(T_q);
    if (static_cast<long long>(j) > limit) return false;
  }
  if (o.has_bool_mask && o.bool_mask[i][j] == 0) return false;
  return true;
}

// Single-head attention. `key_len_override` is used by the batched reference
// for per-item key lengths.
inline Trace Attention(const Mat& Q, const Mat& K, const Mat& V, const Options& o,
                       std::optional<size_t> key_len_override = std::nullopt) {
  const size_t T_q = Q.rows, T_k = K.rows;
  Trace t;
  t.scale = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(Q.cols));
  t.raw = MatMulT(Q, K);
  t.scaled = Scale(t.raw, t.scale, o.softcap);
  size_t key_len = T_k;
  if (o.key_length) key_len = *o.key_length;
  if (key_len_override) key_len = *key_len_override;
  t.masked = Mat(T_q, T_k);
  for (size_t i = 0; i < T_q; ++i)
    for (size_t j = 0; j < T_k; ++j) {
      if (Allowed(o, key_len, T_q, T_k, i, j)) {
        t.masked(i, j) = t.scaled(i, j) + (o.has_additive ? o.additive(i, j) : 0.0);
      } else {
        t.masked(i, j) = kNegInf;
      }
    }
  t.weights = SoftmaxRows(t.masked);
  t.output = MatMul(t.weights, V);
  return t;
}

// [T, h*d] -> [h*T, d].
inline Mat SplitHeads(const Mat& x, size_t h) {
  const size_t T = x.rows, d = x.cols / h;
  Mat out(h * T, d);
  for (size_t head = 0; head < h; ++head)
    for (size_t t = 0; t < T; ++t)
      for (size_t c = 0; c < d; ++c) out(head * T + t, c) = x(t, head * d + c);
  return out;
}

// [h*T, d] -> [T, h*d].
inline Mat MergeHeads(const Mat& x, size_t h) {
  const size_t T = x.rows / h, d = x.cols;
  Mat out(T, h * d);
  for (size_t head = 0; head < h; ++head)
    for (size_t t = 0; t < T; ++t)
      for (size_t c = 0; c < d; ++c) out(t, head * d + c) = x(head * T + t, c);
  return out;
}

// Multi-head attention on projected, concatenated Q [B*T_q, h*d_k],
// K [B*T_k, kvh*d_k], V [B*T_k, kvh*d_v] -> [B*T_q, h*d_v]. Query head `head`
// reads K/V head head / (h / kvh). Item b uses key length key_lengths[b] if
// given, else key_length.
inline Mat MultiHeadQKV(const Mat& Q, const Mat& K, const Mat& V, size_t batch, size_t h,
                        size_t kvh, const Options& o) {
  const size_t T_q = Q.rows / batch, T_k = K.rows / batch;
  const size_t d_k = Q.cols / h, d_v = V.cols / kvh;
  const size_t group = h / kvh;
  Mat out(batch * T_q, h * d_v);
  for (size_t b = 0; b < batch; ++b) {
    std::optional<size_t> kl;
    if (!o.key_lengths.empty()) kl = o.key_lengths[b];
    for (size_t head = 0; head < h; ++head) {
      const size_t g = head / group;
      const Mat q = Q.Block(b * T_q, T_q, head * d_k, d_k);
      const Mat k = K.Block(b * T_k, T_k, g * d_k, d_k);
      const Mat v = V.Block(b * T_k, T_k, g * d_v, d_v);
      out.SetBlock(b * T_q, head * d_v, Attention(q, k, v, o, kl).output);
    }
  }
  return out;
}

// Full multi-head self-attention: project, attend per (item, head), merge, W_O
// (skipped when W_O has no rows).
inline Mat MultiHead(const Mat& X, size_t batch, const Mat& W_Q, const Mat& W_K, const Mat& W_V,
                     const Mat& W_O, size_t h, size_t kvh, const Options& o) {
  const Mat merged = MultiHeadQKV(MatMul(X, W_Q), MatMul(X, W_K), MatMul(X, W_V), batch, h, kvh, o);
  if (W_O.rows == 0) return merged;
  return MatMul(merged, W_O);
}

// ---------------------------------------------------------------------------
// ONNX Attention (opset 23/24), written from its specification: the operator's
// inputs as tensors, broadcasting by numpy's right-aligned rules, no attnkit
// layouts except the concatenated [B*T, heads*d] of 3-D Q, K, V.

// An attn_mask tensor [b, h, q, k] (rank 2 and 3 masks have b = 1, and h = 1
// for rank 2) broadcast to [B, H, T_q, T_total]; its last dimension may be
// shorter than T_total and is then padded with false / -inf.
struct Mask4 {
  size_t b = 1, h = 1, q = 1, k = 1;
  bool is_bool = true;
  std::vector<double> v;  // [b][h][q][k]; bool: 0 or 1

  Mask4() = default;
  Mask4(size_t b_, size_t h_, size_t q_, size_t k_, bool is_bool_)
      : b(b_), h(h_), q(q_), k(k_), is_bool(is_bool_), v(b_ * h_ * q_ * k_, is_bool_ ? 1.0 : 0.0) {}
  double& at(size_t bb, size_t hh, size_t i, size_t j) {
    return v[((bb * h + hh) * q + i) * k + j];
  }
  // The element that (item, head, query, key) broadcasts from, padded.
  double Get(size_t bb, size_t hh, size_t i, size_t j) const {
    if (j >= k) return is_bool ? 0.0 : kNegInf;
    return v[(((b == 1 ? 0 : bb) * h + (h == 1 ? 0 : hh)) * q + (q == 1 ? 0 : i)) * k + j];
  }
};

struct OnnxOptions {
  std::optional<double> scale;
  double softcap = 0.0;
  bool is_causal = false;
  // The causal frontier: key j <= i + offset. Lower-right (attnkit's
  // default) is offset = T_total - T_q; ONNX's is the past length, or
  // nonpad_kv_seqlen[b] - T_q per item.
  bool upper_left = false;
  std::vector<long long> offsets;  // per item (upper_left); empty = all 0
  std::vector<size_t> nonpad;      // per item key padding; empty = none
  std::optional<Mask4> bool_mask;
  std::optional<Mask4> additive;
};

struct OnnxResult {
  Mat Y;                             // [B*T_q, H*d_v]
  Mat present_K, present_V;          // [B*kvh*T_total, d]
  Mat raw, scaled, masked, weights;  // [B*H*T_q, T_total]
};

// Q [B*T_q, H*d_k], K [B*T_k, kvh*d_k], V [B*T_k, kvh*d_v]; past_K
// [B*kvh*T_past, d_k] and past_V [B*kvh*T_past, d_v] (0 rows: none).
inline OnnxResult OnnxAttention(const Mat& Q, const Mat& K, const Mat& V, const Mat& past_K,
                                const Mat& past_V, size_t B, size_t H, size_t kvh,
                                const OnnxOptions& o) {
  const size_t T_q = Q.rows / B, T_k = K.rows / B, d_k = Q.cols / H, d_v = V.cols / kvh;
  const size_t T_past = past_K.rows / (B * kvh), T = T_past + T_k;
  OnnxResult r;
  // present = concat(past, new) along the sequence, per (item, kv head).
  r.present_K = Mat(B * kvh * T, d_k);
  r.present_V = Mat(B * kvh * T, d_v);
  for (size_t b = 0; b < B; ++b)
    for (size_t g = 0; g < kvh; ++g)
      for (size_t t = 0; t < T; ++t) {
        const size_t row = (b * kvh + g) * T + t;
        for (size_t c = 0; c < d_k; ++c)
          r.present_K(row, c) = t < T_past ? past_K((b * kvh + g) * T_past + t, c)
                                           : K(b * T_k + t - T_past, g * d_k + c);
        for (size_t c = 0; c < d_v; ++c)
          r.present_V(row, c) = t < T_past ? past_V((b * kvh + g) * T_past + t, c)
                                           : V(b * T_k + t - T_past, g * d_v + c);
      }
  const double scale = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(d_k));
  r.Y = Mat(B * T_q, H * d_v);
  for (Mat* m : {&r.raw, &r.scaled, &r.masked, &r.weights}) *m = Mat(B * H * T_q, T);
  for (size_t b = 0; b < B; ++b) {
    for (size_t h = 0; h < H; ++h) {
      const size_t g = h / (H / kvh), row0 = (b * H + h) * T_q;
      for (size_t i = 0; i < T_q; ++i) {
        for (size_t j = 0; j < T; ++j) {
          double raw = 0.0;
          for (size_t c = 0; c < d_k; ++c)
            raw += Q(b * T_q + i, h * d_k + c) * r.present_K((b * kvh + g) * T + j, c);
          double s = raw * scale;
          if (o.softcap > 0.0) s = o.softcap * std::tanh(s / o.softcap);
          // The bias: causal frontier, key padding, then the mask.
          bool allowed = true;
          if (o.is_causal) {
            const long long off = o.upper_left
                                      ? (o.offsets.empty() ? 0 : o.offsets[b])
                                      : static_cast<long long>(T) - static_cast<long long>(T_q);
            allowed &= static_cast<long long>(j) <= static_cast<long long>(i) + off;
          }
          if (!o.nonpad.empty()) allowed &= j < o.nonpad[b];
          if (o.bool_mask) allowed &= o.bool_mask->Get(b, h, i, j) != 0.0;
          double bias = allowed ? 0.0 : kNegInf;
          if (o.additive && allowed) bias += o.additive->Get(b, h, i, j);
          r.raw(row0 + i, j) = raw;
          r.scaled(row0 + i, j) = s;
          r.masked(row0 + i, j) = bias == kNegInf ? kNegInf : s + bias;
        }
      }
      const Mat w = SoftmaxRows(r.masked.Block(row0, T_q, 0, T));
      r.weights.SetBlock(row0, 0, w);
      const Mat v = r.present_V.Block((b * kvh + g) * T, T, 0, d_v);
      r.Y.SetBlock(b * T_q, h * d_v, MatMul(w, v));
    }
  }
  return r;
}

}  // namespace ref

#endif  // ATTNKIT_TESTS_REFERENCE_H_
