"""Tests of fastdual.projection (seed 004 Sec. 5.5).

Correctness is checked against things the code under test does not produce: independent
O(n log n) sort-based solvers written here (for (64): binary search over the sorted kinks, direct
evaluation of f, no aggregates), the KKT conditions read off the returned point alone, closed forms
and known vertices.  Only the structural properties (projecting twice, in place vs. not) compare
the code with itself.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastdual._core import projection as _projection
from fastdual.projection import project_box_hyperplane, project_elastic_net_ball

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
TOL = 1e-10


# --------------------------------------------------------------------------------------------
# Independent references
# --------------------------------------------------------------------------------------------
def _broadcast(m, *params):
    m = np.asarray(m, dtype=float)
    return [m] + [np.broadcast_to(np.asarray(p, dtype=float), m.shape).copy() for p in params]


@np.errstate(invalid="ignore")
def feasible_range(lower, upper, sigma):
    lo = np.where(sigma > 0, sigma * lower, sigma * upper)
    hi = np.where(sigma > 0, sigma * upper, sigma * lower)
    lo = np.where(sigma == 0, 0.0, lo)
    hi = np.where(sigma == 0, 0.0, hi)
    return lo.sum(), hi.sum()


def reference_box(m, lower, upper, sigma, z, d=1.0):
    """Sort the kinks, binary-search the sorted kinks for the sign change of f, then solve the
    one linear piece.  O(n log n): one sort and O(log n) direct O(n) evaluations of f."""
    m, lower, upper, sigma, d = _broadcast(m, lower, upper, sigma, d)
    a = np.clip(m, lower, upper)
    c = sigma != 0
    m, lower, upper, sigma, d = m[c], lower[c], upper[c], sigma[c], d[c]
    if not c.any():
        return a
    s = sigma / d**2

    def f(lam):
        return np.sum(sigma * np.clip(m + lam * s, lower, upper)) - z

    with np.errstate(invalid="ignore", over="ignore"):
        kinks = np.concatenate([(lower - m) / s, (upper - m) / s])
    kinks = np.unique(kinks[np.isfinite(kinks)])           # sorted
    # first kink with f >= 0 (f is nondecreasing)
    lo_idx, hi_idx = 0, len(kinks)
    while lo_idx < hi_idx:
        mid = (lo_idx + hi_idx) // 2
        if f(kinks[mid]) >= 0:
            hi_idx = mid
        else:
            lo_idx = mid + 1
    left = kinks[lo_idx - 1] if lo_idx > 0 else -np.inf
    right = kinks[lo_idx] if lo_idx < len(kinks) else np.inf
    if np.isfinite(left) and np.isfinite(right):
        inside = 0.5 * (left + right)
    elif np.isfinite(right):
        inside = right - abs(right) - 1.0
    elif np.isfinite(left):
        inside = left + abs(left) + 1.0
    else:
        inside = 0.0
    # which coordinates are free on the piece (left, right)
    free = (lower < upper) & (m + inside * s > lower) & (m + inside * s < upper)
    fixed_value = np.clip(m + inside * s, lower, upper)
    slope = np.sum(sigma[free] * s[free])
    if slope > 0:
        const = np.sum(sigma[~free] * fixed_value[~free]) + np.sum(sigma[free] * m[free]) - z
        lam = np.clip(-const / slope, left, right)
    else:
        lam = inside
    a[c] = np.clip(m + lam * s, lower, upper)
    return a


def check_box_kkt(a, m, lower, upper, sigma, z, d=1.0, tol=1e-9):
    """KKT of (64) from the returned point alone: feasibility, and one multiplier lambda with
    d_i^2 (a_i - m_i) = lambda sigma_i on free coordinates, >= at lower and <= at upper bounds."""
    m, lower, upper, sigma, d = _broadcast(m, lower, upper, sigma, d)
    scale = 1.0 + np.max(np.abs(np.concatenate([m, a])))
    assert np.all(a >= lower) and np.all(a <= upper)
    zscale = 1.0 + np.sum(np.abs(sigma * a)) + abs(z)
    assert abs(np.dot(sigma, a) - z) <= tol * zscale
    grad = d**2 * (a - m)
    gscale = 1.0 + np.max(np.abs(d**2)) * scale
    zero = sigma == 0
    # uncoupled coordinates minimise on their own
    np.testing.assert_allclose(a[zero], np.clip(m, lower, upper)[zero], atol=tol * scale, rtol=0)
    at_lower = np.abs(a - lower) <= tol * scale
    at_upper = np.abs(a - upper) <= tol * scale
    lam_lo, lam_hi = -np.inf, np.inf
    for gi, si, lo_i, up_i in zip(grad[~zero], sigma[~zero], at_lower[~zero], at_upper[~zero]):
        # constraint on lambda: gi - lambda si >= 0 if only at lower, <= 0 if only at upper,
        # = 0 if free; none if at both (tight box)
        bound = gi / si
        if lo_i and up_i:
            continue
        if lo_i:          # lambda si <= gi
            if si > 0:
                lam_hi = min(lam_hi, bound)
            else:
                lam_lo = max(lam_lo, bound)
        elif up_i:        # lambda si >= gi
            if si > 0:
                lam_lo = max(lam_lo, bound)
            else:
                lam_hi = min(lam_hi, bound)
        else:
            lam_lo = max(lam_lo, bound)
            lam_hi = min(lam_hi, bound)
    lam_scale = 1.0 + max(abs(x) for x in (lam_lo, lam_hi, 0.0) if np.isfinite(x))
    assert lam_lo <= lam_hi + tol * gscale * lam_scale, (lam_lo, lam_hi)


def reference_ball(g, gamma, r):
    """Sort |g| in decreasing order; for each size k of the active set solve the constraint
    gamma ||w||_1 + 1/2 ||w||^2 = r with w from eq. (69) in closed form and keep the k whose
    threshold lambda gamma separates the k-th and (k+1)-th largest |g_i|."""
    g = np.asarray(g, dtype=float)
    a = np.abs(g)
    if gamma * a.sum() + 0.5 * np.dot(a, a) <= r:
        return g.copy()
    if r == 0:
        return np.zeros_like(g)
    srt = np.sort(a)[::-1]
    s1 = np.cumsum(srt)
    s2 = np.cumsum(srt**2)
    for k in range(1, len(srt) + 1):
        # with u = 1 + lambda: u^2 (2 r + k gamma^2) = S2 + 2 gamma S1 + k gamma^2
        u = np.sqrt((s2[k - 1] + 2 * gamma * s1[k - 1] + k * gamma**2) / (2 * r + k * gamma**2))
        lam = u - 1.0
        nxt = srt[k] if k < len(srt) else 0.0
        if lam * gamma < srt[k - 1] and lam * gamma >= nxt - 1e-15 * (1 + nxt):
            break
    return np.sign(g) * np.maximum(a - lam * gamma, 0.0) / (1.0 + lam)


def check_ball_kkt(w, g, gamma, r, tol=1e-9):
    g = np.asarray(g, dtype=float)
    scale = 1.0 + np.max(np.abs(g), initial=0.0)
    value = gamma * np.abs(w).sum() + 0.5 * np.dot(w, w)
    assert value <= r + tol * (1.0 + r + scale**2 * len(g))
    if value < r - tol * (1.0 + r):
        # constraint inactive: lambda = 0 and w = g
        np.testing.assert_allclose(w, g, atol=tol * scale, rtol=0)
        return
    nz = np.abs(w) > tol * scale
    if not nz.any():
        # w = 0 with the constraint active: the ball is (numerically) {0}
        assert r <= tol * scale**2
        return
    # lambda from the largest coordinate, then eq. (69) must hold on every coordinate
    i = np.argmax(np.abs(w))
    lam = (abs(g[i]) - abs(w[i])) / (abs(w[i]) + gamma)
    assert lam >= -tol
    expected = np.sign(g) * np.maximum(np.abs(g) - lam * gamma, 0.0) / (1.0 + lam)
    np.testing.assert_allclose(w, expected, atol=1e-8 * scale, rtol=0)
    assert np.all(np.sign(w[nz]) == np.sign(g[nz]))


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------
grid = st.integers(-8, 8).map(lambda k: k / 4.0)          # coarse grid -> duplicate kinks


def real(lo, hi):
    # rounded to 1e-9 so the instances stay well posed in float64 (no subnormal sigma whose
    # multiplier would overflow, no kink the sort-based reference cannot represent); the
    # extreme scales have their own tests below
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False).map(lambda x: round(x, 9))


value = st.one_of(grid, real(-10, 10))
width = st.one_of(st.just(0.0), st.integers(0, 8).map(lambda k: k / 4.0), real(0, 10))
# |sigma_i| is 0 or >= 1e-3: a coordinate with a tiny sigma_i that must absorb the constraint is
# determined only to eps * |z| / |sigma_i| (conditioning, not an error of any solver)
sigma_value = st.one_of(st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0]),
                        real(-5, 5).map(lambda x: x if abs(x) >= 1e-3 else 0.0))
d_value = st.one_of(st.sampled_from([0.5, 1.0, 2.0]), real(0.1, 10))


@st.composite
def box_instances(draw, max_n=30, infinite=True):
    n = draw(st.integers(1, max_n))
    vec = lambda s: np.array(draw(st.lists(s, min_size=n, max_size=n)))  # noqa: E731
    m = vec(value)
    lower = vec(value) if draw(st.booleans()) else draw(value)           # array or scalar
    upper = np.asarray(lower) + (vec(width) if draw(st.booleans()) else draw(width))
    if infinite and draw(st.booleans()):
        lower = np.broadcast_to(lower, (n,)).copy()
        upper = np.broadcast_to(upper, (n,)).copy()
        lower[vec(st.booleans())] = -np.inf
        upper[vec(st.booleans())] = np.inf
    sigma = vec(sigma_value) if draw(st.booleans()) else draw(sigma_value)
    d_kind = draw(st.sampled_from(["default", "scalar", "array"]))
    d = None if d_kind == "default" else (draw(d_value) if d_kind == "scalar" else vec(d_value))
    lo_b, hi_b = (np.broadcast_to(x, (n,)) for x in (lower, upper))
    zmin, zmax = feasible_range(lo_b, hi_b, np.broadcast_to(sigma, (n,)))
    t = draw(st.one_of(st.sampled_from([0.0, 1.0, 0.5]), st.floats(0, 1)))
    if np.isfinite(zmin) and np.isfinite(zmax):
        z = zmin + t * (zmax - zmin)
    elif np.isfinite(zmin):
        z = zmin + draw(st.sampled_from([0.0, 1.0, 10.0]))
    elif np.isfinite(zmax):
        z = zmax - draw(st.sampled_from([0.0, 1.0, 10.0]))
    else:
        z = draw(value)
    return m, lower, upper, sigma, z, d


def _d(d):
    return 1.0 if d is None else d


# --------------------------------------------------------------------------------------------
# project_box_hyperplane
# --------------------------------------------------------------------------------------------
@SETTINGS
@given(box_instances())
def test_box_matches_sort_reference_and_kkt(instance):
    m, lower, upper, sigma, z, d = instance
    a = project_box_hyperplane(m, lower, upper, sigma, z, d=d)
    ref = reference_box(m, lower, upper, sigma, z, _d(d))
    scale = 1.0 + np.max(np.abs(ref))
    np.testing.assert_allclose(a, ref, atol=TOL * scale, rtol=0)
    check_box_kkt(a, m, lower, upper, sigma, z, _d(d))


@SETTINGS
@given(box_instances(infinite=False), st.data())
def test_box_feasible_point_projects_to_itself(instance, data):
    m, lower, upper, sigma, _, d = instance
    n = len(m)
    t = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    lo_b, up_b = np.broadcast_to(lower, (n,)), np.broadcast_to(upper, (n,))
    point = np.clip(lo_b + t * (up_b - lo_b), lo_b, up_b)
    z = float(np.dot(np.broadcast_to(sigma, (n,)), point))
    a = project_box_hyperplane(point, lower, upper, sigma, z, d=d)
    np.testing.assert_allclose(a, point, atol=TOL * (1 + np.max(np.abs(point))), rtol=0)


@SETTINGS
@given(box_instances())
def test_box_projecting_twice_changes_nothing(instance):
    m, lower, upper, sigma, z, d = instance
    a = project_box_hyperplane(m, lower, upper, sigma, z, d=d)
    b = project_box_hyperplane(a, lower, upper, sigma, z, d=d)
    np.testing.assert_allclose(b, a, atol=TOL * (1 + np.max(np.abs(a))), rtol=0)


@pytest.mark.parametrize("n", [1, 2, 7, 1000])
@pytest.mark.parametrize("where", [0.0, 0.3, 1.0])
def test_box_all_equal_entries(n, where):
    # every kink duplicated n times: the halving must not depend on distinct kinks
    m = np.full(n, 0.25)
    zmin, zmax = feasible_range(np.zeros(n), np.ones(n), np.ones(n))
    z = zmin + where * (zmax - zmin)
    a = project_box_hyperplane(m, 0.0, 1.0, 1.0, z)
    np.testing.assert_allclose(a, np.full(n, where), atol=TOL, rtol=0)


def test_box_tight_boxes_and_mixed_signs():
    rng = np.random.default_rng(1)
    n = 500
    lower = rng.integers(-3, 3, n) / 2.0
    upper = lower + rng.integers(0, 3, n) / 2.0         # a third of the boxes are tight
    sigma = rng.choice([-1.0, 1.0, -2.0, 0.5, 0.0], n)
    m = rng.integers(-6, 6, n) / 2.0
    d = rng.choice([0.5, 1.0, 2.0], n)
    zmin, zmax = feasible_range(lower, upper, sigma)
    for t in [0.0, 1e-3, 0.25, 0.5, 0.999, 1.0]:
        z = zmin + t * (zmax - zmin)
        a = project_box_hyperplane(m, lower, upper, sigma, z, d=d)
        np.testing.assert_allclose(a, reference_box(m, lower, upper, sigma, z, d),
                                   atol=TOL * 10, rtol=0)
        check_box_kkt(a, m, lower, upper, sigma, z, d)
        np.testing.assert_array_equal(a[lower == upper], lower[lower == upper])


@pytest.mark.parametrize("end", ["min", "max"])
def test_box_z_at_either_end_gives_the_extreme_vertex(end):
    rng = np.random.default_rng(2)
    n = 300
    lower = rng.uniform(-2, 0, n)
    upper = lower + rng.uniform(0, 2, n)
    sigma = rng.choice([-1.0, 1.0, 0.3], n)
    m = rng.normal(size=n)
    zmin, zmax = feasible_range(lower, upper, sigma)
    z = zmin if end == "min" else zmax
    a = project_box_hyperplane(m, lower, upper, sigma, z, d=rng.uniform(0.5, 2, n))
    low_end = (sigma > 0) == (end == "min")
    expected = np.where(low_end, lower, upper)
    np.testing.assert_allclose(a, expected, atol=1e-12, rtol=0)


def test_box_z_within_rounding_of_an_end_is_that_end():
    rng = np.random.default_rng(10)
    n = 1000
    lower, upper = -rng.uniform(size=n), rng.uniform(size=n)
    sigma = rng.choice([-1.0, 1.0], n)
    zmin, zmax = feasible_range(lower, upper, sigma)
    vertex = np.where(sigma > 0, upper, lower)
    # a z past the end by a rounding error (e.g. summed in another order) gives the vertex ...
    a = project_box_hyperplane(np.zeros(n), lower, upper, sigma, zmax * (1 + 4e-16))
    np.testing.assert_allclose(a, vertex, atol=1e-12, rtol=0)
    # ... a z past it by more is infeasible
    with pytest.raises(ValueError, match="feasible range"):
        project_box_hyperplane(np.zeros(n), lower, upper, sigma, zmax + 1e-6 * abs(zmax))
    with pytest.raises(ValueError, match="feasible range"):
        project_box_hyperplane(np.zeros(n), lower, upper, sigma, zmin - 1e-6 * abs(zmin))


def test_box_n_equals_one():
    # a solution at 0 far from m (the residual is pure rounding of m_i + step, relative to m_i)
    a = project_box_hyperplane([2.50124842], 0.0, np.inf, 0.84375, 0.0)
    np.testing.assert_allclose(a, [0.0], atol=1e-15)
    np.testing.assert_allclose(project_box_hyperplane([5.0], -1.0, 1.0, 2.0, 1.0), [0.5])
    np.testing.assert_allclose(project_box_hyperplane([5.0], -1.0, 1.0, -2.0, -2.0), [1.0])
    np.testing.assert_allclose(project_box_hyperplane([5.0], 3.0, 3.0, 2.0, 6.0), [3.0])
    # sigma = 0: the hyperplane is {0 = z}, the coordinate is just clipped
    np.testing.assert_allclose(project_box_hyperplane([5.0], -1.0, 1.0, 0.0, 0.0), [1.0])


def test_box_infinite_bounds_closed_form():
    # no box at all: a = m + lambda sigma / d^2 with sigma.a = z
    rng = np.random.default_rng(3)
    n = 200
    m, sigma, d = rng.normal(size=n), rng.normal(size=n), rng.uniform(0.5, 2, n)
    z = 1.7
    lam = (z - sigma @ m) / np.sum(sigma**2 / d**2)
    a = project_box_hyperplane(m, -np.inf, np.inf, sigma, z, d=d)
    np.testing.assert_allclose(a, m + lam * sigma / d**2, atol=1e-12, rtol=0)
    # half-infinite box: the SVM-like dual with a one-sided box
    lower = np.zeros(n)
    a = project_box_hyperplane(m, lower, np.inf, np.sign(sigma), 3.0, d=d)
    np.testing.assert_allclose(a, reference_box(m, lower, np.inf, np.sign(sigma), 3.0, d),
                               atol=1e-10, rtol=0)


@pytest.mark.parametrize("dscale", [1e-150, 1e-30, 1.0, 1e30, 1e150])
def test_box_huge_and_tiny_d(dscale):
    # the solution depends on d only through ratios: a common factor must not change it
    rng = np.random.default_rng(4)
    n = 100
    m = rng.normal(size=n)
    sigma = rng.choice([-1.0, 1.0], n)
    d = rng.uniform(0.5, 2, n)
    ref = reference_box(m, 0.0, 1.0, sigma, 2.0, d)
    a = project_box_hyperplane(m, 0.0, 1.0, sigma, 2.0, d=d * dscale)
    np.testing.assert_allclose(a, ref, atol=1e-12, rtol=0)
    # and a huge spread of d: stiff coordinates stay at clip(m), soft ones absorb the constraint
    d2 = np.where(np.arange(n) % 2 == 0, 1e-120, 1e120)
    a = project_box_hyperplane(m, 0.0, 1.0, sigma, 2.0, d=d2)
    stiff = d2 > 1
    np.testing.assert_allclose(a[stiff], np.clip(m, 0, 1)[stiff], atol=1e-12)
    assert abs(sigma @ a - 2.0) <= 1e-12 * n


def test_box_sigma_and_d_scaled_in_opposite_directions():
    # sigma_i / d_i^2 spans 1e-400 .. 1e-200 but the weights sigma_i^2 / d_i^2 are all 1e-400:
    # the problem is perfectly conditioned, only its units are extreme.  KKT by hand:
    # a_i = lambda sigma_i / d_i^2, and sum sigma_i a_i = 3e-400 lambda = 0.5.
    sigma, d = [1.0, 1e-200, 2.0], [1e200, 1.0, 2e200]
    a = project_box_hyperplane([0.0, 0.0, 0.0], -np.inf, np.inf, sigma, 0.5, d=d)
    np.testing.assert_allclose(a, [1 / 6, 1e200 / 6, 1 / 12], rtol=1e-14)
    # with a box, the middle coordinate saturates and the other two share the constraint
    a = project_box_hyperplane([0.0, 0.0, 0.0], -1.0, 1.0, sigma, 0.5, d=d)
    np.testing.assert_allclose(a, [0.25, 1.0, 0.125], rtol=1e-14)
    # weights 1e1200 apart: the light coordinate is exactly negligible, the heavy one absorbs z
    a = project_box_hyperplane([0.0, 0.0], -1.0, 1.0, [1e300, 1e-300], 0.5, d=[1e-300, 1e300])
    np.testing.assert_allclose(a, [5e-301, 0.0], rtol=1e-14, atol=0)
    a = project_box_hyperplane([0.0, 0.0], -1.0, 1.0, 1.0, 0.5, d=[5e-324, 1e308])
    np.testing.assert_allclose(a, [0.5, 0.0], rtol=1e-14, atol=0)


@pytest.mark.parametrize("sscale", [1e-200, 1e200])
def test_box_huge_and_tiny_sigma(sscale):
    rng = np.random.default_rng(5)
    n = 50
    m, sigma = rng.normal(size=n), rng.choice([-1.0, 1.0, 2.0], n)
    ref = reference_box(m, -1.0, 1.0, sigma, 0.5)
    a = project_box_hyperplane(m, -1.0, 1.0, sigma * sscale, 0.5 * sscale)
    np.testing.assert_allclose(a, ref, atol=1e-12, rtol=0)


def test_box_unrepresentable_multiplier_is_an_error_not_a_wrong_answer():
    # the second coordinate alone can meet the hyperplane, with a_2 = 1e100 (representable) ...
    a = project_box_hyperplane([0.0, 0.0], [0.0, -np.inf], [1.0, np.inf], [1.0, 1e-100], 2.0)
    np.testing.assert_allclose(a, [1.0, 1e100], rtol=1e-12)
    # ... or with a multiplier of order 1e400, which float64 cannot hold
    with pytest.raises(ValueError, match="orders of magnitude"):
        project_box_hyperplane([0.0, 0.0], [0.0, -np.inf], [1.0, np.inf], [1.0, 1e-200], 2.0)


def test_box_larger_instances_with_many_duplicates():
    rng = np.random.default_rng(6)
    for n in [1000, 20000]:
        m = rng.integers(-4, 5, n) / 2.0
        lower = rng.integers(-2, 1, n).astype(float)
        upper = lower + rng.integers(0, 3, n)
        sigma = rng.choice([-1.0, 1.0], n)
        zmin, zmax = feasible_range(lower, upper, sigma)
        for t in [0.0, 0.37, 0.5, 1.0]:
            z = zmin + t * (zmax - zmin)
            a = project_box_hyperplane(m, lower, upper, sigma, z)
            ref = reference_box(m, lower, upper, sigma, z)
            np.testing.assert_allclose(a, ref, atol=1e-9, rtol=0)
            check_box_kkt(a, m, lower, upper, sigma, z)


def test_box_inputs_are_not_modified_and_out_in_place():
    rng = np.random.default_rng(7)
    n = 64
    m, lower = rng.normal(size=n), -rng.uniform(size=n)
    upper, sigma, d = rng.uniform(size=n), rng.choice([-1.0, 1.0], n), rng.uniform(1, 2, n)
    copies = [x.copy() for x in (m, lower, upper, sigma, d)]
    a = project_box_hyperplane(m, lower, upper, sigma, 0.1, d=d)
    for x, c in zip((m, lower, upper, sigma, d), copies):
        np.testing.assert_array_equal(x, c)
    out = np.empty(n)
    assert project_box_hyperplane(m, lower, upper, sigma, 0.1, d=d, out=out) is out
    np.testing.assert_array_equal(out, a)
    inplace = m.copy()
    project_box_hyperplane(inplace, lower, upper, sigma, 0.1, d=d, out=inplace)
    np.testing.assert_array_equal(inplace, a)
    # out overlapping an input with a shift: the input must be read before it is overwritten
    buf = np.concatenate([m, [0.0]])
    project_box_hyperplane(buf[:-1], lower, upper, sigma, 0.1, d=d, out=buf[1:])
    np.testing.assert_array_equal(buf[1:], a)


def test_concurrent_calls_from_threads():
    # the kernels release the GIL and share no state: concurrent calls give the reference answers
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(9)
    jobs = []
    for _ in range(8):
        n = 20000
        jobs.append((rng.normal(size=n), rng.choice([-1.0, 1.0], n), rng.uniform(0.5, 2, n)))

    def box(job):
        m, sigma, d = job
        return project_box_hyperplane(m, 0.0, 1.0, sigma, 0.0, d=d)

    def ball(job):
        return project_elastic_net_ball(job[0], 0.5, 100.0)

    with ThreadPoolExecutor(4) as pool:
        boxes = list(pool.map(box, jobs))
        balls = list(pool.map(ball, jobs))
    for (m, sigma, d), a, w in zip(jobs, boxes, balls):
        np.testing.assert_allclose(a, reference_box(m, 0.0, 1.0, sigma, 0.0, d), atol=1e-10)
        np.testing.assert_allclose(w, reference_ball(m, 0.5, 100.0), atol=1e-10)


def test_box_accepts_lists_ints_and_strided_input():
    m = np.arange(10.0)[::2]                        # non-contiguous
    a = project_box_hyperplane(m, 0, 4, [1, 1, 1, 1, 1], 10)
    np.testing.assert_allclose(a, reference_box(np.asarray(m), 0, 4, 1, 10), atol=TOL)


@pytest.mark.parametrize("kwargs, match", [
    (dict(m=[np.nan, 1.0]), "m"),
    (dict(m=[np.inf, 1.0]), "m"),
    (dict(m=np.ones((2, 2))), "m"),
    (dict(lower=[0.0, 0.0, 0.0]), "lower"),
    (dict(upper=np.ones((2, 1))), "upper"),
    (dict(lower=[0.0, np.nan]), "lower"),
    (dict(upper=[np.nan, 1.0]), "upper"),
    (dict(lower=[0.0, 2.0]), "lower must be <= upper"),
    (dict(lower=np.inf, upper=np.inf), "lower"),
    (dict(lower=-np.inf, upper=-np.inf), "upper"),
    (dict(sigma=[1.0, np.nan]), "sigma"),
    (dict(sigma=[1.0, 2.0, 3.0]), "sigma"),
    (dict(d=[1.0, 0.0]), "d"),
    (dict(d=0.0), "d"),
    (dict(d=[1.0, np.inf]), "d"),
    (dict(z=np.nan), "z"),
    (dict(z=5.0), "feasible range"),
    (dict(z=-0.5), "feasible range"),
    (dict(sigma=0.0, z=1.0), "feasible range"),
    (dict(out=np.empty(3)), "out"),
    (dict(out=np.empty(4)[::2]), "out"),
])
def test_box_bad_inputs_raise_value_errors_naming_the_argument(kwargs, match):
    args = dict(m=[0.5, 0.5], lower=0.0, upper=1.0, sigma=1.0, z=1.0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        project_box_hyperplane(**args)


@pytest.mark.parametrize("kwargs, match", [
    (dict(m=["a", "b"]), "m"),
    (dict(sigma=[1j, 1j]), "sigma"),
    (dict(z="1"), "z"),
    (dict(out=np.empty(2, dtype=np.float32)), "out"),
    (dict(out=[0.0, 0.0]), "out"),
])
def test_box_bad_types_raise_type_errors_naming_the_argument(kwargs, match):
    args = dict(m=[0.5, 0.5], lower=0.0, upper=1.0, sigma=1.0, z=1.0)
    args.update(kwargs)
    with pytest.raises(TypeError, match=match):
        project_box_hyperplane(**args)


def test_box_infeasible_message_states_the_range():
    with pytest.raises(ValueError, match=r"\[0\.0, 2\.0\]"):
        project_box_hyperplane([0.0, 0.0], 0.0, 1.0, 1.0, 3.0)


def test_box_empty():
    assert project_box_hyperplane(np.empty(0), 0.0, 1.0, 1.0, 0.0).shape == (0,)


# --------------------------------------------------------------------------------------------
# project_elastic_net_ball
# --------------------------------------------------------------------------------------------
ball_value = st.one_of(grid, real(-10, 10))


@SETTINGS
@given(st.lists(ball_value, min_size=1, max_size=30),
       st.one_of(st.just(0.0), st.sampled_from([0.1, 1.0, 5.0]), real(0, 20)),
       st.one_of(st.just(0.0), st.sampled_from([0.01, 1.0, 10.0]), real(0, 100)))
def test_ball_matches_sort_reference_and_kkt(g, gamma, r):
    g = np.array(g)
    w = project_elastic_net_ball(g, gamma, r)
    scale = 1.0 + np.max(np.abs(g))
    np.testing.assert_allclose(w, reference_ball(g, gamma, r), atol=TOL * scale, rtol=0)
    check_ball_kkt(w, g, gamma, r)


@SETTINGS
@given(st.lists(ball_value, min_size=1, max_size=30), real(0, 5), real(0.01, 50))
def test_ball_projecting_twice_changes_nothing(g, gamma, r):
    w = project_elastic_net_ball(np.array(g), gamma, r)
    w2 = project_elastic_net_ball(w, gamma, r)
    np.testing.assert_allclose(w2, w, atol=TOL * (1 + np.max(np.abs(w))), rtol=0)


def test_ball_radius_negligible_against_g():
    # r so small that u^2 - 1 overflows: the projection is (numerically) 0, never NaN
    for gamma in [0.0, 1.0]:
        w = project_elastic_net_ball([0.25, -1.0], gamma, 5e-324)
        assert np.all(np.isfinite(w)) and np.max(np.abs(w)) < 1e-150


def test_ball_extreme_gamma_and_r_stay_finite_and_inside():
    # gamma huge against g (|A| gamma^2 overflows), tiny, and r far below / above |g|^2: finite,
    # sign-preserving, and inside the ball up to the rounding level of g
    g = np.random.default_rng(11).normal(size=50)
    for g_scale in [1e-300, 1e-10, 1.0, 1e150, 1e300]:
        for gamma in [0.0, 1e-300, 1e-5, 1.0, 1e5, 1e300]:
            for r in [0.0, 1e-300, 1e-5, 1.0, 1e100, 1e300]:
                gg = g * g_scale
                w = project_elastic_net_ball(gg, gamma, r)
                assert np.all(np.isfinite(w))
                assert np.all(np.sign(w) * np.sign(gg) >= 0)
                gmax = np.max(np.abs(gg))
                with np.errstate(over="ignore"):    # the rounding allowance may overflow to inf
                    value = gamma * np.abs(w).sum() + 0.5 * np.dot(w, w)
                    allowance = 1e-14 * (gamma * gmax + gmax**2)
                if np.isfinite(value):
                    assert value <= r * (1 + 1e-12) + allowance
    np.testing.assert_allclose(project_elastic_net_ball([0.5, 0.25], 1e300, 1.0), [0.0, 0.0],
                               atol=1e-15)


def test_ball_special_cases():
    g = np.array([3.0, -4.0])
    # gamma = 0: the l2 ball of radius sqrt(2 r)
    np.testing.assert_allclose(project_elastic_net_ball(g, 0.0, 0.5), g / 5.0, atol=1e-15)
    # r = 0: the ball is {0}
    np.testing.assert_array_equal(project_elastic_net_ball(g, 1.0, 0.0), [0.0, 0.0])
    np.testing.assert_array_equal(project_elastic_net_ball(g, 0.0, 0.0), [0.0, 0.0])
    # inside the ball: unchanged
    np.testing.assert_array_equal(project_elastic_net_ball(g, 1.0, 100.0), g)
    # all-equal magnitudes (one kink repeated), large n
    g = np.tile([1.0, -1.0], 5000)
    w = project_elastic_net_ball(g, 1.0, 10.0)
    np.testing.assert_allclose(w, reference_ball(g, 1.0, 10.0), atol=1e-12)
    check_ball_kkt(w, g, 1.0, 10.0)


@pytest.mark.parametrize("scale", [1e-150, 1.0, 1e150])
def test_ball_large_random_and_scaled(scale):
    rng = np.random.default_rng(8)
    g = rng.normal(size=5000) * scale
    gamma, r = 0.3 * scale, 50.0 * scale**2
    w = project_elastic_net_ball(g, gamma, r)
    ref = reference_ball(g / scale, 0.3, 50.0) * scale
    np.testing.assert_allclose(w, ref, atol=1e-11 * scale, rtol=0)
    check_ball_kkt(w / scale, g / scale, 0.3, 50.0)


def test_ball_input_not_modified_and_in_place():
    g = np.array([1.0, -2.0, 0.5, 0.0])
    keep = g.copy()
    w = project_elastic_net_ball(g, 0.5, 1.0)
    np.testing.assert_array_equal(g, keep)
    project_elastic_net_ball(g, 0.5, 1.0, out=g)
    np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("kwargs, match", [
    (dict(g=[np.nan, 1.0]), "g"),
    (dict(g=[np.inf, 1.0]), "g"),
    (dict(g=np.ones((2, 2))), "g"),
    (dict(gamma=-1.0), "gamma"),
    (dict(gamma=np.inf), "gamma"),
    (dict(gamma=np.nan), "gamma"),
    (dict(r=-1.0), "r"),
    (dict(r=np.inf), "r"),
    (dict(out=np.empty(3)), "out"),
])
def test_ball_bad_inputs_raise_errors_naming_the_argument(kwargs, match):
    args = dict(g=[1.0, 2.0], gamma=1.0, r=1.0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        project_elastic_net_ball(**args)


# --------------------------------------------------------------------------------------------
# The linear-time selection underneath
# --------------------------------------------------------------------------------------------
def _patterns(n, rng):
    yield rng.normal(size=n)
    yield np.arange(n, dtype=float)
    yield np.arange(n, dtype=float)[::-1].copy()
    yield np.ones(n)
    yield rng.integers(0, 3, n).astype(float)
    yield np.concatenate([np.arange(n // 2), np.arange(n - n // 2)[::-1]]).astype(float)  # organ
    x = np.arange(n, dtype=float)
    x[::2] = 0.0                                              # half duplicates, half sorted
    yield x
    # the largest values exactly where a strided sample looks: every sample pivot is extreme,
    # which must trigger the median-of-medians fall-back rather than quadratic time
    x = rng.normal(size=n)
    stride = max(1, n // max(1, int(np.sqrt(n))))
    x[::stride] = 1e6 + np.arange(len(x[::stride]))
    yield x


@pytest.mark.parametrize("n", [1, 2, 5, 25, 26, 1000, 30001])
def test_select_matches_sort_on_hard_patterns(n):
    rng = np.random.default_rng(n)
    for x in _patterns(n, rng):
        srt = np.sort(x)
        for k in {0, n // 2, (n - 1) // 2, n - 1}:
            y = x.copy()
            assert _projection.select(y, k) == srt[k]
            np.testing.assert_array_equal(np.sort(y), srt)    # a permutation of the input
