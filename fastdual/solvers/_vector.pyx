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

from fastdual._core.multiclass cimport VectorLoss, cs_margin_duals, cs_step_active
from fastdual._core.rng cimport RandomState, rng_shuffle
from fastdual._core.rows cimport prefetch, prefetch_ahead, row_range, soft_threshold

from libc.math cimport INFINITY, fabs

cnp.import_array()

def vector_epoch(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                 Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                 const Py_ssize_t[::1] labels, const double[::1] sample_weight,
                 const double[::1] sq_norms, double[:, ::1] duals, double[:, ::1] v,
                 double[:, ::1] w, VectorLoss loss, double l2, double l1,
                 Py_ssize_t[::1] order, cnp.uint64_t[::1] rng_state, double[:, ::1] scratch,
                 Py_ssize_t[::1] sort_order):
    """One epoch over a fresh permutation of the samples, in place. scratch: (5, k) work space,
    sort_order: (k,) work space. (Crammer-Singer, whose duals sit on their domain's faces,
    runs crammer_singer_epoch instead, which shrinks.)"""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t k = duals.shape[1], n = n_samples
    cdef Py_ssize_t t, i, kk, j, m, start, end, yi
    cdef double* z = &scratch[0, 0]
    cdef double* a_new = &scratch[1, 0]
    cdef double* work = &scratch[2, 0]          # two rows: the step's 2k doubles
    cdef double* delta = &scratch[4, 0]
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
            j = prefetch_ahead(x, ind, ptr, &order[0], t, n, n_features)
            if j >= 0:
                # Its duals, which the step reads first (k doubles, 8 to a cache line).
                for m in range(0, k, 8):
                    prefetch(&duals[j, m])
                prefetch(&duals[j, k - 1])
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
            t += 1
            if not moved:
                continue
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


def crammer_singer_epoch(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                         Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                         const Py_ssize_t[::1] labels, const double[::1] sample_weight,
                         const double[::1] sq_norms, double[:, ::1] duals, double[:, ::1] v,
                         double[:, ::1] w, double gamma, double l2, double l1,
                         Py_ssize_t[::1] order, cnp.uint64_t[::1] rng_state,
                         double[:, ::1] scratch, Py_ssize_t[:, ::1] index_scratch,
                         int[:, ::1] classes, int[::1] n_classes, int[::1] label_pos,
                         Py_ssize_t n_active, bint shrinking):
    """One Prox-SDCA epoch for Crammer-Singer (seed 000 Sec. 3.3; smoothed by gamma >= 0) over
    a fresh permutation of the active samples order[0:n_active], with LIBLINEAR -s 4's
    shrinking of single (sample, class) variables (docs/math.md, "Shrinking classes").

    Sample i's active classes are classes[i, 0:n_classes[i]] (a permutation of 0..k-1 whose
    tail holds the shrunk ones, each at its bound: 0, or 1 for the label); label_pos[i] is the
    label's position in it. Only the active classes' margins are computed (one row . w_m each),
    the step is solved over them (cs_step_active), and V's rows are updated only for the
    classes whose dual moved. With shrinking, a class at its bound whose gradient
    G_m = z_m + [m != y] (1 + gamma a_m) lies below every G of the classes that can still rise
    leaves the sample's active set, and a sample with at most one active class leaves the
    epoch's (swapped behind order[0:n]); the caller reactivates everything.

    Returns (n_active, violation, work): the new count of active samples, the largest
    max_m G_m - min_{m free} G_m over the samples visited (LIBLINEAR's stopping measure, on the
    shrunk problem), and the margins computed, sum over the samples visited of (stored entries
    + 1) x active classes (a certificate computes (nnz + n) k). scratch: (7, k) doubles,
    index_scratch: (2, k) indices."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t k = duals.shape[1], n = n_active
    cdef Py_ssize_t t, i, kk, j, m, start, end, yi, ka, yp, nz, cm, swap
    cdef double* z = &scratch[0, 0]
    cdef double* a_old = &scratch[1, 0]
    cdef double* a_new = &scratch[2, 0]
    cdef double* values = &scratch[3, 0]
    cdef double* grad = &scratch[4, 0]
    cdef double* moved = &scratch[5, 0]
    cdef double* full = &scratch[6, 0]
    cdef Py_ssize_t* sort_order = &index_scratch[0, 0]
    cdef Py_ssize_t* moved_class = &index_scratch[1, 0]
    cdef int* cls
    cdef double* ai
    cdef double* vp = &v[0, 0]
    cdef double* wp = &w[0, 0]
    cdef double* row
    cdef const double* wrow
    cdef double c, q, scale, xv, g, low, high, d, kappa = l1 / l2
    cdef double inv_l2n = 1.0 / (l2 * n_samples), violation = 0.0
    cdef double work = 0.0, s0, s1, s2, s3
    cdef Py_ssize_t c0, c1, c2, c3, width
    cdef bint elastic = l1 > 0.0, free
    cdef RandomState rs
    rs.s0, rs.s1, rs.s2, rs.s3 = rng_state[0], rng_state[1], rng_state[2], rng_state[3]
    with nogil:
        rng_shuffle(&rs, &order[0], n)
        t = 0
        while t < n:
            i = order[t]
            j = prefetch_ahead(x, ind, ptr, &order[0], t, n, n_features)
            if j >= 0:
                if ptr != NULL:
                    # The rest of its row (prefetch_row asks for its first lines).
                    for kk in range(ptr[j] + 8, ptr[j + 1], 8):
                        prefetch(x + kk)
                    for kk in range(ptr[j] + 16, ptr[j + 1], 16):
                        prefetch(ind + kk)
                prefetch(&duals[j, 0])
                prefetch(&classes[j, 0])
                prefetch(&n_classes[j])
                prefetch(&label_pos[j])
                prefetch(&sample_weight[j])
                prefetch(&labels[j])
                prefetch(&sq_norms[j])
            c = sample_weight[i]
            if c == 0.0:
                t += 1
                continue
            yi = labels[i]
            ai = &duals[i, 0]
            q = c * sq_norms[i] * inv_l2n
            if q == 0.0:
                # An empty row without intercept: its margins are 0 whatever w, and its margin
                # duals the exact maximiser; V does not see it.
                for m in range(k):
                    full[m] = 0.0
                cs_margin_duals(full, k, yi, gamma, ai)
                if shrinking:
                    n -= 1
                    order[t] = order[n]
                    order[n] = i
                else:
                    t += 1
                continue
            cls = &classes[i, 0]
            ka = n_classes[i]
            yp = label_pos[i]
            row_range(ptr, i, n_features, &start, &end)
            work += <double>((end - start + 1) * ka)
            # The margins of the active classes, in their positions.
            if ka == k:
                wrow = wp + n_features * k
                for m in range(k):
                    full[m] = bias * wrow[m]
                for kk in range(start, end):
                    j = ind[kk] if ind != NULL else kk - start
                    xv = x[kk]
                    wrow = wp + j * k
                    for m in range(k):
                        full[m] += xv * wrow[m]
                for m in range(k):
                    z[m] = full[cls[m]]
            else:
                # Four classes at a time (then the last one to three), each margin in a
                # register over the row.
                m = 0
                while m < ka:
                    width = min(ka - m, 4)
                    c0 = cls[m]
                    c1 = cls[m + 1] if width > 1 else c0
                    c2 = cls[m + 2] if width > 2 else c0
                    c3 = cls[m + 3] if width > 3 else c0
                    wrow = wp + n_features * k
                    s0, s1 = bias * wrow[c0], bias * wrow[c1]
                    s2, s3 = bias * wrow[c2], bias * wrow[c3]
                    if width == 4:
                        for kk in range(start, end):
                            j = ind[kk] if ind != NULL else kk - start
                            xv = x[kk]
                            wrow = wp + j * k
                            s0 += xv * wrow[c0]
                            s1 += xv * wrow[c1]
                            s2 += xv * wrow[c2]
                            s3 += xv * wrow[c3]
                    elif width == 3:
                        for kk in range(start, end):
                            j = ind[kk] if ind != NULL else kk - start
                            xv = x[kk]
                            wrow = wp + j * k
                            s0 += xv * wrow[c0]
                            s1 += xv * wrow[c1]
                            s2 += xv * wrow[c2]
                    elif width == 2:
                        for kk in range(start, end):
                            j = ind[kk] if ind != NULL else kk - start
                            xv = x[kk]
                            wrow = wp + j * k
                            s0 += xv * wrow[c0]
                            s1 += xv * wrow[c1]
                    else:
                        for kk in range(start, end):
                            j = ind[kk] if ind != NULL else kk - start
                            s0 += x[kk] * wp[j * k + c0]
                    z[m] = s0
                    if width > 1:
                        z[m + 1] = s1
                    if width > 2:
                        z[m + 2] = s2
                    if width > 3:
                        z[m + 3] = s3
                    m += width
            # Gradients of the (minimised, negated) dual in the active coordinates; low: the
            # smallest among those below their bound (free to rise), high: the largest.
            low = INFINITY
            high = -INFINITY
            for m in range(ka):
                cm = cls[m]
                if cm == yi:
                    g = z[m]
                    free = ai[cm] < 1.0
                else:
                    g = z[m] + 1.0 + gamma * ai[cm]
                    free = ai[cm] < 0.0
                grad[m] = g
                if free and g < low:
                    low = g
                if g > high:
                    high = g
            if shrinking:
                m = 0
                while m < ka:
                    cm = cls[m]
                    if grad[m] < low and ai[cm] == (1.0 if cm == yi else 0.0):
                        ka -= 1
                        swap = cls[m]
                        cls[m] = cls[ka]
                        cls[ka] = <int>swap
                        z[m], z[ka] = z[ka], z[m]
                        grad[m], grad[ka] = grad[ka], grad[m]
                        if yp == ka:
                            yp = m
                        elif yp == m:
                            yp = ka
                    else:
                        m += 1
                n_classes[i] = <int>ka
                label_pos[i] = <int>yp
                if ka <= 1:
                    n -= 1
                    order[t] = order[n]
                    order[n] = i
                    continue
            t += 1
            if not high - low > 1e-12:       # optimal in its active classes (or none can rise)
                continue
            if high - low > violation:
                violation = high - low
            for m in range(ka):
                a_old[m] = ai[cls[m]]
            cs_step_active(z, a_old, ka, yp if yp < ka else -1, q, gamma, a_new, values,
                           sort_order)
            nz = 0
            for m in range(ka):
                d = a_new[m] - a_old[m]
                if d != 0.0:
                    ai[cls[m]] = a_new[m]
                    moved_class[nz] = cls[m]
                    moved[nz] = d
                    nz += 1
            if nz == 0:
                continue
            scale = c * inv_l2n
            if nz == 2 and not elastic:
                # The common case: one class's dual falls, another's rises.
                c0, c1 = moved_class[0], moved_class[1]
                s0, s1 = moved[0], moved[1]
                for kk in range(start, end):
                    j = ind[kk] if ind != NULL else kk - start
                    xv = scale * x[kk]
                    row = vp + j * k
                    row[c0] += xv * s0
                    row[c1] += xv * s1
                row = vp + n_features * k
                xv = scale * bias
                row[c0] += xv * s0
                row[c1] += xv * s1
                continue
            for kk in range(start, end):
                j = ind[kk] if ind != NULL else kk - start
                xv = scale * x[kk]
                row = vp + j * k
                for m in range(nz):
                    row[moved_class[m]] += xv * moved[m]
                if elastic:
                    for m in range(nz):
                        cm = moved_class[m]
                        wp[j * k + cm] = soft_threshold(row[cm], kappa)
            row = vp + n_features * k
            xv = scale * bias
            for m in range(nz):
                row[moved_class[m]] += xv * moved[m]
            if elastic:
                for m in range(nz):
                    cm = moved_class[m]
                    wp[n_features * k + cm] = soft_threshold(row[cm], kappa)
    rng_state[0], rng_state[1], rng_state[2], rng_state[3] = rs.s0, rs.s1, rs.s2, rs.s3
    return n, violation, work


def vector_group_steps(const floating[::1] data, const int[::1] indices,
                       const int[::1] indptr, Py_ssize_t n_samples, Py_ssize_t n_features,
                       double bias, const Py_ssize_t[::1] labels,
                       const double[::1] sample_weight, const double[::1] sq_norms,
                       double[:, ::1] duals, double[:, ::1] v, VectorLoss loss, double l2,
                       const Py_ssize_t[::1] group_ptr, const Py_ssize_t[::1] run_ptr,
                       const Py_ssize_t[::1] members, double[:, ::1] scratch,
                       Py_ssize_t[::1] sort_order, Py_ssize_t max_sweeps):
    """Block steps for groups of identical rows with different labels (l1 = 0, W = V; the
    groups of sdca.conflicting_groups; docs/math.md 4m), for any k-class loss.

    All members of a group share the margins z = z0 + q u (u = sum_j c_j a_j, q = ||x||^2 /
    (l2 n)), so the block's dual F = sum_j c_j (-phi*(-a_j)) - u . z0 - q/2 ||u||^2 needs no
    pass over the row once z0 is known. Each sweep steps every member exactly (the kernel's
    step with curvature c_j q) and then extrapolates along the sweep's change d: a' + t d
    (a' the sweep's point) for t = 1, 2, 4, ... while F increases and the point stays in the duals' domain (F finite).
    On the direction that keeps u (copies of one row with different labels trading weight),
    where a sweep moves about 1 / (c q), that reaches the domain's face in log2(c q) trials
    instead of c q sweeps. Sweeps end after max_sweeps or when a sweep gains less than 1e-15
    of |F|; F never decreases. V is updated once per group. scratch: (8 + 2 g, k) for groups
    of at most g members. Returns (groups moved, the increase of the dual objective D)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t k = duals.shape[1]
    cdef double* vp = &v[0, 0]
    cdef double* z0 = &scratch[0, 0]
    cdef double* u = &scratch[1, 0]
    cdef double* z = &scratch[2, 0]
    cdef double* work = &scratch[3, 0]           # two rows: the step's 2k doubles
    cdef double* a_new = &scratch[5, 0]
    cdef double* trial = &scratch[6, 0]          # two rows: _block_dual's
    cdef double* saved = &scratch[8, 0]          # the members' duals before the group's step
    cdef Py_ssize_t g, r, kk, j, m, p, first, last, size, start, end, sweep, moved = 0
    cdef double* d                               # the sweep's change, after saved
    cdef double q, c, f_start, f_sweep, f_trial, f_start_t, t, best_t, xv
    cdef double total_gain = 0.0
    cdef double inv_l2n = 1.0 / (l2 * n_samples)
    cdef double* row
    cdef Py_ssize_t group_rows = (scratch.shape[0] - 8) // 2
    with nogil:
        for g in range(group_ptr.shape[0] - 1):
            first = run_ptr[group_ptr[g]]
            last = run_ptr[group_ptr[g + 1]]
            size = last - first
            if size > group_rows:
                continue
            d = saved + size * k
            j = members[first]
            q = sq_norms[j] * inv_l2n
            if q <= 0.0:
                continue
            row_range(ptr, j, n_features, &start, &end)
            row = vp + n_features * k
            for m in range(k):
                z[m] = bias * row[m]
                u[m] = 0.0
            for kk in range(start, end):
                xv = x[kk]
                row = vp + (ind[kk] if ind != NULL else kk - start) * k
                for m in range(k):
                    z[m] += xv * row[m]
            for p in range(size):
                j = members[first + p]
                for m in range(k):
                    saved[p * k + m] = duals[j, m]
                    u[m] += sample_weight[j] * duals[j, m]
            for m in range(k):
                z0[m] = z[m] - q * u[m]
            f_start = _block_dual(loss, duals, labels, sample_weight, members, first, size, k,
                                  z0, u, q, NULL, 0.0, trial)
            f_sweep = f_start
            for sweep in range(max_sweeps):
                # One exact step per member, at the common margins z0 + q u.
                for p in range(size):
                    j = members[first + p]
                    c = sample_weight[j]
                    for m in range(k):
                        z[m] = z0[m] + q * u[m]
                        d[p * k + m] = duals[j, m]
                    if c == 0.0:
                        continue
                    loss.step(z, &duals[j, 0], k, labels[j], c * q, a_new, work,
                              &sort_order[0])
                    for m in range(k):
                        u[m] += c * (a_new[m] - duals[j, m])
                        duals[j, m] = a_new[m]
                for p in range(size):
                    j = members[first + p]
                    for m in range(k):
                        d[p * k + m] = duals[j, m] - d[p * k + m]
                f_trial = _block_dual(loss, duals, labels, sample_weight, members, first,
                                      size, k, z0, u, q, NULL, 0.0, trial)
                # Extrapolate along d: the point a + (t - 1) d for t = 2, 4, ...
                best_t = 0.0
                t = 1.0
                while t < 1e15:
                    f_start_t = _block_dual(loss, duals, labels, sample_weight, members,
                                            first, size, k, z0, u, q, d, t, trial)
                    if not f_start_t > f_trial:
                        break
                    f_trial = f_start_t
                    best_t = t
                    t *= 2.0
                if best_t > 0.0:
                    for p in range(size):
                        j = members[first + p]
                        c = sample_weight[j]
                        for m in range(k):
                            duals[j, m] += best_t * d[p * k + m]
                            u[m] += c * best_t * d[p * k + m]
                if not f_trial > f_sweep + 1e-15 * fabs(f_sweep):
                    f_sweep = f_trial if f_trial > f_sweep else f_sweep
                    break
                f_sweep = f_trial
            if not f_sweep > f_start:
                for p in range(size):       # nothing gained: the duals as they were
                    j = members[first + p]
                    for m in range(k):
                        duals[j, m] = saved[p * k + m]
                continue
            # V += x (u_new - u_old) / (l2 n): u_old from the saved duals
            for m in range(k):
                z[m] = u[m]
            for p in range(size):
                j = members[first + p]
                for m in range(k):
                    z[m] -= sample_weight[j] * saved[p * k + m]
            for kk in range(start, end):
                xv = x[kk] * inv_l2n
                row = vp + (ind[kk] if ind != NULL else kk - start) * k
                for m in range(k):
                    row[m] += xv * z[m]
            row = vp + n_features * k
            for m in range(k):
                row[m] += bias * inv_l2n * z[m]
            moved += 1
            total_gain += f_sweep - f_start
    return moved, total_gain / n_samples


cdef double _block_dual(VectorLoss loss, double[:, ::1] duals, const Py_ssize_t[::1] labels,
                        const double[::1] sample_weight, const Py_ssize_t[::1] members,
                        Py_ssize_t first, Py_ssize_t size, Py_ssize_t k, const double* z0,
                        const double* u, double q, const double* d, double t,
                        double* scratch) noexcept nogil:
    """The block's dual sum_j c_j (-phi*(-a_j)) - u . z0 - q/2 ||u||^2 at the members' duals,
    or at the duals + t d if d is given (u moved accordingly); -inf outside the domain.
    scratch: 2k doubles."""
    cdef Py_ssize_t p, j, m
    cdef double total = 0.0, um, c
    cdef double* trial = scratch
    cdef double* shift = scratch + k
    for m in range(k):
        shift[m] = 0.0
    for p in range(size):
        j = members[first + p]
        c = sample_weight[j]
        if d == NULL:
            total += c * loss.dual_value(&duals[j, 0], k, labels[j])
        else:
            for m in range(k):
                trial[m] = duals[j, m] + t * d[p * k + m]
                shift[m] += c * t * d[p * k + m]
            total += c * loss.dual_value(trial, k, labels[j])
        if total == -INFINITY:
            return -INFINITY
    for m in range(k):
        um = u[m] + shift[m]
        total -= um * z0[m] + 0.5 * q * um * um
    return total
