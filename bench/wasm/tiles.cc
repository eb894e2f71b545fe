// The wasm GEMM micro-kernel's tile shape, swept on attention's two products
// (issue 35): a standalone module, like peak.cc (no imports, no JS glue),
// that bench/wasm/tiles.mjs times against peak.wasm in the same process.
//
// Each kernel is written as the core's GemmTile / GemmRowsInline are in
// WebAssembly (src/core/ops-inl.h): kRows x kCols f32x4 accumulators that
// stay in registers over the whole k loop; per k step, kCols loads of a B
// panel row and kRows broadcasts of A (a scalar load and f32x4.splat, as
// hn::Set), then per accumulator f32x4.mul and f32x4.add (SIMD128 has no
// FMA); one index for all rows of A (A's layout known at compile time); the
// loop ends on A's pointer; one k step per iteration (kGemmUnroll in wasm);
// the finiteness check on the accumulators before they are stored. kSplit = 2
// keeps two partial sums per accumulator (even and odd k), which doubles the
// independent add chains without more broadcasts per flop; kSplit = 3 takes
// two k steps per loop iteration into the same accumulators (a k-unroll).
//
// The two products of one key tile of the fused kernel (flash-inl.h):
//   scores  S [kRows, 128] = Q_block K_tile^T: A = the queries packed k-major
//           [d = 64, kRows]; B = K^T in panels [64, W]; C stored.
//   values  O [kRows, 64] += P V_tile: A = P [kRows, 128], rows 128 floats
//           apart; B = V in panels [128, W]; C accumulated.
// W = 4 * kCols floats, the width of a register tile (GemmPanelWidth); a
// narrower last panel takes 1-vector tiles, as GemmRowsInline does. One call
// runs `blocks` blocks of kRows query rows, each on its own rows of A and C.
//
// Built by bench/CMakeLists.txt (emcmake, scripts/bench.sh): -O3 -msimd128
// --no-entry, wasm-opt told not to inline single-caller functions (as
// src/bindings does), with
// --profiling-funcs (a name section only, the code is the same) so that
// tiles.mjs finds each kernel in V8's code -> build/bench-wasm/tiles.wasm.
#include <wasm_simd128.h>

#include <cstddef>

namespace {

constexpr size_t kHeadDim = 64;    // d_k = d_v
constexpr size_t kTileKeys = 128;  // kFlashTileKeys
constexpr size_t kMaxRows = 64;    // query rows a call covers (kTaskQueries)
constexpr size_t kMaxPanelCols = 4 * 4;
// Room for the widest panel layout: n rounded up to a whole panel.
constexpr size_t kPanelRoom = (kTileKeys + kMaxPanelCols) * kTileKeys;

alignas(16) float g_raw_queries[kMaxRows * kHeadDim];  // Q [64, 64]
alignas(16) float g_raw_keys[kTileKeys * kHeadDim];    // K [128, 64]
alignas(16) float g_raw_values[kTileKeys * kHeadDim];  // V [128, 64]
alignas(16) float g_queries[kMaxRows * kHeadDim];      // per block [64, kRows]
alignas(16) float g_weights[kMaxRows * kTileKeys];     // P [64, 128]
alignas(16) float g_keys[kPanelRoom];                  // K^T panels [64, W]
alignas(16) float g_values[kPanelRoom];                // V panels [128, W]
alignas(16) float g_scores[kMaxRows * kTileKeys];      // S [64, 128]
alignas(16) float g_out[kMaxRows * kHeadDim];          // O [64, 64]
// d and the keys of a tile as the kernels see them: set by pack() at run
// time, as the core's are, so that the compiler cannot fold the loop bounds.
size_t g_head_dim = 0, g_tile_keys = 0;

// One register tile: C rows [0, kRows), columns [0, 4 kCols) (+)= A B, A(r, k)
// at a[r * kRowStep + k * kColStep], B [K, 4 kCols] rows `stride` floats apart.
// Returns true if every value stored is finite.
template <size_t kRows, size_t kCols, size_t kSplit, bool kAccumulate, size_t kRowStep,
          size_t kColStep>
inline bool Tile(const float* a, const float* b, size_t stride, size_t K, float* c, size_t ldc) {
  constexpr size_t kSums = kSplit == 2 ? 2 : 1;  // partial sums per accumulator
  v128_t acc[kSums][kRows][kCols];
  for (size_t s = 0; s < kSums; ++s) {
    for (size_t r = 0; r < kRows; ++r) {
      for (size_t j = 0; j < kCols; ++j) {
        acc[s][r][j] =
            kAccumulate && s == 0 ? wasm_v128_load(c + r * ldc + 4 * j) : wasm_f32x4_splat(0.0f);
      }
    }
  }
  // One step into partial sum s: acc[s][r][:] += A(r, k) * B row k.
  const auto step = [&](size_t s, const float* ak, const float* brow) {
    v128_t bv[kCols];
    for (size_t j = 0; j < kCols; ++j) bv[j] = wasm_v128_load(brow + 4 * j);
    for (size_t r = 0; r < kRows; ++r) {
      const v128_t av = wasm_f32x4_splat(ak[r * kRowStep]);
      for (size_t j = 0; j < kCols; ++j) {
        acc[s][r][j] = wasm_f32x4_add(acc[s][r][j], wasm_f32x4_mul(av, bv[j]));
      }
    }
  };
  // kSplit = 3 (named x1u2 below): two k steps per iteration into the same
  // accumulators, one pointer advance for both.
  constexpr size_t kSteps = kSplit == 1 ? 1 : 2;
  const float* const a_end = a + K / kSteps * kSteps * kColStep;
  while (a != a_end) {
    step(0, a, b);
    if constexpr (kSplit == 2) step(1, a + kColStep, b + stride);
    if constexpr (kSplit == 3) step(0, a + kColStep, b + stride);
    a += kSteps * kColStep;
    b += kSteps * stride;
  }
  for (size_t k = K / kSteps * kSteps; k < K; ++k, a += kColStep, b += stride) step(0, a, b);
  v128_t sum = wasm_f32x4_splat(0.0f);
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t j = 0; j < kCols; ++j) {
      v128_t v = acc[0][r][j];
      if constexpr (kSplit == 2) v = wasm_f32x4_add(v, acc[1][r][j]);
      sum = wasm_f32x4_add(sum, wasm_f32x4_sub(v, v));  // NaN unless finite
      wasm_v128_store(c + r * ldc + 4 * j, v);
    }
  }
  return wasm_i32x4_all_true(wasm_f32x4_eq(sum, wasm_f32x4_splat(0.0f)));
}

// C rows [0, kRows) (+)= A B over n columns (a multiple of 4), B [K, n] in
// panels of W = 4 kCols columns, [K, W] each, K * W floats apart: tiles of
// kCols vectors, then of one vector in a narrower last panel. Out of line,
// one loop deep around the tiles' k loops, as GemmRowsOutOfLine.
template <size_t kRows, size_t kCols, size_t kSplit, bool kAccumulate, size_t kRowStep,
          size_t kColStep>
__attribute__((noinline)) bool Rows(const float* a, const float* b, size_t K, size_t n, float* c,
                                    size_t ldc) {
  constexpr size_t W = 4 * kCols;
  bool finite = true;
  for (size_t j0 = 0; j0 < n; j0 += W, b += K * W) {
    const size_t w = n - j0 < W ? n - j0 : W;
    if (w == W) {
      finite &=
          Tile<kRows, kCols, kSplit, kAccumulate, kRowStep, kColStep>(a, b, W, K, c + j0, ldc);
      continue;
    }
    for (size_t j = 0; j < w; j += 4) {
      finite &=
          Tile<kRows, 1, kSplit, kAccumulate, kRowStep, kColStep>(a, b + j, W, K, c + j0 + j, ldc);
    }
  }
  return finite;
}

// B [K, n] row-major (ld = n) -> panels of W columns [K, W], zeros past n.
void Pack(const float* src, size_t K, size_t n, size_t W, float* dst) {
  for (size_t j0 = 0; j0 < n; j0 += W) {
    for (size_t k = 0; k < K; ++k) {
      for (size_t j = 0; j < W; ++j) {
        dst[j0 * K + k * W + j] = j0 + j < n ? src[k * n + j0 + j] : 0.0f;
      }
    }
  }
}

// Per block of kRows rows: S = Q_block K^T (scores) or O += P V (values).
// Returns the count of blocks whose stores were all finite.
template <size_t kRows, size_t kCols, size_t kSplit>
int Scores(int blocks, int reps) {
  int finite = 0;
  for (int rep = 0; rep < reps; ++rep) {
    for (int i = 0; i < blocks; ++i) {
      finite += Rows<kRows, kCols, kSplit, false, 1, kRows>(
          g_queries + i * kRows * kHeadDim, g_keys, g_head_dim, g_tile_keys,
          g_scores + i * kRows * kTileKeys, kTileKeys);
    }
  }
  return finite;
}
template <size_t kRows, size_t kCols, size_t kSplit>
int Values(int blocks, int reps) {
  int finite = 0;
  for (int rep = 0; rep < reps; ++rep) {
    for (int i = 0; i < blocks; ++i) {
      finite += Rows<kRows, kCols, kSplit, true, kTileKeys, 1>(
          g_weights + i * kRows * kTileKeys, g_values, g_tile_keys, g_head_dim,
          g_out + i * kRows * kHeadDim, kHeadDim);
    }
  }
  return finite;
}

}  // namespace

extern "C" {
// The buffers, for the driver to fill and check: 0 Q [64, 64], 1 P [64,
// 128], 2 K [128, 64], 3 V [128, 64] (all row-major), 4 S [64, 128], 5 O [64, 64].
__attribute__((export_name("buffer"))) float* Buffer(int which) {
  float* const all[] = {g_raw_queries, g_weights, g_raw_keys, g_raw_values, g_scores, g_out};
  return all[which];
}
// Packs K^T and V into panels of W floats and the queries into blocks of
// `rows`, [64, rows] each (k-major), for the kernels of that shape;
// head_dim and tile_keys must be 64 and 128 (the driver passes them, see
// g_head_dim).
__attribute__((export_name("pack"))) void PackAll(int W, int rows, int head_dim, int tile_keys) {
  if (head_dim != static_cast<int>(kHeadDim) || tile_keys != static_cast<int>(kTileKeys)) return;
  g_head_dim = head_dim;
  g_tile_keys = tile_keys;
  const float* keys = g_raw_keys;
  const float* values = g_raw_values;
  const float* queries = g_raw_queries;
  // K^T [64, 128]: element (c, j) = K[j, c].
  static float kt[kHeadDim * kTileKeys];
  for (size_t j = 0; j < kTileKeys; ++j) {
    for (size_t c = 0; c < kHeadDim; ++c) kt[c * kTileKeys + j] = keys[j * kHeadDim + c];
  }
  Pack(kt, kHeadDim, kTileKeys, W, g_keys);
  Pack(values, kTileKeys, kHeadDim, W, g_values);
  for (size_t i0 = 0; i0 + rows <= kMaxRows; i0 += rows) {
    for (int r = 0; r < rows; ++r) {
      for (size_t c = 0; c < kHeadDim; ++c) {
        g_queries[i0 * kHeadDim + c * rows + r] = queries[(i0 + r) * kHeadDim + c];
      }
    }
  }
}
}

// The shapes: rows x vectors (x 2 partial sums). Registers: V8 on x86-64
// keeps 15 xmm registers for values; a tile needs kRows * kCols * kSplit
// accumulators, kCols B vectors and a broadcast, so shapes past 15 spill.
#define ATTNKIT_TILE(R, C, S)                                                                    \
  extern "C" __attribute__((export_name("scores_" #R "x" #C "x" #S))) int Scores##R##x##C##x##S( \
      int blocks, int reps) {                                                                    \
    return Scores<R, C, S>(blocks, reps);                                                        \
  }                                                                                              \
  extern "C" __attribute__((export_name("values_" #R "x" #C "x" #S))) int Values##R##x##C##x##S( \
      int blocks, int reps) {                                                                    \
    return Values<R, C, S>(blocks, reps);                                                        \
  }

ATTNKIT_TILE(1, 1, 1)
ATTNKIT_TILE(1, 2, 1)
ATTNKIT_TILE(1, 4, 1)
ATTNKIT_TILE(2, 1, 1)
ATTNKIT_TILE(2, 2, 1)
ATTNKIT_TILE(2, 3, 1)
ATTNKIT_TILE(2, 4, 1)
ATTNKIT_TILE(3, 1, 1)
ATTNKIT_TILE(3, 2, 1)
ATTNKIT_TILE(3, 3, 1)
ATTNKIT_TILE(3, 4, 1)
ATTNKIT_TILE(4, 1, 1)
ATTNKIT_TILE(4, 2, 1)
ATTNKIT_TILE(4, 3, 1)
ATTNKIT_TILE(4, 4, 1)
ATTNKIT_TILE(5, 1, 1)
ATTNKIT_TILE(5, 2, 1)
ATTNKIT_TILE(6, 1, 1)
ATTNKIT_TILE(6, 2, 1)
ATTNKIT_TILE(8, 1, 1)
ATTNKIT_TILE(8, 2, 1)
ATTNKIT_TILE(1, 4, 2)
ATTNKIT_TILE(2, 2, 2)
ATTNKIT_TILE(2, 3, 2)
ATTNKIT_TILE(3, 2, 2)
ATTNKIT_TILE(4, 1, 2)
ATTNKIT_TILE(4, 2, 2)
ATTNKIT_TILE(2, 4, 3)
ATTNKIT_TILE(3, 2, 3)
ATTNKIT_TILE(4, 2, 3)
