#include "exporter/data_dependent_types.h"

#include <map>
#include <string>

#include "exporter/jit_util.h"

namespace pt2onnx {
namespace {

using symbolic::Arg;
using ir::DType;
using ir::Dim;
using ir::TensorType;

// An argument's tensor type (dtype, and shape when known); Undefined when it is not a tensor.
TensorType typeOfArg(const Arg& a) {
  if (a.value) return a.value->type;
  if (a.constTensor) {
    std::vector<Dim> dims;
    for (int64_t d : a.constTensor->dims) dims.push_back(Dim::fixed(d));
    return {a.constTensor->dtype, dims};
  }
  return {};
}

// batch_first: the first two dims swapped when it is true, both unknown when it is not static.
void swapLeadingDimsIf(std::vector<Dim>& dims, const Arg& batchFirst) {
  if (batchFirst.kind != Arg::Kind::Bool || batchFirst.value) dims[0] = dims[1] = Dim{};
  else if (batchFirst.b) std::swap(dims[0], dims[1]);
}

TensorType vector(DType dtype) { return {dtype, std::vector<Dim>{Dim{}}}; }

// A packed sequence's lengths (its batch_sizes in pt2onnx's padded form): int64, shaped like `lengths`.
TensorType lengthsType(const Arg& lengths) {
  TensorType t = typeOfArg(lengths);
  return t.shape ? TensorType{DType::Int64, t.shape} : vector(DType::Int64);
}

// `t` with dimension `dim` (negative counts from the end) made dynamic; rank-less when unknown.
TensorType withDynamicDim(TensorType t, std::optional<int64_t> dim) {
  if (!t.shape || !dim) return {t.dtype, std::nullopt};
  int64_t d = *dim < 0 ? *dim + t.rank() : *dim;
  if (d < 0 || d >= t.rank()) return {t.dtype, std::nullopt};
  (*t.shape)[d] = Dim{};
  return t;
}

std::optional<int64_t> constInt(const Arg& a) {
  if (a.kind == Arg::Kind::Int && !a.value) return a.i;
  return std::nullopt;
}

// The size of dimension `dim` of `t`, dynamic when unknown.
Dim dimOf(const TensorType& t, std::optional<int64_t> dim) {
  if (!t.shape || !dim) return Dim{};
  int64_t d = *dim < 0 ? *dim + t.rank() : *dim;
  return d >= 0 && d < t.rank() ? (*t.shape)[d] : Dim{};
}

using Rule = std::vector<TensorType> (*)(const std::vector<Arg>&);

// unique(self, ...) over all elements: (values [?], inverse shaped like self, counts [?]).
std::vector<TensorType> uniqueFlat(const std::vector<Arg>& args) {
  TensorType self = typeOfArg(args[0]);
  TensorType inverse{DType::Int64, self.shape};
  return {vector(self.dtype), inverse, vector(DType::Int64)};
}

// unique along `dim`: values with that dim dynamic, inverse [self.size(dim)], counts [?].
std::vector<TensorType> uniqueAlong(const TensorType& self, std::optional<int64_t> dim) {
  return {withDynamicDim(self, dim), {DType::Int64, std::vector<Dim>{dimOf(self, dim)}}, vector(DType::Int64)};
}

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> table = {
      {"aten::nonzero",
       [](const std::vector<Arg>& a) {
         TensorType self = typeOfArg(a[0]);
         if (!self.shape) return std::vector<TensorType>{{DType::Int64, std::vector<Dim>(2)}};
         return std::vector<TensorType>{{DType::Int64, std::vector<Dim>{Dim{}, Dim::fixed(self.rank())}}};
       }},
      {"aten::masked_select",
       [](const std::vector<Arg>& a) { return std::vector<TensorType>{vector(typeOfArg(a[0]).dtype)}; }},
      {"aten::_unique", [](const std::vector<Arg>& a) {
         auto out = uniqueFlat(a);
         out.pop_back();
         return out;
       }},
      {"aten::_unique2", uniqueFlat},
      {"aten::unique_dim",
       [](const std::vector<Arg>& a) { return uniqueAlong(typeOfArg(a[0]), constInt(a[1])); }},
      {"aten::unique_dim_consecutive",
       [](const std::vector<Arg>& a) { return uniqueAlong(typeOfArg(a[0]), constInt(a[1])); }},
      {"aten::unique_consecutive",
       [](const std::vector<Arg>& a) {
         if (a[3].isNone()) return uniqueFlat(a);
         return uniqueAlong(typeOfArg(a[0]), constInt(a[3]));
       }},
      // torchvision's nms keeps the boxes the others do not suppress: [?] indices. (Stand-ins of ones
      // or a ramp suppress none, which would make the example's box count the output's size.)
      {"torchvision::nms", [](const std::vector<Arg>&) { return std::vector<TensorType>{vector(DType::Int64)}; }},
      {"aten::bincount",
       [](const std::vector<Arg>& a) {
         return std::vector<TensorType>{vector(a[1].isNone() ? DType::Int64 : typeOfArg(a[1]).dtype)};
       }},
      // pt2onnx keeps a packed sequence padded (symbolic/recurrent.cpp): (input [B, T, *] or
      // [T, B, *], lengths, batch_first) -> (data [T, B, *], batch_sizes = the lengths [B]).
      {"aten::_pack_padded_sequence",
       [](const std::vector<Arg>& a) {
         TensorType input = typeOfArg(a[0]);
         if (input.shape && input.rank() >= 2) swapLeadingDimsIf(*input.shape, a[2]);
         return std::vector<TensorType>{input, lengthsType(a[1])};
       }},
      // (data [T, B, *] padded, lengths [B], batch_first, ...) -> (output [T', B, *] or [B, T', *],
      // lengths): T' is the longest length (or total_length).
      {"aten::_pad_packed_sequence",
       [](const std::vector<Arg>& a) {
         TensorType data = typeOfArg(a[0]);
         TensorType output{data.dtype, std::nullopt};
         if (data.shape && data.rank() >= 2) {
           output.shape = *data.shape;
           (*output.shape)[0] = Dim{};
           swapLeadingDimsIf(*output.shape, a[2]);
         }
         return std::vector<TensorType>{output, lengthsType(a[1])};
       }},
  };
  return table;
}

// repeat_interleave with a tensor of repeats: the output size is their sum (output_size when given).
std::vector<TensorType> repeatInterleaveTypes(const torch::jit::Node* n, const std::vector<Arg>& args) {
  if (jit::overloadName(n) == "Tensor") {  // (repeats, output_size) -> arange-like [sum(repeats)]
    TensorType t = vector(typeOfArg(args[0]).dtype);
    if (auto size = constInt(args[1])) (*t.shape)[0] = Dim::fixed(*size);
    return {t};
  }
  TensorType self = typeOfArg(args[0]);
  std::optional<int64_t> dim = constInt(args[2]);
  TensorType t = args[2].isNone() ? vector(self.dtype) : withDynamicDim(self, dim);
  if (auto size = constInt(args[3]); size && t.shape && (args[2].isNone() || dim)) {
    int64_t d = args[2].isNone() ? 0 : (*dim < 0 ? *dim + t.rank() : *dim);
    (*t.shape)[d] = Dim::fixed(*size);
  }
  return {t};
}

}  // namespace

bool hasDataDependentOutputs(const torch::jit::Node* n) {
  std::string kind = jit::qualifiedKind(n);
  if (kind == "aten::repeat_interleave") return jit::overloadName(n) != "self_int";
  return rules().count(kind) || kind == "aten::argwhere" || kind == "aten::nonzero_numpy";
}

std::optional<std::vector<TensorType>> dataDependentOutputTypes(const torch::jit::Node* n,
                                                               const std::vector<Arg>& args) {
  if (!hasDataDependentOutputs(n)) return std::nullopt;
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema || schema->arguments().size() != args.size())
    return std::vector<TensorType>(n->outputs().size());
  std::string kind = jit::qualifiedKind(n);
  if (kind == "aten::repeat_interleave") return repeatInterleaveTypes(n, args);
  if (kind == "aten::argwhere") return rules().at("aten::nonzero")(args);
  if (kind == "aten::nonzero_numpy") return std::vector<TensorType>(n->outputs().size());  // a list
  std::vector<TensorType> types = rules().at(kind)(args);
  types.resize(n->outputs().size());
  return types;
}

}  // namespace pt2onnx
