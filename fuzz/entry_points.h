// The fuzzed entry points (docs/fuzzing.md): one function per loader of untrusted input, taking
// arbitrary bytes. Shared by the libFuzzer targets (fuzz/fuzz_target.cpp, a clang build with
// -fsanitize=fuzzer,address,undefined) and the regression replay of tests/fuzz_regressions/ in the
// normal test suite. Bad input must end in ExportError (the user error, swallowed here); any other
// exception escapes, and a crash, hang or sanitizer report is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pt2onnx::fuzz {

// An ONNX model: parsed, checked and planned as a Session, then run once on zero-filled inputs
// (dynamic dimensions 1) when every input is a tensor of a few elements.
void onnxSession(const uint8_t* data, size_t size);
// A .npy file's bytes (runtime::readNpyBytes).
void npyReader(const uint8_t* data, size_t size);
// The CLI's argument specs: line 1 picks a forward() signature, the other lines are -i specs and
// --dynamic-axis texts (exampleArguments, parseDynamicAxis).
void inputSpecs(const uint8_t* data, size_t size);
// A TorchScript archive: loaded through LibTorch and converted to ONNX (opset 17) on example
// arguments made for its forward() signature.
void torchScriptArchive(const uint8_t* data, size_t size);

struct Target {
  const char* name;  // the directory of its corpus and regressions: tests/fuzz_regressions/<name>/
  void (*run)(const uint8_t* data, size_t size);
};
const std::vector<Target>& targets();

// Limits a fuzzing process sets before its first input (small tensors, shallow nesting), so that
// an input claiming a huge allocation is refused as the user would see it rather than exhausting
// the fuzzer's memory.
void setFuzzingLimits();

}  // namespace pt2onnx::fuzz
