# Worst-case linear-time selection of the k-th smallest of an array of doubles (select_kth),
# for the median searches of the projections in projection.pyx.  Inline and nogil: no call
# overhead in the kernels' loops.
#
# Quickselect with a pseudo-median pivot, falling back to a median-of-medians pivot after any
# split that keeps more than 3/4 of the range.  Every non-fallback step either shrinks the range
# to <= 3/4 or forces a fallback step next, and a fallback step shrinks it to <= 3/4 at O(size)
# cost (its own recursion is on size/5), so the total is O(n) for every input, including
# adversarial orders and massive duplication.
from libc.math cimport sqrt

cdef enum:
    # Below this size a range is finished by insertion sort.
    SMALL = 24


cdef inline void insertion_sort(double* a, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef double x
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


cdef inline double median3(double x, double y, double z) noexcept nogil:
    if x < y:
        if y < z:
            return y
        return z if x < z else x
    if x < z:
        return x
    return z if y < z else y


cdef inline Py_ssize_t partition_less(double* a, Py_ssize_t n, double p) noexcept nogil:
    """Move the entries < p to the front (branch-free Lomuto); return how many there are."""
    cdef Py_ssize_t i, first = 0
    cdef double x
    for i in range(n):
        x = a[i]
        a[i] = a[first]
        a[first] = x
        first += x < p
    return first


cdef inline Py_ssize_t partition_not_greater(double* a, Py_ssize_t n, double p) noexcept nogil:
    """Move the entries <= p to the front; return how many there are."""
    cdef Py_ssize_t i, first = 0
    cdef double x
    for i in range(n):
        x = a[i]
        a[i] = a[first]
        a[first] = x
        first += x <= p
    return first


cdef inline double median_of_medians(double* a, Py_ssize_t n) noexcept nogil:
    """A value with at least ~3n/10 entries <= it and ~3n/10 entries >= it (BFPRT).

    The medians of the groups of five are gathered at the front and their median selected
    recursively; the array is permuted, which the caller's partition does not mind."""
    cdef Py_ssize_t g, ngroups = n // 5
    cdef double x
    for g in range(ngroups):
        insertion_sort(a + 5 * g, 5)
        x = a[5 * g + 2]
        a[5 * g + 2] = a[g]
        a[g] = x
    return select_kth(a, ngroups, ngroups // 2)


cdef inline double sample_pivot(double* a, Py_ssize_t n, Py_ssize_t k) noexcept nogil:
    """A pivot from a deterministic sample of ~sqrt(n) entries (Floyd-Rivest): the sample
    quantile just past rank k, on the side away from the nearer end of the range, so that after
    partitioning k lies in the smaller part.  For the median the first split halves the range and
    the second leaves O(n / n^(1/4)); about 1.5 n moves in all instead of ~2.8 n for a ninther.
    Whatever the data, the caller's fall-back keeps the worst case linear."""
    cdef Py_ssize_t s = <Py_ssize_t> sqrt(<double> n)
    cdef Py_ssize_t stride = n // s, t, r, gap
    cdef double x
    for t in range(s):                      # gather the sample at the front
        x = a[t]
        a[t] = a[t * stride]
        a[t * stride] = x
    gap = <Py_ssize_t> (2.0 * sqrt(<double> s))
    r = (k * s) // n
    if 2 * k < n:
        r = r + gap if r + gap < s else s - 1
    else:
        r = r - gap if r - gap >= 0 else 0
    return select_kth(a, s, r)


cdef inline double select_kth(double* a, Py_ssize_t n, Py_ssize_t k) noexcept nogil:
    """The k-th smallest (0-based) of a[0:n]; permutes a.  Requires 0 <= k < n."""
    cdef bint fallback = False
    cdef Py_ssize_t nless, nle, size, step
    cdef double p
    while True:
        if n <= SMALL:
            insertion_sort(a, n)
            return a[k]
        size = n
        if fallback:
            p = median_of_medians(a, n)
        elif n < 2048:
            # Tukey's ninther: a good median estimate for a handful of reads.
            step = n // 8
            p = median3(median3(a[0], a[step], a[2 * step]),
                        median3(a[3 * step], a[4 * step], a[5 * step]),
                        median3(a[6 * step], a[7 * step], a[n - 1]))
        else:
            p = sample_pivot(a, n, k)
        nless = partition_less(a, n, p)
        if k < nless:
            n = nless
        elif n - nless <= (3 * size) // 4:
            # Good split: keep the ">= p" part, pivot copies included.
            a += nless
            k -= nless
            n -= nless
        else:
            # Poor split (many entries >= p, often copies of p): separate the copies of p.
            nle = nless + partition_not_greater(a + nless, n - nless, p)
            if k < nle:
                return p
            a += nle
            k -= nle
            n -= nle
        fallback = n > (3 * size) // 4
