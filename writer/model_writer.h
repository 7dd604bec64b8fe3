// Encodes an ir::Graph as an ONNX ModelProto, validates it (onnx::checker + strict shape inference)
// and writes it. Initializer bytes are streamed from the tensors that own them, never copied into
// the proto; models over the protobuf limit go to external data in one side file.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "ir/onnx_graph.h"

namespace pt2onnx::writer {

struct WriteOptions {
  int opset = 14;
  std::map<std::string, int> customOpsets;    // domain -> version (unlisted used domains get 1)
  bool keepInitializersAsInputs = false;      // also list initializers in graph.input
  bool docStrings = true;                     // node doc_string = PyTorch source location
  std::string graphName = "main_graph";
  std::string producerVersion;
  // Models whose initializers total more than this many bytes use external data. Default: just
  // under protobuf's 2 GiB message limit.
  uint64_t externalDataThreshold = (uint64_t{1} << 31) - (uint64_t{64} << 20);
  std::vector<std::pair<std::string, std::string>> metadata;  // metadata_props
};

struct WriteResult {
  uint64_t modelBytes = 0;         // bytes of the .onnx file
  uint64_t externalDataBytes = 0;  // bytes of the side file (0 when none)
  std::string externalDataPath;    // empty when none
  std::vector<std::string> warnings;
};

// Validates and writes the model to `path` (atomically: a temp file renamed into place; nothing is
// left behind on failure). Throws ExportError when the model fails the checker or inference.
WriteResult writeModel(const ir::Graph& graph, const WriteOptions& options, const std::string& path);
// Validates the model, then streams it into `os` (no external data; fails above the limit before
// writing anything). Each byte is written once: initializers straight from their tensors.
void streamModelTo(const ir::Graph& graph, const WriteOptions& options, std::ostream& os,
                   std::vector<std::string>* warnings = nullptr);
// The same into memory.
std::string serializeModel(const ir::Graph& graph, const WriteOptions& options,
                           std::vector<std::string>* warnings = nullptr);

// The checks every export ends with (onnx::checker, then strict shape inference), with the
// com.microsoft schemas pt2onnx writes (PythonOp, PythonOpGrad, ...: the onnx Python package does
// not know them), on a serialized model; returns it with the inferred value_info, serialized.
// Throws ExportError with ONNX's message.
std::string checkModelBytes(const std::string& modelBytes);

}  // namespace pt2onnx::writer
