# TorchWheel.cmake: the one place that knows where torch is and which torch pt2onnx builds against.
#
# torch is found through the Python interpreter that will import pt2onnx (a venv's, or the one
# scikit-build-core runs), never through find_package(Torch): a CUDA wheel's Caffe2Config wants a CUDA
# toolkit, and pt2onnx needs only the CPU libraries. Defines
#   pt2onnx::torch          c10 + torch_cpu, their headers, the C++ ABI flag (no libtorch_cuda)
#   pt2onnx::torch_python   pt2onnx::torch + torch_python and the wheel's own pybind11 headers
#   PT2ONNX_TORCH_VERSION   e.g. 2.14.1 (without a local tag such as +cu130)
#   PT2ONNX_TORCH_MINOR     e.g. 2.14
#   PT2ONNX_TORCH_LIB_DIR   the wheel's torch/lib (for RPATHs)
# and stops with one line when the interpreter has no torch or a torch outside the supported range.

# The supported range: every minor in it has an opt-in tier (scripts/test_torch.sh, docs/testing.md).
set(PT2ONNX_TORCH_MIN_VERSION 2.9)         # oldest minor the suite runs on
set(PT2ONNX_TORCH_BELOW_VERSION 2.16)      # first minor not yet tested

# The interpreter asked about torch: the one pt2onnx is built for (a test points it elsewhere).
set(PT2ONNX_TORCH_PYTHON "${Python3_EXECUTABLE}" CACHE FILEPATH "The Python whose torch pt2onnx builds against")
execute_process(
  COMMAND ${PT2ONNX_TORCH_PYTHON} -c
    "import os, torch; print(torch.__version__.split('+')[0]); print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
  OUTPUT_VARIABLE _torch_probe ERROR_VARIABLE _torch_error RESULT_VARIABLE _torch_status
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _torch_status EQUAL 0)
  string(REGEX REPLACE ".*\n([^\n]+)\n?$" "\\1" _torch_error "${_torch_error}")
  message(FATAL_ERROR "pt2onnx needs torch >= ${PT2ONNX_TORCH_MIN_VERSION}, < ${PT2ONNX_TORCH_BELOW_VERSION} "
    "in ${PT2ONNX_TORCH_PYTHON}, which cannot import torch (${_torch_error}); install torch there first, and "
    "build with pip install --no-build-isolation so that pip does not build in an environment without it")
endif()
string(REPLACE "\n" ";" _torch_probe "${_torch_probe}")
list(GET _torch_probe 0 PT2ONNX_TORCH_VERSION)
list(GET _torch_probe 1 _torch_dir)
list(GET _torch_probe 2 _torch_cxx11_abi)
if(PT2ONNX_TORCH_VERSION VERSION_LESS PT2ONNX_TORCH_MIN_VERSION
   OR NOT PT2ONNX_TORCH_VERSION VERSION_LESS PT2ONNX_TORCH_BELOW_VERSION)
  message(FATAL_ERROR "pt2onnx needs torch >= ${PT2ONNX_TORCH_MIN_VERSION}, < ${PT2ONNX_TORCH_BELOW_VERSION}; "
    "found torch ${PT2ONNX_TORCH_VERSION} at ${_torch_dir} (${PT2ONNX_TORCH_PYTHON})")
endif()
string(REGEX MATCH "^[0-9]+\\.[0-9]+" PT2ONNX_TORCH_MINOR "${PT2ONNX_TORCH_VERSION}")
set(PT2ONNX_TORCH_LIB_DIR "${_torch_dir}/lib")
message(STATUS "pt2onnx: torch ${PT2ONNX_TORCH_VERSION} at ${_torch_dir} (C++11 ABI ${_torch_cxx11_abi})")

# The wheel ships headers of libraries we take from the system (protobuf under google/, fmt):
# its include directories come after the system's (-idirafter), so Debian's protobuf and fmt
# headers match the libraries we link. Its pybind11 (the version torch._C was built with, so that
# torch._C.Graph and ScriptModules cross into our extension) comes first, from a directory that
# holds nothing else.
set(_torch_pybind11_dir "${CMAKE_BINARY_DIR}/torch_pybind11")
file(MAKE_DIRECTORY "${_torch_pybind11_dir}")
file(CREATE_LINK "${_torch_dir}/include/pybind11" "${_torch_pybind11_dir}/pybind11" SYMBOLIC)

foreach(_lib c10 torch_cpu torch_python)
  find_library(PT2ONNX_TORCH_${_lib}_LIBRARY ${_lib} PATHS "${PT2ONNX_TORCH_LIB_DIR}" NO_DEFAULT_PATH REQUIRED)
endforeach()

add_library(pt2onnx_torch INTERFACE)
add_library(pt2onnx::torch ALIAS pt2onnx_torch)
target_link_libraries(pt2onnx_torch INTERFACE ${PT2ONNX_TORCH_c10_LIBRARY} ${PT2ONNX_TORCH_torch_cpu_LIBRARY})
target_compile_options(pt2onnx_torch INTERFACE
  "SHELL:-idirafter ${_torch_dir}/include"
  "SHELL:-idirafter ${_torch_dir}/include/torch/csrc/api/include")
target_compile_definitions(pt2onnx_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=${_torch_cxx11_abi}
  PT2ONNX_TORCH_VERSION_STRING="${PT2ONNX_TORCH_VERSION}")

add_library(pt2onnx_torch_python INTERFACE)
add_library(pt2onnx::torch_python ALIAS pt2onnx_torch_python)
target_link_libraries(pt2onnx_torch_python INTERFACE pt2onnx_torch ${PT2ONNX_TORCH_torch_python_LIBRARY})
target_include_directories(pt2onnx_torch_python INTERFACE "${_torch_pybind11_dir}")
