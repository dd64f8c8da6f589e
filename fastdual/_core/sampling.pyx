# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Non-uniform sampling for the kernels: Walker's alias table, built once per training in O(n);
kernels draw from it in O(1) with rng.pxd's rng_alias."""
import numpy as np


def alias_table(const double[::1] probabilities):
    """Walker's alias table (Vose's construction) for sampling index k with the given
    probabilities (summing to 1): returns (keep, alias) for rng.pxd's rng_alias."""
    cdef Py_ssize_t n = probabilities.shape[0], i, small_top = 0, large_top = 0, s, l
    cdef double[::1] keep = np.empty(n)
    cdef Py_ssize_t[::1] alias = np.arange(n, dtype=np.intp)
    cdef Py_ssize_t[::1] small = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] large = np.empty(n, dtype=np.intp)
    cdef double[::1] scaled = np.empty(n)
    with nogil:
        for i in range(n):
            scaled[i] = probabilities[i] * n
            if scaled[i] < 1.0:
                small[small_top] = i
                small_top += 1
            else:
                large[large_top] = i
                large_top += 1
        while small_top > 0 and large_top > 0:
            small_top -= 1
            s = small[small_top]
            l = large[large_top - 1]
            keep[s] = scaled[s]
            alias[s] = l
            scaled[l] = (scaled[l] + scaled[s]) - 1.0
            if scaled[l] < 1.0:
                large_top -= 1
                small[small_top] = l
                small_top += 1
        while large_top > 0:          # what remains has probability 1 up to rounding
            large_top -= 1
            keep[large[large_top]] = 1.0
        while small_top > 0:
            small_top -= 1
            keep[small[small_top]] = 1.0
    return np.asarray(keep), np.asarray(alias)
