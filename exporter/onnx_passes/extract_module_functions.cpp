// export_modules_as_functions: each call of a selected nn.Module type becomes one node calling a
// model-local ONNX function. Calls are outlined outermost first (a function's body holds the calls
// of the selected modules it calls); then, innermost first, the calls of one type whose bodies are
// the same share one function, and bodies that differ only in attribute values share one too, the
// differing values becoming function attributes the calls set. Bodies of one type that differ in
// their nodes become functions of their own (Conv2d, Conv2d_1, ...).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "common/errors.h"
#include "exporter/onnx_passes/onnx_passes.h"

namespace pt2onnx::onnx_passes {
namespace {

struct Call {
  ir::Node* node = nullptr;             // the calling node (its op type set once its function is known)
  std::shared_ptr<ir::Graph> body;      // the outlined body
  ir::ModuleCall module;
  size_t height = 0;                    // 0 when its body calls no selected module
};

class FunctionExtractor {
 public:
  FunctionExtractor(const ModuleFunctionOptions& options, std::vector<std::string>& warnings)
      : options_(options), warnings_(warnings) {}

  // Outlines the selected calls among g's nodes whose call chains are `depth` deep or deeper, and
  // returns the highest height among the calls made directly in g.
  size_t outlineCalls(ir::Graph& g, size_t depth) {
    std::vector<int64_t> order;
    std::map<int64_t, std::vector<ir::Node*>> regions;
    std::map<int64_t, std::pair<ir::ModuleCall, size_t>> frames;  // call id -> (call, depth)
    size_t height = 0;
    for (const auto& node : g.nodes()) {
      std::optional<size_t> at = selectedFrame(*node, depth);
      if (!at) {
        for (ir::Attribute& a : node->attributes)
          if (a.kind == ir::Attribute::Kind::Graph) height = std::max(height, outlineCalls(*a.g, depth));
        continue;
      }
      const ir::ModuleCall& frame = (*node->moduleCalls)[*at];
      if (!regions.count(frame.id)) {
        order.push_back(frame.id);
        frames[frame.id] = {frame, *at};
      }
      regions[frame.id].push_back(node.get());
    }
    for (int64_t id : order) {
      const auto& [frame, frameDepth] = frames[id];
      std::vector<ir::Node*>& region = regions[id];
      if (feedsItself(g, region)) {
        warnings_.push_back("module '" + displayPath(frame) + "' (" + frame.typeName +
                            ") is not exported as a function: a value computed outside it from its "
                            "outputs feeds it back (its ops are kept inline)");
        continue;
      }
      Call call;
      call.module = frame;
      std::string name = className(frame.typeName);
      call.node = g.outline(region, name, domainOf(frame.typeName),
                            (frame.path.empty() ? "" : "/" + frame.path) + "/" + name, call.body);
      size_t inner = outlineCalls(*call.body, frameDepth + 1);
      call.height = inner;
      height = std::max(height, inner + 1);
      calls_.push_back(std::move(call));
    }
    if (!order.empty()) {
      PT2ONNX_ASSERT(g.sortTopologically(), "outlined regions were checked not to feed themselves");
    }
    return height;
  }

  // Gives every call its function, innermost calls first (a body's signature names the functions
  // it calls).
  void assignFunctions(ir::Graph& model) {
    size_t maxHeight = 0;
    for (const Call& c : calls_) maxHeight = std::max(maxHeight, c.height);
    for (size_t h = 0; h <= maxHeight; ++h) {
      std::vector<std::string> types;
      std::map<std::string, std::vector<Call*>> byType;
      for (Call& c : calls_) {
        if (c.height != h) continue;
        if (!byType.count(c.module.typeName)) types.push_back(c.module.typeName);
        byType[c.module.typeName].push_back(&c);
      }
      for (const std::string& type : types) assignFunctionsOfType(model, byType[type]);
    }
  }

 private:
  std::optional<size_t> selectedFrame(const ir::Node& n, size_t depth) const {
    if (!n.moduleCalls) return std::nullopt;
    for (size_t k = depth; k < n.moduleCalls->size(); ++k)
      if (options_.selects((*n.moduleCalls)[k].typeName)) return k;
    return std::nullopt;
  }

  static std::string displayPath(const ir::ModuleCall& frame) { return frame.path.empty() ? "<root>" : frame.path; }
  static std::string className(const std::string& typeName) {
    size_t dot = typeName.rfind('.');
    return dot == std::string::npos ? typeName : typeName.substr(dot + 1);
  }
  static std::string domainOf(const std::string& typeName) {
    size_t dot = typeName.rfind('.');
    return dot == std::string::npos ? std::string("pt2onnx.modules") : typeName.substr(0, dot);
  }

  // Whether a node outside `region` reads (through other outside nodes) a value of the region
  // and feeds one of the region's nodes: outlining it would make a cycle.
  static bool feedsItself(const ir::Graph& g, const std::vector<ir::Node*>& region) {
    std::unordered_set<const ir::Node*> inRegion(region.begin(), region.end());
    std::unordered_set<const ir::Value*> tainted;  // computed from the region's outputs
    for (const ir::Node* n : region) tainted.insert(n->outputs.begin(), n->outputs.end());
    bool started = false;
    for (const auto& node : g.nodes()) {
      const ir::Node* n = node.get();
      bool mine = inRegion.count(n) > 0;
      started = started || mine;
      if (!started) continue;
      bool readsTainted = false;
      for (const ir::Value* v : ir::Graph::valuesRead(*n))
        if (tainted.count(v) && !(mine && v->producer && inRegion.count(v->producer))) readsTainted = true;
      if (mine && readsTainted) return true;
      if (!mine && readsTainted) tainted.insert(n->outputs.begin(), n->outputs.end());
    }
    return false;
  }

  // A body's nodes as text: op types, wiring, attributes (values unless `withValues` is false,
  // where their kinds only stand), subgraphs with their values always.
  static std::string signature(const ir::Graph& body, bool withValues) {
    std::unordered_map<const ir::Value*, std::string> ref;
    for (size_t k = 0; k < body.inputs().size(); ++k) ref[body.inputs()[k]] = "i" + std::to_string(k);
    std::ostringstream s;
    describeGraph(body, withValues, ref, s);
    return s.str();
  }
  static void describeGraph(const ir::Graph& g, bool withValues, std::unordered_map<const ir::Value*, std::string>& ref,
                            std::ostringstream& s) {
    for (const ir::Value* in : g.parent() ? g.inputs() : std::vector<ir::Value*>{}) {
      std::string r = "v" + std::to_string(ref.size());
      ref[in] = r;
      s << "in " << r << ' ' << static_cast<int>(in->type.dtype) << ';';
    }
    for (const auto& n : g.nodes()) {
      s << n->domain << "::" << n->opType << '(';
      for (const ir::Value* in : n->inputs) s << (in ? ref.at(in) : std::string("-")) << ',';
      s << ")[";
      for (const ir::Attribute& a : n->attributes) {
        s << a.name << ':' << static_cast<int>(a.kind);
        if (a.kind == ir::Attribute::Kind::Graph) {
          s << '{';
          describeGraph(*a.g, true, ref, s);
          s << '}';
        } else if (withValues || !a.refAttrName.empty()) {
          s << '=' << attributeValue(a);
        }
        s << ';';
      }
      s << "]->";
      for (const ir::Value* o : n->outputs) {
        std::string r = "v" + std::to_string(ref.size());
        ref[o] = r;
        s << r << ',';
      }
      s << '\n';
    }
    s << "out";
    for (const ir::Value* o : g.outputs()) s << ' ' << ref.at(o);
    s << '\n';
  }
  static std::string attributeValue(const ir::Attribute& a) {
    if (!a.refAttrName.empty()) return "@" + a.refAttrName;
    std::ostringstream s;
    s.precision(17);
    switch (a.kind) {
      case ir::Attribute::Kind::Float: s << a.f; break;
      case ir::Attribute::Kind::Int: s << a.i; break;
      case ir::Attribute::Kind::String: s << a.s.size() << ':' << a.s; break;
      case ir::Attribute::Kind::Floats: for (double f : a.floats) s << f << ','; break;
      case ir::Attribute::Kind::Ints: for (int64_t i : a.ints) s << i << ','; break;
      case ir::Attribute::Kind::Strings: for (const std::string& x : a.strings) s << x.size() << ':' << x; break;
      case ir::Attribute::Kind::Tensor: {
        s << static_cast<int>(a.t->dtype) << '|';
        for (int64_t d : a.t->dims) s << d << ',';
        s << '|';
        if (a.t->data) s.write(static_cast<const char*>(a.t->data), static_cast<std::streamsize>(a.t->nbytes));
        else s << "computed@" << a.t.get();  // never equal to another tensor's
        break;
      }
      case ir::Attribute::Kind::Graph: break;
    }
    return s.str();
  }

  void assignFunctionsOfType(ir::Graph& model, const std::vector<Call*>& calls) {
    // Same nodes, same wiring (attribute values aside): one function.
    std::vector<std::string> shapes;
    std::map<std::string, std::vector<Call*>> byShape;
    for (Call* c : calls) {
      std::string shape = signature(*c->body, false);
      if (!byShape.count(shape)) shapes.push_back(shape);
      byShape[shape].push_back(c);
    }
    for (const std::string& shape : shapes) makeFunction(model, byShape[shape]);
  }

  // One function for `calls`, whose bodies have the same shape: the first body stands for all,
  // with the attributes whose values differ among them made function attributes.
  void makeFunction(ir::Graph& model, const std::vector<Call*>& calls) {
    const std::string& typeName = calls.front()->module.typeName;
    std::string domain = domainOf(typeName);
    int& variants = variantsOfType_[typeName];
    std::string name = className(typeName) + (variants == 0 ? "" : "_" + std::to_string(variants));
    ++variants;

    ir::Graph& body = *calls.front()->body;
    std::vector<std::string> attributeNames;
    std::set<std::string> used;
    // Attribute k of node n of each body (nodes and attributes are in the same order in all).
    for (size_t n = 0; n < body.nodes().size(); ++n) {
      ir::Node& node = *body.nodes()[n];
      for (size_t k = 0; k < node.attributes.size(); ++k) {
        ir::Attribute& a = node.attributes[k];
        if (a.kind == ir::Attribute::Kind::Graph || !a.refAttrName.empty()) continue;
        std::string value = attributeValue(a);
        bool differs = false;
        for (const Call* c : calls)
          differs = differs || attributeValue(c->body->nodes()[n]->attributes[k]) != value;
        if (!differs) continue;
        std::string ref = node.opType + "_" + a.name;
        for (int suffix = 1; used.count(ref); ++suffix) ref = node.opType + "_" + a.name + "_" + std::to_string(suffix);
        used.insert(ref);
        attributeNames.push_back(ref);
        for (Call* c : calls) {
          ir::Attribute value = c->body->nodes()[n]->attributes[k];
          value.name = ref;
          c->node->attributes.push_back(std::move(value));
        }
        a.refAttrName = ref;
      }
    }
    for (Call* c : calls) {
      c->node->opType = name;
      c->node->domain = domain;
    }
    model.addFunction({domain, name, attributeNames, calls.front()->body});
    for (Call* c : calls) c->body.reset();
  }

  const ModuleFunctionOptions& options_;
  std::vector<std::string>& warnings_;
  std::vector<Call> calls_;
  std::map<std::string, int> variantsOfType_;
};

std::optional<ir::ModuleCall> rootCallIn(const ir::Graph& g) {
  for (const auto& n : g.nodes()) {
    if (n->moduleCalls && !n->moduleCalls->empty() && n->moduleCalls->front().path.empty())
      return n->moduleCalls->front();
    for (const ir::Attribute& a : n->attributes)
      if (a.kind == ir::Attribute::Kind::Graph)
        if (std::optional<ir::ModuleCall> root = rootCallIn(*a.g)) return root;
  }
  return std::nullopt;
}

// Every node is in the root module's call: nodes made by lowering passes (no scope) and nodes of
// archives (whose call stacks start below the root) get its frame too.
void addRootCall(ir::Graph& g, const ir::ModuleCall& root,
                 std::unordered_map<const std::vector<ir::ModuleCall>*, ir::ModuleCalls>& withRoot) {
  for (const auto& n : g.nodes()) {
    const ir::ModuleCalls& calls = n->moduleCalls;
    if (!calls || calls->empty() || !calls->front().path.empty()) {
      ir::ModuleCalls& rooted = withRoot[calls.get()];
      if (!rooted) {
        std::vector<ir::ModuleCall> chain{root};
        if (calls) chain.insert(chain.end(), calls->begin(), calls->end());
        rooted = std::make_shared<const std::vector<ir::ModuleCall>>(std::move(chain));
      }
      n->moduleCalls = rooted;
    }
    for (ir::Attribute& a : n->attributes)
      if (a.kind == ir::Attribute::Kind::Graph) addRootCall(*a.g, root, withRoot);
  }
}

}  // namespace

size_t extractModuleFunctions(ir::Graph& graph, const ModuleFunctionOptions& options,
                              std::vector<std::string>& warnings) {
  std::optional<ir::ModuleCall> root = rootCallIn(graph);
  if (!root && !options.rootTypeName.empty()) root = ir::ModuleCall{0, "", options.rootTypeName};
  if (root) {
    std::unordered_map<const std::vector<ir::ModuleCall>*, ir::ModuleCalls> withRoot;
    addRootCall(graph, *root, withRoot);
  }
  FunctionExtractor extractor(options, warnings);
  extractor.outlineCalls(graph, 0);
  extractor.assignFunctions(graph);
  return graph.functions().size();
}

}  // namespace pt2onnx::onnx_passes
