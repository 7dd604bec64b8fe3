"""The check behind the dynamic axes `pt2onnx inspect` proposes: the model is exported with them and
the ONNX model is run (ONNX Runtime; pt2onnx's runtime for non-standard ops) at sizes other than the
example's (batch, sequence, height and width, time...: every dim argument_shapes names), against
PyTorch on the same inputs. A set of axes counts only when PyTorch runs forward() at one of those
sizes at least and every run matches; otherwise the dims are added one at a time, each kept when the
set still holds."""
import dataclasses
import os
import tempfile

import numpy as np
import onnx
import torch

from . import _pt2onnx, exporter, onnxruntime_oracle
from ._text import shortened
from .runtime import InferenceSession

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
        # Float noise is judged against the output's magnitude, not each element's: a log spectrum's
        # elements near its floor, or a sum of many products near 0, amplify it.
        finite = np.abs(e64[np.isfinite(e64)])
        scale = max(float(finite.max()) if finite.size else 0.0, 1.0)
        if not np.allclose(a64, e64, rtol=0, atol=ATOL + RTOL * scale, equal_nan=True):
            return f"output {k}: max abs difference {float(np.nanmax(np.abs(a64 - e64))):.3g}"
    return None


def _first_line(e):
    """An error's first line, with the next when the first only announces it ("...:")."""
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    text = lines[0] + (" " + lines[1] if lines[0].endswith(":") and len(lines) > 1 else "")
    return shortened(text, 300)


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


def _smaller(size):
    """A size below the example's for a non-batch dim, a multiple of what the example's is a multiple of
    (32 for images: strided networks take multiples of their stride)."""
    step = 32 if size % 32 == 0 and size >= 64 else 8 if size % 8 == 0 and size >= 32 else 1
    smaller = max(step, round(size * 0.625 / step) * step)
    return smaller if smaller != size else size + 2 * step  # an example of 1 can only grow


def _larger(size):
    step = 32 if size % 32 == 0 and size >= 64 else 8 if size % 8 == 0 and size >= 32 else 1
    return max(size + step, round(size * 1.375 / step) * step)


def trial_sizes(tensors):
    """Two sizes for each dim the axes of `tensors` name, other than the example's: batch 1 and 3, the
    others smaller and larger, alternately (one trial has a smaller height and a larger width, the other
    the opposite, so neither image is square)."""
    example = {}
    for t in tensors.values():
        for axis, dim in t.axes.items():
            if axis < len(t.shape):
                example.setdefault(dim, t.shape[axis])
    trials = [{}, {}]
    for i, (dim, size) in enumerate(example.items()):
        pair = ((1 if size != 1 else 2), 3) if dim == "batch" else (_smaller(size), _larger(size))
        if i % 2:
            pair = pair[::-1]
        trials[0][dim], trials[1][dim] = pair
    return trials


def _output_dims(path):
    """[(name, [dim names or sizes])] of the exported model's outputs."""
    proto = onnx.load(path, load_external_data=False)
    out = []
    for o in proto.graph.output:
        if o.type.HasField("tensor_type") and o.type.tensor_type.HasField("shape"):
            out.append((o.name, [d.dim_param or d.dim_value if (d.dim_param or d.HasField("dim_value")) else "?"
                                 for d in o.type.tensor_type.shape.dim]))
    return out


def _try_dims(model, names, args, defaulted, tensors, opset, example_sequence, subset, trials, tmp, seed):
    """Exports with the axes of `subset` dynamic and runs the model at the trial sizes. Returns (entry,
    dynamic axes, where it ran, export error or None, mismatch at the example's sizes or None)."""
    dynamic = {names[k]: {a: d for a, d in t.axes.items() if d in subset} for k, t in tensors.items()}
    dynamic = {n: axes for n, axes in dynamic.items() if axes}
    path = os.path.join(tmp, f"{'-'.join(subset) or 'static'}.onnx")
    entry = {"dims": list(subset)}
    try:
        # Inputs are named as convert names them: NAME, or NAME.0, NAME.1 ... for a tuple's elements.
        exporter.export(model, exporter.ScriptArguments(args, defaulted), path, opset_version=opset,
                        dynamic_axes=dynamic, strict_dynamic_axes=True)
        exported = _ExportedModel(path)
    except (_pt2onnx.ExportError, RuntimeError, ValueError, TypeError) as e:
        entry["result"] = f"the export fails: {_first_line(e)}"
        return entry, None, None, _first_line(e)
    entry["runtime"] = exported.runtime
    generator = torch.Generator().manual_seed(seed)
    sizes_tried = []
    for trial in trials if subset else [{}]:
        sizes = {d: trial[d] for d in subset}
        if sizes not in sizes_tried:
            sizes_tried.append(sizes)
    ran, problems, where = 0, [], []
    for sizes in sizes_tried:
        did_run, problem, text = _run_at(model, exported, names, args, defaulted, tensors, sizes,
                                         example_sequence, generator)
        ran += did_run
        (problems if problem else where).append(problem or text)
    if problems or not ran:
        entry["result"] = problems[0] if problems else "; ".join(where)
        return entry, None, None, None
    entry["result"] = "matches PyTorch"
    entry["outputs"] = _output_dims(path)
    return entry, dynamic, [w for w in where if "PyTorch does not run" not in w], None


def check(model, names, args, defaulted, tensors, opset, example_sequence, seed=0):
    """Exports `model` with the largest set of dims of `tensors` ({argument index: TensorArgument})
    that holds at other sizes, and returns (dynamic_axes {name: {axis: dim}}, report). All dims are
    tried together first; when that fails, each is added to the kept set in turn and kept when the
    set still holds, so every kept set was itself exported and run. The report has "tried":
    [{"dims", "result"}], "runtime", "sizes" (where the kept set was run), "outputs" (the kept model's
    output dims); "export_error" when the model does not export even without dynamic axes, "error"
    when it exports but differs from PyTorch at the example's own sizes."""
    dims = []
    for t in tensors.values():
        dims += [d for d in t.axes.values() if d not in dims]
    trials = trial_sizes(tensors)
    report = {"tried": [], "trial_sizes": trials}

    def attempt(subset):
        entry, dynamic, where, export_error = _try_dims(model, names, args, defaulted, tensors, opset,
                                                        example_sequence, subset, trials, tmp, seed)
        report["tried"].append(entry)
        if dynamic is not None:
            report.update(runtime=entry["runtime"], sizes=where, outputs=entry["outputs"])
        return dynamic, entry, export_error

    with tempfile.TemporaryDirectory(prefix="pt2onnx-inspect-") as tmp:
        if dims:
            dynamic, _, _ = attempt(dims)
            if dynamic is not None:
                return dynamic, report
        # The static model: it must export and match at the example's sizes before any axis is added.
        static, entry, export_error = attempt([])
        if static is None:
            if export_error:
                report["export_error"] = export_error
            else:
                report["error"] = entry["result"]
            return {}, report
        kept, dynamic = [], {}
        if len(dims) > 1:
            for d in dims:
                if kept + [d] == dims:  # all of them together: tried first, d is what failed
                    report["tried"].append({"dims": dims, "result": report["tried"][0]["result"]})
                    continue
                found, _, _ = attempt(kept + [d])
                if found is not None:
                    kept, dynamic = kept + [d], found
        return dynamic, report
