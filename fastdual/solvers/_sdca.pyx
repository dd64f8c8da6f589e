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
c_i |d/da(-phi*(-a) - z a)|, exceeds the threshold of its direction sits on a bound and is pushed
outward: it leaves the active set (swapped behind it) until the caller reactivates everyone. The
caller passes the previous epoch's largest slopes as the thresholds, as LIBLINEAR does: for the
hinge family one per bound of beta = a y (LIBLINEAR's PGmax and PGmin), for other boxes one. Shrinking
only skips coordinates, so D still never decreases, and the certificate is always computed on all
samples.
"""
import numpy as np
cimport numpy as cnp
from cython cimport floating
from libc.math cimport fabs
from libc.stdint cimport uint64_t

from fastdual._core.losses cimport STEP_STATE_SIZE, Loss
from fastdual.solvers._sdca_step cimport check_step_state, dual_step, shrinks
from fastdual._core.rng cimport RandomState, rng_alias, rng_below, rng_shuffle
from fastdual._core.rows cimport (drop_active, prefetch, prefetch_ahead, row_range, row_dot,
                                  row_axpy, row_soft_threshold, soft_threshold)

cnp.import_array()

cdef enum:
    # group_steps: at most this many root-finding steps a group (each a loss call per run).
    MAX_ROOT_STEPS = 200

# group_steps: the common margin's bracket is closed to this relative width.
cdef double ROOT_RTOL = 1e-15


def sdca_epoch(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
               Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
               const double[::1] y, const double[::1] sample_weight, const double[::1] sq_norms,
               double[::1] duals, double[::1] v, double[::1] w,
               Loss loss, double l2, double l1, int option, double q_max,
               bint with_replacement, Py_ssize_t[::1] order, cnp.uint64_t[::1] rng_state,
               Py_ssize_t n_active, double shrink_up, double shrink_down,
               const double[::1] alias_keep, const Py_ssize_t[::1] alias,
               double[::1] step_state=None):
    """Run one epoch in place on duals, v, w, order and rng_state.

    Visits the n_active samples of order[0:n_active] in a fresh random order (or n_samples
    draws with replacement, then without shrinking: uniform, or with the probabilities of the
    alias table (alias_keep, alias) when it is not empty). Returns (max_up, max_down, n_active):
    the largest projected slopes c_i |d/da| pushing up and down (_sdca_step.shrinks) over the
    steps that moved, the next epoch's shrink thresholds, and the new active-set size.
    step_state: None, or the loss's step state for every sample (losses.new_step_state; the
    logistic step's kept logits), read and updated by the steps.
    """
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double* v_ptr = &v[0]
    cdef double* w_ptr = &w[0]
    cdef double* state = (&step_state[0] if step_state is not None and step_state.shape[0] > 0
                          else NULL)
    check_step_state(loss, step_state, n_samples)
    cdef bint elastic = l1 > 0.0
    cdef bint weighted = alias_keep.shape[0] > 0
    cdef bint shrinking = loss.has_box and not with_replacement
    cdef double kappa = l1 / l2
    cdef double inv_l2n = 1.0 / (l2 * n_samples)
    cdef double z, c, q, a_old, a_new, delta, scale
    cdef double max_up = 0.0, max_down = 0.0
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
                ahead = prefetch_ahead(x, ind, ptr, &order[0], t, n_steps, n_features)
                if ahead >= 0:
                    # (its per-sample values: four arrays of n doubles, beyond a 512 KiB L2
                    # from 16,000 samples on)
                    prefetch(&duals[ahead])
                    prefetch(&sample_weight[ahead])
                    prefetch(&sq_norms[ahead])
                    prefetch(&y[ahead])
                    if state != NULL:
                        prefetch(state + STEP_STATE_SIZE * ahead)
            t += 1
            c = sample_weight[i]
            if c == 0.0:
                continue
            row_range(ptr, i, n_features, &start, &end)
            z = row_dot(x, ind, start, end, w_ptr) + bias * w_ptr[n_features]
            q = c * sq_norms[i] * inv_l2n
            a_old = duals[i]
            a_new = dual_step(loss, option, y[i], z, a_old, q, q_max,
                              state + STEP_STATE_SIZE * i if state != NULL else NULL)
            delta = a_new - a_old
            if shrinking and shrinks(loss, c, y[i], z, a_old, delta, shrink_up, shrink_down,
                                     &max_up, &max_down):
                drop_active(&order[0], &t, &n_steps, i)     # out of the active set
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
    return max_up, max_down, (n_active if with_replacement else n_steps)


def group_steps(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                const double[::1] y, const double[::1] sample_weight,
                const double[::1] sq_norms, double[::1] duals, double[::1] v, Loss loss,
                double l2, const Py_ssize_t[::1] group_ptr, const Py_ssize_t[::1] run_ptr,
                const Py_ssize_t[::1] members, const double[::1] run_weight):
    """One exact block step per group of identical rows (l1 = 0, w = v; docs/math.md 4m).

    Group g is the runs group_ptr[g] .. group_ptr[g + 1] - 1, run r the samples
    members[run_ptr[r]:run_ptr[r + 1]], which share one target and whose weights sum to
    run_weight[r]; all share the row of the group's first member. The duals enter v only through u = sum_j c_j a_j, so the block's dual
    is F = sum_j c_j (-phi*(-a_j)) - u z0 - q u^2 / 2 (z0 the row's margin without the group,
    q = ||x||^2 / (l2 n)), maximised where every a_j = -phi'(y_j, s) at the common margin
    s = z0 + q u: one increasing function of s whose root bisection finds (one loss call per
    run and bisection step). A group already there (every a_j = -phi'(y_j, z) at its margin z)
    is skipped; a step is taken only if F increases. Coordinate steps alone crawl here:
    samples with one row and different targets pull v in opposite directions, and each step
    moves its own dual by about 1 / q (docs/solvers/sdca.md, "Duplicated rows"). Returns
    (the groups whose duals moved, the increase of the dual objective D they made).
    """
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double* v_ptr = &v[0]
    cdef double inv_l2n = 1.0 / (l2 * n_samples)
    cdef Py_ssize_t g, r, k, j, first_run, last_run, start, end, it, moved = 0
    cdef double gain = 0.0
    cdef double q, u_old, z, z0, lo, hi, mid, h_lo, h_hi, width, u_lo, u_hi, u_t, u_mid
    cdef double theta, f_old, f_new, u_new, a_lo, a_hi, a_new, a_z, weight, scale, h_mid
    cdef bint optimal
    cdef int side
    with nogil:
        for g in range(group_ptr.shape[0] - 1):
            first_run = group_ptr[g]
            last_run = group_ptr[g + 1]
            j = members[run_ptr[first_run]]
            q = sq_norms[j] * inv_l2n
            if q <= 0.0:
                continue
            row_range(ptr, j, n_features, &start, &end)
            z = row_dot(x, ind, start, end, v_ptr) + bias * v_ptr[n_features]
            u_old = 0.0
            f_old = 0.0
            optimal = True
            for r in range(first_run, last_run):
                a_z = loss.dual_from_margin(y[members[run_ptr[r]]], z)
                for k in range(run_ptr[r], run_ptr[r + 1]):
                    j = members[k]
                    u_old += sample_weight[j] * duals[j]
                    if fabs(duals[j] - a_z) > 1e-12 * (1.0 + fabs(a_z)):
                        optimal = False
            if optimal:
                continue
            for k in range(run_ptr[first_run], run_ptr[last_run]):
                j = members[k]
                f_old += sample_weight[j] * loss.dual_value(y[j], duals[j])
            z0 = z - q * u_old
            f_old = f_old - u_old * z0 - 0.5 * q * u_old * u_old
            # h(s) = s - z0 - q u(s) increases with s (u(s) = sum_j c_j (-phi'(y_j, s))
            # decreases): bracket its root from the current margin outwards, then bisect.
            width = 1.0 + fabs(z)
            lo = z - width
            h_lo = _group_h(loss, lo, z0, q, y, run_weight, run_ptr, members, first_run,
                            last_run, &u_lo)
            it = 0
            while h_lo > 0.0 and it < 1100:
                width *= 2.0
                lo = z - width
                h_lo = _group_h(loss, lo, z0, q, y, run_weight, run_ptr, members,
                                first_run, last_run, &u_lo)
                it += 1
            width = 1.0 + fabs(z)
            hi = z + width
            h_hi = _group_h(loss, hi, z0, q, y, run_weight, run_ptr, members, first_run,
                            last_run, &u_hi)
            it = 0
            while h_hi < 0.0 and it < 1100:
                width *= 2.0
                hi = z + width
                h_hi = _group_h(loss, hi, z0, q, y, run_weight, run_ptr, members,
                                first_run, last_run, &u_hi)
                it += 1
            if not (h_lo <= 0.0 and h_hi >= 0.0):
                continue
            # Regula falsi with the Illinois rule (the end kept twice has its h halved), which
            # ends in a few steps on the piecewise-linear h of the hinge-type losses and
            # superlinearly on smooth ones; bisection where it stalls. Ends when lo and hi are
            # adjacent doubles or h vanishes.
            side = 0
            for it in range(MAX_ROOT_STEPS):
                if it % 4 == 3 or not (h_hi - h_lo > 0.0):
                    mid = 0.5 * (lo + hi)
                else:
                    mid = lo - h_lo * ((hi - lo) / (h_hi - h_lo))
                    if not (lo < mid < hi):
                        mid = 0.5 * (lo + hi)
                if mid <= lo or mid >= hi:
                    break
                h_mid = _group_h(loss, mid, z0, q, y, run_weight, run_ptr, members,
                                 first_run, last_run, &u_mid)
                if h_mid == 0.0:
                    lo = hi = mid
                    u_lo = u_hi = u_mid
                    break
                if h_mid < 0.0:
                    lo, h_lo, u_lo = mid, h_mid, u_mid
                    if side == -1:
                        h_hi *= 0.5
                    side = -1
                else:
                    hi, h_hi, u_hi = mid, h_mid, u_mid
                    if side == 1:
                        h_lo *= 0.5
                    side = 1
                if hi - lo <= ROOT_RTOL * (fabs(lo) + fabs(hi)):
                    break
            # The duals at lo and hi bracket the block's optimum; a kink of the loss (the
            # hinge's margin 1) between them leaves the members on it free: every a_j is
            # interpolated between its two values so that sum_j c_j a_j = (s - z0) / q.
            u_t = (0.5 * (lo + hi) - z0) / q
            if u_t > u_lo:
                u_t = u_lo
            if u_t < u_hi:
                u_t = u_hi
            theta = (u_t - u_hi) / (u_lo - u_hi) if u_lo > u_hi else 0.0
            u_new = 0.0
            f_new = 0.0
            for r in range(first_run, last_run):
                j = members[run_ptr[r]]
                a_lo = loss.dual_from_margin(y[j], lo)
                a_hi = loss.dual_from_margin(y[j], hi)
                a_new = a_hi + theta * (a_lo - a_hi)
                u_new += run_weight[r] * a_new
                f_new += run_weight[r] * loss.dual_value(y[j], a_new)
            f_new = f_new - u_new * z0 - 0.5 * q * u_new * u_new
            if not f_new > f_old:
                continue
            for r in range(first_run, last_run):
                j = members[run_ptr[r]]
                a_lo = loss.dual_from_margin(y[j], lo)
                a_hi = loss.dual_from_margin(y[j], hi)
                a_new = a_hi + theta * (a_lo - a_hi)
                for k in range(run_ptr[r], run_ptr[r + 1]):
                    duals[members[k]] = a_new
            scale = (u_new - u_old) * inv_l2n
            row_axpy(x, ind, start, end, scale, v_ptr)
            v_ptr[n_features] += scale * bias
            moved += 1
            gain += f_new - f_old
    return moved, gain / n_samples


cdef inline double _group_h(Loss loss, double s, double z0, double q, const double[::1] y,
                            const double[::1] run_weight, const Py_ssize_t[::1] run_ptr,
                            const Py_ssize_t[::1] members, Py_ssize_t first_run,
                            Py_ssize_t last_run, double* u) noexcept nogil:
    """h(s) = s - z0 - q u(s) of group_steps, u(s) = sum_j c_j (-phi'(y_j, s)) written to u:
    one loss call per run of equal targets."""
    cdef Py_ssize_t r
    cdef double total = 0.0
    for r in range(first_run, last_run):
        total += run_weight[r] * loss.dual_from_margin(y[members[run_ptr[r]]], s)
    u[0] = total
    return s - z0 - q * total
