"""SDCA's importance sampling (sampling="weighted"): the distribution it states, monotone dual
ascent under it, and the same optimum as the other samplings."""
import numpy as np
import pytest

import fastdual
from conftest import SMOOTH_LOSSES, row_norm_spread_problem
from fastdual._problem import build_problem
from fastdual.solvers import solver_options
from fastdual.solvers.sdca import SDCA


def test_the_importance_distribution():
    """Half uniform, half proportional to c_i ||x_i||^2 (the intercept feature included)."""
    X, y = row_norm_spread_problem()
    weights = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    problem = build_problem(X, y, loss="logistic", alpha=1e-3, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=weights,
                            loss_params={})
    driver = SDCA(problem, solver_options(SDCA, {"sampling": "weighted"}), seed=0)
    c = weights * len(y) / weights.sum()
    importance = c * (np.sum(X ** 2, axis=1) + 1.0)
    expected = 0.5 / len(y) + 0.5 * importance / importance.sum()
    np.testing.assert_allclose(driver.probabilities, expected, rtol=1e-12)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "hinge", "squared"])
def test_weighted_sdca_ascends_and_reaches_the_optimum(loss):
    X, y = row_norm_spread_problem()
    if loss == "squared":
        y = X @ np.ones(X.shape[1])
    kwargs = dict(loss=loss, alpha=1e-3, random_state=0)
    reference = fastdual.train(X, y, tol=1e-10, max_epochs=100_000, **kwargs)
    run = fastdual.train(X, y, sampling="weighted", tol=0.0, max_epochs=15, check_every=1,
                         **kwargs)
    duals = np.array([h["dual"] for h in run.history_])
    assert np.all(np.diff(duals) >= -1e-12 * abs(duals[-1]))
    tol = 1e-8 if loss in SMOOTH_LOSSES else 1e-5
    model = fastdual.train(X, y, sampling="weighted", tol=tol, max_epochs=100_000, **kwargs)
    assert model.converged_
    assert abs(model.primal_ - reference.primal_) <= model.gap_ + reference.gap_ + 1e-14
