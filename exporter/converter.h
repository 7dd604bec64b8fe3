#pragma once

#include <string>
#include <vector>

#include "exporter/export.h"
#include "exporter/graph_converter.h"
#include "exporter/type_capture.h"
#include "ir/onnx_graph.h"
#include "symbolic/registry.h"

namespace pt2onnx {

// Converts a lowered graph into `out` with the default registry. `inputNames` are the final names
// of the user inputs. Throws ExportError for nodes that cannot be converted, or, given `collect`,
// records every such node there and leaves `out` unfinished (a support report).
void convertGraph(const ModelGraph& model, const TypeMap& types, const ExportOptions& options,
                  const std::vector<std::string>& inputNames, ir::Graph& out,
                  std::vector<std::string>& warnings, Typing typing = Typing::Captured,
                  SupportReport* collect = nullptr);

// The name of the model's k-th output (None outputs are not counted), graph output `graphIndex`:
// output_names[k], else its default name (ModelGraph::outputNames: dict keys), else "output_<k>".
// TorchScript value names ("y.3") are never used: they differ between a ScriptModule and its archive.
std::string outputName(const ModelGraph& model, size_t graphIndex, size_t k, const ExportOptions& options);

}  // namespace pt2onnx
