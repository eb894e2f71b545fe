// The backward trace (backward_trace.h): every step of the backward of
// single-head attention, materialised.
//  - The fused AttentionBackward (backward.h) equals the trace's dQ, dK, dV
//    on every compiled SIMD target, for every option of the forward, at
//    awkward sizes (1, lanes +- 1, primes, 127/128/129 keys).
//  - Every intermediate of the trace against the float64 reference of
//    backward_reference.h.
//  - The projection gradients (dX, dW_Q, dW_K, dW_V) against central finite
//    differences of a float64 loss sum(dO * O) from a float64 forward.
//  - Masked entries get exactly zero d_masked_scores and d_scores, fully
//    masked rows zero rows; the softcap's factor is applied exactly once.
//  - Bad input returns a Status naming the parameter.
// Tolerances are stated where they are used.
#include "attnkit/backward_trace.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "attnkit/backward.h"
#include "tests/backward_kinds.h"
#include "tests/backward_reference.h"
#include "tests/test_util.h"

namespace {

using namespace attnkit;
using namespace attnkit_test;
using ref::Mat;

// The largest |x| of a reference matrix, at least 1.
double Magnitude(const Mat& m) { return std::max(1.0, m.MaxAbs()); }

// Every element finite and |got - want| <= rel * Magnitude(want).
void CheckRelative(const char* name, ConstMatrixView got, const Mat& want, double rel) {
  INFO(name);
  REQUIRE(got.rows == want.rows);
  REQUIRE(got.cols == want.cols);
  const double bound = rel * Magnitude(want);
  double worst = 0.0;
  size_t non_finite = 0;
  for (size_t r = 0; r < want.rows; ++r) {
    for (size_t c = 0; c < want.cols; ++c) {
      if (!std::isfinite(got(r, c))) ++non_finite;
      worst = std::max(worst, std::abs(got(r, c) - want(r, c)));
    }
  }
  INFO("worst |got - want| " << worst << ", bound " << bound << ", non-finite " << non_finite);
  CHECK(non_finite == 0);
  CHECK(worst <= bound);
}

TEST_CASE("backward trace: fused AttentionBackward equals the trace on every target",
          "[backward][trace]") {
  // 1, lanes +- 1 (4, 8, 16), primes, and 127/128/129 keys (the fused
  // kernel's key block is 64); T_q != T_k both ways.
  const std::vector<GradShape> shapes = {
      {1, 1, 1, 1},   {3, 5, 4, 3},    {7, 9, 15, 17},   {17, 15, 16, 8}, {13, 31, 33, 5},
      {5, 127, 8, 4}, {9, 128, 3, 16}, {37, 129, 17, 9}, {129, 37, 7, 2},
  };
  ForEachGradCase(shapes, /*seed=*/11,
                  [](const GradShape& s, const TestMatrix& Q, const TestMatrix& K,
                     const TestMatrix& V, const TestMatrix& dO, const AttentionOptions& o) {
                    AttentionBackwardTrace tr;
                    REQUIRE_OK(TraceAttentionBackwardQKV(Q, K, V, dO, o, &tr));
                    TestMatrix out(s.T_q, s.d_v), lse(s.T_q, 1);
                    REQUIRE_OK(AttentionForTraining(Q, K, V, o, out, lse));
                    TestMatrix dQ(s.T_q, s.d_k), dK(s.T_k, s.d_k), dV(s.T_k, s.d_v);
                    REQUIRE_OK(AttentionBackward(Q, K, V, out, dO, lse, o, dQ, dK, dV));
                    // Two float32 computations of the same gradients that differ by
                    // rounding only (the trace sums in double, the fused kernel in float
                    // over at most a few hundred terms, ~1e-6 of the magnitude); a wrong
                    // or missing term is ~1e-2. 1e-5 of the largest value, as the issue asks.
                    CheckRelative("dQ", dQ, ref::FromView(tr.dQ), 1e-5);
                    CheckRelative("dK", dK, ref::FromView(tr.dK), 1e-5);
                    CheckRelative("dV", dV, ref::FromView(tr.dV), 1e-5);
                  });
}

// The backward's intermediates in float64 from the reference forward.
struct RefSteps {
  Mat dP, D, dS_masked, dS;
};
RefSteps ReferenceSteps(const bwd_ref::Forward& f, const Mat& V, const Mat& dO, double softcap) {
  RefSteps r{ref::MatMulT(dO, V), Mat(f.P.rows, 1), Mat(f.P.rows, f.P.cols),
             Mat(f.P.rows, f.P.cols)};
  for (size_t i = 0; i < f.P.rows; ++i) {
    for (size_t x = 0; x < dO.cols; ++x) r.D(i, 0) += dO(i, x) * f.O(i, x);
    for (size_t j = 0; j < f.P.cols; ++j) {
      r.dS_masked(i, j) = f.P(i, j) * (r.dP(i, j) - r.D(i, 0));
      const double t = softcap > 0.0 ? std::tanh(f.S(i, j) / softcap) : 0.0;
      r.dS(i, j) = r.dS_masked(i, j) * (1.0 - t * t);
    }
  }
  return r;
}

TEST_CASE("backward trace: every step matches the float64 reference", "[backward][trace]") {
  const std::vector<GradShape> shapes = {
      {1, 1, 1, 1}, {4, 7, 5, 3}, {9, 17, 16, 8}, {33, 15, 4, 9}};
  ForEachGradCase(shapes, /*seed=*/300,
                  [](const GradShape& s, const TestMatrix& Q, const TestMatrix& K,
                     const TestMatrix& V, const TestMatrix& dO, const AttentionOptions& o) {
                    const Mat q = Q.ToRef(), k = K.ToRef(), v = V.ToRef(), dout = dO.ToRef();
                    AttentionBackwardTrace tr;
                    REQUIRE_OK(TraceAttentionBackwardQKV(Q, K, V, dO, o, &tr));
                    const bwd_ref::Forward f = bwd_ref::AttentionForward(q, k, v, o);
                    const bwd_ref::Gradients g = bwd_ref::AttentionBackward(q, k, v, dout, o);
                    const RefSteps want = ReferenceSteps(f, v, dout, o.softcap);
                    // The trace's float32 forward (scores ~1e-6 relative, |S| <= ~10) moves
                    // each weight by ~1e-6 and every later step by a few times that; 3e-5
                    // of the largest value (as the fused backward's tests), while a wrong
                    // or missing term is ~1e-2.
                    const double tol = 3e-5;
                    CheckRelative("dO", tr.dO, dout, 0.0);
                    CheckRelative("dV", tr.dV, g.dV, tol);
                    CheckRelative("d_weights", tr.d_weights, want.dP, tol);
                    CheckRelative("D", tr.D, want.D, tol);
                    CheckRelative("d_masked_scores", tr.d_masked_scores, want.dS_masked, tol);
                    CheckRelative("d_scores", tr.d_scores, want.dS, tol);
                    CheckRelative("dQ", tr.dQ, g.dQ, tol);
                    CheckRelative("dK", tr.dK, g.dK, tol);
                    CHECK(tr.forward.X.size() == 0);
                    CHECK(tr.dX.size() == 0);
                    CHECK(tr.dW_Q.size() == 0);
                    CHECK(tr.dW_K.size() == 0);
                    CHECK(tr.dW_V.size() == 0);
                  });
}

// Self-attention in float64: Q = X W_Q, K = X W_K, V = X W_V, then the
// reference forward; the loss whose gradients the trace gives, sum(dO * O).
double SelfAttentionLoss(const Mat& X, const Mat& W_Q, const Mat& W_K, const Mat& W_V,
                         const Mat& dO, const AttentionOptions& o) {
  return bwd_ref::Loss(ref::MatMul(X, W_Q), ref::MatMul(X, W_K), ref::MatMul(X, W_V), dO, o);
}

TEST_CASE("backward trace: projection gradients match central finite differences",
          "[backward][trace]") {
  struct Shape {
    size_t T, d_model, d_k, d_v;
  };
  uint32_t seed = 600;
  for (Shape s : {Shape{1, 1, 1, 1}, Shape{4, 5, 3, 2}, Shape{6, 3, 4, 5}}) {
    const TestMatrix X = Random(s.T, s.d_model, seed++, Layout::kStrided);
    const TestMatrix W_Q = Random(s.d_model, s.d_k, seed++, Layout::kStrided);
    const TestMatrix W_K = Random(s.d_model, s.d_k, seed++, Layout::kStrided);
    const TestMatrix W_V = Random(s.d_model, s.d_v, seed++, Layout::kStrided);
    const TestMatrix dO = Random(s.T, s.d_v, seed++, Layout::kStrided);
    const Masks masks(s.T, s.T, seed++);
    for (const Kind& kind : Kinds()) {
      AttentionOptions o;
      kind.set(s.T, s.T, masks, &o);
      INFO("T " << s.T << " d_model " << s.d_model << " d_k " << s.d_k << " d_v " << s.d_v << ", "
                << kind.name);
      AttentionBackwardTrace tr;
      REQUIRE_OK(TraceAttentionBackward(X, W_Q, W_K, W_V, dO, o, &tr));
      REQUIRE(tr.forward.X.rows() == s.T);
      Mat x = X.ToRef(), wq = W_Q.ToRef(), wk = W_K.ToRef(), wv = W_V.ToRef();
      const Mat dout = dO.ToRef();
      // Central differences with h = 1e-5 in float64: truncation ~h^2 f''' and
      // rounding ~1e-16 / h, both below 1e-9. The trace is float32 (each
      // stage ~1e-6 relative): 5e-5 of the largest finite difference; a
      // wrong or missing term of a gradient is ~1e-2.
      const double h = 1e-5;
      auto check = [&](const char* name, Mat* param, ConstMatrixView grad) {
        INFO(name);
        REQUIRE(grad.rows == param->rows);
        REQUIRE(grad.cols == param->cols);
        Mat fd(param->rows, param->cols);
        for (size_t e = 0; e < param->v.size(); ++e) {
          const double keep = param->v[e];
          param->v[e] = keep + h;
          const double up = SelfAttentionLoss(x, wq, wk, wv, dout, o);
          param->v[e] = keep - h;
          const double down = SelfAttentionLoss(x, wq, wk, wv, dout, o);
          param->v[e] = keep;
          fd.v[e] = (up - down) / (2 * h);
        }
        CheckRelative(name, grad, fd, 5e-5);
      };
      check("dX", &x, tr.dX);
      check("dW_Q", &wq, tr.dW_Q);
      check("dW_K", &wk, tr.dW_K);
      check("dW_V", &wv, tr.dW_V);
    }
  }
}

TEST_CASE("backward trace: every intermediate has its shape", "[backward][trace]") {
  const size_t T = 5, d_model = 4, d_k = 3, d_v = 2;
  const TestMatrix X = Random(T, d_model, 1), W_Q = Random(d_model, d_k, 2);
  const TestMatrix W_K = Random(d_model, d_k, 3), W_V = Random(d_model, d_v, 4);
  const TestMatrix dO = Random(T, d_v, 5);
  AttentionOptions o;
  o.causal = true;
  AttentionBackwardTrace tr;
  REQUIRE_OK(TraceAttentionBackward(X, W_Q, W_K, W_V, dO, o, &tr));
  auto shape = [](const Matrix& m, size_t rows, size_t cols) {
    return m.rows() == rows && m.cols() == cols;
  };
  CHECK(shape(tr.forward.X, T, d_model));
  CHECK(shape(tr.forward.weights, T, T));
  CHECK(shape(tr.dO, T, d_v));
  CHECK(shape(tr.dV, T, d_v));
  CHECK(shape(tr.d_weights, T, T));
  CHECK(shape(tr.D, T, 1));
  CHECK(shape(tr.d_masked_scores, T, T));
  CHECK(shape(tr.d_scores, T, T));
  CHECK(shape(tr.dQ, T, d_k));
  CHECK(shape(tr.dK, T, d_k));
  CHECK(shape(tr.dX, T, d_model));
  CHECK(shape(tr.dW_Q, d_model, d_k));
  CHECK(shape(tr.dW_K, d_model, d_k));
  CHECK(shape(tr.dW_V, d_model, d_v));
  // The projected trace's attention part equals the trace on its own Q, K, V
  // (the same float32 inputs; sums in double): 1e-6 of the magnitude.
  AttentionBackwardTrace qkv;
  REQUIRE_OK(TraceAttentionBackwardQKV(tr.forward.Q, tr.forward.K, tr.forward.V, dO, o, &qkv));
  CheckRelative("dQ", qkv.dQ, ref::FromView(tr.dQ), 1e-6);
  CheckRelative("dK", qkv.dK, ref::FromView(tr.dK), 1e-6);
  CheckRelative("dV", qkv.dV, ref::FromView(tr.dV), 1e-6);
}

TEST_CASE("backward trace: masked entries and fully masked rows give exactly zero",
          "[backward][trace]") {
  const size_t T_q = 13, T_k = 17, d_k = 8, d_v = 5;
  uint32_t seed = 800;
  const TestMatrix Q = Random(T_q, d_k, seed++, Layout::kStrided, -2.0f, 2.0f);
  const TestMatrix K = Random(T_k, d_k, seed++, Layout::kStrided, -2.0f, 2.0f);
  const TestMatrix V = Random(T_k, d_v, seed++);
  const TestMatrix dO = Random(T_q, d_v, seed++);
  const Masks masks(T_q, T_k, seed++);
  size_t masked_cells = 0, masked_rows = 0;
  for (const Kind& kind : Kinds()) {
    AttentionOptions o;
    kind.set(T_q, T_k, masks, &o);
    INFO(kind.name);
    AttentionBackwardTrace tr;
    REQUIRE_OK(TraceAttentionBackwardQKV(Q, K, V, dO, o, &tr));
    const ConstMatrixView masked = tr.forward.masked_scores;
    size_t nonzero = 0, nonzero_rows = 0;
    std::vector<bool> key_seen(T_k, false);
    for (size_t i = 0; i < T_q; ++i) {
      bool row_masked = true;
      for (size_t j = 0; j < T_k; ++j) {
        if (masked(i, j) != -kInf) {
          row_masked = false;
          key_seen[j] = true;
          continue;
        }
        ++masked_cells;
        if (tr.d_masked_scores(i, j) != 0.0f || tr.d_scores(i, j) != 0.0f) ++nonzero;
      }
      if (!row_masked) continue;
      ++masked_rows;
      if (tr.D(i, 0) != 0.0f) ++nonzero_rows;
      for (size_t x = 0; x < d_k; ++x)
        if (tr.dQ(i, x) != 0.0f) ++nonzero_rows;
    }
    // A key no query sees gets no gradient at all.
    for (size_t j = 0; j < T_k; ++j) {
      if (key_seen[j]) continue;
      for (size_t x = 0; x < d_k; ++x)
        if (tr.dK(j, x) != 0.0f) ++nonzero_rows;
      for (size_t x = 0; x < d_v; ++x)
        if (tr.dV(j, x) != 0.0f) ++nonzero_rows;
    }
    CHECK(nonzero == 0);
    CHECK(nonzero_rows == 0);
    for (const Matrix* m :
         {&tr.dV, &tr.d_weights, &tr.D, &tr.d_masked_scores, &tr.d_scores, &tr.dQ, &tr.dK}) {
      CHECK(AllFinite(*m));
    }
  }
  // The kinds above mask cells and whole rows (row 0 of the bool mask, the
  // first rows at causal offset -2, every row at key_length 0).
  CHECK(masked_cells > T_q * T_k);
  CHECK(masked_rows >= T_q + 3);
}

TEST_CASE("backward trace: d_scores is d_masked_scores times the softcap's derivative",
          "[backward][trace]") {
  const size_t T_q = 9, T_k = 11, d_k = 6, d_v = 4;
  uint32_t seed = 900;
  const TestMatrix Q = Random(T_q, d_k, seed++, Layout::kContiguous, -3.0f, 3.0f);
  const TestMatrix K = Random(T_k, d_k, seed++, Layout::kContiguous, -3.0f, 3.0f);
  const TestMatrix V = Random(T_k, d_v, seed++);
  const TestMatrix dO = Random(T_q, d_v, seed++);
  const Masks masks(T_q, T_k, seed++);
  for (const Kind& kind : Kinds()) {
    AttentionOptions o;
    kind.set(T_q, T_k, masks, &o);
    INFO(kind.name);
    AttentionBackwardTrace tr;
    REQUIRE_OK(TraceAttentionBackwardQKV(Q, K, V, dO, o, &tr));
    if (o.softcap == 0.0f) {
      // No softcap: the same matrix, bit for bit.
      const ConstMatrixView a = tr.d_scores, b = tr.d_masked_scores;
      CHECK(CopyOf(a).SameValues(CopyOf(b)));
      continue;
    }
    // dS = dS' (1 - tanh^2(S / c)) with S = scale * raw scores, from the
    // trace's own values: one float32 rounding apart, 1e-6 relative.
    double smallest_factor = 1.0;
    size_t bad = 0;
    for (size_t i = 0; i < T_q; ++i) {
      for (size_t j = 0; j < T_k; ++j) {
        const double S = static_cast<double>(tr.forward.scale) * tr.forward.raw_scores(i, j);
        const double t = std::tanh(S / o.softcap);
        const double factor = 1.0 - t * t;
        const double want = tr.d_masked_scores(i, j) * factor;
        if (!(std::abs(tr.d_scores(i, j) - want) <= 1e-6 * std::abs(want))) ++bad;
        if (tr.d_masked_scores(i, j) != 0.0f) smallest_factor = std::min(smallest_factor, factor);
      }
    }
    CHECK(bad == 0);
    // The softcap is saturated somewhere, so the factor is visible.
    CHECK(smallest_factor < 0.9);
  }
}

TEST_CASE("backward trace: bad input returns a Status naming the parameter", "[backward][trace]") {
  const TestMatrix Q = Random(4, 3, 1), K = Random(5, 3, 2), V = Random(5, 2, 3);
  const TestMatrix dO = Random(4, 2, 4);
  const TestMatrix X = Random(4, 6, 5), W_Q = Random(6, 3, 6), W_K = Random(6, 3, 7),
                   W_V = Random(6, 2, 8);
  const AttentionOptions o;
  AttentionBackwardTrace tr;
  REQUIRE_OK(TraceAttentionBackwardQKV(Q, K, V, dO, o, &tr));
  const TestMatrix dQ_before = CopyOf(tr.dQ);

  CHECK_ERROR(TraceAttentionBackwardQKV(Q, K, V, dO, o, nullptr),
              Err(ErrorCode::kInvalidArgument).Name("trace"));
  CHECK_ERROR(TraceAttentionBackward(X, W_Q, W_K, W_V, dO, o, nullptr),
              Err(ErrorCode::kInvalidArgument).Name("trace"));

  // dO of the wrong shape, empty or not finite.
  TestMatrix wrong_cols(4, 3), wrong_rows(3, 2);
  CHECK_ERROR(TraceAttentionBackwardQKV(Q, K, V, wrong_cols, o, &tr),
              Err(ErrorCode::kShapeMismatch).Name("dO").Num(2).Num(3));
  CHECK_ERROR(TraceAttentionBackward(X, W_Q, W_K, W_V, wrong_rows, o, &tr),
              Err(ErrorCode::kShapeMismatch).Name("dO").Num(4).Num(3));
  CHECK_ERROR(TraceAttentionBackwardQKV(Q, K, V, ConstMatrixView(), o, &tr),
              Err(ErrorCode::kInvalidArgument).Or(ErrorCode::kShapeMismatch).Name("dO"));
  TestMatrix nan_dO = CopyOf(dO);
  nan_dO(1, 1) = kNaN;
  CHECK_ERROR(TraceAttentionBackwardQKV(Q, K, V, nan_dO, o, &tr),
              Err(ErrorCode::kNonFinite).Name("dO"));
  TestMatrix inf_dO = CopyOf(dO);
  inf_dO(3, 0) = -kInf;
  CHECK_ERROR(TraceAttentionBackward(X, W_Q, W_K, W_V, inf_dO, o, &tr),
              Err(ErrorCode::kNonFinite).Name("dO"));

  // The forward's inputs, checked as the forward checks them.
  CHECK_ERROR(TraceAttentionBackwardQKV(Q, Random(5, 4, 9), V, dO, o, &tr),
              Err(ErrorCode::kShapeMismatch).Name("K"));
  CHECK_ERROR(TraceAttentionBackwardQKV(Q, K, Random(6, 2, 9), dO, o, &tr),
              Err(ErrorCode::kShapeMismatch).Name("V"));
  TestMatrix nan_X = CopyOf(X);
  nan_X(2, 5) = kNaN;
  CHECK_ERROR(TraceAttentionBackward(nan_X, W_Q, W_K, W_V, dO, o, &tr),
              Err(ErrorCode::kNonFinite).Name("X"));
  CHECK_ERROR(TraceAttentionBackward(X, Random(5, 3, 9), W_K, W_V, dO, o, &tr),
              Err(ErrorCode::kShapeMismatch).Name("W_Q"));
  CHECK_ERROR(TraceAttentionBackward(X, W_Q, Random(6, 2, 9), W_V, dO, o, &tr),
              Err(ErrorCode::kShapeMismatch).Name("W_K"));
  CHECK_ERROR(TraceAttentionBackward(X, W_Q, W_K, Random(5, 2, 9), dO, o, &tr),
              Err(ErrorCode::kShapeMismatch).Name("W_V"));
  AttentionOptions bad;
  bad.softcap = -1.0f;
  CHECK_ERROR(TraceAttentionBackwardQKV(Q, K, V, dO, bad, &tr),
              Err(ErrorCode::kInvalidArgument).Name("softcap"));
  bad = AttentionOptions();
  bad.key_length = 6;
  CHECK_ERROR(TraceAttentionBackwardQKV(Q, K, V, dO, bad, &tr),
              Err(ErrorCode::kInvalidArgument).Name("key_length").Num(5).Num(6));

  // Finite inputs whose gradients overflow float: dP = dO V^T ~ 1e40.
  TestMatrix big_V = CopyOf(V), big_dO = CopyOf(dO);
  for (size_t j = 0; j < 5; ++j) big_V(j, 0) = 1e20f;
  for (size_t i = 0; i < 4; ++i) big_dO(i, 0) = 1e20f;
  CHECK_ERROR(TraceAttentionBackwardQKV(Q, K, big_V, big_dO, o, &tr),
              Err(ErrorCode::kOverflow).Name("dO"));

  // A failed call leaves the trace as it was.
  CHECK(CopyOf(tr.dQ).SameValues(dQ_before));
  CHECK(tr.forward.X.size() == 0);
}

}  // namespace
