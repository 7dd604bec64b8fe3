// Schemas of com.microsoft::PythonOp / PythonOpGrad, version 1, after ONNX Runtime's
// training_op_defs.cc (docs: ../shared/reference/pythonop_spec.md section 1).
#include "writer/schemas.h"

#include <mutex>

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

namespace pt2onnx::writer {
namespace {

using onnx::AttributeProto;
using onnx::OpSchema;

constexpr const char* kDomain = "com.microsoft";

std::vector<int64_t> intsAttribute(onnx::InferenceContext& ctx, const char* name) {
  std::vector<int64_t> out;
  if (const AttributeProto* a = ctx.getAttribute(name))
    out.assign(a->ints().begin(), a->ints().end());
  return out;
}

// Outputs from `firstOutput` on: element types from `typesAttr`, rank-only shapes from `ranksAttr`.
void inferTypedOutputs(onnx::InferenceContext& ctx, size_t firstOutput, const char* typesAttr,
                       const char* ranksAttr) {
  std::vector<int64_t> types = intsAttribute(ctx, typesAttr);
  std::vector<int64_t> ranks = intsAttribute(ctx, ranksAttr);
  size_t n = ctx.getNumOutputs();
  if (types.size() != n - firstOutput)
    fail_type_inference(typesAttr, " has ", types.size(), " entries for ", n - firstOutput, " tensor outputs");
  for (size_t k = firstOutput; k < n; ++k) {
    onnx::updateOutputElemType(ctx, k, static_cast<int32_t>(types[k - firstOutput]));
    if (k - firstOutput < ranks.size()) {
      auto* shape = ctx.getOutputType(k)->mutable_tensor_type()->mutable_shape();
      shape->clear_dim();
      for (int64_t d = 0; d < ranks[k - firstOutput]; ++d) shape->add_dim();
    }
  }
}

void checkInputTypes(onnx::InferenceContext& ctx, size_t firstInput, const char* typesAttr) {
  std::vector<int64_t> types = intsAttribute(ctx, typesAttr);
  if (types.empty()) return;
  size_t n = ctx.getNumInputs();
  if (types.size() != n - firstInput)
    fail_type_inference(typesAttr, " has ", types.size(), " entries for ", n - firstInput, " tensor inputs");
  for (size_t k = firstInput; k < n; ++k) {
    const onnx::TypeProto* t = ctx.getInputType(k);
    if (t && t->has_tensor_type() && t->tensor_type().elem_type() != types[k - firstInput])
      fail_type_inference("input ", k, " has element type ", t->tensor_type().elem_type(), " but ", typesAttr,
                          " says ", types[k - firstInput]);
  }
}

OpSchema pythonOpSchema() {
  OpSchema s;
  s.SetName("PythonOp").SetDomain(kDomain).SinceVersion(1);
  s.SetDoc("Wrapper of a PyTorch autograd.Function's forward (ONNX Runtime training op).");
  s.Input(0, "inputs", "Tensor arguments of Function.apply, in call order", "T", OpSchema::Variadic, false, 1);
  s.Output(0, "context", "Handle of the autograd context created by the call", "TInt64");
  s.Output(1, "outputs", "Tensors returned by forward", "T", OpSchema::Variadic, false, 1);
  s.TypeConstraint("T", OpSchema::all_tensor_types(), "Any tensor type");
  s.TypeConstraint("TInt64", {"tensor(int64)"}, "Context handle");
  auto ints = AttributeProto::INTS;
  s.Attr("name", "Fully qualified name (module.qualname) of the Function class", AttributeProto::STRING, true);
  s.Attr("input_convention", "One character per apply argument: d = tensor, c = non-tensor", AttributeProto::STRING, true);
  s.Attr("input_requires_grads", "Per apply argument: 1 if it requires grad", ints, true);
  s.Attr("input_tensor_types", "ONNX element type of each tensor input", ints, true);
  s.Attr("input_tensor_ranks", "Rank of each tensor input", ints, true);
  s.Attr("output_tensor_types", "ONNX element type of each returned tensor", ints, true);
  s.Attr("output_tensor_ranks", "Rank of each returned tensor", ints, true);
  s.Attr("output_tensor_requires_grads", "Per returned tensor: 1 if it requires grad", ints, true);
  s.Attr("inplace", "1 if forward marked an input dirty (mark_dirty)", AttributeProto::INT, false);
  s.Attr("training_mode", "1 when exported for training", AttributeProto::INT, false);
  s.Attr("comment", "Free text", AttributeProto::STRING, false);
  for (const char* kind : {"int", "bool", "pointer"}) {
    s.Attr(std::string("input_") + kind + "_scalars", std::string(kind) + " arguments", ints, false);
    s.Attr(std::string("input_") + kind + "_scalar_positions", "their argument positions", ints, false);
  }
  s.Attr("input_float_scalars", "float arguments (as float32)", AttributeProto::FLOATS, false);
  s.Attr("input_float_scalar_positions", "their argument positions", ints, false);
  for (const char* kind : {"int", "bool", "float"}) {
    s.Attr(std::string("input_") + kind + "_tuples", std::string("flattened ") + kind + " tuple arguments",
           std::string(kind) == "float" ? AttributeProto::FLOATS : ints, false);
    s.Attr(std::string("input_") + kind + "_tuple_positions", "their argument positions", ints, false);
    s.Attr(std::string("input_") + kind + "_tuple_begins", "where each tuple starts in the flattened list", ints, false);
  }
  s.TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
    checkInputTypes(ctx, 0, "input_tensor_types");
    onnx::updateOutputElemType(ctx, 0, onnx::TensorProto::INT64);
    ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape()->clear_dim();
    inferTypedOutputs(ctx, 1, "output_tensor_types", "output_tensor_ranks");
  });
  return s;
}

OpSchema pythonOpGradSchema() {
  OpSchema s;
  s.SetName("PythonOpGrad").SetDomain(kDomain).SinceVersion(1);
  s.SetDoc("Wrapper of a PyTorch autograd.Function's backward (ONNX Runtime training op).");
  s.Input(0, "context", "Handle from the forward PythonOp", "TInt64");
  s.Input(1, "inputs", "Gradients of the forward's tensor outputs", "T", OpSchema::Variadic, false, 1);
  s.Output(0, "outputs", "Gradients of the forward's tensor inputs", "T", OpSchema::Variadic, false, 1);
  s.TypeConstraint("T", OpSchema::all_tensor_types(), "Any tensor type");
  s.TypeConstraint("TInt64", {"tensor(int64)"}, "Context handle");
  auto ints = AttributeProto::INTS;
  s.Attr("name", "Fully qualified name (module.qualname) of the Function class", AttributeProto::STRING, true);
  s.Attr("output_convention", "The forward's input_convention", AttributeProto::STRING, true);
  s.Attr("input_tensor_requires_grads", "Per gradient input: 1 if present", ints, true);
  s.Attr("output_tensor_requires_grads", "Per forward tensor input: 1 if its gradient is computed", ints, true);
  s.Attr("input_tensor_types", "Element types of the gradient inputs", ints, false);
  s.Attr("input_tensor_ranks", "Ranks of the gradient inputs", ints, false);
  s.Attr("output_tensor_types", "Element types of the gradient outputs", ints, false);
  s.Attr("output_tensor_ranks", "Ranks of the gradient outputs", ints, false);
  s.Attr("inplace", "Unused; kept for compatibility", AttributeProto::INT, false);
  s.Attr("comment", "Free text", AttributeProto::STRING, false);
  s.TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
    if (ctx.getAttribute("output_tensor_types")) inferTypedOutputs(ctx, 0, "output_tensor_types", "output_tensor_ranks");
  });
  return s;
}

}  // namespace

void registerTrainingSchemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& domains = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
    if (!domains.Map().count(kDomain)) domains.AddDomainToVersion(kDomain, 1, 1);
    if (!onnx::OpSchemaRegistry::Schema("PythonOp", 1, kDomain)) {
      OpSchema forward = pythonOpSchema();
      onnx::OpSchemaRegistry::OpSchemaRegisterOnce registerForward(forward);
    }
    if (!onnx::OpSchemaRegistry::Schema("PythonOpGrad", 1, kDomain)) {
      OpSchema backward = pythonOpGradSchema();
      onnx::OpSchemaRegistry::OpSchemaRegisterOnce registerBackward(backward);
    }
  });
}

const char* onnxLibraryVersion() { return PT2ONNX_ONNX_VERSION; }

int onnxLibraryMaxOpset() {
  const auto& domains = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = domains.find("");
  return it == domains.end() ? 0 : it->second.second;
}

}  // namespace pt2onnx::writer
