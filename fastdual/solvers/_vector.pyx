# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Prox-SDCA epochs with vector duals (seed 000 Sec. 3.3) over CSR or dense rows, for any k-class
loss of the VectorLoss contract (_core/multiclass.pxd: Crammer-Singer, multinomial logistic).

State: duals A (n, k), V = 1/(l2 n) sum_i c_i x_i a_i^T and W = soft_threshold(V, l1/l2), both
(n_features + 1, k) with the intercept feature's row last (with l1 = 0, W is V: the caller
passes the same array twice). Step for sample i: margins z = W^T x_i, curvature
q = c_i ||x_i||^2 / (l2 n), a_i <- the vector step (exact maximisation of the dual's lower
bound in a_i, as SDCA's Option I), V's rows of the row's features += c_i/(l2 n) x_ij (a' - a).
A sample with q = 0 (an empty row without intercept) takes its margin duals, the exact
maximiser there.
"""
import numpy as np
cimport numpy as cnp
from cython cimport floating

from fastdual._core.multiclass cimport VectorLoss
from fastdual._core.rng cimport RandomState, rng_shuffle
from fastdual._core.rows cimport prefetch, prefetch_row, row_range, soft_threshold

cnp.import_array()

cdef enum:
    PREFETCH_FAR = 16
    PREFETCH_NEAR = 3


def vector_epoch(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                 Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                 const Py_ssize_t[::1] labels, const double[::1] sample_weight,
                 const double[::1] sq_norms, double[:, ::1] duals, double[:, ::1] v,
                 double[:, ::1] w, VectorLoss loss, double l2, double l1,
                 Py_ssize_t[::1] order, cnp.uint64_t[::1] rng_state, double[:, ::1] scratch,
                 Py_ssize_t[::1] sort_order, Py_ssize_t n_active, bint shrinking):
    """One epoch over a fresh permutation of the active samples order[0:n_active], in place;
    returns the new n_active. With shrinking, a sample whose step leaves its dual exactly as it
    was (at the optimum of its own subproblem, e.g. a Crammer-Singer sample classified with
    margin: a = 0) leaves the active set (swapped behind it) until the caller reactivates
    everyone. scratch: (4, k) work space, sort_order: (k,) work space."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t k = duals.shape[1], n = n_active
    cdef Py_ssize_t t, i, kk, j, m, start, end, yi
    cdef double* z = &scratch[0, 0]
    cdef double* a_new = &scratch[1, 0]
    cdef double* work = &scratch[2, 0]
    cdef double* delta = &scratch[3, 0]
    cdef double* vp = &v[0, 0]
    cdef double* wp = &w[0, 0]
    cdef double* row
    cdef double c, q, scale, xv, kappa = l1 / l2, inv_l2n = 1.0 / (l2 * n_samples)
    cdef bint elastic = l1 > 0.0
    cdef bint moved
    cdef RandomState rs
    rs.s0, rs.s1, rs.s2, rs.s3 = rng_state[0], rng_state[1], rng_state[2], rng_state[3]
    with nogil:
        rng_shuffle(&rs, &order[0], n)
        t = 0
        while t < n:
            i = order[t]
            if t + PREFETCH_FAR < n and ptr != NULL:
                prefetch(ptr + order[t + PREFETCH_FAR])
            if t + PREFETCH_NEAR < n:
                prefetch_row(x, ind, ptr, order[t + PREFETCH_NEAR], n_features)
            c = sample_weight[i]
            if c == 0.0:
                t += 1
                continue
            yi = labels[i]
            row_range(ptr, i, n_features, &start, &end)
            row = wp + n_features * k
            for m in range(k):
                z[m] = bias * row[m]
            for kk in range(start, end):
                j = ind[kk] if ind != NULL else kk - start
                xv = x[kk]
                row = wp + j * k
                for m in range(k):
                    z[m] += xv * row[m]
            q = c * sq_norms[i] * inv_l2n
            if q > 0.0:
                loss.step(z, &duals[i, 0], k, yi, q, a_new, work, &sort_order[0])
            else:
                loss.margin_duals(z, k, yi, a_new)
            moved = False
            for m in range(k):
                delta[m] = a_new[m] - duals[i, m]
                duals[i, m] = a_new[m]
                moved = moved or delta[m] != 0.0
            if not moved:
                if shrinking:
                    n -= 1
                    order[t] = order[n]
                    order[n] = i
                else:
                    t += 1
                continue
            t += 1
            scale = c * inv_l2n
            for kk in range(start, end):
                j = ind[kk] if ind != NULL else kk - start
                xv = scale * x[kk]
                row = vp + j * k
                for m in range(k):
                    row[m] += xv * delta[m]
                if elastic:
                    for m in range(k):
                        wp[j * k + m] = soft_threshold(row[m], kappa)
            row = vp + n_features * k
            for m in range(k):
                row[m] += scale * bias * delta[m]
            if elastic:
                for m in range(k):
                    wp[n_features * k + m] = soft_threshold(row[m], kappa)
    rng_state[0], rng_state[1], rng_state[2], rng_state[3] = rs.s0, rs.s1, rs.s2, rs.s3
    return n
