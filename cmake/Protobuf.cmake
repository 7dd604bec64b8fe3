# protobuf::libprotobuf, linked statically into targets with the property PT2ONNX_STATIC_PROTOBUF
# (the CLI) and as Debian's shared library into the others (the Python extension, tests).
#
# Why: ONNX is linked statically (cmake/OnnxLibrary.cmake), so each binary holds its own copy of ONNX's
# generated onnx-ml.pb.cc, which registers onnx/onnx-ml.proto in protobuf's descriptor pool when
# loaded. The CLI's embedded Python imports the extension: with one shared libprotobuf in the process
# the second registration aborts it ("File already exists in database: onnx/onnx-ml.proto"). A static
# protobuf in the CLI gives the CLI a pool of its own (an executable exports none of its symbols).
# The extension cannot take the static one: Debian's libprotobuf.a uses local-exec TLS, which only
# links into executables.
#
# Defined before find_package(Protobuf), which then keeps this target (and ONNX's CMake, which links
# protobuf::libprotobuf when the target exists) and provides protoc and the include directories.
find_library(PT2ONNX_PROTOBUF_SHARED NAMES libprotobuf.so protobuf REQUIRED)
find_library(PT2ONNX_PROTOBUF_STATIC NAMES libprotobuf.a REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)  # libprotobuf's own dependency (gzip streams)
add_library(protobuf::libprotobuf INTERFACE IMPORTED GLOBAL)
set(_static "$<BOOL:$<TARGET_PROPERTY:PT2ONNX_STATIC_PROTOBUF>>")
set_target_properties(protobuf::libprotobuf PROPERTIES INTERFACE_LINK_LIBRARIES
  "$<${_static}:${PT2ONNX_PROTOBUF_STATIC}>;$<$<NOT:${_static}>:${PT2ONNX_PROTOBUF_SHARED}>;Threads::Threads;ZLIB::ZLIB")
find_package(Protobuf REQUIRED)
