// The language model's text (include/attnkit/text.h).
//  - UTF-8: every kind of invalid input refused, naming the parameter.
//  - Tokenizer: the vocabulary's order, round trips on accents, CJK and emoji,
//    unknown characters, every bad text and bad vocabulary.
//  - TextDataset: the 9/10 split, windows inside their part and shifted by
//    one as targets, deterministic per seed, the validation windows and loss.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "attnkit/model.h"
#include "attnkit/text.h"
#include "tests/test_util.h"

namespace {

using namespace attnkit;
using namespace attnkit::model;

// Checks that `s` is an error naming `parameter` whose detail contains `part`.
void RequireError(const Status& s, const std::string& parameter, const std::string& part) {
  INFO(s.ToString());
  REQUIRE_FALSE(s.ok());
  CHECK(s.parameter() == parameter);
  CHECK(s.detail().find(part) != std::string::npos);
}

std::string Repeat(const std::string& s, size_t times) {
  std::string out;
  for (size_t i = 0; i < times; ++i) out += s;
  return out;
}

// A text of `length` pseudo-random lowercase letters (a fixed LCG): a window
// of 9 letters almost surely occurs once.
std::string Letters(size_t length) {
  std::string out;
  uint32_t state = 12345;
  for (size_t i = 0; i < length; ++i) {
    state = state * 1664525u + 1013904223u;
    out.push_back(char('a' + (state >> 16) % 26));
  }
  return out;
}

TEST_CASE("text: UTF-8 round trips every length of code point", "[text]") {
  const std::vector<uint32_t> code_points = {0x0,    0x41,   0x7F,    0x80,    0xE9,
                                             0x7FF,  0x800,  0x4E2D,  0xD7FF,  0xE000,
                                             0xFFFD, 0xFFFF, 0x10000, 0x1F40B, 0x10FFFF};
  std::string utf8;
  for (uint32_t c : code_points) AppendUtf8(c, &utf8);
  std::vector<uint32_t> decoded;
  REQUIRE_OK(DecodeUtf8(utf8.data(), utf8.size(), "text", &decoded));
  CHECK(decoded == code_points);
}

TEST_CASE("text: invalid UTF-8 is refused at its first bad byte", "[text]") {
  const struct {
    std::string bytes;
    std::string part;
  } cases[] = {
      {"ab\x80", "the byte 128 at byte 2"},             // a lone continuation byte
      {"\xFF", "the byte 255 at byte 0"},               // never in UTF-8
      {"a\xC3", "cut short at byte 1 (the text ends"},  // truncated 2-byte form
      {"\xE4\xB8"
       "a",
       "byte 2 does not continue it"},                     // truncated 3-byte form
      {"\xC0\xAF", "an overlong form at byte 0"},          // overlong '/'
      {"\xE0\x80\xAF", "an overlong form at byte 0"},      // overlong '/', 3 bytes
      {"\xF0\x82\x82\xAC", "an overlong form at byte 0"},  // overlong U+20AC
      {"x\xED\xA0\x80", "U+D800 at byte 1"},               // a surrogate
      {"\xF4\x90\x80\x80", "U+110000 at byte 0"},          // above U+10FFFF
  };
  for (const auto& c : cases) {
    INFO(c.part);
    std::vector<uint32_t> out;
    RequireError(DecodeUtf8(c.bytes.data(), c.bytes.size(), "text", &out), "text", c.part);
    Tokenizer tokenizer;
    RequireError(tokenizer.Build("ok " + c.bytes), "text", "expected UTF-8");
  }
}

TEST_CASE("text: the vocabulary is U+FFFD, then the distinct code points ascending", "[text]") {
  Tokenizer tokenizer;
  REQUIRE_OK(tokenizer.Build("baca\xEF\xBF\xBD"));  // U+FFFD is the unknown token's own
  CHECK(tokenizer.vocabulary() == std::vector<uint32_t>{0xFFFD, 'a', 'b', 'c'});
  std::vector<int32_t> tokens;
  REQUIRE_OK(tokenizer.Encode("cab\xEF\xBF\xBD", &tokens));
  CHECK(tokens == std::vector<int32_t>{3, 1, 2, kUnknownToken});
}

TEST_CASE("text: encode and decode round trip accents, CJK and emoji", "[text]") {
  // é (2 bytes), 中文 (3 bytes each), 🐋 and 👩‍🚀 (4-byte emoji with a joiner), \n.
  const std::string text =
      "Call me Ishmael. Café, naïve, Ahab!\n中文的鲸鱼 \xF0\x9F\x90\x8B "
      "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x9A\x80 end";
  Tokenizer tokenizer;
  REQUIRE_OK(tokenizer.Build(text));
  std::vector<uint32_t> code_points;
  REQUIRE_OK(DecodeUtf8(text.data(), text.size(), "text", &code_points));
  std::vector<int32_t> tokens;
  REQUIRE_OK(tokenizer.Encode(text, &tokens));
  REQUIRE(tokens.size() == code_points.size());  // one token per code point
  for (int32_t t : tokens) CHECK(t != kUnknownToken);
  std::string decoded;
  REQUIRE_OK(tokenizer.Decode(tokens.data(), tokens.size(), &decoded));
  CHECK(decoded == text);
  // The vocabulary has every distinct code point once, and the unknown token.
  CHECK(tokenizer.vocab_size() ==
        std::set<uint32_t>(code_points.begin(), code_points.end()).size() + 1);

  // The model's vocabulary gives the same tokenizer back.
  Tokenizer copy;
  REQUIRE_OK(copy.FromVocabulary(tokenizer.vocabulary()));
  std::vector<int32_t> again;
  REQUIRE_OK(copy.Encode(text, &again));
  CHECK(again == tokens);
}

TEST_CASE("text: characters outside the vocabulary encode as the unknown token", "[text]") {
  Tokenizer tokenizer;
  REQUIRE_OK(tokenizer.Build("abc"));
  std::vector<int32_t> tokens;
  REQUIRE_OK(
      tokenizer.Encode("a\xC3\xA9z\xF0\x9F\x90\x8B"
                       "c",
                       &tokens));  // a é z 🐋 c
  CHECK(tokens == std::vector<int32_t>{1, kUnknownToken, kUnknownToken, kUnknownToken, 3});
  std::string decoded;
  REQUIRE_OK(tokenizer.Decode(tokens.data(), tokens.size(), &decoded));
  CHECK(decoded ==
        "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
        "c");
  // An empty text encodes to no tokens.
  REQUIRE_OK(tokenizer.Encode("", &tokens));
  CHECK(tokens.empty());
}

TEST_CASE("text: every bad text and bad token is named", "[text]") {
  Tokenizer tokenizer;
  RequireError(tokenizer.Build(""), "text", "at least one character");
  RequireError(tokenizer.Build("\xEF\xBF\xBD\xEF\xBF\xBD"), "text", "other than U+FFFD");
  RequireError(tokenizer.Build(std::string(kMaxTextBytes + 1, 'a')), "text",
               "at most 8388608 bytes of UTF-8, got 8388609");
  // kMaxCharacters + 1 distinct characters: U+0100 .. (2 bytes each).
  std::string many;
  for (uint32_t c = 0x100; c < 0x100 + kMaxCharacters + 1; ++c) AppendUtf8(c, &many);
  RequireError(tokenizer.Build(many), "text", "at most 512 distinct characters, got 513");
  // Exactly kMaxCharacters is fine.
  std::string most;
  for (uint32_t c = 0x100; c < 0x100 + kMaxCharacters; ++c) AppendUtf8(c, &most);
  REQUIRE_OK(tokenizer.Build(most));
  CHECK(tokenizer.vocab_size() == kMaxCharacters + 1);

  REQUIRE_OK(tokenizer.Build("ab"));
  std::string text;
  const int32_t bad[] = {1, 3};
  RequireError(tokenizer.Decode(bad, 2, &text), "tokens", "0 .. 2, got 3 at entry 1");
  const int32_t negative[] = {-1};
  RequireError(tokenizer.Decode(negative, 1, &text), "tokens", "got -1 at entry 0");
  std::vector<int32_t> tokens;
  RequireError(tokenizer.Encode("a\xC3", &tokens, "prompt"), "prompt", "expected UTF-8");

  Tokenizer empty;
  RequireError(empty.Encode("a", &tokens), "tokenizer", "not built");
}

TEST_CASE("text: a bad vocabulary is refused", "[text]") {
  Tokenizer t;
  RequireError(t.FromVocabulary({}), "vocabulary", "expected 2 .. 513 code points");
  RequireError(t.FromVocabulary({0xFFFD}), "vocabulary", "got 1");
  RequireError(t.FromVocabulary({'a', 'b'}), "vocabulary", "U+FFFD (the unknown token) first");
  RequireError(t.FromVocabulary({0xFFFD, 'b', 'a'}), "vocabulary", "got U+0061 at token 2");
  RequireError(t.FromVocabulary({0xFFFD, 'a', 'a'}), "vocabulary", "at token 2");
  RequireError(t.FromVocabulary({0xFFFD, 0xD800}), "vocabulary", "got U+D800 at token 1");
  RequireError(t.FromVocabulary({0xFFFD, 0x110000}), "vocabulary", "U+110000");
  RequireError(t.FromVocabulary({0xFFFD, 0xFFFD}), "vocabulary", "U+FFFD at token 1");
  RequireError(t.FromVocabulary({'a'}, "weights"), "weights", "got 1");
  REQUIRE_OK(t.FromVocabulary({0xFFFD, 'a', 0x1F40B}));
}

TEST_CASE("text: the dataset's split, windows and targets", "[text]") {
  const size_t T = 8;
  const std::string text = Letters(1000);
  Tokenizer tokenizer;
  REQUIRE_OK(tokenizer.Build(text));
  std::vector<int32_t> all;
  REQUIRE_OK(tokenizer.Encode(text, &all));
  TextDataset data;
  TextDataConfig config;
  config.seq_len = T;
  config.seed = 7;
  config.validation_windows = 5;
  REQUIRE_OK(data.Init(tokenizer, text, config));
  // The last tenth is validation.
  CHECK(data.train_tokens() == 900);
  CHECK(data.validation_tokens() == 100);

  // Every training window lies in the first 900 tokens; targets are the
  // inputs shifted by one.
  Batch batch;
  std::set<size_t> starts;
  for (int i = 0; i < 50; ++i) {
    REQUIRE_OK(data.Next(16, &batch));
    REQUIRE(batch.batch == 16);
    REQUIRE(batch.seq_len == T);
    REQUIRE(batch.tokens.size() == 16 * T);
    for (size_t b = 0; b < 16; ++b) {
      // The window's start in the text.
      size_t start = 0;
      bool found = false;
      for (size_t s = 0; s + T < 900 && !found; ++s) {
        found = std::equal(all.begin() + s, all.begin() + s + T, batch.tokens.begin() + b * T) &&
                all[s + T] == batch.targets[b * T + T - 1];
        if (found) start = s;
      }
      REQUIRE(found);
      starts.insert(start);
      for (size_t t = 0; t < T; ++t) CHECK(batch.targets[b * T + t] == all[start + t + 1]);
    }
  }
  CHECK(starts.size() > 400);  // 800 windows drawn from 892 starts: most seen

  // Validation windows: evenly spaced in the last 100 tokens, non-overlapping.
  REQUIRE(data.validation_window_count() == 5);
  REQUIRE_OK(data.ValidationBatch(0, 5, &batch));
  for (size_t b = 0; b < 5; ++b) {
    const size_t start = 900 + b * ((100 - (T + 1)) / 4);
    for (size_t t = 0; t < T; ++t) {
      CHECK(batch.tokens[b * T + t] == all[start + t]);
      CHECK(batch.targets[b * T + t] == all[start + t + 1]);
    }
  }
  CHECK(900 + 4 * ((100 - (T + 1)) / 4) + T < 1000);
  RequireError(data.ValidationBatch(3, 3, &batch), "count", "within 0 .. 5, got 3 .. 6");
  RequireError(data.Next(0, &batch), "batch", "got 0");

  // More windows asked than fit: as many as fit without overlap (100 / 9).
  config.validation_windows = 1000;
  REQUIRE_OK(data.Init(tokenizer, text, config));
  CHECK(data.validation_window_count() == 11);
}

TEST_CASE("text: the windows are the same for a seed, different for another", "[text]") {
  const std::string text = Letters(2000);
  Tokenizer tokenizer;
  REQUIRE_OK(tokenizer.Build(text));
  auto draw = [&](uint64_t seed) {
    TextDataset data;
    TextDataConfig config;
    config.seq_len = 16;
    config.seed = seed;
    REQUIRE_OK(data.Init(tokenizer, text, config));
    std::vector<int32_t> tokens;
    Batch batch;
    for (int i = 0; i < 3; ++i) {
      REQUIRE_OK(data.Next(4, &batch));
      tokens.insert(tokens.end(), batch.tokens.begin(), batch.tokens.end());
    }
    return tokens;
  };
  CHECK(draw(1) == draw(1));
  CHECK(draw(1) != draw(2));
}

TEST_CASE("text: every bad dataset is named", "[text]") {
  Tokenizer tokenizer;
  REQUIRE_OK(tokenizer.Build(Letters(100)));
  TextDataset data;
  TextDataConfig config;
  config.seq_len = 9;
  // 10 windows of 10 = 100 characters: 99 is one too few.
  RequireError(data.Init(tokenizer, Letters(99), config), "text",
               "at least 100 characters (10 windows of seq_len + 1");
  REQUIRE_OK(data.Init(tokenizer, Letters(100), config));
  CHECK(data.validation_window_count() == 1);
  RequireError(data.Init(tokenizer, "abc\xC3", config), "text", "expected UTF-8");
  config.seq_len = 0;
  RequireError(data.Init(tokenizer, Letters(100), config), "seq_len", "got 0");
  config.seq_len = 9;
  config.validation_windows = 0;
  RequireError(data.Init(tokenizer, Letters(100), config), "validation_windows", "got 0");
  Tokenizer unbuilt;
  config.validation_windows = 4;
  RequireError(data.Init(unbuilt, Letters(100), config), "tokenizer", "not built");
  Batch batch;
  TextDataset uninitialised;
  RequireError(uninitialised.Next(1, &batch), "dataset", "not initialised");
}

TEST_CASE("text: the validation loss is the mean over every window, in any chunks", "[text]") {
  const std::string text = Letters(3000);
  Tokenizer tokenizer;
  REQUIRE_OK(tokenizer.Build(text));
  TextDataset data;
  TextDataConfig config;
  config.seq_len = 12;
  config.validation_windows = 10;
  REQUIRE_OK(data.Init(tokenizer, text, config));
  Model model;
  ModelConfig mc;
  mc.vocab_size = tokenizer.vocab_size();
  mc.max_seq_len = 12;
  mc.d_model = 16;
  mc.num_heads = 2;
  REQUIRE_OK(model.Init(mc, 3));
  // All ten windows as one batch, against chunks of 3 (3 + 3 + 3 + 1).
  Batch all;
  REQUIRE_OK(data.ValidationBatch(0, 10, &all));
  Metrics metrics;
  REQUIRE_OK(model.Forward(all, &metrics));
  float chunked = 0;
  REQUIRE_OK(data.ValidationLoss(&model, 3, &chunked));
  CHECK(chunked == Approx(metrics.loss).epsilon(1e-5));
  RequireError(data.ValidationLoss(&model, 0, &chunked), "chunk", "got 0");
  Model small;
  mc.max_seq_len = 8;
  REQUIRE_OK(small.Init(mc, 3));
  RequireError(data.ValidationLoss(&small, 4, &chunked), "model", "max_seq_len >= 12");
}

}  // namespace
