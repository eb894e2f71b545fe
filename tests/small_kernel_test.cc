// The small-shape kernels (plan.h): SmallHead, the forward of Attention's lean
// path (d <= 16), of AttentionForTraining (d <= 64) and of the job's small
// fused heads, and SmallBackward, AttentionBackward's for a head that is one
// tile. Each against the general path bit for bit (the fused kernel and the
// tiled backward, forced with ForceHeadPathForTest) and against the float64
// reference, at T_q, T_k = 1..33, d = 1..16 and 64, every options kind
// (backward_kinds.h: masks, causal, key lengths, softcap), on every target;
// the multi-head and GQA heads the planner gives the small kernel; the
// gradients through the small path against central finite differences.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "src/core/plan.h"
#include "tests/backward_kinds.h"
#include "tests/backward_reference.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::AttentionOptions;
using ref::Mat;
namespace internal = attnkit::internal;

// The general path while it lives: a forced head path turns the small
// kernels off (UseSmallKernel, UseSmallBackward); kFused is the path whose
// sums they repeat.
struct GeneralPath {
  GeneralPath() { internal::ForceHeadPathForTest(internal::HeadPath::kFused); }
  ~GeneralPath() { internal::ForceHeadPathForTest(std::nullopt); }
  GeneralPath(const GeneralPath&) = delete;
  GeneralPath& operator=(const GeneralPath&) = delete;
};

// |got - want| <= tol * max(1, max|want|) everywhere, every value finite.
// The tolerances (as tests/backward_test.cc states them): float32 rounding
// over sums of at most a few hundred terms is ~1e-6 of the magnitude; a wrong
// term, row or mask is ~1e-2 or more.
void CheckNear(const char* name, ConstMatrixView got, const Mat& want, double tol) {
  INFO(name);
  REQUIRE(got.rows == want.rows);
  REQUIRE(got.cols == want.cols);
  const double bound = tol * std::max(1.0, want.MaxAbs());
  double worst = 0.0;
  size_t bad = 0;
  for (size_t r = 0; r < want.rows; ++r) {
    for (size_t c = 0; c < want.cols; ++c) {
      if (!std::isfinite(got(r, c))) ++bad;
      worst = std::max(worst, std::abs(got(r, c) - want(r, c)));
    }
  }
  INFO("worst |got - want| " << worst << ", bound " << bound << ", non-finite " << bad);
  CHECK(bad == 0);
  CHECK(worst <= bound);
}

// Each row's log-sum-exp against the reference's: -inf exactly where the row
// sees no key, else within tol * max(1, |lse|).
void CheckLse(ConstMatrixView got, const Mat& want, double tol) {
  INFO("lse");
  for (size_t i = 0; i < want.rows; ++i) {
    if (std::isinf(want(i, 0))) {
      CHECK(got(i, 0) == -kInf);
    } else {
      CHECK(std::abs(got(i, 0) - want(i, 0)) <= tol * std::max(1.0, std::abs(want(i, 0))));
    }
  }
}

// One case on the current target: the small path's forward (training and
// Attention) and backward against the general path's, bit for bit, and
// against the reference.
void CheckSmallCase(const GradShape& s, const TestMatrix& Q, const TestMatrix& K,
                    const TestMatrix& V, const TestMatrix& dO, const AttentionOptions& o) {
  const size_t T_q = s.T_q, T_k = s.T_k, d_k = s.d_k, d_v = s.d_v;
  TestMatrix out(T_q, d_v, Layout::kStrided), lse(T_q, 1, Layout::kStrided);
  TestMatrix att(T_q, d_v, Layout::kStrided);
  TestMatrix dQ(T_q, d_k, Layout::kStrided), dK(T_k, d_k, Layout::kStrided),
      dV(T_k, d_v, Layout::kStrided);
  REQUIRE_OK(attnkit::AttentionForTraining(Q, K, V, o, out, lse));
  REQUIRE_OK(attnkit::Attention(Q, K, V, o, att));
  REQUIRE_OK(attnkit::AttentionBackward(Q, K, V, out, dO, lse, o, dQ, dK, dV));
  for (const TestMatrix* m : {&out, &lse, &att, &dQ, &dK, &dV}) CHECK(m->PaddingIntact());

  TestMatrix out_g(T_q, d_v), lse_g(T_q, 1), att_g(T_q, d_v);
  TestMatrix dQ_g(T_q, d_k), dK_g(T_k, d_k), dV_g(T_k, d_v);
  {
    GeneralPath general;
    REQUIRE_OK(attnkit::AttentionForTraining(Q, K, V, o, out_g, lse_g));
    REQUIRE_OK(attnkit::Attention(Q, K, V, o, att_g));
    REQUIRE_OK(attnkit::AttentionBackward(Q, K, V, out_g, dO, lse_g, o, dQ_g, dK_g, dV_g));
  }
  // The fused kernel's sums, and the tiled backward's: the same bits.
  CHECK(out.SameValues(out_g));
  CHECK(lse.SameValues(lse_g));
  if (internal::UseSmallKernelForAttention(T_q, T_k, d_k, d_v)) CHECK(att.SameValues(att_g));
  CHECK(dQ.SameValues(dQ_g));
  CHECK(dK.SameValues(dK_g));
  CHECK(dV.SameValues(dV_g));

  const Mat q = Q.ToRef(), k = K.ToRef(), v = V.ToRef(), dout = dO.ToRef();
  const bwd_ref::Forward f = bwd_ref::AttentionForward(q, k, v, o);
  const bwd_ref::Gradients want = bwd_ref::AttentionBackward(q, k, v, dout, o);
  CheckNear("O (training)", out, f.O, 1e-5);
  CheckNear("O (attention)", att, f.O, 1e-5);
  CheckLse(lse, f.lse, 3e-5);
  CheckNear("dQ", dQ, want.dQ, 3e-5);
  CheckNear("dK", dK, want.dK, 3e-5);
  CheckNear("dV", dV, want.dV, 3e-5);
}

TEST_CASE("The small-shape kernels equal the general path bit for bit, at T = 1..33",
          "[small][backward]") {
  // Square heads T = 1..33 at d = 8 and 64 (the small kernels stop at 32
  // queries and keys, the backward at 64 keys: 33 checks the edge), and
  // T_q != T_k both ways around the lanes and the limits.
  std::vector<GradShape> shapes;
  for (size_t d : {8, 64}) {
    for (size_t T = 1; T <= 33; ++T) shapes.push_back({T, T, d, d});
  }
  for (GradShape s : {GradShape{1, 33, 8, 8}, GradShape{33, 1, 8, 8}, GradShape{32, 64, 8, 4},
                      GradShape{2, 65, 16, 8}, GradShape{5, 17, 64, 8}, GradShape{31, 3, 8, 64}}) {
    shapes.push_back(s);
  }
  {
    const size_t T = 5, d = 8;
    CHECK(internal::UseSmallKernel(T, T, d, d));
    CHECK(internal::UseSmallBackward(T, T, d, d));
    GeneralPath general;
    CHECK_FALSE(internal::UseSmallKernel(T, T, d, d));
    CHECK_FALSE(internal::UseSmallBackward(T, T, d, d));
  }
  ForEachGradCase(shapes, /*seed=*/4100, CheckSmallCase);
}

TEST_CASE("The small-shape kernels at d = 1..16, d_k != d_v", "[small][backward]") {
  std::vector<GradShape> shapes;
  for (size_t d = 1; d <= 16; ++d) {
    for (size_t T : {1, 4, 5, 17, 32}) shapes.push_back({T, T + d % 3, d, 17 - d});
  }
  ForEachGradCase(shapes, /*seed=*/4300, CheckSmallCase);
}

TEST_CASE("Multi-head and GQA heads on the small-shape kernel equal the fused kernel",
          "[small][multihead]") {
  // 2 items, 4 query heads on 2 K/V heads (GQA) and on 1 (MQA), d = 8, T = 5
  // and 16: the training forward (always fused, hence small here) and
  // attention (fused at T = 16) against the forced fused kernel bit for bit
  // and the reference; the multi-head backward from the small forward's lse
  // against the reference.
  uint32_t seed = 4500;
  ForEachTarget([&](int64_t) {
    for (size_t kv_heads : {2, 1}) {
      for (size_t T : {5, 16}) {
        const size_t batch = 2, heads = 4, d = 8;
        const TestMatrix Q = Random(batch * T, heads * d, seed++, Layout::kStrided, -2.0f, 2.0f);
        const TestMatrix K = Random(batch * T, kv_heads * d, seed++, Layout::kStrided, -2.0f, 2.0f);
        const TestMatrix V = Random(batch * T, kv_heads * d, seed++, Layout::kStrided);
        const TestMatrix dO = Random(batch * T, heads * d, seed++, Layout::kStrided);
        const attnkit::HeadConfig config{heads, kv_heads, 0, 0};
        for (int variant = 0; variant < 3; ++variant) {
          AttentionOptions o;
          o.causal = variant == 1;
          if (variant == 2) {
            o.softcap = 1.5f;
            o.key_lengths = {T, T - 2};
          }
          INFO("kv_heads " << kv_heads << " T " << T << " variant " << variant);
          REQUIRE(internal::UseSmallKernel(T, T, d, d));
          TestMatrix out(batch * T, heads * d), lse(batch * heads * T, 1),
              att(batch * T, heads * d);
          TestMatrix out_g(batch * T, heads * d), lse_g(batch * heads * T, 1),
              att_g(batch * T, heads * d);
          REQUIRE_OK(
              attnkit::MultiHeadAttentionQKVForTraining(Q, K, V, batch, config, o, out, lse));
          REQUIRE_OK(attnkit::MultiHeadAttentionQKV(Q, K, V, batch, config, o, att));
          {
            GeneralPath general;
            REQUIRE_OK(
                attnkit::MultiHeadAttentionQKVForTraining(Q, K, V, batch, config, o, out_g, lse_g));
            REQUIRE_OK(attnkit::MultiHeadAttentionQKV(Q, K, V, batch, config, o, att_g));
          }
          CHECK(out.SameValues(out_g));
          CHECK(lse.SameValues(lse_g));
          if (internal::UseFusedPath(T, T, d, d)) CHECK(att.SameValues(att_g));
          const Mat q = Q.ToRef(), k = K.ToRef(), v = V.ToRef();
          const bwd_ref::MultiForward f =
              bwd_ref::MultiHeadForward(q, k, v, batch, heads, kv_heads, o);
          CheckNear("O (training)", out, f.O, 1e-5);
          CheckNear("O (attention)", att, f.O, 1e-5);
          CheckLse(lse, f.lse, 3e-5);
          TestMatrix dQ(batch * T, heads * d), dK(batch * T, kv_heads * d),
              dV(batch * T, kv_heads * d);
          REQUIRE_OK(attnkit::MultiHeadAttentionQKVBackward(Q, K, V, out, dO, lse, batch, config, o,
                                                            dQ, dK, dV));
          const bwd_ref::Gradients want =
              bwd_ref::MultiHeadBackward(q, k, v, dO.ToRef(), batch, heads, kv_heads, o);
          CheckNear("dQ", dQ, want.dQ, 3e-5);
          CheckNear("dK", dK, want.dK, 3e-5);
          CheckNear("dV", dV, want.dV, 3e-5);
        }
      }
    }
  });
}

TEST_CASE("Forward and backward through the small path match central finite differences",
          "[small][backward]") {
  // The gradients of loss = sum(dO * O) that AttentionForTraining and then
  // AttentionBackward give on the small path, against central differences of
  // the float64 reference's loss (h = 1e-5: truncation and rounding far
  // below 1e-7). The float32 gradients are within ~1e-6 of the magnitude; a
  // wrong term is ~1e-2: tolerance 3e-5 of the largest finite difference.
  uint32_t seed = 4700;
  for (GradShape s : {GradShape{1, 1, 1, 1}, GradShape{4, 4, 8, 8}, GradShape{7, 5, 3, 16},
                      GradShape{16, 16, 16, 4}, GradShape{3, 32, 5, 5}}) {
    const TestMatrix Q = Random(s.T_q, s.d_k, seed++, Layout::kContiguous, -2.0f, 2.0f);
    const TestMatrix K = Random(s.T_k, s.d_k, seed++, Layout::kContiguous, -2.0f, 2.0f);
    const TestMatrix V = Random(s.T_k, s.d_v, seed++);
    const TestMatrix dO = Random(s.T_q, s.d_v, seed++);
    const TestMatrix additive = Random(s.T_q, s.T_k, seed++, Layout::kContiguous, -1.0f, 1.0f);
    REQUIRE(internal::UseSmallKernel(s.T_q, s.T_k, s.d_k, s.d_v));
    REQUIRE(internal::UseSmallBackward(s.T_q, s.T_k, s.d_k, s.d_v));
    for (int variant = 0; variant < 4; ++variant) {
      AttentionOptions o;
      if (variant == 1) o.causal = true;
      if (variant == 2) {
        o.softcap = 1.2f;
        o.scale = 1.5f;
      }
      if (variant == 3) {
        o.additive_mask = additive.cview();
        o.key_length = (s.T_k + 1) / 2;
      }
      INFO("T_q " << s.T_q << " T_k " << s.T_k << " d_k " << s.d_k << " d_v " << s.d_v
                  << " variant " << variant);
      const Mat dout = dO.ToRef();
      Mat fd[3] = {Q.ToRef(), K.ToRef(), V.ToRef()};  // shapes; the values are replaced
      double magnitude = 1.0;
      for (int which = 0; which < 3; ++which) {
        Mat x[3] = {Q.ToRef(), K.ToRef(), V.ToRef()};
        const double h = 1e-5;
        for (size_t e = 0; e < x[which].v.size(); ++e) {
          const double keep = x[which].v[e];
          x[which].v[e] = keep + h;
          const double up = bwd_ref::Loss(x[0], x[1], x[2], dout, o);
          x[which].v[e] = keep - h;
          const double down = bwd_ref::Loss(x[0], x[1], x[2], dout, o);
          x[which].v[e] = keep;
          fd[which].v[e] = (up - down) / (2 * h);
          magnitude = std::max(magnitude, std::abs(fd[which].v[e]));
        }
      }
      ForEachTarget([&](int64_t) {
        TestMatrix out(s.T_q, s.d_v), lse(s.T_q, 1);
        TestMatrix dQ(s.T_q, s.d_k), dK(s.T_k, s.d_k), dV(s.T_k, s.d_v);
        REQUIRE_OK(attnkit::AttentionForTraining(Q, K, V, o, out, lse));
        REQUIRE_OK(attnkit::AttentionBackward(Q, K, V, out, dO, lse, o, dQ, dK, dV));
        const TestMatrix* got[3] = {&dQ, &dK, &dV};
        for (int which = 0; which < 3; ++which) {
          INFO("d"
               << "QKV"[which]);
          double worst = 0.0;
          for (size_t r = 0; r < fd[which].rows; ++r) {
            for (size_t c = 0; c < fd[which].cols; ++c) {
              worst = std::max(worst, std::abs((*got[which])(r, c) - fd[which](r, c)));
            }
          }
          INFO("worst |gradient - finite difference| " << worst);
          CHECK(worst <= 3e-5 * magnitude);
        }
      });
    }
  }
}

}  // namespace
}  // namespace attnkit_test
