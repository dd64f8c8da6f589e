"""_core.linalg: the penalty's sums, compared in line searches and extrapolations, by index and
not by scipy's BLAS, whose OpenBLAS kernels sum in an order that depends on where the vector
starts in memory: a training is the same bit for bit from one run to the next (docs/math.md
Sec. 8, "Reproducible sums"); the level-1 operations of Newton's conjugate gradient and the
Cholesky solve of the Newton-type steps, against numpy, math.fsum and scipy."""
import math
import os
import sys

import numpy as np
import pytest
import scipy.linalg

import fastdual
from fastdual._core import linalg
from fastdual.solvers.common import OWN_CHOLESKY_MAX, solve_spd

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.append(_ROOT)      # (appended: the installed package is found first)

from benchmarks.datasets import correlated_dense  # noqa: E402


def at_offset(values, offset):
    """A copy of values starting `offset` doubles into a fresh buffer (8 offsets: every
    alignment modulo 64 bytes)."""
    buffer = np.empty(values.size + 8)
    copy = buffer[offset:offset + values.size].reshape(values.shape)
    copy[...] = values
    return copy


@pytest.mark.parametrize("n", [0, 1, 3, 4, 7, 292, 1001, 20000])
def test_the_absolute_sum_is_exact_to_rounding_and_the_same_at_every_alignment(n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n) * rng.lognormal(0.0, 3.0, n)
    results = {linalg.asum(at_offset(a, offset)) for offset in range(8)}
    assert len(results) == 1
    exact = math.fsum(np.abs(a))
    assert results.pop() == pytest.approx(exact, rel=n * np.finfo(float).eps + 1e-300)


@pytest.mark.parametrize("l2", [0.0, 0.3])
@pytest.mark.parametrize("free_last", [False, True])
def test_the_penalty_is_the_same_at_every_alignment(free_last, l2):
    """The value the line searches and extrapolations compare (with scipy's dasum most of these
    vectors give 2-4 values over the 8 alignments, pure l1's penalty as many)."""
    from fastdual.solvers.common import penalty
    rng = np.random.default_rng(2)
    for n in (292, 1000, 20000):
        for _ in range(10):
            w = rng.standard_normal(n) * rng.lognormal(0.0, 3.0, n)
            values = {penalty(at_offset(w, offset), l2, 0.7, free_last)
                      for offset in range(8)}
            assert len(values) == 1
            last = abs(w[-1]) if free_last else 0.0
            exact = (0.5 * l2 * (math.fsum(w * w) - last * last)
                     + 0.7 * (math.fsum(np.abs(w)) - last))
            assert values.pop() == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("n", [0, 1, 3, 4, 7, 292, 1001])
def test_dot_nrm2_and_axpy(n):
    rng = np.random.default_rng(n + 10)
    a = rng.standard_normal(n) * rng.lognormal(0.0, 3.0, n)
    b = rng.standard_normal(n)
    eps = np.finfo(float).eps
    results = {linalg.dot(at_offset(a, i), at_offset(b, j)) for i in range(4) for j in range(4)}
    assert len(results) == 1
    assert results.pop() == pytest.approx(math.fsum(a * b),
                                          abs=n * eps * math.fsum(np.abs(a * b)) + 1e-300)
    exact = math.sqrt(math.fsum(a * a))
    assert linalg.nrm2(a) == pytest.approx(exact, rel=n * eps + 1e-300)
    # the scaled sum where the squares overflow or underflow (dnrm2's guard)
    for scale in (1e200, 1e-200, 1e300):
        assert linalg.nrm2(a * scale) == pytest.approx(exact * scale, rel=n * eps + 1e-300)
    y = b.copy()
    linalg.axpy(-0.7, a, y)
    np.testing.assert_array_equal(y, b + (-0.7) * a)
    with pytest.raises(ValueError, match="lengths differ"):
        linalg.dot(a, np.ones(n + 1))
    with pytest.raises(ValueError, match="lengths differ"):
        linalg.axpy(1.0, a, np.ones(n + 1))


def test_nrm2_of_non_finite_entries():
    assert linalg.nrm2(np.array([1.0, np.inf])) == np.inf
    assert np.isnan(linalg.nrm2(np.array([1.0, np.nan])))
    assert linalg.nrm2(np.zeros(5)) == 0.0


@pytest.mark.parametrize("m", [1, 2, 7, 40, OWN_CHOLESKY_MAX, OWN_CHOLESKY_MAX + 1])
def test_the_cholesky_solve_against_scipy(m):
    """cholesky_solve (and solve_spd, by it up to OWN_CHOLESKY_MAX unknowns and by LAPACK
    above) solves a positive definite system as scipy's solve does, reading the upper triangle
    only (the strict lower one here is garbage)."""
    rng = np.random.default_rng(m)
    B = rng.standard_normal((m, m + 3))
    A = B @ B.T + 1e-3 * np.eye(m)
    b = rng.standard_normal(m)
    expected = scipy.linalg.solve(A, b, assume_a="pos")
    cond = np.linalg.cond(A)
    garbage = np.triu(A) + np.tril(rng.standard_normal((m, m)), -1)
    x = b.copy()
    assert linalg.cholesky_solve(garbage.copy(), x)
    np.testing.assert_allclose(x, expected, rtol=0, atol=1e-13 * cond * np.abs(expected).max())
    x = solve_spd(garbage.copy(), b)
    np.testing.assert_allclose(x, expected, rtol=0, atol=1e-13 * cond * np.abs(expected).max())


def test_the_cholesky_solve_refuses_what_is_not_positive_definite():
    indefinite = np.array([[1.0, 2.0], [2.0, 1.0]])
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])
    with_nan = np.array([[1.0, np.nan], [np.nan, 1.0]])
    for A in (indefinite, singular, with_nan, -np.eye(3)):
        assert not linalg.cholesky_solve(A.copy(), np.ones(A.shape[0]))
        assert solve_spd(A.copy(), np.ones(A.shape[0])) is None
    big = -np.eye(OWN_CHOLESKY_MAX + 1)                     # (LAPACK's branch)
    assert solve_spd(big, np.ones(OWN_CHOLESKY_MAX + 1)) is None
    assert solve_spd(np.eye(2), np.array([1.0, np.nan])) is None    # not a finite solution
    assert linalg.cholesky_solve(np.empty((0, 0)), np.empty(0))
    with pytest.raises(ValueError, match="square"):
        linalg.cholesky_solve(np.eye(3), np.ones(2))


def test_cd_is_the_same_model_bit_for_bit_in_every_run():
    """cd's Anderson extrapolations are kept on comparisons of nearly equal sums near the
    optimum: on this set (benchmarks' correlated dense columns, 1000 x 5000, unit rows,
    LIBLINEAR's intercept) four runs in one process gave three or four different models
    (epochs, coefficients' last bits) while those sums went through BLAS."""
    X, target = correlated_dense()
    y = np.where(target > np.median(target), 1.0, -1.0)
    loss = "squared_hinge"
    alpha = fastdual.alpha_max(X, y, loss=loss, l1_ratio=1.0, fit_intercept=True,
                               regularize_intercept=True) / 100
    # (support_newton="off": the support's Newton steps take most of the extrapolations' close
    # calls away on this set; the extrapolations' comparisons are what this test is about)
    models = [fastdual.train(X, y, loss=loss, alpha=alpha, l1_ratio=1.0, solver="cd",
                             tol=1e-4, max_epochs=1000, support_newton="off")
              for _ in range(4)]
    assert all(m.converged_ for m in models)
    assert len({(m.n_epochs_, m.coef_.tobytes(), float(m.intercept_)) for m in models}) == 1
