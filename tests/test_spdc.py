"""SPDC (seed 002): the delayed sparse updates against a plain eager implementation of the same
algorithm, and the optimum against SDCA's."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from conftest import (BINARY_LOSSES, REGRESSION_LOSSES, SMOOTH_LOSSES, problem_for,
                      row_norm_spread_problem)
from fastdual._problem import build_problem
from fastdual.solvers import solver_options
from fastdual.solvers.spdc import SPDC


def rare_feature_problem(n=200, d=60, seed=0, loss="logistic"):
    """Sparse rows whose column j appears with probability 0.6 (j + 1)^-1.5: the last columns go
    untouched for hundreds to thousands of iterations (the delayed updates' hard case)."""
    rng = np.random.default_rng(seed)
    mask = rng.random((n, d)) < 0.6 * (np.arange(d) + 1.0) ** -1.5
    X = np.where(mask, rng.standard_normal((n, d)), 0.0)
    X[np.arange(n), rng.integers(0, 3, n)] += 1.0           # no empty row
    w = rng.standard_normal(d)
    if loss in REGRESSION_LOSSES:
        y = X @ w + 0.3 * rng.standard_normal(n)
    else:
        y = np.where(X @ w + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return sp.csr_matrix(X), y


def eager_epoch(A, problem, driver, state):
    """The same batches as the kernel's last epoch (driver.picks), every coordinate every
    iteration, in NumPy: seed 002 Algorithm 2 (eqs. 9, 10) or 3 (eqs. 21-23), with the
    perturbation of Sec. 3."""
    w, w_prev, u, duals = state
    n, m = problem.n_samples, driver.batch_size
    c, loss, y = problem.sample_weight, problem.loss, problem.y
    tau, sigma, theta, delta = driver.tau, driver.sigma, driver.theta, driver.delta
    for b in range(len(driver.picks) // m):
        wbar = w + theta * (w - w_prev)
        g, du = np.zeros_like(w), np.zeros_like(w)
        for i in driver.picks[b * m:(b + 1) * m]:
            if c[i] == 0.0:
                continue
            z = A[i] @ wbar
            s = driver.step_scale[i]              # n p_i / m: 1 unless sampling is weighted
            q = s / sigma
            old = duals[i]
            duals[i] = loss.step(y[i], z, q * old / (q + delta), q + delta)
            change = -c[i] * (duals[i] - old) * A[i]
            g += change / (m * s)                 # the gradient estimate (eqs. 10, 23)
            du += change / n                      # u's actual change (eq. 22)
        v = w - tau * (u + g)
        w_prev, w = w, np.sign(v) * np.maximum(np.abs(v) - tau * problem.l1, 0.0) / (
            1.0 + tau * problem.l2)
        u = u + du
    return w, w_prev, u, duals


@pytest.mark.parametrize("l2", [1e-2, 1e-5, 1e-9])
@pytest.mark.parametrize("l1", [0.0, 1e-3])
@pytest.mark.parametrize("loss, batch_size, sampling", [
    ("logistic", 1, "uniform"), ("squared", 4, "uniform"), ("hinge", 3, "uniform"),
    ("smooth_hinge", 1, "weighted"), ("logistic", 6, "weighted")])
def test_delayed_updates_equal_eager_updates(l2, l1, loss, batch_size, sampling):
    X, y = rare_feature_problem(loss=loss)
    alpha, l1_ratio = l2 + l1, l1 / (l2 + l1)
    problem = build_problem(X, y, loss=loss, alpha=alpha, C=None, l1_ratio=l1_ratio,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    problem.l2, problem.l1 = l2, l1          # exactly, not through alpha * (1 - l1_ratio)
    options = solver_options(SPDC, {"batch_size": batch_size, "sampling": sampling})
    driver = SPDC(problem, options, seed=3)
    A = np.column_stack([X.toarray(), np.full(X.shape[0], problem.bias)])
    state = (driver.w.copy(), driver.w.copy(), driver.u.copy(), driver.duals.copy())
    for epoch in range(30):
        driver.epoch()
        state = eager_epoch(A, problem, driver, state)
        w, duals = driver.point()
        scale = max(1.0, np.max(np.abs(state[0])))
        assert np.max(np.abs(w - state[0])) <= 1e-10 * scale, epoch
        np.testing.assert_allclose(duals, state[3], rtol=1e-10, atol=1e-12)
    assert np.count_nonzero(driver.last != driver.now) == 0     # the flush brought all


@pytest.mark.parametrize("loss", BINARY_LOSSES + REGRESSION_LOSSES)
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
def test_spdc_reaches_sdcas_optimum(loss, l1_ratio):
    X, y = problem_for(loss, n=120, d=8, seed=7, sparse=True)
    kwargs = dict(loss=loss, alpha=1e-2, l1_ratio=l1_ratio, random_state=0)
    tol = 1e-8 if loss in SMOOTH_LOSSES else 1e-5
    reference = fastdual.train(X, y, tol=1e-10, max_epochs=100_000, **kwargs)
    for batch_size in (1, 5):
        model = fastdual.train(X, y, solver="spdc", tol=tol, max_epochs=20_000,
                               batch_size=batch_size, **kwargs)
        assert model.converged_, (batch_size, model.relative_gap_)
        # Both certified: each primal is within its gap of the one optimum.
        assert abs(model.primal_ - reference.primal_) <= model.gap_ + reference.gap_ + 1e-14
        assert model.primal_ == pytest.approx(reference.primal_, rel=tol + 1e-9)


def test_sparse_dense_and_float32_give_the_same_spdc_run():
    X, y = problem_for("logistic", n=100, d=6, seed=2, sparse=True)
    kwargs = dict(loss="logistic", alpha=1e-3, solver="spdc", tol=0.0, max_epochs=20,
                  random_state=4, batch_size=2)
    sparse = fastdual.train(X, y, **kwargs)
    dense = fastdual.train(X.toarray(), y, **kwargs)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-12, atol=1e-14)
    single = fastdual.train(X.astype(np.float32), y, **kwargs)
    np.testing.assert_allclose(single.coef_, sparse.coef_, rtol=1e-4, atol=1e-6)


def test_spdc_options_are_checked():
    X, y = problem_for("logistic", n=30, d=3, seed=1)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        fastdual.train(X, y, solver="spdc", batch_size=0)
    with pytest.raises(TypeError, match="tau must be a positive number or None"):
        fastdual.train(X, y, solver="spdc", tau="big")
    with pytest.raises(ValueError, match="sigma must be a positive finite number"):
        fastdual.train(X, y, solver="spdc", sigma=-1.0)
    with pytest.raises(ValueError, match=r"theta must be in \(0, 1\]"):
        fastdual.train(X, y, solver="spdc", theta=1.5)
    with pytest.raises(ValueError, match=r"solver='spdc' has the options \['batch_size', "):
        fastdual.train(X, y, solver="spdc", shrinking=False)


def test_alias_table_encodes_the_probabilities():
    from fastdual._core.sampling import alias_table
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 1000):
        p = rng.random(n) ** 3
        p /= p.sum()
        keep, alias = alias_table(p)
        implied = keep + np.bincount(alias, weights=1.0 - keep, minlength=n)
        np.testing.assert_allclose(implied / n, p, rtol=1e-10, atol=1e-15)


def test_weighted_sampling_frequencies_follow_eq_20():
    """Chi-square test of the kernel's draws against eq. (20) with the seed's alpha = 0.6: a
    fixed seed, 200 epochs of draws, and the stated tolerance p-value > 1e-3 (it is a test of
    the sampler, which either follows the distribution or is off by far more)."""
    from scipy.stats import chisquare
    from fastdual.solvers import _spdc
    X, y = row_norm_spread_problem()
    problem = build_problem(X, y, loss="logistic", alpha=1e-3, C=None, l1_ratio=0.0,
                            fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    driver = SPDC(problem, solver_options(SPDC, {"sampling": "weighted", "sampling_mix": 0.6}),
                  seed=1)
    norms = np.linalg.norm(X, axis=1)
    expected = 0.4 / len(y) + 0.6 * norms / norms.sum()            # eq. (20)
    counts = np.zeros(len(y))
    for _ in range(200):
        _spdc.spdc_draw(driver.rng_state, driver.order, 1, driver.picks, driver.alias_keep,
                        driver.alias, driver.inclusion, driver.cumulative)
        counts += np.bincount(driver.picks, minlength=len(y))
    assert chisquare(counts, counts.sum() * expected).pvalue > 1e-3
    np.testing.assert_allclose(driver.step_scale, len(y) * expected, rtol=1e-12)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "hinge"])
def test_weighted_spdc_reaches_sdcas_optimum_on_rows_of_spread_norms(loss):
    X, y = row_norm_spread_problem()
    weights = np.random.default_rng(2).uniform(0.5, 2.0, len(y))
    kwargs = dict(loss=loss, alpha=1e-3, sample_weight=weights, random_state=0)
    tol = 1e-8 if loss in SMOOTH_LOSSES else 1e-5
    reference = fastdual.train(X, y, tol=1e-10, max_epochs=100_000, **kwargs)
    model = fastdual.train(X, y, solver="spdc", sampling="weighted", tol=tol, max_epochs=20_000,
                           **kwargs)
    assert model.converged_
    assert abs(model.primal_ - reference.primal_) <= model.gap_ + reference.gap_ + 1e-14


def test_weighted_mini_batches_include_each_sample_with_its_probability():
    """Eq. (26): systematic sampling gives m distinct samples per batch, sample i in a batch with
    probability exactly p_i = min(1, c q_i) (sum m); checked over 2,000 batches against the
    binomial spread (5 standard deviations), with the heaviest rows capped at 1."""
    from fastdual.solvers import _spdc
    from fastdual.solvers.spdc import inclusion_probabilities
    X, y = row_norm_spread_problem()
    problem = build_problem(X, y, loss="logistic", alpha=1e-3, C=None, l1_ratio=0.0,
                            fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    m = 80
    driver = SPDC(problem, solver_options(SPDC, {"sampling": "weighted", "batch_size": m,
                                                 "sampling_mix": 0.9}), seed=2)
    norms = np.linalg.norm(X, axis=1)
    q = 0.1 / len(y) + 0.9 * norms / norms.sum()                   # eq. (20)
    p = inclusion_probabilities(q, m)
    np.testing.assert_allclose(driver.inclusion, p, rtol=1e-12)
    assert p.sum() == pytest.approx(m) and p.max() == 1.0 and np.all(p >= np.minimum(1, m * q))
    np.testing.assert_allclose(driver.step_scale, len(y) * p / m, rtol=1e-12)
    counts = np.zeros(len(y))
    batches = 0
    for _ in range(2000 * m // len(driver.picks) + 1):
        _spdc.spdc_draw(driver.rng_state, driver.order, m, driver.picks, driver.alias_keep,
                        driver.alias, driver.inclusion, driver.cumulative)
        for batch in driver.picks.reshape(-1, m):
            assert np.unique(batch).shape[0] == m                  # without replacement
            counts[batch] += 1
            batches += 1
    spread = np.sqrt(batches * p * (1 - p)) + 1e-12
    assert np.all(np.abs(counts - batches * p) <= 5 * spread + 1e-9)
    assert np.all(counts[p == 1.0] == batches)


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_weighted_mini_batch_spdc_reaches_sdcas_optimum(loss):
    X, y = row_norm_spread_problem()
    kwargs = dict(loss=loss, alpha=1e-3, random_state=0)
    tol = 1e-8 if loss in SMOOTH_LOSSES else 1e-5
    reference = fastdual.train(X, y, tol=1e-10, max_epochs=100_000, **kwargs)
    model = fastdual.train(X, y, solver="spdc", sampling="weighted", batch_size=8, tol=tol,
                           max_epochs=20_000, **kwargs)
    assert model.converged_
    assert abs(model.primal_ - reference.primal_) <= model.gap_ + reference.gap_ + 1e-14


def test_weighted_sampling_options_are_checked():
    X, y = row_norm_spread_problem(n=40)
    with pytest.raises(ValueError, match=r"sampling_mix must be in \(0, 1\) and needs "):
        fastdual.train(X, y, solver="spdc", sampling_mix=0.5)
    with pytest.raises(ValueError, match=r"sampling_mix must be in \(0, 1\)"):
        fastdual.train(X, y, solver="spdc", sampling="weighted", sampling_mix=1.0)
    with pytest.raises(ValueError, match=r"sampling must be one of \['uniform', 'weighted'\]"):
        fastdual.train(X, y, solver="spdc", sampling="permutation")


@pytest.mark.parametrize("loss", ["squared", "logistic", "hinge"])
def test_spdc_pure_l1_by_continuation(loss):
    """l1_ratio = 1: the helper l2 falls (l2_added_ far below alpha) and both solvers' certified
    primals agree within their gaps, on the pure-l1 objective."""
    X, y = problem_for(loss, n=200, d=30, seed=4, sparse=True)
    kwargs = dict(loss=loss, alpha=0.02, l1_ratio=1.0, random_state=0, max_epochs=5000)
    model = fastdual.train(X, y, solver="spdc", tol=2e-3, **kwargs)
    assert model.converged_ and model.l2_added_ <= 0.02 / 100
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        reference = fastdual.train(X, y, tol=2e-3, **kwargs)
    assert abs(model.primal_ - reference.primal_) <= model.gap_ + reference.gap_
