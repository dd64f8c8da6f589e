# The k-class loss contract with vector duals (seed 000 Sec. 3.3; docs/math.md, "Multiclass"),
# for the kernel of fastdual/solvers/_vector.pyx and the certificate of _core/gap.pyx: a VectorLoss
# states its value, its conjugate, its margin duals and its SDCA step; the kernels call
# these methods and never ask which loss they hold (its two classes are in multiclass.pyx, their
# closed forms inline below). A new k-class loss = one subclass + its tests.
#
# Sample i has margins z = W^T x_i (k entries), label y, dual a (k entries); fastdual's dual
# convention phi(z) = max_a (-a . z - phi*(-a)), so the dual objective's term is -phi*(-a).
#
# Crammer-Singer, smoothed by gamma >= 0 (gamma = 0: the plain loss):
#   phi(z) = max_{b >= 0, sum b <= 1} sum_{j != y} b_j (1 + z_j - z_y) - gamma/2 ||b||^2,
#   which for gamma = 0 is max_j (delta_{j != y} + z_j - z_y). Its dual domain is
#   C = {a : a_j <= 0 for j != y, a_y = -sum_{j != y} a_j <= 1}, and
#   -phi*(-a) = a_y - gamma/2 sum_{j != y} a_j^2 (a_j = -b_j).
#   a_y is implied by the others: every function here reads a_j for j != y only.
# Multinomial logistic: phi(z) = logsumexp(z) - z_y. With p = e_y - a in the simplex,
#   -phi*(-a) = -sum_j p_j log p_j (the entropy).
#
# The step (SDCA Option I, vector form): a' = argmax -phi*(-a') - z . (a' - a) - q/2 ||a' - a||^2,
# exactly for Crammer-Singer, to a 1e-3 fraction of the step's gain for the multinomial
# (multinomial_newton; docs/math.md 4e).
from libc.math cimport exp, log, fabs, INFINITY

cdef enum:
    # Feasibility to rounding: a point a step leaves sums to 1 (or 0) only to a few ulps.
    ROUNDING_SLACK = 64
    # The multinomial step's Newton iterations before it hands over to the exact solver.
    MN_MAX_NEWTON = 40


cdef class VectorLoss:
    # Crammer-Singer's smoothing (0: the plain loss); 0 for the multinomial.
    cdef readonly double gamma
    # Its duals sit on the faces of their domain (Crammer-Singer): shrinking pays.
    cdef readonly bint shrinks
    # phi(z) for the k margins z and the label y.
    cdef double value(self, const double* z, Py_ssize_t k, Py_ssize_t y) noexcept nogil
    # -phi*(-a), or -inf outside the domain (beyond rounding).
    cdef double dual_value(self, const double* a, Py_ssize_t k, Py_ssize_t y) noexcept nogil
    # a = -(a subgradient of phi at z): the margin duals.
    cdef void margin_duals(self, const double* z, Py_ssize_t k, Py_ssize_t y,
                           double* out) noexcept nogil
    # SDCA's step: argmax_a' -phi*(-a') - z . (a' - a) - q/2 ||a' - a||^2 into out (the
    # multinomial's to a 1e-3 fraction of its gain, multinomial_newton); work (2k doubles) and
    # order (k indices) are scratch.
    cdef void step(self, const double* z, const double* a, Py_ssize_t k, Py_ssize_t y, double q,
                   double* out, double* work, Py_ssize_t* order) noexcept nogil


cdef class CrammerSinger(VectorLoss):
    pass


cdef class Multinomial(VectorLoss):
    pass


cdef inline double lse(const double* z, Py_ssize_t k) noexcept nogil:
    cdef double top = z[0], total = 0.0
    cdef Py_ssize_t j
    for j in range(1, k):
        if z[j] > top:
            top = z[j]
    for j in range(k):
        total += exp(z[j] - top)
    return top + log(total)


cdef inline double cs_threshold(const double* z, Py_ssize_t k, Py_ssize_t y,
                                double gamma) noexcept nogil:
    """theta >= 0 with b_j = max((1 + z_j - z_y)/gamma - theta, 0) summing to at most 1 (the
    projection onto {b >= 0, sum b <= 1}; Michelot's iteration: theta only grows, each pass
    drops the coordinates below it, at most k passes, no work space)."""
    cdef double theta = 0.0, total, v, previous
    cdef Py_ssize_t j, count
    cdef int it
    total = 0.0
    for j in range(k):
        if j != y:
            v = (1.0 + z[j] - z[y]) / gamma
            if v > 0.0:
                total += v
    if total <= 1.0:
        return 0.0
    for it in range(k + 1):
        previous = theta
        total = 0.0
        count = 0
        for j in range(k):
            if j != y:
                v = (1.0 + z[j] - z[y]) / gamma
                if v > theta:
                    total += v
                    count += 1
        theta = (total - 1.0) / count
        if theta <= previous:
            return previous if previous > theta else theta
    return theta


cdef inline double cs_value(const double* z, Py_ssize_t k, Py_ssize_t y,
                            double gamma) noexcept nogil:
    cdef double best = 0.0, theta, b, u
    cdef Py_ssize_t j
    if gamma == 0.0:
        for j in range(k):
            if j != y and 1.0 + z[j] - z[y] > best:
                best = 1.0 + z[j] - z[y]
        return best
    theta = cs_threshold(z, k, y, gamma)
    for j in range(k):
        if j != y:
            u = 1.0 + z[j] - z[y]
            b = u / gamma - theta
            if b > 0.0:
                best += b * u - 0.5 * gamma * b * b
    return best


cdef inline double cs_dual_value(const double* a, Py_ssize_t k, Py_ssize_t y,
                                 double gamma) noexcept nogil:
    """-phi*(-a), or -inf outside the domain (beyond rounding)."""
    cdef double total = 0.0, squares = 0.0
    cdef Py_ssize_t j
    cdef double slack = ROUNDING_SLACK * 2.2e-16 * k
    for j in range(k):
        if j != y:
            if a[j] > 0.0:
                return -INFINITY
            total -= a[j]
            squares += a[j] * a[j]
    # a_y must be the implied -sum_{j != y} a_j (sum a = 0): v is built from the stored a_y.
    if total > 1.0 + slack or fabs(a[y] - total) > slack:
        return -INFINITY
    return total - 0.5 * gamma * squares


cdef inline double multinomial_value(const double* z, Py_ssize_t k, Py_ssize_t y) noexcept nogil:
    return lse(z, k) - z[y]


cdef inline double multinomial_dual_value(const double* a, Py_ssize_t k,
                                          Py_ssize_t y) noexcept nogil:
    """-phi*(-a) = the entropy of p = e_y - a, or -inf off the simplex (beyond rounding)."""
    cdef double total = 0.0, p, mass = 0.0
    cdef Py_ssize_t j
    cdef double slack = ROUNDING_SLACK * 2.2e-16 * k
    for j in range(k):
        p = (1.0 if j == y else 0.0) - a[j]
        if p < 0.0:
            if p < -slack:
                return -INFINITY
            p = 0.0
        mass += p
        if p > 0.0:
            total -= p * log(p)
    return total if fabs(mass - 1.0) <= slack else -INFINITY


cdef inline void multinomial_margin_duals(const double* z, Py_ssize_t k, Py_ssize_t y,
                                         double* out) noexcept nogil:
    """a = e_y - softmax(z)."""
    cdef double top = lse(z, k)
    cdef Py_ssize_t j
    for j in range(k):
        out[j] = (1.0 if j == y else 0.0) - exp(z[j] - top)


cdef inline void cs_margin_duals(const double* z, Py_ssize_t k, Py_ssize_t y, double gamma,
                                 double* out) noexcept nogil:
    """a = -b* (j != y) and sum b* (y) with b* the maximiser in phi (gamma = 0: e_y - e_j* for
    the most violating j*, 0 when no j violates)."""
    cdef double total = 0.0, best = 0.0, theta, b
    cdef Py_ssize_t j, arg = -1
    if gamma > 0.0:
        theta = cs_threshold(z, k, y, gamma)
        for j in range(k):
            out[j] = 0.0
            if j != y:
                b = (1.0 + z[j] - z[y]) / gamma - theta
                if b > 0.0:
                    out[j] = -b
                    total += b
        if total > 1.0:
            for j in range(k):
                out[j] /= total
            total = 1.0
        out[y] = total
        return
    for j in range(k):
        out[j] = 0.0
        if j != y and 1.0 + z[j] - z[y] > best:
            best = 1.0 + z[j] - z[y]
            arg = j
    if arg >= 0:
        out[arg] = -1.0
        out[y] = 1.0


cdef inline void cs_step_active(const double* z, const double* a, Py_ssize_t k, Py_ssize_t y,
                                double q, double gamma, double* out, double* values,
                                Py_ssize_t* order) noexcept nogil:
    """Crammer-Singer's step over k coordinates of a sample (all its classes, or the active ones
    of a shrunk sample, docs/math.md "Shrinking classes"): z, a, out hold those coordinates;
    y is the label's position among them, or -1 when the label is not among them (its dual is
    then held at its bound 1 and the others sum to -1).

    With a multiplier theta for sum a = 0, each coordinate's maximiser is
    a_j(theta) = min(0, (t_j - theta) / (q + gamma)) for j != y, t_j = q a_j - z_j, and
    a_y(theta) = min(1, (t_y + q - theta) / q), t_y = q a_y + 1 - z_y - q;
    f(theta) = sum_j a_j(theta) (+ 1 for a label held at 1) is piecewise linear and decreasing,
    1 below every kink t_j. The kinks are sorted and walked to f's root (docs/math.md,
    "Multiclass"). A label whose kink the root does not pass sits exactly at its bound 1."""
    cdef Py_ssize_t j, i, t, key_order
    cdef double key, constant = 1.0, slope = 0.0, theta, total = 0.0
    cdef double inv_q = 1.0 / q, inv_qg = 1.0 / (q + gamma)
    cdef bint label_free = False
    for j in range(k):
        if j == y:
            values[j] = q * a[j] + 1.0 - z[j] - q
        else:
            values[j] = q * a[j] - z[j]
        order[j] = j
    # Insertion sort of the kinks (k is small; no allocation), carrying each one's class.
    for i in range(1, k):
        key = values[i]
        key_order = order[i]
        t = i - 1
        while t >= 0 and values[t] > key:
            values[t + 1] = values[t]
            order[t + 1] = order[t]
            t -= 1
        values[t + 1] = key
        order[t + 1] = key_order
    # f = constant - slope theta between kinks.
    theta = values[k - 1]
    for i in range(k):
        j = order[i]
        if j == y:
            constant += values[i] * inv_q          # 1 becomes (t_y + q - theta) / q
            slope += inv_q
            label_free = True
        else:
            constant += values[i] * inv_qg
            slope += inv_qg
        theta = constant / slope
        if i == k - 1 or theta <= values[i + 1]:
            break
    for j in range(k):
        if j != y:
            out[j] = q * a[j] - z[j]
            out[j] = (out[j] - theta) * inv_qg if out[j] - theta < 0.0 else 0.0
            total -= out[j]
    # Rounding: the others' sum may pass the cap 1 (a free label), or miss the -1 it is in exact
    # arithmetic when the label is held at its bound (their rounding is amplified by
    # 1 / (q + gamma), large for a sample of tiny weight): scale them onto it.
    if total > 1.0 or (not label_free and total > 0.0 and total != 1.0):
        for j in range(k):
            if j != y:
                out[j] /= total
        total = 1.0
    if y >= 0:
        out[y] = total if label_free else 1.0


cdef inline void cs_step(const double* z, const double* a, Py_ssize_t k, Py_ssize_t y,
                         double q, double gamma, double* out, double* values,
                         Py_ssize_t* order) noexcept nogil:
    """Crammer-Singer (smoothed by gamma): the step over all k classes (cs_step_active)."""
    cs_step_active(z, a, k, y, q, gamma, out, values, order)


cdef inline double _entropy_cap(double c, double q) noexcept nogil:
    """An upper bound of the root of u + q e^u = c where f >= 0: min(c, 0) when c <= q (then
    f(0) = q - c >= 0, and the root is below c since q e^u > 0), log(c / q) beyond."""
    if c <= q:
        return c if c < 0.0 else 0.0
    return log(c / q)


cdef inline double _entropy_newton(double u, double c, double q) noexcept nogil:
    """Newton's iteration from u for log s + q s = c in u = log s (q > 0). f(u) = u + q e^u - c
    is convex and increasing: every iterate is kept at or below the cap (where f >= 0), from
    which Newton converges monotonically, and exp never overflows (a start far to the right,
    or a step from the left, would otherwise reach e^u = inf or crawl down one unit a step)."""
    cdef double e, step, cap = _entropy_cap(c, q)
    cdef int it
    if u > cap:
        u = cap
    for it in range(200):
        e = exp(u)
        step = (u + q * e - c) / (1.0 + q * e)
        u -= step
        if u > cap:
            u = cap
        if fabs(step) <= 1e-15 * (1.0 + fabs(u)):
            break
    return u


cdef inline double _entropy_root(double c, double q) noexcept nogil:
    """u = log s solving log s + q s = c from scratch, from the cap."""
    return _entropy_newton(_entropy_cap(c, q), c, q)


cdef inline void multinomial_step_exact(const double* z, const double* a, Py_ssize_t k,
                                        Py_ssize_t y, double q, double* out,
                                        double* r) noexcept nogil:
    """Multinomial, to machine precision (multinomial_step's fallback): p' = argmax over the simplex of H(p') + z . p' - q/2 ||p' - p||^2,
    p = e_y - a: u_j = log p'_j solves u + q e^u = r_j - nu, r_j = z_j + q p_j - 1, with nu such
    that sum_j p'_j = 1 (Newton on nu, kept inside a bisection bracket). When nu moves, each u_j
    moves first to its tangent prediction (du/dnu = -1 / (1 + q p'_j)), then takes Newton
    corrections: one or two per class instead of a solve from scratch. a' = e_y - p'."""
    cdef Py_ssize_t j
    cdef double lo, hi, nu, h, slope, s, total, top = -INFINITY, move
    cdef int it
    for j in range(k):
        r[j] = z[j] + q * ((1.0 if j == y else 0.0) - a[j]) - 1.0
        if r[j] > top:
            top = r[j]
    # h(nu) = sum_j p'_j(nu) - 1 decreases; h(top - q) >= 0 (the largest p' is 1 there) and
    # h(lse(r)) <= 0 (each p'_j <= exp(r_j - nu)).
    lo = top - q
    hi = lse(r, k)
    # Near the optimum p' = p = softmax(z), where nu = logsumexp(z) - 1 and u_j = log p_j: start
    # there (inside the bracket), and correct each u_j by Newton.
    nu = lse(z, k) - 1.0
    if not (lo < nu < hi):
        nu = hi
    for j in range(k):
        s = (1.0 if j == y else 0.0) - a[j]
        if s > 1e-300:
            out[j] = _entropy_newton(log(s), r[j] - nu, q)
        else:
            out[j] = _entropy_root(r[j] - nu, q)
    for it in range(100):
        total = 0.0
        slope = 0.0
        for j in range(k):
            s = exp(out[j])
            total += s
            slope += s / (1.0 + q * s)
        h = total - 1.0
        if fabs(h) <= 4e-16 * k:
            break
        if h > 0.0:
            lo = nu
        else:
            hi = nu
        move = h / slope
        if not (lo < nu + move < hi):
            move = 0.5 * (lo + hi) - nu
        if move == 0.0 or hi - lo <= 1e-15 * (1.0 + fabs(nu)):
            break
        nu += move
        for j in range(k):
            # From the tangent prediction, Newton's corrections.
            out[j] = _entropy_newton(out[j] - move / (1.0 + q * exp(out[j])), r[j] - nu, q)
    total = 0.0
    for j in range(k):
        out[j] = exp(out[j])
        total += out[j]
    for j in range(k):
        out[j] = (1.0 if j == y else 0.0) - out[j] / total


cdef inline int multinomial_newton(const double* z, const double* a, Py_ssize_t k, Py_ssize_t y,
                                   double q, double* out, double* work) noexcept nogil:
    """The multinomial step by Newton's method on the stationarity system in (u, nu),
    u_j = log p'_j: u_j + q e^{u_j} = r_j - nu, sum_j e^{u_j} = 1, r_j = z_j + q p_j - 1
    (docs/math.md 4e). An iteration computes s = e^u (k exps, its only transcendentals) and
    the linearised system's exact solution, nu = (S - 1 - sum_j w_j f_j) / sum_j w_j and
    du_j = -(f_j + nu) / (1 + q s_j), with S = sum_j s_j, f_j = u_j + q s_j - r_j and
    w_j = s_j / (1 + q s_j). It starts at u = log p (k logs, p = e_y - a; where some p_j
    vanishes, at p + (softmax(z) - p) / (1 + q) instead), and measures the gain of the
    normalised iterate s / S in the block objective G(p') = H(p') + z . (p' - p)
    - q/2 ||p' - p||^2 against G(p). It stops, after at least one iteration, once Newton's
    decrement lambda^2 = sum_j w_j (f_j + nu)^2 (twice the gain its model still expects) is
    at most MN_GAIN_RTOL times the gain made, or MN_GAIN_FLOOR (rounding). The result
    p' = s / S lies on the simplex by construction; if its value is below the start's
    (rounding, at an optimal start) the duals stay where they are.

    Returns the number of Newton iterations, or -1 (out undefined) when it has not converged
    in MN_MAX_NEWTON iterations or met a non-finite value. out: a' = e_y - p' (u meanwhile);
    work: 2k doubles (s, then 1 / (1 + q s))."""
    cdef Py_ssize_t j, it = 0
    cdef double p, f, g, inv, total, sw, swf, nu, lam2, gain0 = 0.0, gain = 0.0
    cdef double log_total, inv_total = 1.0, e, top, mix, shift, scale
    cdef double* s = work
    cdef double* inv_curv = work + k
    cdef bint vanishing = False
    # Newton stops once its model of the gain still left along the block (half the squared
    # decrement) is at most MN_GAIN_RTOL/2 times the gain made, or below MN_GAIN_FLOOR
    # (rounding); probabilities below MN_P_TINY start at log(MN_P_TINY).
    cdef double MN_GAIN_RTOL = 1e-3, MN_GAIN_FLOOR = 1e-20, MN_P_TINY = 1e-300
    for j in range(k):
        p = (1.0 if j == y else 0.0) - a[j]
        if p > MN_P_TINY:
            out[j] = log(p)
            s[j] = p
            gain0 -= p * out[j]
        else:
            vanishing = True
    if vanishing:
        # Some p_j = 0 (the duals' zero start gives p = e_y): Newton would take several
        # iterations to lift them; start from the simplex point p + (softmax(z) - p) / (1 + q)
        # (SDCA's first-order step with the entropy's modulus 1), positive everywhere.
        top = z[0]
        for j in range(1, k):
            if z[j] > top:
                top = z[j]
        total = 0.0
        for j in range(k):
            s[j] = exp(z[j] - top)
            total += s[j]
        mix = 1.0 / (1.0 + q)
        for j in range(k):
            p = (1.0 if j == y else 0.0) - a[j]
            if p < 0.0:
                p = 0.0
            s[j] = (1.0 - mix) * p + mix * s[j] / total
            if s[j] < MN_P_TINY:
                s[j] = MN_P_TINY
            out[j] = log(s[j])
    # The iterate is (u - shift, s * scale): the renormalisation of the last update onto the
    # simplex is applied in the next pass (S - 1 is second order in the step, and the
    # decrement is then measured at the point the step would return).
    shift = 0.0
    scale = 1.0
    while True:
        # The linearised system at the iterate.
        total = 0.0
        sw = 0.0
        swf = 0.0
        for j in range(k):
            out[j] -= shift
            s[j] *= scale
            inv = 1.0 / (1.0 + q * s[j])
            inv_curv[j] = inv
            f = out[j] + q * (s[j] - ((1.0 if j == y else 0.0) - a[j])) - z[j] + 1.0
            total += s[j]
            sw += s[j] * inv
            swf += s[j] * inv * f
        nu = (total - 1.0 - swf) / sw
        if not (fabs(nu) < INFINITY):
            return -1
        if it >= 1:
            # The decrement and the gain of the normalised iterate.
            lam2 = 0.0
            gain = 0.0
            log_total = log(total)
            inv_total = 1.0 / total
            for j in range(k):
                p = (1.0 if j == y else 0.0) - a[j]
                g = out[j] + q * (s[j] - p) - z[j] + 1.0 + nu
                lam2 += s[j] * inv_curv[j] * g * g
                e = s[j] * inv_total - p
                gain += z[j] * e - 0.5 * q * e * e
                if s[j] > 0.0:
                    gain -= s[j] * inv_total * (out[j] - log_total)
            if lam2 <= MN_GAIN_RTOL * max(gain - gain0, 0.0) + MN_GAIN_FLOOR:
                break
            if it == MN_MAX_NEWTON:
                return -1
        total = 0.0
        for j in range(k):
            g = out[j] + q * (s[j] - ((1.0 if j == y else 0.0) - a[j])) - z[j] + 1.0 + nu
            out[j] -= g * inv_curv[j]
            if out[j] > 0.0:
                out[j] = 0.0
            s[j] = exp(out[j])
            total += s[j]
        shift = log(total)
        scale = 1.0 / total
        it += 1
    if not gain >= gain0:
        for j in range(k):
            out[j] = a[j]
        return it
    for j in range(k):
        out[j] = (1.0 if j == y else 0.0) - s[j] * inv_total
    return it


cdef inline void multinomial_step(const double* z, const double* a, Py_ssize_t k, Py_ssize_t y,
                                  double q, double* out, double* work) noexcept nogil:
    """Multinomial: p' = argmax over the simplex of H(p') + z . p' - q/2 ||p' - p||^2,
    p = e_y - a, to the accuracy of multinomial_newton (which stops when what is left of the
    gain is negligible against what it made), or exactly (multinomial_step_exact) when Newton
    does not converge. a' = e_y - p'."""
    if multinomial_newton(z, a, k, y, q, out, work) < 0:
        multinomial_step_exact(z, a, k, y, q, out, work)
