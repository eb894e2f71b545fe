// attnkit tests: shared helpers.
//  - deterministic random matrices (std::mt19937 with a fixed seed; the float
//    is built from the raw 32-bit outputs, so values are the same with every
//    standard library, natively and in WebAssembly),
//  - TestMatrix: an owned buffer viewed either contiguously or misaligned and
//    strided (data = buffer + 1 float, stride = cols + 3), with every cell
//    outside the matrix (before, between rows, after) holding a NaN sentinel:
//    reading padding as input poisons the result with NaN, and writing padding
//    as output is detected by PaddingIntact(),
//  - ForEachTarget: runs a body once per compiled-and-supported SIMD target,
//  - comparison against the float64 reference with stated tolerances,
//  - CHECK_ERROR: checks an error's code, the parameter its message names and
//    the numbers it quotes.
#ifndef ATTNKIT_TESTS_TEST_UTIL_H_
#define ATTNKIT_TESTS_TEST_UTIL_H_

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "attnkit/attnkit.h"
#include "tests/reference.h"

namespace attnkit_test {

using attnkit::ConstMatrixView;
using attnkit::ErrorCode;
using attnkit::MaskView;
using attnkit::MatrixView;
using attnkit::Status;

// Sizes around every SIMD width: 1, lanes-1, lanes, lanes+1 for 4 (SSE4/WASM),
// 8 (AVX2) and 16 (AVX3) lanes, plus primes and 2*lanes +- 1.
inline const std::vector<size_t>& AllSizes() {
  static const std::vector<size_t> s = {1, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 31, 32, 33, 37};
  return s;
}
// The subset used where several dimensions are crossed.
inline const std::vector<size_t>& LaneSizes() {
  static const std::vector<size_t> s = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17};
  return s;
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

enum class Layout { kContiguous, kStrided };
inline const char* LayoutName(Layout l) {
  return l == Layout::kContiguous ? "contiguous" : "misaligned+strided";
}
inline const std::vector<Layout>& AllLayouts() {
  static const std::vector<Layout> l = {Layout::kContiguous, Layout::kStrided};
  return l;
}

// A quiet NaN with a recognisable payload, stored in every padding cell.
inline float Sentinel() {
  const uint32_t bits = 0x7FC0BEEFu;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
inline bool IsSentinel(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(f));
  return bits == 0x7FC0BEEFu;
}

// Deterministic uniform floats in [lo, hi).
class Rng {
 public:
  explicit Rng(uint32_t seed) : gen_(seed) {}
  float Uniform(float lo, float hi) {
    const uint32_t u = static_cast<uint32_t>(gen_()) >> 8;  // 24 bits
    const double unit = static_cast<double>(u) * (1.0 / 16777216.0);
    return static_cast<float>(lo + (static_cast<double>(hi) - lo) * unit);
  }
  uint32_t Next() { return static_cast<uint32_t>(gen_()); }

 private:
  std::mt19937 gen_;
};

// An owned float matrix, contiguous or misaligned + strided, with sentinel
// padding around and between its rows.
class TestMatrix {
 public:
  static constexpr size_t kGuard = 8;  // sentinel floats after the last row

  TestMatrix() = default;
  TestMatrix(size_t rows, size_t cols, Layout layout = Layout::kContiguous)
      : rows_(rows),
        cols_(cols),
        stride_(layout == Layout::kStrided ? cols + 3 : cols),
        offset_(layout == Layout::kStrided ? 1 : 0),
        buf_(offset_ + rows * stride_ + kGuard, Sentinel()) {
    for (size_t r = 0; r < rows_; ++r)
      for (size_t c = 0; c < cols_; ++c) (*this)(r, c) = 0.0f;
  }

  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }
  size_t stride() const { return stride_; }
  float* data() { return buf_.data() + offset_; }
  const float* data() const { return buf_.data() + offset_; }
  float& operator()(size_t r, size_t c) { return data()[r * stride_ + c]; }
  float operator()(size_t r, size_t c) const { return data()[r * stride_ + c]; }

  MatrixView view() { return MatrixView(data(), rows_, cols_, stride_); }
  ConstMatrixView cview() const { return ConstMatrixView(data(), rows_, cols_, stride_); }
  operator MatrixView() { return view(); }              // NOLINT
  operator ConstMatrixView() const { return cview(); }  // NOLINT

  ref::Mat ToRef() const { return ref::FromView(cview()); }

  // True if no cell outside the matrix was written.
  bool PaddingIntact() const {
    for (size_t i = 0; i < buf_.size(); ++i) {
      if (i >= offset_ && i < offset_ + rows_ * stride_ && (i - offset_) % stride_ < cols_) {
        continue;  // an element
      }
      if (!IsSentinel(buf_[i])) return false;
    }
    return true;
  }
  // True if every element equals the other matrix's bit for bit.
  bool SameValues(const TestMatrix& o) const {
    if (rows_ != o.rows_ || cols_ != o.cols_) return false;
    for (size_t r = 0; r < rows_; ++r)
      if (std::memcmp(data() + r * stride_, o.data() + r * o.stride_, cols_ * sizeof(float)) != 0)
        return false;
    return true;
  }

 private:
  size_t rows_ = 0, cols_ = 0, stride_ = 0, offset_ = 0;
  std::vector<float> buf_;
};

inline TestMatrix Random(size_t rows, size_t cols, uint32_t seed,
                         Layout layout = Layout::kContiguous, float lo = -1.0f, float hi = 1.0f) {
  TestMatrix m(rows, cols, layout);
  Rng rng(seed);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) m(r, c) = rng.Uniform(lo, hi);
  return m;
}

inline TestMatrix FromRef(const ref::Mat& a, Layout layout = Layout::kContiguous) {
  TestMatrix m(a.rows, a.cols, layout);
  for (size_t r = 0; r < a.rows; ++r)
    for (size_t c = 0; c < a.cols; ++c) m(r, c) = static_cast<float>(a(r, c));
  return m;
}

inline TestMatrix FromRows(std::initializer_list<std::initializer_list<float>> rows,
                           Layout layout = Layout::kContiguous) {
  const size_t R = rows.size(), C = R ? rows.begin()->size() : 0;
  TestMatrix m(R, C, layout);
  size_t r = 0;
  for (const auto& row : rows) {
    size_t c = 0;
    for (float x : row) m(r, c++) = x;
    ++r;
  }
  return m;
}

// Copies any view (keeps values, chooses a new layout).
inline TestMatrix CopyOf(ConstMatrixView v, Layout layout = Layout::kContiguous) {
  TestMatrix m(v.rows, v.cols, layout);
  for (size_t r = 0; r < v.rows; ++r)
    for (size_t c = 0; c < v.cols; ++c) m(r, c) = v(r, c);
  return m;
}

// An owned boolean mask (nonzero = may attend), contiguous or strided.
class TestMask {
 public:
  TestMask() = default;
  TestMask(size_t rows, size_t cols, Layout layout = Layout::kContiguous, uint8_t fill = 1)
      : rows_(rows),
        cols_(cols),
        stride_(layout == Layout::kStrided ? cols + 5 : cols),
        offset_(layout == Layout::kStrided ? 1 : 0),
        buf_(offset_ + rows * stride_ + 8, 0xAB) {
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < cols; ++c) (*this)(r, c) = fill;
  }
  uint8_t& operator()(size_t r, size_t c) { return buf_[offset_ + r * stride_ + c]; }
  MaskView view() const { return MaskView(buf_.data() + offset_, rows_, cols_, stride_); }

 private:
  size_t rows_ = 0, cols_ = 0, stride_ = 0, offset_ = 0;
  std::vector<uint8_t> buf_;
};

// A random boolean mask with roughly `keep` of the cells allowed.
inline TestMask RandomMask(size_t rows, size_t cols, uint32_t seed, double keep = 0.7,
                           Layout layout = Layout::kContiguous) {
  TestMask m(rows, cols, layout);
  Rng rng(seed);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) m(r, c) = rng.Uniform(0.0f, 1.0f) < keep ? 1 : 0;
  return m;
}

inline double MaxAbs(ConstMatrixView v) {
  double m = 0.0;
  for (size_t r = 0; r < v.rows; ++r)
    for (size_t c = 0; c < v.cols; ++c)
      if (std::isfinite(v(r, c))) m = std::max(m, std::fabs(static_cast<double>(v(r, c))));
  return m;
}

inline bool AllFinite(ConstMatrixView v) {
  for (size_t r = 0; r < v.rows; ++r)
    for (size_t c = 0; c < v.cols; ++c)
      if (!std::isfinite(v(r, c))) return false;
  return true;
}

// ---------------------------------------------------------------------------
// Tolerances. An element passes if |got - want| <= atol + rtol * |want|, where
// `want` is the float64 reference computed from the same float32 inputs. An
// infinite `want` (e.g. -inf in masked scores) must be matched exactly; NaN
// never passes.
struct Tol {
  double atol;
  double rtol;
};

// A float32 dot product of length K has a rounding error far below
// K * 2^-24 * sum|a_k b_k| <= K * 6e-8 * K * max|a| max|b|; we allow
// 2e-6 * K * max|a| * max|b| absolute (about 33x the typical error) plus
// rtol 1e-5. A wrong index or a missed element gives errors of order
// max|a| max|b|, far above this.
inline Tol DotTol(size_t K, double max_a, double max_b) {
  return Tol{2e-6 * static_cast<double>(K) * max_a * max_b + 1e-30, 1e-5};
}

// Attention with float32 arithmetic against the float64 reference:
//   score error   ds = 3e-6 * d_k * max|Q| max|K| * scale + 1e-6 * (1 + |additive|max)
//   weight error  |dw| <= 4 ds + 1e-6 (softmax is 1-Lipschitz per row in the
//                 max-norm, times 2 for the normaliser) + rtol 1e-5
//   output error  <= (4 ds + 2e-6 * T_k + 1e-6) * max|V| + rtol 1e-5
struct AttnTol {
  Tol scores;  // raw and scaled scores (scaled by `scale` for the latter)
  Tol weights;
  Tol output;
};
inline AttnTol AttentionTol(size_t d_k, size_t T_k, double max_q, double max_k, double max_v,
                            double scale, double max_additive = 0.0) {
  const double raw = 3e-6 * static_cast<double>(d_k) * max_q * max_k;
  const double ds = raw * scale + 1e-6 * (1.0 + max_additive);
  AttnTol t;
  t.scores = Tol{raw + 1e-30, 1e-5};
  t.weights = Tol{4 * ds + 1e-6, 1e-5};
  t.output = Tol{(4 * ds + 2e-6 * static_cast<double>(T_k) + 1e-6) * (max_v + 1e-30), 1e-5};
  return t;
}

// For chains of operations (projection, attention, merge, output projection)
// on inputs of magnitude <= 1 and weights scaled by 1/sqrt(fan-in), every
// intermediate is O(1); each float32 stage adds a relative error of order
// 1e-6 * length. We allow 5e-5 * max(1, max|ref|) absolute plus rtol 1e-4 —
// still more than 1000x below the O(0.1) errors of a wrong head, row or mask.
inline Tol ChainTol(const ref::Mat& want) { return Tol{5e-5 * std::max(1.0, want.MaxAbs()), 1e-4}; }

inline std::string FormatVal(double x) {
  std::ostringstream os;
  os.precision(9);
  os << x;
  return os.str();
}

// Empty if `got` matches `want` within `tol`, otherwise a description of the
// number of mismatches and the worst one.
inline std::string Mismatch(ConstMatrixView got, const ref::Mat& want, Tol tol) {
  std::ostringstream os;
  if (got.rows != want.rows || got.cols != want.cols) {
    os << "shape: got [" << got.rows << ", " << got.cols << "], want [" << want.rows << ", "
       << want.cols << "]";
    return os.str();
  }
  size_t bad = 0, worst_r = 0, worst_c = 0;
  double worst_excess = -1.0;
  for (size_t r = 0; r < want.rows; ++r)
    for (size_t c = 0; c < want.cols; ++c) {
      const double g = got(r, c), w = want(r, c);
      double excess;
      if (std::isinf(w)) {
        excess = (g == w) ? 0.0 : std::numeric_limits<double>::infinity();
      } else if (std::isnan(g) || std::isinf(g)) {
        excess = std::numeric_limits<double>::infinity();
      } else {
        const double limit = tol.atol + tol.rtol * std::fabs(w);
        const double err = std::fabs(g - w);
        excess = err <= limit ? 0.0 : (err - limit) / (limit > 0 ? limit : 1e-300);
      }
      if (excess > 0.0) {
        ++bad;
        if (excess > worst_excess) {
          worst_excess = excess;
          worst_r = r;
          worst_c = c;
        }
      }
    }
  if (bad == 0) return std::string();
  const double g = got(worst_r, worst_c), w = want(worst_r, worst_c);
  os << bad << " of " << want.rows * want.cols << " elements differ; worst at (" << worst_r << ", "
     << worst_c << "): got " << FormatVal(g) << ", want " << FormatVal(w) << ", |diff| "
     << FormatVal(std::fabs(g - w)) << " > atol " << FormatVal(tol.atol) << " + rtol "
     << FormatVal(tol.rtol) << " * |want|";
  return os.str();
}

// CHECK that `got` (any view) matches the reference `want` within `tol`.
#define CHECK_CLOSE(got, want, tol)                                               \
  do {                                                                            \
    const std::string attnkit_mismatch_ =                                         \
        ::attnkit_test::Mismatch(::attnkit::ConstMatrixView(got), (want), (tol)); \
    INFO("compare " #got " with " #want ": " << attnkit_mismatch_);               \
    CHECK(attnkit_mismatch_.empty());                                             \
  } while (0)

// CHECK that a status is OK, showing the message otherwise.
#define CHECK_OK(expr)                            \
  do {                                            \
    const ::attnkit::Status attnkit_st_ = (expr); \
    INFO(#expr " -> " << attnkit_st_.ToString()); \
    CHECK(attnkit_st_.ok());                      \
  } while (0)
#define REQUIRE_OK(expr)                          \
  do {                                            \
    const ::attnkit::Status attnkit_st_ = (expr); \
    INFO(#expr " -> " << attnkit_st_.ToString()); \
    REQUIRE(attnkit_st_.ok());                    \
  } while (0)

// ---------------------------------------------------------------------------
// Expected errors. Err(code) optionally .Or(other_code) where the header
// leaves the choice open; .Name(...) lists acceptable parameter names (at
// least one must appear in the message as a whole word); .Num(n) requires the
// number n to appear in the message as a whole number (used for "expected"
// and "given" sizes).
struct Expect {
  std::vector<ErrorCode> codes;
  std::vector<std::string> names;
  std::vector<std::string> numbers;

  Expect& Or(ErrorCode c) {
    codes.push_back(c);
    return *this;
  }
  Expect& Name(std::string n) {
    names.push_back(std::move(n));
    return *this;
  }
  Expect& Num(unsigned long long n) {
    numbers.push_back(std::to_string(n));
    return *this;
  }
};
inline Expect Err(ErrorCode c) {
  Expect e;
  e.codes.push_back(c);
  return e;
}

inline bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Does `word` occur in `text` with no identifier character on either side?
inline bool ContainsWord(const std::string& text, const std::string& word) {
  for (size_t pos = text.find(word); pos != std::string::npos; pos = text.find(word, pos + 1)) {
    const bool left_ok = pos == 0 || !IsIdentChar(text[pos - 1]);
    const size_t end = pos + word.size();
    const bool right_ok = end >= text.size() || !IsIdentChar(text[end]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

// Does the number `num` occur in `text` not as part of a longer number?
inline bool ContainsNumber(const std::string& text, const std::string& num) {
  for (size_t pos = text.find(num); pos != std::string::npos; pos = text.find(num, pos + 1)) {
    const bool left_ok = pos == 0 || (!IsDigit(text[pos - 1]) && text[pos - 1] != '.');
    const size_t end = pos + num.size();
    const bool right_ok = end >= text.size() || !IsDigit(text[end]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

inline const char* CodeString(ErrorCode c) { return attnkit::ErrorCodeName(c); }

// Empty if `s` satisfies `e`, else what is wrong.
inline std::string ErrorMismatch(const Status& s, const Expect& e) {
  std::ostringstream os;
  if (s.ok()) return "expected an error, got ok";
  // Bindings read the parameter and the detail apart, never parse the message.
  if (s.parameter().empty()) os << "no parameter; ";
  if (s.message() != s.parameter() + ": " + s.detail()) os << "message is not parameter: detail; ";
  // No word doubled in ToString(): "capacity: capacity: ..." or "X: X: ...".
  if (s.parameter() == CodeString(s.code())) os << "parameter repeats the code's name; ";
  if (s.detail().rfind(s.parameter() + ":", 0) == 0) os << "detail repeats the parameter; ";
  bool code_ok = false;
  for (ErrorCode c : e.codes) code_ok |= (s.code() == c);
  if (!code_ok) {
    os << "code " << CodeString(s.code()) << " not in {";
    for (ErrorCode c : e.codes) os << CodeString(c) << " ";
    os << "}; ";
  }
  if (!e.names.empty()) {
    bool named = false;
    for (const auto& n : e.names) named |= ContainsWord(s.message(), n);
    if (!named) {
      os << "message names none of {";
      for (const auto& n : e.names) os << n << " ";
      os << "}; ";
    }
  }
  for (const auto& n : e.numbers)
    if (!ContainsNumber(s.message(), n)) os << "message lacks the number " << n << "; ";
  return os.str();
}

// CHECK that `expr` returns an error matching `expect` (an Expect).
#define CHECK_ERROR(expr, expect)                                                          \
  do {                                                                                     \
    const ::attnkit::Status attnkit_st_ = (expr);                                          \
    const std::string attnkit_why_ = ::attnkit_test::ErrorMismatch(attnkit_st_, (expect)); \
    INFO(#expr " -> " << attnkit_st_.ToString() << "\n  " << attnkit_why_);                \
    CHECK(attnkit_why_.empty());                                                           \
  } while (0)

// ---------------------------------------------------------------------------
// Runs fn(target) once for every SIMD target this build compiled and this CPU
// supports (in WebAssembly: the single static target), with dispatch forced
// to that target; normal dispatch is restored afterwards, also when a REQUIRE
// throws. Failures show "target <name>".
//
// (Catch2 v2's DYNAMIC_SECTION is not used for the loop: sections are tracked
// by name and source location, so a second ForEachTarget call in the same
// test case, or one inside a loop, would silently skip all its sections. INFO
// shows the target name on every failure instead, and every call runs every
// target.)
struct ForcedTarget {
  explicit ForcedTarget(int64_t t) { attnkit::targets::ForceForTest(t); }
  ~ForcedTarget() { attnkit::targets::ForceForTest(0); }
  ForcedTarget(const ForcedTarget&) = delete;
  ForcedTarget& operator=(const ForcedTarget&) = delete;
};

template <class Fn>
void ForEachTarget(Fn&& fn) {
  const std::vector<int64_t> targets = attnkit::targets::Available();
  REQUIRE(!targets.empty());
  for (int64_t t : targets) {
    ForcedTarget forced(t);
    INFO("target " << attnkit::targets::Name(t));
    fn(t);
  }
}

// Sum of a row of a view.
inline double RowSum(ConstMatrixView v, size_t r) {
  double s = 0.0;
  for (size_t c = 0; c < v.cols; ++c) s += v(r, c);
  return s;
}

// Exact equality (for copies).
constexpr Tol kExact{0.0, 0.0};

// Compares every intermediate of a trace with the reference trace, using the
// attention tolerances: raw scores with tol.scores; scaled scores with that
// times the scale (softcap is 1-Lipschitz) plus 1e-6 for tanh; masked scores
// additionally 1e-6 * (1 + max|additive|) for the addition, and -inf exactly
// where the reference masks. Also the invariants: every row of the weights
// sums to 1 or is all exactly 0, and a cell that is -inf in masked_scores has
// weight exactly 0.
inline void CheckTrace(const attnkit::AttentionTrace& tr, const ref::Trace& want,
                       const AttnTol& tol, double max_additive = 0.0) {
  CHECK(tr.scale == Approx(want.scale).epsilon(1e-6));
  CHECK_CLOSE(tr.raw_scores, want.raw, tol.scores);
  const Tol scaled{tol.scores.atol * want.scale + 1e-6, 1e-5};
  CHECK_CLOSE(tr.scaled_scores, want.scaled, scaled);
  const Tol masked{scaled.atol + 1e-6 * (1.0 + max_additive), 1e-5};
  CHECK_CLOSE(tr.masked_scores, want.masked, masked);
  CHECK_CLOSE(tr.weights, want.weights, tol.weights);
  CHECK_CLOSE(tr.output, want.output, tol.output);
  const ConstMatrixView w = tr.weights, m = tr.masked_scores;
  if (w.rows != want.weights.rows || w.cols != want.weights.cols || m.rows != w.rows ||
      m.cols != w.cols) {
    return;  // already reported by CHECK_CLOSE
  }
  size_t bad_rows = 0, bad_zero = 0;
  for (size_t r = 0; r < w.rows; ++r) {
    bool all_zero = true;
    for (size_t c = 0; c < w.cols; ++c) {
      all_zero &= (w(r, c) == 0.0f);
      if (m(r, c) == -kInf && w(r, c) != 0.0f) ++bad_zero;
    }
    const double sum = RowSum(w, r);
    if (!all_zero && !(std::fabs(sum - 1.0) <= 1e-5)) ++bad_rows;
  }
  INFO(bad_rows << " weight rows neither sum to 1 nor are all zero; " << bad_zero
                << " masked cells have nonzero weight");
  CHECK(bad_rows == 0);
  CHECK(bad_zero == 0);
}

}  // namespace attnkit_test

#endif  // ATTNKIT_TESTS_TEST_UTIL_H_
