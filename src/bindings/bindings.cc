// attnkit: Embind bindings. Only EMSCRIPTEN_BINDINGS and the conversion of
// plain values (pointers into wasm memory, sizes, options) to core views.
// The JS layer (src/js/) copies inputs into wasm memory, calls these, copies
// outputs out and turns a non-zero status into an AttnkitError from
// lastErrorParameter() and lastErrorDetail(). Nothing here throws: errors are
// status codes.
#include <emscripten/bind.h>
#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attnkit/attnkit.h"
#include "attnkit/backward_trace.h"
#include "options.h"
#include "src/core/attention_options.h"

namespace attnkit {
namespace bindings {

// The last call's Status, one for the attention and the model bindings: every
// call returns its code and JS reads the rest through lastError*().
Status& LastStatus() {
  static Status status;
  return status;
}

// Records the status and returns its code (0 = OK) for JS.
// Moved in from a copy, so that an OK status frees the last error's strings
// (copy assignment would keep their buffers) and the heap is as before it.
int Report(const Status& s) {
  LastStatus() = Status(s);
  return static_cast<int>(s.code());
}

namespace {

// The thread pool every call uses: null (the caller's thread) until setThreads.
std::unique_ptr<ThreadPool>& Pool() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}

// Every call reads its arguments from one block of 32-bit words that the JS
// layer (src/js/marshal.js) writes into wasm memory, in the order each
// function lists: a matrix is 3 words [address, rows, cols] (address 0 =
// none), a count 1 word, options the words of the core's option table
// (src/core/attention_options.h). One integer crosses the JS boundary per
// call, so a small call costs no Embind object conversions or allocations.
class Args : public internal::ArgWords {
 public:
  explicit Args(uintptr_t address) : ArgWords(reinterpret_cast<const uint32_t*>(address)) {}

  ConstMatrixView In() { return View<const float>(); }
  MatrixView Out() { return View<float>(); }

  // The options' words, read by the core's option table. Not inlined: one
  // copy serves every call that takes options.
  __attribute__((noinline)) AttentionOptions Options();

  // [num_heads, num_kv_heads, d_k, d_v] (0 = derive)
  HeadConfig Heads() {
    HeadConfig h;
    h.num_heads = Word();
    h.num_kv_heads = Word();
    h.d_k = Word();
    h.d_v = Word();
    return h;
  }

  // [num_heads, num_kv_heads, d_k, d_v, layout (0 bshd, 1 bhsd)]: the heads
  // of the calls on Q, K, V (the core checks the layout's value).
  HeadConfig QKVHeads() {
    HeadConfig h = Heads();
    h.layout = static_cast<HeadLayout>(Word());
    return h;
  }
};

AttentionOptions Args::Options() {
  AttentionOptions o;
  o.pool = Pool().get();
  internal::ReadAttentionOptions(*this, &o);
  return o;
}

// The option tables' word names and default words by call kind.
struct OptionTable {
  std::string layout;
  std::string defaults;
};
std::map<std::string, OptionTable>& OptionTables() {
  static std::map<std::string, OptionTable> tables;
  return tables;
}
// The words of kind's options, comma-separated ("" for an unknown kind).
std::string OptionLayout(const std::string& kind) {
  if (kind == "attention") {
    std::string layout;
    for (const internal::AttentionOptionEntry& option : internal::AttentionOptionEntries()) {
      if (!layout.empty()) layout += ',';
      layout += option.words;
    }
    return layout;
  }
  const auto it = OptionTables().find(kind);
  return it == OptionTables().end() ? "" : it->second.layout;
}
// The words of kind's default options (the C++ struct's), comma-separated.
std::string OptionDefaults(const std::string& kind) {
  const auto it = OptionTables().find(kind);
  return it == OptionTables().end() ? "" : it->second.defaults;
}

// A matrix handed back to JS (a trace matrix, a cache block).
struct Mat {
  uintptr_t ptr = 0;
  uint32_t rows = 0;
  uint32_t cols = 0;
};

Mat ToMat(ConstMatrixView v) {
  return Mat{reinterpret_cast<uintptr_t>(v.data), static_cast<uint32_t>(v.rows),
             static_cast<uint32_t>(v.cols)};
}

// Replaces the pool with one of n threads (n <= 1: none); returns the count.
// In the threads build the JS layer starts the module with n - 1 workers
// already loaded (PTHREAD_POOL_SIZE), so the threads start at once; elsewhere
// a pool has one thread.
uint32_t SetThreads(uint32_t n) {
  Pool().reset();
  if (n > 1) Pool() = std::make_unique<ThreadPool>(n);
  return Pool() ? static_cast<uint32_t>(Pool()->num_threads()) : 1;
}

// ---- single head

// Q, K, V, out, options
int AttentionJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView Q = a.In(), K = a.In(), V = a.In();
  const MatrixView out = a.Out();
  return Report(Attention(Q, K, V, a.Options(), out));
}
// X, W_Q, W_K, W_V, out, options
int SelfAttentionJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView X = a.In(), W_Q = a.In(), W_K = a.In(), W_V = a.In();
  const MatrixView out = a.Out();
  return Report(SelfAttention(X, W_Q, W_K, W_V, a.Options(), out));
}
// X_q, X_kv, W_Q, W_K, W_V, out, options
int CrossAttentionJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView X_q = a.In(), X_kv = a.In(), W_Q = a.In(), W_K = a.In(), W_V = a.In();
  const MatrixView out = a.Out();
  return Report(CrossAttention(X_q, X_kv, W_Q, W_K, W_V, a.Options(), out));
}
// X, out, options
int ParameterFreeJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView X = a.In();
  const MatrixView out = a.Out();
  return Report(ParameterFreeAttention(X, a.Options(), out));
}

// ---- gradients

// Q, K, V, out, lse, options
int AttentionForTrainingJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView Q = a.In(), K = a.In(), V = a.In();
  const MatrixView out = a.Out(), lse = a.Out();
  return Report(AttentionForTraining(Q, K, V, a.Options(), out, lse));
}
// Q, K, V, dO, saved (1: O and lse follow from the forward, 0: recompute
// them), O, lse, dQ, dK, dV, options
int AttentionBackwardJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView Q = a.In(), K = a.In(), V = a.In(), dO = a.In();
  const bool saved = a.Word() != 0;
  const ConstMatrixView O = a.In(), lse = a.In();
  const MatrixView dQ = a.Out(), dK = a.Out(), dV = a.Out();
  const AttentionOptions options = a.Options();
  if (!saved) return Report(AttentionBackward(Q, K, V, dO, options, dQ, dK, dV));
  return Report(AttentionBackward(Q, K, V, O, dO, lse, options, dQ, dK, dV));
}

// X, W_Q, W_K, W_V, dO, dX, dW_Q, dW_K, dW_V, options
int SelfAttentionBackwardJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView X = a.In(), W_Q = a.In(), W_K = a.In(), W_V = a.In(), dO = a.In();
  SelfAttentionGradients grads;
  grads.dX = a.Out();
  grads.dW_Q = a.Out();
  grads.dW_K = a.Out();
  grads.dW_V = a.Out();
  return Report(SelfAttentionBackward(X, W_Q, W_K, W_V, dO, a.Options(), grads));
}
// Q, K, V, batch, heads and layout, out, lse, options
int MultiHeadQKVForTrainingJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView Q = a.In(), K = a.In(), V = a.In();
  const uint32_t batch = a.Word();
  const HeadConfig heads = a.QKVHeads();
  const MatrixView out = a.Out(), lse = a.Out();
  return Report(MultiHeadAttentionQKVForTraining(Q, K, V, batch, heads, a.Options(), out, lse));
}
// Q, K, V, dO, saved (as AttentionBackwardJs), O, lse, batch, heads and
// layout, dQ, dK, dV, options
int MultiHeadQKVBackwardJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView Q = a.In(), K = a.In(), V = a.In(), dO = a.In();
  const bool saved = a.Word() != 0;
  const ConstMatrixView O = a.In(), lse = a.In();
  const uint32_t batch = a.Word();
  const HeadConfig heads = a.QKVHeads();
  const MatrixView dQ = a.Out(), dK = a.Out(), dV = a.Out();
  const AttentionOptions options = a.Options();
  if (!saved) {
    return Report(MultiHeadAttentionQKVBackward(Q, K, V, dO, batch, heads, options, dQ, dK, dV));
  }
  return Report(
      MultiHeadAttentionQKVBackward(Q, K, V, O, dO, lse, batch, heads, options, dQ, dK, dV));
}
// X, batch, W_Q, W_K, W_V, W_O, heads, dOut, dX, dW_Q, dW_K, dW_V, dW_O
// (none without W_O), options
int MultiHeadBackwardJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView X = a.In();
  const uint32_t batch = a.Word();
  const ConstMatrixView W_Q = a.In(), W_K = a.In(), W_V = a.In(), W_O = a.In();
  const HeadConfig heads = a.Heads();
  const ConstMatrixView dOut = a.In();
  MultiHeadGradients grads;
  grads.dX = a.Out();
  grads.dW_Q = a.Out();
  grads.dW_K = a.Out();
  grads.dW_V = a.Out();
  grads.dW_O = a.Out();
  return Report(MultiHeadAttentionBackward(X, batch, MultiHeadWeights{W_Q, W_K, W_V, W_O}, heads,
                                           a.Options(), dOut, grads));
}

// The last trace, kept until traceClear() so JS can copy each matrix out.
AttentionTrace& LastTrace() {
  static AttentionTrace trace;
  return trace;
}
// The last backward trace's own matrices, kept until backwardTraceClear();
// its forward trace goes to LastTrace(), read as a forward trace's.
AttentionBackwardTrace& LastBackwardTrace() {
  static AttentionBackwardTrace trace;
  return trace;
}
// X, W_Q, W_K, W_V, options
int TraceJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView X = a.In(), W_Q = a.In(), W_K = a.In(), W_V = a.In();
  return Report(TraceAttention(X, W_Q, W_K, W_V, a.Options(), &LastTrace()));
}
// Q, K, V, options
int TraceQKVJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView Q = a.In(), K = a.In(), V = a.In();
  return Report(TraceAttentionQKV(Q, K, V, a.Options(), &LastTrace()));
}
// The trace matrices in the order their readers read them, under the names
// the JS result uses: the one source of that protocol. The forward trace's
// (traceMatrix(index), traceMatrixNames: the last trace, LastTrace()), then
// the backward trace's own (backwardTraceMatrix(index),
// backwardTraceMatrixNames: LastBackwardTrace()).
struct TraceEntry {
  const char* name;
  Matrix AttentionTrace::*forward;           // null: a backward trace's matrix
  Matrix AttentionBackwardTrace::*backward;  // null: a forward trace's matrix
};
constexpr TraceEntry kTraceMatrices[] = {
    {"X", &AttentionTrace::X, nullptr},
    {"Q", &AttentionTrace::Q, nullptr},
    {"K", &AttentionTrace::K, nullptr},
    {"V", &AttentionTrace::V, nullptr},
    {"rawScores", &AttentionTrace::raw_scores, nullptr},
    {"scaledScores", &AttentionTrace::scaled_scores, nullptr},
    {"maskedScores", &AttentionTrace::masked_scores, nullptr},
    {"weights", &AttentionTrace::weights, nullptr},
    {"output", &AttentionTrace::output, nullptr},
    {"dO", nullptr, &AttentionBackwardTrace::dO},
    {"dV", nullptr, &AttentionBackwardTrace::dV},
    {"dWeights", nullptr, &AttentionBackwardTrace::d_weights},
    {"D", nullptr, &AttentionBackwardTrace::D},
    {"dMaskedScores", nullptr, &AttentionBackwardTrace::d_masked_scores},
    {"dScores", nullptr, &AttentionBackwardTrace::d_scores},
    {"dQ", nullptr, &AttentionBackwardTrace::dQ},
    {"dK", nullptr, &AttentionBackwardTrace::dK},
    {"dX", nullptr, &AttentionBackwardTrace::dX},
    {"dW_Q", nullptr, &AttentionBackwardTrace::dW_Q},
    {"dW_K", nullptr, &AttentionBackwardTrace::dW_K},
    {"dW_V", nullptr, &AttentionBackwardTrace::dW_V},
};
// The names of the forward (or the backward) trace's matrices,
// comma-separated, index order.
std::string TraceNames(bool forward) {
  std::string names;
  for (const TraceEntry& e : kTraceMatrices) {
    if ((e.forward != nullptr) != forward) continue;
    if (!names.empty()) names += ',';
    names += e.name;
  }
  return names;
}
// Matrix `index` of the last forward (or backward) trace (an empty Mat out of
// range).
Mat LastTraceMatrix(bool forward, int index) {
  for (const TraceEntry& e : kTraceMatrices) {
    if ((e.forward != nullptr) != forward || index-- != 0) continue;
    return ToMat((forward ? LastTrace().*e.forward : LastBackwardTrace().*e.backward).view());
  }
  return Mat();
}

std::string TraceMatrixNames() { return TraceNames(/*forward=*/true); }
// Matrix `index` of the last trace.
Mat TraceMatrix(int index) { return LastTraceMatrix(/*forward=*/true, index); }
float TraceScale() { return LastTrace().scale; }
void TraceClear() { LastTrace() = AttentionTrace(); }

int KeepBackwardTrace(const Status& s) {
  LastTrace() = std::move(LastBackwardTrace().forward);
  LastBackwardTrace().forward = AttentionTrace();
  return Report(s);
}
// X, W_Q, W_K, W_V, dO, options
int TraceBackwardJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView X = a.In(), W_Q = a.In(), W_K = a.In(), W_V = a.In(), dO = a.In();
  return KeepBackwardTrace(
      TraceAttentionBackward(X, W_Q, W_K, W_V, dO, a.Options(), &LastBackwardTrace()));
}
// Q, K, V, dO, options
int TraceBackwardQKVJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView Q = a.In(), K = a.In(), V = a.In(), dO = a.In();
  return KeepBackwardTrace(
      TraceAttentionBackwardQKV(Q, K, V, dO, a.Options(), &LastBackwardTrace()));
}
std::string BackwardTraceMatrixNames() { return TraceNames(/*forward=*/false); }
Mat BackwardTraceMatrix(int index) { return LastTraceMatrix(/*forward=*/false, index); }
void BackwardTraceClear() {
  LastBackwardTrace() = AttentionBackwardTrace();
  LastTrace() = AttentionTrace();
}

// ---- kernels and reshapes

// A, B, C
int MatMulJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView A = a.In(), B = a.In();
  return Report(MatMul(A, B, a.Out()));
}
// x (in place)
int SoftmaxJs(uintptr_t args) { return Report(SoftmaxRows(Args(args).Out())); }
// x, num_heads, out
int SplitHeadsJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView x = a.In();
  const uint32_t h = a.Word();
  return Report(SplitHeads(x, h, a.Out()));
}
// heads, num_heads, out
int MergeHeadsJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView x = a.In();
  const uint32_t h = a.Word();
  return Report(MergeHeads(x, h, a.Out()));
}

// ---- multi-head

// X, batch, W_Q, W_K, W_V, W_O, heads, out, options
int MultiHeadJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView X = a.In();
  const uint32_t batch = a.Word();
  const ConstMatrixView W_Q = a.In(), W_K = a.In(), W_V = a.In(), W_O = a.In();
  const HeadConfig heads = a.Heads();
  const MatrixView out = a.Out();
  return Report(
      MultiHeadAttention(X, batch, MultiHeadWeights{W_Q, W_K, W_V, W_O}, heads, a.Options(), out));
}
// Q, K, V, batch, heads and layout, out, past_K, past_V, present_K,
// present_V, scores stage (0 none, 1 raw, 2 scaled, 3 masked, 4 weights),
// scores, options
int MultiHeadQKVJs(uintptr_t args) {
  Args a(args);
  const ConstMatrixView Q = a.In(), K = a.In(), V = a.In();
  const uint32_t batch = a.Word();
  const HeadConfig heads = a.QKVHeads();
  const MatrixView out = a.Out();
  MultiHeadExtras extras;
  extras.past_K = a.In();
  extras.past_V = a.In();
  extras.present_K = a.Out();
  extras.present_V = a.Out();
  const ScoresStage stages[] = {ScoresStage::kNone, ScoresStage::kRaw, ScoresStage::kScaled,
                                ScoresStage::kMasked, ScoresStage::kWeights};
  extras.scores_stage = stages[std::min<uint32_t>(a.Word(), 4)];
  extras.scores = a.Out();
  return Report(MultiHeadAttentionQKV(Q, K, V, batch, heads, a.Options(), extras, out));
}

// ---- packed weights: JS holds the address of a heap-allocated
// PackedMultiHeadWeights (src/js/packed-weights.js).

PackedMultiHeadWeights* Packed(uintptr_t handle) {
  return reinterpret_cast<PackedMultiHeadWeights*>(handle);
}
// W_Q, W_K, W_V, W_O, heads -> a new pack (0 on error, see lastError).
uintptr_t PackWeights(uintptr_t args) {
  Args a(args);
  const ConstMatrixView W_Q = a.In(), W_K = a.In(), W_V = a.In(), W_O = a.In();
  const HeadConfig heads = a.Heads();
  auto packed = std::make_unique<PackedMultiHeadWeights>();
  if (Report(PackMultiHeadWeights(MultiHeadWeights{W_Q, W_K, W_V, W_O}, heads, packed.get())) !=
      0) {
    return 0;
  }
  return reinterpret_cast<uintptr_t>(packed.release());
}
void PackedFree(uintptr_t handle) { delete Packed(handle); }
// X, batch, heads, out, options
int MultiHeadPackedJs(uintptr_t handle, uintptr_t args) {
  Args a(args);
  const ConstMatrixView X = a.In();
  const uint32_t batch = a.Word();
  const HeadConfig heads = a.Heads();
  const MatrixView out = a.Out();
  return Report(MultiHeadAttention(X, batch, *Packed(handle), heads, a.Options(), out));
}

// ---- KV cache: JS holds the address of a heap-allocated KVCache.

KVCache* Cache(uintptr_t handle) { return reinterpret_cast<KVCache*>(handle); }

uintptr_t KvCreate(uint32_t batch, uint32_t kvh, uint32_t d_k, uint32_t d_v, uint32_t capacity) {
  auto cache = std::make_unique<KVCache>();
  if (Report(KVCache::Create(batch, kvh, d_k, d_v, capacity, cache.get())) != 0) return 0;
  return reinterpret_cast<uintptr_t>(cache.release());
}
void KvFree(uintptr_t handle) { delete Cache(handle); }
// K_new, V_new
int KvAppend(uintptr_t handle, uintptr_t args) {
  Args a(args);
  const ConstMatrixView K = a.In(), V = a.In();
  return Report(Cache(handle)->Append(K, V));
}
uint32_t KvSize(uintptr_t handle) { return static_cast<uint32_t>(Cache(handle)->size()); }
void KvReset(uintptr_t handle) { Cache(handle)->Reset(); }
int KvTruncate(uintptr_t handle, uint32_t size) { return Report(Cache(handle)->Truncate(size)); }
// A new cache holding a copy of `handle`'s (0 on error, see lastError).
uintptr_t KvClone(uintptr_t handle) {
  auto copy = std::make_unique<KVCache>();
  if (Report(Cache(handle)->Clone(copy.get())) != 0) return 0;
  return reinterpret_cast<uintptr_t>(copy.release());
}
Mat KvKeys(uintptr_t handle, uint32_t item, uint32_t head) {
  return ToMat(Cache(handle)->Keys(item, head));
}
Mat KvValues(uintptr_t handle, uint32_t item, uint32_t head) {
  return ToMat(Cache(handle)->Values(item, head));
}
// Q_new, num_heads, out, options
int KvAttend(uintptr_t handle, uintptr_t args) {
  Args a(args);
  const ConstMatrixView Q = a.In();
  const uint32_t num_heads = a.Word();
  const MatrixView out = a.Out();
  return Report(AttendCached(Q, *Cache(handle), num_heads, a.Options(), out));
}
// X_new, W_Q, W_K, W_V, W_O, heads, out, options
int KvDecode(uintptr_t handle, uintptr_t args) {
  Args a(args);
  const ConstMatrixView X = a.In(), W_Q = a.In(), W_K = a.In(), W_V = a.In(), W_O = a.In();
  const HeadConfig heads = a.Heads();
  const MatrixView out = a.Out();
  return Report(MultiHeadDecode(X, MultiHeadWeights{W_Q, W_K, W_V, W_O}, heads, a.Options(),
                                Cache(handle), out));
}

// ---- status and introspection

std::string LastErrorParameter() { return LastStatus().parameter(); }
std::string LastErrorDetail() { return LastStatus().detail(); }
int LastErrorCode() { return static_cast<int>(LastStatus().code()); }
std::string Target() { return targets::Name(targets::Current()); }
double HeapBytesInUse() { return static_cast<double>(mallinfo().uordblks); }

}  // namespace

// The pool for the model's bindings (model_bindings.cc).
ThreadPool* CurrentPool() { return Pool().get(); }

void RegisterOptions(const std::string& kind, std::string layout, std::string defaults) {
  OptionTables()[kind] = OptionTable{std::move(layout), std::move(defaults)};
}

}  // namespace bindings
}  // namespace attnkit

EMSCRIPTEN_BINDINGS(attnkit) {
  using namespace emscripten;
  using namespace attnkit::bindings;
  value_object<Mat>("Mat")
      .field("ptr", &Mat::ptr)
      .field("rows", &Mat::rows)
      .field("cols", &Mat::cols);
  function("attention", &AttentionJs);
  function("selfAttention", &SelfAttentionJs);
  function("crossAttention", &CrossAttentionJs);
  function("parameterFreeAttention", &ParameterFreeJs);
  function("attentionForTraining", &AttentionForTrainingJs);
  function("attentionBackward", &AttentionBackwardJs);
  function("selfAttentionBackward", &SelfAttentionBackwardJs);
  function("multiHeadAttentionQKVForTraining", &MultiHeadQKVForTrainingJs);
  function("multiHeadAttentionQKVBackward", &MultiHeadQKVBackwardJs);
  function("multiHeadAttentionBackward", &MultiHeadBackwardJs);
  function("trace", &TraceJs);
  function("traceQKV", &TraceQKVJs);
  function("traceMatrix", &TraceMatrix);
  function("traceMatrixNames", &TraceMatrixNames);
  function("traceScale", &TraceScale);
  function("traceClear", &TraceClear);
  function("traceBackward", &TraceBackwardJs);
  function("traceBackwardQKV", &TraceBackwardQKVJs);
  function("backwardTraceMatrix", &BackwardTraceMatrix);
  function("backwardTraceMatrixNames", &BackwardTraceMatrixNames);
  function("backwardTraceClear", &BackwardTraceClear);
  function("matmul", &MatMulJs);
  function("softmax", &SoftmaxJs);
  function("splitHeads", &SplitHeadsJs);
  function("mergeHeads", &MergeHeadsJs);
  function("multiHeadAttention", &MultiHeadJs);
  function("multiHeadAttentionQKV", &MultiHeadQKVJs);
  function("packWeights", &PackWeights);
  function("packedFree", &PackedFree);
  function("multiHeadPacked", &MultiHeadPackedJs);
  function("kvCreate", &KvCreate);
  function("kvFree", &KvFree);
  function("kvAppend", &KvAppend);
  function("kvSize", &KvSize);
  function("kvReset", &KvReset);
  function("kvTruncate", &KvTruncate);
  function("kvClone", &KvClone);
  function("kvKeys", &KvKeys);
  function("kvValues", &KvValues);
  function("kvAttend", &KvAttend);
  function("kvDecode", &KvDecode);
  function("lastErrorCode", &LastErrorCode);
  function("lastErrorParameter", &LastErrorParameter);
  function("lastErrorDetail", &LastErrorDetail);
  function("target", &Target);
  function("heapBytesInUse", &HeapBytesInUse);
  function("setThreads", &SetThreads);
  function("optionLayout", &OptionLayout);
  function("optionDefaults", &OptionDefaults);
}
