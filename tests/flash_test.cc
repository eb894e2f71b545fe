// The fused (tiled, online-softmax) path against the trace path, which keeps
// every score and normalises each row in two passes. The planner sends a head
// to the fused path or to split-K by its shape (internal::UseFusedPath); the
// tests of either path put every head on it (ForcedPath). Tolerance: the
// two differ only in float32 rounding order, so |fused - trace| <= 1e-5 *
// max(1, |trace|) per element (a relative bound with an absolute floor near 0).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <optional>

#include "src/core/plan.h"
#include "tests/test_util.h"

namespace {

using namespace attnkit;
using namespace attnkit_test;

// Puts every head of the calls in its scope on one path, whatever its shape.
struct ForcedPath {
  explicit ForcedPath(internal::HeadPath p) { internal::ForceHeadPathForTest(p); }
  ~ForcedPath() { internal::ForceHeadPathForTest(std::nullopt); }
  ForcedPath(const ForcedPath&) = delete;
  ForcedPath& operator=(const ForcedPath&) = delete;
};
const internal::HeadPath kFused = internal::HeadPath::kFused;

void CheckFusedEqualsTrace(const TestMatrix& Q, const TestMatrix& K, const TestMatrix& V,
                           const AttentionOptions& o) {
  AttentionTrace trace;
  REQUIRE_OK(TraceAttentionQKV(Q, K, V, o, &trace));
  TestMatrix out(Q.rows(), V.cols(), Layout::kStrided);
  REQUIRE_OK(Attention(Q, K, V, o, out));
  double worst = 0.0;
  for (size_t i = 0; i < Q.rows(); ++i) {
    for (size_t c = 0; c < V.cols(); ++c) {
      const double want = trace.output(i, c), got = out(i, c);
      REQUIRE(std::isfinite(got));
      worst = std::max(worst, std::abs(got - want) / std::max(1.0, std::abs(want)));
    }
  }
  INFO("max relative difference fused vs trace: " << worst);
  CHECK(worst <= 1e-5);
  CHECK(out.PaddingIntact());
}

// Random Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v] compared with every mask
// kind: none, causal, causal + key padding, boolean + additive (with -inf) +
// softcap + scale, fully masked. `keep`: the share of cells the boolean mask
// allows.
void CheckEveryMaskKind(size_t T_q, size_t T_k, size_t d_k, size_t d_v, double keep,
                        uint32_t* seed) {
  const TestMatrix Q = Random(T_q, d_k, (*seed)++, Layout::kStrided, -2.0f, 2.0f);
  const TestMatrix K = Random(T_k, d_k, (*seed)++, Layout::kStrided, -2.0f, 2.0f);
  const TestMatrix V = Random(T_k, d_v, (*seed)++, Layout::kStrided);
  INFO("T_q " << T_q << " T_k " << T_k << " d_k " << d_k << " d_v " << d_v);
  AttentionOptions o;
  {
    INFO("no mask");
    CheckFusedEqualsTrace(Q, K, V, o);
  }
  o.causal = true;
  {
    INFO("causal (offset T_k - T_q)");
    CheckFusedEqualsTrace(Q, K, V, o);
  }
  o.key_length = T_k / 2;
  {
    INFO("causal + key padding");
    CheckFusedEqualsTrace(Q, K, V, o);
  }
  o = AttentionOptions();
  const TestMask mask = RandomMask(T_q, T_k, (*seed)++, keep, Layout::kStrided);
  o.bool_mask = mask.view();
  TestMatrix add = Random(T_q, T_k, (*seed)++, Layout::kStrided, -3.0f, 3.0f);
  for (size_t i = 0; i < T_q; ++i) add(i, (i * 5) % T_k) = -kInf;
  o.additive_mask = add.cview();
  o.softcap = 5.0f;
  o.scale = 0.7f;
  {
    INFO("boolean + additive + softcap + scale");
    CheckFusedEqualsTrace(Q, K, V, o);
  }
  o = AttentionOptions();
  o.key_length = 0;
  {
    INFO("fully masked");
    CheckFusedEqualsTrace(Q, K, V, o);
  }
  // Only the last key visible: the running max starts late, and for split-K
  // every chunk but the last sees nothing.
  TestMask last(T_q, T_k, Layout::kContiguous, 0);
  for (size_t i = 0; i < T_q; ++i) last(i, T_k - 1) = 1;
  o = AttentionOptions();
  o.bool_mask = last.view();
  {
    INFO("only the last key");
    CheckFusedEqualsTrace(Q, K, V, o);
  }
}

// As above with d_k, d_v from the seed (1..17, 1..19).
void CheckEveryMaskKind(size_t T_q, size_t T_k, double keep, uint32_t* seed) {
  CheckEveryMaskKind(T_q, T_k, 1 + *seed % 17, 1 + (*seed * 7) % 19, keep, seed);
}

}  // namespace

TEST_CASE("Fused attention equals the trace path across tile boundaries, every mask kind",
          "[flash]") {
  const ForcedPath fused(kFused);
  // Key counts around multiples of 64 and of the 128-key tile
  // (internal::kFlashTileKeys); query counts around the 4- and 8-row blocks
  // and the 64-query task (internal::kTaskQueries).
  const size_t key_counts[] = {4, 5, 63, 64, 65, 127, 128, 129, 193, 257};
  const size_t query_counts[] = {4, 5, 7, 9, 40, 66, 131};
  ForEachTarget([&](int64_t) {
    uint32_t seed = 1;
    for (size_t T_k : key_counts) {
      for (size_t T_q : query_counts) CheckEveryMaskKind(T_q, T_k, 0.6, &seed);
    }
  });
}

TEST_CASE("Fused attention equals the trace path for head sizes across panel widths", "[flash]") {
  const ForcedPath fused(kFused);
  // The kernel reads K^T and V in panels of 2 vectors (8, 16 or 32 floats,
  // 2 on SCALAR): d_k and d_v around those widths, on two key tiles.
  const size_t dims[][2] = {{1, 33},  {8, 31},  {9, 32},  {16, 17},
                            {31, 64}, {33, 65}, {64, 64}, {65, 9}};
  ForEachTarget([&](int64_t) {
    uint32_t seed = 7;
    for (const auto& dim : dims) CheckEveryMaskKind(9, 257, dim[0], dim[1], 0.6, &seed);
  });
}

TEST_CASE("Fused attention stays exact on huge logits and masked tiles", "[flash]") {
  const ForcedPath fused(kFused);
  ForEachTarget([](int64_t) {
    // Scores near 1e4: the running max changes tile to tile without overflow.
    TestMatrix Q = Random(8, 4, 11, Layout::kContiguous, 40.0f, 50.0f);
    TestMatrix K = Random(200, 4, 12, Layout::kContiguous, -50.0f, 50.0f);
    const TestMatrix V = Random(200, 3, 13);
    AttentionOptions o;
    o.scale = 1.0f;
    CheckFusedEqualsTrace(Q, K, V, o);
    // A boolean mask that hides whole tiles for some rows.
    TestMask mask(8, 200, Layout::kContiguous, 0);
    for (size_t i = 0; i < 8; ++i) mask(i, 199 - i * 20) = 1;
    o.bool_mask = mask.view();
    CheckFusedEqualsTrace(Q, K, V, o);
  });
}

TEST_CASE("Fused attention reports scores that overflow to +inf, -inf or NaN",
          "[flash][overflow]") {
  const ForcedPath fused(kFused);
  // 9 queries (on the fused path), 200 keys: one overflowing score, for query 4,
  // at key 5 (a full 128-key tile) or key 150 (the partial second tile).
  // q . k with q = (1e30, 1e30) and k = (s0 * 1e30, s1 * 1e30) is +inf, -inf,
  // or +inf - inf (NaN, or +inf where the FMA keeps the product exact).
  const float signs[][2] = {{1, 1}, {-1, -1}, {1, -1}, {-1, 1}};
  ForEachTarget([&](int64_t) {
    for (size_t key : {size_t{5}, size_t{150}}) {
      for (const auto& sign : signs) {
        INFO("key " << key << " signs " << sign[0] << ", " << sign[1]);
        TestMatrix Q = Random(9, 2, 1), K = Random(200, 2, 2);
        const TestMatrix V = Random(200, 3, 3);
        Q(4, 0) = Q(4, 1) = 1e30f;
        K(key, 0) = sign[0] * 1e30f;
        K(key, 1) = sign[1] * 1e30f;
        AttentionOptions o;
        o.scale = 1.0f;
        TestMatrix out(9, 3);
        CHECK_ERROR(Attention(Q, K, V, o, out), Err(ErrorCode::kOverflow).Name("Q"));
        Q(4, 0) = Q(4, 1) = 0.5f;  // the module keeps working
        CheckFusedEqualsTrace(Q, K, V, o);
      }
    }
  });
}

// The fused kernel's exp, 2^(v log2(e)) (ExpViaExp2, ops-inl.h), seen
// through the output: query r has the scores [0, x_r] against two keys and
// V = I, so its output is the weights [1 / (1 + e^x), e^x / (1 + e^x)]. x
// sweeps [-87, 0] in steps of 0.01, across many reduction intervals, and on
// to -100, where x log2(e) < -126 and the weight must be exactly 0 (no
// subnormal). Tolerance per weight: 5e-7 relative (the quartic's 1.9e-7, the
// sum and the division) plus |x| * 8e-8 (x log2(e) rounded to float: an
// error of up to |x| * 7.3e-8 in the exponent).
TEST_CASE("The fused kernel's exp is accurate over its whole range on every target",
          "[flash][softmax]") {
  const ForcedPath fused(kFused);
  constexpr size_t kRows = 10001;  // x = 0, -0.01, ..., -100
  ForEachTarget([](int64_t) {
    TestMatrix Q(kRows, 1, Layout::kStrided);
    for (size_t r = 0; r < kRows; ++r) Q(r, 0) = -0.01f * static_cast<float>(r);
    const TestMatrix K = FromRows({{0.0f}, {1.0f}}), V = FromRows({{1.0f, 0.0f}, {0.0f, 1.0f}});
    AttentionOptions o;
    o.scale = 1.0f;
    TestMatrix out(kRows, 2, Layout::kStrided);
    REQUIRE_OK(Attention(Q, K, V, o, out));
    size_t bad = 0;
    for (size_t r = 0; r < kRows; ++r) {
      const double x = Q(r, 0), e = std::exp(x);
      const double want[2] = {1.0 / (1.0 + e), e / (1.0 + e)};
      for (size_t c = 0; c < 2; ++c) {
        const double got = out(r, c);
        const bool flushed = x * 1.4426950408889634 < -126.0;
        const bool ok = (c == 1 && flushed)
                            ? got == 0.0
                            : std::abs(got - want[c]) <= (5e-7 + 8e-8 * std::abs(x)) * want[c];
        if (!ok && bad++ < 5) {
          FAIL_CHECK(std::setprecision(9) << "x = " << x << ": weight " << c << " is " << got
                                          << ", want " << (c == 1 && flushed ? 0.0 : want[c]));
        }
      }
    }
    CHECK(bad == 0);
  });
}

// Split-K (decoding, and few queries against many keys): keys in chunks of
// 256, partial softmax results merged. Key counts around the chunk size;
// every mask kind; T_q < T_k so causal rows see different prefixes.
TEST_CASE("Split-K decoding equals the trace path across chunk boundaries, every mask kind",
          "[flash][decode]") {
  const size_t key_counts[] = {1, 3, 255, 256, 257, 600, 1025};
  const ForcedPath split_k(internal::HeadPath::kSplitK);
  ForEachTarget([&](int64_t) {
    uint32_t seed = 900;
    for (size_t T_k : key_counts) {
      for (size_t T_q : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{9}, size_t{40}}) {
        if (T_q <= T_k) CheckEveryMaskKind(T_q, T_k, 0.3, &seed);
      }
    }
  });
}
