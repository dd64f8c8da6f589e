"""Model files: every model fastdual.train makes round-trips, every bad file is refused with a
ValueError that names it and says what is wrong; predict_proba exists only for the logistic loss."""
import ast
import io
import json
import pathlib
import re
import warnings
import zipfile
from types import SimpleNamespace

import numpy as np
import pytest

import fastdual
from conftest import BINARY_LOSSES, REGRESSION_LOSSES, binary_problem, problem_for

ALL = BINARY_LOSSES + REGRESSION_LOSSES


def train_quietly(X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        return fastdual.train(X, y, random_state=0, max_epochs=30, **kwargs)


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    """A binary model file and its content, read back with NumPy and json alone."""
    X, y = binary_problem(n=40, d=4, seed=3)
    model = train_quietly(X, np.where(y > 0, "yes", "no"), loss="logistic", alpha=0.1)
    path = tmp_path_factory.mktemp("valid") / "model.fd"
    model.save(path)
    with np.load(path, allow_pickle=False) as archive:
        arrays = dict(archive)
    metadata = json.loads(arrays.pop("metadata").tobytes().decode("utf-8"))
    return SimpleNamespace(path=path, X=X, arrays=arrays, metadata=metadata)


def write_npz(path, **arrays):
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def encode(metadata):
    return np.frombuffer(json.dumps(metadata).encode("utf-8"), dtype=np.uint8)


def tampered(drop=(), delete=(), arrays=None, **metadata):
    """A maker of the valid file with arrays replaced or dropped and metadata set or deleted."""
    def make(path, valid):
        fields = {**valid.metadata, **metadata}
        for key in delete:
            del fields[key]
        content = {**valid.arrays, "metadata": encode(fields), **(arrays or {})}
        for key in drop:
            del content[key]
        write_npz(path, **content)
    return make


def raw(data):
    def make(path, valid):
        path.write_bytes(data(valid) if callable(data) else data)
    return make


def npy(path, valid):
    with open(path, "wb") as handle:
        np.save(handle, np.arange(3.0))


def zip_member(name, data):
    """The valid file with one more member (or a replaced one) written as raw bytes."""
    def make(path, valid):
        with zipfile.ZipFile(path, "w") as archive:
            for key, value in {**valid.arrays, "metadata": encode(valid.metadata)}.items():
                if key + ".npy" != name:
                    buffer = io.BytesIO()
                    np.save(buffer, value)
                    archive.writestr(key + ".npy", buffer.getvalue())
            archive.writestr(name, data)
    return make


BAD_FILES = [
    # not a model archive at all
    ("empty", raw(b""), "the file is empty"),
    ("truncated", raw(lambda v: v.path.read_bytes()[: len(v.path.read_bytes()) // 2]),
     "truncated or damaged"),
    ("text", raw(b"coef = [1, 2, 3]\n"), "not an .npz archive"),
    ("npy", npy, "single NumPy array (.npy)"),
    ("no metadata", lambda p, v: write_npz(p, coef=np.zeros(3)), "no metadata record"),
    ("metadata not JSON", tampered(arrays={"metadata": np.frombuffer(b"{loss:", np.uint8)}),
     "metadata record is not JSON"),
    ("metadata not UTF-8", tampered(arrays={"metadata": np.frombuffer(b"\xff\xfe", np.uint8)}),
     "metadata record is not JSON"),
    ("metadata a list", tampered(arrays={"metadata": encode([1, 2])}), "not a JSON object"),
    ("wrong format", tampered(format="sklearn"), "not a fastdual model file"),
    ("no format", tampered(delete=("format",)), "not a fastdual model file"),
    ("newer version", tampered(format_version=99), "upgrade fastdual"),
    ("version a string", tampered(format_version="1"), "format_version must be a positive integer"),
    ("version a float", tampered(format_version=1.0), "format_version must be a positive integer"),
    ("version true", tampered(format_version=True), "format_version must be a positive integer"),
    ("version zero", tampered(format_version=0), "format_version must be a positive integer"),
    ("member not npy", zip_member("coef.npy", b"just bytes"), "'coef' is not a NumPy array"),
    ("member header broken", zip_member("coef.npy", b"\x93NUMPY\x01\x00garbage"),
     "truncated or damaged"),
    ("unknown array", tampered(arrays={"weights": np.zeros(4)}), "unknown arrays ['weights']"),
    ("no coef", tampered(drop=("coef",)), "lacks the arrays ['coef']"),
    ("no intercept", tampered(drop=("intercept",)), "lacks the arrays ['intercept']"),
    # tampered arrays
    ("coef 2-D", tampered(arrays={"coef": np.zeros((2, 2))}), "coef must be 1-D"),
    ("coef empty", tampered(arrays={"coef": np.zeros(0)}, n_features_in_=0), "coef is empty"),
    ("coef NaN", tampered(arrays={"coef": np.array([0.0, np.nan, 1.0, 2.0])}),
     "coef contains NaN or infinity"),
    ("coef inf", tampered(arrays={"coef": np.array([0.0, np.inf, 1.0, 2.0])}),
     "coef contains NaN or infinity"),
    ("coef strings", tampered(arrays={"coef": np.array(["a", "b", "c", "d"])}),
     "coef must hold floats"),
    ("coef integers", tampered(arrays={"coef": np.arange(4)}), "coef must hold floats"),
    ("coef complex", tampered(arrays={"coef": np.ones(4, dtype=complex)}), "coef must hold floats"),
    ("intercept a vector", tampered(arrays={"intercept": np.zeros(2)}),
     "intercept must be a single number"),
    ("intercept NaN", tampered(arrays={"intercept": np.array(np.nan)}),
     "intercept contains NaN or infinity"),
    ("intercept a string", tampered(arrays={"intercept": np.array("0.5")}),
     "intercept must hold floats"),
    ("3 classes", tampered(arrays={"classes": np.array(["a", "b", "c"])}),
     "exactly 2 distinct classes"),
    ("1 class", tampered(arrays={"classes": np.array(["a"])}), "exactly 2 distinct classes"),
    ("equal classes", tampered(arrays={"classes": np.array(["a", "a"])}),
     "exactly 2 distinct classes"),
    ("classes 2-D", tampered(arrays={"classes": np.array([["a", "b"]])}),
     "exactly 2 distinct classes"),
    ("binary without classes", tampered(drop=("classes",)), "a binary model needs its classes"),
    ("regression with classes", tampered(loss="squared", task="regression"),
     "a regression model has none"),
    ("dual_coef 2-D", tampered(arrays={"dual_coef": np.zeros((4, 10))}), "dual_coef must be 1-D"),
    ("dual_coef NaN", tampered(arrays={"dual_coef": np.array([0.5, np.nan])}),
     "dual_coef contains NaN or infinity"),
    # tampered metadata
    ("alpha a string", tampered(alpha="abc"), "alpha must be a number, got 'abc'"),
    ("alpha true", tampered(alpha=True), "alpha must be a number"),
    ("alpha null", tampered(alpha=None), "alpha must be a number, got None"),
    ("gap_ a list", tampered(gap_=[1]), "gap_ must be a number, got [1]"),
    ("n_epochs_ a float", tampered(n_epochs_=1.5), "n_epochs_ must be a non-negative integer"),
    ("n_epochs_ true", tampered(n_epochs_=True), "n_epochs_ must be a non-negative integer"),
    ("n_epochs_ negative", tampered(n_epochs_=-1), "n_epochs_ must be a non-negative integer"),
    ("converged_ a string", tampered(converged_="yes"), "converged_ must be true or false"),
    ("fit_intercept 1", tampered(fit_intercept=1), "fit_intercept must be true or false"),
    ("solver a number", tampered(solver=3), "solver must be a string"),
    ("loss unknown", tampered(loss="exponential"), "loss must be one of ["),
    ("loss a list", tampered(loss=["logistic"]), "loss must be one of ["),
    ("loss of the other task", tampered(loss="squared"), "'squared' is a regression loss"),
    ("task unknown", tampered(task="ranking"),
     "task must be 'binary', 'regression' or 'multiclass'"),
    ("k-class task in a version-1 file", tampered(task="multiclass"),
     "holds a k-class model but says format_version 1"),
    ("loss_params a list", tampered(loss_params=[1.0]), "loss_params must be a JSON object"),
    ("loss_params a string value", tampered(loss_params={"gamma": "1"}),
     "loss_params must be a JSON object of numbers"),
    ("history_ a dict", tampered(history_={"epoch": 1}), "history_ must be a list of JSON objects"),
    ("history_ of numbers", tampered(history_=[1, 2]), "history_ must be a list of JSON objects"),
    ("unknown keys", tampered(owner="me", zeta=1), "unknown keys ['owner', 'zeta']"),
    ("missing key", tampered(delete=("tol",)), "lacks the keys ['tol']"),
    ("n_features_in_ wrong", tampered(n_features_in_=5), "but coef has 4 entries"),
    # metadata out of range or inconsistent
    ("alpha 0", tampered(alpha=0.0), "alpha must be a positive finite number, got 0.0"),
    ("alpha negative", tampered(alpha=-1.0), "alpha must be a positive finite number"),
    ("l1_ratio 7", tampered(l1_ratio=7.0), "l1_ratio must be in [0, 1], got 7.0"),
    ("l2_ negative", tampered(l2_=-0.1), "l2_ must be finite and >= 0"),
    ("tol negative", tampered(tol=-5.0), "tol must be finite and >= 0, got -5.0"),
    ("tol NaN", tampered(tol=float("nan")), "tol must be finite and >= 0, got nan"),
    ("intercept_scaling negative", tampered(intercept_scaling=-1.0),
     "intercept_scaling must be a positive finite number"),
    ("intercept_mode unknown", tampered(intercept_mode="bogus"),
     "intercept_mode must be one of ['none', 'free', 'regularized'], got 'bogus'"),
    ("intercept_mode against fit_intercept", tampered(intercept_mode="none"),
     "intercept_mode 'none' contradicts fit_intercept True"),
    ("loss_params unknown", tampered(loss_params={"gamma": 1.0}),
     "loss_params: unknown parameter(s) ['gamma'] for loss='logistic'"),
    ("gap_ not primal_ - dual_", tampered(gap_=123.0), "gap_ = 123.0 is not primal_ - dual_"),
    ("primal_ NaN alone", tampered(primal_=float("nan")),
     "primal_, dual_ and gap_ must be numbers (or all NaN"),
    ("classes NaN", tampered(arrays={"classes": np.array([0.0, np.nan])}),
     "classes contains NaN or infinity"),
    # pickles are never loaded
    ("pickled metadata", tampered(arrays={"metadata": np.array([{"format": "x"}], dtype=object)}),
     "holds pickled objects, which fastdual never loads"),
    ("pickled coef", tampered(arrays={"coef": np.array([1.0, None, 2.0, 3.0], dtype=object)}),
     "holds pickled objects, which fastdual never loads"),
]


@pytest.mark.parametrize("make, fragment", [pytest.param(make, fragment, id=case)
                                            for case, make, fragment in BAD_FILES])
def test_load_refuses_bad_file(tmp_path, valid, make, fragment):
    path = tmp_path / "bad.fd"
    make(path, valid)
    with pytest.raises(ValueError) as info:
        fastdual.load(path)
    message = str(info.value)
    # A plain ValueError (not numpy's, json's or zipfile's subclasses) naming the file as given.
    assert type(info.value) is ValueError
    assert fragment in message
    assert str(path) in message
    assert "allow_pickle" not in message


def test_the_valid_file_loads(valid):
    # The file the bad ones are made from is itself fine: the refusals are about the tampering.
    model = fastdual.load(valid.path)
    np.testing.assert_array_equal(model.coef_, valid.arrays["coef"])
    assert model.intercept_ == float(valid.arrays["intercept"])
    assert list(model.classes_) == ["no", "yes"]
    assert set(model.predict(valid.X)) <= {"no", "yes"}
    for key in fastdual.model._METADATA_FIELDS:
        assert getattr(model, key) == valid.metadata[key]


def test_load_path_as_string(valid):
    assert fastdual.load(str(valid.path)).loss == "logistic"


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        fastdual.load(tmp_path / "absent.fd")


@pytest.mark.parametrize("loss", ALL)
@pytest.mark.parametrize("options", [dict(fit_intercept=True), dict(fit_intercept=False),
                                     dict(l1_ratio=1.0), dict(l1_ratio=0.5, C=3.0)],
                         ids=["intercept", "no-intercept", "pure-l1", "elastic-net-C"])
def test_every_trained_model_round_trips(tmp_path, loss, options):
    X, y = problem_for(loss, n=30, d=3, seed=5)
    model = train_quietly(X, y, loss=loss, **({"alpha": 0.05} if "C" not in options else {}),
                          **options)
    path = tmp_path / "model.fd"
    model.save(path)
    loaded = fastdual.load(path)
    for key in fastdual.model._METADATA_FIELDS:
        assert getattr(loaded, key) == getattr(model, key), key
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
    assert loaded.intercept_ == model.intercept_
    np.testing.assert_array_equal(loaded.dual_coef_, model.dual_coef_)
    if loss in REGRESSION_LOSSES:
        assert loaded.classes_ is None
    else:
        np.testing.assert_array_equal(loaded.classes_, model.classes_)


@pytest.mark.parametrize("loss", [loss for loss in ALL if loss != "logistic"])
def test_predict_proba_absent_for_other_losses(tmp_path, loss):
    X, y = problem_for(loss, n=30, d=3, seed=6)
    model = train_quietly(X, y, loss=loss, alpha=0.1)
    path = tmp_path / "model.fd"
    model.save(path)
    for candidate in (model, fastdual.load(path)):
        assert not hasattr(candidate, "predict_proba")
        with pytest.raises(AttributeError, match=re.escape(f"loss={loss!r}")):
            candidate.predict_proba(X)


def test_predict_proba_present_for_logistic(valid):
    model = fastdual.load(valid.path)
    assert hasattr(model, "predict_proba")
    proba = model.predict_proba(valid.X)
    assert proba.shape == (valid.X.shape[0], 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all((proba >= 0) & (proba <= 1))
    # The likelier class is the predicted one.
    np.testing.assert_array_equal(model.classes_[np.argmax(proba, axis=1)], model.predict(valid.X))


def test_save_refuses_what_load_would_refuse(tmp_path):
    X, y = binary_problem(n=40, d=3, seed=1)
    model = fastdual.train(X, y, loss="logistic", alpha=0.1, random_state=0)
    model.coef_ = np.array([1.0, np.nan, 0.0])
    with pytest.raises(ValueError, match="cannot save this model: coef contains NaN"):
        model.save(tmp_path / "bad.fd")
    assert not (tmp_path / "bad.fd").exists()
    bare = fastdual.Model(np.zeros(3), 0.0, None)       # no metadata at all
    with pytest.raises(ValueError, match="cannot save this model: metadata loss must be"):
        bare.save(tmp_path / "bare.fd")


def test_the_model_module_imports_no_file_format_module():
    # fastdual.formats builds on fastdual.model (Model, read_npz), never the other way round: no
    # import of it anywhere in model.py, at module level or inside a function.
    tree = ast.parse(pathlib.Path(fastdual.model.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and getattr(node.func, "attr", getattr(node.func, "id", None))
              in ("import_module", "__import__")):
            imported.add(str(node.args[0].value))
    assert not [name for name in imported
                if name.rsplit(".", 1)[-1] in ("formats", "liblinear_format")]


def test_feature_names_travel_with_the_model_and_guard_predict(tmp_path):
    """A model trained on a frame of string-named columns keeps the names (in its file too);
    a frame with the columns reordered or renamed is refused at predict, where it used to be
    scored column by column as if nothing had changed; arrays and frames with the same
    columns predict as before."""
    pd = pytest.importorskip("pandas")
    X, y = binary_problem(n=40, d=4, seed=3)
    frame = pd.DataFrame(X, columns=["w", "x", "y", "z"])
    model = train_quietly(frame, y, loss="logistic", alpha=0.1)
    assert list(model.feature_names_in_) == ["w", "x", "y", "z"]
    path = tmp_path / "named.fd"
    model.save(path)
    loaded = fastdual.load(path)
    for m in (model, loaded):
        np.testing.assert_array_equal(m.predict(frame), m.predict(X))
        with pytest.raises(ValueError, match="in another order"):
            m.predict(frame[["z", "y", "x", "w"]])
        with pytest.raises(ValueError, match=r"unseen \['v'\], missing \['w'\]"):
            m.predict(frame.rename(columns={"w": "v"}))
    # names that are not all strings are no names (scikit-learn's rule)
    assert train_quietly(pd.DataFrame(X), y, alpha=0.1).feature_names_in_ is None
    assert train_quietly(X, y, alpha=0.1).feature_names_in_ is None


@pytest.mark.parametrize("names, fragment", [
    (["a", "a", "b", "c"], "feature_names must be a list of distinct strings"),
    ([1, 2, 3, 4], "feature_names must be a list of distinct strings"),
    (["a", "b"], "feature_names has 2 names for 4 features"),
])
def test_load_refuses_bad_feature_names(tmp_path, valid, names, fragment):
    path = tmp_path / "bad.fd"
    tampered(feature_names=names)(path, valid)
    with pytest.raises(ValueError, match=fragment):
        fastdual.load(path)
