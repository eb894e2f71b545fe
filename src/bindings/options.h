// attnkit bindings: the options of a call read from its argument words by a
// table, one entry per option in the order of the JS schema (src/js/options.js).
// Each table's word names and default words are exported to JS
// (optionLayout, optionDefaults) so that tests/js/option-layout.test.js
// fails when the two sides disagree.
#ifndef ATTNKIT_BINDINGS_OPTIONS_H_
#define ATTNKIT_BINDINGS_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace attnkit {
namespace bindings {

// An option of one word: its name (the C++ field's) and the field of Config
// it sets, a float (the word holds its bits) or a count.
template <typename Config>
struct WordOption {
  const char* word;
  float Config::*real;
  size_t Config::*count;
};

// Config from one word per option of `table`, at w.
template <typename Config, size_t N>
Config ReadWordOptions(const WordOption<Config> (&table)[N], const uint32_t* w) {
  Config c;
  for (const WordOption<Config>& o : table) {
    const uint32_t word = *w++;
    if (o.real) {
      std::memcpy(&(c.*o.real), &word, sizeof(float));
    } else {
      c.*o.count = word;
    }
  }
  return c;
}

// The words' names of `table`, comma-separated.
template <typename Config, size_t N>
std::string WordOptionNames(const WordOption<Config> (&table)[N]) {
  std::string names;
  for (const WordOption<Config>& o : table) {
    if (!names.empty()) names += ',';
    names += o.word;
  }
  return names;
}

// The words of a default Config (its struct's defaults), comma-separated
// decimal words (a float as its bits).
template <typename Config, size_t N>
std::string WordOptionDefaults(const WordOption<Config> (&table)[N]) {
  const Config c;
  std::string words;
  for (const WordOption<Config>& o : table) {
    uint32_t word = 0;
    if (o.real) {
      std::memcpy(&word, &(c.*o.real), sizeof(float));
    } else {
      word = static_cast<uint32_t>(c.*o.count);
    }
    if (!words.empty()) words += ',';
    words += std::to_string(word);
  }
  return words;
}

// Makes a table's layout and defaults known to optionLayout(kind) and
// optionDefaults(kind) (bindings.cc); the model bindings add theirs.
void RegisterOptions(const std::string& kind, std::string layout, std::string defaults);

}  // namespace bindings
}  // namespace attnkit

#endif  // ATTNKIT_BINDINGS_OPTIONS_H_
