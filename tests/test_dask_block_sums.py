"""The certificate's pass over one block (`_core/gap.pyx: block_sums`, what every fastdual.dask
round computes on every block) against numpy and exact rational arithmetic, on float32 and
float64 blocks, dense and CSR; and the round's helpers in fastdual.dask (auto_epochs is tested
in test_dask.py)."""
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from fastdual._core import gap as _gap
from fastdual.losses import make_loss

LOGISTIC = make_loss("logistic", {})[1]


def kernel_args(X):
    """(data, indices, indptr) as the kernels take them: CSR arrays, or the dense rows raveled
    with empty index arrays."""
    if sp.issparse(X):
        return X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)
    empty = np.empty(0, dtype=np.int32)
    return np.ascontiguousarray(X).ravel(), empty, empty


def logistic_reference(X, y, c, w, duals, bias, l2, n_total):
    """numpy's logistic sums and v-share, in float64 from X's values as stored."""
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
    Xd = np.hstack([Xd.astype(np.float64), np.full((Xd.shape[0], 1), bias)])
    z = Xd @ w
    loss = np.logaddexp(0.0, -y * z)
    b = y * duals                                    # in [0, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -(np.where(b > 0, b * np.log(b), 0.0) + np.where(b < 1, (1 - b) * np.log1p(-b),
                                                                     0.0))
    fenchel_young = loss - entropy + duals * z
    share = Xd.T @ (c * duals) / (l2 * n_total)
    margin_duals = y / (1.0 + np.exp(y * z))
    margin_share = Xd.T @ (c * margin_duals) / (l2 * n_total)
    return (c @ loss, c @ entropy, c @ fenchel_young), share, z, margin_duals, margin_share


def block(n, d, dtype, sparse, seed, bias=0.7):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.4] = 0.0
    X = X.astype(dtype)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    c = rng.uniform(0.5, 2.0, n)
    c[::7] = 0.0                                     # rows of weight 0 count for nothing
    duals = y * rng.uniform(0.0, 1.0, n)
    duals[::5] = 0.0
    w = rng.standard_normal(d + 1)
    return (sp.csr_matrix(X) if sparse else X), y, c, w, duals


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fma", [True, False])
def test_block_sums_are_numpys_with_the_mixs_margins(dtype, sparse, fma):
    """The sums, the share of v and, asked for, the margins, margin duals and their share, all
    numpy's to rounding, whichever product the exact share uses (fused or Dekker's)."""
    X, y, c, w, duals = block(60, 9, dtype, sparse, seed=1)
    l2, n_total, bias = 0.03, 150, 0.7
    sums, share, z, margin_duals, margin_share = logistic_reference(X, y, c, w, duals, bias,
                                                                    l2, n_total)
    try:
        _gap._set_exact_fma(fma)
        v, mv = np.full(10, 0.25), np.full(10, -0.5)   # (the shares are added to what is there)
        margins, md = np.empty(60), np.empty(60)
        got = _gap.block_sums(*kernel_args(X), 60, 9, bias, y, c, w, duals, l2, n_total,
                              LOGISTIC, v, False, margins, md, mv)
        plain = np.full(10, 0.25)
        again = _gap.block_sums(*kernel_args(X), 60, 9, bias, y, c, w, duals, l2, n_total,
                                LOGISTIC, plain)
    finally:
        _gap._set_exact_fma(True)
    np.testing.assert_allclose(got, sums, rtol=1e-12)
    np.testing.assert_allclose(v - 0.25, share, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(margins, z, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(md, margin_duals, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(mv + 0.5, margin_share, rtol=1e-12, atol=1e-13)
    # without the margins: the same certificate and share, bit for bit
    assert again == got
    np.testing.assert_array_equal(plain, v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sparse", [False, True])
def test_the_share_is_exact_where_its_terms_cancel_on_both_product_paths(dtype, sparse):
    """Duals whose weighted column sums nearly vanish (a million-fold cancellation): the share
    of v is the exact rational sum to a few eps, with the fused products and with Dekker's,
    and the two give the same bits."""
    rng = np.random.default_rng(4)
    n, d = 400, 6
    X = (rng.standard_normal((n, d)) + 30.0).astype(dtype)
    X[rng.random(X.shape) < 0.2] = 0.0
    c = rng.uniform(0.5, 2.0, n)
    bias = 1.7
    columns = np.hstack([X.astype(float), np.full((n, 1), bias)]) * c[:, None]
    a = rng.standard_normal(n)
    a -= columns @ np.linalg.lstsq(columns, a, rcond=None)[0]
    a += 1e-5 * rng.standard_normal(n)
    y = np.ones(n)
    squared = make_loss("squared", {})[1]
    Xk = sp.csr_matrix(X) if sparse else X
    shares = []
    for fma in (True, False):
        try:
            _gap._set_exact_fma(fma)
            v = np.zeros(d + 1)
            _gap.block_sums(*kernel_args(Xk), n, d, bias, y, c, np.zeros(d + 1), a, 1e-3, n,
                            squared, v)
        finally:
            _gap._set_exact_fma(True)
        shares.append(v)
    np.testing.assert_array_equal(shares[0], shares[1])
    cf, af = [Fraction(float(t)) for t in c], [Fraction(float(t)) for t in a]
    cols = [[Fraction(float(x)) for x in X[:, j]] for j in range(d)] + [[Fraction(bias)] * n]
    scale = Fraction(1e-3) * n
    exact = [sum(ci * ai * x for ci, ai, x in zip(cf, af, col)) / scale for col in cols]
    size = [sum(abs(ci * ai * x) for ci, ai, x in zip(cf, af, col)) / scale for col in cols]
    assert min(float(m / abs(e)) for m, e in zip(size, exact)) > 1e5      # they cancel
    eps = np.finfo(float).eps
    for got, e in zip(shares[0], exact):
        assert abs(Fraction(float(got)) - e) <= 5 * eps * abs(e)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), d=st.integers(1, 12),
       dtype=st.sampled_from([np.float32, np.float64]), sparse=st.booleans(),
       shift=st.integers(0, 7))
def test_any_workspace_gives_the_same_bits(seed, n, d, dtype, sparse, shift):
    """A workspace of its own, one passed in at any 8-byte offset (aligned or not), and none:
    the same numbers, bit for bit (the pass places its slots itself)."""
    X, y, c, w, duals = block(n, d, dtype, sparse, seed)
    results = []
    for workspace in (None, np.empty(4 * (d + 1) + 8 + shift)[shift:],
                      np.full(4 * (d + 1) + 8, np.nan)):
        v, mv, margins, md = np.zeros(d + 1), np.zeros(d + 1), np.empty(n), np.empty(n)
        sums = _gap.block_sums(*kernel_args(X), n, d, 0.7, y, c, w, duals, 0.03, 2 * n,
                               LOGISTIC, v, False, margins, md, mv, workspace)
        results.append((sums, v, mv, margins, md))
    for other in results[1:]:
        assert other[0] == results[0][0]
        for a, b in zip(other[1:], results[0][1:]):
            np.testing.assert_array_equal(a, b)


def test_bad_block_sums_arguments_are_refused_by_name():
    X, y, c, w, duals = block(10, 3, np.float64, True, seed=2)
    args = kernel_args(X)
    with pytest.raises(ValueError, match="workspace must have 4 \\(n_features \\+ 1\\) \\+ 8"):
        _gap.block_sums(*args, 10, 3, 0.0, y, c, w, duals, 0.1, 10, LOGISTIC, np.zeros(4),
                        workspace=np.empty(16))
    with pytest.raises(ValueError, match="w and v must have n_features \\+ 1 = 4"):
        _gap.block_sums(*args, 10, 3, 0.0, y, c, w[:3], duals, 0.1, 10, LOGISTIC, np.zeros(4))
    with pytest.raises(ValueError, match="margin_v needs 4 entries"):
        _gap.block_sums(*args, 10, 3, 0.0, y, c, w, duals, 0.1, 10, LOGISTIC, np.zeros(4),
                        margin_v=np.zeros(4))
    with pytest.raises(ValueError, match="n_rows = 10"):
        _gap.block_sums(*args, 10, 3, 0.0, y[:5], c, w, duals, 0.1, 10, LOGISTIC, np.zeros(4))
