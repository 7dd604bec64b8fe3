// One register function per runtime kernel family; registerAllKernels() (all_kernels.h) calls each, in order.
#pragma once

namespace pt2onnx::runtime {

class KernelRegistry;

void registerElementwiseKernels(KernelRegistry& r);  // elementwise.cpp: arithmetic, comparison, math, activations
void registerReductionKernels(KernelRegistry& r);    // reduction.cpp: Reduce*, ArgMax/Min, CumSum, Softmax family
void registerTensorKernels(KernelRegistry& r);       // tensor.cpp: shape, slicing, gather/scatter, concat, creation, Unique
void registerConvKernels(KernelRegistry& r);         // conv.cpp: Conv, ConvTranspose, com.microsoft::FusedConv
void registerDeformConvKernels(KernelRegistry& r);   // deform_conv.cpp: DeformConv
void registerNnKernels(KernelRegistry& r);           // nn.cpp: pools, norms (RMS, group), Resize, Dropout
void registerMatMulKernels(KernelRegistry& r);       // matmul.cpp: Gemm, MatMul, Einsum
void registerSequenceKernels(KernelRegistry& r);     // sequence.cpp: Sequence*, SplitToSequence, Optional*, Identity
void registerControlFlowKernels(KernelRegistry& r);  // control_flow.cpp: If, Loop, SequenceMap (subgraphs)
void registerRecurrentKernels(KernelRegistry& r);    // recurrent.cpp: RNN, GRU, LSTM
void registerSamplingKernels(KernelRegistry& r);     // sampling.cpp: GridSample, Col2Im
void registerSpectralKernels(KernelRegistry& r);     // spectral.cpp: STFT, DFT
void registerDetectionKernels(KernelRegistry& r);    // detection.cpp: NonMaxSuppression, RoiAlign, MaxRoiPool
void registerQuantizationKernels(KernelRegistry& r); // quantization.cpp: QuantizeLinear, DequantizeLinear
void registerContribKernels(KernelRegistry& r);      // contrib.cpp: com.microsoft Gelu family, Inverse
void registerAttentionKernels(KernelRegistry& r);    // attention.cpp: Attention, RotaryEmbedding

}  // namespace pt2onnx::runtime
