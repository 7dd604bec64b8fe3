#include "exporter/type_capture.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "common/errors.h"
#include "common/logging.h"
#include "exporter/jit_util.h"

namespace pt2onnx {
namespace {

using ValueTypes = std::unordered_map<const torch::jit::Value*, c10::IValue>;

// Records what each value looked like: tensors by their sizes and dtype, numbers by value.
struct Observation {
  std::unordered_map<const torch::jit::Value*, at::Tensor> meta;  // size/dtype-only tensors
  std::unordered_map<const torch::jit::Value*, c10::IValue> numbers;
};

void observe(const torch::jit::Value* v, const c10::IValue& iv, Observation& obs) {
  if (iv.isTensor()) {
    const at::Tensor& t = iv.toTensor();
    obs.meta[v] = at::empty(t.sizes(), at::TensorOptions().dtype(t.scalar_type()).device(at::kMeta));
  } else if (iv.isInt() || iv.isDouble() || iv.isBool()) {
    obs.numbers[v] = iv;
  }
}

// Runs one node. The interpreter implements list and tuple construction as instructions, not as
// operators, so those are done here.
void runNode(const torch::jit::Node* n, torch::jit::Stack& stack) {
  switch (n->kind()) {
    case c10::prim::ListConstruct: {
      c10::impl::GenericList list(n->output()->type()->expectRef<c10::ListType>().getElementType());
      for (c10::IValue& v : stack) list.push_back(std::move(v));
      stack.clear();
      stack.emplace_back(std::move(list));
      return;
    }
    case c10::prim::ListUnpack: {
      auto list = stack.back().toListRef().vec();
      stack.clear();
      if (list.size() != n->outputs().size())
        throw std::runtime_error("list of " + std::to_string(list.size()) + " elements unpacked into " +
                                 std::to_string(n->outputs().size()) + " values");
      stack.insert(stack.end(), list.begin(), list.end());
      return;
    }
    case c10::prim::TupleConstruct: {
      auto tuple = c10::ivalue::Tuple::create(std::vector<c10::IValue>(stack.begin(), stack.end()));
      stack.clear();
      stack.emplace_back(std::move(tuple));
      return;
    }
    case c10::prim::TupleUnpack: {
      auto elems = stack.back().toTupleRef().elements().vec();
      stack.clear();
      stack.insert(stack.end(), elems.begin(), elems.end());
      return;
    }
    default: jit::runOperation(n, stack);
  }
}

Observation run(const torch::jit::Graph& graph, const std::vector<c10::IValue>& inputs) {
  at::NoGradGuard noGrad;
  Observation obs;
  std::unordered_map<const torch::jit::Value*, c10::IValue> env;
  std::unordered_map<const torch::jit::Value*, const torch::jit::Node*> lastUse;
  for (const torch::jit::Node* n : graph.nodes())
    for (const torch::jit::Value* in : n->inputs()) lastUse[in] = n;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    env[graph.inputs()[i]] = inputs.at(i);
    observe(graph.inputs()[i], inputs[i], obs);
  }
  for (const torch::jit::Node* n : graph.nodes()) {
    PT2ONNX_ASSERT(n->blocks().empty(), "type capture on a node with blocks: " << jit::describeNode(n));
    if (n->kind() == c10::prim::Constant) {
      env[n->output()] = *torch::jit::toIValue(n->output());
      observe(n->output(), env[n->output()], obs);
      continue;
    }
    torch::jit::Stack stack;
    for (const torch::jit::Value* in : n->inputs()) stack.push_back(env.at(in));
    try {
      runNode(n, stack);
    } catch (const InternalError&) {
      throw;
    } catch (const std::exception& e) {
      throw ExportError("running the model on the example inputs failed at " + jit::describeNode(n) +
                        ": " + messageOf(e));
    }
    PT2ONNX_ASSERT(stack.size() == n->outputs().size(), "operation left " << stack.size() << " values for "
                                                                          << jit::describeNode(n));
    for (size_t k = 0; k < n->outputs().size(); ++k) {
      env[n->outputs()[k]] = std::move(stack[k]);
      observe(n->outputs()[k], env[n->outputs()[k]], obs);
    }
    for (const torch::jit::Value* in : n->inputs())
      if (lastUse[in] == n) env.erase(in);
  }
  return obs;
}

// The example input with `axes` grown by one (a copy of the first slice appended), so the values
// stay in the range the model expects (token ids stay valid ids).
at::Tensor grow(const at::Tensor& t, const std::set<int64_t>& axes) {
  at::Tensor out = t;
  for (int64_t axis : axes) out = at::cat({out, out.narrow(axis, 0, 1)}, axis);
  return out;
}

ir::TensorType typeFrom(const at::Tensor& first, const at::Tensor* second) {
  ir::TensorType type;
  type.dtype = jit::onnxDType(first.scalar_type());
  std::vector<ir::Dim> dims;
  for (int64_t k = 0; k < first.dim(); ++k) {
    bool changed = second && (second->dim() != first.dim() || second->size(k) != first.size(k));
    dims.push_back(changed ? ir::Dim{} : ir::Dim::fixed(first.size(k)));
  }
  type.shape = std::move(dims);
  return type;
}

}  // namespace

namespace {
// Traced graphs carry complete tensor types already; only then may the run be skipped.
bool typesComplete(const torch::jit::Graph& graph) {
  auto complete = [](const torch::jit::Value* v) {
    auto tt = v->type()->cast<c10::TensorType>();
    return !tt || (tt->scalarType() && tt->sizes().concrete_sizes());
  };
  for (const torch::jit::Value* v : graph.inputs())
    if (!complete(v)) return false;
  for (const torch::jit::Node* n : graph.nodes())
    for (const torch::jit::Value* v : n->outputs())
      if (!complete(v)) return false;
  return true;
}
}  // namespace

TypeMap captureTypes(const ModelGraph& model, const std::vector<std::set<int64_t>>& dynamicAxes) {
  bool anyDynamic = false;
  for (const auto& axes : dynamicAxes) anyDynamic = anyDynamic || !axes.empty();
  if (!anyDynamic && typesComplete(*model.graph)) return {};  // the converter reads the JIT types
  std::vector<c10::IValue> inputs = model.exampleInputs;
  for (const at::Tensor& p : model.paramValues) inputs.push_back(p);
  if (inputs.size() != model.graph->inputs().size())
    throw ExportError("the model takes " + std::to_string(model.graph->inputs().size() - model.paramValues.size()) +
                      " inputs but " + std::to_string(model.exampleInputs.size()) + " example inputs were given");
  Observation first = run(*model.graph, inputs);
  std::optional<Observation> second;
  if (anyDynamic) {
    std::vector<c10::IValue> grown = inputs;
    for (size_t i = 0; i < dynamicAxes.size(); ++i)
      if (!dynamicAxes[i].empty()) grown[i] = grow(inputs[i].toTensor(), dynamicAxes[i]);
    try {
      second = run(*model.graph, grown);
    } catch (const ExportError& e) {
      throw ExportError(std::string("the dynamic axes cannot be dynamic: the model fails when they change size "
                                    "(tried each one larger): ") + e.what());
    }
  }
  TypeMap types;
  for (const auto& [v, t] : first.meta) {
    const at::Tensor* other = nullptr;
    if (second) {
      auto it = second->meta.find(v);
      if (it != second->meta.end()) other = &it->second;
    }
    types[v] = typeFrom(t, other);
  }
  for (const auto& [v, iv] : first.numbers) {
    ir::DType dt = iv.isInt() ? ir::DType::Int64 : iv.isDouble() ? ir::DType::Float : ir::DType::Bool;
    types[v] = {dt, std::vector<ir::Dim>{}};
  }
  logger("exporter")->debug("captured types of {} values{}", types.size(), anyDynamic ? " (two runs)" : "");
  return types;
}

}  // namespace pt2onnx
