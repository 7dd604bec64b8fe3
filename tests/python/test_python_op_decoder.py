"""The PythonOp / PythonOpGrad attribute decoder (python/pt2onnx/python_ops.py) on attributes a
damaged or hand-written model supplies: a ValueError naming the node and the attribute, never a
KeyError, TypeError or RecursionError from inside it, and never a silently different call.
Replays the fuzz target's regressions (tests/fuzz_regressions/python_op_attributes/, found by
scripts/fuzz.sh python_op_attributes) through the target's own contract check."""
import json
import pathlib
import sys

import pytest
import torch

from pt2onnx import python_ops

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from fuzz import python_op_attributes as target  # noqa: E402

REGRESSIONS = sorted((ROOT / "tests" / "fuzz_regressions" / "python_op_attributes").iterdir())
ANY = target.HERE + "AnyArguments"


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_fuzz_regression_keeps_the_contract(path):
    target.test_one_input(path.read_bytes())


def plan_error(**attrs):
    with pytest.raises(ValueError) as info:
        python_ops.PythonOpPlan("n7", attrs)
    assert "PythonOp n7" in str(info.value)
    return str(info.value)


def test_attribute_of_the_wrong_kind_names_it():
    assert "attribute 'name' must be of kind str, got list" in plan_error(name=[1, 2], input_convention="d")
    assert "attribute 'input_int_scalars' must be of kind ints" in plan_error(
        name=ANY, input_convention="c", input_int_scalar_positions=[0], input_int_scalars=[1.5])
    assert "attribute 'input_convention' is missing" in plan_error(name=ANY)


def test_positions_and_values_must_pair_up():
    assert "'input_int_scalar_positions' has 1 entries, 'input_int_scalars' 2" in plan_error(
        name=ANY, input_convention="cc", input_int_scalar_positions=[0], input_int_scalars=[1, 2])
    assert "'input_float_scalar_positions' holds 3, not an argument position (the Function takes 2)" in plan_error(
        name=ANY, input_convention="dc", input_float_scalar_positions=[3], input_float_scalars=[1.0])


def test_tuple_begins_must_split_the_values_in_order():
    # Out of order, they used to slice silently: argument 0 got () and argument 1 got (2, 3).
    assert "does not split 3 values in order" in plan_error(
        name=ANY, input_convention="cc", input_int_tuples=[1, 2, 3], input_int_tuple_positions=[0, 1],
        input_int_tuple_begins=[2, 1])
    plan = python_ops.PythonOpPlan("n7", dict(name=ANY, input_convention="cc", input_int_tuples=[1, 2, 3],
                                              input_int_tuple_positions=[0, 1], input_int_tuple_begins=[0, 1]))
    assert plan.slots == [("const", (1,)), ("const", (2, 3))]


@pytest.mark.parametrize("metadata", [
    "not json", "[" * 100000, json.dumps({"args": [{"position": 0, "type": "device"}]}),
    json.dumps({"args": [{"position": 0, "type": "float", "value": "0x1p99999"}]}),
    json.dumps({"args": [{"position": 5, "type": "int", "value": 1}]}),
    json.dumps({"args": [{"position": 0, "type": "int", "value": "1"}]}),
    json.dumps({"args": [{"position": 0, "type": "dtype", "value": "Tensor"}]}),
], ids=["text", "deep", "device_without_value", "float_overflow", "position_out_of_range", "int_as_str", "dtype_not_a_dtype"])
def test_damaged_metadata_is_one_clear_error(metadata):
    assert "attribute '__metadata' is not pt2onnx's argument metadata" in plan_error(
        name=ANY, input_convention="c", __metadata=metadata)


def test_exact_metadata_still_wins():
    metadata = json.dumps({"args": [{"position": 1, "type": "tuple", "items": [
        {"type": "float", "value": (0.1).hex()}, {"type": "dtype", "value": "float64"}, {"type": "none"}]}]})
    plan = python_ops.PythonOpPlan("n7", dict(name=ANY, input_convention="dc", input_float_scalar_positions=[1],
                                              input_float_scalars=[0.5], __metadata=metadata))
    assert plan.slots[1] == ("const", (0.1, torch.float64, None))


def test_grad_node_attributes_are_checked_too():
    with pytest.raises(ValueError, match="PythonOpGrad g1: attribute 'output_tensor_requires_grads' is missing"):
        python_ops.PythonOpGradPlan("g1", dict(name=ANY, output_convention="d"))
    with pytest.raises(ValueError, match="output_convention 'dq' holds letters other than"):
        python_ops.PythonOpGradPlan("g1", dict(name=ANY, output_convention="dq", output_tensor_requires_grads=[1]))


def test_a_dtype_record_naming_a_torch_submodule_imports_nothing():
    """A dtype record is looked up among torch's attributes without running torch's lazy imports
    (`getattr(torch, "_dynamo")` would import torch._dynamo: seconds, and its side effects)."""
    import subprocess
    code = ("import sys, torch\nfrom pt2onnx import python_ops\n"
            "try:\n    python_ops._from_portable({'type': 'dtype', 'value': '_dynamo'})\n"
            "except ValueError as e:\n    print('rejected:', e)\n"
            "print('imported' if 'torch._dynamo' in sys.modules else 'not imported')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "rejected: '_dynamo' is not a torch dtype" in proc.stdout and "not imported" in proc.stdout, proc.stdout
