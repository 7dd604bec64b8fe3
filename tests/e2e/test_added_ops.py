"""Ops added for swin_v2, mvit, RAFT and audio front ends: grid_sample (GridSample, opset 16),
F.unfold / F.fold (im2col / col2im), torch.meshgrid, torch.tensor_split, vector and matrix norms
(torch.norm, F.normalize, linalg.vector_norm / matrix_norm / norm), torch.histc, embeddings with
max_norm, torch.stft with window functions (STFT, opset 17) and torch.istft (every opset), traced
and scripted, exported with pt2onnx and run in ONNX Runtime and the builtin runtime against
PyTorch, on inputs of other sizes than the example's."""
import copy
import warnings

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F

import pt2onnx
from samples import ort

from tests.e2e.roundtrip_checks import TOLERANCE, check_runs


def export_and_check(model, example, runs, tmp_path, opset=17, dynamic_axes=None, script=False):
    """Exports `model` for `example`, then runs each of `runs` (argument tuples) in ONNX Runtime and
    the builtin runtime against PyTorch."""
    names = [f"in_{k}" for k in range(len(example))]
    path = tmp_path / "model.onnx"
    exported = torch.jit.script(model) if script else model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(exported, example, path, opset_version=opset, input_names=names,
                       dynamic_axes=dynamic_axes or {})
    onnx.checker.check_model(str(path), full_check=True)
    check_runs(model, path, names, runs)


# ---------------------------------------------------------------- grid_sample


class GridSample(torch.nn.Module):
    def __init__(self, mode: str, padding_mode: str, align_corners: bool):
        super().__init__()
        self.mode, self.padding_mode, self.align_corners = mode, padding_mode, align_corners

    def forward(self, x, grid):
        return F.grid_sample(x, grid, mode=self.mode, padding_mode=self.padding_mode, align_corners=self.align_corners)


def grid(n, h, w):
    return torch.rand(n, h, w, 2) * 2.4 - 1.2  # past [-1, 1]: the padding modes matter


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch_on_other_sizes(mode, padding_mode, align_corners, tmp_path):
    torch.manual_seed(0)
    model = GridSample(mode, padding_mode, align_corners)
    axes = {"in_0": {0: "n", 2: "h", 3: "w"}, "in_1": {0: "n", 1: "gh", 2: "gw"}}
    export_and_check(model, (torch.randn(1, 2, 5, 6), grid(1, 3, 4)),
                     [(torch.randn(3, 2, 9, 4), grid(3, 6, 2)), (torch.randn(2, 2, 3, 3), grid(2, 1, 5))],
                     tmp_path, opset=16 if align_corners else 17, dynamic_axes=axes)


def test_scripted_grid_sample_matches_torch(tmp_path):
    torch.manual_seed(1)
    export_and_check(GridSample("bilinear", "border", False), (torch.randn(1, 3, 6, 6), grid(1, 4, 4)),
                     [(torch.randn(2, 3, 8, 5), grid(2, 3, 7))], tmp_path, script=True,
                     dynamic_axes={"in_0": {0: "n", 2: "h", 3: "w"}, "in_1": {0: "n", 1: "gh", 2: "gw"}})


def test_grid_sample_below_opset_16_names_the_opset(tmp_path):
    with pytest.raises(pt2onnx.ExportError, match=r"aten::grid_sampler.*16|16.*aten::grid_sampler") as info:
        pt2onnx.export(GridSample("bilinear", "zeros", False), (torch.randn(1, 1, 4, 4), grid(1, 2, 2)),
                       tmp_path / "m.onnx", opset_version=15)
    assert not (tmp_path / "m.onnx").exists(), info.value


# ---------------------------------------------------------------- unfold / fold


class Unfold(torch.nn.Module):
    def __init__(self, kernel, dilation, padding, stride):
        super().__init__()
        self.unfold = torch.nn.Unfold(kernel, dilation, padding, stride)

    def forward(self, x):
        return self.unfold(x)


class Fold(torch.nn.Module):
    def __init__(self, output_size, kernel, dilation, padding, stride):
        super().__init__()
        self.fold = torch.nn.Fold(output_size, kernel, dilation, padding, stride)

    def forward(self, x):
        return self.fold(x)


PATCHES = [((3, 3), 1, 1, 1), ((2, 3), (1, 2), (0, 1), (2, 1)), (1, 1, 0, 1), ((3, 2), (2, 1), (2, 0), (3, 2))]


@pytest.mark.parametrize("kernel,dilation,padding,stride", PATCHES)
@pytest.mark.parametrize("script", [False, True])
def test_unfold_matches_torch_on_other_sizes(kernel, dilation, padding, stride, script, tmp_path):
    torch.manual_seed(2)
    export_and_check(Unfold(kernel, dilation, padding, stride), (torch.randn(1, 3, 7, 8),),
                     [(torch.randn(2, 3, 9, 7),), (torch.randn(1, 3, 7, 8),)], tmp_path, opset=13,
                     dynamic_axes={"in_0": {0: "n", 2: "h", 3: "w"}}, script=script)


@pytest.mark.parametrize("kernel,dilation,padding,stride", PATCHES)
def test_fold_matches_torch(kernel, dilation, padding, stride, tmp_path):
    torch.manual_seed(3)
    model = Fold((7, 8), kernel, dilation, padding, stride)
    columns = F.unfold(torch.randn(2, 3, 7, 8), kernel, dilation, padding, stride)
    export_and_check(model, (torch.randn_like(columns),), [(torch.randn_like(columns),),
                                                           (torch.randn(5, *columns.shape[1:]),)],
                     tmp_path, opset=16, dynamic_axes={"in_0": {0: "n"}})


def test_fold_below_opset_16_names_the_opset(tmp_path):
    with pytest.raises(pt2onnx.ExportError, match="16"):
        pt2onnx.export(Fold((4, 4), 2, 1, 0, 2), (torch.randn(1, 4, 4),), tmp_path / "m.onnx", opset_version=15)


# ---------------------------------------------------------------- meshgrid


class Meshgrid(torch.nn.Module):
    def __init__(self, indexing: str):
        super().__init__()
        self.indexing = indexing

    def forward(self, a, b, c):
        grids = torch.meshgrid(a, b, c, indexing=self.indexing)
        return grids[0], grids[1], grids[2]  # tensors, not a list (a scripted list is an ONNX sequence)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("script", [False, True])
def test_meshgrid_matches_torch_on_other_lengths(indexing, script, tmp_path):
    axes = {"in_0": {0: "a"}, "in_1": {0: "b"}}
    export_and_check(Meshgrid(indexing), (torch.randn(3), torch.arange(4.0), torch.tensor(2.5)),
                     [(torch.randn(6), torch.arange(2.0), torch.tensor(-1.0)),
                      (torch.randn(1), torch.arange(5.0), torch.tensor(0.5))],
                     tmp_path, dynamic_axes=axes, script=script)


# ---------------------------------------------------------------- tensor_split


class TensorSplit(torch.nn.Module):
    def forward(self, x):
        sections = torch.tensor_split(x, 3, dim=1)
        indices = torch.tensor_split(x, [1, 4, 9], dim=1)
        by_tensor = torch.tensor_split(x, torch.tensor([2, 5]), dim=1)
        return sections[0], sections[1], sections[2], indices[0], indices[1], indices[2], indices[3], by_tensor[2]


@pytest.mark.parametrize("script", [False, True])
def test_tensor_split_matches_torch_on_other_lengths(script, tmp_path):
    export_and_check(TensorSplit(), (torch.randn(2, 7),), [(torch.randn(3, 11),), (torch.randn(1, 2),)],
                     tmp_path, dynamic_axes={"in_0": {0: "n", 1: "len"}}, script=script)


class TensorSplitAtInput(torch.nn.Module):
    def forward(self, x, indices):
        first, middle, last = torch.tensor_split(x, indices, dim=0)
        return first * 2, middle, last.sum(0)


@pytest.mark.parametrize("script", [False, True])
def test_tensor_split_at_run_time_indices_matches_torch(script, tmp_path):
    export_and_check(TensorSplitAtInput(), (torch.randn(7, 3), torch.tensor([2, 5])),
                     [(torch.randn(9, 3), torch.tensor([-3, 20])), (torch.randn(4, 3), torch.tensor([3, 1]))],
                     tmp_path, dynamic_axes={"in_0": {0: "n"}}, script=script)


# ---------------------------------------------------------------- norms


class Norms(torch.nn.Module):
    def forward(self, x):
        return (torch.norm(x), torch.norm(x, p=1, dim=1), torch.norm(x, p=float("inf"), dim=(0, 2), keepdim=True),
                torch.norm(x, p=float("-inf"), dim=-1), torch.norm(x, p=0, dim=1), torch.norm(x, p=3.5, dim=2),
                torch.norm(x, p="fro", dim=(1, 2)), F.normalize(x, dim=-1), F.normalize(x, p=1.0, dim=1),
                torch.linalg.vector_norm(x), torch.linalg.vector_norm(x, ord=float("inf"), dim=(0, 1)),
                torch.linalg.vector_norm(x, ord=2, dim=1, dtype=torch.float64))


def test_vector_norms_match_torch_on_other_sizes(tmp_path):
    torch.manual_seed(4)
    x = torch.randn(2, 3, 4)
    x[0, 1, 2] = 0.0  # a zero for p = 0 (a count of non-zeros)
    export_and_check(Norms(), (x,), [(torch.randn(4, 3, 6),), (x,)], tmp_path,
                     dynamic_axes={"in_0": {0: "a", 2: "c"}})


class ScriptedNorms(torch.nn.Module):
    def forward(self, x):
        return F.normalize(x, dim=1), torch.linalg.vector_norm(x, 3.0, [0, 2], True)


def test_scripted_norms_match_torch(tmp_path):
    torch.manual_seed(5)
    export_and_check(ScriptedNorms(), (torch.randn(2, 3, 4),), [(torch.randn(5, 3, 2),)], tmp_path, script=True,
                     dynamic_axes={"in_0": {0: "a", 2: "c"}})


class MatrixNorms(torch.nn.Module):
    def forward(self, x):
        return (torch.linalg.matrix_norm(x), torch.linalg.matrix_norm(x, 1), torch.linalg.matrix_norm(x, -1, (0, 2)),
                torch.linalg.matrix_norm(x, float("inf"), (2, 1), keepdim=True),
                torch.linalg.matrix_norm(x, -float("inf")), torch.linalg.norm(x), torch.linalg.norm(x, 1, (0, 1)),
                torch.linalg.norm(x, "fro", (1, 2)), torch.linalg.norm(x, 3.0, (2,)), torch.linalg.norm(x[0], 1))


@pytest.mark.parametrize("script", [False, True])
def test_matrix_norms_match_torch_on_other_sizes(script, tmp_path):
    torch.manual_seed(6)
    export_and_check(MatrixNorms(), (torch.randn(2, 3, 4),), [(torch.randn(4, 3, 6),), (torch.randn(1, 3, 1) * 50,)],
                     tmp_path, dynamic_axes={"in_0": {0: "a", 2: "c"}}, script=script)


def test_matrix_norms_of_singular_values_name_the_op(tmp_path):
    with pytest.raises(pt2onnx.ExportError, match="linalg_svdvals"):
        pt2onnx.export(MatrixNormOfOrder2(), (torch.randn(3, 3),), tmp_path / "m.onnx")


class MatrixNormOfOrder2(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.matrix_norm(x, 2)


class Histograms(torch.nn.Module):
    def forward(self, x):
        return torch.histc(x, 10), torch.histc(x, 4, -1.0, 1.0), torch.histc(x * 0 + 3.0, 3)


@pytest.mark.parametrize("script", [False, True])
def test_histc_matches_torch_on_other_lengths(script, tmp_path):
    torch.manual_seed(7)
    edges = torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0, 1.25, -3.0])
    export_and_check(Histograms(), (torch.randn(50),), [(edges,), (torch.randn(1000) * 4,), (torch.randn(1),)],
                     tmp_path, dynamic_axes={"in_0": {0: "n"}}, script=script)


# ---------------------------------------------------------------- embedding max_norm


class RenormedEmbedding(torch.nn.Module):
    def __init__(self, tied: bool):
        super().__init__()
        self.tied = tied
        self.embedding = torch.nn.Embedding(10, 4, max_norm=1.0, norm_type=1.0 if tied else 2.0)

    def forward(self, ids):
        rows = self.embedding(ids)
        if self.tied:
            return rows.sum(1) @ self.embedding.weight.t()
        return rows


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("script", [False, True])
def test_embedding_with_max_norm_matches_torch(tied, script, tmp_path):
    """The model exported is the module after its example call (which renormed the example's rows in
    PyTorch too); each later call is compared with a fresh copy of that module. (torch's scripted
    F.embedding drops the renorm: a scripted module is compared with itself, which has none.)"""
    torch.manual_seed(8)
    model = RenormedEmbedding(tied)
    model.embedding.weight.data *= 3
    names = ["ids"]
    path = tmp_path / "model.onnx"
    exported = torch.jit.script(model) if script else model
    pt2onnx.export(exported, (torch.tensor([[1, 2, 2], [3, 9, 0]]),), path, input_names=names,
                   dynamic_axes={"ids": {0: "b", 1: "t"}})
    snapshot = copy.deepcopy(exported)
    for ids in (torch.tensor([[5, 5, 7, 1]]), torch.tensor([[0], [8]]), torch.tensor([[1, 2, 2], [3, 9, 0]])):
        check_runs(copy.deepcopy(snapshot), path, names, [(ids,)])


# ---------------------------------------------------------------- stft


class Spectrogram(torch.nn.Module):
    def __init__(self, center: bool, window: str):
        super().__init__()
        self.center, self.window = center, window

    def forward(self, x):
        window = torch.hann_window(64) if self.window == "hann" else torch.hamming_window(48, periodic=False)
        spec = torch.stft(x, n_fft=64, hop_length=16, win_length=window.shape[0], window=window, center=self.center,
                          return_complex=False)
        return spec, spec.pow(2).sum(-1)  # and a power spectrogram


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("window", ["hann", "hamming"])
def test_stft_matches_torch_on_other_lengths(center, window, tmp_path):
    torch.manual_seed(6)
    export_and_check(Spectrogram(center, window), (torch.randn(2, 400),),
                     [(torch.randn(3, 1000),), (torch.randn(1, 130),)], tmp_path,
                     dynamic_axes={"in_0": {0: "batch", 1: "samples"}})


def test_stft_below_opset_17_names_the_opset(tmp_path):
    with pytest.raises(pt2onnx.ExportError, match="17"):
        pt2onnx.export(Spectrogram(True, "hann"), (torch.randn(1, 400),), tmp_path / "m.onnx", opset_version=16)


# ---------------------------------------------------------------- istft


class Denoiser(torch.nn.Module):
    """stft -> a magnitude mask -> istft back to the signal's length, as speech enhancement models do."""

    def __init__(self):
        super().__init__()
        self.gain = torch.nn.Parameter(torch.linspace(0.5, 1.5, 33).view(33, 1, 1))

    def forward(self, x):
        window = torch.hann_window(64)
        spec = torch.stft(x, n_fft=64, hop_length=16, window=window, return_complex=False)  # (B, 33, T, 2)
        magnitude = spec.pow(2).sum(-1, keepdim=True).sqrt()
        masked = spec * torch.sigmoid(magnitude - 1.0) * self.gain
        # torch 2.x's istft takes complex spectra only: the real view goes back through view_as_complex
        return torch.istft(torch.view_as_complex(masked), n_fft=64, hop_length=16, window=window, length=x.shape[-1])


def test_stft_mask_istft_matches_torch_on_other_lengths(tmp_path):
    torch.manual_seed(7)
    export_and_check(Denoiser(), (torch.randn(2, 400),), [(torch.randn(3, 1000),), (torch.randn(1, 130),)], tmp_path,
                     dynamic_axes={"in_0": {0: "batch", 1: "samples"}})


class Resynthesis(torch.nn.Module):
    def __init__(self, center: bool):
        super().__init__()
        self.center = center

    def forward(self, spec):  # spec: the real view (..., 17, frames, 2)
        return torch.istft(torch.view_as_complex(spec), n_fft=32, hop_length=12, window=torch.hamming_window(32),
                           center=self.center)


@pytest.mark.parametrize("opset", [9, 11, 17])
@pytest.mark.parametrize("center", [False, True])
def test_istft_matches_torch_on_other_frame_counts(opset, center, tmp_path):
    """istft needs no STFT op: every opset; hop 12 does not divide n_fft 32."""
    torch.manual_seed(8)
    export_and_check(Resynthesis(center), (torch.randn(2, 17, 9, 2),), [(torch.randn(4, 17, 23, 2),), (torch.randn(1, 17, 3, 2),)],
                     tmp_path, opset=opset, dynamic_axes={"in_0": {0: "batch", 2: "frames"}})


class ComplexEnhancer(torch.nn.Module):
    """The complex form (return_complex=True, as PyTorch asks for): a magnitude gain, a phase shift
    through polar, a complex product and conjugate, back through istft; exported as real views."""

    def forward(self, x):
        window = torch.hann_window(64)
        spec = torch.stft(x, 64, 16, window=window, return_complex=True)
        magnitude = spec.abs()
        shifted = spec * torch.sigmoid(magnitude - 1.0) * torch.polar(torch.ones_like(magnitude), 0.1 * magnitude)
        mixed = shifted + torch.conj(spec) * 0.01
        return torch.istft(mixed, 64, 16, window=window, length=x.shape[-1]), mixed.real, torch.view_as_real(mixed * mixed)


@pytest.mark.parametrize("script", [False, True])
def test_complex_spectra_export_as_real_views(script, tmp_path):
    torch.manual_seed(10)
    export_and_check(ComplexEnhancer(), (torch.randn(2, 400),), [(torch.randn(3, 1000),), (torch.randn(1, 130),)],
                     tmp_path, script=script, dynamic_axes={"in_0": {0: "batch", 1: "samples"}})


def test_complex_ops_without_a_real_view_form_name_the_node(tmp_path):
    class Exponential(torch.nn.Module):
        def forward(self, x):
            return torch.view_as_real(torch.stft(x, 32, 8, window=torch.hann_window(32), return_complex=True).exp())

    class ComplexOutput(torch.nn.Module):
        def forward(self, x):
            return torch.stft(x, 32, 8, window=torch.hann_window(32), return_complex=True)

    for model, message in ((Exponential(), "aten::exp"), (ComplexOutput(), "return torch.view_as_real")):
        with pytest.raises(pt2onnx.ExportError, match=message):
            pt2onnx.export(model, (torch.randn(1, 200),), tmp_path / "m.onnx", opset_version=17)
        assert not (tmp_path / "m.onnx").exists()


class ScriptedResynthesis(torch.nn.Module):
    def forward(self, spec, n: int):
        y = torch.istft(torch.view_as_complex(spec), n_fft=32, hop_length=8, window=torch.hann_window(32), length=n)
        if n > 100:  # an If on the length, taken one way by the example and the other by a run
            y = y * 2
        return y


def test_scripted_istft_with_a_length_argument(tmp_path):
    torch.manual_seed(9)
    model = torch.jit.script(ScriptedResynthesis())
    path = tmp_path / "m.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(model, (torch.randn(2, 17, 9, 2), 60), path, opset_version=17, input_names=["s", "n"],
                       dynamic_axes={"s": {0: "b", 2: "t"}})
    session = pt2onnx.InferenceSession(str(path))
    for spec, n in ((torch.randn(3, 17, 20, 2), 150), (torch.randn(1, 17, 5, 2), 30)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = model(spec, n).numpy()
        feeds = {"s": spec.numpy(), "n": np.array(n)}
        for runtime, (got,) in (("ort", list(ort.run(path, feeds).values())), ("builtin", session.run(None, feeds))):
            assert got.shape == expected.shape and ort.max_rel_error(expected, got) < TOLERANCE, runtime


# ---------------------------------------------------------------- embedding_bag, scatter_reduce


class BagMean(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.bag = torch.nn.EmbeddingBag(10, 4, mode="mean")

    def forward(self, indices, offsets):
        return self.bag(indices, offsets)


@pytest.mark.parametrize("opset", [13, 17])
def test_embedding_bag_mean_with_dynamic_indices_and_bags(tmp_path, opset):
    # the number of indices and of bags are both dynamic; an empty bag gives 0 as in PyTorch
    example = (torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4]))
    runs = [(torch.tensor([3, 3, 0, 7, 1]), torch.tensor([0, 1, 1, 3])),
            (torch.tensor([6]), torch.tensor([0])),
            (torch.randint(0, 10, (40,)), torch.tensor([0, 5, 17, 30, 39, 40]))]
    export_and_check(BagMean(), example, runs, tmp_path, opset=opset,
                     dynamic_axes={"in_0": {0: "indices"}, "in_1": {0: "bags"}})


class ScatterReduceAmax(torch.nn.Module):
    def forward(self, x, index, src):
        return x.scatter_reduce(1, index, src, "amax", include_self=False)


def test_scatter_reduce_with_dynamic_sizes(tmp_path):
    example = (torch.randn(3, 5), torch.tensor([[0, 4, 4], [1, 1, 2]]), torch.randn(2, 3))
    runs = [(torch.randn(4, 6), torch.tensor([[5, 0, 5, 5], [1, 2, 2, 0]]), torch.randn(3, 4)),
            (torch.randn(2, 2), torch.tensor([[1]]), torch.randn(1, 1))]
    export_and_check(ScatterReduceAmax(), example, runs, tmp_path, opset=13,
                     dynamic_axes={"in_0": {0: "n", 1: "m"}, "in_1": {0: "a", 1: "b"}, "in_2": {0: "c", 1: "d"}})
