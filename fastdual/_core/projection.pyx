# cython: language_level=3
"""Exact linear-time projections of seed 004 (Zhang, Saha & Vishwanathan), Sec. 5.5.

Two kernels, both found by the same device: the optimum is the root of a monotone one-dimensional
function that is smooth between "kinks"; the root is bracketed by repeated *median selection* over
the kinks still inside the bracket, while everything that is already decided is folded into a few
running aggregates (Figures 4-5), so that a round costs O(#kinks left) and the kink set halves every
round: O(n) in total, deterministically (no sort; the worst-case linear selection of select.pxd).

box_hyperplane  -- problem (64), Sec. 5.5.1, Algorithm 8:
    minimise 1/2 sum_i d_i^2 (a_i - m_i)^2   s.t.  l_i <= a_i <= u_i,  sum_i sigma_i a_i = z.
  With beta_i = sigma_i (a_i - m_i) the multiplier lambda of the equality gives (eq. 65)
      a_i(lambda) = clip(m_i + lambda sigma_i / d_i^2, l_i, u_i),
      h_i(lambda) = sigma_i (a_i(lambda) - m_i) = clip(w_i lambda, lo_i, hi_i),  w_i = sigma_i^2/d_i^2,
  with lo_i/hi_i = sigma_i (l_i - m_i) and sigma_i (u_i - m_i), ordered by the sign of sigma_i.
  f(lambda) = sum_i h_i(lambda) - z', z' = z - sum_i sigma_i m_i, is continuous, nondecreasing and
  piecewise linear with kinks lo_i / w_i and hi_i / w_i (eq. 66).  Its root gives a = a(lambda*).

elastic_net_ball -- problem (67)-(68), Sec. 5.5.2:
    minimise 1/2 ||w - g||^2   s.t.  gamma ||w||_1 + 1/2 ||w||^2 <= r.
  For lambda >= 0 the minimiser is eq. (69), w_i = sign(g_i) max(|g_i| - lambda gamma, 0) / (1 + lambda).
  Writing tau = lambda gamma (the soft threshold, kinks at tau = |g_i|) and a_i = |g_i|,
      h(tau) = sum_{a_i > tau} (a_i - tau)(a_i + tau + 2 gamma) - 2 r (1 + tau/gamma)^2
  is 2 (1 + lambda)^2 (constraint(w(lambda)) - r): continuous and strictly decreasing.  (The seed's
  printed h carries a stray factor gamma on the r term; the form here follows from eq. 69 directly.)

Duplicate kinks (Algorithm 8): the kink set is a multiset and after evaluating the function at the
median m only the kinks *strictly* on the root's side of m are kept, so duplicates of m leave with
it and the set still halves; the bracket end points are kept explicitly, so the root can never be
lost between the last kink and m (the role of the y probe in Algorithm 8).  When no kink is left
strictly inside the bracket the function is a single smooth piece there and the root is closed form.

Numerics: sigma (with z) is rescaled by a power of two so max|sigma| is in [1/2, 1), and d by a
power of two so max|sigma_i/d_i| is in (1/2, 2) (both exact and solution-preserving); then the
weights w_i are at most 4 with the largest above 1/4, and a coordinate whose weight underflows is
negligible and degrades to its correct limit (a constant contribution).  Sums that decide feasibility and the final root use
TwoSum-compensated summation.  The final pass re-sums sum_i sigma_i a_i - z as a certificate and
reports an unrepresentable multiplier (sigma_i^2/d_i^2 spanning more than the float64 range) as
an error instead of returning an infeasible point.  Hot loops use selects, not branches.
"""
from libc.math cimport fabs, sqrt, frexp, ldexp, copysign, INFINITY
from libc.math cimport isnan, isfinite

from fastdual._core.alloc cimport fd_work_alloc, fd_work_free
from fastdual._core.select cimport select_kth

cdef extern from *:
    """
    #include <math.h>
    #include <stdint.h>
    #include <string.h>
    /* floor(log2 |x|) for finite nonzero x, read from the exponent bits (libm for subnormals). */
    static inline int fd_ilogb(double x) {
        uint64_t b;
        memcpy(&b, &x, sizeof b);
        int e = (int)((b >> 52) & 0x7ff);
        return e ? e - 1023 : ilogb(x);
    }
    """
    int fd_ilogb(double x) noexcept nogil

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* c ? a : b by bit masks: no branch to mispredict, and no arithmetic on the unselected
       value (which may be infinite). Cython writes a conditional expression as an if/else. */
    static inline double fd_select(int c, double a, double b) {
        uint64_t ua, ub, mask = (uint64_t)0 - (uint64_t)(c != 0), r;
        double out;
        memcpy(&ua, &a, sizeof ua);
        memcpy(&ub, &b, sizeof ub);
        r = (ua & mask) | (ub & ~mask);
        memcpy(&out, &r, sizeof out);
        return out;
    }
    """
    double fd_select(int c, double a, double b) noexcept nogil

# Status codes, also visible from Python (fastdual/projection.py turns them into exceptions).
cpdef enum Status:
    OK = 0
    ERR_M_NOT_FINITE = 1
    ERR_LOWER_NAN = 2
    ERR_UPPER_NAN = 3
    ERR_LOWER_GT_UPPER = 4
    ERR_SIGMA_NOT_FINITE = 5
    ERR_D_ZERO = 6
    ERR_D_NOT_FINITE = 7
    ERR_LOWER_POS_INF = 8
    ERR_UPPER_NEG_INF = 9
    ERR_INFEASIBLE = 10
    ERR_NO_MEMORY = 11
    ERR_G_NOT_FINITE = 12
    ERR_ILL_CONDITIONED = 13

cdef extern from "float.h":
    const double DBL_EPSILON


# --------------------------------------------------------------------------------------------
# Compensated summation: Knuth's TwoSum recovers the exact rounding error of every addition
# without a branch (unlike Neumaier's magnitude test), so the hot loops stay branch-free.
# Only finite terms are ever added.
# --------------------------------------------------------------------------------------------
ctypedef struct Accumulator:
    double sum
    double comp


cdef inline void acc_add(Accumulator* acc, double x) noexcept nogil:
    cdef double t = acc.sum + x
    cdef double v = t - acc.sum
    acc.comp += (acc.sum - (t - v)) + (x - v)
    acc.sum = t


cdef inline double acc_value(Accumulator* acc) noexcept nogil:
    return acc.sum + acc.comp


# --------------------------------------------------------------------------------------------
# Problem (64): box + hyperplane.
# --------------------------------------------------------------------------------------------
ctypedef struct Piece:
    # h_i(lambda) = min(max(w lambda, lo), hi) = w clip(lambda, tlo, thi) with the kinks
    # tlo = lo / w, thi = hi / w (w > 0), computed once: the kink in the selection buffer is
    # bit-identical to the one classified, and no loop over the pieces divides. 24 bytes.
    double w
    double tlo
    double thi


cdef inline double clip(double x, double lo, double hi) noexcept nogil:
    # Two plain selects (not a nested conditional) compile to maxsd/minsd: no branch to
    # mispredict in the evaluation of f, where each case is equally likely.
    x = lo if x < lo else x
    return hi if x > hi else x


cdef int box_hyperplane_solve(Py_ssize_t n,
                              const double* m,
                              const double* lower, Py_ssize_t lower_inc,
                              const double* upper, Py_ssize_t upper_inc,
                              const double* sigma, Py_ssize_t sigma_inc,
                              const double* d, Py_ssize_t d_inc,
                              double z,
                              double* out,
                              Py_ssize_t* bad_index,
                              double* report) noexcept nogil:
    """Solve (64) into out[0:n].  report[0:2] receives the feasible range of z, report[2] the
    multiplier lambda in the caller's units, report[3] the residual sum(sigma a) - z.  Returns a
    status code; out is only written on OK or (possibly) ERR_ILL_CONDITIONED."""
    cdef Py_ssize_t i, j, nact, nk, n_sig = 0
    cdef double mi, li, ui, si, di, smax = 0.0
    cdef int eq, eq_max = -100000
    cdef double sig_scale, d_scale, q, w, lo, hi, tlo, thi, left, right
    cdef double lam_lo, lam_hi, lam, pivot, fval, slope, cval, tol, zs, x
    cdef double zabs = 0.0, residual, res_scale
    cdef bint at_lo, at_hi, is_free
    cdef int e
    cdef bint zmin_inf = False, zmax_inf = False
    cdef Accumulator zmin, zmax, cacc, fold, fold2
    cdef double f0, f1, f2, f3, slope2, inv
    cdef Piece* pieces = NULL
    cdef double* kinks = NULL
    cdef Piece pc

    # ---- pass 0: validation, and the scales of sigma and d ---------------------------------
    for i in range(n):
        mi = m[i]
        li = lower[i * lower_inc]
        ui = upper[i * upper_inc]
        si = sigma[i * sigma_inc]
        di = d[i * d_inc]
        if not isfinite(mi):
            bad_index[0] = i
            return ERR_M_NOT_FINITE
        if isnan(li):
            bad_index[0] = i
            return ERR_LOWER_NAN
        if isnan(ui):
            bad_index[0] = i
            return ERR_UPPER_NAN
        if li > ui:
            bad_index[0] = i
            return ERR_LOWER_GT_UPPER
        if li == INFINITY:
            bad_index[0] = i
            return ERR_LOWER_POS_INF
        if ui == -INFINITY:
            bad_index[0] = i
            return ERR_UPPER_NEG_INF
        if not isfinite(si):
            bad_index[0] = i
            return ERR_SIGMA_NOT_FINITE
        if not isfinite(di):
            bad_index[0] = i
            return ERR_D_NOT_FINITE
        if di == 0.0:
            bad_index[0] = i
            return ERR_D_ZERO
        if si != 0.0:
            n_sig += 1
            if fabs(si) > smax:
                smax = fabs(si)
            # the largest |sigma_i / d_i|, in the exponent domain (a ratio could overflow)
            eq = fd_ilogb(si) - fd_ilogb(di)
            if eq > eq_max:
                eq_max = eq

    if n_sig == 0:
        # No coupling: the hyperplane is {0 = z}; every coordinate is clipped on its own.
        report[0] = 0.0
        report[1] = 0.0
        report[2] = 0.0
        report[3] = -z
        if z != 0.0:
            return ERR_INFEASIBLE
        for i in range(n):
            out[i] = clip(m[i], lower[i * lower_inc], upper[i * upper_inc])
        return OK

    # Power-of-two scales (exact, solution-preserving): sigma (with z) so that max|sigma| is in
    # [1/2, 1), then d so that max_i |sigma_i / d_i| is in (1/2, 2).  The weights w_i = (sigma_i /
    # d_i)^2 then lie in (0, 4) with the largest above 1/4: the dominant coordinates are well
    # inside the float64 range whatever the scales of sigma and d, and a weight can only underflow
    # for a coordinate negligible against them (its limit, a constant contribution, is then exact
    # to working precision).  With floor(log2 smax) = e - 1 and eq_max = max floor(log2|sigma_i|)
    # - floor(log2|d_i|), log2|sigma_i / d_i| after scaling lies within 1 of
    # floor(log2|sigma_i|) - floor(log2|d_i|) - eq_max.  (The exponent is clamped to keep the
    # scale itself a normal number; only inputs spanning more than ~1e300 reach the clamp.)
    frexp(smax, &e)
    sig_scale = ldexp(1.0, -e)
    e = eq_max - e
    if e > 1000:
        e = 1000
    elif e < -1000:
        e = -1000
    d_scale = ldexp(1.0, e)
    zs = z * sig_scale

    pieces = <Piece*> fd_work_alloc(n_sig * sizeof(Piece))
    kinks = <double*> fd_work_alloc(2 * n_sig * sizeof(double))
    if pieces == NULL or kinks == NULL:
        fd_work_free(pieces, n_sig * sizeof(Piece))
        fd_work_free(kinks, 2 * n_sig * sizeof(double))
        return ERR_NO_MEMORY

    # ---- pass 1: pieces, feasible range, and the first kink set -----------------------------
    # cacc accumulates every constant term of f (starting with sum sigma_i m_i - z); slope the
    # slopes of coordinates that are free on the whole current bracket (Figure 4, state (e)).
    zmin.sum = zmin.comp = 0.0
    zmax.sum = zmax.comp = 0.0
    cacc.sum = cacc.comp = 0.0
    slope = 0.0
    nact = 0
    nk = 0
    for i in range(n):
        # A sigma_i below 2^-1074 relative to max|sigma| underflows to 0 here and in the final
        # pass alike: that coordinate is treated as uncoupled, consistently.
        si = sigma[i * sigma_inc] * sig_scale
        if si == 0.0:
            continue
        mi = m[i]
        li = lower[i * lower_inc]
        ui = upper[i * upper_inc]
        di = fabs(d[i * d_inc]) * d_scale
        # left / right: the bound a_i sits on as lambda -> -inf / +inf.
        # selects, not a branch: the signs of sigma (labels) are typically random
        left = fd_select(si > 0.0, li, ui)
        right = fd_select(si > 0.0, ui, li)
        if isfinite(left):
            acc_add(&zmin, si * left)
            zabs += fabs(si * left)
        else:
            zmin_inf = True
        if isfinite(right):
            acc_add(&zmax, si * right)
            zabs += fabs(si * right)
        else:
            zmax_inf = True
        acc_add(&cacc, si * mi)
        lo = si * (left - mi)
        hi = si * (right - mi)
        q = si / di
        w = q * q
        inv = 1.0 / w
        if lo == hi:
            # Tight box (l = u, or a width below rounding): a constant contribution.
            acc_add(&cacc, lo)
            continue
        if w == 0.0:
            # Weight underflowed: h_i is constant (its limit) at clip(0, lo, hi) on every
            # finite lambda.
            acc_add(&cacc, clip(0.0, lo, hi))
            continue
        if w == INFINITY:
            # Only reachable when sigma_i / d_i spans more than ~1e300 (the scale clamp above):
            # the weights are not representable together.
            fd_work_free(pieces, n_sig * sizeof(Piece))
            fd_work_free(kinks, 2 * n_sig * sizeof(double))
            report[3] = INFINITY
            return ERR_ILL_CONDITIONED
        tlo = lo * inv
        thi = hi * inv
        if thi == -INFINITY:
            acc_add(&cacc, hi)          # state (f) for every finite lambda
        elif tlo == INFINITY:
            acc_add(&cacc, lo)          # state (d)
        elif tlo == -INFINITY and thi == INFINITY:
            slope += w                  # state (e): free everywhere (both bounds infinite)
        else:
            pieces[nact].w = w
            pieces[nact].tlo = tlo
            pieces[nact].thi = thi
            nact += 1
            if isfinite(tlo):
                kinks[nk] = tlo
                nk += 1
            if isfinite(thi):
                kinks[nk] = thi
                nk += 1

    # ---- feasibility of z (the two assumptions after (64)) ----------------------------------
    # z within the rounding error of any summation order of the bound sums is accepted and
    # treated as lying on that end of the range.
    tol = 4.0 * DBL_EPSILON * (n_sig + 1) * (zabs + fabs(zs))
    report[0] = -INFINITY if zmin_inf else acc_value(&zmin) / sig_scale
    report[1] = INFINITY if zmax_inf else acc_value(&zmax) / sig_scale
    if (not zmin_inf and zs < acc_value(&zmin) - tol) or \
            (not zmax_inf and zs > acc_value(&zmax) + tol):
        fd_work_free(pieces, n_sig * sizeof(Piece))
        fd_work_free(kinks, 2 * n_sig * sizeof(double))
        return ERR_INFEASIBLE
    if not zmin_inf and zs < acc_value(&zmin):
        zs = acc_value(&zmin)
    if not zmax_inf and zs > acc_value(&zmax):
        zs = acc_value(&zmax)
    acc_add(&cacc, -zs)

    # ---- Algorithm 8: median search over the kinks ------------------------------------------
    # Invariant: f(lam_lo) <= 0 <= f(lam_hi) (as limits at +-inf); `pieces` holds exactly the
    # coordinates with a kink strictly inside (lam_lo, lam_hi), `kinks` exactly those kinks.
    lam_lo = -INFINITY
    lam_hi = INFINITY
    lam = 0.0
    while nk > 0:
        pivot = select_kth(kinks, nk, (nk - 1) // 2)
        # Four partial sums: the additions do not wait on each other (a single sum is one
        # dependent add per piece).
        f0 = f1 = f2 = f3 = 0.0
        j = 0
        while j + 4 <= nact:
            f0 += pieces[j].w * clip(pivot, pieces[j].tlo, pieces[j].thi)
            f1 += pieces[j + 1].w * clip(pivot, pieces[j + 1].tlo, pieces[j + 1].thi)
            f2 += pieces[j + 2].w * clip(pivot, pieces[j + 2].tlo, pieces[j + 2].thi)
            f3 += pieces[j + 3].w * clip(pivot, pieces[j + 3].tlo, pieces[j + 3].thi)
            j += 4
        while j < nact:
            f0 += pieces[j].w * clip(pivot, pieces[j].tlo, pieces[j].thi)
            j += 1
        fval = acc_value(&cacc) + slope * pivot + ((f0 + f1) + (f2 + f3))
        if fval == 0.0:
            lam_lo = pivot
            lam_hi = pivot
            nact = 0
            break
        if fval > 0.0:
            lam_hi = pivot
        else:
            lam_lo = pivot
        # Fold every coordinate now linear on the whole bracket into the aggregates (Figure 5);
        # keep the rest, and their kinks strictly inside the bracket (duplicates of the pivot go).
        # Written with selects instead of branches: which case applies is data-dependent and
        # unpredictable, and every store below is in bounds (nk <= 2 j, i <= j).
        # The folded constants go to two local compensated sums and the slopes to two plain ones
        # (even and odd pieces: independent chains of additions, in registers), added to cacc
        # and slope once after the loop.
        i = 0
        nk = 0
        fold.sum = fold.comp = 0.0
        fold2.sum = fold2.comp = 0.0
        slope2 = 0.0
        for j in range(nact):
            pc = pieces[j]
            tlo = pc.tlo
            thi = pc.thi
            at_hi = thi <= lam_lo                       # state (f) on the whole bracket
            at_lo = tlo >= lam_hi                       # state (d)
            is_free = (tlo <= lam_lo) & (thi >= lam_hi) # state (e)
            # select, never multiply by a flag: an unselected lo/hi may be infinite
            x = fd_select(at_hi, pc.w * thi, 0.0)
            x = fd_select(at_lo, pc.w * tlo, x)
            if j & 1:
                acc_add(&fold2, x)
                slope2 += fd_select(is_free, pc.w, 0.0)
            else:
                acc_add(&fold, x)
                slope += fd_select(is_free, pc.w, 0.0)
            pieces[i] = pc
            i += not (at_hi | at_lo | is_free)
            # a folded coordinate has no kink strictly inside, so these flags are 0 for it
            kinks[nk] = tlo
            nk += (tlo > lam_lo) & (tlo < lam_hi)
            kinks[nk] = thi
            nk += (thi > lam_lo) & (thi < lam_hi)
        acc_add(&cacc, fold.sum)
        acc_add(&cacc, fold.comp)
        acc_add(&cacc, fold2.sum)
        acc_add(&cacc, fold2.comp)
        slope += slope2
        nact = i

    # ---- the root on the last piece: f = cval + slope * lambda -------------------------------
    if lam_lo == lam_hi:
        lam = lam_lo
    else:
        cval = acc_value(&cacc)
        lam = -cval / slope if slope > 0.0 else INFINITY
        if slope > 0.0 and isfinite(lam):
            if lam < lam_lo:
                lam = lam_lo
            if lam > lam_hi:
                lam = lam_hi
        else:
            # f is constant (= 0) on the bracket: every coordinate sits on a bound there.  Take a
            # point well inside it so that the clip below lands exactly on those bounds.
            if isfinite(lam_lo) and isfinite(lam_hi):
                lam = 0.5 * lam_lo + 0.5 * lam_hi
            elif isfinite(lam_hi):
                lam = lam_hi - (fabs(lam_hi) + 1.0)
                if not isfinite(lam):
                    lam = lam_hi
            elif isfinite(lam_lo):
                lam = lam_lo + (fabs(lam_lo) + 1.0)
                if not isfinite(lam):
                    lam = lam_lo
            else:
                lam = 0.0
    fd_work_free(pieces, n_sig * sizeof(Piece))
    fd_work_free(kinks, 2 * n_sig * sizeof(double))

    # lambda in the caller's units: a_i = m_i + lambda sigma_i / d_i^2.
    report[2] = lam * sig_scale / (d_scale * d_scale)

    # ---- recover a from lambda (eq. 65), clipping in the original coordinates ----------------
    # The same pass measures the residual of the hyperplane, the certificate that lambda was
    # representable: it is not when sigma_i^2 / d_i^2 spans more than the float64 exponent range
    # and a coordinate of negligible weight must still absorb the constraint.
    residual = 0.0
    res_scale = 0.0
    for i in range(n):
        mi = m[i]
        si = sigma[i * sigma_inc] * sig_scale
        li = lower[i * lower_inc]
        ui = upper[i * upper_inc]
        if si != 0.0:
            di = fabs(d[i * d_inc]) * d_scale
            # (sigma/d)/d rather than sigma/d^2: no overflow of d^2 for large d.
            x = clip(mi + ((si / di) / di) * lam, li, ui)
            residual += si * x
            # a_i = m_i + step carries rounding of order eps (|m_i| + |a_i|): the scale of the
            # residual includes |m_i|, or a solution next to 0 far from m would look infeasible
            res_scale += fabs(si) * (fabs(mi) + fabs(x))
            mi = x
        else:
            mi = clip(mi, li, ui)
        out[i] = mi
    # Plain sums: the threshold (1e-8 relative, beyond the summation error bound) only has to
    # separate rounding from a genuinely unrepresentable multiplier.
    residual -= zs
    report[3] = residual / sig_scale
    if not fabs(residual) <= tol + (1e-8 + 4.0 * DBL_EPSILON * n_sig) * (res_scale + fabs(zs)):
        return ERR_ILL_CONDITIONED
    return OK


def box_hyperplane(const double[::1] m, const double[::1] lower, const double[::1] upper,
                   const double[::1] sigma, const double[::1] d, double z, double[::1] out):
    """Kernel entry for fastdual.projection.project_box_hyperplane (inputs already validated
    for dtype/shape; lower/upper/sigma/d have length n or 1).  Returns
    (status, bad_index, zmin, zmax, multiplier, residual)."""
    cdef Py_ssize_t n = m.shape[0]
    cdef Py_ssize_t bad = -1
    cdef double report[4]
    cdef int status
    cdef double dummy = 0.0
    cdef const double* mp = &m[0] if n > 0 else &dummy
    cdef double* op = &out[0] if n > 0 else &dummy
    cdef const double* lp = &lower[0] if lower.shape[0] > 0 else &dummy
    cdef const double* up = &upper[0] if upper.shape[0] > 0 else &dummy
    cdef const double* sp = &sigma[0] if sigma.shape[0] > 0 else &dummy
    cdef const double* dp = &d[0] if d.shape[0] > 0 else &dummy
    cdef Py_ssize_t li = 1 if lower.shape[0] == n else 0
    cdef Py_ssize_t ui = 1 if upper.shape[0] == n else 0
    cdef Py_ssize_t si = 1 if sigma.shape[0] == n else 0
    cdef Py_ssize_t di = 1 if d.shape[0] == n else 0
    report[0] = report[1] = report[2] = report[3] = 0.0
    with nogil:
        status = box_hyperplane_solve(n, mp, lp, li, up, ui, sp, si, dp, di, z, op, &bad, report)
    return status, bad, report[0], report[1], report[2], report[3]


# --------------------------------------------------------------------------------------------
# Problem (67)-(68): projection onto the elastic-net ball.
# --------------------------------------------------------------------------------------------
cdef int elastic_net_ball_solve(Py_ssize_t n, const double* g, double gamma, double r,
                                double* out, Py_ssize_t* bad_index,
                                double* report) noexcept nogil:
    """Solve (67)-(68) into out[0:n]; report[0] receives the multiplier lambda of (69)."""
    cdef Py_ssize_t i, j, nk, keep
    cdef double gi, amax = 0.0, scale, gs, rs, tau, tau_lo = 0.0, tau_hi = INFINITY, pivot, hval, a, x, u2m1
    cdef double count = 0.0, num, den
    cdef int e
    cdef Accumulator total, agg
    cdef double* kinks = NULL

    for i in range(n):
        gi = g[i]
        if not isfinite(gi):
            bad_index[0] = i
            return ERR_G_NOT_FINITE
        if fabs(gi) > amax:
            amax = fabs(gi)
    report[0] = 0.0
    if amax == 0.0:
        for i in range(n):
            out[i] = g[i]
        return OK

    # Scale g by a power of two so max|g| is in [1/2, 1); gamma scales with g and r with g^2.
    frexp(amax, &e)
    scale = ldexp(1.0, -e)
    gs = gamma * scale
    rs = (r * scale) * scale

    # Inside the ball (h(0) <= 0): g is its own projection, lambda = 0.
    total.sum = total.comp = 0.0
    for i in range(n):
        a = fabs(g[i]) * scale
        acc_add(&total, a * (a + 2.0 * gs))
    if acc_value(&total) <= 2.0 * rs:
        for i in range(n):
            out[i] = g[i]
        return OK
    if rs == 0.0:
        # The ball is {0} (r = 0, or r negligible against ||g||^2).
        for i in range(n):
            out[i] = 0.0
        report[0] = INFINITY
        return OK

    if gs == 0.0:
        # Pure l2 ball (gamma = 0): no threshold, tau = 0 and every coordinate active.
        tau = 0.0
        agg = total
        count = n
    else:
        kinks = <double*> fd_work_alloc(n * sizeof(double))
        if kinks == NULL:
            return ERR_NO_MEMORY
        nk = 0
        for i in range(n):
            a = fabs(g[i]) * scale
            if a > 0.0:             # a zero coordinate is never active (a_i > tau >= 0 fails)
                kinks[nk] = a
                nk += 1
        # Invariant: h(tau_lo) > 0 > h(tau_hi); kinks strictly inside (tau_lo, tau_hi) are in
        # `kinks`; coordinates with a_i >= tau_hi are active on the whole bracket and summed in
        # agg / count; those with a_i <= tau_lo are inactive and dropped.
        tau_lo = 0.0
        tau_hi = INFINITY
        agg.sum = agg.comp = 0.0
        tau = -1.0
        while nk > 0:
            pivot = select_kth(kinks, nk, (nk - 1) // 2)
            hval = acc_value(&agg) - count * pivot * (pivot + 2.0 * gs)
            for j in range(nk):
                a = kinks[j]
                # select rather than branch: a > pivot holds for about half of the kinks
                hval += (a - pivot) * (a + pivot + 2.0 * gs) if a > pivot else 0.0
            x = 1.0 + pivot / gs
            hval -= 2.0 * rs * x * x
            if hval == 0.0:
                tau = pivot
                break
            keep = 0
            if hval > 0.0:
                # root above the pivot: kinks <= pivot belong to coordinates inactive from now on
                tau_lo = pivot
                for j in range(nk):
                    a = kinks[j]
                    kinks[keep] = a
                    keep += a > pivot
            else:
                # root below the pivot: coordinates with a_i >= pivot are active on the whole
                # bracket, their terms join the aggregate
                tau_hi = pivot
                for j in range(nk):
                    a = kinks[j]
                    acc_add(&agg, a * (a + 2.0 * gs) if a >= pivot else 0.0)
                    count += 1.0 if a >= pivot else 0.0
                    kinks[keep] = a
                    keep += a < pivot
            nk = keep
        fd_work_free(kinks, n * sizeof(double))

    if tau >= 0.0 and gs > 0.0:
        x = tau / gs                        # the root is a kink
    else:
        # On the last piece: sum_A (a_i + gamma)^2 = u^2 (2r + |A| gamma^2), u = 1 + lambda, so
        # u^2 - 1 = (sum_A a_i (a_i + 2 gamma) - 2r) / (2r + |A| gamma^2); lambda = (u^2-1)/(u+1)
        # avoids the cancellation of u - 1 when the point is just outside the ball.
        if gs <= 1.0:
            u2m1 = (acc_value(&agg) - 2.0 * rs) / (2.0 * rs + count * gs * gs)
            if u2m1 < 0.0:
                u2m1 = 0.0
            x = u2m1 / (sqrt(1.0 + u2m1) + 1.0)
            if not isfinite(x):
                x = sqrt(u2m1)      # u^2 - 1 overflowed (r negligible against ||g||^2)
            tau = gs * x
        else:
            # gamma large against g: divide through by gamma^2 (|A| gamma^2 could overflow) and
            # form tau = gamma x without multiplying gamma into a tiny x.
            # u^2 - 1 = num / (gamma den), num = (sum_A ... - 2r) / gamma, den = 2r/gamma^2 + |A|
            num = (acc_value(&agg) - 2.0 * rs) / gs
            if num < 0.0:
                num = 0.0
            den = (2.0 * rs / gs) / gs + count
            u2m1 = (num / gs) / den
            tau = num / (den * (sqrt(1.0 + u2m1) + 1.0))
            x = tau / gs
        if gs > 0.0:
            if tau < tau_lo or tau > tau_hi:
                tau = tau_lo if tau < tau_lo else tau_hi
                x = tau / gs
        else:
            tau = 0.0
    report[0] = x
    # eq. (69), in the caller's units (tau / scale is exact).  When r is below the rounding level
    # of g (r << eps max|g|^2) tau cannot be resolved finely enough to keep w inside the ball to
    # the last digit of r: the constraint then holds to O(eps) (gamma max|g| + max|g|^2).
    tau = tau / scale
    for i in range(n):
        gi = g[i]
        a = fabs(gi) - tau
        out[i] = copysign(a / (1.0 + x), gi) if a > 0.0 else 0.0
    return OK


def elastic_net_ball(const double[::1] g, double gamma, double r, double[::1] out):
    """Kernel entry for fastdual.projection.project_elastic_net_ball.
    Returns (status, bad_index, multiplier)."""
    cdef Py_ssize_t n = g.shape[0]
    cdef Py_ssize_t bad = -1
    cdef double report[1]
    cdef int status
    cdef double dummy = 0.0
    cdef const double* gp = &g[0] if n > 0 else &dummy
    cdef double* op = &out[0] if n > 0 else &dummy
    report[0] = 0.0
    with nogil:
        status = elastic_net_ball_solve(n, gp, gamma, r, op, &bad, report)
    return status, bad, report[0]


def select(double[::1] values, Py_ssize_t k):
    """k-th smallest entry (0-based) of values by the kernel's linear-time selection; permutes
    values in place.  Exposed for tests and benchmarks."""
    cdef Py_ssize_t n = values.shape[0]
    cdef double result
    if not 0 <= k < n:
        raise IndexError("k out of range")
    with nogil:
        result = select_kth(&values[0], n, k)
    return result
