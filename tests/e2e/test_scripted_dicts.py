"""Scripted models that assign dict items (`d[key] = value`) in an if-branch whose condition depends on
the data, or in a loop, exported and run in ONNX Runtime against PyTorch on inputs that take each
branch and other trip counts; a returned dict whose keys depend on the branch is an error naming it.
torchvision's segmentation models, the straight-line case, are tests/e2e/test_scripted_segmentation.py."""
from typing import Dict

import numpy as np
import pytest
import torch

import pt2onnx
from samples import ort


class BranchKeepsTheKeys(torch.nn.Module):
    def forward(self, x):
        d: Dict[str, torch.Tensor] = {"a": x}
        if x.sum() > 0:
            d["a"] = x.relu()
        d["b"] = d["a"] * 2
        return d


class LoopKeepsTheKeys(torch.nn.Module):
    def forward(self, x, n: int):
        d: Dict[str, torch.Tensor] = {"sum": torch.zeros_like(x), "last": x}
        for i in range(n):
            d["sum"] = d["sum"] + x * i
            d["last"] = x * i
        return d["sum"], d["last"]


class BranchAddsAKeyReadOnlyByACommonKey(torch.nn.Module):
    def forward(self, x):
        d: Dict[str, torch.Tensor] = {"a": x}
        if x.sum() > 0:
            d["b"] = x.relu()
        return d["a"] + 1


class BranchAddsAKeyAndReturnsTheDict(torch.nn.Module):
    def forward(self, x):
        d: Dict[str, torch.Tensor] = {"a": x}
        if x.sum() > 0:
            d["b"] = x.relu()
        return d


def as_list(result):
    if isinstance(result, dict):
        return list(result.values())
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize("model, trip_counts, names", [
    (BranchKeepsTheKeys, [None], ["a", "b"]),
    (LoopKeepsTheKeys, [0, 1, 4], ["output_0", "output_1"]),
    (BranchAddsAKeyReadOnlyByACommonKey, [None], ["output_0"]),
])
def test_dict_item_assignment_in_control_flow_matches_torch(model, trip_counts, names, tmp_path):
    scripted = torch.jit.script(model())
    takes_n = trip_counts != [None]
    example = (torch.randn(3, 4), 2) if takes_n else (torch.randn(3, 4),)
    path = tmp_path / "m.onnx"
    pt2onnx.export(scripted, example, path, input_names=["x", "n"] if takes_n else ["x"],
                   dynamic_axes={"x": {0: "rows"}})
    generator = torch.Generator().manual_seed(0)
    for sign in (1.0, -1.0):  # both branches
        for n in trip_counts:
            x = (torch.randn(5, 4, generator=generator).abs() + 0.1) * sign
            args = (x, n) if takes_n else (x,)
            expected = as_list(scripted(*args))
            feeds = {"x": x.numpy(), **({"n": np.array(n, dtype=np.int64)} if takes_n else {})}
            actual = ort.run(path, feeds)
            assert list(actual) == names
            for e, a in zip(expected, actual.values()):
                assert ort.max_rel_error(e.numpy(), a) <= 1e-6, (model.__name__, sign, n)


def test_a_returned_dict_whose_keys_depend_on_a_branch_is_an_error_naming_it(tmp_path):
    with pytest.raises(pt2onnx.ExportError) as error:
        pt2onnx.export(torch.jit.script(BranchAddsAKeyAndReturnsTheDict()), (torch.randn(3, 4),),
                       tmp_path / "m.onnx")
    message = str(error.value)
    assert "a graph output is a Dict[str, Tensor], made by node prim::If" in message, message
    assert "test_scripted_dicts.py:" in message and "the same on every path" in message, message
    assert not (tmp_path / "m.onnx").exists()
