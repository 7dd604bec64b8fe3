// The versioned symbolic registry. Registration is explicit: each op-family file defines
// `register<Family>Symbolics(Registry&)` (declared in families.h) and registerAllSymbolics() calls
// them all, in a fixed order. Dispatch follows torch.onnx: the highest registered since-opset that
// is <= the target opset.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "symbolic/context.h"

namespace pt2onnx::symbolic {

class Registry {
 public:
  struct Entry {
    std::string op;  // "aten::add" (every overload) or "aten::add.Tensor" (that overload)
    int sinceOpset;
    SymbolicFn fn;
    bool userRegistered = false;
  };

  // Registers `fn` for `op` from `sinceOpset`. Registering the same (op, since) twice replaces the
  // earlier entry and logs a warning, unless `replace` is true (user overrides).
  void onOp(const std::string& op, int sinceOpset, SymbolicFn fn, bool replace = false);
  // Replaces every built-in entry of `op` (all since-opsets) by `wrap(entry)`: adapters that apply
  // to a whole op (symbolic/rank0_lifting.cpp). An op with no built-in entry is an internal error.
  void wrapBuiltin(const std::string& op, const std::function<SymbolicFn(SymbolicFn)>& wrap);
  // Removes a user registration at exactly (op, sinceOpset), restoring the built-in. Returns false
  // if there was none.
  bool removeUser(const std::string& op, int sinceOpset);

  // The entry for `qualifiedName` ("aten::add") with `overload` ("Tensor" or "") at `opset`;
  // an overload-specific entry wins over the bare name. Null when none applies.
  const Entry* find(const std::string& qualifiedName, const std::string& overload, int opset) const;
  // Lowest opset at which some entry applies, for "supported from opset N" hints.
  std::optional<int> lowestOpset(const std::string& qualifiedName,
                                 const std::string& overload) const;
  // Every registered op with its since-opsets, sorted by op name.
  std::vector<std::pair<std::string, std::vector<int>>> listing() const;

 private:
  const Entry* findKey(const std::string& key, int opset) const;
  // key -> since-opset -> entry (a user entry shadows a built-in at the same since-opset)
  std::map<std::string, std::map<int, Entry>> builtin_;
  std::map<std::string, std::map<int, Entry>> user_;
};

// Calls every family's register function (symbolic/register_all.cpp).
void registerAllSymbolics(Registry& registry);
// The process-wide registry with every built-in symbolic, built on first use.
Registry& defaultRegistry();

}  // namespace pt2onnx::symbolic
