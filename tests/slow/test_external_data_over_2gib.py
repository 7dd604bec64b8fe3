"""Opt-in tier (bash scripts/test_slow.sh): a model over protobuf's 2 GiB limit is written with its
weights in one side file, and ONNX Runtime loads and runs it (about a minute and 2.3 GB of disk; the
external-data writing itself is tested in the fast suite with a lowered threshold)."""
import onnx
import torch

import pt2onnx
from samples import ort


def test_model_over_2gib_uses_one_external_data_file(tmp_path):
    torch.manual_seed(0)
    # 2 x 17000 x 17000 float32 weights: 2.31 GB.
    model = torch.nn.Sequential(torch.nn.Linear(17000, 17000, bias=False), torch.nn.ReLU(),
                                torch.nn.Linear(17000, 17000)).eval()
    x = torch.randn(1, 17000)
    path = tmp_path / "big.onnx"
    summary = pt2onnx.export(model, (x,), path, opset_version=17, input_names=["x"])
    assert summary["external_data_path"] == str(path) + ".data"
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["big.onnx", "big.onnx.data"]
    assert path.stat().st_size < 1 << 20
    assert (tmp_path / "big.onnx.data").stat().st_size >= 2 * 17000 * 17000 * 4
    proto = onnx.load(str(path), load_external_data=False)
    locations = {e.value for t in proto.graph.initializer for e in t.external_data if e.key == "location"}
    assert locations == {"big.onnx.data"}
    with torch.no_grad():
        expected = model(x).numpy()
    (actual,) = ort.run(path, {"x": x.numpy()}).values()
    assert ort.max_rel_error(expected, actual) <= 1e-4
