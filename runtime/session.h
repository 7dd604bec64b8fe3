// The builtin runtime: loads an ONNX model, checks it, plans it topologically and runs it on ATen
// tensors, freeing each intermediate after its last use.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/kernel.h"

namespace onnx {
class ModelProto;
}

namespace pt2onnx::runtime {

struct SessionOptions {
  int intraOpThreads = 0;  // 0: leave ATen's setting alone
};

struct ValueInfo {
  std::string name;
  int32_t onnxType = 0;
  std::vector<int64_t> shape;           // -1 for a dynamic dimension
  std::vector<std::string> dimParams;   // per dimension, "" when none
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

  // Runs the model. `outputNames` empty means every output, in model order.
  std::vector<at::Tensor> run(const std::map<std::string, at::Tensor>& feeds,
                              const std::vector<std::string>& outputNames = {}) const;

 private:
  struct Step {
    const Kernel* kernel;
    std::string name, opType, domain;
    int opset;
    std::unordered_map<std::string, Attribute> attributes;
    std::vector<int> inputs;   // slot per input, -1 for an omitted one
    std::vector<int> outputs;  // slot per output, -1 for an omitted one
    std::vector<int> release;  // slots whose last use is this step
  };

  Session() = default;
  void build(const onnx::ModelProto& model, const std::string& baseDir, const SessionOptions& options);
  int slotOf(const std::string& name);

  std::vector<ValueInfo> inputs_, outputs_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::unordered_map<std::string, int> slots_;
  std::vector<at::Tensor> constants_;  // per slot: initializers (undefined elsewhere)
  std::vector<int> inputSlots_, outputSlots_;
  std::vector<Step> steps_;
  size_t numSlots_ = 0;
};

// Parses a node attribute (tensors and graphs included) for kernels.
Attribute parseAttribute(const onnx::AttributeProto& a, const std::string& baseDir);

}  // namespace pt2onnx::runtime
