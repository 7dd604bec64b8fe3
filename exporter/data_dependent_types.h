// Output types of ops whose output sizes depend on their input data (nonzero, unique, packed
// sequences, ...). Static typing never runs these on stand-in tensors: a kernel fed made-up lengths
// or counts may read out of bounds (aten::_pad_packed_sequence does not check its batch_sizes).
// Their types come from shape rules instead; a size only the data decides is a dynamic dim.
#pragma once

#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "ir/onnx_graph.h"
#include "symbolic/context.h"

namespace pt2onnx {

// Whether `n`'s op has data-dependent output sizes (and must not run on stand-ins).
bool hasDataDependentOutputs(const torch::jit::Node* n);

// The output types of such an op from its arguments' types: exact dtypes, known dims where the rule
// knows them, dynamic dims where only the data tells. nullopt for other ops.
std::optional<std::vector<ir::TensorType>> dataDependentOutputTypes(const torch::jit::Node* n,
                                                                    const std::vector<symbolic::Arg>& args);

}  // namespace pt2onnx
