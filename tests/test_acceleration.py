"""Accelerated Prox-SDCA (solver="sdca", acceleration=True): the subproblem's primal and dual
against NumPy and a brute-force minimisation, the optimum against independent references, and
never a worse certificate than plain SDCA for the same passes over the data."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

import fastdual
from conftest import SMOOTH_LOSSES, np_loss, np_objective, problem_for
from fastdual._problem import build_problem
from fastdual.solvers import SOLVERS, solver_options
from fastdual.solvers.sdca import Acceleration
from test_optimality import lbfgs_reference, liblinear_coef

REL = 1e-6


def accelerated_driver(X, y, loss, alpha, l1_ratio=0.0, epochs=3, seed=0):
    problem = build_problem(X, y, loss=loss, alpha=alpha, C=None, l1_ratio=l1_ratio,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    driver = SOLVERS["sdca"](problem, solver_options(SOLVERS["sdca"], {"acceleration": True}),
                             seed)
    assert isinstance(driver.acceleration, Acceleration)
    for _ in range(epochs):
        driver.epoch()
    return problem, driver


@pytest.mark.parametrize("loss", ["logistic", "squared", "squared_hinge"])
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
def test_the_subproblem_values_match_numpy_and_bound_its_minimum(loss, l1_ratio):
    """P_t by NumPy at the kernel's w; D_t (docs/math.md's shifted conjugate) below P_t at a
    brute-force minimiser's point, and equal to P_t once the kernel alone solves the subproblem
    (at a value no larger than the brute force's)."""
    X, y = problem_for(loss, n=60, d=4, seed=3)
    alpha = 1e-4
    problem, driver = accelerated_driver(X, y, loss, alpha, l1_ratio, epochs=4)
    acc = driver.acceleration
    assert acc.outer_steps >= 1 and np.any(acc.y)       # a real proximal centre
    l2, l1 = alpha * (1 - l1_ratio), alpha * l1_ratio
    A = np.hstack([X, np.ones((60, 1))])

    def p_t(w):
        return (np.mean(np_loss(loss, y, A @ w)) + 0.5 * l2 * w @ w + l1 * np.abs(w).sum()
                + 0.5 * acc.kappa * np.sum((w - acc.y) ** 2))

    primal, dual = acc.subproblem_values()
    assert primal == pytest.approx(p_t(driver.w), rel=1e-12)
    best = min((minimize(p_t, start, method="Powell",
                         options={"xtol": 1e-12, "ftol": 1e-15, "maxiter": 100_000}).fun
                for start in (driver.w, acc.y)))
    assert dual <= best + 1e-10 <= primal + 2e-10
    for _ in range(300):                     # the same subproblem solved by the kernel alone
        driver._sdca_epoch()
    primal, dual = acc.subproblem_values()
    assert primal == pytest.approx(p_t(driver.w), rel=1e-12)
    assert dual == pytest.approx(primal, abs=1e-9) and primal <= best + 1e-12


@pytest.mark.parametrize("loss", SMOOTH_LOSSES)
@pytest.mark.parametrize("sparse", [False, True])
def test_accelerated_sdca_reaches_lbfgs(loss, sparse):
    X, y = problem_for(loss, n=150, d=8, seed=11, sparse=sparse)
    alpha = 1e-5
    model = fastdual.train(X, y, loss=loss, alpha=alpha, acceleration=True, tol=1e-10,
                           max_epochs=20_000, fit_intercept=True, random_state=0)
    ref = lbfgs_reference(X, y, loss, alpha, fit_intercept=True)
    objective = dict(loss=loss, l2=alpha, l1=0.0, fit_intercept=True)
    p_ref = np_objective(X, y, ref[:8], ref[8], **objective)
    p_fd = np_objective(X, y, model.coef_, model.intercept_, **objective)
    assert model.converged_ and model.solver == "sdca"
    assert p_fd == pytest.approx(p_ref, rel=REL)
    assert p_fd <= p_ref + model.gap_ + 1e-12


@pytest.mark.parametrize("loss,solver_type", [("squared_hinge", 1), ("logistic", 7)])
def test_accelerated_sdca_reaches_liblinear(loss, solver_type):
    X, y = problem_for(loss, n=120, d=6, seed=2)
    C = 50.0                       # alpha = 1 / (C n) ~ 1.7e-4: the accelerated regime
    coef = liblinear_coef(X, y, solver_type, C)
    model = fastdual.train(X, y, loss=loss, C=C, acceleration=True, fit_intercept=False,
                           tol=1e-9, max_epochs=50_000, random_state=0)
    alpha = 1.0 / (C * 120)
    objective = dict(loss=loss, l2=alpha, l1=0.0)
    assert np_objective(X, y, model.coef_, **objective) == pytest.approx(
        np_objective(X, y, coef, **objective), rel=1e-5)
    assert model.converged_


@pytest.mark.parametrize("loss", SMOOTH_LOSSES)
@pytest.mark.parametrize("alpha", [1e-5, 1e-7])
@pytest.mark.parametrize("seed", [0, 1])
def test_acceleration_is_never_worse_than_plain_sdca_for_the_same_passes(loss, alpha, seed):
    """Same seed, fixed budget, no early stop: E accelerated epochs against E plain ones, and
    (an accelerated epoch is two passes: the SDCA pass and the subproblem's certificate)
    against 2E plain ones once past the first outer steps. While neither has a relative gap
    below 0.99 (no usable model yet) acceleration may trail slightly (docs/solvers/sdca.md)."""
    X, y = problem_for(loss, n=300, d=20, seed=seed, sparse=True)
    common = dict(loss=loss, alpha=alpha, tol=0.0, random_state=seed, check_every=10**6,
                  solver="sdca")
    for epochs, plain_epochs in ((10, 10), (20, 20), (60, 60), (40, 80), (60, 120)):
        plain = fastdual.train(X, y, max_epochs=plain_epochs, **common)
        accelerated = fastdual.train(X, y, max_epochs=epochs, acceleration=True, **common)
        assert (accelerated.relative_gap_ <= plain.relative_gap_
                or min(accelerated.relative_gap_, plain.relative_gap_) > 0.99), (epochs,
                                                                                 plain_epochs)


def test_large_alpha_runs_plain_sdca_bit_for_bit():
    X, y = problem_for("logistic", n=100, d=5, seed=4)
    common = dict(loss="logistic", alpha=1.0, tol=1e-8, random_state=0, solver="sdca")
    plain, accelerated = fastdual.train(X, y, **common), fastdual.train(X, y, acceleration=True,
                                                                         **common)
    assert np.array_equal(plain.coef_, accelerated.coef_) and plain.gap_ == accelerated.gap_


def test_warm_start_begins_at_the_duals_primal():
    """A warm start (initial duals) centres the first subproblem at w(duals), not at 0: from a
    converged model's duals it converges again in fewer epochs than from zero."""
    X, y = problem_for("logistic", n=200, d=10, seed=6, sparse=True)
    common = dict(loss="logistic", alpha=1e-6, random_state=0)
    first = fastdual.train(X, y, acceleration=True, tol=1e-8, max_epochs=5000, **common)
    again = fastdual.train(X, y, acceleration=True, tol=1e-8, max_epochs=5000,
                           warm_start=first, check_every=1, **common)
    assert again.converged_
    assert again.n_epochs_ < first.n_epochs_


def test_acceleration_refusals():
    X, y = problem_for("logistic", n=50, d=4, seed=0)
    with pytest.raises(ValueError, match="acceleration=True needs an l2 term"):
        fastdual.train(X, y, loss="logistic", alpha=1e-6, l1_ratio=1.0, acceleration=True)
    with pytest.raises(ValueError, match="output='average'"):
        fastdual.train(X, y, loss="logistic", alpha=1e-6, output="average", acceleration=True)
    with pytest.raises(ValueError, match="acceleration=True needs a smooth loss"):
        fastdual.train(X, y, loss="hinge", alpha=1e-6, acceleration=True)
    with pytest.raises(TypeError, match="acceleration must be True or False"):
        fastdual.train(X, y, loss="logistic", acceleration="yes")
