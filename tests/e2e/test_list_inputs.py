"""A List[int] / List[float] argument is a 1-D input, its length fixed by the example unless
dynamic_axes names axis 0 of it: then other lengths run, checked against PyTorch in both runtimes.
Where the list's length sets an output's rank (a reshape to it), a dynamic length is a located error
(an ONNX model declares each output's rank), and the rank error of dynamic_axes names rank 1."""
import warnings
from typing import List

import numpy as np
import pytest
import torch

import pt2onnx
from samples import ort


class Weighted(torch.nn.Module):
    def forward(self, x, weights: List[float], dims: List[int]):
        total = torch.tensor(weights).sum()
        return x * total + torch.tensor(dims).max()


class Reshaped(torch.nn.Module):
    def forward(self, x, sizes: List[int]):
        return x.reshape(sizes) * 2


def export(model, args, path, dynamic_axes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(torch.jit.script(model), args, str(path), input_names=["x", "weights", "dims"][:len(args)],
                       dynamic_axes=dynamic_axes)


def test_list_inputs_with_a_dynamic_length_run_other_lengths(tmp_path):
    path = tmp_path / "m.onnx"
    export(Weighted(), (torch.randn(2, 3, 4), [0.5, 2.0], [1]), path, {"weights": {0: "n"}, "dims": {0: "k"}})
    session = pt2onnx.InferenceSession(str(path))
    for weights, dims in [([0.5, 2.0], [1]), ([1.0, 2.0, 3.0, 4.0], [0, 2]), ([7.0], [0, 1, 2])]:
        x = torch.randn(2, 3, 4)
        expected = Weighted()(x, weights, dims).numpy()
        feeds = {"x": x.numpy(), "weights": np.array(weights, dtype=np.float64), "dims": np.array(dims)}
        for got in (session.run(None, feeds)[0], list(ort.run(path, feeds).values())[0]):
            np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_a_list_that_sets_an_output_rank_cannot_have_a_dynamic_length(tmp_path):
    with pytest.raises(pt2onnx.ExportError, match="output 'output_0' has a rank known only at run time"):
        export(Reshaped(), (torch.randn(2, 6), [3, 4]), tmp_path / "m.onnx", {"weights": {0: "n"}})
    assert not (tmp_path / "m.onnx").exists()


def test_dynamic_axes_on_a_list_names_its_rank(tmp_path):
    with pytest.raises(pt2onnx.ExportError, match="input 'weights' has rank 1"):
        export(Reshaped(), (torch.randn(2, 6), [3, 4]), tmp_path / "m.onnx", {"weights": {1: "n"}})


def test_a_float_list_input_keeps_its_fractions(tmp_path):
    """torch.tensor(weights) of a List[float] input was cast to int64 (0.5 -> 0): silently wrong."""
    path = tmp_path / "m.onnx"
    export(Weighted(), (torch.randn(2, 3), [0.5, 2.25], [1]), path, {})
    x = torch.randn(2, 3)
    feeds = {"x": x.numpy(), "weights": np.array([0.25, -1.5]), "dims": np.array([3])}
    expected = Weighted()(x, [0.25, -1.5], [3]).numpy()
    for got in (pt2onnx.InferenceSession(str(path)).run(None, feeds)[0], list(ort.run(path, feeds).values())[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-5)
