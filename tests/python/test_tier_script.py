"""scripts/test_torch.sh's arguments (the tiers themselves are opt-in runs of several GB: docs/testing.md)."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "test_torch.sh")


def run(*args):
    return subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, timeout=60)


def test_without_a_version_it_prints_its_usage_and_every_pinned_torch():
    result = run()
    assert result.returncode != 0
    assert "usage: scripts/test_torch.sh [--keep] [--zoo] VERSION" in result.stderr
    for version in ("2.9.1", "2.10.0", "2.11.0", "2.12.1", "2.13.0", "2.14.1", "2.15.0"):
        assert version in result.stderr


def test_a_torch_without_pins_is_refused_before_anything_is_installed():
    for args in (["9.9.9"], ["--zoo", "--keep", "9.9.9"], ["--keep", "--zoo", "2.8"]):
        result = run(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "no requirements/torch-" in result.stderr and "which torch to install is not known" in result.stderr
        assert "pins:" not in result.stdout
