"""One OpInfo entry, every sample, through an exporter and back (tests/opinfo/README.md).

An entry of PyTorch's operator corpus (`op_db`) gives sample inputs; each sample becomes a module
whose tensors are its inputs and whose other arguments are constants, traced (or scripted from
source text, for the scripted subset). The exporter writes it at each opset; ONNX Runtime and the
builtin runtime run it; the outputs are compared with eager PyTorch. The truth is eager float32;
float tolerances follow that op's own float32 error (its distance to a float64 evaluation of the same
sample), so an op that is ill-conditioned on a sample is allowed what PyTorch itself is off by.
"""
import io
import warnings

import numpy as np
import torch

# Sample statuses, from best to worst; an entry's status is its worst sample's.
OK, NOT_APPLICABLE, ERROR, MISMATCH, RUN_FAILURE = "ok", "n/a", "error", "mismatch", "run-failure"
SILENT = (MISMATCH, RUN_FAILURE)  # written without an error, and wrong
RANK = {OK: 0, NOT_APPLICABLE: 0, ERROR: 1, MISMATCH: 2, RUN_FAILURE: 2}

ATOL, RTOL = 1e-5, 1e-4
FLOAT64_GAP_FACTOR = 8  # an exporter may be off by a few times the op's own float32 error


def entry_name(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def float32_entries():
    """Every op_db entry with a float32 CPU variant, by name (sorted, deterministic)."""
    from torch.testing._internal.common_methods_invocations import op_db
    entries = {}
    for op in op_db:
        if torch.float32 in op.supported_dtypes("cpu"):
            entries[entry_name(op)] = op
    return dict(sorted(entries.items()))


class NotApplicable(Exception):
    """The sample cannot be a model of tensors in and tensors out (ONNX has no complex, no sparse, ...)."""


def _flatten(value, tensors):
    """Replaces every tensor leaf of `value` with a slot number; returns the template."""
    if isinstance(value, torch.Tensor):
        if value.is_complex():
            raise NotApplicable("complex tensor argument")
        if value.layout != torch.strided:
            raise NotApplicable(f"{value.layout} tensor argument")
        tensors.append(value)
        return _Slot(len(tensors) - 1)
    if isinstance(value, (list, tuple)):
        items = [_flatten(v, tensors) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: _flatten(v, tensors) for k, v in value.items()}
    if isinstance(value, complex):
        raise NotApplicable("complex scalar argument")
    return value


class _Slot:
    def __init__(self, index):
        self.index = index


def _rebuild(template, tensors):
    if isinstance(template, _Slot):
        return tensors[template.index]
    if isinstance(template, list):
        return [_rebuild(v, tensors) for v in template]
    if isinstance(template, tuple):
        return tuple(_rebuild(v, tensors) for v in template)
    if isinstance(template, dict):
        return {k: _rebuild(v, tensors) for k, v in template.items()}
    return template


class SampleModule(torch.nn.Module):
    """forward(*tensors) = op(sample.input, *sample.args, **sample.kwargs), the non-tensors constant."""

    def __init__(self, op, template):
        super().__init__()
        self.op, self.template = op, template

    def forward(self, *tensors):
        value, args, kwargs = _rebuild(self.template, list(tensors))
        return self.op(value, *args, **kwargs)


def _output_leaves(value):
    if isinstance(value, torch.Tensor):
        if value.is_complex():
            raise NotApplicable("complex output")
        if value.layout != torch.strided:
            raise NotApplicable(f"{value.layout} output")
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _output_leaves(v)]
    raise NotApplicable(f"{type(value).__name__} output (not a tensor)")


def _as_float64(tensors):
    return [t.double() if t.is_floating_point() else t for t in tensors]


class Sample:
    """One sample, ready to export: its module, example tensors, eager outputs (float32 and float64)."""

    def __init__(self, op, sample):
        tensors = []
        self.template = _flatten((sample.input, tuple(sample.args), dict(sample.kwargs)), tensors)
        self.op = op
        self.tensors = [t.detach().clone() for t in tensors]
        self.module = SampleModule(op.op, self.template).eval()
        with torch.no_grad():
            try:
                first = _output_leaves(self.module(*[t.clone() for t in self.tensors]))
            except NotApplicable:
                raise
            except Exception as e:  # the sample is not valid for eager PyTorch either
                raise NotApplicable(f"eager raises {type(e).__name__}") from None
            again = _output_leaves(self.module(*[t.clone() for t in self.tensors]))
        if not first:
            raise NotApplicable("no tensor output")
        if any(t.dtype == torch.bfloat16 for t in first):
            raise NotApplicable("bfloat16 output (numpy, which the runtimes return, has no bfloat16)")
        if any(not _same(a, b) for a, b in zip(first, again)):
            raise NotApplicable("nondeterministic (two eager runs differ)")
        self.expected = [t.detach().clone() for t in first]
        self.expected64 = self._float64_outputs()
        self.description = describe(self.tensors, sample)

    def _float64_outputs(self):
        try:
            with torch.no_grad():
                out = _output_leaves(self.module(*_as_float64(self.tensors)))
        except Exception:
            return None
        if len(out) != len(self.expected):
            return None
        return [o.detach() if o.shape == e.shape else None for o, e in zip(out, self.expected)]

    def traced(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.jit.trace(self.module, tuple(self.tensors), check_trace=False)

    def compare(self, outputs):
        """None when `outputs` (numpy arrays; a list for an ONNX sequence, a returned List[Tensor])
        match eager PyTorch, else what differs."""
        outputs = [leaf for o in outputs for leaf in (o if isinstance(o, list) else [o])]
        if len(outputs) != len(self.expected):
            return f"{len(outputs)} outputs, PyTorch has {len(self.expected)}"
        for i, (got, want) in enumerate(zip(outputs, self.expected)):
            reason = _compare_one(np.asarray(got), want, self.expected64[i] if self.expected64 else None)
            if reason:
                return f"output {i}: {reason}"
        return None


def _same(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        return bool(torch.equal(torch.nan_to_num(a, nan=0.5), torch.nan_to_num(b, nan=0.5))
                    and torch.equal(a.isnan(), b.isnan()))
    return bool(torch.equal(a, b))


_NUMPY_OF = {torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
             torch.int32: np.int32, torch.int64: np.int64, torch.float16: np.float16,
             torch.float32: np.float32, torch.float64: np.float64}


def _compare_one(got, want, want64):
    want_np = want.numpy() if want.dtype != torch.bfloat16 else want.float().numpy()
    if tuple(got.shape) != tuple(want_np.shape):
        return f"shape {list(got.shape)}, PyTorch {list(want_np.shape)}"
    expected_type = _NUMPY_OF.get(want.dtype)
    if expected_type is not None and got.dtype != expected_type:
        return f"dtype {got.dtype}, PyTorch {want.dtype}"
    if not np.issubdtype(want_np.dtype, np.floating):
        if not np.array_equal(got, want_np):
            bad = np.argwhere(got != want_np)[0].tolist() if got.size else []
            return f"values differ (exact), first at {bad}"
        return None
    got64, ref = got.astype(np.float64), want_np.astype(np.float64)
    if not np.array_equal(np.isnan(got64), np.isnan(ref)):
        return "NaN positions differ"
    finite = np.isfinite(ref)
    if not np.array_equal(got64[~finite & ~np.isnan(ref)], ref[~finite & ~np.isnan(ref)]):
        return "infinities differ"
    if np.isinf(got64[finite]).any():
        return "infinite where PyTorch is finite"
    allowed = ATOL + RTOL * np.abs(ref)
    if want64 is not None:
        exact = want64.numpy().astype(np.float64)
        gap = np.where(np.isfinite(exact), np.abs(exact - ref), 0.0)
        allowed = allowed + FLOAT64_GAP_FACTOR * gap
    if want.dtype == torch.float16:
        allowed = allowed + 1e-3 * (1 + np.abs(ref))
    error = np.where(finite, np.abs(got64 - ref), 0.0)
    if (error > allowed).any():
        worst = np.unravel_index(np.argmax(error - allowed), error.shape)
        return (f"values differ: {got64[worst]:.7g} vs PyTorch {ref[worst]:.7g} at {list(map(int, worst))} "
                f"(allowed {allowed[worst]:.2g})")
    return None


def describe(tensors, sample):
    shapes = ", ".join(f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}" for t in tensors)
    extra = [repr(a) for a in sample.args if not isinstance(a, torch.Tensor)]
    extra += [f"{k}={v!r}" for k, v in sample.kwargs.items() if not isinstance(v, torch.Tensor)]
    text = f"({shapes})" + (" " + ", ".join(extra) if extra else "")
    return text if len(text) < 200 else text[:197] + "..."


def first_line(error):
    """The line that says why: for pt2onnx's unsupported-operator report, each op with its note."""
    lines = [l.strip() for l in str(error).strip().splitlines() if l.strip()]
    if not lines:
        return type(error).__name__
    if lines[0].startswith("unsupported operators"):
        ops = [l.split()[0] for l in lines[1:] if "::" in l.split()[0] and not l.startswith("schema")]
        notes = [l[len("note: "):] for l in lines if l.startswith("note: ")]
        return ("unsupported " + ", ".join(ops) + (": " + notes[0] if notes else ""))[:300]
    return lines[0][:300]


RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}


def _random_ops(model_bytes):
    """ONNX ops of the model that draw random numbers (Dropout only when given a training_mode)."""
    import onnx
    found = set()
    for node in onnx.load_from_string(model_bytes).graph.node:
        if node.op_type in RANDOM_OPS or (node.op_type == "Dropout" and len(node.input) == 3 and node.input[2]):
            found.add(node.op_type)
    return sorted(found)


def _graph_input_names(model_bytes):
    import onnx
    model = onnx.load_from_string(model_bytes)
    initializers = {i.name for i in model.graph.initializer}
    return {i.name for i in model.graph.input if i.name not in initializers}


def export_pt2onnx(sample, opset):
    import pt2onnx
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(sample.module, tuple(sample.tensors), buffer, opset_version=opset,
                       input_names=[f"x{i}" for i in range(len(sample.tensors))])
    return buffer.getvalue()


def export_torch_onnx(sample, opset):
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(sample.module, tuple(sample.tensors), buffer, opset_version=opset, dynamo=False,
                          input_names=[f"x{i}" for i in range(len(sample.tensors))])
    return buffer.getvalue()


EXPORTERS = {"pt2onnx": export_pt2onnx, "torch.onnx": export_torch_onnx}


def _feeds(model_bytes, sample):
    """The sample's tensors the written graph takes as inputs: an exporter drops the ones it does not
    use (or folds them), so they are fed by the names we gave them."""
    kept = _graph_input_names(model_bytes)
    return [(f"x{i}", t) for i, t in enumerate(sample.tensors) if f"x{i}" in kept]


def _run(runtime, model_bytes, sample):
    feeds = _feeds(model_bytes, sample)
    if runtime == "onnxruntime":
        import onnxruntime
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    else:
        import pt2onnx
        session = pt2onnx.InferenceSession(model_bytes, threads=1)
    return session.run(None, {name: t.numpy() for name, t in feeds})


def run_sample(sample, exporter, opset, runtimes):
    """(status, detail) of one sample at one opset."""
    try:
        model = EXPORTERS[exporter](sample, opset)
    except Exception as e:
        return ERROR, first_line(e)
    for runtime in runtimes:
        try:
            outputs = _run(runtime, model, sample)
        except Exception as e:
            return RUN_FAILURE, f"{runtime}: {first_line(e)}"
        reason = sample.compare(outputs)
        if reason:
            if _random_ops(model):  # OpInfo seeds eager PyTorch; a written random op draws anew
                return NOT_APPLICABLE, f"random: the written model draws random numbers ({', '.join(_random_ops(model))})"
            return MISMATCH, f"{runtime}: {reason}"
    return OK, ""


def run_entry(op, exporter, opsets, runtimes, max_samples=None, prepare=None):
    """Every sample of one entry: its status (the worst of its applicable samples'; n/a when none
    applies), sample counts, and the first sample of that status with what went wrong. `prepare`
    may replace a sample's traced module (the scripted subset) or declare it not applicable."""
    result = {"status": NOT_APPLICABLE, "samples": 0, "ok": 0, "n/a": 0, "detail": "", "sample": ""}
    torch.manual_seed(0)
    try:
        samples = list(op.sample_inputs("cpu", torch.float32, requires_grad=False))
    except Exception as e:
        result["detail"] = f"sample_inputs raises: {first_line(e)}"
        return result
    for raw in samples[:max_samples]:
        result["samples"] += 1
        try:
            sample = Sample(op, raw)
            if prepare:
                prepare(sample)
            else:
                sample.traced()
        except Exception as e:
            result["n/a"] += 1
            reason = str(e) if isinstance(e, NotApplicable) else f"not traceable: {first_line(e)}"
            if result["status"] == NOT_APPLICABLE and not result["detail"]:
                result["detail"] = reason
            continue
        status, detail = OK, ""
        for opset in opsets:
            status, detail = run_sample(sample, exporter, opset, runtimes)
            if status != OK:
                detail = f"opset {opset}: {detail}"
                break
        if status == NOT_APPLICABLE:
            result["n/a"] += 1
            if result["status"] == NOT_APPLICABLE and not result["detail"]:
                result["detail"] = detail
            continue
        if status == OK:
            result["ok"] += 1
        if result["status"] == NOT_APPLICABLE or RANK[status] > RANK[result["status"]]:
            result.update(status=status, detail=detail, sample=sample.description if status != OK else "")
    if result["samples"] == 0:
        result["detail"] = "no sample"
    return result
