// One register function per op-family file; registerAllGradients() calls each, in this order.
#pragma once

namespace pt2onnx::gradient {

class GradientRegistry;

void registerElementwiseGradients(GradientRegistry& r);    // elementwise.cpp: arithmetic and math
void registerActivationGradients(GradientRegistry& r);     // activation.cpp: Relu, Sigmoid, Softmax, ...
void registerLinearGradients(GradientRegistry& r);         // linear.cpp: MatMul, Gemm
void registerShapeGradients(GradientRegistry& r);          // shape.cpp: Reshape, Transpose, Concat, Slice, Gather, ...
void registerReductionGradients(GradientRegistry& r);      // reduction.cpp: ReduceSum, ReduceMean, ...
void registerConvolutionGradients(GradientRegistry& r);    // convolution.cpp: Conv
void registerPoolingGradients(GradientRegistry& r);        // pooling.cpp: MaxPool, AveragePool, global pools
void registerNormalizationGradients(GradientRegistry& r);  // normalization.cpp: Batch/Layer/Group/RMSNormalization
void registerAttentionGradients(GradientRegistry& r);      // attention.cpp: Attention
void registerDropoutGradients(GradientRegistry& r);        // dropout.cpp: Dropout through its mask
void registerQuantizationGradients(GradientRegistry& r);   // quantization.cpp: fake quantization (Q/DQ), straight through
void registerPythonOpGradients(GradientRegistry& r);       // python_op.cpp: com.microsoft::PythonOp -> PythonOpGrad

}  // namespace pt2onnx::gradient
