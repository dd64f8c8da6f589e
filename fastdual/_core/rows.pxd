# One row-access path for every kernel: CSR rows and dense C-contiguous rows, float32 or float64
# values (fused `floating`), always accumulated in double.
#
# A matrix is passed to kernels as (data, indices, indptr, n_features):
#   CSR:   data/indices hold the stored entries, indptr the row starts (int32);
#   dense: data is the C-contiguous matrix raveled (a view, never a copy), indices and indptr are
#          empty and row i spans data[i * n_features : (i + 1) * n_features].
# The LIBLINEAR-style intercept is a virtual last feature of constant value `bias`: it is never
# materialised in X, the kernels add `bias * w[n_features]` to each dot product themselves.
from cython cimport floating

cdef extern from *:
    # The empty volatile asm gives the prefetch a side effect the compiler must keep: without it,
    # GCC 12 found prefetch_row free of side effects where it did not inline it early, and
    # removed the calls (every row prefetch of _sdca_intercept's kernels was missing).
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define FASTDUAL_PREFETCH(p) \
        do { __builtin_prefetch((const void*)(p), 0, 3); __asm__ __volatile__(""); } while (0)
    #else
    #define FASTDUAL_PREFETCH(p) ((void)0)
    #endif
    """
    void prefetch "FASTDUAL_PREFETCH"(const void* p) noexcept nogil


cdef enum:
    # How many steps ahead a kernel's visit prefetches (prefetch_ahead): the row pointers
    # PREFETCH_FAR steps ahead, the row contents PREFETCH_NEAR steps ahead. Measured on SDCA's
    # epochs of a9a, mushrooms and news20: 3 rows ahead is enough (6 was 8-12 % slower on rows
    # of 14-20 nonzeros, no better on longer ones); the ends of rows cost more than they saved.
    # The caller prefetches its own per-sample values of the row returned: they stayed in a
    # 2 MiB L2 and it cost there, but with 512 KiB of L2 a core, arrays of 8 bytes a sample
    # leave it from 16,000 samples on (docs/benchmarks.md C, "Per-sample values").
    PREFETCH_FAR = 16
    PREFETCH_NEAR = 3


cdef inline void row_range(const int* indptr, Py_ssize_t i, Py_ssize_t n_features,
                           Py_ssize_t* start, Py_ssize_t* end) noexcept nogil:
    if indptr != NULL:
        start[0] = indptr[i]
        end[0] = indptr[i + 1]
    else:
        start[0] = i * n_features
        end[0] = start[0] + n_features


cdef inline double row_dot(const floating* data, const int* indices, Py_ssize_t start,
                           Py_ssize_t end, const double* w) noexcept nogil:
    """x_i . w over the stored part of row i (the intercept feature excluded)."""
    cdef Py_ssize_t k, m
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef const floating* x
    if indices != NULL:
        # Two partial sums shorten the floating-point dependency chain (3-9 % per epoch).
        k = start
        while k + 2 <= end:
            s0 += data[k] * w[indices[k]]
            s1 += data[k + 1] * w[indices[k + 1]]
            k += 2
        if k < end:
            s0 += data[k] * w[indices[k]]
        return s0 + s1
    # Dense: four partial sums break the floating-point dependency chain.
    x = data + start
    m = end - start
    k = 0
    while k + 4 <= m:
        s0 += x[k] * w[k]
        s1 += x[k + 1] * w[k + 1]
        s2 += x[k + 2] * w[k + 2]
        s3 += x[k + 3] * w[k + 3]
        k += 4
    while k < m:
        s0 += x[k] * w[k]
        k += 1
    return (s0 + s1) + (s2 + s3)


cdef inline void row_axpy(const floating* data, const int* indices, Py_ssize_t start,
                          Py_ssize_t end, double scale, double* v) noexcept nogil:
    """v += scale * x_i over the stored part of row i."""
    cdef Py_ssize_t k
    cdef const floating* x
    if indices != NULL:
        for k in range(start, end):
            v[indices[k]] += scale * data[k]
    else:
        x = data + start
        for k in range(end - start):
            v[k] += scale * x[k]


# Error-free transformations (Knuth, Dekker; no fma needed), for sums that must not lose the
# digits their terms cancel: v(duals) taken over by a solver as its own v.

cdef inline void two_sum_add(double* total, double* error, double term) noexcept nogil:
    """total += term with its rounding added to error exactly (Knuth's TwoSum, branch-free):
    after any number of additions total + error is their sum up to O(n eps^2) sum |terms|."""
    cdef double s = total[0] + term
    cdef double t_part = s - total[0]
    error[0] += (total[0] - (s - t_part)) + (term - t_part)
    total[0] = s


cdef inline void split(double a, double factor, double* head, double* tail) noexcept nogil:
    """a = head + tail exactly, head with 53 - log2(factor - 1) significant bits (Veltkamp)."""
    cdef double c = factor * a
    head[0] = c - (c - a)
    tail[0] = a - head[0]


cdef inline void two_product(double a, double b, double* product, double* error) noexcept nogil:
    """product + error = a b exactly (Dekker's product from 27-bit halves)."""
    cdef double a_head, a_tail, b_head, b_tail
    product[0] = a * b
    split(a, 134217729.0, &a_head, &a_tail)
    split(b, 134217729.0, &b_head, &b_tail)
    error[0] = (((a_head * b_head - product[0]) + a_head * b_tail) + a_tail * b_head) \
        + a_tail * b_tail


cdef inline void row_axpy_exact(const floating* data, const int* indices, Py_ssize_t start,
                                Py_ssize_t end, double coef, double coef_error, double* total,
                                double* error) noexcept nogil:
    """total + error += (coef + coef_error) x_i over the stored part of row i with no rounding
    lost: total receives the rounded products coef x_ij exactly as row_axpy adds them (the
    same bits), and error each product's rounding (two_product; with float32 values coef's
    29-bit head times a 24-bit value is exact, and so is its difference from the rounded
    product) and each addition's (two_sum_add). Over many rows total + error is then
    sum_i coef_i x_i up to O(n eps^2) sum_i |coef_i x_i|, however much its terms cancel."""
    cdef Py_ssize_t k, j
    cdef double head, rest, product, product_error
    if floating is float:
        split(coef, 16777217.0, &head, &rest)
        rest += coef_error
        for k in range(start, end):
            j = indices[k] if indices != NULL else k - start
            product = coef * data[k]
            two_sum_add(&total[j], &error[j], product)
            error[j] += (head * data[k] - product) + rest * data[k]
    else:
        for k in range(start, end):
            j = indices[k] if indices != NULL else k - start
            two_product(coef, data[k], &product, &product_error)
            two_sum_add(&total[j], &error[j], product)
            error[j] += product_error + coef_error * data[k]


cdef inline void row_square_axpy(const floating* data, const int* indices, Py_ssize_t start,
                                 Py_ssize_t end, double scale, double* v) noexcept nogil:
    """v += scale * x_i^2 (entrywise) over the stored part of row i: diag(X^T D X)."""
    cdef Py_ssize_t k
    cdef const floating* x
    if indices != NULL:
        for k in range(start, end):
            v[indices[k]] += scale * data[k] * data[k]
    else:
        x = data + start
        for k in range(end - start):
            v[k] += scale * x[k] * x[k]


cdef inline double soft_threshold(double x, double kappa) noexcept nogil:
    """argmin_w 1/2 (w - x)^2 + kappa |w|, the gradient of g* for the elastic net.

    As x - clip(x, -kappa, kappa): the same bits as the three-case form (x - kappa, x + kappa,
    or x - x = +0), without data-dependent branches (the compiler's min/max instructions), which
    mispredicted on every other coordinate of a row."""
    cdef double clipped = x if x < kappa else kappa
    clipped = clipped if clipped > -kappa else -kappa
    return x - clipped


cdef inline void row_soft_threshold(const int* indices, Py_ssize_t start, Py_ssize_t end,
                                    const double* v, double* w, double kappa) noexcept nogil:
    """w_j = soft_threshold(v_j, kappa) for the features j stored in row i."""
    cdef Py_ssize_t k, j
    if indices != NULL:
        for k in range(start, end):
            j = indices[k]
            w[j] = soft_threshold(v[j], kappa)
    else:
        for k in range(end - start):
            w[k] = soft_threshold(v[k], kappa)


cdef inline void prefetch_row(const floating* data, const int* indices, const int* indptr,
                              Py_ssize_t i, Py_ssize_t n_features) noexcept nogil:
    """Ask the cache for the start of row i (its values and, for CSR, its column indices).

    Kernels visit rows in random order, so on short rows the cost of an epoch is the latency of
    fetching each row, not the arithmetic; prefetching a few rows ahead hides most of it. indptr[i]
    must already be cached (its pointer prefetched a few steps earlier)."""
    cdef Py_ssize_t start, k
    if indptr != NULL:
        start = indptr[i]
        prefetch(data + start)
        prefetch(indices + start)
    else:
        # A dense row spans n_features values: ask for every cache line of it.
        start = i * n_features
        k = 0
        while k < n_features:
            prefetch(data + start + k)
            k += 64 // sizeof(floating)


cdef inline Py_ssize_t prefetch_ahead(const floating* data, const int* indices,
                                     const int* indptr, const Py_ssize_t* visit, Py_ssize_t t,
                                     Py_ssize_t n, Py_ssize_t n_features) noexcept nogil:
    """The prefetches of step t of a visit of the rows visit[0:n]: the row pointer of the row
    PREFETCH_FAR steps ahead, the start of the row PREFETCH_NEAR steps ahead (prefetch_row; its
    pointer was asked for by an earlier step). Returns that row, for the caller's prefetches of
    its own per-row values, or -1 within PREFETCH_NEAR steps of the end."""
    if t + PREFETCH_FAR < n and indptr != NULL:
        prefetch(indptr + visit[t + PREFETCH_FAR])
    if t + PREFETCH_NEAR < n:
        prefetch_row(data, indices, indptr, visit[t + PREFETCH_NEAR], n_features)
        return visit[t + PREFETCH_NEAR]
    return -1


cdef inline void drop_active(Py_ssize_t* order, Py_ssize_t* t, Py_ssize_t* n_active,
                             Py_ssize_t i) noexcept nogil:
    """Shrinking's exchange: row i, the one just visited (order[t - 1]), leaves the active rows
    order[0:n_active]; the last active row takes its place and is visited next (t steps
    back)."""
    n_active[0] -= 1
    t[0] -= 1
    order[t[0]] = order[n_active[0]]
    order[n_active[0]] = i
