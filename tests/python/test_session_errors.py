"""pt2onnx.InferenceSession raises onnxruntime's own exception classes (issue 61): for each mistake,
stock onnxruntime.InferenceSession and ours get the same model and the same mistake, and ours must be
an instance of the class onnxruntime raised (so `except onnxruntime...InvalidArgument` or `except
ValueError` in a script written for onnxruntime catches it) and of pt2onnx's class for it (so
`except pt2onnx.Fail` keeps working). Without onnxruntime, pt2onnx's own classes are raised."""
import json
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import pt2onnx
from pt2onnx import runtime

ort = pytest.importorskip("onnxruntime")
ort_state = pytest.importorskip("onnxruntime.capi.onnxruntime_pybind11_state")

X = np.ones((2, 3), np.float32)


def model_bytes(nodes, inputs, outputs, initializers=(), opsets=(("", 17),)):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    return model.SerializeToString()


def relu_model():
    """Relu over x: float32, shape (n, 3)."""
    return model_bytes([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])])


def reshape_model():
    """Reshape of x to [5]: every feed the model accepts fails inside the node."""
    return model_bytes([helper.make_node("Reshape", ["x", "shape"], ["y"], name="to_five")],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5])],
                       [helper.make_tensor("shape", TensorProto.INT64, [1], [5])])


def unknown_op_model():
    return model_bytes([helper.make_node("NoSuchOp", ["x"], ["y"], name="nope")],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])])


def caught(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 -- the point is which class it is
        return e
    raise AssertionError("no error raised")


def ort_session(model):
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"])


# mistake -> (model, the run with the mistake, pt2onnx's class for it, a fragment of our message)
RUN_MISTAKES = {
    "missing input": (relu_model, lambda s: s.run(None, {}), runtime.MissingInput, "missing input 'x'"),
    "unknown input name only": (relu_model, lambda s: s.run(None, {"z": X}), runtime.MissingInput,
                                "missing input 'x'"),
    "unknown input name": (relu_model, lambda s: s.run(None, {"x": X, "z": X}), runtime.InvalidArgument,
                           "no input named 'z'"),
    "wrong dtype": (relu_model, lambda s: s.run(None, {"x": X.astype(np.float64)}), runtime.InvalidArgument,
                    "input 'x' is a tensor(double), the model expects tensor(float)"),
    "wrong integer dtype": (relu_model, lambda s: s.run(None, {"x": X.astype(np.int64)}), runtime.InvalidArgument,
                            "tensor(int64)"),
    "wrong rank": (relu_model, lambda s: s.run(None, {"x": np.ones((2, 3, 1), np.float32)}),
                   runtime.InvalidArgument, "[2, 3, 1]"),
    "wrong dimension": (relu_model, lambda s: s.run(None, {"x": np.ones((2, 4), np.float32)}),
                        runtime.InvalidArgument, "[2, 4]"),
    "a list fed to a tensor input": (relu_model, lambda s: s.run(None, {"x": [X]}), runtime.InvalidArgument,
                                     "input 'x'"),
    "unknown output name": (relu_model, lambda s: s.run(["nope"], {"x": X}), runtime.InvalidArgument,
                            "no output named 'nope'"),
    "node failing at run time": (reshape_model, lambda s: s.run(None, {"x": X}), runtime.Fail, "to_five"),
}


@pytest.mark.parametrize("mistake", list(RUN_MISTAKES))
def test_run_mistake_raises_onnxruntimes_class(mistake):
    model, run, ours, fragment = RUN_MISTAKES[mistake]
    theirs = caught(lambda: run(ort_session(model())))
    error = caught(lambda: run(pt2onnx.InferenceSession(model())))
    assert isinstance(error, type(theirs)), (f"{mistake}: onnxruntime raises {type(theirs).__module__}."
                                             f"{type(theirs).__name__} ({theirs}), pt2onnx {type(error).__mro__}")
    assert isinstance(error, ours) and fragment in str(error), (type(error).__mro__, str(error))
    assert not isinstance(error, pt2onnx.ExportError)


@pytest.mark.parametrize("mistake", ["file does not exist", "corrupt bytes", "corrupt file", "truncated bytes",
                                     "unknown op", "unrecognized attribute"])
def test_load_mistake_raises_onnxruntimes_class(mistake, tmp_path):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not an onnx model")
    model, ours, fragment = {
        "file does not exist": (str(tmp_path / "missing.onnx"), runtime.NoSuchFile, "cannot open ONNX model"),
        "corrupt bytes": (b"junk", runtime.InvalidProtobuf, "not a valid ONNX model"),
        "corrupt file": (str(junk), runtime.InvalidProtobuf, "not a valid ONNX model"),
        "truncated bytes": (relu_model()[:20], runtime.InvalidProtobuf, "not a valid ONNX model"),
        "unknown op": (unknown_op_model(), runtime.InvalidGraph, "NoSuchOp"),
        "unrecognized attribute": (model_bytes(
            [helper.make_node("Relu", ["x"], ["y"], name="relu", foo=3)],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])]), runtime.InvalidGraph, "foo"),
    }[mistake]
    theirs = caught(lambda: ort_session(model))
    error = caught(lambda: pt2onnx.InferenceSession(model))
    assert isinstance(error, type(theirs)), (f"{mistake}: onnxruntime raises {type(theirs).__module__}."
                                             f"{type(theirs).__name__} ({theirs}), pt2onnx {type(error).__mro__}")
    assert isinstance(error, ours) and fragment in str(error), (type(error).__mro__, str(error))
    assert isinstance(error, pt2onnx.Fail)  # as before: every load error is a pt2onnx.Fail


def test_a_node_without_kernel_is_onnxruntimes_not_implemented():
    """com.microsoft::BiasAdd has a schema in onnxruntime but a CUDA kernel only, and no kernel in
    pt2onnx's runtime: both refuse the same model when the session is built."""
    shape = [2, 3, 4]
    node = helper.make_node("BiasAdd", ["x", "bias", "skip"], ["y"], name="bias_add", domain="com.microsoft")
    model = model_bytes([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
                                 helper.make_tensor_value_info("bias", TensorProto.FLOAT, [4]),
                                 helper.make_tensor_value_info("skip", TensorProto.FLOAT, shape)],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                        opsets=(("", 17), ("com.microsoft", 1)))
    theirs = caught(lambda: ort_session(model))
    error = caught(lambda: pt2onnx.InferenceSession(model))
    assert isinstance(error, type(theirs)), (str(theirs), type(error).__mro__)
    assert isinstance(error, runtime.NotImplemented) and isinstance(error, pt2onnx.InvalidGraph)
    assert "'bias_add' (com.microsoft::BiasAdd) at opset 1 is not supported by pt2onnx's runtime" in str(error)


def test_a_script_written_for_onnxruntime_catches_our_errors(tmp_path):
    """The except clauses of an onnxruntime script, run against pt2onnx's session."""
    sess = pt2onnx.InferenceSession(relu_model())
    with pytest.raises(ort_state.InvalidArgument):
        sess.run(None, {"x": X, "z": X})
    with pytest.raises(ValueError):
        sess.run(None, {})
    with pytest.raises(ort_state.NoSuchFile):
        pt2onnx.InferenceSession(tmp_path / "missing.onnx")
    with pytest.raises(ort_state.Fail):
        pt2onnx.InferenceSession(reshape_model()).run(None, {"x": X})
    with pytest.raises(pt2onnx.Fail):  # and pt2onnx's classes still catch them
        pt2onnx.InferenceSession(reshape_model()).run(None, {"x": X})
    with pytest.raises(pt2onnx.InvalidGraph):
        pt2onnx.InferenceSession(b"junk")
    with pytest.raises(pt2onnx.InvalidArgument):
        sess.run(None, {})


def test_the_classes_raised_keep_their_names_and_pickle():
    sess = pt2onnx.InferenceSession(relu_model())
    error = caught(lambda: sess.run(["nope"], {"x": X}))
    assert type(error).__name__ == "InvalidArgument" and type(error).__module__ == "pt2onnx.runtime"
    assert type(error) is type(caught(lambda: sess.run(["nope"], {"x": X})))  # one class, made once
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error)
    missing = pickle.loads(pickle.dumps(caught(lambda: sess.run(None, {}))))
    assert type(missing) is runtime.MissingInput and isinstance(missing, ValueError)


HIDDEN_ONNXRUNTIME = textwrap.dedent("""
    import json, sys
    sys.modules["onnxruntime"] = None  # as if onnxruntime were not installed
    import numpy as np
    import pt2onnx
    from pt2onnx import runtime
    relu, reshape = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
    x = np.ones((2, 3), np.float32)
    sess = pt2onnx.InferenceSession(relu)
    cases = {
        "missing input": lambda: sess.run(None, {}),
        "unknown input name": lambda: sess.run(None, {"x": x, "z": x}),
        "wrong dtype": lambda: sess.run(None, {"x": x.astype(np.float64)}),
        "wrong rank": lambda: sess.run(None, {"x": np.ones((2, 3, 1), np.float32)}),
        "unknown output name": lambda: sess.run(["nope"], {"x": x}),
        "file does not exist": lambda: pt2onnx.InferenceSession(sys.argv[3]),
        "corrupt bytes": lambda: pt2onnx.InferenceSession(b"junk"),
        "node failing at run time": lambda: pt2onnx.InferenceSession(reshape).run(None, {"x": x}),
    }
    out = {}
    for name, call in cases.items():
        try:
            call()
            out[name] = None
        except Exception as e:
            out[name] = [type(e).__name__, type(e).__module__, getattr(runtime, type(e).__name__, None) is type(e),
                         [c.__module__ for c in type(e).__mro__]]
    print(json.dumps(out))
""")


def test_without_onnxruntime_pt2onnxs_own_classes_are_raised(tmp_path):
    (tmp_path / "relu.onnx").write_bytes(relu_model())
    (tmp_path / "reshape.onnx").write_bytes(reshape_model())
    (tmp_path / "script.py").write_text(HIDDEN_ONNXRUNTIME)
    done = subprocess.run([sys.executable, str(tmp_path / "script.py"), str(tmp_path / "relu.onnx"),
                           str(tmp_path / "reshape.onnx"), str(tmp_path / "missing.onnx")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    expected = {"missing input": "MissingInput", "unknown input name": "InvalidArgument",
                "wrong dtype": "InvalidArgument", "wrong rank": "InvalidArgument",
                "unknown output name": "InvalidArgument", "file does not exist": "NoSuchFile",
                "corrupt bytes": "InvalidProtobuf", "node failing at run time": "Fail"}
    for mistake, name in expected.items():
        assert out[mistake] is not None, f"{mistake}: no error"
        got, module, is_ours, mro_modules = out[mistake]
        assert (got, module, is_ours) == (name, "pt2onnx.runtime", True), (mistake, out[mistake])
        assert not any(m.startswith("onnxruntime") for m in mro_modules), (mistake, mro_modules)


def test_onnxruntime_is_imported_only_when_an_error_is_raised(tmp_path):
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import pt2onnx
        sess = pt2onnx.InferenceSession(sys.argv[1])
        sess.run(None, {"x": np.ones((2, 3), np.float32)})
        before = "onnxruntime" in sys.modules
        try:
            sess.run(["nope"], {"x": np.ones((2, 3), np.float32)})
        except pt2onnx.InvalidArgument:
            pass
        print(before, "onnxruntime" in sys.modules)
    """)
    (tmp_path / "relu.onnx").write_bytes(relu_model())
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "relu.onnx")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_the_models_are_valid_onnx():
    """The mistakes above are the feeds' and the files': the models themselves are valid."""
    for model in (relu_model(), reshape_model()):
        onnx.checker.check_model(onnx.load_from_string(model))
