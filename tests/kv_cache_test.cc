// KV cache: Create, Append, Keys, Values, Reset, capacity errors, AttendCached
// and MultiHeadDecode (token by token and in blocks) against full causal
// attention, on every target.
#include <algorithm>
#include <cmath>
#include <string>

#include "tests/reference.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::AttentionOptions;
using attnkit::DecodeOptions;
using attnkit::HeadConfig;
using attnkit::KVCache;
using attnkit::MultiHeadWeights;

// The expected cache block of (item, head) after appending `chunks` in order:
// rows of each chunk's item block, columns of the head.
ref::Mat ExpectedBlock(const std::vector<const TestMatrix*>& chunks, size_t batch, size_t item,
                       size_t head, size_t d) {
  size_t total = 0;
  for (const TestMatrix* c : chunks) total += c->rows() / batch;
  ref::Mat want(total, d);
  size_t row = 0;
  for (const TestMatrix* c : chunks) {
    const size_t n = c->rows() / batch;
    for (size_t t = 0; t < n; ++t, ++row)
      for (size_t j = 0; j < d; ++j) want(row, j) = (*c)(item * n + t, head * d + j);
  }
  return want;
}

void CheckCacheHolds(const KVCache& cache, const std::vector<const TestMatrix*>& k_chunks,
                     const std::vector<const TestMatrix*>& v_chunks) {
  for (size_t b = 0; b < cache.batch(); ++b)
    for (size_t g = 0; g < cache.num_kv_heads(); ++g) {
      INFO("item " << b << " kv head " << g);
      CHECK_CLOSE(cache.Keys(b, g), ExpectedBlock(k_chunks, cache.batch(), b, g, cache.d_k()),
                  kExact);
      CHECK_CLOSE(cache.Values(b, g), ExpectedBlock(v_chunks, cache.batch(), b, g, cache.d_v()),
                  kExact);
    }
}

TEST_CASE("KVCache: Create sets the shape, Append/Keys/Values return what was appended",
          "[kv_cache]") {
  const size_t batch = 2, kvh = 3, d_k = 4, d_v = 5, cap = 7;
  KVCache cache;
  REQUIRE_OK(KVCache::Create(batch, kvh, d_k, d_v, cap, &cache));
  CHECK(cache.batch() == batch);
  CHECK(cache.num_kv_heads() == kvh);
  CHECK(cache.d_k() == d_k);
  CHECK(cache.d_v() == d_v);
  CHECK(cache.capacity() == cap);
  CHECK(cache.size() == 0);
  CHECK(cache.Keys(1, 2).rows == 0);

  const TestMatrix K1 = Random(batch * 2, kvh * d_k, 1, Layout::kStrided);
  const TestMatrix V1 = Random(batch * 2, kvh * d_v, 2, Layout::kStrided);
  REQUIRE_OK(cache.Append(K1, V1));
  CHECK(cache.size() == 2);
  CheckCacheHolds(cache, {&K1}, {&V1});

  const TestMatrix K2 = Random(batch * 3, kvh * d_k, 3);
  const TestMatrix V2 = Random(batch * 3, kvh * d_v, 4);
  REQUIRE_OK(cache.Append(K2, V2));
  CHECK(cache.size() == 5);
  CheckCacheHolds(cache, {&K1, &K2}, {&V1, &V2});
  for (size_t b = 0; b < batch; ++b)
    for (size_t g = 0; g < kvh; ++g) {
      CHECK(cache.Keys(b, g).rows == 5);
      CHECK(cache.Keys(b, g).cols == d_k);
      CHECK(cache.Values(b, g).rows == 5);
      CHECK(cache.Values(b, g).cols == d_v);
    }

  // Filling exactly to capacity works.
  const TestMatrix K3 = Random(batch * 2, kvh * d_k, 5);
  const TestMatrix V3 = Random(batch * 2, kvh * d_v, 6);
  REQUIRE_OK(cache.Append(K3, V3));
  CHECK(cache.size() == cap);
  CheckCacheHolds(cache, {&K1, &K2, &K3}, {&V1, &V2, &V3});
}

TEST_CASE("KVCache: appending past capacity is kCapacity and leaves the cache unchanged",
          "[kv_cache][errors]") {
  const size_t batch = 2, kvh = 2, d_k = 3, d_v = 2, cap = 5;
  KVCache cache;
  REQUIRE_OK(KVCache::Create(batch, kvh, d_k, d_v, cap, &cache));
  const TestMatrix K1 = Random(batch * 3, kvh * d_k, 1), V1 = Random(batch * 3, kvh * d_v, 2);
  REQUIRE_OK(cache.Append(K1, V1));
  const TestMatrix K2 = Random(batch * 3, kvh * d_k, 3), V2 = Random(batch * 3, kvh * d_v, 4);
  CHECK_ERROR(cache.Append(K2, V2), Err(ErrorCode::kCapacity).Name("K_new").Num(5));
  CHECK(cache.size() == 3);
  CHECK(cache.capacity() == cap);
  CheckCacheHolds(cache, {&K1}, {&V1});
  // A one-token append still fits, then the cache is full.
  const TestMatrix K3 = Random(batch * 2, kvh * d_k, 5), V3 = Random(batch * 2, kvh * d_v, 6);
  REQUIRE_OK(cache.Append(K3, V3));
  CHECK(cache.size() == 5);
  const TestMatrix K4 = Random(batch, kvh * d_k, 7), V4 = Random(batch, kvh * d_v, 8);
  CHECK_ERROR(cache.Append(K4, V4), Err(ErrorCode::kCapacity).Name("K_new").Num(5));
  CHECK(cache.size() == 5);
  CheckCacheHolds(cache, {&K1, &K3}, {&V1, &V3});
}

TEST_CASE("KVCache: Reset empties the cache and keeps its capacity", "[kv_cache]") {
  KVCache cache;
  REQUIRE_OK(KVCache::Create(1, 2, 4, 4, 4, &cache));
  const TestMatrix K1 = Random(4, 8, 1), V1 = Random(4, 8, 2);
  REQUIRE_OK(cache.Append(K1, V1));
  CHECK(cache.size() == 4);
  cache.Reset();
  CHECK(cache.size() == 0);
  CHECK(cache.capacity() == 4);
  CHECK(cache.Keys(0, 1).rows == 0);
  CHECK(cache.Values(0, 0).rows == 0);
  const TestMatrix K2 = Random(3, 8, 3), V2 = Random(3, 8, 4);
  REQUIRE_OK(cache.Append(K2, V2));
  CHECK(cache.size() == 3);
  CheckCacheHolds(cache, {&K2}, {&V2});
}

TEST_CASE("AttendCached equals the last rows of full attention over the cached tokens",
          "[kv_cache][attend]") {
  struct S {
    size_t h, kvh, batch, T, T_new, d_k, d_v;
  };
  std::vector<S> shapes = {{1, 1, 1, 5, 1, 4, 4},   {4, 2, 2, 9, 3, 5, 3},
                           {4, 1, 3, 8, 8, 8, 2},   {6, 3, 2, 17, 2, 3, 16},
                           {2, 2, 1, 16, 1, 17, 9}, {2, 1, 1, 19, 1, 8, 67}};
  for (size_t s : LaneSizes()) shapes.push_back({2, 1, 2, s + 1, std::min<size_t>(s, 3), s, s});
  ForEachTarget([&](int64_t) {
    uint32_t seed = 11000;
    for (const S& s : shapes) {
      for (bool causal : {true, false}) {
        INFO("h=" << s.h << " kvh=" << s.kvh << " batch=" << s.batch << " T=" << s.T << " T_new="
                  << s.T_new << " d_k=" << s.d_k << " d_v=" << s.d_v << " causal=" << causal);
        const TestMatrix Q = Random(s.batch * s.T, s.h * s.d_k, ++seed);
        const TestMatrix K = Random(s.batch * s.T, s.kvh * s.d_k, ++seed);
        const TestMatrix V = Random(s.batch * s.T, s.kvh * s.d_v, ++seed);
        KVCache cache;
        REQUIRE_OK(KVCache::Create(s.batch, s.kvh, s.d_k, s.d_v, s.T + 2, &cache));
        // Append all tokens: first the prefix, then the newest T_new.
        const size_t T0 = s.T - s.T_new;
        TestMatrix Kp(s.batch * T0, K.cols()), Vp(s.batch * T0, V.cols());
        TestMatrix Kn(s.batch * s.T_new, K.cols()), Vn(s.batch * s.T_new, V.cols());
        TestMatrix Qn(s.batch * s.T_new, Q.cols(), Layout::kStrided);
        for (size_t b = 0; b < s.batch; ++b)
          for (size_t t = 0; t < s.T; ++t) {
            for (size_t c = 0; c < K.cols(); ++c)
              (t < T0 ? Kp(b * T0 + t, c) : Kn(b * s.T_new + t - T0, c)) = K(b * s.T + t, c);
            for (size_t c = 0; c < V.cols(); ++c)
              (t < T0 ? Vp(b * T0 + t, c) : Vn(b * s.T_new + t - T0, c)) = V(b * s.T + t, c);
            if (t >= T0)
              for (size_t c = 0; c < Q.cols(); ++c) Qn(b * s.T_new + t - T0, c) = Q(b * s.T + t, c);
          }
        if (T0 > 0) REQUIRE_OK(cache.Append(Kp, Vp));
        REQUIRE_OK(cache.Append(Kn, Vn));
        REQUIRE(cache.size() == s.T);

        AttentionOptions o;  // plain options: causal only when asked
        o.causal = causal;
        TestMatrix out(s.batch * s.T_new, s.h * s.d_v, Layout::kStrided);
        REQUIRE_OK(attnkit::AttendCached(Qn, cache, s.h, o, out));
        CHECK(out.PaddingIntact());
        // Full attention over all T tokens, then take each item's last rows.
        const ref::Mat full = ref::MultiHeadQKV(Q.ToRef(), K.ToRef(), V.ToRef(), s.batch, s.h,
                                                s.kvh, ref::FromAttnkit(o));
        ref::Mat want(s.batch * s.T_new, s.h * s.d_v);
        for (size_t b = 0; b < s.batch; ++b)
          want.SetBlock(b * s.T_new, 0, full.Block(b * s.T + T0, s.T_new, 0, s.h * s.d_v));
        const AttnTol tol = AttentionTol(s.d_k, s.T, 1, 1, 1, 1.0 / std::sqrt(double(s.d_k)));
        CHECK_CLOSE(out, want, tol.output);
        if (causal) {
          // DecodeOptions is causal by default and gives the same.
          TestMatrix out2(s.batch * s.T_new, s.h * s.d_v);
          REQUIRE_OK(attnkit::AttendCached(Qn, cache, s.h, DecodeOptions(), out2));
          CHECK_CLOSE(out2, want, tol.output);
        }
      }
    }
  });
}

TEST_CASE("AttendCached's weights: each query's softmax over the cache, from the same pass",
          "[kv_cache][attend]") {
  struct S {
    size_t h, kvh, batch, T, T_new, d;
  };
  // T past kDecodeChunkKeys (256): weights merged from two chunks.
  const S shapes[] = {{1, 1, 1, 1, 1, 4},
                      {4, 2, 2, 9, 1, 8},
                      {4, 2, 2, 9, 3, 5},
                      {2, 1, 1, 300, 1, 16},
                      {2, 2, 1, 300, 4, 8}};
  ForEachTarget([&](int64_t) {
    uint32_t seed = 12000;
    for (const S& s : shapes) {
      for (bool causal : {true, false}) {
        INFO("h=" << s.h << " kvh=" << s.kvh << " batch=" << s.batch << " T=" << s.T
                  << " T_new=" << s.T_new << " d=" << s.d << " causal=" << causal);
        const TestMatrix K = Random(s.batch * s.T, s.kvh * s.d, ++seed);
        const TestMatrix V = Random(s.batch * s.T, s.kvh * s.d, ++seed);
        const TestMatrix Qn = Random(s.batch * s.T_new, s.h * s.d, ++seed);
        KVCache cache;
        REQUIRE_OK(KVCache::Create(s.batch, s.kvh, s.d, s.d, s.T, &cache));
        REQUIRE_OK(cache.Append(K, V));
        AttentionOptions o;
        o.causal = causal;
        TestMatrix plain(s.batch * s.T_new, s.h * s.d), out(s.batch * s.T_new, s.h * s.d);
        TestMatrix weights(s.batch * s.h * s.T_new, s.T, Layout::kStrided);
        REQUIRE_OK(attnkit::AttendCached(Qn, cache, s.h, o, plain));
        REQUIRE_OK(attnkit::AttendCached(Qn, cache, s.h, o, out, weights));
        CHECK(weights.PaddingIntact());
        const AttnTol tol = AttentionTol(s.d, s.T, 1, 1, 1, 1.0 / std::sqrt(double(s.d)));
        if (s.T_new == 1) {
          // One query per head takes split-K either way: the same output.
          CHECK(std::equal(out.data(), out.data() + out.rows() * out.cols(), plain.data()));
        } else {
          CHECK_CLOSE(out, plain.ToRef(), tol.output);
        }
        // The reference: softmax(q k_j / sqrt(d)) in double over the keys the
        // query sees (causal: up to its own token, the cache's T - T_new + t).
        for (size_t b = 0; b < s.batch; ++b) {
          for (size_t head = 0; head < s.h; ++head) {
            const size_t g = head / (s.h / s.kvh);
            for (size_t t = 0; t < s.T_new; ++t) {
              const size_t seen = causal ? s.T - s.T_new + t + 1 : s.T;
              std::vector<double> p(s.T, 0.0);
              double max = -INFINITY, sum = 0;
              for (size_t j = 0; j < seen; ++j) {
                double dot = 0;
                for (size_t c = 0; c < s.d; ++c)
                  dot += double(Qn(b * s.T_new + t, head * s.d + c)) * K(b * s.T + j, g * s.d + c);
                p[j] = dot / std::sqrt(double(s.d));
                max = std::max(max, p[j]);
              }
              for (size_t j = 0; j < seen; ++j) sum += (p[j] = std::exp(p[j] - max));
              const size_t row = (b * s.h + head) * s.T_new + t;
              for (size_t j = 0; j < s.T; ++j) {
                CHECK(std::abs(weights(row, j) - (j < seen ? p[j] / sum : 0.0)) <= 1e-5);
              }
            }
          }
        }
      }
    }
  });
}

TEST_CASE("AttendCached checks its weights' shape and memory", "[kv_cache][attend][errors]") {
  KVCache cache;
  REQUIRE_OK(KVCache::Create(1, 1, 4, 4, 8, &cache));
  REQUIRE_OK(cache.Append(Random(5, 4, 1), Random(5, 4, 2)));
  // Q_new [1, 8] at the start of a buffer of 16 floats.
  TestMatrix buffer = Random(1, 16, 3), out(1, 8), weights(2, 5), short_weights(2, 4);
  const attnkit::ConstMatrixView Q(buffer.data(), 1, 8);
  CHECK_ERROR(attnkit::AttendCached(Q, cache, 2, AttentionOptions(), out, short_weights),
              Err(ErrorCode::kShapeMismatch).Name("weights").Num(5));
  // weights [2, 5] over Q_new's last 4 floats.
  CHECK_ERROR(attnkit::AttendCached(Q, cache, 2, AttentionOptions(), out,
                                    attnkit::MatrixView(buffer.data() + 4, 2, 5)),
              Err(ErrorCode::kInvalidArgument).Name("weights"));
  REQUIRE_OK(attnkit::AttendCached(Q, cache, 2, AttentionOptions(), out, weights));
}

struct DecodeShape {
  size_t h, kvh, batch;
};

// Gathers rows [t0, t0 + n) of every batch item of a [batch*T, cols] matrix
// into [batch*n, cols].
TestMatrix GatherSteps(const TestMatrix& x, size_t batch, size_t T, size_t t0, size_t n,
                       Layout layout) {
  TestMatrix out(batch * n, x.cols(), layout);
  for (size_t b = 0; b < batch; ++b)
    for (size_t i = 0; i < n; ++i)
      for (size_t c = 0; c < x.cols(); ++c) out(b * n + i, c) = x(b * T + t0 + i, c);
  return out;
}

struct DecodeCase {
  size_t h, kvh, batch, T, d_model, d_k, d_v, d_out;  // d_out 0 = no W_O
};

// Decodes X [batch*T, d_model] with MultiHeadDecode following each step
// schedule (token counts summing to T) and checks the outputs against full
// causal MultiHeadAttention and the float64 reference, the cache contents
// against X W_K / X W_V, and that one more step past capacity is kCapacity.
void CheckDecode(const DecodeCase& s, const std::vector<std::vector<size_t>>& schedules,
                 uint32_t seed) {
  const size_t T = s.T, d_k = s.d_k, d_v = s.d_v, d_model = s.d_model;
  const bool with_wo = s.d_out != 0;
  INFO("h=" << s.h << " kvh=" << s.kvh << " batch=" << s.batch << " T=" << T
            << " d_model=" << d_model << " d_k=" << d_k << " d_v=" << d_v << " d_out=" << s.d_out);
  const float wi = 1.0f / std::sqrt(float(d_model)), wo = 1.0f / std::sqrt(float(s.h * d_v));
  const TestMatrix X = Random(s.batch * T, d_model, ++seed);
  const TestMatrix WQ = Random(d_model, s.h * d_k, ++seed, Layout::kStrided, -wi, wi);
  const TestMatrix WK = Random(d_model, s.kvh * d_k, ++seed, Layout::kStrided, -wi, wi);
  const TestMatrix WV = Random(d_model, s.kvh * d_v, ++seed, Layout::kStrided, -wi, wi);
  const TestMatrix WO =
      with_wo ? Random(s.h * d_v, s.d_out, ++seed, Layout::kStrided, -wo, wo) : TestMatrix();
  const MultiHeadWeights w{WQ, WK, WV, with_wo ? WO.cview() : ConstMatrixView()};
  const HeadConfig cfg{s.h, s.kvh, d_k, d_v};
  const size_t out_cols = with_wo ? s.d_out : s.h * d_v;

  AttentionOptions causal;
  causal.causal = true;
  TestMatrix full(s.batch * T, out_cols);
  REQUIRE_OK(attnkit::MultiHeadAttention(X, s.batch, w, cfg, causal, full));
  const ref::Mat want =
      ref::MultiHead(X.ToRef(), s.batch, WQ.ToRef(), WK.ToRef(), WV.ToRef(),
                     with_wo ? WO.ToRef() : ref::Mat(), s.h, s.kvh, ref::FromAttnkit(causal));
  CHECK_CLOSE(full, want, ChainTol(want));
  const ref::Mat Kref = ref::MatMul(X.ToRef(), WK.ToRef());
  const ref::Mat Vref = ref::MatMul(X.ToRef(), WV.ToRef());

  for (const auto& steps : schedules) {
    std::string sched;
    for (size_t n : steps) sched += std::to_string(n) + " ";
    INFO("schedule " << sched);
    KVCache cache;
    REQUIRE_OK(KVCache::Create(s.batch, s.kvh, d_k, d_v, T, &cache));
    TestMatrix decoded(s.batch * T, out_cols);
    size_t t0 = 0;
    for (size_t n : steps) {
      INFO("tokens [" << t0 << ", " << t0 + n << ")");
      const TestMatrix Xn = GatherSteps(X, s.batch, T, t0, n, Layout::kStrided);
      TestMatrix out(s.batch * n, out_cols, Layout::kStrided);
      REQUIRE_OK(attnkit::MultiHeadDecode(Xn, w, cfg, DecodeOptions(), &cache, out));
      CHECK(out.PaddingIntact());
      CHECK(cache.size() == t0 + n);
      for (size_t b = 0; b < s.batch; ++b)
        for (size_t i = 0; i < n; ++i)
          for (size_t c = 0; c < out_cols; ++c) decoded(b * T + t0 + i, c) = out(b * n + i, c);
      t0 += n;
    }
    REQUIRE(t0 == T);
    CHECK_CLOSE(decoded, want, ChainTol(want));
    CHECK_CLOSE(decoded, full.ToRef(), ChainTol(want));
    // The cache holds the projected keys and values of every token.
    for (size_t b = 0; b < s.batch; ++b)
      for (size_t g = 0; g < s.kvh; ++g) {
        INFO("item " << b << " kv head " << g);
        CHECK_CLOSE(cache.Keys(b, g), Kref.Block(b * T, T, g * d_k, d_k), DotTol(d_model, 1, wi));
        CHECK_CLOSE(cache.Values(b, g), Vref.Block(b * T, T, g * d_v, d_v), DotTol(d_model, 1, wi));
      }
    // The cache is now full: one more step is kCapacity and changes nothing.
    const TestMatrix Xn = GatherSteps(X, s.batch, T, 0, 1, Layout::kContiguous);
    TestMatrix out(s.batch, out_cols);
    CHECK_ERROR(attnkit::MultiHeadDecode(Xn, w, cfg, DecodeOptions(), &cache, out),
                Err(ErrorCode::kCapacity).Name("X_new"));
    CHECK(cache.size() == T);
    CHECK_CLOSE(cache.Keys(s.batch - 1, s.kvh - 1),
                Kref.Block((s.batch - 1) * T, T, (s.kvh - 1) * d_k, d_k), DotTol(d_model, 1, wi));
  }
}

TEST_CASE("MultiHeadDecode token by token and in blocks equals full causal MultiHeadAttention",
          "[kv_cache][decode]") {
  // (heads, kv_heads, batch) as in the acceptance list, with and without W_O.
  const std::vector<DecodeShape> shapes = {{1, 1, 1}, {4, 4, 1}, {4, 2, 2}, {4, 1, 3}, {6, 3, 2}};
  // One token at a time, blocks of 2-3, and 3 + 4.
  const std::vector<std::vector<size_t>> schedules = {
      {1, 1, 1, 1, 1, 1, 1}, {2, 3, 2}, {3, 1, 3}, {3, 4}};
  ForEachTarget([&](int64_t) {
    uint32_t seed = 12000;
    for (const DecodeShape& s : shapes) {
      for (size_t d_out : {size_t{6}, size_t{0}}) {
        CheckDecode({s.h, s.kvh, s.batch, 7, s.h * 2 + 1, 3, 5, d_out}, schedules, seed);
        seed += 10;
      }
    }
  });
}

TEST_CASE("MultiHeadDecode with head sizes around the lane counts equals full attention",
          "[kv_cache][decode]") {
  const std::vector<std::vector<size_t>> schedules = {{1, 1, 1, 1, 1}, {2, 3}};
  ForEachTarget([&](int64_t) {
    uint32_t seed = 12500;
    for (size_t s : LaneSizes()) {
      CheckDecode({2, 1, 2, 5, s + 2, s, s, s}, schedules, seed);
      seed += 10;
    }
  });
}

TEST_CASE("MultiHeadDecode with bad input leaves the cache unchanged and works afterwards",
          "[kv_cache][decode][errors]") {
  const size_t h = 4, kvh = 2, d_k = 3, d_v = 3, d_model = 8, batch = 2, T = 4;
  const TestMatrix X = Random(batch * T, d_model, 1);
  const TestMatrix WQ = Random(d_model, h * d_k, 2, Layout::kContiguous, -0.3f, 0.3f);
  const TestMatrix WK = Random(d_model, kvh * d_k, 3, Layout::kContiguous, -0.3f, 0.3f);
  const TestMatrix WV = Random(d_model, kvh * d_v, 4, Layout::kContiguous, -0.3f, 0.3f);
  const MultiHeadWeights w{WQ, WK, WV, ConstMatrixView()};
  const HeadConfig cfg{h, kvh, d_k, d_v};
  KVCache cache;
  REQUIRE_OK(KVCache::Create(batch, kvh, d_k, d_v, T, &cache));
  TestMatrix X0 = GatherSteps(X, batch, T, 0, 2, Layout::kContiguous);
  TestMatrix out0(batch * 2, h * d_v);
  REQUIRE_OK(attnkit::MultiHeadDecode(X0, w, cfg, DecodeOptions(), &cache, out0));
  REQUIRE(cache.size() == 2);
  const TestMatrix keys_before = CopyOf(cache.Keys(1, 1));
  const TestMatrix values_before = CopyOf(cache.Values(0, 1));

  TestMatrix X1 = GatherSteps(X, batch, T, 2, 1, Layout::kContiguous);
  TestMatrix out1(batch, h * d_v);
  {
    INFO("NaN in X_new");
    TestMatrix bad = CopyOf(X1);
    bad(1, 3) = kNaN;
    CHECK_ERROR(attnkit::MultiHeadDecode(bad, w, cfg, DecodeOptions(), &cache, out1),
                Err(ErrorCode::kNonFinite).Name("X_new").Name("X"));
  }
  {
    INFO("X_new with the wrong number of columns");
    const TestMatrix bad = Random(batch, d_model + 1, 9);
    CHECK_ERROR(attnkit::MultiHeadDecode(bad, w, cfg, DecodeOptions(), &cache, out1),
                Err(ErrorCode::kShapeMismatch).Name("X_new").Name("X").Name("W_Q").Num(d_model));
  }
  {
    INFO("output with the wrong shape");
    TestMatrix bad_out(batch, h * d_v + 1);
    CHECK_ERROR(attnkit::MultiHeadDecode(X1, w, cfg, DecodeOptions(), &cache, bad_out),
                Err(ErrorCode::kShapeMismatch).Name("out").Num(h * d_v).Num(h * d_v + 1));
  }
  {
    INFO("config that does not match the cache (d_k)");
    const TestMatrix WQ4 = Random(d_model, h * 4, 5), WK4 = Random(d_model, kvh * 4, 6);
    const MultiHeadWeights w4{WQ4, WK4, WV, ConstMatrixView()};
    CHECK_ERROR(
        attnkit::MultiHeadDecode(X1, w4, HeadConfig{h, kvh, 4, d_v}, DecodeOptions(), &cache, out1),
        Err(ErrorCode::kShapeMismatch)
            .Or(ErrorCode::kInvalidArgument)
            .Name("d_k")
            .Name("cache")
            .Num(3)
            .Num(4));
  }
  {
    INFO("rows not divisible by the cache batch");
    const TestMatrix bad = Random(3, d_model, 10);
    TestMatrix bad_out(3, h * d_v);
    CHECK_ERROR(attnkit::MultiHeadDecode(bad, w, cfg, DecodeOptions(), &cache, bad_out),
                Err(ErrorCode::kShapeMismatch)
                    .Or(ErrorCode::kInvalidArgument)
                    .Name("X_new")
                    .Name("X")
                    .Name("batch"));
  }
  {
    INFO("too many tokens for the capacity");
    const TestMatrix bad = GatherSteps(X, batch, T, 0, 3, Layout::kContiguous);
    TestMatrix bad_out(batch * 3, h * d_v);
    CHECK_ERROR(attnkit::MultiHeadDecode(bad, w, cfg, DecodeOptions(), &cache, bad_out),
                Err(ErrorCode::kCapacity).Name("X_new").Num(T));
  }
  CHECK(cache.size() == 2);
  CHECK(CopyOf(cache.Keys(1, 1)).SameValues(keys_before));
  CHECK(CopyOf(cache.Values(0, 1)).SameValues(values_before));

  // The valid step still works and matches full causal attention.
  REQUIRE_OK(attnkit::MultiHeadDecode(X1, w, cfg, DecodeOptions(), &cache, out1));
  CHECK(cache.size() == 3);
  AttentionOptions causal;
  causal.causal = true;
  const ref::Mat full = ref::MultiHead(X.ToRef(), batch, WQ.ToRef(), WK.ToRef(), WV.ToRef(),
                                       ref::Mat(), h, kvh, ref::FromAttnkit(causal));
  ref::Mat want(batch, h * d_v);
  for (size_t b = 0; b < batch; ++b) want.SetBlock(b, 0, full.Block(b * T + 2, 1, 0, h * d_v));
  CHECK_CLOSE(out1, want, ChainTol(want));
}

}  // namespace
}  // namespace attnkit_test

namespace attnkit_test {
namespace {

TEST_CASE("KVCache: Truncate rolls back, Clone copies and the two then diverge", "[kv_cache]") {
  const size_t batch = 2, kvh = 2, d_k = 3, d_v = 4, cap = 6;
  KVCache cache;
  REQUIRE_OK(KVCache::Create(batch, kvh, d_k, d_v, cap, &cache));
  const TestMatrix K1 = Random(batch * 2, kvh * d_k, 1), V1 = Random(batch * 2, kvh * d_v, 2);
  const TestMatrix K2 = Random(batch * 1, kvh * d_k, 3), V2 = Random(batch * 1, kvh * d_v, 4);
  REQUIRE_OK(cache.Append(K1, V1));
  REQUIRE_OK(cache.Append(K2, V2));
  CHECK(cache.size() == 3);

  KVCache copy;
  REQUIRE_OK(cache.Clone(&copy));
  CHECK(copy.size() == 3);
  CHECK(copy.capacity() == cap);
  CheckCacheHolds(copy, {&K1, &K2}, {&V1, &V2});

  // Truncate drops the last token of every item; appending again overwrites it.
  REQUIRE_OK(cache.Truncate(2));
  CHECK(cache.size() == 2);
  CheckCacheHolds(cache, {&K1}, {&V1});
  const TestMatrix K3 = Random(batch * 1, kvh * d_k, 5), V3 = Random(batch * 1, kvh * d_v, 6);
  REQUIRE_OK(cache.Append(K3, V3));
  CheckCacheHolds(cache, {&K1, &K3}, {&V1, &V3});
  CheckCacheHolds(copy, {&K1, &K2}, {&V1, &V2});  // the clone is its own memory

  CHECK_ERROR(cache.Truncate(4), Err(ErrorCode::kInvalidArgument).Name("size").Num(3).Num(4));
  CHECK(cache.size() == 3);
  REQUIRE_OK(cache.Truncate(0));
  CHECK(cache.size() == 0);
  KVCache empty;
  CHECK_ERROR(empty.Truncate(0), Err(ErrorCode::kInvalidArgument).Name("cache"));
  CHECK_ERROR(empty.Clone(&copy), Err(ErrorCode::kInvalidArgument).Name("cache"));
  CHECK_ERROR(cache.Clone(nullptr), Err(ErrorCode::kInvalidArgument).Name("copy"));
}

}  // namespace
}  // namespace attnkit_test
