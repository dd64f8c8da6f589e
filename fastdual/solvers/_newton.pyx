# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The passes over the rows a primal Newton-CG iteration needs (fastdual/solvers/newton.py):
margins, the loss's value / derivative / curvature per sample, X^T times a per-sample vector,
the Hessian's diagonal (the preconditioner: transpose_times over squares), the Hessian itself
(few features) and the Hessian-vector product X^T (D X v), over CSR or dense rows without
copying X (the one row-access path of _core/rows.pxd; the intercept feature of value `bias`
last).
"""
import numpy as np
from cython cimport floating

from fastdual._core.losses cimport Loss
from fastdual._core.rows cimport row_axpy, row_dot, row_range, row_square_axpy


def margins(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
            Py_ssize_t n_samples, Py_ssize_t n_features, double bias, const double[::1] w,
            double[::1] out):
    """out_i = x_i . w + bias w[n_features] (w of length n_features + 1); with bias = 0, w may
    have length n_features (X w, as Matrix.matvec asks: float32 X is read as it is)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef const double* wp = &w[0] if w.shape[0] > 0 else NULL
    cdef double shift = bias * w[n_features] if bias != 0.0 else 0.0
    cdef Py_ssize_t i, start, end
    with nogil:
        for i in range(n_samples):
            row_range(ptr, i, n_features, &start, &end)
            out[i] = row_dot(x, ind, start, end, wp) + shift


def transpose_times(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                    Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                    const double[::1] coef, double[::1] out, bint squares=False):
    """out = sum_i coef_i x_i (the intercept feature's entry last); with squares, sum_i coef_i
    x_i^2 entrywise: the diagonal of X^T diag(coef) X."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t i, start, end
    with nogil:
        out[:] = 0.0
        for i in range(n_samples):
            if coef[i] != 0.0:
                row_range(ptr, i, n_features, &start, &end)
                if squares:
                    row_square_axpy(x, ind, start, end, coef[i], &out[0])
                    out[n_features] += coef[i] * bias * bias
                else:
                    row_axpy(x, ind, start, end, coef[i], &out[0])
                    out[n_features] += coef[i] * bias


def loss_terms(const double[::1] y, const double[::1] sample_weight, const double[::1] z,
               Loss loss, double[::1] slope, double[::1] curve):
    """sum_i c_i phi(y_i, z_i); slope_i = c_i phi'(z_i), curve_i = c_i phi''(z_i)."""
    cdef Py_ssize_t i, n = z.shape[0]
    cdef double total = 0.0, c, d1, d2
    with nogil:
        for i in range(n):
            c = sample_weight[i]
            if c == 0.0:
                slope[i] = 0.0
                curve[i] = 0.0
                continue
            total += c * loss.value_derivatives(y[i], z[i], &d1, &d2)
            slope[i] = c * d1
            curve[i] = c * d2
    return total


def loss_sum(const double[::1] y, const double[::1] sample_weight, const double[::1] z,
             const double[::1] dz, double step, Loss loss):
    """sum_i c_i phi(y_i, z_i + step dz_i): the line search's trial value, one pass over n."""
    cdef Py_ssize_t i, n = z.shape[0]
    cdef double total = 0.0
    with nogil:
        for i in range(n):
            if sample_weight[i] != 0.0:
                total += sample_weight[i] * loss.value(y[i], z[i] + step * dz[i])
    return total


def hessian_matrix(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                   Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                   const double[::1] curve, double[:, ::1] out):
    """The upper triangle of X^T diag(curve) X ((n_features + 1)^2, intercept last): for each
    row, curve_i times the products of its stored entries, O(sum_i nnz_i^2 / 2)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t i, start, end, k, m, a, b, last = n_features, stride = n_features + 1
    cdef double c, xk
    cdef double* H = &out[0, 0]
    with nogil:
        out[:, :] = 0.0
        for i in range(n_samples):
            c = curve[i]
            if c == 0.0:
                continue
            row_range(ptr, i, n_features, &start, &end)
            for k in range(start, end):
                xk = c * x[k]
                a = ind[k] if ind != NULL else k - start
                for m in range(k, end):
                    b = ind[m] if ind != NULL else m - start
                    if a <= b:
                        H[a * stride + b] += xk * x[m]
                    else:
                        H[b * stride + a] += xk * x[m]
                H[a * stride + last] += xk * bias
            H[last * stride + last] += c * bias * bias


def hessian_vector(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                   Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                   const double[::1] curve, const double[::1] v, double[::1] out):
    """out = X^T diag(curve) X v, in one pass over the rows (each row's x_i . v, then its axpy)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t i, start, end
    cdef double t
    with nogil:
        out[:] = 0.0
        for i in range(n_samples):
            if curve[i] == 0.0:
                continue
            row_range(ptr, i, n_features, &start, &end)
            t = curve[i] * (row_dot(x, ind, start, end, &v[0]) + bias * v[n_features])
            row_axpy(x, ind, start, end, t, &out[0])
            out[n_features] += t * bias
