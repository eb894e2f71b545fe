// attnkit model: text for the language model. A character tokenizer (one
// token per Unicode code point) and a dataset of seeded random windows over a
// text, the model's Batch of next-character prediction.
//
// Vocabulary: token 0 is the unknown token (code point U+FFFD, the Unicode
// replacement character), then the text's distinct code points in ascending
// order as tokens 1 .. n. A character outside the vocabulary (and U+FFFD
// itself) encodes as token 0 and decodes as U+FFFD. The vocabulary is the
// model's (Model::vocabulary()): code points in token order, so that a model's
// weights file decodes the way it was trained.
//
// Limits (each refused with a Status naming "text", never truncated):
//   kMaxTextBytes   8 MiB of UTF-8 (Moby-Dick is 1.2 MB)
//   kMaxCharacters  512 distinct code points (the vocabulary has one more)
//   a dataset's text holds at least kValidationDivisor * (seq_len + 1)
//   characters, so that its validation part holds one window.
#ifndef ATTNKIT_MODEL_TEXT_H_
#define ATTNKIT_MODEL_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attnkit/model.h"
#include "attnkit/random.h"
#include "attnkit/status.h"

namespace attnkit {
namespace model {

constexpr size_t kMaxTextBytes = size_t(8) << 20;
constexpr size_t kMaxCharacters = 512;
constexpr uint32_t kUnknownCodePoint = 0xFFFD;
constexpr int32_t kUnknownToken = 0;
// The last 1 / kValidationDivisor of a dataset's tokens are its validation part.
constexpr size_t kValidationDivisor = 10;

// UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF) to code
// points; a Status naming `parameter` at the first invalid byte.
Status DecodeUtf8(const char* data, size_t size, const char* parameter,
                  std::vector<uint32_t>* code_points);
// Appends code point `c` (valid: at most U+10FFFF, not a surrogate) as UTF-8;
// `out` must not be null (no Status to report it).
void AppendUtf8(uint32_t c, std::string* out);

class Tokenizer {
 public:
  // The vocabulary of `text` (UTF-8, 1 .. kMaxTextBytes bytes, at most
  // kMaxCharacters distinct code points). Errors name "text".
  Status Build(const std::string& text);
  // From a model's vocabulary (code points in token order: U+FFFD, then
  // ascending). Errors name `parameter`.
  Status FromVocabulary(const std::vector<uint32_t>& vocabulary,
                        const char* parameter = "vocabulary");
  const std::vector<uint32_t>& vocabulary() const { return vocabulary_; }
  size_t vocab_size() const { return vocabulary_.size(); }

  // Tokens of a UTF-8 text (any length up to kMaxTextBytes; characters
  // outside the vocabulary -> kUnknownToken). Errors name `parameter`.
  Status Encode(const std::string& text, std::vector<int32_t>* tokens,
                const char* parameter = "text") const;
  // The text of tokens, each in [0, vocab_size). Errors name "tokens".
  Status Decode(const int32_t* tokens, size_t count, std::string* text) const;

 private:
  int32_t TokenOf(uint32_t c) const;
  std::vector<uint32_t> vocabulary_;
};

// A text as tokens, split into training (the first 9/10) and validation (the
// last 1/10) parts, and windows of seq_len + 1 tokens over them: a window's
// first seq_len tokens are the inputs, its last seq_len the targets (each
// position predicts the next character).
struct TextDataConfig {
  size_t seq_len = 0;               // 1 .. the model's max_seq_len
  uint64_t seed = 0;                // the training windows' order
  size_t validation_windows = 128;  // at most; fewer if the validation part is short
};

class TextDataset {
 public:
  // Encodes `text` with `tokenizer` and places the validation windows:
  // evenly spaced over the validation part, non-overlapping. Errors name
  // "text" (too short, too long, invalid UTF-8), "seq_len" or
  // "validation_windows".
  Status Init(const Tokenizer& tokenizer, const std::string& text, const TextDataConfig& config);
  const TextDataConfig& config() const { return config_; }
  size_t train_tokens() const { return split_; }
  size_t validation_tokens() const { return tokens_.size() - split_; }
  size_t validation_window_count() const { return validation_starts_.size(); }

  // `batch` windows at seeded uniform random starts in the training part
  // (the stream continues across calls). Errors name "batch".
  Status Next(size_t batch, Batch* out);
  // Validation windows [first, first + count) as one batch.
  Status ValidationBatch(size_t first, size_t count, Batch* out) const;
  // The mean loss of `model` over every validation window, run in batches of
  // at most `chunk` windows (so that memory stays that of one batch). The
  // model's last forward becomes the last chunk's. Errors name "model"
  // (another vocabulary than the dataset's, when it has one; vocab_size or
  // max_seq_len too small) or "chunk".
  Status ValidationLoss(Model* model, size_t chunk, float* loss) const;

 private:
  void Window(size_t start, size_t row, Batch* out) const;
  TextDataConfig config_;
  std::vector<uint16_t> tokens_;      // < kMaxCharacters + 1 <= 65536
  std::vector<uint32_t> vocabulary_;  // the tokenizer's
  size_t split_ = 0;                  // tokens [0, split_) train, [split_, end) validate
  std::vector<size_t> validation_starts_;
  Rng rng_{0};
};

}  // namespace model
}  // namespace attnkit

#endif  // ATTNKIT_MODEL_TEXT_H_
