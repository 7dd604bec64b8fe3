// Which ONNX value holds each TorchScript value, for `verify --bisect`: while a ValueMapCapture is
// alive on a thread, an export on that thread keeps a copy of its graph as it was before lowering,
// with the example arguments and parameters, and records for every tensor value the converter
// turns into an ONNX value the pair (TorchScript value, ONNX value), in conversion order, with the
// node's kind, PyTorch source location and module scope. runTorchScript() then runs that copy in
// the TorchScript interpreter and returns the first value each recorded TorchScript value took (in
// a Loop body: the first iteration's), to compare with the ONNX model's values.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/ir/ir.h>

namespace pt2onnx {

struct ModelGraph;

struct ValueMapEntry {
  std::string torchValue;  // debug name in the graph copy
  std::string onnxValue;   // name in the ONNX graph, a graph output's own (it may not survive the ONNX passes)
  std::string kind;        // the TorchScript node's kind, e.g. aten::_convolution
  std::string location;    // PyTorch source location, "" when unknown
  std::string scope;       // module scope, "" when unknown
};

class ValueMapCapture {
 public:
  ValueMapCapture();
  ~ValueMapCapture();
  ValueMapCapture(const ValueMapCapture&) = delete;
  ValueMapCapture& operator=(const ValueMapCapture&) = delete;

  // The capture of this thread, or null.
  static ValueMapCapture* active();

  // Called by the export before lowering (after the inputs are flattened).
  void recordGraph(const ModelGraph& model);
  // Called by the converter for a node output it converted to the ONNX value `onnxName`.
  void recordValue(const torch::jit::Value* v, const std::string& onnxName);
  // Called when the export renames an ONNX value the converter made (a graph output takes its name).
  void renameOnnxValue(const std::string& from, const std::string& to);

  const std::vector<ValueMapEntry>& entries() const { return entries_; }
  bool hasGraph() const { return original_ != nullptr; }
  // Runs the graph copy on the export's example arguments; {TorchScript value: its first value}.
  std::map<std::string, at::Tensor> runTorchScript() const;

 private:
  std::shared_ptr<torch::jit::Graph> original_;
  // A value of the graph as it was before lowering -> the name of its counterpart in the copy, and its
  // own name and node kind then. Lowering may free a value and a new one take its address: the name
  // and kind, still the same when the converter sees it, tell the value it was.
  struct Original {
    std::string copyName;
    std::string name;
    c10::Symbol kind;
  };
  std::unordered_map<const torch::jit::Value*, Original> originals_;
  std::vector<c10::IValue> inputs_;  // user inputs, then parameters
  std::vector<ValueMapEntry> entries_;
  std::unordered_map<std::string, size_t> recorded_;
  ValueMapCapture* previous_;
};

}  // namespace pt2onnx
