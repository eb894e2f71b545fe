// hello_onnx: a small transformer exported as an ONNX file through attnkit's
// ONNX library (a build of attnkit with ONNX: attnkit::onnx).
//   hello_onnx OUT.onnx
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "attnkit/model.h"
#include "attnkit/onnx.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hello_onnx OUT.onnx\n");
    return 2;
  }
  attnkit::model::ModelConfig config;  // one attention layer
  config.vocab_size = 4;
  config.max_seq_len = 3;
  config.d_model = 8;
  attnkit::model::Model model;
  attnkit::Status status = model.Init(config, /*seed=*/1);
  std::string bytes;
  attnkit::model::OnnxOptions options;  // opset 23, no cache
  if (status.ok()) status = attnkit::model::ExportOnnx(model, options, &bytes);
  if (status.ok()) status = attnkit::model::ExportOnnxFile(model, options, argv[1]);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  std::ifstream file(argv[1], std::ios::binary);
  const std::string written((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
  std::printf("onnx: %zu bytes, the file %s\n", bytes.size(),
              written == bytes ? "the same" : "different");
  return written == bytes ? 0 : 1;
}
