#include "writer/model_writer.h"

#include <cstdlib>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <unordered_set>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "common/errors.h"
#include "common/interrupt.h"
#include "common/progress.h"
#include "common/logging.h"
#include "common/opsets.h"
#include "writer/proto_encoding.h"
#include "writer/schemas.h"

namespace pt2onnx::writer {
namespace {

// Integer tensors up to this size are embedded in the proto itself: shape inference reads them as
// shape constants. Every other initializer is streamed from its owner (or goes to external data),
// so the proto never holds a second copy of the weights.
constexpr size_t kInlineIntegerTensorBytes = 64 * 1024;
// torch.onnx's threshold for moving one initializer to external data.
constexpr int64_t kExternalMinElements = 1024;
constexpr uint64_t kExternalAlignment = 4096;

// Writes a tensor's bytes: straight from their owner, or computed a chunk at a time into `scratch`,
// one buffer for every tensor (fresh pages are slow to fault in; the buffer is faulted in once).
void writeTensorBytes(std::ostream& os, const ir::TensorData& data, std::vector<char>& scratch) {
  if (!data.compute) {
    os.write(static_cast<const char*>(data.data), static_cast<std::streamsize>(data.nbytes));
    return;
  }
  constexpr size_t kChunkBytes = size_t{1} << 20;  // a multiple of every element size
  if (scratch.size() < std::min(kChunkBytes, data.nbytes)) scratch.resize(std::min(kChunkBytes, data.nbytes));
  for (size_t offset = 0; offset < data.nbytes; offset += kChunkBytes) {
    size_t n = std::min(kChunkBytes, data.nbytes - offset);
    data.compute(offset, n, scratch.data());
    os.write(scratch.data(), static_cast<std::streamsize>(n));
  }
}

void encodeGraphBody(onnx::GraphProto* g, const ir::Graph& graph, const WriteOptions& options);

void fillAttribute(onnx::AttributeProto* a, const ir::Attribute& attr, const WriteOptions& options) {
  fillAttributeValue(a, attr);
  if (attr.kind == ir::Attribute::Kind::Graph) encodeGraphBody(a->mutable_g(), *attr.g, options);
}

void addValueInfo(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const ir::Value* v) {
  onnx::ValueInfoProto* vi = list->Add();
  vi->set_name(v->name);
  fillType(vi->mutable_type(), v->type);
}

void encodeNodes(google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes, const ir::Graph& graph,
                 const WriteOptions& options) {
  for (const auto& n : graph.nodes()) {
    onnx::NodeProto* np = nodes->Add();
    for (const ir::Value* in : n->inputs) np->add_input(in ? in->name : "");
    for (const ir::Value* o : n->outputs) np->add_output(o->name);
    np->set_name(n->name);
    np->set_op_type(n->opType);
    if (!n->domain.empty()) np->set_domain(n->domain);
    if (options.docStrings && !n->docString.empty()) np->set_doc_string(n->docString);
    for (const ir::Attribute& a : n->attributes) fillAttribute(np->add_attribute(), a, options);
  }
}

// Nodes, inputs and outputs of a graph or subgraph (subgraph attributes recursively); the main
// graph's initializers are encoded by the caller.
void encodeGraphBody(onnx::GraphProto* g, const ir::Graph& graph, const WriteOptions& options) {
  g->set_name(graph.parent() ? graph.name() : options.graphName);
  encodeNodes(g->mutable_node(), graph, options);
  for (const ir::Value* in : graph.inputs()) addValueInfo(g->mutable_input(), in);
  for (const ir::Value* o : graph.outputs()) addValueInfo(g->mutable_output(), o);
  // Intermediate values get no value_info, except com.microsoft::PythonOp's outputs: its schema can
  // infer only their ranks (ONNX Runtime's attributes say no more), so the sizes the exporter knows
  // (python/pt2onnx/autograd.py: the traced sizes on the dims that do not vary) are written down.
  std::unordered_set<const ir::Value*> declared(graph.outputs().begin(), graph.outputs().end());
  for (const auto& n : graph.nodes()) {
    if (n->domain != "com.microsoft" || n->opType != "PythonOp") continue;
    for (size_t k = 1; k < n->outputs.size(); ++k) {
      const ir::Value* o = n->outputs[k];
      bool sized = o->type.hasRank() && std::any_of(o->type.shape->begin(), o->type.shape->end(),
                                                    [](const ir::Dim& d) { return d.isStatic() || !d.param.empty(); });
      if (sized && !declared.count(o)) addValueInfo(g->mutable_value_info(), o);
    }
  }
}

void collectDomains(const ir::Graph& graph, std::set<std::string>& domains) {
  for (const auto& n : graph.nodes()) {
    if (!n->domain.empty()) domains.insert(n->domain);
    for (const ir::Attribute& a : n->attributes)
      if (a.kind == ir::Attribute::Kind::Graph) collectDomains(*a.g, domains);
  }
}

void addOpsetImports(google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>* imports,
                     const std::set<std::string>& domains, const WriteOptions& options) {
  auto* ai = imports->Add();
  ai->set_domain("");
  ai->set_version(options.opset);
  for (const std::string& d : domains) {
    auto* imp = imports->Add();
    imp->set_domain(d);
    auto it = options.customOpsets.find(d);
    imp->set_version(it == options.customOpsets.end() ? 1 : it->second);
  }
}

// Model-local functions (export_modules_as_functions) as FunctionProtos.
void encodeFunctions(onnx::ModelProto& m, const ir::Graph& graph, const WriteOptions& options) {
  for (const ir::Function& f : graph.functions()) {
    onnx::FunctionProto* fp = m.add_functions();
    fp->set_name(f.name);
    fp->set_domain(f.domain);
    for (const ir::Value* in : f.body->inputs()) fp->add_input(in->name);
    for (const ir::Value* o : f.body->outputs()) fp->add_output(o->name);
    for (const std::string& a : f.attributeNames) fp->add_attribute(a);
    encodeNodes(fp->mutable_node(), *f.body, options);
    std::set<std::string> domains;
    collectDomains(*f.body, domains);
    addOpsetImports(fp->mutable_opset_import(), domains, options);
  }
}

// Where each initializer's bytes go.
enum class Placement { Inline, Streamed, External };

struct Encoded {
  onnx::ModelProto model;  // initializers of Streamed/External placement carry no bytes here
  std::vector<Placement> placement;  // per initializer, in graph order
  std::vector<std::string> warnings;
};

Encoded encode(const ir::Graph& graph, const WriteOptions& options, bool externalData,
               const std::string& externalFileName) {
  Encoded out;
  onnx::ModelProto& m = out.model;
  m.set_ir_version(irVersionForOpset(options.opset));
  m.set_producer_name("pt2onnx");
  m.set_producer_version(options.producerVersion);

  std::set<std::string> domains;
  collectDomains(graph, domains);
  for (const ir::Function& f : graph.functions()) collectDomains(*f.body, domains);
  addOpsetImports(m.mutable_opset_import(), domains, options);
  for (const auto& [domain, version] : options.customOpsets)
    if (!domains.count(domain))
      out.warnings.push_back("custom opset domain '" + domain + "' is declared but not used in the model");

  onnx::GraphProto* g = m.mutable_graph();
  encodeGraphBody(g, graph, options);
  encodeFunctions(m, graph, options);

  uint64_t externalOffset = 0;
  for (const ir::Initializer& init : graph.initializers()) {
    onnx::TensorProto* t = g->add_initializer();
    const ir::TensorData& data = *init.data;
    if (externalData && data.numel() > kExternalMinElements) {
      fillTensorHeader(t, init.value->name, data);
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      auto add = [t](const std::string& k, const std::string& v) {
        auto* e = t->add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      add("location", externalFileName);
      add("offset", std::to_string(externalOffset));
      add("length", std::to_string(data.nbytes));
      externalOffset += (data.nbytes + kExternalAlignment - 1) / kExternalAlignment * kExternalAlignment;
      out.placement.push_back(Placement::External);
    } else if (!((data.dtype == ir::DType::Int64 || data.dtype == ir::DType::Int32) &&
                 data.nbytes <= kInlineIntegerTensorBytes)) {
      fillTensorHeader(t, init.value->name, data);  // bytes are streamed when writing
      out.placement.push_back(Placement::Streamed);
    } else {
      fillTensor(t, init.value->name, data);
      out.placement.push_back(Placement::Inline);
    }
  }

  if (options.keepInitializersAsInputs)
    for (const ir::Initializer& init : graph.initializers()) addValueInfo(g->mutable_input(), init.value);

  for (const auto& [k, v] : graph.metadata()) {
    auto* p = m.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  for (const auto& [k, v] : options.metadata) {
    auto* p = m.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  return out;
}

// onnx::checker::check_model for a model whose streamed initializers are marked as external data
// whose bytes are not written yet (they are checked by size when streaming). The model dir "#" is
// ONNX's mark for data held elsewhere: the checker then checks the location's form but does not
// look for the file. Same checks as check_model(ModelProto) in the ONNX we build (1.23).
void checkModel(const onnx::ModelProto& model) {
  onnx::checker::CheckerContext ctx;
  if (!model.ir_version()) throw onnx::checker::ValidationError("the model has no ir_version");
  if (model.ir_version() > onnx::IR_VERSION)
    throw onnx::checker::ValidationError("the model's ir_version " + std::to_string(model.ir_version()) +
                                         " is newer than the checker's (" + std::to_string(onnx::IR_VERSION) + ")");
  std::unordered_set<std::string> metadataKeys;
  for (const auto& entry : model.metadata_props())
    if (!metadataKeys.insert(entry.key()).second)
      throw onnx::checker::ValidationError("the model has the metadata key '" + entry.key() + "' twice");
  ctx.set_ir_version(static_cast<int>(model.ir_version()));
  std::unordered_map<std::string, int> opsets;
  for (const auto& imp : model.opset_import()) opsets[imp.domain()] = static_cast<int>(imp.version());
  ctx.set_opset_imports(opsets);
  ctx.set_model_dir("#");
  onnx::checker::LexicalScopeContext lex;
  onnx::checker::check_graph(model.graph(), ctx, lex);
  if (model.ir_version() >= 8) onnx::checker::check_model_local_functions(model, ctx, lex);
}

// Strict shape inference (types checked, node errors raised), in place, with data propagation
// first. ONNX 1.23.2's data propagation is wrong for Unsqueeze of a 1-D tensor (it takes a[5] for a
// vector of 5 values and passes them through unchanged), so the valid Mul(Unsqueeze(a[5], 1),
// Unsqueeze(b[10], 0)) of torch.outer / addr fails "Invalid rank for Mul broadcasting: (5) vs (10)"
// from opset 14 (Mul-14 propagates data). A model that passes without data propagation is valid; one
// that fails both ways raises the first error, as before. Inference rewrites its model: the second
// run infers `reload()`, the model as it was.
void inferShapesStrict(onnx::ModelProto& model, const std::function<onnx::ModelProto()>& reload) {
  try {
    onnx::ShapeInferenceOptions strict(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), strict);
  } catch (const onnx::InferenceError& withDataPropagation) {
    std::exception_ptr error = std::current_exception();
    model = reload();
    try {
      onnx::ShapeInferenceOptions plain(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/false);
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), plain);
    } catch (const onnx::InferenceError&) {
      std::rethrow_exception(error);
    }
    logger("writer")->debug("the model passes strict shape inference without data propagation: accepted "
                            "(ONNX 1.23's data propagation rejects it: {})", withDataPropagation.what());
  }
}

// The model as it will be written. Streamed initializers have no bytes in `enc.model`.
onnx::ModelProto modelToCheck(const Encoded& enc) {
  onnx::ModelProto model = enc.model;  // no large tensor bytes in it: cheap to copy
  for (size_t k = 0; k < enc.placement.size(); ++k) {
    if (enc.placement[k] == Placement::Inline) continue;
    // Streamed and external bytes are written after validation: a placeholder location, which
    // the checker does not open (model dir "#", see checkModel).
    onnx::TensorProto* t = model.mutable_graph()->mutable_initializer(static_cast<int>(k));
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    t->clear_external_data();
    auto* e = t->add_external_data();
    e->set_key("location");
    e->set_value("streamed");
  }
  return model;
}

// Checks the model as it will be written.
void validate(const Encoded& enc) {
  registerTrainingSchemas();
  onnx::ModelProto model = modelToCheck(enc);
  try {
    checkModel(model);
    inferShapesStrict(model, [&] { return modelToCheck(enc); });
  } catch (const std::exception& e) {
    // For converter development (docs/testing.md): the rejected model, to read what is wrong.
    if (const char* dump = std::getenv("PT2ONNX_DUMP_INVALID_MODEL")) {
      std::ofstream out(dump, std::ios::binary);
      enc.model.SerializeToOstream(&out);
    }
    throw ExportError(std::string("the exported model is not valid ONNX (onnx checker / shape "
                                  "inference): ") + e.what());
  }
}

}  // namespace

std::string checkModelBytes(const std::string& modelBytes) {
  registerTrainingSchemas();
  onnx::ModelProto model;
  if (!model.ParseFromString(modelBytes)) throw ExportError("not a serialized ONNX model");
  try {
    checkModel(model);
    inferShapesStrict(model, [&] {
      onnx::ModelProto original;
      original.ParseFromString(modelBytes);
      return original;
    });
  } catch (const std::exception& e) {
    throw ExportError(std::string("the model is not valid ONNX (onnx checker / shape inference): ") + e.what());
  }
  return model.SerializeAsString();
}

namespace {

void writeVarint(std::ostream& os, uint64_t v) {
  while (v >= 0x80) {
    os.put(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  os.put(static_cast<char>(v));
}

size_t varintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Protobuf wire tags (field << 3 | wire type 2 = length-delimited).
constexpr uint32_t kModelGraphTag = (7 << 3) | 2;
constexpr uint32_t kGraphInitializerTag = (5 << 3) | 2;
constexpr uint32_t kTensorRawDataTag = (9 << 3) | 2;

// Writes the model with every streamed initializer's bytes copied straight from its owner. The
// layout is valid protobuf: the graph's initializer fields follow its other fields.
void streamModel(const Encoded& enc, const ir::Graph& graph, std::ostream& os) {
  onnx::ModelProto head = enc.model;  // copy without large bytes
  head.clear_graph();
  onnx::GraphProto graphHead = enc.model.graph();
  graphHead.clear_initializer();

  std::vector<std::string> tensorHeads;
  uint64_t graphSize = graphHead.ByteSizeLong();
  const auto& inits = graph.initializers();
  for (size_t k = 0; k < inits.size(); ++k) {
    onnx::TensorProto t = enc.model.graph().initializer(static_cast<int>(k));
    bool streamed = enc.placement[k] == Placement::Streamed;
    if (streamed) t.clear_raw_data();
    std::string bytes = t.SerializeAsString();
    uint64_t size = bytes.size();
    if (streamed) size += 1 + varintSize(inits[k].data->nbytes) + inits[k].data->nbytes;
    graphSize += 1 + varintSize(size) + size;
    tensorHeads.push_back(std::move(bytes));
  }
  if (!head.SerializeToOstream(&os)) throw ExportError("failed to serialize the model header");
  writeVarint(os, kModelGraphTag);
  writeVarint(os, graphSize);
  if (!graphHead.SerializeToOstream(&os)) throw ExportError("failed to serialize the graph");
  std::vector<char> scratch;
  progress::phase("writing", graphSize, "bytes");
  uint64_t written = 0;
  for (size_t k = 0; k < inits.size(); ++k) {
    progress::advance(written);
    bool streamed = enc.placement[k] == Placement::Streamed;
    uint64_t size = tensorHeads[k].size();
    if (streamed) size += 1 + varintSize(inits[k].data->nbytes) + inits[k].data->nbytes;
    writeVarint(os, kGraphInitializerTag);
    writeVarint(os, size);
    os.write(tensorHeads[k].data(), static_cast<std::streamsize>(tensorHeads[k].size()));
    if (streamed) {
      writeVarint(os, kTensorRawDataTag);
      writeVarint(os, inits[k].data->nbytes);
      writeTensorBytes(os, *inits[k].data, scratch);
    }
    written += size;
  }
}

uint64_t totalInitializerBytes(const ir::Graph& graph) {
  uint64_t total = 0;
  for (const ir::Initializer& init : graph.initializers()) total += init.data->nbytes;
  return total;
}

// Removes a temp file unless committed: no half-written file survives a failure or, in the CLI,
// an interruption (common/interrupt.h).
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)), pending_(path_) {}
  ~TempFile() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  const std::string& path() const { return path_; }
  void commitTo(const std::string& finalPath) {
    std::error_code ec;
    std::filesystem::rename(path_, finalPath, ec);
    if (ec) throw ExportError("cannot move " + path_ + " to " + finalPath + ": " + ec.message());
    pending_.release();
    interrupt::noteFileWritten();
    path_.clear();
  }

 private:
  std::string path_;
  interrupt::PendingFile pending_;
};

// `-o build/model.onnx` in a fresh checkout works, as `--junit reports/x.xml` does: the directory is
// made once the model is converted (a failed export leaves none behind).
void createParentDirectory(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) throw ExportError("cannot create the directory " + parent.string() + " for " + path + ": " + ec.message());
}

void closeChecked(std::ofstream& os, const std::string& path) {
  os.flush();
  if (!os) throw ExportError("failed writing " + path + " (disk full or not writable?)");
  os.close();
}

}  // namespace

WriteResult writeModel(const ir::Graph& graph, const WriteOptions& options, const std::string& path) {
  auto log = logger("writer");
  bool external = totalInitializerBytes(graph) > options.externalDataThreshold;
  std::string dataName = std::filesystem::path(path).filename().string() + ".data";
  std::string dataPath = (std::filesystem::path(path).parent_path() / dataName).string();
  Encoded enc = encode(graph, options, external, dataName);
  validate(enc);

  WriteResult result;
  result.warnings = enc.warnings;
  std::string suffix = ".tmp." + std::to_string(::getpid());
  createParentDirectory(path);
  std::optional<TempFile> dataTemp;
  if (external) {
    dataTemp.emplace(dataPath + suffix);
    std::ofstream ds(dataTemp->path(), std::ios::binary | std::ios::trunc);
    if (!ds) throw ExportError("cannot open " + dataTemp->path() + " for writing");
    uint64_t offset = 0;
    std::vector<char> scratch;
    const auto& inits = graph.initializers();
    progress::phase("writing external data", totalInitializerBytes(graph), "bytes");
    for (size_t k = 0; k < inits.size(); ++k) {
      if (enc.placement[k] != Placement::External) continue;
      progress::advance(offset);
      const ir::TensorData& data = *inits[k].data;
      writeTensorBytes(ds, data, scratch);
      uint64_t padded = (data.nbytes + kExternalAlignment - 1) / kExternalAlignment * kExternalAlignment;
      for (uint64_t p = data.nbytes; p < padded; ++p) ds.put('\0');
      offset += padded;
    }
    closeChecked(ds, dataTemp->path());
    result.externalDataBytes = offset;
    result.externalDataPath = dataPath;
    log->info("external data: {} bytes in {}", offset, dataPath);
  }
  TempFile modelTemp(path + suffix);
  {
    std::ofstream os(modelTemp.path(), std::ios::binary | std::ios::trunc);
    if (!os) throw ExportError("cannot open " + path + " for writing: " + std::strerror(errno));
    streamModel(enc, graph, os);
    closeChecked(os, modelTemp.path());
  }
  result.modelBytes = std::filesystem::file_size(modelTemp.path());
  // The data file lands first; until the model does, an interruption removes it too.
  std::optional<interrupt::PendingFile> dataWithoutModel;
  if (dataTemp) {
    dataTemp->commitTo(dataPath);
    dataWithoutModel.emplace(dataPath);
  }
  try {
    modelTemp.commitTo(path);
  } catch (const ExportError&) {
    if (dataTemp) std::remove(dataPath.c_str());
    throw;
  }
  return result;
}

void streamModelTo(const ir::Graph& graph, const WriteOptions& options, std::ostream& os,
                   std::vector<std::string>* warnings) {
  uint64_t total = totalInitializerBytes(graph);
  if (total > options.externalDataThreshold)
    throw ExportError("the model's initializers (" + std::to_string(total) + " bytes) are above the external data "
                      "threshold (" + std::to_string(options.externalDataThreshold) + " bytes; protobuf's limit "
                      "is 2 GiB): external data needs a side file, so export to a file path instead of a file "
                      "object or memory");
  Encoded enc = encode(graph, options, false, "");
  validate(enc);
  if (warnings) *warnings = enc.warnings;
  streamModel(enc, graph, os);
}

std::string serializeModel(const ir::Graph& graph, const WriteOptions& options,
                           std::vector<std::string>* warnings) {
  std::ostringstream os;
  streamModelTo(graph, options, os, warnings);
  return os.str();
}

}  // namespace pt2onnx::writer
