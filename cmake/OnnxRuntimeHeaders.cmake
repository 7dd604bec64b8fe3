# ONNX Runtime's C API headers for the custom-op library (onnxruntime_ops/). They are a build-time
# dependency only (the library links no onnxruntime: ORT hands it its API table at registration).
# Found, in order: -DPT2ONNX_ONNXRUNTIME_INCLUDE_DIR=<dir>, the system's (Debian 13's
# libonnxruntime-dev: /usr/include/onnxruntime), else Debian 13's package unpacked into the build
# tree by scripts/onnxruntime_headers.sh (no system change). The API version must be >= the one the
# kernels are written against (onnxruntime_ops/ort_api.h), so that they load in every newer ORT.
set(PT2ONNX_ONNXRUNTIME_MIN_API 17)
set(PT2ONNX_ONNXRUNTIME_INCLUDE_DIR "" CACHE PATH "Directory holding onnxruntime_c_api.h (empty: find or fetch it)")

function(_pt2onnx_ort_api_version dir out)
  file(STRINGS "${dir}/onnxruntime_c_api.h" _line REGEX "^#define ORT_API_VERSION [0-9]+")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _version "${_line}")
  set(${out} "${_version}" PARENT_SCOPE)
endfunction()

set(_ort_dir "${PT2ONNX_ONNXRUNTIME_INCLUDE_DIR}")
if(_ort_dir AND NOT EXISTS "${_ort_dir}/onnxruntime_c_api.h")
  message(FATAL_ERROR "PT2ONNX_ONNXRUNTIME_INCLUDE_DIR=${_ort_dir} holds no onnxruntime_c_api.h")
endif()
if(NOT _ort_dir AND EXISTS /usr/include/onnxruntime/onnxruntime_c_api.h)
  set(_ort_dir /usr/include/onnxruntime)
endif()
if(NOT _ort_dir)
  set(_ort_root "${CMAKE_BINARY_DIR}/onnxruntime-headers")
  execute_process(COMMAND bash "${CMAKE_SOURCE_DIR}/scripts/onnxruntime_headers.sh" "${_ort_root}"
                  RESULT_VARIABLE _ort_status ERROR_VARIABLE _ort_error OUTPUT_QUIET)
  if(NOT _ort_status EQUAL 0)
    message(FATAL_ERROR "pt2onnx's onnxruntime custom-op library needs ONNX Runtime's C API headers "
      "(>= API ${PT2ONNX_ONNXRUNTIME_MIN_API}), which the onnxruntime wheel does not ship, and fetching "
      "Debian 13's libonnxruntime-dev failed:\n${_ort_error}\nInstall your distribution's onnxruntime "
      "headers and pass -DPT2ONNX_ONNXRUNTIME_INCLUDE_DIR=<dir>, or build without the library: "
      "-DPT2ONNX_BUILD_ONNXRUNTIME_OPS=OFF")
  endif()
  set(_ort_dir "${_ort_root}/usr/include/onnxruntime")
endif()
_pt2onnx_ort_api_version("${_ort_dir}" PT2ONNX_ONNXRUNTIME_HEADER_API)
if(PT2ONNX_ONNXRUNTIME_HEADER_API LESS PT2ONNX_ONNXRUNTIME_MIN_API)
  message(FATAL_ERROR "${_ort_dir}/onnxruntime_c_api.h is ORT API ${PT2ONNX_ONNXRUNTIME_HEADER_API}; "
    "the custom-op library needs >= ${PT2ONNX_ONNXRUNTIME_MIN_API} (onnxruntime >= 1.17)")
endif()
message(STATUS "pt2onnx: ONNX Runtime C API headers (API ${PT2ONNX_ONNXRUNTIME_HEADER_API}) at ${_ort_dir}")

add_library(pt2onnx_onnxruntime_headers INTERFACE)
add_library(pt2onnx::onnxruntime_headers ALIAS pt2onnx_onnxruntime_headers)
target_include_directories(pt2onnx_onnxruntime_headers SYSTEM INTERFACE "${_ort_dir}")
target_compile_definitions(pt2onnx_onnxruntime_headers INTERFACE
  PT2ONNX_ORT_API_VERSION=${PT2ONNX_ONNXRUNTIME_MIN_API})
