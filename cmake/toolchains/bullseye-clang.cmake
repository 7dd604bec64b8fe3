# Toolchain of the low-glibc wheels (scripts/build_wheel.sh's default; docs/install.md): clang-16
# compiling and linking against a Debian 11 sysroot (scripts/sysroot.sh): glibc 2.31 and GCC 10's
# libstdc++, so that every binary needs at most GLIBC_2.31 / GLIBCXX_3.4.28 (manylinux_2_31) and uses
# the same shared libstdc++ as torch. GCC 10 itself cannot compile torch >= 2.14's headers (its
# -std=c++20 sets __cplusplus to 201709L; ATen requires 202002L); clang-16 can, with libstdc++ 10.
#   cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/bullseye-clang.cmake ...
#   PT2ONNX_SYSROOT (environment) the sysroot; default build/sysroot-bullseye of this checkout
if(DEFINED ENV{PT2ONNX_SYSROOT})
  set(_sysroot "$ENV{PT2ONNX_SYSROOT}")
else()
  get_filename_component(_sysroot "${CMAKE_CURRENT_LIST_DIR}/../../build/sysroot-bullseye" ABSOLUTE)
endif()
if(NOT EXISTS "${_sysroot}/.pt2onnx-sysroot")
  message(FATAL_ERROR "no Debian 11 sysroot at ${_sysroot}: make it with `bash scripts/sysroot.sh ${_sysroot}` "
    "(or point PT2ONNX_SYSROOT at one)")
endif()
find_program(PT2ONNX_CLANG clang-16)
find_program(PT2ONNX_CLANGXX clang++-16)
if(NOT PT2ONNX_CLANG OR NOT PT2ONNX_CLANGXX)
  message(FATAL_ERROR "the bullseye toolchain needs clang-16 (Debian 12: apt-get install clang-16)")
endif()
set(CMAKE_C_COMPILER "${PT2ONNX_CLANG}")
set(CMAKE_CXX_COMPILER "${PT2ONNX_CLANGXX}")
set(CMAKE_SYSROOT "${_sysroot}")
# GCC 10's libstdc++ headers, crt files and libgcc from the sysroot, not the host's GCC 12.
set(CMAKE_C_FLAGS_INIT "--gcc-toolchain=${_sysroot}/usr")
set(CMAKE_CXX_FLAGS_INIT "--gcc-toolchain=${_sysroot}/usr")
# The native CLI executable (not part of a wheel) links the build machine's libpython, whose own glibc
# references the sysroot's older libc cannot satisfy at link time.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,--allow-shlib-undefined")
# Libraries and headers from the sysroot first (then the host's: Python's, torch's come from there);
# CMake packages only from the sysroot; programs from the host, except protoc (bullseye's, which
# matches the sysroot's protobuf headers and library).
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(Protobuf_PROTOC_EXECUTABLE "${_sysroot}/protoc" CACHE FILEPATH "bullseye's protoc (scripts/sysroot.sh)")
# spdlog and fmt header-only: compiled into pt2onnx's binaries, so the wheel bundles no libspdlog/libfmt.
set(PT2ONNX_HEADER_ONLY_LOGGING ON CACHE BOOL "spdlog and fmt header-only")
# pow@GLIBC_2.29 and GLIBCXX_3.4.26's runtime_error move linked to older versions: manylinux_2_28.
set(PT2ONNX_MANYLINUX_2_28_SHIMS ON CACHE BOOL "manylinux_2_28's pow and runtime_error move")
