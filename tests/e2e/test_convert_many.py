"""pt2onnx.convert_many (docs/fleet.md): a fleet with a corrupt archive converted on a local process
pool (the default), on a thread pool, on a multiprocessing.Pool, and on a Dask LocalCluster with
several worker processes, and on Ray's local pool, giving the CLI's fleet results on the
same fleet (the same statuses, byte-identical models); a task the engine loses is that archive's
failure; a second run is up to date; options become the CLI's flags, and those that cannot apply to
every archive are refused."""
import concurrent.futures
import json
import multiprocessing
import os
import subprocess

import onnx
import pytest
import torch

import pt2onnx
from pt2onnx import fleet_executor

NAMES = ["a.pt", "b.pt", "broken.pt", "c.pt", "nested/d.pt"]


def _make_fleet(directory):
    torch.manual_seed(0)
    for k, name in enumerate(NAMES):
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name == "broken.pt":
            path.write_bytes(b"PK\x03\x04" + os.urandom(100))
            continue
        model = torch.nn.Sequential(torch.nn.Linear(4, 3 + k), torch.nn.Tanh()).eval()
        torch.jit.save(torch.jit.script(model), str(path))
        path.with_name(path.name + ".args").write_text("-i input:2x4 -d input:0=batch\n")


@pytest.fixture(scope="module")
def fleet(cli, tmp_path_factory):
    """The fleet, and the CLI's results on it: (models dir, CLI output dir, {name: result})."""
    root = tmp_path_factory.mktemp("convert_many")
    _make_fleet(root / "models")
    proc = subprocess.run([cli, "convert", str(root / "models"), "-o", str(root / "cli"), "--summary-json",
                           str(root / "cli.json")], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stderr  # the corrupt archive
    results = json.loads((root / "cli.json").read_text())["results"]
    return root / "models", root / "cli", {r["name"]: r for r in results}


def _check_like_the_cli(results, out, fleet):
    models, cli_out, cli_results = fleet
    assert [r["name"] for r in results] == NAMES
    for r in results:
        assert r["status"] == cli_results[r["name"]]["status"], r
        assert set(r) >= {"name", "archive", "output", "status", "seconds", "args", "args_from"}
        if r["name"] == "broken.pt":
            assert r["status"] == "failed" and r["error"] == cli_results["broken.pt"]["error"]
            continue
        assert r["status"] == "converted" and r["output"] == str(out / r["name"].replace(".pt", ".onnx"))
        # The same conversion as the CLI's: byte-identical models.
        cli_model = cli_out / r["name"].replace(".pt", ".onnx")
        assert open(r["output"], "rb").read() == cli_model.read_bytes()
        onnx.checker.check_model(r["output"])


def test_default_process_pool_gives_the_clis_results(fleet, tmp_path):
    results = pt2onnx.convert_many(fleet[0], tmp_path / "out", workers=2)
    _check_like_the_cli(results, tmp_path / "out", fleet)
    again = pt2onnx.convert_many(fleet[0], tmp_path / "out", workers=2)
    assert {r["name"]: r["status"] for r in again} == {n: "failed" if n == "broken.pt" else "up to date" for n in NAMES}


def test_any_executor_and_a_lost_task(fleet, tmp_path):
    class LosesOneTask(concurrent.futures.ThreadPoolExecutor):
        """A thread pool whose task for c.pt is lost, as an engine loses a killed worker's task."""

        def submit(self, fn, *args, **kwargs):
            if args[2] == "c.pt":
                lost = concurrent.futures.Future()
                lost.set_exception(RuntimeError("worker tcp://10.0.0.7:4000 died while running the task"))
                return lost
            return super().submit(fn, *args, **kwargs)

    with LosesOneTask(max_workers=2) as pool:
        results = pt2onnx.convert_many([fleet[0] / "a.pt", fleet[0] / "c.pt", fleet[0] / "broken.pt"], tmp_path / "o",
                                       executor=pool)
    status = {r["name"]: r for r in results}
    assert status["a.pt"]["status"] == "converted" and status["broken.pt"]["status"] == "failed"
    assert status["c.pt"]["status"] == "failed"
    assert "the task converting it died: RuntimeError: worker tcp://10.0.0.7:4000 died" in status["c.pt"]["error"]
    assert not (tmp_path / "o" / "c.onnx").exists()


def test_dask_local_cluster_with_several_workers(fleet, tmp_path):
    import distributed  # requirements/common.txt pins it: missing is a failure, not a skip
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        results = pt2onnx.convert_many(fleet[0], tmp_path / "dask", executor=client.get_executor())
    _check_like_the_cli(results, tmp_path / "dask", fleet)


def test_a_multiprocessing_pool(fleet, tmp_path):
    """A multiprocessing.Pool-shaped pool (apply_async, as Ray's ray.util.multiprocessing.Pool) runs
    the fleet as an executor does; the pool stays the caller's."""
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pt2onnx.convert_many(fleet[0], tmp_path / "pool", executor=pool)
        assert pool.apply_async(len, ("abc",)).get(timeout=60) == 3  # still running
    _check_like_the_cli(results, tmp_path / "pool", fleet)


def test_ray_local_pool(fleet, tmp_path):
    """Ray in local mode: its ray.util.multiprocessing.Pool (tasks in Ray's worker processes) as the
    executor."""
    import ray  # requirements/common.txt pins it: missing is a failure, not a skip
    from ray.util.multiprocessing import Pool
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        with Pool(processes=2) as pool:
            results = pt2onnx.convert_many(fleet[0], tmp_path / "ray", executor=pool)
    finally:
        ray.shutdown()
    _check_like_the_cli(results, tmp_path / "ray", fleet)


def test_an_executor_of_another_shape_is_refused(fleet, tmp_path):
    with pytest.raises(TypeError, match="executor must be a concurrent.futures.Executor.*got list"):
        pt2onnx.convert_many(fleet[0], tmp_path / "o", executor=[])
    assert not (tmp_path / "o").exists()


def test_options_become_the_clis_flags():
    flags = fleet_executor.convert_flags({"opset_version": 17, "do_constant_folding": False,
                                               "custom_opsets": {"my.ops": 2}, "ort_attention": True,
                                               "run_on_example": False})
    assert flags == ["--opset=17", "--no-constant-folding", "--custom-opset=my.ops=2", "--ort-attention",
                     "--no-example-run"]
    with pytest.raises(TypeError, match="input_names.*manifest or an ARCHIVE.args"):
        fleet_executor.convert_flags({"input_names": ["x"]})


def test_opset_option_reaches_every_archive(fleet, tmp_path):
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        results = pt2onnx.convert_many([fleet[0] / "a.pt", fleet[0] / "b.pt"], tmp_path / "o", executor=pool,
                                       opset_version=14)
    for r in results:
        assert r["status"] == "converted"
        assert {o.domain: o.version for o in onnx.load(r["output"]).opset_import}[""] == 14
