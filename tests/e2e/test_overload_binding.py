"""Symbolics registered for every overload of an op read their arguments where *that* overload puts
them. argsort.stable(self, *, stable, dim, descending) was read as argsort(self, dim, descending):
indices came out as if dim=int(stable). The audit below lists every registered op whose overloads
disagree on an argument's position, so that a torch adding such an overload fails here until its
symbolic is checked; the cases run each overload traced and scripted against PyTorch."""
import warnings

import numpy as np
import pytest
import torch

import pt2onnx
from samples import ort
from tests.conftest import ROOT

# Renames that keep an argument's meaning (number overloads name their operands a, b).
SAME_MEANING = {"a": "self", "b": "other", "t": "data"}

# Ops whose overloads put differently named arguments at the same position, and why their symbolic
# is right for each: audited, with a case below where an overload has a tensor kernel on the CPU.
AUDITED = {
    "aten::addmm": "beta/alpha bound by name (.dtype puts out_dtype first; CUDA-only: tests/symbolic)",
    "aten::baddbmm": "beta/alpha bound by name (.dtype puts out_dtype first; CUDA-only: tests/symbolic)",
    "aten::argsort": "dim/descending bound by name (.stable puts stable first)",
    "aten::sort": "dim/descending bound by name; the list overloads (.int, .str, ...) sort in place: refused",
    "aten::blackman_window": ".periodic told apart by its bool argument",
    "aten::hamming_window": ".periodic* told apart by the bool argument and alpha/beta by name",
    "aten::hann_window": ".periodic told apart by its bool argument",
    "aten::mean": "the overloads differ in arity: dtype is the last argument of each",
    "aten::prod": "the overloads differ in arity: dtype is the last argument of each",
    "aten::sum": "the overloads differ in arity; the list overloads (.bool, .complex) have no tensor",
    "aten::norm": "the overloads differ in arity: dtype is at 2 (3 arguments) or 4 (5)",
    "aten::std": ".dim and .correction told apart by the third argument's kind",
    "aten::var": ".dim and .correction told apart by the third argument's kind",
    "aten::std_mean": ".dim and .correction told apart by the third argument's kind",
    "aten::var_mean": ".dim and .correction told apart by the third argument's kind",
    "aten::split": "split_size/split_sizes told apart by kind (int or int[]); .str has no tensor",
    "aten::tensor_split": "sections/indices/tensor told apart by kind",
    "aten::stft": "center and the later arguments bound by name",
    "aten::einsum": ".sublist is not reached from TorchScript (scripted einsum takes the equation)",
    "aten::pow": "the complex and Scalar_Scalar overloads are number math (a, b) in the same positions",
    "aten::rand": "every overload refused (random numbers)", "aten::randn": "every overload refused",
    "aten::rand_like": "every overload refused", "aten::randn_like": "every overload refused",
    "aten::randint": "every overload refused", "aten::randint_like": "every overload refused",
    "aten::randperm": "every overload refused",
}


def position_conflicts():
    """Registered bare-name ops (every overload) whose overloads' argument names differ by position."""
    manifest = [line.split()[0] for line in open(ROOT / "tests" / "symbolic" / "registry_manifest.txt")]
    explicit = set(manifest)
    found = {}
    for op in sorted({m for m in manifest if m.startswith("aten::") and "." not in m[len("aten::"):]}):
        names = {s.overload_name: [SAME_MEANING.get(a.name, a.name) for a in s.arguments]
                 for s in torch._C._jit_get_schemas_for_operator(op)
                 if not any(a.is_out for a in s.arguments) and f"{op}.{s.overload_name}" not in explicit}
        width = max(map(len, names.values()), default=0)
        if any(len({v[i] for v in names.values() if i < len(v)}) > 1 for i in range(width)):
            found[op] = names
    return found


def test_every_overload_position_conflict_is_audited():
    conflicts = position_conflicts()
    unaudited = {op: names for op, names in conflicts.items() if op not in AUDITED}
    assert not unaudited, ("overloads that put other arguments at the same position: check the symbolic "
                           f"binds them by name, add a case below, then list the op in AUDITED: {unaudited}")
    assert "aten::argsort" in conflicts  # the audit sees the case it was written for


# Each case's expression of x, scripted from this source and traced from the same function.
CASES = {
    "argsort_stable_dim0_descending": "torch.argsort(x, dim=0, descending=True, stable=True)",
    "argsort_stable_false_dim1": "torch.argsort(x, stable=False, dim=1)",
    "argsort_stable_ties": "torch.argsort(x.round(), dim=1, stable=True, descending=True)",
    "sort_stable_values": "torch.sort(x, stable=True, dim=0, descending=True)[0]",
    "sort_stable_indices": "torch.sort(x.round(), stable=True, dim=1)[1]",
    "hann_periodic_false": "x + torch.hann_window(5, periodic=False)",
    "hamming_alpha_beta": "x + torch.hamming_window(5, periodic=False, alpha=0.5, beta=0.3)",
    "blackman_positional": "x + torch.blackman_window(5, False)",
    "norm_dim_keepdim": "torch.norm(x, p=1.0, dim=[1], keepdim=True)",
    "norm_dim_dtype": "torch.norm(x, 3.0, [0], False, dtype=torch.float64)",
    "var_correction": "torch.var(x, dim=[1], correction=0, keepdim=True)",
    "std_unbiased_positional": "torch.std(x, [0], False, True)",
    "std_mean_correction": "torch.std_mean(x, dim=[1], correction=2, keepdim=False)[0]",
    "sum_dtype": "torch.sum(x, dtype=torch.float64)",
    "sum_dim_dtype": "torch.sum(x, [1], True, dtype=torch.float64)",
    "mean_dim_dtype": "torch.mean(x, [0], keepdim=True, dtype=torch.float64)",
    "prod_dim_keepdim": "torch.prod(x, 1, keepdim=True)",
    "prod_dtype": "torch.prod(x, dtype=torch.float64)",
    "split_sizes": "torch.split(x, [2, 3], dim=1)[1]",
    "split_int": "torch.split(x, 2, 1)[2]",
    "tensor_split_sections": "torch.tensor_split(x, 3, dim=1)[1]",
    "tensor_split_indices": "torch.tensor_split(x, [1, 3], dim=1)[2]",
}


@pytest.mark.parametrize("mode", ["trace", "script"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_overload_matches_torch(name, mode, tmp_path):
    source = f"def forward(x: torch.Tensor):\n    return {CASES[name]}\n"
    x = torch.randn(4, 5) * 3
    if mode == "script":
        model = torch.jit.CompilationUnit(source).forward
    else:
        namespace = {"torch": torch, "__name__": __name__}
        exec(source, namespace)  # noqa: S102 - the same source as the scripted form
        model = torch.jit.trace(namespace["forward"], (x,))
    path = tmp_path / "m.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(model, (x,), str(path), opset_version=17, input_names=["x"])
    session = pt2onnx.InferenceSession(str(path))
    for run in (x, torch.randn(4, 5) * 3):
        expected = model(run).numpy()
        for runtime, got in (("ort", list(ort.run(path, {"x": run.numpy()}).values())[0]),
                             ("builtin", session.run(None, {"x": run.numpy()})[0])):
            assert got.shape == expected.shape and got.dtype == expected.dtype, runtime
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4, err_msg=runtime)
