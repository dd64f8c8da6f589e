# Prox-SDCA's dual coordinate step (seed 000), shared by the sequential kernel (_sdca.pyx) and
# the parallel one (_sdca_parallel.pyx): one definition of the arithmetic both run.
from libc.math cimport fabs

from fastdual._core.losses cimport Loss, slope_of, step_of

cdef enum:
    OPTION_I = 1        # sdca.OPTION_CODES: exact maximisation along the coordinate
    OPTION_IV = 4       # the step toward the margin dual, scaled by the sample's gap


cdef inline double dual_step(Loss loss, int option, double y, double z, double a_old, double q,
                             double q_max) noexcept nogil:
    """The sample's new dual from its margin z and current dual a_old: Option I maximises the
    dual along the coordinate (curvature q = c ||x||^2 / (l2 n)); Option IV moves toward
    -phi'(z) by the fraction s in [0, 1] of seed 000's Option IV (q_max the largest q)."""
    cdef double u, du, gap_i, s
    if option == OPTION_I:
        return step_of(loss, y, z, a_old, q)
    u = loss.dual_from_margin(y, z)
    du = u - a_old
    if du == 0.0:
        return a_old
    gap_i = (loss.value(y, z) - loss.dual_value(y, a_old) + z * a_old
             + 0.5 * loss.gamma * du * du)
    s = gap_i / (du * du * (loss.gamma + q_max))
    s = 0.0 if s < 0.0 else (1.0 if s > 1.0 else s)
    return a_old + s * du


cdef inline bint shrinks(Loss loss, double c, double y, double z, double a_old, double delta,
                         double threshold, double* max_slope) noexcept nogil:
    """LIBLINEAR's shrink test of a step (both kernels): a sample whose dual the step left on
    its bound (delta == 0) while the projected slope c |D'_i| pushes it outward by more than
    threshold (the previous epoch's largest) leaves the active set; a step that moved raises
    max_slope to its slope."""
    cdef double slope = c * fabs(slope_of(loss, y, z, a_old))
    if delta == 0.0:
        return slope > threshold
    if slope > max_slope[0]:
        max_slope[0] = slope
    return False
