// Symbolic functions written in Python: the C++ exporter calls them (for prim::PythonOp, and for any
// op a user registers) with a graph context whose `op()` builds pt2onnx's ONNX graph.
#include "python/symbolic_bridge.h"

#include <pybind11/stl.h>
#include <torch/csrc/jit/python/pybind.h>
#include <torch/csrc/utils/pybind.h>

#include "common/errors.h"
#include "exporter/jit_util.h"
#include "exporter/lowering.h"
#include "exporter/support_check.h"
#include "symbolic/registry.h"

namespace pt2onnx::python {
namespace {

using symbolic::Arg;
using symbolic::Context;

std::shared_ptr<ir::TensorData> tensorData(const at::Tensor& tensor) {
  at::Tensor t = tensor.detach().contiguous().clone();
  auto data = std::make_shared<ir::TensorData>();
  data->dtype = jit::onnxDType(t.scalar_type());
  if (data->dtype == ir::DType::Undefined)
    throw SymbolicError(std::string("tensor attribute of unsupported dtype ") + c10::toString(t.scalar_type()));
  data->dims = t.sizes().vec();
  data->data = t.data_ptr();
  data->nbytes = t.nbytes();
  data->owner = std::shared_ptr<const void>(t.data_ptr(), [keep = t](const void*) {});
  return data;
}

// (name, kind, value) with kind one of f i s t fs is ss, as the Python GraphContext derives it from
// torch.onnx's attribute suffixes.
ir::Attribute attributeFrom(const std::string& name, const std::string& kind, const py::handle& value) {
  if (kind == "f") return ir::attr::f(name, value.cast<double>());
  if (kind == "i") return ir::attr::i(name, value.cast<int64_t>());
  if (kind == "s") return ir::attr::s(name, value.cast<std::string>());
  if (kind == "t") return ir::attr::t(name, *tensorData(value.cast<at::Tensor>()));
  if (kind == "fs") return ir::attr::floats(name, value.cast<std::vector<double>>());
  if (kind == "is") return ir::attr::ints(name, value.cast<std::vector<int64_t>>());
  if (kind == "ss") return ir::attr::strings(name, value.cast<std::vector<std::string>>());
  throw SymbolicError("attribute '" + name + "' of unsupported kind '" + kind + "'");
}

py::object argToPython(Context& ctx, const Arg& a, size_t index) {
  switch (a.kind) {
    case Arg::Kind::None: return py::none();
    case Arg::Kind::Tensor: return py::cast(ctx.tensor(index), py::return_value_policy::reference);
    case Arg::Kind::Int:
      if (a.value) return py::cast(a.value, py::return_value_policy::reference);
      return py::int_(a.i);
    case Arg::Kind::Double:
      if (a.value) return py::cast(a.value, py::return_value_policy::reference);
      return py::float_(a.d);
    case Arg::Kind::Bool:
      if (a.value) return py::cast(a.value, py::return_value_policy::reference);
      return py::bool_(a.b);
    case Arg::Kind::String:
    case Arg::Kind::Device: return py::str(a.s);
    case Arg::Kind::List: {
      py::list out;
      for (const Arg& e : a.elems) {
        if (e.kind == Arg::Kind::Tensor && !e.value) {
          Context one(ctx.graph(), ctx.opset(), ctx.schema(), {e}, {});
          out.append(py::cast(one.tensor(0), py::return_value_policy::reference));
        } else {
          out.append(argToPython(ctx, e, index));
        }
      }
      return out;
    }
    case Arg::Kind::Other: return py::none();
  }
  return py::none();
}

bool isSequenceType(const c10::TypePtr& t) {
  return t->cast<c10::TupleType>() || t->cast<c10::ListType>();
}

symbolic::Outputs outputsFromPython(Context& ctx, const py::object& result) {
  const auto* node = static_cast<const torch::jit::Node*>(ctx.sourceNode());
  auto toArg = [](const py::handle& h) -> Arg {
    if (h.is_none()) return Arg::none();
    return Arg(h.cast<ir::Value*>());
  };
  std::vector<py::object> items;
  if (py::isinstance<py::tuple>(result) || py::isinstance<py::list>(result)) {
    for (const py::handle& h : result) items.push_back(py::reinterpret_borrow<py::object>(h));
  } else {
    items.push_back(result);
  }
  // A single TorchScript output of tuple/list type (a Function returning several tensors) takes
  // all the returned values as one list.
  if (node && node->outputs().size() == 1 && isSequenceType(node->output()->type())) {
    std::vector<Arg> elems;
    for (const auto& i : items) elems.push_back(toArg(i));
    return {Arg::ofList(std::move(elems))};
  }
  if (items.size() != ctx.numOutputs())
    throw SymbolicError("the symbolic returned " + std::to_string(items.size()) + " values for " +
                        std::to_string(ctx.numOutputs()) + " outputs");
  symbolic::Outputs outs;
  for (const auto& i : items) outs.push_back(toArg(i));
  return outs;
}

// Holds a Python callable for the registry's lifetime. The registry is never destroyed (it is a
// leaked singleton), so the reference is released only by unregistering, under the GIL.
struct PythonCallable {
  explicit PythonCallable(py::object fn) : fn(fn.release().ptr()) {}
  PyObject* fn;
};

// A Python exception as one line: "TypeError: message" (pt2onnx's own errors without the type), no
// traceback ("At: ..."), which pybind11's what() appends.
std::string pythonErrorMessage(const py::error_already_set& e) {
  std::string type = py::str(e.type().attr("__name__"));
  std::string message = withoutBacktrace(py::str(e.value()));
  return type == "ExportError" || type == "InvalidArgumentError" ? message : type + ": " + message;
}

symbolic::SymbolicFn pythonSymbolic(py::object fn) {
  auto holder = std::make_shared<PythonCallable>(std::move(fn));
  return [holder](Context& ctx) -> symbolic::Outputs {
    py::gil_scoped_acquire gil;
    try {
      py::list args;
      for (size_t i = 0; i < ctx.numArgs(); ++i) args.append(argToPython(ctx, ctx.arg(i), i));
      py::object node = py::none();
      if (ctx.sourceNode())
        node = py::cast(const_cast<torch::jit::Node*>(static_cast<const torch::jit::Node*>(ctx.sourceNode())),
                        py::return_value_policy::reference);
      py::object bridge = py::module_::import("pt2onnx.symbolic_registry").attr("_call_symbolic");
      py::object result = bridge(py::handle(holder->fn), py::cast(&ctx, py::return_value_policy::reference), node, args);
      return outputsFromPython(ctx, result);
    } catch (py::error_already_set& e) {
      throw SymbolicError(pythonErrorMessage(e));
    } catch (const py::cast_error& e) {
      throw SymbolicError(std::string("the symbolic returned something that is not a graph value: ") + e.what());
    }
  };
}

}  // namespace

std::function<bool(const torch::jit::Node*)> pythonPredicate(py::object fn) {
  auto holder = std::make_shared<PythonCallable>(std::move(fn));
  return [holder](const torch::jit::Node* n) {
    py::gil_scoped_acquire gil;
    try {
      return py::handle(holder->fn)(py::cast(const_cast<torch::jit::Node*>(n), py::return_value_policy::reference))
          .cast<bool>();
    } catch (py::error_already_set& e) {
      throw ExportError("deciding how to export " + jit::describeNode(n) + " failed: " + pythonErrorMessage(e));
    }
  };
}

void bindSymbolicBridge(py::module_& m) {
  py::class_<ir::Value, std::unique_ptr<ir::Value, py::nodelete>>(m, "Value",
                                                                  "A value of the ONNX graph being built")
      .def("debugName", [](const ir::Value& v) { return v.name; })
      .def_property_readonly("onnx_dtype", [](const ir::Value& v) { return static_cast<int>(v.type.dtype); })
      .def("dim", [](const ir::Value& v) -> py::object {
        return v.type.hasRank() ? py::object(py::int_(v.type.rank())) : py::none();
      })
      .def("sizes", [](const ir::Value& v) -> py::object {
        if (!v.type.hasRank()) return py::none();
        py::list dims;
        for (const ir::Dim& d : *v.type.shape) dims.append(d.isStatic() ? py::object(py::int_(d.size)) : py::none());
        return dims;
      })
      .def("set_type_from", [](ir::Value& v, const ir::Value& other) { v.type = other.type; })
      .def("node_name", [](const ir::Value& v) { return v.producer ? v.producer->name : std::string(); })
      .def("__repr__", [](const ir::Value& v) { return "<pt2onnx Value " + v.name + ">"; });

  py::class_<Context, std::unique_ptr<Context, py::nodelete>>(m, "SymbolicContext",
                                                              "The conversion context of one node")
      .def_property_readonly("opset", &Context::opset)
      .def(
          "op",
          [](Context& ctx, const std::string& opType, const std::vector<ir::Value*>& inputs,
             const std::vector<std::tuple<std::string, std::string, py::object>>& attrs, size_t outputs,
             const std::string& domain) {
            std::vector<ir::Attribute> attributes;
            for (const auto& [name, kind, value] : attrs) attributes.push_back(attributeFrom(name, kind, value));
            return ctx.opMulti(opType, inputs, outputs, std::move(attributes), domain);
          },
          py::return_value_policy::reference)
      .def(
          "constant", [](Context& ctx, const at::Tensor& t) { return ctx.constant(*tensorData(t)); },
          py::return_value_policy::reference)
      .def("set_metadata", [](Context& ctx, const std::string& k, const std::string& v) { ctx.graph().setMetadata(k, v); })
      .def("set_output_type",
           [](Context& ctx, ir::Value& v, int dtype, const std::vector<int64_t>& sizes) {
             ir::TensorType t;
             t.dtype = static_cast<ir::DType>(dtype);
             std::vector<ir::Dim> dims;
             for (int64_t d : sizes) dims.push_back(d >= 0 ? ir::Dim::fixed(d) : ir::Dim{});
             t.shape = std::move(dims);
             v.type = std::move(t);
           });

  m.def(
      "register_symbolic",
      [](const std::string& op, int opset, py::object fn) {
        symbolic::defaultRegistry().onOp(op, opset, pythonSymbolic(std::move(fn)), /*replace=*/true);
      },
      py::arg("op"), py::arg("opset"), py::arg("fn"));
  m.def("unregister_symbolic", [](const std::string& op, int opset) {
    return symbolic::defaultRegistry().removeUser(op, opset);
  });
  m.def(
      "subgraph_converts",
      [](const torch::jit::Node* node, int opset) {
        if (!node->hasAttribute(c10::attr::Subgraph)) return false;
        std::shared_ptr<torch::jit::Graph> body = node->g(c10::attr::Subgraph)->copy();
        ExportOptions options;
        options.opset = opset;
        options.inlineAutogradFunction = [](const torch::jit::Node*) { return false; };
        lowerGraph(*body, options);  // with the GIL: the body may hold Python-owning nodes
        return checkGraphSupport(*body, opset).ok();
      },
      "Whether every op traced inside the autograd.Function call `node` converts at `opset`");
}

}  // namespace pt2onnx::python
