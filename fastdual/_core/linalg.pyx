"""fastdual's own dense linear algebra: the level-1 operations of the Python-side solvers and a
Cholesky solve for small systems, all single-threaded and reproducible bit for bit.

Reductions (asum, dot, nrm2) sum by index in four partial sums, the same grouping wherever the
vectors lie in memory. scipy's BLAS (OpenBLAS's SkylakeX kernels) sums in an order that depends
on where an array starts: the same vector copied elsewhere can give a sum that differs in its
last bit, and the solvers compare these values (line searches, the extrapolations kept only when
they lower the objective), so one bit could change a decision and the model from one run to the
next (docs/math.md Sec. 8, "Reproducible sums").

They also keep scipy.linalg out of the process: importing it costs 0.05-0.2 s, more than a
whole training on a small problem (docs/benchmarks.md N). cholesky_solve is for the small
systems (solvers.common.OWN_CHOLESKY_MAX unknowns); larger ones are factored by LAPACK through
numpy.linalg (imported with numpy), whose blocked factorisation is the faster there, and solved
by triangular_solves."""
from libc.math cimport fabs, isfinite, sqrt

from fastdual._core.rows cimport row_axpy, row_dot


def asum(const double[::1] a):
    """sum_k |a_k|."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t k = 0, n = a.shape[0]
    with nogil:
        while k + 4 <= n:
            s0 += fabs(a[k])
            s1 += fabs(a[k + 1])
            s2 += fabs(a[k + 2])
            s3 += fabs(a[k + 3])
            k += 4
        while k < n:
            s0 += fabs(a[k])
            k += 1
    return (s0 + s1) + (s2 + s3)


cdef inline double _dot(const double* a, const double* b, Py_ssize_t n) noexcept nogil:
    """sum_k a_k b_k by rows.pxd's dense row product (four partial sums by index)."""
    return row_dot(a, NULL, 0, n, b)


def dot(const double[::1] a, const double[::1] b):
    """sum_k a_k b_k (a and b of one length)."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"dot: lengths differ ({a.shape[0]} and {b.shape[0]})")
    if a.shape[0] == 0:
        return 0.0
    cdef double s
    with nogil:
        s = _dot(&a[0], &b[0], a.shape[0])
    return s


def nrm2(const double[::1] a):
    """||a||_2: sqrt(dot(a, a)), and where that sum overflows or underflows, the same computed
    on a / max_k |a_k| (as BLAS's dnrm2 guards against both)."""
    cdef Py_ssize_t k, n = a.shape[0]
    cdef double s, big = 0.0, t, r0 = 0.0, r1 = 0.0, norm
    if n == 0:
        return 0.0
    with nogil:
        s = _dot(&a[0], &a[0], n)
        norm = sqrt(s)
        if s < 1e-290 or s > 1e290:          # (inf and nan stay so below)
            for k in range(n):
                big = max(big, fabs(a[k]))
            if big > 0.0 and isfinite(big):
                for k in range(0, n - 1, 2):
                    t = a[k] / big
                    r0 += t * t
                    t = a[k + 1] / big
                    r1 += t * t
                if n % 2:
                    t = a[n - 1] / big
                    r0 += t * t
                norm = big * sqrt(r0 + r1)
    return norm


def axpy(double alpha, const double[::1] x, double[::1] y):
    """y += alpha x, in place (x and y of one length)."""
    cdef Py_ssize_t n = x.shape[0]
    if y.shape[0] != n:
        raise ValueError(f"axpy: lengths differ ({n} and {y.shape[0]})")
    if n == 0:
        return
    with nogil:
        row_axpy(&x[0], NULL, 0, n, alpha, &y[0])      # rows.pxd's dense row update


def cholesky_solve(double[:, ::1] A, double[::1] b):
    """Solve A x = b for a symmetric positive definite A by Cholesky, in place: A's lower
    triangle is overwritten by the factor L (A = L L^T; the upper triangle is read as the
    lower's mirror and left as it is) and b by x. Returns False, with A and b partly
    overwritten, when A is not positive definite to working precision (a pivot that is not
    positive or not finite), True otherwise. Unblocked, m^3 / 3 multiply-adds: for small m."""
    cdef Py_ssize_t m = A.shape[0]
    cdef bint done
    if A.shape[1] != m or b.shape[0] != m:
        raise ValueError(f"cholesky_solve: A must be square and b of its size, got "
                         f"{A.shape[0]} x {A.shape[1]} and {b.shape[0]}")
    if m == 0:
        return True
    with nogil:
        done = _cholesky_solve(&A[0, 0], &b[0], m)
    return bool(done)


cdef bint _cholesky_solve(double* A, double* b, Py_ssize_t m) noexcept nogil:
    """cholesky_solve on A's C-ordered m x m entries."""
    cdef Py_ssize_t i, j, k
    cdef double s, pivot
    for j in range(m):
        # column j of L: L_jj = sqrt(A_jj - sum_k L_jk^2), L_ij = (A_ij - L_i. L_j.) / L_jj,
        # A_ij (i > j) read from the untouched upper part, A_ji
        s = A[j * m + j]
        for k in range(j):
            s -= A[j * m + k] * A[j * m + k]
        if not (s > 0.0 and isfinite(s)):
            return False
        pivot = sqrt(s)
        A[j * m + j] = pivot
        for i in range(j + 1, m):
            s = A[j * m + i]
            for k in range(j):
                s -= A[i * m + k] * A[j * m + k]
            A[i * m + j] = s / pivot
    _triangular_solves(A, b, m)
    return True


def triangular_solves(const double[:, ::1] L, double[::1] b):
    """Solve L L^T x = b in place (b overwritten by x) for a lower triangular L with a positive
    diagonal (a Cholesky factor; its upper triangle is not read): m^2 multiply-adds."""
    cdef Py_ssize_t m = L.shape[0]
    if L.shape[1] != m or b.shape[0] != m:
        raise ValueError(f"triangular_solves: L must be square and b of its size, got "
                         f"{L.shape[0]} x {L.shape[1]} and {b.shape[0]}")
    if m == 0:
        return
    with nogil:
        _triangular_solves(&L[0, 0], &b[0], m)


cdef void _triangular_solves(const double* L, double* b, Py_ssize_t m) noexcept nogil:
    """L z = b, then L^T x = z, in b (L's C-ordered m x m entries, its lower triangle read)."""
    cdef Py_ssize_t i, k
    cdef double s
    for i in range(m):                       # L z = b
        s = b[i]
        for k in range(i):
            s -= L[i * m + k] * b[k]
        b[i] = s / L[i * m + i]
    for i in range(m - 1, -1, -1):           # L^T x = z
        s = b[i]
        for k in range(i + 1, m):
            s -= L[k * m + i] * b[k]
        b[i] = s / L[i * m + i]
