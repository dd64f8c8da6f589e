"""k > 2 classes, one-vs-rest: exactly the k binary problems, certified, in any thread count,
saved and loaded."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import fastdual
from conftest import BINARY_LOSSES


def multiclass_problem(n=240, d=7, k=4, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, d)) * 1.5
    labels = rng.integers(0, k, n)
    X = centers[labels] + rng.standard_normal((n, d))
    if sparse:
        X[rng.random((n, d)) < 0.4] = 0.0
        X = sp.csr_matrix(X)
    names = np.array(["cat", "dog", "emu", "fox", "gnu"][:k])
    return X, names[labels]


@pytest.mark.parametrize("loss", BINARY_LOSSES)
@pytest.mark.parametrize("solver", ["sdca", "spdc", "rda"])
def test_one_vs_rest_is_exactly_the_k_binary_problems(loss, solver):
    X, y = multiclass_problem(sparse=True, seed=1)
    kwargs = dict(loss=loss, alpha=1e-2, l1_ratio=0.2, solver=solver, tol=1e-3, max_epochs=30,
                  random_state=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.train(X, y, **kwargs)
        binary = [fastdual.train(X, y == label, **kwargs) for label in model.classes_]
    assert model.coef_.shape == (4, 7) and model.intercept_.shape == (4,)
    assert model.classes_.tolist() == ["cat", "dog", "emu", "fox"]
    for m, single in enumerate(binary):
        assert np.array_equal(model.coef_[m], single.coef_)
        assert model.intercept_[m] == single.intercept_
        assert (model.class_primal_[m], model.class_dual_[m]) == (single.primal_, single.dual_)
        assert model.class_n_epochs_[m] == single.n_epochs_
    assert model.primal_ == pytest.approx(sum(b.primal_ for b in binary), rel=1e-15)
    assert model.converged_ == all(b.converged_ for b in binary)


def test_threads_give_the_same_bits():
    X, y = multiclass_problem(n=400, k=5, sparse=True, seed=2)
    one = fastdual.train(X, y, loss="smooth_hinge", alpha=1e-3, random_state=0, n_jobs=1)
    two = fastdual.train(X, y, loss="smooth_hinge", alpha=1e-3, random_state=0, n_jobs=2)
    assert np.array_equal(one.coef_, two.coef_)
    assert np.array_equal(one.dual_coef_, two.dual_coef_)
    assert (one.primal_, one.dual_) == (two.primal_, two.dual_)


@settings(max_examples=20, deadline=None)
@given(loss=st.sampled_from(BINARY_LOSSES), k=st.integers(3, 5), seed=st.integers(0, 100),
       fit_intercept=st.booleans(), max_epochs=st.integers(1, 6))
def test_the_k_class_certificate_is_that_of_the_returned_model(loss, k, seed, fit_intercept,
                                                                 max_epochs):
    X, y = multiclass_problem(n=90, d=5, k=k, seed=seed)
    objective = dict(loss=loss, alpha=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.train(X, y, max_epochs=max_epochs, tol=0.0, random_state=seed,
                               fit_intercept=fit_intercept, **objective)
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_ if fit_intercept else None,
                                dual_coef=model.dual_coef_, **objective)
    assert (model.primal_, model.dual_) == (cert.primal, cert.dual)
    assert model.gap_ >= -1e-12 * abs(model.primal_)
    # The bound is a true one: the sum of the k optima lies within it.
    optimum = fastdual.train(X, y, tol=1e-10, max_epochs=20_000, random_state=0,
                             fit_intercept=fit_intercept, **objective)
    assert model.dual_ <= optimum.primal_ + 1e-9 and optimum.dual_ <= model.primal_ + 1e-9


def test_predictions_probabilities_and_scores():
    X, y = multiclass_problem(n=300, k=3, seed=3)
    model = fastdual.train(X, y, loss="logistic", alpha=1e-3, tol=1e-6, random_state=0)
    scores = model.decision_function(X)
    assert scores.shape == (300, 3)
    np.testing.assert_allclose(scores, X @ model.coef_.T + model.intercept_, rtol=1e-12)
    assert np.array_equal(model.predict(X), model.classes_[np.argmax(scores, axis=1)])
    assert np.mean(model.predict(X) == y) > 0.8
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(np.argmax(proba, axis=1), np.argmax(scores, axis=1))
    with pytest.raises(ValueError, match="X has 6 features, but the model was trained on 7"):
        model.predict(X[:, :6])


def test_k_class_models_save_load_and_warm_start(tmp_path):
    X, y = multiclass_problem(n=200, k=4, seed=4)
    model = fastdual.train(X, y, loss="squared_hinge", alpha=1e-2, random_state=0)
    model.save(tmp_path / "model.npz")
    loaded = fastdual.load(tmp_path / "model.npz")
    for name in ("coef_", "intercept_", "dual_coef_", "class_certificates_"):
        assert np.array_equal(getattr(loaded, name), getattr(model, name))
    assert loaded.classes_.tolist() == model.classes_.tolist()
    assert (loaded.primal_, loaded.gap_, loaded.task) == (model.primal_, model.gap_, "multiclass")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    warm = fastdual.train(X, y, loss="squared_hinge", alpha=1e-2, random_state=0,
                          warm_start=loaded)
    assert warm.n_epochs_ <= 2 and warm.converged_
    with pytest.raises(ValueError, match="warm_start must be a one-vs-rest model"):
        fastdual.train(X, y, loss="squared_hinge", warm_start=fastdual.train(X, y == "cat"))


def test_bad_multiclass_arguments_are_refused():
    X, y = multiclass_problem(n=60, k=3)
    with pytest.raises(ValueError, match=r"multiclass must be None or one of \['ovr'\]"):
        fastdual.train(X, y, loss="logistic", multiclass="multinomial")
    with pytest.raises(ValueError, match=r"n_jobs must be"):
        fastdual.train(X, y, n_jobs=0)
    with pytest.raises(ValueError, match=r"coef has 2 rows but y has 3 classes"):
        fastdual.duality_gap(X, y, np.zeros((2, 7)))


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(classes=a["classes"][:3]), r"one per row of coef"),
    (lambda a: a.update(intercept=a["intercept"][:2]), r"intercept must have shape \(4,\)"),
    (lambda a: a.pop("class_certificates"), r"needs its class_certificates"),
    (lambda a: a.update(coef=a["coef"][0]), r"coef must be 2-D"),
])
def test_damaged_k_class_files_are_refused(tmp_path, change, message):
    X, y = multiclass_problem(n=80, k=4, seed=6)
    fastdual.train(X, y, loss="hinge", alpha=1e-2).save(tmp_path / "model.npz")
    with np.load(tmp_path / "model.npz") as archive:
        arrays = dict(archive)
    change(arrays)
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=message):
        fastdual.load(tmp_path / "bad.npz")
