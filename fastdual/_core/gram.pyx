# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The Hessian matrix X^T diag(c) X for few features (Newton's direct step) by BLAS's rank-k
update, through rows.pxd. It is the one row pass that needs scipy's BLAS, in a module of its
own: importing fastdual does not import scipy.linalg (about 0.05 s of a process's start-up),
and a Newton run imports it only when it forms a Hessian this way (its scattered form is
rows.hessian_matrix)."""
from libc.math cimport sqrt
from libc.string cimport memset
from scipy.linalg.cython_blas cimport dsyrk

from cython cimport floating

from fastdual._core.rows cimport row_range


def blocked_hessian_matrix(const floating[::1] data, const int[::1] indices,
                           const int[::1] indptr, Py_ssize_t n_samples, Py_ssize_t n_features,
                           double bias, const double[::1] curve, double[:, ::1] out,
                           double[:, ::1] block):
    """The upper triangle of X^T diag(curve) X ((n_features + 1)^2, intercept last; curve >= 0),
    as rows.hessian_matrix gives it up to rounding, by blocks: `block` is a
    (rows, n_features + 1) scratch array; the rows with curvature are gathered `rows` at a time
    into it as dense rows scaled by sqrt(curve_i), and each full block is added by BLAS's rank-k
    update (dsyrk), O(n d^2 / 2) multiply-adds at BLAS's speed: the faster way on dense or
    nearly dense rows (the caller chooses: newton.hessian_costs)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t i, start, end, k, last = n_features, stride = n_features + 1
    cdef double c
    cdef double* H
    cdef double* B
    cdef double* row
    cdef int dim = <int>stride, rows, filled = 0
    cdef double one = 1.0
    cdef char lower = b'L', plain = b'N'
    if out.shape[0] != stride or out.shape[1] != stride:
        raise ValueError(f"out must be {stride} x {stride}")
    if block.shape[1] != stride or block.shape[0] < 1:
        raise ValueError(f"block must have {stride} columns and at least one row")
    H = &out[0, 0]
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
