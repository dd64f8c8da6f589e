# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""SDCA's epoch for the squared loss with LIBLINEAR's intercept: exact coordinate steps along
directions conjugate to the intercept's (docs/solvers/sdca.md, "The intercept's direction").
A module of its own: added to _sdca.pyx, it made the compiler lay out sdca_epoch's loop 2x
slower (measured on ijcnn1 and a9a)."""
import numpy as np
cimport numpy as cnp
from cython cimport floating

from libc.math cimport INFINITY

from fastdual._core.alloc cimport cache_aligned
from fastdual._core.losses cimport (BOX_QUADRATIC, Loss, box_quadratic_slope,
                                    box_quadratic_step)
from fastdual.solvers._sdca_step cimport shrinks
from fastdual._core.rng cimport RandomState, rng_shuffle
from fastdual._core.rows cimport (drop_active, prefetch, prefetch_ahead, row_range, row_dot,
                                  row_axpy, two_sum_add)

cnp.import_array()

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
    cdef Py_ssize_t t, i, j, start, end, ahead
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
            ahead = prefetch_ahead(x, ind, ptr, &order[0], t, n_samples, n_features)
            if ahead >= 0:
                prefetch(s + SLOT * ahead)
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


cdef enum:
    # deflated_box_epoch's state entries: the members' sum of weights, their number
    BOX_WEIGHT = 0
    BOX_N_FREE = 1
    BOX_N_SUPPORT = 2
    BOX_N_CANDIDATES = 3

# F's members are the duals at least this far inside their box (beta = a y in [FREE_MARGIN,
# upper - FREE_MARGIN]): every member bounds the common shift by its distance to its bound, so
# members close to a bound would block it. Measured on sector's one-vs-rest hinge problems (12
# classes, 3 seeds): epochs to 1e-4 summed 2636 with every strictly free dual a member, 1896 at
# 0.05, 2069 at 0.2; 3714 with plain steps.
cdef double FREE_MARGIN = 0.05
# See fold_each in deflated_box_epoch.
cdef Py_ssize_t FOLD_BUDGET = 4


cdef inline void dot_two(const floating* x, const int* ind, Py_ssize_t start, Py_ssize_t end,
                         const double* v, const double* m, double* z, double* p) noexcept nogil:
    """x_i . v and x_i . m over the stored part of row i, in one loop."""
    cdef Py_ssize_t k, j
    cdef double sz = 0.0, sp = 0.0
    if ind != NULL:
        for k in range(start, end):
            j = ind[k]
            sz += x[k] * v[j]
            sp += x[k] * m[j]
    else:
        for k in range(start, end):
            j = k - start
            sz += x[k] * v[j]
            sp += x[k] * m[j]
    z[0] = sz
    p[0] = sp


cdef inline Py_ssize_t support_axpy(const floating* x, const int* ind, Py_ssize_t start,
                                   Py_ssize_t end, double scale, double* m,
                                   cnp.uint8_t* in_support, Py_ssize_t* support,
                                   Py_ssize_t n_support) noexcept nogil:
    """m += scale x_i over the stored part of CSR row i, its features added to m's support
    list (support[0:n_support], in_support the list's flags); returns the list's new length."""
    cdef Py_ssize_t k, j
    for k in range(start, end):
        j = ind[k]
        if in_support[j] == 0:
            in_support[j] = 1
            support[n_support] = j
            n_support += 1
        m[j] += scale * x[k]
    return n_support


cdef inline bint is_free(double a, double y, double upper) noexcept nogil:
    cdef double beta = a * y
    return beta >= FREE_MARGIN and beta <= upper - FREE_MARGIN


def deflated_box_epoch(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                       Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                       const double[::1] y, const double[::1] sample_weight,
                       const double[::1] sq_norms, double[::1] duals, double[::1] v,
                       Loss loss, double l2, Py_ssize_t[::1] order, cnp.uint64_t[::1] rng_state,
                       Py_ssize_t n_active, double shrink_up, double shrink_down,
                       double[::1] m, double[::1] state, Py_ssize_t[::1] members,
                       Py_ssize_t[::1] candidates, cnp.uint8_t[::1] member_flag,
                       Py_ssize_t[::1] support, cnp.uint8_t[::1] in_support,
                       double[::1] carry, bint refresh):
    """One epoch of exact coordinate steps on the dual of a box-quadratic loss (-phi*(-a) =
    beta - gamma/2 beta^2, beta = a y in [0, upper]: hinge, smooth hinge, squared hinge) with
    LIBLINEAR's intercept (bias != 0, l1 = 0, w = v), the free duals' steps conjugate to the
    intercept's direction among them (docs/solvers/sdca.md, "The intercept's direction on a
    box").

    F (the members): the samples with c_j > 0 whose dual is inside its box by FREE_MARGIN at
    the epoch's start; u_j = 1 on F, m = v(u). The members' duals move together by a shift s,
    carried as one scalar (duals = a + s u, v = v_a + s m) and kept within [s_lo, s_hi], where
    every member's dual stays in its box. The epoch takes the exact step along u within that
    range, then visits the active samples in a random order. Each step is the better (larger
    ascent) of two exact line maximisations, each clipped to where the duals stay feasible:
    along e_i - gamma_i u (Q-conjugate to u, so u' grad f does not change) and along e_i (the
    plain step; u' grad f then moves by t (Qu)_i, tracked). D never decreases. Non-members
    shrink as in sdca_epoch; a non-member the plain step leaves on its bound stays there.
    At the end s is folded into the members' duals and v; each fold's rounding is kept as the
    sample's carry (what v holds beyond the stored dual), taken out of v at its next step.

    Kept between epochs in the caller's arrays: m (n_features + 1) with its support list
    (support, in_support), members and member_flag, candidates (the non-members whose step
    ended inside the interior), carry (n_samples) and state (BOX_*). F changes by the members
    that left the interior and the candidates that entered it, each paying one pass over its
    row; refresh (the first epoch, and after anything but this kernel changed the duals)
    takes the carries out of v and rebuilds F and m from the duals. Returns (max_up, max_down,
    n_active) as sdca_epoch."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t d = n_features
    cdef double inv_n = 1.0 / n_samples, inv_l2n = 1.0 / (l2 * n_samples)
    cdef double* v_ptr = &v[0]
    cdef double* m_ptr = &m[0]
    cdef cnp.uint8_t* flag = &member_flag[0]
    cdef Py_ssize_t t, i, j, k, start, end, n_steps
    cdef double c, a, lo, hi, yi, z, p, g, h, r, gi, e, cw, scale, beta, push
    cdef double slope = 0.0, m_norm = 0.0, weight, u_q_u, inv_uqu, shift = 0.0, v_shift = 0.0
    cdef bint fold_each
    cdef Py_ssize_t* sup = &support[0]
    cdef cnp.uint8_t* in_sup = &in_support[0]
    cdef Py_ssize_t n_support = <Py_ssize_t> state[BOX_N_SUPPORT]
    cdef Py_ssize_t n_free = <Py_ssize_t> state[BOX_N_FREE]
    cdef Py_ssize_t n_candidates = <Py_ssize_t> state[BOX_N_CANDIDATES], kept
    cdef bint scan_all
    cdef double s_lo = -INFINITY, s_hi = INFINITY
    cdef double t_c, t_p, t_lo, t_hi, b_lo, b_hi, g_c, gain_c, gain_p, step, moved
    cdef double max_up = 0.0, max_down = 0.0
    cdef double old, new, delta, error
    cdef double gamma = loss.gamma, upper = loss.upper
    cdef bint member
    cdef RandomState rs
    if loss.family != BOX_QUADRATIC:
        raise ValueError("deflated_box_epoch: the loss must be hinge, smooth or squared hinge")
    if (m.shape[0] != d + 1 or v.shape[0] != d + 1 or state.shape[0] < 4
            or member_flag.shape[0] != n_samples or members.shape[0] != n_samples
            or candidates.shape[0] != n_samples or support.shape[0] != d + 1
            or carry.shape[0] != n_samples
            or in_support.shape[0] != d + 1
            or duals.shape[0] != n_samples or order.shape[0] != n_samples
            or not 0 <= n_active <= n_samples):
        raise ValueError("deflated_box_epoch: m, v, support and in_support need n_features + 1 "
                         "entries, state 4, members, candidates, member_flag, carry, duals and "
                         "order n_samples")
    weight = state[BOX_WEIGHT]
    rs.s0 = rng_state[0]
    rs.s1 = rng_state[1]
    rs.s2 = rng_state[2]
    rs.s3 = rng_state[3]
    with nogil:
        # F: the members that left the interior go, the samples that entered it come (the
        # non-members last epoch's steps left inside it; every sample at a refresh), with m
        # (its support listed: m is 0 elsewhere; the intercept's entry first, dense rows list
        # every feature) and the members' weight.
        scan_all = refresh or n_support == 0
        if scan_all:
            # the carries out of v (a refresh follows changes of the duals made elsewhere)
            for j in range(n_samples):
                if carry[j] != 0.0:
                    row_range(ptr, j, d, &start, &end)
                    row_axpy(x, ind, start, end, -sample_weight[j] * carry[j] * inv_l2n, v_ptr)
                    v_ptr[d] -= sample_weight[j] * carry[j] * inv_l2n * bias
                    carry[j] = 0.0
            for k in range(n_free):
                flag[members[k]] = 0
            for k in range(n_support):
                m_ptr[sup[k]] = 0.0
                in_sup[sup[k]] = 0
            sup[0] = d
            in_sup[d] = 1
            n_support = 1
            if ind == NULL:
                for j in range(d):
                    sup[n_support] = j
                    in_sup[j] = 1
                    n_support += 1
            n_free = 0
            weight = 0.0
        kept = 0
        for k in range(n_free):
            j = members[k]
            if is_free(duals[j], y[j], upper):
                members[kept] = j
                kept += 1
                continue
            flag[j] = 0
            c = sample_weight[j]
            weight -= c
            row_range(ptr, j, d, &start, &end)
            row_axpy(x, ind, start, end, -c * inv_l2n, m_ptr)
            m_ptr[d] -= c * inv_l2n * bias
        n_free = kept
        for k in range(n_samples if scan_all else n_candidates):
            j = k if scan_all else candidates[k]
            c = sample_weight[j]
            if flag[j] != 0 or c == 0.0 or not is_free(duals[j], y[j], upper):
                continue
            flag[j] = 1
            members[n_free] = j
            n_free += 1
            weight += c
            row_range(ptr, j, d, &start, &end)
            if ind != NULL:
                n_support = support_axpy(x, ind, start, end, c * inv_l2n, m_ptr, in_sup, sup,
                                         n_support)
            else:
                row_axpy(x, ind, start, end, c * inv_l2n, m_ptr)
            m_ptr[d] += c * inv_l2n * bias
        n_candidates = 0
        # s's range (a_j + s in [lo_j, hi_j] for every member), the members' part of u' grad f
        for k in range(n_free):
            j = members[k]
            a = duals[j]
            slope += sample_weight[j] * (gamma * a - y[j])
            lo, hi = (0.0, upper) if y[j] > 0.0 else (-upper, 0.0)
            if lo - a > s_lo:
                s_lo = lo - a
            if hi - a < s_hi:
                s_hi = hi - a
        if n_free == 0:
            for k in range(n_support):
                m_ptr[sup[k]] = 0.0
            weight = 0.0
        # u'Qu = (gamma / n) sum_F c_j + l2 ||m||^2, u' grad f = (1/n) sum_F c_j (gamma a_j -
        # y_j) + l2 m . v; then the exact step along u within s's range
        slope *= inv_n
        for k in range(n_support):
            j = sup[k]
            m_norm += m_ptr[j] * m_ptr[j]
            slope += l2 * m_ptr[j] * v_ptr[j]
        u_q_u = gamma * weight * inv_n + l2 * m_norm
        inv_uqu = 1.0 / u_q_u if n_free > 0 and u_q_u > 0.0 else 0.0
        if inv_uqu > 0.0:
            shift = -slope * inv_uqu
            shift = s_lo if shift < s_lo else (s_hi if shift > s_hi else shift)
            slope += shift * u_q_u
        # v = v_a + s m is kept as v + v_shift m, v holding all but v_shift of the shift's
        # part. Where the features are few (n_features + 1 per member at most FOLD_BUDGET per
        # sample: a9a, ijcnn1), each change of s goes into v at once (v_shift stays 0): the
        # margins of the samples on their bound are then exact without x_i . m. (A rule of the
        # shapes alone: CSR and dense rows of the same matrix take the same steps.)
        fold_each = (d + 1) * n_free <= FOLD_BUDGET * n_samples
        if fold_each:
            for k in range(n_support):
                v_ptr[sup[k]] += shift * m_ptr[sup[k]]
        else:
            v_shift = shift

        rng_shuffle(&rs, &order[0], n_active)
        n_steps = n_active
        t = 0
        while t < n_steps:
            i = order[t]
            prefetch_ahead(x, ind, ptr, &order[0], t, n_steps, d)
            t += 1
            c = sample_weight[i]
            if c == 0.0:
                continue
            yi = y[i]
            member = flag[i] != 0
            row_range(ptr, i, d, &start, &end)
            if member:
                dot_two(x, ind, start, end, v_ptr, m_ptr, &z, &p)
                a = duals[i] + shift
            else:
                z = row_dot(x, ind, start, end, v_ptr)
                a = duals[i]
                # A non-member on its bound pushed outward by more than the shift's term of its
                # margin can change, |s x~_i . m| <= |s| ||x~_i|| ||m||, stays there (the
                # plain step would not move it; see below for the conjugate one): its margin
                # through m is not needed.
                beta = a * yi
                push = yi * box_quadratic_slope(yi, z + bias * v_ptr[d], a, gamma)  # d/dbeta
                if ((beta <= 0.0 and push < 0.0) or (beta >= upper and push > 0.0)) and (
                        push * push > v_shift * v_shift * sq_norms[i] * m_norm):
                    if shrinks(loss, c, yi, z + bias * v_ptr[d], a, 0.0, shrink_up,
                               shrink_down, &max_up, &max_down):
                        drop_active(&order[0], &t, &n_steps, i)
                    continue
                p = row_dot(x, ind, start, end, m_ptr)
            p += bias * m_ptr[d]
            z += bias * v_ptr[d] + v_shift * p
            lo, hi = (0.0, upper) if yi > 0.0 else (-upper, 0.0)
            # in units of c / n: grad_i f = g, Q_ii = h, (Qu)_i = r
            cw = c * inv_n
            g = -box_quadratic_slope(yi, z, a, gamma)
            h = gamma + c * sq_norms[i] * inv_l2n
            r = gamma + p if member else p
            # the plain step (sdca_epoch's, clipped to the box)
            t_p = box_quadratic_step(yi, z, a, h - gamma, gamma, upper) - a
            gain_p = -(g + 0.5 * h * t_p) * t_p
            # the conjugate step: a_i moves by e t, the shift by -gi t. A non-member the plain
            # step leaves on its bound stays there, as in sdca_epoch: a conjugate step would
            # move its row for a small gain and keep it from shrinking.
            gi = cw * r * inv_uqu
            e = 1.0 - gi if member else 1.0
            gain_c = -INFINITY
            if gi != 0.0 and h - gi * r > 1e-12 * h and (member or t_p != 0.0):
                g_c = g - r * slope * inv_uqu
                t_c = -g_c / (h - gi * r)
                if not (lo <= a + e * t_c <= hi and s_lo <= shift - gi * t_c <= s_hi):
                    # clipped to where a_i stays in its box and s in its range
                    t_lo, t_hi = -INFINITY, INFINITY
                    if e > 0.0:
                        t_lo, t_hi = (lo - a) / e, (hi - a) / e
                    elif e < 0.0:
                        t_lo, t_hi = (hi - a) / e, (lo - a) / e
                    if gi > 0.0:
                        b_lo, b_hi = (shift - s_hi) / gi, (shift - s_lo) / gi
                    else:
                        b_lo, b_hi = (shift - s_lo) / gi, (shift - s_hi) / gi
                    t_lo = 0.0 if b_lo > 0.0 or t_lo > 0.0 else (b_lo if b_lo > t_lo else t_lo)
                    t_hi = 0.0 if b_hi < 0.0 or t_hi < 0.0 else (b_hi if b_hi < t_hi else t_hi)
                    t_c = t_lo if t_c < t_lo else (t_hi if t_c > t_hi else t_c)
                gain_c = -(g_c + 0.5 * (h - gi * r) * t_c) * t_c
            if gain_c > gain_p and gain_c > 0.0:
                step = t_c
                moved = e * step
            elif gain_p > 0.0:
                step = t_p
                moved = step
            else:
                step = moved = 0.0
            if not member and shrinks(loss, c, yi, z, a, moved, shrink_up, shrink_down,
                                      &max_up, &max_down):
                drop_active(&order[0], &t, &n_steps, i)
            if step == 0.0:
                continue
            if member and moved != 0.0:    # (a member is inside its box: never shrunk)
                shrinks(loss, c, yi, z, a, moved, shrink_up, shrink_down, &max_up, &max_down)
            if gain_c > gain_p:
                shift -= gi * step
                if fold_each:
                    for k in range(n_support):
                        v_ptr[sup[k]] -= gi * step * m_ptr[sup[k]]
                else:
                    v_shift -= gi * step
            else:
                slope += cw * r * step
            # the stored dual (a member's without the shift) moves by step; v by what it
            # actually moved, less what v already holds of it (carry)
            old = duals[i]
            new = old + step
            if not member:
                new = lo if new < lo else (hi if new > hi else new)
            duals[i] = new
            delta = (new - old) - carry[i]
            carry[i] = 0.0
            if member:
                if lo - duals[i] > s_lo:
                    s_lo = lo - duals[i]
                if hi - duals[i] < s_hi:
                    s_hi = hi - duals[i]
            elif is_free(duals[i], yi, upper):
                candidates[n_candidates] = i
                n_candidates += 1
            scale = c * delta * inv_l2n
            row_axpy(x, ind, start, end, scale, v_ptr)
            v_ptr[d] += scale * bias
        # The shift folded into the members' duals (in their box despite rounding) and v. v
        # moves by the shift exactly (m), a stored dual by its rounding of it: the difference
        # is kept, exactly (TwoSum), as the sample's carry, which its next step takes out of v.
        if shift != 0.0:
            for k in range(n_free):
                j = members[k]
                new = duals[j]
                error = 0.0
                two_sum_add(&new, &error, shift)
                a = new * y[j]
                duals[j] = y[j] * (0.0 if a < 0.0 else (upper if a > upper else a))
                carry[j] += (new - duals[j]) + error
        if v_shift != 0.0:
            for k in range(n_support):
                v_ptr[sup[k]] += v_shift * m_ptr[sup[k]]
    state[BOX_N_SUPPORT] = n_support
    state[BOX_N_CANDIDATES] = n_candidates
    state[BOX_WEIGHT] = weight
    state[BOX_N_FREE] = n_free
    rng_state[0] = rs.s0
    rng_state[1] = rs.s1
    rng_state[2] = rs.s2
    rng_state[3] = rs.s3
    return max_up, max_down, n_steps
