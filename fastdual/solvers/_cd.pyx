# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Primal coordinate descent over the columns of X (fastdual/solvers/cd.py; docs/math.md, 4k).

X is read in the column layout of `Matrix.columns()`: CSC (data, row indices, column starts) or
a dense Fortran-ordered matrix raveled (indices and indptr empty, column j spanning
data[j n : (j + 1) n]), float32 or float64. That is rows.pxd's row layout with rows and columns
exchanged, so the row helpers (row_range, row_dot, row_axpy) read a column here. The intercept
is coordinate n_features, a virtual column of constant value `bias`.

State, all float64: w (n_features + 1, the intercept's weight last), the margins z = X w + bias
w_b and the weighted derivatives u_i = c_i phi'(y_i, z_i) / n, kept exact under every step, so
that the partial derivative of the data term in w_j is x_j . u (one pass over the column).
The step on coordinate j (docs/math.md, 4k): with L_j = sum_i c_i x_ij^2 / (gamma n) the
curvature bound of the data term along j (phi is 1/gamma-smooth),

    w_j <- soft_threshold(L_j w_j - x_j . u, l1) / (L_j + l2),

the minimiser of the quadratic upper bound plus the penalty (exact for the squared loss); the
free intercept (no penalty) takes w_b <- w_b - g_b / L_b.
"""
from cython cimport floating
from libc.math cimport fabs

from fastdual._core.losses cimport Loss, QUADRATIC
from fastdual._core.rows cimport row_axpy, row_dot, row_range, soft_threshold


cdef inline double _derivative(Loss loss, bint quadratic, double y, double z) noexcept nogil:
    """phi'(y, z), the squared loss's inlined (a virtual call per entry costs more than it)."""
    if quadratic:
        return z - y
    return loss.derivative(y, z)


cdef inline double _violation(double grad, double w, double l2, double l1,
                              double curv) noexcept nogil:
    """The coordinate's violation of optimality, 0 exactly at its optimum: the distance of 0 to
    grad + l2 w + l1 d|w| (the subdifferential of the coordinate's objective), except where
    the proximal step with curvature curv (> 0: the column's global bound L_j, never a model's
    curvature, which can be near 0) would take w_j to 0 or across it; there the step's length
    times curv + l2, which is smaller (docs/math.md 4k, "Violation"). Without
    the exception a weight left at 1e-15 by rounding, its gradient at +l1 sign(w), would
    count 2 l1, as if far from its optimum 0."""
    cdef double g = grad + l2 * w
    if w > 0.0:
        if curv <= 0.0 or curv * w - grad >= l1:
            return fabs(g + l1)
    elif w < 0.0:
        if curv <= 0.0 or curv * w - grad <= -l1:
            return fabs(g - l1)
    else:
        return g - l1 if g > l1 else (-g - l1 if -g > l1 else 0.0)
    return fabs(soft_threshold(curv * w - grad, l1) - (curv + l2) * w)


cdef void _move(const floating* x, const int* ind, Py_ssize_t start, Py_ssize_t end,
                double delta, const double* y, const double* cn, Loss loss, bint quadratic,
                double* z, double* u) noexcept nogil:
    """z += delta x_j over the column's entries, and u_i = c_i phi'(z_i) / n there."""
    cdef Py_ssize_t k, i
    if ind != NULL:
        for k in range(start, end):
            i = ind[k]
            z[i] += delta * x[k]
            u[i] = cn[i] * _derivative(loss, quadratic, y[i], z[i])
    else:
        for k in range(start, end):
            i = k - start
            z[i] += delta * x[k]
            u[i] = cn[i] * _derivative(loss, quadratic, y[i], z[i])


cdef void _move_intercept(Py_ssize_t n, double delta, const double* y, const double* cn,
                          Loss loss, bint quadratic, double* z, double* u) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        z[i] += delta
        u[i] = cn[i] * _derivative(loss, quadratic, y[i], z[i])


cdef inline double _sum(const double* u, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef double s0 = 0.0, s1 = 0.0
    i = 0
    while i + 2 <= n:
        s0 += u[i]
        s1 += u[i + 1]
        i += 2
    if i < n:
        s0 += u[i]
    return s0 + s1


cdef inline double _packed_dot(const floating* data, const int* indices, Py_ssize_t start,
                                Py_ssize_t end, const double* v) noexcept nogil:
    """row_dot of a sparse column against the entries v[4 i] of a packed state (the same
    partial sums, so the same bits as row_dot on the unpacked vector)."""
    cdef Py_ssize_t k = start
    cdef double s0 = 0.0, s1 = 0.0
    while k + 2 <= end:
        s0 += data[k] * v[4 * indices[k]]
        s1 += data[k + 1] * v[4 * indices[k + 1]]
        k += 2
    if k < end:
        s0 += data[k] * v[4 * indices[k]]
    return s0 + s1


cdef inline double _packed_sum(const double* v, Py_ssize_t n) noexcept nogil:
    """_sum over the entries v[4 i] of a packed state (the same partial sums)."""
    cdef Py_ssize_t i = 0
    cdef double s0 = 0.0, s1 = 0.0
    while i + 2 <= n:
        s0 += v[4 * i]
        s1 += v[4 * (i + 1)]
        i += 2
    if i < n:
        s0 += v[4 * i]
    return s0 + s1


def column_norms(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                 Py_ssize_t n_samples, Py_ssize_t n_features, const double[::1] weight,
                 double[::1] out):
    """out_j = sum_i weight_i x_ij^2 for every column j < n_features: one pass."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t j, k, start, end
    cdef double s, xv
    with nogil:
        for j in range(n_features):
            row_range(ptr, j, n_samples, &start, &end)
            s = 0.0
            if ind != NULL:
                for k in range(start, end):
                    xv = x[k]
                    s += weight[ind[k]] * xv * xv
            else:
                for k in range(start, end):
                    xv = x[k]
                    s += weight[k - start] * xv * xv
            out[j] = s


def derivatives(const double[::1] y, const double[::1] cn, Loss loss, const double[::1] z,
                double[::1] u):
    """u_i = cn_i phi'(y_i, z_i) for every sample (cn_i = c_i / n)."""
    cdef Py_ssize_t i, n = z.shape[0]
    cdef bint quadratic = loss.family == QUADRATIC
    with nogil:
        for i in range(n):
            u[i] = cn[i] * _derivative(loss, quadratic, y[i], z[i])


def scores(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
           Py_ssize_t n_samples, Py_ssize_t n_features, double bias, const double[::1] u,
           const double[::1] w, double l2, double l1, bint free_intercept,
           const int[::1] features, const double[::1] lipschitz, double[::1] out):
    """The full gradient's pass over the features not screened (`features`, < n_features):
    out_j = the coordinate's violation (_violation, with lipschitz[j] the column's global
    curvature bound: the distance of 0 to the subdifferential of the objective in w_j,
    x_j . u + l2 w_j + l1 d|w_j|, unless the proximal step reaches 0; the free intercept's
    |g_b| alone), for each of them and for the intercept's coordinate (index n_features, 0
    without one); the screened features' entries are left as they are (0). Returns the
    largest."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t k, j, start, end
    cdef double grad, largest = 0.0, score
    with nogil:
        for k in range(features.shape[0]):
            j = features[k]
            row_range(ptr, j, n_samples, &start, &end)
            grad = row_dot(x, ind, start, end, &u[0])
            score = _violation(grad, w[j], l2, l1, lipschitz[j])
            out[j] = score
            if score > largest:
                largest = score
        score = 0.0
        if bias != 0.0:
            grad = bias * _sum(&u[0], n_samples)
            score = (fabs(grad) if free_intercept
                     else _violation(grad, w[n_features], l2, l1, lipschitz[n_features]))
        out[n_features] = score
        if score > largest:
            largest = score
    return largest


def add_columns(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                const int[::1] coordinates, const double[::1] delta, double[::1] z):
    """z += sum_k delta_k x_{coordinates[k]} (the intercept's column for n_features): the
    margins of a point that differs on a set of coordinates only."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t k, i, j, start, end
    with nogil:
        for k in range(coordinates.shape[0]):
            j = coordinates[k]
            if delta[k] == 0.0:
                continue
            if j == n_features:
                for i in range(n_samples):
                    z[i] += delta[k] * bias
            else:
                row_range(ptr, j, n_samples, &start, &end)
                row_axpy(x, ind, start, end, delta[k], &z[0])


def sweeps(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
           Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
           const double[::1] y, const double[::1] cn, Loss loss,
           double[::1] w, double[::1] z, double[::1] u, const double[::1] lipschitz,
           const int[::1] coordinates, double l2, double l1, bint free_intercept,
           Py_ssize_t max_sweeps, double budget, double tol, double[:, ::1] history,
           const double[::1] column_sums):
    """Cyclic coordinate descent over `coordinates` (the working set; n_features is the
    intercept's), at most max_sweeps sweeps, stopping after the first sweep whose largest
    coordinate violation (measured before each step, docs/math.md 4k) is at most tol, or once
    the sweeps have read `budget` entries of X (the intercept's column counts n).
    history (max_sweeps + 1 rows, or none): row 0 the working set's weights at the start, row s
    those after sweep s (Anderson extrapolation). Returns (sweeps, entries read, the last
    sweep's largest violation).
    The squared loss's free intercept in the working set, given column_sums (m_j = sum_i cn_i
    x_ij; empty otherwise), is eliminated (docs/math.md 4k): kept at its exact minimiser by a
    shift of every margin held as one number during the sweep, folded into w and the margins at
    its end; the features then step on the centred problem, whose curvature bounds the caller
    passes in lipschitz."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t m = coordinates.shape[0], k, j, start = 0, end = 0, sweep = 0
    cdef bint quadratic = loss.family == QUADRATIC
    cdef bint record = history.shape[0] > max_sweeps
    cdef double work = 0.0, largest = 0.0, grad, old, new, lip, lam2, lam1, score
    cdef double total = 0.0, excess = 0.0, shift = 0.0
    cdef bint eliminate = (free_intercept and quadratic and bias != 0.0 and m > 0
                           and column_sums.shape[0] > 0 and coordinates[m - 1] == n_features)
    with nogil:
        if eliminate:
            total = _sum(&cn[0], n_samples)
            eliminate = total > 0.0
        if record:
            for k in range(m):
                history[0, k] = w[coordinates[k]]
        while sweep < max_sweeps:
            largest = 0.0
            if eliminate:
                # the intercept's exact shift of the margins: sum_i cn_i (z_i + shift - y_i) = 0
                excess = _sum(&u[0], n_samples)
                shift = -excess / total
                work += n_samples
            for k in range(m):
                j = coordinates[k]
                lam2 = l2
                lam1 = l1
                if eliminate and j == n_features:
                    continue            # held in shift, folded at the sweep's end
                if j == n_features:
                    grad = bias * _sum(&u[0], n_samples)
                    work += n_samples
                    if free_intercept:
                        lam2 = 0.0
                        lam1 = 0.0
                else:
                    row_range(ptr, j, n_samples, &start, &end)
                    grad = row_dot(x, ind, start, end, &u[0])
                    if eliminate:
                        grad += shift * column_sums[j]
                    work += end - start
                old = w[j]
                lip = lipschitz[j]
                score = _violation(grad, old, lam2, lam1, lip)
                if score > largest:
                    largest = score
                if lip > 0.0:
                    new = soft_threshold(lip * old - grad, lam1) / (lip + lam2)
                elif lam1 > 0.0 or lam2 > 0.0:
                    new = 0.0       # an empty column: only the penalty depends on w_j
                else:
                    new = old
                if new != old:
                    w[j] = new
                    if j == n_features:
                        _move_intercept(n_samples, (new - old) * bias, &y[0], &cn[0], loss,
                                        quadratic, &z[0], &u[0])
                    else:
                        _move(x, ind, start, end, new - old, &y[0], &cn[0], loss, quadratic,
                              &z[0], &u[0])
                        if eliminate:
                            excess += (new - old) * column_sums[j]
                            shift = -excess / total
            if eliminate and shift != 0.0:
                w[n_features] += shift / bias
                _move_intercept(n_samples, shift, &y[0], &cn[0], loss, quadratic, &z[0], &u[0])
                work += n_samples
            sweep += 1
            if record:
                for k in range(m):
                    history[sweep, k] = w[coordinates[k]]
            if largest <= tol or work >= budget:
                break
    return sweep, work, largest


def packed_length(Py_ssize_t n_samples):
    """The doubles model_sweeps' packed_state needs: four a sample, on a 32-byte boundary."""
    return 4 * n_samples + 4


def model_sweeps(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
                 Py_ssize_t n_samples, Py_ssize_t n_features, double bias,
                 const double[::1] h, double[::1] w, double[::1] r, double[::1] q,
                 const int[::1] coordinates, const double[::1] floor,
                 const double[::1] bound, double l2, double l1,
                 bint free_intercept, Py_ssize_t max_sweeps, double tol, double model_tol,
                 double[::1] curvature, double[::1] hsums, double[::1] packed_state,
                 bint given=False, double[:, ::1] points=None, double[:, ::1] margins=None):
    """Cyclic coordinate descent over `coordinates` on the proximal Newton model of the data
    term at a point w0 (docs/math.md, 4k): minimise over those w_j

        sum_i (g_i r_i + h_i r_i^2 / 2) + the penalty of w,   r = X (w - w0) (+ the intercept's),

    g_i = c_i phi'(y_i, z_i) / n and h_i = c_i phi''(y_i, z_i) / n at w0's margins. State: w
    (the trial point, w0 outside the coordinates), r, and q_i = g_i + h_i r_i (the model's
    derivative in the margin; q = g and r = 0 at the start). curvature (out, one per coordinate):
    L_j = sum_i h_i x_ij^2, the model's exact curvature along j, at least floor[j] (indexed by
    the feature: a small fraction of the global bound, so that a model flat along j, e.g. every
    sample of a squared hinge outside its margin, still has a minimiser), computed first.
    No sweep when w0's own largest violation on the coordinates is at most tol; else sweeps
    until one's largest violation (of the model) is at most model_tol, or max_sweeps. Returns
    (sweeps, entries read, w0's largest violation, the last sweep's).
    A free intercept in the coordinates (the last) is eliminated as in `sweeps`, with the
    model's weights h: its exact shift -sum_i q_i / sum_i h_i held as one number, the features'
    curvatures those of the h-centred columns, L_j - (sum_i h_i x_ij)^2 / sum_i h_i (hsums, out:
    sum_i h_i x_ij per coordinate).
    packed_state: work space of at least packed_length(n_samples) doubles, where sparse columns
    keep h, r and q interleaved during the call (unused for dense columns).
    given: curvature and hsums are those of an earlier call at the same h (a continuation:
    the sweeps start at once, and the returned w0 violation is 0).
    points, margins (max_sweeps + 1 rows each, or None): row 0 the coordinates' w and r at the
    start, row s those after sweep s (the extrapolation's iterates)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t m = coordinates.shape[0], k, j, i, p, start = 0, end = 0, sweep = 0
    cdef double work = 0.0, largest = 0.0, first = 0.0, grad, old, new, lip, lam2, lam1, score
    cdef double delta, xv, hx, total = 0.0, excess = 0.0, shift = 0.0
    cdef Py_ssize_t m_first
    cdef bint record = points is not None and margins is not None \
        and points.shape[0] > max_sweeps and margins.shape[0] > max_sweeps
    cdef bint eliminate = free_intercept and bias != 0.0 and m > 0 and \
        coordinates[m - 1] == n_features
    # Sparse columns: h, r and q interleaved, four doubles a sample on 32-byte boundaries (the
    # sweeps read q and write r and q, reading h, of the same scattered samples: one cache line
    # instead of three). Dense columns read the three vectors in order, which the compiler
    # vectorises; they stay apart.
    cdef bint packed = ind != NULL
    cdef double* hrq = NULL
    if record and (points.shape[1] != m or margins.shape[1] != n_samples):
        raise ValueError(f"points and margins must have {m} and {n_samples} columns")
    if packed:
        if packed_state.shape[0] < packed_length(n_samples):
            raise ValueError(f"packed_state must hold {packed_length(n_samples)} doubles")
        hrq = <double*>((<size_t>&packed_state[0] + 31) & ~(<size_t>31))
    with nogil:
        if packed:
            for i in range(n_samples):
                hrq[4 * i] = h[i]
                hrq[4 * i + 1] = r[i]
                hrq[4 * i + 2] = q[i]
        # The curvatures, and w0's violation on the coordinates (q = g at the start: the
        # model's derivative is the data term's), in one read of the columns.
        if given:
            m_first = 0
            if eliminate:
                for i in range(n_samples):
                    total += h[i]
        else:
            m_first = m
        for k in range(m_first):
            j = coordinates[k]
            lip = 0.0
            lam2 = l2
            lam1 = l1
            hx = 0.0
            if j == n_features:
                for i in range(n_samples):
                    lip += h[i]
                total = lip
                lip *= bias * bias
                grad = bias * _sum(&q[0], n_samples)
                work += n_samples
                if free_intercept:
                    lam2 = 0.0
                    lam1 = 0.0
            else:
                row_range(ptr, j, n_samples, &start, &end)
                if ind != NULL:
                    for p in range(start, end):
                        xv = x[p]
                        hx += h[ind[p]] * xv
                        lip += h[ind[p]] * xv * xv
                else:
                    for p in range(start, end):
                        xv = x[p]
                        hx += h[p - start] * xv
                        lip += h[p - start] * xv * xv
                grad = row_dot(x, ind, start, end, &q[0])
                work += end - start
            hsums[k] = hx
            curvature[k] = lip
            score = _violation(grad, w[j], lam2, lam1, bound[j])
            if score > first:
                first = score
        eliminate = eliminate and total > 0.0
        for k in range(m_first):
            j = coordinates[k]
            lip = curvature[k]
            if eliminate and j != n_features:
                lip -= hsums[k] * hsums[k] / total      # the h-centred column's
            curvature[k] = lip if lip > floor[j] else floor[j]
        if first <= tol and not given:
            max_sweeps = 0      # w0 solves the coordinates to tol already
        if record:
            _record(points, margins, 0, w, r, coordinates)
        while sweep < max_sweeps:
            largest = 0.0
            if eliminate:
                excess = _packed_sum(hrq + 2, n_samples) if packed else _sum(&q[0], n_samples)
                shift = -excess / total
                work += n_samples
            for k in range(m):
                j = coordinates[k]
                lam2 = l2
                lam1 = l1
                if eliminate and j == n_features:
                    continue            # held in shift, folded at the sweep's end
                if j == n_features:
                    grad = bias * (_packed_sum(hrq + 2, n_samples) if packed
                                   else _sum(&q[0], n_samples))
                    work += n_samples
                    if free_intercept:
                        lam2 = 0.0
                        lam1 = 0.0
                else:
                    row_range(ptr, j, n_samples, &start, &end)
                    grad = (_packed_dot(x, ind, start, end, hrq + 2) if packed
                            else row_dot(x, ind, start, end, &q[0]))
                    if eliminate:
                        grad += shift * hsums[k]
                    work += end - start
                old = w[j]
                score = _violation(grad, old, lam2, lam1, bound[j])
                if score > largest:
                    largest = score
                lip = curvature[k]
                if lip > 0.0:
                    new = soft_threshold(lip * old - grad, lam1) / (lip + lam2)
                elif lam1 > 0.0 or lam2 > 0.0:
                    new = 0.0       # an empty column: only the penalty depends on w_j
                else:
                    new = old
                if new != old:
                    w[j] = new
                    delta = new - old
                    if j == n_features:
                        delta *= bias
                        _shift_margins(n_samples, delta, hrq, &h[0], &r[0], &q[0])
                    elif packed:
                        for p in range(start, end):
                            i = 4 * ind[p]
                            hrq[i + 1] += delta * x[p]
                            hrq[i + 2] += hrq[i] * delta * x[p]
                    else:
                        for p in range(start, end):
                            i = p - start
                            r[i] += delta * x[p]
                            q[i] += h[i] * delta * x[p]
                    if eliminate and j != n_features:
                        excess += delta * hsums[k]
                        shift = -excess / total
            if eliminate and shift != 0.0:
                w[n_features] += shift / bias
                _shift_margins(n_samples, shift, hrq, &h[0], &r[0], &q[0])
                work += n_samples
            sweep += 1
            if record:
                if packed:
                    for i in range(n_samples):
                        r[i] = hrq[4 * i + 1]
                _record(points, margins, sweep, w, r, coordinates)
            if largest <= model_tol:
                break
        if packed:
            for i in range(n_samples):
                r[i] = hrq[4 * i + 1]
                q[i] = hrq[4 * i + 2]
    return sweep, work, first, largest


cdef inline void _shift_margins(Py_ssize_t n, double delta, double* hrq, const double* h,
                                double* r, double* q) noexcept nogil:
    """Every sample's model margin moved by delta (an intercept's step): r += delta and
    q += h delta, in the packed state hrq when there is one (not NULL), else in r and q."""
    cdef Py_ssize_t i
    if hrq != NULL:
        for i in range(n):
            hrq[4 * i + 1] += delta
            hrq[4 * i + 2] += hrq[4 * i] * delta
    else:
        for i in range(n):
            r[i] += delta
            q[i] += h[i] * delta


cdef inline void _record(double[:, ::1] points, double[:, ::1] margins, Py_ssize_t row,
                         const double[::1] w, const double[::1] r,
                         const int[::1] coordinates) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(coordinates.shape[0]):
        points[row, k] = w[coordinates[k]]
    for k in range(r.shape[0]):
        margins[row, k] = r[k]



def screen(const double[::1] v, double factor, const double[::1] norms, double radius,
           double l1, const int[::1] features, unsigned char[::1] screened):
    """Gap-safe sphere test (docs/math.md, 4l) over the features not screened yet: feature j
    is marked screened when |factor v_j| + radius ||x_j||_c < l1, with factor v_j = x_j .
    (c theta) / n the correlation of the certified dual point theta, norms_j = ||x_j||_c =
    (sum_i c_i x_ij^2 / n)^(1/2) and radius a bound on ||theta - theta*||_c. Returns the number
    newly screened."""
    cdef Py_ssize_t k, j, count = 0
    cdef double correlation
    with nogil:
        for k in range(features.shape[0]):
            j = features[k]
            correlation = fabs(factor * v[j])
            if correlation + radius * norms[j] < l1:
                screened[j] = 1
                count += 1
    return count


def model_gram(const floating[::1] data, const int[::1] indices, const int[::1] indptr,
               Py_ssize_t n_samples, Py_ssize_t n_features, double bias, const double[::1] g,
               const double[::1] h, const int[::1] position, double[:, ::1] gram,
               double[::1] b, int[::1] scratch_index, double[::1] scratch_value):
    """The proximal Newton model of the data term (docs/math.md 4k, "The model on the Gram
    matrix") on a working set W, from X read by rows (rows.pxd's layout): gram = X_W^T diag(h)
    X_W and b = X_W^T g (g_i = c_i phi'(z_i) / n, h_i = c_i phi''(z_i) / n at w0's margins),
    position[j] the index of feature j (n_features: the intercept's column, of value bias) in
    W, -1 outside it. scratch_*: at least |W| entries. Rows with h_i = g_i = 0 (a squared
    hinge's samples past the margin) add nothing and are not read. Returns the multiply-adds
    made (the sum over the rows read of their entries in W squared, halved)."""
    cdef const int* ind = &indices[0] if indices.shape[0] > 0 else NULL
    cdef const int* ptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    cdef const floating* x = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t m = gram.shape[0], i, p, a, c, k, start = 0, end = 0, count
    cdef double hi, gi, va, work = 0.0
    cdef int bias_position = position[n_features]
    with nogil:
        gram[:, :] = 0.0
        b[:] = 0.0
        for i in range(n_samples):
            hi = h[i]
            gi = g[i]
            if hi == 0.0 and gi == 0.0:
                continue        # (a squared hinge's sample past the margin: nothing to add)
            row_range(ptr, i, n_features, &start, &end)
            count = 0
            for p in range(start, end):
                k = position[ind[p] if ind != NULL else p - start]
                if k >= 0:
                    scratch_index[count] = <int>k
                    scratch_value[count] = x[p]
                    count += 1
            if bias_position >= 0 and bias != 0.0:
                scratch_index[count] = bias_position
                scratch_value[count] = bias
                count += 1
            for a in range(count):
                va = scratch_value[a]
                b[scratch_index[a]] += gi * va
                if hi == 0.0:
                    continue
                va *= hi
                for c in range(a, count):
                    gram[scratch_index[a], scratch_index[c]] += va * scratch_value[c]
            work += 0.5 * count * (count + 1)
        # the products were added where the row's first index is the first one: make the matrix
        # symmetric (each pair (a, c) landed in one of gram[a, c], gram[c, a])
        for a in range(m):
            for c in range(a + 1, m):
                gram[a, c] += gram[c, a]
                gram[c, a] = gram[a, c]
    return work


def gram_sweeps(const double[:, ::1] gram, const double[::1] b, double[::1] w,
                const int[::1] coordinates, const double[::1] floor,
                const double[::1] bound, double[::1] hd, double l2, double l1,
                Py_ssize_t max_sweeps, double tol, double model_tol):
    """Cyclic coordinate descent on the proximal Newton model over the working set W =
    coordinates, from its Gram matrix (model_gram): minimise over the w_j, j in W,

        b . d + d^T gram d / 2 + l2/2 ||w||^2 + l1 ||w||_1,    d = w_W - w0_W,

    keeping hd = gram d (zero at the start, d = 0), so that a partial derivative is
    b_k + hd_k and a step on w_j costs |W| (one column of gram). The curvature along j is
    gram[k, k], at least floor[j] (as in model_sweeps). No sweep when w0's largest violation on
    W is at most tol; else sweeps until one's largest violation is at most model_tol, or
    max_sweeps. Returns (sweeps, multiply-adds made, w0's largest violation, the last sweep's)."""
    cdef Py_ssize_t m = coordinates.shape[0], k, j, c, sweep = 0
    cdef double work = 0.0, largest = 0.0, first = 0.0, grad, old, new, lip, score, delta
    with nogil:
        for k in range(m):
            score = _violation(b[k], w[coordinates[k]], l2, l1, bound[coordinates[k]])
            if score > first:
                first = score
        if first <= tol:
            max_sweeps = 0
        while sweep < max_sweeps:
            largest = 0.0
            for k in range(m):
                j = coordinates[k]
                grad = b[k] + hd[k]
                old = w[j]
                score = _violation(grad, old, l2, l1, bound[j])
                if score > largest:
                    largest = score
                lip = gram[k, k]
                lip = lip if lip > floor[j] else floor[j]
                if lip > 0.0:
                    new = soft_threshold(lip * old - grad, l1) / (lip + l2)
                elif l1 > 0.0 or l2 > 0.0:
                    new = 0.0
                else:
                    new = old
                if new != old:
                    w[j] = new
                    delta = new - old
                    for c in range(m):
                        hd[c] += delta * gram[k, c]
                    work += m
            work += m
            sweep += 1
            if largest <= model_tol:
                break
    return sweep, work, first, largest
