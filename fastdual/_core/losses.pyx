# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Losses behind the interface of losses.pxd: value, derivative, conjugate, its domain and the
closed-form (or safeguarded Newton) proximal step of the conjugate. Derivations: docs/math.md,
Sec. "Losses"."""
import numpy as np
from libc.math cimport exp, log, log1p, fabs, INFINITY, NAN

from fastdual._core.rows cimport soft_threshold


cdef inline double _clip(double x, double lo, double hi) noexcept nogil:
    return lo if x < lo else (hi if x > hi else x)


cdef inline double _linear_step(double slope_at_zero_q, double a, double q,
                                double lo, double hi) noexcept nogil:
    """Maximiser over [lo, hi] of s (a' - a) - q/2 (a' - a)^2; q = 0 means a row of zeros."""
    if q > 0.0:
        return _clip(a + slope_at_zero_q / q, lo, hi)
    if slope_at_zero_q > 0.0:
        return hi
    if slope_at_zero_q < 0.0:
        return lo
    return a


cdef class Loss:
    """Base class; the Python methods evaluate the nogil methods elementwise (tests, certificates)."""

    cdef double value(self, double y, double z) noexcept nogil:
        return NAN

    cdef double derivative(self, double y, double z) noexcept nogil:
        return NAN

    cdef double curvature(self, double y, double z) noexcept nogil:
        return NAN

    cdef double value_derivatives(self, double y, double z, double* d1,
                                  double* d2) noexcept nogil:
        d1[0] = self.derivative(y, z)
        d2[0] = self.curvature(y, z)
        return self.value(y, z)

    cdef double dual_value(self, double y, double a) noexcept nogil:
        return NAN

    cdef double dual_from_margin(self, double y, double z) noexcept nogil:
        return NAN

    cdef double conjugate_prox(self, double y, double z, double a, double q) noexcept nogil:
        return NAN

    cdef double dual_slope(self, double y, double z, double a) noexcept nogil:
        return NAN

    cdef double dual_lower(self, double y) noexcept nogil:
        return -INFINITY

    cdef double dual_upper(self, double y) noexcept nogil:
        return INFINITY

    # -- Python face -------------------------------------------------------------------------
    cdef _elementwise(self, int which, first, second):
        """Evaluate one of the nogil methods over broadcast arrays (tests, certificates)."""
        cdef const double[::1] yy, xx
        cdef double[::1] out
        cdef Py_ssize_t i
        yy, xx, out = _broadcast2(first, second)
        with nogil:
            for i in range(out.shape[0]):
                if which == 0:
                    out[i] = self.value(yy[i], xx[i])
                elif which == 1:
                    out[i] = self.derivative(yy[i], xx[i])
                elif which == 2:
                    out[i] = self.dual_value(yy[i], xx[i])
                elif which == 3:
                    out[i] = self.dual_from_margin(yy[i], xx[i])
                elif which == 4:
                    out[i] = self.dual_lower(yy[i])
                elif which == 5:
                    out[i] = self.dual_upper(yy[i])
                else:
                    out[i] = self.curvature(yy[i], xx[i])
        return np.asarray(out)

    def values(self, y, z):
        """phi(y_i, z_i) elementwise."""
        return self._elementwise(0, y, z)

    def derivatives(self, y, z):
        """A (sub)derivative of phi(y_i, .) at z_i elementwise."""
        return self._elementwise(1, y, z)

    def dual_values(self, y, a):
        """-phi*(-a_i) elementwise (-inf where a_i is outside the domain)."""
        return self._elementwise(2, y, a)

    def duals_from_margins(self, y, z):
        """The feasible dual point a_i = -phi'(y_i, z_i) elementwise."""
        return self._elementwise(3, y, z)

    def curvatures(self, y, z):
        """phi''(y_i, z_i) elementwise (the generalised second derivative; NaN without one)."""
        return self._elementwise(6, y, z)

    def dual_bounds(self, y):
        """(lower, upper): the domain of -phi*(-a) for each target y_i (infinite where open)."""
        return self._elementwise(4, y, 0.0), self._elementwise(5, y, 0.0)

    def step(self, double y, double z, double a, double q, double[::1] state=None):
        """The proximal step of the conjugate (SDCA Option I), through the kernels' own path.
        state: the sample's slot of SDCA's step state (step_state numbers, updated in place),
        as SDCA's kernels pass it; None as the kernels without one."""
        if state is None:
            return step_of(self, y, z, a, q)
        if state.shape[0] != self.step_state or self.step_state == 0:
            raise ValueError(f"state must hold step_state = {self.step_state} numbers "
                             f"(> 0), got {state.shape[0]}")
        return logistic_step(y, z, a, q, &state[0])

    @property
    def step_state(self):
        """How many numbers per sample SDCA's step keeps between visits (the logistic step's
        kept logit: losses.pxd, logistic_step); 0 for the closed-form steps."""
        return STEP_STATE_SIZE if self.family == LOGISTIC else 0

    def slope(self, double y, double z, double a):
        """d/da [-phi*(-a) - z a], through the kernels' own path."""
        return slope_of(self, y, z, a)


def new_step_state(Loss loss, Py_ssize_t n_samples):
    """An empty store of SDCA's step state for n_samples (NaN: nothing kept yet, every
    sample's first step starts afresh); an empty array for a loss that keeps none."""
    return np.full(loss.step_state * n_samples, np.nan)


def _broadcast2(first, second):
    f, s = np.broadcast_arrays(np.asarray(first, dtype=np.float64),
                               np.asarray(second, dtype=np.float64))
    f = np.ascontiguousarray(f).ravel()
    s = np.ascontiguousarray(s).ravel()
    return f, s, np.empty(f.shape[0], dtype=np.float64)


cdef class BoxQuadratic(Loss):
    """The family -phi*(-a) = beta - gamma/2 beta^2 on beta = a y in [0, upper]: every method of
    the conjugate comes from the two fields gamma and upper, the ones the kernels inline."""

    cdef double dual_value(self, double y, double a) noexcept nogil:
        cdef double beta = a * y
        if beta < 0.0 or beta > self.upper:
            return -INFINITY
        return beta - 0.5 * self.gamma * beta * beta

    cdef double dual_from_margin(self, double y, double z) noexcept nogil:
        return -self.derivative(y, z)

    cdef double conjugate_prox(self, double y, double z, double a, double q) noexcept nogil:
        return box_quadratic_step(y, z, a, q, self.gamma, self.upper)

    cdef double dual_slope(self, double y, double z, double a) noexcept nogil:
        return box_quadratic_slope(y, z, a, self.gamma)

    cdef double dual_lower(self, double y) noexcept nogil:
        return 0.0 if y > 0.0 else -self.upper

    cdef double dual_upper(self, double y) noexcept nogil:
        return self.upper if y > 0.0 else 0.0


cdef class Hinge(BoxQuadratic):
    """phi = max(0, 1 - yz); -phi*(-a) = beta on beta = a y in [0, 1]."""

    def __cinit__(self):
        self.gamma = 0.0
        self.has_box = True
        self.family = BOX_QUADRATIC
        self.upper = 1.0

    cdef double value(self, double y, double z) noexcept nogil:
        cdef double r = 1.0 - y * z
        return r if r > 0.0 else 0.0

    cdef double derivative(self, double y, double z) noexcept nogil:
        return -y if y * z < 1.0 else 0.0


cdef class SmoothHinge(BoxQuadratic):
    """Hinge smoothed by gamma: quadratic on 1 - gamma < yz < 1; -phi*(-a) = beta - gamma/2 beta^2."""

    def __init__(self, double gamma=1.0):
        # Finite: at gamma = inf the loss is 0 where it is quadratic and -inf past it.
        if not (0.0 < gamma < INFINITY and 1.0 / gamma < INFINITY):
            raise ValueError(f"gamma must be > 0 and finite, with 1/gamma finite, for "
                             f"smooth_hinge, got {gamma!r}")
        self.gamma = gamma
        self.inv_gamma = 1.0 / gamma
        self.has_box = True
        self.family = BOX_QUADRATIC
        self.upper = 1.0

    cdef double value(self, double y, double z) noexcept nogil:
        cdef double r = 1.0 - y * z
        if r <= 0.0:
            return 0.0
        if r >= self.gamma:
            return r - 0.5 * self.gamma
        return 0.5 * r * (r / self.gamma)

    cdef double derivative(self, double y, double z) noexcept nogil:
        return -y * _clip((1.0 - y * z) * self.inv_gamma, 0.0, 1.0)

    cdef double curvature(self, double y, double z) noexcept nogil:
        cdef double r = 1.0 - y * z
        return self.inv_gamma if 0.0 < r < self.gamma else 0.0

    cdef double value_derivatives(self, double y, double z, double* d1,
                                  double* d2) noexcept nogil:
        # (one call for Newton's passes: the bits of value, derivative and curvature)
        cdef double r = 1.0 - y * z
        d1[0] = -y * _clip(r * self.inv_gamma, 0.0, 1.0)
        d2[0] = self.inv_gamma if 0.0 < r < self.gamma else 0.0
        if r <= 0.0:
            return 0.0
        if r >= self.gamma:
            return r - 0.5 * self.gamma
        return 0.5 * r * (r / self.gamma)


cdef class SquaredHinge(BoxQuadratic):
    """phi = max(0, 1 - yz)^2 (2-smooth); -phi*(-a) = beta - beta^2 / 4 on beta >= 0."""

    def __cinit__(self):
        self.gamma = 0.5
        self.has_box = True
        self.family = BOX_QUADRATIC
        self.upper = INFINITY

    cdef double value(self, double y, double z) noexcept nogil:
        cdef double r = 1.0 - y * z
        return r * r if r > 0.0 else 0.0

    cdef double derivative(self, double y, double z) noexcept nogil:
        cdef double r = 1.0 - y * z
        return -2.0 * y * r if r > 0.0 else 0.0

    cdef double curvature(self, double y, double z) noexcept nogil:
        return 2.0 if y * z < 1.0 else 0.0


cdef class Logistic(Loss):
    """phi = log(1 + exp(-yz)) (1/4-smooth); -phi*(-a) = binary entropy of beta in [0, 1]."""

    def __cinit__(self):
        self.gamma = 4.0
        self.family = LOGISTIC

    cdef double value(self, double y, double z) noexcept nogil:
        cdef double u = y * z
        if u > 0.0:
            return log1p(exp(-u))
        return -u + log1p(exp(u))

    cdef double derivative(self, double y, double z) noexcept nogil:
        return -y * sigmoid(-y * z)

    cdef double curvature(self, double y, double z) noexcept nogil:
        cdef double s = sigmoid(-y * z)
        return s * (1.0 - s)

    cdef double value_derivatives(self, double y, double z, double* d1,
                                  double* d2) noexcept nogil:
        # One exp: e = exp(-|u|), u = yz; s = sigmoid(-u) = e / (1 + e) for u > 0, 1 / (1 + e)
        # otherwise; log(1 + exp(-u)) = log1p(e) + max(-u, 0).
        cdef double u = y * z
        cdef double e = exp(-fabs(u))
        cdef double s = e / (1.0 + e) if u > 0.0 else 1.0 / (1.0 + e)
        d1[0] = -y * s
        d2[0] = s * (1.0 - s)
        return log1p(e) + (-u if u < 0.0 else 0.0)

    cdef double dual_value(self, double y, double a) noexcept nogil:
        cdef double beta = a * y
        cdef double h = 0.0
        if beta < 0.0 or beta > 1.0:
            return -INFINITY
        if beta > 0.0:
            h -= beta * log(beta)
        if beta < 1.0:
            h -= (1.0 - beta) * log1p(-beta)
        return h

    cdef double dual_from_margin(self, double y, double z) noexcept nogil:
        return y * sigmoid(-y * z)

    cdef double conjugate_prox(self, double y, double z, double a, double q) noexcept nogil:
        return logistic_step(y, z, a, q, NULL)

    cdef double dual_slope(self, double y, double z, double a) noexcept nogil:
        cdef double beta = a * y
        if beta <= 0.0:
            return INFINITY * y
        if beta >= 1.0:
            return -INFINITY * y
        return y * (log1p(-beta) - log(beta)) - z

    cdef double dual_lower(self, double y) noexcept nogil:
        return 0.0 if y > 0.0 else -1.0

    cdef double dual_upper(self, double y) noexcept nogil:
        return 1.0 if y > 0.0 else 0.0


cdef class Squared(Loss):
    """phi = (z - y)^2 / 2 (1-smooth); -phi*(-a) = a y - a^2 / 2."""

    def __cinit__(self):
        self.gamma = 1.0
        self.family = QUADRATIC

    cdef double value(self, double y, double z) noexcept nogil:
        return 0.5 * (z - y) * (z - y)

    cdef double derivative(self, double y, double z) noexcept nogil:
        return z - y

    cdef double curvature(self, double y, double z) noexcept nogil:
        return 1.0

    cdef double dual_value(self, double y, double a) noexcept nogil:
        return a * y - 0.5 * a * a

    cdef double dual_from_margin(self, double y, double z) noexcept nogil:
        return y - z

    cdef double conjugate_prox(self, double y, double z, double a, double q) noexcept nogil:
        return quadratic_step(y, z, a, q)

    cdef double dual_slope(self, double y, double z, double a) noexcept nogil:
        return y - a - z


cdef class Absolute(Loss):
    """phi = |z - y|; -phi*(-a) = a y on a in [-1, 1]."""

    def __cinit__(self):
        self.gamma = 0.0
        self.has_box = True

    cdef double value(self, double y, double z) noexcept nogil:
        return fabs(z - y)

    cdef double derivative(self, double y, double z) noexcept nogil:
        return 1.0 if z > y else (-1.0 if z < y else 0.0)

    cdef double dual_value(self, double y, double a) noexcept nogil:
        if a < -1.0 or a > 1.0:
            return -INFINITY
        return a * y

    cdef double dual_from_margin(self, double y, double z) noexcept nogil:
        return -self.derivative(y, z)

    cdef double conjugate_prox(self, double y, double z, double a, double q) noexcept nogil:
        return _linear_step(y - z, a, q, -1.0, 1.0)

    cdef double dual_slope(self, double y, double z, double a) noexcept nogil:
        return y - z

    cdef double dual_lower(self, double y) noexcept nogil:
        return -1.0

    cdef double dual_upper(self, double y) noexcept nogil:
        return 1.0


def _checked_epsilon(double epsilon, str loss):
    """epsilon >= 0 and finite: at epsilon = inf the loss is 0 everywhere and its conjugate
    inf * 0 at a = 0."""
    if not 0.0 <= epsilon < INFINITY:
        raise ValueError(f"epsilon must be >= 0 and finite for {loss}, got {epsilon!r}")
    return epsilon


cdef class EpsilonInsensitive(Loss):
    """phi = max(0, |z - y| - epsilon); -phi*(-a) = a y - epsilon |a| on a in [-1, 1]."""

    def __init__(self, double epsilon=0.1):
        self.epsilon = _checked_epsilon(epsilon, "epsilon_insensitive")
        self.gamma = 0.0
        self.has_box = True

    cdef double value(self, double y, double z) noexcept nogil:
        cdef double r = fabs(z - y) - self.epsilon
        return r if r > 0.0 else 0.0

    cdef double derivative(self, double y, double z) noexcept nogil:
        if z - y > self.epsilon:
            return 1.0
        if y - z > self.epsilon:
            return -1.0
        return 0.0

    cdef double dual_value(self, double y, double a) noexcept nogil:
        if a < -1.0 or a > 1.0:
            return -INFINITY
        return a * y - self.epsilon * fabs(a)

    cdef double dual_from_margin(self, double y, double z) noexcept nogil:
        return -self.derivative(y, z)

    cdef double conjugate_prox(self, double y, double z, double a, double q) noexcept nogil:
        # Stationarity of a' y - eps |a'| - z (a' - a) - q/2 (a' - a)^2: a soft threshold at eps/q
        # of the unpenalised maximiser, then the box (exact for a concave function of one variable).
        cdef double r = y - z
        if q > 0.0:
            return _clip(soft_threshold(a + r / q, self.epsilon / q), -1.0, 1.0)
        if r - self.epsilon > 0.0:
            return 1.0
        if r + self.epsilon < 0.0:
            return -1.0
        return 0.0

    cdef double dual_slope(self, double y, double z, double a) noexcept nogil:
        # At a = 0 the one-sided slopes differ; report the smaller in magnitude (0 inside the kink).
        cdef double r = y - z
        if a > 0.0:
            return r - self.epsilon
        if a < 0.0:
            return r + self.epsilon
        if r > self.epsilon:
            return r - self.epsilon
        if r < -self.epsilon:
            return r + self.epsilon
        return 0.0

    cdef double dual_lower(self, double y) noexcept nogil:
        return -1.0

    cdef double dual_upper(self, double y) noexcept nogil:
        return 1.0


cdef class SquaredEpsilonInsensitive(Loss):
    """phi = max(0, |z - y| - epsilon)^2 / 2 (1-smooth; LIBLINEAR's L2-loss SVR, -s 11/12, up
    to its factor 2); -phi*(-a) = a y - epsilon |a| - a^2 / 2, no constraint."""
    cdef readonly double epsilon

    def __init__(self, double epsilon=0.1):
        self.epsilon = _checked_epsilon(epsilon, "squared_epsilon_insensitive")
        self.gamma = 1.0

    cdef double value(self, double y, double z) noexcept nogil:
        cdef double r = fabs(z - y) - self.epsilon
        return 0.5 * r * r if r > 0.0 else 0.0

    cdef double derivative(self, double y, double z) noexcept nogil:
        cdef double t = z - y
        if t > self.epsilon:
            return t - self.epsilon
        if t < -self.epsilon:
            return t + self.epsilon
        return 0.0

    cdef double curvature(self, double y, double z) noexcept nogil:
        return 1.0 if fabs(z - y) > self.epsilon else 0.0

    cdef double dual_value(self, double y, double a) noexcept nogil:
        return a * y - self.epsilon * fabs(a) - 0.5 * a * a

    cdef double dual_from_margin(self, double y, double z) noexcept nogil:
        return -self.derivative(y, z)

    cdef double conjugate_prox(self, double y, double z, double a, double q) noexcept nogil:
        # Stationarity of a' y - eps |a'| - a'^2 / 2 - z (a' - a) - q/2 (a' - a)^2: a soft
        # threshold at eps of y - z + q a, divided by 1 + q (q = 0 included: no row needed).
        return soft_threshold(y - z + q * a, self.epsilon) / (1.0 + q)

    cdef double dual_slope(self, double y, double z, double a) noexcept nogil:
        # y - z - a - eps sign(a); at a = 0, where the one-sided slopes differ, the smaller in
        # magnitude (0 inside the kink): the soft threshold.
        cdef double r = y - z - a
        if a > 0.0:
            return r - self.epsilon
        if a < 0.0:
            return r + self.epsilon
        return soft_threshold(r, self.epsilon)
