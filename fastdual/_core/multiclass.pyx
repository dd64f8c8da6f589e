# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The two k-class losses of the VectorLoss contract (multiclass.pxd): Crammer-Singer, smoothed
by gamma >= 0, and the multinomial logistic loss; their closed forms are multiclass.pxd's inline
functions (docs/math.md, "Multiclass")."""
import numpy as np


cdef class VectorLoss:
    """The k-class loss contract; its methods are the subclasses'."""

    cdef double value(self, const double* z, Py_ssize_t k, Py_ssize_t y) noexcept nogil:
        return INFINITY

    cdef double dual_value(self, const double* a, Py_ssize_t k, Py_ssize_t y) noexcept nogil:
        return -INFINITY

    cdef void margin_duals(self, const double* z, Py_ssize_t k, Py_ssize_t y,
                           double* out) noexcept nogil:
        pass

    cdef void step(self, const double* z, const double* a, Py_ssize_t k, Py_ssize_t y, double q,
                   double* out, double* work, Py_ssize_t* order) noexcept nogil:
        pass

    def values(self, const double[:, ::1] values, const Py_ssize_t[::1] labels, bint dual=False):
        """phi(z_i) for each row of margins (dual=False), or -phi*(-a_i) for each row of duals."""
        cdef Py_ssize_t n = values.shape[0], k = values.shape[1], i
        cdef double[::1] out = np.empty(n)
        with nogil:
            for i in range(n):
                if dual:
                    out[i] = self.dual_value(&values[i, 0], k, labels[i])
                else:
                    out[i] = self.value(&values[i, 0], k, labels[i])
        return np.asarray(out)

    def margin_duals_of(self, const double[:, ::1] margins, const Py_ssize_t[::1] labels):
        """The margin duals of each row of margins, (n, k)."""
        cdef Py_ssize_t n = margins.shape[0], k = margins.shape[1], i
        cdef double[:, ::1] out = np.empty((n, k))
        with nogil:
            for i in range(n):
                self.margin_duals(&margins[i, 0], k, labels[i], &out[i, 0])
        return np.asarray(out)

    def step_of(self, const double[::1] z, const double[::1] a, Py_ssize_t y, double q):
        """One sample's step, alone (tests compare it with a numerical maximisation)."""
        cdef Py_ssize_t k = z.shape[0]
        cdef double[::1] out = np.empty(k)
        cdef double[::1] work = np.empty(2 * k)
        cdef Py_ssize_t[::1] order = np.empty(k, dtype=np.intp)
        self.step(&z[0], &a[0], k, y, q, &out[0], &work[0], &order[0])
        return np.asarray(out)


cdef class CrammerSinger(VectorLoss):
    """max_j (delta_{j != y} + z_j - z_y), smoothed by gamma (gamma = 0: the plain loss)."""

    def __init__(self, double gamma=0.0):
        if not gamma >= 0.0:
            raise ValueError(f"gamma must be >= 0, got {gamma!r}")
        self.gamma = gamma
        self.shrinks = True

    cdef double value(self, const double* z, Py_ssize_t k, Py_ssize_t y) noexcept nogil:
        return cs_value(z, k, y, self.gamma)

    cdef double dual_value(self, const double* a, Py_ssize_t k, Py_ssize_t y) noexcept nogil:
        return cs_dual_value(a, k, y, self.gamma)

    cdef void margin_duals(self, const double* z, Py_ssize_t k, Py_ssize_t y,
                           double* out) noexcept nogil:
        cs_margin_duals(z, k, y, self.gamma, out)

    cdef void step(self, const double* z, const double* a, Py_ssize_t k, Py_ssize_t y, double q,
                   double* out, double* work, Py_ssize_t* order) noexcept nogil:
        cs_step(z, a, k, y, q, self.gamma, out, work, order)

    def active_step_of(self, const double[::1] z, const double[::1] a, Py_ssize_t y, double q):
        """The step over a shrunk sample's active classes alone (cs_step_active): z, a their
        margins and duals, y the label's position among them or -1 (the label's dual held at
        1, the others then summing to -1). Tests compare it with a numerical maximisation."""
        cdef Py_ssize_t k = z.shape[0]
        if a.shape[0] != k or not -1 <= y < k or not q > 0.0:
            raise ValueError(f"active_step_of needs z and a of one length k, -1 <= y < k and "
                             f"q > 0, got lengths {z.shape[0]}, {a.shape[0]}, y={y}, q={q}")
        cdef double[::1] out = np.empty(k)
        cdef double[::1] work = np.empty(k)
        cdef Py_ssize_t[::1] order = np.empty(k, dtype=np.intp)
        cs_step_active(&z[0], &a[0], k, y, q, self.gamma, &out[0], &work[0], &order[0])
        return np.asarray(out)


cdef class Multinomial(VectorLoss):
    """logsumexp(z) - z_y."""

    def __init__(self):
        self.gamma = 0.0
        self.shrinks = False

    cdef double value(self, const double* z, Py_ssize_t k, Py_ssize_t y) noexcept nogil:
        return multinomial_value(z, k, y)

    cdef double dual_value(self, const double* a, Py_ssize_t k, Py_ssize_t y) noexcept nogil:
        return multinomial_dual_value(a, k, y)

    cdef void margin_duals(self, const double* z, Py_ssize_t k, Py_ssize_t y,
                           double* out) noexcept nogil:
        multinomial_margin_duals(z, k, y, out)

    cdef void step(self, const double* z, const double* a, Py_ssize_t k, Py_ssize_t y, double q,
                   double* out, double* work, Py_ssize_t* order) noexcept nogil:
        multinomial_step(z, a, k, y, q, out, work)

    def newton_step_of(self, const double[::1] z, const double[::1] a, Py_ssize_t y, double q):
        """multinomial_newton alone: (a', its Newton iterations), or (None, -1) when it hands
        over to the exact solver. Tests and benchmarks count the iterations with it."""
        cdef Py_ssize_t k = z.shape[0]
        if a.shape[0] != k or not 0 <= y < k or not q > 0.0:
            raise ValueError(f"newton_step_of needs z and a of one length k, 0 <= y < k and "
                             f"q > 0, got lengths {z.shape[0]}, {a.shape[0]}, y={y}, q={q}")
        cdef double[::1] out = np.empty(k)
        cdef double[::1] work = np.empty(2 * k)
        cdef int iterations = multinomial_newton(&z[0], &a[0], k, y, q, &out[0], &work[0])
        return (np.asarray(out) if iterations >= 0 else None), iterations

    def exact_step_of(self, const double[::1] z, const double[::1] a, Py_ssize_t y, double q):
        """The step to machine precision (multinomial_step_exact, the step's fallback when its
        Newton iteration does not converge), alone; tests compare it with a maximisation."""
        cdef Py_ssize_t k = z.shape[0]
        if a.shape[0] != k or not 0 <= y < k or not q > 0.0:
            raise ValueError(f"exact_step_of needs z and a of one length k, 0 <= y < k and "
                             f"q > 0, got lengths {z.shape[0]}, {a.shape[0]}, y={y}, q={q}")
        cdef double[::1] out = np.empty(k)
        cdef double[::1] work = np.empty(k)
        multinomial_step_exact(&z[0], &a[0], k, y, q, &out[0], &work[0])
        return np.asarray(out)
