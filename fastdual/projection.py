"""Exact linear-time projections of seed 004, Sec. 5.5 (derivation: docs/projection.md).

``project_box_hyperplane``   problem (64): a diagonal quadratic over a box and one hyperplane, the
                             inner step of accelerated gradient on the SVM dual with a bias.
``project_elastic_net_ball`` problems (67)-(68): Euclidean projection onto
                             {w : gamma ||w||_1 + 1/2 ||w||^2 <= r}.

Both are deterministic O(n) (median selection over the kinks of a monotone one-dimensional
function, seed 004 Algorithm 8), run without the GIL and never modify their inputs (unless an input
is also passed as ``out``).  This module validates and broadcasts; the work is in ``_core/projection.pyx``.
"""
import numbers

import numpy as np

from fastdual._core import projection as _projection
from fastdual._core.projection import Status

__all__ = ["project_box_hyperplane", "project_elastic_net_ball"]


def _vector(name, value):
    """A 1-D C-contiguous float64 view of `value` (copied only when needed)."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float64)


def _parameter(name, value, n):
    """`value` as a float64 array of length n or 1 (a scalar broadcasts to every coordinate)."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real scalar or array, got dtype {arr.dtype}")
    if arr.ndim == 0:
        # always a private copy: a scalar is read for every coordinate, so it must not alias out
        return np.array(arr.reshape(1), dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be a scalar or have shape ({n},) like m, got shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float64)


def _scalar(name, value):
    """A real number (int, float, numpy scalar or 0-d array; not bool) as a Python float."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        return float(value)
    raise TypeError(f"{name} must be a real number, got {type(value).__name__}")


def _output(out, n):
    if out is None:
        return np.empty(n, dtype=np.float64)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
    if out.dtype != np.float64:
        raise TypeError(f"out must have dtype float64, got {out.dtype}")
    if out.shape != (n,):
        raise ValueError(f"out must have shape ({n},), got {out.shape}")
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError("out must be writeable")
    return out


def _unalias(arr, out):
    """Copy `arr` if it overlaps `out` other than as the very same buffer.

    The kernel reads every input at index i before writing out[i] and never reads an index
    again afterwards, so out may *be* an input (in-place projection); a partial overlap would
    let a write clobber an entry still to be read."""
    if arr.shape[0] > 1 and np.may_share_memory(arr, out):
        same = (arr.__array_interface__["data"][0] == out.__array_interface__["data"][0]
                and arr.shape == out.shape)
        if not same:
            return arr.copy()
    return arr


_BOX_ERRORS = {
    Status.ERR_M_NOT_FINITE: "m must be finite; m[{i}] is not",
    Status.ERR_LOWER_NAN: "lower must not contain NaN; lower[{i}] is NaN",
    Status.ERR_UPPER_NAN: "upper must not contain NaN; upper[{i}] is NaN",
    Status.ERR_LOWER_GT_UPPER: "lower must be <= upper; lower[{i}] > upper[{i}]",
    Status.ERR_SIGMA_NOT_FINITE: "sigma must be finite; sigma[{i}] is not",
    Status.ERR_D_ZERO: "d must be nonzero; d[{i}] == 0 (the objective would not fix coordinate {i})",
    Status.ERR_D_NOT_FINITE: "d must be finite; d[{i}] is not",
    Status.ERR_LOWER_POS_INF: "lower must be < +inf; lower[{i}] == +inf leaves no feasible point",
    Status.ERR_UPPER_NEG_INF: "upper must be > -inf; upper[{i}] == -inf leaves no feasible point",
}


def project_box_hyperplane(m, lower, upper, sigma, z, d=None, out=None):
    """Exact solution of seed 004 problem (64), in O(n) time.

    minimize    1/2 sum_i d_i^2 (a_i - m_i)^2
    subject to  lower_i <= a_i <= upper_i,   sum_i sigma_i a_i = z.

    Parameters
    ----------
    m : array_like, shape (n,)
        Point to project (finite).
    lower, upper : float or array_like, shape (n,)
        Box; scalars broadcast.  -inf / +inf are allowed (the objective keeps the problem
        bounded); lower <= upper, and lower == upper fixes the coordinate.
    sigma : float or array_like, shape (n,)
        Hyperplane normal (finite, any signs).  Coordinates with sigma_i == 0 are not coupled
        and get clip(m_i, lower_i, upper_i).
    z : float
        Hyperplane offset; must lie in the feasible range
        [sum_i min(sigma_i lower_i, sigma_i upper_i), sum_i max(...)], else ValueError.
    d : float or array_like, shape (n,), optional
        Per-coordinate weights (default 1); nonzero and finite, only d_i^2 matters.
    out : ndarray, shape (n,), float64, C-contiguous, optional
        Where to write the result; may be `m` itself for an in-place projection.

    Returns
    -------
    a : ndarray, shape (n,), float64 (`out` if given).

    Raises
    ------
    ValueError
        naming the argument: non-finite m, NaN or empty (lower > upper, lower = +inf,
        upper = -inf) box, non-finite sigma, d == 0 or non-finite, wrong shapes, non-finite z;
        z outside the feasible range (the message states the range); a multiplier that float64
        cannot represent (sigma_i^2 / d_i^2 spanning more than its exponent range; `out` is then
        left with an unspecified content).
    TypeError
        for non-numeric inputs or an `out` that is not a float64 ndarray.
    """
    m = _vector("m", m)
    n = m.shape[0]
    lower = _parameter("lower", lower, n)
    upper = _parameter("upper", upper, n)
    sigma = _parameter("sigma", sigma, n)
    d = np.ones(1) if d is None else _parameter("d", d, n)
    z = _scalar("z", z)
    if not np.isfinite(z):
        raise ValueError(f"z must be finite, got {z}")
    out = _output(out, n)
    m, lower, upper, sigma, d = (_unalias(arr, out) for arr in (m, lower, upper, sigma, d))

    status, bad, zmin, zmax, _, residual = _projection.box_hyperplane(
        m, lower, upper, sigma, d, z, out)
    if status == Status.OK:
        return out
    if status == Status.ERR_INFEASIBLE:
        raise ValueError(
            f"z = {z!r} is infeasible: over the box, sum(sigma * a) ranges over "
            f"[{zmin!r}, {zmax!r}] (the feasible range of z)")
    if status == Status.ERR_NO_MEMORY:
        raise MemoryError(f"cannot allocate the work buffers for n = {n}")
    if status == Status.ERR_ILL_CONDITIONED:
        raise ValueError(
            "sigma and d span too many orders of magnitude for float64: the multiplier of the "
            f"hyperplane is not representable (residual sum(sigma * a) - z = {residual!r}); "
            "rescale the coordinates")
    raise ValueError(_BOX_ERRORS[status].format(i=bad))


def project_elastic_net_ball(g, gamma, r, out=None):
    """Euclidean projection onto the elastic-net ball, seed 004 problems (67)-(68), in O(n) time.

    minimize 1/2 ||w - g||^2   subject to   gamma ||w||_1 + 1/2 ||w||_2^2 <= r.

    The solution is eq. (69), w_i = sign(g_i) max(|g_i| - lambda gamma, 0) / (1 + lambda), with
    lambda = 0 when g is inside the ball and otherwise the root of the seed's h(lambda).

    Parameters
    ----------
    g : array_like, shape (n,)
        Point to project (finite).
    gamma : float
        Weight of the l1 term, finite and >= 0 (0 gives the l2 ball of radius sqrt(2 r)).
    r : float
        Radius, finite and >= 0; r == 0 is the ball {0}.
    out : ndarray, shape (n,), float64, C-contiguous, optional
        Where to write the result; may be `g` itself.
    """
    g = _vector("g", g)
    n = g.shape[0]
    gamma = _scalar("gamma", gamma)
    r = _scalar("r", r)
    if not (np.isfinite(gamma) and gamma >= 0.0):
        raise ValueError(f"gamma must be finite and >= 0, got {gamma}")
    if not (np.isfinite(r) and r >= 0.0):
        raise ValueError(f"r must be finite and >= 0 (r = 0 is the ball {{0}}), got {r}")
    out = _output(out, n)
    g = _unalias(g, out)
    status, bad, _ = _projection.elastic_net_ball(g, gamma, r, out)
    if status == Status.OK:
        return out
    if status == Status.ERR_NO_MEMORY:
        raise MemoryError(f"cannot allocate the work buffer for n = {n}")
    raise ValueError(f"g must be finite; g[{bad}] is not")
