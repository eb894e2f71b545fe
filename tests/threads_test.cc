// ThreadPool, and attention with a pool: the work is cut into tasks of fixed
// size (rows, query blocks, key chunks), so results with any number of threads
// must equal the single-threaded results bit for bit.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "attnkit/packed_weights.h"
#include "src/core/internal.h"
#include "src/core/plan.h"
#include "src/core/validate.h"
#include "tests/test_util.h"

namespace {

using namespace attnkit;
using namespace attnkit_test;

TEST_CASE("ThreadPool runs every task exactly once, on valid thread indices", "[threads]") {
  for (size_t threads : {size_t{1}, size_t{2}, size_t{3}, size_t{8}}) {
    ThreadPool pool(threads);
    INFO("threads " << threads);
    // Without thread support (WebAssembly without -pthread) the pool has one.
    CHECK(pool.num_threads() == (ThreadPool::MaxThreads() > 1 || threads == 1 ? threads : 1));
    for (size_t tasks : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{1000}}) {
      for (int repeat = 0; repeat < 20; ++repeat) {
        std::vector<std::atomic<int>> runs(tasks);
        std::atomic<bool> bad_thread{false};
        pool.Run(tasks, [&](size_t task, size_t thread) {
          runs[task].fetch_add(1);
          if (thread >= pool.num_threads()) bad_thread = true;
        });
        for (size_t t = 0; t < tasks; ++t) REQUIRE(runs[t].load() == 1);
        REQUIRE_FALSE(bad_thread.load());
      }
    }
  }
  CHECK(ThreadPool(0).num_threads() == ThreadPool::MaxThreads());
}

TEST_CASE("ThreadPool serialises Run calls from several threads", "[threads]") {
  if (ThreadPool::MaxThreads() < 2) return;  // no threads in this build
  ThreadPool pool(3);
  std::atomic<long> sum{0};
  auto caller = [&] {
    for (int i = 0; i < 50; ++i) {
      pool.Run(16, [&](size_t task, size_t) { sum += static_cast<long>(task); });
    }
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  CHECK(sum.load() == 2 * 50 * (15 * 16 / 2));
}

// Runs `run(options)` without a pool and with pools of 2 and 3 threads, and
// checks that every output equals the single-threaded one bit for bit.
template <class Run>
void CheckSameWithThreads(AttentionOptions o, Run run) {
  o.pool = nullptr;
  const TestMatrix want = run(o);
  for (size_t threads : {size_t{2}, size_t{3}}) {
    ThreadPool pool(threads);
    o.pool = &pool;
    const TestMatrix got = run(o);
    INFO("threads " << threads);
    CHECK(got.SameValues(want));
    CHECK(got.PaddingIntact());
  }
}

TEST_CASE("Attention with a thread pool equals the single-threaded result bit for bit",
          "[threads]") {
  ForEachTarget([](int64_t) {
    const size_t T = 150, d_k = 19, d_v = 13;
    const TestMatrix Q = Random(T, d_k, 1, Layout::kStrided, -2.0f, 2.0f);
    const TestMatrix K = Random(T, d_k, 2, Layout::kStrided, -2.0f, 2.0f);
    const TestMatrix V = Random(T, d_v, 3, Layout::kStrided);
    const TestMask mask = RandomMask(T, T, 4, 0.7, Layout::kStrided);
    auto run = [&](const AttentionOptions& o) {
      TestMatrix out(T, d_v, Layout::kStrided);
      REQUIRE_OK(Attention(Q, K, V, o, out));
      return out;
    };
    AttentionOptions o;
    CheckSameWithThreads(o, run);
    o.causal = true;
    o.key_length = 120;
    CheckSameWithThreads(o, run);
    o = AttentionOptions();
    o.bool_mask = mask.view();
    o.softcap = 3.0f;
    CheckSameWithThreads(o, run);
  });
}

TEST_CASE("Multi-head attention with a thread pool: batch, grouped heads, padding, W_O",
          "[threads]") {
  ForEachTarget([](int64_t) {
    const size_t batch = 2, T = 70, d_model = 24, h = 4, kv = 2, d_k = 6, d_v = 5, d_out = 11;
    const TestMatrix X = Random(batch * T, d_model, 10, Layout::kStrided);
    const TestMatrix W_Q = Random(d_model, h * d_k, 11), W_K = Random(d_model, kv * d_k, 12),
                     W_V = Random(d_model, kv * d_v, 13), W_O = Random(h * d_v, d_out, 14);
    const MultiHeadWeights w{W_Q, W_K, W_V, W_O};
    const HeadConfig config{h, kv, d_k, d_v};
    auto run = [&](const AttentionOptions& o) {
      TestMatrix out(batch * T, d_out, Layout::kStrided);
      REQUIRE_OK(MultiHeadAttention(X, batch, w, config, o, out));
      return out;
    };
    AttentionOptions o;
    o.causal = true;
    o.key_lengths = {T, 33};
    CheckSameWithThreads(o, run);
  });
}

TEST_CASE("The multi-head training forward and backward over a pool: bit-identical, any groups",
          "[threads][backward]") {
  // Every call splits (cut-off 0). Items x K/V groups from 1 (fewer than the
  // threads: key and query blocks split) to 6 (whole groups per thread,
  // uneven over 2 and 3 threads), each against no pool; 70 queries and keys:
  // two key blocks, three query blocks, the last ones partial.
  const internal::PoolCutoffScope every_call(0);
  ThreadPool single(1), two(2), three(3);
  ForEachTarget([&](int64_t) {
    const size_t T = 70, d_k = 7, d_v = 5;
    for (const size_t batch : {size_t{1}, size_t{2}, size_t{3}}) {
      for (const size_t kv : {size_t{1}, size_t{2}}) {
        const size_t h = 2 * kv, N = batch * T;
        const HeadConfig c{h, kv, d_k, d_v};
        const TestMatrix Q = Random(N, h * d_k, 40, Layout::kStrided, -2.0f, 2.0f);
        const TestMatrix K = Random(N, kv * d_k, 41, Layout::kStrided, -2.0f, 2.0f);
        const TestMatrix V = Random(N, kv * d_v, 42, Layout::kStrided);
        const TestMatrix dO = Random(N, h * d_v, 43, Layout::kStrided);
        AttentionOptions o;
        o.causal = true;
        o.key_lengths.assign(batch, T);
        o.key_lengths.back() = 51;  // the last item's keys cut short
        struct Grads {
          TestMatrix out, lse, dQ, dK, dV;
        };
        auto run = [&](ThreadPool* pool) {
          o.pool = pool;
          Grads g{TestMatrix(N, h * d_v, Layout::kStrided), TestMatrix(N * h, 1),
                  TestMatrix(N, h * d_k, Layout::kStrided),
                  TestMatrix(N, kv * d_k, Layout::kStrided),
                  TestMatrix(N, kv * d_v, Layout::kStrided)};
          REQUIRE_OK(MultiHeadAttentionQKVForTraining(Q, K, V, batch, c, o, g.out, g.lse));
          REQUIRE_OK(MultiHeadAttentionQKVBackward(Q, K, V, g.out, dO, g.lse, batch, c, o, g.dQ,
                                                   g.dK, g.dV));
          return g;
        };
        const Grads one = run(nullptr);
        for (ThreadPool* pool : {&single, &two, &three}) {
          INFO("batch " << batch << ", K/V heads " << kv << ", threads " << pool->num_threads());
          const Grads g = run(pool);
          CHECK(g.out.SameValues(one.out));
          CHECK(g.lse.SameValues(one.lse));
          CHECK(g.dQ.SameValues(one.dQ));
          CHECK(g.dK.SameValues(one.dK));
          CHECK(g.dV.SameValues(one.dV));
          CHECK(g.dQ.PaddingIntact());
          CHECK(g.dK.PaddingIntact());
          CHECK(g.dV.PaddingIntact());
        }
      }
    }
  });
}

TEST_CASE("Decoding against a long KV cache with a thread pool (split-K over key chunks)",
          "[threads][decode]") {
  ForEachTarget([](int64_t) {
    const size_t h = 4, kv = 2, d = 8, T = 1000;
    KVCache cache;
    REQUIRE_OK(KVCache::Create(1, kv, d, d, T + 1, &cache));
    const TestMatrix K = Random(T, kv * d, 20), V = Random(T, kv * d, 21);
    REQUIRE_OK(cache.Append(K, V));
    const TestMatrix q = Random(1, h * d, 22, Layout::kStrided, -3.0f, 3.0f);
    auto run = [&](const AttentionOptions& o) {
      TestMatrix out(1, h * d, Layout::kStrided);
      REQUIRE_OK(AttendCached(q, cache, h, o, out));
      return out;
    };
    DecodeOptions o;
    CheckSameWithThreads(o, run);
    o.key_length = 700;
    CheckSameWithThreads(o, run);

    // MultiHeadDecode appends one token, so each run starts from a copy.
    const TestMatrix x = Random(1, 16, 23, Layout::kStrided);
    const TestMatrix W_Q = Random(16, h * d, 24), W_K = Random(16, kv * d, 25),
                     W_V = Random(16, kv * d, 26);
    const MultiHeadWeights w{W_Q, W_K, W_V, ConstMatrixView()};
    auto decode = [&](const AttentionOptions& opt) {
      KVCache c;
      REQUIRE_OK(KVCache::Create(1, kv, d, d, T + 1, &c));
      REQUIRE_OK(c.Append(K, V));
      TestMatrix out(1, h * d, Layout::kStrided);
      REQUIRE_OK(MultiHeadDecode(x, w, HeadConfig{h, kv, d, d}, opt, &c, out));
      REQUIRE(c.size() == T + 1);
      return out;
    };
    CheckSameWithThreads(DecodeOptions(), decode);
  });
}

TEST_CASE("An overflow found on a worker thread is reported, and the pool keeps working",
          "[threads]") {
  ThreadPool pool(2);
  const size_t T = 300, d = 4;
  TestMatrix Q = Random(T, d, 30), K = Random(T, d, 31);
  const TestMatrix V = Random(T, d, 32);
  AttentionOptions o;
  o.pool = &pool;
  o.scale = 1.0f;
  for (size_t c = 0; c < d; ++c) {
    Q(T - 1, c) = 1e30f;  // only the last query overflows: q . k_5 = 4e60
    K(5, c) = 1e30f;
  }
  TestMatrix out(T, d);
  CHECK_ERROR(Attention(Q, K, V, o, out), Err(ErrorCode::kOverflow).Name("Q"));
  for (size_t c = 0; c < d; ++c) Q(T - 1, c) = 0.5f;
  const Status ok = Attention(Q, K, V, o, out);
  CHECK(ok.ok());
  CHECK(AllFinite(out));
}

TEST_CASE("Products of packed bands over a pool equal one thread bit for bit", "[threads]") {
  // From kPackMinRows rows of C (A^T B: kPackMinRowsTransposedA), B (B^T) is
  // packed in panels. Over a pool, ranges of C's columns go to the threads
  // when its panels share out evenly (133 columns: 5 panels), each thread
  // packing its own; else bands of C's rows (70 columns: 3 panels), reading
  // B packed once by ranges over the threads (203 rows) or in place (an
  // A^T B of 70 rows). One thread packs kMaxPanel columns at a time as it
  // reads them. The last range ends inside a panel; the last band is short.
  // A B from weights packed once (ProductPanels) splits the same way.
  const internal::PoolCutoffScope every_call(0);
  ThreadPool two(2), three(3);
  ForEachTarget([&](int64_t) {
    for (const size_t M : {size_t{203}, size_t{70}}) {
      for (const size_t N : {size_t{70}, size_t{133}}) {
        const size_t K = 37;
        const TestMatrix A = Random(M, K, 50, Layout::kStrided), B = Random(K, N, 51);
        const TestMatrix Bt = Random(N, K, 52, Layout::kStrided), At = Random(K, M, 53);
        PackedMatrices packed;
        REQUIRE_OK(PackMatrices({B.cview()}, &packed));
        auto run = [&](ThreadPool* pool) {
          std::vector<TestMatrix> c(4, TestMatrix(M, N, Layout::kStrided));
          REQUIRE_OK(internal::Product(A, B, c[0], false, "A", "A B", pool));
          REQUIRE_OK(internal::Product(A, Bt, c[1], true, "A", "A B^T", pool));
          REQUIRE_OK(internal::ProductTransposedA(At, B, c[2], "A", "A^T B", pool));
          REQUIRE_OK(internal::ProductPanels(A, packed[0].panels, packed[0].panel_width, c[3], "A",
                                             "A B", pool));
          return c;
        };
        const std::vector<TestMatrix> one = run(nullptr);
        for (ThreadPool* pool : {&two, &three}) {
          const std::vector<TestMatrix> c = run(pool);
          for (size_t i = 0; i < c.size(); ++i) {
            INFO("M " << M << ", N " << N << ", product " << i << ", threads "
                      << pool->num_threads());
            CHECK(c[i].SameValues(one[i]));
            CHECK(c[i].PaddingIntact());
          }
        }
        // And the public products (one thread) give the same bits.
        TestMatrix pub(M, N, Layout::kStrided);
        REQUIRE_OK(MatMulTransposedA(At, B, pub));
        CHECK(pub.SameValues(one[2]));
        REQUIRE_OK(MatMul(A, B, pub));
        CHECK(pub.SameValues(one[0]));
        CHECK(pub.SameValues(one[3]));
      }
    }
  });
}

TEST_CASE("Sums that overflow on the fused paths are found, any pool", "[threads][overflow]") {
  // 70 queries and keys (the fused forward and the blocked backward), V and
  // dO near the float limit, causal. The forward's running sums pass it
  // where the outputs (weighted means of V) do not: found, the call reruns
  // on scaled values and succeeds. The gradients pass it: kOverflow. Each
  // path checks what it writes as it writes it.
  const internal::PoolCutoffScope every_call(0);
  ThreadPool two(2);
  ForEachTarget([&](int64_t) {
    const size_t T = 70, d = 5;
    const TestMatrix Q = Random(T, 2 * d, 60, Layout::kStrided, -0.1f, 0.1f);
    const TestMatrix K = Random(T, 2 * d, 61, Layout::kStrided, -0.1f, 0.1f);
    const TestMatrix V = Random(T, 2 * d, 62, Layout::kStrided, 3e38f, 3.4e38f);
    const TestMatrix small_V = Random(T, 2 * d, 63, Layout::kStrided);
    const TestMatrix dO = Random(T, 2 * d, 64, Layout::kStrided, 3e38f, 3.4e38f);
    const HeadConfig heads{2, 2, d, d};
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two}) {
      INFO("pool " << (pool ? 2 : 0));
      AttentionOptions o;
      o.pool = pool;
      o.causal = true;
      TestMatrix out(T, 2 * d, Layout::kStrided), lse(2 * T, 1);
      REQUIRE_OK(MultiHeadAttentionQKVForTraining(Q, K, V, 1, heads, o, out, lse));
      CHECK(AllFinite(out));
      REQUIRE_OK(MultiHeadAttentionQKVForTraining(Q, K, small_V, 1, heads, o, out, lse));
      TestMatrix dQ(T, 2 * d, Layout::kStrided), dK(T, 2 * d, Layout::kStrided),
          dV(T, 2 * d, Layout::kStrided);
      CHECK_ERROR(
          MultiHeadAttentionQKVBackward(Q, K, small_V, out, dO, lse, 1, heads, o, dQ, dK, dV),
          Err(ErrorCode::kOverflow).Name("dO"));
    }
  });
}

TEST_CASE("A job below the pool's cut-off runs on the calling thread, a larger one on the pool",
          "[threads]") {
  ThreadPool pool(2);
  CHECK(internal::PoolFor(&pool, internal::kPoolMinMultiplyAdds / 2) == nullptr);
  CHECK(internal::PoolFor(&pool, internal::kPoolMinMultiplyAdds) == &pool);
  CHECK(internal::PoolFor(nullptr, internal::kPoolMinMultiplyAdds * 4) == nullptr);
  // One causal head of d 64: T = 64 (T^2 2 d = 0.5 million multiply-adds)
  // stays on the caller; T = 1024 (134 million) goes to the pool.
  for (const size_t T : {size_t{64}, size_t{1024}}) {
    INFO("T " << T);
    const TestMatrix Q = Random(T, 64, 1), K = Random(T, 64, 2), V = Random(T, 64, 3);
    TestMatrix out(T, 64);
    AttentionOptions options;
    options.causal = true;
    options.pool = &pool;
    internal::AttentionJob job;
    job.pool = &pool;
    job.heads.push_back(internal::OneHead(Q, K, V, options, out));
    internal::AttentionPlan plan;
    REQUIRE_OK(internal::PlanAttention(job, &plan));
    CHECK(plan.pool == (T == 64 ? nullptr : &pool));
  }
}

}  // namespace
