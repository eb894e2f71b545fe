// attnkit: the backward of the projections (ProjectionBackward in
// backward.h), used by every backward that projects: SelfAttentionBackward,
// MultiHeadAttentionBackward, the backward trace, and the model's attention
// block (AttentionBlockBackward, src/model/blocks.h), which keeps W_Q | W_K |
// W_V side by side and so takes the fused form below. Plain C++ on the
// dispatched GEMMs (RunMatMul, RunMatMulTransposed, RunMatMulTransposedA).
#include <algorithm>
#include <atomic>
#include <iterator>
#include <utility>
#include <vector>

#include "attnkit/backward.h"
#include "src/core/internal.h"
#include "src/core/plan.h"
#include "src/core/scratch.h"
#include "src/core/validate.h"

namespace attnkit {
namespace internal {

namespace {

// What a banded product computes from A and B: kAPanels is A B with B
// packed once in panels (ProductPanels).
enum class ProductKind { kAB, kABt, kAtB, kAPanels };

// Whether C's columns go over the threads (ColumnProduct) rather than its
// rows, B packed: when each thread can keep all of A in its core's cache
// while it runs every row of A over its panels (kColumnSplitMaxA), and the
// panels share out evenly enough (the busiest thread's at most 1.25 times
// the mean). Bands of rows each read all of packed B, half of it packed by
// another core; ranges of columns read B once, by the thread that packed
// it, and A again for every few panels.
bool SplitColumns(ConstMatrixView A, size_t cols, size_t threads) {
  const size_t panels = (cols + kMaxPanel - 1) / kMaxPanel;
  const size_t busiest = (panels + threads - 1) / threads;
  return threads > 1 && A.rows * A.cols <= kColumnSplitMaxA && 5 * panels >= 4 * threads * busiest;
}

// C = A B, A B^T or A^T B with B packed, or A B from `panels` (kAPanels,
// `panel_width` columns each, B [K, C.cols]): ranges of whole kMaxPanel
// columns of C over the threads. Each task packs its columns a few at a
// time into its thread's room [K, kMaxPanel] just before every row of A
// reads them: the panels and sums of one thread's MatMulPackingPanels, whose
// groups start at multiples of kMaxPanel, as the ranges do.
Status ColumnProduct(ProductKind kind, ConstMatrixView A, ConstMatrixView B, MatrixView C, size_t K,
                     const char* source, const char* what, ThreadPool* pool, const float* panels,
                     size_t panel_width) {
  const size_t threads = pool->num_threads();
  ScratchBuffer rooms;
  if (kind != ProductKind::kAPanels) {
    size_t n;
    ATTNKIT_RETURN_IF_ERROR(CheckedProduct(source, "B packed in panels, a room per thread", K,
                                           kMaxPanel * threads, &n));
    if (!rooms.Allocate(n)) return OutOfMemory(source, "B packed in panels, a room per thread", n);
  }
  std::atomic<bool> finite{true};
  ParallelRanges(pool, C.cols, kMaxPanel, [&](size_t j0, size_t j1, size_t thread) {
    const size_t cols = j1 - j0;
    float* room = rooms.data() + thread * K * kMaxPanel;
    const MatrixView c = C.Block(0, C.rows, j0, cols);
    bool ok = true;
    switch (kind) {
      case ProductKind::kAB:
        ok = RunMatMul(A, B.Block(0, K, j0, cols), c, room);
        break;
      case ProductKind::kABt:
        ok = RunMatMulTransposed(A, B.Block(j0, cols, 0, K), c, room);
        break;
      case ProductKind::kAtB:
        ok = RunMatMulTransposedA(A, B.Block(0, K, j0, cols), c, room);
        break;
      case ProductKind::kAPanels:
        ok = RunMatMulPanels(A, panels + j0 * K, panel_width, c);
        break;
    }
    if (!ok) finite.store(false, std::memory_order_relaxed);
  });
  if (!finite.load()) return OverflowStatus(source, what);
  return Status::Ok();
}

// C = A B, A B^T or A^T B (see Product), bands of C's rows over the threads
// (or, B packed, ranges of its columns: SplitColumns).
// kAPanels reads B [A.cols, C.cols] from `panels` of `panel_width` columns.
Status BandedProduct(ProductKind kind, ConstMatrixView A, ConstMatrixView B, MatrixView C,
                     const char* source, const char* what, ThreadPool* pool,
                     const float* panels = nullptr, size_t panel_width = 0) {
  // A's rows (A^T B: its columns) are C's.
  const size_t K = kind == ProductKind::kAtB ? A.rows : A.cols;
  pool = PoolFor(pool, double(C.rows) * K * C.cols);
  // kTasksPerThread bands per thread, of whole register tiles (8 rows).
  const size_t threads = pool ? pool->num_threads() : 1;
  const size_t tasks = threads > 1 ? threads * kTasksPerThread : 1;
  const size_t band = std::max<size_t>(8, RoundUp((C.rows + tasks - 1) / tasks, 8));
  const size_t bands = std::max<size_t>(1, (C.rows + band - 1) / band);
  bool pack = kind != ProductKind::kAPanels && PacksB(C.rows, kind == ProductKind::kAtB);
  if ((pack || kind == ProductKind::kAPanels) && SplitColumns(A, C.cols, threads)) {
    return ColumnProduct(kind, A, B, C, K, source, what, pool, panels, panel_width);
  }
  // Packed or read in place, B gives the same sums (ops_test), so the
  // choice is one of speed. Bands of a short C (an A^T B of fewer than
  // kPackMinRows rows) read B in place: packed, every band of a few rows
  // would read all of it, half packed by another core. Packed over several
  // bands, B (B^T) [K, C.cols] is packed once, by ranges of panels over the
  // threads, for every band to read; one band packs a few panels at a time
  // ([K, kMaxPanel]) just before it reads them.
  if (bands > 1 && C.rows < kPackMinRows) pack = false;
  ScratchBuffer packed;
  if (pack) {
    size_t n;
    ATTNKIT_RETURN_IF_ERROR(CheckedProduct(source, "B packed in panels", K,
                                           bands > 1 ? RoundUp(C.cols, kMaxPanel) : kMaxPanel, &n));
    // Every float the kernels read is written by the packing.
    if (!packed.Allocate(n)) return OutOfMemory(source, "B packed in panels", n);
  }
  if (pack && bands > 1) {
    ParallelRanges(pool, C.cols, kMaxPanel, [&](size_t j0, size_t j1) {
      RunPackPanels(B, kind == ProductKind::kABt, j0, j1, packed.data());
    });
  }
  std::vector<char> ok(bands, 0);
  auto run = [&](size_t b, size_t) {
    const size_t r0 = b * band, rows = std::min(band, C.rows - r0);
    const MatrixView c(C.data + r0 * C.stride, rows, C.cols, C.stride);
    const ConstMatrixView a =
        kind == ProductKind::kAtB ? A.Block(0, A.rows, r0, rows) : A.Block(r0, rows, 0, A.cols);
    if (pack && bands > 1) {
      ok[b] = RunMatMulPacked(a, kind == ProductKind::kAtB, packed.data(), c);
      return;
    }
    switch (kind) {
      case ProductKind::kAB:
        ok[b] = RunMatMul(a, B, c, packed.data());
        break;
      case ProductKind::kABt:
        ok[b] = RunMatMulTransposed(a, B, c, packed.data());
        break;
      case ProductKind::kAtB:
        ok[b] = RunMatMulTransposedA(a, B, c, packed.data());
        break;
      case ProductKind::kAPanels:
        ok[b] = RunMatMulPanels(a, panels, panel_width, c);
        break;
    }
  };
  ParallelFor(pool, bands, run);
  for (char band_ok : ok) {
    if (!band_ok) return OverflowStatus(source, what);
  }
  return Status::Ok();
}

// Whether a, b, c are column blocks side by side of one matrix (one stride,
// the same rows, each starting where the one before ends).
bool SideBySide(ConstMatrixView a, ConstMatrixView b, ConstMatrixView c) {
  return a.stride == b.stride && b.stride == c.stride && a.rows == b.rows && b.rows == c.rows &&
         b.data == a.data + a.cols && c.data == b.data + b.cols;
}

// The view spanning side-by-side blocks a | b | c.
template <typename T>
MatrixViewT<T> Joined(MatrixViewT<T> a, MatrixViewT<T> b, MatrixViewT<T> c) {
  return MatrixViewT<T>(a.data, a.rows, a.cols + b.cols + c.cols, a.stride);
}

}  // namespace

Status Product(ConstMatrixView A, ConstMatrixView B, MatrixView C, bool transposed,
               const char* source, const char* what, ThreadPool* pool) {
  return BandedProduct(transposed ? ProductKind::kABt : ProductKind::kAB, A, B, C, source, what,
                       pool);
}

Status ProductPanels(ConstMatrixView A, const float* panels, size_t panel_width, MatrixView C,
                     const char* source, const char* what, ThreadPool* pool) {
  return BandedProduct(ProductKind::kAPanels, A, ConstMatrixView(), C, source, what, pool, panels,
                       panel_width);
}

Status ProductTransposedA(ConstMatrixView A, ConstMatrixView B, MatrixView C, const char* source,
                          const char* what, ThreadPool* pool) {
  return BandedProduct(ProductKind::kAtB, A, B, C, source, what, pool);
}

Status Transpose(const char* parameter, const char* what, ConstMatrixView m, ScratchMatrix* t) {
  ATTNKIT_RETURN_IF_ERROR(AllocateScratch(parameter, what, m.cols, m.rows, /*zero=*/false, t));
  const MatrixView v = t->view();
  for (size_t r = 0; r < m.rows; ++r) {
    for (size_t c = 0; c < m.cols; ++c) v(c, r) = m(r, c);
  }
  return Status::Ok();
}

Status RunProjectionBackward(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                             ConstMatrixView W_V, ConstMatrixView dQ, ConstMatrixView dK,
                             ConstMatrixView dV, const char* source, ThreadPool* pool,
                             MatrixView dX, MatrixView dW_Q, MatrixView dW_K, MatrixView dW_V) {
  // dW = X^T dY reads X^T in place (the same sums as a product with X
  // transposed first).
  if (SideBySide(W_Q, W_K, W_V) && SideBySide(dQ, dK, dV) && SideBySide(dW_Q, dW_K, dW_V)) {
    // W = W_Q | W_K | W_V: dW = X^T dY and dX = dY W^T, one product each,
    // dX summed over all of Q, K and V's columns in one pass.
    const ConstMatrixView W = Joined(W_Q, W_K, W_V), dY = Joined(dQ, dK, dV);
    ATTNKIT_RETURN_IF_ERROR(BandedProduct(ProductKind::kAtB, X, dY, Joined(dW_Q, dW_K, dW_V),
                                          source, "dW = X^T (dQ | dK | dV)", pool));
    return BandedProduct(ProductKind::kABt, dY, W, dX, source, "dX = (dQ | dK | dV) W^T", pool);
  }
  const std::pair<ConstMatrixView, MatrixView> dW[] = {{dQ, dW_Q}, {dK, dW_K}, {dV, dW_V}};
  const char* what[] = {"dW_Q = X^T dQ", "dW_K = X^T dK", "dW_V = X^T dV"};
  for (size_t i = 0; i < 3; ++i) {
    ATTNKIT_RETURN_IF_ERROR(
        BandedProduct(ProductKind::kAtB, X, dW[i].first, dW[i].second, source, what[i], pool));
  }
  ScratchMatrix part;
  ATTNKIT_RETURN_IF_ERROR(
      AllocateScratch("X", "dX [rows of X, d_model]", X.rows, X.cols, /*zero=*/false, &part));
  ATTNKIT_RETURN_IF_ERROR(Product(dQ, W_Q, dX, true, source, "dX = dQ W_Q^T", pool));
  for (const auto& [d, W] : {std::pair<ConstMatrixView, ConstMatrixView>{dK, W_K}, {dV, W_V}}) {
    ATTNKIT_RETURN_IF_ERROR(
        Product(d, W, part.view(), true, source, "dX = dK W_K^T + dV W_V^T", pool));
    for (size_t r = 0; r < X.rows; ++r) {
      for (size_t c = 0; c < X.cols; ++c) dX(r, c) += part.view()(r, c);
    }
  }
  if (!RunAllFinite(dX)) return OverflowStatus(source, "dX");
  return Status::Ok();
}

}  // namespace internal

Status ProjectionBackward(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                          ConstMatrixView W_V, ConstMatrixView dQ, ConstMatrixView dK,
                          ConstMatrixView dV, ThreadPool* pool,
                          const SelfAttentionGradients& grads) {
  using internal::CheckShape;
  ATTNKIT_RETURN_IF_ERROR(internal::CheckView("X", X));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckView("W_Q", W_Q));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckView("W_V", W_V));
  const size_t T = X.rows, d_model = X.cols, d_k = W_Q.cols, d_v = W_V.cols;
  ATTNKIT_RETURN_IF_ERROR(CheckShape("W_Q", W_Q, d_model, d_k, "d_model, the columns of X", "d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("W_K", W_K, d_model, W_K.cols, "d_model, the columns of X",
                                     "d_k, the columns of dK"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("W_V", W_V, d_model, d_v, "d_model, the columns of X", "d_v"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dQ", dQ, T, d_k, "T, the rows of X", "the columns of W_Q"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dK", dK, T, W_K.cols, "T, the rows of X", "the columns of W_K"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dV", dV, T, d_v, "T, the rows of X", "the columns of W_V"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dX", grads.dX, T, d_model, "T, the rows of X", "d_model, the columns of X"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dW_Q", grads.dW_Q, d_model, d_k, "d_model", "d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dW_K", grads.dW_K, d_model, W_K.cols, "d_model", "d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dW_V", grads.dW_V, d_model, d_v, "d_model", "d_v"));
  const internal::NamedView inputs[] = {{"X", X},   {"W_Q", W_Q}, {"W_K", W_K}, {"W_V", W_V},
                                        {"dQ", dQ}, {"dK", dK},   {"dV", dV}};
  const internal::NamedView outputs[] = {
      {"dX", grads.dX}, {"dW_Q", grads.dW_Q}, {"dW_K", grads.dW_K}, {"dW_V", grads.dW_V}};
  for (const auto& [name, in] : inputs) {
    ATTNKIT_RETURN_IF_ERROR(internal::CheckFinite(name, in));
  }
  ATTNKIT_RETURN_IF_ERROR(internal::CheckOutputsApart(std::begin(outputs), std::end(outputs),
                                                      std::begin(inputs), std::end(inputs)));
  return internal::RunProjectionBackward(X, W_Q, W_K, W_V, dQ, dK, dV, "dQ", pool, grads.dX,
                                         grads.dW_Q, grads.dW_K, grads.dW_V);
}

}  // namespace attnkit
