// Gradients of one attention head: AttentionBackward's dQ, dK and dV for the
// loss L = sum(dO * O), each element checked against a central finite
// difference of the forward, (L(x + h) - L(x - h)) / 2h.
#include <cmath>
#include <cstdio>

#include "src/core/attnkit.h"

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
  return worst <= tolerance ? 0 : 1;
}
