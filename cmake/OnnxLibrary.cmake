# The ONNX library pt2onnx links: ONNX's own source release, pinned by version and SHA-256, built
# statically by this build with the protobuf pt2onnx already links (a distribution's libonnx is old:
# Debian 12's 1.12 knows no opset past 17). Its checker, shape inference and operator schemas are
# the ones pt2onnx validates with; `pt2onnx --version` prints its version.
#
# Where the source release comes from, the first that exists wins:
#   1. -DPT2ONNX_ONNX_SOURCE=PATH: an extracted onnx-<version> directory or the onnx-<version>.tar.gz;
#   2. $PT2ONNX_SOURCE_CACHE/onnx-<version>.tar.gz (default ~/.cache/pt2onnx/sources);
#   3. `pip download` of the sdist into that cache, through the user's pip configuration (index,
#      proxy, mirror). Offline, put the tarball into the cache (docs/install.md says where from).
# The tarball's SHA-256 is checked whichever way it came. Building ONNX takes about 5 minutes on
# 2 cores, once per build directory (ccache makes rebuilds quick).

set(PT2ONNX_ONNX_VERSION 1.23.2)
set(PT2ONNX_ONNX_SHA256 008cb0467b2bbee41448acc7da8b6f4e704624cb0d327a2d5adafc7ce19bc5b8)
set(PT2ONNX_ONNX_SOURCE "" CACHE PATH "ONNX ${PT2ONNX_ONNX_VERSION}'s source release (directory or .tar.gz)")

set(_onnx_name onnx-${PT2ONNX_ONNX_VERSION})
set(_onnx_extracted ${CMAKE_BINARY_DIR}/_deps/${_onnx_name})

function(_pt2onnx_check_onnx_tarball tarball)
  file(SHA256 "${tarball}" actual)
  if(NOT actual STREQUAL PT2ONNX_ONNX_SHA256)
    message(FATAL_ERROR "${tarball} is not ONNX ${PT2ONNX_ONNX_VERSION}'s source release: its SHA-256 "
      "is ${actual}, expected ${PT2ONNX_ONNX_SHA256}. Remove it; the build fetches the right one.")
  endif()
endfunction()

function(_pt2onnx_extract_onnx tarball)
  set(stamp ${_onnx_extracted}/.pt2onnx-sha256)
  if(EXISTS ${stamp})
    file(READ ${stamp} extracted_hash)
    if(extracted_hash STREQUAL PT2ONNX_ONNX_SHA256)
      return()
    endif()
  endif()
  _pt2onnx_check_onnx_tarball("${tarball}")
  file(REMOVE_RECURSE ${_onnx_extracted})
  file(ARCHIVE_EXTRACT INPUT "${tarball}" DESTINATION ${CMAKE_BINARY_DIR}/_deps)
  if(NOT EXISTS ${_onnx_extracted}/CMakeLists.txt)
    message(FATAL_ERROR "${tarball} holds no ${_onnx_name}/CMakeLists.txt: not ONNX's source release")
  endif()
  file(WRITE ${stamp} ${PT2ONNX_ONNX_SHA256})
endfunction()

if(PT2ONNX_ONNX_SOURCE AND IS_DIRECTORY "${PT2ONNX_ONNX_SOURCE}")
  set(_onnx_source_dir "${PT2ONNX_ONNX_SOURCE}")
elseif(PT2ONNX_ONNX_SOURCE)
  if(NOT EXISTS "${PT2ONNX_ONNX_SOURCE}")
    message(FATAL_ERROR "PT2ONNX_ONNX_SOURCE=${PT2ONNX_ONNX_SOURCE} does not exist")
  endif()
  _pt2onnx_extract_onnx("${PT2ONNX_ONNX_SOURCE}")
  set(_onnx_source_dir ${_onnx_extracted})
else()
  if(DEFINED ENV{PT2ONNX_SOURCE_CACHE})
    set(_cache "$ENV{PT2ONNX_SOURCE_CACHE}")
  else()
    set(_cache "$ENV{HOME}/.cache/pt2onnx/sources")
  endif()
  set(_tarball ${_cache}/${_onnx_name}.tar.gz)
  if(NOT EXISTS ${_tarball})
    message(STATUS "ONNX ${PT2ONNX_ONNX_VERSION}: fetching its source release with pip into ${_cache}")
    file(MAKE_DIRECTORY ${_cache})
    # --no-build-isolation: pip reads the sdist's metadata with the scikit-build-core this build
    # already uses, instead of installing ONNX's build requirements into a throwaway environment.
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -m pip download --quiet --no-deps --no-binary :all:
              --no-build-isolation --dest ${_cache} onnx==${PT2ONNX_ONNX_VERSION}
      RESULT_VARIABLE pip_result ERROR_VARIABLE pip_error)
    if(NOT pip_result EQUAL 0 OR NOT EXISTS ${_tarball})
      string(REGEX REPLACE "WARNING: Location [^\n]*\n" "" pip_error "${pip_error}")
      message(FATAL_ERROR "could not fetch ONNX ${PT2ONNX_ONNX_VERSION}'s source release (pip download "
        "onnx==${PT2ONNX_ONNX_VERSION} --no-binary :all:): ${pip_error}\nWithout network access, copy "
        "${_onnx_name}.tar.gz (from PyPI, SHA-256 ${PT2ONNX_ONNX_SHA256}) to ${_cache}, or pass "
        "-DPT2ONNX_ONNX_SOURCE=PATH.")
    endif()
  endif()
  _pt2onnx_extract_onnx(${_tarball})
  set(_onnx_source_dir ${_onnx_extracted})
endif()

if(NOT EXISTS ${CMAKE_BINARY_DIR}/_deps/onnx-build/libonnx.a)
  message(STATUS "ONNX ${PT2ONNX_ONNX_VERSION}: built from ${_onnx_source_dir} with this build "
    "(about 5 minutes on 2 cores, once per build directory)")
endif()

# ONNX's own options, as normal variables (its CMakeLists sets policy CMP0077: option() honours them).
set(ONNX_ML ON)                         # onnx-ml.proto: what onnxruntime and the onnx package use
set(ONNX_NAMESPACE onnx)
set(ONNX_BUILD_PYTHON OFF)
set(ONNX_BUILD_TESTS OFF)
set(ONNX_INSTALL OFF)
set(ONNX_GEN_PB_TYPE_STUBS OFF)
set(ONNX_WERROR OFF)
set(ONNX_USE_LITE_PROTO OFF)
set(ONNX_DISABLE_STATIC_REGISTRATION OFF)
set(ONNX_USE_PROTOBUF_SHARED_LIBS ON)  # the protobuf pt2onnx links: one descriptor pool per process
set(_pt2onnx_shared_libs ${BUILD_SHARED_LIBS})
set(BUILD_SHARED_LIBS OFF)
add_subdirectory(${_onnx_source_dir} ${CMAKE_BINARY_DIR}/_deps/onnx-build EXCLUDE_FROM_ALL SYSTEM)
set(BUILD_SHARED_LIBS ${_pt2onnx_shared_libs})
# ONNX's printer calls std::to_chars on floats unguarded: a standard library without it (GCC 10's,
# the low-glibc wheels' sysroot) gets a shortest-round-trip replacement in that one file.
include(CheckCXXSourceCompiles)
check_cxx_source_compiles("#include <charconv>
int main() { char b[32]; return std::to_chars(b, b + 32, 1.5).ptr == b; }" PT2ONNX_HAVE_FLOAT_TO_CHARS)
if(NOT PT2ONNX_HAVE_FLOAT_TO_CHARS)
  set_source_files_properties(${_onnx_source_dir}/onnx/defs/printer.cc TARGET_DIRECTORY onnx PROPERTIES
    COMPILE_OPTIONS "-include;${CMAKE_SOURCE_DIR}/cmake/compat/float_to_chars.h")
endif()
