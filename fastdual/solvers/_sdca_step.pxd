# Prox-SDCA's dual coordinate step (seed 000), shared by the sequential kernel (_sdca.pyx) and
# the parallel one (_sdca_parallel.pyx): one definition of the arithmetic both run.
from libc.math cimport fabs

from fastdual._core.losses cimport (BOX_QUADRATIC, LOGISTIC, STEP_STATE_SIZE, Loss,
                                    logistic_step, slope_of, step_of)

cdef enum:
    OPTION_I = 1        # sdca.OPTION_CODES: exact maximisation along the coordinate
    OPTION_IV = 4       # the step toward the margin dual, scaled by the sample's gap


cdef inline void check_step_state(Loss loss, double[::1] step_state, Py_ssize_t n_samples):
    """The kernels' check of the step state they are given: none, or the loss's for n_samples."""
    if step_state is None or step_state.shape[0] == 0:
        return
    if (loss.step_state != STEP_STATE_SIZE
            or step_state.shape[0] != STEP_STATE_SIZE * n_samples):
        raise ValueError(f"step_state must hold the loss's step_state ({loss.step_state}) "
                         f"numbers per sample for {n_samples} samples, got "
                         f"{step_state.shape[0]}")


cdef inline double dual_step(Loss loss, int option, double y, double z, double a_old, double q,
                             double q_max, double* state) noexcept nogil:
    """The sample's new dual from its margin z and current dual a_old: Option I maximises the
    dual along the coordinate (curvature q = c ||x||^2 / (l2 n)); Option IV moves toward
    -phi'(z) by the fraction s in [0, 1] of seed 000's Option IV (q_max the largest q).
    state: NULL, or the sample's slot of the loss's step state (losses.pxd, logistic_step)."""
    cdef double u, du, gap_i, s
    if option == OPTION_I:
        if loss.family == LOGISTIC:
            return logistic_step(y, z, a_old, q, state)
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
                         double threshold_up, double threshold_down, double* max_up,
                         double* max_down) noexcept nogil:
    """LIBLINEAR's shrink test of a step (both kernels): a sample whose dual the step left on
    its bound (delta == 0) while the projected slope pushes it outward by more than the
    previous epoch's largest push the same way leaves the active set; a step that moved raises
    that epoch's largest push its way. The pushes are signed in beta = a y for the box-quadratic
    family (hinge, smooth hinge, squared hinge): up against beta's upper bound, down against 0,
    each with its own threshold as LIBLINEAR's PGmax and PGmin. Other losses use one threshold,
    threshold_up, for the slope's magnitude."""
    cdef double slope = c * slope_of(loss, y, z, a_old)
    if loss.family == BOX_QUADRATIC:
        slope *= y
    else:
        slope = fabs(slope)
    if delta == 0.0:
        if slope >= 0.0:
            return slope > threshold_up
        return -slope > threshold_down
    if slope > max_up[0]:
        max_up[0] = slope
    elif -slope > max_down[0]:
        max_down[0] = -slope
    return False
