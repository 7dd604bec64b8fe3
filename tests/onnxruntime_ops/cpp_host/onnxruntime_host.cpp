// A C++ program that serves a model through ONNX Runtime's C API with no Python of its own: it
// loads libonnxruntime (the wheel's capi/libonnxruntime.so.*), registers pt2onnx's custom-op
// library (which starts an embedded Python for the PythonOps), runs the model on one float input
// from two threads at once, and compares output 0 with PyTorch's numbers saved beside the model.
//   onnxruntime_host ORT_LIBRARY OPS_LIBRARY MODEL INPUT.f32 DIMS EXPECTED.f32
// DIMS is "2x3"; the .f32 files hold raw float32. Exit 0 when every run matches, 1 on a mismatch,
// 2 on an error (printed).
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <onnxruntime_c_api.h>

namespace {

const OrtApi* ort = nullptr;

// An ORT call's failure: printed, then the program ends with 2. Worker threads carry it out as an
// exception (exit() from one thread while another is inside ORT would tear ORT down under it).
struct Failure {};

void check(OrtStatus* status, const char* what) {
  if (!status) return;
  std::fprintf(stderr, "%s failed: %s\n", what, ort->GetErrorMessage(status));
  ort->ReleaseStatus(status);
  throw Failure{};
}

std::vector<float> readFloats(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) std::fprintf(stderr, "cannot read %s\n", path), std::exit(2);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> values(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(values.data()));
  return values;
}

std::vector<int64_t> parseDims(const std::string& text) {
  std::vector<int64_t> dims;
  std::stringstream in(text);
  for (std::string d; std::getline(in, d, 'x');) dims.push_back(std::stoll(d));
  return dims;
}

std::string name(OrtSession* session, size_t index, bool input) {
  OrtAllocator* allocator = nullptr;
  check(ort->GetAllocatorWithDefaultOptions(&allocator), "GetAllocatorWithDefaultOptions");
  char* text = nullptr;
  check(input ? ort->SessionGetInputName(session, index, allocator, &text)
              : ort->SessionGetOutputName(session, index, allocator, &text), "SessionGet*Name");
  std::string result = text;
  allocator->Free(allocator, text);
  return result;
}

// Runs the model once; the largest difference from `expected`, or -1 on a wrong output size.
double runOnce(OrtSession* session, std::vector<float> input, const std::vector<int64_t>& dims,
               const std::vector<float>& expected) {
  OrtMemoryInfo* memory = nullptr;
  check(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &memory), "CreateCpuMemoryInfo");
  OrtValue* value = nullptr;
  check(ort->CreateTensorWithDataAsOrtValue(memory, input.data(), input.size() * sizeof(float), dims.data(),
                                            dims.size(), ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &value),
        "CreateTensorWithDataAsOrtValue");
  std::string inputName = name(session, 0, true), outputName = name(session, 0, false);
  const char* inputNames[] = {inputName.c_str()};
  const char* outputNames[] = {outputName.c_str()};
  OrtValue* output = nullptr;
  check(ort->Run(session, nullptr, inputNames, &value, 1, outputNames, 1, &output), "Run");
  float* data = nullptr;
  check(ort->GetTensorMutableData(output, reinterpret_cast<void**>(&data)), "GetTensorMutableData");
  OrtTensorTypeAndShapeInfo* info = nullptr;
  size_t count = 0;
  check(ort->GetTensorTypeAndShape(output, &info), "GetTensorTypeAndShape");
  check(ort->GetTensorShapeElementCount(info, &count), "GetTensorShapeElementCount");
  ort->ReleaseTensorTypeAndShapeInfo(info);
  double worst = count == expected.size() ? 0 : -1;
  for (size_t i = 0; worst >= 0 && i < count; ++i) worst = std::max(worst, std::fabs(double(data[i]) - expected[i]));
  ort->ReleaseValue(output);
  ort->ReleaseValue(value);
  ort->ReleaseMemoryInfo(memory);
  return worst;
}

}  // namespace

int run(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s ORT_LIBRARY OPS_LIBRARY MODEL INPUT.f32 DIMS EXPECTED.f32\n", argv[0]);
    return 2;
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) return std::fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror()), 2;
  auto getApiBase = reinterpret_cast<const OrtApiBase* (*)()>(dlsym(library, "OrtGetApiBase"));
  if (!getApiBase) return std::fprintf(stderr, "%s has no OrtGetApiBase\n", argv[1]), 2;
  ort = getApiBase()->GetApi(17);
  if (!ort) return std::fprintf(stderr, "onnxruntime %s has no API 17\n", getApiBase()->GetVersionString()), 2;

  OrtEnv* env = nullptr;
  check(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "onnxruntime_host", &env), "CreateEnv");
  OrtSessionOptions* options = nullptr;
  check(ort->CreateSessionOptions(&options), "CreateSessionOptions");
  check(ort->RegisterCustomOpsLibrary_V2(options, argv[2]), "RegisterCustomOpsLibrary_V2");
  OrtSession* session = nullptr;
  check(ort->CreateSession(env, argv[3], options, &session), "CreateSession");

  std::vector<float> input = readFloats(argv[4]), expected = readFloats(argv[6]);
  std::vector<int64_t> dims = parseDims(argv[5]);
  double worst[4] = {0, 0, 0, 0};
  bool failed[2] = {false, false};
  std::vector<std::thread> threads;  // two threads at once, twice each: no GIL is held between runs
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int r = 0; r < 2; ++r) worst[t * 2 + r] = runOnce(session, input, dims, expected);
      } catch (const Failure&) {
        failed[t] = true;
      }
    });
  for (std::thread& t : threads) t.join();
  if (failed[0] || failed[1]) return 2;
  int status = 0;
  for (double w : worst) {
    std::printf("max |onnxruntime - torch| = %g\n", w);
    if (w < 0 || w > 1e-4) status = 1;
  }
  ort->ReleaseSession(session);
  ort->ReleaseSessionOptions(options);
  ort->ReleaseEnv(env);
  return status;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Failure&) {
    return 2;
  }
}
