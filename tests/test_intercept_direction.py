"""SDCA's steps conjugate to the intercept's direction (the squared loss with LIBLINEAR's
intercept; _sdca_intercept.deflated_squared_epoch, docs/solvers/sdca.md "The intercept's direction"):
the optimum of the closed-form ridge with a penalised intercept column, the exact-step
invariants, and the epochs the direction saves on nearly orthogonal rows."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from conftest import scattered_rows
from fastdual._problem import build_problem
from fastdual.solvers import SOLVERS, solver_options


def scattered(n, d, per_row, seed, dtype=np.float64):
    """conftest's unit rows, with regression targets."""
    X, _ = scattered_rows(n, d, per_row, seed)
    return X.astype(dtype), np.random.default_rng(seed + 1000).standard_normal(n) + 0.7


def ridge_with_intercept_column(X, y, alpha, weights, b):
    """argmin (1/sum c) sum_i c_i (x~_i . w - y_i)^2 / 2 + alpha/2 ||w||^2 over w = (coef, w_b),
    x~_i = (x_i, b): the normal equations, by NumPy."""
    A = np.hstack([X.toarray() if sp.issparse(X) else np.asarray(X), np.full((X.shape[0], 1), b)])
    c = weights / weights.mean()
    n = X.shape[0]
    H = A.T @ (c[:, None] * A) / n + alpha * np.eye(A.shape[1])
    return np.linalg.solve(H, A.T @ (c * y) / n)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_deflated_steps_reach_the_ridge_optimum_with_a_penalised_intercept(sparse, dtype):
    X, y = scattered(300, 2000, 12, seed=1, dtype=dtype)
    X = X if sparse else X.toarray()
    weights = np.random.default_rng(2).uniform(0.3, 2.0, 300)
    weights[::17] = 0.0
    expected = ridge_with_intercept_column(X.astype(np.float64), y, 1e-3, weights, 1.7)
    model = fastdual.train(X, y, loss="squared", alpha=1e-3, sample_weight=weights,
                           intercept_scaling=1.7, solver="sdca", tol=1e-12, max_epochs=500)
    assert model.converged_ and model.gap_ <= 1e-12 * model.primal_
    # P is alpha-strongly convex: ||w - w*||^2 <= 2 gap / alpha, the certificate's own bound
    got = np.r_[model.coef_.ravel(), model.intercept_ / 1.7]
    assert np.linalg.norm(got - expected) <= np.sqrt(2.0 * model.gap_ / 1e-3) + 1e-9


def driver(X, y, alpha, bias=1.0, weights=None):
    problem = build_problem(X, y, loss="squared", alpha=alpha, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=bias, sample_weight=weights,
                            loss_params={})
    options = solver_options(SOLVERS["sdca"], {})
    return problem, SOLVERS["sdca"](problem, options, 0)


def dual_gradient(problem, duals):
    """grad(-D) for the squared loss: c_i / n (a_i - y_i + x~_i . v(duals))."""
    v = problem.dual_vector(duals)
    margins = problem.X.matvec(v[:-1]) + problem.bias * v[-1]
    return problem.sample_weight / problem.n_samples * (duals - problem.y + margins)


def test_a_deflated_epoch_ends_optimal_along_u_and_never_lowers_the_dual():
    # Each step is exact along its direction and keeps the slope along u at 0 (exactly, on a
    # quadratic): after every epoch u . grad(-D) is 0 to rounding and D has not decreased.
    X, y = scattered(200, 800, 10, seed=3)
    weights = np.random.default_rng(4).uniform(0.5, 1.5, 200)
    weights[5] = 0.0
    problem, sdca = driver(X, y, 1e-4, bias=1.3, weights=weights)
    assert sdca.deflates
    u = (problem.sample_weight > 0).astype(float)
    dual = -np.inf
    for _ in range(4):
        sdca.epoch()
        np.testing.assert_allclose(sdca.v, problem.dual_vector(sdca.duals), rtol=0,
                                   atol=1e-12 * np.abs(sdca.v).max())
        g = dual_gradient(problem, sdca.duals)
        assert abs(g @ u) <= 1e-10 * np.abs(g).sum() + 1e-15
        assert sdca.duals[5] == 0.0            # (weight 0: never moved)
        new = problem.primal_dual(sdca.v, sdca.duals)[1]
        assert new >= dual - 1e-12 * abs(new)
        dual = new


def test_the_intercepts_direction_saves_the_epochs_it_costs_plain_steps(monkeypatch):
    # Nearly orthogonal rows: without an intercept two or three epochs certify 1e-6; with
    # LIBLINEAR's, plain coordinate steps take several times as many (the intercept couples
    # every pair of duals), the conjugate steps as few as without it.
    from fastdual.solvers import sdca
    X, y = scattered(1500, 200_000, 30, seed=5)
    warnings.simplefilter("ignore", fastdual.ConvergenceWarning)

    def epochs(fit_intercept):
        return fastdual.train(X, y, loss="squared", alpha=1e-5, fit_intercept=fit_intercept,
                              solver="sdca", tol=1e-6, max_epochs=200,
                              random_state=0).n_epochs_

    without, deflated = epochs(False), epochs(True)
    real = sdca.SDCA.__init__

    def plain(self, *args, **kwargs):
        real(self, *args, **kwargs)
        self.deflates = False

    monkeypatch.setattr(sdca.SDCA, "__init__", plain)
    coupled = epochs(True)
    assert deflated <= without + 1 and coupled >= 3 * deflated


@pytest.mark.parametrize("weights", [[1.0, 1.0], [0.7, 1.9], [1.3, 0.0]])
def test_one_epoch_solves_two_rows_exactly(weights):
    # Two rows: u's direction and one conjugate direction span the duals, so the step along u
    # and the conjugate steps solve the dual exactly in one epoch (a gap of 0 to rounding);
    # with one weight 0 the other row is u's direction itself, which the step along u solves,
    # and the dual of weight 0 never moves from its start.
    X = sp.csr_matrix(np.array([[0.6, 0.0, 0.8], [0.0, 1.0, 0.3]]))
    y = np.array([0.4, -1.2])
    problem, sdca = driver(X, y, 0.05, bias=0.9, weights=np.array(weights))
    assert sdca.deflates
    sdca.duals[:] = [0.0, 0.0] if weights[1] > 0 else [0.0, 0.37]
    sdca.v[:] = problem.dual_vector(sdca.duals)
    sdca.epoch()
    primal, dual, gap = problem.certificate(sdca.v, sdca.duals)
    assert gap <= 1e-13 * max(abs(primal), 1e-300)
    if weights[1] == 0.0:
        assert sdca.duals[1] == 0.37


def test_the_conjugate_steps_are_taken_where_they_apply_only():
    X, y = scattered(50, 300, 8, seed=7)
    plain = dict(loss="squared", alpha=1e-3, C=None, l1_ratio=0.0, intercept_scaling=1.0,
                 sample_weight=None, loss_params={})
    cases = [({}, True, True), ({}, False, False), ({"sdca_option": "IV"}, True, False),
             ({"sampling": "uniform"}, True, False), ({"output": "average"}, True, False),
             ({"acceleration": np.False_}, True, True)]
    for given, fit_intercept, expected in cases:
        problem = build_problem(X, y, fit_intercept=fit_intercept, **plain)
        driver_ = SOLVERS["sdca"](problem, solver_options(SOLVERS["sdca"], given), 0)
        assert driver_.deflates == expected, (given, fit_intercept)
    problem = build_problem(X, y, fit_intercept=True, **dict(plain, l1_ratio=0.5))
    assert not SOLVERS["sdca"](problem, solver_options(SOLVERS["sdca"], {}), 0).deflates
    # acceleration planned (R^2 / n far above alpha): its own subproblems, plain steps
    problem = build_problem(X, y, fit_intercept=True, **dict(plain, alpha=1e-7))
    accelerated = SOLVERS["sdca"](problem, solver_options(SOLVERS["sdca"],
                                                          {"acceleration": True}), 0)
    assert accelerated.acceleration is not None and not accelerated.deflates
    problem = build_problem(X, np.sign(y), fit_intercept=True, **dict(plain, loss="logistic"))
    assert not SOLVERS["sdca"](problem, solver_options(SOLVERS["sdca"], {}), 0).deflates


def test_a_warm_start_goes_on_to_the_same_optimum():
    X, y = scattered(300, 2000, 12, seed=8)
    first = fastdual.train(X, y, loss="squared", alpha=1e-4, solver="sdca", max_epochs=1,
                           tol=0.0)
    model = fastdual.train(X, y, loss="squared", alpha=1e-4, solver="sdca", tol=1e-12,
                           warm_start=first)
    assert model.converged_ and model.n_epochs_ > 1
    expected = ridge_with_intercept_column(X, y, 1e-4, np.ones(300), 1.0)
    got = np.r_[model.coef_.ravel(), model.intercept_]
    assert np.linalg.norm(got - expected) <= np.sqrt(2.0 * model.gap_ / 1e-4) + 1e-9
