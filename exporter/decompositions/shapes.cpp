// Shape and view composites: the *_copy ops (functional views), flips and transposes by name,
// atleast_Nd, ravel, unfold (sliding windows by an index gather), channel_shuffle.
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
)TS";
}

}  // namespace pt2onnx::decompositions
