"""The trained linear model, independent of the solver that made it, and its persistence.

Files are NumPy .npz archives holding plain arrays plus a JSON metadata record with a format
version; they are read with allow_pickle=False, so loading a model never executes code.
"""
import json

import numpy as np

from fastdual._validation import check_matrix

FORMAT_NAME = "fastdual.Model"
FORMAT_VERSION = 1

_METADATA_FIELDS = [
    "loss", "loss_params", "task", "solver", "alpha", "l1_ratio", "l2_", "l1_", "l2_added_",
    "fit_intercept", "intercept_scaling", "intercept_mode", "primal_", "dual_", "gap_",
    "converged_", "n_epochs_", "history_", "tol", "n_features_in_",
]


class Model:
    """A linear model w . x + b with its certificate.

    Attributes: coef_, intercept_, classes_ (binary classification; None for regression),
    primal_, dual_, gap_ (= primal_ - dual_ >= P(coef_) - P*), converged_, n_epochs_,
    history_ (one dict per check: epoch, seconds, primal, dual, gap, nnz), dual_coef_,
    l2_, l1_ (the strengths of the objective certified), l2_added_ (> 0 only for pure l1).
    """

    def __init__(self, coef, intercept, classes, *, dual_coef=None, **metadata):
        self.coef_ = np.asarray(coef, dtype=np.float64)
        self.intercept_ = float(intercept)
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
    def relative_gap_(self):
        return self.gap_ / max(abs(self.primal_), np.finfo(float).tiny)

    def decision_function(self, X):
        matrix = check_matrix(X, "X", n_features=self.coef_.shape[0])
        return matrix.matvec(self.coef_) + self.intercept_

    def predict(self, X):
        scores = self.decision_function(X)
        if self.classes_ is None:
            return scores
        return self.classes_[(scores > 0).astype(np.intp)]

    def predict_proba(self, X):
        """Class probabilities [P(classes_[0]), P(classes_[1])]; logistic loss only."""
        if self.loss != "logistic":
            raise AttributeError(f"predict_proba is available for loss='logistic' only, "
                                 f"this model was trained with loss={self.loss!r}")
        scores = self.decision_function(X)
        positive = np.exp(-np.logaddexp(0.0, -scores))   # sigmoid without overflow
        return np.column_stack([1.0 - positive, positive])

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path):
        """Write the model to `path` (an .npz archive; no suffix is added)."""
        metadata = {key: getattr(self, key) for key in _METADATA_FIELDS}
        metadata["format"] = FORMAT_NAME
        metadata["format_version"] = FORMAT_VERSION
        arrays = {"coef": self.coef_, "intercept": np.array(self.intercept_),
                  "metadata": np.frombuffer(json.dumps(metadata).encode("utf-8"), dtype=np.uint8)}
        if self.classes_ is not None:
            classes = self.classes_
            if classes.dtype.kind == "O":
                raise ValueError("classes_ of object dtype cannot be saved without pickle")
            arrays["classes"] = classes
        if self.dual_coef_ is not None:
            arrays["dual_coef"] = self.dual_coef_
        with open(path, "wb") as handle:
            np.savez(handle, **arrays)


def load(path):
    """Read a model written by Model.save (never unpickles)."""
    with np.load(path, allow_pickle=False) as archive:
        try:
            metadata = json.loads(archive["metadata"].tobytes().decode("utf-8"))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"{path!r} is not a fastdual model file: {exc}") from None
        if metadata.get("format") != FORMAT_NAME:
            raise ValueError(f"{path!r} is not a fastdual model file")
        version = metadata.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise ValueError(f"{path!r} has model format version {version!r}; this fastdual reads "
                             f"versions up to {FORMAT_VERSION}: upgrade fastdual")
        classes = archive["classes"] if "classes" in archive.files else None
        dual_coef = archive["dual_coef"] if "dual_coef" in archive.files else None
        return Model(archive["coef"], float(archive["intercept"]), classes, dual_coef=dual_coef,
                     **{key: metadata.get(key) for key in _METADATA_FIELDS})
