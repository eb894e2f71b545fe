// attnkit: multi-head attention, grouped K/V heads, batching, split/merge.
#include "attnkit/multihead.h"

#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "attnkit/packed_weights.h"
#include "src/core/heads.h"
#include "src/core/internal.h"
#include "src/core/plan.h"
#include "src/core/scratch.h"
#include "src/core/validate.h"

namespace attnkit {

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

// The internal name of a checked scores stage.
internal::KeepStage KeepStageOf(ScoresStage stage) {
  switch (stage) {
    case ScoresStage::kRaw:
      return internal::KeepStage::kRaw;
    case ScoresStage::kScaled:
      return internal::KeepStage::kScaled;
    case ScoresStage::kMasked:
      return internal::KeepStage::kMasked;
    case ScoresStage::kWeights:
      return internal::KeepStage::kWeights;
    case ScoresStage::kNone:
      break;
  }
  return internal::KeepStage::kNone;
}

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
// [(b*kvh + g)*T_past, +T_past), then the T_new rows of head g of item b of
// `now` (K or V in the call's layout, m.KeyHead).
void Concatenate(ConstMatrixView past, ConstMatrixView now, const internal::MultiHeadShape& m,
                 size_t T_past, MatrixView present) {
  const size_t d = present.cols, kvh = m.heads.num_kv_heads, T_total = T_past + m.T_k;
  for (size_t b = 0; b < m.batch; ++b) {
    for (size_t g = 0; g < kvh; ++g) {
      const size_t at = (b * kvh + g) * T_total;
      for (size_t t = 0; t < T_past; ++t) {
        std::memcpy(present.Row(at + t), past.Row((b * kvh + g) * T_past + t), d * sizeof(float));
      }
      const ConstMatrixView head = m.KeyHead(now, b, g, d);
      for (size_t t = 0; t < m.T_k; ++t) {
        std::memcpy(present.Row(at + T_past + t), head.Row(t), d * sizeof(float));
      }
    }
  }
}

// Checks the extras of MultiHeadAttentionQKV (past, present, scores) and
// that no output overlaps an input: sets *T_past_out, the past's tokens, and
// *present_rows, the rows of present.
Status CheckExtras(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                   const Heads& heads, size_t T_q, size_t T_k, const MultiHeadExtras& extras,
                   MatrixView out, size_t* T_past_out, size_t* present_rows) {
  // Every input that an output must not overlap.
  std::vector<std::pair<const char*, ConstMatrixView>> inputs = {{"Q", Q}, {"K", K}, {"V", V}};
  // Past keys and values: [B*kvh*T_past, d_k] and [B*kvh*T_past, d_v].
  const size_t kvh = heads.num_kv_heads;
  size_t T_past = 0, blocks;
  *T_past_out = 0;
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
  *T_past_out = T_past;
  const size_t T_total = T_past + T_k;
  // Present keys and values: [B*kvh*T_total, d_k] and [B*kvh*T_total, d_v].
  ATTNKIT_RETURN_IF_ERROR(CheckPair("present_K", extras.present_K, "present_V", extras.present_V));
  ATTNKIT_RETURN_IF_ERROR(CheckedProduct("present_K", "present [batch * num_kv_heads * T_total, d]",
                                         blocks, T_total, present_rows));
  const bool has_present = !extras.present_K.empty();
  if (has_present) {
    ATTNKIT_RETURN_IF_ERROR(CheckShape("present_K", extras.present_K, *present_rows, heads.d_k,
                                       "batch * num_kv_heads * (T_past + T_k)", "d_k"));
    ATTNKIT_RETURN_IF_ERROR(CheckShape("present_V", extras.present_V, *present_rows, heads.d_v,
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
  return Status::Ok();
}

}  // namespace

Status MultiHeadAttentionQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                             const HeadConfig& config, const AttentionOptions& options,
                             const MultiHeadExtras& extras, MatrixView out) {
  internal::MultiHeadShape shape;
  ATTNKIT_RETURN_IF_ERROR(internal::CheckMultiHeadQKV(Q, K, V, batch, config, &shape));
  const Heads& heads = shape.heads;
  const size_t T_q = shape.T_q, T_k = shape.T_k;
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("out", out, Q.rows, shape.OutCols(), shape.OutRowsNote(), shape.OutColsNote()));
  size_t T_past, present_rows;
  ATTNKIT_RETURN_IF_ERROR(
      CheckExtras(Q, K, V, batch, heads, T_q, T_k, extras, out, &T_past, &present_rows));
  const size_t kvh = heads.num_kv_heads;
  const size_t T_total = T_past + T_k;
  const bool has_present = !extras.present_K.empty();
  const bool has_scores = extras.scores_stage != ScoresStage::kNone;
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("Q", Q));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("K", K));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("V", V));
  internal::AttentionJob job;
  ATTNKIT_RETURN_IF_ERROR(
      internal::CheckOptions(options, T_q, T_total, /*batched=*/true, batch, heads.num_heads));
  job.params = internal::ScoreParamsOf(options, heads.d_k);
  job.pool = options.pool;
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
    Concatenate(extras.past_K, K, shape, T_past, present_K);
    Concatenate(extras.past_V, V, shape, T_past, present_V);
  }
  internal::AddHeadTasks(
      Q, out, batch, T_q, T_total, heads, options,
      [&](size_t b, size_t g, ConstMatrixView* k, ConstMatrixView* v) {
        if (in_place) {
          *k = shape.KeyHead(K, b, g, heads.d_k);
          *v = shape.KeyHead(V, b, g, heads.d_v);
        } else {
          *k = present_K.Block((b * kvh + g) * T_total, T_total, 0, heads.d_k);
          *v = present_V.Block((b * kvh + g) * T_total, T_total, 0, heads.d_v);
        }
      },
      &job.heads);
  if (has_scores) {
    job.keep_stage = KeepStageOf(extras.scores_stage);
    for (size_t i = 0; i < job.heads.size(); ++i) {
      job.heads[i].scores = extras.scores.Block(i * T_q, T_q, 0, T_total);
    }
  }
  return internal::RunAttentionJob(job);
}

namespace {

// The layer once its weights are checked (or packed, `packed` not null):
// X [B*T, d_model] -> Q, K, V -> attention per (item, head) -> merged heads
// -> W_O -> out [B*T, d_out]. `weights` gives the shapes; with `packed`, the
// projections read its panels and never `weights`' data.
Status MultiHeadLayer(ConstMatrixView X, size_t batch, size_t T, const internal::Heads& heads,
                      const MultiHeadWeights& weights, const PackedMultiHeadWeights* packed,
                      size_t d_out, const AttentionOptions& options, MatrixView out) {
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("out", out, X.rows, d_out, "batch * T, the rows of X",
                 weights.W_O.empty() ? "num_heads * d_v" : "the columns of W_O"));
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("out", out, "X", X));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("X", X));
  internal::AttentionJob job;
  job.source = "X";
  ATTNKIT_RETURN_IF_ERROR(
      internal::CheckOptions(options, T, T, /*batched=*/true, batch, heads.num_heads));
  job.params = internal::ScoreParamsOf(options, heads.d_k);
  job.pool = options.pool;
  // Q [rows, h*d_k], K [rows, kvh*d_k], V [rows, kvh*d_v] and, with W_O, the
  // merged heads [rows, h*d_v], in one buffer that is not zeroed: the
  // projections write all of Q, K and V, and the heads all of the merged
  // heads, before anything reads them: zeroing would be a pass over all of
  // them per call.
  const size_t rows = X.rows;
  const size_t cols[4] = {heads.num_heads * heads.d_k, heads.num_kv_heads * heads.d_k,
                          heads.num_kv_heads * heads.d_v,
                          weights.W_O.empty() ? 0 : heads.num_heads * heads.d_v};
  size_t at[4], floats = 0;
  for (size_t i = 0; i < 4; ++i) {
    size_t n;
    ATTNKIT_RETURN_IF_ERROR(
        CheckedProduct("X", "Q, K, V and the merged heads [batch * T, ...]", rows, cols[i], &n));
    if (n > std::numeric_limits<size_t>::max() - 16 - floats) {
      return internal::OutOfMemory("X", "Q, K, V and the merged heads", n);
    }
    at[i] = floats;
    floats += internal::RoundUp(n, 16);  // each on a cache line of its own
  }
  internal::ScratchBuffer memory;
  if (!memory.Allocate(floats)) {
    return internal::OutOfMemory("X", "Q, K, V and the merged heads", floats);
  }
  const auto part = [&](size_t i) { return MatrixView(memory.data() + at[i], rows, cols[i]); };
  const MatrixView Q = part(0), K = part(1), V = part(2);
  MatrixView heads_out = out;
  job.projections = {{X, weights.W_Q, Q}, {X, weights.W_K, K}, {X, weights.W_V, V}};
  if (!weights.W_O.empty()) {
    heads_out = part(3);
    job.output = {heads_out, weights.W_O, out};
  }
  // Weights packed once: the projections read their panels.
  if (packed) {
    const PanelMatrix* panels[3] = {&packed->W_Q(), &packed->W_K(), &packed->W_V()};
    for (size_t i = 0; i < 3; ++i) {
      job.projections[i].panels = panels[i]->panels;
      job.projections[i].panel_width = panels[i]->panel_width;
    }
    if (!packed->W_O().empty()) {
      job.output.panels = packed->W_O().panels;
      job.output.panel_width = packed->W_O().panel_width;
    }
  }
  internal::AddHeadTasks(
      Q, heads_out, batch, T, T, heads, options,
      [&](size_t b, size_t g, ConstMatrixView* k, ConstMatrixView* v) {
        *k = ConstMatrixView(K).Block(b * T, T, g * heads.d_k, heads.d_k);
        *v = ConstMatrixView(V).Block(b * T, T, g * heads.d_v, heads.d_v);
      },
      &job.heads);
  return internal::RunAttentionJob(job);
}

// A field of the resolved config against the pack's: an error names it.
Status CheckPackedField(const char* name, size_t given, size_t packed) {
  if (given == packed) return Status::Ok();
  return Status(ErrorCode::kInvalidArgument, name,
                "expected " + std::to_string(packed) + ", the " + name +
                    " the weights were packed for, got " + std::to_string(given));
}

}  // namespace

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
  return MultiHeadLayer(X, batch, T, heads, weights, nullptr, d_out, options, out);
}

Status MultiHeadAttention(ConstMatrixView X, size_t batch, const PackedMultiHeadWeights& weights,
                          const HeadConfig& config, const AttentionOptions& options,
                          MatrixView out) {
  if (weights.empty()) {
    return Status(ErrorCode::kInvalidArgument, "weights",
                  "expected weights packed by PackMultiHeadWeights, got an empty pack");
  }
  ATTNKIT_RETURN_IF_ERROR(CheckView("X", X));
  if (X.cols != weights.d_model()) {
    return Status(ErrorCode::kShapeMismatch, "X",
                  "expected d_model = " + std::to_string(weights.d_model()) +
                      " columns (the rows of the packed W_Q), got " + std::to_string(X.cols));
  }
  Heads heads;
  ATTNKIT_RETURN_IF_ERROR(internal::ResolveHeads(config, X.cols, "d_model", 0, &heads));
  const HeadConfig& c = weights.config();
  ATTNKIT_RETURN_IF_ERROR(CheckPackedField("num_heads", heads.num_heads, c.num_heads));
  ATTNKIT_RETURN_IF_ERROR(CheckPackedField("num_kv_heads", heads.num_kv_heads, c.num_kv_heads));
  ATTNKIT_RETURN_IF_ERROR(CheckPackedField("d_k", heads.d_k, c.d_k));
  ATTNKIT_RETURN_IF_ERROR(CheckPackedField("d_v", heads.d_v, c.d_v));
  size_t T;
  ATTNKIT_RETURN_IF_ERROR(internal::SequenceLength("X", X.rows, batch, &T));
  // The shapes of the packed weights, for the projections' checks and
  // scratch; their data is read from the panels.
  const auto shape = [](const PanelMatrix& m) {
    return m.empty() ? ConstMatrixView() : ConstMatrixView(nullptr, m.rows, m.cols);
  };
  const MultiHeadWeights shapes{shape(weights.W_Q()), shape(weights.W_K()), shape(weights.W_V()),
                                shape(weights.W_O())};
  return MultiHeadLayer(X, batch, T, heads, shapes, &weights, weights.d_out(), options, out);
}

}  // namespace attnkit
