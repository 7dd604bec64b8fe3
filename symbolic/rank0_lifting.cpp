// Ops that take a `dim` work on 0-d tensors in PyTorch (dim 0 or -1 names the tensor itself) but
// not in ONNX, whose axis attributes need rank >= 1 (ReduceSum, TopK, Softmax, CumSum,
// GatherElements, ...). For these ops, 0-d operands are given to the symbolic as [1]-shaped
// tensors, with the node's 0-d outputs typed [1], and those outputs are squeezed back to 0-d after
// it: one adapter for every such op instead of a rank-0 case in each symbolic.
#include <string>
#include <vector>

#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

bool isRank0Tensor(const Arg& a) {
  if (!a.isTensor()) return false;
  if (a.value) return a.value->type.hasRank() && a.value->type.rank() == 0;
  return a.constTensor && a.constTensor->dims.empty();
}

ir::TensorType asRank1(ir::TensorType t) {
  if (t.hasRank() && t.rank() == 0) t.shape = std::vector<ir::Dim>{ir::Dim::fixed(1)};
  return t;
}

// `operands`: the argument positions indexed by the op's dim (self, and index/src where they are).
SymbolicFn liftingRank0(SymbolicFn fn, std::vector<size_t> operands) {
  return [fn = std::move(fn), operands = std::move(operands)](Context& ctx) -> Outputs {
    bool any = false;
    for (size_t i : operands) any = any || (i < ctx.numArgs() && isRank0Tensor(ctx.arg(i)));
    if (!any) return fn(ctx);
    std::vector<Arg> args;
    for (size_t i = 0; i < ctx.numArgs(); ++i) args.push_back(ctx.arg(i));
    for (size_t i : operands)
      if (i < args.size() && isRank0Tensor(args[i])) args[i] = Arg(ctx.unsqueeze(ctx.tensor(i), {0}));
    std::vector<ir::TensorType> outputTypes;
    for (size_t k = 0; k < ctx.numOutputs(); ++k) outputTypes.push_back(asRank1(ctx.outputType(k)));
    Context lifted(ctx.graph(), ctx.opset(), ctx.schema(), std::move(args), outputTypes);
    lifted.setSourceNode(ctx.sourceNode());
    Outputs outs = fn(lifted);
    for (size_t k = 0; k < outs.size() && k < ctx.numOutputs(); ++k) {
      const ir::TensorType& want = ctx.outputType(k);
      // Rank 1 from the lifted symbolic, or 0 already (a reduction without keepdim), which its type
      // does not always say (graphs typed by running): a reshape of the one element to [] fits both,
      // and gives the same model however the graph was typed.
      if (!outs[k].isTensor() || !outs[k].value || !want.hasRank() || want.rank() != 0) continue;
      outs[k] = Arg(ctx.op("Reshape", {outs[k].value, ctx.constant(ir::TensorData::fromInt64s({}, {0}))}));
    }
    return outs;
  };
}

}  // namespace

void liftRank0Operands(Registry& r) {
  auto lift = [&r](const std::string& op, std::vector<size_t> operands) {
    r.wrapBuiltin(op, [&operands](SymbolicFn fn) { return liftingRank0(std::move(fn), operands); });
  };
  for (const char* op : {"aten::sum", "aten::mean", "aten::prod", "aten::amax", "aten::amin", "aten::max",
                         "aten::min", "aten::argmax", "aten::argmin", "aten::sort", "aten::sort.stable",
                         "aten::argsort", "aten::topk", "aten::logsumexp", "aten::cumsum", "aten::linalg_vector_norm",
                         "aten::norm", "aten::any", "aten::all", "aten::softmax", "aten::_softmax",
                         "aten::log_softmax", "aten::_log_softmax"})
    lift(op, {0});
  lift("aten::index_select", {0, 2});
  lift("aten::gather", {0, 2});
  lift("aten::scatter.src", {0, 2, 3});
  lift("aten::scatter.value", {0, 2});
  lift("aten::scatter_add", {0, 2, 3});
  lift("aten::scatter.reduce", {0, 2, 3});
  lift("aten::scatter.value_reduce", {0, 2});
  lift("aten::scatter_reduce.two", {0, 2, 3});
  lift("aten::index_reduce", {0, 3});
}

}  // namespace pt2onnx::symbolic
