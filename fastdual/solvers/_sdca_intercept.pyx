# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""SDCA's epoch for the squared loss with LIBLINEAR's intercept: exact coordinate steps along
directions conjugate to the intercept's (docs/solvers/sdca.md, "The intercept's direction").
A module of its own: added to _sdca.pyx, it made the compiler lay out sdca_epoch's loop 2x
slower (measured on ijcnn1 and a9a)."""
import numpy as np
cimport numpy as cnp
from cython cimport floating

from fastdual._core.alloc cimport cache_aligned
from fastdual._core.rng cimport RandomState, rng_shuffle
from fastdual._core.rows cimport prefetch, prefetch_row, row_range, row_dot, row_axpy

cnp.import_array()

cdef enum:
    # sdca_epoch's prefetch distances (_sdca.pyx): row pointers, then row contents, ahead
    PREFETCH_FAR = 16
    PREFETCH_NEAR = 3


cdef enum:
    # A sample's numbers side by side, one 64-byte cache line each: its dual, weight, target,
    # p_i, gamma_i and 1 / curvature_i (and two unused): one miss a step instead of six.
    SLOT = 8


def sample_slots(const double[::1] sample_weight, const double[::1] y, const double[::1] p,
                 const double[::1] gamma, const double[::1] inv_curvature):
    """The per-sample slots deflated_squared_epoch reads, (n + 1) * SLOT doubles of which the
    aligned n * SLOT are used (the dual's slot is filled by the epoch)."""
    cdef Py_ssize_t n = sample_weight.shape[0], i
    slots = np.zeros((n + 1) * SLOT)
    cdef double[::1] view = slots
    cdef double* s = cache_aligned(&view[0])
    for i in range(n):
        s[SLOT * i + 1] = sample_weight[i]
        s[SLOT * i + 2] = y[i]
        s[SLOT * i + 3] = p[i]
        s[SLOT * i + 4] = gamma[i]
        s[SLOT * i + 5] = inv_curvature[i]
    return slots


def deflated_squared_epoch(const floating[::1] data, const int[::1] indices,
                           const int[::1] indptr, Py_ssize_t n_samples, Py_ssize_t n_features,
                           double bias, double[::1] duals, double[::1] v, const double[::1] m,
                           double[::1] slots, double u_q_u, double l2,
                           Py_ssize_t[::1] order, cnp.uint64_t[::1] rng_state):
    """One epoch of exact coordinate steps on the squared loss's dual with LIBLINEAR's intercept
    (bias != 0, l1 = 0, w = v), each taken along e_i - gamma_i u, the direction that is
    Q-conjugate to u (u_j = 1 where c_j > 0; Q the Hessian of -D), from a point first made
    optimal along u (docs/solvers/sdca.md, "The intercept's direction"). The intercept feature
    couples every pair of duals through a rank-one term of Q; plain steps excite it and take
    several times the epochs. m = v(u) (n_features + 1), p_i = x_i . m + bias m[n_features],
    u_q_u = u'Qu = (1/n) sum_j c_j + l2 ||m||^2; slots (sample_slots): per sample its weight
    c_i, target y_i, p_i, gamma_i = (Qu)_i / u'Qu and 1 / (Q_ii - (Qu)_i^2 / u'Qu) (0 for a
    row that is u's direction itself: skipped), computed once by the caller (no division in the
    loop), the dual copied in for the epoch. The shift along u is carried as one scalar:
    duals = a + s u, v = v_a + s m, margins x_i . v_a + s p_i; folded in at the end. Updates
    duals, v, order and rng_state in place."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double* v_ptr = &v[0]
    cdef double inv_n = 1.0 / n_samples, inv_l2n = 1.0 / (l2 * n_samples)
    cdef double slope = 0.0, shift, c, z, step, scale
    cdef double* s
    cdef double* slot
    cdef Py_ssize_t t, i, j, start, end
    cdef RandomState rs
    if not u_q_u > 0.0:
        raise ValueError("deflated_squared_epoch: u'Qu must be positive")
    if (slots.shape[0] < (n_samples + 1) * SLOT or duals.shape[0] < n_samples
            or m.shape[0] != n_features + 1 or v.shape[0] != n_features + 1):
        raise ValueError("deflated_squared_epoch: slots need (n_samples + 1) * 8 entries, "
                         "duals n_samples, m and v n_features + 1")
    s = cache_aligned(&slots[0])
    rs.s0 = rng_state[0]
    rs.s1 = rng_state[1]
    rs.s2 = rng_state[2]
    rs.s3 = rng_state[3]
    with nogil:
        # The exact step along u: slope u'grad(-D) = (1/n) sum_j c_j (a_j - y_j) + l2 m . v.
        for j in range(n_samples):
            s[SLOT * j] = duals[j]
            if s[SLOT * j + 1] != 0.0:
                slope += s[SLOT * j + 1] * (duals[j] - s[SLOT * j + 2])
        slope *= inv_n
        for j in range(n_features + 1):
            slope += l2 * m[j] * v_ptr[j]
        shift = -slope / u_q_u
        rng_shuffle(&rs, &order[0], n_samples)
        for t in range(n_samples):
            i = order[t]
            if t + PREFETCH_FAR < n_samples and ptr != NULL:     # (as sdca_epoch)
                prefetch(ptr + order[t + PREFETCH_FAR])
            if t + PREFETCH_NEAR < n_samples:
                prefetch_row(x, ind, ptr, order[t + PREFETCH_NEAR], n_features)
                prefetch(s + SLOT * order[t + PREFETCH_NEAR])
            slot = s + SLOT * i
            c = slot[1]
            if c == 0.0 or slot[5] == 0.0:
                continue
            row_range(ptr, i, n_features, &start, &end)
            z = row_dot(x, ind, start, end, v_ptr) + bias * v_ptr[n_features] + shift * slot[3]
            step = -(c * inv_n * (slot[0] + shift - slot[2] + z)) * slot[5]
            slot[0] += step
            shift -= step * slot[4]
            scale = c * step * inv_l2n
            row_axpy(x, ind, start, end, scale, v_ptr)
            v_ptr[n_features] += scale * bias
        for j in range(n_samples):
            duals[j] = s[SLOT * j] + shift if s[SLOT * j + 1] != 0.0 else s[SLOT * j]
        for j in range(n_features + 1):
            v_ptr[j] += shift * m[j]
    rng_state[0] = rs.s0
    rng_state[1] = rs.s1
    rng_state[2] = rs.s2
    rng_state[3] = rs.s3
