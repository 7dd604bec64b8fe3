"""The `pt2onnx` command of a pip install (also `python -m pt2onnx_cli`).

The command line is C++ (cli/), compiled into pt2onnx's extension module, and runs inside this Python
process: a model defined in Python, or one whose PythonOp nodes call Python, then runs in the Python
that pt2onnx and torch are installed in, without needing a libpython shared library. The extension is
loaded on its own, not through `import pt2onnx`, so that commands which need no Python (converting an
archive) start without importing torch's Python side; the ones that do import it when they need it."""
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import sys

_EXTENSION = "pt2onnx._pt2onnx"
_EXIT_ERROR = 2  # the CLI's status for errors of the user's set-up (cli/commands/commands.h)


def _fail(message):
    print(f"pt2onnx: error: {message}", file=sys.stderr)
    raise SystemExit(_EXIT_ERROR)


def _exit_with_import_error(fallback):
    """Exits with what `import pt2onnx` says is wrong (its checks name the cause, e.g. the torch it
    was built for), else with `fallback`."""
    try:
        import pt2onnx  # noqa: F401
    except ImportError as cause:
        _fail(cause)
    _fail(fallback)


def _runs_the_torch_it_was_built_for(directory):
    """The check `import pt2onnx` makes, without importing torch: the installed torch's minor version
    against the one the extension was compiled with (python/build_info.py.in)."""
    info = {}
    with open(os.path.join(directory, "_build_info.py")) as f:
        exec(f.read(), info)
    try:
        running = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return False
    return ".".join(running.split("+")[0].split(".")[:2]) == info["TORCH_MINOR"]


def _load_extension():
    if _EXTENSION in sys.modules:
        return sys.modules[_EXTENSION]
    package = importlib.util.find_spec("pt2onnx")
    if package is None or not package.submodule_search_locations:
        _fail(f"the pt2onnx package is not installed in this Python ({sys.executable})")
    for directory in package.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(directory, "_pt2onnx" + suffix)
            if not os.path.exists(path):
                continue
            if not _runs_the_torch_it_was_built_for(directory):
                _exit_with_import_error("pt2onnx was built against another torch than this Python's")
            spec = importlib.util.spec_from_file_location(_EXTENSION, path)
            try:
                module = importlib.util.module_from_spec(spec)
            except ImportError as e:
                _exit_with_import_error(f"cannot load {path}: {e}")
            sys.modules[_EXTENSION] = module  # `import pt2onnx` later finds it loaded
            spec.loader.exec_module(module)
            return module
    _fail(f"no _pt2onnx extension module in {list(package.submodule_search_locations)}")


def main():
    sys.exit(_load_extension().cli_main(sys.argv))
