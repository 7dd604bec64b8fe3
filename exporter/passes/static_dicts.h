// Dicts whose entries are known at export time: built by `prim::DictConstruct`, `aten::dict()`
// (empty) or a constant. functionalize_mutation turns `d[k] = v` on such a dict into a new
// DictConstruct; fold_dict_constructs folds reads of one into the values. A DictConstruct inserts its
// pairs in order as Python's `d[k] = v` does (a repeated key keeps its first position and takes its
// last value), so appending a pair whose key may equal an earlier one is always right; a pair is
// replaced in place only where no later key may be that key. Internal to exporter/passes/.
#pragma once

#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

namespace pt2onnx::passes::dicts {

struct Entry {
  torch::jit::Value* key;
  torch::jit::Value* value;
};

bool isDict(const torch::jit::Value* v);

// The entries of `dict` when it is built statically, in insertion order; a constant dict's keys
// and values are inserted as constants before `at`.
std::optional<std::vector<Entry>> staticEntries(torch::jit::Value* dict, torch::jit::Node* at);

// Same: one value, or equal constants. Different: unequal constants. Unknown: known at run time only.
enum class KeyMatch { Same, Different, Unknown };
KeyMatch matchKeys(const torch::jit::Value* a, const torch::jit::Value* b);

// Which entry `d[key]` reads: its index, or Missing (every key differs), or Unknown.
struct Lookup {
  enum class Result { Found, Missing, Unknown } result;
  size_t index = 0;
};
Lookup lookup(const std::vector<Entry>& entries, const torch::jit::Value* key);

// Whether every two keys are Different (len(), keys() and values() are known).
bool keysDistinct(const std::vector<Entry>& entries);

// `entries` after `d[key] = value`.
void assign(std::vector<Entry>& entries, torch::jit::Value* key, torch::jit::Value* value);

// A new `prim::DictConstruct` of type `dictType` holding `entries`, inserted before `at` (no metadata).
torch::jit::Value* build(torch::jit::Graph& graph, const c10::TypePtr& dictType, const std::vector<Entry>& entries,
                         torch::jit::Node* at);

// If output `i`, a dict that both branches build statically with the same keys in the same order,
// becomes one If output per value and a DictConstruct after the If, which takes its uses and is
// returned; output `i` is removed. nullptr (the If unchanged) when the branches' dicts differ.
torch::jit::Value* splitIfOutput(torch::jit::Node* ifNode, size_t i);

}  // namespace pt2onnx::passes::dicts
