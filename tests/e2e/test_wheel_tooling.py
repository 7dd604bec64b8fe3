"""Issue 60, the wheel tooling's own logic, without building a wheel (scripts/build_wheel.sh and
scripts/test_wheel.sh do that, opt-in): the tags a wheel gets from the extension modules it carries,
the matrix of packaging/wheels.toml against requirements/, and the headers script's refusal of a
Python no Debian release here packages."""
import pathlib
import subprocess
import sys
import tomllib
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "build"))
import repair_wheel  # noqa: E402


def make_wheel(path, names):
    with zipfile.ZipFile(path, "w") as z:
        for name in names:
            z.writestr(name, b"")
    return path


def test_a_wheel_is_tagged_with_every_python_whose_module_it_carries(tmp_path):
    wheel = make_wheel(tmp_path / "a.whl", [
        "pt2onnx/__init__.py", "pt2onnx/libpt2onnx.so",
        "pt2onnx/_pt2onnx.cpython-313-x86_64-linux-gnu.so", "pt2onnx/_pt2onnx.cpython-311-x86_64-linux-gnu.so",
        "pt2onnx/libpt2onnx_onnxruntime_bridge_py311.so", "pt2onnx/libpt2onnx_onnxruntime_bridge_py313.so"])
    assert repair_wheel.python_tags(wheel) == "cp311.cp313"
    wheel = make_wheel(tmp_path / "b.whl", ["pt2onnx/_pt2onnx.cpython-310-x86_64-linux-gnu.so",
                                            "pt2onnx/_pt2onnx.cpython-315-x86_64-linux-gnu.so"])
    assert repair_wheel.python_tags(wheel) == "cp310.cp315"


def test_a_wheel_without_an_extension_module_is_refused(tmp_path):
    wheel = make_wheel(tmp_path / "c.whl", ["pt2onnx/__init__.py", "pt2onnx/libpt2onnx.so",
                                            "other/_pt2onnx.cpython-311-x86_64-linux-gnu.so"])
    with pytest.raises(SystemExit, match="carries no pt2onnx/_pt2onnx.cpython-3XY"):
        repair_wheel.python_tags(wheel)


def test_the_wheel_matrix_names_every_supported_torch_once_with_its_pin():
    matrix = tomllib.loads((ROOT / "packaging" / "wheels.toml").read_text())["torch"]
    pinned = {}
    for requirements in (ROOT / "requirements").glob("torch-*.txt"):
        (pin,) = [line for line in requirements.read_text().splitlines() if line.startswith("torch==")]
        pinned[requirements.relative_to(ROOT).as_posix()] = pin.removeprefix("torch==")
    assert sorted(row["requirements"] for row in matrix.values()) == sorted(pinned)
    for minor, row in matrix.items():
        assert pinned[row["requirements"]].rsplit(".", 1)[0] == minor, (minor, row)
        versions = [tuple(map(int, v.split("."))) for v in row["pythons"]]
        assert versions == sorted(set(versions)) and all((3, 10) <= v <= (3, 15) for v in versions), (minor, row)


@pytest.mark.parametrize("version", ["3.10", "3.12"])
def test_headers_of_a_python_no_debian_release_packages_are_refused_with_the_way_to_give_them(version, tmp_path):
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "python_headers.sh"), version, str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert f"CPython {version}" in proc.stderr
    assert f"-DPT2ONNX_PYTHON{version.replace('.', '')}_INCLUDE_DIR" in proc.stderr
    assert not any(tmp_path.iterdir())
