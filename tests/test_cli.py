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
    import pathlib
    import importlib
    root = pathlib.Path(fastdual.__file__).parent
    modules = sorted(p.relative_to(root.parent).with_suffix("").as_posix().replace("/", ".")
                     for p in root.rglob("*.pyx"))
    if not modules:   # an installed wheel: its sources are shipped too (package data)
        raise AssertionError(f"no .pyx beside the installed package in {root}")
    for name in modules:
        module = importlib.import_module(name)
        assert module.__file__.endswith((".so", ".pyd")), module.__file__
    assert fastdual.__version__
