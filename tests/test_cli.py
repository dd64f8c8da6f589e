"""The `fastdual` command and `python -m fastdual`."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

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


def _fresh_process(code, folder):
    """The output of `python -c code` run in a new process from `folder` (the installed
    fastdual, not the repository's sources), which must succeed."""
    result = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True,
                            text=True, timeout=120, env=_OUTSIDE)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_small_problems_do_not_import_scipy_linalg(tmp_path):
    """scipy.linalg (0.05-0.2 s of a process's start-up) is imported only to form a large
    matrix by BLAS's blocks: a command-line run of the dual hinge solver, an SDCA fit, Newton's
    direct steps on a small problem (scattered Hessian, fastdual's own Cholesky) and the
    Cholesky solve of Newton's and cd's steps at any size (LAPACK's through numpy.linalg above
    OWN_CHOLESKY_MAX unknowns) never import it; Newton's direct steps where the Hessian is
    formed by BLAS's blocks (many dense rows) do."""
    _svmlight(tmp_path, "train.svm", 2)
    code = ("import sys\n"
            "import numpy as np\n"
            "import fastdual\n"
            "from fastdual import cli\n"
            "assert cli.main(['train', '-s', '3', '-q', 'train.svm', 'm']) == 0\n"
            "assert cli.main(['train', '-s', '11', '-q', 'train.svm', 'm']) == 0\n"
            "rng = np.random.default_rng(0)\n"
            "X = rng.normal(size=(50, 4))\n"
            "y = np.sign(X[:, 0] + 0.1)\n"
            "fastdual.train(X, y, loss='logistic', solver='sdca')\n"
            "m = fastdual.train(X, y, loss='logistic', solver='newton', linear_solver='direct')\n"
            "assert m.converged_\n"
            "from fastdual.solvers.common import OWN_CHOLESKY_MAX, solve_spd\n"
            "B = rng.normal(size=(OWN_CHOLESKY_MAX, OWN_CHOLESKY_MAX))\n"
            "assert solve_spd(B @ B.T + np.eye(OWN_CHOLESKY_MAX), B[0]) is not None\n"
            "B = rng.normal(size=(OWN_CHOLESKY_MAX + 1, OWN_CHOLESKY_MAX + 1))\n"
            "assert solve_spd(B @ B.T + np.eye(OWN_CHOLESKY_MAX + 1), B[0]) is not None\n"
            "print('scipy.linalg' in sys.modules)\n"
            "X = rng.normal(size=(3000, 40))\n"
            "y = np.sign(X[:, 0] + 0.1)\n"
            "fastdual.train(X, y, loss='logistic', solver='newton', linear_solver='direct')\n"
            "print('scipy.linalg' in sys.modules)\n")
    assert _fresh_process(code, tmp_path).split()[-2:] == ["False", "True"]
    # (the last problem's Hessian is formed by blocks, the small ones' scattered)
    from fastdual._problem import build_problem
    from fastdual.solvers import newton
    for n, d, blocks in ((50, 4, False), (3000, 40, True)):
        labels = np.where(np.arange(n) % 2, 1.0, -1.0)
        problem = build_problem(np.ones((n, d)), labels, loss="logistic", alpha=1.0,
                                C=None, l1_ratio=0.0, fit_intercept=True, intercept_scaling=1.0,
                                sample_weight=None, loss_params={})
        assert newton.by_blocks(*newton.hessian_costs(problem)[:2]) == blocks


def test_training_on_numpy_arrays_imports_no_scipy(tmp_path):
    """A training on a numpy X (small enough for fastdual's own Cholesky) needs numpy alone:
    SDCA, Newton, cd on pure l1, Crammer-Singer and the multinomial import no scipy module."""
    code = ("import sys\n"
            "import numpy as np\n"
            "import fastdual\n"
            "rng = np.random.default_rng(0)\n"
            "X = rng.random((100, 5))\n"
            "y = np.where(rng.standard_normal(100) > 0, 1.0, -1.0)\n"
            "for options in (dict(loss='hinge'), dict(loss='logistic', solver='newton'),\n"
            "                dict(loss='squared_hinge', l1_ratio=1.0, solver='cd')):\n"
            "    assert fastdual.train(X, y, **options).converged_\n"
            "for strategy in ('crammer_singer', 'multinomial'):\n"
            "    fastdual.train(X, np.arange(100) % 3, multiclass=strategy,\n"
            "                   loss='hinge' if strategy == 'crammer_singer' else 'logistic')\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n")
    assert _fresh_process(code, tmp_path).strip() == "[]"


def _csr(matrix):
    """The scipy CSR matrix of a _validation.Matrix's rows."""
    return sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr),
                         shape=(matrix.n_samples, matrix.n_features))


@pytest.mark.parametrize("s", [2, 5, 11])
def test_the_command_reads_rows_without_scipy_sparse_and_trains_the_same_model(
        tmp_path, monkeypatch, s):
    """`train` (plain, with -v and with -C) hands the file's validated rows to fastdual.train
    (_validation.csr_rows; folds by Matrix.take_rows): no scipy.sparse in the process (about
    0.15 s of its start-up), the column methods' layout (-s 5, cd) included; the model is the
    one trained on scikit-learn's reading of the same file as a scipy CSR or CSC matrix, bit
    for bit."""
    data = _svmlight(tmp_path, "train.svm", 0 if s == 11 else 3)
    code = ("import sys\n"
            "from fastdual import cli\n"
            f"for extra in ([], ['-v', '2'], ['-C'] if {s} == 2 else []):\n"
            f"    assert cli.main(['train', '-s', '{s}', '-B', '1', '-q', 'train.svm', 'm']\n"
            "                    + extra) == 0\n"
            "print('scipy.sparse' in sys.modules)\n")
    assert _fresh_process(code, tmp_path).split()[-1] == "False"
    from sklearn.datasets import load_svmlight_file
    from fastdual import cli
    from fastdual.formats import load_liblinear
    assert main(["train", "-s", str(s), "-B", "1", "-q", str(data), str(tmp_path / "rows")]) == 0
    # the same command on scikit-learn's reading of the file as a scipy matrix, CSR, and CSC
    # (whose columns cd reads as they are, where the rows' come from rows.csr_columns)
    X_ref, y_ref = load_svmlight_file(str(data), zero_based=False)
    for form in ("csr", "csc"):
        matrix = X_ref.asformat(form)
        monkeypatch.setattr(cli, "_read_libsvm", lambda path, n_features=None: (matrix, y_ref))
        assert main(["train", "-s", str(s), "-B", "1", "-q", str(data),
                     str(tmp_path / form)]) == 0
        ours, theirs = (load_liblinear(str(tmp_path / name)) for name in ("rows", form))
        np.testing.assert_array_equal(ours.coef_, theirs.coef_)
        np.testing.assert_array_equal(ours.intercept_, theirs.intercept_)



def test_a_wide_file_trains_without_scipy_sparse_through_the_gram_floor(tmp_path):
    """More features than rows and kappa >= 5 for logistic (-s 0) and the squared
    epsilon-insensitive loss (-s 11): solver="auto" estimates the rows' Gram floor
    (auto.gram_floor, by rows.rows_gram), once per command (each reads the file anew), without
    scipy.sparse; on these random rows it is above GRAM_FLOOR (plain SDCA)."""
    from sklearn.datasets import dump_svmlight_file
    rng = np.random.default_rng(3)
    X = sp.random(80, 4000, density=0.004, format="csr", random_state=4,
                  data_rvs=rng.standard_normal)
    X = X[np.diff(X.indptr) > 0]
    dump_svmlight_file(X, np.where(rng.random(X.shape[0]) < 0.5, 1, -1),
                       str(tmp_path / "wide.svm"), zero_based=False)
    code = ("import sys\n"
            "from fastdual import cli\n"
            "from fastdual.solvers import auto\n"
            "estimates, estimate = [], auto._gram_floor\n"
            "auto._gram_floor = lambda *args: estimates.append(estimate(*args)) or estimates[-1]\n"
            "for s in ('0', '11'):\n"
            "    assert cli.main(['train', '-s', s, '-c', '100', '-B', '1', '-q', 'wide.svm',\n"
            "                     'm']) == 0\n"
            "print(len(estimates), min(estimates) >= auto.GRAM_FLOOR)\n"
            "print('scipy.sparse' in sys.modules)\n")
    assert _fresh_process(code, tmp_path).split() == ["2", "True", "False"]

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
    (["train", "-s", "21", "-n", "0.3", "{data}", "{out}"],
     "-s 21 (LIBLINEAR's one-class SVM, with -n nu) is not in fastdual"),
    (["train", "-s", "9", "{data}"], "-s 9: fastdual trains LIBLINEAR's types"),
    (["train", "{missing}"], "cannot read"),
    (["train", "-q", "{data}", "{missing}/m.model"], "cannot write the model file"),
    (["train", "-q", "{data}", "{dir}"], "cannot write the model file"),
    (["predict", "{data}", "{missing}", "{out}"], "No such file"),
    (["predict", "{data}", "{model}", "{missing}/out"], "cannot write"),
    (["predict", "{nan}", "{model}", "{out}"], "nan.svm' line 2: feature 3 has the value nan"),
    (["predict", "{empty}", "{model}", "{out}"], "empty.svm' holds no samples"),
    (["train", "{big}"], "big.svm' line 1: feature index 2147483648 is outside LIBLINEAR's"),
    (["predict", "-b", "1", "{data}", "{model}", "{out}"],
     "probability output is only supported for logistic regression"),
    (["predict", "{data}", "{strings}", "{out}"], "the model's classes are not numbers"),
    (["train", "{one}"], "y has only one class (1.0); classification needs two or more"),
    (["demo", "-C", "0"], "-C must be a positive number"),
    (["demo", "-C", "nan"], "-C must be a positive number"),
    (["demo", "--tol", "-1"], "--tol must be a number >= 0"),
    (["demo", "--tol", "nan"], "--tol must be a number >= 0"),
])
def test_bad_arguments_and_files_are_one_line_errors(tmp_path, capsys, argv, message):
    import numpy as np
    data = _svmlight(tmp_path, "train.svm", 2)
    (tmp_path / "nan.svm").write_text("1 1:0.5\n-1 2:1 3:nan\n")
    (tmp_path / "empty.svm").write_text("")
    (tmp_path / "one.svm").write_text("1 1:1\n1 2:1\n")
    (tmp_path / "big.svm").write_text("1 2147483648:1\n-1 1:1\n")
    (tmp_path / "out").write_text("kept\n")
    assert main(["train", "-q", "-s", "3", str(data), str(tmp_path / "m.model")]) == 0
    fastdual.train(np.eye(4), ["a", "b", "a", "b"], loss="hinge").save(tmp_path / "s.npz")
    paths = dict(data=str(data), missing=str(tmp_path / "nope"), out=str(tmp_path / "out"),
                 model=str(tmp_path / "m.model"), nan=str(tmp_path / "nan.svm"),
                 empty=str(tmp_path / "empty.svm"), big=str(tmp_path / "big.svm"),
                 dir=str(tmp_path), strings=str(tmp_path / "s.npz"),
                 one=str(tmp_path / "one.svm"))
    capsys.readouterr()
    assert main([a.format(**paths) for a in argv]) == 1
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err
    assert len(captured.err.splitlines()) == 1 and not captured.out
    assert (tmp_path / "out").read_text() == "kept\n"      # refused before it is opened


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
    assert capsys.readouterr().out.splitlines()[-1].startswith("Best C = ")
    # A free intercept with an l1 term and the hinge: solver auto trains it by RDA, which takes
    # no warm start; the C search still runs, each C from a cold start.
    assert main(["train", "-C", "-v", "3", "-s", "3", "-B", "1", "--free-intercept",
                 "--l1-ratio", "0.5", "--max-epochs", "20", "-q", str(data)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("Best C = ")
    regression = _svmlight(tmp_path, "reg.svm", 0)
    assert main(["train", "-v", "3", "-s", "11", "-p", "0", str(regression)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Cross Validation Mean squared error = ")
    assert lines[1].startswith("Cross Validation Squared correlation coefficient = ")


def test_liblinear_class_weight_syntax(tmp_path, capsys):
    """`-w1 5` (LIBLINEAR's) and `-w 1=5` train the same model, which differs from no weight."""
    data = _svmlight(tmp_path, "train.svm", 2)
    for name, extra in (("a", ["-w1", "5", "-w-1", "0.5"]), ("b", ["-w", "1=5", "-w-1=0.5"]),
                        ("c", [])):
        assert main(["train", "-q", "-e", "1e-6"] + extra + [str(data), str(tmp_path / name)]) == 0
    a, b, c = ((tmp_path / name).read_text() for name in "abc")
    assert a == b and a != c


@pytest.mark.parametrize("bad", ["-1 1:0.2 x:3", "-1 1:2:3 4", "-1 1:0.2 5", "-1 1:0.2 3:",
                                 "-1 1:1:1", "-1 :4 2:1"])
def test_a_malformed_input_file_is_named_with_its_line(tmp_path, capsys, bad):
    # (a token of two colons beside one of none has as many colons as pairs in all: refused
    # all the same, not read as other pairs)
    lines = ["1 1:0.5 2:1"] * 5000 + [bad] + ["1 3:1"] * 10
    (tmp_path / "bad.svm").write_text("\n".join(lines) + "\n")
    assert main(["train", str(tmp_path / "bad.svm")]) == 1
    err = capsys.readouterr().err
    assert "bad.svm' line 5001:" in err and "Traceback" not in err


# -- the command against LIBLINEAR (liblinear-official) -------------------------------------------

def _liblinear():
    return pytest.importorskip("liblinear.liblinearutil")   # liblinear-official


def _labelled(tmp_path, name, k, n=120, seed=1):
    """A LIBSVM file whose labels first appear unsorted (LIBLINEAR orders them so), or targets
    (k = 0)."""
    import numpy as np
    from sklearn.datasets import dump_svmlight_file
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    if k == 0:
        y = X @ [1.0, -2.0, 0.5, 0.0] + 0.3 * rng.standard_normal(n) + 1.5
    else:
        classes = rng.integers(0, k, n)
        classes[:k] = np.arange(k)              # first appearances 2, 1, 5, 3: unsorted
        X += 1.2 * np.eye(4)[classes % 4]
        y = np.array([2, 1, 5, 3])[classes]
    dump_svmlight_file(X, y, str(tmp_path / name), zero_based=False)
    return tmp_path / name


def _weights(path):
    """Every decision function of a model file, read by liblinear-official: (labels, W, b)."""
    import numpy as np
    model = _liblinear().load_model(str(path))
    k = model.get_nr_class()
    rows = [model.get_decfun(m) for m in range(1 if k == 2 and model.param.solver_type != 4
                                               else k)]
    return model.get_labels(), np.array([w for w, _ in rows]), np.array([b for _, b in rows])


def _objective(path, X, y, s, C, p=0.1):
    """LIBLINEAR's primal of the model in the file (-B 1), numpy only: 1/2 ||w||^2 + C sum of
    its loss (one-vs-rest: the sum over the classes; -s 4: Crammer-Singer's joint loss; -s 5,
    6: ||w||_1)."""
    import numpy as np
    labels, W, b = _weights(path)
    penalty = (np.abs(W).sum() + np.abs(b).sum() if s in (5, 6)
               else 0.5 * (np.sum(W ** 2) + np.sum(b ** 2)))
    Z = X @ W.T + b
    if s == 4:           # Crammer-Singer: C sum_i max_m (z_m - z_{y_i} + 1 - [m = y_i])
        truth = np.array([labels.index(v) for v in y])
        rows = np.arange(len(y))
        margins = Z - Z[rows, truth][:, None] + 1.0
        margins[rows, truth] = 0.0
        return penalty + C * np.sum(margins.max(axis=1))
    if s in (11, 12, 13):
        r = np.maximum(np.abs(Z[:, 0] - y) - p, 0.0)
        return penalty + C * np.sum(r ** 2 if s != 13 else r)
    signs = np.column_stack([np.where(y == label, 1.0, -1.0) for label in labels[:W.shape[0]]])
    u = signs * Z
    loss = {0: np.logaddexp(0.0, -u), 6: np.logaddexp(0.0, -u), 7: np.logaddexp(0.0, -u),
            1: np.maximum(0.0, 1 - u) ** 2, 2: np.maximum(0.0, 1 - u) ** 2,
            5: np.maximum(0.0, 1 - u) ** 2, 3: np.maximum(0.0, 1 - u)}[s]
    return penalty + C * np.sum(loss)


@pytest.mark.parametrize("s, k, extra", [
    (0, 2, []), (1, 2, []), (2, 3, []), (3, 2, []), (4, 3, []), (5, 2, []), (6, 3, []),
    (7, 2, []), (11, 0, []), (11, 0, ["-p", "0"]), (12, 0, ["-p", "0.4"]), (13, 0, ["-p", "0.2"]),
])
def test_each_type_trains_liblinears_model(tmp_path, capsys, s, k, extra):
    """`fastdual train -s s -c C -B 1` and LIBLINEAR's `train` with the same options write the
    same model (to 1e-3; the l1 types, whose optimum need not be unique: the same objective to
    1e-3), with the same label line; -s 11/12 at LIBLINEAR's C scaling and default -p 0.1."""
    import numpy as np
    from sklearn.datasets import load_svmlight_file
    ll = _liblinear()
    data = _labelled(tmp_path, "d.svm", k)
    X, y = load_svmlight_file(str(data), zero_based=False)
    C = 0.5
    tol = "1e-4" if s in (5, 6) else "1e-9"
    assert main(["train", "-s", str(s), "-c", str(C), "-B", "1", "-e", tol,
                 "--max-epochs", "100000"] + extra + [str(data), str(tmp_path / "fd")]) == 0
    assert capsys.readouterr().out.startswith("optimization finished")
    ll.save_model(str(tmp_path / "ll"), ll.train(
        y, X, f"-s {s} -c {C} -B 1 -e 1e-8 -q " + " ".join(extra)))
    ours, theirs = _weights(tmp_path / "fd"), _weights(tmp_path / "ll")
    assert ours[0] == theirs[0]                            # the label line
    p = float(extra[1]) if extra else 0.1
    mine, reference = (_objective(tmp_path / name, X.toarray(), y, s, C, p)
                       for name in ("fd", "ll"))
    assert mine == pytest.approx(reference, rel=1e-3)
    assert mine <= reference * (1 + max(float(tol), 1e-6))
    if s not in (5, 6, 13):
        # (-s 13: LIBLINEAR's dual solver stops at its iteration cap 1e-4 short of the
        # optimum here, where fastdual's certified model is lower)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-3, atol=1e-3)


def test_quiet_silences_warnings_and_the_end_line_is_honest(tmp_path, capsys):
    """An unconverged run ends with LIBLINEAR's WARNING line, never "optimization finished",
    and no Python warning; -q prints nothing at all; predict -q no accuracy line."""
    data = _labelled(tmp_path, "d.svm", 3)
    argv = ["train", "-s", "3", "-c", "100", "-e", "1e-12", "--max-epochs", "2",
            str(data), str(tmp_path / "m")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 1 and "optimization finished" not in captured.out
    assert lines[0].startswith("WARNING: reaching max number of iterations in 3 of 3 "
                               "one-vs-rest problems, #iter = 2, relative duality gap = ")
    assert captured.err == ""
    assert main(argv[:1] + ["-q"] + argv[1:]) == 0
    assert capsys.readouterr() == ("", "")
    assert main(["predict", "-q", str(data), str(tmp_path / "m"), str(tmp_path / "o")]) == 0
    assert capsys.readouterr() == ("", "")
    assert main(["train", "-w7", "2", str(data), str(tmp_path / "m")]) == 0
    captured = capsys.readouterr()
    assert captured.err == "WARNING: class label 7 specified in weight is not found\n"
    assert captured.out.startswith("optimization finished, #iter = ")


@pytest.mark.parametrize("k, trained_by", [(2, "liblinear"), (2, "fastdual"), (3, "liblinear"),
                                           (3, "fastdual")])
def test_predict_writes_liblinears_lines(tmp_path, capsys, k, trained_by):
    """`predict -b 1` and `predict` write LIBLINEAR's file line by line (labels in the model
    file's order, "%g" probabilities; "%.17g" labels) for the same model file, whichever
    program trained it, and print LIBLINEAR's accuracy line."""
    import numpy as np
    from sklearn.datasets import load_svmlight_file
    ll = _liblinear()
    data = _labelled(tmp_path, "d.svm", k)
    X, y = load_svmlight_file(str(data), zero_based=False)
    path = tmp_path / "m"
    if trained_by == "liblinear":
        ll.save_model(str(path), ll.train(y, X, "-s 0 -c 1 -B 1 -q"))
    else:
        assert main(["train", "-q", "-s", "0", "-B", "1", str(data), str(path)]) == 0
    labels, _, probabilities = ll.predict(y, X, ll.load_model(str(path)), "-b 1 -q")
    expected = ["labels " + " ".join(str(v) for v in ll.load_model(str(path)).get_labels())]
    expected += ["%g" % label + "".join(" %g" % v for v in row)
                 for label, row in zip(labels, probabilities)]
    assert main(["predict", "-b", "1", str(data), str(path), str(tmp_path / "o")]) == 0
    assert (tmp_path / "o").read_text().splitlines() == expected
    correct = int(np.sum(np.array(labels) == y))
    assert capsys.readouterr().out == f"Accuracy = {100.0 * correct / len(y):g}% " \
                                      f"({correct}/{len(y)})\n"
    assert main(["predict", "-q", str(data), str(path), str(tmp_path / "o")]) == 0
    assert (tmp_path / "o").read_text().splitlines() == ["%.17g" % v for v in labels]


def test_the_c_search_prints_liblinears_lines(tmp_path, capfd):
    """-C starts where LIBLINEAR's does, doubles C up to 1024 (-s 11: 2^20, at LIBLINEAR's grid
    of p), with LIBLINEAR's line formats; the folds differ (LIBLINEAR's are C's rand()), so the
    scores may."""
    import re
    from sklearn.datasets import load_svmlight_file
    ll = _liblinear()
    for s, k in ((2, 2), (0, 3), (11, 0)):
        data = _labelled(tmp_path, f"d{s}.svm", k, n=60)
        X, y = load_svmlight_file(str(data), zero_based=False)
        capfd.readouterr()
        ll.train(y, X, f"-s {s} -C -v 3 -B 1")
        theirs = capfd.readouterr().out.splitlines()
        assert main(["train", "-s", str(s), "-C", "-v", "3", "-B", "1", str(data)]) == 0
        ours = capfd.readouterr().out.splitlines()
        # (train.c prints the first line; liblinear-official's train does not)
        assert ours[0] == "Doing parameter search with 3-fold cross validation."
        grid = re.compile(r"log2c=(.{7})\t(p=(.{7})\tMean squared error=\S+|rate=\S+)$")
        ours_grid = [grid.match(line).group(1, 3) for line in ours[1:-1]
                     if line != "WARNING: maximum C reached."]
        theirs_grid = [grid.match(line).group(1, 3) for line in theirs if grid.match(line)]
        assert ours_grid[0] == theirs_grid[0]                     # where the search starts
        assert sorted(set(p for _, p in ours_grid)) == sorted(set(p for _, p in theirs_grid))
        final = (r"Best C = \S+ Best p = \S+  CV MSE = \S+" if s == 11
                 else r"Best C = \S+  CV accuracy = \S+%")
        assert re.fullmatch(final, ours[-1])
        assert [line for line in theirs if re.fullmatch(final, line)]


def test_bias_options_as_liblinears(tmp_path, capsys):
    """-B 0 is no intercept (LIBLINEAR's feature of value 0); -R is the free intercept."""
    data = _labelled(tmp_path, "d.svm", 2)
    for name, options in (("b0", ["-B", "0"]), ("none", []), ("R", ["-B", "1", "-R"]),
                          ("free", ["-B", "1", "--free-intercept"])):
        assert main(["train", "-q", "-s", "2", "-e", "1e-10"] + options
                    + [str(data), str(tmp_path / name)]) == 0
    assert (tmp_path / "b0").read_text() == (tmp_path / "none").read_text()
    assert "bias -1" in (tmp_path / "none").read_text()
    free, R = fastdual.load(tmp_path / "free"), fastdual.load(tmp_path / "R")
    assert free.intercept_mode == R.intercept_mode == "free"
    assert (free.coef_ == R.coef_).all() and free.intercept_ == R.intercept_


def test_the_data_reader_reads_as_scikit_learns(tmp_path):
    """The command's own LIBSVM reader against scikit-learn's: comments, qid, blank lines,
    tabs, exponents, an empty row, signed labels."""
    import numpy as np
    from sklearn.datasets import load_svmlight_file
    from fastdual.cli import _read_libsvm
    text = ("# a comment\n+1 qid:3 1:0.5 3:1e-3\n\n-1\t2:-2.5E2  7:1 # tail\n"
            "2.5 4:0\n-1 \n3 1:1 2:2 3:3\n-1 qid:2\t4:1\n1 qid:7\n")
    (tmp_path / "f.svm").write_text(text)
    X, y = _read_libsvm(str(tmp_path / "f.svm"))
    X_ref, y_ref = load_svmlight_file(str(tmp_path / "f.svm"), zero_based=False)
    np.testing.assert_array_equal(y, y_ref)
    assert (_csr(X) != X_ref).nnz == 0 and _csr(X).shape == X_ref.shape
    # with n_features: the features above it dropped, or the missing ones added as empty columns
    for n_features in (2, 5, 7, 9):
        X, y = _read_libsvm(str(tmp_path / "f.svm"), n_features=n_features)
        expected = sp.csr_matrix(X_ref[:, :n_features], shape=(7, n_features))
        np.testing.assert_array_equal(y, y_ref)
        assert (X.n_samples, X.n_features) == (7, n_features)
        assert (_csr(X) != expected).nnz == 0


def _plain_libsvm_text(draw):
    """A LIBSVM text with no comment or qid: signed and exponent labels and values, strictly
    ascending indices up to a large one, empty rows, blank lines, tabs, carriage returns,
    trailing blanks, a last line with or without its newline."""
    from hypothesis import strategies as st
    number = st.one_of(
        st.integers(-10 ** 6, 10 ** 6).map(str),
        st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False).map(repr),
        st.floats(-1e3, 1e3, allow_nan=False).map(lambda v: f"{v:.3e}"),
        st.sampled_from(["+1", "-0", ".5", "5.", "-.25E-2", "1E+3", "0000012", "-7e-320"]))
    blank = st.sampled_from([" ", "\t", "  ", " \t "])
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.booleans()) and draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", " ", "\t"])))      # a blank line
            continue
        indices = sorted(draw(st.sets(st.integers(1, 2 ** 31 - 1), max_size=6)))
        parts = [draw(number)] + [f"{j}:{draw(number)}" for j in indices]
        line = draw(blank).join(parts) if draw(st.booleans()) else " ".join(parts)
        lines.append(draw(st.sampled_from(["", " "])) + line + draw(st.sampled_from(
            ["", " ", "\t", "\r"])))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


def test_the_one_pass_reader_reads_as_the_checked_one():
    """_core/text.pyx's parse_libsvm, the reader of plain files, gives the bits of the checked
    numpy reader (_parse_checked) on every plain text: labels, values, indices, row starts and
    the number of features."""
    import numpy as np
    from hypothesis import given, settings, strategies as st
    from fastdual._core.text import parse_libsvm
    from fastdual.cli import INT_LIMIT, _parse_checked

    @settings(max_examples=150, deadline=None)
    @given(st.data())
    def check(data):
        text = _plain_libsvm_text(data.draw)
        content = text.encode("ascii")
        fast = parse_libsvm(content, INT_LIMIT)
        if not text.strip():
            assert fast is None       # no sample: the checked reader says so
            return
        checked = _parse_checked("f.svm", content)
        assert fast is not None, text
        for mine, theirs in zip(fast[:4], checked[:4]):
            assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs), text
        assert fast[4] == checked[4]

    check()


@pytest.mark.parametrize("text", [
    "1 1:2 # a comment\n", "# comment\n1 1:2\n", "1 qid:3 1:2\n",
    "1 1:0x10\n", "0x1 1:2\n", "1 1:inf\n", "1 1:nan\n", "nan 1:1\n", "1 1:1e999\n",
    "1 0:1\n", "1 2:1 1:1\n", "1 1:1 1:2\n", "1 1:2:3\n", "1 1:\n", "1 :1\n", "abc 1:1\n",
    "1 2147483648:1\n", "1 1.5:2\n", "1 1:2x\n", "1x 1:2\n", "", "\n \n"])
def test_the_one_pass_reader_leaves_the_rest_to_the_checked_one(text, tmp_path):
    """Comments, qids, non-decimal or non-finite numbers, indices out of order or range and
    malformed pairs: parse_libsvm declines (None), and the command reads the file as the
    checked reader does (its samples, or its error naming the line)."""
    from fastdual._core.text import parse_libsvm
    from fastdual.cli import INT_LIMIT, _Failure, _parse_checked, _read_libsvm
    assert parse_libsvm(text.encode("ascii"), INT_LIMIT) is None
    (tmp_path / "f.svm").write_text(text)
    try:
        expected = _parse_checked(str(tmp_path / "f.svm"), text.encode("ascii"))
    except _Failure as failure:
        with pytest.raises(_Failure) as caught:
            _read_libsvm(str(tmp_path / "f.svm"))
        assert str(caught.value) == str(failure)
        return
    X, y = _read_libsvm(str(tmp_path / "f.svm"))
    assert (y == expected[0]).all() and (X.data == expected[1]).all()
    assert (X.indices == expected[2]).all() and (X.indptr == expected[3]).all()


def test_import_and_predict_load_no_training_code(tmp_path):
    """`import fastdual` and `fastdual predict` import neither scikit-learn nor the training
    code (the public names are loaded when first used), nor scipy.sparse (the test file's rows
    are read as the validated rows that predict takes)."""
    data = _labelled(tmp_path, "d.svm", 2)
    assert main(["train", "-q", str(data), str(tmp_path / "m")]) == 0
    script = ("import sys, fastdual; from fastdual.cli import main; "
              f"assert main(['predict', '-q', {str(data)!r}, {str(tmp_path / 'm')!r}, "
              f"{str(tmp_path / 'o')!r}]) == 0; "
              "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn' or m in "
              "('fastdual._api', 'fastdual._fit', 'fastdual._loop', 'fastdual.solvers', "
              "'scipy.sparse')))")
    # (from another directory, the fastdual these tests import: not the uncompiled sources that
    # the repository root would put first on sys.path)
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(fastdual.__file__))}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
    assert fastdual.train is fastdual._api.train and "train" in dir(fastdual)


def test_ctrl_c_is_one_line(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise fastdual.TrainingInterrupted(None)
    data = _labelled(tmp_path, "d.svm", 2)
    monkeypatch.setattr(fastdual, "train", interrupted)
    assert main(["train", str(data), str(tmp_path / "m")]) == 130
    assert capsys.readouterr().err == "fastdual train: interrupted\n"
    assert not (tmp_path / "m").exists()


def test_out_of_memory_is_one_line(tmp_path, capsys, monkeypatch):
    def exhausted(*args, **kwargs):
        raise MemoryError
    data = _labelled(tmp_path, "d.svm", 2)
    monkeypatch.setattr(fastdual, "train", exhausted)
    assert main(["train", str(data), str(tmp_path / "m")]) == 1
    assert capsys.readouterr().err.startswith("fastdual train: error: not enough memory")


def test_the_search_of_c_on_rows_whose_norms_overflow_is_one_error_line(tmp_path, capsys):
    """-C's starting C reads the squared row norms: where they overflow, the command says so in
    one line, as a plain training does, instead of a traceback."""
    rows = ["1 1:1e200 2:1"] + [f"{(-1) ** k} 1:{k} 2:1" for k in range(1, 10)]
    (tmp_path / "big.svm").write_text("\n".join(rows) + "\n")
    for extra in ([], ["-C"]):
        assert main(["train", "-q", *extra, str(tmp_path / "big.svm"), str(tmp_path / "m")]) == 1
        error = capsys.readouterr().err
        assert error.startswith("fastdual train: error:") and "overflow" in error
        assert error.count("\n") == 1
