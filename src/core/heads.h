// attnkit internals shared by multi-head attention and the KV cache: head
// configuration checks and the per-(item, head) task list (heads.cc).
#ifndef ATTNKIT_HEADS_H_
#define ATTNKIT_HEADS_H_

#include <cstddef>
#include <functional>
#include <vector>

#include "attnkit/matrix.h"
#include "attnkit/multihead.h"
#include "attnkit/status.h"
#include "src/core/internal.h"

namespace attnkit {

struct AttentionOptions;  // attention.h
namespace internal {

struct Heads {
  size_t num_heads = 0;
  size_t num_kv_heads = 0;
  size_t d_k = 0;
  size_t d_v = 0;
  // How Q, K, V and out hold their heads (kBSHD for every call but the QKV
  // calls given kBHSD).
  HeadLayout layout = HeadLayout::kBSHD;
  // Query head h reads K/V head h / group.
  size_t group() const { return num_heads / num_kv_heads; }
};

// Head `head` of batch item `item` of a tensor holding `num` heads of `seq`
// rows and `d` columns each: in place, never a copy. kBSHD: rows
// [item*seq, +seq), columns [head*d, +d) (rows num*d apart); kBHSD: the
// contiguous rows [(item*num + head)*seq, +seq).
template <typename T>
MatrixViewT<T> HeadBlock(MatrixViewT<T> m, HeadLayout layout, size_t item, size_t head, size_t num,
                         size_t seq, size_t d) {
  if (layout == HeadLayout::kBHSD) return m.Block((item * num + head) * seq, seq, 0, d);
  return m.Block(item * seq, seq, head * d, d);
}

// Checks num_heads > 0 and num_kv_heads | num_heads; fills in derived d_k
// (q_cols / num_heads, where q_cols is d_model or the columns of Q) and d_v
// (= d_k, unless v_cols is given: v_cols / num_kv_heads). `q_cols_name` names
// what q_cols is for messages ("d_model" or "Q"). Layout kBSHD only (the
// calls that project X); CheckMultiHeadQKV resolves a kBHSD call's heads.
Status ResolveHeads(const HeadConfig& config, size_t q_cols, const char* q_cols_name, size_t v_cols,
                    Heads* heads);

// rows / batch, checking batch > 0 and that it divides rows.
Status SequenceLength(const char* name, size_t rows, size_t batch, size_t* seq_len);

// The shapes of a multi-head call on projected heads, in heads.layout.
struct MultiHeadShape {
  Heads heads;
  size_t batch = 1, T_q = 0, T_k = 0;
  // batch * num_heads * T_q, checked: the rows of every head's queries one
  // after the other (lse, scores; Q and out in kBHSD).
  size_t query_head_rows = 0;
  // Query head h of item b in Q or dQ (d_k columns a head) or out, O, dO
  // (d_v): T_q rows.
  template <typename T>
  MatrixViewT<T> QueryHead(MatrixViewT<T> m, size_t b, size_t h, size_t d) const {
    return HeadBlock(m, heads.layout, b, h, heads.num_heads, T_q, d);
  }
  // K/V head g of item b in K, dK (d_k) or V, dV (d_v): T_k rows.
  template <typename T>
  MatrixViewT<T> KeyHead(MatrixViewT<T> m, size_t b, size_t g, size_t d) const {
    return HeadBlock(m, heads.layout, b, g, heads.num_kv_heads, T_k, d);
  }
  // The columns of out (and O, dO): num_heads * d_v, or d_v in kBHSD; their
  // rows are Q's in either layout. The notes say where the numbers come from.
  size_t OutCols() const {
    return heads.layout == HeadLayout::kBHSD ? heads.d_v : heads.num_heads * heads.d_v;
  }
  const char* OutRowsNote() const {
    return heads.layout == HeadLayout::kBHSD
               ? "batch * num_heads * T_q, the rows of Q in layout bhsd"
               : "batch * T_q, the rows of Q";
  }
  const char* OutColsNote() const {
    return heads.layout == HeadLayout::kBHSD ? "d_v, one head a row in layout bhsd"
                                             : "num_heads * d_v";
  }
};

// Q, K, V of MultiHeadAttentionQKV and its backward in config.layout:
//   kBSHD: Q [batch * T_q, h * d_k], K [batch * T_k, kvh * d_k],
//          V [batch * T_k, kvh * d_v];
//   kBHSD: Q [batch * h * T_q, d_k], K [batch * kvh * T_k, d_k],
//          V [batch * kvh * T_k, d_v].
// Checks the views, the layout, the heads (config, the columns of Q and V),
// T_q, T_k and the shapes, each error naming the layout. Values (finite) are
// the caller's to check, after its other shapes.
Status CheckMultiHeadQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                         const HeadConfig& config, MultiHeadShape* m);

// W_Q [d_model, h*d_k], W_K [d_model, kvh*d_k], W_V [d_model, kvh*d_v], and
// W_O [h*d_v, d_out] if given: shapes and values. Sets d_out (h*d_v without W_O).
Status CheckMultiHeadWeights(const MultiHeadWeights& weights, size_t d_model, const Heads& heads,
                             size_t* d_out);

// The projections of multi-head attention: Q, K and V of X [rows, d_model],
// and the merged heads when W_O is applied.
struct Projected {
  Matrix Q, K, V, merged;
  MatrixView heads_out;  // where the heads write: merged, or `out` without W_O
};

// Allocates *p, adds Q = X W_Q, K = X W_K, V = X W_V to job->projections and,
// with W_O, the output projection merged W_O -> out.
Status AddMultiHeadProjections(ConstMatrixView X, const MultiHeadWeights& weights,
                               const Heads& heads, MatrixView out, Projected* p, AttentionJob* job);

// Appends one task per (item, query head): queries from Q [batch*T_q, h*d_k],
// outputs into out [batch*T_q, h*d_v] (in heads.layout: HeadBlock); keys and
// values of (item, kv head) from kv(item, kv_head, &K, &V).
void AddHeadTasks(ConstMatrixView Q, MatrixView out, size_t batch, size_t T_q, size_t T_k,
                  const Heads& heads, const AttentionOptions& options,
                  const std::function<void(size_t, size_t, ConstMatrixView*, ConstMatrixView*)>& kv,
                  std::vector<HeadTask>* tasks);

}  // namespace internal
}  // namespace attnkit

#endif  // ATTNKIT_HEADS_H_
