#include "runtime/value_recorder.h"

namespace pt2onnx::runtime {
namespace {
thread_local ValueRecorder* activeRecorder = nullptr;
}  // namespace

ValueRecorder::ValueRecorder(std::unordered_set<std::string> wanted)
    : wanted_(std::move(wanted)), previous_(activeRecorder) {
  activeRecorder = this;
}

ValueRecorder::~ValueRecorder() { activeRecorder = previous_; }

ValueRecorder* ValueRecorder::active() { return activeRecorder; }

void ValueRecorder::offer(const std::string& node, size_t output, const at::Tensor& value) {
  std::string key = node + "#" + std::to_string(output);
  if (value.defined() && wanted_.count(key) && !recorded_.count(key)) recorded_[key] = value.detach().clone();
}

}  // namespace pt2onnx::runtime
