// onnx_export: a model as an ONNX file through the C++ API (attnkit/onnx.h).
//   onnx_export MODEL OUT.onnx [--opset N] [--cache] [--tokenizer NAME]
//   onnx_export --limits          the export's limits as JSON (onnx.h's constants)
//   onnx_export --check-size N    whether a model of N parameters fits one file
// MODEL is the package's weights file (model.exportWeights()) or a Hugging
// Face GPT-2 checkpoint: a folder holding model.safetensors (and config.json)
// or the .safetensors file, whose tokenizer the file names "gpt2" unless
// --tokenizer says otherwise. An error prints its Status's message
// ("options.opset: expected ...") on stderr and exits with 1.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "attnkit/checkpoint_file.h"
#include "attnkit/model.h"
#include "attnkit/onnx.h"

namespace {

int Fail(const attnkit::Status& s) {
  std::fprintf(stderr, "%s\n", s.message().c_str());
  return 1;
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "onnx_export: %s\nusage: onnx_export MODEL OUT.onnx [--opset N] [--cache] "
               "[--tokenizer NAME] | --limits | --check-size N\n",
               why);
  return 2;
}

// `text` as an integer (an optional '-', then digits); false for anything else.
bool ParseInteger(const char* text, long long* value) {
  const char* digits = *text == '-' ? text + 1 : text;
  if (*digits < '0' || *digits > '9') return false;
  errno = 0;
  char* end = nullptr;
  *value = std::strtoll(text, &end, 10);
  return errno == 0 && *end == '\0';
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The model at `path`: a weights file, or a GPT-2 checkpoint (a folder or a .safetensors file).
attnkit::Status Open(const std::string& path, attnkit::model::Model* model, bool* checkpoint) {
  using namespace attnkit::model;
  std::error_code error;
  *checkpoint = EndsWith(path, ".safetensors") || std::filesystem::is_directory(path, error);
  if (*checkpoint) return OpenCheckpoint(path, CheckpointOptions(), model);
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return attnkit::Status(
        attnkit::ErrorCode::kInvalidArgument, "MODEL",
        "expected a weights file or a checkpoint, got " + path + " (" + std::strerror(errno) + ")");
  }
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                                   std::istreambuf_iterator<char>());
  return ImportWeights(bytes.data(), bytes.size(), model);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attnkit::model;
  if (argc == 2 && std::strcmp(argv[1], "--limits") == 0) {
    std::printf(
        "{\"minOpset\":%d,\"maxOpset\":%d,\"defaultOpset\":%d,\"geluOpset\":%d,"
        "\"attentionOpset\":%d,\"maxMessageBytes\":%llu,\"graphBytes\":%llu}\n",
        kOnnxMinOpset, kOnnxMaxOpset, kOnnxDefaultOpset, kOnnxGeluOpset, kOnnxAttentionOpset,
        static_cast<unsigned long long>(kOnnxMaxMessageBytes),
        static_cast<unsigned long long>(kOnnxGraphBytes));
    return 0;
  }
  long long n = 0;
  if (argc == 3 && std::strcmp(argv[1], "--check-size") == 0) {
    if (!ParseInteger(argv[2], &n) || n < 0) return Usage("expected a parameter count");
    const attnkit::Status s = CheckOnnxSize(static_cast<size_t>(n));
    return s.ok() ? 0 : Fail(s);
  }
  if (argc < 3) return Usage("expected a model and an output file");
  OnnxOptions options;
  bool tokenizer_given = false;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--opset") == 0 && i + 1 < argc && ParseInteger(argv[i + 1], &n) &&
        n >= -1000 && n <= 1000) {
      options.opset = static_cast<int>(n);
      ++i;
    } else if (std::strcmp(argv[i], "--cache") == 0) {
      options.cache = true;
    } else if (std::strcmp(argv[i], "--tokenizer") == 0 && i + 1 < argc) {
      options.tokenizer = argv[++i];
      tokenizer_given = true;
    } else {
      return Usage((std::string("unexpected argument ") + argv[i]).c_str());
    }
  }
  Model model;
  bool checkpoint = false;
  attnkit::Status s = Open(argv[1], &model, &checkpoint);
  if (!s.ok()) return Fail(s);
  // The package names a checkpoint's tokenizer GPT-2's BPE.
  if (checkpoint && !tokenizer_given) options.tokenizer = "gpt2";
  s = ExportOnnxFile(model, options, argv[2]);
  return s.ok() ? 0 : Fail(s);
}
