#include "exporter/model_file.h"

#include <filesystem>
#include <fstream>
#include <optional>

#include <caffe2/serialize/inline_container.h>

#include "common/errors.h"

namespace pt2onnx {
namespace {

std::optional<uint64_t> readVarint(std::istream& in) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    int c = in.get();
    if (c == EOF) return std::nullopt;
    v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
  }
  return std::nullopt;
}

// A serialized onnx.ModelProto, recognised by walking its top-level fields (each a ModelProto field
// with its wire type, lengths inside the file, an ir_version and a graph) without reading the graph.
std::optional<std::string> onnxModelSummary(std::istream& in, uint64_t size) {
  in.clear();
  in.seekg(0);
  std::optional<uint64_t> irVersion;
  std::string opsets;
  bool graph = false;
  while (static_cast<uint64_t>(in.tellg()) < size) {
    std::optional<uint64_t> tag = readVarint(in);
    if (!tag) return std::nullopt;
    uint64_t field = *tag >> 3, wire = *tag & 7;
    bool varintField = field == 1 || field == 5;
    bool lengthField = (field >= 2 && field <= 4) || (field >= 6 && field <= 8) || field == 14 || field == 20 ||
                       field == 25 || field == 26;
    if (varintField && wire == 0) {
      std::optional<uint64_t> v = readVarint(in);
      if (!v) return std::nullopt;
      if (field == 1) irVersion = *v;
    } else if (lengthField && wire == 2) {
      std::optional<uint64_t> length = readVarint(in);
      uint64_t at = static_cast<uint64_t>(in.tellg());
      if (!length || at + *length > size) return std::nullopt;
      if (field == 7) graph = true;
      if (field == 8 && *length < 256) {  // an OperatorSetIdProto: domain (1), version (2)
        std::string domain;
        uint64_t version = 0;
        while (static_cast<uint64_t>(in.tellg()) < at + *length) {
          std::optional<uint64_t> t = readVarint(in);
          if (!t) return std::nullopt;
          if (*t == 0x0a) {
            std::optional<uint64_t> n = readVarint(in);
            if (!n || *n > 200) return std::nullopt;
            domain.resize(*n);
            in.read(domain.data(), static_cast<std::streamsize>(*n));
          } else if (*t == 0x10) {
            std::optional<uint64_t> v = readVarint(in);
            if (!v) return std::nullopt;
            version = *v;
          } else {
            return std::nullopt;
          }
        }
        opsets += (opsets.empty() ? "" : ", ") + (domain.empty() ? std::string("ai.onnx") : domain) + " " +
                  std::to_string(version);
      }
      in.clear();
      in.seekg(static_cast<std::streamoff>(at + *length));
    } else {
      return std::nullopt;
    }
  }
  if (!irVersion || !graph) return std::nullopt;
  return "an ONNX model (IR version " + std::to_string(*irVersion) + (opsets.empty() ? "" : ", opsets " + opsets) + ")";
}

std::string hexPrefix(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ' ';
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

ModelFile describeZip(std::istream& in) {
  try {
    in.clear();
    in.seekg(0);
    caffe2::serialize::PyTorchStreamReader reader(&in);
    std::vector<std::string> records = reader.getAllRecords();
    bool code = false, constants = false, data = false, exported = false;
    for (const std::string& r : records) {
      code = code || r.rfind("code/", 0) == 0;
      constants = constants || r == "constants.pkl";
      data = data || r == "data.pkl";
      exported = exported || r.find("serialized_exported_program") != std::string::npos ||
                 r.rfind("archive_format", 0) == 0;
    }
    if (exported) return {ModelFileKind::ExportedProgram, "a torch.export program (.pt2, torch.export.save)"};
    if (constants || code) return {ModelFileKind::TorchScriptArchive, "a TorchScript archive"};
    if (data)
      return {ModelFileKind::TorchSaveZip,
              "a torch.save() file (a pickled Python object: an nn.Module or a state_dict)"};
    return {ModelFileKind::OtherZip, "a zip file (" + std::to_string(records.size()) +
                                         " records) without a TorchScript archive's code/ and constants.pkl"};
  } catch (const std::exception& e) {
    // The reader's first sentence ("... failed finding central directory"), without miniz's advice.
    std::string what = e.what();
    what = what.substr(0, std::min(what.find('\n'), what.find(". ")));
    return {ModelFileKind::DamagedZip, "a damaged or truncated zip file (" + what + ")"};
  }
}

}  // namespace

ModelFile describeModelStream(std::istream& in) {
  in.clear();
  in.seekg(0, std::ios::end);
  std::streamoff end = in.tellg();
  in.seekg(0);
  if (end <= 0) return {ModelFileKind::Empty, "an empty file (0 bytes)"};
  std::string head(static_cast<size_t>(std::min<std::streamoff>(end, 8)), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  ModelFile file;
  if (head.rfind("PK\x03\x04", 0) == 0 || head.rfind("PK\x05\x06", 0) == 0) {
    file = describeZip(in);
  } else if (static_cast<unsigned char>(head[0]) == 0x80 && head.size() > 1 && head[1] >= 2 && head[1] <= 5) {
    file = {ModelFileKind::TorchSavePickle,
            "a torch.save() file in the legacy pickle format (a pickled Python object: an nn.Module or a state_dict)"};
  } else if (std::optional<std::string> onnx = onnxModelSummary(in, static_cast<uint64_t>(end))) {
    file = {ModelFileKind::OnnxModel, *onnx};
  } else {
    file = {ModelFileKind::Unknown, "an unrecognized file (" + std::to_string(end) + " bytes starting with " +
                                        hexPrefix(head) + "; neither a zip file nor an ONNX protobuf)"};
  }
  in.clear();
  in.seekg(0);
  return file;
}

ModelFile describeModelFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {ModelFileKind::Missing, "does not exist"};
  if (!std::filesystem::is_regular_file(path, ec))
    return {ModelFileKind::NotARegularFile,
            std::filesystem::is_directory(path, ec) ? "a directory" : "not a regular file"};
  std::ifstream in(path, std::ios::binary);
  if (!in) return {ModelFileKind::NotARegularFile, "not readable (permissions?)"};
  return describeModelStream(in);
}

std::string notATorchScriptArchive(const ModelFile& file, const std::string& path) {
  const std::string subject = path.empty() ? "the model" : "'" + path + "'";
  switch (file.kind) {
    case ModelFileKind::TorchScriptArchive: return "";
    case ModelFileKind::Missing: return "model file " + subject + " does not exist";
    case ModelFileKind::TorchSaveZip:
    case ModelFileKind::TorchSavePickle:
      return subject + " is " + file.description +
             ", not a TorchScript archive; it holds no code pt2onnx can read without the Python classes. Save a "
             "TorchScript archive with torch.jit.save(torch.jit.script(model), PATH) (or torch.jit.trace), or "
             "export from Python: pt2onnx.export(model, args, PATH) or pt2onnx convert --python MODULE:FUNCTION";
    case ModelFileKind::ExportedProgram:
      return subject + " is " + file.description +
             ", not a TorchScript archive: pt2onnx reads torch.jit.save archives; export the nn.Module from Python "
             "with pt2onnx.export(model, args, PATH) (or torch.onnx.export(..., dynamo=True) for an ExportedProgram)";
    case ModelFileKind::OnnxModel:
      return subject + " is " + file.description +
             ", not a TorchScript archive: it is already converted; run it with `pt2onnx run " +
             (path.empty() ? "MODEL.onnx" : path) + " --input NAME=FILE.npy` or compare it with `pt2onnx diff`";
    case ModelFileKind::NotARegularFile:
      return subject + " is " + file.description + (file.description == "a directory" ? ", not a file" : "") +
             ": give a TorchScript archive (torch.jit.save of a traced or scripted module)";
    case ModelFileKind::DamagedZip:
      return subject + " is " + file.description +
             ", not a readable TorchScript archive: copy it again whole, or save it again with torch.jit.save";
    default:
      return subject + " is " + file.description + ", not a TorchScript archive (torch.jit.save of a traced or "
                                                      "scripted module)";
  }
}

std::string notAnOnnxModel(const ModelFile& file, const std::string& path) {
  const std::string subject = path.empty() ? "the model" : "'" + path + "'";
  switch (file.kind) {
    case ModelFileKind::OnnxModel: return "";
    case ModelFileKind::Missing: return "model file " + subject + " does not exist";
    case ModelFileKind::TorchScriptArchive:
      return subject + " is a TorchScript archive, not an ONNX model: convert it first with `pt2onnx convert " +
             (path.empty() ? "MODEL.pt" : path) + " -o MODEL.onnx -i ...` (`pt2onnx inspect` prints a line that works)";
    default: return subject + " is not a valid ONNX model: it is " + file.description;
  }
}

ArchiveCheck checkTorchScriptArchive(std::istream& in, const std::string& path) {
  ModelFile file = describeModelStream(in);
  if (file.kind == ModelFileKind::TorchScriptArchive || file.kind == ModelFileKind::DamagedZip) {
    // A damaged zip is checked as LibTorch's reader would read it first: those messages say what is
    // damaged (the zip directory, a pickle record), where the zip reader only says it gave up.
    ArchiveCheck check;
    try {
      check = checkArchiveLimits(in);
    } catch (const ExportError& e) {
      throw ExportError(path.empty() ? std::string(e.what()) : "'" + path + "': " + e.what());
    }
    if (file.kind == ModelFileKind::TorchScriptArchive) return check;
  }
  throw ExportError(notATorchScriptArchive(file, path));
}

std::string torchScriptArchiveProblem(const std::string& path) {
  ModelFile file = describeModelFile(path);
  if (file.kind == ModelFileKind::Missing || file.kind == ModelFileKind::NotARegularFile)
    return notATorchScriptArchive(file, path);
  std::ifstream in(path, std::ios::binary);
  try {
    checkTorchScriptArchive(in, path);
  } catch (const ExportError& e) {
    return e.what();
  }
  return "";
}

}  // namespace pt2onnx
