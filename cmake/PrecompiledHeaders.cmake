# PrecompiledHeaders.cmake: LibTorch's headers parsed once per target instead of once per file.
#
# Why: a file that includes torch/csrc/jit/ir/ir.h spends ~13 s of its ~15 s in the compiler's front
# end on LibTorch's headers (measured with -fsyntax-only), and about a hundred of our files include
# it or ATen/ATen.h. A precompiled header per target makes that once per target
# (docs/install.md has the build times with and without).
#
#   PT2ONNX_PRECOMPILED_HEADERS  ON (default): each torch target precompiles the headers it names
#                                in pt2onnx_precompile_headers(); OFF builds every file from source
#                                (what a file must include itself is then checked)
#
# ccache caches files that use a precompiled header only with GCC's -fpch-preprocess and the
# sloppiness pch_defines,time_macros (ccache's manual, "Precompiled headers"): the launcher sets both.

option(PT2ONNX_PRECOMPILED_HEADERS "Precompile LibTorch's headers once per target" ON)

if(PT2ONNX_PRECOMPILED_HEADERS AND CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER env CCACHE_SLOPPINESS=pch_defines,time_macros ${CCACHE_PROGRAM})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-fpch-preprocess)
  elseif(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # clang's counterpart (ccache's manual): no timestamp in the .pch, which ccache would see change
    add_compile_options("SHELL:-Xclang -fno-pch-timestamp")
  endif()
endif()

# pt2onnx_precompile_headers(target header...): <header> names, in the order they are included.
function(pt2onnx_precompile_headers target)
  if(PT2ONNX_PRECOMPILED_HEADERS)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
