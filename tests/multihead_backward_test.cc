// The backward pass of multi-head and self-attention (backward.h).
//  - The float64 multi-head reference (backward_reference.h) with the
//    projections and W_O against central finite differences of its forward.
//  - MultiHeadAttentionQKVForTraining and both MultiHeadAttentionQKVBackward
//    overloads against the reference on every compiled SIMD target: batch,
//    grouped K/V heads, awkward sizes, per-item key lengths (0 included),
//    bool and additive masks in every broadcast shape, both causal
//    alignments with per-item offsets, softcap, huge logits; fully masked
//    rows and unseen keys give exactly 0.
//  - Threads (pools of 2 and 3) bit-identical to one thread.
//  - MultiHeadAttentionBackward (W_O present and absent) and
//    SelfAttentionBackward against the reference.
//  - Bad input returns a Status naming the parameter.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/backward_reference.h"
#include "tests/test_util.h"

namespace {

using namespace attnkit;
using namespace attnkit_test;
using ref::Mat;

struct Shape {
  size_t batch, T_q, T_k, h, kvh, d_k, d_v;
};

// The masks of one shape in every broadcast layout.
struct MultiMasks {
  TestMask bool_full;       // {B, H}, [B*H*T_q, T_k]
  TestMask bool_item;       // {B, 1}
  TestMask bool_head;       // {1, H}
  TestMask bool_shared;     // {1, 1}, [T_q, T_k - 1]
  TestMask bool_row;        // {B, H}, one row per block, [B*H, T_k]
  TestMatrix add_full;      // {B, H} with some -inf
  TestMatrix add_head_row;  // {1, H}, one row per head
  MultiMasks(const Shape& s, uint32_t seed)
      : bool_full(RandomMask(s.batch * s.h * s.T_q, s.T_k, seed, 0.6, Layout::kStrided)),
        bool_item(RandomMask(s.batch * s.T_q, s.T_k, seed + 1, 0.7)),
        bool_head(RandomMask(s.h * s.T_q, s.T_k, seed + 2, 0.7)),
        bool_shared(RandomMask(s.T_q, s.T_k > 1 ? s.T_k - 1 : 1, seed + 3, 0.7)),
        bool_row(RandomMask(s.batch * s.h, s.T_k, seed + 4, 0.7)),
        add_full(Random(s.batch * s.h * s.T_q, s.T_k, seed + 5, Layout::kStrided, -2.0f, 2.0f)),
        add_head_row(Random(s.h, s.T_k, seed + 6, Layout::kContiguous, -2.0f, 2.0f)) {
    for (size_t j = 0; j < s.T_k; ++j) bool_full(0, j) = 0;  // item 0, head 0, row 0
    for (size_t i = 0; i < add_full.rows(); ++i) add_full(i, (i * 3) % s.T_k) = -kInf;
  }
};

struct Kind {
  const char* name;
  std::function<void(const Shape&, const MultiMasks&, AttentionOptions*)> set;
};

std::vector<size_t> KeyLengths(const Shape& s) {
  std::vector<size_t> lengths;
  for (size_t b = 0; b < s.batch; ++b) lengths.push_back(b == 0 ? 0 : s.T_k - (b * s.T_k) / 4);
  return lengths;
}

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {"none", [](const Shape&, const MultiMasks&, AttentionOptions*) {}},
      {"scale 1.5 softcap 0.8",
       [](const Shape&, const MultiMasks&, AttentionOptions* o) {
         o->scale = 1.5f;
         o->softcap = 0.8f;
       }},
      {"causal lower-right",
       [](const Shape&, const MultiMasks&, AttentionOptions* o) { o->causal = true; }},
      {"causal upper-left, per-item offsets -2, 0, 3",
       [](const Shape& s, const MultiMasks&, AttentionOptions* o) {
         o->causal = true;
         o->causal_alignment = CausalAlignment::kUpperLeft;
         const int64_t offsets[] = {-2, 0, 3};
         for (size_t b = 0; b < s.batch; ++b) o->causal_offsets.push_back(offsets[b % 3]);
       }},
      {"key_lengths per item (item 0 has none)",
       [](const Shape& s, const MultiMasks&, AttentionOptions* o) {
         o->key_lengths = KeyLengths(s);
       }},
      {"bool mask {B, H}",
       [](const Shape& s, const MultiMasks& m, AttentionOptions* o) {
         o->bool_mask = m.bool_full.view();
         o->bool_mask_layout = {s.batch, s.h};
       }},
      {"bool mask {B, 1}",
       [](const Shape& s, const MultiMasks& m, AttentionOptions* o) {
         o->bool_mask = m.bool_item.view();
         o->bool_mask_layout = {s.batch, 1};
       }},
      {"bool mask {1, H}",
       [](const Shape& s, const MultiMasks& m, AttentionOptions* o) {
         o->bool_mask = m.bool_head.view();
         o->bool_mask_layout = {1, s.h};
       }},
      {"bool mask {1, 1}, short", [](const Shape&, const MultiMasks& m,
                                     AttentionOptions* o) { o->bool_mask = m.bool_shared.view(); }},
      {"bool mask {B, H}, one row",
       [](const Shape& s, const MultiMasks& m, AttentionOptions* o) {
         o->bool_mask = m.bool_row.view();
         o->bool_mask_layout = {s.batch, s.h};
       }},
      {"additive mask {B, H} with -inf",
       [](const Shape& s, const MultiMasks& m, AttentionOptions* o) {
         o->additive_mask = m.add_full.cview();
         o->additive_mask_layout = {s.batch, s.h};
       }},
      {"additive mask {1, H}, one row",
       [](const Shape& s, const MultiMasks& m, AttentionOptions* o) {
         o->additive_mask = m.add_head_row.cview();
         o->additive_mask_layout = {1, s.h};
       }},
      {"everything",
       [](const Shape& s, const MultiMasks& m, AttentionOptions* o) {
         o->causal = true;
         o->key_lengths = KeyLengths(s);
         o->bool_mask = m.bool_item.view();
         o->bool_mask_layout = {s.batch, 1};
         o->additive_mask = m.add_full.cview();
         o->additive_mask_layout = {s.batch, s.h};
         o->softcap = 2.0f;
         o->scale = 0.9f;
       }},
  };
  return kinds;
}

HeadConfig Config(const Shape& s) {
  HeadConfig c;
  c.num_heads = s.h;
  c.num_kv_heads = s.kvh;
  c.d_k = s.d_k;
  c.d_v = s.d_v;
  return c;
}

// |got - want| <= tol * max(1, max |want|) everywhere; exactly 0 where
// zero(r, c) says the gradient is structurally 0.
void CheckClose(const char* name, ConstMatrixView got, const Mat& want, double tol,
                const std::function<bool(size_t, size_t)>& zero) {
  INFO(name);
  REQUIRE(got.rows == want.rows);
  REQUIRE(got.cols == want.cols);
  const double bound = tol * std::max(1.0, want.MaxAbs());
  double worst = 0.0;
  size_t bad = 0, nonzero = 0;
  for (size_t r = 0; r < want.rows; ++r) {
    for (size_t c = 0; c < want.cols; ++c) {
      const double g = got(r, c);
      if (!std::isfinite(g)) ++bad;
      worst = std::max(worst, std::abs(g - want(r, c)));
      if (zero(r, c) && g != 0.0) ++nonzero;
    }
  }
  INFO("worst " << worst << ", bound " << bound << ", non-finite " << bad
                << ", structurally zero but not 0: " << nonzero);
  CHECK(bad == 0);
  CHECK(worst <= bound);
  CHECK(nonzero == 0);
}

// Which query rows see some key (per (item, head) row of lse) and which keys
// some head of their group sees (per (item, kv head) key).
struct Seen {
  std::vector<bool> row;  // [B*h*T_q]
  std::vector<bool> key;  // [B*kvh*T_k]
};
Seen SeenOf(const Shape& s, const AttentionOptions& o) {
  Seen seen{std::vector<bool>(s.batch * s.h * s.T_q), std::vector<bool>(s.batch * s.kvh * s.T_k)};
  for (size_t b = 0; b < s.batch; ++b) {
    for (size_t head = 0; head < s.h; ++head) {
      const AttentionOptions ho = bwd_ref::HeadOptions(o, b, head);
      const size_t g = head / (s.h / s.kvh);
      for (size_t i = 0; i < s.T_q; ++i) {
        for (size_t j = 0; j < s.T_k; ++j) {
          if (!bwd_ref::Sees(ho, s.T_q, s.T_k, i, j)) continue;
          seen.row[(b * s.h + head) * s.T_q + i] = true;
          seen.key[(b * s.kvh + g) * s.T_k + j] = true;
        }
      }
    }
  }
  return seen;
}

struct Inputs {
  TestMatrix Q, K, V, dO;
  Inputs(const Shape& s, uint32_t seed, float range = 2.0f)
      : Q(Random(s.batch * s.T_q, s.h * s.d_k, seed, Layout::kStrided, -range, range)),
        K(Random(s.batch * s.T_k, s.kvh * s.d_k, seed + 1, Layout::kStrided, -range, range)),
        V(Random(s.batch * s.T_k, s.kvh * s.d_v, seed + 2, Layout::kStrided)),
        dO(Random(s.batch * s.T_q, s.h * s.d_v, seed + 3, Layout::kStrided)) {}
};

// The training forward and both backward overloads against the reference.
void CheckMulti(const Shape& s, const Inputs& in, const AttentionOptions& o, double tol) {
  const HeadConfig c = Config(s);
  const Mat q = in.Q.ToRef(), k = in.K.ToRef(), v = in.V.ToRef(), dout = in.dO.ToRef();
  const bwd_ref::MultiForward f = bwd_ref::MultiHeadForward(q, k, v, s.batch, s.h, s.kvh, o);
  const bwd_ref::Gradients want = bwd_ref::MultiHeadBackward(q, k, v, dout, s.batch, s.h, s.kvh, o);
  const Seen seen = SeenOf(s, o);
  auto masked_o = [&](size_t r, size_t col) {
    const size_t b = r / s.T_q, i = r % s.T_q, head = col / s.d_v;
    return !seen.row[(b * s.h + head) * s.T_q + i];
  };
  auto unseen_k = [&](size_t d) {
    return [&, d](size_t r, size_t col) {
      const size_t b = r / s.T_k, j = r % s.T_k, g = col / d;
      return !seen.key[(b * s.kvh + g) * s.T_k + j];
    };
  };
  TestMatrix out(s.batch * s.T_q, s.h * s.d_v, Layout::kStrided);
  TestMatrix lse(s.batch * s.h * s.T_q, 1, Layout::kStrided);
  REQUIRE_OK(MultiHeadAttentionQKVForTraining(in.Q, in.K, in.V, s.batch, c, o, out, lse));
  CHECK(out.PaddingIntact());
  CheckClose("O", out, f.O, tol / 3, masked_o);
  for (size_t r = 0; r < lse.rows(); ++r) {
    INFO("lse row " << r);
    if (!seen.row[r]) {
      CHECK(lse(r, 0) == -kInf);
    } else {
      CHECK(std::abs(lse(r, 0) - f.lse(r, 0)) <= tol * std::max(1.0, std::abs(f.lse(r, 0))));
    }
  }
  TestMatrix dQ(in.Q.rows(), in.Q.cols(), Layout::kStrided);
  TestMatrix dK(in.K.rows(), in.K.cols(), Layout::kStrided);
  TestMatrix dV(in.V.rows(), in.V.cols(), Layout::kStrided);
  REQUIRE_OK(
      MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, out, in.dO, lse, s.batch, c, o, dQ, dK, dV));
  auto masked_dq = [&](size_t r, size_t col) {
    const size_t b = r / s.T_q, i = r % s.T_q, head = col / s.d_k;
    return !seen.row[(b * s.h + head) * s.T_q + i];
  };
  CheckClose("dQ", dQ, want.dQ, tol, masked_dq);
  CheckClose("dK", dK, want.dK, tol, unseen_k(s.d_k));
  CheckClose("dV", dV, want.dV, tol, unseen_k(s.d_v));
  CHECK(dQ.PaddingIntact());
  CHECK(dK.PaddingIntact());
  CHECK(dV.PaddingIntact());
  TestMatrix dQ2(in.Q.rows(), in.Q.cols()), dK2(in.K.rows(), in.K.cols());
  TestMatrix dV2(in.V.rows(), in.V.cols());
  REQUIRE_OK(MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, in.dO, s.batch, c, o, dQ2, dK2, dV2));
  CHECK(dQ2.SameValues(dQ));
  CHECK(dK2.SameValues(dK));
  CHECK(dV2.SameValues(dV));
}

TEST_CASE("multi-head backward reference matches central finite differences",
          "[backward][multihead]") {
  // Batch 2, 2 query heads sharing one K/V head, W_O, per-item key lengths
  // and causal offsets, a {B, H} additive mask: loss = sum(dOut * out).
  const size_t batch = 2, T = 3, d_model = 4, h = 2, kvh = 1, d_k = 2, d_v = 3, d_out = 5;
  Mat X = Random(batch * T, d_model, 11).ToRef();
  Mat W_Q = Random(d_model, h * d_k, 12).ToRef(), W_K = Random(d_model, kvh * d_k, 13).ToRef();
  Mat W_V = Random(d_model, kvh * d_v, 14).ToRef(), W_O = Random(h * d_v, d_out, 15).ToRef();
  const Mat dOut = Random(batch * T, d_out, 16).ToRef();
  const TestMatrix additive = Random(batch * h * T, T, 17, Layout::kContiguous, -1.0f, 1.0f);
  std::vector<AttentionOptions> options(3);
  options[1].causal = true;
  options[1].causal_alignment = CausalAlignment::kUpperLeft;
  options[1].causal_offsets = {0, 1};
  options[1].key_lengths = {3, 2};
  options[2].additive_mask = additive.cview();
  options[2].additive_mask_layout = {batch, h};
  options[2].softcap = 1.0f;
  for (size_t k = 0; k < options.size(); ++k) {
    const AttentionOptions& o = options[k];
    for (bool with_o : {true, false}) {
      INFO("options " << k << ", W_O " << with_o);
      const Mat w_o = with_o ? W_O : Mat();
      const Mat d_out_m = with_o ? dOut : Random(batch * T, h * d_v, 18).ToRef();
      const bwd_ref::LayerGradients g =
          bwd_ref::LayerBackward(X, batch, W_Q, W_K, W_V, w_o, h, kvh, d_out_m, o);
      Mat wo = w_o;
      auto loss = [&]() {
        const Mat out = bwd_ref::LayerForward(X, batch, W_Q, W_K, W_V, wo, h, kvh, o);
        double sum = 0.0;
        for (size_t i = 0; i < out.v.size(); ++i) sum += out.v[i] * d_out_m.v[i];
        return sum;
      };
      // h = 1e-5 in float64: truncation and rounding far below 1e-7.
      auto check = [&](const char* name, Mat* x, const Mat& grad) {
        INFO(name);
        REQUIRE(grad.v.size() == x->v.size());
        for (size_t i = 0; i < x->v.size(); ++i) {
          const double keep = x->v[i];
          x->v[i] = keep + 1e-5;
          const double up = loss();
          x->v[i] = keep - 1e-5;
          const double down = loss();
          x->v[i] = keep;
          const double fd = (up - down) / 2e-5;
          INFO("element " << i << ": analytic " << grad.v[i] << ", finite difference " << fd);
          CHECK(std::abs(fd - grad.v[i]) <= 1e-7 * std::max(1.0, std::abs(fd)));
        }
      };
      check("X", &X, g.dX);
      check("W_Q", &W_Q, g.dW_Q);
      check("W_K", &W_K, g.dW_K);
      check("W_V", &W_V, g.dW_V);
      if (with_o) check("W_O", &wo, g.dW_O);
    }
  }
}

// 1, lanes +- 1, primes, the key block (64) and the query block (32) +- 1,
// 127/128/129 keys; GQA with one K/V head and h / 2; batch 1 to 3.
const std::vector<Shape>& Shapes() {
  static const std::vector<Shape> shapes = {
      {1, 1, 1, 1, 1, 1, 1},     {3, 5, 7, 4, 2, 3, 5},     {2, 33, 31, 4, 1, 8, 4},
      {3, 17, 13, 2, 2, 9, 16},  {1, 31, 127, 2, 1, 4, 3},  {2, 9, 128, 4, 2, 5, 7},
      {1, 65, 129, 3, 3, 2, 17}, {2, 40, 70, 4, 2, 16, 32},
  };
  return shapes;
}

TEST_CASE("multi-head backward matches the float64 reference on every target",
          "[backward][multihead]") {
  uint32_t seed = 3000;
  ForEachTarget([&](int64_t) {
    for (const Shape& s : Shapes()) {
      const Inputs in(s, seed);
      const MultiMasks masks(s, seed + 10);
      seed += 20;
      for (const Kind& kind : Kinds()) {
        AttentionOptions o;
        kind.set(s, masks, &o);
        INFO("B " << s.batch << " T_q " << s.T_q << " T_k " << s.T_k << " h " << s.h << " kvh "
                  << s.kvh << " d_k " << s.d_k << " d_v " << s.d_v << ", " << kind.name);
        // As the single-head tests: float32 rounding ~1e-6, a wrong term ~1e-2.
        CheckMulti(s, in, o, 3e-5);
      }
    }
  });
}

TEST_CASE("multi-head backward: huge logits neither overflow nor lose the gradient",
          "[backward][multihead]") {
  // |S| ~ 1e4 (scale 1, inputs up to 40, d_k 8): see the single-head test for
  // the 5e-3 tolerance.
  const Shape s{2, 19, 23, 4, 2, 8, 5};
  ForEachTarget([&](int64_t) {
    const Inputs in(s, 4000, 40.0f);
    for (bool causal : {false, true}) {
      AttentionOptions o;
      o.scale = 1.0f;
      o.causal = causal;
      INFO("causal " << causal);
      CheckMulti(s, in, o, 5e-3);
    }
  });
}

TEST_CASE("multi-head backward with threads is bit-identical to one thread",
          "[backward][multihead]") {
  ThreadPool two(2), three(3);
  uint32_t seed = 5000;
  ForEachTarget([&](int64_t) {
    for (const Shape& s : {Shape{3, 33, 129, 4, 2, 6, 5}, Shape{1, 70, 200, 2, 1, 8, 8},
                           Shape{2, 1, 5, 2, 2, 3, 3}}) {
      const Inputs in(s, seed);
      const MultiMasks masks(s, seed + 10);
      seed += 20;
      const HeadConfig c = Config(s);
      for (const Kind& kind : Kinds()) {
        AttentionOptions o;
        kind.set(s, masks, &o);
        const size_t rows_q = s.batch * s.T_q, rows_k = s.batch * s.T_k;
        TestMatrix out(rows_q, s.h * s.d_v), lse(rows_q * s.h, 1);
        TestMatrix dQ(rows_q, s.h * s.d_k), dK(rows_k, s.kvh * s.d_k), dV(rows_k, s.kvh * s.d_v);
        REQUIRE_OK(MultiHeadAttentionQKVForTraining(in.Q, in.K, in.V, s.batch, c, o, out, lse));
        REQUIRE_OK(MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, out, in.dO, lse, s.batch, c, o,
                                                 dQ, dK, dV));
        for (ThreadPool* pool : {&two, &three}) {
          INFO("T_q " << s.T_q << ", " << kind.name << ", threads " << pool->num_threads());
          o.pool = pool;
          TestMatrix out2(rows_q, s.h * s.d_v), lse2(rows_q * s.h, 1);
          TestMatrix dQ2(rows_q, s.h * s.d_k), dK2(rows_k, s.kvh * s.d_k);
          TestMatrix dV2(rows_k, s.kvh * s.d_v);
          REQUIRE_OK(MultiHeadAttentionQKVForTraining(in.Q, in.K, in.V, s.batch, c, o, out2, lse2));
          CHECK(out2.SameValues(out));
          CHECK(lse2.SameValues(lse));
          REQUIRE_OK(MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, out, in.dO, lse, s.batch, c, o,
                                                   dQ2, dK2, dV2));
          CHECK(dQ2.SameValues(dQ));
          CHECK(dK2.SameValues(dK));
          CHECK(dV2.SameValues(dV));
          REQUIRE_OK(
              MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, in.dO, s.batch, c, o, dQ2, dK2, dV2));
          CHECK(dQ2.SameValues(dQ));
          CHECK(dK2.SameValues(dK));
          CHECK(dV2.SameValues(dV));
        }
      }
    }
  });
}

TEST_CASE("layer and self-attention backward with threads are bit-identical to one thread",
          "[backward][multihead]") {
  // Enough rows (batch * T = 82, d_model = 24) that each projection splits
  // into bands of rows over the threads.
  ThreadPool two(2), three(3);
  const size_t batch = 2, T = 41, d_model = 24, h = 4, kvh = 2, d_k = 6, d_out = 10;
  const size_t rows = batch * T;
  ForEachTarget([&](int64_t) {
    const TestMatrix X = Random(rows, d_model, 7100, Layout::kStrided);
    const TestMatrix W_Q = Random(d_model, h * d_k, 7101), W_K = Random(d_model, kvh * d_k, 7102);
    const TestMatrix W_V = Random(d_model, kvh * d_k, 7103), W_O = Random(h * d_k, d_out, 7104);
    const TestMatrix dOut = Random(rows, d_out, 7105), dO = Random(rows, d_k, 7106);
    const MultiHeadWeights w{W_Q, W_K, W_V, W_O};
    HeadConfig c;
    c.num_heads = h;
    c.num_kv_heads = kvh;
    struct Grads {
      TestMatrix dX, dW_Q, dW_K, dW_V, dW_O, sdX, sdW_Q, sdW_K, sdW_V;
    };
    auto run = [&](ThreadPool* pool) {
      AttentionOptions o;
      o.causal = true;
      o.pool = pool;
      Grads g{TestMatrix(rows, d_model),      TestMatrix(d_model, h * d_k),
              TestMatrix(d_model, kvh * d_k), TestMatrix(d_model, kvh * d_k),
              TestMatrix(h * d_k, d_out),     TestMatrix(rows, d_model),
              TestMatrix(d_model, d_k),       TestMatrix(d_model, d_k),
              TestMatrix(d_model, d_k)};
      REQUIRE_OK(MultiHeadAttentionBackward(X, batch, w, c, o, dOut,
                                            {g.dX, g.dW_Q, g.dW_K, g.dW_V, g.dW_O}));
      const ConstMatrixView head(W_Q.cview().data, d_model, d_k, W_Q.cview().stride);
      REQUIRE_OK(
          SelfAttentionBackward(X, head, head, head, dO, o, {g.sdX, g.sdW_Q, g.sdW_K, g.sdW_V}));
      return g;
    };
    const Grads one = run(nullptr);
    for (ThreadPool* pool : {&two, &three}) {
      INFO("threads " << pool->num_threads());
      const Grads g = run(pool);
      CHECK(g.dX.SameValues(one.dX));
      CHECK(g.dW_Q.SameValues(one.dW_Q));
      CHECK(g.dW_K.SameValues(one.dW_K));
      CHECK(g.dW_V.SameValues(one.dW_V));
      CHECK(g.dW_O.SameValues(one.dW_O));
      CHECK(g.sdX.SameValues(one.sdX));
      CHECK(g.sdW_Q.SameValues(one.sdW_Q));
      CHECK(g.sdW_K.SameValues(one.sdW_K));
      CHECK(g.sdW_V.SameValues(one.sdW_V));
    }
  });
}

TEST_CASE("multi-head backward: layer and self-attention gradients match the reference",
          "[backward][multihead]") {
  // Projections add sums over d_model and T: 1e-4 of each gradient's largest
  // value (float32 rounding ~1e-6 of it; a wrong term ~1e-2).
  struct Layer {
    size_t batch, T, d_model, h, kvh, d_out;  // d_out 0 = no W_O
  };
  uint32_t seed = 6000;
  ThreadPool two(2);
  ForEachTarget([&](int64_t) {
    for (const Layer& l : {Layer{3, 7, 12, 4, 2, 5}, Layer{1, 33, 8, 2, 1, 0},
                           Layer{2, 65, 6, 3, 3, 9}, Layer{3, 5, 4, 4, 1, 0}}) {
      const size_t d_k = l.d_model / l.h, rows = l.batch * l.T;
      const TestMatrix X = Random(rows, l.d_model, seed++, Layout::kStrided);
      const TestMatrix W_Q = Random(l.d_model, l.h * d_k, seed++);
      const TestMatrix W_K = Random(l.d_model, l.kvh * d_k, seed++, Layout::kStrided);
      const TestMatrix W_V = Random(l.d_model, l.kvh * d_k, seed++);
      const TestMatrix W_O = l.d_out ? Random(l.h * d_k, l.d_out, seed++) : TestMatrix();
      const size_t d_out = l.d_out ? l.d_out : l.h * d_k;
      const TestMatrix dOut = Random(rows, d_out, seed++, Layout::kStrided);
      for (int variant = 0; variant < 3; ++variant) {
        AttentionOptions o;
        if (variant == 1) {
          o.causal = true;
          o.key_lengths.assign(l.batch, l.T - 1);
          o.key_lengths[0] = 0;
        }
        if (variant == 2) {
          o.softcap = 1.5f;
          o.pool = &two;
        }
        INFO("B " << l.batch << " T " << l.T << " h " << l.h << " kvh " << l.kvh << " W_O "
                  << l.d_out << ", variant " << variant);
        HeadConfig c;
        c.num_heads = l.h;
        c.num_kv_heads = l.kvh;
        MultiHeadWeights w{W_Q, W_K, W_V, l.d_out ? W_O.cview() : ConstMatrixView()};
        TestMatrix dX(rows, l.d_model, Layout::kStrided), dW_Q(l.d_model, l.h * d_k);
        TestMatrix dW_K(l.d_model, l.kvh * d_k, Layout::kStrided), dW_V(l.d_model, l.kvh * d_k);
        TestMatrix dW_O = l.d_out ? TestMatrix(l.h * d_k, l.d_out) : TestMatrix();
        MultiHeadGradients g{dX, dW_Q, dW_K, dW_V, l.d_out ? dW_O.view() : MatrixView()};
        REQUIRE_OK(MultiHeadAttentionBackward(X, l.batch, w, c, o, dOut, g));
        const bwd_ref::LayerGradients want =
            bwd_ref::LayerBackward(X.ToRef(), l.batch, W_Q.ToRef(), W_K.ToRef(), W_V.ToRef(),
                                   l.d_out ? W_O.ToRef() : Mat(), l.h, l.kvh, dOut.ToRef(), o);
        auto none = [](size_t, size_t) { return false; };
        CheckClose("dX", dX, want.dX, 1e-4, none);
        CheckClose("dW_Q", dW_Q, want.dW_Q, 1e-4, none);
        CheckClose("dW_K", dW_K, want.dW_K, 1e-4, none);
        CheckClose("dW_V", dW_V, want.dW_V, 1e-4, none);
        if (l.d_out) CheckClose("dW_O", dW_O, want.dW_O, 1e-4, none);
        CHECK(dX.PaddingIntact());
      }
      // Self-attention: one head, one item; the layer reference with h = 1.
      const TestMatrix Xs = Random(l.T, l.d_model, seed++);
      const TestMatrix Wv = Random(l.d_model, 3, seed++), dO = Random(l.T, 3, seed++);
      AttentionOptions o;
      o.causal = l.batch == 3;
      TestMatrix dX(l.T, l.d_model), dWq(l.d_model, d_k), dWk(l.d_model, d_k), dWv(l.d_model, 3);
      const ConstMatrixView wq = W_Q.cview().Block(0, l.d_model, 0, d_k);
      const ConstMatrixView wk = W_K.cview().Block(0, l.d_model, 0, d_k);
      REQUIRE_OK(SelfAttentionBackward(Xs, wq, wk, Wv, dO, o, {dX, dWq, dWk, dWv}));
      const bwd_ref::LayerGradients want =
          bwd_ref::LayerBackward(Xs.ToRef(), 1, ref::FromView(wq), ref::FromView(wk), Wv.ToRef(),
                                 Mat(), 1, 1, dO.ToRef(), o);
      auto none = [](size_t, size_t) { return false; };
      CheckClose("self dX", dX, want.dX, 1e-4, none);
      CheckClose("self dW_Q", dWq, want.dW_Q, 1e-4, none);
      CheckClose("self dW_K", dWk, want.dW_K, 1e-4, none);
      CheckClose("self dW_V", dWv, want.dW_V, 1e-4, none);
    }
  });
}

TEST_CASE("multi-head backward: bad input returns a Status naming the parameter",
          "[backward][multihead]") {
  const Shape s{2, 3, 4, 2, 1, 2, 3};
  const Inputs in(s, 7000);
  const HeadConfig c = Config(s);
  const AttentionOptions o;
  TestMatrix out(6, 6), lse(12, 1), dQ(6, 4), dK(8, 2), dV(8, 3);
  REQUIRE_OK(MultiHeadAttentionQKVForTraining(in.Q, in.K, in.V, 2, c, o, out, lse));
  REQUIRE_OK(MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, out, in.dO, lse, 2, c, o, dQ, dK, dV));
  TestMatrix wrong_dO(6, 4), wrong_lse(6, 1), wrong_dK(8, 4), wrong_out(6, 4);
  CHECK_ERROR(
      MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, out, wrong_dO, lse, 2, c, o, dQ, dK, dV),
      Err(ErrorCode::kShapeMismatch).Name("dO").Num(6).Num(4));
  CHECK_ERROR(MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, wrong_dO, 2, c, o, dQ, dK, dV),
              Err(ErrorCode::kShapeMismatch).Name("dO"));
  CHECK_ERROR(
      MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, out, in.dO, wrong_lse, 2, c, o, dQ, dK, dV),
      Err(ErrorCode::kShapeMismatch).Name("lse").Num(12));
  CHECK_ERROR(MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, in.dO, 2, c, o, dQ, wrong_dK, dV),
              Err(ErrorCode::kShapeMismatch).Name("dK"));
  CHECK_ERROR(MultiHeadAttentionQKVForTraining(in.Q, in.K, in.V, 2, c, o, wrong_out, lse),
              Err(ErrorCode::kShapeMismatch).Name("out"));
  CHECK_ERROR(MultiHeadAttentionQKVForTraining(in.Q, in.K, in.V, 2, c, o, out, wrong_lse),
              Err(ErrorCode::kShapeMismatch).Name("lse"));
  CHECK_ERROR(MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, in.dO, 3, c, o, dQ, dK, dV),
              Err(ErrorCode::kShapeMismatch).Name("K"));
  TestMatrix nan_dO = CopyOf(in.dO);
  nan_dO(1, 1) = kNaN;
  CHECK_ERROR(MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, nan_dO, 2, c, o, dQ, dK, dV),
              Err(ErrorCode::kNonFinite).Name("dO"));
  TestMatrix bad_lse = CopyOf(lse);
  bad_lse(3, 0) = kNaN;
  CHECK_ERROR(
      MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, out, in.dO, bad_lse, 2, c, o, dQ, dK, dV),
      Err(ErrorCode::kNonFinite).Name("lse"));
  TestMatrix q_copy = CopyOf(in.Q);
  CHECK_ERROR(
      MultiHeadAttentionQKVBackward(q_copy, in.K, in.V, in.dO, 2, c, o, q_copy.view(), dK, dV),
      Err(ErrorCode::kInvalidArgument).Name("dQ").Name("Q"));
  AttentionOptions bad;
  bad.key_lengths = {1, 2, 3};
  CHECK_ERROR(MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, in.dO, 2, c, bad, dQ, dK, dV),
              Err(ErrorCode::kInvalidArgument).Name("key_lengths"));
  HeadConfig bad_c = c;
  bad_c.num_kv_heads = 3;
  CHECK_ERROR(MultiHeadAttentionQKVBackward(in.Q, in.K, in.V, in.dO, 2, bad_c, o, dQ, dK, dV),
              Err(ErrorCode::kInvalidArgument).Name("num_kv_heads"));

  // The layer: dOut, the gradients' shapes, dW_O iff W_O.
  const TestMatrix X = Random(6, 4, 1), W_Q = Random(4, 4, 2), W_K = Random(4, 2, 3);
  const TestMatrix W_V = Random(4, 2, 4), W_O = Random(4, 5, 5), dOut = Random(6, 5, 6);
  HeadConfig lc;
  lc.num_heads = 2;
  lc.num_kv_heads = 1;
  TestMatrix dX(6, 4), dW_Q(4, 4), dW_K(4, 2), dW_V(4, 2), dW_O(4, 5);
  const MultiHeadWeights w{W_Q, W_K, W_V, W_O};
  REQUIRE_OK(MultiHeadAttentionBackward(X, 2, w, lc, o, dOut, {dX, dW_Q, dW_K, dW_V, dW_O}));
  CHECK_ERROR(
      MultiHeadAttentionBackward(X, 2, w, lc, o, Random(6, 4, 7), {dX, dW_Q, dW_K, dW_V, dW_O}),
      Err(ErrorCode::kShapeMismatch).Name("dOut").Num(5));
  CHECK_ERROR(
      MultiHeadAttentionBackward(X, 2, w, lc, o, dOut, {dX, dW_Q, dW_K, dW_V, MatrixView()}),
      Err(ErrorCode::kInvalidArgument).Name("dW_O"));
  const MultiHeadWeights no_o{W_Q, W_K, W_V, ConstMatrixView()};
  CHECK_ERROR(
      MultiHeadAttentionBackward(X, 2, no_o, lc, o, Random(6, 4, 8), {dX, dW_Q, dW_K, dW_V, dW_O}),
      Err(ErrorCode::kInvalidArgument).Name("dW_O"));
  TestMatrix wrong_dWk(4, 4);
  CHECK_ERROR(MultiHeadAttentionBackward(X, 2, w, lc, o, dOut, {dX, dW_Q, wrong_dWk, dW_V, dW_O}),
              Err(ErrorCode::kShapeMismatch).Name("dW_K"));
  TestMatrix x_copy = CopyOf(X);
  CHECK_ERROR(MultiHeadAttentionBackward(x_copy, 2, w, lc, o, dOut,
                                         {x_copy.view(), dW_Q, dW_K, dW_V, dW_O}),
              Err(ErrorCode::kInvalidArgument).Name("dX").Name("X"));

  // Self-attention.
  const TestMatrix Xs = Random(5, 4, 9), Wq = Random(4, 3, 10), Wk = Random(4, 3, 11);
  const TestMatrix Wv = Random(4, 2, 12), dO = Random(5, 2, 13);
  TestMatrix sdX(5, 4), sdWq(4, 3), sdWk(4, 3), sdWv(4, 2);
  REQUIRE_OK(SelfAttentionBackward(Xs, Wq, Wk, Wv, dO, o, {sdX, sdWq, sdWk, sdWv}));
  CHECK_ERROR(SelfAttentionBackward(Xs, Wq, Wk, Wv, Random(5, 3, 14), o, {sdX, sdWq, sdWk, sdWv}),
              Err(ErrorCode::kShapeMismatch).Name("dO").Num(2).Num(3));
  CHECK_ERROR(SelfAttentionBackward(Xs, Wq, Random(4, 2, 15), Wv, dO, o, {sdX, sdWq, sdWk, sdWv}),
              Err(ErrorCode::kShapeMismatch).Name("W_K"));
  CHECK_ERROR(SelfAttentionBackward(Xs, Wq, Wk, Wv, dO, o, {sdX, sdWq, sdWk, sdWq}),
              Err(ErrorCode::kShapeMismatch).Name("dW_V"));
  CHECK_ERROR(SelfAttentionBackward(Xs, Wq, Wk, Wv, dO, o, {sdX, sdWq, sdWq, sdWv}),
              Err(ErrorCode::kInvalidArgument).Name("dW_K").Name("dW_Q"));
}

}  // namespace
