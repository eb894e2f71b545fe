// attnkit: Embind bindings. Only EMSCRIPTEN_BINDINGS and the conversion of
// plain values (pointers into wasm memory, sizes, options) to core views.
// The JS layer (src/js/) copies inputs into wasm memory, calls these, copies
// outputs out and turns a non-zero status into an AttnkitError from
// lastErrorParameter() and lastErrorDetail(). Nothing here throws: errors are
// status codes.
#include <emscripten/bind.h>
#include <malloc.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/core/attnkit.h"

namespace attnkit {
namespace bindings {
namespace {

// A matrix in wasm memory: byte address, rows, cols (contiguous). ptr 0 = none.
struct Mat {
  uintptr_t ptr = 0;
  uint32_t rows = 0;
  uint32_t cols = 0;
};

// AttentionOptions as the JS layer sends them (every field present).
struct Options {
  bool causal = false;
  bool has_scale = false;
  float scale = 0.0f;
  float softcap = 0.0f;
  int32_t key_length = -1;       // -1 = all keys
  uintptr_t key_lengths = 0;     // uint32 [key_lengths_count]
  uint32_t key_lengths_count = 0;
  Mat bool_mask;                 // uint8 [T_q, T_k]
  Mat additive_mask;             // float [T_q, T_k]
};

struct Heads {
  uint32_t num_heads = 0;
  uint32_t num_kv_heads = 0;
  uint32_t d_k = 0;
  uint32_t d_v = 0;
};

Status& LastStatus() {
  static Status status;
  return status;
}

// Records the status and returns its code (0 = OK) for JS.
int Report(const Status& s) {
  LastStatus() = s;
  return static_cast<int>(s.code());
}

ConstMatrixView In(const Mat& m) {
  return m.ptr ? ConstMatrixView(reinterpret_cast<const float*>(m.ptr), m.rows, m.cols)
               : ConstMatrixView();
}
MatrixView Out(const Mat& m) {
  return MatrixView(reinterpret_cast<float*>(m.ptr), m.rows, m.cols);
}
Mat ToMat(ConstMatrixView v) {
  return Mat{reinterpret_cast<uintptr_t>(v.data), static_cast<uint32_t>(v.rows),
             static_cast<uint32_t>(v.cols)};
}

// The pool every call uses: null (the caller's thread) until setThreads.
std::unique_ptr<ThreadPool>& Pool() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
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

AttentionOptions ToOptions(const Options& o) {
  AttentionOptions a;
  a.pool = Pool().get();
  a.causal = o.causal;
  if (o.has_scale) a.scale = o.scale;
  a.softcap = o.softcap;
  if (o.key_length >= 0) a.key_length = static_cast<size_t>(o.key_length);
  const uint32_t* lengths = reinterpret_cast<const uint32_t*>(o.key_lengths);
  a.key_lengths.assign(lengths, lengths + o.key_lengths_count);
  if (o.bool_mask.ptr) {
    a.bool_mask = MaskView(reinterpret_cast<const uint8_t*>(o.bool_mask.ptr), o.bool_mask.rows,
                           o.bool_mask.cols);
  }
  a.additive_mask = In(o.additive_mask);
  return a;
}

HeadConfig ToHeads(const Heads& h) { return HeadConfig{h.num_heads, h.num_kv_heads, h.d_k, h.d_v}; }

MultiHeadWeights ToWeights(const Mat& wq, const Mat& wk, const Mat& wv, const Mat& wo) {
  return MultiHeadWeights{In(wq), In(wk), In(wv), In(wo)};
}

// ---- single head

int AttentionJs(Mat q, Mat k, Mat v, Options o, Mat out) {
  return Report(Attention(In(q), In(k), In(v), ToOptions(o), Out(out)));
}
int SelfAttentionJs(Mat x, Mat wq, Mat wk, Mat wv, Options o, Mat out) {
  return Report(SelfAttention(In(x), In(wq), In(wk), In(wv), ToOptions(o), Out(out)));
}
int CrossAttentionJs(Mat xq, Mat xkv, Mat wq, Mat wk, Mat wv, Options o, Mat out) {
  return Report(CrossAttention(In(xq), In(xkv), In(wq), In(wk), In(wv), ToOptions(o), Out(out)));
}
int ParameterFreeJs(Mat x, Options o, Mat out) {
  return Report(ParameterFreeAttention(In(x), ToOptions(o), Out(out)));
}

// The last trace, kept until traceClear() so JS can copy each matrix out.
AttentionTrace& LastTrace() {
  static AttentionTrace trace;
  return trace;
}
int TraceJs(Mat x, Mat wq, Mat wk, Mat wv, Options o) {
  return Report(TraceAttention(In(x), In(wq), In(wk), In(wv), ToOptions(o), &LastTrace()));
}
int TraceQKVJs(Mat q, Mat k, Mat v, Options o) {
  return Report(TraceAttentionQKV(In(q), In(k), In(v), ToOptions(o), &LastTrace()));
}
// 0 X, 1 Q, 2 K, 3 V, 4 raw, 5 scaled, 6 masked, 7 weights, 8 output.
Mat TraceMatrix(int index) {
  AttentionTrace& t = LastTrace();
  const Matrix* all[] = {&t.X, &t.Q, &t.K, &t.V, &t.raw_scores, &t.scaled_scores,
                         &t.masked_scores, &t.weights, &t.output};
  if (index < 0 || index > 8) return Mat();
  return ToMat(all[index]->view());
}
float TraceScale() { return LastTrace().scale; }
void TraceClear() { LastTrace() = AttentionTrace(); }

// ---- kernels and reshapes

int MatMulJs(Mat a, Mat b, Mat c) { return Report(MatMul(In(a), In(b), Out(c))); }
int SoftmaxJs(Mat x) { return Report(SoftmaxRows(Out(x))); }
int SplitHeadsJs(Mat x, uint32_t h, Mat out) { return Report(SplitHeads(In(x), h, Out(out))); }
int MergeHeadsJs(Mat x, uint32_t h, Mat out) { return Report(MergeHeads(In(x), h, Out(out))); }

// ---- multi-head

int MultiHeadJs(Mat x, uint32_t batch, Mat wq, Mat wk, Mat wv, Mat wo, Heads h, Options o,
                Mat out) {
  return Report(MultiHeadAttention(In(x), batch, ToWeights(wq, wk, wv, wo), ToHeads(h),
                                   ToOptions(o), Out(out)));
}
int MultiHeadQKVJs(Mat q, Mat k, Mat v, uint32_t batch, Heads h, Options o, Mat out) {
  return Report(
      MultiHeadAttentionQKV(In(q), In(k), In(v), batch, ToHeads(h), ToOptions(o), Out(out)));
}

// ---- KV cache: JS holds the address of a heap-allocated KVCache.

KVCache* Cache(uintptr_t handle) { return reinterpret_cast<KVCache*>(handle); }

uintptr_t KvCreate(uint32_t batch, uint32_t kvh, uint32_t d_k, uint32_t d_v, uint32_t capacity) {
  auto cache = std::make_unique<KVCache>();
  if (Report(KVCache::Create(batch, kvh, d_k, d_v, capacity, cache.get())) != 0) return 0;
  return reinterpret_cast<uintptr_t>(cache.release());
}
void KvFree(uintptr_t handle) { delete Cache(handle); }
int KvAppend(uintptr_t handle, Mat k, Mat v) { return Report(Cache(handle)->Append(In(k), In(v))); }
uint32_t KvSize(uintptr_t handle) { return static_cast<uint32_t>(Cache(handle)->size()); }
void KvReset(uintptr_t handle) { Cache(handle)->Reset(); }
int KvTruncate(uintptr_t handle, uint32_t size) { return Report(Cache(handle)->Truncate(size)); }
// A new cache holding a copy of `handle`'s (0 on error, see lastError).
uintptr_t KvClone(uintptr_t handle) {
  auto copy = std::make_unique<KVCache>();
  if (Report(Cache(handle)->Clone(copy.get())) != 0) return 0;
  return reinterpret_cast<uintptr_t>(copy.release());
}
Mat KvKeys(uintptr_t handle, uint32_t item, uint32_t head) { return ToMat(Cache(handle)->Keys(item, head)); }
Mat KvValues(uintptr_t handle, uint32_t item, uint32_t head) {
  return ToMat(Cache(handle)->Values(item, head));
}
int KvAttend(uintptr_t handle, Mat q, uint32_t num_heads, Options o, Mat out) {
  return Report(AttendCached(In(q), *Cache(handle), num_heads, ToOptions(o), Out(out)));
}
int KvDecode(uintptr_t handle, Mat x, Mat wq, Mat wk, Mat wv, Mat wo, Heads h, Options o, Mat out) {
  return Report(MultiHeadDecode(In(x), ToWeights(wq, wk, wv, wo), ToHeads(h), ToOptions(o),
                                Cache(handle), Out(out)));
}

// ---- status and introspection

std::string LastError() { return LastStatus().message(); }
std::string LastErrorParameter() { return LastStatus().parameter(); }
std::string LastErrorDetail() { return LastStatus().detail(); }
int LastErrorCode() { return static_cast<int>(LastStatus().code()); }
std::string Target() { return targets::Name(targets::Current()); }
double HeapBytesInUse() { return static_cast<double>(mallinfo().uordblks); }

}  // namespace
}  // namespace bindings
}  // namespace attnkit

EMSCRIPTEN_BINDINGS(attnkit) {
  using namespace emscripten;
  using namespace attnkit::bindings;
  value_object<Mat>("Mat").field("ptr", &Mat::ptr).field("rows", &Mat::rows).field("cols", &Mat::cols);
  value_object<Heads>("Heads")
      .field("numHeads", &Heads::num_heads)
      .field("numKvHeads", &Heads::num_kv_heads)
      .field("dK", &Heads::d_k)
      .field("dV", &Heads::d_v);
  value_object<Options>("Options")
      .field("causal", &Options::causal)
      .field("hasScale", &Options::has_scale)
      .field("scale", &Options::scale)
      .field("softcap", &Options::softcap)
      .field("keyLength", &Options::key_length)
      .field("keyLengths", &Options::key_lengths)
      .field("keyLengthsCount", &Options::key_lengths_count)
      .field("boolMask", &Options::bool_mask)
      .field("additiveMask", &Options::additive_mask);

  function("attention", &AttentionJs);
  function("selfAttention", &SelfAttentionJs);
  function("crossAttention", &CrossAttentionJs);
  function("parameterFreeAttention", &ParameterFreeJs);
  function("trace", &TraceJs);
  function("traceQKV", &TraceQKVJs);
  function("traceMatrix", &TraceMatrix);
  function("traceScale", &TraceScale);
  function("traceClear", &TraceClear);
  function("matmul", &MatMulJs);
  function("softmax", &SoftmaxJs);
  function("splitHeads", &SplitHeadsJs);
  function("mergeHeads", &MergeHeadsJs);
  function("multiHeadAttention", &MultiHeadJs);
  function("multiHeadAttentionQKV", &MultiHeadQKVJs);
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
  function("lastError", &LastError);
  function("lastErrorCode", &LastErrorCode);
  function("lastErrorParameter", &LastErrorParameter);
  function("lastErrorDetail", &LastErrorDetail);
  function("target", &Target);
  function("heapBytesInUse", &HeapBytesInUse);
  function("setThreads", &SetThreads);
}
