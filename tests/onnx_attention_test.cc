// The semantics of ONNX's Attention operator (opset 23/24) through
// MultiHeadAttentionQKV: attn_mask of every broadcastable shape, bool or
// additive, shorter than the key count; both causal alignments with per-item
// offsets (nonpad_kv_seqlen); past and present K/V; the intermediate scores.
// Against the float64 reference written from the spec (ref::OnnxAttention),
// on every compiled target, and from the spec's own examples.
#include <cmath>
#include <string>
#include <vector>

#include "tests/reference.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::AttentionOptions;
using attnkit::CausalAlignment;
using attnkit::HeadConfig;
using attnkit::MaskLayout;
using attnkit::MultiHeadExtras;
using attnkit::ScoresStage;
using attnkit::ThreadPool;

// A mask tensor packed as attnkit takes it: [b*h*q, k] and its layout.
struct PackedMask {
  TestMask bools;
  TestMatrix values;
  MaskLayout layout;
};

PackedMask Pack(const ref::Mask4& m) {
  PackedMask p;
  p.layout = {m.b, m.h};
  const size_t rows = m.b * m.h * m.q;
  if (m.is_bool) {
    p.bools = TestMask(rows, m.k);
  } else {
    p.values = TestMatrix(rows, m.k);
  }
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < m.k; ++j) {
      const double x = m.v[r * m.k + j];
      if (m.is_bool) {
        p.bools(r, j) = x != 0.0 ? 1 : 0;
      } else {
        p.values(r, j) = static_cast<float>(x);
      }
    }
  return p;
}

ref::Mask4 RandomMask4(size_t b, size_t h, size_t q, size_t k, bool is_bool, uint32_t seed) {
  ref::Mask4 m(b, h, q, k, is_bool);
  Rng rng(seed);
  for (double& x : m.v) {
    const float u = rng.Uniform(0.0f, 1.0f);
    if (is_bool) {
      x = u < 0.75f ? 1.0 : 0.0;
    } else {
      x = u < 0.1f ? ref::kNegInf : rng.Uniform(-1.0f, 1.0f);
    }
  }
  return m;
}

struct Case {
  size_t B, H, kvh, T_q, T_k, T_past, d_k, d_v;
};

std::string Describe(const Case& c) {
  std::ostringstream os;
  os << "B=" << c.B << " H=" << c.H << " kvh=" << c.kvh << " T_q=" << c.T_q << " T_k=" << c.T_k
     << " T_past=" << c.T_past << " d_k=" << c.d_k << " d_v=" << c.d_v;
  return os.str();
}

// Everything one call takes and gives, and the reference's answer.
struct Run {
  Case c;
  TestMatrix Q, K, V, past_K, past_V;
  ref::OnnxOptions ro;
  PackedMask bmask, amask;
  AttentionOptions options;

  Run(const Case& c_, uint32_t seed) : c(c_) {
    Q = Random(c.B * c.T_q, c.H * c.d_k, seed + 1);
    K = Random(c.B * c.T_k, c.kvh * c.d_k, seed + 2);
    V = Random(c.B * c.T_k, c.kvh * c.d_v, seed + 3);
    if (c.T_past > 0) {
      past_K = Random(c.B * c.kvh * c.T_past, c.d_k, seed + 4);
      past_V = Random(c.B * c.kvh * c.T_past, c.d_v, seed + 5);
    }
  }
  size_t T() const { return c.T_past + c.T_k; }
  // Sets the options from ro (call after filling ro).
  void Finish() {
    options = AttentionOptions();
    options.scale = ro.scale ? std::optional<float>(static_cast<float>(*ro.scale)) : std::nullopt;
    options.softcap = static_cast<float>(ro.softcap);
    options.causal = ro.is_causal;
    if (ro.upper_left) {
      options.causal_alignment = CausalAlignment::kUpperLeft;
      for (long long x : ro.offsets) options.causal_offsets.push_back(x);
    }
    options.key_lengths = ro.nonpad;
    if (ro.bool_mask) {
      bmask = Pack(*ro.bool_mask);
      options.bool_mask = bmask.bools.view();
      options.bool_mask_layout = bmask.layout;
    }
    if (ro.additive) {
      amask = Pack(*ro.additive);
      options.additive_mask = amask.values.cview();
      options.additive_mask_layout = amask.layout;
    }
  }
  ref::OnnxResult Want() const {
    return ref::OnnxAttention(Q.ToRef(), K.ToRef(), V.ToRef(),
                              c.T_past ? past_K.ToRef() : ref::Mat(0, c.d_k),
                              c.T_past ? past_V.ToRef() : ref::Mat(0, c.d_v), c.B, c.H, c.kvh, ro);
  }
  // Calls the core: out [B*T_q, H*d_v], present and (with a stage) scores.
  attnkit::Status Call(ScoresStage stage, TestMatrix* out, TestMatrix* present_K,
                       TestMatrix* present_V, TestMatrix* scores) {
    *out = TestMatrix(c.B * c.T_q, c.H * c.d_v);
    MultiHeadExtras x;
    if (c.T_past) {
      x.past_K = past_K.cview();
      x.past_V = past_V.cview();
    }
    if (present_K) {
      *present_K = TestMatrix(c.B * c.kvh * T(), c.d_k);
      *present_V = TestMatrix(c.B * c.kvh * T(), c.d_v);
      x.present_K = present_K->view();
      x.present_V = present_V->view();
    }
    if (stage != ScoresStage::kNone) {
      *scores = TestMatrix(c.B * c.H * c.T_q, T());
      x.scores_stage = stage;
      x.scores = scores->view();
    }
    HeadConfig hc;
    hc.num_heads = c.H;
    hc.num_kv_heads = c.kvh;
    return attnkit::MultiHeadAttentionQKV(Q, K, V, c.B, hc, options, x, out->view());
  }
};

// Inputs in [-1, 1], additive values in [-1, 1] or -inf: scores O(d_k).
AttnTol TolFor(const Case& c) {
  return AttentionTol(c.d_k, c.T_past + c.T_k, 1.0, 1.0, 1.0, 1.0 / std::sqrt(c.d_k), 1.0);
}

// Mask shapes of ONNX's attn_mask: [T_q, k], [B, 1, T_q, k], [1, H, T_q, k]
// (= rank 3 [H, T_q, k]), [B, H, T_q, k], [B, 1, 1, k], [1, 1, 1, k].
ref::Mask4 MaskOfKind(int kind, const Case& c, size_t k, bool is_bool, uint32_t seed) {
  switch (kind) {
    case 0:
      return RandomMask4(1, 1, c.T_q, k, is_bool, seed);
    case 1:
      return RandomMask4(c.B, 1, c.T_q, k, is_bool, seed);
    case 2:
      return RandomMask4(1, c.H, c.T_q, k, is_bool, seed);
    case 3:
      return RandomMask4(c.B, c.H, c.T_q, k, is_bool, seed);
    case 4:
      return RandomMask4(c.B, 1, 1, k, is_bool, seed);
    default:
      return RandomMask4(1, 1, 1, k, is_bool, seed);
  }
}

std::vector<Case> Cases() {
  std::vector<Case> cases = {
      // Split-K (T_q < 4), fused (T_q >= 4), with and without past.
      {2, 2, 1, 1, 1, 0, 1, 1},      {2, 4, 2, 3, 7, 5, 8, 8},       {3, 3, 3, 4, 4, 0, 5, 7},
      {2, 4, 4, 5, 9, 3, 16, 16},    {1, 2, 1, 17, 17, 0, 15, 17},   {2, 2, 2, 7, 127, 0, 4, 4},
      {2, 2, 1, 9, 128, 0, 7, 9},    {2, 1, 1, 13, 129, 0, 8, 3},    {1, 3, 1, 2, 100, 29, 9, 8},
      {2, 2, 2, 31, 64, 65, 17, 16}, {1, 2, 2, 16, 16, 113, 33, 32},
  };
  for (size_t s : LaneSizes()) cases.push_back({2, 2, 1, s, s, s % 3, s, s});
  return cases;
}

TEST_CASE("ONNX masks, alignments, past and scores match the float64 reference",
          "[onnx][multihead]") {
  const std::vector<Case> cases = Cases();
  ForEachTarget([&](int64_t) {
    uint32_t seed = 91000;
    for (const Case& c : cases) {
      for (int variant = 0; variant < 8; ++variant) {
        seed += 17;
        Run run(c, seed);
        Rng rng(seed);
        const size_t T = run.T();
        // A short mask (the last key columns padded) on odd variants.
        const size_t k = (variant % 2 && T > 1) ? T - 1 - rng.Next() % (T - 1) / 2 : T;
        const int kind = variant % 6;
        const bool is_bool = variant % 4 < 2;
        if (is_bool || variant == 7) run.ro.bool_mask = MaskOfKind(kind, c, k, true, seed + 7);
        if (!is_bool) run.ro.additive = MaskOfKind((kind + 3) % 6, c, k, false, seed + 8);
        run.ro.is_causal = variant % 3 != 0;
        run.ro.upper_left = variant % 3 == 2 || (variant == 3 && c.T_past > 0);
        if (run.ro.upper_left) {
          for (size_t b = 0; b < c.B; ++b) {
            // ONNX: the past length; nonpad - T_q per item (may be < 0).
            run.ro.offsets.push_back(variant == 2 ? static_cast<long long>(rng.Next() % (T + 2)) -
                                                        static_cast<long long>(c.T_q)
                                                  : static_cast<long long>(c.T_past));
          }
        }
        if (variant >= 4) {
          for (size_t b = 0; b < c.B; ++b) run.ro.nonpad.push_back(rng.Next() % (T + 1));
        }
        if (variant == 5) run.ro.softcap = 2.0;
        run.Finish();
        INFO(Describe(c) << " variant=" << variant << " mask keys=" << k << " kind=" << kind);
        const ref::OnnxResult want = run.Want();
        const AttnTol tol = TolFor(c);
        TestMatrix out, pk, pv, scores;
        REQUIRE_OK(run.Call(ScoresStage::kNone, &out, &pk, &pv, &scores));
        CHECK_CLOSE(out, want.Y, tol.output);
        CHECK_CLOSE(pk, want.present_K, kExact);
        CHECK_CLOSE(pv, want.present_V, kExact);
        CHECK(AllFinite(out));
        // Without present: the same output (present is temporary, or K/V in place).
        TestMatrix out2;
        REQUIRE_OK(run.Call(ScoresStage::kNone, &out2, nullptr, nullptr, &scores));
        CHECK(out2.SameValues(out));
        // Each stage of the scores, and the output of the one-row path.
        const double scale = 1.0 / std::sqrt(static_cast<double>(c.d_k));
        const Tol scaled{tol.scores.atol * scale + 1e-6, 1e-5};
        const Tol masked{scaled.atol + 2e-6, 1e-5};
        const std::pair<ScoresStage, std::pair<const ref::Mat*, Tol>> stages[] = {
            {ScoresStage::kRaw, {&want.raw, tol.scores}},
            {ScoresStage::kScaled, {&want.scaled, scaled}},
            {ScoresStage::kMasked, {&want.masked, masked}},
            {ScoresStage::kWeights, {&want.weights, tol.weights}}};
        for (const auto& [stage, w] : stages) {
          INFO("stage " << static_cast<int>(stage));
          TestMatrix o3;
          REQUIRE_OK(run.Call(stage, &o3, nullptr, nullptr, &scores));
          CHECK_CLOSE(scores, *w.first, w.second);
          CHECK_CLOSE(o3, want.Y, tol.output);
        }
      }
    }
  });
}

// The spec's picture of is_causal with nonpad_kv_seqlen: S_q = 4 queries,
// S_k = 8 keys, query i attends key j iff j <= i + offset, offset =
// nonpad_kv_seqlen - S_q. Item 0 has nonpad 4 (offset 0: the lower triangle
// of the first 4 keys), item 1 nonpad 8 (offset 4), item 2 nonpad 2 (offset
// -2: rows 0 and 1 see no key and are zero, not NaN).
TEST_CASE("ONNX is_causal with nonpad_kv_seqlen: the spec's picture, per item", "[onnx][causal]") {
  ForEachTarget([&](int64_t) {
    Run run({3, 2, 1, 4, 8, 0, 5, 3}, 4242);
    run.ro.is_causal = true;
    run.ro.upper_left = true;
    run.ro.nonpad = {4, 8, 2};
    run.ro.offsets = {0, 4, -2};
    run.Finish();
    TestMatrix out, w;
    REQUIRE_OK(run.Call(ScoresStage::kWeights, &out, nullptr, nullptr, &w));
    const long long offsets[] = {0, 4, -2};
    for (size_t b = 0; b < 3; ++b)
      for (size_t h = 0; h < 2; ++h)
        for (size_t i = 0; i < 4; ++i) {
          INFO("item " << b << " head " << h << " query " << i);
          for (size_t j = 0; j < 8; ++j) {
            const bool attends =
                static_cast<long long>(j) <= static_cast<long long>(i) + offsets[b] &&
                j < run.ro.nonpad[b];
            CHECK((w((b * 2 + h) * 4 + i, j) > 0.0f) == attends);
          }
        }
    for (size_t c = 0; c < out.cols(); ++c) {
      for (size_t i : {size_t{0}, size_t{1}}) CHECK(out(2 * 4 + i, c) == 0.0f);
    }
    CHECK(AllFinite(out));
    TestMatrix fused;  // the fused kernel (no scores requested) agrees
    REQUIRE_OK(run.Call(ScoresStage::kNone, &fused, nullptr, nullptr, &w));
    CHECK_CLOSE(fused, run.Want().Y, TolFor(run.c).output);
  });
}

// Upper-left causal with a past (ONNX offset = past length) differs from
// lower-right when the new keys outnumber the queries: query i sees keys
// j <= i + T_past, not j <= i + T_total - T_q.
TEST_CASE("ONNX is_causal with past K/V: present, and the upper-left frontier", "[onnx][past]") {
  ForEachTarget([&](int64_t) {
    for (size_t T_q : {size_t{2}, size_t{6}}) {
      INFO("T_q " << T_q);
      Run run({2, 2, 2, T_q, 9, 3, 4, 4}, 777 + static_cast<uint32_t>(T_q));
      run.ro.is_causal = true;
      run.ro.upper_left = true;
      run.ro.offsets = {3, 3};
      run.Finish();
      run.options.causal_offsets.clear();
      run.options.causal_offset = 3;  // one offset for every item
      TestMatrix out, pk, pv, w;
      REQUIRE_OK(run.Call(ScoresStage::kWeights, &out, &pk, &pv, &w));
      const ref::OnnxResult want = run.Want();
      CHECK_CLOSE(out, want.Y, TolFor(run.c).output);
      CHECK_CLOSE(pk, want.present_K, kExact);
      for (size_t i = 0; i < T_q; ++i) {
        CHECK(w(i, i + 3) > 0.0f);
        CHECK(w(i, i + 4) == 0.0f);
      }
      // present fed back as the next call's past (one more token).
      Run next({2, 2, 2, 1, 1, 12, 4, 4}, 900);
      next.past_K = CopyOf(pk);
      next.past_V = CopyOf(pv);
      next.ro.is_causal = true;
      next.Finish();
      TestMatrix out2, pk2, pv2;
      REQUIRE_OK(next.Call(ScoresStage::kNone, &out2, &pk2, &pv2, &w));
      CHECK_CLOSE(out2, next.Want().Y, TolFor(next.c).output);
      const ConstMatrixView head0 = pk2.view().Block(0, 12, 0, 4);
      CHECK_CLOSE(head0, pk.ToRef().Block(0, 12, 0, 4), kExact);
    }
  });
}

// A [B, 1, T_q, T_k] bool mask on 2 items equals each item alone with its
// [T_q, T_k] mask; a mask shorter than the keys equals attention over the
// keys it covers.
TEST_CASE("ONNX [B, 1, T_q, T_k] and short masks equal the per-item calls", "[onnx][mask]") {
  ForEachTarget([&](int64_t) {
    for (size_t T_q : {size_t{3}, size_t{5}, size_t{64}}) {
      const size_t T_k = 130, d = 8, k = 100;
      INFO("T_q " << T_q);
      const TestMatrix Q = Random(2 * T_q, d, 11), K = Random(2 * T_k, d, 12),
                       V = Random(2 * T_k, d, 13);
      TestMask m = RandomMask(2 * T_q, k, 14, 0.6);
      for (size_t j = 0; j < k; ++j) m(0, j) = 0;  // a fully masked row: zeros
      AttentionOptions o;
      o.bool_mask = m.view();
      o.bool_mask_layout = {2, 1};
      HeadConfig hc;
      hc.num_heads = 1;
      TestMatrix out(2 * T_q, d);
      REQUIRE_OK(attnkit::MultiHeadAttentionQKV(Q, K, V, 2, hc, o, out));
      for (size_t b = 0; b < 2; ++b) {
        AttentionOptions one;
        one.bool_mask = m.view().Block(b * T_q, T_q, 0, k);
        TestMatrix want(T_q, d);
        // Only the first k keys: a short mask masks the rest.
        REQUIRE_OK(attnkit::Attention(Q.cview().Block(b * T_q, T_q, 0, d),
                                      K.cview().Block(b * T_k, k, 0, d),
                                      V.cview().Block(b * T_k, k, 0, d), one, want));
        const ConstMatrixView item = out.view().Block(b * T_q, T_q, 0, d);
        const Tol tol{2e-6, 1e-5};
        CHECK_CLOSE(item, want.ToRef(), tol);
      }
      for (size_t c = 0; c < d; ++c) CHECK(out(0, c) == 0.0f);
    }
  });
}

TEST_CASE("ONNX masks, offsets and extras: every bad shape names its parameter", "[onnx][errors]") {
  Run run({2, 4, 2, 3, 5, 0, 4, 4}, 5);
  run.Finish();
  HeadConfig hc;
  hc.num_heads = 4;
  hc.num_kv_heads = 2;
  TestMatrix out(6, 16);
  auto call = [&](const AttentionOptions& o, const MultiHeadExtras& x) {
    return attnkit::MultiHeadAttentionQKV(run.Q, run.K, run.V, 2, hc, o, x, out);
  };
  const MultiHeadExtras none;
  {
    const TestMask m(2 * 4 * 3, 5);
    AttentionOptions o;
    o.bool_mask = m.view();
    o.bool_mask_layout = {3, 4};
    CHECK_ERROR(call(o, none), Err(ErrorCode::kShapeMismatch).Name("bool_mask").Num(3).Num(2));
    o.bool_mask_layout = {2, 3};
    CHECK_ERROR(call(o, none), Err(ErrorCode::kShapeMismatch).Name("bool_mask").Num(3).Num(4));
    o.bool_mask_layout = {0, 4};
    CHECK_ERROR(call(o, none), Err(ErrorCode::kShapeMismatch).Name("bool_mask").Num(0));
    o.bool_mask_layout = {2, 1};  // rows 24, expected 6 or 2
    CHECK_ERROR(call(o, none), Err(ErrorCode::kShapeMismatch).Name("bool_mask").Num(6).Num(24));
    o.bool_mask_layout = {2, 4};
    REQUIRE_OK(call(o, none));
    const TestMask wide(2 * 4, 6);  // one row per (item, head); 6 > T_k = 5 keys
    o.bool_mask = wide.view();
    CHECK_ERROR(call(o, none), Err(ErrorCode::kShapeMismatch).Name("bool_mask").Num(5).Num(6));
  }
  {
    const TestMatrix a(4 * 3, 5);
    AttentionOptions o;
    o.additive_mask = a.cview();
    o.additive_mask_layout = {2, 4};  // expects 24 rows (or 8)
    CHECK_ERROR(call(o, none),
                Err(ErrorCode::kShapeMismatch).Name("additive_mask").Num(24).Num(12));
    o.additive_mask_layout = {1, 4};
    REQUIRE_OK(call(o, none));
    // Single-head calls take only the shared layout.
    const TestMatrix q(3, 4), k(5, 4), v(5, 4);
    TestMatrix o1(3, 4);
    const TestMatrix a2(2 * 3, 5);
    o.additive_mask = a2.cview();
    o.additive_mask_layout = {2, 1};
    CHECK_ERROR(attnkit::Attention(q, k, v, o, o1),
                Err(ErrorCode::kShapeMismatch).Name("additive_mask").Num(1).Num(2));
  }
  {
    AttentionOptions o;
    o.causal = true;
    o.causal_offsets = {1, 2};
    CHECK_ERROR(call(o, none), Err(ErrorCode::kInvalidArgument).Name("causal_offsets"));
    o.causal_alignment = CausalAlignment::kUpperLeft;
    REQUIRE_OK(call(o, none));
    o.causal_offsets = {1, 2, 3};
    CHECK_ERROR(call(o, none),
                Err(ErrorCode::kInvalidArgument).Name("causal_offsets").Num(2).Num(3));
    o.causal_offsets.clear();
    // One offset without kUpperLeft would be ignored: refused, naming it.
    o.causal_alignment = CausalAlignment::kLowerRight;
    o.causal_offset = 2;
    CHECK_ERROR(call(o, none), Err(ErrorCode::kInvalidArgument).Name("causal_offset").Num(2));
    o.causal_alignment = CausalAlignment::kUpperLeft;
    REQUIRE_OK(call(o, none));
    o.causal_offset = 0;
    o.causal_alignment = static_cast<CausalAlignment>(7);
    CHECK_ERROR(call(o, none), Err(ErrorCode::kInvalidArgument).Name("causal_alignment").Num(7));
    const TestMatrix q(3, 4), k(5, 4), v(5, 4);
    TestMatrix o1(3, 4);
    AttentionOptions single;
    single.causal_alignment = CausalAlignment::kUpperLeft;
    single.causal_offsets = {1};
    CHECK_ERROR(attnkit::Attention(q, k, v, single, o1),
                Err(ErrorCode::kInvalidArgument).Name("causal_offsets"));
  }
  {
    const TestMatrix pk(2 * 2 * 3, 4), pv(2 * 2 * 3, 4), bad(2 * 2 * 3 + 1, 4);
    MultiHeadExtras x;
    x.past_K = pk.cview();
    CHECK_ERROR(call(AttentionOptions(), x), Err(ErrorCode::kInvalidArgument).Name("past_V"));
    x.past_V = pv.cview();
    REQUIRE_OK(call(AttentionOptions(), x));
    x.past_K = bad.cview();
    CHECK_ERROR(call(AttentionOptions(), x), Err(ErrorCode::kShapeMismatch).Name("past_K").Num(4));
    x.past_K = pk.cview();
    TestMatrix prk(2 * 2 * 8, 4), prv(2 * 2 * 7, 4);
    x.present_K = prk.view();
    CHECK_ERROR(call(AttentionOptions(), x), Err(ErrorCode::kInvalidArgument).Name("present_V"));
    x.present_V = prv.view();
    CHECK_ERROR(call(AttentionOptions(), x),
                Err(ErrorCode::kShapeMismatch).Name("present_V").Num(32).Num(28));
    x.present_V = x.present_K;
    CHECK_ERROR(call(AttentionOptions(), x), Err(ErrorCode::kInvalidArgument).Name("present_V"));
    x.present_V = MatrixView();
    x.present_K = MatrixView();
    TestMatrix s(2 * 4 * 3, 7);  // T_total = 8
    x.scores = s.view();
    CHECK_ERROR(call(AttentionOptions(), x), Err(ErrorCode::kInvalidArgument).Name("scores"));
    x.scores_stage = ScoresStage::kWeights;
    CHECK_ERROR(call(AttentionOptions(), x),
                Err(ErrorCode::kShapeMismatch).Name("scores").Num(8).Num(7));
    x.scores_stage = static_cast<ScoresStage>(9);
    CHECK_ERROR(call(AttentionOptions(), x),
                Err(ErrorCode::kInvalidArgument).Name("scores_stage").Num(9));
  }
}

// The KV cache takes the same per-(item, head) masks and alignments: its
// attention equals MultiHeadAttentionQKV on the cached keys as past.
TEST_CASE("AttendCached applies ONNX mask layouts and upper-left offsets", "[onnx][kv_cache]") {
  ForEachTarget([&](int64_t) {
    for (size_t T_new : {size_t{1}, size_t{5}}) {
      INFO("T_new " << T_new);
      const size_t B = 2, H = 4, kvh = 2, d = 8, T_past = 9, T = T_past + T_new;
      Run run({B, H, kvh, T_new, T_new, T_past, d, d}, 606 + static_cast<uint32_t>(T_new));
      run.ro.bool_mask = RandomMask4(B, H, T_new, T - 2, true, 3);
      run.ro.additive = RandomMask4(1, H, 1, T, false, 4);
      run.ro.is_causal = true;
      run.ro.upper_left = true;
      run.ro.offsets = {static_cast<long long>(T_past), 2};
      run.Finish();
      attnkit::KVCache cache;
      REQUIRE_OK(attnkit::KVCache::Create(B, kvh, d, d, 32, &cache));
      // The cache's keys of (item, kv head) are past then the new tokens.
      TestMatrix k_all(B * T, kvh * d), v_all(B * T, kvh * d);
      for (size_t b = 0; b < B; ++b)
        for (size_t g = 0; g < kvh; ++g)
          for (size_t t = 0; t < T; ++t)
            for (size_t c = 0; c < d; ++c) {
              k_all(b * T + t, g * d + c) = t < T_past ? run.past_K((b * kvh + g) * T_past + t, c)
                                                       : run.K(b * T_new + t - T_past, g * d + c);
              v_all(b * T + t, g * d + c) = t < T_past ? run.past_V((b * kvh + g) * T_past + t, c)
                                                       : run.V(b * T_new + t - T_past, g * d + c);
            }
      REQUIRE_OK(cache.Append(k_all, v_all));
      TestMatrix out(B * T_new, H * d);
      REQUIRE_OK(attnkit::AttendCached(run.Q, cache, H, run.options, out));
      CHECK_CLOSE(out, run.Want().Y, TolFor(run.c).output);
    }
  });
}

// Per-head masks, per-item offsets and the scores path with 2 and 3 threads
// equal the single-threaded results bit for bit.
TEST_CASE("ONNX masks and scores are the same with any thread count", "[onnx][threads]") {
  Run run({3, 4, 2, 70, 150, 20, 16, 16}, 31337);
  run.ro.bool_mask = RandomMask4(3, 4, 70, 160, true, 1);
  run.ro.additive = RandomMask4(1, 4, 1, 170, false, 2);
  run.ro.is_causal = true;
  run.ro.upper_left = true;
  run.ro.offsets = {20, -5, 100};
  run.ro.nonpad = {170, 90, 140};
  run.Finish();
  for (ScoresStage stage : {ScoresStage::kNone, ScoresStage::kWeights}) {
    TestMatrix want, pk, pv, ws;
    REQUIRE_OK(run.Call(stage, &want, &pk, &pv, &ws));
    CHECK_CLOSE(want, run.Want().Y, TolFor(run.c).output);
    for (size_t threads : {size_t{2}, size_t{3}}) {
      ThreadPool pool(threads);
      run.options.pool = &pool;
      TestMatrix got, gs;
      REQUIRE_OK(run.Call(stage, &got, &pk, &pv, &gs));
      CHECK(got.SameValues(want));
      if (stage != ScoresStage::kNone) CHECK(gs.SameValues(ws));
      run.options.pool = nullptr;
    }
  }
}

}  // namespace
}  // namespace attnkit_test
