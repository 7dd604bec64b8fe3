#include "symbolic/registry.h"

#include <set>

#include "common/errors.h"
#include "common/logging.h"
#include "symbolic/families.h"

namespace pt2onnx::symbolic {

void Registry::onOp(const std::string& op, int sinceOpset, SymbolicFn fn, bool replace) {
  auto& table = replace ? user_ : builtin_;
  auto& versions = table[op];
  if (!replace && versions.count(sinceOpset))
    logger("symbolic")->warn("overriding already registered symbolic {} (opset {})", op, sinceOpset);
  versions[sinceOpset] = Entry{op, sinceOpset, std::move(fn), replace};
}

void Registry::wrapBuiltin(const std::string& op, const std::function<SymbolicFn(SymbolicFn)>& wrap) {
  auto it = builtin_.find(op);
  PT2ONNX_ASSERT(it != builtin_.end() && !it->second.empty(), "no built-in symbolic to wrap for " << op);
  for (auto& [since, entry] : it->second) entry.fn = wrap(std::move(entry.fn));
}

bool Registry::removeUser(const std::string& op, int sinceOpset) {
  auto it = user_.find(op);
  if (it == user_.end() || !it->second.erase(sinceOpset)) return false;
  if (it->second.empty()) user_.erase(it);
  return true;
}

const Registry::Entry* Registry::findKey(const std::string& key, int opset) const {
  // A user entry shadows a built-in at the same since-opset; otherwise the highest since wins.
  const Entry* best = nullptr;
  for (const auto* table : {&builtin_, &user_}) {
    auto it = table->find(key);
    if (it == table->end()) continue;
    auto v = it->second.upper_bound(opset);
    if (v == it->second.begin()) continue;
    --v;
    if (!best || v->first >= best->sinceOpset) best = &v->second;
  }
  return best;
}

const Registry::Entry* Registry::find(const std::string& qualifiedName,
                                      const std::string& overload, int opset) const {
  if (!overload.empty())
    if (const Entry* e = findKey(qualifiedName + "." + overload, opset)) return e;
  return findKey(qualifiedName, opset);
}

std::optional<int> Registry::lowestOpset(const std::string& qualifiedName,
                                         const std::string& overload) const {
  std::optional<int> lowest;
  for (const auto* table : {&builtin_, &user_}) {
    for (const std::string& key : {qualifiedName + "." + overload, qualifiedName}) {
      auto it = table->find(key);
      if (it == table->end() || it->second.empty()) continue;
      int v = it->second.begin()->first;
      if (!lowest || v < *lowest) lowest = v;
    }
  }
  return lowest;
}

std::vector<std::pair<std::string, std::vector<int>>> Registry::listing() const {
  std::map<std::string, std::set<int>> merged;
  for (const auto* table : {&builtin_, &user_})
    for (const auto& [op, versions] : *table)
      for (const auto& [since, entry] : versions) merged[op].insert(since);
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (const auto& [op, versions] : merged) out.emplace_back(op, std::vector<int>(versions.begin(), versions.end()));
  return out;
}

void registerAllSymbolics(Registry& r) {
  registerPrimSymbolics(r);
  registerListSymbolics(r);
  registerNumberSymbolics(r);
  registerElementwiseSymbolics(r);
  registerActivationSymbolics(r);
  registerReductionSymbolics(r);
  registerLinearSymbolics(r);
  registerLinalgSymbolics(r);
  registerEinsumDecomposedSymbolics(r);
  registerConvolutionSymbolics(r);
  registerPoolingSymbolics(r);
  registerNormalizationSymbolics(r);
  registerDropoutSymbolics(r);
  registerShapeSymbolics(r);
  registerConcatSplitSymbolics(r);
  registerIndexingSymbolics(r);
  registerScatterReduceSymbolics(r);
  registerCreationSymbolics(r);
  registerEmbeddingSymbolics(r);
  registerRecurrentSymbolics(r);
  registerRecurrentCellSymbolics(r);
  registerSamplingSymbolics(r);
  registerSpectralSymbolics(r);
  registerDetectionSymbolics(r);
  registerAttentionSymbolics(r);
  registerUniqueSymbolics(r);
  registerQuantizationSymbolics(r);
  liftRank0Operands(r);  // last: it wraps entries registered above
}

Registry& defaultRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry();
    registerAllSymbolics(*r);
    return r;
  }();
  return *registry;
}

}  // namespace pt2onnx::symbolic
