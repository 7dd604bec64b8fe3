// Converter tests in the Torch-TensorRT style: TorchScript IR text is parsed, run in the TorchScript
// interpreter (the truth), exported with pt2onnx, run in ONNX Runtime (the independent oracle),
// and the outputs compared with max |a-b| / (1 + |a|) <= tol.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace pt2onnx::testing {

// Exports `irText` at `opset` with `inputs` as example inputs, runs it in the TorchScript
// interpreter and in ONNX Runtime, and EXPECTs every output to match (shape, dtype and values).
// At opset 13 (the form converters write) the opsets from 9 up also run, until the first that
// fails, which must fail naming a later opset; and 18 and 25, the newer forms.
void expectConvertsLikeTorch(const std::string& irText, const std::vector<at::Tensor>& inputs,
                             int opset, double tol = 1e-4);
// Same, with the truth computed by another TorchScript graph of the same meaning, for ops that have
// no CPU kernel (addmm's out_dtype overload is CUDA-only): `truthIrText` runs on the same inputs.
void expectConvertsLikeTorchGraph(const std::string& irText, const std::string& truthIrText,
                                  const std::vector<at::Tensor>& inputs, int opset, double tol = 1e-4);
// Same, for every opset pt2onnx exports with its own forms (opsetsWithOwnForms: 9 to 18, 20, 21, 23, 25).
void expectConvertsLikeTorchAllOpsets(const std::string& irText,
                                      const std::vector<at::Tensor>& inputs, double tol = 1e-4);
// Same from `firstOpset` on; below it, EXPECTs the export to fail saying which later opset (at
// most `firstOpset`) to export with instead.
void expectConvertsLikeTorchFromOpset(const std::string& irText, const std::vector<at::Tensor>& inputs,
                                      int firstOpset, double tol = 1e-4);
// The opsets from `firstOpset` that expectConvertsLikeTorchAllOpsets runs.
std::vector<int> opsetsWithOwnForms(int firstOpset);
// Exports `irText` for `example` with `dynamicAxes` of input 0 dynamic, then runs it in TorchScript
// and in ONNX Runtime on each of `runs` (inputs whose sizes along those axes differ from the
// example's), comparing every output: the symbolics' run-time shape computations get checked.
void expectDynamicAxesConvertLikeTorch(const std::string& irText, const std::vector<at::Tensor>& example,
                                       const std::map<int64_t, std::string>& dynamicAxes,
                                       const std::vector<std::vector<at::Tensor>>& runs, int opset);
// The op types of the exported model's nodes, in order (for structural checks).
std::vector<std::string> exportedOpTypes(const std::string& irText,
                                         const std::vector<at::Tensor>& inputs, int opset);
// Whether `opTypes` holds `opType`, and how many times.
bool contains(const std::vector<std::string>& opTypes, const std::string& opType);
int countOf(const std::vector<std::string>& opTypes, const std::string& opType);
// IR text of `graph(%x): return op(%x)`.
std::string unaryGraph(const std::string& op);
// The message of the ExportError that exporting `irText` raises ("" if it exports).
std::string exportError(const std::string& irText, const std::vector<at::Tensor>& inputs, int opset);
// The same with axes `dynamicAxes` of input 0 dynamic (inputs named in_0, in_1, ...).
std::string dynamicAxesExportError(const std::string& irText, const std::vector<at::Tensor>& example,
                                   const std::map<int64_t, std::string>& dynamicAxes, int opset);

}  // namespace pt2onnx::testing
