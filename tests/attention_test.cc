// Single-head attention: Attention, TraceAttentionQKV, TraceAttention,
// SelfAttention, CrossAttention, ParameterFreeAttention, against the float64
// reference on every target, with every mask kind and their combinations.
#include <cmath>
#include <string>

#include "tests/reference.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::AttentionOptions;
using attnkit::AttentionTrace;

std::string Describe(const AttentionOptions& o) {
  std::ostringstream os;
  os << "scale=" << (o.scale ? std::to_string(*o.scale) : std::string("default"))
     << " softcap=" << o.softcap << " causal=" << o.causal
     << " key_length=" << (o.key_length ? std::to_string(*o.key_length) : std::string("none"))
     << " bool_mask=" << !o.bool_mask.empty() << " additive=" << !o.additive_mask.empty();
  return os.str();
}

// Runs Attention and TraceAttentionQKV on Q, K, V and compares the output and
// every intermediate with the reference.
void CheckAttention(const TestMatrix& Q, const TestMatrix& K, const TestMatrix& V,
                    const AttentionOptions& o, Layout out_layout) {
  INFO(Describe(o) << ", output " << LayoutName(out_layout));
  const ref::Trace want = ref::Attention(Q.ToRef(), K.ToRef(), V.ToRef(), ref::FromAttnkit(o));
  const double max_add = o.additive_mask.empty() ? 0.0 : MaxAbs(o.additive_mask);
  const AttnTol tol =
      AttentionTol(Q.cols(), K.rows(), MaxAbs(Q), MaxAbs(K), MaxAbs(V), want.scale, max_add);
  TestMatrix out(Q.rows(), V.cols(), out_layout);
  REQUIRE_OK(attnkit::Attention(Q, K, V, o, out));
  CHECK_CLOSE(out, want.output, tol.output);
  CHECK(out.PaddingIntact());

  AttentionTrace tr;
  REQUIRE_OK(attnkit::TraceAttentionQKV(Q, K, V, o, &tr));
  CHECK(tr.X.size() == 0);
  CHECK_CLOSE(tr.Q, Q.ToRef(), kExact);
  CHECK_CLOSE(tr.K, K.ToRef(), kExact);
  CHECK_CLOSE(tr.V, V.ToRef(), kExact);
  CheckTrace(tr, want, tol, max_add);
}

struct Shape {
  size_t T_q, T_k, d_k, d_v;
};

std::vector<Shape> AttentionShapes() {
  std::vector<Shape> shapes;
  for (size_t s : AllSizes()) shapes.push_back({s, s, s, s});
  for (size_t s : LaneSizes()) {
    shapes.push_back({3, s, 5, 7});  // T_k around lanes (softmax, weighted sum)
    shapes.push_back({s, 4, 9, 3});  // T_q around lanes
    shapes.push_back({2, 7, s, 1});  // d_k around lanes (Q K^T)
    shapes.push_back({5, 9, 1, s});  // d_v around lanes (weights V)
  }
  shapes.push_back({1, 37, 13, 31});
  shapes.push_back({33, 1, 32, 17});
  shapes.push_back({3, 11, 5, 67});  // d_v past four AVX-512 vectors (weighted sum)
  return shapes;
}

TEST_CASE("Attention and TraceAttentionQKV match the reference on every target and shape",
          "[attention]") {
  const std::vector<Shape> shapes = AttentionShapes();
  ForEachTarget([&](int64_t) {
    uint32_t seed = 1000;
    for (const Shape& s : shapes) {
      for (Layout layout : AllLayouts()) {
        INFO("T_q=" << s.T_q << " T_k=" << s.T_k << " d_k=" << s.d_k << " d_v=" << s.d_v
                    << " inputs " << LayoutName(layout));
        const TestMatrix Q = Random(s.T_q, s.d_k, ++seed, layout, -2.0f, 2.0f);
        const TestMatrix K = Random(s.T_k, s.d_k, ++seed, layout, -2.0f, 2.0f);
        const TestMatrix V = Random(s.T_k, s.d_v, ++seed, layout);
        AttentionOptions plain;
        CheckAttention(Q, K, V, plain, layout);
        AttentionOptions tuned;
        tuned.scale = 0.3f;
        tuned.softcap = 2.5f;
        CheckAttention(Q, K, V, tuned, Layout::kStrided);
        AttentionOptions causal;
        causal.causal = true;
        CheckAttention(Q, K, V, causal, Layout::kContiguous);
      }
    }
  });
}

TEST_CASE("Attention: every combination of causal, key_length, bool and additive masks",
          "[attention][mask]") {
  // T_q == T_k, T_q < T_k (causal offset T_k - T_q), T_q > T_k (negative
  // offset: the first T_q - T_k queries see no key), single query, lanes.
  const std::vector<std::pair<size_t, size_t>> tq_tk = {{5, 5},  {3, 8},   {8, 3},
                                                        {1, 17}, {16, 16}, {9, 4}};
  ForEachTarget([&](int64_t) {
    uint32_t seed = 2000;
    for (auto [T_q, T_k] : tq_tk) {
      const size_t d_k = 5, d_v = 3;
      const Layout layout = (T_q % 2) ? Layout::kStrided : Layout::kContiguous;
      const TestMatrix Q = Random(T_q, d_k, ++seed, layout, -2.0f, 2.0f);
      const TestMatrix K = Random(T_k, d_k, ++seed, layout, -2.0f, 2.0f);
      const TestMatrix V = Random(T_k, d_v, ++seed, layout);
      const TestMask bmask = RandomMask(T_q, T_k, ++seed, 0.7, layout);
      TestMatrix amask = Random(T_q, T_k, ++seed, layout, -2.0f, 2.0f);
      Rng rng(++seed);
      for (size_t i = 0; i < T_q; ++i)
        for (size_t j = 0; j < T_k; ++j)
          if (rng.Uniform(0, 1) < 0.2f) amask(i, j) = -kInf;
      for (int combo = 0; combo < 16; ++combo) {
        for (int variant = 0; variant < 3; ++variant) {
          INFO("T_q=" << T_q << " T_k=" << T_k << " combo=" << combo << " variant=" << variant);
          AttentionOptions o;
          o.causal = combo & 1;
          if (combo & 2) o.key_length = T_k > 2 ? T_k - 2 : T_k;
          if (combo & 4) o.bool_mask = bmask.view();
          if (combo & 8) o.additive_mask = amask.cview();
          if (variant == 1) o.scale = 0.5f;
          if (variant == 2) o.softcap = 1.5f;
          CheckAttention(Q, K, V, o, variant == 1 ? Layout::kStrided : Layout::kContiguous);
        }
      }
    }
  });
}

TEST_CASE("Attention with a causal mask gives exactly 0 weight above the (offset) diagonal",
          "[attention][mask][causal]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 3000;
    for (size_t T : AllSizes()) {
      for (size_t extra : {size_t{0}, size_t{3}}) {
        const size_t T_q = T, T_k = T + extra;  // offset = T_k - T_q = extra
        INFO("T_q=" << T_q << " T_k=" << T_k);
        const TestMatrix Q = Random(T_q, 4, ++seed, Layout::kStrided, -3, 3);
        const TestMatrix K = Random(T_k, 4, ++seed, Layout::kStrided, -3, 3);
        const TestMatrix V = Random(T_k, 6, ++seed, Layout::kStrided);
        AttentionOptions o;
        o.causal = true;
        AttentionTrace tr;
        REQUIRE_OK(attnkit::TraceAttentionQKV(Q, K, V, o, &tr));
        size_t nonzero_above = 0, not_neg_inf = 0;
        for (size_t i = 0; i < T_q; ++i)
          for (size_t j = i + extra + 1; j < T_k; ++j) {
            nonzero_above += tr.weights(i, j) != 0.0f;
            not_neg_inf += tr.masked_scores(i, j) != -kInf;
          }
        CHECK(nonzero_above == 0);
        CHECK(not_neg_inf == 0);
        for (size_t i = 0; i < T_q; ++i) CHECK(RowSum(tr.weights, i) == Approx(1.0).margin(1e-5));
        if (extra == 0) {
          // Query 0 sees only key 0: its output is V's row 0.
          for (size_t c = 0; c < 6; ++c) CHECK(tr.output(0, c) == Approx(V(0, c)).margin(1e-6));
        }
      }
    }
  });
}

// Checks that row r of weights and output is all exactly zero.
void CheckZeroRow(const AttentionTrace& tr, size_t r) {
  INFO("row " << r);
  for (size_t c = 0; c < tr.weights.cols(); ++c) CHECK(tr.weights(r, c) == 0.0f);
  for (size_t c = 0; c < tr.output.cols(); ++c) CHECK(tr.output(r, c) == 0.0f);
}

TEST_CASE("Attention: fully masked rows give all-zero weights and output, never NaN",
          "[attention][mask]") {
  ForEachTarget([](int64_t) {
    for (size_t T_k : {size_t{1}, size_t{4}, size_t{9}, size_t{17}}) {
      const size_t T_q = 5;
      INFO("T_k=" << T_k);
      const TestMatrix Q = Random(T_q, 3, 40 + T_k, Layout::kStrided);
      const TestMatrix K = Random(T_k, 3, 41 + T_k, Layout::kStrided);
      const TestMatrix V = Random(T_k, 4, 42 + T_k, Layout::kStrided);
      {
        INFO("key_length = 0");
        AttentionOptions o;
        o.key_length = 0;
        AttentionTrace tr;
        REQUIRE_OK(attnkit::TraceAttentionQKV(Q, K, V, o, &tr));
        for (size_t r = 0; r < T_q; ++r) CheckZeroRow(tr, r);
        TestMatrix out(T_q, 4, Layout::kStrided);
        REQUIRE_OK(attnkit::Attention(Q, K, V, o, out));
        CHECK_CLOSE(out, ref::Mat(T_q, 4), kExact);
        CHECK(out.PaddingIntact());
      }
      {
        INFO("boolean mask with all-zero rows 0 and 3");
        TestMask m(T_q, T_k, Layout::kStrided, 1);
        for (size_t j = 0; j < T_k; ++j) m(0, j) = m(3, j) = 0;
        AttentionOptions o;
        o.bool_mask = m.view();
        AttentionTrace tr;
        REQUIRE_OK(attnkit::TraceAttentionQKV(Q, K, V, o, &tr));
        CheckZeroRow(tr, 0);
        CheckZeroRow(tr, 3);
        CHECK(AllFinite(tr.output));
        CHECK(RowSum(tr.weights, 1) == Approx(1.0).margin(1e-5));
      }
      {
        INFO("additive mask with an all -inf row 2");
        TestMatrix a(T_q, T_k, Layout::kStrided);
        for (size_t j = 0; j < T_k; ++j) a(2, j) = -kInf;
        AttentionOptions o;
        o.additive_mask = a.cview();
        AttentionTrace tr;
        REQUIRE_OK(attnkit::TraceAttentionQKV(Q, K, V, o, &tr));
        CheckZeroRow(tr, 2);
        CHECK(AllFinite(tr.output));
        CHECK(RowSum(tr.weights, 4) == Approx(1.0).margin(1e-5));
        TestMatrix out(T_q, 4);
        REQUIRE_OK(attnkit::Attention(Q, K, V, o, out));
        for (size_t c = 0; c < 4; ++c) CHECK(out(2, c) == 0.0f);
      }
      {
        INFO("causal with T_q > T_k: the first T_q - T_k queries see no key");
        AttentionOptions o;
        o.causal = true;
        AttentionTrace tr;
        REQUIRE_OK(attnkit::TraceAttentionQKV(Q, K, V, o, &tr));
        for (size_t r = 0; r + T_k < T_q; ++r) CheckZeroRow(tr, r);
        if (T_k <= T_q) CHECK(RowSum(tr.weights, T_q - T_k) == Approx(1.0).margin(1e-5));
        CHECK(AllFinite(tr.output));
      }
    }
  });
}

TEST_CASE("Attention with huge logits (scores ~1e4) stays finite and normalised",
          "[attention][stability]") {
  ForEachTarget([](int64_t) {
    for (size_t T : {size_t{4}, size_t{9}, size_t{17}}) {
      INFO("T=" << T);
      // |Q|, |K| up to 100 and d_k = 4: scores up to 4e4, scaled by 1/2.
      const TestMatrix Q = Random(T, 4, 70 + T, Layout::kContiguous, -100.0f, 100.0f);
      const TestMatrix K = Random(T, 4, 71 + T, Layout::kContiguous, -100.0f, 100.0f);
      const TestMatrix V = Random(T, 5, 72 + T, Layout::kContiguous);
      for (bool causal : {false, true}) {
        INFO("causal=" << causal);
        AttentionOptions o;
        o.causal = causal;
        AttentionTrace tr;
        REQUIRE_OK(attnkit::TraceAttentionQKV(Q, K, V, o, &tr));
        CHECK(MaxAbs(tr.raw_scores) > 1000.0);
        CHECK(AllFinite(tr.weights));
        CHECK(AllFinite(tr.output));
        for (size_t r = 0; r < T; ++r) CHECK(RowSum(tr.weights, r) == Approx(1.0).margin(1e-5));
        const ref::Trace want =
            ref::Attention(Q.ToRef(), K.ToRef(), V.ToRef(), ref::FromAttnkit(o));
        CheckTrace(tr, want, AttentionTol(4, T, 100, 100, 1, want.scale));
        TestMatrix out(T, 5);
        REQUIRE_OK(attnkit::Attention(Q, K, V, o, out));
        CHECK(AllFinite(out));
      }
    }
  });
}

TEST_CASE("Attention: scale defaults to 1/sqrt(d_k) and a caller-given scale is used as is",
          "[attention][scale]") {
  ForEachTarget([](int64_t) {
    const TestMatrix Q = Random(3, 9, 1), K = Random(7, 9, 2), V = Random(7, 2, 3);
    AttentionTrace tr;
    AttentionOptions o;
    REQUIRE_OK(attnkit::TraceAttentionQKV(Q, K, V, o, &tr));
    CHECK(tr.scale == Approx(1.0 / 3.0).epsilon(1e-6));
    for (float scale : {0.01f, 1.0f, 2.0f, 40.0f}) {
      INFO("scale=" << scale);
      o.scale = scale;
      REQUIRE_OK(attnkit::TraceAttentionQKV(Q, K, V, o, &tr));
      CHECK(tr.scale == scale);
      CheckAttention(Q, K, V, o, Layout::kContiguous);
    }
  });
}

TEST_CASE("Attention: softcap bounds the scaled scores and matches the reference",
          "[attention][softcap]") {
  ForEachTarget([](int64_t) {
    const TestMatrix Q = Random(6, 8, 11, Layout::kStrided, -4, 4);
    const TestMatrix K = Random(9, 8, 12, Layout::kStrided, -4, 4);
    const TestMatrix V = Random(9, 3, 13, Layout::kStrided);
    for (float cap : {0.25f, 1.0f, 5.0f, 50.0f}) {
      INFO("softcap=" << cap);
      AttentionOptions o;
      o.softcap = cap;
      AttentionTrace tr;
      REQUIRE_OK(attnkit::TraceAttentionQKV(Q, K, V, o, &tr));
      CHECK(MaxAbs(tr.scaled_scores) <= cap);
      CheckAttention(Q, K, V, o, Layout::kStrided);
    }
  });
}

TEST_CASE("SelfAttention and TraceAttention match the reference on every target",
          "[attention][self]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 4000;
    struct S {
      size_t T, d_model, d_k, d_v;
    };
    std::vector<S> shapes;
    for (size_t s : LaneSizes()) {
      shapes.push_back({s, 8, 4, 4});
      shapes.push_back({5, s, 3, 7});
      shapes.push_back({4, 6, s, 2});
      shapes.push_back({7, 3, 5, s});
    }
    shapes.push_back({33, 17, 16, 9});
    for (const S& s : shapes) {
      for (Layout layout : AllLayouts()) {
        for (bool causal : {false, true}) {
          INFO("T=" << s.T << " d_model=" << s.d_model << " d_k=" << s.d_k << " d_v=" << s.d_v
                    << " " << LayoutName(layout) << " causal=" << causal);
          const float w = 1.0f / std::sqrt(static_cast<float>(s.d_model));
          const TestMatrix X = Random(s.T, s.d_model, ++seed, layout);
          const TestMatrix WQ = Random(s.d_model, s.d_k, ++seed, layout, -w, w);
          const TestMatrix WK = Random(s.d_model, s.d_k, ++seed, layout, -w, w);
          const TestMatrix WV = Random(s.d_model, s.d_v, ++seed, layout, -w, w);
          AttentionOptions o;
          o.causal = causal;
          const ref::Mat Q = ref::MatMul(X.ToRef(), WQ.ToRef());
          const ref::Mat K = ref::MatMul(X.ToRef(), WK.ToRef());
          const ref::Mat V = ref::MatMul(X.ToRef(), WV.ToRef());
          const ref::Trace want = ref::Attention(Q, K, V, ref::FromAttnkit(o));
          TestMatrix out(s.T, s.d_v, layout);
          REQUIRE_OK(attnkit::SelfAttention(X, WQ, WK, WV, o, out));
          CHECK_CLOSE(out, want.output, ChainTol(want.output));
          CHECK(out.PaddingIntact());

          AttentionTrace tr;
          REQUIRE_OK(attnkit::TraceAttention(X, WQ, WK, WV, o, &tr));
          CHECK_CLOSE(tr.X, X.ToRef(), kExact);
          const Tol proj = DotTol(s.d_model, 1.0, w);
          CHECK_CLOSE(tr.Q, Q, proj);
          CHECK_CLOSE(tr.K, K, proj);
          CHECK_CLOSE(tr.V, V, proj);
          CHECK_CLOSE(tr.raw_scores, want.raw, ChainTol(want.raw));
          CHECK_CLOSE(tr.scaled_scores, want.scaled, ChainTol(want.scaled));
          CHECK_CLOSE(tr.masked_scores, want.masked, ChainTol(want.scaled));
          CHECK_CLOSE(tr.weights, want.weights, ChainTol(want.weights));
          CHECK_CLOSE(tr.output, want.output, ChainTol(want.output));
          CHECK(tr.scale == Approx(1.0 / std::sqrt(static_cast<double>(s.d_k))).epsilon(1e-6));
        }
      }
    }
  });
}

TEST_CASE("CrossAttention with T_q != T_k and d_q != d_kv matches the reference",
          "[attention][cross]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 5000;
    struct S {
      size_t T_q, T_k, d_q, d_kv, d_k, d_v;
    };
    std::vector<S> shapes = {{3, 7, 5, 9, 4, 6},
                             {1, 17, 8, 3, 16, 5},
                             {9, 4, 16, 15, 3, 8},
                             {16, 33, 4, 5, 7, 1},
                             {5, 1, 7, 7, 9, 17}};
    for (size_t s : LaneSizes()) {
      shapes.push_back({s, s + 2, s, 5, s, s});  // T_q < T_k, sizes around lanes
      shapes.push_back({4, s, 3, s, 6, 2});      // T_k and d_kv around lanes
    }
    for (const S& s : shapes) {
      for (Layout layout : AllLayouts()) {
        for (int variant = 0; variant < 3; ++variant) {
          INFO("T_q=" << s.T_q << " T_k=" << s.T_k << " d_q=" << s.d_q << " d_kv=" << s.d_kv
                      << " d_k=" << s.d_k << " d_v=" << s.d_v << " " << LayoutName(layout)
                      << " variant=" << variant);
          const TestMatrix Xq = Random(s.T_q, s.d_q, ++seed, layout);
          const TestMatrix Xkv = Random(s.T_k, s.d_kv, ++seed, layout);
          const float wq = 1.0f / std::sqrt(float(s.d_q)), wkv = 1.0f / std::sqrt(float(s.d_kv));
          const TestMatrix WQ = Random(s.d_q, s.d_k, ++seed, layout, -wq, wq);
          const TestMatrix WK = Random(s.d_kv, s.d_k, ++seed, layout, -wkv, wkv);
          const TestMatrix WV = Random(s.d_kv, s.d_v, ++seed, layout, -wkv, wkv);
          AttentionOptions o;
          if (variant == 1) {
            o.causal = true;
            o.scale = 0.8f;
          }
          if (variant == 2) o.key_length = s.T_k / 2;
          const ref::Trace want = ref::Attention(
              ref::MatMul(Xq.ToRef(), WQ.ToRef()), ref::MatMul(Xkv.ToRef(), WK.ToRef()),
              ref::MatMul(Xkv.ToRef(), WV.ToRef()), ref::FromAttnkit(o));
          TestMatrix out(s.T_q, s.d_v, layout);
          REQUIRE_OK(attnkit::CrossAttention(Xq, Xkv, WQ, WK, WV, o, out));
          CHECK_CLOSE(out, want.output, ChainTol(want.output));
          CHECK(out.PaddingIntact());
        }
      }
    }
  });
}

TEST_CASE("ParameterFreeAttention uses Q = K = V = X and scale 1/sqrt(d_model)",
          "[attention][parameter-free]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 6000;
    std::vector<size_t> dims = LaneSizes();
    dims.push_back(33);
    for (size_t T : {size_t{1}, size_t{4}, size_t{7}, size_t{16}, size_t{17}}) {
      for (size_t d : dims) {
        for (Layout layout : AllLayouts()) {
          for (bool causal : {false, true}) {
            INFO("T=" << T << " d_model=" << d << " " << LayoutName(layout)
                      << " causal=" << causal);
            const TestMatrix X = Random(T, d, ++seed, layout, -2, 2);
            AttentionOptions o;
            o.causal = causal;
            const ref::Trace want =
                ref::Attention(X.ToRef(), X.ToRef(), X.ToRef(), ref::FromAttnkit(o));
            CHECK(want.scale == Approx(1.0 / std::sqrt(double(d))));
            TestMatrix out(T, d, layout);
            REQUIRE_OK(attnkit::ParameterFreeAttention(X, o, out));
            const AttnTol tol = AttentionTol(d, T, 2, 2, 2, want.scale);
            CHECK_CLOSE(out, want.output, tol.output);
            CHECK(out.PaddingIntact());
          }
        }
      }
    }
    // A caller-given scale overrides the default.
    const TestMatrix X = Random(5, 6, 1);
    AttentionOptions o;
    o.scale = 2.0f;
    const ref::Trace want = ref::Attention(X.ToRef(), X.ToRef(), X.ToRef(), ref::FromAttnkit(o));
    TestMatrix out(5, 6);
    REQUIRE_OK(attnkit::ParameterFreeAttention(X, o, out));
    CHECK_CLOSE(out, want.output, AttentionTol(6, 5, 1, 1, 1, 2.0).output);
  });
}

TEST_CASE("Results that overflow float give kOverflow or a finite output, never NaN",
          "[attention][overflow]") {
  ForEachTarget([](int64_t) {
    // Q = X W with |X| = |W| = 1e30: Q would be ~1e60.
    const TestMatrix X = Random(4, 4, 1, Layout::kContiguous, 0.5e30f, 1e30f);
    const TestMatrix W = Random(4, 4, 2, Layout::kContiguous, 0.5e30f, 1e30f);
    AttentionOptions o;
    {
      TestMatrix out(4, 4);
      const attnkit::Status s = attnkit::SelfAttention(X, W, W, W, o, out);
      INFO("SelfAttention: " << s.ToString());
      if (s.ok()) {
        CHECK(AllFinite(out));
      } else {
        CHECK(s.code() == ErrorCode::kOverflow);
      }
    }
    {
      TestMatrix out(4, 4);
      const attnkit::Status s = attnkit::MultiHeadAttention(
          X, 1, attnkit::MultiHeadWeights{W, W, W, W}, attnkit::HeadConfig{2, 0, 0, 0}, o, out);
      INFO("MultiHeadAttention: " << s.ToString());
      if (s.ok()) {
        CHECK(AllFinite(out));
      } else {
        CHECK(s.code() == ErrorCode::kOverflow);
      }
    }
    {
      TestMatrix C(4, 4);
      const attnkit::Status s = attnkit::MatMul(X, W, C);
      INFO("MatMul: " << s.ToString());
      if (s.ok()) {
        CHECK(AllFinite(C));
      } else {
        CHECK(s.code() == ErrorCode::kOverflow);
      }
    }
    {
      // Scores overflow: Q, K ~ 1e20, d_k = 4 -> Q K^T ~ 1e40.
      const TestMatrix Q = Random(3, 4, 3, Layout::kContiguous, 0.5e20f, 1e20f);
      const TestMatrix K = Random(5, 4, 4, Layout::kContiguous, 0.5e20f, 1e20f);
      const TestMatrix V = Random(5, 2, 5);
      TestMatrix out(3, 2);
      const attnkit::Status s = attnkit::Attention(Q, K, V, o, out);
      INFO("Attention: " << s.ToString());
      if (s.ok()) {
        CHECK(AllFinite(out));
      } else {
        CHECK(s.code() == ErrorCode::kOverflow);
      }
    }
    {
      // Scaling overflows: 3e38 * 10.
      TestMatrix x = FromRows({{3e38f, 1.0f}});
      const attnkit::Status s = attnkit::ScaleScores(x, 10.0f, 0.0f);
      INFO("ScaleScores: " << s.ToString());
      if (s.ok()) {
        CHECK(AllFinite(x));
      } else {
        CHECK(s.code() == ErrorCode::kOverflow);
      }
    }
    {
      // Huge but finite V: the weighted sum of two values near FLT_MAX.
      const TestMatrix Q = FromRows({{0.0f}}), K = FromRows({{0.0f}, {0.0f}});
      const TestMatrix V = FromRows({{3e38f}, {3e38f}});
      TestMatrix out(1, 1);
      const attnkit::Status s = attnkit::Attention(Q, K, V, o, out);
      INFO("Attention, V near FLT_MAX: " << s.ToString());
      if (s.ok()) {
        CHECK(AllFinite(out));
      } else {
        CHECK(s.code() == ErrorCode::kOverflow);
      }
    }
  });
}

}  // namespace
}  // namespace attnkit_test
