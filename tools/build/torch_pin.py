"""scikit-build-core metadata provider: pt2onnx's wheel depends on exactly the torch minor version
it is compiled against (its C++ ABI and TorchScript IR are those of that release), and its version
names that torch in a local version label, as torch extension projects do: 0.1.0+torch2.14."""
import importlib.metadata
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
TORCH_WHEEL_CMAKE = ROOT / "cmake" / "TorchWheel.cmake"


def supported_range():
    """((major, minor) oldest supported, (major, minor) first unsupported), read from
    cmake/TorchWheel.cmake, the one place that states it."""
    text = TORCH_WHEEL_CMAKE.read_text()
    bounds = []
    for name in ("PT2ONNX_TORCH_MIN_VERSION", "PT2ONNX_TORCH_BELOW_VERSION"):
        found = re.search(rf"^set\({name} (\d+)\.(\d+)\)", text, re.MULTILINE)
        assert found, f"{TORCH_WHEEL_CMAKE} does not set {name}"
        bounds.append((int(found.group(1)), int(found.group(2))))
    return tuple(bounds)


def project_version():
    """The version in CMakeLists.txt's project(), the one place that states it."""
    found = re.search(r"^project\(pt2onnx VERSION (\d+\.\d+\.\d+)", (ROOT / "CMakeLists.txt").read_text(), re.MULTILINE)
    assert found, "CMakeLists.txt's project() states no VERSION"
    return found.group(1)


def dynamic_metadata(settings, project):
    low, below = supported_range()
    wanted = f">= {low[0]}.{low[1]}, < {below[0]}.{below[1]}"
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError("pt2onnx builds against the torch installed in this Python, which has none: "
                           f"pip install torch ({wanted}) first, then pip install --no-build-isolation .")
    major, minor = (int(p) for p in version.split("+")[0].split(".")[:2])
    if not low <= (major, minor) < below:
        raise RuntimeError(f"pt2onnx needs torch {wanted}; this Python has torch {version}")
    return {"dependencies": [f"torch=={major}.{minor}.*"], "version": f"{project_version()}+torch{major}.{minor}"}
