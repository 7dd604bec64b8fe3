"""pt2onnx.InferenceSession against onnxruntime.InferenceSession's interface: a script written for
onnxruntime runs unchanged except for its import line, and the arguments onnxruntime takes
(sess_options, providers, provider_options, run_options) are accepted or refused clearly."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import pt2onnx

ONNXRUNTIME_SCRIPT = textwrap.dedent("""
    import onnxruntime as ort
    import numpy as np, sys

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    assert "CPUExecutionProvider" in ort.get_available_providers()
    sess = ort.InferenceSession(sys.argv[1], sess_options=so, providers=["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    inp = sess.get_inputs()[0]
    x = np.load(sys.argv[2])
    assert inp.type == "tensor(float)" and len(inp.shape) == x.ndim
    names = [o.name for o in sess.get_outputs()]
    ro = ort.RunOptions()
    ro.log_severity_level = 3
    (y,) = sess.run(names, {inp.name: x}, ro)
    (y2,) = sess.run(None, {inp.name: x})
    meta = sess.get_modelmeta()
    np.save(sys.argv[3], y)
    print(meta.producer_name, meta.graph_name, sorted(meta.custom_metadata_map), np.array_equal(y, y2))
""")


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).eval()
    x = torch.randn(3, 4)
    path = tmp_path_factory.mktemp("session") / "mlp.onnx"
    pt2onnx.export(model, (x,), str(path), input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "n"}})
    return model, x, path


def test_an_onnxruntime_script_runs_with_only_the_import_changed(mlp, tmp_path):
    model, x, path = mlp
    script = tmp_path / "script.py"
    script.write_text(ONNXRUNTIME_SCRIPT.replace("import onnxruntime as ort", "import pt2onnx as ort"))
    np.save(tmp_path / "x.npy", x.numpy())
    done = subprocess.run([sys.executable, str(script), str(path), str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "pt2onnx" and done.stdout.split()[-1] == "True"
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_session_arguments_as_onnxruntime_takes_them(mlp):
    _, x, path = mlp
    sess = pt2onnx.InferenceSession(path, providers=[("CPUExecutionProvider", {"arena_extend_strategy": "x"})])
    assert sess.get_provider_options() == {"CPUExecutionProvider": {"arena_extend_strategy": "x"}}
    assert sess.get_inputs()[0].shape == ["n", 4] and sess.get_outputs()[0].name == "y"
    assert sess.get_overridable_initializers() == []
    meta = sess.get_modelmeta()
    assert meta.producer_name == "pt2onnx" and meta.version == 0 and isinstance(meta.custom_metadata_map, dict)
    assert isinstance(sess.get_session_options(), pt2onnx.SessionOptions)
    with open(path, "rb") as f:
        from_bytes = pt2onnx.InferenceSession(f.read(), pt2onnx.SessionOptions())
    np.testing.assert_array_equal(from_bytes.run(["y"], {"x": x.numpy()})[0], sess.run(None, {"x": x.numpy()})[0])


def test_unavailable_providers_and_bad_arguments_are_clear_errors(mlp):
    _, x, path = mlp
    with pytest.raises(ValueError, match=r"providers \['CUDAExecutionProvider'\] are not available in pt2onnx's "
                                         r"runtime \(available: \['CPUExecutionProvider'\]\)"):
        pt2onnx.InferenceSession(path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    with pytest.raises(TypeError, match="path_or_bytes must be a path or the model's bytes, got NoneType"):
        pt2onnx.InferenceSession(None)
    sess = pt2onnx.InferenceSession(path)
    with pytest.raises(TypeError, match="input_feed must be a dict"):
        sess.run(None, [x.numpy()])


def test_errors_are_onnxruntime_classes_not_export_errors(mlp, tmp_path):
    _, x, path = mlp
    sess = pt2onnx.InferenceSession(path)
    with pytest.raises(pt2onnx.InvalidArgument, match=r"input 'x' is a tensor\(double\), the model expects "
                                                       r"tensor\(float\)") as e:
        sess.run(None, {"x": x.double().numpy()})
    assert not isinstance(e.value, pt2onnx.ExportError)
    with pytest.raises(pt2onnx.InvalidArgument, match="the model has no input named 'z'"):
        sess.run(None, {"x": x.numpy(), "z": x.numpy()})
    with pytest.raises(pt2onnx.NoSuchFile, match="cannot open ONNX model"):
        pt2onnx.InferenceSession(tmp_path / "missing.onnx")
    with pytest.raises(pt2onnx.InvalidGraph, match="not a valid ONNX model"):
        pt2onnx.InferenceSession(b"junk")
    assert issubclass(pt2onnx.NoSuchFile, pt2onnx.Fail) and not issubclass(pt2onnx.Fail, pt2onnx.ExportError)


@pytest.mark.parametrize("threads", [1, 3])
def test_a_sessions_thread_count_holds_during_its_runs_only(mlp, threads):
    """A session with intra_op_num_threads runs with that many ATen threads and leaves the caller's
    count as it was: PyTorch code run beside it (a reference, the user's own model) keeps its setting."""
    model, x, path = mlp
    before = torch.get_num_threads()
    options = pt2onnx.SessionOptions()
    options.intra_op_num_threads = threads
    session = pt2onnx.InferenceSession(str(path), options)
    assert torch.get_num_threads() == before
    (y,) = session.run(None, {"x": x.numpy()})
    assert torch.get_num_threads() == before
    np.testing.assert_allclose(y, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
