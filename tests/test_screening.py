"""Gap-safe screening in solver="cd" (docs/math.md 4l): a screened feature is zero at the
optimum, computed independently (scikit-learn's coordinate descent at tol 1e-12 for the squared
loss, otherwise cd without screening to a relative gap of 1e-12 with its optimality conditions
checked in NumPy); screening changes the time, not the answer; it fires on easy problems and
is safe at the border |x_j . theta*| = l1."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st
from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning
from sklearn.linear_model import ElasticNet, Lasso

import fastdual
from fastdual._fit import make_driver, solve
from fastdual._problem import build_problem
from conftest import np_objective
from test_cd import smooth_gradient

LOSSES = ["squared", "logistic", "squared_hinge"]
# phi'(y, 0) / y: the data term's slope at w = 0, for lambda_max
SLOPE_AT_ZERO = {"squared": -1.0, "logistic": -0.5, "squared_hinge": -2.0}


def train(X, y, *, screening=True, warm_start=None, tol=1e-12, max_epochs=100000,
          check_every="auto", loss="squared", alpha=0.1, l1_ratio=1.0, fit_intercept=False,
          regularize_intercept=True, sample_weight=None):
    """(model, driver) of a cd training, the driver kept to read what it screened."""
    problem = build_problem(X, y, loss=loss, alpha=alpha, C=None, l1_ratio=l1_ratio,
                            fit_intercept=fit_intercept, intercept_scaling=1.0,
                            sample_weight=sample_weight, loss_params={},
                            regularize_intercept=regularize_intercept)
    driver = make_driver(problem, "cd", {"screening": screening}, 0, warm_start)
    model = solve(problem, solver="cd", options={}, seed=0, tol=tol, max_epochs=max_epochs,
                  check_every=check_every, verbose=0, callback=None, on_interrupt="raise",
                  driver=driver)
    return model, driver


def lambda_max(X, y, loss, weights=None):
    """max_j |x_j . (c phi'(y, 0))| / n: the smallest alpha of pure l1 at which w = 0 (no
    intercept)."""
    n = X.shape[0]
    c = np.ones(n) if weights is None else weights * n / weights.sum()
    return float(np.max(np.abs(X.T @ (c * y * SLOPE_AT_ZERO[loss])))) / n


def random_problem(loss, n, d, seed, structure, sparse):
    """X with correlated columns, plus (structure) an exact duplicate of column 0 and zero
    columns; y from a sparse truth (labels +-1 for the classification losses)."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((n, d))
    X = base + 0.7 * np.roll(base, 1, axis=1)
    if sparse:
        X[rng.random((n, d)) > 0.5] = 0.0
    if "duplicate" in structure:
        X[:, 1] = X[:, 0]
    if "zero" in structure:
        X[:, [2, d - 1]] = 0.0
    truth = np.zeros(d)
    truth[rng.choice(d, 3, replace=False)] = 2.0 * rng.standard_normal(3)
    y = X @ truth + 0.3 * rng.standard_normal(n)
    if loss != "squared":
        y = np.where(y > np.median(y), 1.0, -1.0)
    return (sp.csr_matrix(X) if sparse else X), y


def reference_optimum(X, y, loss, alpha, l1_ratio, intercept, weights):
    """(coef, intercept) at a high-precision optimum, not screened: scikit-learn for the
    squared loss without a regularised intercept, else cd without screening to a relative gap
    of 1e-12, whose optimality conditions are then checked in NumPy."""
    fit_intercept = intercept != "none"
    if loss == "squared" and intercept != "regularized":
        Estimator = Lasso if l1_ratio == 1.0 else ElasticNet
        kwargs = {} if l1_ratio == 1.0 else {"l1_ratio": l1_ratio}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SklearnConvergenceWarning)
            reference = Estimator(alpha=alpha, fit_intercept=fit_intercept, tol=1e-12,
                                  max_iter=1000000, **kwargs).fit(X, y, sample_weight=weights)
        return reference.coef_, float(reference.intercept_)
    model, driver = train(X, y, screening=False, loss=loss, alpha=alpha, l1_ratio=l1_ratio,
                          fit_intercept=fit_intercept,
                          regularize_intercept=intercept == "regularized", sample_weight=weights,
                          tol=1e-13)
    assert driver.n_screened == 0
    # the optimality conditions, in NumPy (the regularised intercept a feature of value 1)
    Xd = X.toarray() if sp.issparse(X) else X
    grad, grad_b = smooth_gradient(Xd, y, model.coef_, model.intercept_, loss, weights)
    l2, l1 = alpha * (1 - l1_ratio), alpha * l1_ratio
    w = model.coef_
    if intercept == "regularized":
        grad, w = np.append(grad, grad_b), np.append(w, model.intercept_)
    grad = grad + l2 * w
    on = w != 0
    tol = 1e-6 * max(1.0, float(np.max(np.abs(grad))))
    np.testing.assert_array_less(np.abs(grad[on] + l1 * np.sign(w[on])), tol)
    np.testing.assert_array_less(np.abs(grad[~on]), l1 + tol)
    if intercept == "free":
        assert abs(grad_b) < tol
    return model.coef_, model.intercept_


@settings(max_examples=30, deadline=None)
@given(loss=st.sampled_from(LOSSES), l1_ratio=st.sampled_from([1.0, 0.5]),
       intercept=st.sampled_from(["none", "regularized", "free"]),
       fraction=st.sampled_from([0.5, 0.2, 0.05]), sparse=st.booleans(),
       structure=st.sampled_from([(), ("duplicate",), ("zero",), ("duplicate", "zero")]),
       weighted=st.booleans(), seed=st.integers(0, 10000))
def test_every_screened_feature_is_zero_at_the_optimum(loss, l1_ratio, intercept, fraction,
                                                        sparse, structure, weighted, seed):
    n, d = 50, 30
    X, y = random_problem(loss, n, d, seed, structure, sparse)
    weights = np.random.default_rng(seed).uniform(0.0, 3.0, n) if weighted else None
    alpha = fraction * lambda_max(X, y, loss, weights) / l1_ratio
    kwargs = dict(loss=loss, alpha=alpha, l1_ratio=l1_ratio, fit_intercept=intercept != "none",
                  regularize_intercept=intercept != "free", sample_weight=weights)
    screened_model, driver = train(X, y, check_every=1, tol=1e-11, **kwargs)
    plain_model, plain = train(X, y, screening=False, tol=1e-11, **kwargs)
    assert screened_model.converged_ and plain_model.converged_ and plain.n_screened == 0
    screened = driver.screened.astype(bool)
    assert driver.n_screened == np.count_nonzero(screened)
    coef, _ = reference_optimum(X, y, loss, alpha, l1_ratio, intercept, weights)
    np.testing.assert_array_less(np.abs(coef[screened]), 1e-9)
    assert np.all(screened_model.coef_[screened] == 0.0)
    if "zero" in structure and len(screened_model.history_) > 1:
        # (screening runs after every check but the last) an empty column: x_j . theta = 0
        assert screened[[2, d - 1]].all()
    # the screened run's answer is the unscreened one
    objective = dict(loss=loss, l2=alpha * (1 - l1_ratio), l1=alpha * l1_ratio,
                     sample_weight=weights, fit_intercept=intercept != "none",
                     regularize_intercept=intercept != "free")
    ours = np_objective(X, y, screened_model.coef_, screened_model.intercept_, **objective)
    theirs = np_objective(X, y, plain_model.coef_, plain_model.intercept_, **objective)
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12)
    if l1_ratio < 1.0 or "duplicate" not in structure:
        # (pure l1 with two equal columns has a segment of optima)
        np.testing.assert_allclose(screened_model.coef_, plain_model.coef_, atol=2e-5)


def irrelevant_features(n=100, d=400, k=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = X[:, :k] @ rng.uniform(1.0, 2.0, k) + 0.1 * rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
@pytest.mark.parametrize("intercept", ["none", "free"])
def test_screening_fires_on_an_easy_problem_and_the_score_pass_skips_the_screened(l1_ratio,
                                                                                   intercept):
    X, y = irrelevant_features()
    alpha = 0.5 * lambda_max(X, y, "squared") / l1_ratio
    model, driver = train(X, y, alpha=alpha, l1_ratio=l1_ratio, fit_intercept=intercept != "none",
                          regularize_intercept=False, tol=1e-10, check_every=1)
    assert model.converged_
    support = np.count_nonzero(model.coef_)
    assert 0 < support <= 5
    # nearly every feature outside the support is screened, and none of the support
    screened = driver.screened.astype(bool)
    assert driver.n_screened >= 0.95 * (X.shape[1] - support)
    assert not screened[model.coef_ != 0].any()
    # the score pass reads the columns not screened only (and the intercept's n entries)
    n, d = X.shape
    assert driver.score_entries == n * (d - driver.n_screened) + (n if intercept != "none" else 0)
    np.testing.assert_array_equal(driver.features, np.flatnonzero(~screened))
    # without screening, nothing is
    _, plain = train(X, y, screening=False, alpha=alpha, l1_ratio=l1_ratio,
                     fit_intercept=intercept != "none", regularize_intercept=False, tol=1e-10)
    assert plain.n_screened == 0 and plain.score_entries == plain.pass_entries


@pytest.mark.parametrize("loss", LOSSES)
def test_a_feature_at_the_border_is_not_screened(loss):
    """At alpha = lambda_max the optimum is w = 0 and the most correlated feature has
    |x_j . theta*| = l1 exactly. Warm-started at w = 0 (a path's first step), the certified gap
    is 0 to rounding and the sphere has radius 0: the border feature must not be screened,
    while the others are."""
    X, y = irrelevant_features(n=60, d=40, seed=3)
    if loss != "squared":
        y = np.where(y > 0, 1.0, -1.0)
    correlations = np.abs(X.T @ y)
    border = int(np.argmax(correlations))
    alpha = lambda_max(X, y, loss)
    zero, _ = train(X, y, loss=loss, alpha=2.0 * alpha)
    assert np.all(zero.coef_ == 0.0)
    model, driver = train(X, y, loss=loss, alpha=alpha, warm_start=zero)
    # (w* = 0 up to the rounding of lambda_max, which may leave the border feature a weight)
    assert np.all(np.abs(model.coef_) <= 1e-12) and model.gap_ <= 1e-15 * model.primal_
    screened = driver.screened.astype(bool)
    assert not screened[border]
    assert screened[correlations < 0.99 * correlations[border]].all()


@pytest.mark.parametrize("loss", LOSSES)
def test_equal_columns_in_the_support_are_never_screened(loss):
    """Two equal columns share the weight of a relevant feature: both sit at |x_j . theta*| =
    l1 at every optimum (the pure-l1 optimum is a segment), so neither may be screened, even
    when training continues at a gap of rounding size."""
    X, y = irrelevant_features(n=80, d=30, k=3, seed=4)
    X[:, 1] = X[:, 0]
    if loss != "squared":
        y = np.where(y > 0, 1.0, -1.0)
    alpha = 0.3 * lambda_max(X, y, loss)
    model, driver = train(X, y, loss=loss, alpha=alpha, tol=0.0, max_epochs=60, check_every=1)
    assert model.coef_[0] + model.coef_[1] != 0.0
    assert not driver.screened[[0, 1]].any()
    assert driver.n_screened > 0


@pytest.mark.parametrize("l1_ratio", [1.0, 0.8])
def test_a_warm_start_screens_before_the_first_epoch_and_checks_at_once(l1_ratio):
    """A regularisation path's step: warm-started from the model of a larger alpha, the driver
    certifies the warm point and screens before its first score pass, and its first check
    comes after its first epoch whatever the schedule; the answer is the cold one. (A path's
    step: alpha down by 7 %, a hundred steps over three decades.)"""
    X, y = irrelevant_features(n=100, d=300, seed=5)
    top = lambda_max(X, y, "squared") / l1_ratio
    previous, _ = train(X, y, alpha=0.3 * top, l1_ratio=l1_ratio, tol=1e-10)
    problem = build_problem(X, y, loss="squared", alpha=0.28 * top, C=None, l1_ratio=l1_ratio,
                            fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    driver = make_driver(problem, "cd", {}, 0, previous)
    assert driver.n_screened >= 0.8 * (X.shape[1] - np.count_nonzero(previous.coef_))
    assert not driver.screened[previous.coef_ != 0].any()
    warm, warm_driver = train(X, y, alpha=0.28 * top, l1_ratio=l1_ratio, tol=1e-10,
                              warm_start=previous, check_every=50)
    cold, _ = train(X, y, alpha=0.28 * top, l1_ratio=l1_ratio, tol=1e-10, check_every=50)
    assert warm.history_[0]["epoch"] < 50 and warm.converged_
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-6)
    coef, _ = reference_optimum(X, y, "squared", 0.28 * top, l1_ratio, "none", None)
    np.testing.assert_array_less(np.abs(coef[warm_driver.screened.astype(bool)]), 1e-9)


def test_the_option_is_checked_and_off_by_choice():
    X, y = irrelevant_features(n=20, d=10)
    with pytest.raises(TypeError, match=r"^screening must be True or False, got 1"):
        fastdual.train(X, y, loss="squared", solver="cd", screening=1)
    # l2 alone: no feature is zero at the optimum, nothing to screen
    _, driver = train(X, y, alpha=0.1, l1_ratio=0.0, tol=1e-8)
    assert not driver.screening and driver.n_screened == 0
