"""Reductions of float64 vectors whose result depends on the values alone.

The BLAS behind numpy and scipy (OpenBLAS's SkylakeX kernels) sums in an order that depends on
where an array starts in memory: the same vector copied elsewhere can give a dot product or an
absolute sum that differs in its last bit. The solvers' Python layers compare such sums (a line
search's sufficient decrease, an extrapolation kept only when it lowers the objective), so one
bit could change a decision and the model, from one run to the next. These loops sum by index
(four partial sums, the same grouping wherever the arrays lie), so a run is reproducible bit
for bit (docs/math.md Sec. 3, "Reproducible sums")."""
from libc.math cimport fabs, sqrt, isfinite


cdef inline double _dot(const double* a, const double* b, Py_ssize_t n) noexcept nogil:
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t k = 0
    while k + 4 <= n:
        s0 += a[k] * b[k]
        s1 += a[k + 1] * b[k + 1]
        s2 += a[k + 2] * b[k + 2]
        s3 += a[k + 3] * b[k + 3]
        k += 4
    while k < n:
        s0 += a[k] * b[k]
        k += 1
    return (s0 + s1) + (s2 + s3)


def dot(const double[::1] a, const double[::1] b):
    """sum_k a_k b_k."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"dot of vectors of lengths {a.shape[0]} and {b.shape[0]}")
    cdef double total = 0.0
    if a.shape[0] > 0:
        with nogil:
            total = _dot(&a[0], &b[0], a.shape[0])
    return total


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


def norm2(const double[::1] a):
    """||a||_2; rescaled by the largest |a_k| where the plain sum of squares overflows or
    underflows."""
    cdef Py_ssize_t k, n = a.shape[0]
    cdef double total = 0.0, largest = 0.0, scaled
    if n == 0:
        return 0.0
    with nogil:
        total = _dot(&a[0], &a[0], n)
        if not (isfinite(total) and total > 1e-290):
            for k in range(n):
                if fabs(a[k]) > largest:
                    largest = fabs(a[k])
            if largest > 0.0 and isfinite(largest):
                total = 0.0
                for k in range(n):
                    scaled = a[k] / largest
                    total += scaled * scaled
    if largest == 0.0:
        return sqrt(total)
    if not isfinite(largest):
        return largest
    return largest * sqrt(total)


def model_value(const double[::1] g, const double[::1] h, const double[::1] r):
    """g . r + h . r^2 / 2: the second-order model of a data term with derivatives g and
    curvatures h at a change r of the margins, in one pass and without temporaries."""
    cdef double s0 = 0.0, s1 = 0.0, t0 = 0.0, t1 = 0.0
    cdef Py_ssize_t k = 0, n = r.shape[0]
    if g.shape[0] != n or h.shape[0] != n:
        raise ValueError("g, h and r must have the same length")
    with nogil:
        while k + 2 <= n:
            s0 += g[k] * r[k]
            s1 += g[k + 1] * r[k + 1]
            t0 += h[k] * r[k] * r[k]
            t1 += h[k + 1] * r[k + 1] * r[k + 1]
            k += 2
        if k < n:
            s0 += g[k] * r[k]
            t0 += h[k] * r[k] * r[k]
    return (s0 + s1) + 0.5 * (t0 + t1)


def gram_rows(const double[:, ::1] rows, double[:, ::1] out):
    """out = rows rows^T (a small Gram matrix of long rows: Anderson extrapolation's)."""
    cdef Py_ssize_t k, l, m = rows.shape[0], n = rows.shape[1]
    if out.shape[0] != m or out.shape[1] != m:
        raise ValueError(f"out must be {m} x {m}")
    with nogil:
        for k in range(m):
            for l in range(k, m):
                out[k, l] = _dot(&rows[k, 0], &rows[l, 0], n) if n > 0 else 0.0
                out[l, k] = out[k, l]


def solve_small(double[:, ::1] a, double[::1] b):
    """Solve a x = b in place (x into b) by Gaussian elimination with partial pivoting, for the
    few unknowns of an extrapolation (a is overwritten). Returns False if a is singular."""
    cdef Py_ssize_t m = a.shape[0], c, r, q, p
    cdef double pivot, factor, tmp
    cdef bint singular = False
    if a.shape[1] != m or b.shape[0] != m:
        raise ValueError("a must be square and b as long as its side")
    with nogil:
        for c in range(m):
            p = c
            for r in range(c + 1, m):
                if fabs(a[r, c]) > fabs(a[p, c]):
                    p = r
            pivot = a[p, c]
            if pivot == 0.0 or not isfinite(pivot):
                singular = True
                break
            if p != c:
                for q in range(c, m):
                    tmp = a[c, q]
                    a[c, q] = a[p, q]
                    a[p, q] = tmp
                tmp = b[c]
                b[c] = b[p]
                b[p] = tmp
            for r in range(c + 1, m):
                factor = a[r, c] / pivot
                if factor != 0.0:
                    for q in range(c, m):
                        a[r, q] -= factor * a[c, q]
                    b[r] -= factor * b[c]
        if not singular:
            for r in range(m - 1, -1, -1):
                tmp = b[r]
                for q in range(r + 1, m):
                    tmp -= a[r, q] * b[q]
                b[r] = tmp / a[r, r]
    return not singular
