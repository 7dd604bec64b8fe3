"""Opt-in tier (not run by scripts/test.sh; run with `bash scripts/test_slow.sh`): the larger scripted
torchvision models of samples/scripted_zoo.py, checked like the fast group."""
import pytest

from samples import scripted_zoo
from tests.e2e.scripted_zoo_checks import check_scripted_model


@pytest.mark.parametrize("name", list(scripted_zoo.SLOW))
def test_scripted_torchvision_model_matches_torch(name, tmp_path, cli):
    check_scripted_model(name, tmp_path, cli)
