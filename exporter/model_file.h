// What a file given as a model is, decided once for every command (convert, report, verify, inspect,
// run, diff), so that a torch.save() pickle, an ONNX model, an empty or truncated file gets a message
// that names what it is and what to do, not a loader's "istream reader failed".
#pragma once

#include <istream>
#include <string>

#include "exporter/archive_limits.h"

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
  OtherZip,            // a zip without a TorchScript archive's records
  DamagedZip,          // a zip its reader cannot open: truncated, or damaged
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

// The one check of a file read as a TorchScript archive, made by every command that reads one
// (convert, report, verify, inspect; and the Python side's pt2onnx._compat.load_archive, through
// LibTorch-free C++): the file's kind (describeModelStream), then, for an archive or a damaged zip,
// its zip directory and pickle records (archive_limits.h) before LibTorch reads any of it. Throws
// ExportError with the message every command prints (`path` names the file, "" for a stream);
// returns what loading needs to know. Leaves the stream at its start.
ArchiveCheck checkTorchScriptArchive(std::istream& in, const std::string& path);
// The same for a path (a missing file or a directory included): "" when it is an archive to load,
// else the message.
std::string torchScriptArchiveProblem(const std::string& path);

}  // namespace pt2onnx
