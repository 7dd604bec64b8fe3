// What functionalize_mutation needs to know about a graph before rewriting it: which nodes mutate
// what, which object each value is (in-place results are their input), which views it follows
// back to a base (select / slice), and which values may share storage with a mutated one in ways
// the rewrite cannot follow. Internal to exporter/passes/.
#pragma once

#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

namespace pt2onnx::passes::mutation {

enum class Kind {
  None,
  InPlace,      // `relu_`, `add_`, `copy_`, `index_put_`, list `add_` / `extend` / `clear`: replaced
  ListUpdate,   // `aten::append.t`, `aten::_set_item.t`: kept, their output read as the new list
  DictUpdate,   // `aten::_set_item` on a dict (`d[k] = v`): replaced by a new dict (static_dicts.h)
  Unsupported,  // writes to an argument in a way pt2onnx does not rewrite
};

Kind classify(const torch::jit::Node* n);

// The functional op of an in-place one: `relu_` -> `relu`, `__iand__` -> `__and__` (if it exists).
std::optional<c10::Symbol> functionalKind(const torch::jit::Node* n);

// select / slice: views whose writes the rewrite turns into select_scatter / slice_scatter.
bool isFollowedView(const torch::jit::Node* n);

class Analysis {
 public:
  explicit Analysis(torch::jit::Graph& graph);
  ~Analysis();

  // The object `v` is: a mutation's output is the object it mutates.
  torch::jit::Value* objectOf(torch::jit::Value* v) const;
  // For an object that is a followed view, the value it is a view of; nullptr otherwise.
  torch::jit::Value* viewParent(torch::jit::Value* object) const;
  // The base whose storage `v` is or views: objects followed through followed views.
  torch::jit::Value* rootOf(torch::jit::Value* v) const;
  // Every mutating node, in program order.
  const std::vector<torch::jit::Node*>& mutations() const { return mutations_; }

  // Throws ExportError, naming the mutation and where, when a value the rewrite does not track
  // (an alias made by another view op, a list holding the tensor, an If output that may be the
  // mutated object, ...) may observe a mutation: after it in program order, or in a later
  // iteration of a loop around both.
  void checkFollowable() const;

 private:
  struct AliasSets;
  void numberBlock(const torch::jit::Block* block, int& counter);
  void analyzeBlock(torch::jit::Block* block, AliasSets& sets);
  bool mayObserve(const torch::jit::Node* mutation, const torch::jit::Value* w, const torch::jit::Node* use) const;
  // Where `v` comes into existence in program order (after the blocks, for If/Loop outputs).
  int definitionPosition(const torch::jit::Value* v) const;

  std::unordered_map<const torch::jit::Value*, torch::jit::Value*> objectOf_;
  std::unordered_map<const torch::jit::Value*, torch::jit::Value*> viewParent_;
  std::vector<torch::jit::Node*> mutations_;
  // Program-order positions: nodes (a block's param node at its start, its return node at its end).
  std::unordered_map<const torch::jit::Node*, int> position_;
  std::unordered_map<const torch::jit::Node*, int> definedAt_;  // outputs of nodes with blocks
  std::unique_ptr<AliasSets> sets_;
};

}  // namespace pt2onnx::passes::mutation
