// attnkit: Embind bindings of the language model's text (include/attnkit/text.h)
// and generation (include/attnkit/generate.h), beside model_bindings.cc. Texts come
// in as UTF-8 bytes the JS layer wrote into wasm memory; results go out as
// [address, count] words the JS layer copies. Tokenizers are stateless here
// (their vocabulary comes with every call); datasets and samplers are handles.
// Every call returns a status code (0 = ok) or a handle (0 on error), as
// model_bindings.cc's. Nothing here throws.
#include <emscripten/bind.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "attnkit/generate.h"
#include "attnkit/model.h"
#include "attnkit/text.h"
#include "functions.h"
#include "options.h"

namespace attnkit {
namespace bindings {

// Records a call's Status for lastError*() (bindings.cc); returns its code.
int Report(const Status& s);
// The model of a model handle (model_bindings.cc).
model::Model* ModelOf(uintptr_t handle);

namespace {

using model::Batch;
using model::GeneratedToken;
using model::Generator;
using model::TextDataConfig;
using model::TextDataset;
using model::Tokenizer;

uint32_t* Words(uintptr_t address) { return reinterpret_cast<uint32_t*>(address); }
uint32_t Address(const void* p) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p)); }
std::string Text(uint32_t address, uint32_t size) {
  return std::string(reinterpret_cast<const char*>(uintptr_t(address)), size);
}
std::vector<uint32_t> CodePoints(uint32_t address, uint32_t count) {
  const uint32_t* p = reinterpret_cast<const uint32_t*>(uintptr_t(address));
  return std::vector<uint32_t>(p, p + count);
}

// What the stateless tokenizer calls return, held until textClear.
struct TextResults {
  std::vector<uint32_t> vocabulary;
  std::vector<int32_t> tokens;
  std::string text;
};
TextResults& Results() {
  static TextResults results;
  return results;
}

// [text address, size] -> status; writes [vocabulary address, count] after them.
int TokenizerBuild(uintptr_t args) {
  uint32_t* w = Words(args);
  Tokenizer t;
  if (Report(t.Build(Text(w[0], w[1]))) != 0) return 1;
  Results().vocabulary = t.vocabulary();
  w[2] = Address(Results().vocabulary.data());
  w[3] = Results().vocabulary.size();
  return 0;
}
// [vocabulary address, count, text address, size] -> status; writes [tokens
// address, count] after them.
int TokenizerEncode(uintptr_t args) {
  uint32_t* w = Words(args);
  Tokenizer t;
  if (Report(t.FromVocabulary(CodePoints(w[0], w[1]))) != 0) return 1;
  if (Report(t.Encode(Text(w[2], w[3]), &Results().tokens)) != 0) return 1;
  w[4] = Address(Results().tokens.data());
  w[5] = Results().tokens.size();
  return 0;
}
// [vocabulary address, count, tokens address, count] -> status; writes [UTF-8
// address, size] after them.
int TokenizerDecode(uintptr_t args) {
  uint32_t* w = Words(args);
  Tokenizer t;
  if (Report(t.FromVocabulary(CodePoints(w[0], w[1]))) != 0) return 1;
  const int32_t* tokens = reinterpret_cast<const int32_t*>(uintptr_t(w[2]));
  if (Report(t.Decode(tokens, w[3], &Results().text)) != 0) return 1;
  w[4] = Address(Results().text.data());
  w[5] = Results().text.size();
  return 0;
}
// Frees what the tokenizer calls held (a book's tokens are megabytes).
void TextClear() { Results() = TextResults(); }

struct DatasetHandle {
  Tokenizer tokenizer;
  TextDataset data;
  Batch batch;           // the last next / validationBatch
  uint32_t unknown = 0;  // characters of the text outside a given vocabulary
};
DatasetHandle* AsDataset(uintptr_t h) { return reinterpret_cast<DatasetHandle*>(h); }

// [text address, size, vocabulary address, count (0: the text's own), seq_len,
//  seed lo, seed hi, validation_windows]; 0 on error.
uintptr_t DatasetCreate(uintptr_t args) {
  const uint32_t* w = Words(args);
  auto h = std::make_unique<DatasetHandle>();
  const std::string text = Text(w[0], w[1]);
  if (w[3] ? Report(h->tokenizer.FromVocabulary(CodePoints(w[2], w[3]))) != 0
           : Report(h->tokenizer.Build(text)) != 0)
    return 0;
  TextDataConfig c;
  c.seq_len = w[4];
  c.seed = uint64_t(w[6]) << 32 | w[5];
  c.validation_windows = w[7];
  if (Report(h->data.Init(h->tokenizer, text, c)) != 0) return 0;
  if (w[3]) {
    // The text's characters the given vocabulary lacks (they became token 0);
    // U+FFFD itself is the unknown token's own character.
    std::vector<uint32_t> code_points;
    if (Report(model::DecodeUtf8(text.data(), text.size(), "text", &code_points)) != 0) return 0;
    const std::vector<uint32_t>& v = h->tokenizer.vocabulary();
    for (uint32_t c : code_points)
      h->unknown += c != v[0] && !std::binary_search(v.begin() + 1, v.end(), c);
  }
  return reinterpret_cast<uintptr_t>(h.release());
}
void DatasetFree(uintptr_t h) { delete AsDataset(h); }
// Writes [vocabulary address, count, train tokens, validation tokens,
// validation windows, characters outside a given vocabulary].
void DatasetInfo(uintptr_t h, uintptr_t out) {
  const DatasetHandle* d = AsDataset(h);
  uint32_t* o = Words(out);
  o[0] = Address(d->tokenizer.vocabulary().data());
  o[1] = d->tokenizer.vocab_size();
  o[2] = d->data.train_tokens();
  o[3] = d->data.validation_tokens();
  o[4] = d->data.validation_window_count();
  o[5] = d->unknown;
}
// Writes [tokens address, targets address] of the batch (held until the next call).
int DatasetNext(uintptr_t h, uint32_t batch, uintptr_t out) {
  DatasetHandle* d = AsDataset(h);
  if (Report(d->data.Next(batch, &d->batch)) != 0) return 1;
  Words(out)[0] = Address(d->batch.tokens.data());
  Words(out)[1] = Address(d->batch.targets.data());
  return 0;
}
int DatasetValidationBatch(uintptr_t h, uint32_t first, uint32_t count, uintptr_t out) {
  DatasetHandle* d = AsDataset(h);
  if (Report(d->data.ValidationBatch(first, count, &d->batch)) != 0) return 1;
  Words(out)[0] = Address(d->batch.tokens.data());
  Words(out)[1] = Address(d->batch.targets.data());
  return 0;
}
// Writes the mean validation loss (f32).
int DatasetValidationLoss(uintptr_t h, uintptr_t model, uint32_t chunk, uintptr_t out) {
  float loss = 0;
  if (Report(AsDataset(h)->data.ValidationLoss(ModelOf(model), chunk, &loss)) != 0) return 1;
  std::memcpy(Words(out), &loss, sizeof(loss));
  return 0;
}

struct SamplerHandle {
  Tokenizer tokenizer;  // the model's characters; unused with a JS tokenizer
  bool characters = true;
  Generator generator;
  GeneratedToken token;  // the last next
  std::string text;      // its character as UTF-8 (empty with a JS tokenizer)
};
SamplerHandle* AsSampler(uintptr_t h) { return reinterpret_cast<SamplerHandle*>(h); }

// [prompt address, size, seed lo, seed hi]; the model's vocabulary encodes
// the prompt. 0 on error.
uintptr_t SamplerCreate(uintptr_t model, uintptr_t args) {
  const uint32_t* w = Words(args);
  const model::Model& m = *ModelOf(model);
  auto h = std::make_unique<SamplerHandle>();
  if (Report(h->tokenizer.FromVocabulary(m.vocabulary(), "model")) != 0) return 0;
  std::vector<int32_t> prompt;
  if (Report(h->tokenizer.Encode(Text(w[0], w[1]), &prompt, "prompt")) != 0) return 0;
  if (Report(h->generator.Start(m, prompt, uint64_t(w[3]) << 32 | w[2])) != 0) return 0;
  return reinterpret_cast<uintptr_t>(h.release());
}
// [tokens address, count, seed lo, seed hi]: a prompt the JS layer's own
// tokenizer encoded (a model without a character vocabulary: GPT-2's BPE),
// whose pieces the JS layer also shows. 0 on error.
uintptr_t SamplerCreateTokens(uintptr_t model, uintptr_t args) {
  const uint32_t* w = Words(args);
  const int32_t* tokens = reinterpret_cast<const int32_t*>(uintptr_t(w[0]));
  auto h = std::make_unique<SamplerHandle>();
  h->characters = false;
  const std::vector<int32_t> prompt(tokens, tokens + w[1]);
  if (Report(h->generator.Start(*ModelOf(model), prompt, uint64_t(w[3]) << 32 | w[2])) != 0)
    return 0;
  return reinterpret_cast<uintptr_t>(h.release());
}
void SamplerFree(uintptr_t h) { delete AsSampler(h); }
// The sampling options, one word each, in the order of SAMPLING_OPTIONS in
// src/js/options.js (tests/js/option-layout.test.js compares them).
constexpr WordOption<model::SampleOptions> kSamplingOptions[] = {
    {"temperature", &model::SampleOptions::temperature, nullptr},
    {"top_k", nullptr, &model::SampleOptions::top_k},
};

// The options (kSamplingOptions) -> status; writes after them [token, UTF-8
// address, size, logits address, count, layers, then per layer the weights'
// address, rows (heads), cols (cache length)].
int SamplerNext(uintptr_t h, uintptr_t args) {
  SamplerHandle* s = AsSampler(h);
  uint32_t* w = Words(args);
  const model::SampleOptions options = ReadWordOptions(kSamplingOptions, w);
  if (Report(s->generator.Next(options, &s->token)) != 0) return 1;
  if (s->characters && Report(s->tokenizer.Decode(&s->token.token, 1, &s->text)) != 0) return 1;
  uint32_t* o = w + std::size(kSamplingOptions);
  o[0] = s->token.token;
  o[1] = Address(s->text.data());
  o[2] = s->text.size();
  o[3] = Address(s->token.logits.data());
  o[4] = s->token.logits.size();
  o[5] = s->token.weights.size();
  for (size_t l = 0; l < s->token.weights.size(); ++l) {
    const Matrix& m = s->token.weights[l];
    o[6 + 3 * l] = Address(m.data());
    o[7 + 3 * l] = m.rows();
    o[8 + 3 * l] = m.cols();
  }
  return 0;
}

}  // namespace

void RegisterSamplingOptions() {
  RegisterOptions("sampling", WordOptionNames(kSamplingOptions),
                  WordOptionDefaults(kSamplingOptions));
}

}  // namespace bindings
}  // namespace attnkit

EMSCRIPTEN_BINDINGS(attnkit_text) {
  using namespace attnkit::bindings;
  ATTNKIT_FUNCTIONS(TokenizerBuild, TokenizerEncode, TokenizerDecode, TextClear, DatasetCreate,
                    DatasetFree, DatasetInfo, DatasetNext, DatasetValidationBatch,
                    DatasetValidationLoss, SamplerCreate, SamplerCreateTokens, SamplerFree,
                    SamplerNext);
  RegisterSamplingOptions();
}
