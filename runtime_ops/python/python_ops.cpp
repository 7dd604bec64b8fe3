#include "runtime_ops/python/python_ops.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "runtime/kernel.h"

namespace py = pybind11;

namespace pt2onnx::runtime {
namespace {

py::object toPython(const Attribute& a) {
  switch (a.kind) {
    case Attribute::Kind::Float: return py::float_(a.f);
    case Attribute::Kind::Int: return py::int_(a.i);
    case Attribute::Kind::String: return py::str(a.s);
    case Attribute::Kind::Floats: return py::cast(a.floats);
    case Attribute::Kind::Ints: return py::cast(a.ints);
    case Attribute::Kind::Strings: return py::cast(a.strings);
    case Attribute::Kind::Tensor: return py::cast(a.t);
    case Attribute::Kind::Graph:
    case Attribute::Kind::Type: return py::none();
  }
  return py::none();
}

// One plan object per node (built from its attributes on first use), keyed by the node id the
// session assigns. Only touched with the GIL held.
py::object planFor(KernelContext& ctx, const char* planClass) {
  static auto* plans = new std::unordered_map<int64_t, py::object>();  // leaked: outlives the interpreter
  int64_t id = ctx.attrInt("__node_id");
  auto it = plans->find(id);
  if (it != plans->end()) return it->second;
  py::dict attrs;
  for (const auto& [name, attr] : ctx.attributes()) attrs[py::str(name)] = toPython(attr);
  py::object plan = py::module_::import("pt2onnx.python_ops").attr(planClass)(ctx.nodeName(), attrs);
  plans->emplace(id, plan);
  return plan;
}

template <typename Body>
std::vector<at::Tensor> withPython(KernelContext& ctx, const Body& body) {
  if (!Py_IsInitialized()) ctx.fail("running this op needs Python (run the model from Python or the pt2onnx CLI)");
  py::gil_scoped_acquire gil;
  try {
    return body();
  } catch (py::error_already_set& e) {
    std::string type = py::str(e.type().attr("__name__"));
    ctx.fail(type + ": " + std::string(py::str(e.value())));
  }
}

py::tuple tensorArgs(KernelContext& ctx, size_t from) {
  py::tuple args(ctx.numInputs() - from);
  for (size_t i = from; i < ctx.numInputs(); ++i)
    args[i - from] = ctx.hasInput(i) ? py::cast(ctx.inputs()[i]) : py::none();
  return args;
}

// Contexts of this thread's run that its own PythonOpGrads should consume (training graphs): what is
// left when the run ends (it failed between the two) is released then.
std::vector<int64_t>& runScopedContexts() {
  thread_local std::vector<int64_t> handles;
  return handles;
}

void releaseRunScopedContexts() {
  std::vector<int64_t>& handles = runScopedContexts();
  if (handles.empty() || !Py_IsInitialized()) return;
  py::gil_scoped_acquire gil;
  py::module_::import("pt2onnx.python_ops").attr("release_contexts")(handles);
  handles.clear();
}

std::vector<at::Tensor> pythonOpForward(KernelContext& ctx) {
  return withPython(ctx, [&] {
    py::tuple result = planFor(ctx, "PythonOpPlan").attr("forward")(*tensorArgs(ctx, 0));
    int64_t handle = result[0].cast<int64_t>();
    if (handle != 0 && ctx.hasAttribute("__run_scoped_context")) runScopedContexts().push_back(handle);
    std::vector<at::Tensor> outs{at::scalar_tensor(handle, at::kLong)};
    for (const py::handle& o : result[1]) outs.push_back(o.cast<at::Tensor>());
    if (outs.size() != ctx.numOutputs())
      ctx.fail("the Function returned " + std::to_string(outs.size() - 1) + " tensors, the node has " +
               std::to_string(ctx.numOutputs() - 1) + " outputs");
    return outs;
  });
}

std::vector<at::Tensor> pythonOpBackward(KernelContext& ctx) {
  return withPython(ctx, [&] {
    py::object plan = planFor(ctx, "PythonOpGradPlan");  // if it fails, the run-end hook releases the context
    std::vector<int64_t>& scoped = runScopedContexts();  // consumed below: nothing left to release
    scoped.erase(std::remove(scoped.begin(), scoped.end(), ctx.input(0).item<int64_t>()), scoped.end());
    py::list result = plan.attr("backward")(ctx.input(0).item<int64_t>(), *tensorArgs(ctx, 1));
    std::vector<at::Tensor> outs;
    for (const py::handle& o : result) outs.push_back(o.is_none() ? at::Tensor() : o.cast<at::Tensor>());
    if (outs.size() != ctx.numOutputs())
      ctx.fail("backward gave " + std::to_string(outs.size()) + " gradients, the node has " +
               std::to_string(ctx.numOutputs()) + " outputs");
    return outs;
  });
}

std::vector<at::Tensor> pyOp(KernelContext& ctx) {
  return withPython(ctx, [&] {
    py::list result = planFor(ctx, "PyOpPlan").attr("run")(*tensorArgs(ctx, 0));
    std::vector<at::Tensor> outs;
    for (const py::handle& o : result) outs.push_back(o.cast<at::Tensor>());
    return outs;
  });
}

}  // namespace

void registerPythonKernels(KernelRegistry& r) {
  static std::once_flag once;
  std::call_once(once, [&r] {
    r.add("com.microsoft", "PythonOp", 1, pythonOpForward);
    r.add("com.microsoft", "PythonOpGrad", 1, pythonOpBackward);
    r.add("*", "PyOp", 1, pyOp);
    addRunEndHook(releaseRunScopedContexts);
  });
}

}  // namespace pt2onnx::runtime
