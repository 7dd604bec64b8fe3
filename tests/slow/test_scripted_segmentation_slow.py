"""Opt-in tier (bash scripts/test_slow.sh): the larger scripted torchvision segmentation models,
checked like the fast ones of tests/e2e/test_scripted_segmentation.py."""
import pytest

from tests.e2e.test_scripted_segmentation import SLOW, check_segmentation_archive


@pytest.mark.parametrize("name", SLOW)
def test_scripted_segmentation_archive_matches_torch_at_other_image_sizes(name, tmp_path, cli):
    check_segmentation_archive(name, tmp_path, cli)
