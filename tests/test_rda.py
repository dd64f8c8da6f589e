"""RDA (seed 003): the lazy kernel against a plain eager implementation, each variant's closed
form against a numerical minimisation of its subproblem, and the optimum against SDCA's and
scikit-learn's (free intercept)."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar

import fastdual
from conftest import BINARY_LOSSES, REGRESSION_LOSSES, problem_for
from fastdual._problem import build_problem
from fastdual.solvers import _rda
from fastdual.solvers.rda import RDAState, check_variant, lipschitz_constant


def rare_feature_problem(n=300, d=60, seed=0, loss="logistic"):
    """Column j appears with probability 0.7 (j + 1)^-1.5: the last columns are in a row or two,
    so that epochs over n = 1000 rows leave them untouched for about a thousand steps."""
    rng = np.random.default_rng(seed)
    mask = rng.random((n, d)) < 0.7 * (np.arange(d) + 1.0) ** -1.5
    X = np.where(mask, rng.standard_normal((n, d)), 0.0)
    X[np.arange(n), rng.integers(0, 3, n)] += 1.0
    w = rng.standard_normal(d)
    noise = 0.3 * rng.standard_normal(n)
    y = X @ w + noise if loss in REGRESSION_LOSSES else np.where(X @ w + noise > 0, 1.0, -1.0)
    return sp.csr_matrix(X), y


def eager_run(problem, state, rows, A):
    """The same steps in NumPy, every coordinate every step (Algorithms 1-3 as written)."""
    plan = state.plan
    d = problem.n_features
    c, y, loss = problem.sample_weight, problem.y, problem.loss
    G, S = np.zeros(d + 1), np.zeros(d + 1)

    accelerated = state.variant == "accelerated"
    # Dual averaging's floor of beta: the largest curvature c_i ||x_i||^2 / loss.gamma of the
    # rows stepped on so far (the current one included), rounded up to a power of two.
    floor = [0.0]

    def x(tau, G):
        out = _rda.iterates(plan, tau, G[:d], floor=floor[0])
        return np.append(out, _rda.iterates(plan, tau, G[d:], True, floor=floor[0]))

    for t, i in enumerate(rows, start=1):
        if not accelerated:
            if loss.gamma > 0 and c[i] > 0:
                curvature = c[i] * (A[i] @ A[i]) / loss.gamma
                if curvature > floor[0]:
                    floor[0] = 2.0 ** np.ceil(np.log2(curvature))
            w = x(t, G)
            S += w
            G += c[i] * -loss.duals_from_margins(y[i:i + 1], A[i:i + 1] @ w)[0] * A[i]
        else:
            alpha, area = t / 2, t * (t + 1) / 4
            query = (S + alpha * x(t - 1, G)) / area
            G += alpha * c[i] * -loss.duals_from_margins(y[i:i + 1], A[i:i + 1] @ query)[0] * A[i]
            S += alpha * x(t, G)
    T = len(rows)
    if accelerated:
        return S / (T * (T + 1) / 4)
    return S / T if state.output == "average" else x(T + 1, G)


@pytest.mark.parametrize("variant, output", [("basic", "last"), ("basic", "average"),
                                             ("enhanced", "average"),
                                             ("strongly_convex", "average"),
                                             ("accelerated", "last")])
@pytest.mark.parametrize("l2, l1", [(1e-2, 0.0), (1e-3, 2e-3), (0.0, 1e-2)])
@pytest.mark.parametrize("free_intercept", [False, True])
def test_lazy_updates_equal_eager_updates(variant, output, l2, l1, free_intercept):
    loss = "squared" if variant == "accelerated" else "logistic"
    X, y = rare_feature_problem(n=1000, loss=loss)
    problem = build_problem(X, y, loss=loss, alpha=1.0, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={}, regularize_intercept=not free_intercept)
    problem.l2, problem.l1 = l2, l1
    if variant == "strongly_convex" and (l2 == 0.0 or free_intercept):
        return                                      # refused (tested in test_bad_input)
    gamma, rho = check_variant(variant, None if variant == "strongly_convex" else 0.5,
                               2.0 if variant == "enhanced" else None, output, l2,
                               free_intercept, True)
    lipschitz = lipschitz_constant(problem.loss, problem.squared_norms(), problem.sample_weight)
    # Blocks of 257 steps: the 6,000 steps cross many block ends.
    state = RDAState(problem.n_features, variant=variant, gamma=gamma, rho=rho, output=output,
                     l1=l1, l2=l2, free_intercept=free_intercept,
                     lipschitz=lipschitz if variant == "accelerated" else 0.0, block=257)
    A = np.column_stack([X.toarray(), np.ones(X.shape[0])])
    rng = np.random.default_rng(1)
    rows = np.concatenate([rng.permutation(X.shape[0]) for _ in range(6)]).astype(np.intp)
    gaps = [np.diff(np.flatnonzero(A[rows, j] != 0.0)).max(initial=0)
            for j in range(X.shape[1])]
    assert max(gaps) > 1000                         # the hard case is in the data
    done = 0
    for stop in (1, 2, 777, 3000, rows.shape[0]):
        state.run(problem.X, problem.bias, problem.y, problem.sample_weight, problem.loss,
                  rows[done:stop])
        done = stop
        expected = eager_run(problem, state, rows[:stop], A)
        got = state.coefficients()
        scale = max(1.0, np.max(np.abs(expected)))
        assert np.max(np.abs(got - expected)) <= 1e-10 * scale, (stop, got - expected)
    if l1 > 0 and variant != "accelerated":
        assert np.any(expected[:-1] == 0.0)          # the soft threshold did act


@pytest.mark.parametrize("variant", ["basic", "enhanced", "strongly_convex", "accelerated"])
def test_each_variants_closed_form_solves_its_subproblem(variant):
    """x(tau; G) against a numerical minimisation of eq. (8) (dual averaging) or of step 4 of
    Algorithm 3 (accelerated), coordinate by coordinate."""
    rng = np.random.default_rng(5)
    for trial in range(40):
        l2 = rng.choice([0.0, 1e-3, 0.3]) if variant != "strongly_convex" else 0.3
        l1 = rng.choice([0.0, 1e-2, 0.5])
        gamma = 0.0 if variant == "strongly_convex" else rng.uniform(0.1, 3.0)
        rho = rng.uniform(0.1, 2.0) if variant == "enhanced" else 0.0
        lipschitz = rng.uniform(0.1, 4.0) if variant == "accelerated" else 0.0
        plan = _rda.make_plan_args(variant == "accelerated", True, gamma, lipschitz, l1, l2,
                                   rho, 0.0, 0.0, 0.0, 1 << 16)
        tau = int(rng.integers(2, 5000))
        G = rng.standard_normal(6) * rng.choice([0.1, 10.0, 1000.0])
        got = _rda.iterates(plan, tau, G)
        for j in range(G.shape[0]):
            if variant == "accelerated":
                area = tau * (tau + 1) / 4
                beta = gamma * (tau + 1) ** 1.5 / 2

                def objective(w):
                    return (G[j] / area * w + l1 * abs(w) + l2 / 2 * w * w
                            + (lipschitz + beta) / area * w * w / 2)
            else:
                m = tau - 1

                def objective(w):
                    return (G[j] / m * w + l1 * abs(w) + l2 / 2 * w * w
                            + gamma / np.sqrt(m) * (w * w / 2 + rho * abs(w)))
            bound = 10 * abs(got[j]) + 1.0
            brute = minimize_scalar(objective, bounds=(-bound, bound), method="bounded",
                                    options={"xatol": 1e-12}).x
            assert objective(got[j]) <= objective(brute) + 1e-12 * (1 + abs(objective(brute)))
            assert got[j] == pytest.approx(brute, abs=1e-6 * bound)


@pytest.mark.parametrize("loss", BINARY_LOSSES + REGRESSION_LOSSES)
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
def test_multi_pass_rda_reaches_sdcas_optimum(loss, l1_ratio):
    X, y = problem_for(loss, n=100, d=6, seed=3, sparse=True)
    kwargs = dict(loss=loss, alpha=0.1, l1_ratio=l1_ratio, random_state=0)
    reference = fastdual.train(X, y, tol=1e-10, max_epochs=100_000, **kwargs)
    smooth = loss in ("squared", "logistic", "squared_hinge", "smooth_hinge")
    tol = 1e-3 if smooth else 3e-2       # margin duals of a nonsmooth loss certify loosely
    model = fastdual.train(X, y, solver="rda", rda_gamma=1.0, output="average", tol=tol,
                           max_epochs=3000, **kwargs)
    assert model.converged_, model.relative_gap_
    assert abs(model.primal_ - reference.primal_) <= model.gap_ + reference.gap_ + 1e-14
    assert model.primal_ >= reference.primal_ - reference.gap_ - 1e-14


@pytest.mark.parametrize("variant", ["basic", "enhanced", "accelerated"])
def test_rda_with_a_free_intercept_matches_scikit_learns_logistic_regression(variant):
    """LogisticRegression (lbfgs) does not penalise the intercept: the same objective."""
    from sklearn.linear_model import LogisticRegression
    X, y = problem_for("logistic", n=200, d=5, seed=2)
    X = X + 2.0                                       # so that the intercept matters
    alpha = 0.05
    reference = LogisticRegression(C=1.0 / (alpha * X.shape[0]), tol=1e-12,
                                   max_iter=10_000).fit(X, y)
    cert = fastdual.duality_gap(X, y, reference.coef_.ravel(), reference.intercept_[0],
                                loss="logistic", alpha=alpha, regularize_intercept=False)
    assert -1e-12 <= cert.relative_gap <= 1e-8       # scikit-learn's optimum, certified
    options = {"rda_gamma": 0.05} if variant != "enhanced" else {"rda_gamma": 0.05, "rho": 0.1}
    model = fastdual.train(X, y, loss="logistic", alpha=alpha, solver="rda", variant=variant,
                           regularize_intercept=False, tol=1e-4, max_epochs=5000,
                           random_state=0, **options)
    assert model.converged_ and model.intercept_mode == "free"
    assert model.primal_ == pytest.approx(cert.primal, rel=2e-4)
    assert model.primal_ - model.gap_ <= cert.primal + 1e-12
    # The regularised intercept is a different problem with a worse objective here.
    regularised = fastdual.train(X, y, loss="logistic", alpha=alpha, tol=1e-10)
    assert regularised.primal_ > cert.primal * (1 + 1e-3)


def test_free_intercept_certificate_is_a_lower_bound_for_any_duals():
    """Weak duality after the projection: random dual points, projected, never exceed P*."""
    from sklearn.linear_model import LogisticRegression
    from hypothesis import given, settings, strategies as st
    X, y = problem_for("logistic", n=60, d=4, seed=8)
    X = X + 1.0
    alpha = 0.1
    reference = LogisticRegression(C=1.0 / (alpha * X.shape[0]), tol=1e-12,
                                   max_iter=10_000).fit(X, y)
    problem = build_problem(X, y, loss="logistic", alpha=alpha, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={}, regularize_intercept=False)
    w_opt = np.append(reference.coef_.ravel(), reference.intercept_)
    p_opt, _ = problem.primal_dual(w_opt, problem.duals_from_margins(w_opt))

    @settings(max_examples=60, deadline=None)
    @given(seed=st.integers(0, 10_000), scale=st.sampled_from([0.1, 1.0, 10.0]))
    def check(seed, scale):
        duals = np.random.default_rng(seed).standard_normal(60) * scale
        feasible = problem.feasible_duals(duals)
        lower, upper = problem.loss.dual_bounds(problem.y)
        assert np.all((lower <= feasible) & (feasible <= upper))
        assert abs(np.sum(problem.sample_weight * feasible)) <= 1e-12 * 60
        _, dual = problem.primal_dual(w_opt, duals)
        assert dual <= p_opt + 1e-12

    check()
