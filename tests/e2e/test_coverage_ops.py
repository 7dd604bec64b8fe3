"""Ops seen on real models that now convert: nn.LSTMCell / GRUCell / RNNCell traced (linear +
aten::unsafe_chunk) and scripted (aten::lstm_cell ...), shape queries on complex tensors, atan2 and
angle, and einsum below opset 12 — each exported with dynamic axes and run in ONNX Runtime and the
builtin runtime against PyTorch on other batch sizes and values than the example's."""
import io
import warnings

import pytest
import torch

import pt2onnx
from tests.e2e.roundtrip_checks import check_runs


def export(model, args, names, opset=17, dynamic=None, script=False):
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(torch.jit.script(model) if script else model, args, f, opset_version=opset, input_names=names,
                       dynamic_axes=dynamic or {})
    return f.getvalue()


class Cells(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTMCell(5, 6)
        self.gru = torch.nn.GRUCell(5, 6)
        self.rnn = torch.nn.RNNCell(5, 6, nonlinearity="relu")

    def forward(self, x, h, c):
        h1, c1 = self.lstm(x, (h, c))
        return h1, c1, self.gru(x, h1), self.rnn(x, h)


@pytest.mark.parametrize("script", [False, True])
def test_recurrent_cells_on_other_batch_sizes(script):
    torch.manual_seed(0)
    model = Cells().eval()
    names = ["x", "h", "c"]
    batch = {n: {0: "batch"} for n in names}
    onnx_bytes = export(model, (torch.randn(3, 5), torch.randn(3, 6), torch.randn(3, 6)), names, dynamic=batch,
                        script=script)
    check_runs(model, onnx_bytes, names, [(torch.randn(b, 5), torch.randn(b, 6), torch.randn(b, 6)) for b in (1, 4)])


class Angles(torch.nn.Module):
    def forward(self, y, x):
        return torch.atan2(y, x), torch.angle(x), torch.angle(torch.view_as_complex(torch.stack([x, y], -1)))


@pytest.mark.parametrize("script", [False, True])
def test_atan2_and_angle_including_axes_and_nan(script):
    names = ["y", "x"]
    onnx_bytes = export(Angles(), (torch.randn(6), torch.randn(6)), names, dynamic={n: {0: "n"} for n in names},
                        script=script)
    y = torch.tensor([1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 2.0, -2.0, 0.0, float("nan")])
    x = torch.tensor([1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 0.0, 0.0, 0.0, -1.0])
    check_runs(Angles(), onnx_bytes, names, [(y, x), (torch.randn(3), torch.randn(3))])


class ComplexShapes(torch.nn.Module):
    def forward(self, x):
        z = torch.view_as_complex(x)
        scale = z.size(0) * 10 + z.size(-1) + z.dim() * 100 + z.numel() * 1000
        return torch.view_as_real(z * scale), torch.zeros(z.shape[0], z.shape[-1])


@pytest.mark.parametrize("script", [False, True])
def test_shape_queries_on_complex_tensors(script):
    onnx_bytes = export(ComplexShapes(), (torch.randn(3, 4, 2),), ["x"], dynamic={"x": {0: "a", 1: "b"}},
                        script=script)
    check_runs(ComplexShapes(), onnx_bytes, ["x"], [(torch.randn(2, 5, 2),), (torch.randn(1, 1, 2),)])


class Einsums(torch.nn.Module):
    def forward(self, a, b, v):
        return (torch.einsum("bij,bjk->bik", a, b), torch.einsum("bij->bji", a), torch.einsum("bij,bkj->bik", a, a),
                torch.einsum("...ij,...j->...i", a, v), torch.einsum("bij,bjk->b", a, b))


@pytest.mark.parametrize("opset", [9, 11])
@pytest.mark.parametrize("script", [False, True])
def test_einsum_below_opset_12(opset, script):
    names = ["a", "b", "v"]
    onnx_bytes = export(Einsums(), (torch.randn(2, 3, 4), torch.randn(2, 4, 5), torch.randn(2, 4)), names, opset=opset,
                        dynamic={n: {0: "batch"} for n in names}, script=script)
    import onnx
    assert "Einsum" not in {n.op_type for n in onnx.load_from_string(onnx_bytes).graph.node}
    check_runs(Einsums(), onnx_bytes, names, [(torch.randn(b, 3, 4), torch.randn(b, 4, 5), torch.randn(b, 4)) for b in (1, 3)])
