// Complex tensors as their real view. ONNX has no complex tensors, so each complex value becomes
// PyTorch's real view of it, (..., 2) = (real, imaginary), and each op on complex values the real
// ops that compute that view:
//   stft(return_complex=True)  -> stft(return_complex=False)       (the view itself)
//   view_as_real(c), view_as_complex(r) -> alias of the view;  complex(re, im) -> stack([re, im], -1)
//   polar(m, a) -> stack([m cos a, m sin a], -1)
//   real(c), imag(c) -> select(c, -1, 0 | 1);  abs(c) -> sqrt(sum(c^2, -1));  angle(c) -> atan2(imag, real)
//   size(c[, dim]), dim(c), numel(c) -> of the view, without its last axis
//   reshape(c, shape), view(c, shape) -> of the view, to shape + [2] (torchaudio's spectrogram)
//   slice/select/narrow/transpose/(un)squeeze/permute/flip(c, dims), pad(c, pads) -> the same op on the
//     view, negative dims counting one more, (re, im) kept last and unpadded (zero fill only);
//     contiguous/clone/detach(c) -> c;  neg(c) -> neg of the view
//   conj(c) -> c * [1, -1];  resolve_conj / resolve_neg -> c
//   c1 + c2, c1 - c2 -> on the views;  c * x, c / x (x real: a tensor gets a trailing 1) -> on the view
//   c1 * c2 -> stack([a c - b d, a d + b c], -1);  x.to(complex dtype) -> stack([x, 0], -1)
//   istft(c, ...) -> istft of the view (return_complex=False)
//   fft_fft, fft_ifft, fft_rfft, fft_irfft -> from opset 17, pt2onnx::dft (ONNX DFT) of the view with
//     the transformed dim last, padded or cut to n, scaled as `norm` says (irfft: the whole spectrum
//     rebuilt from its conjugate symmetry, inverted, its real part); below 17, products with cos/sin
//     matrices built from arange at run time (O(n^2) memory)
// Any other use of a complex value (another op, a graph output, control flow) is an ExportError
// naming the node. Complex values are found by where they come from (stft with
// return_complex=True, view_as_complex, complex, polar, a complex graph input is an error) and
// followed through the ops above, so scripted graphs without dtypes are handled too.
#include <cmath>
#include <set>

#include <ATen/ATen.h>

#include "common/errors.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"
#include "exporter/torch_compat.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::NamedValue;
using torch::jit::Node;
using torch::jit::Value;

bool isComplexType(const c10::TypePtr& type) {
  auto t = type->cast<c10::TensorType>();
  return t && t->scalarType() && c10::isComplexType(*t->scalarType());
}

// The real view's type of a complex tensor type: the matching float dtype, sizes + [2].
c10::TypePtr realViewType(const c10::TypePtr& type) {
  auto t = type->cast<c10::TensorType>();
  if (!t) return c10::TensorType::get();
  c10::TensorTypePtr out = c10::TensorType::get();
  if (t->scalarType()) out = out->withScalarType(c10::toRealValueType(*t->scalarType()));
  if (auto sizes = t->sizes().concrete_sizes()) {
    std::vector<int64_t> dims = *sizes;
    dims.push_back(2);
    out = out->withSizes(dims);
  }
  return out;
}

// Where stft/istft take return_complex: by name, as the schemas grew (stft's align_to_window).
size_t returnComplexIndex(const Node* n) {
  auto at = n->schema().argumentIndexWithName("return_complex");
  PT2ONNX_ASSERT(at.has_value(), jit::describeNode(n) << " has no return_complex argument");
  return static_cast<size_t>(*at);
}

class ComplexLowering {
 public:
  ComplexLowering(torch::jit::Graph& graph, int opset) : graph_(graph), opset_(opset) {}

  void run() {
    for (Value* in : graph_.inputs())
      if (isComplexType(in->type()))
        throw ExportError("model input '" + in->debugName() + "' is a complex tensor: ONNX has no complex tensors; "
                          "pass torch.view_as_real(x) and call torch.view_as_complex in the model");
    lowerBlock(graph_.block());
    for (Value* out : graph_.outputs())
      if (complex_.count(out))
        throw ExportError("a model output is a complex tensor (made by " + jit::describeNode(out->node()) +
                          "): ONNX has no complex tensors; return torch.view_as_real(...) of it");
  }

 private:
  void lowerBlock(torch::jit::Block* block) {
    for (auto it = block->nodes().begin(); it != block->nodes().end();) {
      Node* n = *it;
      ++it;  // `n` may be destroyed
      for (torch::jit::Block* b : n->blocks()) {
        lowerBlock(b);
        for (Value* out : b->outputs())  // an If / Loop output would hold the view untracked
          if (complex_.count(out)) throw unsupported(n, "a complex value carried out of a block");
      }
      lowerNode(n);
    }
  }

  bool readsComplex(Node* n) const {
    for (Value* in : n->inputs())
      if (complex_.count(in)) return true;
    return false;
  }

  Value* op(c10::Symbol kind, std::vector<NamedValue> args, std::vector<NamedValue> kwargs = {}) {
    return graph_.insert(kind, args, kwargs);
  }
  Value* part(Value* view, int64_t k) { return op(c10::aten::select, {view, -1, k}); }
  Value* stackParts(Value* re, Value* im) {
    return op(c10::aten::stack, {graph_.insertNode(graph_.createList(c10::TensorType::get(), {re, im}))->output(), -1});
  }
  // A real operand of an elementwise op with a complex one: tensors get a trailing dim of 1.
  Value* asRealOperand(Value* x) {
    return x->type()->cast<c10::TensorType>() ? op(c10::aten::unsqueeze, {x, -1}) : x;
  }

  // Replaces n's output by `view` (the real view of its complex result), inserted before n.
  void replaceWithView(Node* n, Value* view) {
    complex_.insert(view);
    replaceWithReal(n, view);
  }
  // Replaces n's output by `value`, a real value (a part, a magnitude, a shape) inserted before n.
  static void replaceWithReal(Node* n, Value* value) {
    n->output()->replaceAllUsesWith(value);
    n->destroy();
  }

  void lowerNode(Node* n) {
    bool reads = readsComplex(n);
    static const std::set<c10::Symbol> kSources = {c10::aten::stft, c10::aten::view_as_complex, c10::aten::complex,
                                                   c10::aten::polar, c10::aten::fft_fft, c10::aten::fft_rfft,
                                                   c10::aten::fft_ifft, c10::aten::to};
    if (!reads && !kSources.count(n->kind())) return;  // most nodes: nothing complex in or out
    std::string kind = n->kind().toQualString();
    torch::jit::WithInsertPoint guard(n);
    Node* before = n->prev();
    auto stamped = [&](Value* v) {
      for (Node* k = before->next(); k != n; k = k->next()) k->copyMetadata(n);
      return v;
    };
    if (kind == "aten::stft" && !reads) {
      size_t returnComplexAt = returnComplexIndex(n);
      auto returnComplex = torch::jit::toIValue(n->input(returnComplexAt));
      bool complexOut = returnComplex && returnComplex->isBool() ? returnComplex->toBool() : isComplexType(n->output()->type());
      if (!complexOut) return;
      n->replaceInput(returnComplexAt, graph_.insertConstant(false));
      n->output()->setType(realViewType(n->output()->type()));
      complex_.insert(n->output());
      return;
    }
    if (kind == "aten::view_as_complex") return replaceWithView(n, stamped(op(c10::aten::alias, {n->input(0)})));
    if (kind == "aten::complex" && !reads) return replaceWithView(n, stamped(stackParts(n->input(0), n->input(1))));
    if (kind == "aten::polar" && !reads) {
      Value* m = n->input(0);
      Value* a = n->input(1);
      Value* re = op(c10::aten::mul, {m, op(c10::aten::cos, {a})});
      Value* im = op(c10::aten::mul, {m, op(c10::aten::sin, {a})});
      return replaceWithView(n, stamped(stackParts(re, im)));
    }
    if (kind == "aten::fft_fft" || kind == "aten::fft_ifft" || kind == "aten::fft_rfft" || kind == "aten::fft_irfft")
      return lowerFft(n, kind, stamped);
    if (kind == "aten::to") {
      auto target = toComplexDtype(n);
      if (reads && (target || isComplexType(n->output()->type())))
        return replaceWithView(n, n->input(0));  // complex to complex: the view as it is
      if (!reads && target) {  // real to complex: a zero imaginary part
        Value* x = op(c10::aten::to, {n->input(0), c10::toRealValueType(*target), false, false});
        return replaceWithView(n, stamped(stackParts(x, op(c10::aten::zeros_like, {x}))));
      }
    }
    if (!reads) return;
    Value* c = n->inputs().empty() ? nullptr : n->input(0);
    if (kind == "aten::resolve_conj" || kind == "aten::resolve_neg") return replaceWithView(n, c);
    if (kind == "aten::view_as_real") {  // the view as a value of its own: its readers are real ops
      Value* view = stamped(op(c10::aten::alias, {c}));
      return replaceWithReal(n, view);
    }
    if (kind == "aten::real" || kind == "aten::imag") {
      Value* p = stamped(part(c, kind == "aten::real" ? 0 : 1));
      return replaceWithReal(n, p);
    }
    if (kind == "aten::size" || kind == "aten::dim" || kind == "aten::numel") {  // of the complex tensor, not its view
      Value* shape = nullptr;
      if (kind == "aten::dim") {
        shape = op(c10::aten::sub, {op(c10::aten::dim, {c}), 1});
      } else if (kind == "aten::numel") {
        shape = op(c10::aten::floordiv, {op(torch_compat::atenNumel(), {c}), 2});
      } else if (n->inputs().size() == 1) {
        shape = op(c10::aten::slice, {op(c10::aten::size, {c}), 0, -1, 1});
      } else {  // size(c, dim): a negative dim counts from the view's second-to-last axis
        shape = op(c10::aten::size, {c, viewDim(n->input(1), c)});
      }
      return replaceWithReal(n, stamped(shape));
    }
    if ((kind == "aten::reshape" || kind == "aten::view") && n->inputs().size() == 2 && c == n->input(0)) {
      Value* viewShape = op(c10::aten::add, {n->input(1), graph_.insertConstant(std::vector<int64_t>{2})});
      return replaceWithView(n, stamped(op(n->kind(), {c, viewShape})));
    }
    if (lowerIndexing(n, kind, c, stamped)) return;
    if (kind == "aten::angle") {
      Value* angle = stamped(op(c10::aten::atan2, {part(c, 1), part(c, 0)}));
      return replaceWithReal(n, angle);
    }
    if (kind == "aten::abs") {
      Value* squares = op(c10::aten::mul, {c, c});
      Value* sum = op(c10::aten::sum, {squares, std::vector<int64_t>{-1}});
      Value* magnitude = stamped(op(c10::aten::sqrt, {sum}));
      return replaceWithReal(n, magnitude);
    }
    if (kind == "aten::conj" || kind == "aten::_conj" || kind == "aten::conj_physical") {
      Value* sign = graph_.insertConstant(at::tensor({1.0f, -1.0f}));
      return replaceWithView(n, stamped(op(c10::aten::mul, {c, sign})));
    }
    if ((kind == "aten::add" || kind == "aten::sub") && n->inputs().size() == 3 && complex_.count(n->input(0)) &&
        complex_.count(n->input(1))) {
      Value* sum = op(kind == "aten::add" ? c10::aten::add : c10::aten::sub, {n->input(0), n->input(1)},
                      {NamedValue("alpha", n->input(2))});
      return replaceWithView(n, stamped(sum));
    }
    if (kind == "aten::mul" && complex_.count(n->input(0)) && complex_.count(n->input(1))) {
      Value *a = part(n->input(0), 0), *b = part(n->input(0), 1);
      Value *x = part(n->input(1), 0), *y = part(n->input(1), 1);
      Value* re = op(c10::aten::sub, {op(c10::aten::mul, {a, x}), op(c10::aten::mul, {b, y})});
      Value* im = op(c10::aten::add, {op(c10::aten::mul, {a, y}), op(c10::aten::mul, {b, x})});
      return replaceWithView(n, stamped(stackParts(re, im)));
    }
    if ((kind == "aten::mul" || kind == "aten::div") && n->inputs().size() == 2) {
      bool complexFirst = complex_.count(n->input(0)) > 0;
      if (kind == "aten::div" && !complexFirst) throw unsupported(n, "dividing by a complex tensor");
      Value* view = complexFirst ? n->input(0) : n->input(1);
      Value* other = asRealOperand(complexFirst ? n->input(1) : n->input(0));
      return replaceWithView(n, stamped(op(kind == "aten::mul" ? c10::aten::mul : c10::aten::div, {view, other})));
    }
    if (kind == "aten::istft") {
      size_t returnComplexAt = returnComplexIndex(n);
      auto returnComplex = torch::jit::toIValue(n->input(returnComplexAt));
      if (!returnComplex || !returnComplex->isBool() || returnComplex->toBool())
        throw unsupported(n, "istft with return_complex=True");
      return;  // istft takes the real view as it is
    }
    throw unsupported(n, "");
  }

  // The view's dim for the complex tensor's dim `d`: a negative dim counts one more (past the view's
  // (re, im) axis); one computed at run time is made non-negative with the complex tensor's rank.
  // `newDim`: d counts in a rank one higher (unsqueeze's).
  Value* viewDim(Value* d, Value* view, bool newDim = false) {
    auto constant = torch::jit::toIValue(d);
    if (constant && constant->isInt())
      return constant->toInt() < 0 ? graph_.insertConstant(constant->toInt() - 1) : d;
    Value* rank = op(c10::aten::dim, {view});
    return op(c10::aten::remainder, {d, newDim ? rank : op(c10::aten::sub, {rank, 1})});
  }

  // Ops that pick, move or pad elements along the complex tensor's dims: the same op on the view,
  // along the view's dims, its (re, im) axis untouched. Returns false for any other op.
  template <typename Stamp>
  bool lowerIndexing(Node* n, const std::string& kind, Value* c, const Stamp& stamped) {
    if (!c || !complex_.count(c)) return false;
    auto with = [&](std::vector<NamedValue> args) { replaceWithView(n, stamped(op(n->kind(), std::move(args)))); };
    if (kind == "aten::contiguous" || kind == "aten::clone" || kind == "aten::detach" || kind == "aten::alias") {
      replaceWithView(n, c);
      return true;
    }
    if (kind == "aten::neg" || (kind == "aten::squeeze" && n->inputs().size() == 1)) {  // (re, im) has size 2
      with({c});
      return true;
    }
    if (kind == "aten::slice" && n->inputs().size() == 5) {
      with({c, viewDim(n->input(1), c), n->input(2), n->input(3), n->input(4)});
      return true;
    }
    if ((kind == "aten::select" || kind == "aten::narrow") && n->input(1)->type()->cast<c10::IntType>()) {
      std::vector<NamedValue> args{c, viewDim(n->input(1), c)};
      for (size_t i = 2; i < n->inputs().size(); ++i) args.emplace_back(n->input(i));
      with(std::move(args));
      return true;
    }
    if (kind == "aten::transpose" && n->inputs().size() == 3) {
      with({c, viewDim(n->input(1), c), viewDim(n->input(2), c)});
      return true;
    }
    if ((kind == "aten::unsqueeze" || kind == "aten::squeeze") && n->inputs().size() == 2 &&
        n->input(1)->type()->cast<c10::IntType>()) {
      // unsqueeze's dim counts in the result's rank: -1 is the new last dim, before (re, im).
      with({c, viewDim(n->input(1), c, kind == "aten::unsqueeze")});
      return true;
    }
    if (kind == "aten::permute" || kind == "aten::flip") {  // a constant dims list
      std::optional<std::vector<int64_t>> dims = jit::constantInts(n->input(1));
      if (!dims) throw unsupported(n, kind + " by dims computed at run time");
      std::vector<int64_t> viewDims;
      for (int64_t d : *dims) viewDims.push_back(d < 0 ? d - 1 : d);
      if (kind == "aten::permute") viewDims.push_back(-1);  // (re, im) stays last
      with({c, viewDims});
      return true;
    }
    if (kind == "aten::constant_pad_nd" || kind == "aten::pad") {
      // Pads count from the last dim: (re, im) gets none. A constant fill must be zero (its imaginary
      // part is zero too); the other modes read each part on its own.
      bool constantMode = kind == "aten::constant_pad_nd";
      if (kind == "aten::pad") {
        auto mode = torch::jit::toIValue(n->input(2));
        if (!mode || !mode->isString()) throw unsupported(n, "a pad mode computed at run time");
        constantMode = mode->toStringRef() == "constant";
      }
      if (constantMode) {  // the fill: None or a constant zero
        auto value = torch::jit::toIValue(n->input(kind == "aten::pad" ? 3 : 2));
        bool zero = value && (value->isNone() || (value->isDouble() && value->toDouble() == 0.0) ||
                              (value->isInt() && value->toInt() == 0));
        if (!zero) throw unsupported(n, "padding a complex tensor with a value other than a constant zero");
      }
      Value* pads = op(c10::aten::add, {graph_.insertConstant(std::vector<int64_t>{0, 0}), n->input(1)});
      std::vector<NamedValue> args{c, pads};
      for (size_t i = 2; i < n->inputs().size(); ++i) args.emplace_back(n->input(i));
      with(std::move(args));
      return true;
    }
    return false;
  }

  // The complex dtype an aten::to asks for (a constant dtype argument), or nullopt.
  static std::optional<c10::ScalarType> toComplexDtype(const Node* n) {
    auto at = n->maybeSchema() ? n->schema().argumentIndexWithName("dtype") : std::nullopt;
    if (!at) return std::nullopt;
    auto dtype = torch::jit::toIValue(n->input(*at));
    if (!dtype || !dtype->isInt()) return std::nullopt;
    auto t = static_cast<c10::ScalarType>(dtype->toInt());
    return c10::isComplexType(t) ? std::optional<c10::ScalarType>(t) : std::nullopt;
  }

  // cos and sin of 2 pi (k t mod n) / n for k in [0, rows) x t in [0, cols): the DFT's matrices, in
  // `like`'s dtype (k t reduced mod n in int64 first, so large lengths keep their precision).
  std::pair<Value*, Value*> dftMatrices(Value* rows, Value* cols, Value* n, Value* nFloat, Value* like) {
    Value* k = op(c10::aten::unsqueeze, {op(c10::aten::arange, {rows}), 1});
    Value* t = op(c10::aten::unsqueeze, {op(c10::aten::arange, {cols}), 0});
    Value* kt = op(c10::aten::remainder, {op(c10::aten::mul, {k, t}), n});
    Value* theta = op(c10::aten::mul, {op(c10::aten::type_as, {kt, like}),
                                       op(c10::aten::div, {graph_.insertConstant(2 * M_PI), nFloat})});
    return {op(c10::aten::cos, {theta}), op(c10::aten::sin, {theta})};
  }

  // The length of the transformed signal: fft's n, or when None the input's `bins` (irfft: 2 (bins - 1)).
  Value* signalLength(Node* n, const std::string& kind, Value* bins) {
    if (!n->input(1)->type()->cast<c10::NoneType>()) return n->input(1);
    return kind == "aten::fft_irfft" ? op(c10::aten::mul, {op(c10::aten::sub, {bins, 1}), 2}) : bins;
  }

  // fft(x, n, dim, norm) and its inverse and real forms: the transformed dim moved last (next to the
  // view's (re, im) axis), padded or cut to n, multiplied by the DFT's matrices, moved back.
  template <typename Stamp>
  void lowerFft(Node* n, const std::string& kind, const Stamp& stamped) {
    Value* x = n->input(0);
    bool complexIn = complex_.count(x) > 0;
    bool inverse = kind == "aten::fft_ifft" || kind == "aten::fft_irfft";
    bool realOut = kind == "aten::fft_irfft";
    if (kind == "aten::fft_rfft" && complexIn) throw unsupported(n, "rfft of a complex tensor");
    if (kind == "aten::fft_irfft" && !complexIn) return;  // irfft of a real tensor: PyTorch's own (real) op
    auto dim = torch::jit::toIValue(n->input(2));
    auto norm = torch::jit::toIValue(n->input(3));
    if (!dim || !dim->isInt()) throw unsupported(n, "an fft over a dim computed at run time");
    if (!norm || !(norm->isNone() || norm->isString())) throw unsupported(n, "an fft norm computed at run time");
    std::string normMode = norm->isString() ? norm->toStringRef() : "backward";
    int64_t d = dim->toInt();
    if (normMode != "backward" && normMode != "forward" && normMode != "ortho")
      throw unsupported(n, "fft norm '" + normMode + "'");
    if (opset_ >= 17) return lowerFftToDft(n, kind, stamped, d, normMode);
    // The signal as (re, im) parts with the transformed dim last.
    Value *re = nullptr, *im = nullptr;
    if (complexIn) {
      Value* moved = op(c10::aten::movedim, {x, d < 0 ? d - 1 : d, -2});
      re = part(moved, 0);
      im = part(moved, 1);
    } else {
      re = op(c10::aten::movedim, {x, d, -1});
    }
    bool lengthGiven = !n->input(1)->type()->cast<c10::NoneType>();
    Value* bins = op(c10::aten::size, {re, -1});
    Value* size = signalLength(n, kind, bins);
    if (lengthGiven && !realOut) {  // pad with zeros or cut to n
      Value* pad = op(c10::aten::sub, {size, bins});
      Value* pads = graph_.insertNode(graph_.createList(c10::IntType::get(), {graph_.insertConstant(0), pad}))->output();
      re = op(c10::aten::constant_pad_nd, {re, pads, 0});
      if (im) im = op(c10::aten::constant_pad_nd, {im, pads, 0});
    }
    Value* scale = nullptr;  // 1/n or 1/sqrt(n) where `norm` asks for one
    Value* nFloat = op(c10::Symbol::fromQualString("aten::Float"), {size});
    if (normMode == "ortho") scale = op(c10::aten::pow, {nFloat, -0.5});
    else if (normMode == "backward" && inverse) scale = op(c10::aten::div, {graph_.insertConstant(1.0), nFloat});
    else if (normMode == "forward" && !inverse) scale = op(c10::aten::div, {graph_.insertConstant(1.0), nFloat});
    Value* out = nullptr;
    if (realOut) {  // irfft: x[t] = sum_k w_k (Re X_k cos - Im X_k sin), w = 1 at 0 and n/2, 2 elsewhere
      Value* usedBins = op(c10::aten::add, {op(c10::aten::floordiv, {size, 2}), 1});
      re = op(c10::aten::narrow, {re, -1, 0, usedBins});
      im = op(c10::aten::narrow, {im, -1, 0, usedBins});
      auto [cosine, sine] = dftMatrices(usedBins, size, size, nFloat, re);
      Value* k = op(c10::aten::type_as, {op(c10::aten::arange, {usedBins}), re});
      Value* edge = op(c10::aten::add, {op(c10::aten::type_as, {op(c10::aten::eq, {k, 0}), re}),
                                        op(c10::aten::type_as, {op(c10::aten::eq, {op(c10::aten::mul, {k, 2}), nFloat}), re})});
      Value* w = op(c10::aten::unsqueeze, {op(c10::aten::rsub, {edge, 2}), 1});
      out = op(c10::aten::sub, {op(c10::aten::matmul, {re, op(c10::aten::mul, {cosine, w})}),
                                op(c10::aten::matmul, {im, op(c10::aten::mul, {sine, w})})});
      if (scale) out = op(c10::aten::mul, {out, scale});
      out = stamped(op(c10::aten::movedim, {out, -1, d}));
      return replaceWithReal(n, out);
    }
    Value* outBins = kind == "aten::fft_rfft" ? op(c10::aten::add, {op(c10::aten::floordiv, {size, 2}), 1}) : size;
    auto [cosine, sine] = dftMatrices(size, outBins, size, nFloat, re);  // [t, k]
    double sign = inverse ? 1.0 : -1.0;  // e^{-i theta} forward, e^{+i theta} inverse
    Value* outRe = op(c10::aten::matmul, {re, cosine});
    Value* outIm = op(c10::aten::mul, {op(c10::aten::matmul, {re, sine}), sign});
    if (im) {
      outRe = op(c10::aten::sub, {outRe, op(c10::aten::mul, {op(c10::aten::matmul, {im, sine}), sign})});
      outIm = op(c10::aten::add, {outIm, op(c10::aten::matmul, {im, cosine})});
    }
    if (scale) {
      outRe = op(c10::aten::mul, {outRe, scale});
      outIm = op(c10::aten::mul, {outIm, scale});
    }
    Value* view = op(c10::aten::movedim, {stackParts(outRe, outIm), -2, d < 0 ? d - 1 : d});
    replaceWithView(n, stamped(view));
  }

  // The same as one pt2onnx::dft (ONNX DFT) of the signal with the transformed dim moved last (the
  // view's second-to-last axis), padded or cut to n; the result scaled from DFT's norm ("backward":
  // an inverse divides by n) to `norm`, and moved back.
  template <typename Stamp>
  void lowerFftToDft(Node* n, const std::string& kind, const Stamp& stamped, int64_t d, const std::string& normMode) {
    Value* x = n->input(0);
    bool complexIn = complex_.count(x) > 0;
    bool inverse = kind == "aten::fft_ifft" || kind == "aten::fft_irfft";
    int64_t signalAxis = complexIn ? -2 : -1;  // of the transformed dim once moved
    Value* signal = op(c10::aten::movedim, {x, complexIn && d < 0 ? d - 1 : d, signalAxis});
    Value* bins = op(c10::aten::size, {signal, signalAxis});
    bool lengthGiven = !n->input(1)->type()->cast<c10::NoneType>();
    Value* size = signalLength(n, kind, bins);
    // Zeros appended to (or, negative, the end cut from) the signal axis.
    auto padSignalTo = [&](Value* v, Value* target) {
      Value* pad = op(c10::aten::sub, {target, bins});
      std::vector<Value*> pads{graph_.insertConstant(0), pad};
      if (complexIn) pads = {graph_.insertConstant(0), graph_.insertConstant(0), graph_.insertConstant(0), pad};
      Value* list = graph_.insertNode(graph_.createList(c10::IntType::get(), pads))->output();
      return op(c10::aten::constant_pad_nd, {v, list, 0});
    };
    Value* out = nullptr;
    if (kind == "aten::fft_irfft") {
      // The whole spectrum of a real signal of `size` samples: its bins 0..size/2, then the conjugates
      // of bins size - size/2 - 1 down to 1.
      Value* half = op(c10::aten::floordiv, {size, 2});
      Value* kept = padSignalTo(signal, op(c10::aten::add, {half, 1}));
      Value* mirrored = op(c10::aten::flip, {op(c10::aten::narrow, {kept, -2, 1, op(c10::aten::sub, {op(c10::aten::sub, {size, half}), 1})}),
                                             std::vector<int64_t>{-2}});
      Value* conjugated = op(c10::aten::mul, {mirrored, graph_.insertConstant(at::tensor({1.0f, -1.0f}))});
      Value* whole = op(c10::aten::cat, {graph_.insertNode(graph_.createList(c10::TensorType::get(), {kept, conjugated}))->output(), -2});
      Value* spectrum = op(dftOp(), {whole, true, false, true});
      out = op(c10::aten::select, {spectrum, -1, 0});
    } else {
      if (lengthGiven) signal = padSignalTo(signal, size);
      out = op(dftOp(), {signal, inverse, kind == "aten::fft_rfft", complexIn});
    }
    // From DFT's scaling (1 forward, 1/n inverse) to norm's.
    Value* nFloat = op(c10::Symbol::fromQualString("aten::Float"), {size});
    if (normMode == "forward") out = op(c10::aten::mul, {out, inverse ? nFloat : op(c10::aten::div, {graph_.insertConstant(1.0), nFloat})});
    if (normMode == "ortho") out = op(c10::aten::mul, {out, op(c10::aten::pow, {nFloat, inverse ? 0.5 : -0.5})});
    if (kind == "aten::fft_irfft") {
      out = stamped(op(c10::aten::movedim, {out, -1, d}));
      return replaceWithReal(n, out);
    }
    replaceWithView(n, stamped(op(c10::aten::movedim, {out, -2, d < 0 ? d - 1 : d})));
  }

  static ExportError unsupported(Node* n, const std::string& what) {
    return ExportError("cannot convert " + jit::describeNode(n) + ": " + (what.empty() ? "it takes a complex tensor" : what) +
                       ", and ONNX has no complex tensors. pt2onnx exports complex values as their real view through "
                       "stft/istft, view_as_real/view_as_complex, complex, polar, real, imag, abs, angle, conj, add, "
                       "sub, mul, div, neg, reshape, view, slice, select, narrow, transpose, permute, flip, "
                       "(un)squeeze, pad, contiguous/clone, fft/ifft/rfft/irfft and the shape queries size, dim "
                       "and numel");
  }

  torch::jit::Graph& graph_;
  int opset_;
  std::set<const Value*> complex_;  // values that hold a complex tensor's real view
};

}  // namespace

void lowerComplexToRealView(torch::jit::Graph& graph, int opset) { ComplexLowering(graph, opset).run(); }

}  // namespace pt2onnx::passes
