#include "tests/util/ort_runner.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "runtime/npy.h"

namespace pt2onnx::testing {
namespace {

namespace fs = std::filesystem;

std::string sourceDir() {
  if (const char* env = std::getenv("PT2ONNX_SOURCE_DIR")) return env;
  return PT2ONNX_SOURCE_DIR;
}

std::string readFile(const fs::path& p) {
  std::ifstream is(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "pt2onnx-ort-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

std::vector<OrtResult> runFiles(const std::vector<std::pair<std::string, const OrtJob*>>& files);

std::vector<OrtResult> runInOrt(const std::vector<OrtJob>& jobs) {
  std::vector<std::pair<std::string, const OrtJob*>> files;
  TempDir models;
  for (size_t j = 0; j < jobs.size(); ++j) {
    std::string path = (models.path() / ("model" + std::to_string(j) + ".onnx")).string();
    std::ofstream(path, std::ios::binary) << jobs[j].modelBytes;
    files.emplace_back(path, &jobs[j]);
  }
  return runFiles(files);
}

OrtResult runModelFileInOrt(const std::string& path, const std::vector<std::string>& inputNames,
                            const std::vector<at::Tensor>& inputs) {
  OrtJob job;
  job.inputNames = inputNames;
  job.inputs = inputs;
  return runFiles({{path, &job}}).at(0);
}

std::vector<OrtResult> runFiles(const std::vector<std::pair<std::string, const OrtJob*>>& files) {
  const std::vector<std::pair<std::string, const OrtJob*>>& jobs = files;
  TempDir dir;
  std::ostringstream list;
  list << "[";
  for (size_t j = 0; j < jobs.size(); ++j) {
    fs::path jobDir = dir.path() / ("job" + std::to_string(j));
    fs::create_directories(jobDir / "in");
    const OrtJob& job = *jobs[j].second;
    std::ostringstream manifest;
    manifest << "{";
    for (size_t i = 0; i < job.inputs.size(); ++i) {
      std::string file = "in_" + std::to_string(i) + ".npy";
      runtime::writeNpy((jobDir / "in" / file).string(), job.inputs[i]);
      manifest << (i ? ", " : "") << jsonString(job.inputNames.at(i)) << ": " << jsonString(file);
    }
    manifest << "}";
    { std::ofstream(jobDir / "in" / "manifest.json") << manifest.str(); }
    list << (j ? ", " : "") << "[" << jsonString(jobs[j].first) << ", "
         << jsonString((jobDir / "in").string()) << ", " << jsonString((jobDir / "out").string()) << "]";
  }
  list << "]";
  { std::ofstream(dir.path() / "jobs.json") << list.str(); }
  // The oracle module is run from the source tree, so the converter tests need no install of pt2onnx.
  std::string cmd = "PYTHONPATH=" + (fs::path(sourceDir()) / "python" / "pt2onnx").string() + " " +
                    PT2ONNX_PYTHON_EXECUTABLE + " -m onnxruntime_oracle --batch " + (dir.path() / "jobs.json").string() +
                    " 2>" + (dir.path() / "stderr.txt").string();
  int status = std::system(cmd.c_str());
  if (status != 0)
    throw std::runtime_error("running ONNX Runtime (" + std::string(PT2ONNX_PYTHON_EXECUTABLE) +
                             " -m onnxruntime_oracle) failed: " + readFile(dir.path() / "stderr.txt"));
  std::vector<OrtResult> results;
  for (size_t j = 0; j < jobs.size(); ++j) {
    fs::path out = dir.path() / ("job" + std::to_string(j)) / "out";
    OrtResult r;
    if (fs::exists(out / "error.txt")) {
      r.error = readFile(out / "error.txt");
    } else {
      std::string manifest = readFile(out / "manifest.json");
      std::regex pair("\"((?:[^\"\\\\]|\\\\.)*)\":\"([^\"]+)\"");
      for (auto it = std::sregex_iterator(manifest.begin(), manifest.end(), pair); it != std::sregex_iterator(); ++it) {
        r.outputNames.push_back((*it)[1]);
        r.outputs.push_back(runtime::readNpy((out / (*it)[2].str()).string()));
      }
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace pt2onnx::testing
