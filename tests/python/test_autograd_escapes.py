"""autograd.Functions whose forward leaves torch (numpy, `.item()`, `.tolist()`, Python control flow
on a tensor): their trace holds the example's values as constants, so they are never inlined. Under
"auto" they are exported as com.microsoft::PythonOp (with a warning saying why) and the model matches
PyTorch on OTHER inputs; under "inline" the export fails naming the Function, its line and the
escape; `report` lists them. A model whose own forward leaves torch so that an input is no longer
read is an export error when its output changes with that input."""
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch

import pt2onnx


class NumpyTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.from_numpy(np.tanh(x.detach().cpu().numpy()))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (1 - y * y)


class ItemScale(torch.autograd.Function):
    """x * max|x| through .item(), no backward of its own."""

    @staticmethod
    def forward(ctx, x):
        return x * float(x.abs().max().item())


class TolistShift(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        first = x[0].tolist()
        return x - torch.tensor(first, dtype=x.dtype)


class BranchOnData(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        if x.sum() > 0:  # Python control flow on a tensor
            return x * 2
        return -x


class Policy(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, obs):
        return self.fc(self.fn.apply(self.fc(obs)))


FUNCTIONS = {"numpy": NumpyTanh, "item": ItemScale, "tolist": TolistShift, "branch": BranchOnData}


def _export(model, path, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pt2onnx.export(model, (torch.randn(2, 4),), str(path), input_names=["obs"], output_names=["act"],
                       dynamic_axes={"obs": {0: "b"}, "act": {0: "b"}}, **kw)
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("kind", list(FUNCTIONS))
def test_auto_exports_a_python_op_that_matches_pytorch_on_other_inputs(kind, tmp_path):
    torch.manual_seed(0)
    fn = FUNCTIONS[kind]
    model = Policy(fn)
    messages = _export(model, tmp_path / "m.onnx")
    assert any(f"{fn.__qualname__} is exported as com.microsoft::PythonOp, not inlined: its forward leaves torch" in m
               for m in messages), messages
    import onnx
    ops = [n.op_type for n in onnx.load(str(tmp_path / "m.onnx")).graph.node]
    assert "PythonOp" in ops
    session = pt2onnx.InferenceSession(str(tmp_path / "m.onnx"))
    for batch in (2, 3):
        for sign in (1.0, -1.0):  # both branches of BranchOnData
            obs = sign * (torch.rand(batch, 4) + 0.5) * 3
            (act,) = session.run(None, {"obs": obs.numpy()})
            expected = model(obs).detach().numpy()
            np.testing.assert_allclose(act, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", list(FUNCTIONS))
def test_inline_is_an_error_naming_the_function_line_and_escape(kind, tmp_path):
    fn = FUNCTIONS[kind]
    with pytest.raises(pt2onnx.ExportError) as e:
        _export(Policy(fn), tmp_path / "m.onnx", autograd_functions="inline")
    message = str(e.value)
    assert fn.__qualname__ in message and "cannot be exported inlined" in message
    assert "leaves torch" in message and "test_autograd_escapes.py:" in message
    assert not (tmp_path / "m.onnx").exists()
    with pytest.raises(pt2onnx.ExportError, match=fn.__qualname__):  # a per-class override too
        _export(Policy(fn), tmp_path / "m.onnx", autograd_function_overrides={fn: "inline"})


def test_a_pure_torch_function_is_still_inlined(tmp_path):
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

    messages = _export(Policy(Square), tmp_path / "m.onnx")
    import onnx
    assert "PythonOp" not in [n.op_type for n in onnx.load(str(tmp_path / "m.onnx")).graph.node]
    assert not any("leaves torch" in m for m in messages)


def test_the_second_export_in_a_process_still_sees_the_escape(tmp_path):
    """Python shows a warning once per location: the check must not depend on that."""
    for k in range(2):
        messages = _export(Policy(ItemScale), tmp_path / f"m{k}.onnx")
        assert any("leaves torch" in m for m in messages), (k, messages)


def test_unconvertible_ops_lists_the_function_and_why():
    found = pt2onnx.unconvertible_ops(Policy(NumpyTanh), (torch.randn(2, 4),))
    entry = [f for f in found if f.get("function", "").endswith("NumpyTanh")]
    assert entry and "NumPy" in entry[0].get("leaves_torch", ""), found


def test_report_cli_lists_the_function(tmp_path, cli):
    (tmp_path / "escaping_policy.py").write_text(textwrap.dedent("""
        import numpy as np
        import torch

        class NumpyTanh(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return torch.from_numpy(np.tanh(x.detach().numpy()))

        class Policy(torch.nn.Module):
            def forward(self, obs):
                return NumpyTanh.apply(obs) * 2

        def build():
            return Policy(), (torch.randn(2, 4),)
    """))
    done = subprocess.run([cli, "report", "--python", "escaping_policy:build"], capture_output=True, text=True,
                          cwd=tmp_path, env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "NumpyTanh" in done.stdout and "leaves torch" in done.stdout, done.stdout


def test_a_model_whose_forward_leaves_torch_is_an_error_not_a_constant(tmp_path):
    class ThroughNumpy(torch.nn.Module):
        def forward(self, obs):
            return torch.from_numpy(np.tanh(obs.numpy())) * 2

    with pytest.raises(pt2onnx.ExportError, match="input 0 .* is not read by the traced graph, but the model's "
                                                  "output changes with it") as e:
        _export(ThroughNumpy(), tmp_path / "m.onnx")
    assert "NumPy" in str(e.value) or "numpy" in str(e.value)
    assert not (tmp_path / "m.onnx").exists()


def test_an_input_the_model_ignores_is_still_only_a_warning(tmp_path):
    class IgnoresMask(torch.nn.Module):
        def forward(self, obs, mask):
            return obs * 2

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pt2onnx.export(IgnoresMask(), (torch.randn(2, 4), torch.ones(2, 4)), str(tmp_path / "m.onnx"))
    assert (tmp_path / "m.onnx").exists()
    assert any("not used" in str(w.message) for w in caught)



def test_the_unread_input_check_leaves_the_model_as_the_trace_left_it(tmp_path):
    """The check runs the eager model twice: BatchNorm's running statistics (train mode) must not
    move more than the trace itself moves them."""
    import copy

    class BatchNormIgnoresMask(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = torch.nn.BatchNorm1d(4)

        def forward(self, obs, mask):
            return self.bn(obs)

    model = BatchNormIgnoresMask().train()
    obs, mask = torch.randn(3, 4), torch.ones(3, 4)
    traced_once = copy.deepcopy(model)
    with torch.no_grad():
        traced_once(obs, mask)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(model, (obs, mask), str(tmp_path / "m.onnx"), training=pt2onnx.TrainingMode.TRAINING)
    for key, value in traced_once.state_dict().items():
        assert torch.equal(model.state_dict()[key], value), key


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
