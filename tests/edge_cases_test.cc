// Edge cases of the contract: extreme but valid option values, scores that
// overflow towards -inf, views that share one buffer without overlapping,
// overlapping outputs, and an overflow during a decoding step.
#include <cmath>
#include <limits>

#include "tests/reference.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::AttentionOptions;
using attnkit::AttentionTrace;

TEST_CASE("A tiny (subnormal) softcap is valid and gives softcap * tanh(s / softcap)",
          "[edge][softcap]") {
  // softcap must be "finite and > 0": 1e-39 qualifies, although 1/softcap
  // overflows float. The result is 0 for s = 0 and +-softcap otherwise.
  const float cap = 1e-39f;
  ForEachTarget([&](int64_t) {
    TestMatrix x = FromRows({{0.0f, 1.0f, -2.0f, 0.0f, 3.0f}});
    const ref::Mat want = ref::Scale(x.ToRef(), 1.0, cap);
    const Status s = attnkit::ScaleScores(x, 1.0f, cap);
    INFO("ScaleScores: " << s.ToString());
    CHECK(s.ok());
    if (s.ok()) CHECK_CLOSE(x, want, (Tol{1e-45, 1e-5}));

    const TestMatrix Q = Random(3, 4, 1), K = Random(5, 4, 2), V = Random(5, 2, 3);
    AttentionOptions o;
    o.softcap = cap;
    TestMatrix out(3, 2);
    const Status sa = attnkit::Attention(Q, K, V, o, out);
    INFO("Attention: " << sa.ToString());
    CHECK(sa.ok());
    if (sa.ok()) {
      // Every score is capped to about +-1e-39: uniform weights, out = mean of V.
      const ref::Trace t = ref::Attention(Q.ToRef(), K.ToRef(), V.ToRef(), ref::FromAttnkit(o));
      CHECK_CLOSE(out, t.output, AttentionTol(4, 5, 1, 1, 1, 0.5).output);
    }
    // A query of zeros: every score is exactly 0, capped to 0.
    TestMatrix Q0 = CopyOf(Q);
    for (size_t c = 0; c < 4; ++c) Q0(1, c) = 0.0f;
    const Status s0 = attnkit::Attention(Q0, K, V, o, out);
    INFO("Attention with a zero query: " << s0.ToString());
    CHECK(s0.ok());
    if (s0.ok()) {
      const ref::Trace t = ref::Attention(Q0.ToRef(), K.ToRef(), V.ToRef(), ref::FromAttnkit(o));
      CHECK_CLOSE(out, t.output, AttentionTol(4, 5, 1, 1, 1, 0.5).output);
    }
  });
}

TEST_CASE("Scores that overflow to -inf are an overflow error or handled, never read as masks",
          "[edge][overflow]") {
  // d_k = 1, scale 1: scores q * k = -1e40 and -2e40 overflow float. The true
  // softmax is [1, 0] (the scores differ by 1e40), so the output is V row 0.
  // Treating the overflowed -inf scores as "masked" would instead give an
  // all-zero row with an OK status: silently wrong.
  ForEachTarget([](int64_t) {
    const TestMatrix Q = FromRows({{1e20f}});
    const TestMatrix K = FromRows({{-1e20f}, {-2e20f}});
    const TestMatrix V = FromRows({{5.0f, 6.0f}, {7.0f, 8.0f}});
    AttentionOptions o;
    o.scale = 1.0f;
    TestMatrix out(1, 2);
    const Status s = attnkit::Attention(Q, K, V, o, out);
    INFO("Attention: " << s.ToString() << "; out = [" << out(0, 0) << ", " << out(0, 1) << "]");
    if (s.ok()) {
      CHECK(out(0, 0) == Approx(5.0f));
      CHECK(out(0, 1) == Approx(6.0f));
    } else {
      CHECK(s.code() == ErrorCode::kOverflow);
    }
    // The same through the multi-head path.
    TestMatrix mout(1, 2);
    const Status sm =
        attnkit::MultiHeadAttentionQKV(Q, K, V, 1, attnkit::HeadConfig{1, 1, 0, 0}, o, mout);
    INFO("MultiHeadAttentionQKV: " << sm.ToString());
    if (sm.ok()) {
      CHECK(mout(0, 0) == Approx(5.0f));
    } else {
      CHECK(sm.code() == ErrorCode::kOverflow);
    }
  });
}

TEST_CASE("Inputs and output may be disjoint column blocks of one buffer", "[edge][views]") {
  // A workspace [T, 4 d] holding Q | K | V | out side by side: the views
  // interleave in memory but share no element, so nothing aliases.
  ForEachTarget([](int64_t) {
    const size_t T = 5, d = 3;
    TestMatrix ws = Random(T, 4 * d, 1, Layout::kStrided);
    const ConstMatrixView Q = ws.cview().Block(0, T, 0, d);
    const ConstMatrixView K = ws.cview().Block(0, T, d, d);
    const ConstMatrixView V = ws.cview().Block(0, T, 2 * d, d);
    const MatrixView out = ws.view().Block(0, T, 3 * d, d);
    const ref::Trace want =
        ref::Attention(ref::FromView(Q), ref::FromView(K), ref::FromView(V), ref::Options());
    AttentionOptions o;
    const Status s = attnkit::Attention(Q, K, V, o, out);
    INFO("Attention on column blocks: " << s.ToString());
    CHECK(s.ok());
    if (s.ok()) CHECK_CLOSE(out, want.output, AttentionTol(d, T, 1, 1, 1, want.scale).output);
    // And a product into the free columns of its own input's buffer.
    TestMatrix ws2 = Random(4, 6, 2);
    const TestMatrix B = Random(3, 3, 3);
    const ref::Mat A_ref = ref::FromView(ws2.cview().Block(0, 4, 0, 3));
    const Status m =
        attnkit::MatMul(ws2.cview().Block(0, 4, 0, 3), B, ws2.view().Block(0, 4, 3, 3));
    INFO("MatMul on column blocks: " << m.ToString());
    CHECK(m.ok());
    if (m.ok()) {
      CHECK_CLOSE(ws2.cview().Block(0, 4, 3, 3), ref::MatMul(A_ref, B.ToRef()), DotTol(3, 1, 1));
    }
  });
}

TEST_CASE("An output that overlaps an input is rejected or the call is still correct",
          "[edge][views]") {
  // The header forbids aliasing; an implementation that detects it must say
  // invalid_argument and name the output.
  TestMatrix Q = Random(4, 4, 1);
  const TestMatrix K = Random(4, 4, 2), V = Random(4, 4, 3);
  const Status s = attnkit::Attention(Q, K, V, AttentionOptions(), Q);
  INFO(s.ToString());
  if (!s.ok()) {
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(ContainsWord(s.message(), "out"));
  }
  TestMatrix A = Random(3, 3, 4);
  const Status m = attnkit::MatMul(A, K.cview().Block(0, 3, 0, 3), A);
  INFO(m.ToString());
  if (!m.ok()) {
    CHECK(m.code() == ErrorCode::kInvalidArgument);
    CHECK(ContainsWord(m.message(), "C"));
  }
}

TEST_CASE("A decoding step whose scores overflow is kOverflow and leaves the cache unchanged",
          "[edge][kv_cache][overflow]") {
  // Projections stay finite (|X W| ~ 4e19) but Q K^T (~1e39 per term) does not.
  const size_t d_model = 4, h = 2, d_k = 2;
  const TestMatrix W = Random(d_model, h * d_k, 1, Layout::kContiguous, 0.5f, 1.0f);
  const attnkit::MultiHeadWeights w{W, W, W, ConstMatrixView()};
  const attnkit::HeadConfig cfg{h, h, d_k, d_k};
  attnkit::KVCache cache;
  REQUIRE_OK(attnkit::KVCache::Create(1, h, d_k, d_k, 4, &cache));
  const TestMatrix X0 = Random(1, d_model, 2);
  TestMatrix out(1, h * d_k);
  REQUIRE_OK(attnkit::MultiHeadDecode(X0, w, cfg, attnkit::DecodeOptions(), &cache, out));
  const TestMatrix keys_before = CopyOf(cache.Keys(0, 1));
  const TestMatrix huge = Random(1, d_model, 3, Layout::kContiguous, 1e19f, 1e19f * 1.5f);
  const Status s = attnkit::MultiHeadDecode(huge, w, cfg, attnkit::DecodeOptions(), &cache, out);
  INFO(s.ToString());
  CHECK(s.code() == ErrorCode::kOverflow);
  CHECK(cache.size() == 1);
  CHECK(CopyOf(cache.Keys(0, 1)).SameValues(keys_before));
  // The next valid step works.
  const TestMatrix X1 = Random(1, d_model, 4);
  CHECK_OK(attnkit::MultiHeadDecode(X1, w, cfg, attnkit::DecodeOptions(), &cache, out));
  CHECK(cache.size() == 2);
  CHECK(AllFinite(out));
}

// Values near FLT_MAX: an output is a weighted mean of V's rows, no larger
// than the largest, so it is valid whenever V is, however many keys share the
// weight. Q = K = 0 gives every key the weight 1 / T_k: the output is V's
// common value (up to the rounding of a sum of T_k terms).
TEST_CASE("Large values whose weighted mean fits are valid: Attention outputs them",
          "[edge][overflow]") {
  struct Case {
    size_t T_k;
    float v;
  };
  for (const Case c : {Case{1024, 1e36f}, Case{2, 3e38f}, Case{5000, 1e36f}}) {
    INFO("T_k " << c.T_k << ", every V = " << c.v);
    ForEachTarget([&](int64_t) {
      const size_t T_q = 2, d = 4;  // T_q <= T_k: every causal row sees a key
      TestMatrix Q(T_q, d), K(c.T_k, d), V(c.T_k, d);
      for (size_t r = 0; r < c.T_k; ++r) {
        for (size_t j = 0; j < d; ++j) V(r, j) = c.v;
      }
      for (const bool causal : {false, true}) {
        INFO("causal " << causal);
        AttentionOptions o;
        o.causal = causal;
        TestMatrix out(T_q, d);
        const Status s = attnkit::Attention(Q, K, V, o, out);
        INFO("Attention: " << s.ToString());
        REQUIRE(s.ok());
        for (size_t r = 0; r < T_q; ++r) {
          for (size_t j = 0; j < d; ++j) CHECK(out(r, j) == Approx(c.v).epsilon(1e-4));
        }
        // The same heads through the multi-head path and the training forward.
        TestMatrix mout(T_q, d);
        CHECK_OK(
            attnkit::MultiHeadAttentionQKV(Q, K, V, 1, attnkit::HeadConfig{1, 1, 0, 0}, o, mout));
        CHECK(mout(T_q - 1, d - 1) == Approx(c.v).epsilon(1e-4));
        TestMatrix tout(T_q, d), lse(T_q, 1);
        CHECK_OK(attnkit::AttentionForTraining(Q, K, V, o, tout, lse));
        CHECK(tout(0, 0) == Approx(c.v).epsilon(1e-4));
      }
      AttentionTrace trace;
      REQUIRE_OK(attnkit::TraceAttentionQKV(Q, K, V, AttentionOptions(), &trace));
      CHECK(trace.output(0, 0) == Approx(c.v).epsilon(1e-4));
    });
  }
}

TEST_CASE("Scores that overflow float are kOverflow naming Q, not V", "[edge][overflow]") {
  // d_k = 1, scale 1: q k = 1e40 overflows float, whatever V holds.
  ForEachTarget([](int64_t) {
    const TestMatrix Q = FromRows({{1e20f}, {1.0f}});
    const TestMatrix K = FromRows({{1e20f}, {1.0f}, {2.0f}});
    const TestMatrix V = FromRows({{1e36f}, {1e36f}, {1e36f}});
    AttentionOptions o;
    o.scale = 1.0f;
    TestMatrix out(2, 1);
    CHECK_ERROR(attnkit::Attention(Q, K, V, o, out), Err(ErrorCode::kOverflow).Name("Q"));
    const Status s = attnkit::Attention(Q, K, V, o, out);
    CHECK(s.parameter() == "Q");
    CHECK(s.detail().find("scores") != std::string::npos);
  });
}

}  // namespace
}  // namespace attnkit_test
