"""Seed corpora for the fuzz targets (fuzz/entry_points.h), from real exports: scripts/fuzz.sh runs
it once per build directory.  python fuzz/make_corpus.py OUT_DIR  ->  OUT_DIR/<target>/<name>"""
import io
import json
import pathlib
import sys
import warnings

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 8)
        self.b = torch.nn.Linear(8, 2)

    def forward(self, x):
        return torch.softmax(self.b(torch.relu(self.a(x))), -1)


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return torch.nn.functional.adaptive_avg_pool2d(torch.nn.functional.hardswish(self.bn(self.conv(x))), 1).flatten(1)


class Branches(torch.nn.Module):
    def forward(self, x, n: int):
        ys = []
        for i in range(n):
            if x.sum() > 0:
                x = x * 2 - i
            else:
                x = torch.tanh(x) + 1
            ys.append(x)
        return torch.stack(ys), x.shape[0]


class Signature(torch.nn.Module):
    def forward(self, xs: list[torch.Tensor], scale: float = 0.5, mask: torch.Tensor | None = None):
        y = torch.cat(xs) * scale
        return y if mask is None else y * mask


def models():
    return [("mlp", Mlp().eval(), (torch.randn(2, 4),)),
            ("conv", ConvNet().eval(), (torch.randn(1, 3, 8, 8),)),
            ("branches", torch.jit.script(Branches()), (torch.randn(3), 2)),
            ("signature", torch.jit.script(Signature()), ([torch.randn(2), torch.randn(3)],))]


def main(out):
    import pt2onnx

    out = pathlib.Path(out)
    dirs = {t: out / t for t in ("onnx_session", "npy_reader", "input_specs", "torchscript_archive", "python_op_attributes")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)

    for name, model, args in models():
        buffer = io.BytesIO()
        torch.jit.save(model if isinstance(model, torch.jit.ScriptModule) else torch.jit.trace(model, args), buffer)
        (dirs["torchscript_archive"] / f"{name}.pt").write_bytes(buffer.getvalue())
        try:
            pt2onnx.export(model, args, str(dirs["onnx_session"] / f"{name}.onnx"), opset_version=17)
        except Exception as e:  # a seed less, not a failure
            print(f"[corpus] {name}: not exported ({type(e).__name__})")
    # ONNX's node tests (Debian's libonnx-testdata): one small model per operator and attribute form.
    testdata = pathlib.Path("/usr/share/libonnx-testdata/data/node")
    for i, path in enumerate(sorted(testdata.glob("*/model.onnx"))):
        if i % 3 == 0 and path.stat().st_size < 65536:
            (dirs["onnx_session"] / f"node_{path.parent.name}.onnx").write_bytes(path.read_bytes())

    arrays = {"f32": np.random.rand(2, 3).astype(np.float32), "f64": np.arange(5.0), "i64": np.arange(6).reshape(2, 3),
              "scalar": np.array(3, dtype=np.int32), "empty": np.zeros((0, 4), np.float16), "bool": np.array([True, False]),
              "u8": np.arange(4, dtype=np.uint8), "i8": np.array([-1, 2], np.int8)}
    for name, a in arrays.items():
        buffer = io.BytesIO()
        np.save(buffer, a)
        (dirs["npy_reader"] / f"{name}.npy").write_bytes(buffer.getvalue())
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, arrays["f32"], version=(2, 0))
    (dirs["npy_reader"] / "v2.npy").write_bytes(buffer.getvalue())

    # Line 1's first byte picks the signature (fuzz/entry_points.cpp, by its value modulo 5).
    specs = {"tensor": "\x00\nx:1x3x224x224:float32\n", "scalars": "\x01\nx:2x3\nn=3\nscale=0.5\nflag=true\nmode=b\naxis x:0=batch\n",
             "lists": "\x02\nxs:[2x3,4:int64]\nsizes=[2,3]\nmask=none\naxis xs:1=n\n",
             "tuples": "\x03\nstate:(1x4,1x4)\npair=(1,2.5)\ns=3\n", "optional": "\x04\nmaybe:[2x2,none]\nscales=[0.5,2]\n"}
    for name, text in specs.items():
        (dirs["input_specs"] / f"{name}.txt").write_text(text)
    # Every PythonOp node of the autograd.Function samples exported in python_op mode, its attributes
    # as a JSON object (fuzz/python_op_attributes.py).
    import onnx
    from onnx import helper
    from samples import autograd_functions

    def json_value(a):
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            return v.decode()
        if isinstance(v, list):
            return [x.decode() if isinstance(x, bytes) else x for x in v]
        return v

    for name, builder in sorted(autograd_functions.BUILDERS.items()):
        model, args = builder()
        buffer = io.BytesIO()
        try:
            with warnings.catch_warnings():  # "exported as com.microsoft::PythonOp": wanted here
                warnings.simplefilter("ignore")
                pt2onnx.export(model, args, buffer, opset_version=17, autograd_functions="python_op")
        except Exception as e:  # a seed less, not a failure
            print(f"[corpus] {name}: not exported ({type(e).__name__})")
            continue
        nodes = [n for n in onnx.load_from_string(buffer.getvalue()).graph.node if n.op_type in ("PythonOp", "PythonOpGrad")]
        for k, node in enumerate(nodes):
            attrs = {a.name: json_value(a) for a in node.attribute if a.type != onnx.AttributeProto.GRAPH}
            (dirs["python_op_attributes"] / f"{name}_{k}.json").write_text(json.dumps(attrs, sort_keys=True))
    for target, d in dirs.items():
        print(f"[corpus] {target}: {sum(1 for _ in d.iterdir())} seeds in {d}")


if __name__ == "__main__":
    main(sys.argv[1])
