# Sanitizers.cmake: sanitizer and fuzzing builds (docs/fuzzing.md; CMakePresets.json: asan, tsan, fuzz).
#   PT2ONNX_SANITIZE  "address,undefined" or "thread": every pt2onnx target instrumented (LibTorch,
#                     a prebuilt wheel, is not: tests/sanitizers/*.supp say what is suppressed there)
#   PT2ONNX_FUZZ      ON: clang only; the libFuzzer targets fuzz_<name> (fuzz/entry_points.h), built
#                     with -fsanitize=fuzzer,address,undefined; the Python extension is not built
set(PT2ONNX_SANITIZE "" CACHE STRING "Sanitizers for every pt2onnx target: address,undefined or thread")
option(PT2ONNX_FUZZ "Build the libFuzzer targets (clang)" OFF)

if(PT2ONNX_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "PT2ONNX_FUZZ needs clang (CMAKE_CXX_COMPILER=clang++): libFuzzer is clang's")
  endif()
  if(PT2ONNX_SANITIZE STREQUAL "")
    set(PT2ONNX_SANITIZE "address,undefined")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(NOT PT2ONNX_SANITIZE STREQUAL "")
  # Every UBSan finding stops the process (a report is a failure, not a warning).
  add_compile_options(-fsanitize=${PT2ONNX_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all -g)
  add_link_options(-fsanitize=${PT2ONNX_SANITIZE})
  # LibTorch's typeinfo is not instrumented: UBSan's vptr check on its polymorphic types would
  # report every dynamic_cast across the library boundary.
  if(PT2ONNX_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize=vptr)
  endif()
  message(STATUS "pt2onnx: sanitizers ${PT2ONNX_SANITIZE}")
endif()

# The fuzzed entry points: a library shared by the fuzz targets and the test suite's replay of
# tests/fuzz_regressions/ (built whenever either is).
function(pt2onnx_add_fuzzing)
  add_library(pt2onnx_fuzz_entry STATIC ${CMAKE_SOURCE_DIR}/fuzz/entry_points.cpp ${CMAKE_SOURCE_DIR}/cli/commands/input_spec.cpp)
  target_link_libraries(pt2onnx_fuzz_entry PUBLIC pt2onnx_exporter pt2onnx_runtime)
  if(NOT PT2ONNX_FUZZ)
    return()
  endif()
  foreach(target onnx_session npy_reader input_specs torchscript_archive)
    add_executable(fuzz_${target} ${CMAKE_SOURCE_DIR}/fuzz/fuzz_target.cpp)
    target_compile_definitions(fuzz_${target} PRIVATE PT2ONNX_FUZZ_TARGET="${target}")
    target_link_libraries(fuzz_${target} PRIVATE pt2onnx_fuzz_entry)
    target_link_options(fuzz_${target} PRIVATE -fsanitize=fuzzer)
    set_target_properties(fuzz_${target} PROPERTIES BUILD_RPATH "${PT2ONNX_TORCH_LIB_DIR}")
  endforeach()
endfunction()
