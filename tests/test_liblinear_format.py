"""LIBLINEAR's model files both ways, with liblinear-official: a fastdual model predicts the
same through LIBLINEAR, a LIBLINEAR model the same through fastdual."""
import importlib
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from fastdual import formats

_ll = pytest.importorskip("liblinear.liblinearutil")   # liblinear-official
load_model, parameter, predict, problem, save_model, train = (
    _ll.load_model, _ll.parameter, _ll.predict, _ll.problem, _ll.save_model, _ll.train)


def data(k=2, n=120, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if k == 0:
        return X, X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n)
    centers = rng.standard_normal((k, d)) * 2
    labels = rng.integers(0, k, n)
    return X + centers[labels], np.array([3, -1, 7, 5][:k])[labels]


def liblinear_predict(model, X):
    labels, _, values = predict([], sp.csr_matrix(X), model, "-q")
    return np.array(labels), np.array(values)


@pytest.mark.parametrize("k, loss, options", [
    (2, "logistic", {}), (2, "squared_hinge", {"intercept_scaling": 2.0}),
    (3, "hinge", {"multiclass": "ovr"}), (4, "hinge", {"multiclass": "crammer_singer"}),
    (2, "squared_hinge", {"fit_intercept": False}), (0, "squared", {}),
    (0, "epsilon_insensitive", {"epsilon": 0.1}),
])
def test_a_fastdual_model_predicts_the_same_through_liblinear(tmp_path, k, loss, options):
    X, y = data(k)
    model = fastdual.train(X, y, loss=loss, C=1.0, tol=1e-2, random_state=0, **options)
    formats.save_liblinear(model, tmp_path / "m.model")
    theirs = load_model(str(tmp_path / "m.model"))
    labels, values = liblinear_predict(theirs, X)
    ours = model.decision_function(X)
    if k == 0:
        np.testing.assert_allclose(labels, ours, rtol=1e-12, atol=1e-12)
    else:
        assert np.array_equal(labels, model.predict(X))
    again = fastdual.load(tmp_path / "m.model")
    np.testing.assert_allclose(again.decision_function(X), ours, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("k, s, bias", [(2, 0, 1), (2, 2, -1), (2, 3, 1), (3, 1, 1),
                                        (4, 4, 1), (0, 11, 1), (0, 13, -1)])
def test_a_liblinear_model_predicts_the_same_through_fastdual(tmp_path, k, s, bias):
    X, y = data(k, seed=1)
    theirs = train(problem(y.astype(float).tolist(), sp.csr_matrix(X), bias),
                   parameter(f"-s {s} -c 1 -B {bias} -q"))
    save_model(str(tmp_path / "l.model"), theirs)
    model = fastdual.load(tmp_path / "l.model")
    labels, values = liblinear_predict(theirs, X)
    if k == 0:
        np.testing.assert_allclose(model.predict(X), labels, rtol=1e-12, atol=1e-12)
    else:
        assert np.array_equal(model.predict(X), labels)
        if k == 2:
            # LIBLINEAR's decision value is for its first label, fastdual's for classes_[1].
            np.testing.assert_allclose(model.decision_function(X), values[:, 0], rtol=1e-10,
                                       atol=1e-12)
    assert np.isnan(model.gap_)
    # ... and any loaded model can be certified on data.
    if k == 2 and s in (0, 2, 3):
        loss = {0: "logistic", 2: "squared_hinge", 3: "hinge"}[s]
        cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_ if bias > 0 else None,
                                    loss=loss, C=1.0)
        assert cert.gap >= 0.0


def test_what_liblinear_cannot_hold_is_refused(tmp_path):
    X, y = data(3)
    with pytest.raises(ValueError, match=r"LIBLINEAR has no solver for loss='logistic' "
                                         r"\(multinomial\)"):
        formats.save_liblinear(fastdual.train(X, y, loss="logistic"), tmp_path / "m")
    with pytest.raises(ValueError, match=r"labels are integers"):
        formats.save_liblinear(fastdual.train(X, np.array(["a", "b", "c"])[y % 3],
                                              loss="hinge"), tmp_path / "m")
    (tmp_path / "bad.model").write_text("solver_type L2R_LR\nnr_class 2\nlabel 1 -1\n"
                                        "nr_feature 3\nbias -1\nw\n0.1\n0.2\n")
    with pytest.raises(ValueError, match=r"expected 3 weight rows of 1 numbers"):
        fastdual.load(tmp_path / "bad.model")


def test_the_former_module_name_warns_and_still_works(tmp_path, monkeypatch):
    monkeypatch.delitem(sys.modules, "fastdual.liblinear_format", raising=False)
    with pytest.warns(DeprecationWarning, match=r"fastdual\.liblinear_format is fastdual\.formats"):
        former = importlib.import_module("fastdual.liblinear_format")
    assert former.save is formats.save_liblinear
    assert former.load is formats.load_liblinear
    assert former.is_liblinear_file is formats.is_liblinear_file
    X, y = data(2)
    model = fastdual.train(X, y, loss="logistic", C=1.0, tol=1e-2, random_state=0)
    former.save(model, tmp_path / "m.model")
    assert former.is_liblinear_file(tmp_path / "m.model")
    np.testing.assert_allclose(former.load(tmp_path / "m.model").decision_function(X),
                               model.decision_function(X), rtol=1e-14, atol=1e-14)
