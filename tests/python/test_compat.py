"""python/pt2onnx/_compat.py: what differs between torch releases on the Python side."""
import warnings

import torch

from pt2onnx import _compat


class _Doubler(torch.nn.Module):
    def forward(self, x):
        return x * 2


def test_loading_an_archive_for_the_user_shows_no_torchscript_deprecation(tmp_path):
    # torch 2.10 warns with DeprecationWarning, 2.11 on with FutureWarning: neither reaches the user
    # when pt2onnx (verify, inspect) is the one loading the archive.
    path = tmp_path / "doubler.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.script(_Doubler()).save(str(path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = _compat.load_archive(str(path))
    assert not [w for w in caught if "torch.jit" in str(w.message)], [str(w.message) for w in caught]
    x = torch.randn(3)
    torch.testing.assert_close(module(x), x * 2)


def test_other_warnings_raised_while_loading_still_reach_the_user():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _compat.torchscript_deprecation_silenced():
            warnings.warn("`torch.jit.load` found an old archive format", UserWarning)
            warnings.warn("`torch.jit.load` is deprecated. Please switch to `torch.export`.", DeprecationWarning)
    assert [str(w.message) for w in caught] == ["`torch.jit.load` found an old archive format"]
