"""Scripted control-flow patterns (samples/scripted_patterns.py), each exported ONCE with
pt2onnx.export(torch.jit.script(m), example) and then run on its example AND on argument sets that
take other branches and trip counts, in ONNX Runtime and in pt2onnx's runtime, against the scripted
module in PyTorch (max |a-b|/(1+|a|) <= 1e-5)."""
import numpy as np
import onnx
import pytest
import torch

import pt2onnx
from pt2onnx.feeds import as_array
from samples import ort, scripted_patterns

TOLERANCE = 1e-5
PATTERNS = {p[0]: p for p in scripted_patterns.PATTERNS}


def flatten(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in flatten(v)]
    return [value]


def export_once(name, tmp_path):
    _, factory, example, runs, kwargs, _ = PATTERNS[name]
    module = torch.jit.script(factory().eval())
    path = tmp_path / f"{name}.onnx"
    pt2onnx.export(module, example, path, opset_version=17, **kwargs)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    return module, path, [example] + runs


def feeds_for(path, args):
    names = [i.name for i in onnx.load(str(path)).graph.input]
    present = [a for a in args if a is not None]  # None arguments are not model inputs
    assert len(names) == len(present)
    return {n: as_array(a) for n, a in zip(names, present)}


def expect_close(expected, actual, context):
    expected = flatten(expected)
    assert len(actual) == len(expected), context
    for k, (e, a) in enumerate(zip(expected, actual)):
        e = as_array(e)
        assert np.asarray(a).shape == e.shape, f"{context}: output {k} shape {np.asarray(a).shape} != {e.shape}"
        err = ort.max_rel_error(e, a)
        assert err <= TOLERANCE, f"{context}: output {k} differs by {err}"


def test_patterns_are_many_and_varied():
    assert len(PATTERNS) >= 20
    for name, _, _, runs, _, _ in scripted_patterns.PATTERNS:
        assert runs, f"{name} has no run besides its example"


@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern_matches_torch_in_onnxruntime(name, tmp_path):
    module, path, arg_sets = export_once(name, tmp_path)
    for k, args in enumerate(arg_sets):
        with torch.no_grad():
            expected = module(*args)
        actual = list(ort.run(path, feeds_for(path, args)).values())
        expect_close(expected, actual, f"{name}, argument set {k}")


@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern_matches_torch_in_builtin_runtime(name, tmp_path):
    module, path, arg_sets = export_once(name, tmp_path)
    session = pt2onnx.InferenceSession(path)
    for k, args in enumerate(arg_sets):
        with torch.no_grad():
            expected = module(*args)
        actual = session.run(None, feeds_for(path, args))
        expect_close(expected, actual, f"{name}, argument set {k}")


def test_data_dependent_patterns_keep_control_flow(tmp_path):
    """The example input must not decide the branch: these become ONNX If / Loop."""
    expected = {"if_elif": "If", "while_tensor_condition": "Loop", "break_on_condition": "Loop",
                "for_carries_several": "Loop", "shape_branch_dynamic": "If", "append_then_stack": "Loop"}
    for name, op in expected.items():
        _, path, _ = export_once(name, tmp_path)
        ops = {n.op_type for n in onnx.load(str(path)).graph.node}
        assert op in ops, f"{name}: no {op} in {sorted(ops)}"


def test_static_control_flow_is_folded(tmp_path):
    """What is known at export time leaves no control flow: the batch size of an input without
    dynamic axes, self.training, attributes that are None."""
    for name in ["shape_branch_static", "training_flag_folded", "optional_attribute_none"]:
        _, path, _ = export_once(name, tmp_path)
        ops = {n.op_type for n in onnx.load(str(path)).graph.node}
        assert not ops & {"If", "Loop"}, f"{name}: {sorted(ops)}"


def test_verify_checks_every_input_set(tmp_path):
    """pt2onnx.verify exports once and checks the example, given argument sets and random ones."""
    from pt2onnx.verify import verify
    _, factory, example, runs, _, _ = PATTERNS["if_elif"]
    module = torch.jit.script(factory().eval())
    report = verify(module, example, opset=17, rtol=1e-4, atol=1e-5, more_args=runs, random=2)
    assert [s["source"] for s in report["input_sets"]] == ["example", "given 1", "given 2", "random 1", "random 2"]
    assert report["pass"], report


def test_verify_catches_a_model_specialized_to_the_example(tmp_path):
    """A trace of the same module keeps only the example's branch: verify must fail on the other sets."""
    from pt2onnx.verify import verify
    _, factory, example, runs, _, _ = PATTERNS["if_elif"]
    module = factory().eval()
    traced = tmp_path / "traced.onnx"
    with pytest.warns(torch.jit.TracerWarning):
        pt2onnx.export(module, example, traced, opset_version=17)
    report = verify(torch.jit.script(module), example, onnx_path=str(traced), rtol=1e-4, atol=1e-5, more_args=runs)
    assert report["input_sets"][0]["pass"]
    assert not report["input_sets"][1]["pass"] and not report["input_sets"][2]["pass"]
    assert not report["pass"]
