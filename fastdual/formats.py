"""Model files of both kinds: `load` reads either (fastdual's .npz through fastdual.model.read_npz,
or LIBLINEAR's text model file), and LIBLINEAR's files are written and read both ways here.

    fastdual.formats.save_liblinear(model, "a9a.model")   # LIBLINEAR's load_model reads it
    model = fastdual.load("a9a.model")                    # a model written by LIBLINEAR's train

The format (LIBLINEAR's save_model): `solver_type NAME`, `nr_class k`, `label l_1 ... l_k`
(classification), `nr_feature d`, `bias b` (b < 0: no bias feature), then `w` and one line per
feature (and one for the bias feature when b >= 0) holding nr_w numbers: 1 for two classes
(decision > 0 means label l_1) and for regression, k otherwise (the decision is the argmax).
LIBLINEAR's labels are integers; fastdual writes a model whose classes are integral numbers.
"""
import os

import numpy as np

from fastdual._problem import describe_objective
from fastdual.model import Model, read_npz

# fastdual's (loss, multiclass) -> LIBLINEAR's solver name (the dual solvers; l1 the primal)
SOLVER_NAMES = {("logistic", None): "L2R_LR_DUAL", ("squared_hinge", None): "L2R_L2LOSS_SVC_DUAL",
                ("hinge", None): "L2R_L1LOSS_SVC_DUAL", ("hinge", "crammer_singer"): "MCSVM_CS",
                ("epsilon_insensitive", None): "L2R_L1LOSS_SVR_DUAL",
                ("squared", None): "L2R_L2LOSS_SVR_DUAL"}
L1_SOLVER_NAMES = {"logistic": "L1R_LR", "squared_hinge": "L1R_L2LOSS_SVC"}
# LIBLINEAR's solver name -> fastdual's loss (what a loaded model reports)
LIBLINEAR_LOSSES = {"L2R_LR": "logistic", "L2R_LR_DUAL": "logistic", "L1R_LR": "logistic",
                    "L2R_L2LOSS_SVC": "squared_hinge", "L2R_L2LOSS_SVC_DUAL": "squared_hinge",
                    "L1R_L2LOSS_SVC": "squared_hinge", "L2R_L1LOSS_SVC_DUAL": "hinge",
                    "MCSVM_CS": "hinge", "L2R_L2LOSS_SVR": "squared",
                    "L2R_L2LOSS_SVR_DUAL": "squared", "L2R_L1LOSS_SVR_DUAL": "epsilon_insensitive"}


def save_liblinear(model, path):
    """Write a fastdual Model in LIBLINEAR's text format (binary, one-vs-rest, Crammer-Singer
    or regression; integral class labels)."""
    if model.loss in ("smooth_hinge", "absolute") or model.multiclass == "multinomial":
        raise ValueError(f"LIBLINEAR has no solver for loss={model.loss!r}"
                         f"{' (multinomial)' if model.multiclass == 'multinomial' else ''}; "
                         "save it with Model.save (fastdual's format)")
    if model.l1_ and model.l2_ and model.loss in L1_SOLVER_NAMES:
        raise ValueError("LIBLINEAR has no elastic-net solver; save it with Model.save")
    if model.l1_ and model.loss in L1_SOLVER_NAMES:
        name = L1_SOLVER_NAMES[model.loss]
    else:
        name = SOLVER_NAMES.get((model.loss, model.multiclass if model.multiclass != "ovr"
                                 else None))
    if name is None:
        raise ValueError(f"LIBLINEAR has no solver for loss={model.loss!r} with "
                         f"multiclass={model.multiclass!r}")
    if model.intercept_mode == "free":
        raise ValueError("LIBLINEAR's bias is a regularised feature; a model with a free "
                         "intercept has no LIBLINEAR equivalent")
    coef = np.atleast_2d(model.coef_)
    d = coef.shape[1]
    lines = [f"solver_type {name}"]
    classes = model.classes_
    if classes is None:
        lines.append("nr_class 2")
        columns = coef.T
    else:
        try:
            labels = np.asarray(classes, dtype=np.float64)
        except (TypeError, ValueError):
            labels = np.array([np.nan])
        if not np.all(np.isfinite(labels)) or not np.all(labels == np.round(labels)):
            raise ValueError(f"LIBLINEAR's labels are integers, got classes "
                             f"{classes.tolist()[:5]}")
        labels = labels.astype(np.int64)
        if coef.shape[0] == 1:
            # LIBLINEAR's first label is the one a positive decision means: fastdual's +1.
            labels = labels[::-1]
        lines += [f"nr_class {len(labels)}", "label " + " ".join(str(v) for v in labels)]
        columns = coef.T
    bias = model.intercept_scaling if model.fit_intercept else -1.0
    lines += [f"nr_feature {d}", f"bias {bias:.17g}", "w"]
    rows = [columns[j] for j in range(d)]
    if model.fit_intercept:
        rows.append(np.atleast_1d(model.intercept_) / model.intercept_scaling)
    lines += [" ".join(f"{v:.17g}" for v in row) + " " for row in rows]
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")


def is_liblinear_file(path):
    """Whether the file begins as LIBLINEAR's save_model begins a model file."""
    with open(path, "rb") as handle:
        return handle.read(12) == b"solver_type "


def load_liblinear(path):
    """A Model from a LIBLINEAR model file (for prediction; it carries no certificate: its
    primal_, dual_ and gap_ are NaN, fastdual.duality_gap certifies it on data)."""
    name = os.fspath(path)
    header, weights = {}, []
    with open(path) as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "w" and len(parts) == 1:
                weights = [row.split() for row in handle if row.strip()]
                break
            if parts[0] not in ("solver_type", "nr_class", "label", "nr_feature", "bias", "rho"):
                raise ValueError(f"cannot load {name!r}: line {number} is not a LIBLINEAR model "
                                 f"header line ({line.strip()[:40]!r})")
            header[parts[0]] = parts[1:]
    try:
        solver = header["solver_type"][0]
        k = int(header["nr_class"][0])
        d = int(header["nr_feature"][0])
        bias = float(header["bias"][0])
        labels = [int(v) for v in header["label"]] if "label" in header else None
        w = np.array(weights, dtype=np.float64)
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(f"cannot load {name!r}: an incomplete or malformed LIBLINEAR model "
                         f"({type(exc).__name__}: {exc})") from None
    if solver not in LIBLINEAR_LOSSES:
        raise ValueError(f"cannot load {name!r}: solver_type {solver!r} is not one fastdual "
                         f"reads ({sorted(LIBLINEAR_LOSSES)})")
    nr_w = 1 if (k == 2 and solver != "MCSVM_CS") or labels is None else k
    rows = d + (1 if bias >= 0 else 0)
    if w.ndim != 2 or w.shape != (rows, nr_w) or not np.all(np.isfinite(w)):
        raise ValueError(f"cannot load {name!r}: expected {rows} weight rows of {nr_w} numbers")
    coef = w[:d].T
    intercept = w[d] * bias if bias >= 0 else np.zeros(nr_w)
    loss = LIBLINEAR_LOSSES[solver]
    task = "regression" if labels is None else "binary" if nr_w == 1 else "multiclass"
    # (the strength is not in the file: alpha, l2_ and l1_ are NaN)
    metadata = dict(solver="liblinear:" + solver, l2_added_=0.0, primal_=float("nan"),
                    dual_=float("nan"), gap_=float("nan"), converged_=False, n_epochs_=0,
                    history_=[], tol=0.0, **describe_objective(
                        loss, {"epsilon": 0.1} if loss == "epsilon_insensitive" else {}, task,
                        float("nan"), 1.0 if solver.startswith("L1R") else 0.0, bias >= 0,
                        bias if bias >= 0 else 1.0, False, d))
    if labels is None:
        return Model(coef[0], float(intercept[0]), None, **metadata)
    if nr_w == 1:
        # A positive decision means labels[0]: fastdual's classes_[1] is the +1 class.
        return Model(coef[0], float(intercept[0]), np.array([labels[1], labels[0]]),
                     **metadata)
    return Model(coef, intercept, np.array(labels),
                 multiclass="crammer_singer" if solver == "MCSVM_CS" else "ovr", **metadata)


def load(path):
    """Read a model written by Model.save, or a LIBLINEAR text model file (for prediction; see
    load_liblinear).

    Model files travel, so every part is checked: anything but a complete, consistent model is
    refused with a ValueError naming the file and saying what is wrong. Arrays are read with
    allow_pickle=False, so loading never executes code.
    """
    path = os.fspath(path)
    # Opening is not translated: a missing or unreadable file raises the usual OSError
    # (FileNotFoundError, PermissionError, ...), which is what Python users expect.
    if is_liblinear_file(path):
        return load_liblinear(path)
    return read_npz(path)
