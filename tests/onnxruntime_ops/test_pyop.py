"""The legacy PyOp (reference seeds/004: ONNX Runtime's removed language-interop Python operator):
the seed's own two-PyOp graph, built as printed there, in stock onnxruntime."""
import textwrap

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import pt2onnx

MYMODULE = """
class Multi_1:
    def __init__(self, W1, W2, W3):
        self.W1 = int(W1)
        self.W2 = int(W2)
        self.W3 = int(W3)

    def compute(self, S, P):
        ret = S + P
        return ret + self.W1, ret + self.W2, ret + self.W3


class Multi_2:
    def compute(self, H, N, E):
        r1, r2 = H + N, N + E
        return r1, r2
"""


def _seed_model():
    A, B, C, D, E = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [5]) for n in "ABCDE")
    F = helper.make_tensor_value_info("F", TensorProto.FLOAT, [5])
    ad1_node = helper.make_node('Add', ['A', 'B'], ['S'])
    mul_node = helper.make_node('Mul', ['C', 'D'], ['P'])
    py1_node = helper.make_node(op_type='PyOp', inputs=['S', 'P'], outputs=['L', 'M', 'N'], domain='pyopmulti_1',
                                input_types=[TensorProto.FLOAT, TensorProto.FLOAT],
                                output_types=[TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.FLOAT],
                                module='mymodule', class_name='Multi_1', compute='compute', W1='5', W2='7', W3='9')
    ad2_node = helper.make_node('Add', ['L', 'M'], ['H'])
    py2_node = helper.make_node('PyOp', ['H', 'N', 'E'], ['O', 'W'], domain='pyopmulti_2',
                                input_types=[TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.FLOAT],
                                output_types=[TensorProto.FLOAT, TensorProto.FLOAT],
                                module='mymodule', class_name='Multi_2')
    sub_node = helper.make_node('Sub', ['O', 'W'], ['F'])
    graph = helper.make_graph([ad1_node, mul_node, py1_node, ad2_node, py2_node, sub_node], 'multi_pyop_graph',
                              [A, B, C, D, E], [F])
    # IR 8 / opset 17: what onnxruntime back to 1.21 reads (the seed prints no version; onnx's default is newer)
    return helper.make_model(graph, producer_name='pyop_model', ir_version=8, opset_imports=[helper.make_opsetid("", 17)])


def _expected(a, b, c, d, e):
    s = a + b + c * d
    l, m, n = s + 5, s + 7, s + 9
    h = l + m
    return (h + n) - (n + e)


@pytest.fixture
def mymodule(tmp_path, monkeypatch):
    (tmp_path / "mymodule.py").write_text(textwrap.dedent(MYMODULE))
    monkeypatch.syspath_prepend(str(tmp_path))


def test_seed_graph_runs_as_printed(mymodule, tmp_path):
    model = _seed_model()
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    so = onnxruntime.SessionOptions()
    pt2onnx.register_onnxruntime_ops(so, str(path))
    session = onnxruntime.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for _ in range(3):
        feeds = {n: rng.standard_normal(5).astype(np.float32) for n in "ABCDE"}
        (f,) = session.run(None, feeds)
        np.testing.assert_allclose(f, _expected(*feeds.values()), rtol=1e-6, atol=1e-6)


def test_model_proto_and_unregistered_domain(mymodule, tmp_path):
    """The model may be given as a ModelProto; without it, PyOp domains are unknown to ORT (its own error)."""
    model = _seed_model()
    so = onnxruntime.SessionOptions()
    pt2onnx.register_onnxruntime_ops(so, model)
    session = onnxruntime.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {n: np.full(5, k, np.float32) for k, n in enumerate("ABCDE")}
    np.testing.assert_allclose(session.run(None, feeds)[0], _expected(*feeds.values()))
    bare = onnxruntime.SessionOptions()
    pt2onnx.register_onnxruntime_ops(bare)
    with pytest.raises(Exception, match="pyopmulti_1:PyOp"):
        onnxruntime.InferenceSession(model.SerializeToString(), bare, providers=["CPUExecutionProvider"])


def test_output_of_another_type(mymodule, tmp_path):
    """compute returning float64 where output_types says float: a located error, the session stays usable."""
    (tmp_path / "widemodule.py").write_text(textwrap.dedent("""
        class Wide:
            def compute(self, x):
                return x.astype("float64") if x[0] < 0 else x * 2
        """))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    node = helper.make_node("PyOp", ["x"], ["y"], domain="wide", input_types=[TensorProto.FLOAT],
                            output_types=[TensorProto.FLOAT], module="widemodule", class_name="Wide")
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]), ir_version=8,
                              opset_imports=[helper.make_opsetid("", 17)])
    so = onnxruntime.SessionOptions()
    pt2onnx.register_onnxruntime_ops(so, model)
    session = onnxruntime.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match=r"PyOp \(unnamed\) \(widemodule.Wide\).*output 0 is float64"):
        session.run(None, {"x": np.array([-1, 2, 3], np.float32)})
    np.testing.assert_allclose(session.run(None, {"x": np.array([1, 2, 3], np.float32)})[0], [2, 4, 6])
