// Control-flow kernels: If (opset 1; sequence outputs 13, optional outputs 16), Loop (opset 1;
// sequence-carried values 13, optional ones 16) and SequenceMap (opset 17). Their graph attributes
// are planned with the session (runtime/plan.h); a kernel binds one to the frame it runs in and runs
// it, so a subgraph reads values of enclosing graphs at any depth.
#include <limits>
#include <string>

#include "common/errors.h"
#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

using Values = std::vector<Value>;

// A one-element bool tensor's value ("cond must be a bool tensor with one element, got ...").
bool boolScalar(const ValueKernelContext& ctx, const Value& v, const std::string& what) {
  if (!v.isTensor() || v.tensor().scalar_type() != at::kBool || v.tensor().numel() != 1)
    ctx.fail(what + " must be a bool tensor with one element, got " + v.typeName() +
             (v.isTensor() ? " of shape " + c10::str(v.tensor().sizes()) : ""));
  return v.tensor().reshape({}).item<bool>();
}

// Runs a subgraph; an error inside it names this node and the subgraph ("body, iteration 3: node ...").
Values runSubgraph(const ValueKernelContext& ctx, Subgraph& graph, Values inputs, const std::string& where) {
  try {
    return graph.run(std::move(inputs));
  } catch (const ExportError& e) {
    ctx.fail(where + ": " + e.what());
  }
}

// ---- If ----

Values ifKernel(ValueKernelContext& ctx) {
  bool cond = boolScalar(ctx, ctx.input(0), "cond (input 0)");
  const char* branch = cond ? "then_branch" : "else_branch";
  Subgraph graph = ctx.subgraph(branch);
  if (graph.numInputs() != 0) ctx.fail(std::string(branch) + " must take no inputs, it takes " + std::to_string(graph.numInputs()));
  if (graph.numOutputs() != ctx.numOutputs())
    ctx.fail(std::string(branch) + " has " + std::to_string(graph.numOutputs()) + " outputs, the node " +
             std::to_string(ctx.numOutputs()));
  return runSubgraph(ctx, graph, {}, branch);
}

// ---- Loop ----

// A scan output of a loop that ran no iteration: 0 along the new leading axis, the remaining dims
// from the body output's declared shape (an unknown dim is 0; no declared shape gives shape [0], as
// ONNX Runtime does), the declared dtype (float when none).
at::Tensor emptyScanOutput(const ValueInfo& declared) {
  std::vector<int64_t> shape{0};
  for (int64_t d : declared.shape) shape.push_back(d < 0 ? 0 : d);
  auto dtype = declared.onnxType ? atenType(declared.onnxType) : at::kFloat;
  return at::empty(shape, at::TensorOptions().dtype(dtype.value_or(at::kFloat)));
}

Values loop(ValueKernelContext& ctx) {
  if (ctx.numInputs() < 2) ctx.fail("needs the inputs M and cond (either may be empty)");
  int64_t maxTrips = std::numeric_limits<int64_t>::max();
  if (ctx.hasInput(0)) {
    const Value& m = ctx.input(0);
    if (!m.isTensor() || m.tensor().scalar_type() != at::kLong || m.tensor().numel() != 1)
      ctx.fail("M (input 0) must be an int64 scalar, got " + m.typeName() +
               (m.isTensor() ? " of shape " + c10::str(m.tensor().sizes()) : ""));
    maxTrips = m.tensor().reshape({}).item<int64_t>();
  }
  // Like ONNX Runtime, the body's cond output ends the loop even when the cond input is empty.
  bool cond = ctx.hasInput(1) ? boolScalar(ctx, ctx.input(1), "cond (input 1)") : true;
  size_t numCarried = ctx.numInputs() - 2;
  Subgraph body = ctx.subgraph("body");
  if (body.numInputs() != 2 + numCarried)
    ctx.fail("body takes " + std::to_string(body.numInputs()) + " inputs, expected 2 + " + std::to_string(numCarried) +
             " (iteration_num, cond, the loop-carried values)");
  if (body.numOutputs() < 1 + numCarried)
    ctx.fail("body has " + std::to_string(body.numOutputs()) + " outputs, expected at least 1 + " +
             std::to_string(numCarried) + " (cond, the loop-carried values)");
  size_t numScan = body.numOutputs() - 1 - numCarried;
  if (ctx.numOutputs() != numCarried + numScan)
    ctx.fail("has " + std::to_string(ctx.numOutputs()) + " outputs, expected " + std::to_string(numCarried) +
             " loop-carried + " + std::to_string(numScan) + " scan outputs");

  Values carried;
  for (size_t j = 0; j < numCarried; ++j) carried.push_back(ctx.takeInput(2 + j));
  std::vector<std::vector<at::Tensor>> scans(numScan);
  int64_t iteration = 0;
  for (; iteration < maxTrips && cond; ++iteration) {
    Values ins;
    ins.reserve(2 + numCarried);
    ins.emplace_back(at::scalar_tensor(iteration, at::kLong));
    ins.emplace_back(at::scalar_tensor(cond, at::kBool));
    for (Value& v : carried) ins.push_back(std::move(v));
    std::string where = "body, iteration " + std::to_string(iteration);
    Values outs = runSubgraph(ctx, body, std::move(ins), where);
    cond = boolScalar(ctx, outs[0], where + ": cond output");
    for (size_t j = 0; j < numCarried; ++j) {
      if (!outs[1 + j].defined()) ctx.fail(where + ": loop-carried output " + std::to_string(j) + " is undefined");
      carried[j] = std::move(outs[1 + j]);
    }
    for (size_t k = 0; k < numScan; ++k) {
      const Value& v = outs[1 + numCarried + k];
      if (!v.isTensor()) ctx.fail(where + ": scan output " + std::to_string(k) + " must be a tensor, got " + v.typeName());
      if (!scans[k].empty() && scans[k][0].sizes() != v.tensor().sizes())
        ctx.fail(where + ": scan output " + std::to_string(k) + " has shape " + c10::str(v.tensor().sizes()) +
                 ", earlier iterations " + c10::str(scans[k][0].sizes()) + " (scan outputs are stacked)");
      scans[k].push_back(v.tensor());
    }
  }
  Values result = std::move(carried);
  for (size_t k = 0; k < numScan; ++k)
    result.emplace_back(iteration == 0 ? emptyScanOutput(body.outputInfo(1 + numCarried + k)) : at::stack(scans[k]));
  return result;
}

// ---- SequenceMap ----

// Runs the body once per element of the input sequence: sequence inputs give their i-th element,
// tensor inputs are passed whole; each body output is collected into an output sequence.
Values sequenceMap(ValueKernelContext& ctx) {
  const Value& first = ctx.sequenceInput(0, "input_sequence");
  size_t length = first.elements().size();
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    const Value& v = ctx.input(i);
    if (v.isSequence() && v.elements().size() != length)
      ctx.fail("input " + std::to_string(i) + " has " + std::to_string(v.elements().size()) + " elements, input 0 has " +
               std::to_string(length));
    if (!v.isSequence() && !v.isTensor())
      ctx.fail("input " + std::to_string(i) + " must be a sequence or a tensor, got " + v.typeName());
  }
  Subgraph body = ctx.subgraph("body");
  if (body.numInputs() != ctx.numInputs())
    ctx.fail("body takes " + std::to_string(body.numInputs()) + " inputs, the node has " + std::to_string(ctx.numInputs()));
  if (body.numOutputs() != ctx.numOutputs())
    ctx.fail("body has " + std::to_string(body.numOutputs()) + " outputs, the node " + std::to_string(ctx.numOutputs()));
  std::vector<std::vector<at::Tensor>> collected(body.numOutputs());
  for (size_t e = 0; e < length; ++e) {
    Values ins;
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      const Value& v = ctx.input(i);
      ins.push_back(v.isSequence() ? Value(v.elements()[e]) : v);
    }
    std::string where = "body, element " + std::to_string(e);
    Values outs = runSubgraph(ctx, body, std::move(ins), where);
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!outs[k].isTensor()) ctx.fail(where + ": output " + std::to_string(k) + " must be a tensor, got " + outs[k].typeName());
      collected[k].push_back(outs[k].tensor());
    }
  }
  Values result;
  for (size_t k = 0; k < collected.size(); ++k) {
    int32_t declared = body.outputInfo(k).onnxType;
    at::ScalarType type = !collected[k].empty() ? collected[k][0].scalar_type()
                                                : atenType(declared ? declared : 1).value_or(at::kFloat);
    for (const at::Tensor& t : collected[k])
      if (t.scalar_type() != type)
        ctx.fail("body output " + std::to_string(k) + " changes dtype between elements (" + onnxTypeName(type) + ", " +
                 onnxTypeName(t.scalar_type()) + ")");
    result.push_back(Value::sequence(type, std::move(collected[k])));
  }
  return result;
}

}  // namespace

void registerControlFlowKernels(KernelRegistry& r) {
  r.add("", "If", 1, ifKernel);
  r.add("", "Loop", 1, loop);
  r.add("", "SequenceMap", 17, sequenceMap);
}

}  // namespace pt2onnx::runtime
