"""The penalty's absolute sum, compared in line searches and extrapolations, by _core.reduce
(by index) and not scipy's dasum, whose OpenBLAS kernel sums in an order that depends on where
the vector starts in memory: a training is the same bit for bit from one run to the next
(docs/math.md Sec. 8, "Reproducible sums")."""
import math
import os
import sys

import numpy as np
import pytest

import fastdual
from fastdual._core import reduce

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
    results = {reduce.asum(at_offset(a, offset)) for offset in range(8)}
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
