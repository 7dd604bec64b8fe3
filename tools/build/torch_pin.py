"""scikit-build-core metadata provider: pt2onnx's wheel depends on exactly the torch minor version
it is compiled against (its C++ ABI and TorchScript IR are those of that release)."""
import importlib.metadata

MIN_VERSION, BELOW_VERSION = (2, 13), (2, 15)  # cmake/TorchWheel.cmake checks the same range


def dynamic_metadata(settings, project):
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError("pt2onnx builds against the torch installed in this Python, which has none: "
                           "pip install torch (>= 2.13, < 2.15) first, then pip install --no-build-isolation .")
    major, minor = (int(p) for p in version.split("+")[0].split(".")[:2])
    if not MIN_VERSION <= (major, minor) < BELOW_VERSION:
        raise RuntimeError(f"pt2onnx needs torch >= 2.13, < 2.15; this Python has torch {version}")
    return {"dependencies": [f"torch=={major}.{minor}.*"]}
