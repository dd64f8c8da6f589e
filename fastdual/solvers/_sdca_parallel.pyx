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
entry, which every step writes, always atomically (or replicated, below; without an intercept,
bias = 0, it is not written at all). A plain addition can be lost when two threads
add to the same entry at the same instant, so Wild's v may drift from v(alpha); the driver then
takes over the v(duals) each certificate's pass sums, or recomputes it before the check where
the certificate's v is not its own (sdca.py, SDCA.point and dual_vector_out), and the
certificate is computed from the returned duals anyway, so a lost update costs progress, never
a wrong bound.
The driver picks Wild on wide sparse data, Atomic otherwise (sdca.py, WILD_MIN_FEATURES): an
atomic double addition is a compare-and-swap loop on x86, which made one thread's epoch 2-3
times slower on news20 and on a 1M-feature synthetic set, while Wild's drift there was at the
rounding level (two threads rarely touch one entry at the same instant); on dense or narrow
data Wild's lost updates slowed convergence many times over. Lock (a lock per feature of the
row) costs more than Atomic.

Hot entries: an entry of v that most rows write (the intercept's; on CSR data the features in
most rows, chosen by the driver) would be written by every thread at nearly every step, its
cache line moving between the cores each time. Each thread keeps replicas of these entries
instead: its margins read them and its steps add to them (and to a pending sum); every
merge_every steps and at the end of its block it adds the pending sums to the shared values
(hot.shared, packed, atomically) and refreshes its replicas from them. A thread sees its own
updates at once and the other threads' at most merge_every steps late, and none is lost. The
shared values are copied from v before the threads start and back after they join. With one
thread merging after every step, the arithmetic is the sequential kernel's, bit for bit.

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
from cython.parallel cimport prange, threadid

from fastdual._core.losses cimport STEP_STATE_SIZE, Loss
from fastdual.solvers._sdca_step cimport check_step_state, dual_step, shrinks
from fastdual._core.rng cimport RandomState, rng_shuffle
from fastdual._core.rows cimport (drop_active, prefetch_ahead, row_range, row_dot,
                                  soft_threshold)

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

cpdef Py_ssize_t replica_stride(Py_ssize_t n_hot) noexcept nogil:
    """Doubles per thread in the replicas' work space for n_hot hot entries: local v, pending
    additions and local w, padded so that no two threads (and the shared slots) share a cache
    line."""
    return ((3 * n_hot + 7) // 8) * 8 + 8


cdef enum:
    COLD = 255      # Hot.slot's value for an entry that is not replicated

COLD_SLOT = COLD    # (for the driver, which builds Hot.slot)


cdef struct Hot:
    # The hot entries of v: each thread's replicas of them (see the module's docstring).
    Py_ssize_t n                # how many (0: no replicas, every entry is written in place)
    const cnp.uint8_t* slot     # feature j -> its slot in [0, n), or COLD
    const cnp.uint64_t* bits    # bit j set: feature j is hot
    Py_ssize_t intercept        # the intercept entry's slot, or -1
    const Py_ssize_t* entries   # slot -> entry of v
    double* shared              # the slots' shared values during the epoch (v's hot entries)
    double* replicas            # per thread: local v, pending additions, local w (l1 > 0)
    Py_ssize_t stride           # doubles between two threads' replicas (no shared line)
    Py_ssize_t merge_every      # steps between two merges of a thread's pending additions


cdef inline bint is_hot(const cnp.uint64_t* bits, Py_ssize_t j) noexcept nogil:
    return (bits[j >> 6] >> (j & 63)) & 1


cdef inline double hot_value(const cnp.uint64_t* bits, const cnp.uint8_t* slot,
                             const double* local_w, const double* w, Py_ssize_t j) noexcept nogil:
    """w_j as the thread sees it: its replica's for a hot entry, the shared one otherwise."""
    if is_hot(bits, j):
        return local_w[slot[j]]
    return w[j]


cdef inline void hot_merge(const Hot* hot, double* local_v, double* pending, double* local_w,
                           bint elastic, double kappa) noexcept nogil:
    """Adds a thread's pending additions to the shared hot slots (atomically) and refreshes
    its replicas from them (the other threads' merged additions included)."""
    cdef Py_ssize_t s
    for s in range(hot.n):
        if pending[s] != 0.0:
            atomic_add(&hot.shared[s], pending[s])
            pending[s] = 0.0
        local_v[s] = hot.shared[s]
        if elastic:
            local_w[s] = soft_threshold(local_v[s], kappa)


cdef void run_block(const floating* x, const int* ind, const int* ptr,
                    Py_ssize_t n_features, double bias, const double* y,
                    const double* sample_weight, const double* sq_norms, double* duals,
                    double* v, double* w, Loss loss, double inv_l2n, double kappa,
                    bint elastic, int option, double q_max, bint atomic,
                    Py_ssize_t* order, Py_ssize_t n_steps, bint shrinking,
                    double shrink_up, double shrink_down, Py_ssize_t* kept,
                    double* max_up_out, double* max_down_out, const Hot* hot,
                    int thread, double* step_state) noexcept nogil:
    """Seed 000's steps over the samples order[0:n_steps] (one thread's block); the same
    arithmetic as _sdca.pyx's loop, with atomic (or Wild's plain) additions to v, and, with hot
    entries, the thread's replicas of them. Writes the block's active count (shrinking) to kept
    and its largest projected slopes up and down (_sdca_step.shrinks) to max_up_out and
    max_down_out."""
    cdef double z, z_odd, c, q, a_old, a_new, delta, scale, u
    cdef double max_up = 0.0, max_down = 0.0
    cdef Py_ssize_t t = 0, i, start, end, k, j, s, ahead
    cdef Py_ssize_t since_merge = 0
    cdef bint replicas = hot.n > 0
    cdef double* local_v = NULL
    cdef double* pending = NULL
    cdef double* local_w = NULL
    cdef Py_ssize_t intercept_slot = -1
    cdef const cnp.uint8_t* slot = hot.slot
    cdef const cnp.uint64_t* bits = hot.bits
    if replicas:
        local_v = hot.replicas + thread * hot.stride
        pending = local_v + hot.n
        local_w = pending + hot.n if elastic else local_v
        intercept_slot = hot.intercept
        hot_merge(hot, local_v, pending, local_w, elastic, kappa)   # fresh replicas
    while t < n_steps:
        i = order[t]
        prefetch_ahead(x, ind, ptr, order, t, n_steps, n_features)
        t += 1
        c = sample_weight[i]
        if c == 0.0:
            continue
        row_range(ptr, i, n_features, &start, &end)
        if replicas:
            since_merge += 1
            if since_merge >= hot.merge_every:
                hot_merge(hot, local_v, pending, local_w, elastic, kappa)
                since_merge = 0
        if bits != NULL:
            # row_dot's two partial sums in row_dot's order, a hot entry's value read from
            # the thread's replica (with one thread merging every step: row_dot's bits).
            z = 0.0
            z_odd = 0.0
            k = start
            while k + 2 <= end:
                z += x[k] * hot_value(bits, slot, local_w, w, ind[k])
                z_odd += x[k + 1] * hot_value(bits, slot, local_w, w, ind[k + 1])
                k += 2
            if k < end:
                z += x[k] * hot_value(bits, slot, local_w, w, ind[k])
            z = z + z_odd
        else:
            z = row_dot(x, ind, start, end, w)
        if intercept_slot >= 0:
            z += bias * local_w[intercept_slot]
        else:
            z += bias * w[n_features]
        q = c * sq_norms[i] * inv_l2n
        a_old = duals[i]
        a_new = dual_step(loss, option, y[i], z, a_old, q, q_max,
                          step_state + STEP_STATE_SIZE * i if step_state != NULL else NULL)
        delta = a_new - a_old
        if shrinking and shrinks(loss, c, y[i], z, a_old, delta, shrink_up, shrink_down,
                                 &max_up, &max_down):
            drop_active(order, &t, &n_steps, i)
        if delta == 0.0:
            continue
        duals[i] = a_new
        scale = c * delta * inv_l2n
        if bits != NULL:
            # The hot entries into the thread's replicas (merged every merge_every steps), the
            # others into v as below.
            for k in range(start, end):
                j = ind[k]
                u = scale * x[k]
                if is_hot(bits, j):
                    s = slot[j]
                    local_v[s] += u
                    pending[s] += u
                    if elastic:
                        local_w[s] = soft_threshold(local_v[s], kappa)
                else:
                    if atomic:
                        atomic_add(&v[j], u)
                    else:
                        v[j] += u
                    if elastic:
                        w[j] = soft_threshold(v[j], kappa)
        elif ind != NULL:
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
        # The intercept's entry, which every step writes and all threads share: replicated,
        # or else always atomic (and not written at all without an intercept: bias = 0).
        if intercept_slot >= 0:
            u = scale * bias
            local_v[intercept_slot] += u
            pending[intercept_slot] += u
            if elastic:
                local_w[intercept_slot] = soft_threshold(local_v[intercept_slot], kappa)
        elif bias != 0.0:
            atomic_add(&v[n_features], scale * bias)
            if elastic:
                w[n_features] = soft_threshold(v[n_features], kappa)
    if replicas:
        hot_merge(hot, local_v, pending, local_w, elastic, kappa)  # nothing left pending
    kept[0] = n_steps
    max_up_out[0] = max_up
    max_down_out[0] = max_down


def sdca_parallel_epoch(const floating[::1] data, const int[::1] indices,
                        const int[::1] indptr, Py_ssize_t n_samples, Py_ssize_t n_features,
                        double bias, const double[::1] y, const double[::1] sample_weight,
                        const double[::1] sq_norms, double[::1] duals, double[::1] v,
                        double[::1] w, Loss loss, double l2, double l1, int option,
                        double q_max, Py_ssize_t[::1] order, cnp.uint64_t[::1] rng_state,
                        Py_ssize_t n_active, double shrink_up, double shrink_down,
                        int n_threads,
                        Py_ssize_t n_blocks, Py_ssize_t[::1] scratch, bint atomic=True,
                        const Py_ssize_t[::1] hot_entries=None,
                        const cnp.uint8_t[::1] hot_slot=None,
                        const cnp.uint64_t[::1] hot_bits=None, double[::1] replicas=None,
                        Py_ssize_t merge_every=0, double[::1] step_state=None):
    """Run one epoch in place on duals, v, w, order and rng_state with n_threads threads over
    n_blocks blocks (1 <= n_threads <= n_blocks <= n_active) of a fresh permutation of
    order[0:n_active]. scratch: n_samples entries of work space. atomic: PASSCoDe-Atomic
    (every addition to v atomic) instead of Wild (plain additions to the features' entries,
    which may lose an update: the caller repairs v from the duals at its next check).

    Hot entries (none when hot_entries is None or empty): the entries of v listed in
    hot_entries (increasing: fewer than COLD_SLOT = 255 features, CSR only, then n_features
    for the intercept's entry when bias != 0) are replicated per thread and merged every
    merge_every (>= 1) steps. hot_slot: n_features bytes, the position of feature j in that
    list or COLD_SLOT; hot_bits: bit j (of word j // 64) set for each hot feature j; replicas:
    work space of (n_threads + 1) * replica_stride(len(hot_entries)) doubles.

    step_state: the loss's step state (as in _sdca.sdca_epoch; each sample's slot is written by
    the one thread whose block holds it).

    Returns (max_up, max_down, n_active) as _sdca.sdca_epoch does."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double* v_ptr = &v[0]
    cdef double* state = (&step_state[0] if step_state is not None and step_state.shape[0] > 0
                          else NULL)
    check_step_state(loss, step_state, n_samples)
    cdef double* w_ptr = &w[0]
    cdef Py_ssize_t* order_ptr = &order[0]
    cdef Py_ssize_t* scratch_ptr = &scratch[0]
    cdef bint elastic = l1 > 0.0
    cdef bint shrinking = loss.has_box
    cdef double kappa = l1 / l2
    cdef double inv_l2n = 1.0 / (l2 * n_samples)
    cdef double max_up = 0.0, max_down = 0.0
    cdef Py_ssize_t b, j, pos, new_active
    cdef Py_ssize_t[::1] bounds = np.empty(n_blocks + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] kept = np.empty(n_blocks, dtype=np.intp)
    cdef double[::1] slopes = np.zeros(n_blocks)
    cdef double[::1] slopes_down = np.zeros(n_blocks)
    cdef Hot hot
    cdef Py_ssize_t s
    cdef RandomState rs
    hot.n = 0 if hot_entries is None else hot_entries.shape[0]
    hot.slot = NULL
    hot.bits = NULL
    hot.intercept = -1
    if hot.n > 0:
        hot.intercept = hot.n - 1 if hot_entries[hot.n - 1] == n_features else -1
        if ind != NULL and hot.n > (1 if hot.intercept >= 0 else 0):   # hot features
            hot.slot = &hot_slot[0]
            hot.bits = &hot_bits[0]
        hot.entries = &hot_entries[0]
        hot.stride = replica_stride(hot.n)
        hot.shared = &replicas[0]
        hot.replicas = hot.shared + hot.stride
        hot.merge_every = merge_every
    rs.s0 = rng_state[0]
    rs.s1 = rng_state[1]
    rs.s2 = rng_state[2]
    rs.s3 = rng_state[3]
    for b in range(n_blocks + 1):
        bounds[b] = (b * n_active) // n_blocks
    with nogil:
        rng_shuffle(&rs, order_ptr, n_active)
        for s in range(hot.n):      # the hot entries live in hot.shared during the epoch
            hot.shared[s] = v_ptr[hot.entries[s]]
        for b in prange(n_blocks, num_threads=n_threads, schedule="dynamic", chunksize=1):
            run_block(x, ind, ptr, n_features, bias, &y[0], &sample_weight[0], &sq_norms[0],
                      &duals[0], v_ptr, w_ptr, loss, inv_l2n, kappa, elastic, option, q_max,
                      atomic, order_ptr + bounds[b], bounds[b + 1] - bounds[b], shrinking,
                      shrink_up, shrink_down, &kept[b], &slopes[b], &slopes_down[b], &hot,
                      threadid(), state)
        for s in range(hot.n):
            v_ptr[hot.entries[s]] = hot.shared[s]
        for b in range(n_blocks):
            if slopes[b] > max_up:
                max_up = slopes[b]
            if slopes_down[b] > max_down:
                max_down = slopes_down[b]
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
        if elastic:     # w exact: a step's soft threshold may have read an older v_j (and
            # the hot entries' w are the threads' replicas' until now)
            for j in range(n_features + 1):
                w_ptr[j] = soft_threshold(v_ptr[j], kappa)
    rng_state[0] = rs.s0
    rng_state[1] = rs.s1
    rng_state[2] = rs.s2
    rng_state[3] = rs.s3
    return max_up, max_down, new_active
