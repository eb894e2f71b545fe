// attnkit: multi-head attention, grouped K/V heads, batching, split/merge.
#include "src/core/multihead.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "src/core/heads.h"
#include "src/core/internal.h"
#include "src/core/validate.h"

namespace attnkit {
namespace internal {

Status ResolveHeads(const HeadConfig& c, size_t q_cols, const char* q_cols_name, size_t v_cols,
                    Heads* h) {
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

Status CheckKeyLengthCount(const AttentionOptions& options, size_t batch) {
  if (!options.key_lengths.empty() && options.key_lengths.size() != batch) {
    return Status(ErrorCode::kInvalidArgument, "key_lengths",
                  "expected batch = " + std::to_string(batch) + " lengths (or none), got " +
                      std::to_string(options.key_lengths.size()));
  }
  return Status::Ok();
}

void AddHeadTasks(ConstMatrixView Q, MatrixView out, size_t batch, size_t T_q, size_t T_k,
                  const Heads& heads, const AttentionOptions& options,
                  const std::function<void(size_t, size_t, ConstMatrixView*, ConstMatrixView*)>& kv,
                  std::vector<HeadTask>* tasks) {
  for (size_t b = 0; b < batch; ++b) {
    for (size_t h = 0; h < heads.num_heads; ++h) {
      HeadTask t;
      t.Q = Q.Block(b * T_q, T_q, h * heads.d_k, heads.d_k);
      kv(b, h / heads.group(), &t.K, &t.V);
      t.out = out.Block(b * T_q, T_q, h * heads.d_v, heads.d_v);
      SetHeadMasks(options, b, h, &t);
      tasks->push_back(t);
    }
  }
}

}  // namespace internal

using internal::CheckedProduct;
using internal::CheckFinite;
using internal::CheckNoOverlap;
using internal::CheckShape;
using internal::CheckView;
using internal::Heads;

Status SplitHeads(ConstMatrixView x, size_t num_heads, MatrixView out) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("x", x));
  if (num_heads == 0) {
    return Status(ErrorCode::kInvalidArgument, "num_heads", "expected at least 1, got 0");
  }
  if (x.cols % num_heads != 0) {
    return Status(ErrorCode::kInvalidArgument, "num_heads",
                  "expected a divisor of the columns of x = " + std::to_string(x.cols) + ", got " +
                      std::to_string(num_heads));
  }
  const size_t T = x.rows, d = x.cols / num_heads;
  size_t rows;
  ATTNKIT_RETURN_IF_ERROR(
      internal::CheckedProduct("x", "out rows (num_heads * T)", num_heads, T, &rows));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("out", out, rows, d, "num_heads * T", "head dim = cols / num_heads"));
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("out", out, "x", x));
  for (size_t h = 0; h < num_heads; ++h) {
    for (size_t t = 0; t < T; ++t) {
      std::memcpy(out.Row(h * T + t), x.Row(t) + h * d, d * sizeof(float));
    }
  }
  return Status::Ok();
}

Status MergeHeads(ConstMatrixView heads, size_t num_heads, MatrixView out) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("heads", heads));
  size_t T;
  if (num_heads == 0) {
    return Status(ErrorCode::kInvalidArgument, "num_heads", "expected at least 1, got 0");
  }
  if (heads.rows % num_heads != 0) {
    return Status(ErrorCode::kInvalidArgument, "num_heads",
                  "expected a divisor of the rows of heads = " + std::to_string(heads.rows) +
                      ", got " + std::to_string(num_heads));
  }
  T = heads.rows / num_heads;
  const size_t d = heads.cols;
  size_t cols;
  ATTNKIT_RETURN_IF_ERROR(
      internal::CheckedProduct("heads", "out cols (num_heads * d)", num_heads, d, &cols));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("out", out, T, cols, "T = rows of heads / num_heads", "num_heads * d"));
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("out", out, "heads", heads));
  for (size_t h = 0; h < num_heads; ++h) {
    for (size_t t = 0; t < T; ++t) {
      std::memcpy(out.Row(t) + h * d, heads.Row(h * T + t), d * sizeof(float));
    }
  }
  return Status::Ok();
}

Status MultiHeadAttentionQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                             const HeadConfig& config, const AttentionOptions& options,
                             MatrixView out) {
  return MultiHeadAttentionQKV(Q, K, V, batch, config, options, MultiHeadExtras(), out);
}

namespace {

// Both views of a pair or neither: `second` given without `first` or the
// reverse is an error naming the missing one.
template <typename T>
Status CheckPair(const char* first, MatrixViewT<T> a, const char* second, MatrixViewT<T> b) {
  if (a.empty() == b.empty()) return Status::Ok();
  const char* missing = a.empty() ? first : second;
  const char* given = a.empty() ? second : first;
  return Status(
      ErrorCode::kInvalidArgument, missing,
      std::string("expected a matrix together with ") + given + " (both or neither), got none");
}

// present [B*kvh*T_total, d] <- per (item, kv head g): past rows
// [(b*kvh + g)*T_past, +T_past), then the new rows of head g of item b
// (columns [g*d, (g+1)*d) of `now` [B*T_new, kvh*d]).
void Concatenate(ConstMatrixView past, ConstMatrixView now, size_t batch, size_t kvh, size_t T_past,
                 size_t T_new, MatrixView present) {
  const size_t d = present.cols, T_total = T_past + T_new;
  for (size_t b = 0; b < batch; ++b) {
    for (size_t g = 0; g < kvh; ++g) {
      const size_t at = (b * kvh + g) * T_total;
      for (size_t t = 0; t < T_past; ++t) {
        std::memcpy(present.Row(at + t), past.Row((b * kvh + g) * T_past + t), d * sizeof(float));
      }
      for (size_t t = 0; t < T_new; ++t) {
        std::memcpy(present.Row(at + T_past + t), now.Row(b * T_new + t) + g * d,
                    d * sizeof(float));
      }
    }
  }
}

}  // namespace

Status MultiHeadAttentionQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                             const HeadConfig& config, const AttentionOptions& options,
                             const MultiHeadExtras& extras, MatrixView out) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("Q", Q));
  ATTNKIT_RETURN_IF_ERROR(CheckView("K", K));
  ATTNKIT_RETURN_IF_ERROR(CheckView("V", V));
  Heads heads;
  ATTNKIT_RETURN_IF_ERROR(
      internal::ResolveHeads(config, Q.cols, "the columns of Q", V.cols, &heads));
  size_t T_q, T_k;
  ATTNKIT_RETURN_IF_ERROR(internal::SequenceLength("Q", Q.rows, batch, &T_q));
  ATTNKIT_RETURN_IF_ERROR(internal::SequenceLength("K", K.rows, batch, &T_k));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("Q", Q, Q.rows, heads.num_heads * heads.d_k, "batch * T_q", "num_heads * d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("K", K, K.rows, heads.num_kv_heads * heads.d_k, "batch * T_k",
                                     "num_kv_heads * d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("V", V, K.rows, heads.num_kv_heads * heads.d_v,
                                     "batch * T_k, the rows of K", "num_kv_heads * d_v"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("out", out, Q.rows, heads.num_heads * heads.d_v,
                                     "batch * T_q, the rows of Q", "num_heads * d_v"));
  // Every input that an output must not overlap.
  std::vector<std::pair<const char*, ConstMatrixView>> inputs = {{"Q", Q}, {"K", K}, {"V", V}};
  // Past keys and values: [B*kvh*T_past, d_k] and [B*kvh*T_past, d_v].
  const size_t kvh = heads.num_kv_heads;
  size_t T_past = 0, blocks;
  ATTNKIT_RETURN_IF_ERROR(CheckedProduct("batch", "batch * num_kv_heads", batch, kvh, &blocks));
  ATTNKIT_RETURN_IF_ERROR(CheckPair("past_K", extras.past_K, "past_V", extras.past_V));
  if (!extras.past_K.empty()) {
    ATTNKIT_RETURN_IF_ERROR(CheckView("past_K", extras.past_K));
    if (extras.past_K.rows % blocks != 0) {
      return Status(ErrorCode::kShapeMismatch, "past_K",
                    "expected rows divisible by batch * num_kv_heads = " + std::to_string(blocks) +
                        " (rows = batch * num_kv_heads * T_past), got " +
                        std::to_string(extras.past_K.rows));
    }
    T_past = extras.past_K.rows / blocks;
    ATTNKIT_RETURN_IF_ERROR(CheckShape("past_K", extras.past_K, extras.past_K.rows, heads.d_k,
                                       "batch * num_kv_heads * T_past", "d_k"));
    ATTNKIT_RETURN_IF_ERROR(CheckShape("past_V", extras.past_V, extras.past_K.rows, heads.d_v,
                                       "batch * num_kv_heads * T_past, the rows of past_K", "d_v"));
    ATTNKIT_RETURN_IF_ERROR(CheckFinite("past_K", extras.past_K));
    ATTNKIT_RETURN_IF_ERROR(CheckFinite("past_V", extras.past_V));
    inputs.push_back({"past_K", extras.past_K});
    inputs.push_back({"past_V", extras.past_V});
  }
  const size_t T_total = T_past + T_k;
  // Present keys and values: [B*kvh*T_total, d_k] and [B*kvh*T_total, d_v].
  ATTNKIT_RETURN_IF_ERROR(CheckPair("present_K", extras.present_K, "present_V", extras.present_V));
  size_t present_rows;
  ATTNKIT_RETURN_IF_ERROR(CheckedProduct("present_K", "present [batch * num_kv_heads * T_total, d]",
                                         blocks, T_total, &present_rows));
  const bool has_present = !extras.present_K.empty();
  if (has_present) {
    ATTNKIT_RETURN_IF_ERROR(CheckShape("present_K", extras.present_K, present_rows, heads.d_k,
                                       "batch * num_kv_heads * (T_past + T_k)", "d_k"));
    ATTNKIT_RETURN_IF_ERROR(CheckShape("present_V", extras.present_V, present_rows, heads.d_v,
                                       "batch * num_kv_heads * (T_past + T_k)", "d_v"));
    ATTNKIT_RETURN_IF_ERROR(
        CheckNoOverlap("present_V", extras.present_V, "present_K", extras.present_K));
  }
  // Intermediate scores: [B*h*T_q, T_total].
  if (extras.scores_stage != ScoresStage::kNone && extras.scores_stage != ScoresStage::kRaw &&
      extras.scores_stage != ScoresStage::kScaled && extras.scores_stage != ScoresStage::kMasked &&
      extras.scores_stage != ScoresStage::kWeights) {
    return Status(ErrorCode::kInvalidArgument, "scores_stage",
                  "expected kNone, kRaw, kScaled, kMasked or kWeights (0-4), got " +
                      std::to_string(static_cast<int>(extras.scores_stage)));
  }
  const bool has_scores = extras.scores_stage != ScoresStage::kNone;
  if (!has_scores && !extras.scores.empty()) {
    return Status(ErrorCode::kInvalidArgument, "scores",
                  "expected an empty view with scores_stage kNone (set a stage to "
                  "receive scores), got a matrix");
  }
  if (has_scores) {
    size_t score_rows;
    ATTNKIT_RETURN_IF_ERROR(CheckedProduct("scores", "scores [batch * num_heads * T_q, T_total]",
                                           batch * heads.num_heads, T_q, &score_rows));
    ATTNKIT_RETURN_IF_ERROR(CheckShape("scores", extras.scores, score_rows, T_total,
                                       "batch * num_heads * T_q", "T_past + T_k, the key count"));
    ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("scores", extras.scores, "out", out));
  }
  for (const auto& [name, in] : inputs) {
    ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("out", out, name, in));
    if (has_present) {
      ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("present_K", extras.present_K, name, in));
      ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("present_V", extras.present_V, name, in));
    }
    if (has_scores) ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("scores", extras.scores, name, in));
  }
  if (has_present) {
    for (const auto& [name, o] : {std::pair<const char*, MatrixView>{"present_K", extras.present_K},
                                  {"present_V", extras.present_V}}) {
      ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("out", out, name, o));
      if (has_scores) ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("scores", extras.scores, name, o));
    }
  }
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("Q", Q));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("K", K));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("V", V));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckKeyLengthCount(options, batch));
  internal::AttentionJob job;
  ATTNKIT_RETURN_IF_ERROR(internal::CheckOptions(options, T_q, T_total, heads.d_k,
                                                 /*batched=*/true, batch, heads.num_heads, &job));
  // Attention reads K and V in place without a past, else present (the
  // caller's, or a temporary one).
  Matrix own_K, own_V;
  MatrixView present_K = extras.present_K, present_V = extras.present_V;
  if (!has_present && T_past > 0) {
    ATTNKIT_RETURN_IF_ERROR(internal::Allocate("past_K",
                                               "present_K [batch * num_kv_heads * T_total, d_k]",
                                               present_rows, heads.d_k, &own_K));
    ATTNKIT_RETURN_IF_ERROR(internal::Allocate("past_V",
                                               "present_V [batch * num_kv_heads * T_total, d_v]",
                                               present_rows, heads.d_v, &own_V));
    present_K = own_K.view();
    present_V = own_V.view();
  }
  const bool in_place = present_K.empty();
  if (!in_place) {
    Concatenate(extras.past_K, K, batch, kvh, T_past, T_k, present_K);
    Concatenate(extras.past_V, V, batch, kvh, T_past, T_k, present_V);
  }
  internal::AddHeadTasks(
      Q, out, batch, T_q, T_total, heads, options,
      [&](size_t b, size_t g, ConstMatrixView* k, ConstMatrixView* v) {
        if (in_place) {
          *k = K.Block(b * T_k, T_k, g * heads.d_k, heads.d_k);
          *v = V.Block(b * T_k, T_k, g * heads.d_v, heads.d_v);
        } else {
          *k = present_K.Block((b * kvh + g) * T_total, T_total, 0, heads.d_k);
          *v = present_V.Block((b * kvh + g) * T_total, T_total, 0, heads.d_v);
        }
      },
      &job.heads);
  if (has_scores) {
    job.scores_stage = extras.scores_stage;
    for (size_t i = 0; i < job.heads.size(); ++i) {
      job.heads[i].scores = extras.scores.Block(i * T_q, T_q, 0, T_total);
    }
  }
  return internal::RunAttentionJob(&job);
}

namespace internal {

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

Status MultiHeadAttention(ConstMatrixView X, size_t batch, const MultiHeadWeights& weights,
                          const HeadConfig& config, const AttentionOptions& options,
                          MatrixView out) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("X", X));
  Heads heads;
  ATTNKIT_RETURN_IF_ERROR(internal::ResolveHeads(config, X.cols, "d_model", 0, &heads));
  size_t T;
  ATTNKIT_RETURN_IF_ERROR(internal::SequenceLength("X", X.rows, batch, &T));
  size_t d_out;
  ATTNKIT_RETURN_IF_ERROR(internal::CheckMultiHeadWeights(weights, X.cols, heads, &d_out));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("out", out, X.rows, d_out, "batch * T, the rows of X",
                 weights.W_O.empty() ? "num_heads * d_v" : "the columns of W_O"));
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("out", out, "X", X));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("X", X));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckKeyLengthCount(options, batch));
  internal::AttentionJob job;
  job.source = "X";
  ATTNKIT_RETURN_IF_ERROR(internal::CheckOptions(options, T, T, heads.d_k, /*batched=*/true, batch,
                                                 heads.num_heads, &job));
  internal::Projected p;
  ATTNKIT_RETURN_IF_ERROR(internal::AddMultiHeadProjections(X, weights, heads, out, &p, &job));
  internal::AddHeadTasks(
      p.Q.view(), p.heads_out, batch, T, T, heads, options,
      [&](size_t b, size_t g, ConstMatrixView* k, ConstMatrixView* v) {
        *k = p.K.view().Block(b * T, T, g * heads.d_k, heads.d_k);
        *v = p.V.view().Block(b * T, T, g * heads.d_v, heads.d_v);
      },
      &job.heads);
  return internal::RunAttentionJob(&job);
}

}  // namespace attnkit
