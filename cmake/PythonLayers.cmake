# PythonLayers.cmake: pt2onnx's Python-facing layer, built once for each CPython a wheel serves, over
# one Python-free core.
#
#   libpt2onnx.so                         the core (exporter, symbolic, gradient, writer, runtime, ONNX):
#                                         no Python, built once per torch
#   _pt2onnx.cpython-3XY-<triplet>.so     per Python: the bindings, the symbolic bridge, the CLI (it runs
#                                         inside the user's Python) and the PythonOp kernels
#   libpt2onnx_onnxruntime_bridge_py3XY.so  per Python: the ORT custom-op kernels (onnxruntime_ops/)
#
# Why per Python: those files use Python's full C API through pybind11 and torch's Python headers
# (torch/csrc/...), which have no limited-API mode; docs/install.md ("Which Pythons") has the design
# and its measurements. The build's own Python is found by FindPython (CMakeLists.txt); each other
# version needs only its headers:
#   PT2ONNX_PYTHON_VERSIONS        other CPython versions (e.g. "3.13;3.14") to build the layer for
#   PT2ONNX_PYTHON<XY>_INCLUDE_DIR its include directory (holding Python.h); default: Debian's
#                                  libpython3.X-dev unpacked into the build tree (scripts/python_headers.sh)
# An extension module needs no libpython at link time (the interpreter provides its symbols), and
# libtorch_python.so has one name for every Python: each module links the build's torch_python and
# runs against the user's torch of that Python.
set(PT2ONNX_PYTHON_VERSIONS "" CACHE STRING "CPython versions (X.Y;...) to build the Python layer for besides the build's own")

set(PT2ONNX_OWN_PYTHON "${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}")

# pt2onnx_python_headers(X.Y out): the target giving CPython X.Y's headers (Python3::Module for the
# build's own Python; else an INTERFACE target pt2onnx_python_headers_py3XY).
function(pt2onnx_python_headers version out_target)
  string(REPLACE "." "" tag "${version}")
  set(target pt2onnx_python_headers_py${tag})
  if(version STREQUAL PT2ONNX_OWN_PYTHON)
    set(target Python3::Module)
  elseif(NOT TARGET ${target})
    set(dir "${PT2ONNX_PYTHON${tag}_INCLUDE_DIR}")
    if(NOT dir)
      set(root "${CMAKE_BINARY_DIR}/python${version}-headers")
      execute_process(COMMAND bash "${CMAKE_SOURCE_DIR}/scripts/python_headers.sh" "${version}" "${root}"
                      RESULT_VARIABLE status ERROR_VARIABLE error OUTPUT_QUIET)
      if(NOT status EQUAL 0)
        message(FATAL_ERROR "pt2onnx's Python layer for CPython ${version} needs that Python's headers:\n${error}"
          "Give them with -DPT2ONNX_PYTHON${tag}_INCLUDE_DIR=<directory holding Python.h>.")
      endif()
      set(dir "${root}/usr/include/python${version}")
    endif()
    if(NOT EXISTS "${dir}/Python.h")
      message(FATAL_ERROR "PT2ONNX_PYTHON${tag}_INCLUDE_DIR=${dir} holds no Python.h")
    endif()
    file(STRINGS "${dir}/patchlevel.h" line REGEX "^#define PY_MINOR_VERSION")
    string(REGEX REPLACE ".* ([0-9]+)$" "\\1" minor "${line}")
    if(NOT "3.${minor}" STREQUAL "${version}")
      message(FATAL_ERROR "${dir} holds the headers of CPython 3.${minor}, not ${version}")
    endif()
    add_library(${target} INTERFACE)
    # Debian's pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>, from the directory above.
    get_filename_component(parent "${dir}" DIRECTORY)
    target_include_directories(${target} SYSTEM INTERFACE "${dir}" "${parent}")
    message(STATUS "pt2onnx: CPython ${version} headers at ${dir}")
  endif()
  set(${out_target} ${target} PARENT_SCOPE)
endfunction()

# pt2onnx_add_cli_library(target headers): the CLI and the PythonOp kernels (CMakeLists.txt's
# PT2ONNX_PYTHON_LAYER_CLI_*) compiled against one Python's headers.
function(pt2onnx_add_cli_library target headers)
  add_library(${target} STATIC ${PT2ONNX_PYTHON_LAYER_CLI_SOURCES})
  target_link_libraries(${target} PUBLIC ${PT2ONNX_PYTHON_LAYER_CLI_LINKS} ${headers})
  target_compile_definitions(${target} PRIVATE PT2ONNX_VERSION="${PROJECT_VERSION}")
  set_target_properties(${target} PROPERTIES CXX_VISIBILITY_PRESET hidden)  # as pybind11's types, which it holds
  pt2onnx_precompile_headers(${target} ${PT2ONNX_PYTHON_LAYER_CLI_HEADERS})
endfunction()

# pt2onnx_add_python_layer(X.Y): the extension module for CPython X.Y (onnxruntime_ops/ adds the
# ORT bridge of each version).
function(pt2onnx_add_python_layer version)
  string(REPLACE "." "" tag "${version}")
  pt2onnx_python_headers(${version} headers)
  if(version STREQUAL PT2ONNX_OWN_PYTHON)
    set(cli pt2onnx_cli)
    set(soabi "${Python3_SOABI}")
  else()
    # The CLI and the PythonOp kernels again, compiled against this Python's headers.
    set(cli pt2onnx_cli_py${tag})
    pt2onnx_add_cli_library(${cli} ${headers})
    string(REGEX REPLACE "^cpython-3[0-9]+" "cpython-${tag}" soabi "${Python3_SOABI}")
  endif()
  set(module _pt2onnx_py${tag})
  add_library(${module} MODULE python/bindings.cpp python/symbolic_bridge.cpp)
  target_link_libraries(${module} PRIVATE pt2onnx_shared ${cli})
  target_compile_definitions(${module} PRIVATE PT2ONNX_VERSION="${PROJECT_VERSION}")
  pt2onnx_precompile_headers(${module} <torch/csrc/utils/pybind.h> <torch/csrc/jit/python/pybind.h> <pybind11/stl.h>)
  set_target_properties(${module} PROPERTIES OUTPUT_NAME _pt2onnx PREFIX "" SUFFIX ".${soabi}.so"
    CXX_VISIBILITY_PRESET hidden
    # libpt2onnx.so beside it; the torch beside pt2onnx, else the build's.
    BUILD_RPATH "$<TARGET_FILE_DIR:pt2onnx_shared>;${PT2ONNX_TORCH_LIB_DIR}"
    INSTALL_RPATH "$ORIGIN;$ORIGIN/../torch/lib;${PT2ONNX_TORCH_LIB_DIR}")
  set_property(GLOBAL APPEND PROPERTY PT2ONNX_PYTHON_MODULES ${module})
endfunction()
