// Tests of the test harness itself: the float64 reference on hand-computed
// examples, and the comparison / error-checking helpers, so that a passing
// suite cannot come from a vacuous check.
#include <cmath>
#include <cstdint>

#include "tests/reference.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

TEST_CASE("harness: the float64 reference reproduces hand-computed attention",
          "[harness][reference]") {
  const double e = std::exp(1.0);
  // Q = [[1, 0]], K = [[1, 0], [0, 1]], V = [[1, 2], [3, 4]], scale 1:
  // scores [1, 0] -> weights [e, 1] / (e + 1).
  const ref::Mat Q = {{1, 0}}, K = {{1, 0}, {0, 1}}, V = {{1, 2}, {3, 4}};
  ref::Options o;
  o.scale = 1.0;
  const ref::Trace t = ref::Attention(Q, K, V, o);
  CHECK(t.raw(0, 0) == 1.0);
  CHECK(t.raw(0, 1) == 0.0);
  CHECK(t.weights(0, 0) == Approx(e / (e + 1)));
  CHECK(t.weights(0, 1) == Approx(1 / (e + 1)));
  CHECK(t.output(0, 0) == Approx((1 * e + 3) / (e + 1)));
  CHECK(t.output(0, 1) == Approx((2 * e + 4) / (e + 1)));
  // Default scale is 1/sqrt(d_k).
  CHECK(ref::Attention(Q, K, V, ref::Options()).scale == Approx(1 / std::sqrt(2.0)));
  // Softcap: 2 * tanh(s / 2).
  CHECK(ref::Scale(ref::Mat{{3.0}}, 1.0, 2.0)(0, 0) == Approx(2 * std::tanh(1.5)));
  // Causal with T_q = 1 < T_k = 2: offset 1, the query sees both keys.
  o.causal = true;
  CHECK(ref::Attention(Q, K, V, o).weights(0, 1) > 0.0);
  // Causal with T_q = 2 > T_k = 1: query 0 sees nothing, query 1 sees key 0.
  const ref::Trace t2 =
      ref::Attention(ref::Mat{{1, 0}, {0, 1}}, ref::Mat{{1, 0}}, ref::Mat{{5, 6}}, o);
  CHECK(t2.weights(0, 0) == 0.0);
  CHECK(t2.output(0, 1) == 0.0);
  CHECK(t2.weights(1, 0) == 1.0);
  CHECK(t2.output(1, 1) == 6.0);
  // key_length 1 keeps only key 0; an additive -inf masks too.
  ref::Options kl;
  kl.key_length = 1;
  CHECK(ref::Attention(Q, K, V, kl).weights(0, 0) == 1.0);
  ref::Options add;
  add.has_additive = true;
  add.additive = ref::Mat{{ref::kNegInf, 0.0}};
  CHECK(ref::Attention(Q, K, V, add).weights(0, 1) == 1.0);
  CHECK(std::isinf(ref::Attention(Q, K, V, add).masked(0, 0)));
  // Split/merge heads.
  const ref::Mat x = {{1, 2, 3, 4}, {5, 6, 7, 8}};
  const ref::Mat split = ref::SplitHeads(x, 2);
  CHECK(split.rows == 4);
  CHECK(split(1, 0) == 5);  // head 0, t 1
  CHECK(split(2, 1) == 4);  // head 1, t 0
  CHECK(ref::MergeHeads(split, 2).v == x.v);
}

TEST_CASE("harness: Mismatch catches wrong values, NaN, shapes and non-matching infinities",
          "[harness]") {
  TestMatrix m = FromRows({{1.0f, 2.0f}, {3.0f, 4.0f}});
  const ref::Mat want = {{1.0, 2.0}, {3.0, 4.0}};
  CHECK(Mismatch(m, want, kExact).empty());
  m(1, 0) = 3.001f;
  CHECK(!Mismatch(m, want, (Tol{1e-4, 0})).empty());
  CHECK(Mismatch(m, want, (Tol{2e-3, 0})).empty());
  CHECK(Mismatch(m, want, (Tol{0, 1e-3})).empty());  // 0.001 <= 1e-3 * 3
  m(1, 0) = kNaN;
  CHECK(!Mismatch(m, want, (Tol{1e9, 1e9})).empty());
  m(1, 0) = kInf;
  CHECK(!Mismatch(m, want, (Tol{1e9, 1e9})).empty());
  CHECK(!Mismatch(m, ref::Mat(2, 3), (Tol{1e9, 1e9})).empty());
  ref::Mat with_inf = want;
  with_inf(0, 0) = ref::kNegInf;
  m(1, 0) = 3.0f;
  CHECK(!Mismatch(m, with_inf, (Tol{1e9, 1e9})).empty());
  m(0, 0) = -kInf;
  CHECK(Mismatch(m, with_inf, kExact).empty());
}

TEST_CASE("harness: strided test matrices are misaligned, padded and detect stray writes",
          "[harness]") {
  TestMatrix s(3, 5, Layout::kStrided);
  CHECK(s.stride() > s.cols());
  CHECK(reinterpret_cast<uintptr_t>(s.data()) % 8 != 0);  // off by one float
  CHECK(s.PaddingIntact());
  s(2, 4) = 1.0f;  // an element: fine
  CHECK(s.PaddingIntact());
  s.data()[5] = 0.0f;  // between row 0 and row 1
  CHECK(!s.PaddingIntact());
  TestMatrix c(2, 2);
  c.data()[4] = 0.0f;  // just past the end
  CHECK(!c.PaddingIntact());
  // Padding is NaN, so reading it poisons a result.
  const TestMatrix r = Random(2, 3, 7, Layout::kStrided);
  CHECK(std::isnan(r.data()[3]));
}

TEST_CASE("harness: Random is deterministic and in range", "[harness]") {
  const TestMatrix a = Random(4, 7, 42, Layout::kContiguous, -2, 3);
  const TestMatrix b = Random(4, 7, 42, Layout::kStrided, -2, 3);
  const TestMatrix c = Random(4, 7, 43, Layout::kContiguous, -2, 3);
  CHECK(a.SameValues(b));
  CHECK(!a.SameValues(c));
  for (size_t r = 0; r < 4; ++r)
    for (size_t col = 0; col < 7; ++col) {
      CHECK(a(r, col) >= -2.0f);
      CHECK(a(r, col) < 3.0f);
    }
  // The std::mt19937 stream is specified by the standard: the 10000th output
  // of the default seed is 4123659995 on every platform.
  std::mt19937 gen;
  gen.discard(9999);
  CHECK(gen() == 4123659995u);
}

TEST_CASE("harness: ErrorMismatch checks the code, the parameter name and the numbers",
          "[harness][errors]") {
  const Status s(ErrorCode::kShapeMismatch, "W_Q", "expected 4 rows (d_model of X), got 13");
  CHECK(ErrorMismatch(s, Err(ErrorCode::kShapeMismatch).Name("W_Q").Num(4).Num(13)).empty());
  CHECK(!ErrorMismatch(s, Err(ErrorCode::kInvalidArgument).Name("W_Q")).empty());
  CHECK(ErrorMismatch(s, Err(ErrorCode::kInvalidArgument).Or(ErrorCode::kShapeMismatch)).empty());
  CHECK(!ErrorMismatch(s, Err(ErrorCode::kShapeMismatch).Name("W_K")).empty());
  CHECK(ErrorMismatch(s, Err(ErrorCode::kShapeMismatch).Name("W_K").Name("X")).empty());
  CHECK(!ErrorMismatch(s, Err(ErrorCode::kShapeMismatch).Name("Q")).empty());  // not a word
  CHECK(!ErrorMismatch(s, Err(ErrorCode::kShapeMismatch).Num(3)).empty());     // only in "13"
  CHECK(!ErrorMismatch(s, Err(ErrorCode::kShapeMismatch).Num(1)).empty());
  CHECK(!ErrorMismatch(Status::Ok(), Err(ErrorCode::kShapeMismatch)).empty());
  CHECK(ContainsWord("K: expected", "K"));
  CHECK(!ContainsWord("W_K: expected", "K"));
  CHECK(!ContainsWord("K_new: expected", "K"));
  CHECK(ContainsNumber("expected [4, 5]", "5"));
  CHECK(!ContainsNumber("expected 15", "5"));
  CHECK(!ContainsNumber("expected 0.5", "5"));
}

}  // namespace
}  // namespace attnkit_test
