// Elementwise composites: arithmetic with a scale (addcmul, lerp), NaN- and sign-aware math
// (fmax, copysign, signbit, logaddexp, xlogy), unit conversions and predicates, bucketize and
// searchsorted (by counting the boundaries below), isin (by comparing with every test element),
// _safe_softmax, erfinv (a polynomial approximation).
#include "exporter/decompositions/decompositions.h"

namespace pt2onnx::decompositions {

std::string_view elementwise() {
  return R"TS(
def addcmul(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: number = 1):
    return self + tensor1 * tensor2 * value

def addcdiv(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: number = 1):
    return self + tensor1 / tensor2 * value

# ATen's lerp: from the nearer end, so that weight 1 gives `end` exactly.
def lerp__Scalar(self: Tensor, end: Tensor, weight: number):
    diff = end - self
    if weight < 0.5:
        return self + diff * weight
    return end - diff * (1.0 - weight)

def lerp__Tensor(self: Tensor, end: Tensor, weight: Tensor):
    diff = end - self
    return torch.where(torch.abs(weight) < 0.5, self + weight * diff, end - diff * (1.0 - weight))

# ATen's clamp here lets the lower bound win for x < eps even when eps > 1 - eps.
def logit(self: Tensor, eps: Optional[float] = None):
    x = self * 1.0
    if eps is not None:
        x = torch.where(x < eps, torch.full_like(x, eps), torch.where(x > 1.0 - eps, torch.full_like(x, 1.0 - eps), x))
    return torch.log(x / (1.0 - x))

def _float_max(x: Tensor) -> float:
    if x.dtype == 7:
        return 1.7976931348623157e308
    if x.dtype == 5:
        return 65504.0
    if x.dtype == 15:
        return 3.3895313892515355e38
    return 3.4028234663852886e38

def nan_to_num(self: Tensor, nan: Optional[float] = None, posinf: Optional[float] = None, neginf: Optional[float] = None):
    if not self.is_floating_point():
        return self.clone()
    big = _float_max(self)
    n = 0.0
    if nan is not None:
        n = nan
    p = big
    if posinf is not None:
        p = posinf
    m = -big
    if neginf is not None:
        m = neginf
    x = torch.where(torch.isnan(self), torch.full_like(self, n), self)
    x = torch.where(self == float("inf"), torch.full_like(self, p), x)
    return torch.where(self == float("-inf"), torch.full_like(self, m), x)

def positive(self: Tensor):
    return self

def deg2rad(self: Tensor):
    return self * 0.017453292519943295

def rad2deg(self: Tensor):
    return self * 57.29577951308232

def exp2(self: Tensor):
    return torch.pow(2.0, self)

def sinc(self: Tensor):
    x = self * 3.141592653589793
    return torch.where(self == 0, torch.ones_like(x), torch.sin(x) / x)

def erfc(self: Tensor):
    return 1.0 - torch.erf(self)

def sgn(self: Tensor):
    return torch.sign(self)

# True for negative values and -0.0 (1 / -0.0 is -inf).
def signbit(self: Tensor):
    if not self.is_floating_point():
        return self < 0
    return (self < 0) | ((self == 0) & (torch.reciprocal(self) < 0))

def isposinf(self: Tensor):
    return self == float("inf")

def isneginf(self: Tensor):
    return self == float("-inf")

def heaviside(self: Tensor, values: Tensor):
    return torch.where(self == 0, values, (self > 0).to(values.dtype))

def copysign__Tensor(self: Tensor, other: Tensor):
    magnitude = torch.abs(self) + torch.zeros_like(other) * 1.0
    return torch.where(torch.signbit(other), -magnitude, magnitude)

def copysign__Scalar(self: Tensor, other: number):
    magnitude = torch.abs(self) * 1.0
    if torch.copysign(1.0, float(other)) < 0:
        return -magnitude
    return magnitude

# Scaled so that no square overflows; an infinite side makes the hypotenuse infinite, even
# when the other is NaN.
def hypot(self: Tensor, other: Tensor):
    a = torch.abs(self)
    b = torch.abs(other)
    big = torch.maximum(a, b)
    ratio = torch.where(big == 0, torch.zeros_like(big), torch.minimum(a, b) / big)
    length = big * torch.sqrt(1.0 + ratio * ratio)
    return torch.where(torch.isinf(a) | torch.isinf(b), torch.full_like(length, float("inf")), length)

# m + log(1 + exp(-|a - b|)); equal infinities give themselves, not NaN.
def logaddexp(self: Tensor, other: Tensor):
    m = torch.maximum(self, other)
    same_infinity = (self == other) & torch.isinf(self)
    return torch.where(same_infinity, self, m + torch.log1p(torch.exp(-torch.abs(self - other))))

def logaddexp2(self: Tensor, other: Tensor):
    m = torch.maximum(self, other)
    same_infinity = (self == other) & torch.isinf(self)
    return torch.where(same_infinity, self,
                       m + torch.log1p(torch.pow(2.0, -torch.abs(self - other))) * 1.4426950408889634)

def _xlogy(x: Tensor, y: Tensor, log1p: bool):
    if log1p:
        logged = torch.log1p(y)
    else:
        logged = torch.log(y)
    product = torch.where(x == 0, torch.zeros_like(x * logged), x * logged)
    return torch.where(torch.isnan(y), torch.full_like(product, float("nan")), product)

def xlogy__Tensor(self: Tensor, other: Tensor):
    return _xlogy(self * 1.0, other * 1.0, False)

def xlogy__Scalar_Other(self: Tensor, other: number):
    return _xlogy(self * 1.0, torch.full_like(self * 1.0, other), False)

def xlogy__Scalar_Self(self: number, other: Tensor):
    return _xlogy(torch.full_like(other * 1.0, self), other * 1.0, False)

def special_xlog1py(self: Tensor, other: Tensor):
    return _xlogy(self * 1.0, other * 1.0, True)

def special_xlog1py__other_scalar(self: Tensor, other: number):
    return _xlogy(self * 1.0, torch.full_like(self * 1.0, other), True)

def special_xlog1py__self_scalar(self: number, other: Tensor):
    return _xlogy(torch.full_like(other * 1.0, self), other * 1.0, True)

def special_entr(self: Tensor):
    x = self * 1.0
    inner = torch.where(x == 0, torch.zeros_like(x), -x * torch.log(x))
    return torch.where(x < 0, torch.full_like(x, float("-inf")), inner)

def special_ndtr(self: Tensor):
    return 0.5 * (1.0 + torch.erf(self * 0.7071067811865476))

# NaN-ignoring maximum and minimum: a NaN loses unless both are NaN.
def _nan_ignoring(extremum: Tensor, self: Tensor, other: Tensor):
    return torch.where(torch.isnan(other), self + torch.zeros_like(other),
                       torch.where(torch.isnan(self), other + torch.zeros_like(self), extremum))

def fmax(self: Tensor, other: Tensor):
    return _nan_ignoring(torch.maximum(self, other), self, other)

def fmin(self: Tensor, other: Tensor):
    return _nan_ignoring(torch.minimum(self, other), self, other)

def float_power__Tensor_Tensor(self: Tensor, exponent: Tensor):
    return torch.pow(self.to(7), exponent.to(7))

def float_power__Tensor_Scalar(self: Tensor, exponent: number):
    return torch.pow(self.to(7), float(exponent))

def float_power__Scalar(self: number, exponent: Tensor):
    return torch.pow(float(self), exponent.to(7))

def ldexp__Tensor(self: Tensor, other: Tensor):
    return self * torch.pow(2.0, other)

def isclose(self: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    close = self == other
    if self.dtype == 11:
        return close
    if equal_nan:
        close = close | (torch.isnan(self) & torch.isnan(other))
    difference = torch.abs(self - other)
    allowed = atol + rtol * torch.abs(other)
    return close | (torch.isfinite(difference) & (difference <= allowed))

def isreal(self: Tensor):
    return torch.ones_like(self, dtype=11)

def resolve_conj(self: Tensor):
    return self

def resolve_neg(self: Tensor):
    return self

def conj_physical(self: Tensor):
    return self.clone()

def real(self: Tensor):
    return self

# How many of the sorted boundaries lie below each value (at or below, right=True), as PyTorch's
# binary search reads it, `not (boundary >= value)`: a NaN value lands past every boundary.
def _count_below(sequence: Tensor, values: Tensor, right: bool, out_int32: bool):
    if sequence.dim() > 1:
        sequence = sequence.unsqueeze(-2)
    if right:
        below = torch.logical_not(sequence > values.unsqueeze(-1))
    else:
        below = torch.logical_not(sequence >= values.unsqueeze(-1))
    counts = below.to(4).sum(-1)
    if out_int32:
        return counts.to(3)
    return counts

def bucketize__Tensor(self: Tensor, boundaries: Tensor, out_int32: bool = False, right: bool = False):
    return _count_below(boundaries, self, right, out_int32)

def searchsorted__Tensor(sorted_sequence: Tensor, self: Tensor, out_int32: bool = False, right: bool = False,
                         side: Optional[str] = None, sorter: Optional[Tensor] = None):
    if sorter is not None:
        sorted_sequence = torch.gather(sorted_sequence, -1, sorter)
    if side is not None:
        right = side == "right"
    return _count_below(sorted_sequence, self, right, out_int32)

def searchsorted__Scalar(sorted_sequence: Tensor, self: number, out_int32: bool = False, right: bool = False,
                         side: Optional[str] = None, sorter: Optional[Tensor] = None):
    value = torch.scalar_tensor(self, dtype=7)  # float64: exact for any int32 boundary and any float
    if sorted_sequence.is_floating_point():
        value = torch.scalar_tensor(self, dtype=sorted_sequence.dtype)
    return searchsorted__Tensor(sorted_sequence, value, out_int32, right, side, sorter)
# isin: whether each element equals one of test_elements (NaN equals nothing).
def isin__Tensor_Tensor(elements: Tensor, test_elements: Tensor, assume_unique: bool = False, invert: bool = False):
    found = torch.any(elements.unsqueeze(-1) == test_elements.reshape([-1]), -1)
    if invert:
        return torch.logical_not(found)
    return found

def isin__Tensor_Scalar(elements: Tensor, test_element: number, assume_unique: bool = False, invert: bool = False):
    if invert:
        return elements != test_element
    return elements == test_element

def isin__Scalar_Tensor(element: number, test_elements: Tensor, assume_unique: bool = False, invert: bool = False):
    found = torch.any(test_elements.reshape([-1]) == element)
    if invert:
        return torch.logical_not(found)
    return found

# softmax whose rows of -inf only (nothing to attend to) are 0 instead of NaN.
def _safe_softmax(self: Tensor, dim: int, dtype: Optional[int] = None):
    out = torch.softmax(self, dim, dtype)
    masked_rows = torch.all(self == float("-inf"), dim, True)
    return torch.where(masked_rows, torch.zeros_like(out), out)
# erfinv by M. Giles' single-precision approximation ("Approximating the erfinv function", 2010:
# relative error below 4e-7 on (-1, 1)), computed in float32; +-1 gives +-inf, beyond it NaN.
def _polynomial(w: Tensor, coefficients: List[float]):
    p = torch.full_like(w, coefficients[0])
    for k in range(1, len(coefficients)):
        p = p * w + coefficients[k]
    return p

def erfinv(self: Tensor):
    x = self
    if not self.is_floating_point():
        x = self.to(6)
    w = -torch.log((1.0 - x) * (1.0 + x))
    central = _polynomial(w - 2.5, [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                                    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941])
    tail = _polynomial(torch.sqrt(w) - 3.0, [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                                             0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682])
    y = torch.where(w < 5.0, central, tail) * x
    return torch.where(torch.abs(x) == 1.0, x * float("inf"), y)
)TS";
}

}  // namespace pt2onnx::decompositions
