"""The trained linear model, independent of the solver that made it, and fastdual's own model
file: Model.save writes it, read_npz reads it back (fastdual.formats adds LIBLINEAR's files and
the `load` that reads either kind).

Files are NumPy .npz archives holding plain arrays plus a JSON metadata record with a format
version; they are read with allow_pickle=False, so loading a model never executes code.
"""
import json
import os
import reprlib

import numpy as np

from fastdual._validation import _first_nonfinite, check_matrix, feature_names
from fastdual.losses import LOSSES, make_loss

FORMAT_NAME = "fastdual.Model"
# 1: binary and regression models; 2: + an optional stream state (fastdual.OnlineRDA.save);
# 3: + k-class models. A file is written with the lowest version that holds it.
FORMAT_VERSION = 3
STREAM_PREFIX = "stream_"

_METADATA_FIELDS = [
    "loss", "loss_params", "task", "solver", "alpha", "l1_ratio", "l2_", "l1_", "l2_added_",
    "fit_intercept", "intercept_scaling", "intercept_mode", "primal_", "dual_", "gap_",
    "converged_", "n_epochs_", "history_", "tol", "n_features_in_",
]


class Model:
    """A linear model w . x + b with its certificate.

    Attributes: coef_, intercept_, classes_ (binary classification; None for regression),
    primal_, dual_, gap_ (>= P(coef_) - P*; primal_ - dual_ but for rounding, summed without
    cancellation), converged_, n_epochs_,
    history_ (one dict per check: epoch, seconds, primal, dual, gap, nnz), dual_coef_,
    l2_, l1_ (the strengths of the objective certified), l2_added_ (> 0 only for pure l1),
    intercept_mode ("regularized", "free" or "none"), feature_names_in_ (the column names of
    the pandas frame it was trained on, all strings, or None; predicting on a frame whose
    columns differ or come in another order is refused), stream_ (None, or the state of the
    fastdual.OnlineRDA that wrote the file: {"settings": dict, "arrays": dict}), switches_
    (solver="auto"'s switches from one method to the next: a list of dicts with epoch,
    from, to, solver, reason (stalled, handed over, a correction paid or undone) and
    relative_gap; empty when none happened).

    k > 2 classes (one-vs-rest): coef_ (k, n_features), intercept_ (k,), classes_ (k,),
    dual_coef_ (k, n_samples); primal_, dual_, gap_ certify the sum of the k binary objectives,
    and class_primal_, class_dual_, class_gap_, class_n_epochs_ (k,) hold each class's own.
    """

    def __init__(self, coef, intercept, classes, *, dual_coef=None, stream=None,
                 class_certificates=None, multiclass=None, switches=None, feature_names=None,
                 **metadata):
        self.stream_ = stream
        # the column names of the frame it was trained on (strings), or None: predicting on a
        # frame checks its columns against them
        self.feature_names_in_ = (None if feature_names is None
                                  else np.asarray(list(feature_names), dtype=object))
        # solver="auto"'s switches from a stalled method to the next, in order (each a dict:
        # epoch, from, to, solver, reason, relative_gap; with k classes one-vs-rest, also class)
        self.switches_ = [dict(s) for s in switches or ()]
        self.multiclass = multiclass      # None, "ovr", "crammer_singer" or "multinomial"
        self.coef_ = np.asarray(coef, dtype=np.float64)
        self.intercept_ = (float(intercept) if np.ndim(intercept) == 0
                           else np.asarray(intercept, dtype=np.float64))
        self.class_certificates_ = (None if class_certificates is None
                                    else np.asarray(class_certificates, dtype=np.float64))
        self.classes_ = None if classes is None else np.asarray(classes)
        self.dual_coef_ = None if dual_coef is None else np.asarray(dual_coef, dtype=np.float64)
        for key in _METADATA_FIELDS:
            setattr(self, key, metadata.get(key))

    def __repr__(self):
        gap = "n/a" if self.gap_ is None else f"{self.gap_:.3g}"
        return (f"Model(loss={self.loss!r}, n_features={self.coef_.shape[0]}, gap={gap}, "
                f"converged={self.converged_})")

    # -- prediction ----------------------------------------------------------------------------
    @property
    def class_primal_(self):
        return None if self.class_certificates_ is None else self.class_certificates_[:, 0]

    @property
    def class_dual_(self):
        return None if self.class_certificates_ is None else self.class_certificates_[:, 1]

    @property
    def class_gap_(self):
        return None if self.class_certificates_ is None else self.class_primal_ - self.class_dual_

    @property
    def class_n_epochs_(self):
        return (None if self.class_certificates_ is None
                else self.class_certificates_[:, 2].astype(np.int64))

    @property
    def relative_gap_(self):
        return self.gap_ / max(abs(self.primal_), np.finfo(float).tiny)

    def decision_function(self, X):
        """Scores x . w + b: (n,) for one coefficient vector, (n, k) for k classes."""
        names = getattr(self, "feature_names_in_", None)
        given = None if names is None else feature_names(X)
        if given is not None and (given.shape != names.shape or np.any(given != names)):
            raise ValueError(_name_mismatch(given, names))
        coef = np.asarray(self.coef_, dtype=np.float64)       # (a list set by hand, too)
        intercept = np.asarray(self.intercept_, dtype=np.float64)
        if coef.ndim not in (1, 2) or coef.size == 0:
            raise ValueError(f"the model's coef_ must be 1-D or 2-D and not empty, got shape "
                             f"{coef.shape}")
        if _first_nonfinite(coef.reshape(-1)) is not None or not np.isfinite(intercept).all():
            raise ValueError("the model's coef_ or intercept_ contains NaN or infinity")
        matrix = check_matrix(X, "X", n_features=coef.shape[-1])
        return matrix.matvec(coef.T) + intercept

    def predict(self, X):
        scores = self.decision_function(X)
        if self.classes_ is None:
            return scores
        if scores.ndim == 2:
            return self.classes_[np.argmax(scores, axis=1)]
        return self.classes_[(scores > 0).astype(np.intp)]

    @property
    def predict_proba(self):
        """Class probabilities [P(classes_[0]), P(classes_[1])]; logistic loss only.

        A property that raises AttributeError for other losses (scikit-learn's `available_if`), so
        that hasattr(model, "predict_proba") tells callers whether probabilities exist.
        """
        if self.loss != "logistic":
            raise AttributeError(f"predict_proba is available for loss='logistic' only, "
                                 f"this model was trained with loss={self.loss!r}")
        return self._predict_proba

    def _predict_proba(self, X):
        scores = self.decision_function(X)
        positive = np.exp(-np.logaddexp(0.0, -scores))   # sigmoid without overflow
        if scores.ndim == 2 and self.multiclass == "multinomial":
            return np.exp(scores - np.logaddexp.reduce(scores, axis=1, keepdims=True))
        if scores.ndim == 2:
            # One-vs-rest: each class's probability against the rest, normalised over classes.
            return positive / positive.sum(axis=1, keepdims=True)
        return np.column_stack([1.0 - positive, positive])

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path):
        """Write the model to `path` (an .npz archive; no suffix is added), after the checks
        `read_npz` makes, so that every file written can be read back."""
        metadata = {key: getattr(self, key) for key in _METADATA_FIELDS}
        metadata["format"] = FORMAT_NAME
        metadata["format_version"] = (3 if self.coef_.ndim == 2 else
                                      2 if self.stream_ is not None else 1)
        if self.multiclass is not None:
            metadata["multiclass"] = self.multiclass
        if self.switches_:               # written only when there are some: older files and
            metadata["switches"] = self.switches_    # readers know no such key
        if getattr(self, "feature_names_in_", None) is not None:          # (as switches)
            metadata["feature_names"] = [str(name) for name in self.feature_names_in_]
        arrays = {"coef": self.coef_, "intercept": np.array(self.intercept_),
                  "metadata": np.frombuffer(json.dumps(metadata).encode("utf-8"), dtype=np.uint8)}
        if self.classes_ is not None:
            classes = self.classes_
            if classes.dtype.kind == "O":
                raise ValueError("classes_ of object dtype cannot be saved without pickle")
            arrays["classes"] = classes
        if self.dual_coef_ is not None:
            arrays["dual_coef"] = self.dual_coef_
        if self.class_certificates_ is not None:
            arrays["class_certificates"] = self.class_certificates_
        if self.stream_ is not None:
            metadata["stream"] = self.stream_["settings"]
            for name, value in self.stream_["arrays"].items():
                arrays[STREAM_PREFIX + name] = np.asarray(value)
        arrays["metadata"] = np.frombuffer(json.dumps(metadata).encode("utf-8"), dtype=np.uint8)
        try:       # what read_npz would refuse is not written
            _check_model(dict(arrays))
        except ValueError as exc:
            raise ValueError(f"cannot save this model: {exc}") from None
        with open(path, "wb") as handle:
            np.savez(handle, **arrays)


def _name_mismatch(given, names):
    """What differs between X's column names and the model's, in a sentence."""
    if given.shape == names.shape and set(given) == set(names):
        return ("X has the model's feature names in another order: its columns must be in the "
                f"order the model was trained on, {reprlib.repr(list(names))}")
    unseen = [name for name in given if name not in set(names)]
    missing = [name for name in names if name not in set(given)]
    return (f"X's feature names differ from the model's: unseen {reprlib.repr(unseen)}, "
            f"missing {reprlib.repr(missing)}")


def read_npz(path):
    """Read a model file written by Model.save (fastdual.load reads any model file).

    Model files travel, so every part is checked: anything but a complete, consistent model is
    refused with a ValueError naming the file and saying what is wrong (the arrays' shapes and
    values; the metadata's kinds, the objective's numbers in the ranges fastdual.train accepts,
    the loss's parameters as the loss takes them, and the certificate's gap its primal minus its
    dual, or an uncertified stream's three NaN). Arrays are read with
    allow_pickle=False, so reading never executes code; a missing or unreadable file raises the
    usual OSError.
    """
    name = os.fspath(path)
    with open(path, "rb") as handle:
        try:
            arrays, metadata = _check_model(_read_arrays(handle))
        except ValueError as exc:
            raise ValueError(f"cannot load {name!r}: {exc}") from None
    stream = metadata.pop("stream", None)
    if stream is not None:
        stream = {"settings": stream,
                  "arrays": {key[len(STREAM_PREFIX):]: value for key, value in arrays.items()
                             if key.startswith(STREAM_PREFIX)}}
    intercept = arrays["intercept"]
    return Model(arrays["coef"], float(intercept) if intercept.ndim == 0 else intercept,
                 arrays.get("classes"), dual_coef=arrays.get("dual_coef"), stream=stream,
                 class_certificates=arrays.get("class_certificates"), **metadata)


_ARRAY_NAMES = ("coef", "intercept", "classes", "dual_coef", "class_certificates", "metadata")
# name -> number of dimensions for one coefficient vector, and for k classes
_FLOAT_ARRAYS = {"coef": (1, 2), "intercept": (0, 1), "dual_coef": (1, 2),
                 "class_certificates": (None, 2)}


def _read_arrays(handle):
    """The archive's arrays by name, or a ValueError saying why the file is not a readable .npz."""
    head = handle.read(6)
    if not head:
        raise ValueError("the file is empty")
    if head == b"\x93NUMPY":
        raise ValueError("it holds a single NumPy array (.npy), not a fastdual model archive")
    if not head.startswith(b"PK\x03\x04"):
        raise ValueError("it is not a fastdual model file (not an .npz archive)")
    handle.seek(0)
    try:
        with np.load(handle, allow_pickle=False) as archive:
            names = set(archive.files)
            arrays = {key: archive[key] for key in names
                      if key in _ARRAY_NAMES or key.startswith(STREAM_PREFIX)}
    except MemoryError:
        raise
    except Exception as exc:
        # A damaged archive fails in many exception types (zipfile, zlib, EOFError, numpy's header
        # checks); numpy's refusal of pickles names an argument load() does not have.
        if "allow_pickle" in str(exc):
            raise ValueError("it holds pickled objects, which fastdual never loads") from None
        raise ValueError(f"it is truncated or damaged ({type(exc).__name__}: {exc})") from None
    unknown = sorted(names - set(arrays))
    if unknown:
        raise ValueError(f"it holds unknown arrays {reprlib.repr(unknown)}")
    for key, value in arrays.items():
        if not isinstance(value, np.ndarray):
            raise ValueError(f"its member {key!r} is not a NumPy array")
    return arrays


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# What each metadata field must hold: (check, how to say it). fastdual.train sets every field and
# none to None (history_ may be an empty list), so no field is optional.
_KINDS = {
    "number": (_is_number, "a number"),
    "count": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
              "a non-negative integer"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "params": (lambda v: isinstance(v, dict) and all(map(_is_number, v.values())),
               "a JSON object of numbers"),
    "records": (lambda v: isinstance(v, list) and all(isinstance(r, dict) for r in v),
                "a list of JSON objects"),
    "loss": (lambda v: isinstance(v, str) and v in LOSSES, f"one of {sorted(LOSSES)}"),
    "task": (lambda v: v in ("binary", "regression", "multiclass"),
             "'binary', 'regression' or 'multiclass'"),
}
_METADATA_KINDS = {
    "loss": "loss", "loss_params": "params", "task": "task", "solver": "str", "alpha": "number",
    "l1_ratio": "number", "l2_": "number", "l1_": "number", "l2_added_": "number",
    "fit_intercept": "bool", "intercept_scaling": "number", "intercept_mode": "str",
    "primal_": "number", "dual_": "number", "gap_": "number", "converged_": "bool",
    "n_epochs_": "count", "history_": "records", "tol": "number", "n_features_in_": "count",
}


# The ranges of the objective's numbers: what fastdual.train accepts (and writes).
_RANGES = {
    "alpha": (lambda v: 0.0 < v < np.inf, "a positive finite number"),
    "l1_ratio": (lambda v: 0.0 <= v <= 1.0, "in [0, 1]"),
    "l2_": (lambda v: 0.0 <= v < np.inf, "finite and >= 0"),
    "l1_": (lambda v: 0.0 <= v < np.inf, "finite and >= 0"),
    "l2_added_": (lambda v: 0.0 <= v < np.inf, "finite and >= 0"),
    "intercept_scaling": (lambda v: 0.0 < v < np.inf, "a positive finite number"),
    "tol": (lambda v: 0.0 <= v < np.inf, "finite and >= 0"),
}
_INTERCEPT_MODES = ("none", "free", "regularized")


def _check_values(metadata):
    """The numbers of a model's metadata in their ranges and consistent with each other: the
    objective's strengths and options as fastdual.train accepts them, the loss's parameters as
    its loss takes them, and a certificate whose gap is its primal minus its dual (to rounding),
    or none at all (an uncertified stream: all three NaN)."""
    for key, (check, expected) in _RANGES.items():
        if not check(metadata[key]):
            raise ValueError(f"metadata {key} must be {expected}, got {metadata[key]!r}")
    mode = metadata["intercept_mode"]
    if mode not in _INTERCEPT_MODES:
        raise ValueError(f"metadata intercept_mode must be one of {list(_INTERCEPT_MODES)}, "
                         f"got {reprlib.repr(mode)}")
    if (mode == "none") == metadata["fit_intercept"]:
        raise ValueError(f"metadata intercept_mode {mode!r} contradicts fit_intercept "
                         f"{metadata['fit_intercept']}")
    try:
        make_loss(metadata["loss"], metadata["loss_params"],
                  structured=LOSSES[metadata["loss"]].structured)
    except (TypeError, ValueError) as error:
        raise ValueError(f"metadata loss_params: {error}") from None
    certificate = [metadata[key] for key in ("primal_", "dual_", "gap_")]
    if all(np.isnan(certificate)):
        return
    primal, dual, gap = certificate
    if any(np.isnan(certificate)):
        raise ValueError(f"metadata primal_, dual_ and gap_ must be numbers (or all NaN: no "
                         f"certificate), got {primal!r}, {dual!r}, {gap!r}")
    scale = max(abs(primal), abs(dual), np.finfo(float).tiny)
    if np.isfinite(scale) and not abs(gap - (primal - dual)) <= 1e-9 * scale:
        raise ValueError(f"metadata gap_ = {gap!r} is not primal_ - dual_ = "
                         f"{primal!r} - {dual!r}")


def _check_model(arrays):
    """(arrays, metadata fields) of a complete, consistent model, or a ValueError saying why not."""
    if "metadata" not in arrays:
        raise ValueError("it is not a fastdual model file (it has no metadata record)")
    try:
        metadata = json.loads(arrays.pop("metadata").tobytes().decode("utf-8"))
    except (ValueError, RecursionError):
        raise ValueError("its metadata record is not JSON") from None
    if not isinstance(metadata, dict):
        raise ValueError("its metadata record is not a JSON object")
    format_name = metadata.pop("format", None)
    if format_name != FORMAT_NAME:
        raise ValueError(f"it is not a fastdual model file (format {reprlib.repr(format_name)})")
    version = metadata.pop("format_version", None)
    if not _KINDS["count"][0](version) or version < 1:
        raise ValueError(f"its format_version must be a positive integer, "
                         f"got {reprlib.repr(version)}")
    if version > FORMAT_VERSION:
        raise ValueError(f"it has model format version {version}; this fastdual reads versions "
                         f"up to {FORMAT_VERSION}: upgrade fastdual")
    stream = metadata.pop("stream", None)
    multiclass = metadata.pop("multiclass", None)
    switches = metadata.pop("switches", None)
    names = metadata.pop("feature_names", None)
    if names is not None and not (isinstance(names, list)
                                  and all(isinstance(name, str) for name in names)
                                  and len(set(names)) == len(names)):
        raise ValueError(f"metadata feature_names must be a list of distinct strings, "
                         f"got {reprlib.repr(names)}")
    if switches is not None and not _KINDS["records"][0](switches):
        raise ValueError(f"metadata switches must be {_KINDS['records'][1]}, "
                         f"got {reprlib.repr(switches)}")
    stream_arrays = sorted(key for key in arrays if key.startswith(STREAM_PREFIX))
    if stream is not None and not (isinstance(stream, dict) and stream_arrays):
        raise ValueError("its stream state is incomplete (settings without arrays, or not a "
                         "JSON object)")
    if stream is None and stream_arrays:
        raise ValueError(f"it holds stream arrays {reprlib.repr(stream_arrays)} without their "
                         "settings")
    unknown = sorted(set(metadata) - set(_METADATA_FIELDS))
    if unknown:
        raise ValueError(f"its metadata has unknown keys {reprlib.repr(unknown)}")
    missing = [key for key in _METADATA_FIELDS if key not in metadata]
    if missing:
        raise ValueError(f"its metadata lacks the keys {missing}")
    for key in _METADATA_FIELDS:
        check, expected = _KINDS[_METADATA_KINDS[key]]
        value = metadata[key]
        if not check(value):
            raise ValueError(f"metadata {key} must be {expected}, got {reprlib.repr(value)}")
    loss, task = metadata["loss"], metadata["task"]
    if LOSSES[loss].task != ("binary" if task == "multiclass" else task):
        raise ValueError(f"loss {loss!r} is a {LOSSES[loss].task} loss, but task is {task!r}")
    _check_values(metadata)
    multi = task == "multiclass"
    if multi and version < 3:
        raise ValueError(f"it holds a k-class model but says format_version {version} (k-class "
                         "models are version 3)")
    if multiclass not in ((None,) if not multi else ("ovr", "crammer_singer", "multinomial")):
        raise ValueError(f"metadata multiclass must be "
                         f"{'absent' if not multi else 'ovr, crammer_singer or multinomial'} "
                         f"for task {task!r}, got {reprlib.repr(multiclass)}")

    missing = [key for key in ("coef", "intercept") if key not in arrays]
    if missing:
        raise ValueError(f"it lacks the arrays {missing}")
    for key, dims in _FLOAT_ARRAYS.items():
        array = arrays.get(key)
        ndim = dims[1] if multi else dims[0]
        if array is None:
            continue                  # dual_coef and class_certificates are optional
        if ndim is None or (key == "class_certificates" and multiclass != "ovr"):
            raise ValueError(f"it holds {key}, which only a one-vs-rest model has")
        if array.dtype.kind != "f":
            raise ValueError(f"{key} must hold floats, got dtype {array.dtype}")
        if array.ndim != ndim:
            raise ValueError(f"{key} must be {('a single number', '1-D', '2-D')[ndim]}, "
                             f"got shape {array.shape}")
        if array.size == 0:
            raise ValueError(f"{key} is empty")
        if not np.isfinite(array).all():
            raise ValueError(f"{key} contains NaN or infinity")
    if metadata["n_features_in_"] != arrays["coef"].shape[-1]:
        raise ValueError(f"metadata n_features_in_ is {metadata['n_features_in_']}, "
                         f"but coef has {arrays['coef'].shape[-1]} entries per class")
    classes = arrays.get("classes")
    if task == "regression" and classes is not None:
        raise ValueError("it holds classes, but a regression model has none")
    if task != "regression" and classes is None:
        raise ValueError(f"a {task} model needs its classes, the file has none")
    if classes is not None and classes.dtype.kind in "fc" and not np.isfinite(classes).all():
        raise ValueError("classes contains NaN or infinity")
    if task == "binary" and (classes.shape != (2,) or classes[0] == classes[1]):
        raise ValueError(f"a binary model has exactly 2 distinct classes, "
                         f"got {np.array2string(classes, threshold=6)}")
    if multi:
        k = arrays["coef"].shape[0]
        if (classes.ndim != 1 or classes.shape[0] != k or k < 3
                or np.unique(classes).shape[0] != k):
            raise ValueError(f"a k-class model has k >= 3 distinct classes, one per row of "
                             f"coef ({k}), got {np.array2string(classes, threshold=6)}")
        shapes = {"intercept": (k,)}
        if "class_certificates" in arrays:
            shapes["class_certificates"] = (k, 3)
        if "dual_coef" in arrays:
            shapes["dual_coef"] = (k, arrays["dual_coef"].shape[1])
        for key, shape in shapes.items():
            if arrays[key].shape != shape:
                raise ValueError(f"{key} must have shape {shape}, got {arrays[key].shape}")
    if stream is not None:
        metadata["stream"] = stream
    if multiclass is not None:
        metadata["multiclass"] = multiclass
    if switches is not None:
        metadata["switches"] = switches
    if names is not None:
        if len(names) != metadata["n_features_in_"]:
            raise ValueError(f"metadata feature_names has {len(names)} names for "
                             f"{metadata['n_features_in_']} features")
        metadata["feature_names"] = names
    return arrays, metadata
