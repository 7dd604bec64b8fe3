// Creation composites: linspace and logspace between 0-d tensors (their Tensor overloads), sampled
// as ATen's kernel samples them: the first half stepped up from start, the second half stepped down
// from end, so both ends are exact; in double for integer results, which are then truncated.
#include "exporter/decompositions/decompositions.h"

namespace pt2onnx::decompositions {

std::string_view creation() {
  return R"TS(
def _linspace_exponents(start: Tensor, end: Tensor, steps: int, dtype: Optional[int]):
    out_dtype = 6  # the default dtype, float32, as ATen's Tensor overloads give
    if dtype is not None:
        out_dtype = dtype
    compute = out_dtype
    if not torch.empty([0], dtype=out_dtype).is_floating_point():
        compute = 7  # float64
    first = start.reshape([]).to(compute)
    last = end.reshape([]).to(compute)
    if steps == 1:
        return first.reshape([1]), out_dtype
    index = torch.arange(steps)
    step = (last - first) / (steps - 1)
    up = first + step * index
    down = last - step * (steps - 1 - index)
    return torch.where(index < steps // 2, up, down), out_dtype

def _linspace(start: Tensor, end: Tensor, steps: int, dtype: Optional[int]):
    values, out_dtype = _linspace_exponents(start, end, steps, dtype)
    return values.to(out_dtype)

def _logspace(start: Tensor, end: Tensor, steps: int, base: float, dtype: Optional[int]):
    exponents, out_dtype = _linspace_exponents(start, end, steps, dtype)
    return torch.pow(base, exponents).to(out_dtype)

def linspace__Tensor_Tensor(start: Tensor, end: Tensor, steps: int, dtype: Optional[int] = None,
                            layout: Optional[int] = None, device: Optional[Device] = None,
                            pin_memory: Optional[bool] = None):
    return _linspace(start, end, steps, dtype)

def linspace__Tensor_Scalar(start: Tensor, end: number, steps: int, dtype: Optional[int] = None,
                            layout: Optional[int] = None, device: Optional[Device] = None,
                            pin_memory: Optional[bool] = None):
    return _linspace(start, torch.scalar_tensor(end, dtype=7), steps, dtype)

def linspace__Scalar_Tensor(start: number, end: Tensor, steps: int, dtype: Optional[int] = None,
                            layout: Optional[int] = None, device: Optional[Device] = None,
                            pin_memory: Optional[bool] = None):
    return _linspace(torch.scalar_tensor(start, dtype=7), end, steps, dtype)

def logspace__Tensor_Tensor(start: Tensor, end: Tensor, steps: int, base: float = 10.0, dtype: Optional[int] = None,
                            layout: Optional[int] = None, device: Optional[Device] = None,
                            pin_memory: Optional[bool] = None):
    return _logspace(start, end, steps, base, dtype)

def logspace__Tensor_Scalar(start: Tensor, end: number, steps: int, base: float = 10.0, dtype: Optional[int] = None,
                            layout: Optional[int] = None, device: Optional[Device] = None,
                            pin_memory: Optional[bool] = None):
    return _logspace(start, torch.scalar_tensor(end, dtype=7), steps, base, dtype)

def logspace__Scalar_Tensor(start: number, end: Tensor, steps: int, base: float = 10.0, dtype: Optional[int] = None,
                            layout: Optional[int] = None, device: Optional[Device] = None,
                            pin_memory: Optional[bool] = None):
    return _logspace(torch.scalar_tensor(start, dtype=7), end, steps, base, dtype)
)TS";
}

}  // namespace pt2onnx::decompositions
