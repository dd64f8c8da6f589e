# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The per-sample loss passes of a primal Newton-CG iteration (fastdual/solvers/newton.py): the
loss's value / derivative / curvature per sample, and the line search's trial value. Its row
passes (margins, transpose and Hessian-vector products) are the shared ones of
fastdual/_core/rows.pyx.
"""
from fastdual._core.losses cimport Loss


def loss_terms(const double[::1] y, const double[::1] sample_weight, const double[::1] z,
               Loss loss, double[::1] slope, double[::1] curve):
    """sum_i c_i phi(y_i, z_i); slope_i = c_i phi'(z_i), curve_i = c_i phi''(z_i)."""
    cdef Py_ssize_t i, n = z.shape[0]
    cdef double total = 0.0, c, d1, d2
    with nogil:
        for i in range(n):
            c = sample_weight[i]
            if c == 0.0:
                slope[i] = 0.0
                curve[i] = 0.0
                continue
            total += c * loss.value_derivatives(y[i], z[i], &d1, &d2)
            slope[i] = c * d1
            curve[i] = c * d2
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


