"""The primal Newton-CG solver: its passes against NumPy, its optimum against SDCA's and
scikit-learn's (free intercept), its certificate."""
import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from conftest import problem_for
from fastdual._problem import build_problem
from fastdual.solvers import _newton

SMOOTH = ["logistic", "squared_hinge", "smooth_hinge", "squared"]


@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("sparse", [False, True])
def test_the_passes_match_numpy(loss, sparse):
    X, y = problem_for(loss, n=60, d=5, seed=1, sparse=sparse)
    problem = build_problem(X, y, loss=loss, alpha=0.1, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=2.0, sample_weight=None,
                            loss_params={})
    A = np.column_stack([X.toarray() if sp.issparse(X) else X, np.full(60, 2.0)])
    rng = np.random.default_rng(0)
    w, v = rng.standard_normal(6), rng.standard_normal(6)
    z = np.empty(60)
    _newton.margins(*problem.X.kernel_args, 60, 5, 2.0, w, z)
    np.testing.assert_allclose(z, A @ w, rtol=1e-13, atol=1e-13)
    slope, curve = np.empty(60), np.empty(60)
    total = _newton.loss_terms(problem.y, problem.sample_weight, z, problem.loss, slope, curve)
    assert total == pytest.approx(problem.loss.values(problem.y, z).sum(), rel=1e-13)
    np.testing.assert_allclose(slope, problem.loss.derivatives(problem.y, z), rtol=1e-13)
    # The curvature is the derivative's derivative (central differences away from the kinks).
    h = 1e-6
    numeric = (problem.loss.derivatives(problem.y, z + h)
               - problem.loss.derivatives(problem.y, z - h)) / (2 * h)
    np.testing.assert_allclose(curve, numeric, atol=1e-5)
    out = np.empty(6)
    _newton.hessian_vector(*problem.X.kernel_args, 60, 5, 2.0, curve, v, out)
    np.testing.assert_allclose(out, A.T @ (curve * (A @ v)), rtol=1e-12, atol=1e-12)
    _newton.transpose_times(*problem.X.kernel_args, 60, 5, 2.0, slope, out)
    np.testing.assert_allclose(out, A.T @ slope, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("alpha", [1e-1, 1e-5])
def test_newton_reaches_sdcas_optimum(loss, alpha):
    X, y = problem_for(loss, n=150, d=8, seed=2, sparse=True)
    weights = np.random.default_rng(3).uniform(0.5, 2.0, 150)
    kwargs = dict(loss=loss, alpha=alpha, sample_weight=weights)
    reference = fastdual.train(X, y, tol=1e-11, max_epochs=200_000, random_state=0, **kwargs)
    model = fastdual.train(X, y, solver="newton", tol=1e-10, max_epochs=100, **kwargs)
    assert model.converged_ and model.n_epochs_ < 60
    assert model.primal_ == pytest.approx(reference.primal_, rel=1e-6)
    assert abs(model.primal_ - reference.primal_) <= model.gap_ + reference.gap_ + 1e-14


def test_newton_with_a_free_intercept_matches_scikit_learn():
    from sklearn.linear_model import LogisticRegression, Ridge
    X, y = problem_for("logistic", n=200, d=5, seed=4)
    X = X + 2.0
    alpha = 1e-3
    reference = LogisticRegression(C=1.0 / (alpha * 200), tol=1e-12, max_iter=10_000).fit(X, y)
    model = fastdual.train(X, y, loss="logistic", alpha=alpha, solver="newton",
                           regularize_intercept=False, tol=1e-12, max_epochs=100)
    np.testing.assert_allclose(model.coef_, reference.coef_.ravel(), rtol=1e-5, atol=1e-7)
    assert model.intercept_ == pytest.approx(reference.intercept_[0], rel=1e-5)
    Xr, yr = problem_for("squared", n=200, d=5, seed=5)
    ridge = Ridge(alpha=alpha * 200, fit_intercept=True, tol=1e-12).fit(Xr, yr)
    model = fastdual.train(Xr, yr, loss="squared", alpha=alpha, solver="newton",
                           regularize_intercept=False, tol=1e-12, max_epochs=100)
    np.testing.assert_allclose(model.coef_, ridge.coef_, rtol=1e-7, atol=1e-9)
    assert model.intercept_ == pytest.approx(ridge.intercept_, rel=1e-7)


def test_newton_refuses_what_it_cannot_do():
    X, y = problem_for("logistic", n=40, d=3, seed=0)
    with pytest.raises(ValueError, match=r"trains the l2 penalty only"):
        fastdual.train(X, y, loss="logistic", solver="newton", l1_ratio=0.5)
    with pytest.raises(ValueError, match=r"solver='newton' does not support loss='hinge'"):
        fastdual.train(X, y, loss="hinge", solver="newton")
