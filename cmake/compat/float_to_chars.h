// Floating-point std::to_chars for standard libraries without it (GCC 10's libstdc++, which the
// low-glibc wheels build against: cmake/toolchains/bullseye-clang.cmake). Forced into ONNX's
// onnx/defs/printer.cc only, which calls it unguarded (cmake/OnnxLibrary.cmake). Like to_chars, it
// writes the shortest decimal that reads back as the same value, in the C locale's %g form (where
// exactly it switches to exponent notation may differ from to_chars's; ONNX's parser reads both).
#pragma once
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>

#if !defined(__cpp_lib_to_chars)
namespace std {
namespace pt2onnx_compat {
template <typename T>
inline to_chars_result shortest_to_chars(char* first, char* last, T value) {
  char buffer[48];
  int length = 0;
  for (int precision = 1; precision <= 17; ++precision) {
    length = std::snprintf(buffer, sizeof buffer, "%.*g", precision, static_cast<double>(value));
    T back = sizeof(T) == sizeof(float) ? static_cast<T>(std::strtof(buffer, nullptr))
                                        : static_cast<T>(std::strtod(buffer, nullptr));
    if (back == value) {
      break;
    }
  }
  if (length < 0 || length > last - first) {
    return {last, errc::value_too_large};
  }
  std::memcpy(first, buffer, static_cast<size_t>(length));
  return {first + length, errc{}};
}
}  // namespace pt2onnx_compat

inline to_chars_result to_chars(char* first, char* last, float value) {
  return pt2onnx_compat::shortest_to_chars(first, last, value);
}
inline to_chars_result to_chars(char* first, char* last, double value) {
  return pt2onnx_compat::shortest_to_chars(first, last, value);
}
}  // namespace std
#endif
