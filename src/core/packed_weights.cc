// attnkit: packing a multi-head layer's constant weights once (packed_weights.h).
// Plain C++: packing is a copy, run once per pack; the calls that read the
// panels are the SIMD code's (Project in steps-inl.h).
#include "attnkit/packed_weights.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "attnkit/ops.h"
#include "hwy/highway.h"
#include "src/core/heads.h"
#include "src/core/plan.h"
#include "src/core/validate.h"

namespace attnkit {

namespace {

// The panel width of the projections' register tiles (GemmPanelWidth in
// ops-inl.h: two vectors of floats) on the target MultiHeadAttention
// dispatches to now. Another target reads these panels as well, in tiles of
// its own width, with the same sums in the same order.
size_t PanelWidth() {
  const int64_t target = targets::Current();
  if (target == HWY_AVX3 || target == HWY_AVX3_DL) return 32;
  if (target == HWY_AVX2) return 16;
  if (target == HWY_SCALAR) return 2;
  return 8;  // 128-bit vectors: SSE4, SSSE3, EMU128, WASM
}

// The floats of W [K, N] in panels of width w: K * (N rounded up to w).
Status PanelFloats(const char* name, ConstMatrixView W, size_t w, size_t* floats) {
  return internal::CheckedProduct(name, "packed weights", W.rows, internal::RoundUp(W.cols, w),
                                  floats);
}

// W [K, N] -> panels of width w at dst: panel p = columns [p w, p w + w) as a
// row-major [K, w] block (the last panel's columns past N left unwritten).
PanelMatrix PackPanels(ConstMatrixView W, size_t w, float* dst) {
  for (size_t j = 0; j < W.cols; j += w) {
    const size_t n = std::min(w, W.cols - j);
    float* panel = dst + j * W.rows;
    for (size_t k = 0; k < W.rows; ++k) std::memcpy(panel + k * w, W.Row(k) + j, n * sizeof(float));
  }
  PanelMatrix m;
  m.panels = dst;
  m.rows = W.rows;
  m.cols = W.cols;
  m.panel_width = w;
  return m;
}

// Packs the named `parts` (an empty one's PanelMatrix left empty) in panels
// of the best target's width into one buffer, *memory, and out[i].
Status PackParts(const std::vector<std::pair<const char*, ConstMatrixView>>& parts,
                 FloatBuffer* memory, PanelMatrix* out) {
  const size_t w = PanelWidth();
  std::vector<size_t> at(parts.size());
  size_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    size_t n = 0;
    if (!parts[i].second.empty()) {
      ATTNKIT_RETURN_IF_ERROR(PanelFloats(parts[i].first, parts[i].second, w, &n));
    }
    if (n > std::numeric_limits<size_t>::max() - total) {
      return internal::OutOfMemory(parts[i].first, "packed weights", n);
    }
    at[i] = total;
    total += n;
  }
  FloatBuffer m;
  if (!m.AllocateUninitialized(total)) {
    return internal::OutOfMemory(parts.empty() ? "matrices" : parts[0].first, "packed weights",
                                 total);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    out[i] =
        parts[i].second.empty() ? PanelMatrix() : PackPanels(parts[i].second, w, m.data() + at[i]);
  }
  *memory = std::move(m);
  return Status::Ok();
}

}  // namespace

Status PackMultiHeadWeights(const MultiHeadWeights& weights, const HeadConfig& config,
                            PackedMultiHeadWeights* packed) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("packed", packed));
  // d_model is the rows of W_Q, as the columns of X are for MultiHeadAttention.
  ATTNKIT_RETURN_IF_ERROR(internal::CheckView("W_Q", weights.W_Q));
  const size_t d_model = weights.W_Q.rows;
  internal::Heads heads;
  ATTNKIT_RETURN_IF_ERROR(internal::ResolveHeads(config, d_model, "d_model", 0, &heads));
  size_t d_out;
  ATTNKIT_RETURN_IF_ERROR(internal::CheckMultiHeadWeights(weights, d_model, heads, &d_out));
  // One buffer: W_Q, W_K, W_V, then W_O, each in panels.
  PackedMultiHeadWeights p;
  PanelMatrix panels[4];
  ATTNKIT_RETURN_IF_ERROR(PackParts(
      {{"W_Q", weights.W_Q}, {"W_K", weights.W_K}, {"W_V", weights.W_V}, {"W_O", weights.W_O}},
      &p.memory_, panels));
  p.W_Q_ = panels[0];
  p.W_K_ = panels[1];
  p.W_V_ = panels[2];
  p.W_O_ = panels[3];
  p.d_model_ = d_model;
  p.d_out_ = d_out;
  p.config_ = HeadConfig{heads.num_heads, heads.num_kv_heads, heads.d_k, heads.d_v};
  *packed = std::move(p);
  return Status::Ok();
}

Status PackMatrices(const std::vector<ConstMatrixView>& matrices, PackedMatrices* packed) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("packed", packed));
  std::vector<std::pair<const char*, ConstMatrixView>> parts;
  for (const ConstMatrixView& m : matrices) {
    if (!m.empty()) ATTNKIT_RETURN_IF_ERROR(internal::CheckView("matrices", m));
    parts.emplace_back("matrices", m);
  }
  PackedMatrices p;
  p.matrices_.resize(matrices.size());
  ATTNKIT_RETURN_IF_ERROR(PackParts(parts, &p.memory_, p.matrices_.data()));
  *packed = std::move(p);
  return Status::Ok();
}

}  // namespace attnkit
