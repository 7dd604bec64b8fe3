// The two symbols that keep the low-glibc wheel (cmake/toolchains/bullseye-clang.cmake) above
// manylinux_2_28 when built against glibc 2.31 and GCC 10's libstdc++: every reference to them is
// linked here instead (-Wl,--wrap, CMakeLists.txt's PT2ONNX_MANYLINUX_2_28_SHIMS).
//   pow@GLIBC_2.29: glibc 2.29 gave pow a new version (a faster implementation, same results within
//     its error bound); the one every glibc since 2.2.5 has is bound here with .symver.
//   std::runtime_error's move constructor (GLIBCXX_3.4.26): CLI11's App::_process moves a FileError.
//     A copy does what the move does: the message is a reference-counted string, and the source stays
//     valid either way.
#include <new>
#include <stdexcept>

extern "C" double pt2onnx_pow_glibc_2_2_5(double, double);
__asm__(".symver pt2onnx_pow_glibc_2_2_5, pow@GLIBC_2.2.5");

extern "C" double __wrap_pow(double base, double exponent) {
  return pt2onnx_pow_glibc_2_2_5(base, exponent);
}

// The base-object constructor (C2) and the complete-object one (C1) are the same for runtime_error
// (no virtual bases).
extern "C" void pt2onnx_runtime_error_move_c2(std::runtime_error* self, std::runtime_error* other) noexcept
    __asm__("__wrap__ZNSt13runtime_errorC2EOS_");
extern "C" void pt2onnx_runtime_error_move_c1(std::runtime_error* self, std::runtime_error* other) noexcept
    __asm__("__wrap__ZNSt13runtime_errorC1EOS_");

void pt2onnx_runtime_error_move_c2(std::runtime_error* self, std::runtime_error* other) noexcept {
  ::new (static_cast<void*>(self)) std::runtime_error(static_cast<const std::runtime_error&>(*other));
}
void pt2onnx_runtime_error_move_c1(std::runtime_error* self, std::runtime_error* other) noexcept {
  ::new (static_cast<void*>(self)) std::runtime_error(static_cast<const std::runtime_error&>(*other));
}
