# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Regularized dual averaging (seed 003) with lazy per-feature evaluation (docs/math.md, "RDA").

Objective P(w) = (1/n) sum_i c_i phi(y_i, x_i . w) + l2/2 ||w||^2 + l1 ||w||_1 (the intercept
feature last, penalised like the others or, free, not at all). Step t draws row i and takes the
(sub)gradient g_t = c_i phi'(y_i, x_i . q_t) x_i at the query point q_t.

Dual averaging (Algorithms 1 and 2, h = 1/2 ||w||^2 + rho ||w||_1, beta_t = gamma sqrt(t)): with
G = g_1 + ... + g_m the gradient sum after m = tau - 1 steps, eq. (8) is coordinatewise

    w_tau = -soft_threshold(G / m, l1 + rho gamma / sqrt(m)) / (l2 + gamma / sqrt(m)),

which is eq. (10) for l2 = rho = 0, eq. (30) (enhanced l1-RDA) for rho > 0, and the l2^2 and
mixed l1/l2^2 closed forms of Sec. 2.2 for gamma = 0 (beta_t = 0). The query point is w_t.

Accelerated RDA (Algorithm 3, eqs. 37-38: alpha_t = t/2, A_t = t(t+1)/4, beta_t = gamma
(t+1)^1.5 / 2): with G = sum_tau alpha_tau g_tau,

    v_tau = -soft_threshold(G, l1 A_tau) / (l2 A_tau + L + beta_tau),
    A_t w_t = sum_{tau <= t} alpha_tau v_tau,     q_t = (A_{t-1} w_{t-1} + alpha_t v_{t-1}) / A_t.

Both are x(tau; G) = -soft_threshold(G p_tau, q_tau) r_tau with scalars of tau alone, so a
coordinate untouched since its last update is evaluated on demand from G_j and tau: a step costs
O(nnz(row)), never O(d). Weighted sums S_j = sum_tau omega_tau x(tau; G_j) (the running average
of dual averaging's iterates, omega = 1, or accelerated RDA's A_t w_t, omega = alpha) are lazy
too: on the coordinate's active stretch (|G| p_tau > q_tau, a prefix of any interval since the
threshold q/p grows with tau) the sum is -sign(G) (|G| sum omega p r - sum omega q r), two
prefix sums over tau kept in `hist` for the current block of BLOCK steps. At each block's end
every coordinate is brought up to date (O(d) per BLOCK >= d steps), so the prefix sums stay
short and exact to rounding, and where the blocks end depends on the step count alone: the
state after a sequence of steps is bit-identical however they were split into calls.

The intercept feature (index d) is touched by every step and evaluated directly with its own
(l1, l2, rho), zero when it is free.
"""
import numpy as np
cimport numpy as cnp
from cython cimport floating
from libc.math cimport sqrt, fabs, frexp, ldexp
from libc.stdint cimport int64_t

from fastdual._core.losses cimport Loss
from fastdual._core.rows cimport prefetch_ahead, row_range, soft_threshold

cnp.import_array()

cdef enum:
    # clock[]: the scalars of the state
    STEPS = 0          # t, the steps taken
    BLOCK_START = 1    # first tau of the current block of the prefix sums
    HIST_END = 2       # hist holds the sums over [BLOCK_START, HIST_END)


cdef struct Coef:
    # How a coordinate's iterate depends on its gradient sum.
    double l1
    double l2
    double rho


cdef struct Plan:
    bint accelerated
    bint track          # keep the weighted sums S (average output, or accelerated)
    double gamma
    double lipschitz    # L of Algorithm 3
    double floor        # dual averaging: the quadratic term's max(beta_t, floor), the state's
    Coef coord          # the features
    Coef icpt           # the intercept feature
    int64_t block


cdef struct Base:
    # The part of x(tau; .)'s scalars that does not depend on the coordinate's constants.
    double p
    double omega
    double shrink       # dual averaging: gamma / sqrt(tau - 1); accelerated: A_tau
    double quad         # dual averaging: max(gamma sqrt(m), floor) / m, m = tau - 1
    double extra        # accelerated: L + beta_tau


cdef inline bint base_terms(const Plan* P, int64_t tau, Base* b) noexcept nogil:
    """False where the iterate is the starting point 0 (tau = 1 for dual averaging, tau = 0
    accelerated)."""
    cdef double inv_root, next_
    if P.accelerated:
        if tau < 1:
            return False
        next_ = <double>(tau + 1)
        b.p = 1.0
        b.omega = 0.5 * <double>tau
        b.shrink = 0.25 * <double>tau * next_
        b.extra = P.lipschitz + 0.5 * P.gamma * next_ * sqrt(next_)
        return True
    if tau < 2:
        return False
    inv_root = 1.0 / sqrt(<double>(tau - 1))
    b.p = inv_root * inv_root
    b.omega = 1.0
    b.shrink = P.gamma * inv_root
    # The quadratic term's max(beta_m, floor) / m: the floor keeps the step on a row,
    # 1 / (m l2 + max(beta_m, floor)), below 1 / (the row's curvature) (docs/math.md, RDA);
    # the l1 part of h (rho) keeps the seed's beta_m.
    b.quad = b.shrink
    if P.floor * b.p > b.quad:
        b.quad = P.floor * b.p
    return True


cdef inline void coef_terms(const Plan* P, const Coef* c, const Base* b, double* q,
                            double* r) noexcept nogil:
    if P.accelerated:
        q[0] = c.l1 * b.shrink
        r[0] = 1.0 / (c.l2 * b.shrink + b.extra)
    else:
        q[0] = c.l1 + c.rho * b.shrink
        r[0] = 1.0 / (c.l2 + b.quad)


cdef inline bint terms(const Plan* P, const Coef* c, int64_t tau, double* p, double* q,
                       double* r, double* omega) noexcept nogil:
    """The scalars of x(tau; G) = -soft_threshold(G p, q) r and its weight omega; False where
    the iterate is the starting point 0."""
    cdef Base b
    if not base_terms(P, tau, &b):
        return False
    coef_terms(P, c, &b, q, r)
    p[0] = b.p
    omega[0] = b.omega
    return True


cdef inline double iterate(const Plan* P, const Coef* c, int64_t tau, double g) noexcept nogil:
    """x(tau; g): w_tau (dual averaging) or v_tau (accelerated) of a coordinate with sum g."""
    cdef double p, q, r, omega
    if not terms(P, c, tau, &p, &q, &r, &omega):
        return 0.0
    return -soft_threshold(g * p, q) * r


cdef inline bint active(const Plan* P, const Coef* c, int64_t tau, double g) noexcept nogil:
    cdef double p, q, r, omega
    if not terms(P, c, tau, &p, &q, &r, &omega):
        return False
    return fabs(g * p) > q


cdef double direct_sum(const Plan* P, const Coef* c, double g, int64_t first,
                       int64_t last) noexcept nogil:
    """sum_{tau = first}^{last} omega_tau x(tau; g), term by term (short intervals)."""
    cdef double total = 0.0, p, q, r, omega
    cdef int64_t tau
    for tau in range(first, last + 1):
        if terms(P, c, tau, &p, &q, &r, &omega):
            total += omega * (-soft_threshold(g * p, q) * r)
    return total


cdef void extend_hist(const Plan* P, double* hist_a, double* hist_b, int64_t* clock,
                      int64_t upto) noexcept nogil:
    """Extend the block's prefix sums to cover tau <= upto (hist_x[k] = sum over
    [BLOCK_START, BLOCK_START + k)); values depend on tau alone, so extending early is harmless."""
    cdef int64_t tau, k
    cdef double p, q, r, omega
    while clock[HIST_END] <= upto:
        tau = clock[HIST_END]
        k = tau - clock[BLOCK_START]
        if terms(P, &P.coord, tau, &p, &q, &r, &omega):
            hist_a[k + 1] = hist_a[k] + omega * p * r
            hist_b[k + 1] = hist_b[k] + omega * q * r
        else:
            hist_a[k + 1] = hist_a[k]
            hist_b[k + 1] = hist_b[k]
        clock[HIST_END] = tau + 1


cdef struct Upto:
    # The end of a stretch to be summed, with the features' scalars there.
    int64_t tau
    bint defined
    double p
    double q


cdef inline Upto upto_terms(const Plan* P, int64_t tau) noexcept nogil:
    cdef Upto u
    cdef double r, omega
    u.tau = tau
    u.defined = terms(P, &P.coord, tau, &u.p, &u.q, &r, &omega)
    return u


cdef double lazy_sum(const Plan* P, const double* hist_a, const double* hist_b,
                     int64_t block_start, double g, int64_t first, const Upto* u) noexcept nogil:
    """sum_{tau = first}^{u.tau} omega_tau x(tau; g) for a feature, from the prefix sums (which
    must cover the stretch, inside the current block)."""
    cdef int64_t lo, hi, mid, k0, k1, last = u.tau
    if last < first or g == 0.0:
        return 0.0
    # The first tau with a defined iterate (earlier terms are 0 and the threshold test is
    # meaningless there).
    lo = 2 if not P.accelerated else 1
    if first < lo:
        first = lo
        if last < first:
            return 0.0
    # The active taus are a prefix of the stretch: active at its end means active throughout
    # (the common case, tested with the scalars the caller has at hand).
    if not (u.defined and fabs(g * u.p) > u.q):
        if not active(P, &P.coord, first, g):
            return 0.0          # inactive at first, so for good while g stays
        # Binary search for the last active tau in [first, last).
        lo = first
        hi = last
        while hi - lo > 1:
            mid = lo + (hi - lo) // 2
            if active(P, &P.coord, mid, g):
                lo = mid
            else:
                hi = mid
        last = lo
    k0 = first - block_start
    k1 = last + 1 - block_start
    if g > 0.0:
        return -(g * (hist_a[k1] - hist_a[k0]) - (hist_b[k1] - hist_b[k0]))
    return -(g * (hist_a[k1] - hist_a[k0]) + (hist_b[k1] - hist_b[k0]))


cdef inline void settle(const Plan* P, double* g, double* s, int64_t* last, const double* hist_a,
                        const double* hist_b, int64_t block_start, Py_ssize_t j,
                        const Upto* u) noexcept nogil:
    """Bring S_j to cover tau <= u.tau (with its current g_j), and last_j to u.tau + 1."""
    s[j] += lazy_sum(P, hist_a, hist_b, block_start, g[j], last[j], u)
    last[j] = u.tau + 1


cdef void new_block(const Plan* P, double* g, double* s, int64_t* last, double* hist_a,
                    double* hist_b, int64_t* clock, Py_ssize_t n_coords,
                    int64_t end) noexcept nogil:
    """End the current block before tau = end (its natural end, BLOCK_START + block, or earlier
    when the floor of beta rises): every feature's S up to end - 1, then empty prefix sums."""
    cdef Py_ssize_t j
    cdef Upto u = upto_terms(P, end - 1)
    extend_hist(P, hist_a, hist_b, clock, end - 1)
    for j in range(n_coords):
        settle(P, g, s, last, hist_a, hist_b, clock[BLOCK_START], j, &u)
    clock[BLOCK_START] = end
    clock[HIST_END] = end
    hist_a[0] = 0.0
    hist_b[0] = 0.0


def make_plan_args(accelerated, track, gamma, lipschitz, l1, l2, rho, icpt_l1, icpt_l2,
                   icpt_rho, block):
    """The plan as a tuple the kernels take (validated by the caller)."""
    return (bool(accelerated), bool(track), float(gamma), float(lipschitz), float(l1),
            float(l2), float(rho), float(icpt_l1), float(icpt_l2), float(icpt_rho), int(block))


cdef inline double next_power_of_two(double value) noexcept nogil:
    """The smallest power of two >= value (value > 0; huge values as they are)."""
    cdef int exponent
    cdef double mantissa
    if not value < 1e300:
        return value
    mantissa = frexp(value, &exponent)      # value = mantissa 2^exponent, mantissa in [1/2, 1)
    if mantissa == 0.5:
        return value
    return ldexp(1.0, exponent)


cdef Plan unpack(tuple args, double floor=0.0):
    cdef Plan P
    P.floor = floor
    P.accelerated = args[0]
    P.track = args[1]
    P.gamma = args[2]
    P.lipschitz = args[3]
    P.coord.l1 = args[4]
    P.coord.l2 = args[5]
    P.coord.rho = args[6]
    P.icpt.l1 = args[7]
    P.icpt.l2 = args[8]
    P.icpt.rho = args[9]
    P.block = args[10]
    return P


def rda_steps(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
              Py_ssize_t n_features, double bias, const double[::1] y,
              const double[::1] sample_weight, Loss loss, const Py_ssize_t[::1] rows,
              double[::1] g, double[::1] s, int64_t[::1] last, double[:, ::1] hist,
              int64_t[::1] clock, tuple plan, double[::1] floor):
    """Take one RDA step per entry of `rows` (row indices into the matrix), in place on the
    state (g, s, last: length n_features + 1; hist: (2, block + 2); clock: STEPS, BLOCK_START,
    HIST_END; floor: (1,), the floor of dual averaging's beta). s, last and hist are only used
    when the plan tracks weighted sums.

    Dual averaging on a smooth loss raises the floor to the largest curvature of the rows
    stepped on so far, c_i ||x_i||^2 / loss.gamma (the row's own before its step), rounded up
    to a power of two (so it rises a few times only); the weighted sums are settled under the
    old floor first, since their prefix sums assume one floor for the block."""
    cdef Plan P = unpack(plan, floor[0])
    cdef double inv_gamma = 1.0 / loss.gamma if loss.gamma > 0.0 else 0.0
    cdef double curvature, norm_sq
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double* gp = &g[0]
    cdef double* sp = &s[0]
    cdef int64_t* lp = &last[0]
    cdef double* ha = &hist[0, 0]
    cdef double* hb = &hist[1, 0]
    cdef int64_t* ck = &clock[0]
    cdef Py_ssize_t d = n_features, n_rows = rows.shape[0]
    cdef Py_ssize_t step, i, k, j, start, end
    cdef int64_t t
    cdef double p, q, r, omega, z, deriv, wj, weight_t, area_t, v_prev, ip, iq, ir, io
    cdef bint defined
    cdef Base base
    cdef Upto here
    with nogil:
        for step in range(n_rows):
            i = rows[step]
            prefetch_ahead(x, ind, ptr, &rows[0], step, n_rows, n_features)
            t = ck[STEPS] + 1
            row_range(ptr, i, n_features, &start, &end)
            z = 0.0
            if not P.accelerated:
                if inv_gamma > 0.0 and sample_weight[i] > 0.0:
                    norm_sq = bias * bias
                    for k in range(start, end):
                        norm_sq += x[k] * x[k]
                    curvature = sample_weight[i] * norm_sq * inv_gamma
                    if curvature > P.floor:
                        if P.track:
                            # (also drops prefix sums extended past t under the old floor)
                            new_block(&P, gp, sp, lp, ha, hb, ck, d, t)
                        P.floor = next_power_of_two(curvature)
                # Query point w_t: every coordinate from its sum after t - 1 steps.
                defined = base_terms(&P, t, &base)
                if defined:
                    coef_terms(&P, &P.coord, &base, &q, &r)
                    coef_terms(&P, &P.icpt, &base, &iq, &ir)
                    p = base.p
                if P.track:
                    if t >= ck[BLOCK_START] + P.block:
                        new_block(&P, gp, sp, lp, ha, hb, ck, d, ck[BLOCK_START] + P.block)
                    if ck[HIST_END] == t and defined:
                        # The prefix sums' next entry from the scalars just computed (what
                        # extend_hist would compute again).
                        k = t - ck[BLOCK_START]
                        ha[k + 1] = ha[k] + base.omega * p * r
                        hb[k + 1] = hb[k] + base.omega * q * r
                        ck[HIST_END] = t + 1
                    else:
                        extend_hist(&P, ha, hb, ck, t)
                here.tau = t
                here.defined = defined
                here.p = p
                here.q = q
                for k in range(start, end):
                    j = ind[k] if ind != NULL else k - start
                    if P.track:
                        settle(&P, gp, sp, lp, ha, hb, ck[BLOCK_START], j, &here)
                    if defined:
                        z += x[k] * (-soft_threshold(gp[j] * p, q) * r)
                wj = -soft_threshold(gp[d] * p, iq) * ir if defined else 0.0
                z += bias * wj
                if P.track:
                    sp[d] += wj
                    lp[d] = t + 1
                weight_t = 1.0
            else:
                # Query point q_t = (A_{t-1} w_{t-1} + alpha_t v_{t-1}) / A_t, with
                # A_{t-1} w_{t-1} = S_j(t - 1).
                if t - 1 >= ck[BLOCK_START] + P.block:
                    new_block(&P, gp, sp, lp, ha, hb, ck, d, ck[BLOCK_START] + P.block)
                extend_hist(&P, ha, hb, ck, t - 1)
                weight_t = 0.5 * <double>t
                area_t = 0.25 * <double>t * <double>(t + 1)
                defined = terms(&P, &P.coord, t - 1, &p, &q, &r, &omega)
                here.tau = t - 1
                here.defined = defined
                here.p = p
                here.q = q
                for k in range(start, end):
                    j = ind[k] if ind != NULL else k - start
                    settle(&P, gp, sp, lp, ha, hb, ck[BLOCK_START], j, &here)
                    v_prev = -soft_threshold(gp[j] * p, q) * r if defined else 0.0
                    z += x[k] * ((sp[j] + weight_t * v_prev) / area_t)
                v_prev = iterate(&P, &P.icpt, t - 1, gp[d])
                if terms(&P, &P.icpt, t - 1, &ip, &iq, &ir, &io):
                    sp[d] += io * v_prev
                lp[d] = t
                z += bias * ((sp[d] + weight_t * v_prev) / area_t)
            deriv = sample_weight[i] * loss.derivative(y[i], z) * weight_t
            if deriv != 0.0:
                for k in range(start, end):
                    j = ind[k] if ind != NULL else k - start
                    gp[j] += deriv * x[k]
                gp[d] += deriv * bias
            ck[STEPS] = t
        floor[0] = P.floor
    return clock[STEPS]


def rda_output(double[::1] g, double[::1] s, int64_t[::1] last, double[:, ::1] hist,
               int64_t[::1] clock, tuple plan, double floor, bint average, double[::1] out):
    """The model after the steps taken, into out (length n_features + 1), without changing the
    state: dual averaging's newest iterate w_{t+1}, or its average (1/t) sum_{tau <= t} w_tau;
    accelerated RDA's w_t. Needs t >= 1 for the average and the accelerated output."""
    cdef Plan P = unpack(plan, floor)
    cdef Py_ssize_t j, d = g.shape[0] - 1
    cdef int64_t t = clock[STEPS], upto
    cdef double scale, total
    cdef Upto here
    cdef double* ha = &hist[0, 0]
    cdef double* hb = &hist[1, 0]
    with nogil:
        if not P.accelerated and not average:
            for j in range(d):
                out[j] = iterate(&P, &P.coord, t + 1, g[j])
            out[d] = iterate(&P, &P.icpt, t + 1, g[d])
        else:
            # The sums up to tau = t; the prefix sums may be extended (they depend on tau alone),
            # within the block's room (t < BLOCK_START + block + 1).
            upto = t
            extend_hist(&P, ha, hb, &clock[0], upto)
            scale = 1.0 / (<double>t if not P.accelerated else 0.25 * <double>t * <double>(t + 1))
            here = upto_terms(&P, upto)
            for j in range(d):
                total = s[j] + lazy_sum(&P, ha, hb, clock[BLOCK_START], g[j], last[j], &here)
                out[j] = total * scale
            out[d] = (s[d] + direct_sum(&P, &P.icpt, g[d], last[d], upto)) * scale
    return np.asarray(out)


def iterates(tuple plan, int64_t tau, const double[::1] g, bint intercept=False,
             double floor=0.0):
    """x(tau; g_j) for each entry of g, with the features' (or the intercept's) constants and
    the floor of beta: the closed form of eq. (8) / Algorithm 3 step 4 the kernels use (tests
    compare it with a numerical minimisation of the same subproblem)."""
    cdef Plan P = unpack(plan, floor)
    cdef double[::1] out = np.empty(g.shape[0])
    cdef Py_ssize_t j
    for j in range(g.shape[0]):
        out[j] = iterate(&P, &P.icpt if intercept else &P.coord, tau, g[j])
    return np.asarray(out)
