// Example arguments for an archive's forward() from the CLI's argument specs (-i/--input-shape of
// convert, report and verify; docs/cli.md). A spec is read against the argument's TorchScript type,
// so "3" is a shape for a Tensor and a value for an int, and a spec of the wrong kind is an error
// that names the argument, its type and a spec that would fit:
//   x:1x3x224x224[:float32]   a Tensor of that shape (floats: seeded normals; ints, bools: zeros)
//   x=input.npy               a Tensor (or a List[int], a List[Tensor] along dim 0) from a .npy file
//   n=3   scale=0.5   flag=true   mask=none
//   sizes=[2,3]   xs:[2x3,2x3:int64]   pair=(1,2)   state:(1x4,1x4)
// Omitted arguments take forward()'s default (an Optional without one is None); any other omitted
// argument is an error.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>

namespace pt2onnx {

// One -i text split at its first ':' or '=': NAME, the separator, and the rest.
struct ArgumentSpec {
  std::string name;
  char separator = ':';
  std::string value;
  std::string text;  // as given, for messages
};
ArgumentSpec parseArgumentSpec(const std::string& text);

// One value per forward() argument (self excluded), in order. Random tensors come from `seed`.
// `omitted`, when given, is set per argument: true for one the specs leave at its default.
std::vector<c10::IValue> exampleArguments(const std::vector<c10::Argument>& forwardArguments,
                                          const std::vector<ArgumentSpec>& specs, uint64_t seed = 0,
                                          std::vector<bool>* omitted = nullptr);

// A spec that fits `type` (for messages and `inspect`): "x:1x3x8x8", "n=3", "sizes=[2,3]"...
std::string exampleSpec(const std::string& name, const c10::TypePtr& type);
// `word` as one shell word: itself when it holds only characters no shell treats specially, else
// single-quoted (what Python's shlex.quote does): 'sizes=[2,3]', 'state:(1x4,1x4)'.
std::string shellQuoted(const std::string& word);
// "-i SPEC" with the spec shell-quoted, for messages that suggest a command line.
std::string exampleOption(const std::string& name, const c10::TypePtr& type);
// The -i options of the arguments without a default (Optionals left out), shell-quoted, space-separated.
std::string requiredArgumentOptions(const std::vector<c10::Argument>& forwardArguments);
// "forward(x: Tensor, n: int, mask: Optional[Tensor] = None)": names, TorchScript types, defaults.
std::string forwardSignature(const std::vector<c10::Argument>& forwardArguments);

}  // namespace pt2onnx
