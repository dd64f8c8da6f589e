# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Whole passes over a matrix in the row-access layout of rows.pxd, for the Python layer: the
structure check and squared row norms (once per training call), and the shared row passes every
layer above reads X through: margins X w, transpose products X^T c (and X^T diag(c) over
squares, the Hessian's diagonal), the Hessian-vector product X^T diag(c) X v and the Hessian
matrix by scattered products (its blocked form, which needs BLAS, is gram.pyx's). The intercept
feature of value `bias` is the last entry of w."""
import numpy as np
cimport numpy as cnp
from cython cimport floating
from libc.math cimport floor, isinf, log2
from libc.string cimport memcpy

from fastdual._core.rows cimport row_axpy, row_dot, row_range, row_square_axpy

cnp.import_array()


def csr_structure_error(const int[::1] indices, const int[::1] indptr, Py_ssize_t n_features):
    """Return None if the CSR structure is valid, else a message saying what is wrong.

    Valid means: indptr starts at 0 and never decreases, ends at most at len(indices), every column
    index is in [0, n_features) and no index repeats within a row. Unsorted rows are valid: no kernel
    depends on the order of a row's entries, only on each (index, value) pair appearing once.
    """
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t i, k, start, end, last
    cdef Py_ssize_t bad_row = -1
    cdef int reason = 0
    cdef int unsorted = 0, out_of_range
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    # Unsigned compare: a negative index wraps to >= 2**31, so one test covers both bounds.
    cdef unsigned int n_cols = <unsigned int>min(n_features, 2147483648)
    if n_rows < 0:
        return "indptr is empty"
    if indptr[0] != 0:
        return "indptr[0] must be 0"
    if indptr[n_rows] > indices.shape[0]:
        return "indptr[-1] exceeds the number of stored entries"
    last = indptr[n_rows]
    # Sequential pass: bounds, and whether every row is strictly increasing (scipy's canonical
    # form), in which case no index can repeat. Only then, for unsorted rows, the duplicate check
    # with a per-column marker, whose random writes cost more than this whole pass.
    with nogil:
        for i in range(n_rows):
            start = indptr[i]
            end = indptr[i + 1]
            if end < start or end > last:     # the second: it must decrease later
                reason = 1
                bad_row = i
                break
            # Branch-free (vectorisable) flags over the row.
            out_of_range = 0
            for k in range(start, end):
                out_of_range |= <unsigned int>ind[k] >= n_cols
            if out_of_range:
                reason = 2
                bad_row = i
                break
            for k in range(start + 1, end):
                unsorted |= ind[k] <= ind[k - 1]
    if reason == 0 and unsorted:
        reason, bad_row = _first_duplicate(indices, indptr, n_features)
    if reason == 1:
        return f"indptr decreases at row {bad_row}"
    if reason == 2:
        return f"row {bad_row} has a column index outside [0, {n_features})"
    if reason == 3:
        return (f"row {bad_row} stores the same column twice (duplicate CSR indices); "
                "call X.sum_duplicates() first")
    return None


def narrow_csr(const cnp.int64_t[::1] indices, const cnp.int64_t[::1] indptr,
               Py_ssize_t n_features, int[::1] indices_out, int[::1] indptr_out):
    """int64 CSR index arrays narrowed to int32 (indices_out, indptr_out, of the same lengths)
    in one pass that also makes csr_structure_error's checks: 0 when the structure is valid and
    every row strictly increasing; 1 when it is valid but some row is not increasing (the
    caller checks the narrowed arrays for duplicates); 2 when anything is wrong (an index or a
    pointer outside int32, indptr not starting at 0, decreasing or past the stored entries, an
    index outside [0, n_features)): the caller's checks then say what. Every stored index is
    narrowed, those past indptr[-1] too, as astype would."""
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t n_stored = indices.shape[0]
    cdef Py_ssize_t i, k, start, end, last
    cdef int unsorted = 0, bad = 0
    cdef cnp.uint64_t n_cols = <cnp.uint64_t>min(n_features, 2147483648)
    cdef const cnp.int64_t* ind = &indices[0] if n_stored > 0 else NULL
    cdef int* out = &indices_out[0] if n_stored > 0 else NULL
    if indices_out.shape[0] != n_stored or indptr_out.shape[0] != indptr.shape[0]:
        raise ValueError("indices_out and indptr_out must have the input arrays' lengths")
    if n_rows < 0 or indptr[0] != 0 or indptr[n_rows] > n_stored or indptr[n_rows] > 2147483647:
        return 2
    last = indptr[n_rows]
    with nogil:
        indptr_out[0] = 0
        for i in range(n_rows):
            start = indptr[i]
            end = indptr[i + 1]
            if end < start or end > last:
                bad = 1
                break
            indptr_out[i + 1] = <int>end
            # (unsigned: a negative index wraps past n_cols; branch-free flags, vectorisable)
            for k in range(start, end):
                bad |= <cnp.uint64_t>ind[k] >= n_cols
                out[k] = <int>ind[k]
            for k in range(start + 1, end):
                unsorted |= ind[k] <= ind[k - 1]
            if bad:
                break
        if not bad:
            for k in range(last, n_stored):
                bad |= <cnp.uint64_t>ind[k] > 2147483647
                out[k] = <int>ind[k]
    if bad:
        return 2
    return 1 if unsorted else 0


cdef (int, Py_ssize_t) _first_duplicate(const int[::1] indices, const int[::1] indptr,
                                        Py_ssize_t n_features):
    """(3, row) for the first row storing a column twice, else (0, -1); indices in bounds."""
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t i, k, j
    cdef Py_ssize_t[::1] last_seen = np.full(max(n_features, 1), -1, dtype=np.intp)
    with nogil:
        for i in range(n_rows):
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                if last_seen[j] == i:
                    return 3, i
                last_seen[j] = i
    return 0, -1


def row_squared_norms(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                      Py_ssize_t n_rows, Py_ssize_t n_features, double bias):
    """||x_i||^2 + bias^2 for every row, in double."""
    cdef double[::1] out = np.empty(n_rows, dtype=np.float64)
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t i, k, start, end
    cdef double s0, s1, s2, s3, bias_sq = bias * bias
    with nogil:
        for i in range(n_rows):
            row_range(ptr, i, n_features, &start, &end)
            # Four partial sums: the values are contiguous, the add chain is the only limit.
            s0 = s1 = s2 = s3 = 0.0
            k = start
            while k + 4 <= end:
                s0 += <double>x[k] * <double>x[k]
                s1 += <double>x[k + 1] * <double>x[k + 1]
                s2 += <double>x[k + 2] * <double>x[k + 2]
                s3 += <double>x[k + 3] * <double>x[k + 3]
                k += 4
            while k < end:
                s0 += <double>x[k] * <double>x[k]
                k += 1
            out[i] = bias_sq + ((s0 + s1) + (s2 + s3))
    return np.asarray(out)


def row_hashes(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
               Py_ssize_t n_rows, Py_ssize_t n_features):
    """A 64-bit hash of every row's stored entries (column, value) in their stored order: equal
    rows have equal hashes; rows with equal hashes are candidates only (`same_rows` decides).
    A value is hashed by its float64 bits with -0.0 folded onto 0.0, so rows equal as numbers
    hash alike in float32 and float64."""
    cdef cnp.uint64_t[::1] out = np.empty(n_rows, dtype=np.uint64)
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t i, k, start, end
    cdef cnp.uint64_t h, bits
    cdef double value
    with nogil:
        for i in range(n_rows):
            row_range(ptr, i, n_features, &start, &end)
            h = 0x9E3779B97F4A7C15ULL ^ <cnp.uint64_t>(end - start)
            for k in range(start, end):
                value = <double>x[k] + 0.0          # -0.0 + 0.0 is +0.0
                memcpy(&bits, &value, 8)
                h = _mix(h ^ bits ^ (<cnp.uint64_t>(ind[k] if ind != NULL else k - start)
                                     * 0x9E3779B97F4A7C15ULL))
            out[i] = h
    return np.asarray(out)


cdef inline cnp.uint64_t _mix(cnp.uint64_t z) noexcept nogil:
    """splitmix64's finaliser: every input bit moves about half the output bits."""
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


def same_rows(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
              Py_ssize_t n_features, const Py_ssize_t[::1] rows, const Py_ssize_t[::1] refs):
    """For each k, whether rows[k] and refs[k] store the same entries (columns and values, in
    stored order), as a bool array."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef cnp.uint8_t[::1] out = np.ones(rows.shape[0], dtype=np.uint8)
    cdef Py_ssize_t p, k, si, ei, sj, ej
    with nogil:
        for p in range(rows.shape[0]):
            row_range(ptr, rows[p], n_features, &si, &ei)
            row_range(ptr, refs[p], n_features, &sj, &ej)
            if ei - si != ej - sj:
                out[p] = 0
                continue
            for k in range(ei - si):
                if x[si + k] != x[sj + k] or (ind != NULL and ind[si + k] != ind[sj + k]):
                    out[p] = 0
                    break
    return np.asarray(out).view(bool)


def rows_gram(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
              Py_ssize_t n_features, double bias, const Py_ssize_t[::1] rows,
              double[::1] scratch, double[:, ::1] out):
    """out[a, b] = x_r . x_s + bias^2 for r = rows[a], s = rows[b]: the Gram matrix of the rows
    `rows` with the intercept feature, in double, without a copy of them. Each row is scattered
    into `scratch` (n_features entries, which must be zero on entry; left zero) and dotted with
    itself and the rows after it: m (m + 1) / 2 dot products of m rows, which for sparse rows
    cost their stored entries. The column indices are X's validated ones (< n_features)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double* w = &scratch[0] if scratch.shape[0] > 0 else NULL
    cdef Py_ssize_t m = rows.shape[0], a, b, k, start, end, other_start, other_end
    cdef double value, bias_sq = bias * bias
    cdef Py_ssize_t n_rows = (indptr.shape[0] - 1 if indptr.shape[0] > 0
                              else (data.shape[0] // n_features if n_features > 0 else 0))
    if scratch.shape[0] != n_features or out.shape[0] != m or out.shape[1] != m:
        raise ValueError("rows_gram: scratch must have n_features entries and out be m x m")
    for a in range(m):
        if rows[a] < 0 or rows[a] >= n_rows:
            raise ValueError(f"rows_gram: rows must be in [0, {n_rows}), got {rows[a]}")
    with nogil:
        for a in range(m):
            row_range(ptr, rows[a], n_features, &start, &end)
            row_axpy(x, ind, start, end, 1.0, w)
            for b in range(a, m):
                row_range(ptr, rows[b], n_features, &other_start, &other_end)
                value = row_dot(x, ind, other_start, other_end, w) + bias_sq
                out[a, b] = value
                out[b, a] = value
            if ind != NULL:
                for k in range(start, end):
                    w[ind[k]] = 0.0
            else:
                for k in range(n_features):
                    w[k] = 0.0
    return np.asarray(out)


def rows_alone(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
               Py_ssize_t n_rows, Py_ssize_t n_features):
    """For every row, the sum of its squared values in the columns where no other row has a
    nonzero value (a column's only entry: its term of X X^T is on the diagonal alone), in
    double; two passes over the rows, one byte per column."""
    cdef double[::1] out = np.zeros(n_rows, dtype=np.float64)
    cdef cnp.uint8_t[::1] seen = np.zeros(max(n_features, 1), dtype=np.uint8)
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t i, k, j, start, end
    cdef double total
    with nogil:
        for i in range(n_rows):
            row_range(ptr, i, n_features, &start, &end)
            for k in range(start, end):
                j = ind[k] if ind != NULL else k - start
                if x[k] != 0 and seen[j] < 2:
                    seen[j] += 1
        for i in range(n_rows):
            row_range(ptr, i, n_features, &start, &end)
            total = 0.0
            for k in range(start, end):
                j = ind[k] if ind != NULL else k - start
                if seen[j] == 1:
                    total += <double>x[k] * <double>x[k]
            out[i] = total
    return np.asarray(out)


def column_moment_groups(const floating[::1] data, const int[::1] indices,
                         const int[::1] indptr, Py_ssize_t n_rows, Py_ssize_t n_features,
                         const double[::1] scale, double count, int bins):
    """The columns' weighted second moments m_j = sum_i scale_i x_ij^2 / count (one pass over the
    rows, each term as row_square_axpy makes it), the positive ones grouped by `bins` per octave,
    group floor(log2(m_j) bins): (the groups' sums of m_j in column order, their numbers of
    columns), indexed from the group of 2^-1075 up (the same sums numpy's bincount gives), or
    None when a moment is infinite. The intercept feature is left out."""
    cdef double[::1] moments = np.zeros(max(n_features, 1), dtype=np.float64)
    cdef Py_ssize_t offset = 1075 * bins
    cdef double[::1] sums = np.zeros(2100 * bins, dtype=np.float64)
    cdef double[::1] sizes = np.zeros(2100 * bins, dtype=np.float64)
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t i, j, start, end, group
    cdef double m
    cdef bint infinite = False
    if bins < 1 or scale.shape[0] < n_rows:
        raise ValueError(f"column_moment_groups: bins must be at least 1 (got {bins}) and scale "
                         f"have n_rows = {n_rows} entries (got {scale.shape[0]})")
    with nogil:
        for i in range(n_rows):
            if scale[i] != 0.0:
                row_range(ptr, i, n_features, &start, &end)
                row_square_axpy(x, ind, start, end, scale[i], &moments[0])
        for j in range(n_features):
            m = moments[j] / count
            if m > 0.0:
                if isinf(m):
                    infinite = True
                    break
                group = <Py_ssize_t>floor(log2(m) * bins) + offset
                sums[group] += m
                sizes[group] += 1.0
    if infinite:
        return None
    return np.asarray(sums), np.asarray(sizes)


# -- the shared row passes: X w, X^T c, X^T diag(c) X v and its matrix (every solver, the
# certificate's helpers and Model.predict read X through these) --------------------------------

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


def gradient_and_diagonal(const floating[::1] data, const int[::1] indices,
                          const int[::1] indptr, Py_ssize_t n_samples, Py_ssize_t n_features,
                          double bias, const double[::1] slope, const double[::1] curve,
                          double[::1] gradient, double[::1] diagonal):
    """gradient = sum_i slope_i x_i and diagonal = sum_i curve_i x_i^2 (entrywise), the
    intercept feature's entries last, in one pass over the rows: Newton-CG's gradient and its
    preconditioner's diagonal (each the same bits as transpose_times gives it alone)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double* g = &gradient[0]
    cdef double* h = &diagonal[0]
    cdef Py_ssize_t i, k, j, start, end
    cdef double a, c, value
    with nogil:
        gradient[:] = 0.0
        diagonal[:] = 0.0
        for i in range(n_samples):
            a = slope[i]
            c = curve[i]
            row_range(ptr, i, n_features, &start, &end)
            if a != 0.0 and c != 0.0:
                if ind != NULL:
                    for k in range(start, end):
                        j = ind[k]
                        value = x[k]
                        g[j] += a * value
                        h[j] += c * value * value
                else:
                    for k in range(end - start):
                        value = x[start + k]
                        g[k] += a * value
                        h[k] += c * value * value
            elif a != 0.0:
                row_axpy(x, ind, start, end, a, g)
            elif c != 0.0:
                row_square_axpy(x, ind, start, end, c, h)
            g[n_features] += a * bias
            h[n_features] += c * bias * bias


def hessian_vector(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                   Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                   const double[::1] curve, const double[::1] v, double[::1] out,
                   double[::1] margins=None):
    """out = X^T diag(curve) X v, in one pass over the rows (each row's x_i . v, then its axpy);
    with margins (length n_samples), also margins = X v: every row's x_i . v, the rows of zero
    curvature included (which the product alone skips)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef double* m = NULL
    cdef Py_ssize_t i, start, end
    cdef double t
    if margins is not None:
        if margins.shape[0] != n_samples:
            raise ValueError(f"margins has {margins.shape[0]} entries for {n_samples} rows")
        if n_samples > 0:
            m = &margins[0]
    with nogil:
        out[:] = 0.0
        for i in range(n_samples):
            if curve[i] == 0.0 and m == NULL:
                continue
            row_range(ptr, i, n_features, &start, &end)
            t = row_dot(x, ind, start, end, &v[0]) + bias * v[n_features]
            if m != NULL:
                m[i] = t
                if curve[i] == 0.0:
                    continue
            t = curve[i] * t
            row_axpy(x, ind, start, end, t, &out[0])
            out[n_features] += t * bias


def hessian_matrix(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                   Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                   const double[::1] curve, double[:, ::1] out):
    """The upper triangle of X^T diag(curve) X ((n_features + 1)^2, intercept last; curve >= 0;
    the strict lower triangle is left zero): for each row, curve_i times the products of its
    stored entries, O(sum_i nnz_i^2 / 2) scattered multiply-adds and no BLAS (gram.pyx's
    blocked form is the faster on dense or nearly dense rows; newton.hessian_costs chooses)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t i, start, end, k, m, a, b, last = n_features, stride = n_features + 1
    cdef double c, xk
    cdef double* H = &out[0, 0]
    if out.shape[0] != stride or out.shape[1] != stride:
        raise ValueError(f"out must be {stride} x {stride}")
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


def csr_columns(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                Py_ssize_t n_samples, Py_ssize_t n_features):
    """X's columns (CSC: values, row indices ascending within each column, column starts; int32)
    from its valid CSR rows, by one counting pass and one scatter pass over the entries: the
    column layout of the column kernels (_validation.Matrix.columns), without scipy."""
    cdef Py_ssize_t nnz = indptr[n_samples] if n_samples > 0 else 0
    dtype = np.float32 if floating is float else np.float64
    values = np.empty(nnz, dtype=dtype)
    rows_of = np.empty(nnz, dtype=np.int32)
    starts = np.zeros(n_features + 1, dtype=np.int32)
    cdef floating[::1] out = values
    cdef int[::1] out_rows = rows_of
    cdef int[::1] ptr = starts
    cdef Py_ssize_t i, k, j, position
    cdef int[::1] fill = np.empty(n_features, dtype=np.int32)
    with nogil:
        for k in range(nnz):
            ptr[indices[k] + 1] += 1
        for j in range(n_features):
            ptr[j + 1] += ptr[j]
            fill[j] = ptr[j]
        for i in range(n_samples):
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                position = fill[j]
                out[position] = data[k]
                out_rows[position] = <int>i
                fill[j] = <int>(position + 1)
    return values, rows_of, starts
