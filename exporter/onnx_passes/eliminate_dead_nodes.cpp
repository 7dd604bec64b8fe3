#include "exporter/onnx_passes/onnx_passes.h"

namespace pt2onnx::onnx_passes {

void eliminateDeadNodes(ir::Graph& graph) { graph.eliminateDeadNodes(); }

}  // namespace pt2onnx::onnx_passes
