#include "src/model/blocks.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "attnkit/backward.h"
#include "src/core/internal.h"
#include "src/core/scratch.h"
#include "src/model/kernels.h"

namespace attnkit {
namespace model {
namespace {

// dst = src, both [rows, cols] (either may be a block of a wider matrix).
void CopyBlock(ConstMatrixView src, MatrixView dst) {
  for (size_t r = 0; r < src.rows; ++r) std::copy(src.Row(r), src.Row(r) + src.cols, dst.Row(r));
}

// The model's products, C = A B, A B^T and A^T B, on `pool` (the core's
// banded products: bands of C's rows or ranges of its columns, each computed
// as on one thread; a call too small for threads runs on the caller's). Their inputs are the
// weights (finite: initialised, imported and updated only when finite) and activations computed
// from them, so nothing scans them for NaN and inf; an overflow of C is still reported, naming x
// (the stream the block reads) and the product.
Status Product(ConstMatrixView A, ConstMatrixView B, MatrixView C, const char* what,
               ThreadPool* pool) {
  return internal::Product(A, B, C, /*transposed=*/false, "x", what, pool);
}
// C = A B as above, B read from `packed`, its panels (PackedLayer), when
// given and A has more than one row: nothing packed per call, the same sums.
Status Product(ConstMatrixView A, ConstMatrixView B, const PanelMatrix* packed, MatrixView C,
               const char* what, ThreadPool* pool) {
  if (packed == nullptr || A.rows < 2) return Product(A, B, C, what, pool);
  return internal::ProductPanels(A, packed->panels, packed->panel_width, C, "x", what, pool);
}
Status ProductTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C, const char* what,
                         ThreadPool* pool) {
  return internal::Product(A, B, C, /*transposed=*/true, "x", what, pool);
}
Status ProductTransposedA(ConstMatrixView A, ConstMatrixView B, MatrixView C, const char* what,
                          ThreadPool* pool) {
  return internal::ProductTransposedA(A, B, C, "x", what, pool);
}

}  // namespace

ThreadPool* RowsPool(const ModelConfig& c, size_t rows, ThreadPool* pool) {
  return internal::PoolFor(pool, double(rows) * double(c.d_model) * double(c.num_heads * c.d_k));
}

Status Alloc(Matrix* m, size_t rows, size_t cols, bool zeroed) {
  if (!(zeroed ? m->Reset(rows, cols) : m->ResetForOverwrite(rows, cols))) {
    return Status(ErrorCode::kOverflow, "memory",
                  "cannot allocate " + std::to_string(rows) + " x " + std::to_string(cols));
  }
  return Status::Ok();
}

Status Shape(Matrix* m, size_t rows, size_t cols) {
  if (m->rows() == rows && m->cols() == cols) return Status::Ok();
  return Alloc(m, rows, cols);
}

HeadConfig Heads(const ModelConfig& c) {
  HeadConfig h;
  h.num_heads = c.num_heads;
  h.num_kv_heads = c.num_kv_heads;
  h.d_k = c.d_k;
  h.d_v = c.d_k;
  return h;
}

AttentionOptions CausalOptions(const ModelConfig& c, ThreadPool* pool) {
  AttentionOptions o;
  o.causal = true;
  o.scale = c.scale_by_sqrt_dk ? 1.0f / std::sqrt(float(c.d_k)) : 1.0f;
  o.pool = pool;
  return o;
}

Status LayerNormForward(const ModelConfig& c, const Matrix& x, const Matrix& gain,
                        const Matrix& bias, LayerNormActivations* out, ThreadPool* pool) {
  ATTNKIT_RETURN_IF_ERROR(Shape(&out->y, x.rows(), x.cols()));
  ATTNKIT_RETURN_IF_ERROR(Shape(&out->mean, x.rows(), 1));
  ATTNKIT_RETURN_IF_ERROR(Shape(&out->rstd, x.rows(), 1));
  kernels::LayerNorm(x, gain.data(), bias.data(), c.layer_norm_epsilon, out->y, out->mean.data(),
                     out->rstd.data(), RowsPool(c, x.rows(), pool));
  return Status::Ok();
}

size_t Argmax(const float* row, size_t n) {
  size_t arg = 0;
  for (size_t j = 1; j < n; ++j) arg = row[j] > row[arg] ? j : arg;
  return arg;
}

void Embed(const Parameters& p, const int32_t* tokens, size_t seq_len, size_t first_position,
           MatrixView x, ThreadPool* pool) {
  kernels::Embed(tokens, seq_len, p.token_embedding,
                 p.position_embedding.view().Block(first_position, seq_len, 0, x.cols), x, pool);
}

void EmbedBackward(const int32_t* tokens, size_t seq_len, ConstMatrixView dx, Parameters* grads,
                   ThreadPool* pool) {
  kernels::EmbedBackward(tokens, seq_len, dx, grads->token_embedding, grads->position_embedding,
                         pool);
}

Status FuseQKV(const LayerParameters& p, Matrix* W_QKV, Matrix* b_QKV) {
  const size_t d = p.W_Q.rows(), hd = p.W_Q.cols(), gd = p.W_K.cols();
  ATTNKIT_RETURN_IF_ERROR(Shape(W_QKV, d, hd + 2 * gd));
  CopyBlock(p.W_Q, W_QKV->view().Block(0, d, 0, hd));
  CopyBlock(p.W_K, W_QKV->view().Block(0, d, hd, gd));
  CopyBlock(p.W_V, W_QKV->view().Block(0, d, hd + gd, gd));
  if (p.b_Q.size() == 0) return Status::Ok();
  ATTNKIT_RETURN_IF_ERROR(Shape(b_QKV, 1, hd + 2 * gd));
  CopyBlock(p.b_Q, b_QKV->view().Block(0, 1, 0, hd));
  CopyBlock(p.b_K, b_QKV->view().Block(0, 1, hd, gd));
  CopyBlock(p.b_V, b_QKV->view().Block(0, 1, hd + gd, gd));
  return Status::Ok();
}

Status FuseQKV(const LayerParameters& p, BlockActivations* a) {
  return FuseQKV(p, &a->W_QKV, &a->b_QKV);
}

Status AttentionBlock(const ModelConfig& c, const LayerParameters& p, const Matrix& x, size_t batch,
                      const AttentionOptions& options, KVCache* cache, BlockActivations* a,
                      Matrix* x_out, MatrixView weights) {
  const size_t N = x.rows(), d = c.d_model;
  const size_t hd = c.num_heads * c.d_k, gd = c.num_kv_heads * c.d_k;
  ThreadPool *const pool = options.pool, *const rows_pool = RowsPool(c, N, pool);
  if (c.layer_norm) {
    ATTNKIT_RETURN_IF_ERROR(LayerNormForward(c, x, p.ln_gain, p.ln_bias, &a->norm, pool));
  }
  a->q_cols = hd;
  a->kv_cols = gd;
  ATTNKIT_RETURN_IF_ERROR(Shape(&a->QKV, N, hd + 2 * gd));
  ATTNKIT_RETURN_IF_ERROR(Shape(&a->z, N, hd));
  ATTNKIT_RETURN_IF_ERROR(Product(Normed(c, x, a->norm), a->QKVWeights(),
                                  a->packed ? &a->packed->W_QKV : nullptr, a->QKV, "a W_QKV",
                                  pool));
  if (c.bias) kernels::AddBias(a->QKVBias().data(), a->QKV, rows_pool);
  if (cache) {
    ATTNKIT_RETURN_IF_ERROR(cache->Append(a->K(), a->V()));
    ATTNKIT_RETURN_IF_ERROR(AttendCached(a->Q(), *cache, c.num_heads, options, a->z, weights));
  } else {
    ATTNKIT_RETURN_IF_ERROR(Shape(&a->lse, c.num_heads * N, 1));
    ATTNKIT_RETURN_IF_ERROR(MultiHeadAttentionQKVForTraining(a->Q(), a->K(), a->V(), batch,
                                                             Heads(c), options, a->z, a->lse));
  }
  ATTNKIT_RETURN_IF_ERROR(Shape(x_out, N, d));
  ATTNKIT_RETURN_IF_ERROR(
      Product(a->z, p.W_O, a->packed ? &a->packed->W_O : nullptr, *x_out, "z W_O", pool));
  if (c.bias) kernels::AddBias(p.b_O.data(), *x_out, rows_pool);
  kernels::AddTo(x.data(), x_out->data(), N * d, rows_pool);
  return Status::Ok();
}

Status AttentionBlockBackward(const ModelConfig& c, const LayerParameters& p, const Matrix& x,
                              const BlockActivations& a, size_t batch,
                              const AttentionOptions& options, LayerParameters* g,
                              BlockBackwardScratch* s, Matrix* dx, Matrix* dz) {
  const size_t N = x.rows(), d = c.d_model;
  const size_t hd = c.num_heads * c.d_k, gd = c.num_kv_heads * c.d_k;
  ThreadPool *const pool = options.pool, *const rows_pool = RowsPool(c, N, pool);
  // x_out = x + z W_O + b_O: dx flows on unchanged and into z W_O + b_O.
  ATTNKIT_RETURN_IF_ERROR(ProductTransposedA(a.z, *dx, g->W_O, "dW_O = z^T dx", pool));
  if (c.bias) kernels::ColumnSums(*dx, g->b_O.data(), rows_pool);
  ATTNKIT_RETURN_IF_ERROR(Shape(&s->dz, N, hd));
  ATTNKIT_RETURN_IF_ERROR(ProductTransposed(*dx, p.W_O, s->dz, "dz = dx W_O^T", pool));
  // dQ | dK | dV side by side, then Q | K | V = a W_QKV backwards in one
  // product for the weights and one for a.
  Matrix& dQKV = s->dQKV;
  ATTNKIT_RETURN_IF_ERROR(Shape(&dQKV, N, hd + 2 * gd));
  ATTNKIT_RETURN_IF_ERROR(MultiHeadAttentionQKVBackward(
      a.Q(), a.K(), a.V(), a.z, s->dz, a.lse, batch, Heads(c), options,
      dQKV.view().Block(0, N, 0, hd), dQKV.view().Block(0, N, hd, gd),
      dQKV.view().Block(0, N, hd + gd, gd)));
  if (dz) *dz = s->dz;
  if (c.bias) {
    kernels::ColumnSums(dQKV.view().Block(0, N, 0, hd), g->b_Q.data(), rows_pool);
    kernels::ColumnSums(dQKV.view().Block(0, N, hd, gd), g->b_K.data(), rows_pool);
    kernels::ColumnSums(dQKV.view().Block(0, N, hd + gd, gd), g->b_V.data(), rows_pool);
  }
  // The core's projection backward: with W_Q | W_K | W_V, dQ | dK | dV and
  // dW_Q | dW_K | dW_V side by side it takes dW_QKV = a^T dQKV and da = dQKV
  // W_QKV^T as one product each.
  ATTNKIT_RETURN_IF_ERROR(Shape(&s->dW_QKV, d, hd + 2 * gd));
  ATTNKIT_RETURN_IF_ERROR(Shape(&s->da, N, d));
  const ConstMatrixView W = a.W_QKV.view(), dY = dQKV.view();
  const MatrixView dW = s->dW_QKV.view();
  ATTNKIT_RETURN_IF_ERROR(internal::RunProjectionBackward(
      Normed(c, x, a.norm), W.Block(0, d, 0, hd), W.Block(0, d, hd, gd), W.Block(0, d, hd + gd, gd),
      dY.Block(0, N, 0, hd), dY.Block(0, N, hd, gd), dY.Block(0, N, hd + gd, gd), "dx", pool, s->da,
      dW.Block(0, d, 0, hd), dW.Block(0, d, hd, gd), dW.Block(0, d, hd + gd, gd)));
  CopyBlock(dW.Block(0, d, 0, hd), g->W_Q);
  CopyBlock(dW.Block(0, d, hd, gd), g->W_K);
  CopyBlock(dW.Block(0, d, hd + gd, gd), g->W_V);
  if (c.layer_norm) {
    kernels::LayerNormBackward(x, a.norm.mean.data(), a.norm.rstd.data(), p.ln_gain.data(), s->da,
                               *dx, g->ln_gain.data(), g->ln_bias.data(), rows_pool);
  } else {
    kernels::AddTo(s->da.data(), dx->data(), N * d, rows_pool);
  }
  return Status::Ok();
}

Status MlpBlock(const ModelConfig& c, const LayerParameters& p, const Matrix& mid,
                BlockActivations* a, Matrix* x_out, ThreadPool* pool) {
  const size_t N = mid.rows(), d = c.d_model;
  ThreadPool* const rows_pool = RowsPool(c, N, pool);
  ATTNKIT_RETURN_IF_ERROR(LayerNormForward(c, mid, p.ln2_gain, p.ln2_bias, &a->norm2, pool));
  ATTNKIT_RETURN_IF_ERROR(Shape(&a->u, N, c.d_ff));
  ATTNKIT_RETURN_IF_ERROR(Shape(&a->act, N, c.d_ff));
  ATTNKIT_RETURN_IF_ERROR(Product(a->norm2.y, p.W_1, a->packed ? &a->packed->W_1 : nullptr, a->u,
                                  "u = LayerNorm2(x) W_1", pool));
  if (c.bias) kernels::AddBias(p.b_1.data(), a->u, rows_pool);
  kernels::Gelu(a->u, a->act, rows_pool);
  ATTNKIT_RETURN_IF_ERROR(Shape(x_out, N, d));
  ATTNKIT_RETURN_IF_ERROR(
      Product(a->act, p.W_2, a->packed ? &a->packed->W_2 : nullptr, *x_out, "GELU(u) W_2", pool));
  if (c.bias) kernels::AddBias(p.b_2.data(), *x_out, rows_pool);
  kernels::AddTo(mid.data(), x_out->data(), N * d, rows_pool);
  return Status::Ok();
}

Status MlpBlockBackward(const ModelConfig& c, const LayerParameters& p, const Matrix& mid,
                        const BlockActivations& a, LayerParameters* g, BlockBackwardScratch* s,
                        Matrix* dx, ThreadPool* pool) {
  const size_t N = mid.rows(), d = c.d_model;
  ThreadPool* const rows_pool = RowsPool(c, N, pool);
  // dx flows on unchanged and back through W_2, GELU, W_1 and LayerNorm2.
  ATTNKIT_RETURN_IF_ERROR(ProductTransposedA(a.act, *dx, g->W_2, "dW_2 = GELU(u)^T dx", pool));
  if (c.bias) kernels::ColumnSums(*dx, g->b_2.data(), rows_pool);
  ATTNKIT_RETURN_IF_ERROR(Shape(&s->dact, N, c.d_ff));
  ATTNKIT_RETURN_IF_ERROR(ProductTransposed(*dx, p.W_2, s->dact, "dx W_2^T", pool));
  kernels::GeluBackward(a.u, s->dact, rows_pool);  // now du
  if (c.bias) kernels::ColumnSums(s->dact, g->b_1.data(), rows_pool);
  ATTNKIT_RETURN_IF_ERROR(
      ProductTransposedA(a.norm2.y, s->dact, g->W_1, "dW_1 = LayerNorm2(x)^T du", pool));
  ATTNKIT_RETURN_IF_ERROR(Shape(&s->db, N, d));
  ATTNKIT_RETURN_IF_ERROR(ProductTransposed(s->dact, p.W_1, s->db, "du W_1^T", pool));
  kernels::LayerNormBackward(mid, a.norm2.mean.data(), a.norm2.rstd.data(), p.ln2_gain.data(),
                             s->db, *dx, g->ln2_gain.data(), g->ln2_bias.data(), rows_pool);
  return Status::Ok();
}

Status FinalNorm(const ModelConfig& c, const Parameters& p, const Matrix& x,
                 LayerNormActivations* f, ThreadPool* pool) {
  if (!c.layer_norm) return Status::Ok();
  return LayerNormForward(c, x, p.final_gain, p.final_bias, f, pool);
}

Status FinalNormBackward(const ModelConfig& c, const Parameters& p, const Matrix& x,
                         const LayerNormActivations& f, Matrix* df, Parameters* grads, Matrix* dx,
                         ThreadPool* pool) {
  if (!c.layer_norm) {
    std::swap(*dx, *df);
    return Status::Ok();
  }
  ATTNKIT_RETURN_IF_ERROR(Shape(dx, x.rows(), x.cols()));
  std::fill(dx->data(), dx->data() + dx->size(), 0.0f);  // LayerNormBackward adds
  kernels::LayerNormBackward(x, f.mean.data(), f.rstd.data(), p.final_gain.data(), *df, *dx,
                             grads->final_gain.data(), grads->final_bias.data(),
                             RowsPool(c, x.rows(), pool));
  return Status::Ok();
}

Status Unembed(const ModelConfig& c, const Parameters& p, const Matrix& f, Matrix* logits,
               ThreadPool* pool) {
  ATTNKIT_RETURN_IF_ERROR(Shape(logits, f.rows(), c.vocab_size));  // written whole
  if (c.tied_unembedding) {
    return ProductTransposed(f, p.token_embedding, *logits, "logits = f E^T", pool);
  }
  return Product(f, p.unembedding, *logits, "logits = f unembedding", pool);
}

Status UnembedBackward(const ModelConfig& c, const Parameters& p, const Matrix& f,
                       const Matrix& dlogits, Parameters* grads, Matrix* df, ThreadPool* pool) {
  ATTNKIT_RETURN_IF_ERROR(Shape(df, f.rows(), f.cols()));
  if (c.tied_unembedding) {
    // logits = f E^T: dE = dlogits^T f [V, d], df = dlogits E.
    ATTNKIT_RETURN_IF_ERROR(
        ProductTransposedA(dlogits, f, grads->token_embedding, "dE = dlogits^T f", pool));
    return Product(dlogits, p.token_embedding, *df, "df = dlogits E", pool);
  }
  ATTNKIT_RETURN_IF_ERROR(
      ProductTransposedA(f, dlogits, grads->unembedding, "dunembedding = f^T dlogits", pool));
  return ProductTransposed(dlogits, p.unembedding, *df, "df = dlogits unembedding^T", pool);
}

Status Loss(const Batch& batch, const Matrix& logits, Metrics* metrics, Matrix* dlogits,
            ThreadPool* pool) {
  const size_t B = batch.batch, T = batch.seq_len, N = B * T, V = logits.cols();
  // Whether each scored row's argmax is its target, by bands of rows.
  std::vector<char> hit(N, 0);
  internal::ParallelRanges(pool, N, 8, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      const int32_t target = batch.targets[r];
      hit[r] = target >= 0 && Argmax(logits.data() + r * V, V) == size_t(target);
    }
  });
  Metrics m;
  for (size_t b = 0; b < B; ++b) {
    bool any = false, all = true;
    for (size_t t = 0; t < T; ++t) {
      const size_t r = b * T + t;
      if (batch.targets[r] < 0) continue;
      ++m.scored;
      any = true;
      m.correct += hit[r];
      all = all && hit[r];
    }
    m.sequences += any;
    m.sequences_correct += any && all;
  }
  ATTNKIT_RETURN_IF_ERROR(Shape(dlogits, N, V));
  const double loss = kernels::SoftmaxCrossEntropy(
      logits, batch.targets.data(), m.scored ? 1.0f / float(m.scored) : 0.0f, *dlogits, pool);
  m.loss = m.scored ? float(loss / double(m.scored)) : 0.0f;
  *metrics = m;
  return Status::Ok();
}

Status AttentionWeightsOf(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                          const HeadConfig& heads, const AttentionOptions& options,
                          MatrixView weights) {
  internal::ScratchMatrix out;  // the attention's output, not wanted here
  ATTNKIT_RETURN_IF_ERROR(internal::AllocateScratch(
      "Q", "the attention's output", Q.rows, heads.num_heads * heads.d_v, /*zero=*/false, &out));
  MultiHeadExtras extras;
  extras.scores_stage = ScoresStage::kWeights;
  extras.scores = weights;
  return MultiHeadAttentionQKV(Q, K, V, batch, heads, options, extras, out.view());
}

}  // namespace model
}  // namespace attnkit
