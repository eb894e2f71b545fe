// The failure path of the native benchmarks that a script drives as a child
// process, one JSON line per command (language.cc, gpt2.cc): a failure is one
// {"error": ...} line, then the program ends, so that the driver reports it.
#ifndef ATTNKIT_BENCH_NATIVE_SERVE_H_
#define ATTNKIT_BENCH_NATIVE_SERVE_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#include "attnkit/status.h"

namespace serve {

// Prints {"error": what} and ends the program.
[[noreturn]] inline void Fail(const std::string& what) {
  std::printf("{\"error\": \"%s\"}\n", what.c_str());
  std::fflush(stdout);
  std::exit(1);
}

// Fails with `step` and the status's text unless s is ok.
inline void Check(const attnkit::Status& s, const char* step) {
  if (!s.ok()) Fail(std::string(step) + ": " + s.ToString());
}

}  // namespace serve

#endif  // ATTNKIT_BENCH_NATIVE_SERVE_H_
