# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The per-sample passes of AGM's forms (seed 004; fastdual/solvers/agm_forms.py) that the row
passes of fastdual/_core/rows.pyx (margins, transpose_times) do not cover: the smoothed loss of the
primal form (Sec. 5.1, eq. 53 with d2 = a^2/2, through the loss contract's conjugate prox) and
the smooth part of the dual form's objective (eq. 39/41) with its gradient. docs/math.md Sec. 4h.
"""
from fastdual._core.losses cimport Loss, step_of, slope_of


def smoothed_loss(const double[::1] y, const double[::1] sample_weight, const double[::1] z,
                  Loss loss, double mu, double[::1] duals, const double[::1] weights=None):
    """sum_i c_i phi_mu(y_i, z_i), and duals_i = -phi_mu'(z_i) (the maximiser a_i of eq. 53).

    phi_mu(z) = max_a -phi*(-a) - z a - mu_i/2 a^2: with mu = 0 the loss itself (smooth losses,
    a = -phi'(z)); with mu > 0 the maximiser is the loss's conjugate prox step from a = 0 with
    curvature mu_i = mu weights_i (weights: the prox-function of Sec. 5.6; None: all 1),
    phi_mu'(z) = -a. Pass duals of length 0 for the value alone."""
    cdef Py_ssize_t i, n = z.shape[0]
    cdef bint want = duals.shape[0] > 0
    cdef bint weighted = weights is not None
    cdef double total = 0.0, a, d1, d2, value, mu_i = mu
    with nogil:
        for i in range(n):
            if mu == 0.0:
                value = loss.value_derivatives(y[i], z[i], &d1, &d2)
                a = -d1
            else:
                if weighted:
                    mu_i = mu * weights[i]
                a = step_of(loss, y[i], z[i], 0.0, mu_i)
                value = loss.dual_value(y[i], a) - z[i] * a - 0.5 * mu_i * a * a
            if sample_weight[i] != 0.0:
                total += sample_weight[i] * value
            if want:
                duals[i] = a
    return total


def dual_terms(const double[::1] y, const double[::1] sample_weight, const double[::1] a,
               const double[::1] z, Loss loss, double[::1] slope):
    """sum_i c_i (-phi*(-a_i)); with z (margins of w(a)) of length n, also
    slope_i = d/da_i [-phi*(-a_i) - z_i a_i] (the dual form's gradient is -c_i slope_i / n)."""
    cdef Py_ssize_t i, n = a.shape[0]
    cdef bint want = z.shape[0] > 0
    cdef double total = 0.0
    with nogil:
        for i in range(n):
            if sample_weight[i] != 0.0:
                total += sample_weight[i] * loss.dual_value(y[i], a[i])
            if want:
                slope[i] = slope_of(loss, y[i], z[i], a[i])
    return total
