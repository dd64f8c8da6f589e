"""The multinomial SDCA step (fastdual/_core/multiclass.pxd, multinomial_step): Newton on the
block's stationarity system, stopped once the gain left is negligible against the gain made,
against an independent maximisation of the same block objective

    G(p') = H(p') + z . (p' - p) - q/2 ||p' - p||^2   over the simplex,  p = e_y - a,

(each p'_j(nu) from Wright's omega function, nu by Brent's method on sum_j p'_j(nu) = 1, the
value summed exactly; cross-checked with SLSQP where SLSQP is reliable), for
k in 2..30, q from 1e-8 to 1e6, margins up to hundreds apart, and starts on and near the
simplex's faces (the duals' zero start p = e_y among them) and at the optimum itself.

The claim tested: p' is on the simplex (to the certificate's rounding slack), G(p') >= G(p)
(the dual never decreases), and G* - G(p') <= MN_GAIN_RTOL (G(p') - G(p)) + rounding, i.e.
at most a 1e-3 fraction of the step's gain is left (the step's stopping rule leaves about half
of that: Newton's decrement is twice its model's remaining gain)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastdual._core.multiclass import Multinomial

RTOL = 1e-3     # multinomial_newton's MN_GAIN_RTOL


def objective(p_new, z, p0, q):
    """G(p_new), its terms summed exactly (math.fsum)."""
    p_new = np.asarray(p_new, dtype=float)
    d = p_new - p0
    positive = p_new > 0
    terms = np.concatenate([-p_new[positive] * np.log(p_new[positive]), z * d, -q / 2 * d * d])
    return math.fsum(terms)


def reference_step(z, p0, q):
    """argmax G over the simplex from its stationarity conditions: log p_j + q p_j = c_j - nu
    with c_j = z_j + q p0_j - 1, i.e. w = q p_j solves w + log w = c_j - nu + log q, Wright's
    omega function (scipy.special.wrightomega, stable for every argument); nu by Brent's
    method on h(nu) = sum_j p_j(nu) - 1, which decreases from >= 0 at max_j c_j - q to <= 0 at
    logsumexp(c) <= max_j c_j + log k. Returns (p*, G*)."""
    from scipy.optimize import brentq
    from scipy.special import wrightomega
    c = z + q * p0 - 1.0

    def probabilities(nu):
        return wrightomega(c - nu + math.log(q)).real / q

    lo, hi = c.max() - q - 1.0, c.max() + math.log(c.shape[0]) + 1.0
    nu = brentq(lambda nu: math.fsum(probabilities(nu)) - 1.0, lo, hi, xtol=1e-300,
                rtol=4 * np.finfo(float).eps, maxiter=500)
    p = probabilities(nu)
    p = p / math.fsum(p)
    return p, objective(p, z, p0, q)


def start_point(rng, k, y, kind):
    """p = e_y - a on the simplex: interior, on a face, near a face, or the zero duals' e_y."""
    if kind == "labels":
        return np.eye(k)[y]
    p = rng.dirichlet(np.full(k, rng.choice([0.05, 1.0, 50.0])))
    if kind == "face":
        p[rng.random(k) < 0.5] = 0.0
        p[y] += 1e-3
    elif kind == "near_face":
        p[rng.random(k) < 0.5] = rng.choice([1e-300, 1e-200, 1e-30, 1e-12])
    return p / p.sum()


def check_step(z, p0, y, q):
    k = z.shape[0]
    a0 = np.eye(k)[y] - p0
    p0 = np.eye(k)[y] - a0          # the start as the duals hold it (a_y = 1 - p_y rounds)
    got = Multinomial().step_of(z, a0, y, q)
    p_new = np.eye(k)[y] - got
    slack = 64 * k * np.finfo(float).eps
    # On the simplex, to the certificate's rounding slack; the certificate accepts it.
    assert np.all(np.isfinite(got)) and np.all(p_new >= -slack)
    assert abs(p_new.sum() - 1.0) <= slack
    assert np.isfinite(Multinomial().values(got[None, :], np.array([y]), dual=True)[0])
    best_p, best = reference_step(z, p0, q)
    start = objective(p0, z, p0, q)
    value = objective(np.clip(p_new, 0.0, None), z, p0, q)
    # Rounding: p' is stored in doubles, and G's terms are as large as |z| and q.
    rounding = 1e-13 * (1.0 + np.abs(z).sum() + q)
    assert value >= start - rounding, "the step lowered the dual"
    assert best - value <= RTOL * (value - start) + rounding, (best - value, value - start)
    return p_new, best_p


# The blocks both step tests draw: labels' sizes, curvatures and margins' scales over many
# orders of magnitude, starting points inside, on and near a face of the simplex.
STEP_CASES = dict(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 30),
                  q=st.sampled_from([1e-8, 1e-3, 0.1, 0.7, 1.0, 3.0, 10.0, 1e3, 1e6]),
                  scale=st.sampled_from([1e-3, 0.3, 3.0, 30.0, 300.0]),
                  kind=st.sampled_from(["interior", "face", "near_face", "labels"]))

@settings(max_examples=60, deadline=None)
@given(**STEP_CASES)
def test_the_multinomial_step_against_a_high_precision_maximisation(seed, k, q, scale, kind):
    rng = np.random.default_rng(seed)
    y = int(rng.integers(k))
    z = rng.standard_normal(k) * scale
    check_step(z, start_point(rng, k, y, kind), y, q)


@pytest.mark.parametrize("q", [1e-6, 0.5, 2.0, 1e4])
def test_an_optimal_start_stays(q):
    """The start p = softmax(z) is the block's maximiser whatever q (the whole problem's
    optimum leaves every sample there): the step keeps G and p to rounding."""
    rng = np.random.default_rng(int(q * 1000) % 2**31)
    for trial in range(10):
        k = int(rng.integers(2, 30))
        y = int(rng.integers(k))
        z = rng.standard_normal(k) * rng.choice([0.3, 3.0, 30.0])
        optimum = np.exp(z - z.max())
        optimum /= optimum.sum()
        p_new, best_p = check_step(z, optimum, y, q)
        # (atol: the label's p_y = 1 - a_y is held to 1e-16 only)
        np.testing.assert_allclose(best_p, optimum, rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(p_new, optimum, rtol=1e-9, atol=1e-15)


def test_the_step_agrees_with_slsqp_and_the_reference_with_both():
    """The reference is the maximum: at least SLSQP's value on moderate problems (so the
    accuracy above is measured against the true maximiser), and the step is within the
    claimed fraction of both."""
    from scipy.optimize import minimize
    rng = np.random.default_rng(5)
    for trial in range(25):
        k = int(rng.integers(2, 9))
        y = int(rng.integers(k))
        z = rng.standard_normal(k) * rng.choice([0.3, 3.0])
        q = float(rng.uniform(0.05, 5.0))
        p0 = start_point(rng, k, y, "interior")

        def negative(p_):
            p_ = np.clip(p_, 1e-300, None)
            return -(-(p_ * np.log(p_)).sum() + z @ (p_ - p0) - q / 2 * np.sum((p_ - p0) ** 2))
        slsqp = minimize(negative, np.full(k, 1.0 / k), method="SLSQP", bounds=[(0, 1)] * k,
                         constraints=[{"type": "eq", "fun": lambda p_: p_.sum() - 1}],
                         options={"ftol": 1e-15, "maxiter": 1000})
        p_new, best_p = check_step(z, p0, y, q)
        best = -negative(best_p)
        assert best >= -slsqp.fun - 1e-12
        assert -negative(p_new) >= -slsqp.fun - 1e-9 - RTOL * (-negative(p_new) + negative(p0))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 30),
       q=st.sampled_from([1e-8, 0.7, 3.0, 1e3, 1e6]),
       scale=st.sampled_from([0.3, 30.0, 300.0]),
       kind=st.sampled_from(["interior", "face", "near_face", "labels"]))
def test_the_exact_fallback_is_the_maximiser(seed, k, q, scale, kind):
    """multinomial_step_exact (what the step falls back on when Newton does not converge) to
    machine precision: within rounding of the reference's value."""
    rng = np.random.default_rng(seed)
    y = int(rng.integers(k))
    z = rng.standard_normal(k) * scale
    a0 = np.eye(k)[y] - start_point(rng, k, y, kind)
    p0 = np.eye(k)[y] - a0
    got = Multinomial().exact_step_of(z, a0, y, q)
    p_new = np.clip(np.eye(k)[y] - got, 0.0, None)
    _, best = reference_step(z, p0, q)
    assert best - objective(p_new, z, p0, q) <= 1e-13 * (1.0 + np.abs(z).sum() + q)


@settings(max_examples=40, deadline=None)
@given(**STEP_CASES)
def test_newton_converges_without_the_fallback(seed, k, q, scale, kind):
    """The Newton iteration itself converges (the exact solver is a safety net, not a path
    taken): in at most 10 iterations for q <= 10, 20 beyond; the step is its result."""
    rng = np.random.default_rng(seed)
    y = int(rng.integers(k))
    z = rng.standard_normal(k) * scale
    a0 = np.eye(k)[y] - start_point(rng, k, y, kind)
    got, iterations = Multinomial().newton_step_of(z, a0, y, q)
    assert 0 <= iterations <= (10 if q <= 10.0 else 20)
    assert np.array_equal(got, Multinomial().step_of(z, a0, y, q))
    if kind == "interior" and q <= 10.0 and scale <= 3.0:
        assert iterations <= 5


def test_the_step_helpers_refuse_bad_arguments():
    z, a = np.zeros(3), np.array([1.0, 0.0, 0.0]) - np.full(3, 1 / 3)
    for method in (Multinomial().newton_step_of, Multinomial().exact_step_of):
        with pytest.raises(ValueError, match=r"needs z and a of one length k, 0 <= y < k and q > 0"):
            method(z, a[:2], 0, 1.0)
        with pytest.raises(ValueError, match=r"needs z and a of one length k, 0 <= y < k and q > 0"):
            method(z, a, 3, 1.0)
        with pytest.raises(ValueError, match=r"needs z and a of one length k, 0 <= y < k and q > 0"):
            method(z, a, 0, 0.0)


@pytest.mark.parametrize("scaled, l1_ratio", [(True, 0.0), (False, 0.0), (True, 0.4)])
def test_the_dual_never_decreases_over_epochs(scaled, l1_ratio):
    """Each step raises the dual's lower bound in its sample's block from a feasible point, so
    the certified D never decreases from epoch to epoch (unit rows, and raw rows whose large q
    and margins take several Newton iterations); on unit rows the gap closes to 1e-6 (raw
    rows, q in the thousands, take SDCA thousands of epochs whatever its step)."""
    from fastdual._multiclass import build_vector_problem
    from fastdual._validation import check_labels, check_matrix
    from fastdual.solvers.vector_sdca import VectorSDCA
    rng = np.random.default_rng(11)
    k, n, d = 7, 300, 6
    centers = rng.standard_normal((k, d)) * 2
    y = rng.integers(0, k, n)
    X = centers[y] + rng.standard_normal((n, d))
    X = X / np.linalg.norm(X, axis=1, keepdims=True) if scaled else X * 20
    matrix = check_matrix(X)
    classes, index = check_labels(y, matrix.n_samples)
    problem = build_vector_problem(matrix, classes, index, "multinomial", dict(
        loss="logistic", alpha=1e-3, C=None, l1_ratio=l1_ratio, fit_intercept=True,
        intercept_scaling=1.0, sample_weight=None, loss_params={}, regularize_intercept=True))
    driver = VectorSDCA(problem, 0)
    duals, gaps = [], []
    for epoch in range(60):
        driver.epoch()
        primal, dual, gap = problem.certificate(*driver.point())[:3]
        duals.append(dual)
        gaps.append(gap / abs(primal))
    duals = np.array(duals)
    assert np.all(np.diff(duals) >= -1e-13 * np.abs(duals[1:]))
    assert duals[-1] > duals[0]
    if scaled:
        assert gaps[-1] <= 1e-6
