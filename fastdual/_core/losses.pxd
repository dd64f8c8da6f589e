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
cdef enum:
    GENERIC = 0
    # -phi*(-a) = beta - gamma/2 beta^2 on beta = a y in [0, upper], y = +-1: hinge (gamma = 0,
    # upper = 1), smooth hinge (gamma, 1), squared hinge (gamma = 1/2, upper = inf).
    BOX_QUADRATIC = 1
    # -phi*(-a) = a y - a^2 / 2, no constraint: the squared loss.
    QUADRATIC = 2


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
    pass


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


cdef inline double step_of(Loss loss, double y, double z, double a, double q) noexcept nogil:
    """loss.conjugate_prox(y, z, a, q), with the closed-form families inlined."""
    if loss.family == BOX_QUADRATIC:
        return box_quadratic_step(y, z, a, q, loss.gamma, loss.upper)
    if loss.family == QUADRATIC:
        return quadratic_step(y, z, a, q)
    return loss.conjugate_prox(y, z, a, q)


cdef inline double slope_of(Loss loss, double y, double z, double a) noexcept nogil:
    """loss.dual_slope(y, z, a), with the closed-form families inlined."""
    if loss.family == BOX_QUADRATIC:
        return box_quadratic_slope(y, z, a, loss.gamma)
    return loss.dual_slope(y, z, a)
