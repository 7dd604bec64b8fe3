// The values of chosen nodes' outputs during one run, for `verify --bisect`: while a ValueRecorder
// is active on a thread, the runtime copies the first tensor each wanted output takes (keyed
// "NODE_NAME#K"; in a Loop body, the first iteration's; in an If, only the branch taken).
#pragma once

#include <map>
#include <string>
#include <unordered_set>

#include <ATen/ATen.h>

namespace pt2onnx::runtime {

class ValueRecorder {
 public:
  explicit ValueRecorder(std::unordered_set<std::string> wanted);
  ~ValueRecorder();
  ValueRecorder(const ValueRecorder&) = delete;
  ValueRecorder& operator=(const ValueRecorder&) = delete;

  static ValueRecorder* active();
  void offer(const std::string& node, size_t output, const at::Tensor& value);
  const std::map<std::string, at::Tensor>& recorded() const { return recorded_; }

 private:
  std::unordered_set<std::string> wanted_;
  std::map<std::string, at::Tensor> recorded_;
  ValueRecorder* previous_;
};

}  // namespace pt2onnx::runtime
