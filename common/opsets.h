#pragma once

namespace pt2onnx {

// ai.onnx opsets pt2onnx exports to, and the default (torch.onnx 1.13's default).
constexpr int kMinOpset = 9;
constexpr int kMaxOpset = 17;
constexpr int kDefaultOpset = 14;
// The default of training-graph exports: their MaxPool and Gather gradients scatter with
// reduction="add" (opset 16).
constexpr int kDefaultGradientOpset = 17;

// ModelProto.ir_version for an ai.onnx opset (onnx's versioning table).
inline int irVersionForOpset(int opset) { return opset >= 15 ? 8 : 7; }

}  // namespace pt2onnx
