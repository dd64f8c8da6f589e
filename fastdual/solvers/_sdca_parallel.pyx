# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Asynchronous parallel Prox-SDCA epochs: PASSCoDe (Hsieh, Yu & Dhillon, "PASSCoDe: Parallel
ASynchronous Stochastic dual Co-ordinate Descent", ICML 2015), over CSR or dense rows.

The epoch's permutation of the active samples (order[0:n_active], shuffled here with the
driver's RNG, as the sequential kernel of _sdca.pyx does) is split into n_blocks contiguous
blocks, handed out to n_threads OpenMP threads one at a time (a dynamic schedule: a thread that
the machine deschedules, or whose rows are longer, holds up one block, not a 1/n_threads share
of the epoch); a thread runs seed 000's coordinate steps (Option I or IV, the same arithmetic as
_sdca.pyx) over its block. Each dual alpha_i belongs to exactly one block, hence to one thread,
in an epoch: the duals never race. The shared vector v = 1/(l2 n) sum_i c_i alpha_i x_i is read
without locks (a thread's margin z = x_i . w may miss the updates other threads are making:
PASSCoDe's bounded staleness).

Which PASSCoDe: every addition to v atomic (PASSCoDe-Atomic: no update is ever lost, v is
v(alpha) up to the rounding of the additions when the epoch returns, as after a sequential
epoch), or plain additions to the features' entries (PASSCoDe-Wild), the intercept feature's
entry, which every step writes, always atomically. A plain addition can be lost when two threads
add to the same entry at the same instant, so Wild's v may drift from v(alpha); the driver then
recomputes v from the duals before every certificate (sdca.py, SDCA.point), and the certificate
is computed from the returned duals anyway, so a lost update costs progress, never a wrong bound.
The driver picks Wild on wide sparse data, Atomic otherwise (sdca.py, WILD_MIN_FEATURES): an
atomic double addition is a compare-and-swap loop on x86, which made one thread's epoch 2-3
times slower on news20 and on a 1M-feature synthetic set, while Wild's drift there was at the
rounding level (two threads rarely touch one entry at the same instant); on dense or narrow
data Wild's lost updates slowed convergence many times over. Lock (a lock per feature of the
row) costs more than Atomic.

With l1 > 0, each step writes w_j = soft_threshold(v_j, l1/l2) for its row's features as the
sequential kernel does; two threads can leave w_j computed from an older v_j, so w is recomputed
from v over all d + 1 entries when the threads have joined (w = soft_threshold(v) when the
kernel returns).

Shrinking (LIBLINEAR's, as in _sdca.pyx) runs within each block: a thread moves the samples it
shrinks behind the block's active part. After the epoch the blocks' active parts are gathered
into order[0:n_active'] (then the newly shrunk samples, then those shrunk before), so the next
epoch shuffles and splits the active samples alone. The largest projected slope is the maximum
over the blocks'.

With one block the epoch is the sequential kernel's, bit for bit (the tests hold it to that).
Without OpenMP at build time the blocks run one after the other (the driver then uses the
sequential kernel instead: see OPENMP).
"""
import numpy as np
cimport numpy as cnp
from cython cimport floating
from cython.parallel cimport prange
from libc.math cimport fabs

from fastdual._core.losses cimport Loss, slope_of
from fastdual.solvers._sdca_step cimport dual_step
from fastdual._core.rng cimport RandomState, rng_shuffle
from fastdual._core.rows cimport (prefetch, prefetch_row, row_range, row_dot, soft_threshold)

cnp.import_array()

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define FASTDUAL_OPENMP 1
    #else
    #define FASTDUAL_OPENMP 0
    #endif
    static inline void fastdual_atomic_add(double* p, double x) {
    #ifdef _OPENMP
    #pragma omp atomic
    #endif
        *p += x;
    }
    """
    const int FASTDUAL_OPENMP
    void atomic_add "fastdual_atomic_add"(double* p, double x) noexcept nogil

# Whether this module was compiled with OpenMP (setup.py falls back to a build without it).
OPENMP = bool(FASTDUAL_OPENMP)

cdef enum:
    PREFETCH_FAR = 16   # as _sdca.pyx (measured there)
    PREFETCH_NEAR = 3


cdef void run_block(const floating* x, const int* ind, const int* ptr,
                    Py_ssize_t n_features, double bias, const double* y,
                    const double* sample_weight, const double* sq_norms, double* duals,
                    double* v, double* w, Loss loss, double inv_l2n, double kappa,
                    bint elastic, int option, double q_max, bint atomic,
                    Py_ssize_t* order, Py_ssize_t n_steps, bint shrinking,
                    double shrink_threshold, Py_ssize_t* kept,
                    double* max_slope_out) noexcept nogil:
    """Seed 000's steps over the samples order[0:n_steps] (one thread's block); the same
    arithmetic as _sdca.pyx's loop, with atomic additions to v. Writes the block's active count
    (shrinking) to kept and its largest projected slope to max_slope_out."""
    cdef double z, c, q, a_old, a_new, delta, scale, slope
    cdef double max_slope = 0.0
    cdef Py_ssize_t t = 0, i, start, end, k, j, ahead
    while t < n_steps:
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
        z = row_dot(x, ind, start, end, w) + bias * w[n_features]
        q = c * sq_norms[i] * inv_l2n
        a_old = duals[i]
        a_new = dual_step(loss, option, y[i], z, a_old, q, q_max)
        delta = a_new - a_old
        if shrinking:
            slope = c * fabs(slope_of(loss, y[i], z, a_old))
            if delta == 0.0:
                if slope > shrink_threshold:
                    n_steps -= 1
                    t -= 1
                    order[t] = order[n_steps]
                    order[n_steps] = i
            elif slope > max_slope:
                max_slope = slope
        if delta == 0.0:
            continue
        duals[i] = a_new
        scale = c * delta * inv_l2n
        if ind != NULL:
            if atomic:
                for k in range(start, end):
                    atomic_add(&v[ind[k]], scale * x[k])
            else:
                for k in range(start, end):
                    v[ind[k]] += scale * x[k]
            if elastic:
                for k in range(start, end):
                    j = ind[k]
                    w[j] = soft_threshold(v[j], kappa)
        else:
            if atomic:
                for k in range(end - start):
                    atomic_add(&v[k], scale * x[start + k])
            else:
                for k in range(end - start):
                    v[k] += scale * x[start + k]
            if elastic:
                for k in range(end - start):
                    w[k] = soft_threshold(v[k], kappa)
        # Every step adds to the intercept's entry: the one entry all threads share, always
        # atomic.
        atomic_add(&v[n_features], scale * bias)
        if elastic:
            w[n_features] = soft_threshold(v[n_features], kappa)
    kept[0] = n_steps
    max_slope_out[0] = max_slope


def sdca_parallel_epoch(const floating[::1] data, const int[::1] indices,
                        const int[::1] indptr, Py_ssize_t n_samples, Py_ssize_t n_features,
                        double bias, const double[::1] y, const double[::1] sample_weight,
                        const double[::1] sq_norms, double[::1] duals, double[::1] v,
                        double[::1] w, Loss loss, double l2, double l1, int option,
                        double q_max, Py_ssize_t[::1] order, cnp.uint64_t[::1] rng_state,
                        Py_ssize_t n_active, double shrink_threshold, int n_threads,
                        Py_ssize_t n_blocks, Py_ssize_t[::1] scratch, bint atomic=True):
    """Run one epoch in place on duals, v, w, order and rng_state with n_threads threads over
    n_blocks blocks (1 <= n_threads <= n_blocks <= n_active) of a fresh permutation of
    order[0:n_active]. scratch: n_samples entries of work space. atomic: PASSCoDe-Atomic
    (every addition to v atomic) instead of Wild (plain additions to the features' entries,
    which may lose an update: the caller recomputes v from the duals before it certifies).
    Returns (max_slope, n_active) as _sdca.sdca_epoch does."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double* v_ptr = &v[0]
    cdef double* w_ptr = &w[0]
    cdef Py_ssize_t* order_ptr = &order[0]
    cdef Py_ssize_t* scratch_ptr = &scratch[0]
    cdef bint elastic = l1 > 0.0
    cdef bint shrinking = loss.has_box
    cdef double kappa = l1 / l2
    cdef double inv_l2n = 1.0 / (l2 * n_samples)
    cdef double max_slope = 0.0
    cdef Py_ssize_t b, j, pos, new_active
    cdef Py_ssize_t[::1] bounds = np.empty(n_blocks + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] kept = np.empty(n_blocks, dtype=np.intp)
    cdef double[::1] slopes = np.zeros(n_blocks)
    cdef RandomState rs
    rs.s0 = rng_state[0]
    rs.s1 = rng_state[1]
    rs.s2 = rng_state[2]
    rs.s3 = rng_state[3]
    for b in range(n_blocks + 1):
        bounds[b] = (b * n_active) // n_blocks
    with nogil:
        rng_shuffle(&rs, order_ptr, n_active)
        for b in prange(n_blocks, num_threads=n_threads, schedule="dynamic", chunksize=1):
            run_block(x, ind, ptr, n_features, bias, &y[0], &sample_weight[0], &sq_norms[0],
                      &duals[0], v_ptr, w_ptr, loss, inv_l2n, kappa, elastic, option, q_max,
                      atomic, order_ptr + bounds[b], bounds[b + 1] - bounds[b], shrinking,
                      shrink_threshold, &kept[b], &slopes[b])
        for b in range(n_blocks):
            if slopes[b] > max_slope:
                max_slope = slopes[b]
        # Gather the blocks' active parts in front, then what they shrank this epoch.
        new_active = 0
        for b in range(n_blocks):
            new_active = new_active + kept[b]
        if new_active < n_active:
            pos = 0
            for b in range(n_blocks):
                for j in range(bounds[b], bounds[b] + kept[b]):
                    scratch_ptr[pos] = order_ptr[j]
                    pos = pos + 1
            for b in range(n_blocks):
                for j in range(bounds[b] + kept[b], bounds[b + 1]):
                    scratch_ptr[pos] = order_ptr[j]
                    pos = pos + 1
            for j in range(n_active):
                order_ptr[j] = scratch_ptr[j]
        if elastic:     # w exact: a step's soft threshold may have read an older v_j
            for j in range(n_features + 1):
                w_ptr[j] = soft_threshold(v_ptr[j], kappa)
    rng_state[0] = rs.s0
    rng_state[1] = rs.s1
    rng_state[2] = rs.s2
    rng_state[3] = rs.s3
    return max_slope, new_active
