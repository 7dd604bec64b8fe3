"""pt2onnx.InferenceSession on ONNX Runtime: by default (runtime="auto") a session runs in stock
onnxruntime with pt2onnx's ops when onnxruntime runs the model, else in the builtin runtime; either
can be asked for; errors keep pt2onnx's classes (also onnxruntime's)."""
import numpy as np
import onnx
import onnx.helper as oh
import pytest
import torch

import pt2onnx
from ort_helpers import export
from samples import autograd_functions as af


@pytest.fixture(autouse=True)
def default_runtime(monkeypatch):
    monkeypatch.delenv("PT2ONNX_RUNTIME", raising=False)  # the suite's conftest pins the builtin one


def _model(tmp_path):
    model, args = af.build_mixed()
    path = tmp_path / "m.onnx"
    names = [f"in{k}" for k in range(len(args))]
    export(model, args, path, input_names=names, dynamic_axes={n: {0: "b"} for n in names})
    return model, args, names, path


@pytest.mark.parametrize("runtime", [None, "auto", "onnxruntime", "builtin"])
def test_runtimes_match_torch(runtime, tmp_path):
    model, args, names, path = _model(tmp_path)
    session = pt2onnx.InferenceSession(str(path), runtime=runtime)
    assert session.runtime == ("builtin" if runtime == "builtin" else "onnxruntime")
    for batch in (2, 6):
        inputs = tuple(torch.randn(batch, *a.shape[1:]) for a in args)
        with torch.no_grad():
            want = model(*inputs)
        want = want if isinstance(want, (tuple, list)) else (want,)
        got = session.run(None, {n: t.numpy() for n, t in zip(names, inputs)})
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)
        tensors = session.run_tensors(None, dict(zip(names, inputs)))
        assert all(isinstance(t, torch.Tensor) for t in tensors)
        np.testing.assert_allclose(tensors[0].numpy(), got[0])
    assert [i.name for i in session.get_inputs()] == names
    props = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    assert any(k.startswith("pt2onnx.python_op:") for k in props) and session.get_metadata() == props


def test_environment_chooses(tmp_path, monkeypatch):
    _, _, _, path = _model(tmp_path)
    monkeypatch.setenv("PT2ONNX_RUNTIME", "builtin")
    assert pt2onnx.InferenceSession(str(path)).runtime == "builtin"
    monkeypatch.setenv("PT2ONNX_RUNTIME", "nonsense")
    with pytest.raises(ValueError, match="PT2ONNX_RUNTIME='nonsense'"):
        pt2onnx.InferenceSession(str(path))
    with pytest.raises(ValueError, match="runtime='fast'"):
        pt2onnx.InferenceSession(str(path), runtime="fast")


def _model_onnxruntime_refuses(tmp_path):
    """Erf on doubles: onnxruntime's CPU provider has no such kernel (checked below), pt2onnx's runtime has."""
    x = oh.make_tensor_value_info("x", onnx.TensorProto.DOUBLE, [3])
    y = oh.make_tensor_value_info("y", onnx.TensorProto.DOUBLE, [3])
    model = oh.make_model(oh.make_graph([oh.make_node("Erf", ["x"], ["y"])], "g", [x], [y]),
                          opset_imports=[oh.make_opsetid("", 17)], ir_version=8)
    path = tmp_path / "erf64.onnx"
    onnx.save(model, str(path))
    return path


def test_falls_back_to_builtin(tmp_path):
    import onnxruntime
    path = _model_onnxruntime_refuses(tmp_path)
    with pytest.raises(Exception, match="Erf"):
        onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    session = pt2onnx.InferenceSession(str(path))
    assert session.runtime == "builtin" and "Erf" in session.fallback_reason
    x = np.array([-1.5, 0.25, 2.0])
    np.testing.assert_allclose(session.run(None, {"x": x})[0], torch.erf(torch.from_numpy(x)).numpy(), rtol=1e-12)
    with pytest.raises(Exception, match="Erf"):
        pt2onnx.InferenceSession(str(path), runtime="onnxruntime")


def test_errors_keep_pt2onnx_classes(tmp_path):
    import onnxruntime
    model, args = af.build_two_outputs()
    path = tmp_path / "two.onnx"
    export(model, args, path, input_names=["a", "b"])
    session = pt2onnx.InferenceSession(str(path))
    assert session.runtime == "onnxruntime"
    with pytest.raises(pt2onnx.MissingInput, match="b"):
        session.run(None, {"a": args[0].numpy()})
    with pytest.raises(pt2onnx.InvalidArgument) as info:
        session.run(None, {"a": args[0].numpy().astype(np.float64), "b": args[1].numpy()})
    assert isinstance(info.value, onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument)
    np.testing.assert_allclose(session.run(None, {"a": args[0].numpy(), "b": args[1].numpy()})[0],
                               (args[0] * args[1]).numpy(), rtol=1e-6)


def _relu_model():
    x = oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n", 3])
    y = oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["n", 3])
    model = oh.make_model(oh.make_graph([oh.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                          opset_imports=[oh.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


X = np.ones((2, 3), np.float32)
MISTAKES = {  # the run, pt2onnx's class, the builtin runtime's words
    "missing input": (lambda s: s.run(None, {}), "MissingInput", "missing input 'x'"),
    "unknown input name": (lambda s: s.run(None, {"x": X, "z": X}), "InvalidArgument", "the model has no input named 'z'"),
    "wrong dtype": (lambda s: s.run(None, {"x": X.astype(np.float64)}), "InvalidArgument",
                    "input 'x' is a tensor(double), the model expects tensor(float)"),
    "wrong rank": (lambda s: s.run(None, {"x": np.ones((2, 3, 1), np.float32)}), "InvalidArgument",
                   "input 'x' has shape [2, 3, 1], the model expects nx3"),
    "wrong dimension": (lambda s: s.run(None, {"x": np.ones((2, 4), np.float32)}), "InvalidArgument",
                        "input 'x' has shape [2, 4], the model expects nx3"),
    "a list fed to a tensor input": (lambda s: s.run(None, {"x": [X]}), "InvalidArgument",
                                     "input 'x' is a seq(tensor(float)), the model expects tensor(float)"),
    "unknown output name": (lambda s: s.run(["nope"], {"x": X}), "InvalidArgument", "the model has no output named 'nope'"),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_argument_mistakes_in_the_builtin_runtimes_words(mistake):
    """On onnxruntime a refused argument keeps the builtin runtime's message (onnxruntime's after it) and
    the class both runtimes raise; the same session runs right after."""
    import onnxruntime
    run, name, words = MISTAKES[mistake]
    session = pt2onnx.InferenceSession(_relu_model(), runtime="onnxruntime")
    with pytest.raises(getattr(pt2onnx, name)) as info:
        run(session)
    assert str(info.value).startswith(words + " (onnxruntime: "), str(info.value)
    stock = onnxruntime.InferenceSession(_relu_model(), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception) as theirs:
        run(stock)
    assert isinstance(info.value, type(theirs.value))
    np.testing.assert_array_equal(session.run(None, {"x": -X})[0], np.zeros_like(X))


def test_models_without_python_ops_stay_on_onnxruntime(tmp_path):
    """A CNN without PythonOps (no com.microsoft opset import): onnxruntime's optimizer fuses Conv+Relu
    into com.microsoft::FusedConv, which must still load; the session runs it on onnxruntime."""
    import onnxruntime
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Conv2d(4, 2, 3),
                                torch.nn.ReLU()).eval()
    path = tmp_path / "cnn.onnx"
    export(model, (torch.randn(1, 3, 8, 8),), path, input_names=["x"], dynamic_axes={"x": {0: "b"}})
    assert all(o.domain in ("", "ai.onnx") for o in onnx.load(str(path)).opset_import)
    x = torch.randn(3, 3, 8, 8)
    with torch.no_grad():
        want = model(x).numpy()
    so = pt2onnx.register_onnxruntime_ops(onnxruntime.SessionOptions(), str(path))
    got = onnxruntime.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, {"x": x.numpy()})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    session = pt2onnx.InferenceSession(str(path))
    assert session.runtime == "onnxruntime", session.fallback_reason
    np.testing.assert_allclose(session.run(None, {"x": x.numpy()})[0], want, rtol=1e-5, atol=1e-5)
