# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Prox-SDCA epochs (seed 000, Figure 1) over CSR or dense rows.

One call runs one epoch of n coordinate steps and returns to Python (fastdual.solvers.sdca, then
the one training loop of fastdual._loop), which checks the certificate, records history and handles
callbacks and Ctrl-C between epochs.

State: the duals alpha (n; `duals` in code), v = 1/(l2 n) sum_i c_i alpha_i x_i (d + 1, the last
entry for the intercept feature) and w = grad g*(v) = soft_threshold(v, l1/l2) (seed 000
Sec. 3.1). With l1 = 0, w = v and the caller passes the same array for both; the kernel then never
writes w.

Step for sample i, margin z = x_i . w, q = c_i ||x_i||^2 / (l2 n):
  Option I:  alpha_i <- argmax_a -phi*(-a) - z (a - alpha_i) - q/2 (a - alpha_i)^2
             (Loss.conjugate_prox, through step_of);
             exact coordinate maximisation of D for l2, of the lower bound h(v; dv) of eq. (5) for
             the elastic net, so D never decreases in either case.
  Option IV: alpha_i <- alpha_i + s (u - alpha_i), u = -phi'(z),
             s = clip([phi(z) + phi*(-alpha_i) + z alpha_i + gamma/2 (u - alpha_i)^2]
                      / [(u - alpha_i)^2 (gamma + q_max)], 0, 1),  q_max = max_i q_i (R^2 / (l2 n)).

Shrinking (LIBLINEAR's, for losses whose duals live in a box): order[0:n_active] is the active set.
A sample whose step does not move alpha_i although the slope of its coordinate objective,
c_i |d/da(-phi*(-a) - z a)|, exceeds `shrink_threshold` sits on a bound and is pushed outward: it
leaves the active set (swapped behind it) until the caller reactivates everyone. The caller passes
the largest projected slope of the previous epoch as the threshold, as LIBLINEAR does. Shrinking
only skips coordinates, so D still never decreases, and the certificate is always computed on all
samples.
"""
import numpy as np
cimport numpy as cnp
from cython cimport floating
from libc.stdint cimport uint64_t

from fastdual._core.losses cimport Loss
from fastdual.solvers._sdca_step cimport dual_step, shrinks
from fastdual._core.rng cimport RandomState, rng_alias, rng_below, rng_shuffle
from fastdual._core.rows cimport (prefetch, prefetch_row, row_range, row_dot, row_axpy,
                             row_soft_threshold, soft_threshold)

cnp.import_array()

cdef enum:
    # How many steps ahead the permutation's rows are prefetched: the row pointers PREFETCH_FAR
    # steps ahead, the row contents PREFETCH_NEAR steps ahead. Measured on epochs of a9a,
    # mushrooms and news20: 3 rows ahead is enough (6 was 8-12 % slower on rows of 14-20
    # nonzeros, no better on longer ones); prefetching the per-sample values (duals, y, weights,
    # norms: arrays that stay in cache) or the ends of rows cost more than it saved.
    PREFETCH_FAR = 16
    PREFETCH_NEAR = 3


def sdca_epoch(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
               Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
               const double[::1] y, const double[::1] sample_weight, const double[::1] sq_norms,
               double[::1] duals, double[::1] v, double[::1] w,
               Loss loss, double l2, double l1, int option, double q_max,
               bint with_replacement, Py_ssize_t[::1] order, cnp.uint64_t[::1] rng_state,
               Py_ssize_t n_active, double shrink_threshold,
               const double[::1] alias_keep, const Py_ssize_t[::1] alias):
    """Run one epoch in place on duals, v, w, order and rng_state.

    Visits the n_active samples of order[0:n_active] in a fresh random order (or n_samples
    draws with replacement, then without shrinking: uniform, or with the probabilities of the
    alias table (alias_keep, alias) when it is not empty). Returns (max_slope, n_active): the
    largest projected slope c_i |d/da| over the steps that moved, and the new active-set size.
    """
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double* v_ptr = &v[0]
    cdef double* w_ptr = &w[0]
    cdef bint elastic = l1 > 0.0
    cdef bint weighted = alias_keep.shape[0] > 0
    cdef bint shrinking = loss.has_box and not with_replacement
    cdef double kappa = l1 / l2
    cdef double inv_l2n = 1.0 / (l2 * n_samples)
    cdef double z, c, q, a_old, a_new, delta, scale
    cdef double max_slope = 0.0
    cdef Py_ssize_t t, i, start, end, ahead, n_steps
    cdef RandomState rs
    rs.s0 = rng_state[0]
    rs.s1 = rng_state[1]
    rs.s2 = rng_state[2]
    rs.s3 = rng_state[3]
    with nogil:
        if with_replacement:
            n_steps = n_samples
        else:
            rng_shuffle(&rs, &order[0], n_active)
            n_steps = n_active
        t = 0
        while t < n_steps:
            if weighted:
                i = rng_alias(&rs, &alias_keep[0], &alias[0], n_samples)
            elif with_replacement:
                i = rng_below(&rs, n_samples)
            else:
                i = order[t]
                if t + PREFETCH_FAR < n_steps:
                    ahead = order[t + PREFETCH_FAR]
                    if ptr != NULL:
                        prefetch(ptr + ahead)
                if t + PREFETCH_NEAR < n_steps:
                    prefetch_row(x, ind, ptr, order[t + PREFETCH_NEAR], n_features)
            t += 1
            c = sample_weight[i]
            if c == 0.0:
                continue
            row_range(ptr, i, n_features, &start, &end)
            z = row_dot(x, ind, start, end, w_ptr) + bias * w_ptr[n_features]
            q = c * sq_norms[i] * inv_l2n
            a_old = duals[i]
            a_new = dual_step(loss, option, y[i], z, a_old, q, q_max)
            delta = a_new - a_old
            if shrinking and shrinks(loss, c, y[i], z, a_old, delta, shrink_threshold,
                                     &max_slope):
                # Out of the active set: the last active sample takes this place and is
                # visited next.
                n_steps -= 1
                t -= 1
                order[t] = order[n_steps]
                order[n_steps] = i
            if delta == 0.0:
                continue
            duals[i] = a_new
            scale = c * delta * inv_l2n
            row_axpy(x, ind, start, end, scale, v_ptr)
            v_ptr[n_features] += scale * bias
            if elastic:
                row_soft_threshold(ind, start, end, v_ptr, w_ptr, kappa)
                w_ptr[n_features] = soft_threshold(v_ptr[n_features], kappa)
    rng_state[0] = rs.s0
    rng_state[1] = rs.s1
    rng_state[2] = rs.s2
    rng_state[3] = rs.s3
    return max_slope, (n_active if with_replacement else n_steps)
