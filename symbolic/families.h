// One register function per op-family file; registerAllSymbolics() calls each, in this order.
#pragma once

namespace pt2onnx::symbolic {

class Registry;

void registerPrimSymbolics(Registry& r);          // prim.cpp: lists, tuples, sizes, dtype/device (evaluators)
void registerListSymbolics(Registry& r);          // list.cpp: lists (known elements, or ONNX sequences)
void registerNumberSymbolics(Registry& r);        // number.cpp: Python int/float/bool arithmetic and logic
void registerElementwiseSymbolics(Registry& r);   // elementwise.cpp: arithmetic, comparison, math
void registerActivationSymbolics(Registry& r);    // activation.cpp: relu, gelu, softmax, ...
void registerReductionSymbolics(Registry& r);     // reduction.cpp: mean, sum, max, argmax, ...
void registerLinearSymbolics(Registry& r);        // linear.cpp: linear, addmm, matmul, bmm, ...
void registerLinalgSymbolics(Registry& r);        // linalg.cpp: det, cholesky, solve, inv, triangular solves
void registerEinsumDecomposedSymbolics(Registry& r);  // einsum_decomposed.cpp: einsum below opset 12
void registerConvolutionSymbolics(Registry& r);   // convolution.cpp: _convolution, conv2d, ...
void registerPoolingSymbolics(Registry& r);       // pooling.cpp: max/avg/adaptive pools
void registerNormalizationSymbolics(Registry& r); // normalization.cpp: batch/layer/group norm
void registerDropoutSymbolics(Registry& r);       // dropout.cpp: dropout variants
void registerShapeSymbolics(Registry& r);         // shape.cpp: view, reshape, transpose, ...
void registerConcatSplitSymbolics(Registry& r);   // concat_split.cpp: cat, stack, split, chunk, unbind, tensor_split
void registerIndexingSymbolics(Registry& r);      // indexing.cpp: slice, select, gather, ...
void registerScatterReduceSymbolics(Registry& r);  // scatter_reduce.cpp: scatter_reduce, index_reduce
void registerCreationSymbolics(Registry& r);      // creation.cpp: arange, zeros, full, tril, ...
void registerEmbeddingSymbolics(Registry& r);     // embedding.cpp: embedding
void registerRecurrentSymbolics(Registry& r);     // recurrent.cpp: lstm, gru, rnn_tanh, rnn_relu
void registerRecurrentCellSymbolics(Registry& r); // recurrent_cells.cpp: lstm_cell, gru_cell, rnn_*_cell
void registerSamplingSymbolics(Registry& r);      // sampling.cpp: grid_sampler, im2col, col2im
void registerSpectralSymbolics(Registry& r);      // spectral.cpp: stft, hann/hamming/blackman windows
void registerDetectionSymbolics(Registry& r);     // detection.cpp: torchvision nms, roi_align, roi_pool
void registerAttentionSymbolics(Registry& r);     // attention.cpp: scaled_dot_product_attention
void registerUniqueSymbolics(Registry& r);        // unique.cpp: unique, unique_dim, unique_consecutive
void registerQuantizationSymbolics(Registry& r);  // quantization.cpp: fake quantization, quantized_decomposed Q/DQ
void liftRank0Operands(Registry& r);              // rank0_lifting.cpp: dim ops on 0-d tensors, via rank 1

}  // namespace pt2onnx::symbolic
