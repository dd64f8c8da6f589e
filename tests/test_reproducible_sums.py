"""The solvers' reductions that decide (a line search's decrease, an extrapolation kept or not):
_core.reduce sums by index, so that a training is the same bit for bit from one run to the
next whatever addresses its arrays get (OpenBLAS's kernels sum in an order that depends on
where the data start; docs/math.md Sec. 3, "Reproducible sums")."""
import math

import numpy as np
import pytest

import fastdual
from fastdual._core import reduce


def at_offset(values, offset):
    """A copy of values starting `offset` doubles into a fresh buffer (8 offsets: every
    alignment modulo 64 bytes)."""
    buffer = np.empty(values.size + 8)
    copy = buffer[offset:offset + values.size].reshape(values.shape)
    copy[...] = values
    return copy


@pytest.mark.parametrize("n", [0, 1, 3, 4, 7, 292, 1001])
def test_the_sums_are_exact_to_rounding_and_the_same_at_every_alignment(n):
    rng = np.random.default_rng(n)
    a, b, h = rng.standard_normal(n), rng.standard_normal(n), rng.random(n)
    results = set()
    for offset in range(8):
        x, z, c = at_offset(a, offset), at_offset(b, 7 - offset), at_offset(h, offset)
        results.add((reduce.dot(x, z), reduce.asum(x), reduce.norm2(x),
                     reduce.model_value(z, c, x)))
    assert len(results) == 1
    dot, asum, norm, model = results.pop()
    scale = n * np.finfo(float).eps
    assert dot == pytest.approx(math.fsum(a * b), abs=scale * math.fsum(np.abs(a * b)) + 1e-300)
    assert asum == pytest.approx(math.fsum(np.abs(a)), rel=scale + 1e-300)
    assert norm == pytest.approx(math.sqrt(math.fsum(a * a)), rel=scale + 1e-300)
    exact = math.fsum(b * a) + 0.5 * math.fsum(h * a * a)
    assert model == pytest.approx(exact, abs=scale * (math.fsum(np.abs(b * a))
                                                      + math.fsum(h * a * a)) + 1e-300)


def test_norm2_rescales_where_the_squares_overflow_or_underflow():
    for size in (1e200, 1e-200):
        a = np.array([3.0, 4.0]) * size
        assert reduce.norm2(a) == pytest.approx(5.0 * size, rel=1e-15)
    assert reduce.norm2(np.zeros(3)) == 0.0


def test_the_small_solve_and_gram_rows_against_numpy():
    rng = np.random.default_rng(1)
    rows = rng.standard_normal((5, 300))
    gram = np.empty((5, 5))
    reduce.gram_rows(rows, gram)
    np.testing.assert_allclose(gram, rows @ rows.T, rtol=1e-13)
    rhs = rng.standard_normal(5)
    x = rhs.copy()
    assert reduce.solve_small(gram.copy(), x)
    np.testing.assert_allclose(gram @ x, rhs, rtol=1e-10, atol=1e-12)
    # a row needing a pivot swap, and a singular matrix
    a = np.array([[0.0, 1.0], [2.0, 3.0]])
    x = np.array([1.0, 8.0])
    assert reduce.solve_small(a.copy(), x)
    np.testing.assert_allclose(x, [2.5, 1.0])
    assert not reduce.solve_small(np.ones((2, 2)), np.ones(2))


def test_cd_is_the_same_model_bit_for_bit_in_every_run():
    """cd's Anderson extrapolations are kept on comparisons of nearly equal sums near the
    optimum: on this set (benchmarks.auto_l1's correlated dense columns, 1000 x 5000, unit rows,
    LIBLINEAR's intercept) four runs in one process gave three or four different models
    (epochs, coefficients' last bits) while those sums went through BLAS."""
    from benchmarks.auto_l1 import alpha_max, dense_classification
    X, y = dense_classification()
    loss = "squared_hinge"
    alpha = alpha_max(X, y, loss, 1.0) / 100
    # (support_newton="off": the support's Newton steps take most of the extrapolations' close
    # calls away on this set; the extrapolations' comparisons are what this test is about)
    models = [fastdual.train(X, y, loss=loss, alpha=alpha, l1_ratio=1.0, solver="cd",
                             tol=1e-4, max_epochs=1000, support_newton="off")
              for _ in range(4)]
    assert all(m.converged_ for m in models)
    assert len({(m.n_epochs_, m.coef_.tobytes(), float(m.intercept_)) for m in models}) == 1
