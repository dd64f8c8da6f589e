"""AGM (seed 004): the smoothed loss and the dual form's terms against brute force, the
engines against the seed's own guarantees (Lemma 3-4, Theorem 14, the adaptive L's bound), and
the optimum against SDCA's and scikit-learn's."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from conftest import BINARY_LOSSES, REGRESSION_LOSSES, binary_problem, problem_for
from fastdual._problem import build_problem
from fastdual.losses import make_loss
from fastdual.solvers import _agm
from fastdual.solvers.agm import InfiniteMemory, LipschitzSearch, OneMemory
from fastdual.solvers.agm_forms import PrimalForm, largest_eigenvalue

NON_SMOOTH = ["hinge", "absolute", "epsilon_insensitive"]


def targets(loss, n, rng):
    return (np.where(rng.random(n) < 0.5, 1.0, -1.0) if loss in BINARY_LOSSES
            else rng.standard_normal(n))


@pytest.mark.parametrize("loss", NON_SMOOTH)
@pytest.mark.parametrize("mu", [0.05, 1.0])
def test_smoothed_loss_is_the_brute_force_maximum_and_its_slope(loss, mu):
    """phi_mu(z) = max_a -phi*(-a) - z a - mu/2 a^2 over a fine grid of the dual domain, and
    -a(z) is its derivative (central differences)."""
    rng = np.random.default_rng(0)
    loss_obj = make_loss(loss, {})[1]
    n = 40
    y = targets(loss, n, rng)
    z = 3.0 * rng.standard_normal(n)
    ones = np.ones(n)
    lower, upper = loss_obj.dual_bounds(y)
    duals = np.empty(n)
    total = _agm.smoothed_loss(y, ones, z, loss_obj, mu, duals)
    grid_values = []
    for i in range(n):
        grid = np.linspace(lower[i], upper[i], 200_001)
        objective = loss_obj.dual_values(np.full_like(grid, y[i]), grid) - z[i] * grid \
            - 0.5 * mu * grid ** 2
        grid_values.append(objective.max())
        assert lower[i] <= duals[i] <= upper[i]
    assert total == pytest.approx(sum(grid_values), abs=1e-8)
    h = 1e-6
    for i in range(n):
        up, down = np.array([z[i] + h]), np.array([z[i] - h])
        slope = (_agm.smoothed_loss(y[i:i + 1], ones[:1], up, loss_obj, mu, np.empty(0))
                 - _agm.smoothed_loss(y[i:i + 1], ones[:1], down, loss_obj, mu, np.empty(0))) / (2 * h)
        assert slope == pytest.approx(-duals[i], abs=1e-5)


@pytest.mark.parametrize("loss", ["squared_hinge", "smooth_hinge", "logistic", "squared"])
def test_smooth_losses_are_used_as_they_are(loss):
    rng = np.random.default_rng(1)
    loss_obj = make_loss(loss, {})[1]
    y, z = targets(loss, 30, rng), 2.0 * rng.standard_normal(30)
    c = rng.uniform(0.0, 2.0, 30)
    duals = np.empty(30)
    total = _agm.smoothed_loss(y, c, z, loss_obj, 0.0, duals)
    assert total == pytest.approx(float(c @ loss_obj.values(y, z)), rel=1e-13)
    np.testing.assert_allclose(duals, -loss_obj.derivatives(y, z), rtol=1e-13)


@pytest.mark.parametrize("loss", ["hinge", "smooth_hinge", "squared_hinge", "squared",
                                  "absolute"])
def test_dual_terms_slope_is_the_derivative_of_the_dual_objective(loss):
    rng = np.random.default_rng(2)
    loss_obj = make_loss(loss, {})[1]
    n = 25
    y = targets(loss, n, rng)
    lower, upper = loss_obj.dual_bounds(y)
    # Inside the domain, away from its bounds (where the dual is not differentiable).
    a = np.empty(n)
    for i, t in enumerate(rng.uniform(0.05, 0.95, n)):
        lo, hi = lower[i], upper[i]
        a[i] = (lo + t * (hi - lo) if np.isfinite(lo) and np.isfinite(hi) else
                lo + t if np.isfinite(lo) else hi - t if np.isfinite(hi) else 3 * (t - 0.5))
    z = rng.standard_normal(n)
    c = np.ones(n)
    slope = np.empty(n)
    total = _agm.dual_terms(y, c, a, z, loss_obj, slope)
    assert total == pytest.approx(float(np.sum(loss_obj.dual_values(y, a))), rel=1e-13)
    h = 1e-7
    numeric = ((loss_obj.dual_values(y, a + h) - z * (a + h))
               - (loss_obj.dual_values(y, a - h) - z * (a - h))) / (2 * h)
    np.testing.assert_allclose(slope, numeric, atol=1e-5)


def problem_of(X, y, loss="logistic", alpha=1e-2, l1_ratio=0.0, regularize_intercept=True):
    return build_problem(X, y, loss=loss, alpha=alpha, C=None, l1_ratio=l1_ratio,
                         fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                         loss_params={}, regularize_intercept=regularize_intercept)


def reference(X, y, **objective):
    """The optimum by SDCA to a relative gap of 1e-13: (w with the intercept feature, P*)."""
    model = fastdual.train(X, y, solver="sdca", tol=1e-13, max_epochs=100_000, **objective)
    return np.append(model.coef_, model.intercept_), model.primal_


def test_fixed_L_infinite_memory_keeps_lemma_4_and_the_rate_of_lemma_3():
    """Algorithm 1: A_k J(x_k) <= min psi_k at every k (Lemma 4), hence
    J(x_k) - J(x*) <= Delta(x*, x_0) / A_k (Lemma 3), with x_0 = 0."""
    X, y = binary_problem(n=120, d=8, seed=3)
    objective = dict(loss="logistic", alpha=1e-3)
    w_star, p_star = reference(X, y, **objective)
    problem = problem_of(X, y, **objective)
    form = PrimalForm(problem, 0.0)
    L = form.lipschitz(1.05 * largest_eigenvalue(problem, 300))
    engine = InfiniteMemory(form, np.zeros(9), LipschitzSearch(L, False, 2.0, 2.0))
    for _ in range(150):
        engine.step()
        value = problem.primal_dual(engine.x, np.zeros(120))[0]
        assert value <= engine.model_value() + 1e-12
        assert value - p_star <= 0.5 * float(w_star @ w_star) / engine.A + 1e-12
    assert value - p_star < 1e-8


@pytest.mark.parametrize("adaptive", [False, True])
def test_one_memory_keeps_theorem_14(adaptive):
    """Algorithms 3-4, eq. (28): J(x_k) - J(x*) <= (q_0(x*) - J(x*)) prod_i (1 - a_i), with
    q_0(x) = L_0/2 ||x - u_0||^2 + f(u_0) + <grad f(u_0), x - u_0> + Psi(x) at u_0 = 0, where
    for the logistic loss f(0) = log 2 and grad f(0) = -(1/n) sum_i y_i x_i / 2."""
    X, y = binary_problem(n=120, d=8, seed=4)
    alpha = 1e-3
    w_star, p_star = reference(X, y, loss="logistic", alpha=alpha)
    problem = problem_of(X, y, alpha=alpha)
    form = PrimalForm(problem, 0.0)
    L = form.lipschitz(1.05 * largest_eigenvalue(problem, 300))
    engine = OneMemory(form, np.zeros(9), LipschitzSearch(L, adaptive, 2.0, 2.0))
    L0 = engine.search.L
    X1 = np.hstack([X, np.ones((120, 1))])
    grad0 = -(X1.T @ y) / (2 * 120)
    q0 = (0.5 * L0 * w_star @ w_star + np.log(2.0) + grad0 @ w_star
          + 0.5 * alpha * w_star @ w_star)
    for _ in range(200):
        engine.step()
        value = problem.primal_dual(engine.x, np.zeros(120))[0]
        assert value - p_star <= (q0 - p_star) * engine.contraction + 1e-12
    assert value - p_star < 1e-8


@pytest.mark.parametrize("engine_class", [InfiniteMemory, OneMemory])
def test_the_adaptive_L_stays_below_gamma_u_times_the_true_L(engine_class):
    """Algorithms 2 and 4 raise L until the estimate-function test passes, which it does once L
    reaches the Lipschitz constant: the L used is below gamma_u times it at every iteration,
    and well below it on average (the seed's claim: about 10%)."""
    X, y = binary_problem(n=150, d=10, seed=5, sparse=True)
    problem = problem_of(X, y, loss="squared_hinge", alpha=1e-3)
    form = PrimalForm(problem, 0.0)
    true_L = form.lipschitz(largest_eigenvalue(problem, 1000, rtol=1e-12))
    search = LipschitzSearch(form.lipschitz(largest_eigenvalue(problem, 8)), True, 2.0, 2.0)
    engine = engine_class(form, np.zeros(11), search)
    used = []
    for _ in range(200):
        engine.step()
        used.append(search.L)
        assert search.L < 2.0 * true_L * (1 + 1e-9)
    assert np.median(used) < true_L


@pytest.mark.parametrize("loss", BINARY_LOSSES + REGRESSION_LOSSES)
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
@pytest.mark.parametrize("memory", ["infinite", "one"])
def test_agm_reaches_the_sdca_optimum(loss, l1_ratio, memory):
    X, y = problem_for(loss, n=100, d=6, seed=6, sparse=True)
    objective = dict(loss=loss, alpha=1e-2, l1_ratio=l1_ratio)
    _, p_star = reference(X, y, **objective)
    model = fastdual.train(X, y, solver="agm", memory=memory, tol=1e-7, max_epochs=100_000,
                           **objective)
    assert model.converged_ and model.solver == "agm"
    # p_star is certified to a relative gap of 1e-13: P* lies in [p_star (1 - 1e-13), p_star],
    # and AGM's primal may be below p_star by that much
    assert p_star * (1 - 1e-13) <= model.primal_ <= p_star * (1 + 1.01e-7) + 1e-15
    assert model.dual_ <= p_star * (1 + 1e-12)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
def test_agm_dual_form_with_a_regularised_intercept(loss, l1_ratio):
    """The dual form (eq. 39) with the l2 penalty and with the elastic net (g* of the soft
    threshold), the box alone (no hyperplane): SDCA's optimum."""
    X, y = binary_problem(n=100, d=6, seed=7)
    objective = dict(loss=loss, alpha=1e-2, l1_ratio=l1_ratio)
    _, p_star = reference(X, y, **objective)
    model = fastdual.train(X, y, solver="agm", form="dual", tol=1e-7, max_epochs=200_000,
                           **objective)
    assert model.converged_
    assert model.primal_ == pytest.approx(p_star, rel=1.01e-7)


def test_agm_pure_l1_matches_scikit_learn_lasso():
    from sklearn.linear_model import Lasso
    X, y = problem_for("squared", n=100, d=8, seed=8, sparse=False)
    alpha = 0.05
    lasso = Lasso(alpha=alpha, tol=1e-12, max_iter=100_000).fit(X, y)
    model = fastdual.train(X, y, loss="squared", solver="agm", alpha=alpha, l1_ratio=1.0,
                           regularize_intercept=False, tol=1e-7, max_epochs=200_000)
    assert model.converged_
    np.testing.assert_allclose(model.coef_, lasso.coef_, atol=1e-4)
    assert model.intercept_ == pytest.approx(lasso.intercept_, abs=1e-4)


def test_fixed_smoothing_certifies_the_true_objective():
    """smoothing=mu keeps mu: the certified gap then stalls near the smoothing bias (at most
    mu/2 per unit weight), and the certificate is still the true hinge objective's."""
    X, y = binary_problem(n=100, d=6, seed=9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.train(X, y, loss="hinge", solver="agm", form="primal", smoothing=0.5,
                               alpha=1e-2, tol=1e-9, max_epochs=15_000)
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss="hinge", alpha=1e-2,
                                dual_coef=model.dual_coef_)
    assert (cert.primal, cert.dual) == (model.primal_, model.dual_)
    assert not model.converged_ and 1e-4 < model.gap_ <= 0.25 + 1e-9


def test_warm_start_from_a_converged_model_stays_converged():
    X, y = binary_problem(n=100, d=6, seed=10, sparse=True)
    kwargs = dict(loss="logistic", alpha=1e-2, solver="agm")
    model = fastdual.train(X, y, tol=1e-8, max_epochs=20_000, **kwargs)
    again = fastdual.train(X, y, tol=1e-6, max_epochs=20_000, warm_start=model, **kwargs)
    # converged at its first check, one iteration in (its passes: the start's and one step's)
    assert again.converged_ and len(again.history_) == 1 and again.n_epochs_ <= 6


@pytest.mark.parametrize("options, match", [
    (dict(gamma_u=1.0), "gamma_u must be > 1"),
    (dict(gamma_d=0.5), "gamma_d must be > 1"),
    (dict(form="dual", loss="logistic"), "form='dual' needs a loss"),
    (dict(form="dual", l1_ratio=1.0), "form='dual' needs an l2 term"),
    (dict(smoothing=0.1, loss="logistic"), "smoothing is for the non-smooth losses"),
    (dict(form="dual", smoothing=0.1), "smoothing is the primal form's parameter"),
    (dict(memory="two"), "memory must be one of"),
    (dict(adaptive="yes"), "adaptive must be True or False"),
])
def test_bad_options_are_clear_errors(options, match):
    X, y = binary_problem(n=30, d=3, seed=11)
    options = {"loss": "hinge", **options}
    with pytest.raises((ValueError, TypeError), match=match):
        fastdual.train(X, y, solver="agm", alpha=0.1, **options)


def test_float32_and_sparse_match_float64_dense():
    X, y = binary_problem(n=80, d=5, seed=12)
    kwargs = dict(loss="smooth_hinge", solver="agm", alpha=1e-2, tol=1e-9, max_epochs=20_000)
    dense = fastdual.train(X, y, **kwargs)
    sparse32 = fastdual.train(sp.csr_matrix(X.astype(np.float32)), y, **kwargs)
    np.testing.assert_allclose(sparse32.coef_, dense.coef_, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("loss", NON_SMOOTH)
def test_the_optimized_prox_function_reaches_the_same_optimum(loss):
    """Sec. 5.6's smoothing prox-function b_i^2 a^2 / 2 changes the path, not the problem."""
    X, y = problem_for(loss, n=100, d=6, seed=13, sparse=True)
    objective = dict(loss=loss, alpha=1e-2)
    _, p_star = reference(X, y, **objective)
    model = fastdual.train(X, y, solver="agm", form="primal", prox_function="optimized",
                           tol=1e-6, max_epochs=200_000, **objective)
    assert model.converged_
    assert p_star * (1 - 1e-13) <= model.primal_ <= p_star * (1 + 1.01e-6)   # (see above)


@pytest.mark.parametrize("form, memory", [("primal", "infinite"), ("primal", "one"),
                                          ("dual", "infinite")])
def test_an_agm_epoch_reports_the_passes_it_made(monkeypatch, form, memory):
    """epoch() returns the passes over X it made (each trial of L: a gradient and an image),
    every row pass counted here independently."""
    from fastdual._core import rows as _rows
    X, y = binary_problem(n=80, d=5, seed=3)
    calls = []
    for name in ("margins", "transpose_times"):
        original = getattr(_rows, name)
        monkeypatch.setattr(_rows, name,
                            lambda *a, _f=original, _n=name: calls.append(_n) or _f(*a))
    problem = build_problem(X, y, loss="hinge", alpha=1e-2, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={}, regularize_intercept=form == "primal")
    driver_class = fastdual.SOLVERS["agm"]
    options = fastdual.solvers.solver_options(driver_class, {"form": form, "memory": memory})
    calls.clear()
    driver = driver_class(problem, options, 0)
    calls.clear()                                   # (setup: the spectral estimate)
    for _ in range(5):
        passes = driver.epoch()
        assert passes == len(calls) >= 2
        calls.clear()
