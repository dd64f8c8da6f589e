# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The one certificate: primal P(w), dual D(alpha) and hence the duality gap, for every solver.

(alpha here is the vector of duals, as in seed 000; in code it is `duals`, since `alpha` is the
regularization strength in the API.)

    P(w)     = (1/n) sum_i c_i phi(y_i, x_i . w) + l2/2 ||w||^2 + l1 ||w||_1
    v(alpha) = 1/(l2 n) sum_i c_i alpha_i x_i
    D(alpha) = (1/n) sum_i c_i (-phi*(-alpha_i)) - l2 g*(v(alpha)),
    g*(v)    = sum_j 1/2 max(0, |v_j| - l1/l2)^2            (g = 1/2||.||^2 + (l1/l2)||.||_1)

(seed 000 eq. 2 and Sec. 3.1; the sample weights c_i are normalised to mean 1 upstream). v is
recomputed from alpha here, in the same pass over the rows as the margins, so that the certificate
never depends on a solver's incremental bookkeeping. w here includes the intercept feature as its
last coordinate, regularised like the others (LIBLINEAR's -B).

Pure l1 (l2 = 0): the dual is D(alpha) = (1/n) sum_i c_i (-phi*(-alpha_i)) subject to
||(1/n) sum_i c_i alpha_i x_i||_inf <= l1. Any alpha is made feasible by scaling it by
s = min(1, l1 / ||(1/n) X^T (c alpha)||_inf) (every domain of phi* is convex and holds 0), so the
certificate of a pure-l1 model is exact for the l1 problem itself, not for an l2-augmented one.
There the dual point built from the margins, u_i = -phi'(x_i . w), scaled the same way, is often
much closer to optimal than the solver's alpha (it is what certifies a Lasso solution); both are
computed in the same pass and the larger dual value, still a true lower bound, is reported.

The gap is not taken as P - D: at a small relative gap on many rows the rounding of the two O(n)
sums is as large as the gap itself. It is accumulated in the same pass as a sum of terms that
are each >= 0 (Fenchel-Young; docs/math.md Sec. 2, "The gap without cancellation"):

    gap = (1/n) sum_i c_i [phi(y_i, z_i) + phi*(-a_i) + a_i z_i] + l2 [g(w) + g*(v) - w . v],

equal to P - D in exact arithmetic since (1/n) sum_i c_i a_i z_i = l2 w . v, with each
penalty entry 1/2 (w_j - s_j)^2 + |w_j| (kappa - sign(w_j) t_j), t_j = clip(v_j, -kappa, kappa),
s_j = v_j - t_j. Pure l1: the same over the scaled duals, penalty entries
|w_j| (l1 - sign(w_j) s u_j).
"""
import numpy as np
from cython cimport floating
from libc.math cimport fabs

from fastdual._core.alloc cimport cache_aligned
from fastdual._core.losses cimport Loss
from fastdual._core.multiclass cimport VectorLoss
from fastdual._core.rows cimport (row_range, row_dot, row_axpy, row_axpy_exact, split,
                                  two_product, two_sum_add)


cdef inline double _fenchel_young(double value, double dual_term, double a,
                                  double z) noexcept nogil:
    """phi(z) + phi*(-a) + a z >= 0 (Fenchel-Young), from phi(z) and dual_term = -phi*(-a):
    +inf outside the domain of phi*; a term below 0 is rounding and counts as 0."""
    cdef double term = (value + a * z) - dual_term
    return 0.0 if term < 0.0 else term


cdef double _feasible_scale(const double* v, Py_ssize_t m, double l1) noexcept nogil:
    """s = min(1, l1 / ||v||_inf) over m entries: s a is feasible for the pure-l1 dual."""
    cdef double max_abs = 0.0
    cdef Py_ssize_t j
    for j in range(m):
        if fabs(v[j]) > max_abs:
            max_abs = fabs(v[j])
    return l1 / max_abs if max_abs > l1 else 1.0


cdef void _scaled_dual_sums(double shrink, Loss loss, const double[::1] y,
                            const double[::1] sample_weight, const double[::1] duals,
                            const double[::1] margins, const double[::1] values,
                            Py_ssize_t n_samples, double* conj_sum,
                            double* fy_sum) noexcept nogil:
    """sum_i c_i (-phi*(-s a_i)) and sum_i c_i [phi(z_i) + phi*(-s a_i) + s a_i z_i] from the
    margins z_i and loss values phi(z_i) the pass kept."""
    cdef Py_ssize_t i
    cdef double a, dual_term
    for i in range(n_samples):
        if sample_weight[i] != 0.0:
            a = shrink * duals[i]
            dual_term = loss.dual_value(y[i], a)
            conj_sum[0] += sample_weight[i] * dual_term
            fy_sum[0] += sample_weight[i] * _fenchel_young(values[i], dual_term, a, margins[i])


cdef void _penalty_terms(const double* w, const double* v, Py_ssize_t m, double l2, double l1,
                         double* sq_norm, double* l1_norm, double* g_conj) noexcept nogil:
    """||w||^2, ||w||_1 and g*(v) = sum_j 1/2 max(0, |v_j| - l1/l2)^2 over m entries (g* only
    when l2 > 0): the regulariser's share of P and D, for one coefficient vector or k."""
    cdef Py_ssize_t j
    cdef double kappa, excess
    # (the sums in locals, as in _finish: through the pointers each addition waits on a store)
    cdef double squares = sq_norm[0], absolutes = l1_norm[0], conjugate = g_conj[0]
    for j in range(m):
        squares += w[j] * w[j]
        absolutes += fabs(w[j])
    if l2 > 0.0:
        kappa = l1 / l2
        for j in range(m):
            excess = fabs(v[j]) - kappa
            if excess > 0.0:
                conjugate += 0.5 * excess * excess
    sq_norm[0], l1_norm[0], g_conj[0] = squares, absolutes, conjugate


cdef double _penalty_gap(const double* w, const double* v, Py_ssize_t m, double l2, double l1,
                         double shrink) noexcept nogil:
    """The regulariser's share of the gap over m entries, a sum of terms >= 0: for l2 > 0,
    l2 [g(w) + g*(v) - w . v] = l2 sum_j [1/2 (w_j - s_j)^2 + |w_j| (kappa - sign(w_j) t_j)]
    with t_j = clip(v_j, -kappa, kappa), s_j = v_j - t_j, kappa = l1 / l2; for l2 = 0,
    l1 ||w||_1 - w . (shrink v) = sum_j |w_j| (l1 - sign(w_j) u_j), u_j = shrink v_j clipped
    to [-l1, l1] (it is in it but for rounding). docs/math.md Sec. 2."""
    cdef Py_ssize_t j
    cdef double kappa, t, d, total = 0.0
    if l2 > 0.0:
        kappa = l1 / l2
        for j in range(m):
            t = v[j] if v[j] < kappa else kappa
            t = t if t > -kappa else -kappa
            d = w[j] - (v[j] - t)
            if w[j] > 0.0:
                total += 0.5 * d * d + w[j] * (kappa - t)
            else:
                total += 0.5 * d * d - w[j] * (kappa + t)
        return l2 * total
    for j in range(m):
        t = shrink * v[j]
        t = t if t < l1 else l1
        t = t if t > -l1 else -l1
        if w[j] > 0.0:
            total += w[j] * (l1 - t)
        else:
            total -= w[j] * (l1 + t)
    return total


cdef void _block_pass(const floating* x, const int* ind, const int* ptr, Py_ssize_t n_rows,
                      Py_ssize_t n_features, double bias, const double[::1] y,
                      const double[::1] sample_weight, const double* w,
                      const double[::1] duals, Loss loss, double v_bias, double* v,
                      double* v_error, double* loss_sum, double* conj_sum, double* fy_sum,
                      bint keep_margins, double[::1] margins, double[::1] values,
                      bint margin_alternative, double[::1] margin_duals,
                      double* v_margin) noexcept nogil:
    """One pass over a block of rows: adds sum_i c_i phi(x_i . w), sum_i c_i (-phi*(-a_i)) and
    the Fenchel-Young sum sum_i c_i [phi(x_i . w) + phi*(-a_i) + a_i x_i . w] to the sums and
    c_i a_i x_i to v (the intercept feature's entry with v_bias; the caller scales by
    1/(l2 n)). Unless v_error is NULL, the rounding of every product and addition goes to
    v_error (row_axpy_exact; v itself gets the same bits as without): v + v_error is then the
    sum up to O(n eps^2) of the sum of its terms' sizes, however much they cancel, a v a
    solver can take over as its own. For pure l1 (keep_margins) the Fenchel-Young terms
    wait for the duals' scale: the margins and loss values are kept instead, and, with
    margin_alternative, the margin duals and their v. The block form of the certificate: blocks
    of rows (Dask's, one machine's) are passed separately and their sums and v's added."""
    cdef Py_ssize_t i, start, end
    cdef double z, c, coef, coef_error, bias_term, bias_error, u, value, dual_term
    for i in range(n_rows):
        c = sample_weight[i]
        if c == 0.0:
            continue
        row_range(ptr, i, n_features, &start, &end)
        z = row_dot(x, ind, start, end, w) + bias * w[n_features]
        value = loss.value(y[i], z)
        dual_term = loss.dual_value(y[i], duals[i])
        loss_sum[0] += c * value
        conj_sum[0] += c * dual_term
        if keep_margins:
            margins[i] = z
            values[i] = value
        else:
            fy_sum[0] += c * _fenchel_young(value, dual_term, duals[i], z)
        if duals[i] != 0.0:
            if v_error != NULL:
                two_product(c, duals[i], &coef, &coef_error)
                row_axpy_exact(x, ind, start, end, coef, coef_error, v, v_error)
                two_product(coef, v_bias, &bias_term, &bias_error)
                two_sum_add(&v[n_features], &v_error[n_features], bias_term)
                v_error[n_features] += bias_error + coef_error * v_bias
            else:
                coef = c * duals[i]
                row_axpy(x, ind, start, end, coef, v)
                v[n_features] += coef * v_bias
        if margin_alternative:
            u = loss.dual_from_margin(y[i], z)
            margin_duals[i] = u
            if u != 0.0:
                coef = c * u
                row_axpy(x, ind, start, end, coef, v_margin)
                v_margin[n_features] += coef * v_bias


cdef void _scale(double* v, double* error, Py_ssize_t m, double factor) noexcept nogil:
    """The pass's sums scaled to v(duals): v = v factor, the sum as row_axpy makes it, and,
    unless error is NULL, error = (v + error) factor, the sum with the rounding the pass kept."""
    cdef Py_ssize_t j
    for j in range(m):
        if error != NULL:
            error[j] = (v[j] + error[j]) * factor
        v[j] *= factor


# block_sums keeps, for every feature j, the four numbers its pass reads or adds to side by side
# (w_j, the share's sum, that sum's rounding, the margin duals' share): one cache line per stored
# entry instead of one per vector. Where the features are many (a 10^6-feature block: four 8 MB
# vectors) the pass is bound by those misses, not by its arithmetic.
cdef enum:
    PACKED = 4


cdef extern from *:
    """
    /* The exact share's products with float64 values: product + error = coef x exactly, the
       error by one fused multiply-add where the processor has one (checked at run time) instead
       of Dekker's 17 operations; the same numbers either way (both are the exact rounding
       error). fp-contract off: no other product and sum may be fused (the sums' roundings are
       those of the portable path, bit for bit). */
    #if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
    #define FASTDUAL_EXACT_FMA 1
    __attribute__((target("fma"), optimize("fp-contract=off")))
    #elif defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
    #define FASTDUAL_EXACT_FMA 1
    __attribute__((target("fma")))
    #else
    #define FASTDUAL_EXACT_FMA 0
    #endif
    static void fastdual_packed_axpy_exact_fma(const double* data, const int* indices,
                                               Py_ssize_t start, Py_ssize_t end, double coef,
                                               double coef_error, double* packed) {
    #if FASTDUAL_EXACT_FMA
    #if defined(__clang__)
    #pragma clang fp contract(off)
    #endif
        Py_ssize_t k, j;
        double x, product, product_error, total, s, t, rounding, carried;
        for (k = start; k < end; k++) {
            j = 4 * (indices != NULL ? indices[k] : k - start);
            x = data[k];
            product = coef * x;
            product_error = __builtin_fma(coef, x, -product);
            total = packed[j + 1];
            s = total + product;
            t = s - total;
            rounding = (total - (s - t)) + (product - t);
            packed[j + 2] += rounding;
            packed[j + 1] = s;
            carried = coef_error * x;
            packed[j + 2] += product_error + carried;
        }
    #endif
    }
    static int fastdual_exact_fma(void) {
    #if FASTDUAL_EXACT_FMA
        __builtin_cpu_init();
        return __builtin_cpu_supports("fma") ? 1 : 0;
    #else
        return 0;
    #endif
    }
    """
    void packed_axpy_exact_fma "fastdual_packed_axpy_exact_fma"(
        const double* data, const int* indices, Py_ssize_t start, Py_ssize_t end, double coef,
        double coef_error, double* packed) noexcept nogil
    int exact_fma "fastdual_exact_fma"() noexcept nogil


# Whether this processor fuses the exact share's products (fastdual_exact_fma above); a module
# global so that tests can run the portable path too.
cdef bint _use_fma = exact_fma() != 0


# Whether primal_dual takes sparse rows through the packed layout (a module global so that tests
# can run the plain pass on the same rows and compare the bits).
cdef bint _use_packed = True


def _set_packed(bint on):
    """primal_dual's pass over sparse rows by the packed layout (on) or over w, v and v's
    rounding as three vectors (off); returns the previous setting. The numbers are the same."""
    global _use_packed
    previous = _use_packed
    _use_packed = on
    return previous


def _set_exact_fma(bint on):
    """Use the fused multiply-add path for float64 blocks when the processor has one (on) or
    Dekker's portable products (off); returns whether the fused path is now in use."""
    global _use_fma
    _use_fma = on and exact_fma() != 0
    return _use_fma


cdef inline double _packed_dot(const floating* data, const int* indices, Py_ssize_t start,
                               Py_ssize_t end, const double* packed) noexcept nogil:
    """x_i . w with w_j at packed[PACKED j]: row_dot's partial sums in row_dot's order (the same
    bits as row_dot over w itself)."""
    cdef Py_ssize_t k, m
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef const floating* x
    if indices != NULL:
        k = start
        while k + 2 <= end:
            s0 += data[k] * packed[PACKED * indices[k]]
            s1 += data[k + 1] * packed[PACKED * indices[k + 1]]
            k += 2
        if k < end:
            s0 += data[k] * packed[PACKED * indices[k]]
        return s0 + s1
    x = data + start
    m = end - start
    k = 0
    while k + 4 <= m:
        s0 += x[k] * packed[PACKED * k]
        s1 += x[k + 1] * packed[PACKED * (k + 1)]
        s2 += x[k + 2] * packed[PACKED * (k + 2)]
        s3 += x[k + 3] * packed[PACKED * (k + 3)]
        k += 4
    while k < m:
        s0 += x[k] * packed[PACKED * k]
        k += 1
    return (s0 + s1) + (s2 + s3)


cdef inline void _packed_axpy_exact(const floating* data, const int* indices, Py_ssize_t start,
                                    Py_ssize_t end, double coef, double coef_error,
                                    double* packed) noexcept nogil:
    """row_axpy_exact into packed[PACKED j + 1] (the sum) and packed[PACKED j + 2] (its
    rounding), the same operations in the same order."""
    cdef Py_ssize_t k, j
    cdef double head, rest, product, product_error
    if floating is float:
        split(coef, 16777217.0, &head, &rest)
        rest += coef_error
        for k in range(start, end):
            j = PACKED * (indices[k] if indices != NULL else k - start)
            product = coef * data[k]
            two_sum_add(&packed[j + 1], &packed[j + 2], product)
            packed[j + 2] += (head * data[k] - product) + rest * data[k]
    elif _use_fma:
        packed_axpy_exact_fma(data, indices, start, end, coef, coef_error, packed)
    else:
        for k in range(start, end):
            j = PACKED * (indices[k] if indices != NULL else k - start)
            two_product(coef, data[k], &product, &product_error)
            two_sum_add(&packed[j + 1], &packed[j + 2], product)
            packed[j + 2] += product_error + coef_error * data[k]


cdef inline void _packed_axpy(const floating* data, const int* indices, Py_ssize_t start,
                              Py_ssize_t end, double coef, double* packed) noexcept nogil:
    """row_axpy into packed[PACKED j + 3]."""
    cdef Py_ssize_t k
    for k in range(start, end):
        packed[PACKED * (indices[k] if indices != NULL else k - start) + 3] += coef * data[k]


cdef void _packed_pass(const floating* x, const int* ind, const int* ptr, Py_ssize_t n_rows,
                       Py_ssize_t n_features, double bias, const double[::1] y,
                       const double[::1] sample_weight, const double[::1] duals, Loss loss,
                       double v_bias, double* packed, double* loss_sum, double* conj_sum,
                       double* fy_sum, bint with_margins, double[::1] margins,
                       double[::1] margin_duals) noexcept nogil:
    """_block_pass (without pure l1's deferred terms) over the packed layout: the sums, the exact
    sum of c_i a_i x_i in packed[., 1:3] and, with_margins, the margins z_i, the margin duals
    u_i = -phi'(z_i) and the plain sum of c_i u_i x_i in packed[., 3]. Every number is the one
    _block_pass, rows.margins and rows.transpose_times give."""
    cdef Py_ssize_t i, start, end, last = PACKED * n_features
    cdef double z, c, coef, coef_error, bias_term, bias_error, u, value, dual_term
    for i in range(n_rows):
        c = sample_weight[i]
        if c == 0.0:
            if with_margins:        # (the margins of every row: the mix's duals need them)
                row_range(ptr, i, n_features, &start, &end)
                z = _packed_dot(x, ind, start, end, packed) + bias * packed[last]
                margins[i] = z
                margin_duals[i] = loss.dual_from_margin(y[i], z)
            continue
        row_range(ptr, i, n_features, &start, &end)
        z = _packed_dot(x, ind, start, end, packed) + bias * packed[last]
        value = loss.value(y[i], z)
        dual_term = loss.dual_value(y[i], duals[i])
        loss_sum[0] += c * value
        conj_sum[0] += c * dual_term
        fy_sum[0] += c * _fenchel_young(value, dual_term, duals[i], z)
        if duals[i] != 0.0:
            two_product(c, duals[i], &coef, &coef_error)
            _packed_axpy_exact(x, ind, start, end, coef, coef_error, packed)
            two_product(coef, v_bias, &bias_term, &bias_error)
            two_sum_add(&packed[last + 1], &packed[last + 2], bias_term)
            packed[last + 2] += bias_error + coef_error * v_bias
        if with_margins:
            margins[i] = z
            u = loss.dual_from_margin(y[i], z)
            margin_duals[i] = u
            coef = c * u
            if coef != 0.0:
                _packed_axpy(x, ind, start, end, coef, packed)
                packed[last + 3] += coef * v_bias


cdef void _pack(const double* w, Py_ssize_t m, double* packed) noexcept nogil:
    """w into the packed layout's first slot, the sum and its rounding zeroed."""
    cdef Py_ssize_t j
    for j in range(m):
        packed[PACKED * j] = w[j]
        packed[PACKED * j + 1] = 0.0
        packed[PACKED * j + 2] = 0.0


cdef double _finish(const double* w, const double* sums, const double* rounding,
                    Py_ssize_t stride, Py_ssize_t m, Py_ssize_t penalised, double factor,
                    double l2, double l1, double* v_out, double* sq_norm, double* l1_norm,
                    double* g_conj) noexcept nogil:
    """After the pass, in one sweep over the features (entry j of w, sums and rounding at
    j * stride: three vectors, or the packed layout): v = sums factor (as _scale), the
    penalty's sums of _penalty_terms and its share of the gap (returned, as _penalty_gap) over
    the first `penalised` entries, each sum in _penalty_terms' and _penalty_gap's order (the same
    bits), and v_out = v, or unless rounding is NULL (sums + rounding) factor (v_out may be
    sums itself). l2 > 0."""
    cdef Py_ssize_t j
    cdef double wj, vj, excess, t, d, kappa = l1 / l2, total = 0.0
    # (the sums in locals: through the pointers, which may alias v_out, every addition would
    # wait on a store)
    cdef double squares = sq_norm[0], absolutes = l1_norm[0], conjugate = g_conj[0]
    for j in range(m):
        wj = w[j * stride]
        vj = sums[j * stride] * factor
        if j < penalised:
            squares += wj * wj
            absolutes += fabs(wj)
            excess = fabs(vj) - kappa
            if excess > 0.0:
                conjugate += 0.5 * excess * excess
            t = vj if vj < kappa else kappa
            t = t if t > -kappa else -kappa
            d = wj - (vj - t)
            if wj > 0.0:
                total += 0.5 * d * d + wj * (kappa - t)
            else:
                total += 0.5 * d * d - wj * (kappa + t)
        v_out[j] = vj if rounding == NULL else (sums[j * stride] + rounding[j * stride]) * factor
    sq_norm[0], l1_norm[0], g_conj[0] = squares, absolutes, conjugate
    return l2 * total


def block_sums(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
               Py_ssize_t n_rows, Py_ssize_t n_features, double bias, const double[::1] y,
               const double[::1] sample_weight, const double[::1] w, const double[::1] duals,
               double l2, Py_ssize_t n_total, Loss loss, double[::1] v, bint free_bias=False,
               double[::1] margins=None, double[::1] margin_duals=None,
               double[::1] margin_v=None, double[::1] workspace=None):
    """The certificate's pass over one block of the rows of a problem of n_total samples:
    returns (sum_i c_i phi(y_i, x_i . w), sum_i c_i (-phi*(-a_i)), sum_i c_i [phi(y_i, x_i . w)
    + phi*(-a_i) + a_i x_i . w]) over the block and adds its share of v(duals) to v (length
    n_features + 1), summed without losing cancelled digits (as _block_pass with v_error):
    fastdual.dask's next v is the blocks' shares. combine() turns the totals into (P, D, gap).
    l2 > 0.

    One pass over the rows, reading each stored entry once: with margin_v (length
    n_features + 1; margins and margin_duals of length n_rows), the same pass also writes the
    margins z_i = x_i . w, the margin duals u_i = -phi'(y_i, z_i) and adds
    sum_i c_i u_i x_i / (l2 n_total) to margin_v (what fastdual.dask's margin mix needs; the
    numbers rows.margins, Loss.duals_from_margins and rows.transpose_times give). workspace:
    4 (n_features + 1) + 8 doubles the pass may use (allocated when None; a caller passing the
    same one every round saves the allocation)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double loss_sum = 0.0, conj_sum = 0.0, fy_sum = 0.0
    cdef Py_ssize_t j, m = n_features + 1
    cdef bint with_margins = margin_v is not None
    cdef double factor = 1.0 / (l2 * n_total), l2n = l2 * n_total, share
    if w.shape[0] != m or v.shape[0] != m:
        raise ValueError(f"w and v must have n_features + 1 = {m} entries, got {w.shape[0]} "
                         f"and {v.shape[0]}")
    if duals.shape[0] < n_rows or y.shape[0] < n_rows or sample_weight.shape[0] < n_rows:
        raise ValueError(f"y, sample_weight and duals need n_rows = {n_rows} entries")
    if with_margins and (margin_v.shape[0] != m or margins is None or margin_duals is None
                         or margins.shape[0] < n_rows or margin_duals.shape[0] < n_rows):
        raise ValueError(f"margin_v needs {m} entries and margins, margin_duals {n_rows} each")
    if workspace is None:
        workspace = np.empty(PACKED * m + 8)
    elif workspace.shape[0] < PACKED * m + 8:
        raise ValueError(f"workspace must have 4 (n_features + 1) + 8 = {PACKED * m + 8} "
                         f"entries, got {workspace.shape[0]}")
    # Each feature's four numbers in one 32-byte slot, the slots on 64-byte boundaries (one
    # cache line each): the first 64-byte boundary in the workspace (8-byte aligned arrays).
    cdef double* packed = cache_aligned(&workspace[0])
    cdef double[::1] margins_out = margins if with_margins else np.zeros(1)
    cdef double[::1] margin_duals_out = margin_duals if with_margins else margins_out
    with nogil:
        _pack(&w[0], m, packed)
        if with_margins:
            for j in range(m):
                packed[PACKED * j + 3] = 0.0
        _packed_pass(x, ind, ptr, n_rows, n_features, bias, y, sample_weight, duals, loss,
                     0.0 if free_bias else bias, packed, &loss_sum, &conj_sum, &fy_sum,
                     with_margins, margins_out, margin_duals_out)
        for j in range(m):       # (_scale's arithmetic: (sum + rounding) / (l2 n))
            share = (packed[PACKED * j + 1] + packed[PACKED * j + 2]) * factor
            v[j] += share
        if with_margins:         # (transpose_times' sum, divided as the mix divided it)
            for j in range(m):
                margin_v[j] += packed[PACKED * j + 3] / l2n
    return loss_sum, conj_sum, fy_sum


def combine(const double[::1] w, const double[::1] v, double loss_sum, double conj_sum,
            double fy_sum, Py_ssize_t n_total, double l2, double l1, bint free_bias=False):
    """(P, D, gap) from the blocks' summed sums and v: P = loss_sum / n + l2/2 ||w||^2 +
    l1 ||w||_1, D = conj_sum / n - l2 g*(v), gap = fy_sum / n + l2 [g(w) + g*(v) - w . v]
    (the free intercept's entry out of every penalty term). l2 > 0."""
    cdef double sq_norm = 0.0, l1_norm = 0.0, g_conj = 0.0, penalty_gap
    cdef Py_ssize_t m = w.shape[0] - 1 if free_bias else w.shape[0]
    with nogil:
        _penalty_terms(&w[0], &v[0], m, l2, l1, &sq_norm, &l1_norm, &g_conj)
        penalty_gap = _penalty_gap(&w[0], &v[0], m, l2, l1, 1.0)
    return (loss_sum / n_total + 0.5 * l2 * sq_norm + l1 * l1_norm,
            conj_sum / n_total - l2 * g_conj, fy_sum / n_total + penalty_gap)


def primal_dual(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                const double[::1] y, const double[::1] sample_weight,
                const double[::1] w, const double[::1] duals,
                double l2, double l1, Loss loss, double[::1] v_out, bint free_bias=False,
                bint exact_v=False):
    """Return (primal, dual, gap) for w and the duals, and write v(duals) into v_out (length
    n_features + 1): the whole data as one block (block_sums and combine, for l2 > 0). The gap
    is the Fenchel-Young sum (module docstring), P - D without its cancellation. exact_v:
    v_out receives v summed without losing the digits its terms cancel (_block_pass with
    v_error), for a solver that takes it over as its own v (the pass takes 25-95 % longer over
    dense rows; over sparse rows w, v and v's rounding are packed side by side, block_sums' layout,
    and it takes 10-80 % longer, the least on the widest rows);
    P, D and the gap are the same bits either way, computed with v as row_axpy sums it.

    free_bias: the intercept feature's weight w[n_features] is not penalised (the problem with a
    free intercept). Its dual carries the constraint sum_i c_i duals_i = 0, which the caller
    must have made hold (fastdual._problem projects the duals onto it); the intercept then
    drops out of v, of g* and of the gap's penalty term (its share of sum_i c_i a_i z_i is
    w_b bias sum_i c_i a_i = 0), and v_out[n_features] is 0.

    With l2 = 0, v_out receives (1/n) X^T (c duals) and the dual is the better of the scaled
    alpha and the scaled margin duals (module docstring), the one of the smaller gap. Samples of
    weight 0 are skipped.
    """
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef bint pure_l1 = l2 == 0.0
    cdef double inv_l2n = 1.0 / ((l2 if not pure_l1 else 1.0) * n_samples)
    # With a free intercept the margin duals break sum_i c_i duals_i = 0: the caller projects
    # and passes them itself (fastdual._problem), so the kernel does not build its own.
    cdef bint margin_alternative = pure_l1 and not free_bias
    cdef double[::1] margin_duals, v_margin, v_error
    cdef double[::1] margins = np.zeros(n_samples if pure_l1 else 1)
    cdef double[::1] values = np.zeros(n_samples if pure_l1 else 1)
    cdef double loss_sum = 0.0, conj_sum = 0.0, fy_sum = 0.0
    cdef double margin_conj_sum = 0.0, margin_fy_sum = 0.0
    cdef double sq_norm = 0.0, l1_norm = 0.0, g_conj = 0.0, shrink = 1.0
    cdef double penalty_gap, margin_penalty_gap, gap
    cdef double v_bias = 0.0 if free_bias else bias     # the intercept feature's share in v
    cdef Py_ssize_t penalised = n_features if free_bias else n_features + 1
    cdef double[::1] workspace
    cdef double* packed
    if w.shape[0] != n_features + 1 or v_out.shape[0] != n_features + 1:
        raise ValueError(f"w and v_out must have n_features + 1 = {n_features + 1} entries, "
                         f"got {w.shape[0]} and {v_out.shape[0]}")
    if duals.shape[0] < n_samples or y.shape[0] < n_samples or sample_weight.shape[0] < n_samples:
        raise ValueError(f"y, sample_weight and duals need n_samples = {n_samples} entries")
    if (exact_v and _use_packed and ptr != NULL and not pure_l1
            and ptr[n_samples] - ptr[0] >= n_features):
        # Sparse rows, v summed exactly: w, v and v's rounding side by side (block_sums'
        # layout), one cache line per stored entry instead of three (the pass costs 1.3-2x less
        # on wide rows); the same numbers as the pass below, but that each product's rounding
        # is taken by a fused multiply-add where the processor has one (block_sums' choice)
        # instead of Dekker's split: the same error, except where the product underflows
        # (below 2^-969) or the split overflows (a coefficient beyond 2^996: NaN by the split),
        # which only v_out's last bits can show. (Summed plainly, the three vectors' pass is as
        # fast and needs no workspace.) Only where the rows store at least one entry per
        # feature: on rows far wider than their entries the pass is the sweeps over the
        # features, which packing does not shorten, and its workspace of four d-vectors would
        # double the peak of very wide data (tests/test_memory.py).
        workspace = np.empty(PACKED * (n_features + 1) + 8)
        packed = cache_aligned(&workspace[0])
        with nogil:
            _pack(&w[0], n_features + 1, packed)
            _packed_pass(x, ind, ptr, n_samples, n_features, bias, y, sample_weight, duals,
                         loss, v_bias, packed, &loss_sum, &conj_sum, &fy_sum, False,
                         margins, margins)
            penalty_gap = _finish(packed, packed + 1, packed + 2, PACKED, n_features + 1,
                                  penalised, inv_l2n, l2, l1, &v_out[0], &sq_norm, &l1_norm,
                                  &g_conj)
        return (loss_sum / n_samples + 0.5 * l2 * sq_norm + l1 * l1_norm,
                conj_sum / n_samples - l2 * g_conj, fy_sum / n_samples + penalty_gap)
    v_error = np.zeros(n_features + 1 if exact_v else 1)
    margin_duals = np.zeros(n_samples if margin_alternative else 1)
    v_margin = np.zeros(n_features + 1 if margin_alternative else 1)
    if not pure_l1:
        with nogil:
            v_out[:] = 0.0
            _block_pass(x, ind, ptr, n_samples, n_features, bias, y, sample_weight, &w[0],
                        duals, loss, v_bias, &v_out[0], &v_error[0] if exact_v else NULL,
                        &loss_sum, &conj_sum, &fy_sum, False, margins, values, False,
                        margin_duals, &v_margin[0])
            penalty_gap = _finish(&w[0], &v_out[0], &v_error[0] if exact_v else NULL, 1,
                                  n_features + 1, penalised, inv_l2n, l2, l1, &v_out[0],
                                  &sq_norm, &l1_norm, &g_conj)
        return (loss_sum / n_samples + 0.5 * l2 * sq_norm + l1 * l1_norm,
                conj_sum / n_samples - l2 * g_conj, fy_sum / n_samples + penalty_gap)
    # Pure l1: the duals' scale waits for v (the pass keeps the margins and loss values).
    with nogil:
        v_out[:] = 0.0
        _block_pass(x, ind, ptr, n_samples, n_features, bias, y, sample_weight, &w[0], duals,
                    loss, v_bias, &v_out[0], &v_error[0] if exact_v else NULL, &loss_sum,
                    &conj_sum, &fy_sum, True, margins, values, margin_alternative,
                    margin_duals, &v_margin[0])
        _scale(&v_out[0], &v_error[0] if exact_v else NULL, n_features + 1, inv_l2n)
        if margin_alternative:
            _scale(&v_margin[0], NULL, n_features + 1, inv_l2n)
        _penalty_terms(&w[0], &v_out[0], penalised, l2, l1, &sq_norm, &l1_norm, &g_conj)
        conj_sum = fy_sum = 0.0
        shrink = _feasible_scale(&v_out[0], penalised, l1)
        _scaled_dual_sums(shrink, loss, y, sample_weight, duals, margins, values,
                          n_samples, &conj_sum, &fy_sum)
        penalty_gap = _penalty_gap(&w[0], &v_out[0], penalised, l2, l1, shrink)
        gap = fy_sum / n_samples + penalty_gap
        if margin_alternative:
            shrink = _feasible_scale(&v_margin[0], penalised, l1)
            _scaled_dual_sums(shrink, loss, y, sample_weight, margin_duals, margins, values,
                              n_samples, &margin_conj_sum, &margin_fy_sum)
            margin_penalty_gap = _penalty_gap(&w[0], &v_margin[0], penalised, l2, l1, shrink)
            if margin_fy_sum / n_samples + margin_penalty_gap < gap:
                gap = margin_fy_sum / n_samples + margin_penalty_gap
                conj_sum = margin_conj_sum
        if exact_v:
            v_out[:] = v_error
    primal = loss_sum / n_samples + 0.5 * l2 * sq_norm + l1 * l1_norm
    dual = conj_sum / n_samples - l2 * g_conj
    return primal, dual, gap


# The k-class certificate reads W's row of every stored entry and writes V's, (n_features + 1) x k
# doubles each: beyond the cache on wide data with many classes (sector: 55,198 x 105, 46 MB
# each). The pass computes the margins of a chunk of rows (at most MARGIN_CHUNK_BYTES of them),
# then their losses, then their share of V: the reads of W and the writes of V do not alternate
# row by row (sector's certificate: 0.28 s against 0.42 s interleaved). Every margin and every
# entry of V is summed in the same order as by one interleaved pass (the same bits).
MARGIN_CHUNK_BYTES = 8 << 20


def primal_dual_vector(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                       Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                       const Py_ssize_t[::1] labels, const double[::1] sample_weight,
                       const double[:, ::1] w, const double[:, ::1] duals, double l2, double l1,
                       VectorLoss loss, double[:, ::1] v_out):
    """(primal, dual, gap) of a k-class problem with vector duals (a VectorLoss of
    _core/multiclass.pxd: Crammer-Singer, multinomial): w and v_out are (n_features + 1, k) (the
    intercept feature's row last, penalised), duals (n_samples, k); the same P, D and
    Fenchel-Young gap as primal_dual with x_i . w the k margins z_i = W^T x_i, a_i z_i the
    inner product a_i . z_i, phi and phi* the k-class losses and v = 1/(l2 n) sum_i c_i x_i
    a_i^T. l2 > 0. Rows in chunks (MARGIN_CHUNK_BYTES above)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t k = w.shape[1], i, j, m, kk, start, end, t, n_moved
    cdef Py_ssize_t chunk = max(1, min(n_samples, MARGIN_CHUNK_BYTES // (8 * k)))
    cdef Py_ssize_t first, last
    # The chunk's margins, row by row.
    cdef double[:, ::1] margins = np.empty((chunk, k))
    # The classes of a row's nonzero duals: Crammer-Singer's are a few of the k (the
    # label's and its competitors'), and V's update skips the others (adding their zero terms
    # would not change a bit of V).
    cdef Py_ssize_t[::1] moved = np.empty(k, dtype=np.intp)
    cdef double* z
    cdef const double* wrow
    cdef const double* ai
    cdef double* vrow
    cdef double c, scale, xv, value, dual_term, inner
    cdef double loss_sum = 0.0, conj_sum = 0.0, fy_sum = 0.0
    cdef double sq_norm = 0.0, l1_norm = 0.0, g_conj = 0.0, penalty_gap
    cdef double inv_l2n = 1.0 / (l2 * n_samples)
    with nogil:
        v_out[:, :] = 0.0
        first = 0
        while first < n_samples:
            last = min(n_samples, first + chunk)
            # The margins.
            for i in range(first, last):
                if sample_weight[i] == 0.0:
                    continue
                z = &margins[i - first, 0]
                wrow = &w[n_features, 0]
                for m in range(k):
                    z[m] = bias * wrow[m]
                row_range(ptr, i, n_features, &start, &end)
                for kk in range(start, end):
                    j = ind[kk] if ind != NULL else kk - start
                    xv = x[kk]
                    wrow = &w[j, 0]
                    for m in range(k):
                        z[m] += xv * wrow[m]
            # The losses, their conjugates and the Fenchel-Young terms, row by row.
            for i in range(first, last):
                c = sample_weight[i]
                if c == 0.0:
                    continue
                z = &margins[i - first, 0]
                ai = &duals[i, 0]
                value = loss.value(z, k, labels[i])
                dual_term = loss.dual_value(ai, k, labels[i])
                loss_sum += c * value
                conj_sum += c * dual_term
                inner = 0.0
                for m in range(k):
                    inner += ai[m] * z[m]
                fy_sum += c * _fenchel_young(value, dual_term, 1.0, inner)
            # V.
            for i in range(first, last):
                c = sample_weight[i]
                if c == 0.0:
                    continue
                ai = &duals[i, 0]
                n_moved = 0
                for m in range(k):
                    if ai[m] != 0.0:
                        moved[n_moved] = m
                        n_moved += 1
                if n_moved == 0:
                    continue
                scale = c * inv_l2n
                row_range(ptr, i, n_features, &start, &end)
                if 2 * n_moved < k:
                    for kk in range(start, end):
                        j = ind[kk] if ind != NULL else kk - start
                        xv = scale * x[kk]
                        vrow = &v_out[j, 0]
                        for t in range(n_moved):
                            m = moved[t]
                            vrow[m] += xv * ai[m]
                else:
                    for kk in range(start, end):
                        j = ind[kk] if ind != NULL else kk - start
                        xv = scale * x[kk]
                        vrow = &v_out[j, 0]
                        for m in range(k):
                            vrow[m] += xv * ai[m]
                vrow = &v_out[n_features, 0]
                for t in range(n_moved):
                    m = moved[t]
                    vrow[m] += scale * bias * ai[m]
            first = last
        _penalty_terms(&w[0, 0], &v_out[0, 0], (n_features + 1) * k, l2, l1, &sq_norm,
                       &l1_norm, &g_conj)
        penalty_gap = _penalty_gap(&w[0, 0], &v_out[0, 0], (n_features + 1) * k, l2, l1, 1.0)
    primal = loss_sum / n_samples + 0.5 * l2 * sq_norm + l1 * l1_norm
    dual = conj_sum / n_samples - l2 * g_conj
    return primal, dual, fy_sum / n_samples + penalty_gap

