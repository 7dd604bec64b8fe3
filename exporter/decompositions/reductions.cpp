// Reduction composites: NaN-ignoring sums and means, counts, (amin, amax), cumulative products and
// log-sum-exps (as masked reductions over the prefix: O(n^2) in the scanned length, exact in what
// they multiply), differences and distances, diagonals and traces; order statistics (kthvalue,
// median, nanmedian, msort) read off a sort, which puts NaN last as PyTorch's does; cummax/cummin
// over the same prefix mask; histc as ATen bins it; matrix norms (and linalg.norm's choice between
// a vector and a matrix norm); sum_to_size; the trapezoid rule (trapezoid, trapz,
// cumulative_trapezoid) as ATen sums it; cov and corrcoef (weighted, ATen's corner cases), renorm.
#include "exporter/decompositions/decompositions.h"

namespace pt2onnx::decompositions {

std::string_view reductions() {
  return R"TS(
def nansum(self: Tensor, dim: Optional[List[int]] = None, keepdim: bool = False, dtype: Optional[int] = None):
    return torch.sum(torch.where(torch.isnan(self), torch.zeros_like(self), self), dim, keepdim, dtype=dtype)

def nanmean(self: Tensor, dim: Optional[List[int]] = None, keepdim: bool = False, dtype: Optional[int] = None):
    kept = torch.logical_not(torch.isnan(self))
    total = torch.sum(torch.where(kept, self, torch.zeros_like(self)), dim, keepdim, dtype=dtype)
    return total / torch.sum(kept, dim, keepdim)

def count_nonzero(self: Tensor, dim: Optional[int] = None):
    if dim is None:
        return torch.sum(self != 0)
    return torch.sum(self != 0, [dim])

def count_nonzero__dim_IntList(self: Tensor, dim: List[int]):
    return torch.sum(self != 0, dim)

def aminmax(self: Tensor, dim: Optional[int] = None, keepdim: bool = False):
    if dim is None:
        dims: List[int] = []
        for d in range(self.dim()):
            dims.append(d)
        return torch.amin(self, dims, keepdim), torch.amax(self, dims, keepdim)
    return torch.amin(self, [dim], keepdim), torch.amax(self, [dim], keepdim)

# prefix[i, j] = j <= i, for a scan over the last axis of x moved to the end.
def _prefix_mask(n: int):
    steps = torch.arange(n)
    return steps.unsqueeze(0) <= steps.unsqueeze(1)

def cumprod(self: Tensor, dim: int, dtype: Optional[int] = None):
    x = self
    if dtype is not None:
        x = self.to(dtype)
    if x.dim() == 0:
        return x.clone()
    scanned = x.transpose(dim, -1)
    mask = _prefix_mask(scanned.size(-1))
    prefixes = torch.where(mask, scanned.unsqueeze(-2), torch.ones_like(scanned.unsqueeze(-2)))
    return torch.prod(prefixes, -1).transpose(dim, -1)

# Running max (largest=True) or min over the prefix, and the last position holding it; a NaN holds
# from its position on (the last NaN's index), as ATen's scan does.
def _cumulative_extreme(self: Tensor, dim: int, largest: bool):
    if self.dim() == 0:
        return self.clone(), torch.zeros([], dtype=4)
    scanned = self.transpose(dim, -1)
    n = scanned.size(-1)
    mask = _prefix_mask(n)
    items = scanned.unsqueeze(-2)
    if self.is_floating_point():
        bound = float("-inf") if largest else float("inf")
        clean = torch.where(torch.isnan(items), torch.full_like(items, bound), items)
        prefixes = torch.where(mask, clean, torch.full_like(clean, bound))
    else:
        prefixes = torch.where(mask, items, scanned.narrow(-1, 0, 1).unsqueeze(-1))
    if largest:
        values = torch.amax(prefixes, -1)
    else:
        values = torch.amin(prefixes, -1)
    hits = items == values.unsqueeze(-1)
    if self.is_floating_point():
        seen_nan = torch.logical_and(mask, torch.isnan(items)).to(4).sum(-1) > 0
        values = torch.where(seen_nan, torch.full_like(values, float("nan")), values)
        hits = torch.where(seen_nan.unsqueeze(-1), torch.isnan(items), hits)
    positions = torch.where(torch.logical_and(mask, hits), torch.arange(n), -1)
    return values.transpose(dim, -1), torch.amax(positions, -1).transpose(dim, -1)

def cummax(self: Tensor, dim: int):
    return _cumulative_extreme(self, dim, True)

def cummin(self: Tensor, dim: int):
    return _cumulative_extreme(self, dim, False)

def logcumsumexp(self: Tensor, dim: int):
    if self.dim() == 0:
        return self.clone()
    scanned = self.transpose(dim, -1)
    mask = _prefix_mask(scanned.size(-1))
    prefixes = torch.where(mask, scanned.unsqueeze(-2), torch.full_like(scanned.unsqueeze(-2), float("-inf")))
    return torch.logsumexp(prefixes, [-1]).transpose(dim, -1)

def _diff_once(x: Tensor, dim: int):
    n = x.size(dim)
    if x.dtype == 11:
        return torch.logical_xor(x.narrow(dim, 1, n - 1), x.narrow(dim, 0, n - 1))
    return x.narrow(dim, 1, n - 1) - x.narrow(dim, 0, n - 1)

def diff(self: Tensor, n: int = 1, dim: int = -1, prepend: Optional[Tensor] = None, append: Optional[Tensor] = None):
    if n == 0:
        return self.clone()
    x = self
    if prepend is not None:
        x = torch.cat([prepend, x], dim)
    if append is not None:
        x = torch.cat([x, append], dim)
    for _ in range(n):  # n is constant: the decomposition is unrolled where it is inserted
        if x.size(dim) > 0:
            x = _diff_once(x, dim)
    return x

def dist(self: Tensor, other: Tensor, p: number = 2):
    return torch.linalg_vector_norm(self - other, p)

def _normalized_dim(d: int, rank: int) -> int:
    if d < 0:
        return d + rank
    return d

def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1):
    rank = self.dim()
    d1 = _normalized_dim(dim1, rank)
    d2 = _normalized_dim(dim2, rank)
    order: List[int] = []
    for d in range(rank):
        if d != d1 and d != d2:
            order.append(d)
    order.append(d1)
    order.append(d2)
    x = self.permute(order)
    rows = x.size(-2)
    cols = x.size(-1)
    if offset >= 0:
        n = max(min(rows, cols - offset), 0)
        start = offset
    else:
        n = max(min(rows + offset, cols), 0)
        start = -offset * cols
    flat = x.flatten(-2)
    return torch.index_select(flat, -1, torch.arange(n) * (cols + 1) + start)

def linalg_diagonal(A: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1):
    return torch.diagonal(A, offset, dim1, dim2)

def diagonal_copy(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1):
    return torch.diagonal(self, offset, dim1, dim2)

def trace(self: Tensor):
    return torch.sum(torch.diagonal(self))

# [..., L] -> [..., n, n] with the values on diagonal `k` (n = L + |k|), zeros elsewhere.
def _diagonal_matrix(x: Tensor, k: int):
    n = x.size(-1) + abs(k)
    padded = torch.cat([x, torch.zeros(x.shape[:-1] + [abs(k)], dtype=x.dtype)], -1)
    steps = torch.arange(n)
    on_diagonal = (steps.unsqueeze(0) - steps.unsqueeze(1)) == k
    if k >= 0:
        placed = padded.unsqueeze(-1)  # row r holds x[r]
    else:
        placed = padded.unsqueeze(-2)  # column c holds x[c]
    return torch.where(on_diagonal, placed, torch.zeros_like(placed))

def diag(self: Tensor, diagonal: int = 0):
    if self.dim() == 1:
        return _diagonal_matrix(self, diagonal)
    return torch.diagonal(self, diagonal)

def diagflat(self: Tensor, offset: int = 0):
    return _diagonal_matrix(self.flatten(), offset)

def diag_embed(self: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1):
    matrix = _diagonal_matrix(self, offset)
    rank = self.dim() + 1
    d1 = _normalized_dim(dim1, rank)
    d2 = _normalized_dim(dim2, rank)
    order: List[int] = []
    batch = 0
    for d in range(rank):
        if d == d1:
            order.append(rank - 2)
        elif d == d2:
            order.append(rank - 1)
        else:
            order.append(batch)
            batch += 1
    return matrix.permute(order)

def msort(self: Tensor):
    return torch.sort(self, 0)[0]

def _picked(values: Tensor, indices: Tensor, position: Tensor, dim: int, keepdim: bool):
    value = torch.gather(values, dim, position)
    index = torch.gather(indices, dim, position)
    if keepdim:
        return value, index
    return value.squeeze(dim), index.squeeze(dim)

def kthvalue(self: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    if self.dim() == 0:
        return self.clone(), torch.zeros([], dtype=4)
    d = _normalized_dim(dim, self.dim())
    values, indices = torch.sort(self, d)
    return _picked(values, indices, torch.zeros_like(values.narrow(d, 0, 1), dtype=4) + (k - 1), d, keepdim)

# histc: ATen's linear bin choice, (x - lo) * bins / (hi - lo) truncated, in the input's dtype; the
# top edge belongs to the last bin; values outside [lo, hi] and NaN are not counted. min == max
# takes the data's range, widened by 1 each way when that is a single value, as ATen does.
def histc(self: Tensor, bins: int = 100, min: number = 0, max: number = 0):
    x = self.reshape([-1])
    lo = torch.full([], min, dtype=self.dtype)
    hi = torch.full([], max, dtype=self.dtype)
    if min == max:
        if x.size(0) > 0:
            lo = torch.amin(x, [0])
            hi = torch.amax(x, [0])
        same = lo == hi
        lo = torch.where(same, lo - 1, lo)
        hi = torch.where(same, hi + 1, hi)
    counted = torch.logical_and(x >= lo, x <= hi)
    position = torch.clamp(((x - lo) * bins / (hi - lo)).to(4), 0, bins - 1)
    hits = torch.logical_and(position.unsqueeze(1) == torch.arange(bins).unsqueeze(0), counted.unsqueeze(1))
    return torch.sum(hits.to(self.dtype), [0])

# Matrix norms (torch/_refs/linalg): "fro" is the 2-norm of the elements; 1 / inf (and -1 / -inf)
# the largest (smallest) absolute column / row sum. 2, -2 and "nuc" need singular values, which
# stay an unsupported linalg_svdvals at the user's line.
def _matrix_norm_by_sums(x: Tensor, ord: float, dim: List[int], keepdim: bool):
    d0 = _normalized_dim(dim[0], x.dim())
    d1 = _normalized_dim(dim[1], x.dim())
    if ord == float("inf") or ord == -float("inf"):
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    sums = torch.linalg_vector_norm(x, 1.0, [d0], keepdim)
    if ord > 0:  # sums are >= 0: a 0 appended answers for an empty matrix, as ATen's 0
        rank = x.dim()
        if not keepdim:
            rank -= 1
        pad: List[int] = []
        for _ in range(rank - 1 - d1):
            pad.append(0)
            pad.append(0)
        pad.append(0)
        pad.append(1)
        return torch.amax(torch.constant_pad_nd(sums, pad, 0.0), [d1], keepdim)
    return torch.amin(sums, [d1], keepdim)

def _matrix_norm_by_singular_values(x: Tensor, ord: str, dim: List[int], keepdim: bool):
    d0 = _normalized_dim(dim[0], x.dim())
    d1 = _normalized_dim(dim[1], x.dim())
    values = torch.linalg_svdvals(torch.movedim(x, [d0, d1], [-2, -1]))
    if ord == "nuc":
        norm = torch.sum(values, [-1])
    elif ord == "2":
        norm = torch.amax(values, [-1])
    else:
        norm = torch.amin(values, [-1])
    if keepdim:
        first = d0
        if d1 < d0:
            first = d1
        norm = norm.unsqueeze(first).unsqueeze(d0 + d1 - first)
    return norm

def linalg_matrix_norm(self: Tensor, ord: number, dim: List[int] = [-2, -1], keepdim: bool = False,
                       dtype: Optional[int] = None):
    x = self
    if dtype is not None:
        x = self.to(dtype)
    if ord == 2:
        return _matrix_norm_by_singular_values(x, "2", dim, keepdim)
    if ord == -2:
        return _matrix_norm_by_singular_values(x, "-2", dim, keepdim)
    return _matrix_norm_by_sums(x, float(ord), dim, keepdim)

def linalg_matrix_norm__str_ord(self: Tensor, ord: str = "fro", dim: List[int] = [-2, -1], keepdim: bool = False,
                                dtype: Optional[int] = None):
    if ord == "fro":
        return torch.linalg_vector_norm(self, 2, dim, keepdim, dtype=dtype)
    x = self
    if dtype is not None:
        x = self.to(dtype)
    return _matrix_norm_by_singular_values(x, ord, dim, keepdim)

# linalg.norm: a matrix norm when ord is given over two dims (or a 2-D input without dims), else a
# vector norm (2 by default) over dim or all elements.
def linalg_norm(self: Tensor, ord: Optional[number] = None, dim: Optional[List[int]] = None, keepdim: bool = False,
                dtype: Optional[int] = None):
    if ord is None:
        return torch.linalg_vector_norm(self, 2, dim, keepdim, dtype=dtype)
    if dim is None:
        if self.dim() == 2:
            return linalg_matrix_norm(self, ord, [0, 1], keepdim, dtype)
        return torch.linalg_vector_norm(self, ord, dim, keepdim, dtype=dtype)
    if len(dim) == 2:
        return linalg_matrix_norm(self, ord, dim, keepdim, dtype)
    return torch.linalg_vector_norm(self, ord, dim, keepdim, dtype=dtype)

def linalg_norm__ord_str(self: Tensor, ord: str, dim: Optional[List[int]] = None, keepdim: bool = False,
                         dtype: Optional[int] = None):
    if dim is None:
        return linalg_matrix_norm__str_ord(self, ord, [0, 1], keepdim, dtype)
    return linalg_matrix_norm__str_ord(self, ord, dim, keepdim, dtype)

# Values that are not NaN along dim, kept as a size-1 axis.
def _counted(self: Tensor, dim: int):
    return torch.logical_not(torch.isnan(self)).to(4).sum(dim, keepdim=True)

# The lower middle; a slice holding NaN gives NaN, at its first NaN's index (sorted stably, NaN last).
def median__dim(self: Tensor, dim: int, keepdim: bool = False):
    if self.dim() == 0:
        return self.clone(), torch.zeros([], dtype=4)
    d = _normalized_dim(dim, self.dim())
    values, indices = torch.sort(self, stable=True, dim=d)
    size = self.size(d)
    position = torch.zeros_like(values.narrow(d, 0, 1), dtype=4) + (size - 1) // 2
    if self.is_floating_point():
        counted = _counted(self, d)
        position = torch.where(counted < size, counted, position)
    return _picked(values, indices, position, d, keepdim)

def nanmedian__dim(self: Tensor, dim: int, keepdim: bool = False):
    if not self.is_floating_point():
        return median__dim(self, dim, keepdim)
    if self.dim() == 0:
        return self.clone(), torch.zeros([], dtype=4)
    d = _normalized_dim(dim, self.dim())
    values, indices = torch.sort(self, stable=True, dim=d)
    position = torch.clamp(torch.div(_counted(self, d) - 1, 2, rounding_mode="floor"), 0)
    return _picked(values, indices, position, d, keepdim)

# Over all elements: a NaN appended sorts last and answers for an empty tensor.
def median(self: Tensor):
    flat = self.reshape([-1])
    n = flat.size(0)
    if not self.is_floating_point():
        return torch.sort(flat, 0)[0][(n - 1) // 2]
    values = torch.sort(torch.cat([flat, torch.full([1], float("nan"), dtype=self.dtype)], 0), 0)[0]
    return torch.where(torch.isnan(values[n - 1]), values[n - 1], values[(n - 1) // 2])

def nanmedian(self: Tensor):
    if not self.is_floating_point():
        return median(self)
    flat = self.reshape([-1])
    values = torch.sort(torch.cat([flat, torch.full([1], float("nan"), dtype=self.dtype)], 0), 0)[0]
    position = torch.clamp(torch.div(_counted(flat, 0) - 1, 2, rounding_mode="floor"), 0)
    return torch.gather(values, 0, position).reshape([])
# sum_to_size: the sum over the leading dims size does not have and over those it has as 1 where
# self's are not, to the shape `size`.
def sum_to_size(self: Tensor, size: List[int]):
    lead = self.dim() - len(size)
    dims: List[int] = []
    for d in range(lead):
        dims.append(d)
    for i in range(len(size)):
        if size[i] == 1 and self.size(lead + i) != 1:
            dims.append(lead + i)
    if len(dims) == 0:
        return self.clone()
    return torch.sum(self, dims, True).reshape(size)

# The trapezoid rule along dim: sum((y[i] + y[i + 1]) * dx[i]) / 2, dx from x's differences (x 1-D
# laid along dim, or of lower rank padded with leading 1s, broadcast after differencing as ATen
# does) or a number; zero samples integrate to zeros.
def _trapezoid_x(y: Tensor, x: Tensor, d: int):
    if x.dim() == 1:
        shape: List[int] = []
        for i in range(y.dim()):
            shape.append(1)
        shape[d] = x.size(0)
        return x.reshape(shape)
    if x.dim() < y.dim():
        padded: List[int] = []
        for i in range(y.dim() - x.dim()):
            padded.append(1)
        for i in range(x.dim()):
            padded.append(x.size(i))
        return x.reshape(padded)
    return x

def _trapezoid_dx(y: Tensor, x: Tensor, d: int):
    xv = _trapezoid_x(y, x, d)
    n = xv.size(d)
    return xv.narrow(d, 1, n - 1) - xv.narrow(d, 0, n - 1)

def _trapezoid_pairs(y: Tensor, d: int):
    n = y.size(d)
    return y.narrow(d, 0, n - 1) + y.narrow(d, 1, n - 1)

def trapezoid__x(y: Tensor, x: Tensor, dim: int = -1):
    d = _normalized_dim(dim, y.dim())
    if y.size(d) == 0:
        return torch.sum(y, [d])
    return torch.sum(_trapezoid_pairs(y, d) * _trapezoid_dx(y, x, d), [d]) / 2.0

def trapezoid__dx(y: Tensor, dx: number = 1, dim: int = -1):
    d = _normalized_dim(dim, y.dim())
    if y.size(d) == 0:
        return torch.sum(y, [d])
    return (torch.sum(y, [d]) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * dx

def trapz__x(y: Tensor, x: Tensor, dim: int = -1):
    return trapezoid__x(y, x, dim)

def trapz__dx(y: Tensor, dx: float = 1.0, dim: int = -1):
    return trapezoid__dx(y, dx, dim)

def cumulative_trapezoid__x(y: Tensor, x: Tensor, dim: int = -1):
    d = _normalized_dim(dim, y.dim())
    return torch.cumsum(_trapezoid_pairs(y, d) * _trapezoid_dx(y, x, d), d) / 2.0

def cumulative_trapezoid__dx(y: Tensor, dx: number = 1, dim: int = -1):
    d = _normalized_dim(dim, y.dim())
    return torch.cumsum(_trapezoid_pairs(y, d) * (dx / 2.0), d)
# cov as ATen computes it: observations along dim 1 (a 1-D input is one variable), weighted by
# fweights * aweights; a normalization factor <= 0 becomes 0 (an inf / NaN result, as in PyTorch).
def cov(self: Tensor, correction: int = 1, fweights: Optional[Tensor] = None, aweights: Optional[Tensor] = None):
    x = self
    if self.dim() < 2:
        x = self.reshape([1, -1])
    n = x.size(1)
    if fweights is None and aweights is None:
        centered = x - (torch.sum(x, [1]) / n).unsqueeze(1)
        factor = n - correction
        if factor < 0:
            factor = 0
        return (torch.mm(centered, centered.t()) / factor).squeeze()
    w = torch.ones([n], dtype=x.dtype)
    if fweights is not None:
        w = fweights
    if aweights is not None:
        if fweights is not None:
            w = w * aweights
        else:
            w = aweights
    w_sum = torch.sum(w)
    avg = torch.sum(x * w, [1]) / w_sum
    norm = w_sum
    if correction != 0:
        if aweights is None:
            norm = w_sum - correction
        elif fweights is None and n == 1 and correction == 1:
            norm = torch.zeros_like(w_sum)
        else:
            norm = w_sum - correction * torch.sum(w * aweights) / w_sum
    norm = torch.where(norm <= 0, torch.zeros_like(norm), norm)
    if n == 1 and (fweights is None) != (aweights is None):
        centered = torch.zeros_like(x * 1.0)
    else:
        centered = x - avg.unsqueeze(1)
    return torch.true_divide(torch.mm(centered, (centered * w).t()), norm).squeeze()

def corrcoef(self: Tensor):
    c = cov(self)
    if c.dim() == 0:
        return c / c
    stddev = torch.sqrt(torch.diagonal(c))
    c = c / stddev.reshape([-1, 1])
    c = c / stddev.reshape([1, -1])
    return torch.clamp(c, -1, 1)

# renorm: each slice along dim whose p-norm exceeds maxnorm scaled to maxnorm / (norm + 1e-7).
def renorm(self: Tensor, p: number, dim: int, maxnorm: number):
    d = _normalized_dim(dim, self.dim())
    others: List[int] = []
    for i in range(self.dim()):
        if i != d:
            others.append(i)
    norms = torch.linalg_vector_norm(self, p, others, True)
    scaled = torch.full_like(norms, maxnorm) / (norms + 1e-7)  # (a number / a tensor would bind as ints)
    factor = torch.where(norms > maxnorm, scaled, torch.ones_like(norms))
    return self * factor
)TS";
}

}  // namespace pt2onnx::decompositions
