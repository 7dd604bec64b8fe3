// Indexed writes: index_copy, index_add and index_fill along one dim (scatters and a mask of the
// indexed slices), masked_scatter (source taken in order at the mask's true positions), the rows
// embedding_renorm renorms.
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
)TS";
}

}  // namespace pt2onnx::decompositions
