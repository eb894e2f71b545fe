// The backward pass of single-head attention (backward.h).
//  - The float64 reference (backward_reference.h) against central finite
//    differences of its own forward, loss = sum(dO * O), for every option.
//  - The fused float32 forward-for-training and backward against that
//    reference on every compiled SIMD target, at awkward sizes (1, lanes +-
//    1, primes, the key block's edges 63/64/65 and 127/128/129), every mask
//    kind, softcap, fully masked rows (exactly 0) and huge logits.
//  - Bad input returns a Status naming the parameter.
// Tolerances are stated where they are used.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/backward_kinds.h"
#include "tests/backward_reference.h"
#include "tests/test_util.h"

namespace {

using namespace attnkit;
using namespace attnkit_test;
using ref::Mat;

TEST_CASE("backward reference matches central finite differences", "[backward]") {
  struct Shape {
    size_t T_q, T_k, d_k, d_v;
  };
  uint32_t seed = 100;
  for (Shape s : {Shape{1, 1, 1, 1}, Shape{3, 5, 2, 3}, Shape{5, 3, 4, 2}, Shape{4, 4, 3, 3}}) {
    const Masks masks(s.T_q, s.T_k, seed++);
    const Mat Q = Random(s.T_q, s.d_k, seed++).ToRef();
    const Mat K = Random(s.T_k, s.d_k, seed++).ToRef();
    const Mat V = Random(s.T_k, s.d_v, seed++).ToRef();
    const Mat dO = Random(s.T_q, s.d_v, seed++).ToRef();
    for (const Kind& kind : Kinds()) {
      AttentionOptions o;
      kind.set(s.T_q, s.T_k, masks, &o);
      INFO("shape " << s.T_q << "x" << s.T_k << " d_k " << s.d_k << " d_v " << s.d_v << ", "
                    << kind.name);
      const bwd_ref::Gradients g = bwd_ref::AttentionBackward(Q, K, V, dO, o);
      // Central differences with h = 1e-5 in float64: truncation ~h^2 * f'''
      // and rounding ~1e-16 / h, both far below 1e-7; a wrong term of the
      // gradient is of order 0.01-1.
      const double h = 1e-5;
      size_t checked = 0;
      auto check = [&](const char* name, Mat* x, const Mat& grad) {
        for (size_t k = 0; k < x->v.size(); ++k) {
          const double keep = x->v[k];
          x->v[k] = keep + h;
          const double up = bwd_ref::Loss(name[0] == 'Q' ? *x : Q, name[0] == 'K' ? *x : K,
                                          name[0] == 'V' ? *x : V, dO, o);
          x->v[k] = keep - h;
          const double down = bwd_ref::Loss(name[0] == 'Q' ? *x : Q, name[0] == 'K' ? *x : K,
                                            name[0] == 'V' ? *x : V, dO, o);
          x->v[k] = keep;
          const double fd = (up - down) / (2 * h);
          INFO(name << " element " << k << ": analytic " << grad.v[k] << ", finite difference "
                    << fd);
          CHECK(std::abs(fd - grad.v[k]) <= 1e-7 * std::max(1.0, std::abs(fd)));
          ++checked;
        }
      };
      Mat q = Q, k = K, v = V;
      check("Q", &q, g.dQ);
      check("K", &k, g.dK);
      check("V", &v, g.dV);
      CHECK(checked == Q.v.size() + K.v.size() + V.v.size());
    }
  }
}

// The largest |x| of a reference matrix, at least 1.
double Magnitude(const Mat& m) { return std::max(1.0, m.MaxAbs()); }

// |got - want| <= tol * Magnitude(want) for every element, and exactly 0
// where `exact_zero` says the reference gradient is structurally 0.
void CheckGradient(const char* name, ConstMatrixView got, const Mat& want, double tol,
                   const std::function<bool(size_t row)>& exact_zero) {
  INFO(name);
  REQUIRE(got.rows == want.rows);
  REQUIRE(got.cols == want.cols);
  const double bound = tol * Magnitude(want);
  double worst = 0.0;
  size_t bad = 0, nonzero = 0;
  for (size_t r = 0; r < want.rows; ++r) {
    for (size_t c = 0; c < want.cols; ++c) {
      const double g = got(r, c), w = want(r, c);
      if (!std::isfinite(g)) ++bad;
      worst = std::max(worst, std::abs(g - w));
      if (exact_zero(r) && g != 0.0f) ++nonzero;
    }
  }
  INFO("worst |got - want| " << worst << ", bound " << bound << ", non-finite " << bad
                             << ", structurally zero but not 0: " << nonzero);
  CHECK(bad == 0);
  CHECK(worst <= bound);
  CHECK(nonzero == 0);
}

// The fused forward-for-training and backward (both overloads) against the
// reference on the current target. Tolerance, relative to the largest
// reference value of each output: `tol` (1e-5 for O, 3e-5 for lse
// and the gradients at |S| <= ~10: float32 rounding over sums of at most a few
// hundred terms is ~1e-6 of the magnitude, a wrong term ~1e-2).
void CheckFused(const TestMatrix& Q, const TestMatrix& K, const TestMatrix& V, const TestMatrix& dO,
                const AttentionOptions& o, double tol) {
  const size_t T_q = Q.rows(), T_k = K.rows(), d_k = Q.cols(), d_v = V.cols();
  const Mat q = Q.ToRef(), k = K.ToRef(), v = V.ToRef(), dout = dO.ToRef();
  const bwd_ref::Forward f = bwd_ref::AttentionForward(q, k, v, o);
  const bwd_ref::Gradients want = bwd_ref::AttentionBackward(q, k, v, dout, o);

  TestMatrix out(T_q, d_v, Layout::kStrided), lse(T_q, 1, Layout::kStrided);
  REQUIRE_OK(AttentionForTraining(Q, K, V, o, out, lse));
  CHECK(out.PaddingIntact());
  CHECK(lse.PaddingIntact());
  std::vector<bool> row_sees(T_q, false), key_seen(T_k, false);
  for (size_t i = 0; i < T_q; ++i) {
    for (size_t j = 0; j < T_k; ++j) {
      if (bwd_ref::Sees(o, T_q, T_k, i, j)) row_sees[i] = key_seen[j] = true;
    }
  }
  auto masked_row = [&](size_t i) { return !row_sees[i]; };
  auto unseen_key = [&](size_t j) { return !key_seen[j]; };
  CheckGradient("O", out, f.O, tol / 3, masked_row);
  {
    INFO("lse");
    for (size_t i = 0; i < T_q; ++i) {
      if (!row_sees[i]) {
        CHECK(lse(i, 0) == -kInf);
      } else {
        CHECK(std::abs(lse(i, 0) - f.lse(i, 0)) <= tol * std::max(1.0, std::abs(f.lse(i, 0))));
      }
    }
  }
  TestMatrix dQ(T_q, d_k, Layout::kStrided), dK(T_k, d_k, Layout::kStrided),
      dV(T_k, d_v, Layout::kStrided);
  REQUIRE_OK(AttentionBackward(Q, K, V, out, dO, lse, o, dQ, dK, dV));
  CheckGradient("dQ", dQ, want.dQ, tol, masked_row);
  CheckGradient("dK", dK, want.dK, tol, unseen_key);
  CheckGradient("dV", dV, want.dV, tol, unseen_key);
  CHECK(dQ.PaddingIntact());
  CHECK(dK.PaddingIntact());
  CHECK(dV.PaddingIntact());
  // Without the forward's results: the same forward recomputed, bit for bit.
  TestMatrix dQ2(T_q, d_k), dK2(T_k, d_k), dV2(T_k, d_v);
  REQUIRE_OK(AttentionBackward(Q, K, V, dO, o, dQ2, dK2, dV2));
  CHECK(dQ2.SameValues(dQ));
  CHECK(dK2.SameValues(dK));
  CHECK(dV2.SameValues(dV));
}

TEST_CASE("fused backward matches the float64 reference on every target", "[backward]") {
  // 1, lanes +- 1 (4, 8, 16), primes, and the key block (64) and two blocks
  // (128) +- 1, the query block (32) +- 1; T_q != T_k both ways.
  const std::vector<GradShape> shapes = {
      {1, 1, 1, 1},     {3, 5, 4, 3},     {7, 9, 15, 17},    {17, 13, 16, 8},
      {31, 33, 5, 7},   {33, 31, 3, 9},   {63, 64, 8, 16},   {65, 65, 17, 15},
      {127, 129, 4, 4}, {128, 128, 9, 2}, {129, 127, 2, 33},
  };
  ForEachGradCase(
      shapes, /*seed=*/7,
      [](const GradShape&, const TestMatrix& Q, const TestMatrix& K, const TestMatrix& V,
         const TestMatrix& dO, const AttentionOptions& o) { CheckFused(Q, K, V, dO, o, 3e-5); });
}

TEST_CASE("fused backward: huge logits neither overflow nor lose the gradient", "[backward]") {
  // Scores up to |S| ~ 1e4: float32 holds them to ~1e-3 absolute (half an
  // ulp at 1e4 is 5e-4), which moves each weight exp(S - lse) by up to ~1e-3
  // relative. Tolerance 5e-3 of the largest reference value; a wrong or
  // missing term is of order 1.
  const size_t T = 37, d = 8;
  uint32_t seed = 900;
  ForEachTarget([&](int64_t) {
    const TestMatrix Q = Random(T, d, seed++, Layout::kStrided, -40.0f, 40.0f);
    const TestMatrix K = Random(T, d, seed++, Layout::kStrided, -40.0f, 40.0f);
    const TestMatrix V = Random(T, d, seed++);
    const TestMatrix dO = Random(T, d, seed++);
    for (bool causal : {false, true}) {
      for (float softcap : {0.0f, 50.0f}) {
        AttentionOptions o;
        o.scale = 1.0f;
        o.causal = causal;
        o.softcap = softcap;
        INFO("causal " << causal << " softcap " << softcap);
        const Mat S = ref::MatMulT(Q.ToRef(), K.ToRef());
        REQUIRE(S.MaxAbs() > 5e3);
        CheckFused(Q, K, V, dO, o, 5e-3);
      }
    }
  });
}

TEST_CASE("training forward at huge logits: its lse is the one the backward recomputes P from",
          "[backward]") {
  // Few queries against many keys, where attention would take the split-K
  // path: the training forward must sum the scores as the backward's
  // recompute does (same packed K^T, same GEMM, same exp), or at |S| ~ 1e4 a
  // different rounding of S (~1e-3 absolute) moves every weight exp(S - lse)
  // and dV by ~1e-3. Tolerance as the package's test of the same case: 2e-4
  // of the largest reference value plus 1e-3 of each; lse itself rounds to
  // 5e-4 absolute at 1e4, which moves a weight by at most that.
  struct Shape {
    size_t T_q, T_k, d_k, d_v;
  };
  uint32_t seed = 950;
  ForEachTarget([&](int64_t) {
    for (Shape s : {Shape{2, 300, 8, 8}, Shape{3, 17, 4, 3}, Shape{9, 17, 4, 3}}) {
      INFO("T_q " << s.T_q << " T_k " << s.T_k << " d_k " << s.d_k << " d_v " << s.d_v);
      const TestMatrix Q = Random(s.T_q, s.d_k, seed++, Layout::kContiguous, -100.0f, 100.0f);
      const TestMatrix K = Random(s.T_k, s.d_k, seed++, Layout::kContiguous, -100.0f, 100.0f);
      const TestMatrix V = Random(s.T_k, s.d_v, seed++);
      const TestMatrix dO = Random(s.T_q, s.d_v, seed++);
      AttentionOptions o;
      o.scale = 1.0f;
      REQUIRE(ref::MatMulT(Q.ToRef(), K.ToRef()).MaxAbs() > 5e3);
      const bwd_ref::Gradients want =
          bwd_ref::AttentionBackward(Q.ToRef(), K.ToRef(), V.ToRef(), dO.ToRef(), o);
      TestMatrix out(s.T_q, s.d_v), lse(s.T_q, 1), dQ(s.T_q, s.d_k), dK(s.T_k, s.d_k),
          dV(s.T_k, s.d_v);
      REQUIRE_OK(AttentionForTraining(Q, K, V, o, out, lse));
      REQUIRE_OK(AttentionBackward(Q, K, V, out, dO, lse, o, dQ, dK, dV));
      const double magnitude = Magnitude(want.dV);
      double worst = 0.0;
      for (size_t j = 0; j < s.T_k; ++j) {
        for (size_t c = 0; c < s.d_v; ++c) {
          const double w = want.dV(j, c);
          worst = std::max(worst, std::abs(dV(j, c) - w) / (2e-4 * magnitude + 1e-3 * std::abs(w)));
        }
      }
      INFO("worst |dV - reference| / tolerance " << worst);
      CHECK(worst <= 1.0);
    }
  });
}

TEST_CASE("fused forward for training and backward: scores past float range are an overflow",
          "[backward]") {
  // q . k = 1e40 is inf in float32: the forward (Attention) reports kOverflow;
  // so must the training forward and the backward, never a row of zeros read
  // as "sees no key" (lse = -inf).
  const TestMatrix Q = FromRows({{1e20f}}), K = FromRows({{1e20f}, {1.0f}});
  const TestMatrix V = FromRows({{1.0f}, {2.0f}}), dO = FromRows({{1.0f}});
  ForEachTarget([&](int64_t) {
    AttentionOptions o;
    o.scale = 1.0f;
    TestMatrix out(1, 1), lse(1, 1), dQ(1, 1), dK(2, 1), dV(2, 1);
    CHECK(AttentionForTraining(Q, K, V, o, out, lse).code() == ErrorCode::kOverflow);
    CHECK(AttentionBackward(Q, K, V, dO, o, dQ, dK, dV).code() == ErrorCode::kOverflow);
    const TestMatrix saved_out = FromRows({{1.5f}}), saved_lse = FromRows({{0.0f}});
    CHECK(AttentionBackward(Q, K, V, saved_out, dO, saved_lse, o, dQ, dK, dV).code() ==
          ErrorCode::kOverflow);
    TestMatrix mh_lse(1, 1);
    CHECK(MultiHeadAttentionQKVForTraining(Q, K, V, 1, HeadConfig{1, 1, 0, 0}, o, out, mh_lse)
              .code() == ErrorCode::kOverflow);
  });
}

// The backward by the formulas from the materialised weights of the
// forward's trace (TraceAttentionQKV: P, the capped scores, O), in float64.
bwd_ref::Gradients FromTrace(const AttentionTrace& tr, const Mat& dO, float softcap) {
  const Mat P = ref::FromView(tr.weights.view()), C = ref::FromView(tr.scaled_scores.view());
  const Mat O = ref::FromView(tr.output.view()), Q = ref::FromView(tr.Q.view());
  const Mat K = ref::FromView(tr.K.view()), V = ref::FromView(tr.V.view());
  const Mat dV = ref::MatMul(ref::Transpose(P), dO);
  const Mat dP = ref::MatMulT(dO, V);
  Mat dS(P.rows, P.cols);
  for (size_t i = 0; i < P.rows; ++i) {
    double D = 0.0;
    for (size_t c = 0; c < O.cols; ++c) D += dO(i, c) * O(i, c);
    for (size_t j = 0; j < P.cols; ++j) {
      const double t = softcap > 0.0f ? C(i, j) / softcap : 0.0;  // tanh(S / c)
      dS(i, j) = tr.scale * P(i, j) * (dP(i, j) - D) * (1.0 - t * t);
    }
  }
  return {ref::MatMul(dS, K), ref::MatMul(ref::Transpose(dS), Q), dV};
}

TEST_CASE("fused backward equals the backward from the trace's weights", "[backward]") {
  // Both sides are float32 computations of the same quantities; they differ by
  // rounding only: 1e-5 of the largest value of each gradient. The forward for
  // training also equals Attention's output within 1e-5.
  uint32_t seed = 500;
  ForEachTarget([&](int64_t) {
    for (size_t T : {5, 64, 129}) {
      const TestMatrix Q = Random(T, 16, seed++, Layout::kStrided, -2.0f, 2.0f);
      const TestMatrix K = Random(T + 3, 16, seed++, Layout::kStrided, -2.0f, 2.0f);
      const TestMatrix V = Random(T + 3, 8, seed++, Layout::kStrided);
      const TestMatrix dO = Random(T, 8, seed++, Layout::kStrided);
      const Masks masks(T, T + 3, seed++);
      for (const Kind& kind : Kinds()) {
        AttentionOptions o;
        kind.set(T, T + 3, masks, &o);
        INFO("T " << T << ", " << kind.name);
        AttentionTrace tr;
        REQUIRE_OK(TraceAttentionQKV(Q, K, V, o, &tr));
        const bwd_ref::Gradients want = FromTrace(tr, dO.ToRef(), o.softcap);
        TestMatrix out(T, 8), lse(T, 1), forward(T, 8);
        REQUIRE_OK(AttentionForTraining(Q, K, V, o, out, lse));
        REQUIRE_OK(Attention(Q, K, V, o, forward));
        auto none = [](size_t) { return false; };
        CheckGradient("O against Attention", out, forward.ToRef(), 1e-5, none);
        TestMatrix dQ(T, 16), dK(T + 3, 16), dV(T + 3, 8);
        REQUIRE_OK(AttentionBackward(Q, K, V, out, dO, lse, o, dQ, dK, dV));
        CheckGradient("dQ", dQ, want.dQ, 1e-5, none);
        CheckGradient("dK", dK, want.dK, 1e-5, none);
        CheckGradient("dV", dV, want.dV, 1e-5, none);
      }
    }
  });
}

TEST_CASE("backward with threads is bit-identical to one thread", "[backward]") {
  ThreadPool two(2), three(3);
  uint32_t seed = 700;
  ForEachTarget([&](int64_t) {
    for (size_t T : {1, 33, 129, 200}) {
      const TestMatrix Q = Random(T, 12, seed++, Layout::kStrided, -2.0f, 2.0f);
      const TestMatrix K = Random(T + 5, 12, seed++, Layout::kStrided, -2.0f, 2.0f);
      const TestMatrix V = Random(T + 5, 7, seed++, Layout::kStrided);
      const TestMatrix dO = Random(T, 7, seed++, Layout::kStrided);
      const Masks masks(T, T + 5, seed++);
      for (const Kind& kind : Kinds()) {
        AttentionOptions o;
        kind.set(T, T + 5, masks, &o);
        TestMatrix out(T, 7), lse(T, 1), dQ(T, 12), dK(T + 5, 12), dV(T + 5, 7);
        REQUIRE_OK(AttentionForTraining(Q, K, V, o, out, lse));
        REQUIRE_OK(AttentionBackward(Q, K, V, out, dO, lse, o, dQ, dK, dV));
        for (ThreadPool* pool : {&two, &three}) {
          INFO("T " << T << ", " << kind.name << ", threads " << pool->num_threads());
          o.pool = pool;
          TestMatrix out2(T, 7), lse2(T, 1), dQ2(T, 12), dK2(T + 5, 12), dV2(T + 5, 7);
          REQUIRE_OK(AttentionForTraining(Q, K, V, o, out2, lse2));
          CHECK(out2.SameValues(out));
          CHECK(lse2.SameValues(lse));
          REQUIRE_OK(AttentionBackward(Q, K, V, out, dO, lse, o, dQ2, dK2, dV2));
          CHECK(dQ2.SameValues(dQ));
          CHECK(dK2.SameValues(dK));
          CHECK(dV2.SameValues(dV));
          REQUIRE_OK(AttentionBackward(Q, K, V, dO, o, dQ2, dK2, dV2));
          CHECK(dQ2.SameValues(dQ));
          CHECK(dK2.SameValues(dK));
          CHECK(dV2.SameValues(dV));
        }
      }
    }
  });
}

TEST_CASE("backward: bad input returns a Status naming the parameter", "[backward]") {
  const TestMatrix Q = Random(4, 3, 1), K = Random(5, 3, 2), V = Random(5, 2, 3);
  const TestMatrix dO = Random(4, 2, 4);
  TestMatrix O(4, 2), lse(4, 1), dQ(4, 3), dK(5, 3), dV(5, 2);
  const AttentionOptions o;
  REQUIRE_OK(AttentionForTraining(Q, K, V, o, O, lse));
  REQUIRE_OK(AttentionBackward(Q, K, V, O, dO, lse, o, dQ, dK, dV));

  TestMatrix wrong_dO(4, 3), wrong_lse(4, 2), wrong_O(3, 2), wrong_dQ(4, 2), wrong_dK(4, 3),
      wrong_dV(5, 3), wrong_out(4, 3);
  CHECK_ERROR(AttentionBackward(Q, K, V, O, wrong_dO, lse, o, dQ, dK, dV),
              Err(ErrorCode::kShapeMismatch).Name("dO").Num(2).Num(3));
  CHECK_ERROR(AttentionBackward(Q, K, V, wrong_dO, o, dQ, dK, dV),
              Err(ErrorCode::kShapeMismatch).Name("dO"));
  CHECK_ERROR(AttentionBackward(Q, K, V, O, dO, wrong_lse, o, dQ, dK, dV),
              Err(ErrorCode::kShapeMismatch).Name("lse"));
  CHECK_ERROR(AttentionBackward(Q, K, V, wrong_O, dO, lse, o, dQ, dK, dV),
              Err(ErrorCode::kShapeMismatch).Name("O").Num(4).Num(3));
  CHECK_ERROR(AttentionBackward(Q, K, V, O, dO, lse, o, wrong_dQ, dK, dV),
              Err(ErrorCode::kShapeMismatch).Name("dQ"));
  CHECK_ERROR(AttentionBackward(Q, K, V, O, dO, lse, o, dQ, wrong_dK, dV),
              Err(ErrorCode::kShapeMismatch).Name("dK"));
  CHECK_ERROR(AttentionBackward(Q, K, V, dO, o, dQ, dK, wrong_dV),
              Err(ErrorCode::kShapeMismatch).Name("dV"));
  CHECK_ERROR(AttentionForTraining(Q, K, V, o, wrong_out, lse),
              Err(ErrorCode::kShapeMismatch).Name("out"));
  CHECK_ERROR(AttentionForTraining(Q, K, V, o, O, wrong_lse),
              Err(ErrorCode::kShapeMismatch).Name("lse"));
  CHECK_ERROR(AttentionBackward(Q, Random(5, 4, 9), V, dO, o, dQ, dK, dV),
              Err(ErrorCode::kShapeMismatch).Name("K"));

  TestMatrix nan_dO = CopyOf(dO);
  nan_dO(1, 1) = kNaN;
  CHECK_ERROR(AttentionBackward(Q, K, V, O, nan_dO, lse, o, dQ, dK, dV),
              Err(ErrorCode::kNonFinite).Name("dO"));
  TestMatrix bad_lse = CopyOf(lse);
  bad_lse(2, 0) = kInf;
  CHECK_ERROR(AttentionBackward(Q, K, V, O, dO, bad_lse, o, dQ, dK, dV),
              Err(ErrorCode::kNonFinite).Name("lse"));
  TestMatrix inf_O = CopyOf(O);
  inf_O(0, 0) = -kInf;
  CHECK_ERROR(AttentionBackward(Q, K, V, inf_O, dO, lse, o, dQ, dK, dV),
              Err(ErrorCode::kNonFinite).Name("O"));
  TestMatrix nan_q = CopyOf(Q);
  nan_q(0, 2) = kNaN;
  CHECK_ERROR(AttentionBackward(nan_q, K, V, dO, o, dQ, dK, dV),
              Err(ErrorCode::kNonFinite).Name("Q"));

  // Outputs that alias an input or each other.
  TestMatrix big(5, 3);
  CHECK_ERROR(
      AttentionBackward(Q, K, V, O, dO, lse, o, dQ, big.view(), MatrixView(big.data(), 5, 2, 3)),
      Err(ErrorCode::kInvalidArgument).Name("dK").Name("dV"));
  TestMatrix q_copy = CopyOf(Q);
  CHECK_ERROR(AttentionBackward(q_copy, K, V, dO, o, q_copy.view(), dK, dV),
              Err(ErrorCode::kInvalidArgument).Name("dQ"));

  // Options are checked as the forward checks them.
  AttentionOptions bad;
  bad.softcap = -1.0f;
  CHECK_ERROR(AttentionBackward(Q, K, V, O, dO, lse, bad, dQ, dK, dV),
              Err(ErrorCode::kInvalidArgument).Name("softcap"));
  bad = AttentionOptions();
  bad.key_length = 6;
  CHECK_ERROR(AttentionBackward(Q, K, V, dO, bad, dQ, dK, dV),
              Err(ErrorCode::kInvalidArgument).Name("key_length").Num(5).Num(6));
  bad = AttentionOptions();
  bad.scale = 0.0f;
  CHECK_ERROR(AttentionForTraining(Q, K, V, bad, O, lse),
              Err(ErrorCode::kInvalidArgument).Name("scale"));
}

}  // namespace
