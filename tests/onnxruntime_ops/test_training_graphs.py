"""Training exports (forward and backward in one model, each Function's backward in PythonOpGrad)
in stock onnxruntime: the gradients against torch.autograd, at other batch sizes, and contexts that
are consumed by their PythonOpGrad or released.

In onnxruntime < 1.24 (scripts/test_onnxruntime_versions.sh runs them there) the same tests check the
documented refusal instead (docs/design/onnxruntime_ops_groundwork.md): those releases crash creating
a session whose PythonOpGrad has absent optional inputs, so register_onnxruntime_ops raises a
RuntimeError naming the node and the version needed."""
import re

import numpy as np
import onnx
import onnxruntime
import pytest
import torch

import pt2onnx
from ort_helpers import export, ort_session
from pt2onnx import python_ops
from samples import autograd_functions as af

TOLERANCE = 1e-4
ORT_VERSION = tuple(int(p) for p in onnxruntime.__version__.split("+")[0].split(".")[:2])
GRADIENTS_SINCE = (1, 24)


def _refused(path):
    """onnxruntime < 1.24: registering the ops for a model with a PythonOpGrad is refused, saying why."""
    grads = [n.name for n in onnx.load(str(path)).graph.node if n.op_type == "PythonOpGrad"]
    so = onnxruntime.SessionOptions()
    with pytest.raises(RuntimeError, match="needs onnxruntime >= 1.24") as refusal:
        pt2onnx.register_onnxruntime_ops(so, str(path))
    text = str(refusal.value)
    named = re.match(r"PythonOpGrad (\S+): running PythonOpGrad needs onnxruntime >= 1\.24 ", text)
    assert named and named.group(1) in grads, text
    assert f"(this is {ORT_VERSION[0]}.{ORT_VERSION[1]}," in text, text
    assert "pt2onnx.InferenceSession" in text, text


def _torch_gradients(model, inputs, seed):
    inputs = [a.clone().requires_grad_(True) for a in inputs]
    out = model(*inputs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if o.is_floating_point()]
    torch.manual_seed(seed)
    seeds = [torch.randn_like(o) for o in outs]
    params = dict(model.named_parameters())
    grads = torch.autograd.grad(outs, inputs + list(params.values()), seeds, allow_unused=True)
    keys = [f"in{k}_grad" for k in range(len(inputs))] + [f"{n}_grad" for n in params]
    return seeds, dict(zip(keys, grads))


@pytest.mark.parametrize("builder", ["build_relu_logexp", "build_two_outputs", "build_mixed_args",
                                     "build_no_materialize", "build_non_differentiable", "build_mixed",
                                     "build_shared"])
def test_gradients_match_torch(builder, tmp_path):
    model, args = getattr(af, builder)()
    path = tmp_path / "train.onnx"
    names = [f"in{k}" for k in range(len(args))]
    summary = export(model, args, path, input_names=names, gradients="all",
                     dynamic_axes={n: {0: "b"} for n in names})
    ops = [n.op_type for n in onnx.load(str(path)).graph.node]
    assert "PythonOp" in ops and "PythonOpGrad" in ops
    if ORT_VERSION < GRADIENTS_SINCE:
        return _refused(path)
    session = ort_session(path)
    outputs = [o.name for o in session.get_outputs()]
    for batch, seed in ((args[0].shape[0], 5), (4, 6)):
        torch.manual_seed(seed)
        inputs = args if batch == args[0].shape[0] else tuple(torch.randn(batch, *a.shape[1:]) for a in args)
        seeds, expected = _torch_gradients(model, inputs, seed)
        feeds = {n: a.numpy() for n, a in zip(names, inputs)}
        feeds.update({s: v.numpy() for s, v in zip(summary["gradient_seeds"], seeds)})
        actual = dict(zip(outputs, session.run(None, feeds)))
        for key, e in expected.items():
            e = np.zeros_like(actual[key]) if e is None else e.numpy()
            err = np.abs(actual[key] - e).max() / max(1.0, np.abs(e).max())
            assert err <= TOLERANCE, f"batch {batch}: {key} differs by {err:.3g}"
        assert python_ops.live_contexts() == 0, "each forward's context is consumed by its PythonOpGrad"


def test_forward_outputs_only(tmp_path):
    """Asking a training model for its forward outputs only still leaves no context behind."""
    model, args = af.build_two_outputs()
    path = tmp_path / "train.onnx"
    summary = export(model, args, path, input_names=["a", "b"], gradients="all")
    if ORT_VERSION < GRADIENTS_SINCE:
        return _refused(path)
    session = ort_session(path)
    feeds = {"a": args[0].numpy(), "b": args[1].numpy()}
    feeds.update({s: np.ones(args[0].shape, np.float32) for s in summary["gradient_seeds"]})
    first = session.get_outputs()[0].name
    for _ in range(3):
        got = session.run([first], feeds)[0]
        np.testing.assert_allclose(got, (args[0] * args[1]).numpy(), rtol=1e-6)
    del session
    assert python_ops.live_contexts() == 0


def test_failed_backward_releases_its_context(tmp_path):
    """A PythonOpGrad that cannot run (a damaged attribute) fails each run, naming the node, and leaves
    no context behind while the session lives."""
    model, args = af.build_two_outputs()
    path = tmp_path / "train.onnx"
    summary = export(model, args, path, input_names=["a", "b"], gradients="all")
    proto = onnx.load(str(path))
    grad = next(n for n in proto.graph.node if n.op_type == "PythonOpGrad")
    attr = next(a for a in grad.attribute if a.name == "output_tensor_requires_grads")
    attr.ints.append(1)
    onnx.save(proto, str(path))
    if ORT_VERSION < GRADIENTS_SINCE:
        return _refused(path)
    session = ort_session(path)
    feeds = {"a": args[0].numpy(), "b": args[1].numpy()}
    feeds.update({s: np.ones(args[0].shape, np.float32) for s in summary["gradient_seeds"]})
    for _ in range(2):
        with pytest.raises(Exception, match=rf"PythonOpGrad {grad.name} .*output_tensor_requires_grads"):
            session.run(None, feeds)
        assert python_ops.live_contexts() == 0
