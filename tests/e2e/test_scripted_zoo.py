"""torchvision classifiers scripted (the fast group of samples/scripted_zoo.py), through
pt2onnx.export and the CLI, in ONNX Runtime and pt2onnx's runtime against PyTorch. The larger ones
are the opt-in tier tests/slow/test_scripted_zoo_slow.py (see docs/testing.md)."""
import pytest

from samples import scripted_zoo
from tests.e2e.scripted_zoo_checks import check_scripted_model


@pytest.mark.parametrize("name", list(scripted_zoo.FAST))
def test_scripted_torchvision_model_matches_torch(name, tmp_path, cli):
    check_scripted_model(name, tmp_path, cli)
