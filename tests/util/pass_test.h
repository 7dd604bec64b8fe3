// Pass tests in the Torch-TensorRT style: parse TorchScript IR, run a pass, check the structure,
// and run the graph before and after the pass in the TorchScript interpreter on inputs that take
// different branches and trip counts: the pass must preserve what every path it keeps computes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/ir/ir.h>

#include "tests/util/param_model.h"  // parseGraph

namespace pt2onnx::testing {

// parseGraph for graphs with statements: the IR parser cannot write a node without outputs
// (` = prim::If(...)`, ` = aten::insert(...)`): unused outputs named %stmt... of If / Loop nodes
// (and what their blocks return and carry for them) are removed after parsing, and a node
// `%stmtN : NoneType = stmt::insert(...)` becomes ` = aten::insert(...)` (`stmtprim::` for prim::).
std::shared_ptr<torch::jit::Graph> parseStatements(const std::string& irText);
// Runs a copy of `graph` in the interpreter on deep copies of `inputs` (in-place ops in the graph
// cannot change the caller's tensors or lists).
std::vector<c10::IValue> runGraph(const std::shared_ptr<torch::jit::Graph>& graph, const std::vector<c10::IValue>& inputs);
// "" when both results are equal (tensors: shape, dtype and values within `tol`, NaN == NaN;
// lists, tuples and numbers element-wise, dicts by keys in order and values); otherwise the first difference.
std::string compareResults(const std::vector<c10::IValue>& expected, const std::vector<c10::IValue>& actual,
                           double tol = 1e-6);
// Parses `irText`, runs it on each input set, applies `pass` to a copy, lints it, runs the result
// on the same inputs and EXPECTs the same results. Returns the rewritten graph for structural checks.
std::shared_ptr<torch::jit::Graph> expectPassPreservesResults(
    const std::string& irText, const std::function<void(torch::jit::Graph&)>& pass,
    const std::vector<std::vector<c10::IValue>>& inputSets, double tol = 1e-6);
// Nodes of `kind` ("aten::add_") in the graph, nested blocks included.
int countNodes(const torch::jit::Graph& graph, const std::string& kind);

}  // namespace pt2onnx::testing
