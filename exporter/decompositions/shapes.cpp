// Shape and view composites: the *_copy ops (functional views), flips and transposes by name,
// atleast_Nd, ravel, unfold (sliding windows by an index gather), channel_shuffle; the ops taking
// a list of tensors (hstack, vstack, dstack, column_stack, block_diag, broadcast_tensors,
// cartesian_prod), whose lists the pass passes item by item; rot90, hsplit / vsplit / dsplit (as
// tensor_split), fftshift / ifftshift (as roll).
#include "exporter/decompositions/decompositions.h"

namespace pt2onnx::decompositions {

std::string_view shapes() {
  return R"TS(
def alias_copy(self: Tensor):
    return self.clone()

def expand_copy(self: Tensor, size: List[int], implicit: bool = False):
    return self.expand(size)

def permute_copy(self: Tensor, dims: List[int]):
    return self.permute(dims)

def squeeze_copy(self: Tensor):
    return self.squeeze()

def squeeze_copy__dim(self: Tensor, dim: int):
    return self.squeeze(dim)

def squeeze_copy__dims(self: Tensor, dim: List[int]):
    return self.squeeze(dim)

def t_copy(self: Tensor):
    return self.t()

def transpose_copy__int(self: Tensor, dim0: int, dim1: int):
    return self.transpose(dim0, dim1)

def unsqueeze_copy(self: Tensor, dim: int):
    return self.unsqueeze(dim)

def view_copy(self: Tensor, size: List[int]):
    return self.reshape(size)

def unbind_copy__int(self: Tensor, dim: int = 0):
    return torch.unbind(self, dim)

def split_with_sizes_copy(self: Tensor, split_sizes: List[int], dim: int = 0):
    return torch.split_with_sizes(self, split_sizes, dim)

def unfold_copy(self: Tensor, dimension: int, size: int, step: int):
    return self.unfold(dimension, size, step)

def ravel(self: Tensor):
    return self.reshape([-1])

def fliplr(self: Tensor):
    return torch.flip(self, [1])

def flipud(self: Tensor):
    return torch.flip(self, [0])

def mT(self: Tensor):
    return self.transpose(-2, -1)

def mH(self: Tensor):
    return self.transpose(-2, -1)

def matrix_H(self: Tensor):
    return self.transpose(-2, -1)

def atleast_1d(self: Tensor):
    if self.dim() == 0:
        return self.reshape([1])
    return self

def atleast_2d(self: Tensor):
    if self.dim() == 0:
        return self.reshape([1, 1])
    if self.dim() == 1:
        return self.unsqueeze(0)
    return self

def atleast_3d(self: Tensor):
    if self.dim() == 0:
        return self.reshape([1, 1, 1])
    if self.dim() == 1:
        return self.unsqueeze(0).unsqueeze(-1)
    if self.dim() == 2:
        return self.unsqueeze(-1)
    return self

def atleast_1d__Sequence(tensors: List[Tensor]):
    return [atleast_1d(t) for t in tensors]

def atleast_2d__Sequence(tensors: List[Tensor]):
    return [atleast_2d(t) for t in tensors]

def atleast_3d__Sequence(tensors: List[Tensor]):
    return [atleast_3d(t) for t in tensors]

def hstack(tensors: List[Tensor]):
    parts = [atleast_1d(t) for t in tensors]
    if tensors[0].dim() <= 1:
        return torch.cat(parts, 0)
    return torch.cat(parts, 1)

def vstack(tensors: List[Tensor]):
    return torch.cat([atleast_2d(t) for t in tensors], 0)

def dstack(tensors: List[Tensor]):
    return torch.cat([atleast_3d(t) for t in tensors], 2)

def _as_column(t: Tensor):
    if t.dim() <= 1:
        return t.reshape([-1, 1])
    return t

def column_stack(tensors: List[Tensor]):
    return torch.cat([_as_column(t) for t in tensors], 1)

def _width(t: Tensor) -> int:
    if t.dim() == 0:
        return 1
    return t.size(t.dim() - 1)

# Each block padded left and right with zeros to the total width, the rows stacked.
def block_diag(tensors: List[Tensor]):
    width = 0
    for t in tensors:
        width += _width(t)
    rows: List[Tensor] = []
    left = 0
    for t in tensors:
        rows.append(torch.constant_pad_nd(atleast_2d(t), [left, width - left - _width(t)]))
        left += _width(t)
    return torch.cat(rows, 0)

# The broadcast shape is that of an Or of boolean zeros shaped as each tensor.
def broadcast_tensors(tensors: List[Tensor]):
    shape = torch.zeros_like(tensors[0], dtype=11)
    for t in tensors:
        shape = torch.logical_or(shape, torch.zeros_like(t, dtype=11))
    return [t.expand_as(shape) for t in tensors]

def cartesian_prod(tensors: List[Tensor]):
    if len(tensors) == 1:
        return tensors[0]
    grids = torch.meshgrid(tensors, indexing="ij")
    return torch.stack([grids[k].reshape([-1]) for k in range(len(tensors))], 1)

# Windows of `size` every `step` along `dimension`: that axis becomes the window count and a new
# last axis holds each window.
def unfold(self: Tensor, dimension: int, size: int, step: int):
    if self.dim() == 0:
        return self.reshape([1])
    d = dimension
    if d < 0:
        d += self.dim()
    windows = (self.size(d) - size) // step + 1
    starts = torch.arange(windows) * step
    index = (starts.unsqueeze(1) + torch.arange(size).unsqueeze(0)).flatten()
    gathered = torch.index_select(self, d, index)
    shape = self.shape[:d] + [windows, size] + self.shape[d + 1:]
    return gathered.reshape(shape).movedim(d + 1, -1)

def channel_shuffle(self: Tensor, groups: int):
    shape = self.shape
    grouped = self.reshape(shape[:1] + [groups, shape[1] // groups] + shape[2:])
    return grouped.transpose(1, 2).reshape(shape)
# k quarter turns from dims[0] towards dims[1], as ATen turns them: a flip and a transpose.
def rot90(self: Tensor, k: int = 1, dims: List[int] = [0, 1]):
    turns = k % 4
    if turns == 1:
        return torch.flip(self, [dims[1]]).transpose(dims[0], dims[1])
    if turns == 2:
        return torch.flip(self, dims)
    if turns == 3:
        return torch.flip(self, [dims[0]]).transpose(dims[0], dims[1])
    return self.clone()

# hsplit splits 1-D tensors along 0, others along 1; vsplit along 0, dsplit along 2.
def _hsplit_dim(self: Tensor) -> int:
    if self.dim() == 1:
        return 0
    return 1

def hsplit__int(self: Tensor, sections: int):
    return torch.tensor_split(self, sections, _hsplit_dim(self))

def hsplit__array(self: Tensor, indices: List[int]):
    return torch.tensor_split(self, indices, _hsplit_dim(self))

def vsplit__int(self: Tensor, sections: int):
    return torch.tensor_split(self, sections, 0)

def vsplit__array(self: Tensor, indices: List[int]):
    return torch.tensor_split(self, indices, 0)

def dsplit__int(self: Tensor, sections: int):
    return torch.tensor_split(self, sections, 2)

def dsplit__array(self: Tensor, indices: List[int]):
    return torch.tensor_split(self, indices, 2)

# fftshift rolls each dim (every dim when None) by half its size, rounded down; ifftshift by half
# rounded up, undoing it.
def _fft_shifted(self: Tensor, dim: Optional[List[int]], round_up: int):
    dims: List[int] = []
    if dim is None:
        for d in range(self.dim()):
            dims.append(d)
    else:
        dims = dim
    if len(dims) == 0:
        return self.clone()
    shifts: List[int] = []
    for d in dims:
        shifts.append((self.size(d) + round_up) // 2)
    return torch.roll(self, shifts, dims)

def fft_fftshift(self: Tensor, dim: Optional[List[int]] = None):
    return _fft_shifted(self, dim, 0)

def fft_ifftshift(self: Tensor, dim: Optional[List[int]] = None):
    return _fft_shifted(self, dim, 1)
)TS";
}

}  // namespace pt2onnx::decompositions
