"""The primal Newton-CG solver: its passes against NumPy, its optimum against SDCA's,
scikit-learn's (free intercept, elastic net) and a bounded L-BFGS (elastic net), its
certificate."""
import warnings
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from conftest import np_objective, problem_for
from fastdual._problem import build_problem
from fastdual._core import gram as _gram, rows as _rows
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
    _rows.margins(*problem.X.kernel_args, 60, 5, 2.0, w, z)
    np.testing.assert_allclose(z, A @ w, rtol=1e-13, atol=1e-13)
    slope, curve = np.empty(60), np.empty(60)
    total = _newton.loss_terms(problem.y, problem.sample_weight, z, problem.loss, slope, curve)
    assert total == pytest.approx(problem.loss.values(problem.y, z).sum(), rel=1e-13)
    np.testing.assert_allclose(slope, problem.loss.derivatives(problem.y, z), rtol=1e-13)
    np.testing.assert_allclose(curve, problem.loss.curvatures(problem.y, z), rtol=1e-13)
    # The curvature is the derivative's derivative (central differences away from the kinks).
    h = 1e-6
    numeric = (problem.loss.derivatives(problem.y, z + h)
               - problem.loss.derivatives(problem.y, z - h)) / (2 * h)
    np.testing.assert_allclose(curve, numeric, atol=1e-5)
    out = np.empty(6)
    _rows.hessian_vector(*problem.X.kernel_args, 60, 5, 2.0, curve, v, out)
    np.testing.assert_allclose(out, A.T @ (curve * (A @ v)), rtol=1e-12, atol=1e-12)
    _rows.transpose_times(*problem.X.kernel_args, 60, 5, 2.0, slope, out)
    np.testing.assert_allclose(out, A.T @ slope, rtol=1e-12, atol=1e-12)
    H = np.empty((6, 6))
    _rows.hessian_matrix(*problem.X.kernel_args, 60, 5, 2.0, curve, H)
    np.testing.assert_allclose(H, np.triu(A.T @ (curve[:, None] * A)), rtol=1e-12, atol=1e-12)
    _rows.transpose_times(*problem.X.kernel_args, 60, 5, 2.0, curve, out, True)
    np.testing.assert_allclose(out, np.diag(A.T @ (curve[:, None] * A)), rtol=1e-12,
                               atol=1e-12)
    # H v with X v on the way: the same H v bits, and X v on every row, those of zero
    # curvature (which H v skips) included.
    curve_some_zero = curve.copy()
    curve_some_zero[::3] = 0.0
    _rows.hessian_vector(*problem.X.kernel_args, 60, 5, 2.0, curve_some_zero, v, out)
    with_margins, margins = np.empty(6), np.full(60, np.nan)
    _rows.hessian_vector(*problem.X.kernel_args, 60, 5, 2.0, curve_some_zero, v, with_margins,
                         margins)
    np.testing.assert_array_equal(with_margins, out)
    np.testing.assert_allclose(margins, A @ v, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="margins has 59 entries for 60 rows"):
        _rows.hessian_vector(*problem.X.kernel_args, 60, 5, 2.0, curve, v, out, np.empty(59))
    # Both in one pass: the same bits as each alone (slopes and curvatures zero on some rows).
    slope[::4], curve[1::5] = 0.0, 0.0
    gradient, diagonal, alone = np.empty(6), np.empty(6), np.empty(6)
    _rows.gradient_and_diagonal(*problem.X.kernel_args, 60, 5, 2.0, slope, curve, gradient,
                                diagonal)
    _rows.transpose_times(*problem.X.kernel_args, 60, 5, 2.0, slope, alone)
    np.testing.assert_array_equal(gradient, alone)
    np.testing.assert_allclose(gradient, A.T @ slope, rtol=1e-12, atol=1e-12)
    _rows.transpose_times(*problem.X.kernel_args, 60, 5, 2.0, curve, alone, True)
    np.testing.assert_array_equal(diagonal, alone)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [1, 3, 64])
@pytest.mark.parametrize("bias", [0.0, 2.0])
def test_the_blocked_hessian_matches_numpy(sparse, dtype, rows, bias):
    """The Hessian formed by BLAS's rank-k updates over blocks of dense rows (any block size,
    the last block partial, rows of zero curvature skipped) is the scattered one's matrix:
    the upper triangle of A^T diag(h) A, the intercept's column last."""
    rng = np.random.default_rng(4)
    n, d = 50, 7
    dense = rng.standard_normal((n, d)) * (rng.random((n, d)) < (0.4 if sparse else 1.0))
    X = sp.csr_matrix(dense).astype(dtype) if sparse else dense.astype(dtype)
    problem = build_problem(X, np.where(rng.random(n) < 0.5, 1.0, -1.0), loss="logistic",
                            alpha=0.1, C=None, l1_ratio=0.0, fit_intercept=bias > 0,
                            intercept_scaling=bias or 1.0, sample_weight=None, loss_params={})
    curve = rng.uniform(0.0, 2.0, n)
    curve[::4] = 0.0
    A = np.column_stack([X.toarray() if sparse else X, np.full(n, bias)]).astype(np.float64)
    expected = np.triu(A.T @ (curve[:, None] * A))
    scattered, blocked = np.empty((d + 1, d + 1)), np.full((d + 1, d + 1), np.nan)
    _rows.hessian_matrix(*problem.X.kernel_args, n, d, bias, curve, scattered)
    _gram.blocked_hessian_matrix(*problem.X.kernel_args, n, d, bias, curve, blocked,
                                 np.full((rows, d + 1), np.nan))
    scale = np.abs(expected).max()
    np.testing.assert_allclose(np.triu(blocked), expected, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(np.triu(scattered), expected, rtol=0, atol=1e-12 * scale)
    # (the strict lower triangle stays zero: Newton's Cholesky reads the upper one)
    assert not np.any(np.tril(blocked, -1)) and not np.any(np.tril(scattered, -1))
    with pytest.raises(ValueError, match="columns"):
        _gram.blocked_hessian_matrix(*problem.X.kernel_args, n, d, bias, curve, blocked,
                                     np.empty((4, d)))
    with pytest.raises(ValueError, match="out must be"):
        _rows.hessian_matrix(*problem.X.kernel_args, n, d, bias, curve, np.empty((d, d)))


def test_newton_forms_dense_hessians_by_blocks_and_sparse_ones_by_scatter(monkeypatch):
    """The cost model sends dense rows to the blocked Hessian, rows with few of many features
    to the scattered one (here at any size: OWN_HESSIAN_WORK, which keeps small problems
    scattered, set to 0); either way Newton's direct steps reach the same optimum."""
    from fastdual.solvers import newton
    from fastdual.solvers.newton import Newton
    monkeypatch.setattr(newton, "OWN_HESSIAN_WORK", 0.0)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((400, 30))
    y = np.where(X @ rng.standard_normal(30) + 0.5 * rng.standard_normal(400) > 0, 1.0, -1.0)
    Xs = sp.csr_matrix(X * (rng.random(X.shape) < 0.05))
    models = {}
    for name, data in (("dense", X), ("sparse", Xs)):
        problem = build_problem(data, y, loss="logistic", alpha=1e-3, C=None, l1_ratio=0.0,
                                fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                                loss_params={})
        driver = Newton(problem, {"max_cg": 250, "linear_solver": "direct"}, 0)
        assert (driver.hessian_block is not None) == (name == "dense")
        models[name] = [fastdual.train(data, y, loss="logistic", alpha=1e-3, solver=solver,
                                       tol=1e-10, max_epochs=100_000, random_state=0,
                                       **({"linear_solver": "direct"} if solver == "newton"
                                          else {}))
                        for solver in ("newton", "sdca")]
    for newton, sdca in models.values():
        assert newton.converged_ and sdca.converged_
        np.testing.assert_allclose(newton.coef_, sdca.coef_, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
@pytest.mark.parametrize("free", [False, True])
def test_newtons_checkpoint_duals_are_its_margins_duals(l1_ratio, free):
    """point() hands the certificate the duals of the margins the line search left: those of
    w's margins, to rounding, at every iteration (or None, the certificate's own pass)."""
    from fastdual.solvers.newton import Newton
    X, y = problem_for("logistic", n=150, d=7, seed=6, sparse=True)
    problem = build_problem(X, y, loss="logistic", alpha=1e-3, C=None, l1_ratio=l1_ratio,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={}, regularize_intercept=not free)
    driver = Newton(problem, {"max_cg": 250, "linear_solver": "auto"}, 0)
    given = 0
    for _ in range(12):
        driver.epoch()
        w, duals = driver.point()
        if duals is None:
            continue
        given += 1
        expected = problem.loss.duals_from_margins(
            problem.y, problem.X.matvec(w[:-1]) + problem.bias * w[-1])
        np.testing.assert_allclose(duals, expected, rtol=1e-10, atol=1e-13)
    assert given >= 3


@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("alpha", [1e-1, 1e-5])
def test_newton_reaches_sdcas_optimum(loss, alpha):
    X, y = problem_for(loss, n=150, d=8, seed=2, sparse=True)
    weights = np.random.default_rng(3).uniform(0.5, 2.0, 150)
    kwargs = dict(loss=loss, alpha=alpha, sample_weight=weights)
    reference = fastdual.train(X, y, tol=1e-11, max_epochs=200_000, random_state=0,
                               solver="sdca", **kwargs)
    model = fastdual.train(X, y, solver="newton", tol=1e-10, max_epochs=100, **kwargs)
    assert model.converged_ and model.n_epochs_ < 60
    assert model.primal_ == pytest.approx(reference.primal_, rel=1e-6)
    assert abs(model.primal_ - reference.primal_) <= model.gap_ + reference.gap_ + 1e-14


@pytest.mark.parametrize("linear_solver", ["cg", "direct"])
@pytest.mark.parametrize("intercept_scaling", [1.0, 2.0])
def test_newton_leaves_a_start_where_the_hessian_is_singular(linear_solver, intercept_scaling):
    """The smooth hinge at w = 0: every margin sits where the loss turns linear, the
    generalised Hessian of the data term is 0, and with a free intercept the Newton system has
    no solution along it. The iteration still descends and reaches SDCA's optimum."""
    X, y = problem_for("smooth_hinge", n=50, d=5, seed=7)
    kwargs = dict(loss="smooth_hinge", alpha=0.02, intercept_scaling=intercept_scaling,
                  regularize_intercept=False)
    model = fastdual.train(X, y, solver="newton", linear_solver=linear_solver, tol=1e-8,
                           max_epochs=100, **kwargs)
    reference = fastdual.train(X, y, solver="sdca", tol=1e-10, max_epochs=100_000,
                               random_state=0, **kwargs)
    assert model.converged_
    assert abs(model.primal_ - reference.primal_) <= model.gap_ + reference.gap_


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


def split_lbfgs_reference(X, y, loss, l2, l1):
    """min over w = u - v, u, v >= 0 of the smooth-loss elastic net, by L-BFGS-B with bounds:
    smooth in (u, v), so an independent high-precision reference (no fastdual code)."""
    from scipy.optimize import minimize
    n, d = X.shape

    def f(uv):
        w = uv[:d] - uv[d:]
        z = X @ w
        if loss == "logistic":
            value, dz = np.logaddexp(0, -y * z), -y / (1 + np.exp(y * z))
        elif loss == "squared":
            value, dz = 0.5 * (z - y) ** 2, z - y
        elif loss == "squared_hinge":
            m = np.maximum(0, 1 - y * z)
            value, dz = m ** 2, -2 * y * m
        else:  # smooth_hinge, gamma 1
            u = y * z
            value = np.where(u >= 1, 0.0, np.where(u <= 0, 0.5 - u, 0.5 * (1 - u) ** 2))
            dz = -y * np.clip(1 - u, 0, 1)
        grad_w = X.T @ dz / n + l2 * w
        total = value.mean() + 0.5 * l2 * w @ w + l1 * uv.sum()
        return total, np.concatenate([grad_w + l1, -grad_w + l1])

    result = minimize(f, np.zeros(2 * d), jac=True, method="L-BFGS-B",
                      bounds=[(0, None)] * (2 * d),
                      options={"maxiter": 50_000, "ftol": 1e-16, "gtol": 1e-13})
    return result.x[:d] - result.x[d:]


@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("alpha,l1_ratio", [(1e-2, 0.5), (1e-4, 0.3), (1e-4, 0.9)])
def test_newton_elastic_net_matches_a_bounded_lbfgs(loss, alpha, l1_ratio):
    X, y = problem_for(loss, n=200, d=12, seed=6)
    l2, l1 = alpha * (1 - l1_ratio), alpha * l1_ratio
    reference = split_lbfgs_reference(X, y, loss, l2, l1)
    model = fastdual.train(X, y, loss=loss, alpha=alpha, l1_ratio=l1_ratio, solver="newton",
                           fit_intercept=False, tol=1e-11, max_epochs=2000)
    objective = dict(loss=loss, l2=l2, l1=l1)
    p_ref = np_objective(X, y, reference, **objective)
    p_fd = np_objective(X, y, model.coef_, **objective)
    assert model.converged_ and model.n_epochs_ < 1000      # passes over the data
    assert p_fd == pytest.approx(p_ref, rel=1e-7)
    assert p_fd <= p_ref + model.gap_ + 1e-13          # the certificate holds against it
    np.testing.assert_array_equal(model.coef_ == 0, np.abs(reference) < 1e-7)


def test_newton_elastic_net_with_a_free_intercept_matches_a_bounded_lbfgs():
    """A free intercept under the elastic net: the optimum of a bounded L-BFGS on [X, 1] with
    the intercept column neither penalised nor split."""
    X, y = problem_for("logistic", n=200, d=6, seed=9)
    X = X + 1.5
    kwargs = dict(loss="logistic", alpha=1e-3, l1_ratio=0.5, regularize_intercept=False)
    model = fastdual.train(X, y, solver="newton", tol=1e-11, max_epochs=200, **kwargs)
    assert model.converged_ and model.intercept_mode == "free"
    # Independent: the bounded L-BFGS on [X, 1] with the intercept column unpenalised.
    from scipy.optimize import minimize
    A = np.hstack([X, np.ones((200, 1))])
    l2, l1, d = 1e-3 * 0.5, 1e-3 * 0.5, 6

    def f(p):
        w = np.append(p[:d] - p[d:2 * d], p[2 * d])
        z = A @ w
        dz = -y / (1 + np.exp(y * z))
        g = A.T @ dz / 200
        g[:d] += l2 * w[:d]
        value = np.logaddexp(0, -y * z).mean() + 0.5 * l2 * w[:d] @ w[:d] + l1 * p[:2 * d].sum()
        return value, np.concatenate([g[:d] + l1, -g[:d] + l1, g[d:]])

    res = minimize(f, np.zeros(2 * d + 1), jac=True, method="L-BFGS-B",
                   bounds=[(0, None)] * (2 * d) + [(None, None)],
                   options={"maxiter": 50_000, "ftol": 1e-16, "gtol": 1e-13})
    assert model.primal_ == pytest.approx(res.fun, rel=1e-7)
    assert model.primal_ <= res.fun + model.gap_ + 1e-13


def test_newton_refuses_what_it_cannot_do():
    X, y = problem_for("logistic", n=40, d=3, seed=0)
    with pytest.raises(ValueError, match=r"solver='newton' needs an l2 term"):
        fastdual.train(X, y, loss="logistic", solver="newton", l1_ratio=1.0)
    with pytest.raises(ValueError, match=r"solver='newton' does not support loss='hinge'"):
        fastdual.train(X, y, loss="hinge", solver="newton")


def test_newton_warm_starts_from_the_models_coefficients():
    """Along a path of C values a warm start begins at the previous model's w (not at
    w(duals) of another alpha): the path needs fewer Newton iterations than cold starts."""
    X, y = problem_for("logistic", n=300, d=8, seed=10, sparse=True)
    Cs = [10.0, 30.0, 100.0, 300.0]
    path = fastdual.regularization_path(X, y, Cs, loss="logistic", solver="newton", tol=1e-8)
    cold = [fastdual.train(X, y, loss="logistic", C=C, solver="newton", tol=1e-8) for C in Cs]
    for warm_model, cold_model in zip(path, cold):
        assert warm_model.converged_
        assert warm_model.primal_ == pytest.approx(cold_model.primal_, rel=1e-7)
    assert sum(m.n_epochs_ for m in path[1:]) < sum(m.n_epochs_ for m in cold[1:])
    # The hook itself: one iteration of a warm start is one Newton step from the model's w.
    from fastdual.solvers import SOLVERS, solver_options
    problem = build_problem(X, y, loss="logistic", alpha=None, C=Cs[1], l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    driver = SOLVERS["newton"](problem, solver_options(SOLVERS["newton"], {}), 0)
    driver.start_from(np.append(path[0].coef_, path[0].intercept_))
    driver.epoch()
    step = fastdual.train(X, y, loss="logistic", C=Cs[1], solver="newton", tol=0.0,
                          max_epochs=1, warm_start=path[0])
    np.testing.assert_array_equal(step.coef_, driver.w[:8])


@pytest.mark.parametrize("l1_ratio,free", [(0.0, False), (0.5, False), (0.0, True), (0.5, True)])
def test_the_direct_solve_and_cg_reach_the_same_optimum(l1_ratio, free):
    """linear_solver="direct" (the Hessian formed and factored) and "cg" are two ways to the
    same Newton step: the same optimum, and the direct one in no more iterations."""
    X, y = problem_for("logistic", n=300, d=10, seed=12, sparse=True)
    kwargs = dict(loss="logistic", alpha=1e-5, l1_ratio=l1_ratio, solver="newton",
                  regularize_intercept=not free, tol=1e-11, max_epochs=200)
    direct = fastdual.train(X, y, linear_solver="direct", **kwargs)
    cg = fastdual.train(X, y, linear_solver="cg", **kwargs)
    assert direct.converged_ and cg.converged_
    assert direct.primal_ == pytest.approx(cg.primal_, rel=1e-9)
    assert direct.n_epochs_ <= cg.n_epochs_


def test_auto_picks_the_direct_solve_for_few_features():
    """Few features and short rows: forming the Hessian is cheaper than CG passes; a thousand
    features (a dense (d+1)^2 factorisation): not. An explicit linear_solver wins."""
    from fastdual.solvers import SOLVERS, solver_options

    def driver(X, y, **options):
        problem = build_problem(X, y, loss="logistic", alpha=1e-4, C=None, l1_ratio=0.0,
                                fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                                loss_params={})
        return SOLVERS["newton"](problem, solver_options(SOLVERS["newton"], options), 0)

    narrow, y = problem_for("logistic", n=2000, d=8, seed=0, sparse=True)
    # (logistic: CG first, direct from the first solve that costs a direct one's price; the
    # test below)
    first = driver(narrow, y)
    assert not first.direct and first.direct_price is not None
    assert driver(narrow, y, linear_solver="direct").direct
    assert not driver(narrow, y, linear_solver="cg").direct
    assert driver(narrow, y, linear_solver="cg").direct_price is None
    wide = sp.random(200, 1200, density=0.03, format="csr", random_state=0)
    labels = np.where(np.arange(200) % 2, 1.0, -1.0)
    assert not driver(wide, labels).direct
    assert driver(wide, labels, linear_solver="direct").direct


def test_the_direct_solve_prices_lapacks_factorisation_at_blas_speed():
    """linear_solver="auto" prices the Cholesky factorisation of d + 1 > OWN_CHOLESKY_MAX
    unknowns at BLAS_SPEEDUP times the scattered speed (LAPACK's blocked factorisation; measured
    13-20 times): short sparse rows and a few hundred features (w8a's shape) take the direct
    solve, where pricing the factorisation as scattered work sent them to CG; dense rows of as
    many features do not (forming the Hessian costs more than ten passes there)."""
    from fastdual.solvers import newton
    from fastdual.solvers.common import OWN_CHOLESKY_MAX
    rng = np.random.default_rng(0)
    n, d, k = 20000, 300, 12
    rows = sp.csr_matrix((np.ones(n * k), rng.integers(0, d, n * k), np.arange(0, n * k + 1, k)),
                         shape=(n, d))
    rows.sum_duplicates()
    labels = np.where(np.arange(n) % 2, 1.0, -1.0)

    def problem(X, y):
        return build_problem(X, y, loss="logistic", alpha=1e-6, C=None, l1_ratio=0.0,
                             fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                             loss_params={})

    short = problem(rows, labels)
    scattered, blocked, nnz = newton.hessian_costs(short)
    d1 = d + 1
    assert newton.factor_cost(d1) == d1 ** 3 / 3.0 / newton.BLAS_SPEEDUP
    assert newton.factor_cost(OWN_CHOLESKY_MAX) == OWN_CHOLESKY_MAX ** 3 / 3.0
    assert scattered + d1 ** 3 / 3.0 > newton.DIRECT_CG_PASSES * 2 * nnz    # (the old price)
    assert newton.direct_pays(short)
    dense = problem(rng.standard_normal((2000, 400)), labels[:2000])
    assert not newton.direct_pays(dense)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared"])
def test_auto_solves_by_cg_until_a_solve_costs_a_direct_one(monkeypatch, loss):
    """Where the direct solve pays, linear_solver="auto" solves a logistic Newton system by CG
    until one solve has made as many Hessian-vector products as the direct solve's price in
    passes, or an iteration's gradient norm is not below the last one's; that solve ends there
    and every later step is direct. The piecewise quadratic
    losses (the squared loss, the squared hinge) take direct steps from the first. Either way
    the run reaches the optimum CG alone reaches."""
    from fastdual.solvers.newton import Newton
    X, y = problem_for(loss, n=2000, d=40, seed=3, sparse=True, density=0.3)
    problem = build_problem(X, y, loss=loss, alpha=1e-7, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    driver = Newton(problem, {"max_cg": 250, "linear_solver": "auto"}, 0)
    products, hessian_times = [], Newton._hessian_times

    def counted(self, *args):
        products[-1] += 1
        return hessian_times(self, *args)

    monkeypatch.setattr(Newton, "_hessian_times", counted)
    if loss != "logistic":
        assert driver.direct and driver.direct_price is None
        return
    price = driver.direct_price
    assert not driver.direct and 1.0 < price < 10.0
    modes = []
    for _ in range(30):
        products.append(0)
        modes.append(driver.direct)
        driver.epoch()
    switch = modes.index(True)              # (the first direct iteration)
    assert 0 < switch and all(modes[switch:])
    assert products[switch - 1] == np.ceil(price)        # the solve that ended at the price
    assert all(0 < count < price for count in products[:switch - 1])
    assert not any(products[switch:])                     # no CG once direct
    # ... and from an iteration whose gradient norm is not below the last one's (a truncated
    # step that did not help): a driver told its last norm was smaller goes direct at once
    again = Newton(problem, {"max_cg": 250, "linear_solver": "auto"}, 0)
    again.epoch()
    assert not again.direct
    again.previous_norm = 1e-300
    products.append(0)
    again.epoch()
    assert again.direct and products[-1] == 0
    model = fastdual.train(X, y, loss=loss, alpha=1e-7, solver="newton", tol=1e-10)
    cg = fastdual.train(X, y, loss=loss, alpha=1e-7, solver="newton", tol=1e-10,
                        linear_solver="cg")
    assert model.converged_ and cg.converged_
    assert model.primal_ == pytest.approx(cg.primal_, rel=1e-9)


@pytest.mark.parametrize("linear_solver,l1_ratio", [("cg", 0.0), ("cg", 0.5), ("direct", 0.0)])
def test_a_newton_epoch_reports_the_passes_it_made(monkeypatch, linear_solver, l1_ratio):
    """epoch() returns the passes over X it made: every row pass it called, counted here."""
    from fastdual.solvers.newton import Newton
    X, y = problem_for("logistic", n=120, d=6, seed=3)
    problem = build_problem(X, y, loss="logistic", alpha=1e-3, C=None, l1_ratio=l1_ratio,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    driver = Newton(problem, {"max_cg": 250, "linear_solver": linear_solver}, 0)
    calls = []
    for module, name in [(_rows, "margins"), (_rows, "transpose_times"),
                         (_rows, "gradient_and_diagonal"),
                         (_rows, "hessian_vector"), (_rows, "hessian_matrix"),
                         (_gram, "blocked_hessian_matrix")]:
        original = getattr(module, name)
        monkeypatch.setattr(module, name,
                            lambda *a, _f=original, _n=name: calls.append(_n) or _f(*a))
    for _ in range(4):
        calls.clear()
        passes = driver.epoch()
        assert passes == len(calls) >= 2
    model = fastdual.train(X, y, loss="logistic", alpha=1e-3, l1_ratio=l1_ratio,
                           solver="newton", linear_solver=linear_solver, tol=1e-10)
    steps = np.diff([0] + [h["epoch"] for h in model.history_])
    assert model.converged_ and np.all(steps >= 2)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_newtons_iterates_do_not_depend_on_the_gradients_scale(loss):
    """Every test Newton makes is relative (CG's forcing tolerance, Armijo, the
    preconditioner's mix): the rows times s with alpha times s^2 is the same objective in
    w / s (P_s(w / s) = P(w)), whose gradient is s times as long; Newton takes the same steps
    on it, in as many passes, to coefficients 1/s times as large. A tolerance on the gradient's
    length in absolute units (sqrt ||g||) solves the two to different depths."""
    X, y = problem_for(loss, n=300, d=400, seed=5, sparse=True)
    s = 30.0
    models = [fastdual.train(X * scale, y, loss=loss, alpha=1e-2 * scale ** 2,
                             fit_intercept=False, solver="newton", linear_solver="cg",
                             tol=1e-8, max_epochs=2000)
              for scale in (1.0, s)]
    assert all(m.converged_ for m in models)
    assert [h["epoch"] for h in models[0].history_] == [h["epoch"] for h in models[1].history_]
    np.testing.assert_allclose(models[1].coef_ * s, models[0].coef_, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared"])
def test_cg_stops_by_the_quadratic_models_decrease(loss, monkeypatch):
    """Each Newton-CG step is the preconditioned CG iterate at which the k-th step first lowers
    Q(s) = g.s + s.H s / 2 by at most eta / k of Q(s) (eta = min(0.5, ||g|| / ||g_prev||)),
    with LIBLINEAR's preconditioner l2 + 0.01 diag(X^T D X) / n: checked against a dense PCG
    that evaluates Q from the explicit Hessian, on every iteration of a run. The squared loss
    (Q is the objective): the first iterate whose residual is at most 0.1 ||g||."""
    from fastdual.solvers import newton
    X, y = problem_for(loss, n=120, d=40, seed=3, sparse=False)
    alpha, n = (1e-4 if loss == "logistic" else 1e-2), X.shape[0]
    Xb = np.hstack([X, np.ones((n, 1))])             # the intercept feature, regularised
    seen = []
    cg_step = newton.Newton._cg_step

    def recording(self, gradient, free, tol, norm):
        step = cg_step(self, gradient, free, tol, norm)
        seen.append((self.w.copy(), gradient.copy(), tol, step.copy()))
        return step

    monkeypatch.setattr(newton.Newton, "_cg_step", recording)
    model = fastdual.train(X, y, loss=loss, alpha=alpha, solver="newton", linear_solver="cg",
                           tol=1e-10, max_epochs=300)
    assert model.converged_
    assert len(seen) >= 3
    previous = None
    for w, gradient, tol, step in seen:
        z = y * (Xb @ w)
        if loss == "logistic":
            p = 1.0 / (1.0 + np.exp(z))
            slope, curve = -y * p, p * (1.0 - p)
        elif loss == "squared_hinge":
            active = z < 1.0
            slope, curve = np.where(active, -2.0 * y * (1.0 - z), 0.0), 2.0 * active
        else:
            slope, curve = Xb @ w - y, np.ones(n)
        g = Xb.T @ slope / n + alpha * w
        np.testing.assert_allclose(gradient, g, rtol=1e-9, atol=1e-15)
        norm = np.linalg.norm(g)
        eta = 0.5 if previous is None else min(0.5, norm / previous)
        previous = norm
        assert tol == pytest.approx(eta, rel=1e-8)
        H = Xb.T @ (curve[:, None] * Xb) / n + alpha * np.eye(Xb.shape[1])
        M = alpha + 0.01 * np.einsum("ij,i,ij->j", Xb, curve, Xb) / n
        s, r = np.zeros_like(g), -g
        d = r / M
        for k in range(1, 1000):
            before = g @ s + s @ H @ s / 2
            a = (r @ (r / M)) / (d @ H @ d)
            s_next, r_next = s + a * d, r - a * (H @ d)
            after = g @ s_next + s_next @ H @ s_next / 2
            d = r_next / M + (r_next @ (r_next / M)) / (r @ (r / M)) * d
            s, r = s_next, r_next
            if (np.linalg.norm(r) <= 0.1 * norm if loss == "squared"
                    else k * (before - after) <= tol * -after):
                break
        # (entries far below the step's largest carry the rounding of a gradient near 0:
        # 3e-14 on a step of 2e-6 at the last iterations; a CG iterate one off differs by
        # far more)
        np.testing.assert_allclose(step, s, rtol=1e-6, atol=1e-7 * np.abs(s).max())


@pytest.mark.parametrize("gamma", [1.0, 0.5])
def test_newton_leaves_zero_where_no_margin_has_curvature(gamma):
    """The smoothed hinge at w = 0: every margin sits where the loss is linear (the end of its
    quadratic stretch for gamma = 1, inside the linear part for gamma < 1), so H = l2 and the
    Newton step is -g / l2, about 1e20 times too long at alpha = 1e-20. The line search's last
    trial (the minimiser of the smoothness bound along the step) moves anyway: the objective falls
    from P(0) = 1 - gamma / 2 below what plain SDCA reaches (it used to stay at w = 0)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    y = np.where(X @ rng.standard_normal(5) + 0.3 * rng.standard_normal(60) > 0, 1.0, -1.0)
    kwargs = dict(loss="smooth_hinge", gamma=gamma, alpha=1e-20, max_epochs=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        newton = fastdual.train(X, y, solver="newton", **kwargs)
        sdca = fastdual.train(X, y, solver="sdca", **kwargs)
    start = fastdual.duality_gap(X, y, np.zeros(5), 0.0, loss="smooth_hinge", gamma=gamma,
                                 alpha=1e-20).primal
    assert start == pytest.approx(1.0 - gamma / 2)
    assert np.any(newton.coef_ != 0.0)
    assert newton.primal_ < 1e-3 * start and newton.primal_ <= sdca.primal_


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_the_step_margins_summed_in_cg_are_x_times_the_step(loss):
    """Where every row has curvature (logistic), CG sums X s from each direction's X d (no pass
    of its own); the margins the line search leaves for the next iteration are then X w to
    rounding, at every iteration, as they are where the step's margins take their own pass
    (the squared hinge, rows without curvature)."""
    from fastdual.solvers.newton import Newton
    X, y = problem_for(loss, n=200, d=30, seed=4, sparse=True)
    problem = build_problem(X, y, loss=loss, alpha=1e-4, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    A = np.column_stack([X.toarray(), np.ones(200)])
    driver = Newton(problem, {"max_cg": 250, "linear_solver": "cg"}, 0)
    cg_step, every_row_curved = driver._cg_step, []

    def recording(*args):
        every_row_curved.append(bool(np.all(driver.curve != 0.0)))
        return cg_step(*args)

    driver._cg_step = recording
    summed = []
    for _ in range(6):
        driver.epoch()
        assert driver.step_margins == every_row_curved[-1]
        summed.append(driver.step_margins)
        if driver.fresh_margins:
            np.testing.assert_allclose(driver.z, A @ driver.w, rtol=1e-9,
                                       atol=1e-9 * np.abs(A @ driver.w).max())
    assert all(summed) if loss == "logistic" else not all(summed)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared"])
def test_the_certificate_of_newtons_iterate_is_its_gradients_square(loss):
    """With l2 alone, the certificate of w with its margins' duals is ||g||^2 / (2 l2) exactly
    (docs/math.md 4f: the Fenchel-Young terms vanish and g = l2 (w - v)); g computed here by
    NumPy, with sample weights and LIBLINEAR's intercept feature."""
    X, y = problem_for(loss, n=80, d=6, seed=7)
    weights = np.random.default_rng(7).uniform(0.5, 2.0, size=80)
    alpha = 1e-2
    model = fastdual.train(X, y, loss=loss, alpha=alpha, solver="newton", tol=0.0,
                           max_epochs=6, sample_weight=weights, linear_solver="cg")
    A = np.column_stack([X, np.ones(80)])
    w = np.append(model.coef_, model.intercept_)
    labels = np.where(y == model.classes_[1], 1.0, -1.0) if loss != "squared" else y
    z = A @ w
    if loss == "logistic":
        slope = -labels / (1.0 + np.exp(labels * z))
    elif loss == "squared_hinge":
        slope = -2.0 * labels * np.maximum(0.0, 1.0 - labels * z)
    else:
        slope = z - labels
    c = weights / weights.mean()
    g = A.T @ (c * slope) / 80 + alpha * w
    assert model.gap_ == pytest.approx(g @ g / (2 * alpha), rel=1e-9)
    assert model.gap_ > 1e-12                # (a point short of the optimum: a real test)


def _newton_driver(loss, seed, **objective):
    from fastdual.solvers.newton import Newton
    X, y = problem_for(loss, n=150, d=12, seed=seed, sparse=True)
    weights = np.random.default_rng(seed).uniform(0.5, 2.0, size=150)
    settings = dict(loss=loss, alpha=1e-5, C=None, l1_ratio=0.0, fit_intercept=True,
                    intercept_scaling=1.0, sample_weight=weights, loss_params={})
    problem = build_problem(X, y, **{**settings, **objective})
    options = {"max_cg": 250, "linear_solver": "cg"}
    return problem, Newton(problem, options, 0), Newton(problem, options, 0)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared"])
def test_may_reach_knows_the_certificate_of_the_iterate_and_changes_no_step(loss):
    """With l2 alone, may_reach's known relative gap is the shared certificate's for the
    iterate with its margins' duals, at every iteration; asking it changes neither the
    iterates (same bits) nor the passes the epochs report (its gradient is the next
    iteration's)."""
    from fastdual._loop import certify
    problem, asked, alone = _newton_driver(loss, seed=3)
    epoch = 0
    for _ in range(8):
        passes = asked.epoch()
        assert passes == alone.epoch()
        np.testing.assert_array_equal(asked.w, alone.w)
        epoch += passes
        assert asked.may_reach(1e-300) is False
        w, duals = asked.point()
        check = certify(problem, w, duals, epoch)
        assert asked.known_gap() == pytest.approx(check.relative_gap, rel=1e-8)
        assert asked.may_reach(check.relative_gap) is True   # (the second ask: no pass)
    assert check.relative_gap > 1e-13


@pytest.mark.parametrize("objective", [dict(l1_ratio=0.5), dict(regularize_intercept=False)])
def test_may_reach_knows_no_gap_with_an_l1_term_or_a_free_intercept(objective):
    """Where the certificate is not ||g||^2 / (2 l2) (an l1 term, a free intercept), may_reach
    always answers True, knows no gap, and makes no pass."""
    _, driver, _ = _newton_driver("logistic", seed=5, **objective)
    driver.epoch()
    before = driver.passes
    assert driver.may_reach(1e-300) is True and driver.known_gap() is None
    assert driver.passes == before


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_newton_is_certified_only_where_its_known_gap_is_near_tol(loss):
    """The "auto" schedule certifies Newton's iterate only once the gap known from its gradient
    is within KNOWN_GAP_SLACK of tol, and so returns the model of checking every iteration:
    the first iterate whose certificate reaches tol, the same bits."""
    from fastdual.solvers.newton import KNOWN_GAP_SLACK
    X, y = problem_for(loss, n=300, d=40, seed=11)
    run = dict(loss=loss, alpha=1e-4, tol=1e-8, linear_solver="cg")
    for solver in ("newton", "auto"):
        model = fastdual.train(X, y, solver=solver, **run)
        every = fastdual.train(X, y, solver="newton", check_every=1, **run)
        assert model.converged_ and model.solver == "newton"
        assert model.n_epochs_ == every.n_epochs_
        np.testing.assert_array_equal(model.coef_, every.coef_)
        assert (model.gap_, model.primal_) == (every.gap_, every.primal_)
        assert len(every.history_) > 5
        assert len(model.history_) <= 3 < len(every.history_)
        assert all(h["gap"] / h["primal"] <= KNOWN_GAP_SLACK * 1e-8 * (1 + 1e-6)
                   for h in model.history_)


def test_the_last_epoch_is_certified_without_asking_may_reach():
    """At max_epochs the loop certifies whatever may_reach would say, so Newton pays no
    gradient pass to say it: the passes counted by the driver are the epochs reported."""
    from fastdual.solvers.newton import Newton
    X, y = problem_for("logistic", n=300, d=40, seed=11)
    asked = []
    original = Newton.may_reach

    def recording(self, tol):
        asked.append(self.reported)
        return original(self, tol)

    with mock.patch.object(Newton, "may_reach", recording):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
            model = fastdual.train(X, y, loss="logistic", alpha=1e-6, tol=1e-12, max_epochs=30,
                                   solver="newton", linear_solver="cg")
    assert model.n_epochs_ >= 30 and not model.converged_
    assert asked and model.n_epochs_ not in asked       # (asked after every earlier epoch)


@pytest.mark.parametrize("loss", ["squared_hinge", "smooth_hinge", "logistic"])
def test_the_line_derivatives_match_numpy(loss):
    """line_derivatives: the data term's first and second derivatives along a direction,
    sum_i c_i phi'(z_i + t dz_i) dz_i and sum_i c_i phi''(.) dz_i^2, against the loss's
    elementwise derivatives summed by NumPy (zero weights and zero entries of dz skipped)."""
    X, y = problem_for(loss, n=70, d=4, seed=2)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, size=70)
    weights[::7] = 0.0
    problem = build_problem(X, y, loss=loss, alpha=0.1, C=None, l1_ratio=0.0,
                            fit_intercept=False, intercept_scaling=1.0, sample_weight=weights,
                            loss_params={})
    rng = np.random.default_rng(3)
    z, dz = rng.standard_normal(70), rng.standard_normal(70)
    dz[::5] = 0.0
    c, labels = problem.sample_weight, problem.y
    for t in (0.0, 0.3, 1.0, 2.5):
        first, second = _newton.line_derivatives(labels, c, z, dz, t, problem.loss)
        m = z + t * dz
        assert first == pytest.approx(np.sum(c * problem.loss.derivatives(labels, m) * dz),
                                      rel=1e-12, abs=1e-14)
        assert second == pytest.approx(
            np.sum(c * problem.loss.curvatures(labels, m) * dz * dz), rel=1e-12, abs=1e-14)
    with pytest.raises(ValueError, match="dz has 69 entries for 70 margins"):
        _newton.line_derivatives(labels, c, z, dz[:69], 1.0, problem.loss)
    # f'' at t = 1 from the loss's curvature terms c_i phi''(m_i) that loss_terms leaves
    slope, curve = np.empty(70), np.empty(70)
    _newton.loss_terms(labels, c, z, problem.loss, slope, curve, dz, 1.0)
    assert _newton.weighted_square_sum(curve, dz) == pytest.approx(
        _newton.line_derivatives(labels, c, z, dz, 1.0, problem.loss)[1], rel=1e-12, abs=1e-14)
    assert _newton.weighted_square_sum(curve, dz) == pytest.approx(np.sum(curve * dz * dz),
                                                                   rel=1e-12, abs=1e-14)
    with pytest.raises(ValueError, match="weights has 69 entries for 70"):
        _newton.weighted_square_sum(curve[:69], dz)


@pytest.mark.parametrize("tight", [False, True])
@pytest.mark.parametrize("gamma", [1.0, 0.5])
@pytest.mark.parametrize("free", [False, True])
def test_a_step_past_the_minimum_is_cut_to_the_minimum(gamma, free, tight, monkeypatch):
    """The smoothed hinge's linear stretches have no curvature, so its Newton steps overshoot
    the minimum along them. The line search's first trial is then the minimum, to
    |f'(t)| <= LINE_TOL |f'(0)| for f(t) = P(w + t s) computed by NumPy (with LIBLINEAR's
    intercept feature, penalised or free), and an exact minimum of f by scipy's bounded search
    is no lower than f there by more than that slope allows; where t = 1 does not overshoot,
    the trial is 1 with the loss's terms at 1. The iterate taken is w + t s or a halving of it
    (Armijo's test decides). Halving from t = 1 alone fails the first assertion on the
    overshooting steps. With LINE_TOL at 1e-12 (tight), the cut t is scipy's minimum of the
    same f to 1e-6 of t: f' is summed right, the free intercept's entry out of the penalty."""
    from scipy.optimize import minimize_scalar
    from fastdual.solvers import newton
    from fastdual.solvers.newton import Newton
    if tight:
        monkeypatch.setattr(newton, "LINE_TOL", 1e-12)
    LINE_TOL = newton.LINE_TOL
    X, y = problem_for("smooth_hinge", n=200, d=8, seed=6)
    alpha = 1e-4
    problem = build_problem(X, y, loss="smooth_hinge", alpha=alpha, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={"gamma": gamma}, regularize_intercept=not free)
    A = np.column_stack([X, np.ones(200)])
    labels = problem.y

    def f(w):
        return np_objective(X, labels, w[:-1], w[-1], loss="smooth_hinge", l2=alpha, l1=0.0,
                            fit_intercept=True, regularize_intercept=not free, gamma=gamma)

    driver = Newton(problem, {"max_cg": 250, "linear_solver": "direct"}, 0)
    line_start, seen = driver._line_start, []

    def recording(step, slope):
        w = driver.w.copy()
        t, known = line_start(step, slope)
        seen.append((w, step.copy(), slope, t, known))
        return t, known

    driver._line_start = recording
    taken = []
    for _ in range(6):
        driver.epoch()
        taken.append(driver.w.copy())
    assert len(seen) == 6
    cut = 0
    for (w, step, slope, t, known), after in zip(seen, taken):
        assert any(np.array_equal(after, w + (t * 0.5 ** k) * step) for k in range(60))
        h = 1e-7 / np.abs(A @ step).max()      # (margins moved by at most 1e-7)
        assert slope == pytest.approx((f(w + h * step) - f(w - h * step)) / (2 * h), rel=1e-5)
        along = (f(w + (t + h) * step) - f(w + (t - h) * step)) / (2 * h)
        if t == 1.0:
            assert along <= LINE_TOL * -slope + 1e-6 * abs(slope)
            trial = w + step
            penalised = trial[:-1] if free else trial
            assert (known / 200 + 0.5 * alpha * penalised @ penalised
                    == pytest.approx(f(trial), rel=1e-12))
            continue
        cut += 1
        assert known is None and 0.0 < t < 1.0
        assert abs(along) <= LINE_TOL * -slope + 1e-6 * abs(slope)
        best = minimize_scalar(lambda s: f(w + s * step), bounds=(0.0, 1.0), method="bounded",
                               options={"xatol": 1e-12})
        assert f(w + t * step) <= best.fun + LINE_TOL * -slope * abs(t - best.x) + 1e-12
        if tight:
            assert t == pytest.approx(best.x, rel=1e-6)
    assert cut >= 1
