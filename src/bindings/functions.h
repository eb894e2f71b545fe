// attnkit: registers Embind functions under the JS names the bindings' rule
// gives: the C++ name with its first letter in lower case (ModelCreate ->
// modelCreate), so that a call's name is written once.
#ifndef ATTNKIT_BINDINGS_FUNCTIONS_H_
#define ATTNKIT_BINDINGS_FUNCTIONS_H_

#include <emscripten/bind.h>

#include <cctype>
#include <string>
#include <vector>

namespace attnkit {
namespace bindings {

// Registers functions[i] under the i-th of `names` (their C++ names,
// comma-separated, as ATTNKIT_FUNCTIONS spells them) with its first letter
// in lower case.
template <typename... F>
void RegisterFunctions(const char* names, F... functions) {
  std::vector<std::string> js(1);
  for (const char* c = names; *c != '\0'; ++c) {
    if (*c == ',') {
      js.emplace_back();
    } else if (!std::isspace(static_cast<unsigned char>(*c))) {
      js.back() += js.back().empty() ? static_cast<char>(std::tolower(*c)) : *c;
    }
  }
  size_t i = 0;
  (emscripten::function(js[i++].c_str(), functions), ...);
}

}  // namespace bindings
}  // namespace attnkit

// ATTNKIT_FUNCTIONS(ModelCreate, ModelFree) registers modelCreate and modelFree.
#define ATTNKIT_FUNCTIONS(...) ::attnkit::bindings::RegisterFunctions(#__VA_ARGS__, __VA_ARGS__)

#endif  // ATTNKIT_BINDINGS_FUNCTIONS_H_
