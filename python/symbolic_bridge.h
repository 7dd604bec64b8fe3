#pragma once

#include <functional>

#include <pybind11/pybind11.h>
#include <torch/csrc/jit/ir/ir.h>

namespace pt2onnx::python {

namespace py = pybind11;

// Binds Value, SymbolicContext, register_symbolic / unregister_symbolic and subgraph_converts.
void bindSymbolicBridge(py::module_& m);
// A C++ predicate over nodes that calls the Python callable `fn(node) -> bool` under the GIL.
std::function<bool(const torch::jit::Node*)> pythonPredicate(py::object fn);

}  // namespace pt2onnx::python
