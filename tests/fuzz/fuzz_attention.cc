// libFuzzer target: drives the public attnkit API with random shapes, values,
// masks and options (some deliberately wrong). Built with
// -fsanitize=fuzzer,address,undefined. It fails (traps) if an operation
// crashes, trips a sanitizer, reports OK on non-finite input, reports an error
// without a message, or returns OK with a NaN or Inf in its output.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "attnkit/attnkit.h"

namespace {

using attnkit::ConstMatrixView;
using attnkit::Matrix;
using attnkit::Status;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_attention: %s\n", what);
    __builtin_trap();
  }
}

struct Fuzz {
  FuzzedDataProvider& in;
  bool all_finite = true;  // every float handed out so far was finite

  size_t Size(size_t max) { return in.ConsumeIntegralInRange<size_t>(0, max); }
  // Mostly 1..max, sometimes 0 (an error case).
  size_t Dim(size_t max) {
    return in.ConsumeIntegralInRange<uint8_t>(0, 15) == 0 ? 0 : 1 + Size(max - 1);
  }

  float Value() {
    switch (in.ConsumeIntegralInRange<int>(0, 15)) {
      case 0: {  // any bit pattern: NaN, Inf, huge, tiny
        const uint32_t bits = in.ConsumeIntegral<uint32_t>();
        float f;
        std::memcpy(&f, &bits, sizeof(f));
        if (!std::isfinite(f)) all_finite = false;
        return f;
      }
      case 1:
        return in.ConsumeFloatingPointInRange<float>(-1e4f, 1e4f);
      default:
        return in.ConsumeIntegralInRange<int>(-64, 64) / 16.0f;
    }
  }

  Matrix Mat(size_t rows, size_t cols) {
    Matrix m(rows, cols);
    for (size_t i = 0; i < m.size(); ++i) m.data()[i] = Value();
    return m;
  }

  // Usually the right size, sometimes off by one (an error case).
  size_t Maybe(size_t n) {
    switch (in.ConsumeIntegralInRange<int>(0, 31)) {
      case 0:
        return n + 1;
      case 1:
        return n ? n - 1 : 0;
      default:
        return n;
    }
  }

  // Two threads, shared by every input: the split of work must never change a
  // status or leave a non-finite output.
  static attnkit::ThreadPool* Pool() {
    static attnkit::ThreadPool pool(2);
    return &pool;
  }

  // A mask's layout and rows: batch and head extents of 1 or the call's (or
  // off by one), rows per block T_q or 1, columns T_k or fewer (padded).
  attnkit::MaskLayout Layout(size_t batch, size_t heads, size_t T_q, size_t T_k, size_t* rows,
                             size_t* cols) {
    attnkit::MaskLayout l;
    const uint8_t bits = in.ConsumeIntegral<uint8_t>();
    if (bits & 1) l.batch = Maybe(batch);
    if (bits & 2) l.heads = Maybe(heads);
    const size_t queries = (bits & 4) ? 1 : T_q;
    *rows = Maybe(l.batch * l.heads * queries);
    *cols = (bits & 8) ? Size(T_k) : Maybe(T_k);
    return l;
  }

  attnkit::AttentionOptions Options(size_t T_q, size_t T_k, size_t batch, Matrix* additive,
                                    std::vector<uint8_t>* mask, size_t heads = 1) {
    attnkit::AttentionOptions o;
    const uint8_t flags = in.ConsumeIntegral<uint8_t>();
    const uint8_t more = in.ConsumeIntegral<uint8_t>();
    if (more & 1) {  // ONNX's upper-left frontier, one offset or one per item
      o.causal_alignment = attnkit::CausalAlignment::kUpperLeft;
      o.causal_offset = in.ConsumeIntegralInRange<int64_t>(-40, 40);
      if (more & 2) {
        for (size_t b = 0, n = Maybe(batch); b < n; ++b) {
          o.causal_offsets.push_back(in.ConsumeIntegral<int64_t>());
        }
      }
    }
    o.causal = flags & 1;
    if (flags & 2)
      o.scale = in.ConsumeBool() ? Value() : in.ConsumeFloatingPointInRange<float>(0.01f, 4.0f);
    if (flags & 4) o.softcap = in.ConsumeFloatingPointInRange<float>(-1.0f, 60.0f);
    if (flags & 8) o.key_length = Size(T_k + 1);
    if (flags & 16) {
      for (size_t b = 0, n = Maybe(batch); b < n; ++b) o.key_lengths.push_back(Size(T_k + 1));
    }
    if (flags & 32) {
      size_t r = Maybe(T_q), c = Maybe(T_k);
      if (more & 4) o.bool_mask_layout = Layout(batch, heads, T_q, T_k, &r, &c);
      mask->resize(r * c);
      for (auto& m : *mask) m = in.ConsumeBool();
      o.bool_mask = attnkit::MaskView(mask->data(), r, c);
    }
    if (flags & 128) o.pool = Pool();
    if (flags & 64) {
      size_t r = Maybe(T_q), c = Maybe(T_k);
      if (more & 8) o.additive_mask_layout = Layout(batch, heads, T_q, T_k, &r, &c);
      *additive = Matrix(r, c);
      for (size_t i = 0; i < additive->size(); ++i) {
        additive->data()[i] = in.ConsumeIntegralInRange<int>(0, 3) == 0
                                  ? -INFINITY
                                  : in.ConsumeFloatingPointInRange<float>(-8.0f, 8.0f);
      }
      o.additive_mask = *additive;
    }
    return o;
  }
};

bool Finite(ConstMatrixView m) {
  for (size_t r = 0; r < m.rows; ++r)
    for (size_t c = 0; c < m.cols; ++c)
      if (!std::isfinite(m(r, c))) return false;
  return true;
}

// Every status: an error has a message; OK needs finite inputs and outputs.
void Expect(const Status& s, const Fuzz& f, std::initializer_list<ConstMatrixView> outputs) {
  if (!s.ok()) {
    Check(!s.message().empty(), "error without a message");
    return;
  }
  Check(f.all_finite, "OK status for non-finite input");
  for (const ConstMatrixView& o : outputs) Check(Finite(o), "NaN or Inf in an OK output");
}

// The shapes of the QKV calls' tensors in a fuzzed layout (config->layout):
// kBSHD [batch * seq, heads * d] or kBHSD [batch * heads * seq, d].
struct HeadShapes {
  size_t batch;
  bool head_major;
  HeadShapes(Fuzz& f, attnkit::HeadConfig& c, size_t batch_)
      : batch(batch_), head_major(f.in.ConsumeBool()) {
    if (head_major) c.layout = attnkit::HeadLayout::kBHSD;
  }
  size_t Rows(size_t seq, size_t heads) const { return batch * seq * (head_major ? heads : 1); }
  size_t Cols(size_t heads, size_t d) const { return head_major ? d : heads * d; }
};

// Op 9: the multi-head training forward, then both QKV backward overloads.
void FuzzMultiHeadBackward(Fuzz& f, size_t T, size_t T_k, size_t batch) {
  attnkit::HeadConfig c;
  c.num_heads = f.Size(4);
  c.num_kv_heads = f.Size(4);
  c.d_k = f.Size(4);
  c.d_v = f.Size(4);
  const size_t h = c.num_heads ? c.num_heads : 1, kvh = c.num_kv_heads ? c.num_kv_heads : h;
  const size_t dk = c.d_k ? c.d_k : 2, dv = c.d_v ? c.d_v : dk;
  const HeadShapes s(f, c, batch);
  Matrix additive;
  std::vector<uint8_t> mask;
  Matrix Q = f.Mat(s.Rows(T, h), s.Cols(h, dk)),
         K = f.Mat(s.Rows(T_k, kvh), f.Maybe(s.Cols(kvh, dk))),
         V = f.Mat(s.Rows(f.Maybe(T_k), kvh), s.Cols(kvh, dv));
  auto o = f.Options(T, T_k, batch, &additive, &mask, h);
  Matrix out(s.Rows(T, h), s.Cols(h, dv)), lse(f.Maybe(batch * h * T), 1);
  const Status forward = attnkit::MultiHeadAttentionQKVForTraining(Q, K, V, batch, c, o, out, lse);
  Expect(forward, f, {out});
  Matrix dO = f.Mat(s.Rows(T, h), f.Maybe(s.Cols(h, dv)));
  Matrix dQ(s.Rows(T, h), s.Cols(h, dk)), dK(s.Rows(T_k, kvh), s.Cols(kvh, dk)),
      dV(s.Rows(T_k, kvh), f.Maybe(s.Cols(kvh, dv)));
  if (forward.ok()) {
    Expect(attnkit::MultiHeadAttentionQKVBackward(Q, K, V, out, dO, lse, batch, c, o, dQ, dK, dV),
           f, {dQ, dK, dV});
  }
  Expect(attnkit::MultiHeadAttentionQKVBackward(Q, K, V, dO, batch, c, o, dQ, dK, dV), f,
         {dQ, dK, dV});
}

// Op 10: the multi-head layer's backward (W_O or not), then self-attention's.
void FuzzLayerBackward(Fuzz& f, size_t T, size_t d_model, size_t d_k, size_t d_v, size_t batch) {
  FuzzedDataProvider& in = f.in;
  attnkit::HeadConfig c;
  c.num_heads = 1 + f.Size(3);
  c.num_kv_heads = f.Size(c.num_heads);
  const size_t h = c.num_heads, kvh = c.num_kv_heads ? c.num_kv_heads : h;
  const size_t dk = d_model / h ? d_model / h : 1;
  Matrix additive;
  std::vector<uint8_t> mask;
  auto o = f.Options(T, T, batch, &additive, &mask, h);
  Matrix X = f.Mat(batch * T, d_model), WQ = f.Mat(d_model, h * dk),
         WK = f.Mat(d_model, f.Maybe(kvh * dk)), WV = f.Mat(d_model, kvh * dk);
  const bool use_wo = in.ConsumeBool();
  Matrix WO = use_wo ? f.Mat(h * dk, d_model) : Matrix();
  attnkit::MultiHeadWeights w{WQ, WK, WV, use_wo ? ConstMatrixView(WO) : ConstMatrixView()};
  Matrix dOut = f.Mat(batch * T, f.Maybe(use_wo ? d_model : h * dk));
  Matrix dX(batch * T, d_model), dWQ(d_model, h * dk), dWK(d_model, kvh * dk),
      dWV(d_model, kvh * dk), dWO = use_wo ? Matrix(h * dk, f.Maybe(d_model)) : Matrix();
  attnkit::MultiHeadGradients g{dX, dWQ, dWK, dWV,
                                use_wo ? attnkit::MatrixView(dWO) : attnkit::MatrixView()};
  Expect(attnkit::MultiHeadAttentionBackward(X, batch, w, c, o, dOut, g), f,
         {dX, dWQ, dWK, dWV, dWO});
  f.all_finite = true;
  Matrix X1 = f.Mat(T, d_model), WQ1 = f.Mat(d_model, d_k), WK1 = f.Mat(f.Maybe(d_model), d_k),
         WV1 = f.Mat(d_model, d_v), dO = f.Mat(T, f.Maybe(d_v));
  Matrix additive1;
  auto o1 = f.Options(T, T, 1, &additive1, &mask);
  Matrix dX1(T, d_model), dWQ1(d_model, d_k), dWK1(d_model, d_k), dWV1(d_model, d_v);
  Expect(attnkit::SelfAttentionBackward(X1, WQ1, WK1, WV1, dO, o1, {dX1, dWQ1, dWK1, dWV1}), f,
         {dX1, dWQ1, dWK1, dWV1});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Fuzz f{in};
  const int op = in.ConsumeIntegralInRange<int>(0, 10);
  const size_t T = f.Dim(12), T_k = f.Dim(12), d_model = f.Dim(12), d_k = f.Dim(8), d_v = f.Dim(8),
               batch = 1 + f.Size(2);
  Matrix additive;
  std::vector<uint8_t> mask;
  switch (op) {
    case 0: {  // Attention / cross-attention on Q, K, V
      Matrix Q = f.Mat(T, d_k), K = f.Mat(T_k, f.Maybe(d_k)), V = f.Mat(f.Maybe(T_k), d_v);
      auto o = f.Options(T, T_k, 1, &additive, &mask);
      Matrix out(T, f.Maybe(d_v));
      Expect(attnkit::Attention(Q, K, V, o, out), f, {out});
      break;
    }
    case 1: {  // SelfAttention with projections
      Matrix X = f.Mat(T, d_model), WQ = f.Mat(f.Maybe(d_model), d_k),
             WK = f.Mat(d_model, f.Maybe(d_k)), WV = f.Mat(d_model, d_v);
      auto o = f.Options(T, T, 1, &additive, &mask);
      Matrix out(f.Maybe(T), d_v);
      Expect(attnkit::SelfAttention(X, WQ, WK, WV, o, out), f, {out});
      break;
    }
    case 2: {  // Trace
      Matrix X = f.Mat(T, d_model), WQ = f.Mat(d_model, d_k), WK = f.Mat(d_model, d_k),
             WV = f.Mat(f.Maybe(d_model), d_v);
      auto o = f.Options(T, T, 1, &additive, &mask);
      attnkit::AttentionTrace t;
      const Status s = attnkit::TraceAttention(X, WQ, WK, WV, o, &t);
      Expect(s, f, {t.output, t.weights, t.Q, t.K, t.V});
      break;
    }
    case 3: {  // ParameterFree
      Matrix X = f.Mat(T, d_model);
      auto o = f.Options(T, T, 1, &additive, &mask);
      Matrix out(T, f.Maybe(d_model));
      Expect(attnkit::ParameterFreeAttention(X, o, out), f, {out});
      break;
    }
    case 4:
    case 5: {  // MultiHeadAttention (4) or MultiHeadAttentionQKV (5)
      attnkit::HeadConfig c;
      c.num_heads = f.Size(4);
      c.num_kv_heads = f.Size(4);
      c.d_k = f.Size(4);
      c.d_v = f.Size(4);
      const size_t h = c.num_heads ? c.num_heads : 1, kvh = c.num_kv_heads ? c.num_kv_heads : h;
      const size_t dk = c.d_k ? c.d_k : (d_model / h ? d_model / h : 1), dv = c.d_v ? c.d_v : dk;
      if (op == 4) {
        auto o = f.Options(T, T, batch, &additive, &mask, h);
        Matrix X = f.Mat(batch * T, d_model), WQ = f.Mat(d_model, h * dk),
               WK = f.Mat(d_model, f.Maybe(kvh * dk)), WV = f.Mat(d_model, kvh * dv);
        const bool use_wo = in.ConsumeBool();  // W_O is optional
        Matrix WO = use_wo ? f.Mat(h * dv, d_model) : Matrix();
        attnkit::MultiHeadWeights w{WQ, WK, WV, use_wo ? ConstMatrixView(WO) : ConstMatrixView()};
        Matrix out(batch * T, w.W_O.empty() ? h * dv : d_model);
        Expect(attnkit::MultiHeadAttention(X, batch, w, c, o, out), f, {out});
      } else {
        const HeadShapes s(f, c, batch);
        Matrix Q = f.Mat(s.Rows(T, h), s.Cols(h, dk)), K = f.Mat(s.Rows(T_k, kvh), s.Cols(kvh, dk)),
               V = f.Mat(s.Rows(f.Maybe(T_k), kvh), s.Cols(kvh, dv));
        const size_t T_past = in.ConsumeBool() ? f.Size(5) : 0;
        auto o = f.Options(T, T_past + T_k, batch, &additive, &mask, h);
        Matrix out(s.Rows(T, h), s.Cols(h, dv));
        if (T_past == 0 && in.ConsumeBool()) {
          Expect(attnkit::MultiHeadAttentionQKV(Q, K, V, batch, c, o, out), f, {out});
          break;
        }
        // Past and present K/V and one stage of the scores (ONNX's extras).
        attnkit::MultiHeadExtras x;
        Matrix pk, pv, prk, prv, scores;
        if (T_past > 0) {
          pk = f.Mat(f.Maybe(batch * kvh * T_past), dk);
          pv = f.Mat(batch * kvh * T_past, f.Maybe(dv));
          x.past_K = pk;
          x.past_V = pv;
        }
        if (in.ConsumeBool()) {
          prk = Matrix(f.Maybe(batch * kvh * (T_past + T_k)), dk);
          prv = Matrix(batch * kvh * (T_past + T_k), dv);
          x.present_K = prk;
          x.present_V = prv;
        }
        x.scores_stage = static_cast<attnkit::ScoresStage>(in.ConsumeIntegralInRange<int>(0, 4));
        if (x.scores_stage != attnkit::ScoresStage::kNone) {
          scores = Matrix(f.Maybe(batch * h * T), T_past + T_k);
          x.scores = scores;
        }
        const Status st = attnkit::MultiHeadAttentionQKV(Q, K, V, batch, c, o, x, out);
        // Masked scores may hold -inf; every other output is finite.
        if (x.scores_stage == attnkit::ScoresStage::kMasked) {
          Expect(st, f, {out, prk, prv});
        } else {
          Expect(st, f, {out, prk, prv, scores});
        }
      }
      break;
    }
    case 6: {  // decode with a KV cache, a few steps
      const size_t h = 1 + f.Size(3), kvh = 1 + f.Size(h - 1), dk = 1 + f.Size(4),
                   dv = 1 + f.Size(4);
      attnkit::KVCache cache;
      const Status created = attnkit::KVCache::Create(batch, kvh, dk, dv, f.Dim(8), &cache);
      Expect(created, f, {});
      attnkit::HeadConfig c{h, kvh, dk, dv};
      Matrix WQ = f.Mat(d_model, h * dk), WK = f.Mat(d_model, kvh * dk),
             WV = f.Mat(d_model, kvh * dv), WO = f.Mat(h * dv, d_model);
      attnkit::MultiHeadWeights w{WQ, WK, WV, WO};
      const bool weights_finite = f.all_finite;
      for (int step = 0, steps = 1 + f.Size(4); step < steps; ++step) {
        const size_t t_new = 1 + f.Size(2);
        f.all_finite = weights_finite;  // this step's inputs: weights and X
        Matrix X = f.Mat(batch * t_new, d_model);
        attnkit::DecodeOptions o;
        if (in.ConsumeBool()) o.pool = Fuzz::Pool();
        Matrix out(batch * t_new, d_model);
        const size_t before = cache.size();
        const Status s = attnkit::MultiHeadDecode(X, w, c, o, &cache, out);
        Expect(s, f, {out});
        Check(s.ok() ? cache.size() == before + t_new : cache.size() == before,
              "cache size wrong after decode");
      }
      break;
    }
    case 7: {  // kernels
      Matrix x = f.Mat(T, T_k);
      if (x.size() && in.ConsumeBool()) x.data()[0] = -INFINITY;
      // Softmax accepts -inf (masked); only NaN and +inf are bad input.
      f.all_finite = true;
      for (size_t i = 0; i < x.size(); ++i) {
        if (std::isnan(x.data()[i]) || x.data()[i] == INFINITY) f.all_finite = false;
      }
      Expect(attnkit::SoftmaxRows(x), f, {});
      f.all_finite = true;
      Matrix A = f.Mat(T, d_k), B = f.Mat(f.Maybe(d_k), d_v), C(T, d_v);
      Expect(attnkit::MatMul(A, B, C), f, {C});
      f.all_finite = true;
      Matrix heads(T * d_k, d_v), merged(d_k ? T : 0, d_k * d_v);
      Expect(attnkit::MergeHeads(heads, d_k, merged), f, {merged});
      break;
    }
    case 8: {  // gradients: the training forward, then both backward overloads
      Matrix Q = f.Mat(T, d_k), K = f.Mat(T_k, f.Maybe(d_k)), V = f.Mat(f.Maybe(T_k), d_v);
      auto o = f.Options(T, T_k, 1, &additive, &mask);
      Matrix out(T, d_v), lse(f.Maybe(T), 1);  // lse is -inf for a row that sees no key
      const Status forward = attnkit::AttentionForTraining(Q, K, V, o, out, lse);
      Expect(forward, f, {out});
      Matrix dO = f.Mat(T, f.Maybe(d_v));  // after the forward: its values are the backward's input
      Matrix dQ(T, d_k), dK(T_k, d_k), dV(T_k, f.Maybe(d_v));
      if (forward.ok()) {
        Expect(attnkit::AttentionBackward(Q, K, V, out, dO, lse, o, dQ, dK, dV), f, {dQ, dK, dV});
      }
      Expect(attnkit::AttentionBackward(Q, K, V, dO, o, dQ, dK, dV), f, {dQ, dK, dV});
      break;
    }
    case 9:
      FuzzMultiHeadBackward(f, T, T_k, batch);
      break;
    case 10:
      FuzzLayerBackward(f, T, d_model, d_k, d_v, batch);
      break;
  }
  return 0;
}
