// The head-major layout of the calls on projected heads (HeadLayout::kBHSD):
//  - MultiHeadAttentionQKV (with past, present and every scores stage), its
//    forward for training and both backward overloads give, in kBHSD, the
//    numbers they give in kBSHD bit for bit (each head reads the same values
//    through a different view; the arithmetic is the same), on every compiled
//    SIMD target, on both head paths (fused and split-K), at awkward sizes
//    (T = 1, 3, 17, 64; d = 1, 5, 64; 1, 3 and 8 heads with grouped K/V heads;
//    batch 1 and 2; T_q != T_k), with every kind of option, strided views and
//    a pool of threads; outputs write nothing outside their views.
//  - One kBHSD case against the float64 reference directly.
//  - Shapes that do not fit the layout, and kBHSD given to the calls that
//    project X, are errors naming the parameter and the layout.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "src/core/plan.h"
#include "tests/backward_reference.h"
#include "tests/test_util.h"

namespace {

using namespace attnkit;
using namespace attnkit_test;

struct Shape {
  size_t batch, T_q, T_k, h, kvh, d_k, d_v;
};

std::string Describe(const Shape& s) {
  return "B " + std::to_string(s.batch) + " T_q " + std::to_string(s.T_q) + " T_k " +
         std::to_string(s.T_k) + " h " + std::to_string(s.h) + " kvh " + std::to_string(s.kvh) +
         " d_k " + std::to_string(s.d_k) + " d_v " + std::to_string(s.d_v);
}

// [batch * seq, heads * d] (kBSHD) -> [batch * heads * seq, d] (kBHSD): the
// same values, head (b, h) as rows [(b * heads + h) * seq, +seq).
TestMatrix ToHeadMajor(ConstMatrixView m, size_t batch, size_t seq, size_t heads, size_t d,
                       Layout layout = Layout::kStrided) {
  TestMatrix out(batch * heads * seq, d, layout);
  for (size_t b = 0; b < batch; ++b)
    for (size_t h = 0; h < heads; ++h)
      for (size_t t = 0; t < seq; ++t)
        for (size_t c = 0; c < d; ++c)
          out((b * heads + h) * seq + t, c) = m(b * seq + t, h * d + c);
  return out;
}

// The same for a float64 reference matrix.
ref::Mat ToHeadMajor(const ref::Mat& m, size_t batch, size_t seq, size_t heads, size_t d) {
  ref::Mat out(batch * heads * seq, d);
  for (size_t b = 0; b < batch; ++b)
    for (size_t h = 0; h < heads; ++h)
      for (size_t t = 0; t < seq; ++t)
        for (size_t c = 0; c < d; ++c)
          out((b * heads + h) * seq + t, c) = m(b * seq + t, h * d + c);
  return out;
}

// True if the kBHSD matrix holds the kBSHD matrix's values bit for bit.
bool SameHeads(ConstMatrixView bhsd, ConstMatrixView bshd, size_t batch, size_t seq, size_t heads,
               size_t d) {
  if (bhsd.rows != batch * heads * seq || bhsd.cols != d) return false;
  if (bshd.rows != batch * seq || bshd.cols != heads * d) return false;
  for (size_t b = 0; b < batch; ++b)
    for (size_t h = 0; h < heads; ++h)
      for (size_t t = 0; t < seq; ++t)
        if (std::memcmp(bhsd.Row((b * heads + h) * seq + t), bshd.Row(b * seq + t) + h * d,
                        d * sizeof(float)) != 0)
          return false;
  return true;
}

HeadConfig Config(const Shape& s, HeadLayout layout) {
  HeadConfig c;
  c.num_heads = s.h;
  c.num_kv_heads = s.kvh;
  c.d_k = s.d_k;
  c.d_v = s.d_v;
  c.layout = layout;
  return c;
}

// Q, K, V and dO of one shape in both layouts (the same values).
struct Inputs {
  TestMatrix Q, K, V, dO;      // kBSHD
  TestMatrix hQ, hK, hV, hdO;  // kBHSD
  TestMatrix past_K, past_V;   // [B*kvh*T_past, d], either layout
  static constexpr size_t kPast = 2;
  Inputs(const Shape& s, uint32_t seed)
      : Q(Random(s.batch * s.T_q, s.h * s.d_k, seed, Layout::kStrided, -2.0f, 2.0f)),
        K(Random(s.batch * s.T_k, s.kvh * s.d_k, seed + 1, Layout::kStrided, -2.0f, 2.0f)),
        V(Random(s.batch * s.T_k, s.kvh * s.d_v, seed + 2, Layout::kStrided)),
        dO(Random(s.batch * s.T_q, s.h * s.d_v, seed + 3, Layout::kStrided)),
        hQ(ToHeadMajor(Q, s.batch, s.T_q, s.h, s.d_k)),
        hK(ToHeadMajor(K, s.batch, s.T_k, s.kvh, s.d_k, Layout::kContiguous)),
        hV(ToHeadMajor(V, s.batch, s.T_k, s.kvh, s.d_v)),
        hdO(ToHeadMajor(dO, s.batch, s.T_q, s.h, s.d_v)),
        past_K(Random(s.batch * s.kvh * kPast, s.d_k, seed + 4)),
        past_V(Random(s.batch * s.kvh * kPast, s.d_v, seed + 5)) {}
};

// The masks an option kind points at, for one shape (T_k keys; with past,
// T_k + Inputs::kPast).
struct Masks {
  TestMask bool_full;       // {B, H}
  TestMatrix add_head_row;  // {1, H}, one row per head, with -inf
  Masks(const Shape& s, size_t T_k, uint32_t seed)
      : bool_full(RandomMask(s.batch * s.h * s.T_q, T_k, seed, 0.6, Layout::kStrided)),
        add_head_row(Random(s.h, T_k, seed + 1, Layout::kContiguous, -2.0f, 2.0f)) {
    for (size_t j = 0; j < T_k; ++j) bool_full(0, j) = 0;  // item 0, head 0, row 0: fully masked
    for (size_t h = 0; h < s.h; ++h) add_head_row(h, (h * 3) % T_k) = -kInf;
  }
};

struct Kind {
  const char* name;
  std::function<void(const Shape&, size_t T_k, const Masks&, AttentionOptions*)> set;
};

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {"none", [](const Shape&, size_t, const Masks&, AttentionOptions*) {}},
      {"scale 1.5 softcap 0.8",
       [](const Shape&, size_t, const Masks&, AttentionOptions* o) {
         o->scale = 1.5f;
         o->softcap = 0.8f;
       }},
      {"causal lower-right",
       [](const Shape&, size_t, const Masks&, AttentionOptions* o) { o->causal = true; }},
      {"causal upper-left, per-item offsets",
       [](const Shape& s, size_t, const Masks&, AttentionOptions* o) {
         o->causal = true;
         o->causal_alignment = CausalAlignment::kUpperLeft;
         for (size_t b = 0; b < s.batch; ++b) o->causal_offsets.push_back(b == 0 ? -1 : 2);
       }},
      {"key_lengths per item (item 0 has none)",
       [](const Shape& s, size_t T_k, const Masks&, AttentionOptions* o) {
         for (size_t b = 0; b < s.batch; ++b) o->key_lengths.push_back(b == 0 ? 0 : T_k - T_k / 3);
       }},
      {"bool mask {B, H}, additive mask {1, H} one row",
       [](const Shape& s, size_t, const Masks& m, AttentionOptions* o) {
         o->bool_mask = m.bool_full.view();
         o->bool_mask_layout = {s.batch, s.h};
         o->additive_mask = m.add_head_row.cview();
         o->additive_mask_layout = {1, s.h};
       }},
      {"everything",
       [](const Shape& s, size_t T_k, const Masks& m, AttentionOptions* o) {
         o->causal = true;
         for (size_t b = 0; b < s.batch; ++b) o->key_lengths.push_back(T_k - b);
         o->additive_mask = m.add_head_row.cview();
         o->additive_mask_layout = {1, s.h};
         o->softcap = 2.0f;
         o->scale = 0.9f;
       }},
  };
  return kinds;
}

// Every head of the following calls takes `path`, or the shapes choose.
struct ForcedPath {
  explicit ForcedPath(std::optional<internal::HeadPath> p) { internal::ForceHeadPathForTest(p); }
  ~ForcedPath() { internal::ForceHeadPathForTest(std::nullopt); }
};

// The forward (plain, then with past, present and scores) in both layouts.
void CheckForward(const Shape& s, const Inputs& in, const AttentionOptions& o,
                  const AttentionOptions& o_past) {
  const HeadConfig seq_major = Config(s, HeadLayout::kBSHD);
  const HeadConfig head_major = Config(s, HeadLayout::kBHSD);
  TestMatrix out(s.batch * s.T_q, s.h * s.d_v, Layout::kStrided);
  TestMatrix h_out(s.batch * s.h * s.T_q, s.d_v, Layout::kStrided);
  REQUIRE_OK(MultiHeadAttentionQKV(in.Q, in.K, in.V, s.batch, seq_major, o, out));
  REQUIRE_OK(MultiHeadAttentionQKV(in.hQ, in.hK, in.hV, s.batch, head_major, o, h_out));
  CHECK(SameHeads(h_out, out, s.batch, s.T_q, s.h, s.d_v));
  CHECK(h_out.PaddingIntact());
  // Past keys and values, present, and the weights kept: the same numbers.
  const size_t T_total = Inputs::kPast + s.T_k, rows = s.batch * s.kvh * T_total;
  MultiHeadExtras extras[2];
  TestMatrix present[2][2], scores[2];
  for (int l = 0; l < 2; ++l) {
    present[l][0] = TestMatrix(rows, s.d_k, Layout::kStrided);
    present[l][1] = TestMatrix(rows, s.d_v);
    scores[l] = TestMatrix(s.batch * s.h * s.T_q, T_total, Layout::kStrided);
    extras[l].past_K = in.past_K;
    extras[l].past_V = in.past_V;
    extras[l].present_K = present[l][0];
    extras[l].present_V = present[l][1];
    extras[l].scores_stage = ScoresStage::kWeights;
    extras[l].scores = scores[l];
  }
  REQUIRE_OK(MultiHeadAttentionQKV(in.Q, in.K, in.V, s.batch, seq_major, o_past, extras[0], out));
  REQUIRE_OK(
      MultiHeadAttentionQKV(in.hQ, in.hK, in.hV, s.batch, head_major, o_past, extras[1], h_out));
  CHECK(SameHeads(h_out, out, s.batch, s.T_q, s.h, s.d_v));
  CHECK(present[1][0].SameValues(present[0][0]));
  CHECK(present[1][1].SameValues(present[0][1]));
  CHECK(scores[1].SameValues(scores[0]));
  CHECK(present[1][0].PaddingIntact());
  CHECK(scores[1].PaddingIntact());
}

// The forward for training and both backward overloads in both layouts.
void CheckBackward(const Shape& s, const Inputs& in, const AttentionOptions& o) {
  const HeadConfig seq_major = Config(s, HeadLayout::kBSHD);
  const HeadConfig head_major = Config(s, HeadLayout::kBHSD);
  const size_t lse_rows = s.batch * s.h * s.T_q;
  TestMatrix out(s.batch * s.T_q, s.h * s.d_v), lse(lse_rows, 1);
  TestMatrix h_out(lse_rows, s.d_v, Layout::kStrided), h_lse(lse_rows, 1, Layout::kStrided);
  REQUIRE_OK(MultiHeadAttentionQKVForTraining(in.Q, in.K, in.V, s.batch, seq_major, o, out, lse));
  REQUIRE_OK(
      MultiHeadAttentionQKVForTraining(in.hQ, in.hK, in.hV, s.batch, head_major, o, h_out, h_lse));
  CHECK(SameHeads(h_out, out, s.batch, s.T_q, s.h, s.d_v));
  CHECK(h_lse.SameValues(lse));
  CHECK(h_out.PaddingIntact());
  TestMatrix dQ(in.Q.rows(), in.Q.cols()), dK(in.K.rows(), in.K.cols());
  TestMatrix dV(in.V.rows(), in.V.cols());
  REQUIRE_OK(MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, out, in.dO, lse, s.batch, seq_major, o,
                                           dQ, dK, dV));
  for (bool saved : {true, false}) {
    INFO("saved forward " << saved);
    TestMatrix h_dQ(lse_rows, s.d_k, Layout::kStrided);
    TestMatrix h_dK(s.batch * s.kvh * s.T_k, s.d_k, Layout::kStrided);
    TestMatrix h_dV(s.batch * s.kvh * s.T_k, s.d_v, Layout::kStrided);
    if (saved) {
      REQUIRE_OK(MultiHeadAttentionQKVBackward(in.hQ, in.hK, in.hV, h_out, in.hdO, h_lse, s.batch,
                                               head_major, o, h_dQ, h_dK, h_dV));
    } else {
      REQUIRE_OK(MultiHeadAttentionQKVBackward(in.hQ, in.hK, in.hV, in.hdO, s.batch, head_major, o,
                                               h_dQ, h_dK, h_dV));
    }
    CHECK(SameHeads(h_dQ, dQ, s.batch, s.T_q, s.h, s.d_k));
    CHECK(SameHeads(h_dK, dK, s.batch, s.T_k, s.kvh, s.d_k));
    CHECK(SameHeads(h_dV, dV, s.batch, s.T_k, s.kvh, s.d_v));
    CHECK(h_dQ.PaddingIntact());
    CHECK(h_dK.PaddingIntact());
    CHECK(h_dV.PaddingIntact());
  }
}

// T = 1, 3, 17, 64; d = 1, 5, 64; 1, 3 and 8 query heads over 1, 3 or 2 K/V
// heads (grouped by 3 and by 4); batch 1 and 2; T_q != T_k.
std::vector<Shape> Shapes() {
  std::vector<Shape> shapes;
  const size_t heads[][2] = {{1, 1}, {3, 1}, {3, 3}, {8, 2}};
  size_t k = 0;
  for (size_t T : {1, 3, 17, 64}) {
    for (size_t d : {1, 5, 64}) {
      const size_t* hk = heads[k++ % 4];
      shapes.push_back({1 + k % 2, T, T, hk[0], hk[1], d, d});
    }
  }
  shapes.push_back({2, 3, 17, 8, 2, 5, 1});
  shapes.push_back({1, 17, 64, 3, 1, 64, 5});
  shapes.push_back({2, 64, 3, 8, 8, 1, 64});
  return shapes;
}

TEST_CASE("bhsd gives the numbers of bshd, forward and backward, on every target",
          "[multihead][layout]") {
  uint32_t seed = 9100;
  for (const Shape& s : Shapes()) {
    const Inputs in(s, seed);
    const Masks masks(s, s.T_k, seed + 10), past_masks(s, s.T_k + Inputs::kPast, seed + 20);
    seed += 30;
    ForEachTarget([&](int64_t) {
      for (const std::optional<internal::HeadPath> path :
           {std::optional<internal::HeadPath>(), std::optional(internal::HeadPath::kFused),
            std::optional(internal::HeadPath::kSplitK)}) {
        const ForcedPath forced(path);
        for (const Kind& kind : Kinds()) {
          INFO(Describe(s) << ", " << kind.name << ", path "
                           << (path ? (*path == internal::HeadPath::kFused ? "fused" : "split-K")
                                    : "chosen"));
          AttentionOptions o, o_past;
          kind.set(s, s.T_k, masks, &o);
          kind.set(s, s.T_k + Inputs::kPast, past_masks, &o_past);
          CheckForward(s, in, o, o_past);
          // The backward has one path: run it once per kind.
          if (!path) CheckBackward(s, in, o);
        }
      }
    });
  }
}

TEST_CASE("bhsd with a pool of threads gives the numbers of one thread", "[multihead][layout]") {
  ThreadPool pool(3);
  const Shape s{2, 33, 70, 8, 2, 5, 7};
  const Inputs in(s, 9500);
  const HeadConfig c = Config(s, HeadLayout::kBHSD);
  AttentionOptions o;
  o.causal = true;
  ForEachTarget([&](int64_t) {
    const size_t rows = s.batch * s.h * s.T_q, kv_rows = s.batch * s.kvh * s.T_k;
    TestMatrix out(rows, s.d_v), lse(rows, 1), dQ(rows, s.d_k), dK(kv_rows, s.d_k);
    TestMatrix dV(kv_rows, s.d_v);
    REQUIRE_OK(MultiHeadAttentionQKVForTraining(in.hQ, in.hK, in.hV, s.batch, c, o, out, lse));
    REQUIRE_OK(MultiHeadAttentionQKVBackward(in.hQ, in.hK, in.hV, out, in.hdO, lse, s.batch, c, o,
                                             dQ, dK, dV));
    AttentionOptions threaded = o;
    threaded.pool = &pool;
    TestMatrix out2(rows, s.d_v), lse2(rows, 1), dQ2(rows, s.d_k), dK2(kv_rows, s.d_k);
    TestMatrix dV2(kv_rows, s.d_v), plain(rows, s.d_v);
    REQUIRE_OK(
        MultiHeadAttentionQKVForTraining(in.hQ, in.hK, in.hV, s.batch, c, threaded, out2, lse2));
    REQUIRE_OK(MultiHeadAttentionQKVBackward(in.hQ, in.hK, in.hV, out, in.hdO, lse, s.batch, c,
                                             threaded, dQ2, dK2, dV2));
    REQUIRE_OK(MultiHeadAttentionQKV(in.hQ, in.hK, in.hV, s.batch, c, threaded, plain));
    CHECK(out2.SameValues(out));
    CHECK(lse2.SameValues(lse));
    CHECK(dQ2.SameValues(dQ));
    CHECK(dK2.SameValues(dK));
    CHECK(dV2.SameValues(dV));
    CHECK(plain.SameValues(out));
  });
}

TEST_CASE("bhsd against the float64 reference", "[multihead][layout]") {
  // Two items, 6 query heads over 2 K/V heads, per-item key lengths, causal.
  const Shape s{2, 9, 13, 6, 2, 5, 3};
  const Inputs in(s, 9700);
  AttentionOptions o;
  o.causal = true;
  o.key_lengths = {13, 8};
  const ref::Mat q = in.Q.ToRef(), k = in.K.ToRef(), v = in.V.ToRef(), dout = in.dO.ToRef();
  const bwd_ref::MultiForward f = bwd_ref::MultiHeadForward(q, k, v, s.batch, s.h, s.kvh, o);
  const bwd_ref::Gradients want = bwd_ref::MultiHeadBackward(q, k, v, dout, s.batch, s.h, s.kvh, o);
  const HeadConfig c = Config(s, HeadLayout::kBHSD);
  ForEachTarget([&](int64_t) {
    const size_t rows = s.batch * s.h * s.T_q, kv_rows = s.batch * s.kvh * s.T_k;
    TestMatrix out(rows, s.d_v), dQ(rows, s.d_k), dK(kv_rows, s.d_k), dV(kv_rows, s.d_v);
    REQUIRE_OK(MultiHeadAttentionQKV(in.hQ, in.hK, in.hV, s.batch, c, o, out));
    REQUIRE_OK(
        MultiHeadAttentionQKVBackward(in.hQ, in.hK, in.hV, in.hdO, s.batch, c, o, dQ, dK, dV));
    // float32 rounding ~1e-6 of the largest value; a wrong head or row ~1e-1.
    const auto bound = [](const ref::Mat& m) { return Tol{3e-5 * std::max(1.0, m.MaxAbs()), 0.0}; };
    CHECK_CLOSE(out, ToHeadMajor(f.O, s.batch, s.T_q, s.h, s.d_v), bound(f.O));
    CHECK_CLOSE(dQ, ToHeadMajor(want.dQ, s.batch, s.T_q, s.h, s.d_k), bound(want.dQ));
    CHECK_CLOSE(dK, ToHeadMajor(want.dK, s.batch, s.T_k, s.kvh, s.d_k), bound(want.dK));
    CHECK_CLOSE(dV, ToHeadMajor(want.dV, s.batch, s.T_k, s.kvh, s.d_v), bound(want.dV));
  });
}

TEST_CASE("bhsd shapes that do not fit are errors naming the parameter and the layout",
          "[multihead][layout][errors]") {
  // Two items, 4 query heads over 2 K/V heads, T_q = 3, T_k = 5, d_k = 4, d_v = 2.
  const size_t B = 2, h = 4, kvh = 2, T_q = 3, T_k = 5, d_k = 4, d_v = 2;
  const TestMatrix Q = Random(B * h * T_q, d_k, 1), K = Random(B * kvh * T_k, d_k, 2);
  const TestMatrix V = Random(B * kvh * T_k, d_v, 3), dO = Random(B * h * T_q, d_v, 4);
  HeadConfig c;
  c.num_heads = h;
  c.num_kv_heads = kvh;
  c.layout = HeadLayout::kBHSD;
  AttentionOptions o;
  TestMatrix out(B * h * T_q, d_v), lse(B * h * T_q, 1), dQ(B * h * T_q, d_k);
  TestMatrix dK(B * kvh * T_k, d_k), dV(B * kvh * T_k, d_v);
  REQUIRE_OK(MultiHeadAttentionQKV(Q, K, V, B, c, o, out));
  REQUIRE_OK(MultiHeadAttentionQKVForTraining(Q, K, V, B, c, o, out, lse));
  REQUIRE_OK(MultiHeadAttentionQKVBackward(Q, K, V, out, dO, lse, B, c, o, dQ, dK, dV));
  const auto layout_error = [](ErrorCode code, const char* name) {
    return Err(code).Name(name).Name("bhsd");
  };
  // Rows that are not batch * heads * T: the layout says how they are counted.
  const TestMatrix Q7 = Random(7, d_k, 5), K9 = Random(9, d_k, 6);
  CHECK_ERROR(MultiHeadAttentionQKV(Q7, K, V, B, c, o, out),
              layout_error(ErrorCode::kShapeMismatch, "Q").Num(B * h).Num(7));
  CHECK_ERROR(MultiHeadAttentionQKV(Q, K9, V, B, c, o, out),
              layout_error(ErrorCode::kShapeMismatch, "K").Num(B * kvh).Num(9));
  // Columns other than one head's, e.g. the concatenated heads of kBSHD.
  const TestMatrix K_wide = Random(B * kvh * T_k, kvh * d_k, 7);
  CHECK_ERROR(MultiHeadAttentionQKV(Q, K_wide, V, B, c, o, out),
              layout_error(ErrorCode::kShapeMismatch, "K").Num(d_k).Num(kvh * d_k));
  const TestMatrix V_short = Random(B * kvh * (T_k - 1), d_v, 8);
  CHECK_ERROR(MultiHeadAttentionQKV(Q, K, V_short, B, c, o, out),
              layout_error(ErrorCode::kShapeMismatch, "V").Num(B * kvh * T_k));
  TestMatrix out_bshd(B * T_q, h * d_v);
  CHECK_ERROR(MultiHeadAttentionQKV(Q, K, V, B, c, o, out_bshd),
              layout_error(ErrorCode::kShapeMismatch, "out").Num(B * h * T_q));
  HeadConfig wrong_dk = c;
  wrong_dk.d_k = 3;
  CHECK_ERROR(MultiHeadAttentionQKV(Q, K, V, B, wrong_dk, o, out),
              layout_error(ErrorCode::kShapeMismatch, "Q").Num(3).Num(d_k));
  // The forward for training and the backward: out, O, dO and lse.
  TestMatrix lse_short(B * T_q, 1);
  CHECK_ERROR(MultiHeadAttentionQKVForTraining(Q, K, V, B, c, o, out_bshd, lse),
              layout_error(ErrorCode::kShapeMismatch, "out"));
  CHECK_ERROR(MultiHeadAttentionQKVForTraining(Q, K, V, B, c, o, out, lse_short),
              Err(ErrorCode::kShapeMismatch).Name("lse").Num(B * h * T_q));
  const TestMatrix dO_bshd = Random(B * T_q, h * d_v, 9);
  CHECK_ERROR(MultiHeadAttentionQKVBackward(Q, K, V, out, dO_bshd, lse, B, c, o, dQ, dK, dV),
              layout_error(ErrorCode::kShapeMismatch, "dO"));
  CHECK_ERROR(MultiHeadAttentionQKVBackward(Q, K, V, dO_bshd, B, c, o, dQ, dK, dV),
              layout_error(ErrorCode::kShapeMismatch, "dO"));
  CHECK_ERROR(MultiHeadAttentionQKVBackward(Q, K, V, out_bshd, dO, lse, B, c, o, dQ, dK, dV),
              layout_error(ErrorCode::kShapeMismatch, "O"));
  TestMatrix dK_bshd(B * T_k, kvh * d_k);
  CHECK_ERROR(MultiHeadAttentionQKVBackward(Q, K, V, out, dO, lse, B, c, o, dQ, dK_bshd, dV),
              Err(ErrorCode::kShapeMismatch).Name("dK"));
  // A value that is no layout.
  HeadConfig bad = c;
  bad.layout = static_cast<HeadLayout>(7);
  CHECK_ERROR(MultiHeadAttentionQKV(Q, K, V, B, bad, o, out),
              Err(ErrorCode::kInvalidArgument).Name("layout").Num(7));
  CHECK_ERROR(MultiHeadAttentionQKVBackward(Q, K, V, dO, B, bad, o, dQ, dK, dV),
              Err(ErrorCode::kInvalidArgument).Name("layout").Num(7));
}

TEST_CASE("the calls that project X take kBSHD only", "[multihead][layout][errors]") {
  const size_t B = 1, T = 3, d_model = 8, h = 2;
  const TestMatrix X = Random(B * T, d_model, 1), W = Random(d_model, d_model, 2);
  HeadConfig c;
  c.num_heads = h;
  c.layout = HeadLayout::kBHSD;
  AttentionOptions o;
  TestMatrix out(B * T, d_model);
  const MultiHeadWeights weights{W, W, W, ConstMatrixView()};
  CHECK_ERROR(MultiHeadAttention(X, B, weights, c, o, out),
              Err(ErrorCode::kInvalidArgument).Name("layout").Name("kBSHD"));
  TestMatrix dX(B * T, d_model), dW_Q(d_model, d_model), dW_K(d_model, d_model);
  TestMatrix dW_V(d_model, d_model);
  const TestMatrix dOut = Random(B * T, d_model, 3);
  CHECK_ERROR(MultiHeadAttentionBackward(X, B, weights, c, o, dOut,
                                         MultiHeadGradients{dX, dW_Q, dW_K, dW_V, MatrixView()}),
              Err(ErrorCode::kInvalidArgument).Name("layout").Name("kBSHD"));
  KVCache cache;
  REQUIRE_OK(KVCache::Create(B, h, d_model / h, d_model / h, 8, &cache));
  DecodeOptions decode;
  CHECK_ERROR(MultiHeadDecode(X, weights, c, decode, &cache, out),
              Err(ErrorCode::kInvalidArgument).Name("layout").Name("kBSHD"));
  CHECK(cache.size() == 0);
  c.layout = HeadLayout::kBSHD;
  CHECK_OK(MultiHeadAttention(X, B, weights, c, o, out));
}

}  // namespace
