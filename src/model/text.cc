#include "attnkit/text.h"
#include "src/core/validate.h"

#include <algorithm>
#include <string>

namespace attnkit {
namespace model {
namespace {

Status Invalid(const char* parameter, std::string detail) {
  return Status(ErrorCode::kInvalidArgument, parameter, std::move(detail));
}

std::string Hex(uint32_t c) {
  static const char digits[] = "0123456789ABCDEF";
  std::string s;
  do {
    s.insert(s.begin(), digits[c & 15]);
    c >>= 4;
  } while (c);
  while (s.size() < 4) s.insert(s.begin(), '0');
  return "U+" + s;
}

bool IsScalarValue(uint32_t c) { return c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF); }

Status CheckTextSize(size_t size) {
  if (size > kMaxTextBytes) {
    return Invalid("text", "expected at most " + std::to_string(kMaxTextBytes) +
                               " bytes of UTF-8, got " + std::to_string(size));
  }
  return Status::Ok();
}

}  // namespace

Status DecodeUtf8(const char* data, size_t size, const char* parameter,
                  std::vector<uint32_t>* code_points) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("parameter", parameter));
  if (size != 0) ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("data", data));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("code_points", code_points));
  const auto* s = reinterpret_cast<const unsigned char*>(data);
  code_points->clear();
  code_points->reserve(size);
  size_t i = 0;
  while (i < size) {
    const unsigned char lead = s[i];
    // The sequence's length and the smallest code point it may encode (longer
    // forms of smaller code points are overlong, RFC 3629).
    size_t length;
    uint32_t c, min;
    if (lead < 0x80) {
      length = 1, c = lead, min = 0;
    } else if ((lead & 0xE0) == 0xC0) {
      length = 2, c = lead & 0x1F, min = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3, c = lead & 0x0F, min = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4, c = lead & 0x07, min = 0x10000;
    } else {
      return Invalid(parameter, "expected UTF-8, got the byte " + std::to_string(lead) +
                                    " at byte " + std::to_string(i) +
                                    " (not the first byte of a character)");
    }
    if (size - i < length) {
      return Invalid(parameter, "expected UTF-8, got a character cut short at byte " +
                                    std::to_string(i) + " (the text ends inside it)");
    }
    for (size_t k = 1; k < length; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) {
        return Invalid(parameter, "expected UTF-8, got a character cut short at byte " +
                                      std::to_string(i) + " (byte " + std::to_string(i + k) +
                                      " does not continue it)");
      }
      c = c << 6 | (s[i + k] & 0x3F);
    }
    if (c < min || !IsScalarValue(c)) {
      return Invalid(parameter, "expected UTF-8, got " +
                                    std::string(c < min ? "an overlong form" : "the code ") +
                                    (c < min ? "" : Hex(c)) + " at byte " + std::to_string(i) +
                                    (c < min ? "" : " (not a Unicode scalar value)"));
    }
    code_points->push_back(c);
    i += length;
  }
  return Status::Ok();
}

void AppendUtf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(char(c));
  } else if (c < 0x800) {
    out->push_back(char(0xC0 | c >> 6));
    out->push_back(char(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(char(0xE0 | c >> 12));
    out->push_back(char(0x80 | (c >> 6 & 0x3F)));
    out->push_back(char(0x80 | (c & 0x3F)));
  } else {
    out->push_back(char(0xF0 | c >> 18));
    out->push_back(char(0x80 | (c >> 12 & 0x3F)));
    out->push_back(char(0x80 | (c >> 6 & 0x3F)));
    out->push_back(char(0x80 | (c & 0x3F)));
  }
}

Status Tokenizer::Build(const std::string& text) {
  ATTNKIT_RETURN_IF_ERROR(CheckTextSize(text.size()));
  if (text.empty()) return Invalid("text", "expected at least one character, got an empty text");
  std::vector<uint32_t> code_points;
  ATTNKIT_RETURN_IF_ERROR(DecodeUtf8(text.data(), text.size(), "text", &code_points));
  // Distinct code points: sort, unique; U+FFFD is the unknown token's own.
  std::sort(code_points.begin(), code_points.end());
  code_points.erase(std::unique(code_points.begin(), code_points.end()), code_points.end());
  code_points.erase(std::remove(code_points.begin(), code_points.end(), kUnknownCodePoint),
                    code_points.end());
  if (code_points.size() > kMaxCharacters) {
    return Invalid("text", "expected at most " + std::to_string(kMaxCharacters) +
                               " distinct characters, got " + std::to_string(code_points.size()));
  }
  if (code_points.empty()) {
    return Invalid("text", "expected a character other than U+FFFD (the unknown token's), got " +
                               std::string("only U+FFFD"));
  }
  vocabulary_.assign(1, kUnknownCodePoint);
  vocabulary_.insert(vocabulary_.end(), code_points.begin(), code_points.end());
  return Status::Ok();
}

Status Tokenizer::FromVocabulary(const std::vector<uint32_t>& vocabulary, const char* parameter) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("parameter", parameter));
  if (vocabulary.size() < 2 || vocabulary.size() > kMaxCharacters + 1) {
    return Invalid(parameter, "expected 2 .. " + std::to_string(kMaxCharacters + 1) +
                                  " code points (U+FFFD, then the characters), got " +
                                  std::to_string(vocabulary.size()));
  }
  if (vocabulary[0] != kUnknownCodePoint) {
    return Invalid(parameter,
                   "expected U+FFFD (the unknown token) first, got " + Hex(vocabulary[0]));
  }
  for (size_t i = 1; i < vocabulary.size(); ++i) {
    const uint32_t c = vocabulary[i];
    if (!IsScalarValue(c) || c == kUnknownCodePoint || (i > 1 && c <= vocabulary[i - 1])) {
      return Invalid(parameter,
                     "expected distinct ascending Unicode scalar values after U+FFFD, "
                     "got " +
                         Hex(c) + " at token " + std::to_string(i));
    }
  }
  vocabulary_ = vocabulary;
  return Status::Ok();
}

int32_t Tokenizer::TokenOf(uint32_t c) const {
  const auto it = std::lower_bound(vocabulary_.begin() + 1, vocabulary_.end(), c);
  return it != vocabulary_.end() && *it == c ? int32_t(it - vocabulary_.begin()) : kUnknownToken;
}

Status Tokenizer::Encode(const std::string& text, std::vector<int32_t>* tokens,
                         const char* parameter) const {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("tokens", tokens));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("parameter", parameter));
  if (vocabulary_.empty()) return Invalid("tokenizer", "not built");
  if (text.size() > kMaxTextBytes) {
    return Invalid(parameter, "expected at most " + std::to_string(kMaxTextBytes) +
                                  " bytes of UTF-8, got " + std::to_string(text.size()));
  }
  std::vector<uint32_t> code_points;
  ATTNKIT_RETURN_IF_ERROR(DecodeUtf8(text.data(), text.size(), parameter, &code_points));
  tokens->resize(code_points.size());
  for (size_t i = 0; i < code_points.size(); ++i) (*tokens)[i] = TokenOf(code_points[i]);
  return Status::Ok();
}

Status Tokenizer::Decode(const int32_t* tokens, size_t count, std::string* text) const {
  if (count != 0) ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("tokens", tokens));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("text", text));
  if (vocabulary_.empty()) return Invalid("tokenizer", "not built");
  text->clear();
  for (size_t i = 0; i < count; ++i) {
    if (tokens[i] < 0 || size_t(tokens[i]) >= vocabulary_.size()) {
      return Invalid("tokens", "expected token ids in 0 .. " +
                                   std::to_string(vocabulary_.size() - 1) + ", got " +
                                   std::to_string(tokens[i]) + " at entry " + std::to_string(i));
    }
    AppendUtf8(vocabulary_[tokens[i]], text);
  }
  return Status::Ok();
}

Status TextDataset::Init(const Tokenizer& tokenizer, const std::string& text,
                         const TextDataConfig& config) {
  if (tokenizer.vocab_size() == 0) return Invalid("tokenizer", "not built");
  if (config.seq_len < 1 || config.seq_len > 65536) {
    return Invalid("seq_len", "expected 1 .. 65536, got " + std::to_string(config.seq_len));
  }
  if (config.validation_windows < 1) {
    return Invalid("validation_windows", "expected at least 1, got 0");
  }
  std::vector<int32_t> tokens;
  ATTNKIT_RETURN_IF_ERROR(tokenizer.Encode(text, &tokens));
  // The validation part (the last tenth, rounded down) holds one window.
  const size_t window = config.seq_len + 1;
  const size_t min_length = kValidationDivisor * window;
  if (tokens.size() < min_length) {
    return Invalid("text", "expected at least " + std::to_string(min_length) + " characters (" +
                               std::to_string(kValidationDivisor) +
                               " windows of seq_len + 1, so that the last tenth, the validation "
                               "text, holds one), got " +
                               std::to_string(tokens.size()));
  }
  config_ = config;
  vocabulary_ = tokenizer.vocabulary();
  tokens_.assign(tokens.begin(), tokens.end());
  split_ = tokens_.size() - tokens_.size() / kValidationDivisor;
  // Validation windows: as many as asked (and as fit without overlap),
  // spread evenly from the validation part's first token.
  const size_t fit = (tokens_.size() - split_) / window;
  const size_t count = std::min(config.validation_windows, fit);
  const size_t stride = (tokens_.size() - split_ - window) / std::max<size_t>(count - 1, 1);
  validation_starts_.clear();
  for (size_t i = 0; i < count; ++i) validation_starts_.push_back(split_ + i * stride);
  rng_ = Rng(config.seed);
  return Status::Ok();
}

void TextDataset::Window(size_t start, size_t row, Batch* out) const {
  const size_t T = config_.seq_len;
  for (size_t t = 0; t < T; ++t) {
    out->tokens[row * T + t] = tokens_[start + t];
    out->targets[row * T + t] = tokens_[start + t + 1];
  }
}

Status TextDataset::Next(size_t batch, Batch* out) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("out", out));
  if (tokens_.empty()) return Invalid("dataset", "not initialised");
  if (batch < 1 || batch > 65536) {
    return Invalid("batch", "expected 1 .. 65536, got " + std::to_string(batch));
  }
  const size_t T = config_.seq_len;
  out->batch = batch;
  out->seq_len = T;
  out->tokens.resize(batch * T);
  out->targets.resize(batch * T);
  // A window of T + 1 tokens lies in the training part: starts 0 .. split - T - 1.
  const size_t starts = split_ - T;
  for (size_t b = 0; b < batch; ++b) Window(rng_.Below(starts), b, out);
  return Status::Ok();
}

Status TextDataset::ValidationBatch(size_t first, size_t count, Batch* out) const {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("out", out));
  if (first >= validation_starts_.size() || count < 1 ||
      count > validation_starts_.size() - first) {
    return Invalid("count", "expected validation windows within 0 .. " +
                                std::to_string(validation_starts_.size()) + ", got " +
                                std::to_string(first) + " .. " + std::to_string(first + count));
  }
  const size_t T = config_.seq_len;
  out->batch = count;
  out->seq_len = T;
  out->tokens.resize(count * T);
  out->targets.resize(count * T);
  for (size_t b = 0; b < count; ++b) Window(validation_starts_[first + b], b, out);
  return Status::Ok();
}

Status TextDataset::ValidationLoss(Model* model, size_t chunk, float* loss) const {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("model", model));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("loss", loss));
  if (tokens_.empty()) return Invalid("dataset", "not initialised");
  const ModelConfig& c = model->config();
  if (c.vocab_size < vocabulary_.size() || c.max_seq_len < config_.seq_len) {
    return Invalid("model", "expected vocab_size >= " + std::to_string(vocabulary_.size()) +
                                " and max_seq_len >= " + std::to_string(config_.seq_len) +
                                " (the dataset's), got " + std::to_string(c.vocab_size) + " and " +
                                std::to_string(c.max_seq_len));
  }
  if (!model->vocabulary().empty() && model->vocabulary() != vocabulary_) {
    return Invalid("model", "expected a model of the dataset's vocabulary (" +
                                std::to_string(vocabulary_.size()) + " characters), got one of " +
                                std::to_string(model->vocabulary().size()));
  }
  if (chunk < 1) return Invalid("chunk", "expected at least 1, got 0");
  // The mean over every scored position: each chunk's mean weighted by its count.
  double sum = 0;
  size_t scored = 0;
  Batch batch;
  for (size_t first = 0; first < validation_starts_.size(); first += chunk) {
    const size_t count = std::min(chunk, validation_starts_.size() - first);
    ATTNKIT_RETURN_IF_ERROR(ValidationBatch(first, count, &batch));
    Metrics metrics;
    ATTNKIT_RETURN_IF_ERROR(model->Forward(batch, &metrics));
    sum += double(metrics.loss) * double(metrics.scored);
    scored += metrics.scored;
  }
  *loss = float(sum / double(scored));
  return Status::Ok();
}

}  // namespace model
}  // namespace attnkit
