"""torch.unique and torch.unique_consecutive through pt2onnx.export, traced and scripted, with a dynamic
axis: outputs whose lengths the data decides, used downstream, run in ONNX Runtime and the builtin
runtime against PyTorch on inputs of other lengths than the example's (ties, NaN, empty)."""
import warnings

import onnx
import pytest
import torch

import pt2onnx

from tests.e2e.roundtrip_checks import check_runs


class Unique(torch.nn.Module):
    def __init__(self, sorted: bool = True, dim: int | None = None):
        super().__init__()
        self.sorted, self.dim = sorted, dim

    def forward(self, x):
        values, inverse, counts = torch.unique(x, sorted=self.sorted, return_inverse=True, return_counts=True,
                                               dim=self.dim)
        # Downstream of the data-dependent lengths: each element's value and count through the inverse.
        return values, inverse, counts, values * 2 + 1, counts[inverse].float() / counts.sum()


class UniqueConsecutive(torch.nn.Module):
    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        values, inverse, counts = torch.unique_consecutive(x, return_inverse=True, return_counts=True, dim=self.dim)
        return values, inverse, counts, counts.cumsum(0)


def export_and_check(model, example, runs, tmp_path, opset, dynamic_axes, script=False):
    path = tmp_path / "model.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = torch.jit.script(model) if script else model
        pt2onnx.export(exported, (example,), path, opset_version=opset, input_names=["x"],
                       dynamic_axes={"x": dynamic_axes})
    onnx.checker.check_model(str(path), full_check=True)
    check_runs(model, path, ["x"], [(r,) for r in runs])
    return onnx.load(str(path))


def ties(*shape, distinct=5, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, distinct, shape, generator=generator).float() / 2


NAN = float("nan")


@pytest.mark.parametrize("opset", [11, 13, 17])
@pytest.mark.parametrize("sorted", [True, False])
def test_unique_with_inverse_and_counts_on_other_lengths(opset, sorted, tmp_path):
    model = export_and_check(
        Unique(sorted), ties(8), [ties(20, seed=1), ties(1), torch.zeros(0), torch.tensor([1.0, NAN, 0.5, NAN, 1.0]),
                                  ties(3, distinct=1)],
        tmp_path, opset, {0: "n"})
    # Lengths the data decides are unknown in the model, never the example's.
    values, inverse, counts = model.graph.output[:3]
    assert values.type.tensor_type.shape.dim[0].dim_value == 0
    assert inverse.type.tensor_type.shape.dim[0].dim_param == "n"
    assert counts.type.tensor_type.shape.dim[0].dim_value == 0


def test_unique_of_integers_over_two_dynamic_axes(tmp_path):
    example = torch.randint(0, 4, (3, 5))
    export_and_check(Unique(), example, [torch.randint(-2, 9, (6, 7)), torch.randint(0, 2, (1, 1)),
                                         torch.zeros(0, 4, dtype=torch.long)],
                     tmp_path, 17, {0: "rows", 1: "columns"})


@pytest.mark.parametrize("dim", [0, -1])
def test_unique_along_a_dim_on_other_lengths(dim, tmp_path):
    export_and_check(Unique(dim=dim), ties(6, 2, distinct=2),
                     [ties(11, 2, distinct=2, seed=2), ties(1, 2), torch.zeros(0, 2)] if dim == 0
                     else [ties(6, 9, distinct=2, seed=3), torch.zeros(6, 0)],
                     tmp_path, 13, {0: "n"} if dim == 0 else {1: "n"})


@pytest.mark.parametrize("dim", [None, 1])
def test_unique_consecutive_on_other_lengths(dim, tmp_path):
    runs = [ties(3, 17, distinct=2, seed=4), ties(3, 1), torch.zeros(3, 0)]
    if dim is None:
        runs.append(torch.tensor([[1.0, NAN, NAN, 2.0, 2.0]]).expand(3, 5).contiguous())
    export_and_check(UniqueConsecutive(dim), ties(3, 6, distinct=2), runs, tmp_path, 11, {1: "n"})


def test_scripted_unique_and_unique_consecutive(tmp_path):
    export_and_check(Unique(), ties(8), [ties(15, seed=5), torch.zeros(0)], tmp_path, 17, {0: "n"}, script=True)
    export_and_check(UniqueConsecutive(), ties(8, distinct=2), [ties(15, distinct=2, seed=6)], tmp_path, 17,
                     {0: "n"}, script=True)


def test_unique_below_opset_11_names_the_opset(tmp_path):
    with pytest.raises(pt2onnx.ExportError, match=r"aten::_unique2.*supported from opset 11"):
        pt2onnx.export(Unique(), (ties(4),), tmp_path / "m.onnx", opset_version=10)
    assert not (tmp_path / "m.onnx").exists()
