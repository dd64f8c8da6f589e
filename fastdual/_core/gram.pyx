# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The Hessian matrix X^T diag(c) X for few features (Newton's direct step), by rows through
rows.pxd, scattered or by BLAS's rank-k update. It is the one row pass that needs scipy's BLAS,
in a module of its own: importing fastdual does not import scipy.linalg (about 0.05 s of every
process's start-up); the solvers that factor a matrix import it when they first do."""
from cython cimport floating
from libc.math cimport sqrt
from libc.string cimport memset
from scipy.linalg.cython_blas cimport dsyrk

from fastdual._core.rows cimport row_range


def hessian_matrix(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                   Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                   const double[::1] curve, double[:, ::1] out, double[:, ::1] block=None):
    """The upper triangle of X^T diag(curve) X ((n_features + 1)^2, intercept last; curve >= 0).

    Without `block`: for each row, curve_i times the products of its stored entries,
    O(sum_i nnz_i^2 / 2) scattered multiply-adds. With `block`, a (rows, n_features + 1) scratch
    array: the rows with curvature are gathered `rows` at a time into it as dense rows scaled by
    sqrt(curve_i), and each full block is added by BLAS's rank-k update (dsyrk), O(n d^2 / 2)
    multiply-adds at BLAS's speed: the faster way on dense or nearly dense rows (the caller
    chooses: newton.hessian_costs). Both give the same matrix up to rounding."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t i, start, end, k, m, a, b, last = n_features, stride = n_features + 1
    cdef double c, xk
    cdef double* H = &out[0, 0]
    cdef double* B
    cdef double* row
    cdef int dim = <int>stride, rows, filled = 0
    cdef double one = 1.0
    cdef char lower = b'L', plain = b'N'
    if block is not None:
        if block.shape[1] != stride or block.shape[0] < 1:
            raise ValueError(f"block must have {stride} columns and at least one row")
        B = &block[0, 0]
        rows = <int>block.shape[0]
        with nogil:
            out[:, :] = 0.0
            memset(B, 0, rows * stride * sizeof(double))
            for i in range(n_samples):
                c = curve[i]
                if c == 0.0:
                    continue
                c = sqrt(c)
                row = B + filled * stride
                row_range(ptr, i, n_features, &start, &end)
                for k in range(start, end):
                    row[ind[k] if ind != NULL else k - start] = c * x[k]
                row[last] = c * bias
                filled += 1
                if filled == rows:
                    # B is (filled, dim) in C order: (dim, filled) for Fortran, so B B^T is
                    # X^T diag(curve) X over the block; Fortran's lower triangle is the C
                    # order's upper.
                    dsyrk(&lower, &plain, &dim, &filled, &one, B, &dim, &one, H, &dim)
                    memset(B, 0, filled * stride * sizeof(double))
                    filled = 0
            if filled > 0:
                dsyrk(&lower, &plain, &dim, &filled, &one, B, &dim, &one, H, &dim)
        return
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
