// attnkit tests: a float64 reference of the model (include/attnkit/model.h),
// attention-only or GPT blocks (d_ff > 0), with or without biases and a tied
// unembedding, written plainly from the maths, for finite differences.
#ifndef ATTNKIT_TESTS_MODEL_REFERENCE_H_
#define ATTNKIT_TESTS_MODEL_REFERENCE_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "attnkit/model.h"

namespace model_ref {

using Tensor = std::vector<double>;  // row-major, shapes as in Parameters

// The parameters in Parameters::Tensors() order, as doubles.
inline std::vector<Tensor> FromParameters(const attnkit::model::Parameters& p) {
  std::vector<Tensor> out;
  for (const attnkit::Matrix* m : p.Tensors()) out.emplace_back(m->data(), m->data() + m->size());
  return out;
}

// x [N, d] -> LayerNorm rows with gain, bias [d] and epsilon.
inline std::vector<double> LayerNorm(const std::vector<double>& x, size_t N, size_t d,
                                     const Tensor& gain, const Tensor& bias, double epsilon) {
  std::vector<double> y(N * d);
  for (size_t r = 0; r < N; ++r) {
    double mu = 0, var = 0;
    for (size_t c = 0; c < d; ++c) mu += x[r * d + c];
    mu /= double(d);
    for (size_t c = 0; c < d; ++c) var += (x[r * d + c] - mu) * (x[r * d + c] - mu);
    const double rs = 1.0 / std::sqrt(var / double(d) + epsilon);
    for (size_t c = 0; c < d; ++c) y[r * d + c] = (x[r * d + c] - mu) * rs * gain[c] + bias[c];
  }
  return y;
}

// A [N, k] B [k, m] -> [N, m].
inline std::vector<double> MatMul(const std::vector<double>& A, const Tensor& B, size_t N, size_t k,
                                  size_t m) {
  std::vector<double> C(N * m, 0.0);
  for (size_t i = 0; i < N; ++i)
    for (size_t p = 0; p < k; ++p)
      for (size_t j = 0; j < m; ++j) C[i * m + j] += A[i * k + p] * B[p * m + j];
  return C;
}

// A [N, k] B [k, m] + bias [m] on every row (bias null: none).
inline std::vector<double> Linear(const std::vector<double>& A, const Tensor& B, const Tensor* bias,
                                  size_t N, size_t k, size_t m) {
  std::vector<double> C = MatMul(A, B, N, k, m);
  if (bias)
    for (size_t i = 0; i < N; ++i)
      for (size_t j = 0; j < m; ++j) C[i * m + j] += (*bias)[j];
  return C;
}

// The tensors in Parameters::Tensors() order, taken one by one.
struct Tensors {
  const std::vector<Tensor>& t;
  size_t at = 0;
  const Tensor& Next() { return t[at++]; }
  // The next tensor if `present` (a bias with bias on), else null.
  const Tensor* NextIf(bool present) { return present ? &t[at++] : nullptr; }
};

// GELU, the tanh approximation (GPT-2; PyTorch approximate='tanh').
inline double Gelu(double u) {
  const double pi = 3.14159265358979323846;
  return 0.5 * u * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (u + 0.044715 * u * u * u)));
}

// One score S = scale q.k moved by `delta` before the softmax: that of
// sequence `b`, layer, head, query i and key j (j <= i), for finite
// differences of the loss with respect to the scores.
struct ScoreNudge {
  size_t b = 0, layer = 0, head = 0, i = 0, j = 0;
  double delta = 0;
};

// Mean cross-entropy over the scored positions (c resolved: num_kv_heads, d_k set).
// weights_out (optional): per layer, [B][h][T][T] attention weights.
inline double Loss(const attnkit::model::ModelConfig& c, const std::vector<Tensor>& t,
                   const attnkit::model::Batch& batch,
                   std::vector<std::vector<double>>* weights_out = nullptr,
                   const ScoreNudge* nudge = nullptr) {
  const size_t B = batch.batch, T = batch.seq_len, N = B * T, d = c.d_model, V = c.vocab_size;
  const size_t h = c.num_heads, g = c.num_kv_heads, dk = c.d_k, group = h / g;
  Tensors next{t};
  const Tensor& tok = next.Next();
  const Tensor& pos = next.Next();
  const double eps = c.layer_norm_epsilon;
  std::vector<double> x(N * d);
  for (size_t r = 0; r < N; ++r)
    for (size_t k = 0; k < d; ++k)
      x[r * d + k] = tok[size_t(batch.tokens[r]) * d + k] + pos[(r % T) * d + k];
  const double scale = c.scale_by_sqrt_dk ? 1.0 / std::sqrt(double(dk)) : 1.0;
  for (size_t l = 0; l < c.num_layers; ++l) {
    std::vector<double> a = x;
    if (c.layer_norm) {
      const Tensor& gain = next.Next();
      a = LayerNorm(x, N, d, gain, next.Next(), eps);
    }
    const Tensor& W_Q = next.Next();
    const std::vector<double> Q = Linear(a, W_Q, next.NextIf(c.bias), N, d, h * dk);
    const Tensor& W_K = next.Next();
    const std::vector<double> K = Linear(a, W_K, next.NextIf(c.bias), N, d, g * dk);
    const Tensor& W_V = next.Next();
    const std::vector<double> Vv = Linear(a, W_V, next.NextIf(c.bias), N, d, g * dk);
    const Tensor& W_O = next.Next();
    const Tensor* b_O = next.NextIf(c.bias);
    std::vector<double> z(N * h * dk, 0.0);
    std::vector<double> w_all;
    for (size_t b = 0; b < B; ++b) {
      for (size_t head = 0; head < h; ++head) {
        const size_t kv = head / group;
        for (size_t i = 0; i < T; ++i) {
          std::vector<double> s(i + 1);
          double mx = -1e300;
          for (size_t j = 0; j <= i; ++j) {
            double dot = 0;
            for (size_t k = 0; k < dk; ++k)
              dot +=
                  Q[(b * T + i) * h * dk + head * dk + k] * K[(b * T + j) * g * dk + kv * dk + k];
            s[j] = dot * scale;
            if (nudge && nudge->b == b && nudge->layer == l && nudge->head == head &&
                nudge->i == i && nudge->j == j) {
              s[j] += nudge->delta;
            }
            mx = std::max(mx, s[j]);
          }
          double sum = 0;
          for (double& v : s) sum += (v = std::exp(v - mx));
          std::vector<double> row(T, 0.0);
          for (size_t j = 0; j <= i; ++j) {
            const double p = s[j] / sum;
            row[j] = p;
            for (size_t k = 0; k < dk; ++k)
              z[(b * T + i) * h * dk + head * dk + k] += p * Vv[(b * T + j) * g * dk + kv * dk + k];
          }
          w_all.insert(w_all.end(), row.begin(), row.end());
        }
      }
    }
    if (weights_out) weights_out->push_back(w_all);
    const std::vector<double> o = Linear(z, W_O, b_O, N, h * dk, d);
    for (size_t k = 0; k < N * d; ++k) x[k] += o[k];
    if (c.d_ff > 0) {
      // x += GELU(LayerNorm2(x) W_1 + b_1) W_2 + b_2
      const Tensor& gain = next.Next();
      const std::vector<double> b = LayerNorm(x, N, d, gain, next.Next(), eps);
      const Tensor& W_1 = next.Next();
      std::vector<double> u = Linear(b, W_1, next.NextIf(c.bias), N, d, c.d_ff);
      for (double& v : u) v = Gelu(v);
      const Tensor& W_2 = next.Next();
      const std::vector<double> mlp = Linear(u, W_2, next.NextIf(c.bias), N, c.d_ff, d);
      for (size_t k = 0; k < N * d; ++k) x[k] += mlp[k];
    }
  }
  if (c.layer_norm) {
    const Tensor& gain = next.Next();
    x = LayerNorm(x, N, d, gain, next.Next(), eps);
  }
  std::vector<double> logits(N * V, 0.0);
  if (c.tied_unembedding) {
    // logits = x token_embedding^T
    for (size_t r = 0; r < N; ++r)
      for (size_t v = 0; v < V; ++v)
        for (size_t k = 0; k < d; ++k) logits[r * V + v] += x[r * d + k] * tok[v * d + k];
  } else {
    logits = MatMul(x, next.Next(), N, d, V);
  }
  double loss = 0;
  size_t scored = 0;
  for (size_t r = 0; r < N; ++r) {
    if (batch.targets[r] < 0) continue;
    double mx = -1e300;
    for (size_t j = 0; j < V; ++j) mx = std::max(mx, logits[r * V + j]);
    double sum = 0;
    for (size_t j = 0; j < V; ++j) sum += std::exp(logits[r * V + j] - mx);
    loss += std::log(sum) + mx - logits[r * V + size_t(batch.targets[r])];
    ++scored;
  }
  return scored ? loss / double(scored) : 0.0;
}

}  // namespace model_ref

#endif  // ATTNKIT_TESTS_MODEL_REFERENCE_H_
