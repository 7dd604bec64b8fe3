"""`pt2onnx.convert_many`: a fleet of TorchScript archives converted on the engine the caller already
runs (docs/fleet.md): any `concurrent.futures.Executor`, such as a Dask client's `get_executor()`,
a multiprocessing.Pool-shaped pool (Ray's `ray.util.multiprocessing.Pool`), or a local process pool
by default. It is fleet mode of the CLI (`pt2onnx convert DIR
-o OUT`) with the executor as its pool: each archive is one task, and the task runs `pt2onnx
convert` in a process of its own, so a corrupt or crashing archive, and a task the engine loses
(a killed worker), are that archive's failure, never the run's."""
import concurrent.futures
import multiprocessing
import os

from . import fleet

# pt2onnx.export's keyword arguments (as torch.onnx names them) that apply to every archive, and the
# convert flag each becomes: a function of the value giving the flags.
_FLAGS = {
    "opset_version": lambda v: [f"--opset={int(v)}"] if v is not None else [],
    "do_constant_folding": lambda v: [] if v else ["--no-constant-folding"],
    "export_params": lambda v: [] if v else ["--no-export-params"],
    "keep_initializers_as_inputs": lambda v: ["--keep-initializers-as-inputs"] if v else [],
    "custom_opsets": lambda v: [f"--custom-opset={d}={int(n)}" for d, n in sorted((v or {}).items())],
    "external_data_threshold": lambda v: [f"--external-data-threshold={int(v)}"] if v is not None else [],
    "type_inference": lambda v: [f"--type-inference={v}"] if v and v != "static" else [],
    "fusable_attention": lambda v: ["--fusable-attention"] if v else [],
    "ort_attention": lambda v: ["--ort-attention"] if v else [],
    "run_on_example": lambda v: [] if v else ["--no-example-run"],
    "fallthrough": lambda v: ["--fallthrough"] if v else [],
}


class PoolExecutor(concurrent.futures.Executor):
    """A pool shaped like multiprocessing.Pool (`apply_async` with `callback` and `error_callback`: the
    standard library's, Ray's `ray.util.multiprocessing.Pool`) as a concurrent.futures.Executor. The
    pool stays the caller's: shutdown() leaves it running."""

    def __init__(self, pool):
        self._pool = pool

    def submit(self, fn, /, *args, **kwargs):
        future = concurrent.futures.Future()
        future.set_running_or_notify_cancel()
        self._pool.apply_async(fn, args, kwargs, callback=future.set_result, error_callback=future.set_exception)
        return future


def as_executor(executor):
    """`executor` as a concurrent.futures.Executor: an Executor as it is, a multiprocessing.Pool-shaped
    pool wrapped in PoolExecutor; anything else a TypeError."""
    if callable(getattr(executor, "submit", None)):
        return executor
    if callable(getattr(executor, "apply_async", None)):
        return PoolExecutor(executor)
    raise TypeError(f"executor must be a concurrent.futures.Executor (submit) or a multiprocessing.Pool-like pool "
                    f"(apply_async), got {type(executor).__name__}")


def convert_flags(options):
    """The convert flags of `options`; TypeError for one that does not apply to a fleet."""
    unknown = sorted(set(options) - set(_FLAGS))
    if unknown:
        raise TypeError(f"convert_many() got options it cannot apply to every archive: {', '.join(unknown)} "
                        f"(it takes {', '.join(sorted(_FLAGS))}; an archive's own arguments go in a manifest "
                        f"or an ARCHIVE.args file)")
    return [flag for name, value in options.items() for flag in _FLAGS[name](value)]


def convert_many(archives, out_dir, executor=None, *, manifest=None, input_specs=(), dynamic_axes=(), workers=None,
                 force=False, allow_static=False, timeout=3600, progress=None, **options):
    """Converts `archives` (archive paths, directories searched for *.pt/*.pth/*.ptl/*.torchscript,
    or globs) into `out_dir`, keeping their relative paths (`models/a/b.pt` -> `OUT/a/b.onnx`).
    Archives, `out_dir` and `manifest` may be fsspec URLs (s3://bucket/models, gs://...; `pip install
    pt2onnx[fleet]`): a prefix is searched as a directory, each archive is downloaded by the task that
    converts it and each model uploaded whole (docs/fleet.md, "Archives in object stores"; memory://
    is this process's: give it a thread pool).

    executor: any concurrent.futures.Executor the conversions are submitted to (Dask:
    `distributed.Client(...).get_executor()`), or a multiprocessing.Pool-shaped pool (the standard
    library's, Ray's `ray.util.multiprocessing.Pool`); None: a local process pool of `workers`
    processes (default: the CPU count). The workers need
    pt2onnx installed (each runs its `pt2onnx` CLI) and the paths readable where they run (for URLs,
    fsspec and the store's credentials).

    An archive's arguments come from `manifest` (a JSON file mapping relative paths, names or globs to
    argument lists), else an ARCHIVE.args file beside it, else `input_specs` / `dynamic_axes` (the
    CLI's -i and -d strings, for every archive), else what `pt2onnx inspect` finds. `options` are
    pt2onnx.export's that apply to every archive: opset_version, do_constant_folding, export_params,
    keep_initializers_as_inputs, custom_opsets, external_data_threshold, type_inference,
    fusable_attention, ort_attention, run_on_example, fallthrough.

    Returns one dict per archive, sorted by name, with the fields of the CLI's summary JSON: "name",
    "archive", "output", "args", "args_from", "status" ("converted", "up to date", "static" or
    "failed"), "seconds", and "error" (failed) or "static_reason". An output newer than its archive
    and made with the same arguments is "up to date" (force=True converts it again).
    """
    flags = convert_flags(options)
    if isinstance(archives, (str, os.PathLike)):
        archives = [archives]
    defaults = [a for s in input_specs for a in ("-i", s)] + [a for d in dynamic_axes for a in ("-d", d)]
    own = executor is None
    if not own:
        executor = as_executor(executor)
    else:
        # spawn: the pool's processes do not inherit this process's threads (torch's) in a fork
        executor = concurrent.futures.ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1,
                                                          mp_context=multiprocessing.get_context("spawn"))
    try:
        summary = fleet.run_fleet(None, [os.fspath(a) for a in archives], os.fspath(out_dir),
                                  os.fspath(manifest) if manifest else None, defaults, flags, force=force,
                                  timeout=timeout, progress=progress or (lambda line: None),
                                  allow_static=allow_static, executor=executor)
    finally:
        if own:
            executor.shutdown()
    return summary["results"]
