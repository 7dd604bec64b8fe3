// Planned graphs: the main graph and, recursively, the graph attributes of its nodes (If's branches,
// Loop's body), each planned once when the session is built: value slots, kernel per node, and the
// step after which each intermediate is freed. A subgraph reads values of enclosing graphs by name
// (implicit capture, at any depth); planning resolves such a name through the chain of enclosing
// scopes, each scope capturing it from its own enclosing one, so at run time a subgraph's frame
// copies its captured values from the frame of the node that runs it and never walks further up.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/value.h"

namespace onnx {
class GraphProto;
class TypeProto;
class ValueInfoProto;
}  // namespace onnx

namespace pt2onnx::runtime {

struct Step {
  const Kernel* kernel = nullptr;            // a tensor kernel, or
  const ValueKernel* valueKernel = nullptr;  // a kernel on Values (sequences, optionals, subgraphs)
  std::string name, opType, domain;
  int opset = 0;
  std::unordered_map<std::string, Attribute> attributes;
  std::vector<int> inputs;   // slot per input, -1 for an omitted one
  std::vector<int> outputs;  // slot per output, -1 for an omitted one
  std::vector<int> release;  // slots whose last use is this step
  // Value kernels: input i is its slot's last read, so it is moved into the kernel (which can then
  // change a sequence in place instead of copying it).
  std::vector<bool> moveInput;
  std::vector<std::pair<std::string, std::unique_ptr<Plan>>> subgraphs;  // by attribute name
  // Tensor kernels: input i is an initializer of this graph that no feed replaces.
  std::vector<bool> constantInputs;
  std::shared_ptr<NodeCache> cache = std::make_shared<NodeCache>();
};

struct Plan {
  std::string graphName;
  size_t numSlots = 0;
  std::vector<Value> constants;            // per slot: initializers (undefined elsewhere)
  std::vector<ValueInfo> inputs, outputs;  // as declared
  std::vector<int> inputSlots, outputSlots;
  std::vector<bool> outputMovable;         // output k may be moved out of the frame after a run
  // Values read from enclosing graphs: (slot here, slot in the frame of the node that runs this graph).
  std::vector<std::pair<int, int>> captures;
  std::vector<Step> steps;
};

// What planning needs from the model.
struct PlanContext {
  std::string baseDir;                                           // external data
  bool fuseNodes = true;                                         // runtime/fusion.h
  std::unordered_map<std::string, int> opsets;                   // by domain ("" for ai.onnx)
  std::vector<std::pair<std::string, std::string>> metadata;     // the model's metadata_props
};

// Plans the model's main graph (an initializer also listed as an input is a default, not an input).
// Throws ExportError naming the node for unsupported ops and for names nothing produces earlier.
std::unique_ptr<Plan> planMainGraph(const onnx::GraphProto& graph, const PlanContext& context);

// Runs the plan's steps on `frame` (inputs, constants and captures already in their slots).
void runPlan(const Plan& plan, std::vector<Value>& frame);

ValueInfo valueInfoFromProto(const onnx::ValueInfoProto& v);
ValueInfo typeInfoFromProto(const onnx::TypeProto& type);  // name left empty

}  // namespace pt2onnx::runtime
