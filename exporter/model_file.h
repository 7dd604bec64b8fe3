// What a file given as a model is, decided once for every command (convert, report, verify, inspect,
// run, diff), so that a torch.save() pickle, an ONNX model, an empty or truncated file gets a message
// that names what it is and what to do, not a loader's "istream reader failed".
#pragma once

#include <istream>
#include <string>

namespace pt2onnx {

enum class ModelFileKind {
  Missing,             // no such path
  NotARegularFile,     // a directory, a device
  Empty,               // 0 bytes
  TorchScriptArchive,  // torch.jit.save (a zip with code/ and constants.pkl)
  TorchSaveZip,        // torch.save() of a module or state_dict (a zip with data.pkl only)
  TorchSavePickle,     // torch.save(..., _use_new_zipfile_serialization=False) or torch < 1.6: a bare pickle
  ExportedProgram,     // torch.export.save (.pt2)
  OnnxModel,           // a serialized onnx.ModelProto
  OtherZip,            // a zip without a TorchScript archive's records (or a truncated one)
  Unknown,
};

struct ModelFile {
  ModelFileKind kind = ModelFileKind::Unknown;
  std::string description;  // "an ONNX model (IR version 8, opsets ai.onnx 17)", "an empty file (0 bytes)"
};

ModelFile describeModelFile(const std::string& path);
ModelFile describeModelStream(std::istream& in);  // seeks; the stream is left at its start

// The ExportError messages of the two expectations, or "" when the file is what the command reads.
// `path` names the file in the message ("" for a stream).
std::string notATorchScriptArchive(const ModelFile& file, const std::string& path);
std::string notAnOnnxModel(const ModelFile& file, const std::string& path);

}  // namespace pt2onnx
