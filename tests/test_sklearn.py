"""fastdual.sklearn: scikit-learn's estimator checks, pipelines, search, pickling."""
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import fastdual
from conftest import WEIGHT_EQUIVALENCE, problem_for
from fastdual.sklearn import LinearClassifier, LinearRegressor



@parametrize_with_checks([LinearClassifier(), LinearClassifier(loss="logistic"),
                          LinearRegressor()],
                         expected_failed_checks=lambda estimator: WEIGHT_EQUIVALENCE)
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SklearnConvergenceWarning)
        # (scikit-learn's checks set max_iter on every estimator that has the parameter; here it
        # is max_epochs' deprecated name, tested by test_max_iter_is_the_deprecated_name_...)
        warnings.filterwarnings("ignore", "max_iter is deprecated", DeprecationWarning)
        check(estimator)


def test_the_estimators_are_fastdual_train():
    X, y = problem_for("logistic", n=120, d=5, seed=0)
    clf = LinearClassifier(loss="logistic", C=2.0, tol=1e-8, random_state=0).fit(X, y)
    model = fastdual.train(X, y, loss="logistic", C=2.0, tol=1e-8, random_state=0)
    assert np.array_equal(clf.coef_.ravel(), model.coef_) and clf.gap_ == model.gap_
    assert clf.coef_.shape == (1, 5) and clf.n_iter_ == model.n_epochs_
    np.testing.assert_allclose(clf.predict_proba(X), model.predict_proba(X))
    Xr, yr = problem_for("squared", n=120, d=5, seed=1)
    reg = LinearRegressor(alpha=1e-2, tol=1e-8, random_state=0).fit(Xr, yr)
    assert np.array_equal(reg.coef_, fastdual.train(Xr, yr, loss="squared", alpha=1e-2,
                                                    tol=1e-8, random_state=0).coef_)
    assert not hasattr(LinearClassifier(loss="hinge"), "predict_proba")
    assert not hasattr(LinearClassifier(), "partial_fit")
    assert hasattr(LinearClassifier(solver="rda"), "partial_fit")


def test_pipelines_search_and_pickle():
    X, y = problem_for("smooth_hinge", n=150, d=4, seed=2)
    search = GridSearchCV(make_pipeline(StandardScaler(), LinearClassifier(warm_start=True)),
                          {"linearclassifier__C": [0.01, 0.1, 1.0]}, cv=3).fit(X, y)
    assert search.best_score_ > 0.7
    restored = pickle.loads(pickle.dumps(search.best_estimator_))
    np.testing.assert_array_equal(restored.predict(X), search.best_estimator_.predict(X))


def test_non_finite_labels_are_refused_before_their_type_is_read():
    """As scikit-learn's classifiers: the error, and no RuntimeWarning from casting NaN."""
    X, y = problem_for("logistic", n=20, d=3, seed=1)
    for bad in (np.nan, np.inf):
        labels = y.astype(float)
        labels[3] = bad
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="Input y contains (NaN|infinity)"):
                LinearClassifier().fit(X, labels)


@pytest.mark.parametrize("estimator, loss", [(LinearClassifier, "squared"),
                                             (LinearClassifier, "epsilon_insensitive"),
                                             (LinearRegressor, "hinge"),
                                             (LinearRegressor, "logistic")])
def test_a_loss_of_the_other_task_is_refused_by_name(estimator, loss):
    """A regression loss in a classifier (or the reverse) is refused at fit and at partial_fit,
    naming the loss, the losses the estimator takes and the other estimator: it used to fit a
    regression on the labels and fail in predict."""
    X, y = problem_for("logistic", n=40, d=4, seed=0)
    other = "LinearRegressor" if estimator is LinearClassifier else "LinearClassifier"
    with pytest.raises(ValueError, match=rf"loss='{loss}' is a .* loss: {estimator.__name__} "
                                         rf"takes loss in \[.*\]; for .* use {other}"):
        estimator(loss=loss).fit(X, y)
    kwargs = dict(classes=[-1.0, 1.0]) if estimator is LinearClassifier else {}
    with pytest.raises(ValueError, match=f"loss='{loss}'"):
        estimator(loss=loss, solver="rda", alpha=0.1).partial_fit(X, y, **kwargs)

@pytest.mark.parametrize("solver", ["auto", "rda"])
def test_warm_start_refit_with_a_solver_that_takes_no_warm_start(solver):
    """A free intercept with an l1 term and the hinge is trained by RDA (auto's choice too),
    which starts from its own gradient sums: a refit starts cold, as a fresh fit does."""
    X, y = problem_for("hinge", n=60, d=4, seed=2)
    params = dict(loss="hinge", C=0.05, l1_ratio=0.5, regularize_intercept=False, tol=1e-2,
                  max_epochs=5000, random_state=0, solver=solver)
    clf = LinearClassifier(warm_start=True, **params).fit(X, y)
    assert clf.model_.solver == "rda"
    refit = clf.fit(X, y)
    fresh = LinearClassifier(**params).fit(X, y)
    assert np.array_equal(refit.coef_, fresh.coef_) and refit.gap_ == fresh.gap_


def test_multiclass_and_partial_fit():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 4)) + np.repeat(np.eye(4)[:, :4] * 3, 50, axis=0)
    y = np.repeat(["a", "b", "c", "d"], 50)
    clf = LinearClassifier(loss="logistic", multiclass="multinomial").fit(X, y)
    assert clf.coef_.shape == (4, 4) and clf.score(X, y) > 0.8
    online = LinearClassifier(loss="logistic", solver="rda", alpha=0.02,
                              solver_options={"rda_gamma": 0.3})
    yb = np.where(y == "a", "a", "z")
    for chunk in np.array_split(rng.permutation(200), 4):
        online.partial_fit(X[chunk], yb[chunk], classes=["a", "z"])
    assert online.score(X, yb) > 0.7


def test_the_estimators_convergence_warnings_are_both_classes():
    X, y = problem_for("hinge", n=100, d=5, seed=4)
    for category in (SklearnConvergenceWarning, fastdual.ConvergenceWarning):
        with pytest.warns(category, match="relative duality gap"):
            LinearClassifier(loss="hinge", max_epochs=1, tol=1e-12).fit(X, y)
    with warnings.catch_warnings():       # scikit-learn's filter silences it
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", SklearnConvergenceWarning)
        LinearClassifier(loss="hinge", max_epochs=1, tol=1e-12).fit(X, y)


def test_training_does_not_import_scikit_learn(tmp_path):
    """fastdual.train's own warning class: training (and its ConvergenceWarning) needs no
    scikit-learn, whose import costs seconds at a command line's start."""
    code = ("import sys, warnings, numpy as np, fastdual\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    fastdual.train(np.eye(3), [1, -1, 1], loss='hinge', max_epochs=1, tol=1e-14)\n"
            "assert any(issubclass(w.category, fastdual.ConvergenceWarning) for w in caught)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'))\n")
    # (from another directory, the fastdual these tests import: not the uncompiled sources that
    # the repository root would put first on sys.path)
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(fastdual.__file__))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_coming_from_page_mappings_hold():
    """docs/coming-from.md: Ridge(alpha=A) is LinearRegressor(alpha=A/n, free intercept), and
    LogisticRegression(C) is LinearClassifier(loss="logistic", C, free intercept)."""
    from sklearn.linear_model import LogisticRegression, Ridge
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 4))
    y = X @ [1.0, 2.0, 3.0, 4.0] + 5.0 + rng.standard_normal(100)
    ridge = Ridge(alpha=3.0).fit(X, y)
    ours = LinearRegressor(alpha=3.0 / 100, regularize_intercept=False, solver="newton",
                           tol=1e-12).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ridge.coef_, rtol=1e-9, atol=1e-10)
    assert ours.intercept_ == pytest.approx(ridge.intercept_, rel=1e-9)
    labels = np.where(X[:, 0] + 0.5 * rng.standard_normal(100) > 0.3, "yes", "no")
    logistic = LogisticRegression(C=0.5, tol=1e-12, max_iter=10_000).fit(X, labels)
    # tol=0: every pass of max_epochs (a gap of 1e-12 P bounds ||w - w*|| only by
    # sqrt(2 gap / alpha) ~ 1e-6, looser than the comparison's 1e-7).
    ours = LinearClassifier(loss="logistic", C=0.5, regularize_intercept=False,
                            solver="newton", tol=0.0, max_epochs=400).fit(X, labels)
    np.testing.assert_allclose(ours.coef_, logistic.coef_, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ours.predict_proba(X), logistic.predict_proba(X), atol=1e-6)


def test_dataframe_feature_names():
    """feature_names_in_ from a DataFrame; columns in another order at predict time are an
    error, as in scikit-learn; mixing arrays and DataFrames between fit and predict warns."""
    pd = pytest.importorskip("pandas")
    X, y = problem_for("logistic", n=80, d=3, seed=5)
    frame = pd.DataFrame(X, columns=["age", "income", "score"])
    for est, target in ((LinearClassifier(loss="logistic"), y),
                        (LinearRegressor(), X @ [1.0, -2.0, 0.5])):
        est.fit(frame, target)
        assert list(est.feature_names_in_) == ["age", "income", "score"]
        assert est.n_features_in_ == 3
        with pytest.warns(UserWarning, match="feature names"):
            np.testing.assert_array_equal(est.predict(frame), est.predict(X))
        with pytest.raises(ValueError, match="feature names"):
            est.predict(frame[["income", "age", "score"]])
        with pytest.warns(UserWarning, match="feature names"):
            est.fit(X, target).predict(frame)


def test_duality_gap_takes_scikit_learns_binary_coef_shape():
    from sklearn.linear_model import LogisticRegression
    X, y = problem_for("logistic", n=80, d=4, seed=2)
    reference = LogisticRegression(C=1.0, tol=1e-10, max_iter=1000).fit(X, y)
    ours = LinearClassifier(loss="logistic", C=1.0, tol=1e-8).fit(X, y)
    for clf in (reference, ours):
        assert clf.coef_.shape == (1, 4) and np.shape(clf.intercept_) in ((1,), ())
        two_d = fastdual.duality_gap(X, y, clf.coef_, clf.intercept_, loss="logistic", C=1.0,
                                     regularize_intercept=False)
        flat = fastdual.duality_gap(X, y, clf.coef_.ravel(), float(np.ravel(clf.intercept_)[0]),
                                    loss="logistic", C=1.0, regularize_intercept=False)
        assert two_d == flat
    assert fastdual.duality_gap(X, y, ours.coef_, ours.intercept_, loss="logistic",
                                C=1.0).relative_gap <= 1e-8


def test_partial_fit_keeps_the_estimators_objective():
    """partial_fit trains the estimator's objective: its loss parameters (epsilon), its alpha
    and intercept mode, whatever the chunking; C alone (alpha = 1/(C n) needs the whole n) is
    refused by name."""
    X, y = problem_for("epsilon_insensitive", n=120, d=4, seed=5)
    estimator = LinearRegressor(loss="epsilon_insensitive", epsilon=0.7, alpha=0.01, solver="rda")
    for chunk in np.array_split(np.arange(120), 3):
        estimator.partial_fit(X[chunk], y[chunk])
    assert estimator.stream_.loss_params == {"epsilon": 0.7}
    cert = estimator.stream_.certify(X, y)
    expected = fastdual.duality_gap(X, y, estimator.coef_, estimator.intercept_,
                                    loss="epsilon_insensitive", epsilon=0.7, alpha=0.01)
    assert cert.primal == expected.primal
    # The chunking does not change the objective (nor, here, the model: one pass in order).
    other = LinearRegressor(loss="epsilon_insensitive", epsilon=0.7, alpha=0.01, solver="rda")
    for chunk in np.array_split(np.arange(120), 7):
        other.partial_fit(X[chunk], y[chunk])
    np.testing.assert_array_equal(other.coef_, estimator.coef_)
    with pytest.raises(ValueError, match="partial_fit needs alpha"):
        LinearRegressor(solver="rda", C=1.0).partial_fit(X[:10], y[:10])


def test_max_iter_is_the_deprecated_name_of_max_epochs():
    X, y = problem_for("logistic", n=60, d=3, seed=1)
    with pytest.warns(DeprecationWarning, match="max_iter is deprecated"):
        old = LinearClassifier(loss="logistic", max_iter=3, tol=0.0, random_state=0).fit(X, y)
    new = LinearClassifier(loss="logistic", max_epochs=3, tol=0.0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(old.coef_, new.coef_)


def test_an_estimator_after_partial_fit_pickles_and_fit_starts_afresh():
    import pickle
    X, y = problem_for("logistic", n=80, d=3, seed=9)
    online = LinearClassifier(loss="logistic", solver="rda", alpha=0.01)
    online.partial_fit(X[:40], y[:40], classes=np.unique(y))
    copied = pickle.loads(pickle.dumps(online))
    np.testing.assert_array_equal(copied.partial_fit(X[40:], y[40:]).coef_,
                                  online.partial_fit(X[40:], y[40:]).coef_)
    with pytest.warns(fastdual.ConvergenceWarning):       # (RDA to 1e-4: slow; not the point)
        online.fit(X, y)
    assert not hasattr(online, "stream_")     # a later partial_fit starts its own stream
    fresh = LinearClassifier(loss="logistic", solver="rda", alpha=0.01)
    np.testing.assert_array_equal(
        online.partial_fit(X[:40], y[:40], classes=np.unique(y)).coef_,
        fresh.partial_fit(X[:40], y[:40], classes=np.unique(y)).coef_)
