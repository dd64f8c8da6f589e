"""Each loss's closed forms against brute force: value, derivative, conjugate, SDCA step.

docs/math.md derives every formula; here each is checked against a numerical computation of the
same definition, never against numbers the code produced.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.optimize import brentq, minimize_scalar
from scipy.special import expit

from conftest import BINARY_LOSSES, REGRESSION_LOSSES, SMOOTH_LOSSES, np_loss
from fastdual._core.losses import new_step_state
from fastdual.losses import LOSSES, make_loss

ALL = BINARY_LOSSES + REGRESSION_LOSSES
PARAMS = {"smooth_hinge": {"gamma": 0.7}, "epsilon_insensitive": {"epsilon": 0.3},
          "squared_epsilon_insensitive": {"epsilon": 0.4}}
# The domain of -phi*(-a) for each loss, in a for y = +1 (binary losses use beta = a y).
DOMAIN = {"hinge": (0.0, 1.0), "smooth_hinge": (0.0, 1.0), "logistic": (0.0, 1.0),
          "squared_hinge": (0.0, 40.0), "squared": (-40.0, 40.0), "absolute": (-1.0, 1.0),
          "epsilon_insensitive": (-1.0, 1.0), "squared_epsilon_insensitive": (-40.0, 40.0)}


def loss_object(name):
    return make_loss(name, PARAMS.get(name, {}))[1]


def targets(name):
    return [1.0, -1.0] if name in BINARY_LOSSES else [0.0, 1.7, -2.3]


def domain(name, y):
    """The domain in a: binary losses constrain beta = a y, so it flips for y = -1."""
    lo, hi = DOMAIN[name]
    if name in BINARY_LOSSES and y < 0:
        return -hi, -lo
    return lo, hi


def point_in_domain(name, which, t, width):
    """A target of the loss and a dual point t of the way across its domain (capped at width)."""
    y = targets(name)[which % len(targets(name))]
    lo, hi = domain(name, y)
    hi = min(hi, lo + width) if hi - lo > width else hi
    return y, lo + t * (hi - lo)


def conjugate_by_minimisation(name, y, a):
    """-phi*(-a) = inf_z phi(y, z) + a z, computed numerically (the definition)."""
    f = lambda z: float(np_loss(name, y, z, **PARAMS.get(name, {}))) + a * z
    best = min(f(z) for z in np.linspace(-60, 60, 24001))
    res = minimize_scalar(f, bounds=(-60, 60), method="bounded", options={"xatol": 1e-12})
    return min(best, res.fun)


@pytest.mark.parametrize("name", ALL)
def test_value_matches_definition(name):
    loss = loss_object(name)
    z = np.linspace(-4, 4, 97)
    for y in targets(name):
        np.testing.assert_allclose(loss.values(y, z), np_loss(name, y, z, **PARAMS.get(name, {})),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ALL)
def test_derivative_matches_finite_differences(name):
    loss = loss_object(name)
    z = np.linspace(-4, 4, 81) + 0.0123          # off the kinks
    h = 1e-6
    for y in targets(name):
        numeric = (np_loss(name, y, z + h, **PARAMS.get(name, {}))
                   - np_loss(name, y, z - h, **PARAMS.get(name, {}))) / (2 * h)
        np.testing.assert_allclose(loss.derivatives(y, z), numeric, atol=1e-5)
        np.testing.assert_allclose(loss.duals_from_margins(y, z), -loss.derivatives(y, z))


@pytest.mark.parametrize("name", SMOOTH_LOSSES)
def test_curvature_matches_finite_differences_of_the_loss(name):
    """phi'' (Newton's Hessian, its line search's f''), off the kinks, against second central
    differences of the textbook loss (the smoothed hinge at gamma = 0.7: its curvature is
    1/gamma on the quadratic stretch only)."""
    loss = loss_object(name)
    z = np.linspace(-4, 4, 81) + 0.0123          # off the kinks
    h = 1e-4
    for y in targets(name):
        f = [np_loss(name, y, z + k * h, **PARAMS.get(name, {})) for k in (-1, 0, 1)]
        numeric = (f[2] - 2.0 * f[1] + f[0]) / (h * h)
        np.testing.assert_allclose(loss.curvatures(y, z), numeric, atol=1e-4)
        assert np.any(loss.curvatures(y, z) > 0.0) and np.any(loss.curvatures(y, z) == 0.0) \
            or name in ("logistic", "squared")


@pytest.mark.parametrize("name", SMOOTH_LOSSES)
def test_one_call_for_value_and_derivatives_gives_each_ones_bits(name):
    """value_derivatives (Newton's passes, through _newton.loss_terms) writes the bits of
    derivative and curvature, and sums the values, on every piece of the loss and its
    boundaries (the smoothed hinge at gamma = 0.7: 1 - yz at 0 and at gamma)."""
    from fastdual.solvers import _newton
    loss = loss_object(name)
    for y in targets(name):
        edges = [1.0 / y, 0.3 / y] if y else []       # (the smoothed hinge's kinks)
        z = np.concatenate([np.linspace(-4, 4, 161), edges])
        labels, weights = np.full(z.shape, y), np.ones(z.shape)
        slope, curve = np.empty(z.shape), np.empty(z.shape)
        total = _newton.loss_terms(labels, weights, z, loss, slope, curve)
        np.testing.assert_array_equal(slope, loss.derivatives(labels, z))
        np.testing.assert_array_equal(curve, loss.curvatures(labels, z))
        assert total == pytest.approx(np.sum(loss.values(labels, z)), rel=1e-13, abs=1e-13)


@pytest.mark.parametrize("name", ALL)
def test_conjugate_matches_numerical_infimum(name):
    loss = loss_object(name)
    for y in targets(name):
        lo, hi = domain(name, y)
        if name in ("squared_hinge", "squared"):     # unbounded domains: a bounded stretch
            lo, hi = (max(lo, -8.0), min(hi, 8.0))
        for a in np.linspace(lo, hi, 7):
            expected = conjugate_by_minimisation(name, y, a)
            assert loss.dual_values(y, a)[0] == pytest.approx(expected, abs=2e-6), (y, a)


@pytest.mark.parametrize("name", ["hinge", "smooth_hinge", "logistic", "absolute",
                                  "epsilon_insensitive", "squared_hinge"])
def test_conjugate_is_minus_infinity_outside_the_domain(name):
    loss = loss_object(name)
    for y in targets(name):
        lo, hi = domain(name, y)
        outside = [-0.5 * y] if name == "squared_hinge" else [lo - 0.5, hi + 0.5]
        for a in outside:
            assert loss.dual_values(y, a)[0] == -np.inf


@given(z=st.floats(-6, 6), t=st.floats(0, 1), name=st.sampled_from(ALL),
                                 which=st.integers(0, 2))
def test_fenchel_young(z, t, name, which):
    """phi(z) + phi*(-a) + a z >= 0 on the domain, with equality at a = -phi'(z)."""
    loss = loss_object(name)
    y, a = point_in_domain(name, which, t, 10)
    slack = loss.values(y, z)[0] - loss.dual_values(y, a)[0] + a * z
    assert slack >= -1e-12
    u = loss.duals_from_margins(y, z)[0]
    assert loss.values(y, z)[0] - loss.dual_values(y, u)[0] + u * z == pytest.approx(0, abs=1e-9)


def brute_force_step(name, y, z, a, q):
    """argmax over the domain of -phi*(-a') - z (a' - a) - q/2 (a' - a)^2, numerically."""
    loss = loss_object(name)
    lo, hi = domain(name, y)
    if name == "squared_hinge":
        lo, hi = (lo, lo + 60) if y > 0 else (hi - 60, hi)
    if name == "squared":
        lo, hi = a - 60, a + 60

    def negative(b):
        return -(loss.dual_values(y, b)[0] - z * (b - a) - 0.5 * q * (b - a) ** 2)

    grid = np.linspace(lo, hi, 20001)
    values = np.array([negative(b) for b in grid])
    k = int(np.argmin(values))
    left, right = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
    res = minimize_scalar(negative, bounds=(left, right), method="bounded",
                          options={"xatol": 1e-13})
    return res.x if res.fun <= values[k] else grid[k], negative


@given(name=st.sampled_from(ALL), z=st.floats(-3, 3), t=st.floats(0, 1),
       q=st.floats(0.05, 20), which=st.integers(0, 2))
def test_sdca_step_is_the_exact_maximiser(name, z, t, q, which):
    loss = loss_object(name)
    y, a = point_in_domain(name, which, t, 5)
    step = loss.step(y, z, a, q)
    expected, negative = brute_force_step(name, y, z, a, q)
    assert np.isfinite(loss.dual_values(y, step)[0])
    # The objective is strongly concave in a' (q > 0): compare values, then the maximiser.
    assert -negative(step) >= -negative(expected) - 1e-9
    assert step == pytest.approx(expected, abs=2e-5 * max(1.0, abs(expected)))


@pytest.mark.parametrize("name", ALL)
def test_step_with_a_zero_row_maximises_the_conjugate_term(name):
    loss = loss_object(name)
    for y in targets(name):
        step = loss.step(y, 0.3, 0.0, 0.0)
        expected, _ = brute_force_step(name, y, 0.3, 0.0, 1e-9)
        assert loss.dual_values(y, step)[0] - 0.3 * step == pytest.approx(
            loss.dual_values(y, expected)[0] - 0.3 * expected, abs=1e-6)


def test_logistic_step_is_stable_for_extreme_margins():
    loss = loss_object("logistic")
    for z in (-800.0, -40.0, 40.0, 800.0):
        for q in (1e-8, 1.0, 1e8):
            step = loss.step(1.0, z, 0.5, q)
            assert 0.0 <= step <= 1.0 and np.isfinite(loss.dual_values(1.0, step)[0])
    assert np.isfinite(loss.values(1.0, [-1e4, 1e4])).all()


def logistic_maximiser(u, beta, q):
    """The logistic step's maximiser b = sigmoid(t), t the root of the optimality condition
    t + u + q (sigmoid(t) - beta) = 0 (docs/math.md, "The logistic step"), by scipy's brentq."""
    f = lambda t: t + u + q * (expit(t) - beta)
    root = brentq(f, -u - q * (1.0 - beta) - 1.0, -u + q * beta + 1.0, xtol=1e-300,
                  rtol=4 * np.finfo(float).eps, maxiter=2000)
    return expit(root)


@settings(max_examples=300, deadline=None)
@given(z=st.floats(-40, 40), t0=st.floats(-35, 35), q=st.floats(1e-6, 1e6),
       positive=st.booleans())
def test_logistic_step_from_a_kept_logit(z, t0, q, positive):
    """SDCA's step with the sample's kept pair (b, t), sigmoid(t) = b: the same maximiser as
    the step without it, to the root of the optimality condition; the pair of the new dual is
    written back, and a pair kept for another dual is not used (the step is then the one
    without a pair, bit for bit)."""
    loss = loss_object("logistic")
    y = 1.0 if positive else -1.0
    beta = float(expit(t0))
    a = y * beta
    kept = np.array([beta, t0])
    step = loss.step(y, z, a, q, kept)
    plain = loss.step(y, z, a, q)
    expected = logistic_maximiser(y * z, beta, q)
    assert abs(step * y - expected) <= 1e-13
    assert abs(plain * y - expected) <= 1e-13
    assert kept[0] == step * y
    assert abs(expit(kept[1]) - kept[0]) <= 1e-15
    stale = np.array([np.nextafter(beta, 2.0), t0])
    assert loss.step(y, z, a, q, stale) == plain
    assert stale[0] == plain * y


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), q=st.floats(1e-3, 1e3))
def test_logistic_steps_keep_their_pair_consistent(seed, q):
    """A sample visited again and again as an SDCA run visits it (its margin settling, its
    dual the last step's): every step with the kept pair is the maximiser, and the pair stays
    a logit and its sigmoid."""
    loss = loss_object("logistic")
    rng = np.random.default_rng(seed)
    y = rng.choice([-1.0, 1.0])
    z_end = rng.normal(0.0, 3.0)
    kept = new_step_state(loss, 1)
    a = 0.0
    for k in range(60):
        z = z_end + rng.normal() * 2.0 ** -k
        step = loss.step(y, z, a, q, kept)
        assert abs(step * y - logistic_maximiser(y * z, a * y, q)) <= 1e-13
        assert kept[0] == step * y
        assert abs(expit(kept[1]) - kept[0]) <= 1e-15
        a = step


def test_only_the_logistic_step_keeps_state():
    assert {name: loss_object(name).step_state for name in ALL} == {
        name: (2 if name == "logistic" else 0) for name in ALL}
    with pytest.raises(ValueError, match="state must hold step_state = 0"):
        loss_object("hinge").step(1.0, 0.0, 0.5, 1.0, np.zeros(2))
    with pytest.raises(ValueError, match="state must hold step_state = 2"):
        loss_object("logistic").step(1.0, 0.0, 0.5, 1.0, np.zeros(3))


@pytest.mark.parametrize("name", SMOOTH_LOSSES)
def test_smoothness_constant(name):
    """gamma is the strong convexity of phi*: phi' is (1/gamma)-Lipschitz, checked numerically."""
    loss = loss_object(name)
    z = np.linspace(-5, 5, 2001)
    for y in targets(name):
        slopes = np.abs(np.diff(loss.derivatives(y, z)) / np.diff(z))
        assert slopes.max() <= 1.0 / loss.gamma + 1e-6
        assert slopes.max() >= 0.9 / loss.gamma


def test_every_loss_is_registered_with_its_task():
    # the per-sample losses tested here, and the one structured loss (tests/test_f1.py)
    assert set(LOSSES) == set(ALL) | {"f1_hinge"}
    assert [name for name, spec in LOSSES.items() if spec.structured] == ["f1_hinge"]
    for name in BINARY_LOSSES:
        assert LOSSES[name].task == "binary"
    for name in REGRESSION_LOSSES:
        assert LOSSES[name].task == "regression"


@given(name=st.sampled_from(ALL), z=st.floats(-3, 3), t=st.floats(0.05, 0.95),
       which=st.integers(0, 2))
def test_dual_slope_is_the_derivative_of_the_coordinate_objective(name, z, t, which):
    loss = loss_object(name)
    y, a = point_in_domain(name, which, t, 5)
    if name in ("epsilon_insensitive", "squared_epsilon_insensitive") and abs(a) < 1e-3:
        return                                  # the kink at 0
    h = 1e-6
    numeric = ((loss.dual_values(y, a + h)[0] - z * (a + h))
               - (loss.dual_values(y, a - h)[0] - z * (a - h))) / (2 * h)
    assert loss.slope(y, z, a) == pytest.approx(numeric, abs=1e-5)


def test_box_losses_are_flagged_for_shrinking():
    flagged = {name for name in ALL if loss_object(name).has_box}
    assert flagged == {"hinge", "squared_hinge", "smooth_hinge", "absolute", "epsilon_insensitive"}


def test_logistic_step_matches_bisection_over_a_wide_range_of_curvatures():
    """Large q (small alpha, long rows) is where plain Newton cycles; the root of the logit
    condition t + u + q (sigmoid(t) - beta) = 0, bisected in NumPy, is the reference."""
    loss = loss_object("logistic")
    rng = np.random.default_rng(5)
    m = 3000
    z, q = 6 * rng.standard_normal(m), 10.0 ** rng.uniform(-4, 7, m)
    y = rng.choice([-1.0, 1.0], m)
    u = y * z
    sigmoid = lambda t: np.exp(-np.logaddexp(0.0, -t))
    # Half anywhere in the box, half close to the coordinate's optimum sigmoid(-u) as late in a
    # run, where the step stops after one or two Newton iterations.
    near = np.clip(sigmoid(-u) * (1 + 10.0 ** rng.uniform(-9, -2, m) * rng.standard_normal(m)), 0, 1)
    beta = np.where(np.arange(m) % 2 == 0, rng.random(m), near)
    lo, hi = -u - q * (1 - beta), -u + q * beta
    for _ in range(250):
        mid = 0.5 * (lo + hi)
        positive = mid + u + q * (sigmoid(mid) - beta) > 0
        hi, lo = np.where(positive, mid, hi), np.where(positive, lo, mid)
    expected = sigmoid(0.5 * (lo + hi))
    got = np.array([loss.step(y[i], z[i], beta[i] * y[i], q[i]) * y[i] for i in range(m)])
    # The step stops once its Newton correction dx has (1 + q) dx^2 <= 1e-12 (1 + |t|) and
    # returns the linearised sigmoid: the root to about 1e-13 (1 + |t|) (losses.pyx, Logistic).
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-300)


@pytest.mark.parametrize("name", ALL)
def test_dual_bounds_are_the_domain_of_the_conjugate(name):
    """Finite -phi*(-a) inside [lower, upper] (checked near both ends), -inf just outside."""
    loss = loss_object(name)
    for y in targets(name):
        lower, upper = (float(b[0]) for b in loss.dual_bounds([y]))
        expected_lo, expected_hi = domain(name, y)
        unbounded = {"squared": (True, True), "squared_epsilon_insensitive": (True, True),
                     "squared_hinge": (y < 0, y > 0)}.get(name, (False, False))
        assert lower == (-np.inf if unbounded[0] else expected_lo)
        assert upper == (np.inf if unbounded[1] else expected_hi)
        for a in (lower, upper):
            if np.isfinite(a):
                assert np.isfinite(loss.dual_values(y, a)[0])
                step = 1e-9 * max(1.0, abs(a))
                outside = a - step if a == lower else a + step
                assert loss.dual_values(y, outside)[0] == -np.inf
