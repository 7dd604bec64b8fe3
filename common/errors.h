// Error policy (docs/error_policy.md): problems with the user's model or options are ExportError,
// carrying the node, op, opset and PyTorch source location; broken invariants of pt2onnx itself are
// InternalError ("please report"), raised through PT2ONNX_ASSERT, never silently ignored.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace pt2onnx {

// A user-facing error: bad input, unsupported op, bad option. The message is complete.
class ExportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A runtime call whose arguments do not fit the model: an unknown, missing or mistyped input.
// (Python: pt2onnx.InvalidArgument, as onnxruntime's; other runtime failures are pt2onnx.Fail.)
class InvalidArgumentError : public ExportError {
 public:
  using ExportError::ExportError;
};

// Raised by a symbolic function (through Context::fail) about the node it converts; the exporter
// adds the node, op, opset and source location and rethrows it as an ExportError.
class SymbolicError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bug in pt2onnx.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// An exception's message without the C++ backtrace that LibTorch's errors (c10::Error) append
// ("Exception raised from ..." and "frame #N" lines): user-facing messages never show it.
std::string messageOf(const std::exception& e);
std::string withoutBacktrace(const std::string& message);

[[noreturn]] void throwInternalError(const char* cond, const char* file, int line,
                                     const std::string& msg);

}  // namespace pt2onnx

#define PT2ONNX_ASSERT(cond, msg)                                                   \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::ostringstream pt2onnx_assert_ss_;                                        \
      pt2onnx_assert_ss_ << msg;                                                    \
      ::pt2onnx::throwInternalError(#cond, __FILE__, __LINE__, pt2onnx_assert_ss_.str()); \
    }                                                                               \
  } while (0)
