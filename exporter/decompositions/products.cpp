// Products: scaled matrix products (addmv, addr, addbmm), outer/inner/tensor products, cross and
// dot products, bilinear forms, pairwise and cosine distances; Vandermonde matrices and integer
// matrix powers as ATen computes them.
#include "exporter/decompositions/decompositions.h"

namespace pt2onnx::decompositions {

std::string_view products() {
  return R"TS(
# beta * self + alpha * product; beta == 0 ignores self (its NaNs too), as ATen does.
def _scaled_sum(self: Tensor, product: Tensor, beta: number, alpha: number):
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product + torch.zeros_like(self)
    if beta != 1:
        return self * beta + product
    return self + product

def addmv(self: Tensor, mat: Tensor, vec: Tensor, beta: number = 1, alpha: number = 1):
    return _scaled_sum(self, torch.matmul(mat, vec), beta, alpha)

def addr(self: Tensor, vec1: Tensor, vec2: Tensor, beta: number = 1, alpha: number = 1):
    return _scaled_sum(self, vec1.unsqueeze(1) * vec2.unsqueeze(0), beta, alpha)

def addbmm(self: Tensor, batch1: Tensor, batch2: Tensor, beta: number = 1, alpha: number = 1):
    return _scaled_sum(self, torch.sum(torch.matmul(batch1, batch2), [0]), beta, alpha)

def outer(self: Tensor, vec2: Tensor):
    return self.unsqueeze(1) * vec2.unsqueeze(0)

def _wrapped_dims(dims: List[int], rank: int) -> List[int]:
    wrapped: List[int] = []
    for d in dims:
        wrapped.append(d % max(rank, 1))
    return wrapped

# A contracted pair of sizes 1 and n sums the other operand over it (ATen broadcasts it).
def tensordot(self: Tensor, other: Tensor, dims_self: List[int], dims_other: List[int]):
    contracted_self = _wrapped_dims(dims_self, self.dim())
    contracted_other = _wrapped_dims(dims_other, other.dim())
    x = self
    y = other
    for k in range(len(contracted_self)):
        size_x = x.size(contracted_self[k])
        size_y = y.size(contracted_other[k])
        if size_x == 1 and size_y != 1:
            y = torch.sum(y, [contracted_other[k]], True)
        elif size_y == 1 and size_x != 1:
            x = torch.sum(x, [contracted_self[k]], True)
    free_self: List[int] = []
    free_sizes: List[int] = []
    rows = 1
    for d in range(self.dim()):
        if d not in contracted_self:
            free_self.append(d)
            free_sizes.append(x.size(d))
            rows *= x.size(d)
    inner = 1
    for d in contracted_self:
        inner *= x.size(d)
    free_other: List[int] = []
    cols = 1
    for d in range(other.dim()):
        if d not in contracted_other:
            free_other.append(d)
            free_sizes.append(y.size(d))
            cols *= y.size(d)
    a = x.permute(free_self + contracted_self).reshape([rows, inner])
    b = y.permute(contracted_other + free_other).reshape([inner, cols])
    return torch.matmul(a, b).reshape(free_sizes)

def inner(self: Tensor, other: Tensor):
    if self.dim() == 0 or other.dim() == 0:
        return self * other
    return torch.tensordot(self, other, [-1], [-1])

def vdot(self: Tensor, other: Tensor):
    return torch.sum(self * other)

def kron(self: Tensor, other: Tensor):
    rank = max(self.dim(), other.dim())
    a = self.reshape([1] * (rank - self.dim()) + self.shape)
    b = other.reshape([1] * (rank - other.dim()) + other.shape)
    a_interleaved: List[int] = []
    b_interleaved: List[int] = []
    result: List[int] = []
    for d in range(rank):
        a_interleaved.append(a.size(d))
        a_interleaved.append(1)
        b_interleaved.append(1)
        b_interleaved.append(b.size(d))
        result.append(a.size(d) * b.size(d))
    return (a.reshape(a_interleaved) * b.reshape(b_interleaved)).reshape(result)

def _cross(a: Tensor, b: Tensor, dim: int):
    left = torch.tensor([1, 2, 0])
    right = torch.tensor([2, 0, 1])
    return (torch.index_select(a, dim, left) * torch.index_select(b, dim, right)
            - torch.index_select(a, dim, right) * torch.index_select(b, dim, left))

def linalg_cross(self: Tensor, other: Tensor, dim: int = -1):
    a = self + torch.zeros_like(other)
    b = other + torch.zeros_like(self)
    return _cross(a, b, dim)

# dim=None: the first dimension of size 3 (of the broadcast shape), as torch.cross does.
def cross(self: Tensor, other: Tensor, dim: Optional[int] = None):
    a = self + torch.zeros_like(other)
    b = other + torch.zeros_like(self)
    d = 0
    if dim is None:
        for k in range(a.dim() - 1, -1, -1):
            if a.size(k) == 3:
                d = k
    else:
        d = dim
    return _cross(a, b, d)

def linalg_vecdot(x: Tensor, y: Tensor, dim: int = -1):
    return torch.sum(x * y, [dim])

# Left to right: PyTorch picks the cheapest order, which changes only rounding. A 1-D first (last)
# operand is a row (column) vector whose axis the result drops.
def linalg_multi_dot(tensors: List[Tensor]):
    n = len(tensors)
    product = tensors[0]
    if tensors[0].dim() == 1:
        product = product.unsqueeze(0)
    for k in range(1, n):
        factor = tensors[k]
        if factor.dim() == 1:
            factor = factor.unsqueeze(1)
        product = torch.mm(product, factor)
    if tensors[0].dim() == 1 and tensors[n - 1].dim() == 1:
        return product.reshape([])
    if tensors[0].dim() == 1:
        return product.squeeze(0)
    if tensors[n - 1].dim() == 1:
        return product.squeeze(1)
    return product

def logdet(self: Tensor):
    return torch.log(torch.linalg_det(self))

def det(self: Tensor):
    return torch.linalg_det(self)

def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Optional[Tensor] = None):
    y = torch.einsum("...i,oij,...j->...o", [input1, weight, input2])
    if bias is not None:
        y = y + bias
    return y

def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: Optional[int] = None):
    d = torch.abs(x1.unsqueeze(-2) - x2.unsqueeze(-3))
    if p == 0.0:
        return torch.sum((d != 0).to(x1.dtype), [-1])
    if p == float("inf"):
        return torch.amax(d, [-1])
    if p == 1.0:
        return torch.sum(d, [-1])
    if p == 2.0:
        return torch.sqrt(torch.sum(d * d, [-1]))
    return torch.pow(torch.sum(torch.pow(d, p), [-1]), 1.0 / p)

def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-06, keepdim: bool = False):
    return torch.linalg_vector_norm(x1 - x2 + eps, p, [-1], keepdim)

def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-08):
    a = x1 + torch.zeros_like(x2)
    b = x2 + torch.zeros_like(x1)
    a_norm = torch.clamp_min(torch.linalg_vector_norm(a, 2, [dim], True), eps)
    b_norm = torch.clamp_min(torch.linalg_vector_norm(b, 2, [dim], True), eps)
    return torch.sum((a / a_norm) * (b / b_norm), [dim])
# The powers x^0 .. x^(N-1) of the last axis of x, made by a cumulative product as ATen makes them.
def linalg_vander(x: Tensor, N: Optional[int] = None):
    if x.dim() == 0:  # one point
        x = x.reshape([1])
    n = x.size(-1)
    if N is not None:
        n = N
    ones = torch.ones_like(x).unsqueeze(-1)
    if n <= 1:
        return ones.narrow(-1, 0, n)
    repeats: List[int] = []
    for i in range(x.dim()):
        repeats.append(1)
    repeats.append(n - 1)
    powers = torch.cumprod(x.unsqueeze(-1).repeat(repeats), -1)
    return torch.cat([ones, powers], -1)

# A^n by ATen's binary decomposition of n (the same products in the same order); A^-n from A's
# inverse; A^0 the identity.
def linalg_matrix_power(self: Tensor, n: int):
    if n == 0:
        return torch.eye(self.size(-1), dtype=self.dtype).expand(self.shape).clone()
    a = self
    if n < 0:
        a = torch.linalg_inv(self)
        n = -n
    if n == 1:
        return a.clone()
    if n == 2:
        return torch.matmul(a, a)
    if n == 3:
        return torch.matmul(torch.matmul(a, a), a)
    z = a
    result = a
    first_z = True
    first_result = True
    remaining = n
    for _ in range(n):  # a loop of static length the pass unrolls; it stops at n's highest bit
        if remaining > 0:
            bit = remaining % 2
            remaining = remaining // 2
            if first_z:
                first_z = False
            else:
                z = torch.matmul(z, z)
            if bit == 1:
                if first_result:
                    result = z
                    first_result = False
                else:
                    result = torch.matmul(result, z)
    return result
)TS";
}

}  // namespace pt2onnx::decompositions
