"""Writes the TorchScript archives of tests/archives/torch-<version>/ with the torch this Python has.

The archives in torch-1.13/ were written by Debian 12's python3-torch (1.13.1+dfsg, which reports
torch.__version__ "1.13.0a0"):

    apt-get install -y --no-install-recommends python3-torch
    cd tests/archives && /usr/bin/python3 make_archives.py        # -> torch-1.13/

Those in torch-2.9/ and torch-2.15/ by the oldest and the newest torch pt2onnx builds against, each in
the venv of its opt-in tier (scripts/test_torch.sh --keep VERSION makes it):

    cd tests/archives && ../../.venv-torch2.9.1/bin/python make_archives.py     # -> torch-2.9/
    cd tests/archives && ../../.venv-torch2.15.0/bin/python make_archives.py    # -> torch-2.15/

For each model NAME it writes
    NAME.pt     the archive (torch.jit.trace or torch.jit.script, then torch.jit.save)
    NAME.npz    the input sets and the outputs of this torch for each (set S: keys "S/in/<arg>" and
                "S/out/<k>"; int arguments are 0-d int64 arrays); the set "example" is the one the
                manifest's CLI input shapes describe
    NAME.json   the manifest: archive, how it was made, forward()'s arguments, the CLI's --input-shape and
                --dynamic-axis arguments, the Python export's dynamic_axes, the input sets
The outputs are those of the reloaded archive (torch.jit.load of NAME.pt), with no_grad, one thread.
The script runs itself with PYTHONHASHSEED=0, so the same torch writes the same bytes.

tests/e2e/test_archives.py converts these archives under the torch pt2onnx is built against, and
imports the model classes and input sets below to write the same archives with that torch at test time.
"""
import json
import os
import pathlib
import sys

import numpy as np
import torch
import torch.nn.functional as F


class SmallCnn(torch.nn.Module):
    """conv / batch norm / relu / max pool / conv / adaptive avg pool / linear; traced."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16 * 2 * 2, 10)

    def forward(self, x):
        y = F.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        y = torch.relu(self.bn2(self.conv2(y)))
        y = F.adaptive_avg_pool2d(y, 2)
        return self.fc(torch.flatten(y, 1))


class Control(torch.nn.Module):
    """A for loop over an int argument around a data-dependent if; scripted."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 6)

    def forward(self, x, n: int):
        for i in range(n):
            if bool(x.sum() > 0):
                x = torch.tanh(self.fc(x))
            else:
                x = x * 0.5 - float(i)
        return x, x.sum(1)


class Upgraded(torch.nn.Module):
    """Ops whose schemas have operator-version upgraders (caffe2/serialize/versions.h): div (version 4),
    full with an int fill value (version 5), linspace (version 8), gelu with approximate (version 10);
    scripted. A torch that writes them records the highest such version as the archive's file format
    version, so a reader applies the upgraders only to archives older than each change."""

    def forward(self, x, a, b):
        d = b.abs() + 1                                      # never 0: floor/trunc of ints by 0 raise
        true_div = torch.div(a, d, rounding_mode=None)       # int / int -> float
        floor_div = torch.div(a, d, rounding_mode="floor")   # stays int64
        trunc_div = torch.div(a, d, rounding_mode="trunc")
        per_col = x / x.size(1)                              # Tensor / int
        full = torch.full([x.size(0), x.size(1)], 7)         # int fill: int64 (version 5)
        ramp = torch.linspace(0.0, 1.0, steps=5)
        g = F.gelu(x) + F.gelu(x, approximate="tanh") * ramp
        return true_div + per_col, floor_div + full, trunc_div, a / d, g


class ScriptedLstm(torch.nn.Module):
    """A 2-layer bidirectional batch-first LSTM; scripted."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True)
        self.head = torch.nn.Linear(12, 3)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out), h, c


def _ints(low, high, shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=g, dtype=torch.int64)


def _randn(shape, seed, scale=1.0, offset=0.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g) * scale + offset


def _upgraded_set(batch, seed):
    return {"x": _randn((batch, 5), seed), "a": _ints(-20, 20, (batch, 5), seed + 1),
            "b": _ints(-6, 6, (batch, 5), seed + 2)}


# name -> (how, model factory, argument kinds, input sets ("example" first), CLI dynamic axes, Python
# dynamic_axes). An input set maps argument names to tensors or Python ints.
def specs():
    return {
        "cnn": dict(
            how="trace", args={"x": "tensor"},
            sets={"example": {"x": _randn((2, 3, 8, 8), 1)},
                  "batch1": {"x": _randn((1, 3, 8, 8), 2)},
                  "batch5": {"x": _randn((5, 3, 8, 8), 3, scale=2.0)}},
            cli_dynamic=["x:0=batch"], dynamic_axes={"x": {0: "batch"}}),
        "control": dict(
            how="script", args={"x": "tensor", "n": "int"},
            sets={"example": {"x": _randn((2, 6), 4), "n": 2},
                  "zero_iterations": {"x": _randn((3, 6), 5), "n": 0},
                  "positive_many": {"x": _randn((4, 6), 6, offset=1.0), "n": 5},
                  "negative": {"x": _randn((1, 6), 7, offset=-1.0), "n": 3}},
            cli_dynamic=["x:0=batch"], dynamic_axes={"x": {0: "batch"}}),
        "upgraded": dict(
            how="script", args={"x": "tensor", "a": "tensor", "b": "tensor"},
            sets={"example": _upgraded_set(2, 10), "batch1": _upgraded_set(1, 20),
                  "batch6": _upgraded_set(6, 30)},
            cli_dynamic=["x:0=batch", "a:0=batch", "b:0=batch"],
            dynamic_axes={"x": {0: "batch"}, "a": {0: "batch"}, "b": {0: "batch"}}),
        "lstm": dict(
            how="script", args={"x": "tensor"},
            sets={"example": {"x": _randn((2, 5, 4), 40)},
                  "batch1_long": {"x": _randn((1, 9, 4), 41)},
                  "batch3_short": {"x": _randn((3, 2, 4), 42)}},
            cli_dynamic=["x:0=batch", "x:1=time"], dynamic_axes={"x": {0: "batch", 1: "time"}}),
    }


def make_model(name):
    """The model NAME, seeded, with batch norm statistics from one training-mode pass, in eval mode."""
    torch.manual_seed({"cnn": 0, "control": 1, "upgraded": 2, "lstm": 3}[name])
    model = {"cnn": SmallCnn, "control": Control, "upgraded": Upgraded, "lstm": ScriptedLstm}[name]()
    if name == "cnn":
        model.train()
        with torch.no_grad():
            model(torch.randn(8, 3, 8, 8) * 2 + 0.5)
    return model.eval()


def call_args(spec, input_set):
    return tuple(input_set[a] for a in spec["args"])


def to_module(name, spec, model):
    if spec["how"] == "trace":
        return torch.jit.trace(model, call_args(spec, spec["sets"]["example"]))
    return torch.jit.script(model)


def flatten(outputs):
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    return [t for o in outputs for t in flatten(o)]


def cli_input_shapes(spec):
    shapes = []
    for arg, kind in spec["args"].items():
        value = spec["sets"]["example"][arg]
        if kind == "int":
            shapes.append(f"{arg}={int(value)}")
        else:
            dtype = {torch.float32: "float32", torch.int64: "int64"}[value.dtype]
            shapes.append(f"{arg}:{'x'.join(map(str, value.shape))}:{dtype}")
    return shapes


def write(out_dir):
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    for name, spec in specs().items():
        archive = out_dir / f"{name}.pt"
        model = make_model(name)
        to_module(name, spec, model).save(str(archive))
        loaded = torch.jit.load(str(archive))
        arrays = {}
        for set_name, input_set in spec["sets"].items():
            for arg, value in input_set.items():
                is_tensor = isinstance(value, torch.Tensor)
                arrays[f"{set_name}/in/{arg}"] = value.numpy() if is_tensor else np.array(value, dtype=np.int64)
            with torch.no_grad():
                outputs = flatten(loaded(*call_args(spec, input_set)))
            for k, t in enumerate(outputs):
                arrays[f"{set_name}/out/{k}"] = t.numpy()
        np.savez(out_dir / f"{name}.npz", **arrays)
        manifest = {
            "archive": archive.name,
            "written_by": f"torch {torch.__version__} (torch.jit.{spec['how']} + torch.jit.save)",
            "model": f"make_archives.py:{type(model).__name__}",
            "args": spec["args"],
            "cli_input_shapes": cli_input_shapes(spec),
            "cli_dynamic_axes": spec["cli_dynamic"],
            "dynamic_axes": {k: {str(a): d for a, d in v.items()} for k, v in spec["dynamic_axes"].items()},
            "input_sets": list(spec["sets"]),
            "data": f"{name}.npz",
        }
        (out_dir / f"{name}.json").write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"{archive}: {os.path.getsize(archive)} bytes")


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != "0":  # scripting writes class constants in set order: same bytes every run
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    major_minor = ".".join(torch.__version__.split(".")[:2])
    write(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent / f"torch-{major_minor}")
