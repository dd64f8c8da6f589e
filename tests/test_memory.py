"""What training allocates: never a copy of X, and on very wide data only the d-vectors the
method and its certificate need (docs/benchmarks.md Sec. I), measured with tracemalloc, which
numpy reports its allocations to."""
import os
import sys
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastdual

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

from benchmarks.scale import very_wide  # noqa: E402


def traced_peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("solver", ["sdca", "spdc", "rda", "newton", "agm"])
def test_x_is_never_copied(dtype, solver):
    """A CSR X of 400,000 entries (2.4-3.2 MB) with few samples and features: training adds
    far less than X itself (a copy would add all of it)."""
    rng = np.random.default_rng(0)
    n, d, per_row = 2000, 500, 200
    X = sp.random(n, d, density=per_row / d, format="csr", random_state=0, dtype=dtype)
    X.sort_indices()
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    with warnings.catch_warnings():      # (5 epochs: unconverged, the warning's advice runs too)
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        # (a first call on a few rows imports the solver's modules, whose code objects
        # tracemalloc would count as this test's when it runs first in its process)
        fastdual.train(X[:20], y[:20], loss="logistic", alpha=1e-2, max_epochs=1, solver=solver)
        peak = traced_peak(lambda: fastdual.train(X, y, loss="logistic", alpha=1e-2, tol=1e-3,
                                                  max_epochs=5, solver=solver))
    assert peak < 0.5 * x_bytes


def test_sdca_on_very_wide_data_keeps_three_d_vectors():
    """SDCA with l2 keeps v = w; a check adds the gap function's scratch v(duals), then the
    checkpoint's frozen copy of w (after the scratch is gone), while the previous checkpoint is
    still held: three float64 d-vectors at the peak, whatever the number of checks."""
    d = 1 << 22
    X, y = very_wide(500, d, 5, seed=1)
    peak = traced_peak(lambda: fastdual.train(X, y, loss="logistic", alpha=1e-2, tol=0.0,
                                              max_epochs=4, check_every=1, solver="sdca"))
    assert peak <= 3.1 * 8 * d


def test_sdca_takes_v_over_on_very_wide_data_with_one_d_vector_more():
    """At a check where SDCA takes over v summed exactly (every 8 epochs), the gap function
    adds v's rounding to the three d-vectors above: four at the peak. (Sparse rows storing at
    least one entry per feature pack w, v and its rounding side by side instead, four
    d-vectors of workspace; not on rows this much wider than their entries.)"""
    d = 1 << 22
    X, y = very_wide(500, d, 5, seed=1)
    peak = traced_peak(lambda: fastdual.train(X, y, loss="logistic", alpha=1e-2, tol=0.0,
                                              max_epochs=9, check_every=1, solver="sdca"))
    assert peak <= 4.1 * 8 * d


# Float64 d-vectors at the peak of training on very wide data (l2, the primal forms), the
# method's state plus the certificate's (docs/benchmarks.md Sec. I gives each solver's list).
WIDE_BUDGETS = {"spdc": 7, "rda": 4, "newton": 8, "agm": 11}


@pytest.mark.parametrize("solver", sorted(WIDE_BUDGETS))
def test_very_wide_data_keeps_each_method_s_d_vectors(solver):
    """Newton: w, the gradient and CG's step, residual, direction, H d, preconditioner and
    preconditioned residual (every update in place, the penalty's weights scalars); AGM
    (infinite memory): x_0, x, z, G and the gradient's buffer, and a trial's u, G, z, x (the
    adaptive search keeps the old ones until a trial passes), plus the checkpoint's copies;
    SPDC and RDA their state and the certificate's. A temporary of length d anywhere in an
    iteration would show here."""
    d = 1 << 22
    X, y = very_wide(500, d, 5, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        peak = traced_peak(lambda: fastdual.train(X, y, loss="logistic", alpha=1e-2, tol=0.0,
                                                  max_epochs=4, solver=solver))
    assert peak <= (WIDE_BUDGETS[solver] + 0.2) * 8 * d
