// Packed weights (packed_weights.h): MultiHeadAttention with weights packed
// once equals the unpacked call bit for bit on every target (a pack made under
// one target and used under another too), over awkward sizes, grouped heads,
// batches, with and without W_O, with a thread pool; the pack is a copy; its
// errors name the parameter.
#include <string>
#include <utility>
#include <vector>

#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::AttentionOptions;
using attnkit::HeadConfig;
using attnkit::MultiHeadWeights;
using attnkit::PackedMultiHeadWeights;

struct LayerShape {
  size_t d_model, h, kvh, d_k, d_v, d_out, batch, T;  // d_out 0: no W_O
};

std::string Describe(const LayerShape& s) {
  std::ostringstream os;
  os << "d_model=" << s.d_model << " h=" << s.h << " kvh=" << s.kvh << " d_k=" << s.d_k
     << " d_v=" << s.d_v << " d_out=" << s.d_out << " batch=" << s.batch << " T=" << s.T;
  return os.str();
}

std::vector<LayerShape> LayerShapes() {
  std::vector<LayerShape> shapes;
  // d_model 1, 7, 64, 96; 1, 3 and 8 heads (grouped K/V heads where they
  // divide); with and without W_O; one item and a batch; rows below and
  // above the count from which the unpacked call packs W itself (128).
  for (size_t d_model : {size_t{1}, size_t{7}, size_t{64}, size_t{96}}) {
    for (size_t h : {size_t{1}, size_t{3}, size_t{8}}) {
      const size_t kvh = h == 8 ? 2 : h == 3 ? 1 : 1;
      const size_t d_k = d_model % h == 0 ? d_model / h : 5;
      const size_t d_v = d_k == 1 ? 3 : d_k;
      shapes.push_back({d_model, h, kvh, d_k, d_v, d_model, 1, 9});
      shapes.push_back({d_model, h, h, d_k, d_v, 0, 3, 5});
    }
    shapes.push_back({d_model, 4, 2, 16, 8, 33, 2, 67});  // 134 rows: the unpacked call packs
  }
  return shapes;
}

struct Layer {
  TestMatrix X, WQ, WK, WV, WO;
  HeadConfig config;
  MultiHeadWeights weights;
  Layer(const LayerShape& s, uint32_t seed, Layout layout)
      : X(Random(s.batch * s.T, s.d_model, seed, layout)),
        WQ(Random(s.d_model, s.h * s.d_k, seed + 1, layout, -0.5f, 0.5f)),
        WK(Random(s.d_model, s.kvh * s.d_k, seed + 2, layout, -0.5f, 0.5f)),
        WV(Random(s.d_model, s.kvh * s.d_v, seed + 3, layout, -0.5f, 0.5f)),
        WO(s.d_out ? Random(s.h * s.d_v, s.d_out, seed + 4, layout, -0.5f, 0.5f) : TestMatrix()),
        config{s.h, s.kvh, s.d_k, s.d_v},
        weights{WQ, WK, WV, s.d_out ? WO.cview() : ConstMatrixView()} {}
  size_t out_cols(const LayerShape& s) const { return s.d_out ? s.d_out : s.h * s.d_v; }
};

TEST_CASE("MultiHeadAttention with packed weights equals the unpacked call bit for bit",
          "[multihead][packed]") {
  const std::vector<LayerShape> shapes = LayerShapes();
  uint32_t seed = 9100;
  for (const LayerShape& s : shapes) {
    seed += 10;
    for (Layout layout : AllLayouts()) {
      INFO(Describe(s) << " " << LayoutName(layout));
      const Layer l(s, seed, layout);
      // Packed once, under the best target: read by every other target too.
      PackedMultiHeadWeights best;
      REQUIRE_OK(attnkit::PackMultiHeadWeights(l.weights, l.config, &best));
      CHECK(best.d_model() == s.d_model);
      CHECK(best.d_out() == l.out_cols(s));
      CHECK(best.config().num_kv_heads == s.kvh);
      ForEachTarget([&](int64_t) {
        PackedMultiHeadWeights here;  // packed under this target
        REQUIRE_OK(attnkit::PackMultiHeadWeights(l.weights, l.config, &here));
        for (const bool causal : {false, true}) {
          INFO("causal=" << causal);
          AttentionOptions o;
          o.causal = causal;
          TestMatrix want(s.batch * s.T, l.out_cols(s), layout);
          REQUIRE_OK(attnkit::MultiHeadAttention(l.X, s.batch, l.weights, l.config, o, want));
          for (const PackedMultiHeadWeights* p : {&best, &here}) {
            TestMatrix got(s.batch * s.T, l.out_cols(s), layout);
            REQUIRE_OK(attnkit::MultiHeadAttention(l.X, s.batch, *p, l.config, o, got));
            CHECK(got.SameValues(want));
            CHECK(got.PaddingIntact());
          }
        }
      });
    }
  }
}

TEST_CASE("Packed weights: a copy, shared by threads, derived config fields accepted",
          "[multihead][packed]") {
  const LayerShape s{64, 8, 8, 8, 8, 64, 2, 80};
  TestMatrix X = Random(s.batch * s.T, s.d_model, 9301);
  Layer l(s, 9310, Layout::kContiguous);
  PackedMultiHeadWeights packed;
  REQUIRE_OK(attnkit::PackMultiHeadWeights(l.weights, HeadConfig{8, 0, 0, 0}, &packed));
  CHECK(packed.config().num_kv_heads == 8);
  CHECK(packed.config().d_k == 8);
  TestMatrix want(s.batch * s.T, s.d_out);
  REQUIRE_OK(attnkit::MultiHeadAttention(X, s.batch, l.weights, l.config, {}, want));
  // The caller's weights may change after packing: the pack holds a copy.
  for (size_t r = 0; r < s.d_model; ++r) l.WQ(r, 0) += 1.0f;
  TestMatrix got(s.batch * s.T, s.d_out);
  REQUIRE_OK(attnkit::MultiHeadAttention(X, s.batch, packed, HeadConfig{8, 0, 0, 0}, {}, got));
  CHECK(got.SameValues(want));
  // Read by a pool's threads: the same values (tasks of fixed size).
  attnkit::ThreadPool pool(3);
  AttentionOptions o;
  o.pool = &pool;
  TestMatrix threaded(s.batch * s.T, s.d_out);
  REQUIRE_OK(attnkit::MultiHeadAttention(X, s.batch, packed, l.config, o, threaded));
  CHECK(threaded.SameValues(want));
  // A move leaves the source empty and the destination whole.
  PackedMultiHeadWeights moved = std::move(packed);
  CHECK(packed.empty());  // NOLINT(bugprone-use-after-move): documented as empty
  TestMatrix again(s.batch * s.T, s.d_out);
  REQUIRE_OK(attnkit::MultiHeadAttention(X, s.batch, moved, l.config, {}, again));
  CHECK(again.SameValues(want));
}

TEST_CASE("Packed weights: errors name the parameter", "[multihead][packed][errors]") {
  const LayerShape s{12, 3, 3, 4, 4, 6, 1, 5};
  const Layer l(s, 9400, Layout::kContiguous);
  TestMatrix out(s.T, s.d_out);
  PackedMultiHeadWeights packed;
  CHECK_ERROR(attnkit::MultiHeadAttention(l.X, 1, packed, l.config, {}, out),
              Err(ErrorCode::kInvalidArgument).Name("weights"));
  REQUIRE_OK(attnkit::PackMultiHeadWeights(l.weights, l.config, &packed));
  // X of another d_model.
  const TestMatrix X8 = Random(s.T, 8, 9410);
  CHECK_ERROR(attnkit::MultiHeadAttention(X8, 1, packed, l.config, {}, out),
              Err(ErrorCode::kShapeMismatch).Name("X").Num(12).Num(8));
  // A config that resolves to another one than the pack's.
  CHECK_ERROR(attnkit::MultiHeadAttention(l.X, 1, packed, HeadConfig{4, 0, 0, 0}, {}, out),
              Err(ErrorCode::kInvalidArgument).Name("num_heads").Num(3).Num(4));
  CHECK_ERROR(attnkit::MultiHeadAttention(l.X, 1, packed, HeadConfig{3, 1, 4, 4}, {}, out),
              Err(ErrorCode::kInvalidArgument).Name("num_kv_heads").Num(3).Num(1));
  CHECK_ERROR(attnkit::MultiHeadAttention(l.X, 1, packed, HeadConfig{3, 3, 2, 4}, {}, out),
              Err(ErrorCode::kInvalidArgument).Name("d_k").Num(4).Num(2));
  CHECK_ERROR(attnkit::MultiHeadAttention(l.X, 1, packed, HeadConfig{3, 3, 4, 5}, {}, out),
              Err(ErrorCode::kInvalidArgument).Name("d_v").Num(4).Num(5));
  // The call's own shapes.
  TestMatrix wrong_out(s.T, s.d_out + 1);
  CHECK_ERROR(attnkit::MultiHeadAttention(l.X, 1, packed, l.config, {}, wrong_out),
              Err(ErrorCode::kShapeMismatch).Name("out"));
  CHECK_ERROR(attnkit::MultiHeadAttention(l.X, 2, packed, l.config, {}, out),
              Err(ErrorCode::kShapeMismatch).Name("X"));
  TestMatrix nan_X = Random(s.T, s.d_model, 9420);
  nan_X(2, 3) = kNaN;
  CHECK_ERROR(attnkit::MultiHeadAttention(nan_X, 1, packed, l.config, {}, out),
              Err(ErrorCode::kNonFinite).Name("X"));
  // Packing checks the weights as the unpacked call does, and keeps *packed.
  const TestMatrix WK_wide = Random(s.d_model, 16, 9430);
  CHECK_ERROR(
      attnkit::PackMultiHeadWeights(MultiHeadWeights{l.WQ, WK_wide, l.WV, l.WO}, l.config, &packed),
      Err(ErrorCode::kShapeMismatch).Name("W_K").Num(16).Num(12));
  TestMatrix WV_inf = Random(s.d_model, 12, 9440);
  WV_inf(1, 1) = kInf;
  CHECK_ERROR(
      attnkit::PackMultiHeadWeights(MultiHeadWeights{l.WQ, l.WK, WV_inf, l.WO}, l.config, &packed),
      Err(ErrorCode::kNonFinite).Name("W_V"));
  CHECK_ERROR(attnkit::PackMultiHeadWeights(l.weights, HeadConfig{5, 0, 0, 0}, &packed),
              Err(ErrorCode::kInvalidArgument).Name("num_heads").Num(5));
  CHECK_ERROR(attnkit::PackMultiHeadWeights(MultiHeadWeights{}, l.config, &packed),
              Err(ErrorCode::kInvalidArgument).Or(ErrorCode::kShapeMismatch).Name("W_Q"));
  CHECK_OK(attnkit::MultiHeadAttention(l.X, 1, packed, l.config, {}, out));
}

TEST_CASE("Packed weights: many packs made and freed", "[multihead][packed]") {
  // Under the sanitizers, a leak or a double free of a pack's memory fails here.
  const LayerShape s{32, 4, 2, 8, 8, 16, 1, 3};
  const Layer l(s, 9500, Layout::kContiguous);
  TestMatrix out(s.T, s.d_out), want(s.T, s.d_out);
  REQUIRE_OK(attnkit::MultiHeadAttention(l.X, 1, l.weights, l.config, {}, want));
  PackedMultiHeadWeights kept;
  for (int i = 0; i < 1000; ++i) {
    PackedMultiHeadWeights p;
    REQUIRE_OK(attnkit::PackMultiHeadWeights(l.weights, l.config, &p));
    if (i % 100 == 0) {
      REQUIRE_OK(attnkit::MultiHeadAttention(l.X, 1, p, l.config, {}, out));
      CHECK(out.SameValues(want));
    }
    kept = std::move(p);  // frees the previous pack
  }
  CHECK(kept.size() >= 3 * 32 * 16);
}

TEST_CASE("PackMatrices: each matrix in panels, an empty one left empty", "[packed]") {
  const TestMatrix a = Random(5, 37, 9401), b = Random(3, 1, 9402, Layout::kStrided);
  attnkit::PackedMatrices packed;
  REQUIRE_OK(attnkit::PackMatrices({a, attnkit::ConstMatrixView(), b}, &packed));
  REQUIRE(packed.count() == 3);
  CHECK(packed[1].empty());
  size_t floats = 0;
  for (const size_t i : {size_t{0}, size_t{2}}) {
    const attnkit::PanelMatrix& p = packed[i];
    const TestMatrix& m = i == 0 ? a : b;
    REQUIRE(p.rows == m.rows());
    REQUIRE(p.cols == m.cols());
    const size_t w = p.panel_width;
    for (size_t k = 0; k < p.rows; ++k) {
      for (size_t j = 0; j < p.cols; ++j)
        CHECK(p.panels[j / w * p.rows * w + k * w + j % w] == m(k, j));
    }
    floats += p.rows * ((p.cols + w - 1) / w * w);
  }
  CHECK(packed.size() == floats);
  // A matrix that is not one: named.
  const float x = 1;
  const attnkit::Status s = attnkit::PackMatrices({attnkit::ConstMatrixView(&x, 1, 2, 1)}, &packed);
  CHECK(s.code() == attnkit::ErrorCode::kInvalidArgument);
  CHECK(s.parameter() == "matrices");
  CHECK(packed.count() == 3);  // kept
}

}  // namespace
}  // namespace attnkit_test
