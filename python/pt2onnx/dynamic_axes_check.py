"""The check behind the dynamic axes `pt2onnx inspect` proposes: the model is exported with them and
the ONNX model is run (ONNX Runtime; pt2onnx's runtime for non-standard ops) at other batch sizes and
sequence lengths than the example's, against PyTorch on the same inputs. A set of axes counts only
when PyTorch runs forward() at one of those sizes at least and every run matches; otherwise a
smaller set is tried (one dimension dropped, then the other), down to none."""
import dataclasses
import itertools
import os
import tempfile

import numpy as np
import onnx
import torch

from . import _pt2onnx, exporter, onnxruntime_oracle
from ._text import shortened
from .runtime import InferenceSession

# Sizes the axes are run at (the example has batch 2, sequence 8): shorter and longer sequences.
TRIAL_SIZES = [{"batch": 3, "sequence": 5}, {"batch": 1, "sequence": 11}]
RTOL, ATOL = 1e-3, 1e-4
DTYPES = {None: torch.float32, "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
          "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}


@dataclasses.dataclass
class TensorArgument:
    """A tensor argument as the example gives it: its spec's shape and dtype, the axes proposed
    dynamic ({axis: "batch" | "sequence"}) and how forward() uses it (argument_uses.ArgumentUse)."""
    shape: tuple
    dtype: str
    axes: dict
    use: object = None


def _mask(shape, dtype, generator, keep_first):
    """A padding mask along the last axis: each row keeps a prefix of 1..n-1 positions (so every row
    has both values). Bool masks are True where padded (nn.MultiheadAttention's key_padding_mask),
    integer ones 1 where kept (a tokenizer's attention_mask)."""
    n = shape[-1] if shape else 1
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    kept = torch.randint(1, max(n - 1, 1) + 1, (rows, 1), generator=generator)
    keep = (torch.arange(n).unsqueeze(0) < kept).reshape(shape)
    return keep.to(dtype) if keep_first else (~keep).to(dtype)


def trial_value(argument, sizes, sequence, generator):
    """A value for a tensor argument at `sizes` ({dim name: size}); `sequence` is the sequence length
    in force (lengths stop at it)."""
    shape = tuple(sizes.get(argument.axes.get(k), s) for k, s in enumerate(argument.shape))
    dtype = DTYPES[argument.dtype]
    kind = argument.use.kind if argument.use is not None else None
    if kind == "lengths":  # sorted longest first (pack_padded_sequence's enforce_sorted), the longest = sequence
        lengths = torch.randint(1, sequence + 1, shape, generator=generator)
        if lengths.numel():
            lengths.view(-1)[0] = sequence
        return lengths.flatten().sort(descending=True).values.reshape(shape).to(dtype)
    if dtype == torch.bool:
        return _mask(shape, dtype, generator, keep_first=False)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype)
    if kind == "index":
        return torch.randint(0, argument.use.index_bound or 1, shape, generator=generator).to(dtype)
    if kind in ("int", "bool"):
        return _mask(shape, dtype, generator, keep_first=True)
    return torch.zeros(shape, dtype=dtype)


def _feeds(names, args, defaulted, input_names):
    """The ONNX model's inputs from forward()'s arguments, as export names them (tuples and lists of
    tensors one input per element, NAME.0 ...; numbers 0-d; omitted arguments none)."""
    feeds = {}
    for k, (name, a) in enumerate(zip(names, args)):
        if k in defaulted or a is None:
            continue
        if isinstance(a, (tuple, list)) and any(isinstance(e, torch.Tensor) for e in a):
            feeds.update({f"{name}.{i}": e.numpy() for i, e in enumerate(a)})
        elif isinstance(a, list):
            feeds[name] = np.array(a, dtype=np.float64 if any(isinstance(e, float) for e in a) else np.int64)
        elif isinstance(a, torch.Tensor):
            feeds[name] = a.numpy()
        else:
            feeds[name] = np.array(a, dtype=np.bool_ if isinstance(a, bool) else
                                   np.int64 if isinstance(a, int) else np.float64)
    return {n: feeds[n] for n in input_names if n in feeds}


def _flatten(outputs):
    if isinstance(outputs, torch.Tensor):
        return [outputs.detach().numpy()]
    if isinstance(outputs, (bool, int, float)):
        return [np.array(outputs)]
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    if isinstance(outputs, (tuple, list)):
        return [x for o in outputs for x in _flatten(o)]
    return []


class _ExportedModel:
    def __init__(self, path):
        self.path = path
        proto = onnx.load(path, load_external_data=False)
        self.input_names = [i.name for i in proto.graph.input]
        standard = all(n.domain in ("", "ai.onnx") for n in proto.graph.node)
        self.runtime = "onnxruntime" if standard and onnxruntime_oracle.available() else "pt2onnx runtime"

        self._session = None  # made once, run at every trial size

    def run(self, feeds):
        if self._session is None:
            self._session = onnxruntime_oracle.session(self.path) if self.runtime == "onnxruntime" \
                else InferenceSession(self.path, runtime="builtin")
        if self.runtime == "onnxruntime":
            outputs = [o.name for o in self._session.get_outputs() if o.type.startswith("tensor(")]
            return self._session.run(outputs, {n: np.ascontiguousarray(a) for n, a in feeds.items()})
        return self._session.run(None, feeds)


def _mismatch(expected, actual):
    """None when the outputs agree, else what differs."""
    if len(expected) != len(actual):
        return f"{len(actual)} outputs, PyTorch gives {len(expected)}"
    for k, (e, a) in enumerate(zip(expected, actual)):
        a = np.asarray(a)
        if e.shape != a.shape:
            return f"output {k}: shape {list(a.shape)}, PyTorch gives {list(e.shape)}"
        e64, a64 = e.astype(np.float64), a.astype(np.float64)
        if not np.allclose(a64, e64, rtol=RTOL, atol=ATOL, equal_nan=True):
            return f"output {k}: max abs difference {float(np.nanmax(np.abs(a64 - e64))):.3g}"
    return None


def _first_line(e):
    text = str(e).strip()
    return shortened(text.splitlines()[0], 300) if text else type(e).__name__


def _run_at(model, exported, names, args, defaulted, tensors, sizes, example_sequence, generator):
    """(ran in PyTorch, mismatch or None, description) for one trial size."""
    sequence = sizes.get("sequence", example_sequence)
    trial = list(args)
    for k, t in tensors.items():
        trial[k] = trial_value(t, sizes, sequence, generator)
    where = ", ".join(f"{d} {s}" for d, s in sizes.items()) or "the example's sizes"
    try:
        with torch.no_grad():
            expected = _flatten(model(*trial))
    except Exception as e:  # PyTorch refusing the size: the model does not take it
        last = shortened(str(e).strip().splitlines()[-1], 300) if str(e).strip() else type(e).__name__  # the kernel's own words
        return False, None, f"{where}: PyTorch does not run forward() ({last})"
    try:
        actual = exported.run(_feeds(names, trial, defaulted, exported.input_names))
    except Exception as e:  # the runtime refusing the inputs: the axis does not hold
        return True, f"{where}: {exported.runtime} fails: {_first_line(e)}", where
    problem = _mismatch(expected, actual)
    return True, (f"{where}: {problem}" if problem else None), where


def check(model, names, args, defaulted, tensors, opset, example_sequence, seed=0):
    """Exports `model` with the largest set of dims of `tensors` ({argument index: TensorArgument})
    that holds at other sizes, and returns (dynamic_axes {name: {axis: dim}}, report). The report
    has "tried": [{"dims", "result"}], "runtime", "sizes" (where the kept set was run); "export_error"
    when the model does not export even without dynamic axes, "error" when it exports but differs
    from PyTorch at the example's own sizes."""
    dims = [d for d in ("batch", "sequence") if any(d in t.axes.values() for t in tensors.values())]
    report = {"tried": []}
    subsets = [list(c) for r in range(len(dims), -1, -1) for c in itertools.combinations(dims, r)]
    with tempfile.TemporaryDirectory(prefix="pt2onnx-inspect-") as tmp:
        for subset in subsets:
            dynamic = {names[k]: {a: d for a, d in t.axes.items() if d in subset} for k, t in tensors.items()}
            dynamic = {n: axes for n, axes in dynamic.items() if axes}
            path = os.path.join(tmp, f"{'-'.join(subset) or 'static'}.onnx")
            entry = {"dims": subset}
            report["tried"].append(entry)
            try:
                # Inputs are named as convert names them: NAME, or NAME.0, NAME.1 ... for a tuple's elements.
                exporter.export(model, exporter.ScriptArguments(args, defaulted), path, opset_version=opset,
                                dynamic_axes=dynamic, strict_dynamic_axes=True)
                exported = _ExportedModel(path)
            except (_pt2onnx.ExportError, RuntimeError, ValueError, TypeError) as e:
                entry["result"] = f"the export fails: {_first_line(e)}"
                if not subset:
                    report["export_error"] = _first_line(e)
                continue
            report["runtime"] = exported.runtime
            generator = torch.Generator().manual_seed(seed)
            trials = []
            for s in TRIAL_SIZES:
                if {d: s[d] for d in subset} not in trials:
                    trials.append({d: s[d] for d in subset})
            ran, problems, where = 0, [], []
            for sizes in trials:
                did_run, problem, text = _run_at(model, exported, names, args, defaulted, tensors, sizes,
                                                 example_sequence, generator)
                ran += did_run
                (problems if problem else where).append(problem or text)
            if problems or not ran:
                entry["result"] = problems[0] if problems else "; ".join(where)
                if not subset:
                    report["error"] = entry["result"]
                    return {}, report
                continue
            entry["result"] = "matches PyTorch"
            report["sizes"] = [w for w in where if "PyTorch does not run" not in w]
            return dynamic, report
    return {}, report
