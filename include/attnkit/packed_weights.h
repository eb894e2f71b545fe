// attnkit: the constant weights of a multi-head layer, checked and packed once
// (PackMultiHeadWeights) for many MultiHeadAttention calls: each call then
// skips the weights' checks and packing, and reads them as it would have
// packed them, so that its results equal those of the unpacked call bit for bit.
#ifndef ATTNKIT_PACKED_WEIGHTS_H_
#define ATTNKIT_PACKED_WEIGHTS_H_

#include <cstddef>
#include <utility>
#include <vector>

#include "attnkit/attention.h"
#include "attnkit/matrix.h"
#include "attnkit/multihead.h"
#include "attnkit/status.h"

namespace attnkit {

// A matrix [rows, cols] in panels of `panel_width` columns: panel p holds
// columns [p w, p w + w) as a row-major [rows, w] block at panels + p * rows * w
// (the last panel's columns past `cols` are never read). Empty: panels null.
struct PanelMatrix {
  const float* panels = nullptr;
  size_t rows = 0, cols = 0, panel_width = 0;
  bool empty() const { return panels == nullptr; }
};

// Any matrices packed in panels as PackMultiHeadWeights packs its weights,
// in one buffer: for products of many rows that read the same constant
// matrices again and again (a model's layers in a long prefill: the model
// layer's Model::PackedLayerWeights). Immutable once packed; owns its memory
// (a copy). Move-only.
class PackedMatrices {
 public:
  PackedMatrices() = default;
  PackedMatrices(PackedMatrices&&) noexcept = default;
  PackedMatrices& operator=(PackedMatrices&&) noexcept = default;
  PackedMatrices(const PackedMatrices&) = delete;
  PackedMatrices& operator=(const PackedMatrices&) = delete;

  // The matrices in the order given; an empty one given stays empty.
  size_t count() const { return matrices_.size(); }
  const PanelMatrix& operator[](size_t i) const { return matrices_[i]; }
  // The floats the pack holds.
  size_t size() const { return memory_.size(); }

 private:
  friend Status PackMatrices(const std::vector<ConstMatrixView>& matrices, PackedMatrices* packed);
  std::vector<PanelMatrix> matrices_;
  FloatBuffer memory_;
};

// Packs each of `matrices` (empty ones stay empty) into *packed, in panels as
// wide as the register tiles of the best SIMD target of this CPU (as
// PackMultiHeadWeights). Errors: kOverflow naming "matrices" if the memory
// is not there; *packed is replaced only on success.
Status PackMatrices(const std::vector<ConstMatrixView>& matrices, PackedMatrices* packed);

// W_Q, W_K, W_V and W_O (if given) of one multi-head layer, checked (shapes,
// finite values) and packed in panels as the projections' register tiles read
// them. Immutable once made: one pack serves any number of calls, batches and
// threads at once. Owns its memory (a copy: the caller's weights may change or
// go after packing). Move-only; an empty (default or moved-from) pack is
// refused by MultiHeadAttention.
class PackedMultiHeadWeights {
 public:
  PackedMultiHeadWeights() = default;
  PackedMultiHeadWeights(PackedMultiHeadWeights&& o) noexcept { *this = std::move(o); }
  // Leaves `o` empty.
  PackedMultiHeadWeights& operator=(PackedMultiHeadWeights&& o) noexcept {
    d_model_ = std::exchange(o.d_model_, 0);
    d_out_ = std::exchange(o.d_out_, 0);
    config_ = std::exchange(o.config_, HeadConfig());
    W_Q_ = std::exchange(o.W_Q_, PanelMatrix());
    W_K_ = std::exchange(o.W_K_, PanelMatrix());
    W_V_ = std::exchange(o.W_V_, PanelMatrix());
    W_O_ = std::exchange(o.W_O_, PanelMatrix());
    memory_ = std::move(o.memory_);
    o.memory_ = FloatBuffer();
    return *this;
  }
  PackedMultiHeadWeights(const PackedMultiHeadWeights&) = delete;
  PackedMultiHeadWeights& operator=(const PackedMultiHeadWeights&) = delete;

  bool empty() const { return d_model_ == 0; }
  // The rows of W_Q, W_K and W_V: the columns X must have.
  size_t d_model() const { return d_model_; }
  // The columns of the result: W_O's, or num_heads * d_v without W_O.
  size_t d_out() const { return d_out_; }
  // The configuration the weights were packed for, with every derived field
  // filled in (num_kv_heads, d_k, d_v never 0).
  const HeadConfig& config() const { return config_; }
  const PanelMatrix& W_Q() const { return W_Q_; }
  const PanelMatrix& W_K() const { return W_K_; }
  const PanelMatrix& W_V() const { return W_V_; }
  const PanelMatrix& W_O() const { return W_O_; }  // empty without W_O
  // The floats the pack holds.
  size_t size() const { return memory_.size(); }

 private:
  friend Status PackMultiHeadWeights(const MultiHeadWeights& weights, const HeadConfig& config,
                                     PackedMultiHeadWeights* packed);
  size_t d_model_ = 0, d_out_ = 0;
  HeadConfig config_;
  PanelMatrix W_Q_, W_K_, W_V_, W_O_;
  FloatBuffer memory_;
};

// Checks `weights` for `config` as MultiHeadAttention does (d_model = the rows
// of W_Q; errors name W_Q, W_K, W_V, W_O or the config's field) and packs them
// into *packed, in panels as wide as the projections' register tiles on the
// best SIMD target of this CPU (any target reads any width: a pack made under
// one gives the same results as the unpacked weights under every other).
// Errors: kOverflow if the memory is not there. *packed is replaced only on
// success.
Status PackMultiHeadWeights(const MultiHeadWeights& weights, const HeadConfig& config,
                            PackedMultiHeadWeights* packed);

// MultiHeadAttention with packed weights: X [B*T, d_model] -> out [B*T,
// d_out], equal bit for bit to MultiHeadAttention with the weights that were
// packed. `config` must resolve, for X's d_model, to the pack's config (an
// error names the field that differs); X's columns must be the pack's d_model
// (an error names X); an empty pack is an error naming `weights`.
Status MultiHeadAttention(ConstMatrixView X, size_t batch, const PackedMultiHeadWeights& weights,
                          const HeadConfig& config, const AttentionOptions& options,
                          MatrixView out);

}  // namespace attnkit

#endif  // ATTNKIT_PACKED_WEIGHTS_H_
