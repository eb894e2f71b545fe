// attnkit internals shared by multi-head attention and the KV cache (heads.h):
// head configuration checks, the per-(item, head) task list and the
// projections of a multi-head layer.
#include "src/core/heads.h"

#include <string>
#include <utility>
#include <vector>

#include "attnkit/attention.h"
#include "attnkit/multihead.h"
#include "src/core/validate.h"

namespace attnkit {
namespace internal {

namespace {

// "kBSHD", "kBHSD", or the number of a value that is neither.
std::string LayoutName(HeadLayout layout) {
  switch (layout) {
    case HeadLayout::kBSHD:
      return "kBSHD";
    case HeadLayout::kBHSD:
      return "kBHSD";
  }
  return std::to_string(static_cast<int>(layout));
}

// num_heads > 0 and num_kv_heads (num_heads when 0) dividing it.
Status ResolveHeadCounts(const HeadConfig& c, Heads* h) {
  if (c.num_heads == 0) {
    return Status(ErrorCode::kInvalidArgument, "num_heads", "expected at least 1, got 0");
  }
  h->num_heads = c.num_heads;
  h->num_kv_heads = c.num_kv_heads ? c.num_kv_heads : c.num_heads;
  if (c.num_heads % h->num_kv_heads != 0) {
    return Status(ErrorCode::kInvalidArgument, "num_kv_heads",
                  "expected a divisor of num_heads = " + std::to_string(c.num_heads) + ", got " +
                      std::to_string(h->num_kv_heads));
  }
  return Status::Ok();
}

// rows / (batch * heads) of a kBHSD tensor `name`, checking that it divides;
// `heads_name` and `seq_name` spell the factors for the message.
Status HeadMajorSequence(const char* name, size_t rows, size_t batch, size_t heads,
                         const char* heads_name, const char* seq_name, size_t* seq) {
  size_t blocks;
  ATTNKIT_RETURN_IF_ERROR(CheckedProduct("batch", (std::string("batch * ") + heads_name).c_str(),
                                         batch, heads, &blocks));
  if (rows % blocks != 0) {
    return Status(ErrorCode::kShapeMismatch, name,
                  std::string("expected rows divisible by batch * ") + heads_name + " = " +
                      std::to_string(blocks) + " (layout bhsd: rows = batch * " + heads_name +
                      " * " + seq_name + "), got " + std::to_string(rows));
  }
  *seq = rows / blocks;
  return Status::Ok();
}

// CheckMultiHeadQKV for layout kBHSD: Q [batch * h * T_q, d_k],
// K [batch * kvh * T_k, d_k], V [batch * kvh * T_k, d_v].
Status CheckHeadMajorQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                         const HeadConfig& config, MultiHeadShape* m) {
  Heads& heads = m->heads;
  ATTNKIT_RETURN_IF_ERROR(ResolveHeadCounts(config, &heads));
  heads.layout = HeadLayout::kBHSD;
  heads.d_k = config.d_k ? config.d_k : Q.cols;
  heads.d_v = config.d_v ? config.d_v : V.cols;
  if (batch == 0) {
    return Status(ErrorCode::kInvalidArgument, "batch", "expected at least 1, got 0");
  }
  m->batch = batch;
  ATTNKIT_RETURN_IF_ERROR(
      HeadMajorSequence("Q", Q.rows, batch, heads.num_heads, "num_heads", "T_q", &m->T_q));
  ATTNKIT_RETURN_IF_ERROR(
      HeadMajorSequence("K", K.rows, batch, heads.num_kv_heads, "num_kv_heads", "T_k", &m->T_k));
  m->query_head_rows = Q.rows;
  ATTNKIT_RETURN_IF_ERROR(CheckShape("Q", Q, Q.rows, heads.d_k, "batch * num_heads * T_q",
                                     "d_k, one head a row in layout bhsd"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("K", K, K.rows, heads.d_k, "batch * num_kv_heads * T_k",
                                     "d_k, one head a row in layout bhsd"));
  return CheckShape("V", V, K.rows, heads.d_v,
                    "batch * num_kv_heads * T_k, the rows of K in layout bhsd",
                    "d_v, one head a row in layout bhsd");
}

}  // namespace

Status ResolveHeads(const HeadConfig& c, size_t q_cols, const char* q_cols_name, size_t v_cols,
                    Heads* h) {
  if (c.layout != HeadLayout::kBSHD) {
    return Status(ErrorCode::kInvalidArgument, "layout",
                  "expected kBSHD (a call that projects X or reads a KV cache lays out its heads "
                  "itself; kBHSD is for MultiHeadAttentionQKV and its gradients), got " +
                      LayoutName(c.layout));
  }
  ATTNKIT_RETURN_IF_ERROR(ResolveHeadCounts(c, h));
  h->layout = HeadLayout::kBSHD;
  h->d_k = c.d_k;
  if (h->d_k == 0) {
    if (q_cols % c.num_heads != 0) {
      return Status(ErrorCode::kInvalidArgument, "num_heads",
                    std::string("expected a divisor of ") + q_cols_name + " = " +
                        std::to_string(q_cols) + " (d_k = " + q_cols_name + " / num_heads), got " +
                        std::to_string(c.num_heads));
    }
    h->d_k = q_cols / c.num_heads;
  }
  h->d_v = c.d_v;
  if (h->d_v == 0) {
    if (v_cols == 0) {
      h->d_v = h->d_k;
    } else if (v_cols % h->num_kv_heads != 0) {
      return Status(ErrorCode::kShapeMismatch, "V",
                    "expected columns divisible by num_kv_heads = " +
                        std::to_string(h->num_kv_heads) + ", got " + std::to_string(v_cols));
    } else {
      h->d_v = v_cols / h->num_kv_heads;
    }
  }
  // Guard the products used for shapes below.
  size_t n;
  ATTNKIT_RETURN_IF_ERROR(CheckedProduct("num_heads", "num_heads * d_k", h->num_heads, h->d_k, &n));
  ATTNKIT_RETURN_IF_ERROR(CheckedProduct("num_heads", "num_heads * d_v", h->num_heads, h->d_v, &n));
  return Status::Ok();
}

Status SequenceLength(const char* name, size_t rows, size_t batch, size_t* seq_len) {
  if (batch == 0) {
    return Status(ErrorCode::kInvalidArgument, "batch", "expected at least 1, got 0");
  }
  if (rows % batch != 0) {
    return Status(ErrorCode::kShapeMismatch, name,
                  "expected rows divisible by batch = " + std::to_string(batch) +
                      " (rows = batch * seq_len), got " + std::to_string(rows));
  }
  *seq_len = rows / batch;
  return Status::Ok();
}

Status CheckMultiHeadQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                         const HeadConfig& config, MultiHeadShape* m) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("Q", Q));
  ATTNKIT_RETURN_IF_ERROR(CheckView("K", K));
  ATTNKIT_RETURN_IF_ERROR(CheckView("V", V));
  if (config.layout == HeadLayout::kBHSD) return CheckHeadMajorQKV(Q, K, V, batch, config, m);
  if (config.layout != HeadLayout::kBSHD) {
    return Status(ErrorCode::kInvalidArgument, "layout",
                  "expected kBSHD (0) or kBHSD (1), got " + LayoutName(config.layout));
  }
  Heads& heads = m->heads;
  ATTNKIT_RETURN_IF_ERROR(ResolveHeads(config, Q.cols, "the columns of Q", V.cols, &heads));
  m->batch = batch;
  ATTNKIT_RETURN_IF_ERROR(SequenceLength("Q", Q.rows, batch, &m->T_q));
  ATTNKIT_RETURN_IF_ERROR(SequenceLength("K", K.rows, batch, &m->T_k));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("Q", Q, Q.rows, heads.num_heads * heads.d_k, "batch * T_q", "num_heads * d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("K", K, K.rows, heads.num_kv_heads * heads.d_k, "batch * T_k",
                                     "num_kv_heads * d_k"));
  // At most the elements of Q (checked by CheckView), as num_heads <= its columns.
  m->query_head_rows = Q.rows * heads.num_heads;
  return CheckShape("V", V, K.rows, heads.num_kv_heads * heads.d_v, "batch * T_k, the rows of K",
                    "num_kv_heads * d_v");
}

void AddHeadTasks(ConstMatrixView Q, MatrixView out, size_t batch, size_t T_q, size_t T_k,
                  const Heads& heads, const AttentionOptions& options,
                  const std::function<void(size_t, size_t, ConstMatrixView*, ConstMatrixView*)>& kv,
                  std::vector<HeadTask>* tasks) {
  for (size_t b = 0; b < batch; ++b) {
    for (size_t h = 0; h < heads.num_heads; ++h) {
      HeadTask t;
      t.Q = HeadBlock(Q, heads.layout, b, h, heads.num_heads, T_q, heads.d_k);
      kv(b, h / heads.group(), &t.K, &t.V);
      t.out = HeadBlock(out, heads.layout, b, h, heads.num_heads, T_q, heads.d_v);
      SetHeadMasks(options, b, h, &t);
      tasks->push_back(t);
    }
  }
}

Status CheckMultiHeadWeights(const MultiHeadWeights& w, size_t d_model, const Heads& heads,
                             size_t* d_out) {
  ATTNKIT_RETURN_IF_ERROR(CheckShape("W_Q", w.W_Q, d_model, heads.num_heads * heads.d_k,
                                     "d_model, the columns of X", "num_heads * d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("W_K", w.W_K, d_model, heads.num_kv_heads * heads.d_k,
                                     "d_model, the columns of X", "num_kv_heads * d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("W_V", w.W_V, d_model, heads.num_kv_heads * heads.d_v,
                                     "d_model, the columns of X", "num_kv_heads * d_v"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("W_Q", w.W_Q));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("W_K", w.W_K));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("W_V", w.W_V));
  *d_out = heads.num_heads * heads.d_v;
  if (!w.W_O.empty()) {
    ATTNKIT_RETURN_IF_ERROR(CheckShape("W_O", w.W_O, heads.num_heads * heads.d_v, w.W_O.cols,
                                       "num_heads * d_v", "d_out"));
    ATTNKIT_RETURN_IF_ERROR(CheckFinite("W_O", w.W_O));
    *d_out = w.W_O.cols;
  }
  return Status::Ok();
}

Status AddMultiHeadProjections(ConstMatrixView X, const MultiHeadWeights& weights,
                               const Heads& heads, MatrixView out, Projected* p,
                               AttentionJob* job) {
  ATTNKIT_RETURN_IF_ERROR(
      Allocate("X", "Q [batch*T, num_heads*d_k]", X.rows, heads.num_heads * heads.d_k, &p->Q));
  ATTNKIT_RETURN_IF_ERROR(Allocate("X", "K [batch*T, num_kv_heads*d_k]", X.rows,
                                   heads.num_kv_heads * heads.d_k, &p->K));
  ATTNKIT_RETURN_IF_ERROR(Allocate("X", "V [batch*T, num_kv_heads*d_v]", X.rows,
                                   heads.num_kv_heads * heads.d_v, &p->V));
  p->heads_out = out;
  if (!weights.W_O.empty()) {
    ATTNKIT_RETURN_IF_ERROR(Allocate("X", "merged heads [batch*T, num_heads*d_v]", X.rows,
                                     heads.num_heads * heads.d_v, &p->merged));
    p->heads_out = p->merged.view();
    job->output = {p->merged.view(), weights.W_O, out};
  }
  job->projections = {
      {X, weights.W_Q, p->Q.view()}, {X, weights.W_K, p->K.view()}, {X, weights.W_V, p->V.view()}};
  return Status::Ok();
}

}  // namespace internal
}  // namespace attnkit
