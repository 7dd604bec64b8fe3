// Nested tensors of the transformer fast path kept padded. nn.TransformerEncoder, traced in eval
// under no_grad with a src_key_padding_mask, packs its input into a nested tensor without the
// padding, runs its layers as aten::_transformer_encoder_layer_fwd on it and pads the result again:
//   nested = aten::_nested_tensor_from_mask(x, keep, mask_check)   # keep: true at valid tokens
//   y_k    = aten::_transformer_encoder_layer_fwd(y_{k-1}, ..., mask=None, mask_type=None)
//   out    = aten::to_padded_tensor(y_n, padding, output_size)
// ONNX has no nested tensors. The layers run on the padded x instead, with the padding as their
// key-padding mask (mask_type 1), so no valid token attends to padding; to_padded_tensor's padding
// value then replaces what the padded positions computed. Any other use of a nested value is an
// ExportError naming the node.
#include "common/errors.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

const c10::Symbol kFromMask = c10::Symbol::fromQualString("aten::_nested_tensor_from_mask");
const c10::Symbol kEncoderLayer = c10::Symbol::fromQualString("aten::_transformer_encoder_layer_fwd");
const c10::Symbol kToPadded = c10::Symbol::fromQualString("aten::to_padded_tensor");

[[noreturn]] void unsupported(const Node* user) {
  throw ExportError("a nested tensor (aten::_nested_tensor_from_mask, the fast path of nn.TransformerEncoder "
                    "traced under no_grad) is read by " + std::string(user->kind().toQualString()) +
                    jit::whereIs(user) + ", which pt2onnx cannot run on its padded form; trace the model "
                    "without torch.no_grad() (the fast path is skipped then)");
}

// Rewrites the chain that starts at `nested` (a nested value) onto `padded`, masking keys with
// `keyPadding` ([B, S] bool, true at padding) and filling padded positions with the padding value.
void unpack(Value* nested, Value* padded, Value* keyPadding) {
  torch::jit::Graph& graph = *nested->owningGraph();
  const std::vector<torch::jit::Use> uses = nested->uses();  // a copy: the rewrites below change them
  for (const torch::jit::Use& use : uses) {
    Node* user = use.user;
    if (user->kind() == kEncoderLayer && use.offset == 0 && user->inputs().size() == 20 &&
        user->input(18)->type()->kind() == c10::TypeKind::NoneType) {
      torch::jit::WithInsertPoint guard(user);
      user->replaceInput(18, keyPadding);
      user->replaceInput(19, graph.insertConstant(int64_t{1}));  // a key-padding mask
      user->replaceInput(0, padded);
      unpack(user->output(), user->output(), keyPadding);
    } else if (user->kind() == kToPadded && use.offset == 0) {
      torch::jit::WithInsertPoint guard(user);
      Value* atPadding = graph.insert(c10::aten::unsqueeze, {keyPadding, int64_t{-1}});
      Value* filled = graph.insert(c10::aten::masked_fill, {padded, atPadding, user->input(1)});
      for (Node* k = atPadding->node(); k != user; k = k->next()) k->copyMetadata(user);
      user->output()->replaceAllUsesWith(filled);
      user->destroy();
    } else {
      unsupported(user);
    }
  }
}

void rewrite(torch::jit::Block* block) {
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    Node* n = *it;
    ++it;
    for (torch::jit::Block* b : n->blocks()) rewrite(b);
    if (n->kind() != kFromMask) continue;
    torch::jit::WithInsertPoint guard(n);
    Value* keyPadding = n->owningGraph()->insert(c10::aten::logical_not, {n->input(1)});
    keyPadding->node()->copyMetadata(n);
    unpack(n->output(), n->input(0), keyPadding);
    if (n->output()->hasUses()) unsupported(n->output()->uses()[0].user);
    n->destroy();
  }
}

}  // namespace

void keepNestedTensorsPadded(torch::jit::Graph& graph) { rewrite(graph.block()); }

}  // namespace pt2onnx::passes
