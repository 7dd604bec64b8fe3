// exporter/debug_info_check.h on debug info pickled the way torch.jit.save pickles it, intact and
// damaged: every index LibTorch would follow unchecked must be inside the string table.
#include "exporter/debug_info_check.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>

namespace pt2onnx {
namespace {

using c10::IValue;
using c10::ivalue::Tuple;

std::string pickled(const IValue& v) {
  std::vector<char> bytes = torch::jit::pickle(v, nullptr);
  return std::string(bytes.begin(), bytes.end());
}

// ("FORMAT_WITH_STRING_TABLE", ("", "def f(x):\n", "  return x\n", "m.py"), ((0, (([1, 2], 3, 7), start, end), -1),))
std::string withStringTable(std::vector<int64_t> textIndices, int64_t file, int64_t start, int64_t end) {
  IValue texts = Tuple::create({IValue(""), IValue("def f(x):\n"), IValue("  return x\n"), IValue("m.py")});
  IValue source = Tuple::create({IValue(c10::List<int64_t>(textIndices)), IValue(file), IValue(int64_t{7})});
  IValue record = Tuple::create({IValue(int64_t{0}), IValue(Tuple::create({source, IValue(start), IValue(end)})),
                                 IValue(int64_t{-1})});
  return pickled(Tuple::create({IValue("FORMAT_WITH_STRING_TABLE"), texts, IValue(Tuple::create({record}))}));
}

TEST(DebugInfoCheck, TorchJitSaveLayoutsPass) {
  EXPECT_EQ(debugInfoProblem(withStringTable({1, 2}, 3, 0, 21)), "");
  EXPECT_EQ(debugInfoProblem(withStringTable({}, 0, 0, 0)), "");
  // What torch.jit.save writes for a node without a source (text index 0 is "", seen in every traced
  // torchaudio model's archive): [0, 1) over the empty text.
  EXPECT_EQ(debugInfoProblem(withStringTable({0}, 0, 0, 1)), "");
  // The layout before the string table: (text, file or None, line) sources.
  IValue source = Tuple::create({IValue("x = 1\n"), IValue(), IValue(int64_t{1})});
  IValue record = Tuple::create({IValue(int64_t{4}), IValue(Tuple::create({source, IValue(int64_t{0}), IValue(int64_t{5})}))});
  EXPECT_EQ(debugInfoProblem(pickled(Tuple::create({record}))), "");
}

TEST(DebugInfoCheck, IndicesOutsideTheStringTableAreDamage) {
  EXPECT_EQ(debugInfoProblem(withStringTable({1, 9}, 3, 0, 5)), "text index 9 outside the string table of 4");
  EXPECT_EQ(debugInfoProblem(withStringTable({-1}, 3, 0, 0)), "text index -1 outside the string table of 4");
  EXPECT_EQ(debugInfoProblem(withStringTable({1}, 4, 0, 5)), "file index 4 outside the string table of 4");
  EXPECT_EQ(debugInfoProblem(withStringTable({1, 2}, 3, 3, 22)), "a source range [3, 22) outside its text of 21 bytes");
  EXPECT_NE(debugInfoProblem(withStringTable({1, 2}, 3, 5, 4)), "");
  EXPECT_EQ(debugInfoProblem(withStringTable({0}, 0, 0, 2)), "a source range [0, 2) outside its text of 0 bytes");
  EXPECT_EQ(debugInfoProblem(withStringTable({0}, 0, 1, 1)), "a source range [1, 1) outside its text of 0 bytes");
}

TEST(DebugInfoCheck, OtherShapesAreDamage) {
  EXPECT_NE(debugInfoProblem(pickled(IValue(int64_t{3}))), "");
  EXPECT_NE(debugInfoProblem(pickled(Tuple::create({IValue("FORMAT_WITH_STRING_TABLE")}))), "");
  IValue shortRecord = Tuple::create({IValue(int64_t{0})});
  EXPECT_NE(debugInfoProblem(pickled(Tuple::create({shortRecord}))), "");
  EXPECT_NE(debugInfoProblem("\x80\x02K\x01"), "");  // no STOP: does not unpickle
}

}  // namespace
}  // namespace pt2onnx
