"""Every input check lives here: each error names the argument and says what was expected.

Nothing here modifies the caller's arrays; X is viewed without a copy whenever its dtype and
layout are already usable by the kernels (CSR or C-contiguous dense, float32 or float64).
The column methods (solver="cd") read X by columns as well: a CSC or Fortran-ordered X is kept
for that as it is, any other is converted once, when a column method first asks for it.
"""
import numbers
import sys
import threading
from dataclasses import dataclass, field

import numpy as np

from fastdual._core import rows as _rows

_INT32_MAX = np.iinfo(np.int32).max
TARGET_LIMIT = 1e100
_EMPTY_INT32 = np.empty(0, dtype=np.int32)


@dataclass
class Matrix:
    """X in the row-access layout of _core/rows.pxd (see there); `data` keeps X's float dtype."""
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    n_samples: int
    n_features: int
    is_sparse: bool
    # The caller's X when it is CSC or Fortran-ordered (its values validated with the rows'):
    # the column view without a copy. None: the column view is converted from the rows.
    column_source: object = field(default=None, repr=False)
    _columns: tuple = field(default=None, repr=False)
    _squared_norms: dict = field(default_factory=dict, repr=False)   # bias -> ||x_i||^2 + bias^2
    _derived: dict = field(default_factory=dict, repr=False, compare=False)   # key -> of the rows
    # One-vs-rest's threads share the Matrix: its caches are filled once, under this lock
    # (reentrant: a derived value may use another).
    _lock: object = field(default_factory=threading.RLock, repr=False, compare=False)

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.RLock()
        # (pickle's protocols below 5 return arrays writeable: the derived ones are read-only)
        for value in self._derived.values():
            for part in value if isinstance(value, tuple) else (value,):
                if isinstance(part, np.ndarray):
                    part.setflags(write=False)

    @property
    def kernel_args(self):
        return self.data, self.indices, self.indptr

    def squared_norms(self, bias):
        """||x_i||^2 + bias^2 for every row, computed once per bias (the problems on these rows,
        one-vs-rest's classes among them, share it)."""
        with self._lock:
            norms = self._squared_norms.get(bias)
            if norms is None:
                norms = _rows.row_squared_norms(self.data, self.indices, self.indptr,
                                                self.n_samples, self.n_features, bias)
                if not np.isfinite(norms).all():
                    raise ValueError("X (with the intercept feature of value intercept_scaling="
                                     f"{bias:g} if fit_intercept) has values so large that "
                                     "squared row norms overflow float64; rescale X (e.g. rows "
                                     "to unit norm) or intercept_scaling")
                self._squared_norms[bias] = norms
        return norms

    def derived(self, key, make):
        """make(), computed once per key for these rows and kept with them: what the rows'
        users measure of X alone (solver="auto"'s Gram floor), shared by the problems on the
        same rows, one-vs-rest's classes among them."""
        with self._lock:
            if key not in self._derived:
                self._derived[key] = make()
            return self._derived[key]

    def columns(self):
        """X in the column layout of the column kernels (solvers/_cd.pyx): (data, indices,
        indptr) of CSC (row indices, column starts, int32), or for dense X the Fortran-ordered
        matrix raveled with empty indices and indptr. A CSC or Fortran-ordered X is used as it
        is (int64 indices narrowed); a CSR or C-ordered one is converted once (a copy of X,
        kept with the Matrix for the next column method on it)."""
        with self._lock:
            if self._columns is None:
                self._columns = _column_layout(self)
        return self._columns

    def take_rows(self, rows):
        """The Matrix of X's rows `rows` (integer indices in [0, n_samples), in that order;
        folds of a cross-validation): their values and indices gathered, valid as X's are, with
        no check again and no scipy."""
        rows = np.asarray(rows)
        if rows.ndim != 1 or rows.dtype.kind not in "iu" or (
                rows.shape[0] and (rows.min() < 0 or rows.max() >= self.n_samples)):
            raise ValueError(f"rows must be a 1-D array of integers in [0, {self.n_samples})")
        rows = rows.astype(np.intp, copy=False)
        if not self.is_sparse:
            dense = self.data.reshape(self.n_samples, self.n_features)[rows]
            return Matrix(dense.reshape(-1), _EMPTY_INT32, _EMPTY_INT32, rows.shape[0],
                          self.n_features, False)
        starts = self.indptr[rows].astype(np.int64)
        lengths = self.indptr[rows + 1] - starts
        indptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        # entry t of the result is entry starts[r] + (t - indptr[r]) of X, r its row
        if indptr[-1] > _INT32_MAX:
            raise ValueError(f"the rows taken hold more than 2**31 - 1 stored entries, which "
                             "is not supported")
        gather = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
        return Matrix(self.data[gather], self.indices[gather], indptr.astype(np.int32),
                      rows.shape[0], self.n_features, True)

    def matvec(self, w):
        """X @ w (w of length n_features, or n_features x k: one pass per column), in float64,
        by the kernels' row pass (scipy's and numpy's products would first upcast a float32 X:
        a copy of the data)."""
        w = np.asarray(w, dtype=np.float64)
        columns = w.reshape(w.shape[0], -1)
        out = np.empty((self.n_samples, columns.shape[1]))
        column = np.empty(self.n_samples)
        for j in range(columns.shape[1]):
            _rows.margins(self.data, self.indices, self.indptr, self.n_samples, self.n_features, 0.0,
                    np.ascontiguousarray(columns[:, j]), column)
            out[:, j] = column
        return out.reshape((self.n_samples,) + w.shape[1:])


def _column_layout(matrix):
    source = matrix.column_source
    if not matrix.is_sparse:
        dense = source if source is not None else \
            matrix.data.reshape(matrix.n_samples, matrix.n_features)
        return np.asfortranarray(dense).ravel(order="F"), _EMPTY_INT32, _EMPTY_INT32
    if source is None:
        return _rows.csr_columns(*matrix.kernel_args, matrix.n_samples, matrix.n_features)
    if not source.has_canonical_format:
        # Repeated entries of a column would make its squared norm (the step's curvature)
        # wrong; the rows were checked after scipy's conversion, which may have summed them.
        source = source.copy()
        source.sum_duplicates()
    data = source.data
    if data.dtype != matrix.data.dtype:       # the rows' dtype (integers became float64)
        data = data.astype(matrix.data.dtype)
    # (the rows' checks bound every index and the number of entries: they fit in int32)
    return (np.ascontiguousarray(data), np.ascontiguousarray(source.indices, dtype=np.int32),
            np.ascontiguousarray(source.indptr, dtype=np.int32))


def check_matrix(X, name="X", n_features=None):
    """Validate X and return it as a Matrix, without copying usable data (a Matrix, validated
    already, is returned as it is)."""
    if isinstance(X, Matrix):
        _check_shape(name, X.n_samples, X.n_features, n_features)
        return X
    if X is None:
        raise TypeError(f"{name} must be a 2-D array or a scipy sparse matrix, got None")
    if _is_scipy_sparse(X):
        return _check_sparse(X, name, n_features)
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be a 2-D numeric array or a scipy sparse matrix: {exc}") from None
    if arr.dtype.kind == "O" and hasattr(X, "to_numpy"):
        arr = _frame_values(X, name)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {arr.shape}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    column_source = arr if arr.flags.f_contiguous and not arr.flags.c_contiguous else None
    if not arr.flags.c_contiguous:
        # Row access needs C order: the one copy, made only for Fortran-ordered or strided input.
        arr = np.ascontiguousarray(arr)
    n_samples, n_cols = arr.shape
    _check_shape(name, n_samples, n_cols, n_features)
    values = arr.reshape(-1)
    bad = _first_nonfinite(values)
    if bad is not None:
        row, column = divmod(bad, n_cols)
        raise ValueError(f"{name} contains NaN or infinity (at row {row}, column {column})")
    return Matrix(values, _EMPTY_INT32, _EMPTY_INT32, n_samples, n_cols, False,
                  column_source)


def _frame_values(X, name):
    """A pandas frame whose columns have nullable extension dtypes ("Int64", "Float64",
    "boolean"): numpy sees objects; its values as float64 when it has no missing entry."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not all(getattr(dtype, "kind", "O") in "biuf" for dtype in dtypes):
        return np.asarray(X)
    if bool(X.isna().to_numpy().any()):
        raise ValueError(f"{name} has missing values (pandas NA); fill or drop them first")
    return X.to_numpy(dtype=np.float64)


_FINITE_BLOCK = 1 << 16


def _first_nonfinite(values):
    """The index of the first NaN or infinity of the 1-D array values, or None, without a
    temporary of values' size: first their sum in float64 (a reduction casts in small buffers;
    a NaN or an infinity makes it NaN or infinite), and only when that is not finite (a NaN, an
    infinity, or finite values whose sum overflows) the elementwise test, block by block."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.sum(values, dtype=np.float64)
    if np.isfinite(total):
        return None
    for start in range(0, values.shape[0], _FINITE_BLOCK):
        finite = np.isfinite(values[start:start + _FINITE_BLOCK])
        if not finite.all():
            return start + int(np.argmin(finite))
    return None


def _check_shape(name, n_samples, n_cols, n_features):
    if n_samples == 0:
        raise ValueError(f"{name} is empty: it has 0 samples")
    if n_cols == 0:
        raise ValueError(f"{name} has 0 features")
    if n_features is not None and n_cols != n_features:
        raise ValueError(f"{name} has {n_cols} features, but the model was trained on {n_features}")


def _check_lengths(name, indptr, data, indices):
    """Refuse compressed arrays shorter than indptr says, before anything (scipy's tocsr included)
    reads them: scipy checks this at construction only, not after X.data or X.indices is replaced."""
    indptr = np.asarray(indptr)
    if indptr.ndim != 1 or indptr.shape[0] == 0:
        raise ValueError(f"{name}.indptr must be a non-empty 1-D array, got shape {indptr.shape}")
    nnz = int(indptr[-1])
    for part, array in (("data", data), ("indices", indices)):
        length = len(array)                 # bsr: data holds one block per entry
        if length < nnz:
            raise ValueError(f"{name}.{part} has {length} entries but indptr[-1] is {nnz}")


def _is_scipy_sparse(X):
    """scipy.sparse.issparse(X), without importing scipy.sparse (about 0.15 s) where it is not
    imported yet: then X cannot be one of its matrices."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


def _check_sparse(X, name, n_features):
    if hasattr(X, "indptr"):     # csr, csc, bsr
        _check_lengths(name, X.indptr, X.data, X.indices)
    column_source = X if X.format == "csc" else None
    if X.format != "csr":
        X = X.tocsr()   # a copy, unavoidable for row access; documented
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got {X.ndim} dimensions")
    n_samples, n_cols = X.shape
    _check_shape(name, n_samples, n_cols, n_features)
    if X.indptr.shape[0] != n_samples + 1:
        raise ValueError(f"{name}.indptr has length {X.indptr.shape[0]}, expected "
                         f"{n_samples + 1}")
    return csr_rows(X.data, X.indices, X.indptr, n_cols, name, column_source)


def csr_rows(data, indices, indptr, n_features, name="X", column_source=None):
    """The Matrix of a CSR matrix given by its three arrays (n_features columns; indptr of
    length n_samples + 1), each checked as for a scipy CSR X: its values real and finite, its
    structure valid (indices in range, none repeated within a row), its index arrays narrowed
    to int32, without copying usable values. The command line reads LIBSVM files into these
    arrays and trains on them without building a scipy matrix (importing scipy.sparse costs
    about 0.15 s of a process)."""
    for part, array in (("data", data), ("indices", indices)):
        if array.ndim != 1:
            raise ValueError(f"{name}.{part} must be 1-D, got shape {array.shape}")
    _check_lengths(name, indptr, data, indices)
    n_samples, n_cols = indptr.shape[0] - 1, int(n_features)
    _check_shape(name, n_samples, n_cols, None)
    if n_cols < 0:
        raise ValueError(f"{name} must have a nonnegative number of features, got {n_cols}")
    if data.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {data.dtype}")
    for part, array in (("indices", indices), ("indptr", indptr)):
        if array.dtype.kind not in "iu":
            raise TypeError(f"{name}.{part} must hold integers, got dtype {array.dtype}")
    if data.dtype not in (np.float32, np.float64):
        data = data.astype(np.float64)
    data = np.ascontiguousarray(data)
    structure_checked = False
    if (indices.dtype == np.int64 and indptr.dtype == np.int64
            and indices.flags.c_contiguous and indptr.flags.c_contiguous):
        # (scikit-learn's load_svmlight_file gives int64 index arrays): narrowed and checked
        # in one pass; anything wrong is left to the checks below, which say what
        narrow = np.empty(indices.shape[0], dtype=np.int32), np.empty(indptr.shape[0], np.int32)
        outcome = _rows.narrow_csr(indices, indptr, n_cols, *narrow)
        if outcome != 2:
            indices, indptr = narrow
            structure_checked = outcome == 0
    if indices.dtype != np.int32 or indptr.dtype != np.int32:
        # int64 index arrays (scipy uses them for large or concatenated matrices) are narrowed
        # when they fit: a copy of the index arrays only, never of the values.
        if indices.size and (indices.max(initial=0) > _INT32_MAX or indices.min(initial=0) < 0):
            raise ValueError(f"{name} has column indices outside the int32 range")
        if indptr[-1] > _INT32_MAX:
            raise ValueError(f"{name} has more than 2**31 - 1 stored entries, which is not supported")
        if indptr.min() < 0 or indptr.max() > indptr[-1]:   # may wrap into a valid-looking int32
            raise ValueError(f"{name} is not a valid CSR matrix: indptr has entries outside "
                             f"[0, {indptr[-1]}]")
        indices = indices.astype(np.int32)
        indptr = indptr.astype(np.int32)
    indices = np.ascontiguousarray(indices)
    indptr = np.ascontiguousarray(indptr)
    problem = None if structure_checked else _rows.csr_structure_error(indices, indptr, n_cols)
    if problem is not None:
        raise ValueError(f"{name} is not a valid CSR matrix: {problem}")
    nnz = indptr[-1]
    bad = _first_nonfinite(data[:nnz])
    if bad is not None:
        row = int(np.searchsorted(indptr, bad, side="right")) - 1
        raise ValueError(f"{name} contains NaN or infinity (at row {row}, column "
                         f"{indices[bad]})")
    return Matrix(data, indices, indptr, n_samples, n_cols, True, column_source)


def _target_array(y, n_samples):
    """y as a 1-D array of n_samples numbers or strings (objects resolved), or a clear error."""
    if y is None:
        raise TypeError("y must be a 1-D array of targets, got None")
    arr = np.asarray(y)
    if arr.dtype.kind in "US" and not isinstance(y, np.ndarray):
        arr = np.asarray(y, dtype=object)   # numpy would turn the numbers of [1, "a"] into strings
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {arr.shape}")
    if arr.shape[0] != n_samples:
        raise ValueError(f"y has {arr.shape[0]} entries but X has {n_samples} samples")
    if arr.dtype.kind == "O":
        arr = _object_targets(arr)
    return arr


def check_targets(y, n_samples, task, loss_name):
    """Return (targets as float64, classes or None). Binary labels become -1 / +1 (classes[1] is +1)."""
    arr = _target_array(y, n_samples)
    if task == "regression":
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"loss={loss_name!r} is a regression loss: y must be numeric, got dtype {arr.dtype}")
        targets = np.array(arr, dtype=np.float64)   # always a copy: the caller's y is never touched
        _check_finite_targets(targets)
        if targets.size and np.max(np.abs(targets)) > TARGET_LIMIT:
            # (z - y)^2 and its sums must stay finite.
            raise ValueError(f"y has values up to {np.max(np.abs(targets)):.3g} in magnitude; "
                             f"regression targets must be at most {TARGET_LIMIT:g}: rescale y")
        return targets, None
    classes, index = _labels(arr)
    if classes.shape[0] > 2:
        raise ValueError(
            f"y has {classes.shape[0]} classes; this takes the 2 labels of a binary problem "
            "(fastdual.train trains k > 2 classes one-vs-rest: multiclass='ovr')")
    return np.where(index == 1, 1.0, -1.0), classes


def check_labels(y, n_samples):
    """(classes, index): the sorted distinct labels of a classification y (at least 2) and each
    sample's position among them."""
    return _labels(_target_array(y, n_samples))


def _labels(arr):
    if arr.dtype.kind == "f":
        _check_finite_targets(arr)
    # Two O(n) scans instead of a sort for the usual two labels: the first label, then the
    # first label unlike it; a sort only when there are more.
    first = arr[0]
    others = arr != first
    if not others.any():
        label = first.item() if isinstance(first, np.generic) else first
        raise ValueError(f"y has only one class ({label!r}); classification needs two or more")
    second = arr[np.argmax(others)]
    if np.any(others & (arr != second)):
        if arr.dtype.kind == "f" and np.any(arr != np.round(arr)):
            # (scikit-learn's "continuous" targets: its classifiers refuse them too)
            raise ValueError(
                f"y has {np.unique(arr).shape[0]} distinct values, not all integers: real "
                "targets, not class labels. Classification losses need labels; for real "
                "targets use a regression loss ('squared', 'absolute', 'epsilon_insensitive')")
        return np.unique(arr, return_inverse=True)
    classes = np.array(sorted([first, second]), dtype=arr.dtype)
    return classes, (arr == classes[1]).astype(np.intp)


def _object_targets(arr):
    """An object array of labels as strings or float64; None, mixed or other types are refused."""
    is_str = np.fromiter((isinstance(v, str) for v in arr), bool, arr.shape[0])
    for i, v in enumerate(arr):
        if v is None:
            raise ValueError(f"y contains None at index {i}")
        if not (is_str[i] or isinstance(v, (numbers.Real, np.bool_))):
            raise TypeError(f"y must hold numbers or strings, got {type(v).__name__} at index {i}")
    if is_str.all():
        return arr.astype(str)
    if is_str.any():
        raise TypeError(f"y mixes strings and numbers (a string at index {np.argmax(is_str)}, "
                        f"a number at index {np.argmin(is_str)})")
    return arr.astype(np.float64)


def _check_finite_targets(values):
    bad = ~np.isfinite(values)
    if bad.any():
        raise ValueError(f"y contains NaN or infinity (at index {np.argmax(bad)})")


def check_sample_weight(sample_weight, n_samples):
    """(weights, total): the weights normalised to mean 1 (a new array), so that an integer weight
    k is exactly k copies, and the sum of the weights as given, a scalar or length-1 weight counted
    once per sample (LIBLINEAR's C multiplies it: alpha = 1 / (C total)). Both without overflow."""
    if sample_weight is None:
        return np.ones(n_samples, dtype=np.float64), float(n_samples)
    arr = np.asarray(sample_weight)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"sample_weight must be numeric, got dtype {arr.dtype}")
    if arr.ndim > 1:
        raise ValueError(f"sample_weight must be 1-D or a scalar, got shape {arr.shape}")
    arr = np.array(arr, dtype=np.float64).ravel()   # a copy: the caller's array is never touched
    if arr.shape[0] == 1 and n_samples != 1:
        arr = np.full(n_samples, arr[0])
    if arr.shape[0] != n_samples:
        raise ValueError(f"sample_weight has {arr.shape[0]} entries but X has {n_samples} samples")
    if not np.isfinite(arr).all():
        raise ValueError("sample_weight contains NaN or infinity")
    if (arr < 0).any():
        raise ValueError("sample_weight must be >= 0")
    # Scaled by a power of two near the largest weight (exact, so ordinary weights give the same
    # bits as summing them directly) the sum lies in [0.5, n): it cannot overflow (all 1e308) and
    # n / sum cannot either (all subnormal). Only the total may be inf, when the true sum is.
    largest = arr.max()
    if not largest > 0:
        raise ValueError("sample_weight must have a positive sum (the weights are all zero)")
    exponent = int(np.frexp(largest)[1])
    arr = np.ldexp(arr, -exponent)
    scaled_sum = float(arr.sum())
    arr *= n_samples / scaled_sum
    with np.errstate(over="ignore"):
        return arr, float(np.ldexp(scaled_sum, exponent))


def check_positive(name, value, allow_zero=False, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    ok = value >= 0 if allow_zero else value > 0
    if not (ok and np.isfinite(value)):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'} and finite, got {value!r}")
    return value


def check_fraction(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in [0, 1], got {value!r}")
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return value


def check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


def feature_names(X):
    """The column names of a pandas-like frame X when every one is a string (scikit-learn's
    rule: names of other types are not names), as an object array; else None."""
    columns = getattr(X, "columns", None)
    if columns is None or callable(columns) or isinstance(X, Matrix) or _is_scipy_sparse(X):
        return None
    names = list(columns)
    if not names or not all(isinstance(name, str) for name in names):
        return None
    return np.asarray(names, dtype=object)


def check_verbose(verbose):
    """verbose: False / True or an integer >= 0 (0 silent, 1 a line per check, 2 a bar)."""
    if isinstance(verbose, bool):
        return int(verbose)
    if not isinstance(verbose, numbers.Integral) or verbose < 0:
        raise TypeError(f"verbose must be an integer >= 0 or a bool, got {verbose!r}")
    return int(verbose)


def check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def check_coef(coef, n_features, name="coef"):
    arr = np.asarray(coef, dtype=np.float64)
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.shape != (n_features,):
        raise ValueError(f"{name} must have shape ({n_features},), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def check_seed(random_state):
    """An int seed from None / int / numpy Generator or RandomState."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    if isinstance(random_state, (np.random.Generator,)):
        return int(random_state.integers(2**63))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be >= 0, got {random_state!r}")
        return int(random_state)
    raise TypeError(f"random_state must be None, an int or a numpy random generator, got {random_state!r}")


def check_classes(classes, loss_name):
    """The two labels of a binary loss as a sorted array (classes[1] is encoded +1)."""
    if classes is None:
        raise ValueError(f"classes=[...] (the two labels) is required for loss={loss_name!r}: a "
                         "chunk may hold one label only")
    arr = np.asarray(classes)
    if arr.dtype.kind == "O":
        arr = _object_targets(arr)
    if arr.ndim != 1 or arr.shape[0] != 2 or arr[0] == arr[1]:
        raise ValueError(f"classes must hold exactly 2 distinct labels, got {classes!r}")
    if arr.dtype.kind == "f":
        _check_finite_targets(arr)
    return np.sort(arr)


def encode_targets(y, n_samples, task, loss_name, classes):
    """check_targets for a chunk of a stream: binary labels encoded against the given classes
    (a chunk may hold one of them only; a label outside them is an error)."""
    if task == "regression":
        return check_targets(y, n_samples, task, loss_name)[0]
    arr = _target_array(y, n_samples)
    positive = arr == classes[1]
    unknown = ~(positive | (arr == classes[0]))
    if unknown.any():
        raise ValueError(f"y holds labels outside classes={list(classes)}: "
                         f"{sorted(set(np.asarray(arr)[unknown].tolist()))[:5]}")
    return np.where(positive, 1.0, -1.0)


def check_stream_weights(sample_weight, n_samples):
    """A chunk's sample weights as given (validated, copied): a stream cannot normalise them to
    mean 1 over data it has not seen, so they multiply each sample's gradient as they are."""
    if sample_weight is None:
        return np.ones(n_samples)
    check_sample_weight(sample_weight, n_samples)        # the same checks as train's
    arr = np.array(np.asarray(sample_weight), dtype=np.float64).ravel()
    return np.full(n_samples, arr[0]) if arr.shape[0] == 1 else arr
