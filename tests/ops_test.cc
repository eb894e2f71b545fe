// Kernels: MatMul, MatMulTransposed, MatMulTransposedA, ScaleScores (with softcap), SoftmaxRows,
// and the SIMD target list, on every compiled target against the float64
// reference.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <set>
#include <string>
#include <vector>

#include "src/core/internal.h"
#include "tests/reference.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::targets::Available;
using attnkit::targets::Current;
using attnkit::targets::Name;

TEST_CASE("targets: Force switches dispatch to every target; Available and Current stay true",
          "[ops][targets]") {
  const std::vector<int64_t> targets = Available();
  REQUIRE(!targets.empty());
  std::set<int64_t> distinct(targets.begin(), targets.end());
  CHECK(distinct.size() == targets.size());
  REQUIRE_OK(attnkit::targets::EnvironmentStatus());
  REQUIRE(attnkit::targets::Forced() == 0);
  const int64_t normal = Current();
  INFO("normal dispatch target " << Name(normal));
  // With normal dispatch the best available target (listed first) is used.
  CHECK(normal == targets.front());
  for (int64_t t : targets) {
    REQUIRE(Name(t) != nullptr);
    INFO("target " << Name(t));
    CHECK(std::string(Name(t)).size() > 0);
    for (const bool by_name : {false, true}) {
      INFO("by name " << by_name);
      std::string lower = Name(t);
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      REQUIRE_OK(by_name ? attnkit::targets::ForceByName(lower.c_str())
                         : attnkit::targets::Force(t));
      CHECK(Current() == t);
      CHECK(attnkit::targets::Forced() == t);
      // Every target is still listed while one is forced.
      CHECK(Available() == targets);
      // A dispatched operation works on the forced target.
      TestMatrix A = FromRows({{1, 2}, {3, 4}}), B = FromRows({{5, 6}, {7, 8}}), C(2, 2);
      CHECK_OK(attnkit::MatMul(A, B, C));
      CHECK(C(0, 0) == 19.0f);
      CHECK(C(1, 1) == 50.0f);
      REQUIRE_OK(attnkit::targets::Force(0));
      CHECK(Current() == normal);
      CHECK(attnkit::targets::Forced() == 0);
    }
  }
}

TEST_CASE("targets: forcing a target not compiled or not supported is an error naming it",
          "[ops][targets][errors]") {
  const std::vector<int64_t> targets = Available();
  // A bit of no available target, two targets at once, and a name no build
  // has.
  int64_t missing = 1;
  while (std::find(targets.begin(), targets.end(), missing) != targets.end()) missing <<= 1;
  CHECK_ERROR(attnkit::targets::Force(missing),
              Err(ErrorCode::kInvalidArgument).Name("target").Name(Name(targets.front())));
  if (targets.size() > 1) {
    CHECK_ERROR(attnkit::targets::Force(targets[0] | targets[1]),
                Err(ErrorCode::kInvalidArgument).Name("target"));
  }
  CHECK_ERROR(attnkit::targets::ForceByName("NEON_SVE9"),
              Err(ErrorCode::kInvalidArgument).Name("name").Name("NEON_SVE9"));
  CHECK_ERROR(attnkit::targets::ForceByName(nullptr),
              Err(ErrorCode::kInvalidArgument).Name("name"));
  // Dispatch is unchanged.
  CHECK(attnkit::targets::Forced() == 0);
  CHECK(Current() == targets.front());
}

TEST_CASE("targets: ATTNKIT_TARGET forces a target by name; a bad one is reported",
          "[ops][targets]") {
  const std::vector<int64_t> targets = Available();
  struct Restore {
    ~Restore() {
      unsetenv("ATTNKIT_TARGET");
      (void)attnkit::internal::ForceFromEnvironment();
      attnkit::targets::ForceForTest(0);
    }
  } restore;
  for (int64_t t : targets) {
    INFO("target " << Name(t));
    REQUIRE(setenv("ATTNKIT_TARGET", Name(t), 1) == 0);
    REQUIRE_OK(attnkit::internal::ForceFromEnvironment());
    CHECK(Current() == t);
    CHECK_OK(attnkit::targets::EnvironmentStatus());
    REQUIRE_OK(attnkit::targets::Force(0));
  }
  REQUIRE(setenv("ATTNKIT_TARGET", "NOT_A_TARGET", 1) == 0);
  CHECK_ERROR(attnkit::internal::ForceFromEnvironment(),
              Err(ErrorCode::kInvalidArgument).Name("ATTNKIT_TARGET").Name("NOT_A_TARGET"));
  CHECK_ERROR(attnkit::targets::EnvironmentStatus(),
              Err(ErrorCode::kInvalidArgument).Name("ATTNKIT_TARGET"));
  CHECK(Current() == targets.front());
  REQUIRE(setenv("ATTNKIT_TARGET", "", 1) == 0);
  CHECK_OK(attnkit::internal::ForceFromEnvironment());
  CHECK_OK(attnkit::targets::EnvironmentStatus());
}

TEST_CASE("MatMul matches the float64 reference on every target, sizes around lane counts",
          "[ops][matmul]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 100;
    for (size_t M : {size_t{1}, size_t{3}, size_t{17}}) {
      for (size_t K : AllSizes()) {
        for (size_t N : LaneSizes()) {
          const Layout layout = ((K + N) % 2) ? Layout::kStrided : Layout::kContiguous;
          INFO("M=" << M << " K=" << K << " N=" << N << " " << LayoutName(layout));
          TestMatrix A = Random(M, K, ++seed, layout);
          TestMatrix B = Random(K, N, ++seed, layout, -2.0f, 2.0f);
          TestMatrix C(M, N, layout);
          REQUIRE_OK(attnkit::MatMul(A, B, C));
          CHECK_CLOSE(C, ref::MatMul(A.ToRef(), B.ToRef()), DotTol(K, 1.0, 2.0));
          CHECK(C.PaddingIntact());
        }
      }
    }
    // The wide N sizes (31, 32, 33, 37) once more, with mixed layouts of the
    // inputs and the output.
    for (size_t N : {size_t{13}, size_t{31}, size_t{32}, size_t{33}, size_t{37}}) {
      for (size_t K : {size_t{1}, size_t{16}, size_t{33}}) {
        INFO("M=5 K=" << K << " N=" << N << " A strided, B contiguous, C strided");
        TestMatrix A = Random(5, K, ++seed, Layout::kStrided);
        TestMatrix B = Random(K, N, ++seed, Layout::kContiguous);
        TestMatrix C(5, N, Layout::kStrided);
        REQUIRE_OK(attnkit::MatMul(A, B, C));
        CHECK_CLOSE(C, ref::MatMul(A.ToRef(), B.ToRef()), DotTol(K, 1.0, 1.0));
        CHECK(C.PaddingIntact());
      }
    }
  });
}

// Calls fn(M, K, N, layout, seed) for M around internal::kPackMinRows (128),
// where a product's B (or B^T) starts to be packed in panels, and awkward K
// and N (1, primes, lanes +- 1, panel edges), on every target.
template <class Fn>
void ForEachPackedShape(uint32_t seed, const Fn& fn) {
  ForEachTarget([&](int64_t) {
    for (size_t M : {size_t{127}, size_t{128}, size_t{131}}) {
      for (size_t K : {size_t{1}, size_t{7}, size_t{64}, size_t{67}}) {
        for (size_t N : {size_t{1}, size_t{3}, size_t{15}, size_t{17}, size_t{31}, size_t{33},
                         size_t{63}, size_t{65}, size_t{97}}) {
          const Layout layout = ((K + N) % 2) ? Layout::kStrided : Layout::kContiguous;
          INFO("M=" << M << " K=" << K << " N=" << N << " " << LayoutName(layout));
          fn(M, K, N, layout, seed += 2);
        }
      }
    }
  });
}

TEST_CASE("MatMul with B packed in panels (many rows) matches the reference and the unpacked path",
          "[ops][matmul]") {
  // From internal::kPackMinRows (128) rows of A on, B is packed in panels of
  // two vectors first; the sums are the same, in the same order, as when B is
  // read in place, so row blocks below the threshold give the same bits.
  ForEachPackedShape(300, [](size_t M, size_t K, size_t N, Layout layout, uint32_t seed) {
    const TestMatrix A = Random(M, K, seed, layout);
    const TestMatrix B = Random(K, N, seed + 1, layout, -2.0f, 2.0f);
    TestMatrix C(M, N, layout), rows(M, N, Layout::kContiguous);
    REQUIRE_OK(attnkit::MatMul(A, B, C));
    CHECK_CLOSE(C, ref::MatMul(A.ToRef(), B.ToRef()), DotTol(K, 1.0, 2.0));
    CHECK(C.PaddingIntact());
    for (size_t r = 0; r < M; r += 64) {  // blocks of at most 64 rows: B in place
      const size_t n = std::min<size_t>(64, M - r);
      REQUIRE_OK(attnkit::MatMul(A.cview().Block(r, n, 0, K), B, rows.view().Block(r, n, 0, N)));
    }
    CHECK_CLOSE(C, rows.ToRef(), kExact);
  });
}

TEST_CASE("MatMul of one row gives the bits of that row in a taller product", "[ops][matmul]") {
  // A one-row product (a decoding step's) sums B's rows weighted by A's
  // values, row after row; the register tiles of a taller product sum the
  // same terms in the same order, so each row of C is the same either way.
  // A one-row A B^T (a decoding step's unembedding) takes B's rows many at
  // a time, a taller one (below the packed products' rows) four at a time:
  // each row's dot product is summed the same way either way.
  ForEachTarget([](int64_t) {
    uint32_t seed = 500;
    for (size_t K : {size_t{1}, size_t{7}, size_t{64}, size_t{67}, size_t{300}}) {
      for (size_t N : {size_t{1}, size_t{3}, size_t{15}, size_t{17}, size_t{33}, size_t{65},
                       size_t{97}, size_t{130}}) {
        const Layout layout = ((K + N) % 2) ? Layout::kStrided : Layout::kContiguous;
        INFO("K=" << K << " N=" << N << " " << LayoutName(layout));
        const TestMatrix A = Random(9, K, seed += 2, layout);
        const TestMatrix B = Random(K, N, seed + 1, layout, -2.0f, 2.0f);
        TestMatrix C(9, N, layout), row(1, N, layout);
        const TestMatrix Bt = Random(N, K, seed + 3, layout, -2.0f, 2.0f);
        TestMatrix Ct(9, N, layout);
        REQUIRE_OK(attnkit::MatMul(A, B, C));
        REQUIRE_OK(attnkit::MatMulTransposed(A, Bt, Ct));
        for (size_t r = 0; r < 9; ++r) {
          REQUIRE_OK(attnkit::MatMul(A.cview().Block(r, 1, 0, K), B, row));
          CHECK_CLOSE(row, C.ToRef().Block(r, 1, 0, N), kExact);
          CHECK(row.PaddingIntact());
          REQUIRE_OK(attnkit::MatMulTransposed(A.cview().Block(r, 1, 0, K), Bt, row));
          CHECK_CLOSE(row, Ct.ToRef().Block(r, 1, 0, N), kExact);
          CHECK(row.PaddingIntact());
        }
      }
    }
  });
}

TEST_CASE("MatMul overwrites the output instead of accumulating into it", "[ops][matmul]") {
  ForEachTarget([](int64_t) {
    TestMatrix A = Random(4, 9, 1), B = Random(9, 7, 2);
    TestMatrix C = Random(4, 7, 3, Layout::kContiguous, 100.0f, 200.0f);
    REQUIRE_OK(attnkit::MatMul(A, B, C));
    CHECK_CLOSE(C, ref::MatMul(A.ToRef(), B.ToRef()), DotTol(9, 1, 1));
    TestMatrix D = Random(4, 4, 4, Layout::kStrided, 100.0f, 200.0f);
    TestMatrix Bt = Random(4, 9, 5);
    REQUIRE_OK(attnkit::MatMulTransposed(A, Bt, D));
    CHECK_CLOSE(D, ref::MatMulT(A.ToRef(), Bt.ToRef()), DotTol(9, 1, 1));
  });
}

TEST_CASE("MatMul on exact small integers is exact", "[ops][matmul]") {
  ForEachTarget([](int64_t) {
    TestMatrix A = FromRows({{1, 2, 3}, {4, 5, 6}});
    TestMatrix B = FromRows({{7, 8}, {9, 10}, {11, 12}});
    TestMatrix C(2, 2);
    REQUIRE_OK(attnkit::MatMul(A, B, C));
    CHECK(C(0, 0) == 58.0f);
    CHECK(C(0, 1) == 64.0f);
    CHECK(C(1, 0) == 139.0f);
    CHECK(C(1, 1) == 154.0f);
  });
}

TEST_CASE("MatMulTransposed with B^T packed in panels (many rows) matches the reference",
          "[ops][matmul]") {
  // From internal::kPackMinRows (128) rows of A on, B^T is packed in panels
  // and multiplied as MatMul multiplies; below, each value is a dot product.
  // Both are checked against float64, and a packed result against MatMul of
  // the same A and B^T (the same sums in the same order: the same bits).
  ForEachPackedShape(400, [](size_t M, size_t K, size_t N, Layout layout, uint32_t seed) {
    const TestMatrix A = Random(M, K, seed, layout);
    const TestMatrix B = Random(N, K, seed + 1, layout, -2.0f, 2.0f);
    TestMatrix C(M, N, layout), Bt(K, N, Layout::kContiguous), viaMatMul(M, N);
    REQUIRE_OK(attnkit::MatMulTransposed(A, B, C));
    CHECK_CLOSE(C, ref::MatMulT(A.ToRef(), B.ToRef()), DotTol(K, 1.0, 2.0));
    CHECK(C.PaddingIntact());
    for (size_t r = 0; r < N; ++r) {
      for (size_t c = 0; c < K; ++c) Bt(c, r) = B(r, c);
    }
    REQUIRE_OK(attnkit::MatMul(A, Bt, viaMatMul));
    if (M >= 128) CHECK_CLOSE(C, viaMatMul.ToRef(), kExact);
  });
}

TEST_CASE("MatMulTransposed matches the float64 reference on every target", "[ops][matmul]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 200;
    for (size_t M : {size_t{1}, size_t{4}, size_t{9}}) {
      for (size_t K : AllSizes()) {
        for (size_t N : LaneSizes()) {
          const Layout layout = ((M + K + N) % 2) ? Layout::kStrided : Layout::kContiguous;
          INFO("M=" << M << " K=" << K << " N=" << N << " " << LayoutName(layout));
          TestMatrix A = Random(M, K, ++seed, layout, -3.0f, 3.0f);
          TestMatrix B = Random(N, K, ++seed, layout);
          TestMatrix C(M, N, layout);
          REQUIRE_OK(attnkit::MatMulTransposed(A, B, C));
          CHECK_CLOSE(C, ref::MatMulT(A.ToRef(), B.ToRef()), DotTol(K, 3.0, 1.0));
          CHECK(C.PaddingIntact());
        }
      }
    }
    for (size_t N : {size_t{31}, size_t{32}, size_t{33}, size_t{37}}) {
      INFO("M=3 K=13 N=" << N << " inputs contiguous, output strided");
      TestMatrix A = Random(3, 13, ++seed), B = Random(N, 13, ++seed);
      TestMatrix C(3, N, Layout::kStrided);
      REQUIRE_OK(attnkit::MatMulTransposed(A, B, C));
      CHECK_CLOSE(C, ref::MatMulT(A.ToRef(), B.ToRef()), DotTol(13, 1, 1));
      CHECK(C.PaddingIntact());
    }
  });
}

TEST_CASE("MatMulTransposedA matches the float64 reference on every target", "[ops][matmul]") {
  // C = A^T B for A [K, M], B [K, N]: below and from
  // kPackMinRowsTransposedA (64) columns of A (rows of A^T, where B is packed
  // in panels; 70: packed here, not in MatMul of A^T), strided views, K
  // around the register tiles' four steps per pass. The tiles read A^T in
  // place with the sums of MatMul of a transposed copy, in the same order:
  // the same bits.
  ForEachTarget([](int64_t) {
    uint32_t seed = 300;
    for (size_t M : {size_t{1}, size_t{17}, size_t{70}, size_t{130}}) {
      for (size_t K : {size_t{1}, size_t{16}, size_t{33}}) {
        for (size_t N : {size_t{3}, size_t{32}, size_t{41}}) {
          const Layout layout = ((M + K + N) % 2) ? Layout::kStrided : Layout::kContiguous;
          INFO("M=" << M << " K=" << K << " N=" << N << " " << LayoutName(layout));
          const TestMatrix A = Random(K, M, ++seed, layout, -3.0f, 3.0f);
          const TestMatrix B = Random(K, N, ++seed, layout);
          TestMatrix At(M, K), C(M, N, layout);
          for (size_t r = 0; r < K; ++r) {
            for (size_t c = 0; c < M; ++c) At(c, r) = A(r, c);
          }
          REQUIRE_OK(attnkit::MatMulTransposedA(A, B, C));
          CHECK_CLOSE(C, ref::MatMul(At.ToRef(), B.ToRef()), DotTol(K, 3.0, 1.0));
          CHECK(C.PaddingIntact());
          TestMatrix viaMatMul(M, N);
          REQUIRE_OK(attnkit::MatMul(At, B, viaMatMul));
          CHECK_CLOSE(C, viaMatMul.ToRef(), kExact);
        }
      }
    }
  });
  // Shapes are checked like MatMul's, naming the argument.
  const TestMatrix A = Random(4, 3, 1), B = Random(4, 5, 2), B3 = Random(3, 5, 3);
  TestMatrix C(3, 5), C4(4, 5);
  CHECK_ERROR(attnkit::MatMulTransposedA(A, B3, C),
              Err(attnkit::ErrorCode::kShapeMismatch).Name("B").Num(4).Num(3));
  CHECK_ERROR(attnkit::MatMulTransposedA(A, B, C4),
              Err(attnkit::ErrorCode::kShapeMismatch).Name("C").Num(3).Num(4));
}

TEST_CASE("The products' FiniteInputs forms give the same bits without scanning A and B",
          "[ops][matmul]") {
  // Unpacked and packed shapes (B in panels from 128 rows of C on).
  ForEachTarget([](int64_t) {
    uint32_t seed = 500;
    for (size_t M : {size_t{5}, size_t{130}}) {
      for (size_t K : {size_t{7}, size_t{33}}) {
        for (size_t N : {size_t{17}, size_t{40}}) {
          INFO("M=" << M << " K=" << K << " N=" << N);
          const TestMatrix A = Random(M, K, ++seed), B = Random(K, N, ++seed);
          const TestMatrix Bt = Random(N, K, ++seed), At = Random(K, M, ++seed);
          TestMatrix C(M, N), D(M, N);
          REQUIRE_OK(attnkit::MatMul(A, B, C));
          REQUIRE_OK(attnkit::MatMul(A, B, D, attnkit::FiniteInputs{}));
          CHECK_CLOSE(D, C.ToRef(), kExact);
          REQUIRE_OK(attnkit::MatMulTransposed(A, Bt, C));
          REQUIRE_OK(attnkit::MatMulTransposed(A, Bt, D, attnkit::FiniteInputs{}));
          CHECK_CLOSE(D, C.ToRef(), kExact);
          REQUIRE_OK(attnkit::MatMulTransposedA(At, B, C));
          REQUIRE_OK(attnkit::MatMulTransposedA(At, B, D, attnkit::FiniteInputs{}));
          CHECK_CLOSE(D, C.ToRef(), kExact);
        }
      }
    }
  });
  // Shapes and aliasing are still checked.
  TestMatrix A = Random(4, 3, 1), B3 = Random(3, 3, 2), B4 = Random(4, 5, 3), C(4, 5);
  CHECK_ERROR(attnkit::MatMul(A, B4, C, attnkit::FiniteInputs{}),
              Err(attnkit::ErrorCode::kShapeMismatch).Name("B").Num(3).Num(4));
  CHECK_ERROR(attnkit::MatMul(A, B3, A.view(), attnkit::FiniteInputs{}),
              Err(attnkit::ErrorCode::kInvalidArgument).Name("C"));
}

TEST_CASE("A product reports any inf or NaN it stores, from every tile of its kernel",
          "[ops][matmul]") {
  // One huge value of A or B overflows one row or column of C: in each kind
  // of register tile (two vectors, one vector, one lane; 8, 4, 3, 2 or 1
  // rows), in B packed or in place. A NaN or inf in inputs promised finite
  // reaches C too, so FiniteInputs reports it as well; never an OK with inf
  // or NaN in C.
  ForEachTarget([](int64_t) {
    const float kHuge = 3e38f;
    for (size_t M : {size_t{13}, size_t{131}}) {
      const size_t K = 9, N = 37;
      for (size_t row : {size_t{0}, size_t{8}, M - 1}) {
        for (size_t col : {size_t{0}, size_t{31}, size_t{36}}) {
          INFO("M=" << M << " row " << row << " column " << col);
          TestMatrix A = Random(M, K, 7, Layout::kContiguous, 1.0f, 2.0f);
          TestMatrix B = Random(K, N, 8, Layout::kContiguous, 1.0f, 2.0f);
          TestMatrix C(M, N);
          A(row, 4) = kHuge;  // row `row` of C overflows
          CHECK_ERROR(attnkit::MatMul(A, B, C), Err(attnkit::ErrorCode::kOverflow).Name("A"));
          CHECK_ERROR(attnkit::MatMul(A, B, C, attnkit::FiniteInputs{}),
                      Err(attnkit::ErrorCode::kOverflow).Name("A"));
          A(row, 4) = 1.0f;
          B(4, col) = kHuge;  // column `col` of C overflows
          CHECK_ERROR(attnkit::MatMul(A, B, C, attnkit::FiniteInputs{}),
                      Err(attnkit::ErrorCode::kOverflow).Name("A"));
          TestMatrix Bt(N, K), At(K, M);
          for (size_t k = 0; k < K; ++k) {
            for (size_t j = 0; j < N; ++j) Bt(j, k) = B(k, j);
            for (size_t i = 0; i < M; ++i) At(k, i) = A(i, k);
          }
          CHECK_ERROR(attnkit::MatMulTransposed(A, Bt, C, attnkit::FiniteInputs{}),
                      Err(attnkit::ErrorCode::kOverflow).Name("A"));
          CHECK_ERROR(attnkit::MatMulTransposedA(At, B, C, attnkit::FiniteInputs{}),
                      Err(attnkit::ErrorCode::kOverflow).Name("A"));
          B(4, col) = kNaN;
          CHECK_ERROR(attnkit::MatMul(A, B, C, attnkit::FiniteInputs{}),
                      Err(attnkit::ErrorCode::kOverflow).Name("A"));
          B(4, col) = 1.0f;
          At(4, row) = -kInf;
          CHECK_ERROR(attnkit::MatMulTransposedA(At, B, C, attnkit::FiniteInputs{}),
                      Err(attnkit::ErrorCode::kOverflow).Name("A"));
          At(4, row) = 1.0f;
          REQUIRE_OK(attnkit::MatMulTransposedA(At, B, C, attnkit::FiniteInputs{}));
        }
      }
    }
  });
}

TEST_CASE("ScaleScores scales and softcaps like the reference on every target", "[ops][scale]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 300;
    for (size_t N : AllSizes()) {
      for (Layout layout : AllLayouts()) {
        for (float scale : {1.0f, 0.125f, 0.7071068f, 3.0f}) {
          for (float softcap : {0.0f, 0.5f, 5.0f, 30.0f}) {
            INFO("N=" << N << " " << LayoutName(layout) << " scale=" << scale
                      << " softcap=" << softcap);
            TestMatrix x = Random(3, N, ++seed, layout, -20.0f, 20.0f);
            const ref::Mat want = ref::Scale(x.ToRef(), scale, softcap);
            REQUIRE_OK(attnkit::ScaleScores(x, scale, softcap));
            // One multiply and a tanh: a few ulp relative, plus an absolute
            // 1e-6 * softcap for tanh near 0 / saturation.
            CHECK_CLOSE(x, want, (Tol{1e-6 * std::max(1.0f, softcap), 4e-6}));
            CHECK(x.PaddingIntact());
            if (softcap > 0.0f) {
              // Capped values never exceed the cap.
              CHECK(MaxAbs(x) <= softcap);
            }
          }
        }
      }
    }
  });
}

// The backward's ScaleSoftcapGrad multiplies by the slope that the forward's
// ScaleSoftcap step keeps: d/ds softcap tanh(s / softcap) = 1 - tanh^2, after
// the scale; 1 without a softcap. The scores are those of ScaleScores.
TEST_CASE("ScaleSoftcap's slope is the softcap's derivative on every target", "[ops][scale]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 350;
    for (size_t N : AllSizes()) {
      for (float scale : {1.0f, 0.125f, 3.0f}) {
        for (float softcap : {0.0f, 0.5f, 5.0f, 30.0f}) {
          INFO("N=" << N << " scale=" << scale << " softcap=" << softcap);
          TestMatrix x = Random(3, N, ++seed, Layout::kStrided, -20.0f, 20.0f);
          TestMatrix slope(3, N, Layout::kStrided);
          const ref::Mat in = x.ToRef();
          const ref::Mat want = ref::Scale(in, scale, softcap);
          REQUIRE(attnkit::internal::RunScaleScores(x, scale, softcap, slope));
          CHECK_CLOSE(x, want, (Tol{1e-6 * std::max(1.0f, softcap), 4e-6}));
          CHECK(slope.PaddingIntact());
          double worst = 0.0;
          for (size_t r = 0; r < 3; ++r) {
            for (size_t c = 0; c < N; ++c) {
              double g = 1.0;
              if (softcap > 0.0f) {
                const double t = std::tanh(double(scale) * in(r, c) / softcap);
                g = 1.0 - t * t;
              }
              // tanh to a few ulp: 1 - t^2 to ~1e-6 absolute.
              worst = std::max(worst, std::abs(slope(r, c) - g));
            }
          }
          CHECK(worst <= 2e-6);
        }
      }
    }
  });
}

TEST_CASE("ScaleScores softcap saturates huge scores at +-softcap without NaN", "[ops][scale]") {
  ForEachTarget([](int64_t) {
    TestMatrix x = FromRows({{1e30f, -1e30f, 3e38f, -3e38f, 0.0f}});
    REQUIRE_OK(attnkit::ScaleScores(x, 1.0f, 10.0f));
    CHECK(x(0, 0) == Approx(10.0f));
    CHECK(x(0, 1) == Approx(-10.0f));
    CHECK(x(0, 2) == Approx(10.0f));
    CHECK(x(0, 3) == Approx(-10.0f));
    CHECK(x(0, 4) == 0.0f);
    CHECK(AllFinite(x));
  });
}

TEST_CASE("SoftmaxRows matches the reference and rows sum to 1 on every target", "[ops][softmax]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 400;
    for (size_t N : AllSizes()) {
      for (Layout layout : AllLayouts()) {
        INFO("N=" << N << " " << LayoutName(layout));
        TestMatrix x = Random(4, N, ++seed, layout, -8.0f, 8.0f);
        const ref::Mat want = ref::SoftmaxRows(x.ToRef());
        REQUIRE_OK(attnkit::SoftmaxRows(x));
        // exp and the sum in float32: relative error of a few 1e-7 per term,
        // and the largest input (8) amplifies nothing since max is subtracted.
        CHECK_CLOSE(x, want, (Tol{2e-6, 1e-5}));
        CHECK(x.PaddingIntact());
        for (size_t r = 0; r < 4; ++r) CHECK(RowSum(x, r) == Approx(1.0).margin(1e-5));
      }
    }
  });
}

TEST_CASE("SoftmaxRows gives -inf entries weight exactly 0 and fully -inf rows all zeros",
          "[ops][softmax][mask]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 500;
    for (size_t N : AllSizes()) {
      for (Layout layout : AllLayouts()) {
        INFO("N=" << N << " " << LayoutName(layout));
        TestMatrix x = Random(4, N, ++seed, layout, -5.0f, 5.0f);
        Rng rng(seed);
        // Row 0: random -inf cells (one cell kept finite); row 1: all -inf;
        // row 2: only the last cell finite; row 3: untouched.
        for (size_t c = 0; c < N; ++c) {
          if (c != N / 2 && rng.Uniform(0, 1) < 0.5f) x(0, c) = -kInf;
          x(1, c) = -kInf;
          if (c + 1 < N) x(2, c) = -kInf;
        }
        const TestMatrix before = CopyOf(x);
        const ref::Mat want = ref::SoftmaxRows(x.ToRef());
        REQUIRE_OK(attnkit::SoftmaxRows(x));
        CHECK(AllFinite(x));
        CHECK_CLOSE(x, want, (Tol{2e-6, 1e-5}));
        for (size_t r = 0; r < 4; ++r)
          for (size_t c = 0; c < N; ++c)
            if (before(r, c) == -kInf) CHECK(x(r, c) == 0.0f);
        for (size_t c = 0; c < N; ++c) CHECK(x(1, c) == 0.0f);
        CHECK(x(2, N - 1) == Approx(1.0f).margin(1e-6));
        CHECK(RowSum(x, 0) == Approx(1.0).margin(1e-5));
        CHECK(RowSum(x, 3) == Approx(1.0).margin(1e-5));
        CHECK(x.PaddingIntact());
      }
    }
  });
}

TEST_CASE("SoftmaxRows stays finite and normalised for huge logits", "[ops][softmax]") {
  ForEachTarget([](int64_t) {
    for (size_t N : {size_t{1}, size_t{5}, size_t{17}, size_t{33}}) {
      INFO("N=" << N);
      TestMatrix x = Random(4, N, 600 + static_cast<uint32_t>(N), Layout::kStrided, -1e4f, 1e4f);
      for (size_t c = 0; c < N; ++c) {
        x(1, c) = 3e38f;                     // all equal, near FLT_MAX
        x(2, c) = -3e38f;                    // all equal, near -FLT_MAX
        x(3, c) = (c % 2) ? -3e38f : 3e38f;  // x - max overflows to -inf
      }
      const ref::Mat want = ref::SoftmaxRows(x.ToRef());
      REQUIRE_OK(attnkit::SoftmaxRows(x));
      CHECK(AllFinite(x));
      CHECK_CLOSE(x, want, (Tol{2e-6, 1e-5}));
      for (size_t r = 0; r < 4; ++r) CHECK(RowSum(x, r) == Approx(1.0).margin(1e-5));
      CHECK(x(1, 0) == Approx(1.0 / N).margin(1e-6));
    }
  });
}

// The core's exp (ExpFlushed, ops-inl.h) seen through softmax: a row [0, x]
// has weights 1 / (1 + e^x) and e^x / (1 + e^x). x sweeps [-87, 0], the
// whole range in which exp is not flushed, finely enough to cross many
// reduction intervals (n ln2 +- ln2 / 2). Tolerance: exp is within 3.1 ulp;
// the sum and the division add about 2 more.
TEST_CASE("Softmax's exp is accurate over its whole range on every target", "[ops][softmax]") {
  constexpr size_t kRows = 8701;  // x = -87, -86.99, ..., 0
  ForEachTarget([](int64_t) {
    TestMatrix x(kRows, 2, Layout::kStrided);
    for (size_t r = 0; r < kRows; ++r) {
      x(r, 0) = 0.0f;
      x(r, 1) = -87.0f + 0.01f * static_cast<float>(r);
    }
    x(kRows - 1, 1) = 0.0f;
    std::vector<float> inputs(kRows);
    for (size_t r = 0; r < kRows; ++r) inputs[r] = x(r, 1);
    REQUIRE_OK(attnkit::SoftmaxRows(x));
    size_t bad = 0;
    for (size_t r = 0; r < kRows; ++r) {
      const double e = std::exp(static_cast<double>(inputs[r]));
      const double want[2] = {1.0 / (1.0 + e), e / (1.0 + e)};
      for (size_t c = 0; c < 2; ++c) {
        if (std::abs(x(r, c) - want[c]) > 5e-7 * want[c] && bad++ < 5) {
          FAIL_CHECK(std::setprecision(9) << "x = " << inputs[r] << ": weight " << c << " is "
                                          << x(r, c) << ", want " << want[c]);
        }
      }
    }
    CHECK(bad == 0);
  });
}

// exp(x - max) is subnormal for x - max in about [-104, -87]; such weights are
// flushed to exactly 0 (they are < 1.2e-38 of the row's largest, and
// subnormals slow every later multiply on x86 by ~100x).
TEST_CASE("SoftmaxRows never leaves subnormal weights", "[ops][softmax]") {
  ForEachTarget([](int64_t) {
    for (size_t N : {size_t{1}, size_t{3}, size_t{5}, size_t{17}, size_t{33}}) {
      INFO("N=" << N);
      TestMatrix x(2, N, Layout::kStrided);
      for (size_t c = 0; c < N; ++c) {
        x(0, c) = c == 0 ? 0.0f : -86.0f - 18.0f * static_cast<float>(c) / N;  // 0, then -86..-104
        x(1, c) = -95.0f * static_cast<float>(c % 2);                          // 0, -95, 0, ...
      }
      REQUIRE_OK(attnkit::SoftmaxRows(x));
      for (size_t r = 0; r < 2; ++r) {
        for (size_t c = 0; c < N; ++c) {
          INFO("r=" << r << " c=" << c << " value " << x(r, c));
          CHECK((x(r, c) == 0.0f || std::fpclassify(x(r, c)) == FP_NORMAL));
        }
      }
      CHECK(x(0, 0) == Approx(1.0f).margin(1e-6));
      CHECK(RowSum(x, 1) == Approx(1.0).margin(1e-5));
    }
  });
}

}  // namespace
}  // namespace attnkit_test
