"""The `fastdual` command and `python -m fastdual`."""
import os
import shutil
import subprocess
import sys

import pytest

import fastdual
from fastdual.cli import main


def test_demo_prints_accuracy_gap_and_time(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "test accuracy" in out and "duality gap" in out and "training time" in out
    accuracy = float(out.split("test accuracy")[1].split()[0])
    assert accuracy > 0.9
    assert "converged: True" in out


def test_no_subcommand_prints_help(capsys):
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out


@pytest.mark.parametrize("how", ["script", "module"])
def test_installed_entry_points(tmp_path, how):
    if how == "script":
        script = shutil.which("fastdual")
        assert script is not None, "the fastdual console script is not installed"
        command = [script, "demo", "--loss", "logistic"]
    else:
        command = [sys.executable, "-m", "fastdual", "demo", "--loss", "logistic"]
    # From an unrelated directory, so that the installed package is the one imported.
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": ""})
    assert result.returncode == 0, result.stderr
    assert "duality gap" in result.stdout


def test_the_package_is_compiled():
    from fastdual import _gap, _losses, _rows, _sdca
    for module in (_gap, _losses, _rows, _sdca):
        assert module.__file__.endswith((".so", ".pyd")), module.__file__
    assert fastdual.__version__
