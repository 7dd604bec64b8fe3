// The builtin runtime: loads an ONNX model, checks it, plans it topologically (subgraphs included)
// and runs it on ATen tensors, sequences and optionals, freeing each intermediate after its last use.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/kernel.h"
#include "runtime/value.h"

namespace onnx {
class ModelProto;
}

namespace pt2onnx::runtime {

struct SessionOptions {
  int intraOpThreads = 0;  // ATen's intra-op threads during each run (restored after); 0: ATen's setting
  bool fuseNodes = true;   // runtime/fusion.h; off keeps every node's output (verify --bisect records them)
};

class Session {
 public:
  // Throws ExportError with the node, op, domain and opset for malformed or unsupported models.
  static std::unique_ptr<Session> fromFile(const std::string& path, const SessionOptions& options = {});
  static std::unique_ptr<Session> fromBytes(const std::string& bytes, const SessionOptions& options = {});
  ~Session();

  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
  // The ModelProto's descriptive fields (onnxruntime's ModelMetadata).
  struct ModelInfo {
    std::string producerName, graphName, domain, description, graphDescription;
    int64_t version = 0;
  };
  const ModelInfo& modelInfo() const { return modelInfo_; }
  // The main graph's nodes as planned, "domain::op" each ("" for ai.onnx): after fusion, what runs.
  std::vector<std::string> plannedOps() const;

  // Runs a model whose inputs and requested outputs are tensors. `outputNames` empty means every
  // output, in model order. A tensor fed to an optional input is wrapped; an optional output gives
  // its tensor (an undefined tensor when empty); a sequence output is an error (use runValues).
  std::vector<at::Tensor> run(const std::map<std::string, at::Tensor>& feeds,
                              const std::vector<std::string>& outputNames = {}) const;

  // Runs any model: tensors, sequences and optionals in and out. A tensor or sequence fed to an
  // optional input is wrapped in one.
  std::vector<Value> runValues(const std::map<std::string, Value>& feeds,
                               const std::vector<std::string>& outputNames = {}) const;

 private:
  Session();
  // Takes the model apart: its local functions are inlined into the graph first.
  void build(onnx::ModelProto& model, const std::string& baseDir, const SessionOptions& options);
  // A frame with the initializers, and input i's checked value in its slot.
  template <typename Feeds>
  std::vector<Value> bindInputs(const Feeds& feeds) const;
  // Runs the frame; returns the requested outputs.
  std::vector<Value> runFrame(std::vector<Value> frame, const std::vector<std::string>& outputNames) const;

  std::vector<ValueInfo> inputs_, outputs_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  ModelInfo modelInfo_;
  std::unique_ptr<Plan> plan_;
  int intraOpThreads_ = 0;
};

// Parses a node attribute (tensors and graphs included) for kernels.
Attribute parseAttribute(const onnx::AttributeProto& a, const std::string& baseDir);

}  // namespace pt2onnx::runtime
