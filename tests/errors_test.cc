// Bad input: every public operation returns its error with the right
// ErrorCode and a message naming the parameter (and quoting the expected and
// given numbers where there are any), never crashes, never touches memory it
// was not given, and works again with valid input afterwards.
//
// Where the header leaves the choice of code open (e.g. a per-item key length
// that does not fit T_k could be "invalid_argument" or "shape_mismatch") the
// expectation lists both with .Or(); every other case requires one code.
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "tests/reference.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::AttentionOptions;
using attnkit::AttentionTrace;
using attnkit::HeadConfig;
using attnkit::KVCache;
using attnkit::MultiHeadWeights;

constexpr size_t kHuge = std::numeric_limits<size_t>::max() / 2;

constexpr ErrorCode kInvalid = ErrorCode::kInvalidArgument;
constexpr ErrorCode kShape = ErrorCode::kShapeMismatch;
constexpr ErrorCode kNonFinite = ErrorCode::kNonFinite;
constexpr ErrorCode kOverflow = ErrorCode::kOverflow;

// Views that are broken in one way each, over a small buffer that is never
// legitimately read beyond its few elements.
struct BadViews {
  std::vector<float> buf = std::vector<float>(512, 1.0f);
  ConstMatrixView ZeroRows(size_t cols) const { return ConstMatrixView(buf.data(), 0, cols); }
  ConstMatrixView ZeroCols(size_t rows) const { return ConstMatrixView(buf.data(), rows, 0); }
  static ConstMatrixView Null(size_t rows, size_t cols) {
    return ConstMatrixView(static_cast<const float*>(nullptr), rows, cols);
  }
  ConstMatrixView ShortStride(size_t rows, size_t cols) const {
    return ConstMatrixView(buf.data(), rows, cols, cols - 1);
  }
  // rows * stride overflows size_t.
  ConstMatrixView HugeRows(size_t cols) const { return ConstMatrixView(buf.data(), kHuge, cols); }
  // cols (and stride) so large that rows * stride overflows.
  ConstMatrixView HugeCols(size_t rows) const {
    return ConstMatrixView(buf.data(), rows, kHuge + 1, kHuge + 1);
  }
  MatrixView Mut(ConstMatrixView v) const {
    return MatrixView(const_cast<float*>(v.data), v.rows, v.cols, v.stride);
  }
};

// Runs `call(view)` with each kind of broken view in the position of the
// parameter `name` ([rows, cols] when valid) and checks the error.
template <class Call>
void CheckBrokenViews(const char* name, size_t rows, size_t cols, Call call) {
  BadViews bad;
  INFO("parameter " << name << " [" << rows << ", " << cols << "]");
  {
    INFO("0 rows");
    CHECK_ERROR(call(bad.ZeroRows(cols)), Err(kInvalid).Name(name));
  }
  {
    INFO("0 cols");
    CHECK_ERROR(call(bad.ZeroCols(rows)), Err(kInvalid).Name(name));
  }
  {
    INFO("null data");
    CHECK_ERROR(call(BadViews::Null(rows, cols)), Err(kInvalid).Name(name));
  }
  if (cols >= 2) {
    INFO("stride < cols");
    CHECK_ERROR(call(bad.ShortStride(rows, cols)),
                Err(kInvalid).Name(name).Num(cols).Num(cols - 1));
  }
  {
    INFO("rows = SIZE_MAX/2: rows * stride overflows");
    CHECK_ERROR(call(bad.HugeRows(cols)), Err(kOverflow).Name(name));
  }
  {
    INFO("cols = stride = SIZE_MAX/2 + 1: rows * stride overflows");
    CHECK_ERROR(call(bad.HugeCols(rows)), Err(kOverflow).Name(name));
  }
}

TEST_CASE("Status: codes have stable names, ToString combines code and message",
          "[errors][status]") {
  using attnkit::ErrorCodeName;
  CHECK(std::string(ErrorCodeName(ErrorCode::kShapeMismatch)) == "shape_mismatch");
  CHECK(std::string(ErrorCodeName(ErrorCode::kOk)) == "ok");
  std::set<std::string> names;
  for (ErrorCode c : {ErrorCode::kOk, ErrorCode::kInvalidArgument, ErrorCode::kShapeMismatch,
                      ErrorCode::kNonFinite, ErrorCode::kOverflow, ErrorCode::kCapacity}) {
    const std::string n = ErrorCodeName(c);
    INFO("code name " << n);
    CHECK(!n.empty());
    for (char ch : n) CHECK(((ch >= 'a' && ch <= 'z') || ch == '_'));
    names.insert(n);
  }
  CHECK(names.size() == 6);
  CHECK(Status().ok());
  CHECK(Status::Ok().ToString() == "ok");
  const Status s(ErrorCode::kShapeMismatch, "W_Q", "expected 4 rows (d_model of X), got 3");
  CHECK(!s.ok());
  CHECK(s.parameter() == "W_Q");
  CHECK(s.detail() == "expected 4 rows (d_model of X), got 3");
  CHECK(s.message() == "W_Q: expected 4 rows (d_model of X), got 3");
  CHECK(s.code() == ErrorCode::kShapeMismatch);
  CHECK(s.ToString() == "shape_mismatch: W_Q: expected 4 rows (d_model of X), got 3");
}

TEST_CASE("MatMul and MatMulTransposed reject bad views and mismatched shapes", "[errors][ops]") {
  const TestMatrix A = Random(4, 3, 1), B = Random(3, 5, 2), Bt = Random(5, 3, 3);
  TestMatrix C(4, 5);
  CheckBrokenViews("A", 4, 3, [&](ConstMatrixView v) { return attnkit::MatMul(v, B, C); });
  CheckBrokenViews("B", 3, 5, [&](ConstMatrixView v) { return attnkit::MatMul(A, v, C); });
  CheckBrokenViews("C", 4, 5,
                   [&](ConstMatrixView v) { return attnkit::MatMul(A, B, BadViews().Mut(v)); });
  CheckBrokenViews("B", 5, 3,
                   [&](ConstMatrixView v) { return attnkit::MatMulTransposed(A, v, C); });
  {
    const TestMatrix B4 = Random(4, 5, 4);
    CHECK_ERROR(attnkit::MatMul(A, B4, C), Err(kShape).Name("B").Num(3).Num(4));
    TestMatrix C6(4, 6), C3(3, 5);
    CHECK_ERROR(attnkit::MatMul(A, B, C6), Err(kShape).Name("C").Num(5).Num(6));
    CHECK_ERROR(attnkit::MatMul(A, B, C3), Err(kShape).Name("C").Num(4).Num(3));
    const TestMatrix Bt2 = Random(5, 2, 5);
    CHECK_ERROR(attnkit::MatMulTransposed(A, Bt2, C), Err(kShape).Name("B").Num(3).Num(2));
    CHECK_ERROR(attnkit::MatMulTransposed(A, Bt, C6), Err(kShape).Name("C").Num(5).Num(6));
  }
  {
    TestMatrix An = CopyOf(A);
    An(2, 1) = kNaN;
    const Status s = attnkit::MatMul(An, B, C);
    INFO(s.ToString());
    // NaN input to a plain matrix product: rejected as non-finite, or (if the
    // kernel does not check) at least not reported as something else.
    if (!s.ok()) CHECK(s.code() == kNonFinite);
  }
  // Still works.
  REQUIRE_OK(attnkit::MatMul(A, B, C));
  CHECK_CLOSE(C, ref::MatMul(A.ToRef(), B.ToRef()), DotTol(3, 1, 1));
  REQUIRE_OK(attnkit::MatMulTransposed(A, Bt, C));
  CHECK_CLOSE(C, ref::MatMulT(A.ToRef(), Bt.ToRef()), DotTol(3, 1, 1));
}

TEST_CASE("ScaleScores and SoftmaxRows reject non-finite values and bad options", "[errors][ops]") {
  TestMatrix x = Random(3, 5, 1);
  CheckBrokenViews("x", 3, 5, [&](ConstMatrixView v) {
    return attnkit::ScaleScores(BadViews().Mut(v), 1.0f, 0.0f);
  });
  CheckBrokenViews("x", 3, 5,
                   [&](ConstMatrixView v) { return attnkit::SoftmaxRows(BadViews().Mut(v)); });
  for (float bad : {kNaN, kInf, -kInf}) {
    INFO("bad value " << bad);
    TestMatrix y = CopyOf(x);
    y(1, 2) = bad;
    CHECK_ERROR(attnkit::ScaleScores(y, 1.0f, 0.0f), Err(kNonFinite).Name("x"));
  }
  for (float bad : {kNaN, kInf, -kInf}) {
    INFO("scale " << bad);
    TestMatrix y = CopyOf(x);
    CHECK_ERROR(attnkit::ScaleScores(y, bad, 0.0f), Err(kNonFinite).Or(kInvalid).Name("scale"));
    CHECK(y.SameValues(x));  // not modified on error
  }
  for (float bad : {-1.0f, kNaN, kInf}) {
    INFO("softcap " << bad);
    TestMatrix y = CopyOf(x);
    CHECK_ERROR(attnkit::ScaleScores(y, 1.0f, bad), Err(kInvalid).Or(kNonFinite).Name("softcap"));
  }
  for (float bad : {kNaN, kInf}) {
    INFO("softmax input " << bad);
    TestMatrix y = CopyOf(x);
    y(2, 4) = bad;
    CHECK_ERROR(attnkit::SoftmaxRows(y), Err(kNonFinite).Name("x"));
  }
  // Still works.
  TestMatrix y = CopyOf(x);
  REQUIRE_OK(attnkit::ScaleScores(y, 0.5f, 0.0f));
  CHECK_CLOSE(y, ref::Scale(x.ToRef(), 0.5, 0.0), (Tol{1e-7, 1e-6}));
  y = CopyOf(x);
  REQUIRE_OK(attnkit::SoftmaxRows(y));
  CHECK_CLOSE(y, ref::SoftmaxRows(x.ToRef()), (Tol{2e-6, 1e-5}));
}

// A valid single-head problem with distinct sizes: T_q = 4, T_k = 6, d_k = 3,
// d_v = 5.
struct Single {
  TestMatrix Q = Random(4, 3, 1), K = Random(6, 3, 2), V = Random(6, 5, 3);
  TestMatrix out = TestMatrix(4, 5);
  void CheckStillWorks(const AttentionOptions& o = AttentionOptions()) {
    REQUIRE_OK(attnkit::Attention(Q, K, V, o, out));
    const ref::Trace want = ref::Attention(Q.ToRef(), K.ToRef(), V.ToRef(), ref::FromAttnkit(o));
    CHECK_CLOSE(out, want.output, AttentionTol(3, 6, 1, 1, 1, want.scale, 1.0).output);
  }
};

TEST_CASE("Attention rejects bad views of Q, K, V and out", "[errors][attention]") {
  Single p;
  AttentionOptions o;
  CheckBrokenViews("Q", 4, 3,
                   [&](ConstMatrixView v) { return attnkit::Attention(v, p.K, p.V, o, p.out); });
  CheckBrokenViews("K", 6, 3,
                   [&](ConstMatrixView v) { return attnkit::Attention(p.Q, v, p.V, o, p.out); });
  CheckBrokenViews("V", 6, 5,
                   [&](ConstMatrixView v) { return attnkit::Attention(p.Q, p.K, v, o, p.out); });
  CheckBrokenViews("out", 4, 5, [&](ConstMatrixView v) {
    return attnkit::Attention(p.Q, p.K, p.V, o, BadViews().Mut(v));
  });
  p.CheckStillWorks();
}

TEST_CASE("Attention rejects mismatched shapes of K, V and out", "[errors][attention]") {
  Single p;
  AttentionOptions o;
  const TestMatrix K4 = Random(6, 4, 9);  // d_k 4 instead of 3
  CHECK_ERROR(attnkit::Attention(p.Q, K4, p.V, o, p.out), Err(kShape).Name("K").Num(3).Num(4));
  const TestMatrix V7 = Random(7, 5, 9);  // T_k 7 instead of 6
  CHECK_ERROR(attnkit::Attention(p.Q, p.K, V7, o, p.out), Err(kShape).Name("V").Num(6).Num(7));
  TestMatrix out_rows(5, 5), out_cols(4, 7);
  CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, out_rows),
              Err(kShape).Name("out").Num(4).Num(5));
  CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, out_cols),
              Err(kShape).Name("out").Num(5).Num(7));
  p.CheckStillWorks();
}

TEST_CASE("Attention rejects NaN and Inf in Q, K and V", "[errors][attention][nonfinite]") {
  Single p;
  AttentionOptions o;
  for (float bad : {kNaN, kInf, -kInf}) {
    INFO("value " << bad);
    TestMatrix Q = CopyOf(p.Q), K = CopyOf(p.K), V = CopyOf(p.V);
    Q(3, 2) = bad;
    CHECK_ERROR(attnkit::Attention(Q, p.K, p.V, o, p.out), Err(kNonFinite).Name("Q"));
    K(0, 1) = bad;
    CHECK_ERROR(attnkit::Attention(p.Q, K, p.V, o, p.out), Err(kNonFinite).Name("K"));
    V(5, 4) = bad;
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, V, o, p.out), Err(kNonFinite).Name("V"));
    AttentionTrace tr;
    CHECK_ERROR(attnkit::TraceAttentionQKV(p.Q, p.K, V, o, &tr), Err(kNonFinite).Name("V"));
  }
  p.CheckStillWorks();
}

TEST_CASE("Attention rejects bad options: scale, softcap, key_length", "[errors][attention]") {
  Single p;
  for (float bad : {kNaN, kInf, -kInf}) {
    INFO("scale " << bad);
    AttentionOptions o;
    o.scale = bad;
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out),
                Err(kNonFinite).Or(kInvalid).Name("scale"));
  }
  for (float bad : {0.0f, -0.5f, -0.0f}) {
    INFO("scale " << bad);
    AttentionOptions o;
    o.scale = bad;
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out), Err(kInvalid).Name("scale"));
  }
  for (float bad : {-1.0f, kNaN, kInf}) {
    INFO("softcap " << bad);
    AttentionOptions o;
    o.softcap = bad;
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out),
                Err(kInvalid).Or(kNonFinite).Name("softcap"));
  }
  {
    AttentionOptions o;
    o.key_length = 7;
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out),
                Err(kInvalid).Or(kShape).Name("key_length").Num(7).Num(6));
    o.key_length = kHuge;
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out),
                Err(kInvalid).Or(kShape).Name("key_length").Num(6));
    AttentionOptions ok;
    ok.key_length = 6;  // == T_k is allowed
    p.CheckStillWorks(ok);
  }
  p.CheckStillWorks();
}

TEST_CASE("Attention rejects masks of the wrong shape and bad additive values",
          "[errors][attention][mask]") {
  Single p;
  {
    const TestMask m(4, 7);  // T_k 7 instead of 6 (fewer columns pad, as in ONNX)
    AttentionOptions o;
    o.bool_mask = m.view();
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out),
                Err(kShape).Name("bool_mask").Num(6).Num(7));
    const TestMask m2(3, 6);  // T_q 3 instead of 4
    o.bool_mask = m2.view();
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out),
                Err(kShape).Name("bool_mask").Num(4).Num(3));
    o.bool_mask = MaskView(static_cast<const uint8_t*>(nullptr), 4, 6);
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out), Err(kInvalid).Name("bool_mask"));
    std::vector<uint8_t> buf(64, 1);
    o.bool_mask = MaskView(buf.data(), 4, 6, 5);
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out),
                Err(kInvalid).Name("bool_mask").Num(6).Num(5));
    o.bool_mask = MaskView(buf.data(), kHuge, 6);
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out),
                Err(kOverflow).Or(kShape).Name("bool_mask"));
  }
  {
    const TestMatrix a(4, 7);
    AttentionOptions o;
    o.additive_mask = a.cview();
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out),
                Err(kShape).Name("additive_mask").Num(6).Num(7));
    const TestMatrix a2(2, 6);
    o.additive_mask = a2.cview();
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out),
                Err(kShape).Name("additive_mask").Num(4).Num(2));
    o.additive_mask = BadViews::Null(4, 6);
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out), Err(kInvalid).Name("additive_mask"));
  }
  for (float bad : {kNaN, kInf}) {
    INFO("additive value " << bad);
    TestMatrix a(4, 6);
    a(1, 3) = bad;
    AttentionOptions o;
    o.additive_mask = a.cview();
    CHECK_ERROR(attnkit::Attention(p.Q, p.K, p.V, o, p.out), Err(kNonFinite).Name("additive_mask"));
  }
  {
    // -inf is allowed in the additive mask.
    TestMatrix a = Random(4, 6, 5);
    a(1, 3) = -kInf;
    AttentionOptions o;
    o.additive_mask = a.cview();
    p.CheckStillWorks(o);
  }
  p.CheckStillWorks();
}

TEST_CASE("TraceAttention and TraceAttentionQKV reject a null trace and bad input",
          "[errors][attention][trace]") {
  Single p;
  AttentionOptions o;
  CHECK_ERROR(attnkit::TraceAttentionQKV(p.Q, p.K, p.V, o, nullptr), Err(kInvalid).Name("trace"));
  const TestMatrix X = Random(4, 8, 4), WQ = Random(8, 3, 5), WK = Random(8, 3, 6),
                   WV = Random(8, 5, 7);
  CHECK_ERROR(attnkit::TraceAttention(X, WQ, WK, WV, o, nullptr), Err(kInvalid).Name("trace"));
  const TestMatrix K4 = Random(6, 4, 9);
  AttentionTrace tr;
  CHECK_ERROR(attnkit::TraceAttentionQKV(p.Q, K4, p.V, o, &tr),
              Err(kShape).Name("K").Num(3).Num(4));
  TestMatrix Xn = CopyOf(X);
  Xn(0, 0) = kNaN;
  CHECK_ERROR(attnkit::TraceAttention(Xn, WQ, WK, WV, o, &tr), Err(kNonFinite).Name("X"));
  // Still works.
  REQUIRE_OK(attnkit::TraceAttention(X, WQ, WK, WV, o, &tr));
  CHECK(tr.output.rows() == 4);
  CHECK(tr.output.cols() == 5);
  REQUIRE_OK(attnkit::TraceAttentionQKV(p.Q, p.K, p.V, o, &tr));
  CHECK(tr.X.size() == 0);
  CHECK(tr.weights.rows() == 4);
  CHECK(tr.weights.cols() == 6);
}

// A valid self-attention problem: T = 4, d_model = 8, d_k = 3, d_v = 5.
struct SelfProblem {
  TestMatrix X = Random(4, 8, 1);
  TestMatrix WQ = Random(8, 3, 2, Layout::kContiguous, -0.3f, 0.3f);
  TestMatrix WK = Random(8, 3, 3, Layout::kContiguous, -0.3f, 0.3f);
  TestMatrix WV = Random(8, 5, 4, Layout::kContiguous, -0.3f, 0.3f);
  TestMatrix out = TestMatrix(4, 5);
  void CheckStillWorks() {
    REQUIRE_OK(attnkit::SelfAttention(X, WQ, WK, WV, AttentionOptions(), out));
    const ref::Mat want =
        ref::Attention(ref::MatMul(X.ToRef(), WQ.ToRef()), ref::MatMul(X.ToRef(), WK.ToRef()),
                       ref::MatMul(X.ToRef(), WV.ToRef()), ref::Options())
            .output;
    CHECK_CLOSE(out, want, ChainTol(want));
  }
};

TEST_CASE("SelfAttention rejects bad X and weights", "[errors][attention][self]") {
  SelfProblem p;
  AttentionOptions o;
  CheckBrokenViews("X", 4, 8, [&](ConstMatrixView v) {
    return attnkit::SelfAttention(v, p.WQ, p.WK, p.WV, o, p.out);
  });
  CheckBrokenViews("W_Q", 8, 3, [&](ConstMatrixView v) {
    return attnkit::SelfAttention(p.X, v, p.WK, p.WV, o, p.out);
  });
  CheckBrokenViews("W_V", 8, 5, [&](ConstMatrixView v) {
    return attnkit::SelfAttention(p.X, p.WQ, p.WK, v, o, p.out);
  });
  const TestMatrix WQ7 = Random(7, 3, 9);
  CHECK_ERROR(attnkit::SelfAttention(p.X, WQ7, p.WK, p.WV, o, p.out),
              Err(kShape).Name("W_Q").Num(8).Num(7));
  const TestMatrix WK2 = Random(8, 2, 9);
  CHECK_ERROR(attnkit::SelfAttention(p.X, p.WQ, WK2, p.WV, o, p.out),
              Err(kShape).Name("W_K").Num(3).Num(2));
  const TestMatrix WK9 = Random(9, 3, 9);
  CHECK_ERROR(attnkit::SelfAttention(p.X, p.WQ, WK9, p.WV, o, p.out),
              Err(kShape).Name("W_K").Num(8).Num(9));
  const TestMatrix WV6 = Random(6, 5, 9);
  CHECK_ERROR(attnkit::SelfAttention(p.X, p.WQ, p.WK, WV6, o, p.out),
              Err(kShape).Name("W_V").Num(8).Num(6));
  TestMatrix out6(4, 6);
  CHECK_ERROR(attnkit::SelfAttention(p.X, p.WQ, p.WK, p.WV, o, out6),
              Err(kShape).Name("out").Num(5).Num(6));
  for (float bad : {kNaN, kInf}) {
    INFO("value " << bad);
    TestMatrix X = CopyOf(p.X), WQ = CopyOf(p.WQ), WK = CopyOf(p.WK), WV = CopyOf(p.WV);
    X(2, 7) = bad;
    CHECK_ERROR(attnkit::SelfAttention(X, p.WQ, p.WK, p.WV, o, p.out), Err(kNonFinite).Name("X"));
    WQ(7, 2) = bad;
    CHECK_ERROR(attnkit::SelfAttention(p.X, WQ, p.WK, p.WV, o, p.out), Err(kNonFinite).Name("W_Q"));
    WK(0, 0) = bad;
    CHECK_ERROR(attnkit::SelfAttention(p.X, p.WQ, WK, p.WV, o, p.out), Err(kNonFinite).Name("W_K"));
    WV(3, 4) = bad;
    CHECK_ERROR(attnkit::SelfAttention(p.X, p.WQ, p.WK, WV, o, p.out), Err(kNonFinite).Name("W_V"));
  }
  {
    AttentionOptions bad;
    bad.scale = 0.0f;
    CHECK_ERROR(attnkit::SelfAttention(p.X, p.WQ, p.WK, p.WV, bad, p.out),
                Err(kInvalid).Name("scale"));
  }
  p.CheckStillWorks();
}

TEST_CASE("CrossAttention and ParameterFreeAttention reject bad input",
          "[errors][attention][cross]") {
  const TestMatrix Xq = Random(3, 5, 1), Xkv = Random(7, 6, 2);
  const TestMatrix WQ = Random(5, 4, 3), WK = Random(6, 4, 4), WV = Random(6, 2, 5);
  TestMatrix out(3, 2);
  AttentionOptions o;
  CheckBrokenViews("X_kv", 7, 6, [&](ConstMatrixView v) {
    return attnkit::CrossAttention(Xq, v, WQ, WK, WV, o, out);
  });
  CheckBrokenViews("X_q", 3, 5, [&](ConstMatrixView v) {
    return attnkit::CrossAttention(v, Xkv, WQ, WK, WV, o, out);
  });
  const TestMatrix WK5 = Random(5, 4, 9);  // rows must be d_kv = 6
  CHECK_ERROR(attnkit::CrossAttention(Xq, Xkv, WQ, WK5, WV, o, out),
              Err(kShape).Name("W_K").Num(6).Num(5));
  const TestMatrix WQ6 = Random(6, 4, 9);  // rows must be d_q = 5
  CHECK_ERROR(attnkit::CrossAttention(Xq, Xkv, WQ6, WK, WV, o, out),
              Err(kShape).Name("W_Q").Num(5).Num(6));
  TestMatrix out7(7, 2);  // rows must be T_q = 3
  CHECK_ERROR(attnkit::CrossAttention(Xq, Xkv, WQ, WK, WV, o, out7),
              Err(kShape).Name("out").Num(3).Num(7));
  TestMatrix Xkv_nan = CopyOf(Xkv);
  Xkv_nan(6, 5) = kNaN;
  CHECK_ERROR(attnkit::CrossAttention(Xq, Xkv_nan, WQ, WK, WV, o, out),
              Err(kNonFinite).Name("X_kv"));
  AttentionOptions kl;
  kl.key_length = 8;  // T_k = 7
  CHECK_ERROR(attnkit::CrossAttention(Xq, Xkv, WQ, WK, WV, kl, out),
              Err(kInvalid).Or(kShape).Name("key_length").Num(8).Num(7));
  REQUIRE_OK(attnkit::CrossAttention(Xq, Xkv, WQ, WK, WV, o, out));
  CHECK(AllFinite(out));

  const TestMatrix X = Random(4, 6, 7);
  TestMatrix pout(4, 6), pout_bad(4, 5);
  CheckBrokenViews("X", 4, 6,
                   [&](ConstMatrixView v) { return attnkit::ParameterFreeAttention(v, o, pout); });
  CHECK_ERROR(attnkit::ParameterFreeAttention(X, o, pout_bad),
              Err(kShape).Name("out").Num(6).Num(5));
  TestMatrix Xinf = CopyOf(X);
  Xinf(1, 1) = -kInf;
  CHECK_ERROR(attnkit::ParameterFreeAttention(Xinf, o, pout), Err(kNonFinite).Name("X"));
  REQUIRE_OK(attnkit::ParameterFreeAttention(X, o, pout));
  const ref::Mat want = ref::Attention(X.ToRef(), X.ToRef(), X.ToRef(), ref::Options()).output;
  CHECK_CLOSE(pout, want, AttentionTol(6, 4, 1, 1, 1, 1 / std::sqrt(6.0)).output);
}

TEST_CASE("SplitHeads and MergeHeads reject bad head counts and shapes",
          "[errors][multihead][reshape]") {
  const TestMatrix x = Random(5, 12, 1);
  TestMatrix out(15, 4);
  CHECK_ERROR(attnkit::SplitHeads(x, 0, out), Err(kInvalid).Name("num_heads"));
  CHECK_ERROR(attnkit::SplitHeads(x, 5, out),
              Err(kInvalid).Or(kShape).Name("num_heads").Num(5).Num(12));
  TestMatrix out_bad(15, 3);
  CHECK_ERROR(attnkit::SplitHeads(x, 3, out_bad), Err(kShape).Name("out").Num(4).Num(3));
  TestMatrix out_bad_rows(5, 4);
  CHECK_ERROR(attnkit::SplitHeads(x, 3, out_bad_rows), Err(kShape).Name("out").Num(15).Num(5));
  CheckBrokenViews("x", 5, 12, [&](ConstMatrixView v) { return attnkit::SplitHeads(v, 3, out); });
  REQUIRE_OK(attnkit::SplitHeads(x, 3, out));
  CHECK_CLOSE(out, ref::SplitHeads(x.ToRef(), 3), kExact);

  TestMatrix merged(5, 12);
  CHECK_ERROR(attnkit::MergeHeads(out, 0, merged), Err(kInvalid).Name("num_heads"));
  CHECK_ERROR(attnkit::MergeHeads(out, 4, merged),
              Err(kInvalid).Or(kShape).Name("num_heads").Name("heads").Num(4).Num(15));
  TestMatrix merged_bad(5, 13);
  CHECK_ERROR(attnkit::MergeHeads(out, 3, merged_bad), Err(kShape).Name("out").Num(12).Num(13));
  CheckBrokenViews("heads", 15, 4,
                   [&](ConstMatrixView v) { return attnkit::MergeHeads(v, 3, merged); });
  REQUIRE_OK(attnkit::MergeHeads(out, 3, merged));
  CHECK_CLOSE(merged, x.ToRef(), kExact);
}

// A valid batched problem: batch 2, T_q 3, T_k 5, h 4, kvh 2, d_k 3, d_v 2.
struct Batched {
  size_t batch = 2, h = 4, kvh = 2;
  TestMatrix Q = Random(2 * 3, 4 * 3, 1);
  TestMatrix K = Random(2 * 5, 2 * 3, 2);
  TestMatrix V = Random(2 * 5, 2 * 2, 3);
  TestMatrix out = TestMatrix(2 * 3, 4 * 2);
  HeadConfig cfg() const { return HeadConfig{4, 2, 0, 0}; }
  void CheckStillWorks(const AttentionOptions& o = AttentionOptions()) {
    REQUIRE_OK(attnkit::MultiHeadAttentionQKV(Q, K, V, batch, cfg(), o, out));
    const ref::Mat want =
        ref::MultiHeadQKV(Q.ToRef(), K.ToRef(), V.ToRef(), batch, h, kvh, ref::FromAttnkit(o));
    CHECK_CLOSE(out, want, AttentionTol(3, 5, 1, 1, 1, 1 / std::sqrt(3.0)).output);
  }
};

TEST_CASE("MultiHeadAttentionQKV rejects bad head configs, batches and key_lengths",
          "[errors][multihead]") {
  Batched p;
  AttentionOptions o;
  CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, p.V, 2, HeadConfig{0, 2, 0, 0}, o, p.out),
              Err(kInvalid).Name("num_heads"));
  {
    // 3 kv heads do not divide 4 query heads (K and V sized for 3 kv heads).
    const TestMatrix K3h = Random(10, 3 * 3, 7), V3h = Random(10, 3 * 2, 8);
    CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, K3h, V3h, 2, HeadConfig{4, 3, 0, 0}, o, p.out),
                Err(kInvalid).Or(kShape).Name("num_kv_heads").Num(3).Num(4));
  }
  CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, p.V, 2, HeadConfig{4, 0, 0, 0}, o, p.out),
              Err(kInvalid).Or(kShape).Name("num_kv_heads"));
  // Q has 12 columns: 5 heads do not divide them.
  CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, p.V, 2, HeadConfig{5, 5, 0, 0}, o, p.out),
              Err(kInvalid).Or(kShape).Name("Q").Name("num_heads").Num(12));
  // Explicit d_k that does not fit Q's columns.
  CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, p.V, 2, HeadConfig{4, 2, 4, 0}, o, p.out),
              Err(kShape).Or(kInvalid).Name("Q").Name("d_k").Num(16).Num(12));
  // K with 3 kv heads' worth of columns.
  const TestMatrix K9 = Random(10, 9, 9);
  CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, K9, p.V, 2, p.cfg(), o, p.out),
              Err(kShape).Name("K").Num(6).Num(9));
  const TestMatrix V8 = Random(8, 4, 9);  // rows must be batch * T_k = 10
  CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, V8, 2, p.cfg(), o, p.out),
              Err(kShape).Name("V").Num(10).Num(8));
  TestMatrix out_bad(6, 9);
  CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, p.V, 2, p.cfg(), o, out_bad),
              Err(kShape).Name("out").Num(8).Num(9));
  CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, p.V, 0, p.cfg(), o, p.out),
              Err(kInvalid).Name("batch"));
  // batch 4 does not divide Q's 6 rows.
  CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, p.V, 4, p.cfg(), o, p.out),
              Err(kInvalid).Or(kShape).Name("batch").Name("Q").Num(4).Num(6));
  {
    AttentionOptions kl;
    kl.key_lengths = {5, 5, 5};
    CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, p.V, 2, p.cfg(), kl, p.out),
                Err(kShape).Or(kInvalid).Name("key_lengths").Num(2).Num(3));
    kl.key_lengths = {5, 6};
    CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, p.V, 2, p.cfg(), kl, p.out),
                Err(kInvalid).Or(kShape).Name("key_lengths").Num(5).Num(6));
    kl.key_lengths = {0, 5};  // valid
    p.CheckStillWorks(kl);
  }
  {
    const TestMask m(3, 6);  // per item [T_q, T_k] = [3, 5]
    AttentionOptions bm;
    bm.bool_mask = m.view();
    CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, p.V, 2, p.cfg(), bm, p.out),
                Err(kShape).Name("bool_mask").Num(5).Num(6));
    const TestMatrix a(6, 5);  // [B*T_q, T_k] instead of [T_q, T_k]
    AttentionOptions am;
    am.additive_mask = a.cview();
    CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, p.V, 2, p.cfg(), am, p.out),
                Err(kShape).Name("additive_mask").Num(3).Num(6));
  }
  {
    TestMatrix Kn = CopyOf(p.K);
    Kn(9, 5) = kNaN;
    CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, Kn, p.V, 2, p.cfg(), o, p.out),
                Err(kNonFinite).Name("K"));
    AttentionOptions sc;
    sc.scale = -1.0f;
    CHECK_ERROR(attnkit::MultiHeadAttentionQKV(p.Q, p.K, p.V, 2, p.cfg(), sc, p.out),
                Err(kInvalid).Name("scale"));
  }
  CheckBrokenViews("Q", 6, 12, [&](ConstMatrixView v) {
    return attnkit::MultiHeadAttentionQKV(v, p.K, p.V, 2, p.cfg(), o, p.out);
  });
  p.CheckStillWorks();
}

TEST_CASE("MultiHeadAttention rejects bad d_model, weights, W_O and out",
          "[errors][multihead][mha]") {
  // batch 2, T 3, d_model 8, h 4 -> d_k = d_v = 2, d_out 5.
  const TestMatrix X = Random(6, 8, 1);
  const TestMatrix WQ = Random(8, 8, 2, Layout::kContiguous, -0.3f, 0.3f);
  const TestMatrix WK = Random(8, 8, 3, Layout::kContiguous, -0.3f, 0.3f);
  const TestMatrix WV = Random(8, 8, 4, Layout::kContiguous, -0.3f, 0.3f);
  const TestMatrix WO = Random(8, 5, 5, Layout::kContiguous, -0.3f, 0.3f);
  const MultiHeadWeights w{WQ, WK, WV, WO};
  const HeadConfig cfg{4, 0, 0, 0};
  TestMatrix out(6, 5);
  AttentionOptions o;
  // d_model 8 is not divisible by 3 heads (d_k derived).
  CHECK_ERROR(attnkit::MultiHeadAttention(X, 2, w, HeadConfig{3, 0, 0, 0}, o, out),
              Err(kInvalid).Or(kShape).Name("num_heads").Name("d_model").Num(8).Num(3));
  CHECK_ERROR(attnkit::MultiHeadAttention(X, 2, w, HeadConfig{0, 0, 0, 0}, o, out),
              Err(kInvalid).Name("num_heads"));
  {
    // 3 kv heads do not divide 4 query heads (W_K, W_V sized for 3 kv heads).
    const TestMatrix WK3 = Random(8, 3 * 2, 7), WV3 = Random(8, 3 * 2, 8);
    CHECK_ERROR(attnkit::MultiHeadAttention(X, 2, MultiHeadWeights{WQ, WK3, WV3, WO},
                                            HeadConfig{4, 3, 0, 0}, o, out),
                Err(kInvalid).Or(kShape).Name("num_kv_heads").Num(3).Num(4));
  }
  CHECK_ERROR(attnkit::MultiHeadAttention(X, 0, w, cfg, o, out), Err(kInvalid).Name("batch"));
  CHECK_ERROR(attnkit::MultiHeadAttention(X, 4, w, cfg, o, out),
              Err(kInvalid).Or(kShape).Name("batch").Name("X").Num(4).Num(6));
  {
    const TestMatrix WQ_bad = Random(8, 6, 9);  // must be [8, 4*2]
    CHECK_ERROR(
        attnkit::MultiHeadAttention(X, 2, MultiHeadWeights{WQ_bad, WK, WV, WO}, cfg, o, out),
        Err(kShape).Name("W_Q").Num(8).Num(6));
    const TestMatrix WK_bad = Random(7, 8, 9);  // rows must be d_model 8
    CHECK_ERROR(
        attnkit::MultiHeadAttention(X, 2, MultiHeadWeights{WQ, WK_bad, WV, WO}, cfg, o, out),
        Err(kShape).Name("W_K").Num(8).Num(7));
    const TestMatrix WV_bad = Random(8, 4, 9);  // must be [8, 4*2]
    CHECK_ERROR(
        attnkit::MultiHeadAttention(X, 2, MultiHeadWeights{WQ, WK, WV_bad, WO}, cfg, o, out),
        Err(kShape).Name("W_V").Num(8).Num(4));
    const TestMatrix WO_bad = Random(7, 5, 9);  // rows must be h*d_v = 8
    CHECK_ERROR(
        attnkit::MultiHeadAttention(X, 2, MultiHeadWeights{WQ, WK, WV, WO_bad}, cfg, o, out),
        Err(kShape).Name("W_O").Num(8).Num(7));
    TestMatrix WO_nan = CopyOf(WO);
    WO_nan(7, 4) = kNaN;
    CHECK_ERROR(
        attnkit::MultiHeadAttention(X, 2, MultiHeadWeights{WQ, WK, WV, WO_nan}, cfg, o, out),
        Err(kNonFinite).Name("W_O"));
    TestMatrix WQ_inf = CopyOf(WQ);
    WQ_inf(0, 7) = kInf;
    CHECK_ERROR(
        attnkit::MultiHeadAttention(X, 2, MultiHeadWeights{WQ_inf, WK, WV, WO}, cfg, o, out),
        Err(kNonFinite).Name("W_Q"));
  }
  {
    TestMatrix out_bad(6, 8);  // d_out is 5
    CHECK_ERROR(attnkit::MultiHeadAttention(X, 2, w, cfg, o, out_bad),
                Err(kShape).Name("out").Num(5).Num(8));
    TestMatrix out_merged_bad(6, 5);  // without W_O: h*d_v = 8
    CHECK_ERROR(attnkit::MultiHeadAttention(X, 2, MultiHeadWeights{WQ, WK, WV, ConstMatrixView()},
                                            cfg, o, out_merged_bad),
                Err(kShape).Name("out").Num(8).Num(5));
  }
  {
    TestMatrix Xn = CopyOf(X);
    Xn(5, 7) = kNaN;
    CHECK_ERROR(attnkit::MultiHeadAttention(Xn, 2, w, cfg, o, out), Err(kNonFinite).Name("X"));
  }
  {
    AttentionOptions kl;
    kl.key_lengths = {3};
    CHECK_ERROR(attnkit::MultiHeadAttention(X, 2, w, cfg, kl, out),
                Err(kShape).Or(kInvalid).Name("key_lengths").Num(2).Num(1));
    AttentionOptions sc;
    sc.softcap = -2.0f;
    CHECK_ERROR(attnkit::MultiHeadAttention(X, 2, w, cfg, sc, out), Err(kInvalid).Name("softcap"));
  }
  CheckBrokenViews("X", 6, 8, [&](ConstMatrixView v) {
    return attnkit::MultiHeadAttention(v, 2, w, cfg, o, out);
  });
  CheckBrokenViews("W_O", 8, 5, [&](ConstMatrixView v) {
    return attnkit::MultiHeadAttention(X, 2, MultiHeadWeights{WQ, WK, WV, v}, cfg, o, out);
  });
  // Still works.
  REQUIRE_OK(attnkit::MultiHeadAttention(X, 2, w, cfg, o, out));
  const ref::Mat want = ref::MultiHead(X.ToRef(), 2, WQ.ToRef(), WK.ToRef(), WV.ToRef(), WO.ToRef(),
                                       4, 4, ref::Options());
  CHECK_CLOSE(out, want, ChainTol(want));
}

TEST_CASE("KVCache::Create and Append reject bad sizes and shapes", "[errors][kv_cache]") {
  KVCache cache;
  CHECK_ERROR(KVCache::Create(0, 2, 3, 4, 5, &cache), Err(kInvalid).Name("batch"));
  CHECK_ERROR(KVCache::Create(1, 0, 3, 4, 5, &cache), Err(kInvalid).Name("num_kv_heads"));
  CHECK_ERROR(KVCache::Create(1, 2, 0, 4, 5, &cache), Err(kInvalid).Name("d_k"));
  CHECK_ERROR(KVCache::Create(1, 2, 3, 0, 5, &cache), Err(kInvalid).Name("d_v"));
  CHECK_ERROR(KVCache::Create(1, 2, 3, 4, 0, &cache), Err(kInvalid).Name("capacity"));
  CHECK_ERROR(KVCache::Create(1, 2, 3, 4, 5, nullptr), Err(kInvalid).Name("cache"));
  // The storage size overflows size_t: rejected before allocating anything.
  CHECK_ERROR(KVCache::Create(kHuge, 4, 3, 4, 5, &cache), Err(kOverflow));
  CHECK_ERROR(KVCache::Create(1, 2, 3, 4, kHuge, &cache), Err(kOverflow));

  REQUIRE_OK(KVCache::Create(2, 2, 3, 4, 5, &cache));
  const TestMatrix K = Random(4, 6, 1), V = Random(4, 8, 2);
  const TestMatrix K7 = Random(4, 7, 3);
  CHECK_ERROR(cache.Append(K7, V), Err(kShape).Name("K_new").Num(6).Num(7));
  const TestMatrix V9 = Random(4, 9, 3);
  CHECK_ERROR(cache.Append(K, V9), Err(kShape).Name("V_new").Num(8).Num(9));
  const TestMatrix V6rows = Random(6, 8, 3);
  CHECK_ERROR(cache.Append(K, V6rows), Err(kShape).Name("V_new").Num(4).Num(6));
  const TestMatrix K3 = Random(3, 6, 4), V3 = Random(3, 8, 5);  // 3 rows, batch 2
  CHECK_ERROR(cache.Append(K3, V3), Err(kShape).Or(kInvalid).Name("K_new").Name("batch").Num(3));
  TestMatrix Kn = CopyOf(K);
  Kn(3, 5) = kNaN;
  CHECK_ERROR(cache.Append(Kn, V), Err(kNonFinite).Name("K_new"));
  TestMatrix Vn = CopyOf(V);
  Vn(0, 0) = -kInf;
  CHECK_ERROR(cache.Append(K, Vn), Err(kNonFinite).Name("V_new"));
  CheckBrokenViews("K_new", 4, 6, [&](ConstMatrixView v) { return cache.Append(v, V); });
  CHECK(cache.size() == 0);
  // Still works.
  REQUIRE_OK(cache.Append(K, V));
  CHECK(cache.size() == 2);
  CHECK_CLOSE(cache.Keys(1, 1), K.ToRef().Block(2, 2, 3, 3), kExact);
}

TEST_CASE("A Matrix from ragged rows is empty and every call given it names it",
          "[errors][matrix]") {
  // No row is padded or cut: rows of unequal length give 0 x 0 (matrix.h).
  const attnkit::Matrix ragged = {{1, 2, 3}, {4}, {5, 6, 7, 8}};
  CHECK(ragged.rows() == 0);
  CHECK(ragged.cols() == 0);
  CHECK(ragged.view().data == nullptr);
  const attnkit::Matrix even = {{1, 2, 3}, {4, 5, 6}};
  CHECK(even.rows() == 2);
  CHECK(even.cols() == 3);
  CHECK(even(1, 0) == 4.0f);
  const TestMatrix K = Random(3, 3, 1), V = Random(3, 3, 2);
  TestMatrix out(3, 3);
  CHECK_ERROR(attnkit::Attention(ragged, K, V, AttentionOptions(), out),
              Err(kInvalid).Name("Q").Num(0));
  CHECK_ERROR(attnkit::Attention(K, ragged, V, AttentionOptions(), out),
              Err(kInvalid).Or(kShape).Name("K"));
  CHECK_ERROR(attnkit::MatMul(K, ragged, out), Err(kInvalid).Name("B"));
}

TEST_CASE("KVCache::Keys and Values out of range are empty views, refused by every call",
          "[errors][kv_cache]") {
  KVCache cache;
  REQUIRE_OK(KVCache::Create(2, 2, 3, 4, 5, &cache));
  REQUIRE_OK(cache.Append(Random(2, 6, 1), Random(2, 8, 2)));
  for (auto [item, head] : {std::pair<size_t, size_t>{5, 9}, {2, 0}, {0, 2}}) {
    INFO("item " << item << ", kv_head " << head);
    for (const ConstMatrixView v : {cache.Keys(item, head), cache.Values(item, head)}) {
      CHECK(v.data == nullptr);
      CHECK(v.rows == 0);
      CHECK(v.cols == 0);
    }
  }
  CHECK(cache.Keys(1, 1).rows == 1);
  const TestMatrix Q = Random(1, 3, 3);
  TestMatrix out(1, 4);
  CHECK_ERROR(attnkit::Attention(Q, cache.Keys(5, 9), cache.Values(0, 0), AttentionOptions(), out),
              Err(kInvalid).Or(kShape).Name("K"));
}

TEST_CASE("AttendCached rejects too many new queries, mismatched heads and bad out",
          "[errors][kv_cache][attend]") {
  // batch 2, kvh 2, d_k 3, d_v 4, 3 tokens cached.
  KVCache cache;
  REQUIRE_OK(KVCache::Create(2, 2, 3, 4, 6, &cache));
  const TestMatrix K = Random(6, 6, 1), V = Random(6, 8, 2);
  AttentionOptions o;
  o.causal = true;
  {
    // Empty cache: nothing to attend to.
    const TestMatrix Q1 = Random(2, 12, 3);
    TestMatrix out1(2, 16);
    CHECK_ERROR(attnkit::AttendCached(Q1, cache, 4, o, out1),
                Err(kInvalid).Or(kShape).Name("Q_new").Name("T_new").Name("cache"));
  }
  REQUIRE_OK(cache.Append(K, V));
  REQUIRE(cache.size() == 3);
  const TestMatrix Q = Random(2 * 2, 4 * 3, 4);  // T_new = 2, h = 4
  TestMatrix out(4, 16);
  {
    const TestMatrix Q4 = Random(2 * 4, 12, 5);  // T_new 4 > 3 cached
    TestMatrix out4(8, 16);
    CHECK_ERROR(attnkit::AttendCached(Q4, cache, 4, o, out4),
                Err(kInvalid).Or(kShape).Name("Q_new").Name("T_new").Num(4).Num(3));
  }
  {
    // 3 query heads (Q_new and out sized for them) over 2 cached kv heads.
    const TestMatrix Q3 = Random(4, 3 * 3, 7);
    TestMatrix out3(4, 3 * 4);
    CHECK_ERROR(attnkit::AttendCached(Q3, cache, 3, o, out3),
                Err(kInvalid).Or(kShape).Name("num_heads").Num(3).Num(2));
  }
  CHECK_ERROR(attnkit::AttendCached(Q, cache, 0, o, out), Err(kInvalid).Name("num_heads"));
  {
    const TestMatrix Q10 = Random(4, 10, 6);  // must be 4 * d_k = 12 columns
    CHECK_ERROR(attnkit::AttendCached(Q10, cache, 4, o, out),
                Err(kShape).Name("Q_new").Num(12).Num(10));
    const TestMatrix Q3rows = Random(3, 12, 6);  // batch 2 does not divide 3
    TestMatrix out3(3, 16);
    CHECK_ERROR(attnkit::AttendCached(Q3rows, cache, 4, o, out3),
                Err(kShape).Or(kInvalid).Name("Q_new").Name("batch").Num(3));
  }
  {
    TestMatrix out_bad(4, 12);
    CHECK_ERROR(attnkit::AttendCached(Q, cache, 4, o, out_bad),
                Err(kShape).Name("out").Num(16).Num(12));
  }
  {
    TestMatrix Qn = CopyOf(Q);
    Qn(1, 1) = kNaN;
    CHECK_ERROR(attnkit::AttendCached(Qn, cache, 4, o, out), Err(kNonFinite).Name("Q_new"));
    AttentionOptions sc = o;
    sc.scale = kNaN;
    CHECK_ERROR(attnkit::AttendCached(Q, cache, 4, sc, out),
                Err(kNonFinite).Or(kInvalid).Name("scale"));
  }
  {
    KVCache empty;  // never created
    CHECK_ERROR(attnkit::AttendCached(Q, empty, 4, o, out),
                Err(kInvalid).Or(kShape).Name("cache").Name("Q_new").Name("batch"));
  }
  // Still works, and equals the reference on the cached keys and values.
  REQUIRE_OK(attnkit::AttendCached(Q, cache, 4, o, out));
  ref::Options ro = ref::FromAttnkit(o);
  ref::Mat want(4, 16);
  for (size_t b = 0; b < 2; ++b)
    for (size_t head = 0; head < 4; ++head) {
      const size_t g = head / 2;
      const ref::Trace t = ref::Attention(Q.ToRef().Block(b * 2, 2, head * 3, 3),
                                          K.ToRef().Block(b * 3, 3, g * 3, 3),
                                          V.ToRef().Block(b * 3, 3, g * 4, 4), ro);
      want.SetBlock(b * 2, head * 4, t.output);
    }
  CHECK_CLOSE(out, want, AttentionTol(3, 3, 1, 1, 1, 1 / std::sqrt(3.0)).output);
}

}  // namespace
}  // namespace attnkit_test
