// The README's C++ example: single-head causal self-attention with a trace,
// then multi-head attention with grouped K/V heads.
#include <cstdio>

#include "attnkit/attnkit.h"

int main() {
  // X [T=3, d_model=4]: three tokens.
  attnkit::Matrix X = {{1, 0, 1, 0}, {0, 2, 0, 2}, {1, 1, 1, 1}};
  // W_Q, W_K [d_model=4, d_k=2], W_V [d_model=4, d_v=3]: d_k may differ from d_v.
  attnkit::Matrix W_Q = {{1, 0}, {0, 1}, {1, 0}, {0, 1}};
  attnkit::Matrix W_K = {{0, 1}, {1, 0}, {0, 1}, {1, 0}};
  attnkit::Matrix W_V = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}};

  attnkit::AttentionOptions options;
  options.causal = true;  // token i sees tokens 0..i

  attnkit::AttentionTrace trace;
  attnkit::Status status = attnkit::TraceAttention(X, W_Q, W_K, W_V, options, &trace);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("weights [%zu, %zu] (scale %.4f):\n", trace.weights.rows(), trace.weights.cols(),
              trace.scale);
  for (size_t i = 0; i < trace.weights.rows(); ++i) {
    for (size_t j = 0; j < trace.weights.cols(); ++j) std::printf(" %.3f", trace.weights(i, j));
    std::printf("\n");
  }

  // Multi-head: 2 query heads sharing 1 K/V head (multi-query), d_k = d_v = 2.
  attnkit::HeadConfig heads{/*num_heads=*/2, /*num_kv_heads=*/1, /*d_k=*/2, /*d_v=*/2};
  attnkit::Matrix Wq(4, 4), Wk(4, 2), Wv(4, 2), Wo(4, 4);
  for (size_t i = 0; i < 4; ++i) Wq(i, i) = Wo(i, i) = 1.0f;
  Wk(0, 0) = Wk(1, 1) = Wv(2, 0) = Wv(3, 1) = 1.0f;
  attnkit::MultiHeadWeights weights{Wq, Wk, Wv, Wo};
  attnkit::Matrix out(3, 4);
  status = attnkit::MultiHeadAttention(X, /*batch=*/1, weights, heads, options, out);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("multi-head output row 2: %.3f %.3f %.3f %.3f\n", out(2, 0), out(2, 1), out(2, 2),
              out(2, 3));

  // Bad input is an error to check, never a crash.
  heads.num_kv_heads = 3;
  status = attnkit::MultiHeadAttention(X, 1, weights, heads, options, out);
  std::printf("error: %s\n", status.ToString().c_str());
  return status.code() == attnkit::ErrorCode::kInvalidArgument ? 0 : 1;
}
