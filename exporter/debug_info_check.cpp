#include "exporter/debug_info_check.h"

#include <torch/csrc/jit/serialization/pickle.h>

namespace pt2onnx {
namespace {

constexpr std::string_view kFormatWithStringTable = "FORMAT_WITH_STRING_TABLE";

using Elements = c10::ivalue::TupleElements;

// The elements of `v`, if it is a tuple of at least `size`.
const Elements* tupleOf(const c10::IValue& v, size_t size) {
  if (!v.isTuple() || v.toTupleRef().elements().size() < size) return nullptr;
  return &v.toTupleRef().elements();
}

// "" when `source` is a serialized Source: (text indices, file index, line) against `table` (the
// string table's entry lengths), or (text, file or None, line) without one. Its text's length goes
// to `length`.
std::string sourceProblem(const c10::IValue& source, const std::vector<size_t>* table, size_t& length) {
  const auto* s = tupleOf(source, 3);
  if (!s || s->size() != 3 || !(*s)[2].isInt()) return "a source that is not a 3-tuple ending in a line number";
  if (table) {
    if (!(*s)[0].isIntList() || !(*s)[1].isInt()) return "a source without text indices and a file index";
    length = 0;
    for (int64_t index : (*s)[0].toIntList()) {
      if (index < 0 || static_cast<size_t>(index) >= table->size())
        return "text index " + std::to_string(index) + " outside the string table of " + std::to_string(table->size());
      length += (*table)[static_cast<size_t>(index)];
    }
    int64_t file = (*s)[1].toInt();
    if (file < 0 || static_cast<size_t>(file) >= table->size())
      return "file index " + std::to_string(file) + " outside the string table of " + std::to_string(table->size());
    return "";
  }
  if (!(*s)[0].isString() || !((*s)[1].isNone() || (*s)[1].isString())) return "a source without text and file name";
  length = (*s)[0].toStringRef().size();
  return "";
}

}  // namespace

std::string debugInfoProblem(const std::string& pickle) {
  c10::IValue top;
  try {
    top = torch::jit::unpickle(pickle.data(), pickle.size());
  } catch (const std::exception& e) {
    return std::string("does not unpickle: ") + e.what();
  }
  const auto* outer = tupleOf(top, 1);
  if (!outer) return "not a non-empty tuple";
  const Elements* records = outer;
  std::vector<size_t> table;  // the string table's entry lengths
  bool withTable = (*outer)[0].isString() && (*outer)[0].toStringRef() == kFormatWithStringTable;
  if (withTable) {
    const auto* texts = outer->size() >= 3 ? tupleOf((*outer)[1], 0) : nullptr;
    records = outer->size() >= 3 ? tupleOf((*outer)[2], 0) : nullptr;
    if (!texts || !records) return "a string-table format without its table and records";
    for (const c10::IValue& t : *texts) {
      if (!t.isString()) return "a string table holding a non-string";
      table.push_back(t.toStringRef().size());
    }
  }
  for (const c10::IValue& record : *records) {
    const auto* r = tupleOf(record, 2);
    if (!r || !(*r)[0].isInt()) return "a record that is not (byte offset, source range, ...)";
    const auto* range = tupleOf((*r)[1], 3);
    if (!range || range->size() != 3 || !(*range)[1].isInt() || !(*range)[2].isInt())
      return "a source range that is not (source, start, end)";
    size_t length = 0;
    if (std::string problem = sourceProblem((*range)[0], withTable ? &table : nullptr, length); !problem.empty())
      return problem;
    int64_t start = (*range)[1].toInt(), end = (*range)[2].toInt();
    // torch.jit.save writes [0, 1) over the empty text for nodes without a source (traced modules'
    // generated nodes): LibTorch reads such a range safely (its substr stops at the text's end).
    bool sourceless = length == 0 && start == 0 && end == 1;
    if (!sourceless && (start < 0 || end < start || static_cast<size_t>(end) > length))
      return "a source range [" + std::to_string(start) + ", " + std::to_string(end) + ") outside its text of " +
             std::to_string(length) + " bytes";
  }
  return "";
}

}  // namespace pt2onnx
