// Indexed writes: index_copy, index_add and index_fill along one dim (scatters and a mask of the
// indexed slices), masked_scatter (source taken in order at the mask's true positions), the rows
// embedding_renorm renorms; take_along_dim (a gather of broadcast operands); scatter_add and
// scatter's add / multiply reductions before ScatterElements had them (opset 16); masked_select and
// argwhere (data-dependent lengths, as nonzero's).
#include "exporter/decompositions/decompositions.h"

namespace pt2onnx::decompositions {

std::string_view indexing() {
  return R"TS(
# The shape [1, ..., 1, -1, 1, ..., 1] of rank `rank` with -1 at `dim`.
def _along_dim(dim: int, rank: int) -> List[int]:
    return [1] * dim + [-1] + [1] * (rank - dim - 1)

# index (1-D) laid along `dim` of `like` and expanded to its shape: the scatter index of an
# index_* op whose slices come from `like`.
def _index_along(index: Tensor, dim: int, like: Tensor):
    if like.dim() == 0:
        return index.reshape([])
    return index.reshape(_along_dim(dim, like.dim())).expand_as(like)

def index_copy(self: Tensor, dim: int, index: Tensor, source: Tensor):
    d = _normalized_dim(dim, self.dim())
    return torch.scatter(self, d, _index_along(index, d, source), source)

def index_add(self: Tensor, dim: int, index: Tensor, source: Tensor, alpha: number = 1):
    d = _normalized_dim(dim, self.dim())
    if alpha != 1:
        source = source * alpha
    return torch.scatter_add(self, d, _index_along(index, d, source), source)

# Which slices along `dim` the (possibly negative) indices name, shaped to broadcast against self.
def _indexed_slices(self: Tensor, dim: int, index: Tensor):
    size = 1
    if self.dim() > 0:
        size = self.size(dim)
    flat = index.reshape([-1])
    flat = torch.where(flat < 0, flat + size, flat)
    hit = (torch.arange(size).unsqueeze(1) == flat.unsqueeze(0)).to(4).sum(1) > 0
    if self.dim() == 0:
        return hit.reshape([])
    return hit.reshape(_along_dim(dim, self.dim()))

def index_fill__int_Scalar(self: Tensor, dim: int, index: Tensor, value: number):
    d = _normalized_dim(dim, self.dim())
    return torch.where(_indexed_slices(self, d, index), torch.full_like(self, value), self)

def index_fill__int_Tensor(self: Tensor, dim: int, index: Tensor, value: Tensor):
    d = _normalized_dim(dim, self.dim())
    return torch.where(_indexed_slices(self, d, index), value.to(self.dtype), self)

# The weight with the rows `indices` names renormed as ATen's embedding_renorm_ does (scaled by
# max_norm / (norm + 1e-7) where their norm exceeds max_norm), the functional form
# functionalize_embedding_renorm gives reads of a weight other than the embedding's own.
def embedding_renorm(self: Tensor, indices: Tensor, max_norm: float, norm_type: float):
    norms = torch.linalg_vector_norm(self, norm_type, [-1], True)
    renormed = torch.logical_and(_indexed_slices(self, 0, indices), norms > max_norm)
    return torch.where(renormed, self * (max_norm / (norms + 1e-7)), self)

# The k-th true position of the mask (broadcast with self) takes source's k-th element; a zero
# appended to source keeps the gather in range when the mask is all false and source empty.
def masked_scatter(self: Tensor, mask: Tensor, source: Tensor):
    base, full_mask = torch.broadcast_tensors([self, mask])
    flat_mask = full_mask.reshape([-1])
    positions = torch.clamp(torch.cumsum(flat_mask.to(4), 0) - 1, 0)
    values = torch.cat([source.reshape([-1]), torch.zeros([1], dtype=source.dtype)], 0)
    picked = torch.index_select(values, 0, positions).to(self.dtype)
    return torch.where(full_mask, picked.reshape(base.shape), base)
# self gathered along dim at indices, both broadcast over the other dims (dim None: the flattened
# self at the flattened indices).
def take_along_dim(self: Tensor, indices: Tensor, dim: Optional[int] = None):
    if dim is None:
        return torch.gather(self.reshape([-1]), 0, indices.reshape([-1]))
    d = _normalized_dim(dim, self.dim())
    self_shape: List[int] = []
    index_shape: List[int] = []
    for i in range(self.dim()):
        if i == d:
            self_shape.append(self.size(i))
            index_shape.append(indices.size(i))
        else:
            n = indices.size(i)
            if n == 1:
                n = self.size(i)
            self_shape.append(n)
            index_shape.append(n)
    return torch.gather(self.expand(self_shape), d, indices.expand(index_shape))

# scatter_add before ScatterElements' "add" reduction (opset 16): each target position j along dim
# gets the sum of the src elements whose index is j (a comparison with every j: memory grows with
# index.numel() * self.size(dim)), added to self; src is read over index's shape, and positions
# index does not reach along the other dims are padded with zeros.
def _scattered_sums(self: Tensor, d: int, index: Tensor, src: Tensor, multiply: bool):
    values = src
    for i in range(self.dim()):  # index has self's rank; self's is the one the specialization knows
        if values.size(i) != index.size(i):
            values = values.narrow(i, 0, index.size(i))
    hit = index.unsqueeze(-1) == torch.arange(self.size(d))
    neutral = 0
    if multiply:
        neutral = 1
    spread = torch.where(hit, values.unsqueeze(-1), torch.full_like(values.unsqueeze(-1), neutral))
    if multiply:
        reduced = torch.prod(spread, d)
    else:
        reduced = torch.sum(spread, [d])
    order: List[int] = []
    for i in range(self.dim() - 1):
        if i == d:
            order.append(self.dim() - 1)
        order.append(i)
    if d == self.dim() - 1:
        order.append(self.dim() - 1)
    placed = reduced.permute(order)
    pads: List[int] = []
    for i in range(self.dim()):
        k = self.dim() - 1 - i
        pads.append(0)
        pads.append(self.size(k) - placed.size(k))
    return torch.constant_pad_nd(placed, pads, neutral)

def _scatter_reduced(self: Tensor, dim: int, index: Tensor, src: Tensor, multiply: bool):
    if index.numel() == 0:
        return self.clone()
    if self.dim() == 0:  # index is 0 or [0]: src's first element reaches self
        first = src.reshape([-1]).narrow(0, 0, 1).reshape([]).to(self.dtype)
        if multiply:
            return self * first
        return self + first
    sums = _scattered_sums(self, _normalized_dim(dim, self.dim()), index, src, multiply).to(self.dtype)
    if multiply:
        return self * sums
    return self + sums

def scatter_add(self: Tensor, dim: int, index: Tensor, src: Tensor):
    return _scatter_reduced(self, dim, index, src, False)

def scatter__reduce(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str):
    assert reduce == "add" or reduce == "multiply", "reduce argument must be either add or multiply."
    return _scatter_reduced(self, dim, index, src, reduce == "multiply")

def scatter__value_reduce(self: Tensor, dim: int, index: Tensor, value: number, reduce: str):
    assert reduce == "add" or reduce == "multiply", "reduce argument must be either add or multiply."
    return _scatter_reduced(self, dim, index, torch.full_like(index, value, dtype=self.dtype), reduce == "multiply")
# The elements of self (broadcast with mask) where mask is true, in order.
def masked_select(self: Tensor, mask: Tensor):
    values, full_mask = torch.broadcast_tensors([self, mask])
    return values.reshape([-1])[full_mask.reshape([-1])]

def argwhere(self: Tensor):
    return torch.nonzero(self)
)TS";
}

}  // namespace pt2onnx::decompositions
