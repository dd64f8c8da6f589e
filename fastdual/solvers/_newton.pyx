# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The per-sample loss passes of a primal Newton-CG iteration (fastdual/solvers/newton.py): the
loss's value / derivative / curvature per sample, and the line search's trial value. Its row
passes (margins, transpose and Hessian-vector products) are the shared ones of
fastdual/_core/rows.pyx.
"""
from fastdual._core.losses cimport Loss


def loss_terms(const double[::1] y, const double[::1] sample_weight, const double[::1] z,
               Loss loss, double[::1] slope, double[::1] curve, const double[::1] dz=None,
               double step=0.0):
    """sum_i c_i phi(y_i, m_i); slope_i = c_i phi'(m_i), curve_i = c_i phi''(m_i), at the
    margins m = z, or m_i = z_i + step dz_i with dz (a line search's trial: its terms are then
    the next iteration's, without a pass of their own once the trial is taken)."""
    cdef Py_ssize_t i, n = z.shape[0]
    cdef double total = 0.0, c, d1, d2, m
    cdef bint moved = dz is not None
    if moved and dz.shape[0] != n:
        raise ValueError(f"dz has {dz.shape[0]} entries for {n} margins")
    with nogil:
        for i in range(n):
            c = sample_weight[i]
            if c == 0.0:
                slope[i] = 0.0
                curve[i] = 0.0
                continue
            m = z[i] + step * dz[i] if moved else z[i]
            total += c * loss.value_derivatives(y[i], m, &d1, &d2)
            slope[i] = c * d1
            curve[i] = c * d2
    return total


def line_derivatives(const double[::1] y, const double[::1] sample_weight,
                     const double[::1] z, const double[::1] dz, double step, Loss loss):
    """(sum_i c_i phi'(m_i) dz_i, sum_i c_i phi''(m_i) dz_i^2) at m = z + step dz: the
    derivatives along a line search's direction of the data term, one pass over n."""
    cdef Py_ssize_t i, n = z.shape[0]
    cdef double first = 0.0, second = 0.0, c, d, m
    if dz.shape[0] != n:
        raise ValueError(f"dz has {dz.shape[0]} entries for {n} margins")
    with nogil:
        for i in range(n):
            c = sample_weight[i]
            d = dz[i]
            if c == 0.0 or d == 0.0:
                continue
            m = z[i] + step * d
            c *= d
            first += c * loss.derivative(y[i], m)
            second += c * d * loss.curvature(y[i], m)
    return first, second


def weighted_square_sum(const double[::1] weights, const double[::1] x):
    """sum_i weights_i x_i^2 (f'' along a line search's direction from the loss's curvature
    terms, c_i phi''(m_i)), one pass over n."""
    cdef Py_ssize_t i, n = x.shape[0]
    cdef double total = 0.0
    if weights.shape[0] != n:
        raise ValueError(f"weights has {weights.shape[0]} entries for {n}")
    with nogil:
        for i in range(n):
            total += weights[i] * x[i] * x[i]
    return total


def loss_sum(const double[::1] y, const double[::1] sample_weight, const double[::1] z,
             const double[::1] dz, double step, Loss loss):
    """sum_i c_i phi(y_i, z_i + step dz_i): the line search's trial value, one pass over n."""
    cdef Py_ssize_t i, n = z.shape[0]
    cdef double total = 0.0
    with nogil:
        for i in range(n):
            if sample_weight[i] != 0.0:
                total += sample_weight[i] * loss.value(y[i], z[i] + step * dz[i])
    return total


