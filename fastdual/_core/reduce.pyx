"""The absolute sum of a float64 vector, whose result depends on its values alone.

scipy's BLAS dasum (OpenBLAS's SkylakeX kernel) sums in an order that depends on where the
array starts in memory: the same vector copied elsewhere can give an absolute sum that differs
in its last bit. The solvers' penalty (solvers.common.penalty) is compared in line searches and
in the extrapolations kept only when they lower the objective, so one bit could change a
decision and the model, from one run to the next. This loop sums by index (four partial sums,
the same grouping wherever the array lies): a run is reproducible bit for bit (docs/math.md
Sec. 8, "Reproducible sums")."""
from libc.math cimport fabs


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
