# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The F1-score max-margin risk (seed 004 Example 3, eq. 43; Joachims' multivariate SVM):

    R(w) = max_{y'} Delta(y', y) + (1/n) sum_i s_i (y'_i - y_i),    s_i = x_i . w,

Delta = 1 - F1 = (b + c) / (2 n_+ - b + c) with b false negatives and c false positives (0 when
y' = y). Smoothed with the entropy over the 2^n labelings (eq. 53):

    R_mu(w) = mu log sum_{y'} exp(E(y') / mu) - mu n log 2,

whose gradient is (2/n) (sum_{negatives j} q_j x_j - sum_{positives i} q_i x_i), q_i the
probability that y'_i != y_i under the Gibbs distribution p(y') ~ exp(E(y') / mu). The sum over
y' factors through (b, c): the flips of the positives and of the negatives enter through the
elementary symmetric polynomials of t_i = exp(-2 s_i / (n mu)) and r_j = exp(2 s_j / (n mu)),
computed by the forward recursion of Algorithm 5 and the marginals by the backward recursion of
Algorithm 6, all in log space (mu is small: the weights over- and underflow otherwise), in
O(n_+^2 + n_-^2 + n_+ n_-) time and O(n_+^2 + n_-^2) memory. docs/math.md Sec. 4i.
"""
import numpy as np
from libc.math cimport exp, log, log1p, INFINITY, fabs

cdef double NEG_INF = -INFINITY


cdef inline double logaddexp(double a, double b) noexcept nogil:
    if a == NEG_INF:
        return b
    if b == NEG_INF:
        return a
    if a > b:
        return a + log1p(exp(b - a))
    return b + log1p(exp(a - b))


cdef inline double f1_loss(Py_ssize_t n_pos, Py_ssize_t b, Py_ssize_t c) noexcept nogil:
    """1 - F1 = 1 - 2a / (2a + b + c), a = n_pos - b true positives (n_pos > 0)."""
    return (b + c) / <double>(2 * n_pos - b + c)


cdef inline double f1_score(Py_ssize_t n_pos, Py_ssize_t b, Py_ssize_t c) noexcept nogil:
    """F1 = 1 - Delta = 2a / (2a + b + c) >= 0, a = n_pos - b: Delta - max Delta (max Delta = 1,
    at b = n_pos) is -F1, exactly as rounded once (not 1 - Delta, which loses F1's digits)."""
    return 2.0 * (n_pos - b) / <double>(2 * n_pos - b + c)


cdef void forward(const double* logt, Py_ssize_t m, double* table) noexcept nogil:
    """Rows k = 0..m of log e_v(t_1..t_k), v = 0..k, stored one after the other (row k starts
    at k (k + 1) / 2): Algorithm 5 in log space."""
    cdef Py_ssize_t k, v, row, prev
    table[0] = 0.0
    for k in range(1, m + 1):
        row = k * (k + 1) // 2
        prev = (k - 1) * k // 2
        table[row] = table[prev]                                     # v = 0
        for v in range(1, k):
            table[row + v] = logaddexp(table[prev + v], table[prev + v - 1] + logt[k - 1])
        table[row + k] = table[prev + k - 1] + logt[k - 1]           # v = k


cdef void marginals(const double* logt, Py_ssize_t m, const double* table,
                    const double* log_eta, double log_z, double* xi, double* next_xi,
                    double* out) noexcept nogil:
    """out_k = P(element k flipped) = t_k sum_v e_v(t_1..t_k-1) xi_k(v) / Z, with
    xi_m(v) = eta(v + 1) and xi_k-1(v) = xi_k(v) + t_k xi_k(v + 1): Algorithm 6 in log space."""
    cdef Py_ssize_t k, v, prev
    cdef double total
    cdef double* swap
    for v in range(m):
        xi[v] = log_eta[v + 1]
    for k in range(m, 0, -1):
        prev = (k - 1) * k // 2          # row k - 1 of the forward table, v = 0..k-1
        total = NEG_INF
        for v in range(k):
            total = logaddexp(total, table[prev + v] + xi[v])
        out[k - 1] = exp(logt[k - 1] + total - log_z)
        if k > 1:
            for v in range(k - 1):
                next_xi[v] = logaddexp(xi[v], logt[k - 1] + xi[v + 1])
            swap = xi
            xi = next_xi
            next_xi = swap


def gibbs(const double[::1] scores, const double[::1] y, double mu, double[::1] flips):
    """(log Z, E_p[Delta], E_p[E(y')]) of the Gibbs distribution p(y') ~ exp(E(y') / mu) at the
    scores s, and flips_i = P(y'_i != y_i). y is +-1 with at least one +1."""
    cdef Py_ssize_t n = scores.shape[0], i, b, c, P = 0, N = 0
    for i in range(n):
        if y[i] > 0:
            P += 1
    N = n - P
    cdef double[::1] logt = np.empty(P), logr = np.empty(N)
    cdef Py_ssize_t[::1] pos = np.empty(P, dtype=np.intp), neg = np.empty(N, dtype=np.intp)
    cdef double scale = 2.0 / (n * mu)
    cdef Py_ssize_t ip = 0, jn = 0
    for i in range(n):
        if y[i] > 0:
            pos[ip] = i
            logt[ip] = -scale * scores[i]
            ip += 1
        else:
            neg[jn] = i
            logr[jn] = scale * scores[i]
            jn += 1
    cdef double[::1] tp = np.empty((P + 1) * (P + 2) // 2), tn = np.empty((N + 1) * (N + 2) // 2)
    cdef double[::1] eta_p = np.empty(P + 1), eta_n = np.empty(N + 1)
    cdef double[::1] work = np.empty(2 * max(P, N) + 2), out_p = np.empty(P), out_n = np.empty(N)
    cdef double log_z = NEG_INF, weight, expected = 0.0, delta, t
    cdef double* vp
    cdef double* vn
    with nogil:
        forward(&logt[0] if P > 0 else NULL, P, &tp[0])
        forward(&logr[0] if N > 0 else NULL, N, &tn[0])
        vp = &tp[P * (P + 1) // 2]       # log V_+(b) = log e_b(t), b = 0..P
        vn = &tn[N * (N + 1) // 2]       # log V_-(c)
        for b in range(P + 1):
            eta_p[b] = NEG_INF
        for c in range(N + 1):
            eta_n[c] = NEG_INF
        # The log-weights Delta / mu less their largest part 1 / mu (Delta <= 1): -F1 / mu,
        # rounded relative to F1 / mu, where Delta / mu would carry an error of eps / mu into
        # every weight (O(1) at mu ~ 1e-16: the dual came out above the optimum). log Z is
        # shifted by the same 1 / mu, added back once at the end.
        for b in range(P + 1):
            for c in range(N + 1):
                t = -f1_score(P, b, c) / mu
                weight = t + vp[b] + vn[c]
                log_z = logaddexp(log_z, weight)
                eta_p[b] = logaddexp(eta_p[b], t + vn[c])
                eta_n[c] = logaddexp(eta_n[c], t + vp[b])
        for b in range(P + 1):
            for c in range(N + 1):
                delta = f1_loss(P, b, c)
                expected += delta * exp(-f1_score(P, b, c) / mu + vp[b] + vn[c] - log_z)
        if P > 0:
            marginals(&logt[0], P, &tp[0], &eta_p[0], log_z, &work[0], &work[max(P, N) + 1],
                      &out_p[0])
        if N > 0:
            marginals(&logr[0], N, &tn[0], &eta_n[0], log_z, &work[0], &work[max(P, N) + 1],
                      &out_n[0])
    cdef double energy = expected
    log_z += 1.0 / mu
    for i in range(P):
        flips[pos[i]] = out_p[i]
        energy -= 2.0 / n * out_p[i] * scores[pos[i]]
    for i in range(N):
        flips[neg[i]] = out_n[i]
        energy += 2.0 / n * out_n[i] * scores[neg[i]]
    return log_z, expected, energy


def worst_labeling(const double[::1] scores, const double[::1] y):
    """R(w) = max over y' of E(y'): for each (b, c), flip the b positives of smallest score and
    the c negatives of largest score (sorted once; O(n log n + n_+ n_-))."""
    cdef Py_ssize_t n = scores.shape[0], b, c
    positive = np.asarray(y) > 0
    cdef double[::1] low = np.concatenate(([0.0], np.cumsum(np.sort(np.asarray(scores)[positive]))))
    cdef double[::1] high = np.concatenate(([0.0], np.cumsum(-np.sort(-np.asarray(scores)[~positive]))))
    cdef Py_ssize_t P = low.shape[0] - 1, N = high.shape[0] - 1
    cdef double best = -INFINITY, value
    with nogil:
        for b in range(P + 1):
            for c in range(N + 1):
                value = f1_loss(P, b, c) + 2.0 / n * (high[c] - low[b])
                if value > best:
                    best = value
    return best
