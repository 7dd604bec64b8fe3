#include "symbolic/opset_forms.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <onnx/defs/schema.h>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/helpers.h"
#include "writer/node_type_inference.h"

namespace pt2onnx::symbolic {

std::optional<int> firstOpsetDefining(const std::string& opType, int fromOpset, int lastOpset) {
  for (int o = std::max(fromOpset, 1); o <= lastOpset; ++o) {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(opType, o, "");
    if (schema && !schema->Deprecated()) return o;
  }
  return std::nullopt;
}

namespace {

using ir::DType;
using ir::Value;
using Values = std::vector<Value*>;
using Attributes = std::vector<ir::Attribute>;

// The elements of a 0-d or 1-D integer value known at export time: a constant, or shape
// arithmetic on tensors of static shape (Shape, Gather, Slice, Concat, ...), which symbolics emit
// for sizes that are dynamic only when the input's shape is.
std::optional<std::vector<int64_t>> knownInts(const Value* v, int depth = 0) {
  if (!v || depth > 16) return std::nullopt;
  if (const ir::TensorData* t = knownData(v)) {
    if (t->dims.size() > 1 || ir::isFloating(t->dtype)) return std::nullopt;
    std::vector<int64_t> out;
    for (int64_t k = 0; k < t->numel(); ++k) out.push_back(t->elementAsInt64(k));
    return out;
  }
  const ir::Node* n = v->producer;
  if (!n || !n->domain.empty() || n->outputs.size() != 1) return std::nullopt;
  auto input = [&](size_t k) { return k < n->inputs.size() ? knownInts(n->inputs[k], depth + 1) : std::nullopt; };
  const std::string& op = n->opType;
  if (op == "Shape" && n->inputs[0]->type.isFullyStatic() && !n->findAttribute("start") && !n->findAttribute("end"))
    return n->inputs[0]->type.staticSizes();
  if (op == "Identity" || op == "Unsqueeze" || op == "Squeeze" || op == "Reshape") return input(0);
  if (op == "Cast") {
    const ir::Attribute* to = n->findAttribute("to");
    bool integral = to && (to->i == static_cast<int64_t>(DType::Int64) || to->i == static_cast<int64_t>(DType::Int32));
    return integral ? input(0) : std::nullopt;
  }
  if (op == "Concat") {
    std::vector<int64_t> out;
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      std::optional<std::vector<int64_t>> part = input(k);
      if (!part) return std::nullopt;
      out.insert(out.end(), part->begin(), part->end());
    }
    return out;
  }
  if (op == "Gather") {
    std::optional<std::vector<int64_t>> data = input(0), index = input(1);
    if (!data || !index) return std::nullopt;
    std::vector<int64_t> out;
    for (int64_t i : *index) {
      int64_t at = i < 0 ? i + static_cast<int64_t>(data->size()) : i;
      if (at < 0 || at >= static_cast<int64_t>(data->size())) return std::nullopt;
      out.push_back((*data)[at]);
    }
    return out;
  }
  if (op == "Slice" && n->inputs.size() >= 3) {
    std::optional<std::vector<int64_t>> data = input(0), starts = input(1), ends = input(2);
    std::optional<std::vector<int64_t>> steps = n->inputs.size() > 4 ? input(4) : std::vector<int64_t>{1};
    if (!data || !starts || !ends || !steps || starts->size() != 1 || ends->size() != 1 || steps->size() != 1 ||
        (*steps)[0] != 1)
      return std::nullopt;
    int64_t size = static_cast<int64_t>(data->size());
    auto clampIndex = [&](int64_t i) { return std::clamp(i < 0 ? i + size : i, int64_t(0), size); };
    int64_t from = clampIndex((*starts)[0]), to = clampIndex((*ends)[0]);
    return std::vector<int64_t>(data->begin() + from, data->begin() + std::max(from, to));
  }
  return std::nullopt;
}

std::optional<double> knownScalar(const Value* v) {
  const ir::TensorData* t = knownData(v);
  if (!t || t->numel() != 1) return std::nullopt;
  return t->elementAsDouble(0);
}

bool isFloatType(DType t) { return t == DType::Float || t == DType::Double || t == DType::Float16; }

// Rewrites one node for an opset below 13 (and checks every node's op exists at the target).
class OpsetForms {
 public:
  OpsetForms(Context& ctx) : ctx_(ctx), opset_(ctx.opset()) {}

  Values emit(const std::string& op, Values in, size_t numOutputs, Attributes attrs) {
    if (op == "Where" && in.size() == 3 && in[1]->type.dtype == DType::Bool) return {boolWhere(in)};
    if (op == "Where" && in.size() == 3 && in[1]->type.dtype == DType::BFloat16 && opset_ < 16)
      return {bfloat16Where(in)};
    if (opset_ >= 18) newerForm(op, in, numOutputs, attrs);
    if (opset_ >= 13) return node(op, in, numOutputs, std::move(attrs));
    if (opset_ < 11) normalizeAxisAttributes(op, in, attrs);
    if (op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") return axesInputAsAttribute(op, in, numOutputs, attrs);
    if (op == "Split") return splitInputAsAttribute(in, numOutputs, attrs);
    if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") return softmaxOverLastAxis(op, in, attrs);
    if (op == "Resize") return {resize(in, attrs)};
    if (op == "Clip" && opset_ < 12) return {clip(in, attrs)};
    if (op == "Max" || op == "Min") return {maxMin(op, in, attrs)};
    if (op == "Pow" && opset_ < 12) return {pow(in, attrs)};
    if ((op == "GreaterOrEqual" || op == "LessOrEqual") && opset_ < 12) return {orEqual(op, in)};
    if (op == "ArgMax" || op == "ArgMin") dropDefaultAttribute(attrs, "select_last_index", 0, 12, op);
    if (op == "Dropout" && opset_ < 12) return dropout(in, numOutputs, attrs);
    if (opset_ < 11) {
      if (op == "Equal") return {equal(in[0], in[1])};
      if (op == "Range") return {range(in)};
      if (op == "Pad") return {pad(in, attrs)};
      if (op == "TopK") return topK(in, attrs);
      if (op == "ScatterElements") {
        if (const ir::Attribute* r = find(attrs, "reduction"); r && r->s == "none") erase(attrs, "reduction");
        return node("Scatter", in, numOutputs, attrs);
      }
      if (op == "Gemm" && (in.size() < 3 || !in[2])) return node(op, {in[0], in[1], zeroLike(in[0])}, 1, attrs);
      if (op == "DepthToSpace") return {depthToSpace(in, attrs)};
    }
    if (opset_ < 10) {
      if (op == "Mod") return {integerMod(in, attrs)};
      if (op == "Slice") return {slice(in, attrs)};
      if (op == "MaxPool") maxPoolCeilModeAsPadding(in, attrs);
      if (op == "MaxPool" || op == "AveragePool") {
        dropDefaultAttribute(attrs, "ceil_mode", 0, 10, op + " with ceil_mode=True");
        if (const ir::Attribute* d = find(attrs, "dilations")) {
          if (std::any_of(d->ints.begin(), d->ints.end(), [](int64_t v) { return v != 1; }))
            needs(10, op + " with a dilation");
          erase(attrs, "dilations");
        }
      }
    }
    return node(op, in, numOutputs, std::move(attrs));
  }

 private:
  // ONNX Runtime has no bool kernel for Where at any opset (a model with one does not load): a
  // select between bool tensors is (c and x) or (not c and y), which broadcasts the same way.
  Value* boolWhere(const Values& in) {
    Value* fromX = node1("And", {in[0], in[1]});
    Value* fromY = node1("And", {node1("Not", {in[0]}), in[2]});
    return node1("Or", {fromX, fromY});
  }

  // Where takes bfloat16 from opset 16; before, the select is made in float (both conversions exact).
  Value* bfloat16Where(const Values& in) {
    Value* selected = node1("Where", {in[0], cast(in[1], DType::Float), cast(in[2], DType::Float)});
    return cast(typed(selected, DType::Float), DType::BFloat16);
  }

  // Opsets 18 and later removed four opset-13 forms the converters write: every Reduce* but
  // ReduceSum takes its axes as an input (18); a Split without split sizes names its number of
  // outputs (18); DFT takes its axis as a 0-d input, default -2 where DFT-17's attribute defaulted
  // to 1 (20); GridSample names its modes linear and cubic (20).
  void newerForm(const std::string& op, Values& in, size_t numOutputs, Attributes& attrs) {
    if (op.rfind("Reduce", 0) == 0 && op != "ReduceSum") {
      if (const ir::Attribute* axes = find(attrs, "axes")) {
        in.resize(1);
        in.push_back(ctx_.constInt64s(axes->ints));
        erase(attrs, "axes");
      }
    } else if (op == "Split") {
      if (in.size() < 2 || !in[1]) {
        in.resize(1);
        if (!find(attrs, "num_outputs")) attrs.push_back(ir::attr::i("num_outputs", static_cast<int64_t>(numOutputs)));
      }
    } else if (op == "DFT" && opset_ >= 20) {
      const ir::Attribute* axis = find(attrs, "axis");
      int64_t dim = axis ? axis->i : 1;
      erase(attrs, "axis");
      in.resize(2);  // the signal and dft_length (nullptr: none)
      in.push_back(ctx_.constInt64(dim));
    } else if (op == "GridSample" && opset_ >= 20) {
      for (ir::Attribute& a : attrs) {
        if (a.name == "mode" && a.s == "bilinear") a.s = "linear";
        if (a.name == "mode" && a.s == "bicubic") a.s = "cubic";
      }
    }
  }

  [[noreturn]] void needs(int opset, const std::string& what) const {
    ctx_.fail(what + " has no ONNX form before opset " + std::to_string(opset) + " (this export targets opset " +
              std::to_string(opset_) + "): export with opset " + std::to_string(opset) + " or later");
  }

  // The node as written, when the target opset defines its op.
  Values node(const std::string& op, const Values& in, size_t numOutputs, Attributes attrs) {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(op, opset_, "");
    if (!schema || schema->Deprecated()) {
      std::optional<int> first = firstOpsetDefining(op, opset_ + 1, kMaxOpset);
      if (!first) ctx_.fail("ONNX " + op + " is not defined at opset " + std::to_string(opset_));
      needs(*first, "ONNX " + op);
    }
    return ctx_.graph().addNode(op, in, numOutputs, std::move(attrs))->outputs;
  }
  Value* node1(const std::string& op, const Values& in, Attributes attrs = {}) {
    return node(op, in, 1, std::move(attrs))[0];
  }
  // Fills what neither the symbolic nor ONNX inference (when typing statically) already knows.
  static Value* typed(Value* v, DType dtype, std::optional<std::vector<ir::Dim>> shape = std::nullopt) {
    if (v->type.dtype == DType::Undefined) v->type.dtype = dtype;
    if (!v->type.hasRank() && v->type.dtype == dtype) v->type.shape = std::move(shape);
    return v;
  }
  // The rank of v, typing its producers with ONNX inference when the symbolic left them untyped
  // (graphs typed by running type only each TorchScript node's outputs).
  const ir::TensorType& typeOf(Value* v, int depth = 0) {
    bool known = v->type.dtype != DType::Undefined && v->type.hasRank();
    if (known || !v->producer || depth > 32) return v->type;
    for (Value* in : v->producer->inputs)
      if (in && in->type.dtype == DType::Undefined) typeOf(in, depth + 1);
    writer::inferNodeTypes(*v->producer, opset_, {});
    return v->type;
  }
  int64_t rankOf(Value* v) { return v ? typeOf(v).rank() : -1; }
  DType dtypeOf(Value* v) { return typeOf(v).dtype; }
  Value* constant(ir::TensorData data) {
    DType dtype = data.dtype;
    std::vector<ir::Dim> dims;
    for (int64_t d : data.dims) dims.push_back(ir::Dim::fixed(d));
    return typed(node1("Constant", {}, {ir::attr::t("value", std::move(data))}), dtype, dims);
  }
  Value* zeroLike(Value* v) { return constant(ir::TensorData::fromDoubles({0.0}, dtypeOf(v), {})); }
  Value* cast(Value* v, DType to) {
    if (dtypeOf(v) == to) return v;
    return typed(node1("Cast", {v}, {ir::attr::i("to", static_cast<int64_t>(to))}), to, v->type.shape);
  }

  static ir::Attribute* find(Attributes& attrs, const std::string& name) {
    for (ir::Attribute& a : attrs)
      if (a.name == name) return &a;
    return nullptr;
  }
  static void erase(Attributes& attrs, const std::string& name) {
    attrs.erase(std::remove_if(attrs.begin(), attrs.end(), [&](const ir::Attribute& a) { return a.name == name; }),
                attrs.end());
  }
  // Drops an attribute an older opset lacks when it has the value that older opset behaves as.
  void dropDefaultAttribute(Attributes& attrs, const std::string& name, int64_t value, int since,
                            const std::string& what) {
    if (opset_ >= since) return;
    if (const ir::Attribute* a = find(attrs, name)) {
      if (a->i != value) needs(since, what + " (" + name + "=" + std::to_string(a->i) + ")");
      erase(attrs, name);
    }
  }

  // Negative axes are opset 11's; older opsets count from the front only.
  std::vector<int64_t> nonNegative(std::vector<int64_t> axes, int64_t rank, const std::string& op) {
    for (int64_t& a : axes) {
      if (a >= 0) continue;
      if (rank < 0) needs(11, op + " along a negative axis of a tensor of unknown rank");
      a += rank;
    }
    return axes;
  }
  void normalizeAxisAttributes(const std::string& op, const Values& in, Attributes& attrs) {
    static const char* const kAxisOps[] = {"Concat", "Gather", "Flatten", "Compress", "ArgMax", "ArgMin",
                                           "Split", "ScatterElements", "TopK"};
    bool reduce = op.rfind("Reduce", 0) == 0;
    if (!reduce && std::find(std::begin(kAxisOps), std::end(kAxisOps), op) == std::end(kAxisOps)) return;
    if (in.empty() || !in[0]) return;
    int64_t rank = rankOf(in[0]);
    for (ir::Attribute& a : attrs) {
      if (a.name == "axis") a.i = nonNegative({a.i}, rank, op)[0];
      if (a.name == "axes") a.ints = nonNegative(a.ints, rank, op);
    }
  }

  // Squeeze / Unsqueeze / ReduceSum: axes input (13) -> axes attribute.
  Values axesInputAsAttribute(const std::string& op, Values in, size_t numOutputs, Attributes& attrs) {
    bool noopWithEmptyAxes = false;
    if (ir::Attribute* a = find(attrs, "noop_with_empty_axes")) {
      noopWithEmptyAxes = a->i != 0;
      erase(attrs, "noop_with_empty_axes");
    }
    std::optional<std::vector<int64_t>> axes;
    if (in.size() > 1 && in[1]) {
      axes = knownInts(in[1]);
      if (!axes) needs(13, op + " with axes computed at run time");
    }
    in.resize(1);
    if (!axes || axes->empty()) {
      if (noopWithEmptyAxes) return node("Identity", in, numOutputs, {});
      return node(op, in, numOutputs, std::move(attrs));
    }
    if (opset_ < 11) {
      int64_t rank = rankOf(in[0]);
      if (op == "Unsqueeze" && rank >= 0) rank += static_cast<int64_t>(axes->size());
      axes = nonNegative(*axes, rank, op);
    }
    attrs.push_back(ir::attr::ints("axes", *axes));
    return node(op, in, numOutputs, std::move(attrs));
  }

  Values splitInputAsAttribute(Values in, size_t numOutputs, Attributes& attrs) {
    if (in.size() > 1 && in[1]) {
      std::optional<std::vector<int64_t>> split = knownInts(in[1]);
      if (!split && opset_ >= 11) return splitToSequence(in, numOutputs, attrs);
      if (!split) needs(11, "Split with sizes computed at run time");
      attrs.push_back(ir::attr::ints("split", *split));
    }
    in.resize(1);
    return node("Split", in, numOutputs, std::move(attrs));
  }

  // Split with sizes computed at run time (11, 12): SplitToSequence takes them as an input, and
  // each piece is read back with SequenceAt (how many is known: the list's length).
  Values splitToSequence(const Values& in, size_t numOutputs, const Attributes& attrs) {
    Value* x = in[0];
    DType dtype = dtypeOf(x);
    Value* seq = node1("SplitToSequence", {x, in[1]}, attrs);
    if (seq->type.dtype == DType::Undefined) seq->type = ir::TensorType::sequenceOf(dtype);
    std::optional<std::vector<ir::Dim>> pieceShape = x->type.shape;
    if (pieceShape) {
      int64_t axis = 0;
      for (const ir::Attribute& a : attrs)
        if (a.name == "axis") axis = a.i < 0 ? a.i + static_cast<int64_t>(pieceShape->size()) : a.i;
      if (axis >= 0 && axis < static_cast<int64_t>(pieceShape->size())) (*pieceShape)[axis] = ir::Dim{};
    }
    Values pieces;
    for (size_t k = 0; k < numOutputs; ++k) {
      Value* index = constant(ir::TensorData::fromInt64s({static_cast<int64_t>(k)}, {}));
      pieces.push_back(typed(node1("SequenceAt", {seq, index}), dtype, pieceShape));
    }
    return pieces;
  }

  // Before opset 13 Softmax flattens the input to 2-D at `axis`; over the last axis that is the
  // same as opset 13's per-axis softmax, so other axes are moved there and back.
  Values softmaxOverLastAxis(const std::string& op, const Values& in, Attributes& attrs) {
    Value* x = in[0];
    int64_t rank = rankOf(x);
    if (rank < 1) needs(13, op + " of a tensor of unknown rank");
    int64_t axis = -1;
    if (ir::Attribute* a = find(attrs, "axis")) axis = a->i;
    erase(attrs, "axis");
    if (axis < 0) axis += rank;
    attrs.push_back(ir::attr::i("axis", rank - 1));
    if (axis == rank - 1) return node(op, {x}, 1, attrs);
    std::vector<int64_t> perm(rank);
    for (int64_t k = 0; k < rank; ++k) perm[k] = k;
    std::swap(perm[axis], perm[rank - 1]);
    std::optional<std::vector<ir::Dim>> moved = x->type.shape;
    std::swap((*moved)[axis], (*moved)[rank - 1]);
    Value* t = typed(node1("Transpose", {x}, {ir::attr::ints("perm", perm)}), x->type.dtype, moved);
    Value* y = typed(node1(op, {t}, attrs), x->type.dtype, moved);
    return {node1("Transpose", {y}, {ir::attr::ints("perm", perm)})};
  }

  // Resize-13 -> Resize-11 (roi and scales inputs required), Resize-10 / Upsample-9 (scales only,
  // asymmetric coordinates, scales >= 1: PyTorch's nearest upsampling and nothing else).
  Value* resize(Values in, Attributes& attrs) {
    in.resize(4, nullptr);
    if (opset_ >= 11) {
      Value* empty = nullptr;
      for (size_t k : {size_t(1), size_t(2)})
        if (!in[k]) in[k] = empty ? empty : (empty = constant(ir::TensorData::fromDoubles({}, DType::Float, {0})));
      if (!in[3]) in.resize(3);
      return node1("Resize", in, attrs);
    }
    auto str = [&](const char* name, const char* dflt) {
      const ir::Attribute* a = find(attrs, name);
      return a ? a->s : std::string(dflt);
    };
    std::string mode = str("mode", "nearest"), coords = str("coordinate_transformation_mode", "half_pixel");
    if (mode != "nearest" || coords != "asymmetric" || str("nearest_mode", "round_prefer_floor") != "floor")
      needs(11, "Resize with mode " + mode + " and " + coords +
                    " coordinates (PyTorch's linear/cubic interpolation, or nearest-exact)");
    std::vector<double> scales;
    if (auto known = in[2] ? knownScalarList(in[2]) : std::nullopt) {
      scales = *known;
    } else {
      std::optional<std::vector<int64_t>> sizes = knownInts(in[3]);
      if (!sizes || !typeOf(in[0]).isFullyStatic() || in[0]->type.rank() != static_cast<int64_t>(sizes->size()))
        needs(11, "Resize to an output size computed at run time");
      std::vector<int64_t> inSizes = in[0]->type.staticSizes();
      for (size_t k = 0; k < sizes->size(); ++k) {
        float s = static_cast<float>((*sizes)[k]) / static_cast<float>(inSizes[k]);
        // Opsets 9 and 10 take scales only: output = floor(input * scale) must give PyTorch's size.
        if (static_cast<int64_t>(std::floor(inSizes[k] * s)) != (*sizes)[k])
          needs(11, "Resize from size " + std::to_string(inSizes[k]) + " to " + std::to_string((*sizes)[k]));
        scales.push_back(s);
      }
    }
    for (double s : scales)
      if (s < 1) needs(11, "nearest downsampling (scale " + std::to_string(s) + ")");
    Value* scaleTensor =
        constant(ir::TensorData::fromDoubles(scales, DType::Float, {static_cast<int64_t>(scales.size())}));
    return node1(opset_ == 10 ? "Resize" : "Upsample", {in[0], scaleTensor}, {ir::attr::s("mode", "nearest")});
  }
  std::optional<std::vector<double>> knownScalarList(const Value* v) {
    const ir::TensorData* t = knownData(v);
    if (!t || t->dims.size() != 1) return std::nullopt;
    std::vector<double> out;
    for (int64_t k = 0; k < t->numel(); ++k) out.push_back(t->elementAsDouble(k));
    return out;
  }

  // Clip-6 takes float bounds known at export time; otherwise (and for integers before opset
  // 12) the bounds are applied with Where, which keeps NaN like Clip does.
  Value* clip(Values in, Attributes& attrs) {
    Value* x = in[0];
    Value* lo = in.size() > 1 ? in[1] : nullptr;
    Value* hi = in.size() > 2 ? in[2] : nullptr;
    bool floating = isFloatType(dtypeOf(x));
    if (floating && opset_ >= 11) return node1("Clip", in, attrs);
    std::optional<double> loValue = lo ? knownScalar(lo) : std::nullopt, hiValue = hi ? knownScalar(hi) : std::nullopt;
    // Clip-6 refuses min > max, where PyTorch gives max everywhere (as the Where form does).
    bool ordered = !loValue || !hiValue || *loValue <= *hiValue;
    if (floating && ordered && (!lo || loValue) && (!hi || hiValue)) {
      if (loValue) attrs.push_back(ir::attr::f("min", *loValue));
      if (hiValue) attrs.push_back(ir::attr::f("max", *hiValue));
      return node1("Clip", {x}, attrs);
    }
    Value* y = x;
    auto bound = [&](Value* b, const char* compare) {
      Value* outside = typed(node1(compare, {y, b}), DType::Bool);
      y = typed(node1("Where", {outside, b, y}), x->type.dtype, x->type.shape);
    };
    if (lo) bound(lo, "Less");
    if (hi) bound(hi, "Greater");
    return y;
  }

  // Integer Max/Min are opset 12's: pairwise Where(Less/Greater) is exact for every integer.
  Value* maxMin(const std::string& op, const Values& in, Attributes& attrs) {
    if (opset_ >= 12 || in.size() < 2 || isFloatType(dtypeOf(in[0]))) return node1(op, in, attrs);
    Value* y = in[0];
    for (size_t k = 1; k < in.size(); ++k) {
      Value* takeOther = typed(node1(op == "Max" ? "Less" : "Greater", {y, in[k]}), DType::Bool);
      y = typed(node1("Where", {takeOther, in[k], y}), in[0]->type.dtype);
    }
    return y;
  }

  // Pow-7 takes one float type for base and exponent.
  Value* pow(const Values& in, Attributes& attrs) {
    DType base = dtypeOf(in[0]);
    if (isFloatType(base)) return node1("Pow", {in[0], cast(in[1], base)}, attrs);
    Value* y = node1("Pow", {cast(in[0], DType::Double), cast(in[1], DType::Double)}, attrs);
    return cast(typed(y, DType::Double, in[0]->type.shape), base);
  }

  // Float Equal is opset 11's: not (a < b or a > b), and neither is NaN.
  Value* equal(Value* a, Value* b) {
    DType t = dtypeOf(a);
    if (t == DType::Int8 || t == DType::Int16 || t == DType::Uint8 || t == DType::Uint16)
      return node1("Equal", {cast(a, DType::Int32), cast(b, DType::Int32)});
    if (!isFloatType(t)) return node1("Equal", {a, b});
    auto boolOp = [&](const char* op, Values args) { return typed(node1(op, args), DType::Bool); };
    Value* ordered = boolOp("Or", {boolOp("Less", {a, b}), boolOp("Greater", {a, b})});
    Value* nan = boolOp("Or", {boolOp("IsNaN", {a}), boolOp("IsNaN", {b})});
    return boolOp("And", {boolOp("Not", {ordered}), boolOp("Not", {nan})});
  }

  Value* orEqual(const std::string& op, const Values& in) {
    Value *a = in[0], *b = in[1];
    bool ge = op == "GreaterOrEqual";
    if (!isFloatType(dtypeOf(a))) return node1("Not", {typed(node1(ge ? "Less" : "Greater", {a, b}), DType::Bool)});
    Value* strict = typed(node1(ge ? "Greater" : "Less", {a, b}), DType::Bool);
    Value* eq = opset_ >= 11 ? typed(node1("Equal", {a, b}), DType::Bool) : equal(a, b);
    return node1("Or", {strict, eq});
  }

  // Range (opset 11) = start + delta * [0, n), the indices coming from NonZero of n ones.
  Value* range(const Values& in) {
    Value *start = in[0], *limit = in[1], *delta = in[2];
    DType t = dtypeOf(start);
    auto dbl = [&](Value* v) { return cast(v, DType::Double); };
    Value* span = typed(node1("Sub", {dbl(limit), dbl(start)}), DType::Double);
    Value* steps = typed(node1("Ceil", {typed(node1("Div", {span, dbl(delta)}), DType::Double)}), DType::Double);
    Value* zero = constant(ir::TensorData::fromDoubles({0.0}, DType::Double, {}));
    Value* count = cast(typed(node1("Max", {steps, zero}), DType::Double, std::vector<ir::Dim>{}), DType::Int64);
    Value* shape = typed(node1("Unsqueeze", {count}, {ir::attr::ints("axes", {0})}), DType::Int64,
                         std::vector<ir::Dim>{ir::Dim::fixed(1)});
    Value* ones = typed(node1("ConstantOfShape", {shape}, {ir::attr::t("value", ir::TensorData::fromInt64s({1}, {1}))}),
                        DType::Int64, std::vector<ir::Dim>{ir::Dim()});
    Value* where = typed(node1("NonZero", {ones}), DType::Int64, std::vector<ir::Dim>{ir::Dim::fixed(1), ir::Dim()});
    Value* index = typed(node1("Squeeze", {where}, {ir::attr::ints("axes", {0})}), DType::Int64,
                         std::vector<ir::Dim>{ir::Dim()});
    Value* scaled = typed(node1("Mul", {cast(index, t), delta}), t, std::vector<ir::Dim>{ir::Dim()});
    return node1("Add", {scaled, start});
  }

  // Mod (opset 10) of integers: Div truncates, so a - b * (a / b) is C's remainder (fmod=1);
  // PyTorch's remainder (fmod=0) takes the divisor's sign, adding b where the signs differ.
  Value* integerMod(const Values& in, Attributes& attrs) {
    Value *a = in[0], *b = in[1];
    DType t = dtypeOf(a);
    if (isFloatType(t)) needs(10, "Mod of floating-point values");
    const ir::Attribute* fmod = find(attrs, "fmod");
    Value* quotient = typed(node1("Div", {a, b}), t);
    Value* truncated = typed(node1("Sub", {a, typed(node1("Mul", {quotient, b}), t)}), t);
    if (fmod && fmod->i) return truncated;
    Value* zero = zeroLike(a);
    auto boolOp = [&](const char* op, Values args) { return typed(node1(op, args), DType::Bool); };
    Value* signsDiffer = boolOp("Xor", {boolOp("Less", {truncated, zero}), boolOp("Less", {b, zero})});
    Value* nonZero = boolOp("Not", {boolOp("Equal", {truncated, zero})});
    Value* adjusted = typed(node1("Add", {truncated, b}), t);
    return node1("Where", {boolOp("And", {nonZero, signsDiffer}), adjusted, truncated});
  }

  // Pad-2: pads and value attributes, float tensors only.
  Value* pad(Values in, Attributes& attrs) {
    std::optional<std::vector<int64_t>> pads = knownInts(in[1]);
    if (!pads) needs(11, "Pad with pads computed at run time");
    if (!isFloatType(dtypeOf(in[0]))) needs(11, "Pad of a non-float tensor");
    attrs.push_back(ir::attr::ints("pads", *pads));
    if (in.size() > 2 && in[2]) {
      std::optional<double> value = knownScalar(in[2]);
      if (!value) needs(11, "Pad with a fill value computed at run time");
      attrs.push_back(ir::attr::f("value", *value));
    }
    return node1("Pad", {in[0]}, attrs);
  }

  // TopK-1 (k attribute) / TopK-10 (k input): largest and sorted are opset 11's; the k smallest
  // are the k largest of -x, and both older forms always sort.
  Values topK(Values in, Attributes& attrs) {
    int64_t largest = 1;
    if (const ir::Attribute* a = find(attrs, "largest")) largest = a->i;
    erase(attrs, "largest");
    erase(attrs, "sorted");
    if (opset_ < 10) {
      std::optional<std::vector<int64_t>> k = knownInts(in[1]);
      if (!k || k->size() != 1) needs(10, "TopK with k computed at run time");
      attrs.push_back(ir::attr::i("k", (*k)[0]));
      in.resize(1);
    }
    if (largest) return node("TopK", in, 2, attrs);
    DType t = dtypeOf(in[0]);
    if (t == DType::Uint8 || t == DType::Uint16 || t == DType::Uint32 || t == DType::Uint64)
      needs(11, "TopK of the smallest unsigned values");
    in[0] = typed(node1("Neg", {in[0]}), t, in[0]->type.shape);
    Values out = node("TopK", in, 2, attrs);
    typed(out[0], t);
    return {node1("Neg", {out[0]}), out[1]};
  }

  Values dropout(Values in, size_t numOutputs, Attributes& attrs) {
    if (in.size() > 1 && in[1]) {
      std::optional<double> ratio = knownScalar(in[1]);
      if (!ratio) needs(12, "Dropout with a ratio computed at run time");
      attrs.push_back(ir::attr::f("ratio", *ratio));
    }
    if (in.size() > 2 && in[2]) {
      std::optional<double> training = knownScalar(in[2]);
      std::optional<double> ratio = in.size() > 1 && in[1] ? knownScalar(in[1]) : 0.5;
      // Training-mode dropout with p = 0 (F.dropout's default training=True) drops nothing.
      if (training && *training != 0 && ratio && *ratio == 0 && numOutputs == 1) return node("Identity", {in[0]}, 1, {});
      if (!training || *training != 0) needs(12, "Dropout in training mode");
    }
    return node("Dropout", {in[0]}, numOutputs, attrs);
  }

  // MaxPool-8 has no ceil_mode: with static sizes, padding the end so that rounding down gives
  // PyTorch's ceil-mode size is the same (padding never wins a max). PyTorch drops a last window
  // that would start in the end padding.
  void maxPoolCeilModeAsPadding(const Values& in, Attributes& attrs) {
    ir::Attribute* ceil = find(attrs, "ceil_mode");
    if (!ceil || ceil->i == 0) return;
    const ir::Attribute* kernel = find(attrs, "kernel_shape");
    const ir::Attribute* dilations = find(attrs, "dilations");
    bool dilated = dilations && std::any_of(dilations->ints.begin(), dilations->ints.end(), [](int64_t d) { return d != 1; });
    if (!kernel || dilated || !typeOf(in[0]).isFullyStatic()) return;  // fails below, naming opset 10
    size_t n = kernel->ints.size();
    std::vector<int64_t> sizes = in[0]->type.staticSizes();
    std::vector<int64_t> strides(n, 1), pads(2 * n, 0);
    if (const ir::Attribute* s = find(attrs, "strides")) strides = s->ints;
    if (const ir::Attribute* p = find(attrs, "pads")) pads = p->ints;
    for (size_t k = 0; k < n; ++k) {
      int64_t size = sizes[sizes.size() - n + k], kk = kernel->ints[k], s = strides[k];
      int64_t padded = size + pads[k] + pads[n + k];
      int64_t out = (padded - kk + s - 1) / s + 1;
      if ((out - 1) * s >= size + pads[k]) --out;
      pads[n + k] += std::max<int64_t>(0, (out - 1) * s + kk - padded);
    }
    ceil->i = 0;  // before `attrs` changes under the pointer
    erase(attrs, "pads");
    attrs.push_back(ir::attr::ints("pads", pads));
  }

  // DepthToSpace-1 knows DCR only; CRD (pixel_shuffle) is Reshape-Transpose-Reshape.
  Value* depthToSpace(const Values& in, Attributes& attrs) {
    const ir::Attribute* mode = find(attrs, "mode");
    if (!mode || mode->s != "CRD") return node1("DepthToSpace", in, attrs);
    Value* x = in[0];
    if (!typeOf(x).isFullyStatic() || x->type.rank() != 4) needs(11, "DepthToSpace (CRD) of a tensor of dynamic shape");
    int64_t r = find(attrs, "blocksize")->i;
    std::vector<int64_t> s = x->type.staticSizes();
    auto reshape = [&](Value* v, std::vector<int64_t> dims) {
      Value* shape = constant(ir::TensorData::fromInt64s(dims, {static_cast<int64_t>(dims.size())}));
      std::vector<ir::Dim> ds;
      for (int64_t d : dims) ds.push_back(ir::Dim::fixed(d));
      return typed(node1("Reshape", {v, shape}), x->type.dtype, ds);
    };
    Value* split = reshape(x, {s[0], s[1] / (r * r), r, r, s[2], s[3]});
    Value* moved = typed(node1("Transpose", {split}, {ir::attr::ints("perm", {0, 1, 4, 2, 5, 3})}), x->type.dtype);
    return node1("Reshape", {moved, constant(ir::TensorData::fromInt64s({s[0], s[1] / (r * r), s[2] * r, s[3] * r}, {4}))});
  }

  // Slice-1: starts/ends/axes attributes, no steps. An axis with another step, of static size,
  // becomes a Gather of the indices Slice-10 would take.
  Value* slice(const Values& in, Attributes& attrs) {
    auto bound = [&](size_t k) -> std::optional<std::vector<int64_t>> {
      if (in.size() <= k || !in[k]) return std::nullopt;
      std::optional<std::vector<int64_t>> v = knownInts(in[k]);
      if (!v) needs(10, "Slice with bounds computed at run time");
      return v;
    };
    std::vector<int64_t> starts = *bound(1), ends = *bound(2);
    std::optional<std::vector<int64_t>> axes = bound(3), steps = bound(4);
    int64_t rank = rankOf(in[0]);
    if (!axes) {
      axes.emplace();
      for (size_t k = 0; k < starts.size(); ++k) axes->push_back(static_cast<int64_t>(k));
    }
    axes = nonNegative(*axes, rank, "Slice");
    if (!steps) steps = std::vector<int64_t>(starts.size(), 1);
    std::vector<int64_t> unitStarts, unitEnds, unitAxes;
    std::vector<std::pair<int64_t, std::vector<int64_t>>> gathers;  // (axis, indices)
    for (size_t k = 0; k < starts.size(); ++k) {
      if ((*steps)[k] == 1) {
        unitStarts.push_back(starts[k]);
        unitEnds.push_back(ends[k]);
        unitAxes.push_back((*axes)[k]);
        continue;
      }
      std::optional<int64_t> size = staticSize(in[0], (*axes)[k]);
      if (!size) needs(10, "Slice with a step other than 1 along a dimension of dynamic size");
      gathers.emplace_back((*axes)[k], sliceIndices(starts[k], ends[k], (*steps)[k], *size));
    }
    Value* y = in[0];
    if (!unitAxes.empty() || gathers.empty()) {
      attrs.push_back(ir::attr::ints("starts", unitStarts));
      attrs.push_back(ir::attr::ints("ends", unitEnds));
      attrs.push_back(ir::attr::ints("axes", unitAxes));
      y = node1("Slice", {y}, attrs);
      if (gathers.empty()) return y;
      typed(y, dtypeOf(in[0]));
    }
    for (size_t g = 0; g < gathers.size(); ++g) {
      const auto& [axis, indices] = gathers[g];
      Value* index = constant(ir::TensorData::fromInt64s(indices, {static_cast<int64_t>(indices.size())}));
      y = node1("Gather", {y, index}, {ir::attr::i("axis", axis)});
      if (g + 1 < gathers.size()) typed(y, dtypeOf(in[0]));
    }
    return y;
  }
  std::optional<int64_t> staticSize(Value* v, int64_t axis) {
    const ir::TensorType& t = typeOf(v);
    if (!t.hasRank() || axis >= t.rank() || !(*t.shape)[axis].isStatic()) return std::nullopt;
    return (*t.shape)[axis].size;
  }
  // The indices ONNX Slice-10 takes along one axis of `size` elements.
  static std::vector<int64_t> sliceIndices(int64_t start, int64_t end, int64_t step, int64_t size) {
    auto clampTo = [](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
    if (start < 0) start += size;
    if (end < 0 && end > std::numeric_limits<int64_t>::min() + size) end += size;
    else if (end < 0) end = -1;
    std::vector<int64_t> out;
    if (step > 0) {
      start = clampTo(start, 0, size);
      end = clampTo(end, 0, size);
      for (int64_t i = start; i < end; i += step) out.push_back(i);
    } else {
      start = clampTo(start, 0, size - 1);
      end = clampTo(end, -1, size - 1);
      for (int64_t i = start; i > end; i += step) out.push_back(i);
    }
    return out;
  }

  Context& ctx_;
  int opset_;
};

}  // namespace

std::vector<ir::Value*> emitInTargetOpset(Context& ctx, const std::string& opType,
                                          const std::vector<ir::Value*>& inputs, size_t numOutputs,
                                          std::vector<ir::Attribute> attributes) {
  return OpsetForms(ctx).emit(opType, inputs, numOutputs, std::move(attributes));
}

}  // namespace pt2onnx::symbolic
