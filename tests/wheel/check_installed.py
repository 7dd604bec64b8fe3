"""Run by scripts/test_wheel.sh inside the clean root, with the venv's python, after `pip install` of
one pt2onnx wheel: what a new user does first, each result compared with PyTorch. Standalone: the
repository is not in the root. Prints one line per check; exits non-zero on the first failure."""
import os
import pathlib
import subprocess
import sys
import sysconfig
import tempfile

import numpy as np
import torch

import pt2onnx

TOL = 1e-4


class SmallNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.norm(self.conv(x)))
        return torch.softmax(self.head(y.mean(dim=(2, 3))), dim=-1)


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        sys.exit(1)


def max_error(got, expected):
    return float(np.abs(np.asarray(got) - expected.detach().numpy()).max())


def run_ours(path, x):
    (got,) = pt2onnx.InferenceSession(path).run(None, {"x": x.numpy()})
    return got


def ldd_problems():
    """Every shared object of the installed package: each library resolves, inside the wheel (pt2onnx/,
    pt2onnx.libs/), the user's torch (its lib/ directory and the nvidia/ wheels a CUDA torch loads),
    or the base system (this root's /lib, /usr/lib)."""
    site = pathlib.Path(sysconfig.get_paths()["platlib"])
    torch_lib = (pathlib.Path(torch.__file__).parent / "lib").resolve()
    # site-packages/nvidia: the CUDA libraries torch's own libraries load (a CUDA torch's dependencies).
    allowed = [site / "pt2onnx", site / "pt2onnx.libs", torch_lib, site / "nvidia", pathlib.Path("/lib"),
               pathlib.Path("/usr/lib")]
    problems, count = [], 0
    objects = [p for d in ("pt2onnx", "pt2onnx.libs") for p in (site / d).glob("*.so*")]
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    for obj in objects:
        count += 1
        out = subprocess.run(["ldd", str(obj)], capture_output=True, text=True, env=env).stdout
        for line in out.splitlines():
            if "not found" in line:
                problems.append(f"{obj.name}: {line.strip()}")
            elif "=>" in line and "/" in line.split("=>")[1]:
                target = pathlib.Path(line.split("=>")[1].split("(")[0].strip()).resolve()
                if not any(target.is_relative_to(a.resolve()) for a in allowed):
                    problems.append(f"{obj.name}: {line.strip()}")
                if target.is_relative_to(pathlib.Path("/usr/lib").resolve()) and "python" in target.name:
                    problems.append(f"{obj.name} loads a libpython: {line.strip()}")
    return count, problems


FUNCTIONS = """
import torch


class Halve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.from_numpy(x.detach().numpy() / 2)  # leaves torch: exported as com.microsoft::PythonOp

    @staticmethod
    def backward(ctx, g):
        return g / 2
"""


def check_python_op_in_onnxruntime(tmp):
    """When onnxruntime is installed: a model holding a PythonOp runs in a plain onnxruntime session with
    pt2onnx.register_onnxruntime_ops, on another batch than the example's."""
    try:
        import onnxruntime
    except ImportError:
        print("skip PythonOp in onnxruntime: onnxruntime is not installed in this root", flush=True)
        return
    (tmp / "wheel_functions.py").write_text(FUNCTIONS)
    sys.path.insert(0, str(tmp))
    import wheel_functions

    class WithPythonOp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x):
            return wheel_functions.Halve.apply(self.fc(x)) + 1

    model = WithPythonOp().eval()
    path = str(tmp / "python_op.onnx")
    pt2onnx.export(model, (torch.randn(2, 4),), path, input_names=["x"], dynamic_axes={"x": {0: "batch"}},
                   autograd_functions="python_op")
    so = onnxruntime.SessionOptions()
    pt2onnx.register_onnxruntime_ops(so, path)
    x = torch.randn(6, 4)
    (got,) = onnxruntime.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x.numpy()})
    with torch.no_grad():
        err = max_error(got, model(x))
    check(f"a PythonOp model in onnxruntime {onnxruntime.__version__} with pt2onnx's custom-op library", err < TOL,
          f"max error {err:.2e}")


def main():
    torch.manual_seed(0)
    model = SmallNet().eval()
    x = torch.randn(2, 3, 16, 16)
    other = torch.randn(5, 3, 24, 20)  # another batch size and image size than the example's
    cli = pathlib.Path(sys.executable).parent / "pt2onnx"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        # 1. The CLI on a TorchScript archive.
        torch.jit.trace(model, x).save(str(tmp / "net.pt"))
        proc = subprocess.run([str(cli), "convert", str(tmp / "net.pt"), "-o", str(tmp / "cli.onnx"), "-i", "x:2x3x16x16",
                               "-d", "x:0=batch", "-d", "x:2=h", "-d", "x:3=w", "--input-names", "x"],
                              capture_output=True, text=True)
        check("pt2onnx convert (CLI)", proc.returncode == 0, proc.stderr.strip()[-800:])
        with torch.no_grad():
            expected = model(other)
        err = max_error(run_ours(str(tmp / "cli.onnx"), other), expected)
        check("the CLI's model in pt2onnx.InferenceSession matches PyTorch on another batch and size", err < TOL,
              f"max error {err:.2e}")
        # 2. The Python drop-in for torch.onnx.export.
        pt2onnx.export(model, (x,), str(tmp / "api.onnx"), input_names=["x"], output_names=["y"],
                       dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
        other_batch = torch.randn(7, 3, 16, 16)
        with torch.no_grad():
            expected = model(other_batch)
        err = max_error(run_ours(str(tmp / "api.onnx"), other_batch), expected)
        check("pt2onnx.export + pt2onnx.InferenceSession match PyTorch on another batch", err < TOL,
              f"max error {err:.2e}")
        # 3. The version line names the torch it was built for, which is this one.
        version = subprocess.run([str(cli), "--version"], capture_output=True, text=True).stdout
        check("pt2onnx --version names this torch", f"built against torch {torch.__version__.split('+')[0]}" in version,
              version.replace("\n", " | "))
        # 4. A PythonOp model in stock onnxruntime, through the custom-op library the wheel installs.
        check_python_op_in_onnxruntime(tmp)
    count, problems = ldd_problems()
    check(f"ldd of the package's {count} shared objects: only the wheel, torch and the base system", not problems,
          "; ".join(problems))
    print("all checks passed")


if __name__ == "__main__":
    main()
