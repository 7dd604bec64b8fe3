"""README's install lines, run as printed, in a new venv beside a read-only copy of the sources:
the build tools line, then `pip install --no-build-isolation -v /path/to/pt2onnx` (nothing may be
written into the source tree), then the convert line on a scripted archive, checked against PyTorch
in ONNX Runtime. Slow (a full build; ccache makes a warm one a few minutes): opt-in, scripts/test_slow.sh."""
import os
import pathlib
import re
import shlex
import stat
import subprocess
import sys

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]


def readme_install_block():
    text = (ROOT / "README.md").read_text()
    start = text.index("**In your own venv**")
    block = re.search(r"```bash\n(.*?)```", text[start:], re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


def test_readme_install_lines_in_a_new_venv_from_a_read_only_checkout(tmp_path):
    lines = readme_install_block()
    assert [l.split()[:2] for l in lines] == [["pip", "install"], ["pip", "install"], ["pt2onnx", "convert"]], lines
    src = tmp_path / "pt2onnx-src"
    src.mkdir()
    subprocess.run(f"git -C {ROOT} archive HEAD | tar -x -C {src}", shell=True, check=True)
    for path in [src, *src.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bin_dir = venv / "bin"
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", VIRTUAL_ENV=str(venv),
               CCACHE_BASEDIR=str(src), CCACHE_NOHASHDIR="1")
    env.pop("PYTHONPATH", None)
    # "with your torch already installed"
    subprocess.run([str(bin_dir / "pip"), "install", "-q", f"torch=={torch.__version__.split('+')[0]}"], env=env,
                   check=True)
    work = tmp_path / "work"
    work.mkdir()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)

        def forward(self, x):
            return torch.relu(self.conv(x)).mean((2, 3))

    model = Net().eval()
    torch.jit.save(torch.jit.script(model), str(work / "scripted.pt"))
    for line in lines:
        line = line.replace("/path/to/pt2onnx", str(src))
        proc = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True,
                              timeout=4 * 3600)
        assert proc.returncode == 0, (line, proc.stdout[-3000:], proc.stderr[-3000:])
    assert not any(p.name == "build" for p in src.iterdir())  # nothing written into the checkout
    import onnxruntime
    x = torch.randn(1, 3, 224, 224)
    got = onnxruntime.InferenceSession(str(work / "model.onnx")).run(None, {"x": x.numpy()})[0]
    with torch.no_grad():
        np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-4, atol=1e-5)
