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


def _not_installed(what):
    """Skip a test of the installed package when it is not installed (a checkout built in
    place), or fail it when FASTDUAL_REQUIRE_SCRIPTS=1 (set by .ci/run, which installs it)."""
    if os.environ.get("FASTDUAL_REQUIRE_SCRIPTS") == "1":
        pytest.fail(f"{what} is not installed (FASTDUAL_REQUIRE_SCRIPTS=1)")
    pytest.skip(f"{what} is not installed (pip install the package, or set "
                f"FASTDUAL_REQUIRE_SCRIPTS=1 to make this a failure)")


def _script(name):
    path = shutil.which(name)
    if path is None:
        _not_installed(f"the {name} console script")
    return path


# From an unrelated directory, without PYTHONPATH, so that the installed package is the one
# imported.
_OUTSIDE = {**os.environ, "PYTHONPATH": ""}


@pytest.mark.parametrize("how", ["script", "module"])
def test_installed_entry_points(tmp_path, how):
    if how == "script":
        command = [_script("fastdual"), "demo", "--loss", "logistic"]
    else:
        found = subprocess.run([sys.executable, "-c", "import fastdual"], cwd=tmp_path,
                               capture_output=True, env=_OUTSIDE, timeout=120)
        if found.returncode != 0:
            _not_installed(f"the fastdual package (for {sys.executable} -m fastdual)")
        command = [sys.executable, "-m", "fastdual", "demo", "--loss", "logistic"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env=_OUTSIDE)
    assert result.returncode == 0, result.stderr
    assert "duality gap" in result.stdout


def test_installed_train_and_predict_scripts(tmp_path):
    data = _svmlight(tmp_path, "train.svm", 2)
    train_script, predict_script = _script("fastdual-train"), _script("fastdual-predict")
    trained = subprocess.run([train_script, "-s", "2", str(data), "m"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120,
                             env=_OUTSIDE)
    assert trained.returncode == 0, trained.stderr
    predicted = subprocess.run([predict_script, str(data), "m", "out"],
                               cwd=tmp_path, capture_output=True, text=True, timeout=120,
                               env=_OUTSIDE)
    assert predicted.returncode == 0 and predicted.stdout.startswith("Accuracy = ")


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


def _svmlight(tmp_path, name, k=2, n=150, seed=0):
    import numpy as np
    from sklearn.datasets import dump_svmlight_file
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    if k == 0:
        y = X @ rng.standard_normal(5)
    else:
        labels = rng.integers(0, k, n)
        X += np.eye(5)[labels % 5] * 3
        y = np.array([1, -1, 4, 2][:k])[labels]
    path = tmp_path / name
    dump_svmlight_file(X, y, str(path), zero_based=False)
    return path


@pytest.mark.parametrize("s, k", [(0, 2), (1, 2), (3, 3), (4, 3), (13, 0)])
def test_train_and_predict_as_liblinear_does(tmp_path, capsys, s, k):
    """`fastdual train` writes LIBLINEAR's model file (LIBLINEAR reads it and predicts the
    same); `fastdual predict` prints LIBLINEAR's lines."""
    import numpy as np
    import scipy.sparse as sp
    ll = pytest.importorskip("liblinear.liblinearutil")   # liblinear-official
    load_model, predict = ll.load_model, ll.predict
    from sklearn.datasets import load_svmlight_file
    data = _svmlight(tmp_path, "train.svm", k)
    model_path = tmp_path / "train.model"
    assert main(["train", "-s", str(s), "-c", "1", "-B", "1", "-e", "0.01", str(data),
                 str(model_path)]) == 0
    assert "optimization finished" in capsys.readouterr().out
    assert model_path.read_text().startswith("solver_type ")
    out_path = tmp_path / "out.txt"
    assert main(["predict", str(data), str(model_path), str(out_path)]) == 0
    printed = capsys.readouterr().out
    ours = np.array([float(v) for v in out_path.read_text().split()])
    X, y = load_svmlight_file(str(data), zero_based=False)
    labels, _, _ = predict([], sp.csr_matrix(X), load_model(str(model_path)), "-q")
    np.testing.assert_allclose(ours, labels, rtol=1e-9, atol=1e-9)
    if k:
        correct = int(np.sum(ours == y))
        assert f"Accuracy = {100.0 * correct / len(y):g}% ({correct}/{len(y)})" in printed
    else:
        assert "Mean squared error = " in printed and "Squared correlation" in printed


def test_predict_writes_probabilities_for_logistic_models(tmp_path, capsys):
    data = _svmlight(tmp_path, "train.svm", 2)
    assert main(["train", "-s", "0", "-q", str(data), str(tmp_path / "m")]) == 0
    assert main(["predict", "-b", "1", str(data), str(tmp_path / "m"), str(tmp_path / "o")]) == 0
    lines = (tmp_path / "o").read_text().splitlines()
    assert lines[0].split()[0] == "labels" and len(lines) == 151
    assert abs(sum(float(v) for v in lines[1].split()[1:]) - 1.0) < 1e-5   # printed as %g


@pytest.mark.parametrize("argv, message", [
    (["train", "-s", "21", "{data}"], "-s 21: fastdual trains LIBLINEAR's types"),
    (["train", "-s", "11", "-p", "0.5", "{data}"], "squared loss has no epsilon"),
    (["train", "{missing}"], "cannot read"),
    (["predict", "{data}", "{missing}", "{out}"], "No such file"),
])
def test_bad_arguments_and_files_are_one_line_errors(tmp_path, capsys, argv, message):
    data = _svmlight(tmp_path, "train.svm", 2)
    paths = dict(data=str(data), missing=str(tmp_path / "nope"), out=str(tmp_path / "o"))
    assert main([a.format(**paths) for a in argv]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_version_and_usage_errors_exit_like_argparse(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0 and "fastdual " in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "-c", "abc", "x"])
    assert exit_info.value.code == 2


def test_cross_validation_and_the_c_search(tmp_path, capsys):
    data = _svmlight(tmp_path, "train.svm", 2)
    assert main(["train", "-v", "3", "-s", "2", str(data)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Cross Validation Accuracy = ")
    assert main(["train", "-C", "-v", "3", "-s", "2", str(data)]) == 0
    assert capsys.readouterr().out.startswith("Best C = ")
    # A free intercept with an l1 term and the hinge: solver auto trains it by RDA, which takes
    # no warm start; the C search still runs, each C from a cold start.
    assert main(["train", "-C", "-v", "3", "-s", "3", "-B", "1", "--free-intercept",
                 "--l1-ratio", "0.5", "--max-epochs", "20", str(data)]) == 0
    assert capsys.readouterr().out.startswith("Best C = ")
    regression = _svmlight(tmp_path, "reg.svm", 0)
    assert main(["train", "-v", "3", "-s", "11", "-p", "0", str(regression)]) == 0
    assert capsys.readouterr().out.startswith("Cross Validation Mean squared error = ")


def test_liblinear_class_weight_syntax(tmp_path, capsys):
    """`-w1 5` (LIBLINEAR's) and `-w 1=5` train the same model, which differs from no weight."""
    data = _svmlight(tmp_path, "train.svm", 2)
    for name, extra in (("a", ["-w1", "5", "-w-1", "0.5"]), ("b", ["-w", "1=5", "-w-1=0.5"]),
                        ("c", [])):
        assert main(["train", "-q", "-e", "1e-6"] + extra + [str(data), str(tmp_path / name)]) == 0
    a, b, c = ((tmp_path / name).read_text() for name in "abc")
    assert a == b and a != c


def test_a_malformed_input_file_is_named_with_its_line(tmp_path, capsys):
    lines = ["1 1:0.5 2:1"] * 5000 + ["-1 1:0.2 x:3"] + ["1 3:1"] * 10
    (tmp_path / "bad.svm").write_text("\n".join(lines) + "\n")
    assert main(["train", str(tmp_path / "bad.svm")]) == 1
    err = capsys.readouterr().err
    assert "bad.svm' line 5001:" in err and "Traceback" not in err
