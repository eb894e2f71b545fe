// Gradients of one attention head: AttentionBackward's dQ, dK and dV for the
// loss L = sum(dO * O), each element checked against a central finite
// difference of the forward, (L(x + h) - L(x - h)) / 2h; then the same for a
// multi-head layer's dX and weight gradients (MultiHeadAttentionBackward).
#include <cmath>
#include <cstdio>
#include <utility>

#include "attnkit/attnkit.h"

namespace {

// L = sum(dO * Attention(Q, K, V)), in double.
double Loss(const attnkit::Matrix& Q, const attnkit::Matrix& K, const attnkit::Matrix& V,
            const attnkit::Matrix& dO, const attnkit::AttentionOptions& options) {
  attnkit::Matrix O(Q.rows(), V.cols());
  if (!attnkit::Attention(Q, K, V, options, O).ok()) return NAN;
  double loss = 0;
  for (size_t i = 0; i < O.rows(); ++i) {
    for (size_t j = 0; j < O.cols(); ++j) loss += double{dO(i, j)} * O(i, j);
  }
  return loss;
}

// The largest |analytic - numeric| over the elements of `x`, whose gradient
// AttentionBackward gave as `grad`.
double WorstDifference(attnkit::Matrix& x, const attnkit::Matrix& grad, const attnkit::Matrix& Q,
                       const attnkit::Matrix& K, const attnkit::Matrix& V,
                       const attnkit::Matrix& dO, const attnkit::AttentionOptions& options) {
  const float h = 1e-2f;
  double worst = 0;
  for (size_t i = 0; i < x.rows(); ++i) {
    for (size_t j = 0; j < x.cols(); ++j) {
      const float saved = x(i, j);
      x(i, j) = saved + h;
      const double up = Loss(Q, K, V, dO, options);
      x(i, j) = saved - h;
      const double down = Loss(Q, K, V, dO, options);
      x(i, j) = saved;
      worst = std::fmax(worst, std::fabs(grad(i, j) - (up - down) / (2.0 * h)));
    }
  }
  return worst;
}

// The largest |analytic - numeric| over the elements of `x` for the loss
// `loss()`, whose gradient is `grad`.
template <class Loss>
double WorstLayerDifference(attnkit::Matrix& x, const attnkit::Matrix& grad, const Loss& loss) {
  const float h = 1e-2f;
  double worst = 0;
  for (size_t i = 0; i < x.rows(); ++i) {
    for (size_t j = 0; j < x.cols(); ++j) {
      const float saved = x(i, j);
      x(i, j) = saved + h;
      const double up = loss();
      x(i, j) = saved - h;
      const double down = loss();
      x(i, j) = saved;
      worst = std::fmax(worst, std::fabs(grad(i, j) - (up - down) / (2.0 * h)));
    }
  }
  return worst;
}

// A causal layer of 2 query heads sharing 1 K/V head, batch 2, with W_O:
// MultiHeadAttentionBackward's dX, dW_Q, dW_K, dW_V and dW_O against finite
// differences of MultiHeadAttention. Returns the largest difference.
double CheckLayer() {
  const size_t batch = 2, T = 3, d_model = 4;
  attnkit::Matrix X(batch * T, d_model), W_Q(d_model, 4), W_K(d_model, 2), W_V(d_model, 2),
      W_O(4, d_model), dOut(batch * T, d_model);
  int n = 0;  // deterministic values in [-1, 1)
  for (attnkit::Matrix* m : {&X, &W_Q, &W_K, &W_V, &W_O, &dOut}) {
    for (size_t i = 0; i < m->size(); ++i) m->data()[i] = ((n++ * 37) % 64) / 32.0f - 1.0f;
  }
  attnkit::HeadConfig config;
  config.num_heads = 2;
  config.num_kv_heads = 1;
  attnkit::AttentionOptions options;
  options.causal = true;
  const attnkit::MultiHeadWeights weights{W_Q, W_K, W_V, W_O};
  attnkit::Matrix dX(batch * T, d_model), dW_Q(d_model, 4), dW_K(d_model, 2), dW_V(d_model, 2),
      dW_O(4, d_model);
  const attnkit::Status status = attnkit::MultiHeadAttentionBackward(
      X, batch, weights, config, options, dOut, {dX, dW_Q, dW_K, dW_V, dW_O});
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return INFINITY;
  }
  auto loss = [&]() -> double {
    attnkit::Matrix out(batch * T, d_model);
    if (!attnkit::MultiHeadAttention(X, batch, weights, config, options, out).ok()) return NAN;
    double sum = 0;
    for (size_t i = 0; i < out.size(); ++i) sum += double{dOut.data()[i]} * out.data()[i];
    return sum;
  };
  double worst = 0;
  for (auto [x, grad] : {std::pair<attnkit::Matrix*, attnkit::Matrix*>{&X, &dX},
                         {&W_Q, &dW_Q},
                         {&W_K, &dW_K},
                         {&W_V, &dW_V},
                         {&W_O, &dW_O}}) {
    worst = std::fmax(worst, WorstLayerDifference(*x, *grad, loss));
  }
  return worst;
}

}  // namespace

int main() {
  // Q, K [T=3, d_k=2], V [T=3, d_v=2], dO = dL/dO [T=3, d_v=2].
  attnkit::Matrix Q = {{0.5f, -1.0f}, {1.5f, 0.25f}, {-0.75f, 1.0f}};
  attnkit::Matrix K = {{1.0f, 0.5f}, {-0.5f, 1.25f}, {0.25f, -1.0f}};
  attnkit::Matrix V = {{1.0f, 2.0f}, {-1.0f, 0.5f}, {0.5f, -0.5f}};
  attnkit::Matrix dO = {{1.0f, -0.5f}, {0.25f, 1.0f}, {-1.0f, 0.75f}};
  attnkit::AttentionOptions options;
  options.causal = true;

  attnkit::Matrix dQ(3, 2), dK(3, 2), dV(3, 2);
  attnkit::Status status = attnkit::AttentionBackward(Q, K, V, dO, options, dQ, dK, dV);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("dQ:");
  for (size_t i = 0; i < dQ.rows(); ++i) std::printf(" [%.4f %.4f]", dQ(i, 0), dQ(i, 1));
  std::printf("\n");

  // float32 forward, h = 1e-2: the finite differences agree to about 1e-3.
  const double tolerance = 5e-3;
  const double worst = std::fmax(WorstDifference(Q, dQ, Q, K, V, dO, options),
                                 std::fmax(WorstDifference(K, dK, Q, K, V, dO, options),
                                           WorstDifference(V, dV, Q, K, V, dO, options)));
  std::printf("largest |backward - finite difference| over dQ, dK, dV: %.2e\n", worst);
  const double layer = CheckLayer();
  std::printf("multi-head layer, over dX, dW_Q, dW_K, dW_V, dW_O: %.2e\n", layer);
  return worst <= tolerance && layer <= tolerance ? 0 : 1;
}
