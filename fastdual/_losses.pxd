# The one loss interface. A solver never switches on a loss name: it calls these methods.
#
# Conventions (docs/math.md derives every formula): phi(y, z) is the loss of margin z = x . w for
# target y; the dual variable a of a sample enters the dual objective through -phi*(-a).
# For binary losses y is +1 or -1 and beta = a * y is the usual box-constrained dual (e.g. [0, 1]).

cdef class Loss:
    # phi is (1 / gamma)-smooth, i.e. phi* is gamma-strongly convex; 0 for non-smooth losses.
    cdef readonly double gamma
    # The domain of phi* is a bounded box the duals often sit on (SVM-type losses): shrinking pays.
    cdef readonly bint has_box

    cdef double value(self, double y, double z) noexcept nogil
    # A (sub)derivative of phi(y, .) at z.
    cdef double derivative(self, double y, double z) noexcept nogil
    # -phi*(-a): the sample's term of the dual objective; -inf outside the domain of phi*.
    cdef double dual_value(self, double y, double a) noexcept nogil
    # a = -phi'(y, z), a feasible dual point built from a margin.
    cdef double dual_from_margin(self, double y, double z) noexcept nogil
    # SDCA Option I: argmax_{a'} -phi*(-a') - z (a' - a) - q/2 (a' - a)^2, returned as a'.
    cdef double sdca_step(self, double y, double z, double a, double q) noexcept nogil
    # d/da [-phi*(-a) - z a] at a (one-sided, from inside the domain, at a bound): the slope of the
    # SDCA coordinate objective; zero at the coordinate's optimum unless a sits on a bound.
    cdef double dual_slope(self, double y, double z, double a) noexcept nogil
    cdef _elementwise(self, int which, first, second)


cdef class Hinge(Loss):
    pass


cdef class SquaredHinge(Loss):
    pass


cdef class SmoothHinge(Loss):
    pass


cdef class Logistic(Loss):
    pass


cdef class Squared(Loss):
    pass


cdef class Absolute(Loss):
    pass


cdef class EpsilonInsensitive(Loss):
    cdef readonly double epsilon
