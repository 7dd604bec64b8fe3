#pragma once

namespace pt2onnx {

// ai.onnx opsets pt2onnx exports to. The default is the drop-in's: what torch.onnx.export(dynamo=False)
// writes without opset_version, torch.onnx._constants.ONNX_DEFAULT_OPSET, 20 in every torch from 2.9
// (pytorch#158802) to 2.15 (tests/python/test_opsets.py compares it with the running torch's).
constexpr int kMinOpset = 9;
constexpr int kMaxOpset = 25;
constexpr int kDefaultOpset = 20;
// Training-graph exports use the same default: their MaxPool and Gather gradients scatter with
// reduction="add", which needs opset 16.
static_assert(kDefaultOpset >= 16);

// ModelProto.ir_version for an ai.onnx opset: the IR version of the ONNX release that introduced
// the opset (onnx's versioning table, onnx.helper.VERSION_TABLE), the lowest a consumer must read.
inline int irVersionForOpset(int opset) {
  if (opset >= 25) return 13;  // ONNX 1.20
  if (opset >= 24) return 12;  // 1.19
  if (opset >= 23) return 11;  // 1.18
  if (opset >= 21) return 10;  // 1.16, 1.17
  if (opset >= 19) return 9;   // 1.14, 1.15
  if (opset >= 15) return 8;   // 1.10 .. 1.13
  return 7;
}

}  // namespace pt2onnx
