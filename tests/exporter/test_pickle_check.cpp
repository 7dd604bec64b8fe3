// exporter/pickle_check.h on hand-written pickles: what LibTorch's unpickler would allocate or
// recurse into is refused before it reads them; ordinary pickles pass.
#include "exporter/pickle_check.h"

#include <string>

#include <gtest/gtest.h>

namespace pt2onnx {
namespace {

using namespace std::string_literals;  // pickles hold NULs; a hex escape is split from a following letter

// Protocol 2, a list of `depth` lists each inside the previous one.
std::string nestedLists(uint32_t depth) {
  return "\x80\x02"s + std::string(depth, ']') + std::string(depth - 1, 'a') + ".";
}

TEST(PickleCheck, OrdinaryPicklesPass) {
  EXPECT_EQ(pickleProblem("\x80\x02]q\x00(K\x01K\x02" "e."s), "");  // [1, 2], memoized
  EXPECT_EQ(pickleProblem("\x80\x02}q\x00(X\x01\x00\x00\x00" "aq\x01K\x01u."s), "");  // {"a": 1}
  EXPECT_EQ(pickleProblem("\x80\x02N\x94h\x00\x86r\x01\x00\x00\x00."s), "");  // MEMOIZE, then the next index
  EXPECT_EQ(pickleProblem("(lp0\nI1\nap1\n."s), "");  // protocol 0 text opcodes
}

TEST(PickleCheck, LengthsMustFitInThePickle) {
  EXPECT_NE(pickleProblem("\x80\x02X\xff\xff\xff\x7f"s + "abc."), "");
  EXPECT_NE(pickleProblem("\x80\x02X\x03\x00"s), "");  // the length itself truncated
  EXPECT_EQ(pickleProblem("\x80\x02X\x03\x00\x00\x00" "abc."s), "");
}

TEST(PickleCheck, MemoIndicesMustNotSkipAhead) {
  std::string problem = pickleProblem("\x80\x02Nr\x00\x00\x00\x70."s);
  EXPECT_NE(problem.find("memo index 1879048192 at byte 3 skips past the 0 entries"), std::string::npos) << problem;
  EXPECT_NE(pickleProblem("\x80\x02Nq\x00q\x02."s), "");  // 0 then 2: skips 1
  EXPECT_EQ(pickleProblem("\x80\x02Nq\x00q\x01q\x00."s), "");  // overwriting a used one is fine
  EXPECT_NE(pickleProblem("(p7\n."s), "");  // PUT in decimal, protocol 0
  EXPECT_NE(pickleProblem("(p12x\n."s), "");  // not a number
}

TEST(PickleCheck, NestingIsBounded) {
  EXPECT_EQ(pickleProblem(nestedLists(kMaxPickleNesting)), "");
  std::string problem = pickleProblem(nestedLists(kMaxPickleNesting + 1));
  EXPECT_NE(problem.find("nested more than 5000 deep"), std::string::npos) << problem;
  // The same depth built from tuples of one (TUPLE1) and through the memo (BINGET of the last level).
  std::string tuples = "\x80\x02N"s;
  for (uint32_t k = 0; k <= kMaxPickleNesting; ++k) tuples += "\x85";
  EXPECT_NE(pickleProblem(tuples + "."), "");
  std::string viaMemo = "\x80\x02]r\x00\x00\x00\x00"s;
  for (uint32_t k = 0; k <= kMaxPickleNesting; ++k) viaMemo += "]j\x00\x00\x00\x00" "ar\x00\x00\x00\x00"s;
  EXPECT_NE(pickleProblem(viaMemo + "."), "");
}

TEST(PickleCheck, DamagedPicklesSayWhere) {
  EXPECT_EQ(pickleProblem("\x80\x02N"s), "no STOP opcode");
  EXPECT_EQ(pickleProblem("\x80\x02\x01."s), "unknown opcode 1 at byte 2");
  EXPECT_NE(pickleProblem("\x80\x02" "cbuiltins"s), "");  // an unterminated line
  EXPECT_EQ(pickleProblem("\x80\x02" "e0a."s), "");  // stack underflow is LibTorch's to report, not a crash here
}

}  // namespace
}  // namespace pt2onnx
