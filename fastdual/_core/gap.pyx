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
"""
import numpy as np
from cython cimport floating
from libc.math cimport fabs

from fastdual._core.losses cimport Loss
from fastdual._core.multiclass cimport dual_value, loss_value, margin_duals
from fastdual._core.rows cimport row_range, row_dot, row_axpy


cdef double _feasible_dual_sum(const double* v, Py_ssize_t m, double l1, Loss loss,
                               const double[::1] y, const double[::1] sample_weight,
                               const double[::1] duals, Py_ssize_t n_samples) noexcept nogil:
    """sum_i c_i (-phi*(-s a_i)) with s = min(1, l1 / ||v||_inf), v = (1/n) X^T (c a)."""
    cdef double max_abs = 0.0, shrink = 1.0, total = 0.0
    cdef Py_ssize_t j, i
    for j in range(m):
        if fabs(v[j]) > max_abs:
            max_abs = fabs(v[j])
    if max_abs > l1:
        shrink = l1 / max_abs
    for i in range(n_samples):
        if sample_weight[i] != 0.0:
            total += sample_weight[i] * loss.dual_value(y[i], shrink * duals[i])
    return total


cdef void _penalty_terms(const double* w, const double* v, Py_ssize_t m, double l2, double l1,
                         double* sq_norm, double* l1_norm, double* g_conj) noexcept nogil:
    """||w||^2, ||w||_1 and g*(v) = sum_j 1/2 max(0, |v_j| - l1/l2)^2 over m entries (g* only
    when l2 > 0): the regulariser's share of P and D, for one coefficient vector or k."""
    cdef Py_ssize_t j
    cdef double kappa, excess
    for j in range(m):
        sq_norm[0] += w[j] * w[j]
        l1_norm[0] += fabs(w[j])
    if l2 > 0.0:
        kappa = l1 / l2
        for j in range(m):
            excess = fabs(v[j]) - kappa
            if excess > 0.0:
                g_conj[0] += 0.5 * excess * excess


cdef void _block_pass(const floating* x, const int* ind, const int* ptr, Py_ssize_t n_rows,
                      Py_ssize_t n_features, double bias, const double[::1] y,
                      const double[::1] sample_weight, const double* w,
                      const double[::1] duals, double inv_l2n, Loss loss, double v_bias,
                      double* v, double* loss_sum, double* conj_sum, bint margin_alternative,
                      double[::1] margin_duals, double* v_margin) noexcept nogil:
    """One pass over a block of rows: adds sum_i c_i phi(x_i . w) and sum_i c_i (-phi*(-a_i))
    to the sums and c_i a_i x_i / (l2 n) to v (the intercept feature's entry with v_bias), and,
    for pure l1, the same for the margin duals. The block form of the certificate: blocks of
    rows (Dask's, one machine's) are passed separately and their sums and v's added."""
    cdef Py_ssize_t i, start, end
    cdef double z, c, scale, u
    for i in range(n_rows):
        c = sample_weight[i]
        if c == 0.0:
            continue
        row_range(ptr, i, n_features, &start, &end)
        z = row_dot(x, ind, start, end, w) + bias * w[n_features]
        loss_sum[0] += c * loss.value(y[i], z)
        conj_sum[0] += c * loss.dual_value(y[i], duals[i])
        scale = c * duals[i] * inv_l2n
        if scale != 0.0:
            row_axpy(x, ind, start, end, scale, v)
            v[n_features] += scale * v_bias
        if margin_alternative:
            u = loss.dual_from_margin(y[i], z)
            margin_duals[i] = u
            scale = c * u * inv_l2n
            if scale != 0.0:
                row_axpy(x, ind, start, end, scale, v_margin)
                v_margin[n_features] += scale * v_bias


def block_sums(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
               Py_ssize_t n_rows, Py_ssize_t n_features, double bias, const double[::1] y,
               const double[::1] sample_weight, const double[::1] w, const double[::1] duals,
               double l2, Py_ssize_t n_total, Loss loss, double[::1] v, bint free_bias=False):
    """The certificate's pass over one block of the rows of a problem of n_total samples:
    returns (sum_i c_i phi(y_i, x_i . w), sum_i c_i (-phi*(-a_i))) over the block and adds its
    share of v(duals) to v (length n_features + 1). combine() turns the totals into (P, D).
    l2 > 0."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double loss_sum = 0.0, conj_sum = 0.0
    cdef double[::1] unused = np.zeros(1)
    with nogil:
        _block_pass(x, ind, ptr, n_rows, n_features, bias, y, sample_weight, &w[0], duals,
                    1.0 / (l2 * n_total), loss, 0.0 if free_bias else bias, &v[0], &loss_sum,
                    &conj_sum, False, unused, NULL)
    return loss_sum, conj_sum


def combine(const double[::1] w, const double[::1] v, double loss_sum, double conj_sum,
            Py_ssize_t n_total, double l2, double l1, bint free_bias=False):
    """(P, D) from the blocks' summed sums and v: P = loss_sum / n + l2/2 ||w||^2 + l1 ||w||_1,
    D = conj_sum / n - l2 g*(v) (the free intercept's entry out of both penalties). l2 > 0."""
    cdef double sq_norm = 0.0, l1_norm = 0.0, g_conj = 0.0
    cdef Py_ssize_t m = w.shape[0] - 1 if free_bias else w.shape[0]
    with nogil:
        _penalty_terms(&w[0], &v[0], m, l2, l1, &sq_norm, &l1_norm, &g_conj)
    return (loss_sum / n_total + 0.5 * l2 * sq_norm + l1 * l1_norm,
            conj_sum / n_total - l2 * g_conj)


def primal_dual(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                const double[::1] y, const double[::1] sample_weight,
                const double[::1] w, const double[::1] duals,
                double l2, double l1, Loss loss, double[::1] v_out, bint free_bias=False):
    """Return (primal, dual) for w and the duals, and write v(duals) into v_out (length
    n_features + 1): the whole data as one block (block_sums and combine, for l2 > 0).

    free_bias: the intercept feature's weight w[n_features] is not penalised (the problem with a
    free intercept). Its dual carries the constraint sum_i c_i duals_i = 0, which the caller
    must have made hold (fastdual._problem projects the duals onto it); the intercept then
    drops out of v and of g*, and v_out[n_features] is 0.

    With l2 = 0, v_out receives (1/n) X^T (c duals) and the dual is the better of the scaled
    alpha and the scaled margin duals (module docstring). Samples of weight 0 are skipped.
    """
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef bint pure_l1 = l2 == 0.0
    cdef double inv_l2n = 1.0 / ((l2 if not pure_l1 else 1.0) * n_samples)
    # With a free intercept the margin duals break sum_i c_i duals_i = 0: the caller projects
    # and passes them itself (fastdual._problem), so the kernel does not build its own.
    cdef bint margin_alternative = pure_l1 and not free_bias
    cdef double[::1] margin_duals = np.zeros(n_samples if margin_alternative else 1)
    cdef double[::1] v_margin = np.zeros(n_features + 1 if margin_alternative else 1)
    cdef double loss_sum = 0.0, conj_sum = 0.0, margin_conj_sum = 0.0
    cdef double sq_norm = 0.0, l1_norm = 0.0, g_conj = 0.0
    cdef double v_bias = 0.0 if free_bias else bias     # the intercept feature's share in v
    cdef Py_ssize_t penalised = n_features if free_bias else n_features + 1
    with nogil:
        v_out[:] = 0.0
        _block_pass(x, ind, ptr, n_samples, n_features, bias, y, sample_weight, &w[0], duals,
                    inv_l2n, loss, v_bias, &v_out[0], &loss_sum, &conj_sum,
                    margin_alternative, margin_duals, &v_margin[0])
        _penalty_terms(&w[0], &v_out[0], penalised, l2, l1, &sq_norm, &l1_norm, &g_conj)
        if pure_l1:
            conj_sum = _feasible_dual_sum(&v_out[0], penalised, l1, loss, y,
                                          sample_weight, duals, n_samples)
            if margin_alternative:
                margin_conj_sum = _feasible_dual_sum(&v_margin[0], penalised, l1, loss, y,
                                                     sample_weight, margin_duals, n_samples)
                if margin_conj_sum > conj_sum:
                    conj_sum = margin_conj_sum
    primal = loss_sum / n_samples + 0.5 * l2 * sq_norm + l1 * l1_norm
    dual = conj_sum / n_samples - l2 * g_conj
    return primal, dual


def primal_dual_vector(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                       Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                       const Py_ssize_t[::1] labels, const double[::1] sample_weight,
                       const double[:, ::1] w, const double[:, ::1] duals, double l2, double l1,
                       int family, double gamma, double[:, ::1] v_out):
    """(primal, dual) of a k-class problem with vector duals (Crammer-Singer, smoothed by gamma,
    or multinomial, _core/multiclass.pxd): w and v_out are (n_features + 1, k) (the intercept feature's row
    last, penalised), duals (n_samples, k); the same P and D as primal_dual with x_i . w the
    k margins W^T x_i, phi and phi* the k-class losses and v = 1/(l2 n) sum_i c_i x_i a_i^T.
    l2 > 0."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t k = w.shape[1], i, j, m, kk, start, end
    cdef double[::1] z = np.empty(k)
    cdef double c, scale, xv
    cdef double loss_sum = 0.0, conj_sum = 0.0, sq_norm = 0.0, l1_norm = 0.0, g_conj = 0.0
    cdef double inv_l2n = 1.0 / (l2 * n_samples)
    with nogil:
        v_out[:, :] = 0.0
        for i in range(n_samples):
            c = sample_weight[i]
            if c == 0.0:
                continue
            row_range(ptr, i, n_features, &start, &end)
            for m in range(k):
                z[m] = bias * w[n_features, m]
            for kk in range(start, end):
                j = ind[kk] if ind != NULL else kk - start
                xv = x[kk]
                for m in range(k):
                    z[m] += xv * w[j, m]
            loss_sum += c * loss_value(family, &z[0], k, labels[i], gamma)
            conj_sum += c * dual_value(family, &duals[i, 0], k, labels[i], gamma)
            scale = c * inv_l2n
            for kk in range(start, end):
                j = ind[kk] if ind != NULL else kk - start
                xv = scale * x[kk]
                for m in range(k):
                    v_out[j, m] += xv * duals[i, m]
            for m in range(k):
                v_out[n_features, m] += scale * bias * duals[i, m]
        _penalty_terms(&w[0, 0], &v_out[0, 0], (n_features + 1) * k, l2, l1, &sq_norm,
                       &l1_norm, &g_conj)
    primal = loss_sum / n_samples + 0.5 * l2 * sq_norm + l1 * l1_norm
    dual = conj_sum / n_samples - l2 * g_conj
    return primal, dual


def margin_duals_vector(const double[:, ::1] margins, const Py_ssize_t[::1] labels, int family,
                        double gamma=0.0):
    """The feasible vector duals of margins (n, k): -(a subgradient of each phi_i)."""
    cdef Py_ssize_t n = margins.shape[0], k = margins.shape[1], i
    cdef double[:, ::1] out = np.empty((n, k))
    with nogil:
        for i in range(n):
            margin_duals(family, &margins[i, 0], k, labels[i], gamma, &out[i, 0])
    return np.asarray(out)


def vector_values(const double[:, ::1] values, const Py_ssize_t[::1] labels, int family,
                  double gamma=0.0, bint dual=False):
    """Per sample: phi_i(z_i) for margins (n, k), or with dual=True -phi_i*(-a_i) for vector
    duals (n, k) (-inf outside the domain): what the certificate sums, for the tests."""
    cdef Py_ssize_t n = values.shape[0], k = values.shape[1], i
    cdef double[::1] out = np.empty(n)
    for i in range(n):
        if dual:
            out[i] = dual_value(family, &values[i, 0], k, labels[i], gamma)
        else:
            out[i] = loss_value(family, &values[i, 0], k, labels[i], gamma)
    return np.asarray(out)
