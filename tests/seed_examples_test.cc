// The worked examples of the project's seed texts.
//
// Seed 001 ("2.3 Single-attention head") prints X (6x4), W^Q (4x4), Q (6x4),
// K^T (4x6), QK^T (6x6), QK^T/sqrt(4), the causal mask M, softmax(...), V and
// the output. The seed itself says "the numbers in the following example
// sequence are randomly generated": the tables are only partly consistent
// with each other. Checked here (by hand in float64 and by these tests):
//   - row 0 of X W^Q is the printed q_0 = [1.01, 0.36, -0.74, -0.09];
//     rows 1..5 of X W^Q are NOT the printed q_1..q_5 (off by 1.77 to 5.95);
//   - printed q_0 . K^T reproduces only the first three printed entries of
//     row 0 of QK^T ([-0.01, 2.12, -1.62], within 0.01); the last three
//     printed entries [3.45, 1.83, 3.29] do not follow (computed -0.1148, 0.7733,
//     -0.0196), and rows 1..5 of the printed QK^T do not follow from the
//     printed Q and K^T at all;
//   - the printed QK^T/sqrt(4) table is the printed QK^T halved (consistent);
//   - the printed softmax table normalises COLUMNS (each column sums to 1),
//     which is wrong: softmax is over each query's row of keys. The output
//     table is therefore wrong as well (head_0 = 0.156 * v_0 instead of v_0).
// Seed 004 ("Attention", multi-head section) claims one big projection
// [d_model, h*d_k] followed by a reshape into heads equals h separate
// per-head projections: checked with SplitHeads against MatMul on column
// slices of the weights, and its whole pseudo-code pipeline is rebuilt from
// the kernels and compared with MultiHeadAttention.
#include <cmath>
#include <limits>

#include "tests/reference.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::AttentionOptions;
using attnkit::AttentionTrace;

// Seed 001's printed tables.
TestMatrix SeedX() {
  return FromRows({{0.1f, -0.2f, 0.1f, 0.2f},
                   {0.8f, 0.8f, -0.9f, 0.5f},
                   {-0.6f, 0.4f, 0.5f, -0.9f},
                   {0.9f, -0.7f, 0.8f, 0.7f},
                   {0.4f, 0.3f, 0.4f, 0.4f},
                   {0.8f, 0.2f, 0.9f, -0.2f}});
}
TestMatrix SeedWQ() {
  return FromRows({{3.4f, -2.1f, 0.8f, 1.9f},
                   {-1.2f, 0.5f, 3.7f, -0.8f},
                   {2.9f, 1.1f, -3.4f, 0.6f},
                   {0.7f, 2.8f, 1.3f, -2.5f}});
}
TestMatrix SeedQ() {
  return FromRows({{1.01f, 0.36f, -0.74f, -0.09f},
                   {-0.50f, -0.87f, 4.49f, -0.23f},
                   {2.17f, -1.99f, -3.92f, 1.71f},
                   {1.43f, 2.59f, 1.97f, -3.19f},
                   {0.67f, 0.98f, 0.61f, -0.31f},
                   {1.97f, 0.52f, 4.01f, -0.51f}});
}
TestMatrix SeedKT() {
  return FromRows({{0.15f, 1.94f, -0.98f, 2.53f, 1.24f, 2.18f},
                   {0.16f, 1.44f, 0.64f, -2.33f, 0.81f, 0.44f},
                   {0.25f, 0.35f, 1.25f, 2.24f, 1.14f, 3.25f},
                   {0.28f, 1.15f, -0.81f, 1.93f, -0.81f, -0.28f}});
}
TestMatrix SeedQKT() {
  return FromRows({{-0.01f, 2.12f, -1.62f, 3.45f, 1.83f, 3.29f},
                   {-1.37f, 0.51f, 7.15f, -3.39f, 2.35f, 2.99f},
                   {3.49f, -6.19f, -9.39f, 11.19f, -3.19f, -5.67f},
                   {2.23f, 3.19f, 2.35f, -0.67f, 1.35f, 4.37f},
                   {0.83f, 1.42f, 0.95f, 0.27f, 0.69f, 1.83f},
                   {3.35f, 1.35f, 10.93f, -0.95f, 3.35f, 5.95f}});
}
TestMatrix SeedScaledQKT() {
  return FromRows({{-0.005f, 1.06f, -0.81f, 1.725f, 0.915f, 1.645f},
                   {-0.685f, 0.255f, 3.575f, -1.695f, 1.175f, 1.495f},
                   {1.745f, -3.095f, -4.695f, 5.595f, -1.595f, -2.835f},
                   {1.115f, 1.595f, 1.175f, -0.335f, 0.675f, 2.185f},
                   {0.415f, 0.71f, 0.475f, 0.135f, 0.345f, 0.915f},
                   {1.675f, 0.675f, 5.465f, -0.475f, 1.675f, 2.975f}});
}
TestMatrix SeedSoftmax() {
  return FromRows({{0.156f, 0, 0, 0, 0, 0},
                   {0.138f, 0.041f, 0, 0, 0, 0},
                   {0.194f, 0.001f, 0, 0, 0, 0},
                   {0.168f, 0.193f, 0.042f, 0.143f, 0, 0},
                   {0.142f, 0.136f, 0.031f, 0.051f, 0.083f, 0},
                   {0.201f, 0.629f, 0.927f, 0.806f, 0.917f, 1}});
}
TestMatrix SeedV() {
  return FromRows({{0.43f, 0.29f, 0.64f, 0.83f},
                   {1.15f, 1.19f, -0.28f, 0.67f},
                   {-0.21f, 0.64f, 0.59f, -0.82f},
                   {1.19f, -0.45f, 0.86f, 0.99f},
                   {0.51f, 0.41f, 0.51f, 0.51f},
                   {1.19f, 0.28f, 0.95f, -0.15f}});
}
TestMatrix Transposed(const TestMatrix& m) { return FromRef(ref::Transpose(m.ToRef())); }

double MaxRowDiff(ConstMatrixView a, size_t ra, ConstMatrixView b, size_t rb) {
  double d = 0.0;
  for (size_t c = 0; c < a.cols; ++c) d = std::max(d, std::fabs(double(a(ra, c)) - b(rb, c)));
  return d;
}

TEST_CASE("Seed 001 (a): row 0 of X W^Q is the printed q_0 within 0.01", "[seed][seed001]") {
  const TestMatrix X = SeedX(), WQ = SeedWQ(), Q = SeedQ();
  ForEachTarget([&](int64_t) {
    TestMatrix XW(6, 4);
    REQUIRE_OK(attnkit::MatMul(X, WQ, XW));
    const float q0[4] = {1.01f, 0.36f, -0.74f, -0.09f};
    for (size_t c = 0; c < 4; ++c) {
      INFO("column " << c);
      CHECK(std::fabs(XW(0, c) - q0[c]) <= 0.01f);
    }
    // The same through the traced single-head pipeline (W^K = W^V = W^Q here,
    // only trace.Q is looked at).
    AttentionTrace tr;
    REQUIRE_OK(attnkit::TraceAttention(X, WQ, WQ, WQ, AttentionOptions(), &tr));
    for (size_t c = 0; c < 4; ++c) CHECK(std::fabs(tr.Q(0, c) - q0[c]) <= 0.01f);
    // The seed's other rows of Q are not X W^Q (its numbers are random).
    for (size_t r = 1; r < 6; ++r) {
      INFO("row " << r);
      CHECK(MaxRowDiff(XW, r, Q, r) > 0.01);
    }
  });
}

TEST_CASE("Seed 001 (b): printed q_0 times printed K^T vs the printed row 0 of QK^T",
          "[seed][seed001]") {
  const TestMatrix Q = SeedQ(), KT = SeedKT(), QKT = SeedQKT();
  const TestMatrix K = Transposed(KT);  // K [6, 4]
  ForEachTarget([&](int64_t) {
    TestMatrix scores(6, 6), scores_t(6, 6);
    REQUIRE_OK(attnkit::MatMul(Q, KT, scores));
    REQUIRE_OK(attnkit::MatMulTransposed(Q, K, scores_t));
    CHECK_CLOSE(scores_t, scores.ToRef(), DotTol(4, 5, 3.5));
    // The first three printed entries of row 0 follow from q_0 and K^T ...
    for (size_t c = 0; c < 3; ++c) {
      INFO("row 0, column " << c << ": computed " << scores(0, c) << ", printed " << QKT(0, c));
      CHECK(std::fabs(scores(0, c) - QKT(0, c)) <= 0.01f);
    }
    // ... the last three do not (computed -0.1148, 0.7733, -0.0196).
    const float computed[3] = {-0.1148f, 0.7733f, -0.0196f};
    for (size_t c = 3; c < 6; ++c) {
      INFO("row 0, column " << c << ": computed " << scores(0, c) << ", printed " << QKT(0, c));
      CHECK(std::fabs(scores(0, c) - QKT(0, c)) > 0.01f);
      CHECK(std::fabs(scores(0, c) - computed[c - 3]) <= 1e-4f);
    }
    // No other printed row follows from the printed Q and K^T.
    for (size_t r = 1; r < 6; ++r) {
      INFO("row " << r);
      CHECK(MaxRowDiff(scores, r, QKT, r) > 0.01);
    }
    // The printed scaled table is the printed QK^T divided by sqrt(4).
    TestMatrix halved = CopyOf(QKT);
    REQUIRE_OK(attnkit::ScaleScores(halved, 0.5f, 0.0f));
    CHECK_CLOSE(halved, SeedScaledQKT().ToRef(), (Tol{1e-6, 1e-6}));
  });
}

TEST_CASE("Seed 001 (c): causal attention on the printed Q, K, V normalises rows, not columns",
          "[seed][seed001]") {
  const TestMatrix Q = SeedQ(), K = Transposed(SeedKT()), V = SeedV();
  const TestMatrix seed_softmax = SeedSoftmax();
  // The seed's table: columns sum to 1, rows do not (the error this test
  // documents).
  for (size_t c = 0; c < 6; ++c) {
    double col = 0.0;
    for (size_t r = 0; r < 6; ++r) col += seed_softmax(r, c);
    CHECK(col == Approx(1.0).margin(0.0025));
  }
  CHECK(std::fabs(RowSum(seed_softmax, 0) - 1.0) > 0.5);
  ForEachTarget([&](int64_t) {
    AttentionOptions o;
    o.causal = true;
    AttentionTrace tr;
    REQUIRE_OK(attnkit::TraceAttentionQKV(Q, K, V, o, &tr));
    CHECK(tr.scale == Approx(0.5));
    for (size_t i = 0; i < 6; ++i) {
      INFO("row " << i);
      CHECK(RowSum(tr.weights, i) == Approx(1.0).margin(1e-5));
      for (size_t j = i + 1; j < 6; ++j) {
        CHECK(tr.weights(i, j) == 0.0f);
        CHECK(tr.masked_scores(i, j) == -std::numeric_limits<float>::infinity());
      }
    }
    // Query 0 sees only key 0: weight 1 and output v_0 (the seed prints
    // 0.156 and 0.156 * v_0).
    CHECK(tr.weights(0, 0) == Approx(1.0f));
    for (size_t c = 0; c < 4; ++c) CHECK(tr.output(0, c) == Approx(V(0, c)).margin(1e-6));
    CHECK(std::fabs(tr.weights(0, 0) - seed_softmax(0, 0)) > 0.5f);
    // Every intermediate against the float64 reference.
    const ref::Trace want = ref::Attention(Q.ToRef(), K.ToRef(), V.ToRef(), ref::FromAttnkit(o));
    CheckTrace(tr, want, AttentionTol(4, 6, 4.49, 3.25, 1.19, 0.5));
  });
}

TEST_CASE("Seed 004: one big projection + SplitHeads equals per-head projections on slices",
          "[seed][seed004]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 13000;
    for (size_t d_model : {size_t{4}, size_t{8}, size_t{12}, size_t{16}, size_t{32}}) {
      for (size_t h : {size_t{1}, size_t{2}, size_t{4}}) {
        for (size_t T : {size_t{1}, size_t{5}, size_t{9}}) {
          const size_t d_k = d_model / h;
          INFO("d_model=" << d_model << " h=" << h << " T=" << T << " d_k=" << d_k);
          const TestMatrix X = Random(T, d_model, ++seed);
          const TestMatrix W = Random(d_model, h * d_k, ++seed, Layout::kStrided);
          TestMatrix big(T, h * d_k), split(h * T, d_k);
          REQUIRE_OK(attnkit::MatMul(X, W, big));
          REQUIRE_OK(attnkit::SplitHeads(big, h, split));
          for (size_t head = 0; head < h; ++head) {
            INFO("head " << head);
            // The head's own [d_model, d_k] weights: a strided column slice.
            const ConstMatrixView W_h = W.cview().Block(0, d_model, head * d_k, d_k);
            TestMatrix per_head(T, d_k, Layout::kStrided);
            REQUIRE_OK(attnkit::MatMul(X, W_h, per_head));
            CHECK_CLOSE(split.cview().Block(head * T, T, 0, d_k), per_head.ToRef(),
                        DotTol(d_model, 1, 1));
            CHECK_CLOSE(per_head, ref::MatMul(X.ToRef(), ref::FromView(W_h)),
                        DotTol(d_model, 1, 1));
          }
        }
      }
    }
  });
}

TEST_CASE("Seed 004: its pseudo-code pipeline built from the kernels equals MultiHeadAttention",
          "[seed][seed004]") {
  ForEachTarget([](int64_t) {
    const size_t n = 7, d_model = 12, h = 3, d_k = d_model / h;
    const float w = 1.0f / std::sqrt(float(d_model));
    const TestMatrix X = Random(n, d_model, 1);
    const TestMatrix WQ = Random(d_model, d_model, 2, Layout::kContiguous, -w, w);
    const TestMatrix WK = Random(d_model, d_model, 3, Layout::kContiguous, -w, w);
    const TestMatrix WV = Random(d_model, d_model, 4, Layout::kContiguous, -w, w);
    const TestMatrix WO = Random(d_model, d_model, 5, Layout::kContiguous, -w, w);
    // Q = X @ W_Q etc., reshaped to heads.
    TestMatrix Q(n, d_model), K(n, d_model), V(n, d_model);
    REQUIRE_OK(attnkit::MatMul(X, WQ, Q));
    REQUIRE_OK(attnkit::MatMul(X, WK, K));
    REQUIRE_OK(attnkit::MatMul(X, WV, V));
    TestMatrix Qh(h * n, d_k), Kh(h * n, d_k), Vh(h * n, d_k), Oh(h * n, d_k);
    REQUIRE_OK(attnkit::SplitHeads(Q, h, Qh));
    REQUIRE_OK(attnkit::SplitHeads(K, h, Kh));
    REQUIRE_OK(attnkit::SplitHeads(V, h, Vh));
    for (size_t head = 0; head < h; ++head) {
      TestMatrix scores(n, n);
      REQUIRE_OK(attnkit::MatMulTransposed(Qh.cview().Block(head * n, n, 0, d_k),
                                           Kh.cview().Block(head * n, n, 0, d_k), scores));
      REQUIRE_OK(attnkit::ScaleScores(scores, 1.0f / std::sqrt(float(d_k)), 0.0f));
      for (size_t i = 0; i < n; ++i)  // + M (causal)
        for (size_t j = i + 1; j < n; ++j) scores(i, j) = -kInf;
      REQUIRE_OK(attnkit::SoftmaxRows(scores));
      REQUIRE_OK(attnkit::MatMul(scores, Vh.cview().Block(head * n, n, 0, d_k),
                                 Oh.view().Block(head * n, n, 0, d_k)));
    }
    TestMatrix merged(n, d_model), pipeline(n, d_model);
    REQUIRE_OK(attnkit::MergeHeads(Oh, h, merged));
    REQUIRE_OK(attnkit::MatMul(merged, WO, pipeline));

    AttentionOptions o;
    o.causal = true;
    TestMatrix out(n, d_model);
    REQUIRE_OK(attnkit::MultiHeadAttention(X, 1, attnkit::MultiHeadWeights{WQ, WK, WV, WO},
                                           attnkit::HeadConfig{h, 0, 0, 0}, o, out));
    CHECK_CLOSE(out, pipeline.ToRef(), (Tol{1e-5, 1e-5}));
    const ref::Mat want = ref::MultiHead(X.ToRef(), 1, WQ.ToRef(), WK.ToRef(), WV.ToRef(),
                                         WO.ToRef(), h, h, ref::FromAttnkit(o));
    CHECK_CLOSE(out, want, ChainTol(want));
    CHECK_CLOSE(pipeline, want, ChainTol(want));
  });
}

}  // namespace
}  // namespace attnkit_test
