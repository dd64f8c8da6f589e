"""Bad input gets a clear error naming the argument; usable input is never copied or modified."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import fastdual
from fastdual._core import rows as _rows
from conftest import binary_problem, regression_problem


@pytest.fixture
def data():
    return binary_problem(n=30, d=4, seed=0)


def test_nan_and_inf_are_rejected(data):
    X, y = data
    for bad in (np.nan, np.inf, -np.inf):
        Xb = X.copy()
        Xb[3, 1] = bad
        with pytest.raises(ValueError, match="X contains NaN or infinity"):
            fastdual.train(Xb, y)
        with pytest.raises(ValueError, match="X contains NaN or infinity"):
            fastdual.train(sp.csr_matrix(Xb), y)
    yr = np.linspace(0, 1, 30)
    yr[2] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        fastdual.train(X, yr, loss="squared")
    with pytest.raises(ValueError, match="y contains NaN"):
        fastdual.train(X, np.where(np.arange(30) == 0, np.nan, y))
    w = np.ones(30)
    w[4] = np.inf
    with pytest.raises(ValueError, match="sample_weight contains NaN"):
        fastdual.train(X, y, sample_weight=w)


@pytest.mark.parametrize("sparse", [False, True])
def test_the_finite_check_allocates_nothing_of_the_size_of_x(sparse):
    import tracemalloc
    from fastdual._validation import check_matrix
    X = np.random.default_rng(0).standard_normal((2000, 500)).astype(np.float32)
    if sparse:
        X = sp.csr_matrix(X)
    size = X.data.nbytes
    check_matrix(X)                    # anything imported or cached on a first call
    tracemalloc.start()
    try:
        check_matrix(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.1 * size
    # ... and a non-finite entry is still found, and named.
    for bad in (np.nan, np.inf, -np.inf):
        Xb = X.copy()
        Xb[1234, 321] = bad
        with pytest.raises(ValueError, match=r"^X contains NaN or infinity \(at row 1234, "
                                             r"column 321\)$"):
            check_matrix(Xb)
    # Finite entries whose sum overflows are finite.
    huge = np.full((4, 3), np.finfo(np.float64).max)
    assert check_matrix(huge).n_samples == 4
    assert check_matrix(sp.csr_matrix(huge)).n_samples == 4


def test_wrong_shapes(data):
    X, y = data
    with pytest.raises(ValueError, match="y has 29 entries but X has 30 samples"):
        fastdual.train(X, y[:-1])
    with pytest.raises(ValueError, match="X must be 2-D"):
        fastdual.train(X[:, 0], y)
    with pytest.raises(ValueError, match="y must be 1-D"):
        fastdual.train(X, np.column_stack([y, y]))
    with pytest.raises(ValueError, match="sample_weight has 3 entries"):
        fastdual.train(X, y, sample_weight=[1, 2, 3])
    model = fastdual.train(X, y, random_state=0)
    with pytest.raises(ValueError, match="X has 3 features, but the model was trained on 4"):
        model.predict(X[:, :3])


def test_labels_must_match_the_loss(data):
    X, y = data
    with pytest.raises(ValueError, match="only one class"):
        fastdual.train(X, np.ones(30))
    with pytest.raises(ValueError, match=r"y has 3 classes; this takes the 2 labels"):
        fastdual.duality_gap(X, np.arange(30) % 3, np.zeros(X.shape[1]), loss="hinge")
    with pytest.raises(ValueError, match=r"multiclass='multinomial' needs loss in \['logistic'\]"):
        fastdual.train(X, np.arange(30) % 3, loss="hinge", multiclass="multinomial")
    with pytest.raises(TypeError, match="regression loss: y must be numeric"):
        fastdual.train(X, np.where(y > 0, "a", "b"), loss="squared")


def test_strengths_and_parameters(data):
    X, y = data
    for value in (0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="alpha must be > 0"):
            fastdual.train(X, y, alpha=value)
        with pytest.raises(ValueError, match="C must be > 0"):
            fastdual.train(X, y, C=value)
    with pytest.raises(TypeError, match="alpha must be a real number"):
        fastdual.train(X, y, alpha="big")
    with pytest.raises(ValueError, match="either alpha or C"):
        fastdual.train(X, y, alpha=1.0, C=1.0)
    with pytest.raises(ValueError, match=r"l1_ratio must be in \[0, 1\]"):
        fastdual.train(X, y, l1_ratio=1.5)
    with pytest.raises(ValueError, match="tol must be >= 0"):
        fastdual.train(X, y, tol=-1)
    with pytest.raises(ValueError, match="max_epochs must be >= 1"):
        fastdual.train(X, y, max_epochs=0)
    with pytest.raises(TypeError, match="max_epochs must be an integer"):
        fastdual.train(X, y, max_epochs=2.5)
    with pytest.raises(ValueError, match="intercept_scaling must be > 0"):
        fastdual.train(X, y, intercept_scaling=0)
    with pytest.raises(ValueError, match="gamma must be > 0"):
        fastdual.train(X, y, loss="smooth_hinge", gamma=0.0)
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        fastdual.train(X, np.linspace(0, 1, 30), loss="epsilon_insensitive", epsilon=-0.1)
    with pytest.raises(ValueError, match=r"unknown argument\(s\) \['gamma'\]: solver='sdca' has "
                                         r"the options \['acceleration', 'output', 'sampling', "
                                         r"'sdca_option', 'shrinking'\], and loss='hinge' has the "
                                         r"parameters none"):
        fastdual.train(X, y, loss="hinge", gamma=2.0, solver="sdca")
    with pytest.raises(ValueError, match=r"unknown argument\(s\) \['gamma'\]: solver='auto' has "
                                         r"the options \['acceleration', 'adaptive', 'anderson', "
                                         r"'batch_size', .*'variant', 'working_set'\]"):
        fastdual.train(X, y, loss="hinge", gamma=2.0)
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        fastdual.train(X, y, sample_weight=-np.ones(30))
    with pytest.raises(ValueError, match="positive sum"):
        fastdual.train(X, y, sample_weight=np.zeros(30))
    with pytest.raises(ValueError, match=r"sdca_option must be one of \['I', 'IV'\]"):
        fastdual.train(X, y, sdca_option="II")
    with pytest.raises(TypeError, match="random_state"):
        fastdual.train(X, y, random_state="seed")
    with pytest.raises(TypeError, match="callback must be callable"):
        fastdual.train(X, y, callback=3)
    with pytest.raises(TypeError, match="warm_start must be a fastdual Model"):
        fastdual.train(X, y, warm_start=np.zeros(4))


def test_unknown_names_list_the_valid_ones(data):
    X, y = data
    with pytest.raises(ValueError, match=r"loss must be one of \['absolute', .*'smooth_hinge'"):
        fastdual.train(X, y, loss="hinge2")
    with pytest.raises(ValueError, match=r"solver must be one of \['agm', 'cd', 'newton', 'rda', 'sdca', 'spdc'\], got 'lbfgs'"):
        fastdual.train(X, y, solver="lbfgs")


def test_empty_inputs():
    with pytest.raises(ValueError, match="X is empty: it has 0 samples"):
        fastdual.train(np.zeros((0, 3)), np.zeros(0))
    with pytest.raises(ValueError, match="X has 0 features"):
        fastdual.train(np.zeros((4, 0)), np.array([1, -1, 1, -1]))
    with pytest.raises(ValueError, match="X is empty"):
        fastdual.train(sp.csr_matrix((0, 3)), np.zeros(0))
    with pytest.raises(TypeError, match="X must be"):
        fastdual.train(None, [1, 2])
    with pytest.raises(TypeError, match="X must hold real numbers"):
        fastdual.train(np.array([["a", "b"], ["c", "d"]]), [1, 2])


def test_csr_structure_is_checked(data):
    X, y = data
    Xs = sp.csr_matrix(X)
    dup = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([1, 1, 0], dtype=np.int32),
                         np.array([0, 2, 3] + [3] * 28, dtype=np.int32)), shape=(30, 4))
    with pytest.raises(ValueError, match="row 0 stores the same column twice"):
        fastdual.train(dup, y)
    bad = Xs.copy()
    bad.indices[5] = 17
    with pytest.raises(ValueError, match="column index outside"):
        fastdual.train(bad, y)


def test_unsorted_csr_indices_give_the_same_model(data):
    X, y = data
    Xs = sp.csr_matrix(X)
    shuffled = Xs.copy()
    for i in range(30):
        start, end = shuffled.indptr[i], shuffled.indptr[i + 1]
        shuffled.indices[start:end] = shuffled.indices[start:end][::-1]
        shuffled.data[start:end] = shuffled.data[start:end][::-1]
    shuffled.has_sorted_indices = False
    a = fastdual.train(Xs, y, tol=1e-10, max_epochs=5000, random_state=0)
    b = fastdual.train(shuffled, y, tol=1e-10, max_epochs=5000, random_state=0)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-9)


def test_int64_indices_and_other_formats_are_accepted(data):
    X, y = data
    Xs = sp.csr_matrix(X)
    wide = Xs.copy()
    wide.indices = wide.indices.astype(np.int64)
    wide.indptr = wide.indptr.astype(np.int64)
    ref = fastdual.train(Xs, y, tol=0.0, max_epochs=5, random_state=0)
    for other in (wide, Xs.tocsc(), Xs.tocoo(), sp.csr_array(Xs), X.tolist(), np.asfortranarray(X),
                  np.repeat(X, 2, axis=1)[:, ::2]):
        model = fastdual.train(other, y, tol=0.0, max_epochs=5, random_state=0)
        np.testing.assert_allclose(model.coef_, ref.coef_, rtol=1e-9, atol=1e-12)


def _narrowed(indices, indptr, n_features):
    out = np.empty(len(indices), np.int32), np.empty(len(indptr), np.int32)
    outcome = _rows.narrow_csr(np.asarray(indices, np.int64), np.asarray(indptr, np.int64),
                               n_features, *out)
    return outcome, out


@pytest.mark.parametrize("indices, indptr, expected", [
    ([0, 2, 1, 3], [0, 2, 4], 0),               # rows increasing
    ([2, 0, 1, 3], [0, 2, 4], 1),               # a row not increasing, no column twice
    ([1, 1, 0, 3], [0, 2, 4], 1),               # a column twice: the caller's duplicate check
    ([0, 2, 1, 3, 7], [0, 2, 4], 0),            # a stored entry past indptr[-1]
    ([0, 2, 1, 3, 2**31], [0, 2, 4], 2),        # ... outside int32
    ([0, 4, 1, 3], [0, 2, 4], 2),               # a column outside [0, 4)
    ([0, -1, 1, 3], [0, 2, 4], 2),              # a negative column
    ([0, 2**31 + 1, 1, 3], [0, 2, 4], 2),       # a column outside int32
    ([0, 2, 1, 3], [0, 3, 2], 2),               # indptr decreasing
    ([0, 2, 1, 3], [1, 2, 4], 2),               # indptr not starting at 0
    ([0, 2, 1, 3], [0, 2, 2**32 + 4], 2),       # a pointer outside int32 (past the entries)
])
def test_int64_index_arrays_are_narrowed_and_checked_in_one_pass(indices, indptr, expected):
    """narrow_csr: the int32 arrays astype gives, and the structure check's verdict (0: valid
    and sorted; 1: valid bounds, rows to check for duplicates; 2: invalid, left to the checks
    that say what)."""
    outcome, (narrow_indices, narrow_indptr) = _narrowed(indices, indptr, 4)
    assert outcome == expected
    if outcome != 2:
        np.testing.assert_array_equal(narrow_indices, np.asarray(indices, np.int64))
        np.testing.assert_array_equal(narrow_indptr, np.asarray(indptr, np.int64))
        verdict = _rows.csr_structure_error(narrow_indices, narrow_indptr, 4)
        assert (verdict is None) == (indices != [1, 1, 0, 3])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8), st.integers(1, 6), st.integers(0, 2**32), st.booleans())
def test_int64_matrices_train_as_their_int32_copies_and_fail_alike(n, d, seed, shuffle):
    """Any matrix with int64 index arrays trains to the model of its int32 copy, or fails with
    the same message."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.6, format="csr", random_state=rng)
    if shuffle and X.nnz > 1:
        X.indices[:] = rng.permutation(X.indices)       # may repeat a column in a row
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    wide = sp.csr_matrix((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)),
                         shape=X.shape)
    narrow = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                           shape=X.shape)
    results = []
    for matrix in (wide, narrow):
        try:
            results.append(fastdual.train(matrix, y, tol=0.0, max_epochs=3, random_state=0,
                                          loss="squared").coef_)
        except ValueError as exc:
            results.append(str(exc))
    if isinstance(results[1], str):
        assert results[0] == results[1]
    else:
        np.testing.assert_array_equal(results[0], results[1])


def test_integer_and_boolean_X_are_converted():
    X = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], dtype=np.int32)
    model = fastdual.train(X, [1, -1, 1, -1], random_state=0)
    assert model.coef_.dtype == np.float64


def test_huge_values(data):
    X, y = data
    with pytest.raises(ValueError, match="squared row norms overflow"):
        fastdual.train(X * 1e200, y)
    # Large but representable values: the logistic loss and its step must not overflow.
    with pytest.warns(fastdual.ConvergenceWarning):     # 50 epochs are not enough here
        model = fastdual.train(X * 1e3, y, loss="logistic", alpha=1e-3, max_epochs=50,
                               random_state=0, tol=1e-3, solver="sdca")
    assert np.isfinite(model.coef_).all() and np.isfinite(model.gap_) and model.gap_ >= 0


def test_user_arrays_are_never_modified():
    for sparse in (False, True):
        X, y = regression_problem(n=40, d=5, seed=1, sparse=sparse)
        weights = np.linspace(0.5, 2.0, 40)
        snapshot = [X.copy(), y.copy(), weights.copy()]
        model = fastdual.train(X, y, loss="squared", sample_weight=weights, alpha=0.01,
                               l1_ratio=0.3, random_state=0)
        fastdual.train(X, y, loss="squared", sample_weight=weights, alpha=0.01,
                       random_state=0, warm_start=model)
        fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss="squared", alpha=0.01,
                             sample_weight=weights)
        model.predict(X)
        if sparse:
            assert (X != snapshot[0]).nnz == 0
        else:
            np.testing.assert_array_equal(X, snapshot[0])
        np.testing.assert_array_equal(y, snapshot[1])
        np.testing.assert_array_equal(weights, snapshot[2])


def test_duality_gap_validates_its_inputs(data):
    X, y = data
    with pytest.raises(ValueError, match=r"coef must have shape \(4,\)"):
        fastdual.duality_gap(X, y, np.zeros(3), loss="hinge", alpha=0.1)
    with pytest.raises(ValueError, match=r"dual_coef must have shape \(30,\)"):
        fastdual.duality_gap(X, y, np.zeros(4), loss="hinge", alpha=0.1, dual_coef=np.zeros(2))
    with pytest.raises(ValueError, match="coef contains NaN"):
        fastdual.duality_gap(X, y, np.full(4, np.nan), loss="hinge", alpha=0.1)
    # An infeasible dual point is not a bound: the dual is -inf and the gap infinite.
    cert = fastdual.duality_gap(X, y, np.zeros(4), loss="hinge", alpha=0.1, dual_coef=np.full(30, 5.0))
    assert cert.dual == -np.inf and cert.gap == np.inf


def test_duality_gap_intercept_must_be_a_finite_number(data):
    X, y = data
    for bad in (np.nan, np.inf, "1", True):
        with pytest.raises(ValueError, match="intercept must be None or a finite real number"):
            fastdual.duality_gap(X, y, np.zeros(4), bad, loss="hinge", alpha=0.1)
    with pytest.raises(ValueError, match="sample_weight must be 1-D"):
        fastdual.train(X, y, sample_weight=np.ones((30, 2)))


def _csr_verdict(indices, indptr, n_features):
    """Brute-force reference for the CSR structure check: None or the kind of the first fault
    (pointers and bounds row by row, then repeated columns)."""
    if indptr[0] != 0 or indptr[-1] > len(indices):
        return "start/end"
    for i in range(len(indptr) - 1):
        if indptr[i + 1] < indptr[i] or indptr[i + 1] > indptr[-1]:
            return "decreases"
        row = indices[indptr[i]:indptr[i + 1]]
        if np.any((row < 0) | (row >= n_features)):
            return "outside"
    for i in range(len(indptr) - 1):
        row = indices[indptr[i]:indptr[i + 1]]
        if len(set(row.tolist())) < len(row):
            return "twice"
    return None


@settings(max_examples=300)
@given(st.integers(1, 6), st.integers(1, 5), st.data())
def test_csr_structure_check_matches_a_brute_force_reference(n_rows, n_features, draw):
    """Rows sorted, unsorted, with repeats, out-of-range indices, and indptr that overshoots
    the stored entries before coming back (never read past the end)."""
    counts = draw.draw(st.lists(st.integers(0, 4), min_size=n_rows, max_size=n_rows))
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    if draw.draw(st.booleans()):                     # corrupt one interior pointer
        k = draw.draw(st.integers(1, n_rows))
        indptr[k] = draw.draw(st.integers(0, int(indptr[-1]) + 6))
    nnz = int(max(indptr[-1], 0))
    indices = np.array(draw.draw(st.lists(st.integers(-1, n_features), min_size=nnz,
                                          max_size=nnz)), dtype=np.int32)
    if draw.draw(st.booleans()):                     # mostly-valid: sorted distinct rows
        for i in range(n_rows):
            a, b = int(indptr[i]), int(indptr[i + 1])
            if 0 <= a <= b <= nnz and b - a <= n_features:
                indices[a:b] = np.sort(np.random.default_rng(i).choice(n_features, b - a,
                                                                       replace=False))
    expected = _csr_verdict(indices, indptr, n_features)
    message = _rows.csr_structure_error(indices, indptr, n_features)
    if expected is None:
        assert message is None
    else:
        assert message is not None
        key = {"decreases": "decreases", "outside": "outside", "twice": "twice",
               "start/end": "indptr"}[expected]
        assert key in message


def test_real_targets_are_refused_by_a_classification_loss():
    """Continuous y with a classification loss would train one class per value."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    with pytest.raises(ValueError, match="real targets, not class labels"):
        fastdual.train(X, y, loss="hinge")
    from fastdual.sklearn import LinearRegressor   # (refused by the loss's task, first)
    with pytest.raises(ValueError, match="'hinge' is a classification loss"):
        LinearRegressor(loss="hinge").fit(X, y)
    # Integral float labels (three classes) and any two values stay class labels.
    fastdual.train(X, np.arange(30) % 3 * 1.0, loss="hinge", max_epochs=5, tol=0.0)
    fastdual.train(X, np.where(y > 0, 0.25, 0.75), loss="hinge", max_epochs=5, tol=0.0)


def test_threads_sharing_a_matrix_fill_its_caches_once(monkeypatch):
    """One-vs-rest's threads share the validated X: its squared row norms and its column layout
    are computed once however many threads ask at the same time (each slowed here so that they
    overlap), and the Matrix still pickles (Dask ships it) with its caches."""
    import pickle
    import threading
    import time
    from fastdual import _validation
    from fastdual._validation import check_matrix
    X, _ = binary_problem(n=40, d=6, seed=5)
    matrix = check_matrix(sp.csr_matrix(X))
    calls = []
    original_norms, original_columns = _rows.row_squared_norms, _validation._column_layout

    def slow(original):
        def wrapped(*args):
            calls.append(original.__name__)
            time.sleep(0.05)
            return original(*args)
        return wrapped

    monkeypatch.setattr(_rows, "row_squared_norms", slow(original_norms))
    monkeypatch.setattr(_validation, "_column_layout", slow(original_columns))
    start = threading.Barrier(8)

    def ask():
        start.wait()
        matrix.squared_norms(1.0)
        matrix.columns()

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(calls) == ["_column_layout", "row_squared_norms"]
    again = pickle.loads(pickle.dumps(matrix))
    np.testing.assert_array_equal(again.squared_norms(1.0), matrix.squared_norms(1.0))
    assert len(calls) == 2


@settings(max_examples=60, deadline=None)
@given(n_rows=st.integers(1, 12), n_features=st.integers(1, 9), density=st.floats(0.0, 1.0),
       float32=st.booleans(), shuffle=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_the_column_layout_is_scipys_csc(n_rows, n_features, density, float32, shuffle, seed):
    """rows.csr_columns (the column view of a CSR X, without scipy) is scipy's tocsc: the same
    values, row indices ascending in each column, column starts; rows given unsorted too, empty
    rows and columns, float32 kept float32."""
    rng = np.random.default_rng(seed)
    dense = rng.standard_normal((n_rows, n_features)) * (rng.random((n_rows, n_features))
                                                           < density)
    X = sp.csr_matrix(dense.astype(np.float32 if float32 else np.float64))
    if shuffle:         # each row's entries in another order: a valid, unsorted CSR
        order = np.concatenate([rng.permutation(np.arange(a, b))
                                for a, b in zip(X.indptr[:-1], X.indptr[1:])] + [[]])
        order = order.astype(np.int64)
        X = sp.csr_matrix((X.data[order], X.indices[order], X.indptr), shape=X.shape)
    values, rows, starts = _rows.csr_columns(X.data, X.indices.astype(np.int32),
                                             X.indptr.astype(np.int32), n_rows, n_features)
    expected = X.tocsc()
    expected.sort_indices()
    assert values.dtype == X.dtype and rows.dtype == np.int32 and starts.dtype == np.int32
    np.testing.assert_array_equal(starts, expected.indptr)
    np.testing.assert_array_equal(rows, expected.indices)
    np.testing.assert_array_equal(values, expected.data)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_take_rows_is_the_matrix_of_those_rows(sparse, dtype):
    """Matrix.take_rows (cross-validation's folds, without scipy): the rows asked for, in that
    order (repeats, empty rows, none at all), values in X's dtype, a valid Matrix."""
    from fastdual._validation import check_matrix
    rng = np.random.default_rng(3)
    dense = rng.standard_normal((30, 7)) * (rng.random((30, 7)) < 0.4)
    dense[[4, 11]] = 0.0                                  # empty rows
    X = sp.csr_matrix(dense.astype(dtype)) if sparse else dense.astype(dtype)
    matrix = check_matrix(X)
    for rows in (np.arange(30), np.array([29, 4, 4, 0, 11, 17]), np.array([], dtype=int),
                 np.flatnonzero(rng.random(30) < 0.5)):
        part = matrix.take_rows(rows)
        assert (part.n_samples, part.n_features, part.is_sparse) == (len(rows), 7, sparse)
        assert part.data.dtype == dtype
        expected = dense.astype(dtype)[rows]
        if sparse:
            assert part.indices.dtype == np.int32 and part.indptr.dtype == np.int32
            assert _rows.csr_structure_error(part.indices, part.indptr, 7) is None
            got = sp.csr_matrix((part.data, part.indices, part.indptr),
                                shape=(len(rows), 7)).toarray()
        else:
            got = part.data.reshape(len(rows), 7)
        np.testing.assert_array_equal(got, expected)


def test_csr_rows_checks_its_arrays():
    """_validation.csr_rows (the command line's files as rows) refuses what a scipy CSR X would
    be refused for, each error naming the array: arrays shorter than indptr says, arrays that
    are not 1-D, no indptr, a structure or a value that is not valid."""
    from fastdual._validation import csr_rows
    data, indices, indptr = np.array([1.0, 2.0]), np.array([0, 1], np.int32), np.array([0, 2],
                                                                                      np.int32)
    assert csr_rows(data, indices, indptr, 2).n_samples == 1
    cases = [((data[:1], indices, indptr, 2), "X.data has 1 entries but indptr"),
             ((data, indices[:1], indptr, 2), "X.indices has 1 entries but indptr"),
             ((data.reshape(1, 2), indices, indptr, 2), "X.data must be 1-D"),
             ((data, indices, np.empty(0, np.int32), 2), "X.indptr must be a non-empty"),
             ((data, indices, indptr, -3), "nonnegative number of features"),
             ((data, np.array([1, 1], np.int32), indptr, 2), "not a valid CSR matrix"),
             ((data, indices, indptr, 1), "not a valid CSR matrix"),
             ((np.array([1.0, np.nan]), indices, indptr, 2), "NaN or infinity"),
             ((data, indices, np.array([0], np.int32), 2), "0 samples")]
    for arguments, message in cases:
        with pytest.raises(ValueError, match=message):
            csr_rows(*arguments)


def test_take_rows_refuses_rows_out_of_range():
    from fastdual._validation import check_matrix
    for X in (np.ones((4, 2)), sp.csr_matrix(np.ones((4, 2)))):
        matrix = check_matrix(X)
        for rows in ([0, 4], [-1], np.array([True, False, True, True]), [[0, 1]], [0.5]):
            with pytest.raises(ValueError, match=r"rows must be a 1-D array of integers"):
                matrix.take_rows(rows)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rows_gram_is_the_gram_of_the_chosen_rows_with_the_intercept(sparse, dtype):
    X, _ = binary_problem(n=30, d=12, seed=2, sparse=sparse, dtype=dtype)
    data = X.data if sparse else np.ascontiguousarray(X).ravel()
    indices = X.indices if sparse else np.empty(0, dtype=np.int32)
    indptr = X.indptr if sparse else np.empty(0, dtype=np.int32)
    rows = np.array([4, 0, 29, 4, 17], dtype=np.intp)          # any order, a row twice
    scratch = np.zeros(12)
    out = np.empty((5, 5))
    _rows.rows_gram(data, indices.astype(np.int32), indptr.astype(np.int32), 12, 0.5, rows,
                    scratch, out)
    dense = np.asarray(X.todense() if sparse else X, dtype=np.float64)[rows]
    np.testing.assert_allclose(out, dense @ dense.T + 0.25, rtol=1e-12, atol=1e-12)
    assert not scratch.any()                                  # left zero
    with pytest.raises(ValueError, match="rows must be in"):
        _rows.rows_gram(data, indices.astype(np.int32), indptr.astype(np.int32), 12, 0.5,
                        np.array([0, 30], dtype=np.intp), scratch, np.empty((2, 2)))
    with pytest.raises(ValueError, match="scratch"):
        _rows.rows_gram(data, indices.astype(np.int32), indptr.astype(np.int32), 12, 0.5, rows,
                        np.zeros(11), out)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rows_alone_sums_each_rows_squares_in_the_columns_no_other_row_has(sparse, dtype):
    rng = np.random.default_rng(3)
    dense = rng.standard_normal((8, 20)) * (rng.random((8, 20)) < 0.15)
    dense[2, 5] = 0.0
    dense[3, 5] = 1.5           # column 5: one nonzero (row 3)...
    dense[6, 11] = 2.0
    dense[7, 11] = -1.0         # ... column 11: two rows
    X = sp.csr_matrix(dense) if sparse else dense
    if sparse:
        X = sp.csr_matrix((np.concatenate([X.data, [0.0]]),          # an explicit zero in
                           np.concatenate([X.indices, [5]]),             # column 5, row 7
                           np.concatenate([X.indptr[:-1], [X.nnz + 1]])), shape=X.shape)
        X.has_sorted_indices = False
    X = X.astype(dtype)
    data = X.data if sparse else np.ascontiguousarray(X).ravel()
    indices = X.indices.astype(np.int32) if sparse else np.empty(0, dtype=np.int32)
    indptr = X.indptr.astype(np.int32) if sparse else np.empty(0, dtype=np.int32)
    values = np.asarray(dense, dtype=dtype).astype(np.float64)
    single = (values != 0).sum(axis=0) == 1
    expected = (values ** 2 * single).sum(axis=1)
    assert single[5] and not single[11] and expected[3] > 0
    np.testing.assert_allclose(_rows.rows_alone(data, indices, indptr, 8, 20), expected,
                               rtol=1e-12, atol=0)


def test_rows_alone_counts_a_column_of_hundreds_of_entries_as_shared():
    # Column 0 with 257 entries (a byte's count would wrap to 1 there: the count saturates),
    # column 1 with a single entry, in row 256.
    X = sp.csr_matrix((np.full(258, 2.0), np.r_[np.zeros(257, dtype=np.int32), 1],
                       np.r_[np.arange(257), 258, 258].astype(np.int32)), shape=(258, 2))
    alone = _rows.rows_alone(X.data, X.indices, X.indptr, 258, 2)
    np.testing.assert_array_equal(alone, np.r_[np.zeros(256), 4.0, 0.0])
