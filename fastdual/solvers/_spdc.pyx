# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""SPDC epochs (seed 002, Algorithms 1, 2 and 3) with the delayed updates of Sec. 6.

Saddle form (seed 002 eq. 4), in fastdual's dual convention alpha_i = -y_i (the seed's y_i):

    min_w max_alpha (1/n) sum_i c_i (-alpha_i x_i . w - phi*(-alpha_i)) + l2/2 ||w||^2 + l1 ||w||_1

Sample weights enter as the seed's problem with rows sqrt(c_i) x_i and losses
c_i phi(. / sqrt(c_i)), whose conjugates are all gamma-strongly convex; in the normalised duals
alpha_i that is the same algorithm with the curvatures below (docs/math.md, "SPDC").

Iteration t, batch K of m samples, s_i = n p_i / m (p_i the probability that i is in K; s_i = 1
for uniform sampling, Algorithms 1 and 2; s_i = n p_i for weighted sampling, Algorithm 3):
  dual (eqs. 9, 21): alpha_i <- conjugate_prox(y_i, x_i . wbar, alpha_i, q = s_i / sigma), i in K
                  (with the seed's perturbation delta/2 alpha^2 added to phi* when delta > 0, which
                  is the same prox at curvature q + delta around q alpha_i / (q + delta))
  primal (eqs. 10, 23): w <- prox_{tau g}(w - tau (u + (1/m) sum_{i in K} -c_i dalpha_i x_i / s_i)),
                  prox_{tau g}(v) = soft_threshold(v, tau l1) / (1 + tau l2)
  u <- u + (1/n) sum_{i in K} -c_i dalpha_i x_i         (u = -(1/n) sum_i c_i alpha_i x_i)
  wbar <- w + theta (w - w_previous)

Delayed updates (Sec. 6): a coordinate j outside the rows of K sees w_j <- prox(w_j - tau u_j)
with u_j constant, an affine map on each side of the soft threshold. State per coordinate: w_j at
time last_j, w_j at time last_j - 1, and u_j; `catch_up` applies the missing steps in closed form
(docs/math.md, "SPDC"): on a branch with constant c = u_j +- l1 the iterates are
p + (w - p) (1 + tau l2)^-k with p = -c / l2, computed in log1p / expm1 form, and a branch is
left at most twice (the iterates are monotone), so the cost is O(1) whatever k.

The intercept is the feature of index n_features with value `bias` in every row: it is touched
every iteration, so it is never delayed. `flush` brings every coordinate to the current time.
"""
import numpy as np
cimport numpy as cnp
from cython cimport floating
from libc.math cimport expm1, log1p, fabs, ceil
from libc.stdint cimport int64_t

from fastdual._core.losses cimport Loss, step_of
from fastdual._core.rng cimport RandomState, rng_alias, rng_below, rng_shuffle, rng_uniform
from fastdual._core.rows cimport prefetch_ahead, row_range, soft_threshold

cnp.import_array()


cdef struct Prox:
    double tau
    double l1
    double l2
    double log_rate       # log1p(tau l2)
    double shrink         # 1 / (1 + tau l2)
    double inv_l2
    const double* decay   # decay[k] = expm1(-k log_rate) for k < n_decay (a table: an expm1
    Py_ssize_t n_decay    # per delayed coordinate was most of an epoch's cost)


cdef Prox make_prox(double tau, double l2, double l1, const double[::1] decay):
    cdef Prox p
    p.tau = tau
    p.l1 = l1
    p.l2 = l2
    p.log_rate = log1p(tau * l2)
    p.shrink = 1.0 / (1.0 + tau * l2)
    p.inv_l2 = 1.0 / l2
    p.decay = &decay[0]
    p.n_decay = decay.shape[0]
    return p


def decay_table(double tau, double l2, Py_ssize_t size):
    """expm1(-k log1p(tau l2)) for k < size: the closed form's factor for a delay of k steps."""
    cdef double[::1] out = np.empty(max(size, 1))
    cdef double rate = log1p(tau * l2)
    cdef Py_ssize_t k
    with nogil:
        for k in range(out.shape[0]):
            out[k] = expm1(-<double>k * rate)
    return np.asarray(out)


cdef inline double prox_step(const Prox* p, double w, double g) noexcept nogil:
    """One primal step: prox_{tau g}(w - tau g)."""
    if p.l1 == 0.0:
        return (w - p.tau * g) * p.shrink
    return soft_threshold(w - p.tau * g, p.tau * p.l1) * p.shrink


cdef inline double affine_steps(const Prox* p, double w, double fixed, int64_t k) noexcept nogil:
    """k steps of the affine map with this fixed point: fixed + (w - fixed) (1 + tau l2)^-k,
    as w + (w - fixed) expm1(-kL) with L = log1p(tau l2): exact to rounding even when tau l2 is
    near 1e-12 and the fixed point -c / l2 is huge, where the textbook form cancels."""
    cdef double e = p.decay[k] if k < p.n_decay else expm1(-<double>k * p.log_rate)
    return w + (w - fixed) * e


cdef double lazy_steps(const Prox* p, double w, double u, int64_t k) noexcept nogil:
    """k steps of w <- prox_step(w, u) with u fixed, in O(1) (seed 002 eqs. 36, 38-44)."""
    cdef double v, c, fixed, moved, sign, crossing
    cdef int64_t stay
    if p.l1 == 0.0:
        return affine_steps(p, w, -u * p.inv_l2, k)     # no kink: one affine map throughout
    while k > 0:
        v = w - p.tau * u
        if v > p.tau * p.l1:
            c = u + p.l1          # the positive branch: w' = (w - tau c) / (1 + tau l2) > 0
            sign = 1.0
        elif v < -p.tau * p.l1:
            c = u - p.l1
            sign = -1.0
        else:
            w = 0.0               # a step into the dead zone
            k -= 1
            if fabs(u) <= p.l1:   # ... and from 0 the dead zone holds it for good
                return 0.0
            continue
        fixed = -c * p.inv_l2
        if sign * fixed >= 0.0:
            # The fixed point is on this branch's side: the iterates approach it monotonically
            # and never leave the branch.
            return affine_steps(p, w, fixed, k)
        # The iterates cross zero: they stay on this branch while sign * w_t > 0, i.e. for
        # t < log1p(w / -fixed) / log1p(tau l2) steps; one more step leaves it.
        crossing = log1p(w / -fixed) / p.log_rate
        stay = <int64_t>ceil(crossing) - 1
        if stay < 1:
            stay = 1               # w' = prox_step(w) has this sign by the branch test above
        if stay > k:
            stay = k
        moved = affine_steps(p, w, fixed, stay)
        if sign * moved <= 0.0 and stay > 1:   # rounding at the boundary: one step fewer
            stay -= 1
            moved = affine_steps(p, w, fixed, stay)
        w = moved
        k -= stay
    return w


cdef inline void catch_up(const Prox* p, Py_ssize_t j, int64_t now, double* w, double* w_prev,
                          int64_t* last, const double* u) noexcept nogil:
    """Bring coordinate j to time `now`: w[j] = w_j(now), w_prev[j] = w_j(now - 1)."""
    cdef int64_t k = now - last[j]
    cdef double fixed, wj
    if k <= 0:
        return
    last[j] = now
    if p.l1 == 0.0 and k < p.n_decay:
        # No kink: both points from the table, without a data-dependent branch (the delays are
        # random, and mispredicted branches were most of the cost of an iteration).
        wj = w[j]
        fixed = -u[j] * p.inv_l2
        w_prev[j] = wj + (wj - fixed) * p.decay[k - 1]
        w[j] = wj + (wj - fixed) * p.decay[k]
        return
    if k > 1:
        w[j] = lazy_steps(p, w[j], u[j], k - 1)
    w_prev[j] = w[j]
    w[j] = prox_step(p, w[j], u[j])


cdef inline void primal_step(const Prox* p, Py_ssize_t j, int64_t now, double* w, double* w_prev,
                             int64_t* last, double* u, double gradient, double u_scale) noexcept nogil:
    """Coordinate j (at time now) takes the primal step of eq. (10) with the batch's gradient
    estimate, to time now + 1, and u_j takes its change (m / n times the estimate)."""
    w_prev[j] = w[j]
    w[j] = prox_step(p, w[j], u[j] + gradient)
    last[j] = now + 1
    u[j] += u_scale * gradient


cdef inline void batch_primal_step(const Prox* p, Py_ssize_t j, int64_t now, double* w,
                                   double* w_prev, int64_t* last, double* u, double* estimate,
                                   double* u_change, double u_scale, bint separate_u) noexcept nogil:
    """A mini-batch's primal step on coordinate j with its gathered estimate (then cleared);
    u_j takes u_scale times the estimate, or the change gathered apart (weighted batches)."""
    if separate_u:
        primal_step(p, j, now, w, w_prev, last, u, estimate[j], 0.0)
        u[j] += u_change[j]
        u_change[j] = 0.0
    else:
        primal_step(p, j, now, w, w_prev, last, u, estimate[j], u_scale)
    estimate[j] = 0.0


def spdc_draw(cnp.uint64_t[::1] rng_state, Py_ssize_t[::1] order, Py_ssize_t batch_size,
              Py_ssize_t[::1] picks, const double[::1] alias_prob, const Py_ssize_t[::1] alias,
              const double[::1] inclusion, double[::1] cumulative):
    """The samples of one epoch, ceil(n / m) batches of m.

    Uniform (alias_prob and inclusion empty): one sample drawn uniformly from each of the m
    groups that partition order (group g = order[g n / m : (g + 1) n / m]: the seed's stratified
    mini-batch, each sample picked with probability about m / n); m = 1 is uniform sampling with
    replacement (Algorithm 1). Weighted (m = 1, Algorithm 3): sample k with the probabilities
    encoded by the alias table (alias_prob, alias) of fastdual._core.sampling.alias_table.
    Weighted mini-batches (eq. 26; inclusion holds p_i <= 1 summing to m): systematic sampling,
    m distinct samples each included with probability exactly p_i: the samples in a fresh random
    order tile [0, m) with intervals of length p_i, and a batch takes the samples whose intervals
    hold u, u + 1, ..., u + m - 1 for one uniform u (a binary search each; cumulative is work
    space of length n).
    """
    cdef Py_ssize_t n = order.shape[0], m = batch_size, b, g, start, end, j, lo, hi, mid
    cdef Py_ssize_t n_batches = picks.shape[0] // m
    cdef bint weighted = alias_prob.shape[0] > 0
    cdef bint systematic = inclusion.shape[0] > 0
    cdef double u, total = 0.0
    cdef RandomState rs
    rs.s0, rs.s1, rs.s2, rs.s3 = rng_state[0], rng_state[1], rng_state[2], rng_state[3]
    with nogil:
        if systematic:
            rng_shuffle(&rs, &order[0], n)
            for j in range(n):
                total += inclusion[order[j]]
                cumulative[j] = total
        for b in range(n_batches):
            if systematic:
                u = rng_uniform(&rs)
                for g in range(m):
                    # The first position whose interval ends beyond u + g.
                    lo = 0
                    hi = n - 1
                    while lo < hi:
                        mid = (lo + hi) // 2
                        if cumulative[mid] > u + g:
                            hi = mid
                        else:
                            lo = mid + 1
                    picks[b * m + g] = order[lo]
                continue
            if weighted:
                picks[b] = rng_alias(&rs, &alias_prob[0], &alias[0], n)
                continue
            for g in range(m):
                start = g * n // m
                end = (g + 1) * n // m
                picks[b * m + g] = order[start + rng_below(&rs, end - start)]
    rng_state[0], rng_state[1], rng_state[2], rng_state[3] = rs.s0, rs.s1, rs.s2, rs.s3


def spdc_epoch(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
               Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
               const double[::1] y, const double[::1] sample_weight,
               double[::1] duals, double[::1] w, double[::1] w_prev, int64_t[::1] last,
               double[::1] u, double[::1] scratch, double[::1] scratch_u,
               double[::1] dual_change,
               const double[::1] step_scale,
               Loss loss, double tau, double sigma, double theta, double delta,
               double l2, double l1, const double[::1] decay, const Py_ssize_t[::1] picks,
               Py_ssize_t batch_size, int64_t now):
    """Run the batches of `picks` (from spdc_draw) in place; return the new time.

    w, w_prev, last, u: the delayed state (length n_features + 1, the intercept last); scratch
    (same length) must be zero and is left zero, as scratch_u (the same length for weighted
    mini-batches, else length 1); dual_change has length batch_size; decay is
    decay_table(tau, l2, size). The caller flushes (spdc_flush) before reading w.
    """
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double* wp = &w[0]
    cdef double* wq = &w_prev[0]
    cdef double* up = &u[0]
    cdef double* sp = &scratch[0]
    cdef double* su = &scratch_u[0]
    # Weighted mini-batches: u's change (1/n) sum -c_i dalpha_i x_i is no multiple of the
    # estimate (1/m) sum -c_i dalpha_i x_i / s_i, so it is gathered apart (in scratch_u).
    cdef bint separate_u = scratch_u.shape[0] > 1
    cdef double inv_n = 1.0 / n_samples
    cdef int64_t* lp = &last[0]
    cdef Py_ssize_t m = batch_size, n_batches = picks.shape[0] // batch_size
    cdef Py_ssize_t b, r, i, k, j, t, start, end, d = n_features
    cdef Py_ssize_t n_picks = n_batches * batch_size
    cdef double z, c, q, a_old, a_new, g, u_change, inv_m = 1.0 / batch_size
    cdef double u_scale = <double>batch_size / n_samples
    cdef Prox p = make_prox(tau, l2, l1, decay)
    with nogil:
        for b in range(n_batches):
            # Dual steps at wbar(now), every sample of the batch before any primal change.
            for r in range(m):
                t = b * m + r
                i = picks[t]
                prefetch_ahead(x, ind, ptr, &picks[0], t, n_picks, n_features)
                dual_change[r] = 0.0
                # Every coordinate of the row is brought to `now` here, also for a row of zero
                # weight, so the primal pass needs no catch-up.
                row_range(ptr, i, n_features, &start, &end)
                z = 0.0
                for k in range(start, end):
                    j = ind[k] if ind != NULL else k - start
                    catch_up(&p, j, now, wp, wq, lp, up)
                    z += x[k] * (wp[j] + theta * (wp[j] - wq[j]))
                if bias != 0.0:
                    catch_up(&p, d, now, wp, wq, lp, up)
                    z += bias * (wp[d] + theta * (wp[d] - wq[d]))
                c = sample_weight[i]
                if c == 0.0:
                    continue
                a_old = duals[i]
                q = step_scale[i] / sigma
                if delta > 0.0:
                    a_new = step_of(loss, y[i], z, q * a_old / (q + delta), q + delta)
                else:
                    a_new = step_of(loss, y[i], z, a_old, q)
                dual_change[r] = a_new - a_old
                duals[i] = a_new
            if m == 1:
                # One row: the gradient estimate is the row itself, no coordinate is shared,
                # and one pass does the primal step.
                i = picks[b]
                g = -sample_weight[i] * dual_change[0] / step_scale[i]
                row_range(ptr, i, n_features, &start, &end)
                # u changes by (1/n) -c_i dalpha_i x_i: the estimate times s_i m / n.
                u_change = u_scale * step_scale[i]
                for k in range(start, end):
                    j = ind[k] if ind != NULL else k - start
                    primal_step(&p, j, now, wp, wq, lp, up, g * x[k], u_change)
                if bias != 0.0:
                    primal_step(&p, d, now, wp, wq, lp, up, g * bias, u_change)
                now += 1
                continue
            # The primal step's gradient estimate (1/m) sum -c_i dalpha_i x_i, gathered in scratch.
            for r in range(m):
                if dual_change[r] == 0.0:
                    continue
                i = picks[b * m + r]
                g = -sample_weight[i] * dual_change[r] * inv_m / step_scale[i]
                row_range(ptr, i, n_features, &start, &end)
                for k in range(start, end):
                    j = ind[k] if ind != NULL else k - start
                    sp[j] += g * x[k]
                sp[d] += g * bias
                if separate_u:
                    u_change = -sample_weight[i] * dual_change[r] * inv_n
                    for k in range(start, end):
                        j = ind[k] if ind != NULL else k - start
                        su[j] += u_change * x[k]
                    su[d] += u_change * bias
            # Primal step on the coordinates of the batch (the others are delayed); a coordinate
            # shared by several rows of the batch is stepped once (last == now + 1 after).
            for r in range(m):
                i = picks[b * m + r]
                row_range(ptr, i, n_features, &start, &end)
                for k in range(start, end):
                    j = ind[k] if ind != NULL else k - start
                    if lp[j] != now + 1:
                        batch_primal_step(&p, j, now, wp, wq, lp, up, sp, su, u_scale,
                                          separate_u)
                if bias != 0.0 and lp[d] != now + 1:
                    batch_primal_step(&p, d, now, wp, wq, lp, up, sp, su, u_scale, separate_u)
            now += 1
    return now


def spdc_flush(double[::1] w, double[::1] w_prev, int64_t[::1] last, const double[::1] u,
               double tau, double l2, double l1, const double[::1] decay, int64_t now):
    """Bring every coordinate to time `now` (w exact for the certificate)."""
    cdef Prox p = make_prox(tau, l2, l1, decay)
    cdef Py_ssize_t j
    with nogil:
        for j in range(w.shape[0]):
            catch_up(&p, j, now, &w[0], &w_prev[0], &last[0], &u[0])
