"""Export targets: a path, or a binary file object the model is streamed into (each byte written
once: small pieces gathered into chunks, initializer bytes handed to write() directly), with the same
bytes; external data, which needs a path; failing writers. And the type_inference option, and what
a traced export does not redo (PyTorch's argument check of each node)."""
import io
import os
import subprocess
import sys

import onnx
import onnx.numpy_helper
import pytest
import torch

import pt2onnx
from samples import models

MIB = 1 << 20


class RecordingWriter:
    """A binary file object that keeps what is written and the size of every write() call."""

    def __init__(self, keep_views=False):
        self.data = bytearray()
        self.sizes = []
        self.views = [] if keep_views else None

    def write(self, b):
        self.data += b
        self.sizes.append(len(b))
        if self.views is not None:
            self.views.append(b)
        return len(b)


class FailingWriter:
    def __init__(self, after_bytes):
        self.after = after_bytes
        self.written = 0

    def write(self, b):
        if self.written + len(b) > self.after:
            raise OSError(28, "No space left on device")
        self.written += len(b)
        return len(b)


def _conv_model():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                            torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 300), torch.nn.Linear(300, 5))
    return m.eval(), (torch.randn(2, 3, 8, 8),)


def _as(kind, model, args, tmp_path):
    if kind == "module":
        return model
    traced = torch.jit.trace(model, args, check_trace=False)
    if kind == "traced":
        return traced
    path = str(tmp_path / "archive.pt")
    torch.jit.save(traced, path)
    return torch.jit.load(path)


@pytest.mark.parametrize("kind", ["module", "traced", "archive"])
@pytest.mark.parametrize("name", ["conv", "transformer_encoder"])
def test_file_objects_get_the_bytes_of_a_path_export(tmp_path, kind, name):
    model, args = _conv_model() if name == "conv" else models.BUILDERS[name]()
    model = _as(kind, model, args, tmp_path)
    options = {"input_names": ["x"], "dynamic_axes": {"x": {0: "batch"}}}
    path = tmp_path / "model.onnx"
    summary = pt2onnx.export(model, args, str(path), **options)
    expected = path.read_bytes()

    buffer = io.BytesIO()
    in_memory = pt2onnx.export(model, args, buffer, **options)
    assert buffer.getvalue() == expected
    assert in_memory["model_bytes"] == summary["model_bytes"] == len(expected)

    with open(tmp_path / "via_file.onnx", "wb") as f:
        pt2onnx.export(model, args, f, **options)
    assert (tmp_path / "via_file.onnx").read_bytes() == expected
    onnx.checker.check_model(onnx.load_from_string(expected))


def test_scripted_module_to_a_file_object(tmp_path):
    model, args = _conv_model()
    scripted = torch.jit.script(model)
    pt2onnx.export(scripted, args, str(tmp_path / "m.onnx"))
    buffer = io.BytesIO()
    pt2onnx.export(scripted, args, buffer)
    assert buffer.getvalue() == (tmp_path / "m.onnx").read_bytes()


def test_a_small_model_arrives_in_a_few_chunked_writes():
    model, args = models.transformer_encoder()  # 24 initializers of 0.5 KiB to 128 KiB
    writer = RecordingWriter()
    summary = pt2onnx.export(model, args, writer)
    assert sum(writer.sizes) == len(writer.data) == summary["model_bytes"]
    onnx.checker.check_model(onnx.load_from_string(bytes(writer.data)))
    largest = max(t.ByteSize() for t in onnx.load_from_string(bytes(writer.data)).graph.initializer)
    # Bytes above the 1 MiB chunk would be handed over whole; these all fit one chunk, so the model
    # arrives in a few writes, never byte by byte.
    assert largest < MIB
    assert len(writer.sizes) <= 2, writer.sizes


def test_a_large_initializer_is_one_write_of_its_own_bytes():
    torch.manual_seed(0)
    model = torch.nn.Linear(1024, 600).eval()  # a 2.4 MB weight
    writer = RecordingWriter()
    pt2onnx.export(model, (torch.randn(1, 1024),), writer)
    assert 1024 * 600 * 4 in writer.sizes, writer.sizes
    assert len(writer.sizes) <= 6, writer.sizes
    proto = onnx.load_from_string(bytes(writer.data))
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    assert any((w == model.weight.detach().numpy()).all() for w in weights.values() if w.shape == (600, 1024))


def test_a_writer_that_keeps_the_views_cannot_read_freed_memory():
    model, args = _conv_model()
    writer = RecordingWriter(keep_views=True)
    pt2onnx.export(model, args, writer)
    assert writer.views
    for view in writer.views:
        with pytest.raises(ValueError, match="released"):
            bytes(view)


def test_a_failing_writer_is_a_clear_error():
    model, args = _conv_model()
    with pytest.raises(pt2onnx.ExportError, match=r"writing the model to the file object failed after \d+ bytes: "
                                                  r".*No space left on device"):
        pt2onnx.export(model, args, FailingWriter(after_bytes=100))


def test_an_export_error_writes_nothing_to_the_file_object():
    class Unsupported(torch.nn.Module):
        def forward(self, x):
            return torch.special.erfcx(x)
    writer = RecordingWriter()
    with pytest.raises(pt2onnx.ExportError, match="aten::special_erfcx"):
        pt2onnx.export(Unsupported(), (torch.randn(3),), writer)
    assert writer.sizes == []


def test_external_data_needs_a_path(tmp_path):
    model, args = _conv_model()
    buffer = io.BytesIO()
    with pytest.raises(pt2onnx.ExportError, match="export to a file path instead of a file object"):
        pt2onnx.export(model, args, buffer, external_data_threshold=1000)
    assert buffer.getvalue() == b""

    path = tmp_path / "model.onnx"
    summary = pt2onnx.export(model, args, str(path), external_data_threshold=1000)
    assert summary["external_data_path"] == str(path) + ".data"
    assert os.path.getsize(str(path) + ".data") == summary["external_data_bytes"] > 1000
    proto = onnx.load(str(path))  # reads the side file
    onnx.checker.check_model(proto)


def test_type_inference_is_validated():
    model, args = _conv_model()
    with pytest.raises(pt2onnx.ExportError, match='type_inference must be "static" or "run"'):
        pt2onnx.export(model, args, io.BytesIO(), type_inference="guess")


def test_a_target_that_is_neither_a_path_nor_writable_is_a_type_error():
    model, args = _conv_model()
    with pytest.raises(TypeError, match="writable binary file object"):
        pt2onnx.export(model, args, 42)


def test_a_traced_export_does_not_load_torchs_python_meta_kernels():
    """PyTorch ran every node of a trace on the example already, so its kernels are not asked again
    whether they accept those arguments: the first export in a process does not load torch's Python
    meta kernels (torch._dynamo and sympy: ~1 s and 150 MiB). A scripted module still gets the check."""
    code = ("import io, sys, torch, pt2onnx\n"
            "m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()\n"
            "pt2onnx.export(m, (torch.randn(2, 8),), io.BytesIO())\n"
            "print('traced', 'torch._dynamo' in sys.modules)\n"
            "pt2onnx.export(torch.jit.script(m), (torch.randn(2, 8),), io.BytesIO())\n"
            "print('scripted', 'torch._dynamo' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-4:] == ["traced", "False", "scripted", "True"]
