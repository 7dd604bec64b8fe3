#include "exporter/pickle_check.h"

#include <algorithm>
#include <vector>

namespace pt2onnx {
namespace {

uint64_t little(const std::string& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | static_cast<uint8_t>(b[at + k]);
  return v;
}

// The unpickler's stack, each value reduced to how deep containers nest in it (0: a scalar). Only
// as exact as the depth needs: an opcode on too few values (a damaged pickle LibTorch will refuse)
// pops what there is.
class NestingStack {
 public:
  void push(uint32_t depth) { values_.push_back(depth); }
  uint32_t pop() {
    if (values_.size() <= floor()) return 0;
    uint32_t d = values_.back();
    values_.pop_back();
    return d;
  }
  uint32_t top() const { return values_.size() > floor() ? values_.back() : 0; }
  void raiseTop(uint32_t depth) {
    if (values_.size() > floor()) values_.back() = std::max(values_.back(), depth);
  }
  void mark() { marks_.push_back(values_.size()); }
  // Pops everything above the last mark and the mark: the deepest of those values.
  uint32_t popToMark() {
    uint32_t deepest = 0;
    size_t to = floor();
    for (size_t k = to; k < values_.size(); ++k) deepest = std::max(deepest, values_[k]);
    values_.resize(to);
    if (!marks_.empty()) marks_.pop_back();
    return deepest;
  }

 private:
  size_t floor() const { return marks_.empty() ? 0 : std::min(marks_.back(), values_.size()); }
  std::vector<uint32_t> values_;
  std::vector<size_t> marks_;
};

}  // namespace

std::string pickleProblem(const std::string& p) {
  auto at = [&](size_t k) { return static_cast<uint8_t>(p[k]); };
  NestingStack stack;
  std::vector<uint32_t> memo;  // the depth of each stored value
  auto put = [&](uint64_t index, size_t where) -> std::string {
    if (index > memo.size())
      return "a memo index " + std::to_string(index) + " at byte " + std::to_string(where) + " skips past the " +
             std::to_string(memo.size()) + " entries stored";
    if (index == memo.size()) memo.push_back(0);
    memo[index] = stack.top();
    return "";
  };
  auto get = [&](uint64_t index) { stack.push(index < memo.size() ? memo[index] : 0); };
  for (size_t k = 0; k < p.size();) {
    size_t opAt = k;
    uint8_t op = at(k++);
    uint64_t arg = 0;  // bytes after the opcode
    uint32_t nested = 0;  // the depth of a container the opcode made or filled
    switch (op) {
      case '.': return "";  // STOP
      case 0x80: arg = 1; break;  // PROTO
      case 0x95: arg = 8; break;  // FRAME
      case '(': stack.mark(); break;
      case ']': case '}': case ')': case 0x8f: stack.push(1); break;  // empty list, dict, tuple, set
      case 'N': case 0x88: case 0x89: stack.push(0); break;  // None, True, False
      case 'K': case 'C': case 'U': case 0x8c: case 'B': case 'X': case 'T': case 0x8d: case 0x8e: case 0x8a: case 0x8b:
      case 'M': case 'J': case 'G': {
        if (op == 'K') arg = 1;
        else if (op == 'M') arg = 2;
        else if (op == 'J') arg = 4;
        else if (op == 'G') arg = 8;
        else {  // a length, then that many bytes
          int width = op == 'C' || op == 'U' || op == 0x8c || op == 0x8a ? 1 : op == 0x8d || op == 0x8e ? 8 : 4;
          if (k + width > p.size()) return "a truncated length at byte " + std::to_string(k);
          uint64_t claimed = little(p, k, width);
          k += width;
          if (claimed > p.size() - k)
            return "opcode " + std::to_string(op) + " at byte " + std::to_string(opAt) + " claims " +
                   std::to_string(claimed) + " bytes, " + std::to_string(p.size() - k) + " remain";
          arg = claimed;
        }
        stack.push(0);
        break;
      }
      case 'h': case 'j': {  // BINGET, LONG_BINGET
        int width = op == 'h' ? 1 : 4;
        if (k + width > p.size()) return "a truncated memo index at byte " + std::to_string(k);
        get(little(p, k, width));
        k += width;
        break;
      }
      case 'q': case 'r': {  // BINPUT, LONG_BINPUT
        int width = op == 'q' ? 1 : 4;
        if (k + width > p.size()) return "a truncated memo index at byte " + std::to_string(k);
        if (std::string problem = put(little(p, k, width), opAt); !problem.empty()) return problem;
        k += width;
        break;
      }
      case 0x94: memo.push_back(stack.top()); break;  // MEMOIZE
      case 'a': nested = stack.pop() + 1; stack.raiseTop(nested); break;  // APPEND
      case 's': {  // SETITEM
        uint32_t value = stack.pop(), key = stack.pop();
        nested = std::max(value, key) + 1;
        stack.raiseTop(nested);
        break;
      }
      case 'e': case 'u': case 0x90: nested = stack.popToMark() + 1; stack.raiseTop(nested); break;  // APPENDS, SETITEMS, ADDITEMS
      case 'b': nested = stack.pop() + 1; stack.raiseTop(nested); break;  // BUILD
      case 't': case 'l': case 'd': case 0x91: case 'o': nested = stack.popToMark() + 1; stack.push(nested); break;
      case 0x85: nested = stack.pop() + 1; stack.push(nested); break;  // TUPLE1
      case 0x86: case 0x87: {  // TUPLE2, TUPLE3
        nested = 0;
        for (int n = op == 0x86 ? 2 : 3; n > 0; --n) nested = std::max(nested, stack.pop());
        stack.push(++nested);
        break;
      }
      case 'R': case 0x81: {  // REDUCE, NEWOBJ: callable/class and its argument tuple make one value
        uint32_t args = stack.pop(), callable = stack.pop();
        stack.push(std::max(args, callable));
        break;
      }
      case 0x92: {  // NEWOBJ_EX
        uint32_t kwargs = stack.pop(), args = stack.pop(), cls = stack.pop();
        stack.push(std::max({kwargs, args, cls}));
        break;
      }
      case 0x93: { uint32_t a = stack.pop(), b = stack.pop(); stack.push(std::max(a, b)); break; }  // STACK_GLOBAL
      case 'Q': stack.push(stack.pop()); break;  // BINPERSID
      case '0': stack.pop(); break;  // POP
      case '1': stack.popToMark(); break;  // POP_MARK
      case '2': stack.push(stack.top()); break;  // DUP
      case 'c': case 'I': case 'L': case 'F': case 'S': case 'V': case 'P': case 'g': case 'p': {  // text lines
        size_t start = k;
        for (int lines = op == 'c' ? 2 : 1; lines > 0; --lines) {
          size_t end = p.find('\n', k);
          if (end == std::string::npos) return "an unterminated line at byte " + std::to_string(k);
          k = end + 1;
        }
        if (op == 'g' || op == 'p') {  // GET, PUT: the index in decimal
          uint64_t index = 0;
          for (size_t d = start; d + 1 < k; ++d) {
            if (p[d] < '0' || p[d] > '9' || index > (uint64_t{1} << 40))
              return "a bad memo index at byte " + std::to_string(start);
            index = index * 10 + static_cast<uint64_t>(p[d] - '0');
          }
          if (op == 'g') get(index);
          else if (std::string problem = put(index, opAt); !problem.empty()) return problem;
        } else {
          stack.push(0);
        }
        break;
      }
      default:
        return "unknown opcode " + std::to_string(op) + " at byte " + std::to_string(opAt);
    }
    if (nested > kMaxPickleNesting)
      return "values nested more than " + std::to_string(kMaxPickleNesting) + " deep at byte " + std::to_string(opAt);
    if (arg > p.size() - k)
      return "opcode " + std::to_string(op) + " at byte " + std::to_string(opAt) + " claims " + std::to_string(arg) +
             " bytes, " + std::to_string(p.size() - k) + " remain";
    k += arg;
  }
  return "no STOP opcode";
}

}  // namespace pt2onnx
