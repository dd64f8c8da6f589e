# The one loss interface. A solver never switches on a loss name: it calls these methods.
#
# Conventions (docs/math.md derives every formula): phi(y, z) is the loss of margin z = x . w for
# target y; the dual variable a of a sample enters the dual objective through -phi*(-a).
# For binary losses y is +1 or -1 and beta = a * y is the usual box-constrained dual (e.g. [0, 1]).

# Closed-form families the kernels inline (step_of / slope_of below) instead of calling the
# virtual method: on short rows that saves 5-12 % of an epoch. The loss classes of a family
# implement their virtual methods with the same inline functions and the same fields (gamma,
# upper), and the Python face (`step`, `slope`) goes through step_of / slope_of: the tests run
# exactly the code path of the kernels.
from libc.math cimport exp, fabs


cdef enum:
    GENERIC = 0
    # -phi*(-a) = beta - gamma/2 beta^2 on beta = a y in [0, upper], y = +-1: hinge (gamma = 0,
    # upper = 1), smooth hinge (gamma, 1), squared hinge (gamma = 1/2, upper = inf).
    BOX_QUADRATIC = 1
    # -phi*(-a) = a y - a^2 / 2, no constraint: the squared loss.
    QUADRATIC = 2
    # -phi*(-a) = binary entropy of beta = a y in [0, 1]: the logistic loss (its step is a
    # safeguarded Newton solve, logistic_step).
    LOGISTIC = 3
    # The numbers of a sample's slot in SDCA's step state (Loss.step_state): logistic_step's
    # kept pair (b, t); the closed-form steps keep none.
    STEP_STATE_SIZE = 2


cdef class Loss:
    # phi is (1 / gamma)-smooth, i.e. phi* is gamma-strongly convex; 0 for non-smooth losses.
    cdef readonly double gamma
    # The domain of phi* is a bounded box the duals often sit on (SVM-type losses): shrinking pays.
    cdef readonly bint has_box
    # Which closed form (GENERIC: none), and the upper bound of beta for BOX_QUADRATIC.
    cdef int family
    cdef double upper

    cdef double value(self, double y, double z) noexcept nogil
    # A (sub)derivative of phi(y, .) at z.
    cdef double derivative(self, double y, double z) noexcept nogil
    # The (generalised) second derivative of phi(y, .) at z, for the smooth losses (0 where a
    # piecewise-quadratic loss is flat; NaN for the losses without one: hinge, absolute,
    # epsilon-insensitive).
    cdef double curvature(self, double y, double z) noexcept nogil
    # value(y, z), with derivative and curvature written to d1, d2: one call for a Newton pass
    # (the base class calls the three; a loss sharing work between them overrides it).
    cdef double value_derivatives(self, double y, double z, double* d1,
                                  double* d2) noexcept nogil
    # -phi*(-a): the sample's term of the dual objective; -inf outside the domain of phi*.
    cdef double dual_value(self, double y, double a) noexcept nogil
    # a = -phi'(y, z), a feasible dual point built from a margin.
    cdef double dual_from_margin(self, double y, double z) noexcept nogil
    # The proximal step of the conjugate: argmax_{a'} -phi*(-a') - z (a' - a) - q/2 (a' - a)^2,
    # returned as a'. It is SDCA's Option I step (seed 000) with curvature q = c ||x||^2/(l2 n),
    # and SPDC's dual step (seed 002 eq. 8, beta = -a') with q = 1/sigma.
    cdef double conjugate_prox(self, double y, double z, double a, double q) noexcept nogil
    # The domain of -phi*(-a) is the interval [dual_lower(y), dual_upper(y)] (possibly infinite).
    cdef double dual_lower(self, double y) noexcept nogil
    cdef double dual_upper(self, double y) noexcept nogil
    # d/da [-phi*(-a) - z a] at a (one-sided, from inside the domain, at a bound): the slope of the
    # SDCA coordinate objective; zero at the coordinate's optimum unless a sits on a bound.
    cdef double dual_slope(self, double y, double z, double a) noexcept nogil
    cdef _elementwise(self, int which, first, second)


cdef class BoxQuadratic(Loss):
    pass


cdef class Hinge(BoxQuadratic):
    pass


cdef class SquaredHinge(BoxQuadratic):
    pass


cdef class SmoothHinge(BoxQuadratic):
    cdef double inv_gamma


cdef class Logistic(Loss):
    pass


cdef class Squared(Loss):
    pass


cdef class Absolute(Loss):
    pass


cdef class EpsilonInsensitive(Loss):
    cdef readonly double epsilon


cdef inline double box_quadratic_step(double y, double z, double a, double q, double gamma,
                                      double upper) noexcept nogil:
    """Option I step of the BOX_QUADRATIC family: the maximiser over beta in [0, upper] of
    beta - gamma/2 beta^2 - u (beta - b) - q/2 (beta - b)^2, u = yz, b = a y (docs/math.md)."""
    cdef double beta = a * y
    cdef double slope = 1.0 - y * z - gamma * beta       # d/dbeta at b
    cdef double curvature = q + gamma
    if curvature > 0.0:
        beta = beta + slope / curvature
    elif slope > 0.0:                                    # hinge, row of zeros: linear
        beta = upper
    elif slope < 0.0:
        beta = 0.0
    if beta < 0.0:
        beta = 0.0
    elif beta > upper:
        beta = upper
    return y * beta


cdef inline double box_quadratic_slope(double y, double z, double a, double gamma) noexcept nogil:
    return y * (1.0 - gamma * a * y) - z


cdef inline double quadratic_step(double y, double z, double a, double q) noexcept nogil:
    return a + (y - z - a) / (1.0 + q)


# logistic_step: a Newton step of at most LOGISTIC_TAYLOR_STEP in the logit evaluates the sigmoid
# by its Taylor polynomial; the step ends when b is within LOGISTIC_TOL of the maximiser.
# (Compile-time constants in every module that inlines the step.)
cdef extern from *:
    """
    #define FASTDUAL_LOGISTIC_TAYLOR_STEP 1e-3
    #define FASTDUAL_LOGISTIC_TOL 1e-15
    """
    const double LOGISTIC_TAYLOR_STEP "FASTDUAL_LOGISTIC_TAYLOR_STEP"
    const double LOGISTIC_TOL "FASTDUAL_LOGISTIC_TOL"


cdef inline double sigmoid(double t) noexcept nogil:
    cdef double e
    if t >= 0.0:
        return 1.0 / (1.0 + exp(-t))
    e = exp(t)
    return e / (1.0 + e)


cdef inline double sigmoid_moved(double s, double g, double dx) noexcept nogil:
    """sigmoid(t - dx) from s = sigmoid(t) and g = s (1 - s), for |dx| <= LOGISTIC_TAYLOR_STEP:
    s - g dx + s2 dx^2 / 2 - s3 dx^3 / 6 + s4 dx^4 / 24 with the derivatives s2 = g (1 - 2s),
    s3 = g (1 - 6g), s4 = g (1 - 2s)(1 - 12g); the error is at most g |dx|^5 / 120 (times
    e^|dx|), below 1e-17 g."""
    return s - g * dx * (1.0 - dx * ((0.5 - s)
                                     - dx * ((1.0 / 6.0 - g) - dx * (0.5 - s) * (1.0 / 12.0 - g))))


cdef inline double logistic_step(double y, double z, double a, double q,
                                 double* state) noexcept nogil:
    """Option I step of the logistic loss (docs/math.md Sec. 3, "Logistic step"): maximise
    H(b) - u (b - beta) - q/2 (b - beta)^2 over b in [0, 1], u = yz, beta = a y, H the binary
    entropy. In the logit t = log(b / (1 - b)) the optimality condition is
    f(t) = t + u + q (sigmoid(t) - beta) = 0, f increasing with f' = 1 + q g, g = s (1 - s) for
    s = sigmoid(t), and the root lies in [-u - q (1 - beta), -u + q beta]. Safeguarded Newton
    (rtsafe): a Newton step is taken only when it stays inside the bracket and shrinks at least
    half as fast as bisection; otherwise bisect. (Plain Newton can cycle on the sigmoid's
    curvature when q is large.) Working in t keeps b = sigmoid(t) strictly inside (0, 1).

    After a Newton step dx with |dx| <= LOGISTIC_TAYLOR_STEP, the sigmoid at the new t is the
    degree-4 Taylor polynomial around the old one (sigmoid_moved), not an exponential; the step
    ends when the t left to go, at most q g / (2 f') dx^2 by Newton's quadratic convergence,
    moves b by at most LOGISTIC_TOL (g times it).

    state: NULL, or the sample's pair (b', t') from its last step, sigmoid(t') = b' to within the
    Taylor polynomials' error. When b' is the current beta (and t' inside the bracket), the
    first Newton step is taken from t', where s = beta and f = t' + u are known without an
    exponential: it ends the step (the usual case once a run settles: no exponential at all) or
    gives the start. Otherwise Newton starts at t = -u, the q = 0 solution and the root at the
    dual optimum. The pair of the new b is written back."""
    cdef double beta = a * y
    cdef double u = y * z
    cdef double lo = -u - q * (1.0 - beta)
    cdef double hi = -u + q * beta
    cdef double t, s, g, f, fp, dx, dx_old
    cdef int it
    if hi - lo <= 0.0:          # q == 0: the unconstrained maximiser sigmoid(-u)
        t = -u
        s = sigmoid(t)
    else:
        if state != NULL and state[0] == beta and lo < state[1] < hi:
            # Newton's step from the kept t, where sigmoid(t) = beta and f(t) = t + u.
            t = state[1]
            g = beta * (1.0 - beta)
            fp = 1.0 + q * g
            dx = (t + u) / fp
            if fabs(dx) <= LOGISTIC_TAYLOR_STEP and g * (fp - 1.0) * dx * dx <= LOGISTIC_TOL * fp:
                s = sigmoid_moved(beta, g, dx)
                state[0] = s
                state[1] = t - dx
                return y * s
            t -= dx
            if not lo < t < hi:
                t = -u
        else:
            t = -u
        s = sigmoid(t)
        dx = dx_old = hi - lo
        for it in range(200):
            f = t + u + q * (s - beta)
            if f > 0.0:
                hi = t
            elif f < 0.0:
                lo = t
            else:
                break
            g = s * (1.0 - s)
            fp = 1.0 + q * g
            if ((t - hi) * fp - f) * ((t - lo) * fp - f) > 0.0 or fabs(2.0 * f) > fabs(dx_old * fp):
                dx_old = dx
                dx = 0.5 * (hi - lo)
                t = lo + dx
                s = sigmoid(t)
                if dx <= 1e-16 * (1.0 + fabs(t)):
                    break
            else:
                dx_old = dx
                dx = f / fp
                t -= dx
                if fabs(dx) <= LOGISTIC_TAYLOR_STEP:
                    s = sigmoid_moved(s, g, dx)
                    if g * (fp - 1.0) * dx * dx <= LOGISTIC_TOL * fp:
                        break
                else:
                    s = sigmoid(t)
    if state != NULL:
        state[0] = s
        state[1] = t
    return y * s


cdef inline double step_of(Loss loss, double y, double z, double a, double q) noexcept nogil:
    """loss.conjugate_prox(y, z, a, q), with the closed-form families inlined."""
    if loss.family == BOX_QUADRATIC:
        return box_quadratic_step(y, z, a, q, loss.gamma, loss.upper)
    if loss.family == QUADRATIC:
        return quadratic_step(y, z, a, q)
    if loss.family == LOGISTIC:
        return logistic_step(y, z, a, q, NULL)
    return loss.conjugate_prox(y, z, a, q)


cdef inline double slope_of(Loss loss, double y, double z, double a) noexcept nogil:
    """loss.dual_slope(y, z, a), with the closed-form families inlined."""
    if loss.family == BOX_QUADRATIC:
        return box_quadratic_slope(y, z, a, loss.gamma)
    return loss.dual_slope(y, z, a)
