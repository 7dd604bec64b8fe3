"""Fuzz target for the PythonOp / PythonOpGrad attribute decoder (python/pt2onnx/python_ops.py): the
Python side of the builtin runtime's com.microsoft::PythonOp kernels, which reads attributes a model
file supplies. Coverage-guided by atheris (libFuzzer for Python): scripts/fuzz.sh python_op_attributes
SECONDS. tests/python/test_fuzz_regressions.py replays tests/fuzz_regressions/python_op_attributes/
through test_one_input() without atheris.

An input is either a JSON object of attributes (the seeds: real exports' PythonOp nodes, written by
fuzz/make_corpus.py) or, when it is not one, bytes a FuzzedDataProvider turns into attributes of every
ONNX kind. The contract checked: building a plan either succeeds or raises ValueError / LookupError
(not its KeyError and IndexError subclasses) naming the node or the Function; a built plan runs its
Function on tensors of the right count (its results may fail the node's declared types and ranks:
an error saying what "the node declares"), and a wrong count is a ValueError. Anything else (a
TypeError, KeyError, RecursionError from inside the decoder, a hang, a crash) is a finding."""
import json
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # samples.autograd_functions, and this file as fuzz.python_op_attributes

NODE = "fuzz_node"
HERE = "fuzz.python_op_attributes."
# Names resolved without importing a module the input chooses: any other name is looked up in this
# module, where the lookup itself is what gets fuzzed.
KNOWN_PREFIXES = ("samples.", HERE)


class AnyArguments(torch.autograd.Function):
    """Accepts any arguments; returns its first tensor doubled (or a fresh one)."""

    @staticmethod
    def forward(ctx, *args):
        ctx.count = len(args)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        return tensors[0] * 2 if tensors else torch.zeros(1)

    @staticmethod
    def backward(ctx, grad):
        return (grad * 2,) + (None,) * (ctx.count - 1) if ctx.count else ()


NotAFunction = object()

ATTRIBUTE_NAMES = [
    "name", "input_convention", "training_mode", "inplace", "input_requires_grads", "__metadata",
    "input_bool_scalar_positions", "input_bool_scalars", "input_int_scalar_positions", "input_int_scalars",
    "input_float_scalar_positions", "input_float_scalars", "input_pointer_scalar_positions", "input_pointer_scalars",
    "input_bool_tuples", "input_bool_tuple_positions", "input_bool_tuple_begins", "input_int_tuples",
    "input_int_tuple_positions", "input_int_tuple_begins", "input_float_tuples", "input_float_tuple_positions",
    "input_float_tuple_begins", "output_convention", "output_tensor_requires_grads", "output_tensor_types",
    "output_tensor_ranks",
]
FUNCTION_NAMES = [HERE + "AnyArguments", HERE + "NotAFunction", HERE + "Missing", HERE + "<locals>.F",
                  "samples.autograd_functions.MixedArgs", "samples.autograd_functions.TupleArgs"]


def portable_record(fdp, depth=0):
    kinds = ["none", "bool", "int", "str", "float", "dtype", "device", "tuple", "list", "object", "bogus"]
    kind = kinds[fdp.ConsumeIntInRange(0, len(kinds) - 1)]
    record = {"type": kind}
    if kind in ("tuple", "list") and depth < 4:
        record["items"] = [portable_record(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    elif fdp.ConsumeBool():
        record["value"] = [True, fdp.ConsumeInt(8), fdp.ConsumeUnicodeNoSurrogates(12), "float32", "cpu",
                           (1.5).hex(), None][fdp.ConsumeIntInRange(0, 6)]
    return record


def attribute_value(fdp, name):
    """A value of a random ONNX attribute kind, mostly the kind `name` has in real exports."""
    if name == "__metadata" and fdp.ConsumeBool():
        records = [dict(portable_record(fdp), position=fdp.ConsumeIntInRange(-1, 6)) for _ in range(fdp.ConsumeIntInRange(0, 4))]
        return json.dumps({"args": records})
    if name == "name" and fdp.ConsumeBool():
        return FUNCTION_NAMES[fdp.ConsumeIntInRange(0, len(FUNCTION_NAMES) - 1)]
    if name.endswith("convention") and fdp.ConsumeBool():
        return "".join("cd"[fdp.ConsumeIntInRange(0, 1)] for _ in range(fdp.ConsumeIntInRange(0, 6)))
    kind = fdp.ConsumeIntInRange(0, 5)
    count = fdp.ConsumeIntInRange(0, 8)
    small = fdp.ConsumeBool()
    integer = (lambda: fdp.ConsumeIntInRange(-2, 8)) if small else (lambda: fdp.ConsumeInt(8))
    if kind == 0:
        return integer()
    if kind == 1:
        return fdp.ConsumeFloat()
    if kind == 2:
        return fdp.ConsumeUnicodeNoSurrogates(24)
    if kind == 3:
        return [integer() for _ in range(count)]
    if kind == 4:
        return [fdp.ConsumeFloat() for _ in range(count)]
    return [fdp.ConsumeUnicodeNoSurrogates(8) for _ in range(count)]


def attributes_from(data):
    """The input as an attribute dict: a JSON object as is, else decoded by a FuzzedDataProvider."""
    try:
        attrs = json.loads(data.decode("utf-8"))
        if isinstance(attrs, dict):
            return attrs
    except (UnicodeDecodeError, ValueError, RecursionError):
        pass
    import atheris  # only the generated form needs it; replaying JSON regressions does not

    fdp = atheris.FuzzedDataProvider(data)
    attrs = {}
    for name in ATTRIBUTE_NAMES:
        if fdp.ConsumeBool():
            attrs[name] = attribute_value(fdp, name)
    return attrs


def confined(attrs):
    """Keeps the Function lookup away from modules the input names (importing one runs its code)."""
    name = attrs.get("name")
    if isinstance(name, str) and not name.startswith(KNOWN_PREFIXES):
        attrs["name"] = HERE + name.replace(".", "_")
    return attrs


def expect_clean_error(error, where):
    if isinstance(error, (KeyError, IndexError)) or not isinstance(error, (ValueError, LookupError)):
        raise AssertionError(f"{where}: {type(error).__name__} is not a clean decoding error: {error}") from error
    text = str(error)
    if NODE not in text and "Function" not in text and "torch.autograd.Function" not in text:
        raise AssertionError(f"{where}: the error names neither the node nor the Function: {text}") from error


def test_one_input(data):
    from pt2onnx import python_ops

    attrs = confined(attributes_from(data))
    try:
        plan = python_ops.PythonOpPlan(NODE, dict(attrs))
    except Exception as e:  # noqa: BLE001 - the contract is checked below
        expect_clean_error(e, "PythonOpPlan")
    else:
        tensors = [torch.ones(2, 3) for _ in range(plan.num_tensors)]
        own_function = plan.cls.__name__ == "AnyArguments"  # this module may be loaded twice (as __main__)
        try:
            handle, outputs = plan.forward(*tensors)
        except Exception as e:  # noqa: BLE001 - a sample Function may reject fuzzed constants: its own error
            if own_function and "the node declares" not in str(e):  # else the check of declared types and ranks
                raise
        else:
            assert all(isinstance(o, torch.Tensor) for o in outputs)
            python_ops.release_contexts([handle])
        try:
            plan.forward(*tensors, torch.ones(1))
            raise AssertionError("PythonOpPlan.forward took one tensor too many")
        except ValueError as e:
            expect_clean_error(e, "forward with a wrong tensor count")
    try:
        grad = python_ops.PythonOpGradPlan(NODE, dict(attrs))
    except Exception as e:  # noqa: BLE001
        expect_clean_error(e, "PythonOpGradPlan")
    else:
        try:
            grad.backward(0, torch.ones(2))  # 0: never a context handle
            raise AssertionError("PythonOpGradPlan.backward ran without a forward context")
        except RuntimeError as e:
            if NODE not in str(e):
                raise AssertionError(f"backward's error does not name the node: {e}") from e


def main():
    import atheris

    with atheris.instrument_imports():
        from pt2onnx import python_ops  # noqa: F401 - instrumented for coverage
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
