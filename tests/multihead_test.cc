// Multi-head attention: SplitHeads, MergeHeads, MultiHeadAttentionQKV (grouped
// K/V heads, batches with per-item key padding, masks) and MultiHeadAttention
// (projections and W_O), against the float64 reference on every target.
#include <cmath>
#include <string>

#include "tests/reference.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::AttentionOptions;
using attnkit::HeadConfig;
using attnkit::MultiHeadWeights;

TEST_CASE("SplitHeads and MergeHeads match the reference and invert each other",
          "[multihead][reshape]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 7000;
    for (size_t T : {size_t{1}, size_t{3}, size_t{5}, size_t{16}, size_t{17}}) {
      for (size_t h : {size_t{1}, size_t{2}, size_t{3}, size_t{4}}) {
        for (size_t d : LaneSizes()) {
          for (Layout layout : AllLayouts()) {
            INFO("T=" << T << " h=" << h << " d=" << d << " " << LayoutName(layout));
            const TestMatrix x = Random(T, h * d, ++seed, layout);
            TestMatrix split(h * T, d, layout);
            REQUIRE_OK(attnkit::SplitHeads(x, h, split));
            CHECK_CLOSE(split, ref::SplitHeads(x.ToRef(), h), kExact);
            CHECK(split.PaddingIntact());
            TestMatrix merged(T, h * d,
                              layout == Layout::kStrided ? Layout::kContiguous : Layout::kStrided);
            REQUIRE_OK(attnkit::MergeHeads(split, h, merged));
            CHECK_CLOSE(merged, ref::MergeHeads(split.ToRef(), h), kExact);
            CHECK_CLOSE(merged, x.ToRef(), kExact);
            CHECK(merged.PaddingIntact());
          }
        }
      }
    }
  });
}

struct MhShape {
  size_t h, kvh, batch, T_q, T_k, d_k, d_v;
};

std::string Describe(const MhShape& s) {
  std::ostringstream os;
  os << "h=" << s.h << " kvh=" << s.kvh << " batch=" << s.batch << " T_q=" << s.T_q
     << " T_k=" << s.T_k << " d_k=" << s.d_k << " d_v=" << s.d_v;
  return os.str();
}

std::vector<MhShape> MhShapes() {
  std::vector<MhShape> shapes = {
      {1, 1, 1, 5, 5, 4, 4},  {2, 2, 1, 4, 4, 3, 5},  {4, 2, 2, 5, 5, 8, 8},
      {4, 1, 3, 3, 7, 5, 2},  {6, 3, 2, 4, 4, 4, 6},  {3, 3, 2, 1, 9, 16, 1},
      {8, 4, 1, 9, 9, 1, 17}, {2, 1, 4, 7, 3, 9, 15}, {4, 4, 1, 17, 17, 7, 7},
      {5, 5, 2, 8, 16, 3, 4},
  };
  // Every size around the lane counts for T, d_k and d_v.
  for (size_t s : LaneSizes()) shapes.push_back({2, 1, 2, s, s, s, s});
  return shapes;
}

TEST_CASE("MultiHeadAttentionQKV matches the reference: grouped heads, batches, masks",
          "[multihead][qkv]") {
  const std::vector<MhShape> shapes = MhShapes();
  ForEachTarget([&](int64_t) {
    uint32_t seed = 8000;
    for (const MhShape& s : shapes) {
      for (int variant = 0; variant < 6; ++variant) {
        const Layout layout = (variant % 2) ? Layout::kStrided : Layout::kContiguous;
        INFO(Describe(s) << " variant=" << variant << " " << LayoutName(layout));
        const TestMatrix Q = Random(s.batch * s.T_q, s.h * s.d_k, ++seed, layout, -2, 2);
        const TestMatrix K = Random(s.batch * s.T_k, s.kvh * s.d_k, ++seed, layout, -2, 2);
        const TestMatrix V = Random(s.batch * s.T_k, s.kvh * s.d_v, ++seed, layout);
        const TestMask bmask = RandomMask(s.T_q, s.T_k, ++seed, 0.75, layout);
        TestMatrix amask = Random(s.T_q, s.T_k, ++seed, layout, -1, 1);
        amask(0, 0) = -kInf;
        AttentionOptions o;
        switch (variant) {
          case 1:
            o.causal = true;
            break;
          case 2:
            for (size_t b = 0; b < s.batch; ++b) o.key_lengths.push_back((b * 3 + 1) % (s.T_k + 1));
            break;
          case 3:
            o.bool_mask = bmask.view();
            o.additive_mask = amask.cview();
            break;
          case 4:
            o.scale = 0.4f;
            o.softcap = 2.0f;
            o.causal = true;
            break;
          case 5:
            o.key_length = s.T_k - 1;
            o.bool_mask = bmask.view();
            break;
          default:
            break;
        }
        const ref::Mat want = ref::MultiHeadQKV(Q.ToRef(), K.ToRef(), V.ToRef(), s.batch, s.h,
                                                s.kvh, ref::FromAttnkit(o));
        const double scale = o.scale ? *o.scale : 1.0 / std::sqrt(double(s.d_k));
        const AttnTol tol = AttentionTol(s.d_k, s.T_k, 2, 2, 1, scale, 1.0);
        // d_k, d_v derived from the column counts, and given explicitly.
        for (bool explicit_dims : {false, true}) {
          INFO("explicit d_k/d_v: " << explicit_dims);
          HeadConfig cfg;
          cfg.num_heads = s.h;
          cfg.num_kv_heads = s.kvh;
          if (explicit_dims) {
            cfg.d_k = s.d_k;
            cfg.d_v = s.d_v;
          }
          TestMatrix out(s.batch * s.T_q, s.h * s.d_v, layout);
          REQUIRE_OK(attnkit::MultiHeadAttentionQKV(Q, K, V, s.batch, cfg, o, out));
          CHECK_CLOSE(out, want, tol.output);
          CHECK(out.PaddingIntact());
        }
      }
    }
  });
}

TEST_CASE("MultiHeadAttentionQKV: grouped K/V heads equal the same with K/V heads repeated",
          "[multihead][grouped]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 9000;
    const std::vector<std::pair<size_t, size_t>> hk = {{4, 2}, {4, 1}, {6, 3},
                                                       {6, 2}, {8, 2}, {3, 1}};
    for (auto [h, kvh] : hk) {
      for (bool causal : {false, true}) {
        const size_t batch = 2, T = 7, d_k = 5, d_v = 3;
        INFO("h=" << h << " kvh=" << kvh << " causal=" << causal);
        const TestMatrix Q = Random(batch * T, h * d_k, ++seed, Layout::kStrided);
        const TestMatrix K = Random(batch * T, kvh * d_k, ++seed, Layout::kStrided);
        const TestMatrix V = Random(batch * T, kvh * d_v, ++seed, Layout::kStrided);
        // Repeat each kv head's columns once per query head of its group.
        const size_t group = h / kvh;
        TestMatrix Kr(batch * T, h * d_k), Vr(batch * T, h * d_v);
        for (size_t r = 0; r < batch * T; ++r)
          for (size_t head = 0; head < h; ++head) {
            const size_t g = head / group;
            for (size_t c = 0; c < d_k; ++c) Kr(r, head * d_k + c) = K(r, g * d_k + c);
            for (size_t c = 0; c < d_v; ++c) Vr(r, head * d_v + c) = V(r, g * d_v + c);
          }
        AttentionOptions o;
        o.causal = causal;
        TestMatrix grouped(batch * T, h * d_v), repeated(batch * T, h * d_v);
        REQUIRE_OK(
            attnkit::MultiHeadAttentionQKV(Q, K, V, batch, HeadConfig{h, kvh, 0, 0}, o, grouped));
        REQUIRE_OK(
            attnkit::MultiHeadAttentionQKV(Q, Kr, Vr, batch, HeadConfig{h, h, 0, 0}, o, repeated));
        // The same arithmetic on the same numbers: equal up to rounding.
        CHECK_CLOSE(grouped, repeated.ToRef(), (Tol{1e-6, 1e-6}));
        const ref::Mat want =
            ref::MultiHeadQKV(Q.ToRef(), K.ToRef(), V.ToRef(), batch, h, kvh, ref::FromAttnkit(o));
        CHECK_CLOSE(grouped, want, AttentionTol(d_k, T, 1, 1, 1, 1 / std::sqrt(5.0)).output);
      }
    }
  });
}

TEST_CASE("MultiHeadAttentionQKV: each batch item with key padding equals that item alone",
          "[multihead][batch]") {
  ForEachTarget([](int64_t) {
    const size_t batch = 4, h = 4, kvh = 2, T_q = 5, T_k = 9, d_k = 4, d_v = 6;
    const std::vector<size_t> lengths = {9, 3, 0, 6};
    const TestMatrix Q = Random(batch * T_q, h * d_k, 11, Layout::kStrided);
    const TestMatrix K = Random(batch * T_k, kvh * d_k, 12, Layout::kStrided);
    const TestMatrix V = Random(batch * T_k, kvh * d_v, 13, Layout::kStrided);
    for (bool causal : {false, true}) {
      INFO("causal=" << causal);
      AttentionOptions o;
      o.causal = causal;
      o.key_lengths = lengths;
      o.key_length = 1;  // overridden by key_lengths
      TestMatrix out(batch * T_q, h * d_v, Layout::kStrided);
      REQUIRE_OK(attnkit::MultiHeadAttentionQKV(Q, K, V, batch, HeadConfig{h, kvh, 0, 0}, o, out));
      for (size_t b = 0; b < batch; ++b) {
        INFO("item " << b << " key_length " << lengths[b]);
        AttentionOptions single;
        single.causal = causal;
        single.key_length = lengths[b];
        const ConstMatrixView Qb = Q.cview().Block(b * T_q, T_q, 0, h * d_k);
        const ConstMatrixView Kb = K.cview().Block(b * T_k, T_k, 0, kvh * d_k);
        const ConstMatrixView Vb = V.cview().Block(b * T_k, T_k, 0, kvh * d_v);
        TestMatrix item_out(T_q, h * d_v);
        REQUIRE_OK(attnkit::MultiHeadAttentionQKV(Qb, Kb, Vb, 1, HeadConfig{h, kvh, 0, 0}, single,
                                                  item_out));
        CHECK_CLOSE(out.cview().Block(b * T_q, T_q, 0, h * d_v), item_out.ToRef(),
                    (Tol{1e-6, 1e-6}));
        // And per head, against single-head Attention on the head's columns.
        for (size_t head = 0; head < h; ++head) {
          INFO("head " << head);
          const size_t g = head / (h / kvh);
          TestMatrix head_out(T_q, d_v);
          REQUIRE_OK(attnkit::Attention(Qb.Block(0, T_q, head * d_k, d_k),
                                        Kb.Block(0, T_k, g * d_k, d_k),
                                        Vb.Block(0, T_k, g * d_v, d_v), single, head_out));
          CHECK_CLOSE(out.cview().Block(b * T_q, T_q, head * d_v, d_v), head_out.ToRef(),
                      (Tol{1e-6, 1e-6}));
        }
        if (lengths[b] == 0) {
          CHECK_CLOSE(out.cview().Block(b * T_q, T_q, 0, h * d_v), ref::Mat(T_q, h * d_v), kExact);
        }
      }
      const ref::Mat want =
          ref::MultiHeadQKV(Q.ToRef(), K.ToRef(), V.ToRef(), batch, h, kvh, ref::FromAttnkit(o));
      CHECK_CLOSE(out, want, AttentionTol(d_k, T_k, 1, 1, 1, 0.5).output);
    }
  });
}

struct MhaCase {
  size_t batch, T, d_model, h, kvh, d_k, d_v, d_out;  // d_out 0 = no W_O
  bool derive;  // leave d_k, d_v, num_kv_heads zero in HeadConfig
};

TEST_CASE("MultiHeadAttention matches the reference with and without W_O", "[multihead][mha]") {
  const std::vector<MhaCase> cases = {
      {1, 5, 8, 2, 2, 4, 4, 8, true},
      {1, 5, 8, 2, 2, 4, 4, 0, true},
      {2, 4, 12, 4, 4, 3, 3, 5, true},
      {2, 7, 6, 3, 1, 5, 2, 7, false},
      {3, 3, 16, 4, 2, 4, 4, 16, false},
      {1, 17, 9, 4, 2, 3, 5, 0, false},
      {2, 9, 16, 8, 8, 2, 2, 16, true},
      {1, 1, 4, 1, 1, 4, 4, 4, true},
      {2, 8, 10, 6, 3, 7, 9, 3, false},
      {1, 16, 32, 4, 4, 8, 8, 32, true},
      // 134 rows: the projections pack their weights (internal::kPackMinRows),
      // into panels of every width, with a partial last panel.
      {2, 67, 37, 4, 2, 9, 17, 33, false},
  };
  std::vector<MhaCase> all = cases;
  for (size_t s : LaneSizes()) all.push_back({2, s, s + 3, 2, 1, s, s, s, false});
  ForEachTarget([&](int64_t) {
    uint32_t seed = 10000;
    for (const MhaCase& c : all) {
      for (int variant = 0; variant < 3; ++variant) {
        const Layout layout = (variant == 1) ? Layout::kStrided : Layout::kContiguous;
        INFO("batch=" << c.batch << " T=" << c.T << " d_model=" << c.d_model << " h=" << c.h
                      << " kvh=" << c.kvh << " d_k=" << c.d_k << " d_v=" << c.d_v
                      << " d_out=" << c.d_out << " derive=" << c.derive << " variant=" << variant
                      << " " << LayoutName(layout));
        const float wi = 1.0f / std::sqrt(float(c.d_model));
        const float wo = 1.0f / std::sqrt(float(c.h * c.d_v));
        const TestMatrix X = Random(c.batch * c.T, c.d_model, ++seed, layout);
        const TestMatrix WQ = Random(c.d_model, c.h * c.d_k, ++seed, layout, -wi, wi);
        const TestMatrix WK = Random(c.d_model, c.kvh * c.d_k, ++seed, layout, -wi, wi);
        const TestMatrix WV = Random(c.d_model, c.kvh * c.d_v, ++seed, layout, -wi, wi);
        const TestMatrix WO =
            c.d_out ? Random(c.h * c.d_v, c.d_out, ++seed, layout, -wo, wo) : TestMatrix();
        MultiHeadWeights w{WQ, WK, WV, c.d_out ? WO.cview() : ConstMatrixView()};
        HeadConfig cfg;
        cfg.num_heads = c.h;
        if (!c.derive) {
          cfg.num_kv_heads = c.kvh;
          cfg.d_k = c.d_k;
          cfg.d_v = c.d_v;
        }
        AttentionOptions o;
        if (variant == 1) o.causal = true;
        if (variant == 2) {
          for (size_t b = 0; b < c.batch; ++b) o.key_lengths.push_back(c.T - b);
          o.softcap = 3.0f;
        }
        const ref::Mat want =
            ref::MultiHead(X.ToRef(), c.batch, WQ.ToRef(), WK.ToRef(), WV.ToRef(),
                           c.d_out ? WO.ToRef() : ref::Mat(), c.h, c.kvh, ref::FromAttnkit(o));
        const size_t out_cols = c.d_out ? c.d_out : c.h * c.d_v;
        TestMatrix out(c.batch * c.T, out_cols, layout);
        REQUIRE_OK(attnkit::MultiHeadAttention(X, c.batch, w, cfg, o, out));
        CHECK_CLOSE(out, want, ChainTol(want));
        CHECK(out.PaddingIntact());
      }
    }
  });
}

TEST_CASE("MultiHeadAttention equals per-head SelfAttention on weight slices, merged, times W_O",
          "[multihead][mha]") {
  ForEachTarget([](int64_t) {
    const size_t T = 6, d_model = 12, h = 3, d_k = 4, d_v = 5, d_out = 7;
    const TestMatrix X = Random(T, d_model, 21);
    const TestMatrix WQ = Random(d_model, h * d_k, 22, Layout::kStrided, -0.3f, 0.3f);
    const TestMatrix WK = Random(d_model, h * d_k, 23, Layout::kStrided, -0.3f, 0.3f);
    const TestMatrix WV = Random(d_model, h * d_v, 24, Layout::kStrided, -0.3f, 0.3f);
    const TestMatrix WO = Random(h * d_v, d_out, 25, Layout::kStrided, -0.3f, 0.3f);
    AttentionOptions o;
    o.causal = true;
    TestMatrix heads(h * T, d_v);
    for (size_t head = 0; head < h; ++head) {
      REQUIRE_OK(attnkit::SelfAttention(X, WQ.cview().Block(0, d_model, head * d_k, d_k),
                                        WK.cview().Block(0, d_model, head * d_k, d_k),
                                        WV.cview().Block(0, d_model, head * d_v, d_v), o,
                                        heads.view().Block(head * T, T, 0, d_v)));
    }
    TestMatrix merged(T, h * d_v), composed(T, d_out);
    REQUIRE_OK(attnkit::MergeHeads(heads, h, merged));
    REQUIRE_OK(attnkit::MatMul(merged, WO, composed));
    TestMatrix out(T, d_out);
    REQUIRE_OK(attnkit::MultiHeadAttention(X, 1, MultiHeadWeights{WQ, WK, WV, WO},
                                           HeadConfig{h, 0, d_k, d_v}, o, out));
    CHECK_CLOSE(out, composed.ToRef(), (Tol{1e-5, 1e-5}));
    // Without W_O the merged heads come back.
    TestMatrix merged_out(T, h * d_v);
    REQUIRE_OK(attnkit::MultiHeadAttention(X, 1, MultiHeadWeights{WQ, WK, WV, ConstMatrixView()},
                                           HeadConfig{h, 0, d_k, d_v}, o, merged_out));
    CHECK_CLOSE(merged_out, merged.ToRef(), (Tol{1e-5, 1e-5}));
  });
}

}  // namespace
}  // namespace attnkit_test
