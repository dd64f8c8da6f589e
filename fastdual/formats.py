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

from fastdual._core.text import format_rows
from fastdual._problem import describe_objective
from fastdual.losses import LOSSES
from fastdual.model import Model, read_npz

# fastdual's (loss, multiclass) -> LIBLINEAR's solver name (the dual solvers; l1 the primal)
SOLVER_NAMES = {("logistic", None): "L2R_LR_DUAL", ("squared_hinge", None): "L2R_L2LOSS_SVC_DUAL",
                ("hinge", None): "L2R_L1LOSS_SVC_DUAL", ("hinge", "crammer_singer"): "MCSVM_CS",
                ("epsilon_insensitive", None): "L2R_L1LOSS_SVR_DUAL",
                ("squared", None): "L2R_L2LOSS_SVR_DUAL",
                ("squared_epsilon_insensitive", None): "L2R_L2LOSS_SVR_DUAL"}
L1_SOLVER_NAMES = {"logistic": "L1R_LR", "squared_hinge": "L1R_L2LOSS_SVC"}
# LIBLINEAR's solver name -> fastdual's loss (what a loaded model reports; the SVR types with
# epsilon 0.1, LIBLINEAR's default -p: the file holds no p, as it holds no C)
LIBLINEAR_LOSSES = {"L2R_LR": "logistic", "L2R_LR_DUAL": "logistic", "L1R_LR": "logistic",
                    "L2R_L2LOSS_SVC": "squared_hinge", "L2R_L2LOSS_SVC_DUAL": "squared_hinge",
                    "L1R_L2LOSS_SVC": "squared_hinge", "L2R_L1LOSS_SVC_DUAL": "hinge",
                    "MCSVM_CS": "hinge", "L2R_L2LOSS_SVR": "squared_epsilon_insensitive",
                    "L2R_L2LOSS_SVR_DUAL": "squared_epsilon_insensitive",
                    "L2R_L1LOSS_SVR_DUAL": "epsilon_insensitive"}


def save_liblinear(model, path):
    """Write a fastdual Model in LIBLINEAR's text format (binary, one-vs-rest, Crammer-Singer
    or regression; integral class labels)."""
    if model.loss in ("smooth_hinge", "absolute") or model.multiclass == "multinomial":
        raise ValueError(f"LIBLINEAR has no solver for loss={model.loss!r}"
                         f"{' (multinomial)' if model.multiclass == 'multinomial' else ''}; "
                         "save it with Model.save (fastdual's format)")
    if model.l1_ratio > 0.0 and model.loss not in L1_SOLVER_NAMES:
        raise ValueError(f"LIBLINEAR's l1-regularized solvers train {sorted(L1_SOLVER_NAMES)} "
                         f"only, not loss={model.loss!r}; save it with Model.save")
    if 0.0 < model.l1_ratio < 1.0:
        raise ValueError("LIBLINEAR has no elastic-net solver; save it with Model.save")
    if model.l1_ratio == 1.0 and model.loss in L1_SOLVER_NAMES:
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
    intercept = np.atleast_1d(model.intercept_)
    d = coef.shape[1]
    lines = [f"solver_type {name}"]
    if model.classes_ is None:
        lines.append("nr_class 2")
    else:
        labels = liblinear_labels(model)
        if coef.shape[0] == 1:
            # LIBLINEAR's first label is the one a positive decision means.
            if labels[0] != model.classes_[1]:
                coef, intercept = -coef, -intercept
        else:
            order = [int(np.flatnonzero(model.classes_ == label)[0]) for label in labels]
            coef, intercept = coef[order], intercept[order]
        lines += [f"nr_class {len(labels)}", "label " + " ".join(str(v) for v in labels)]
    bias = model.intercept_scaling if model.fit_intercept else -1.0
    lines += [f"nr_feature {d}", f"bias {bias:.17g}", "w"]
    # a line a feature (the intercept's last), each weight "%.17g " as LIBLINEAR's save_model
    weights = coef.T
    if model.fit_intercept:
        weights = np.vstack([weights, intercept / model.intercept_scaling])
    with open(path, "wb") as handle:
        handle.write(("\n".join(lines) + "\n").encode())
        handle.write(format_rows(np.ascontiguousarray(weights, dtype=np.float64)))


def is_liblinear_file(path):
    """Whether the file begins as LIBLINEAR's save_model begins a model file."""
    with open(path, "rb") as handle:
        return handle.read(12) == b"solver_type "


def liblinear_labels(model):
    """The order of the labels in the LIBLINEAR model file of a classifier: the file's own for
    a model read from one (load_liblinear keeps it), else LIBLINEAR's for its training data
    sorted (two classes: the one a positive decision means first, as LIBLINEAR puts +1 before
    -1; k classes: ascending). `fastdual predict -b 1` writes its columns in this order."""
    classes = model.classes_
    try:
        labels = np.asarray(classes, dtype=np.float64)
    except (TypeError, ValueError):
        labels = np.array([np.nan])
    if not np.all(np.isfinite(labels)) or not np.all(labels == np.round(labels)) \
            or not np.all(np.abs(labels) <= _INT_MAX):
        raise ValueError(f"LIBLINEAR's labels are integers (C int), got classes "
                         f"{classes.tolist()[:5]}")
    labels = labels.astype(np.int64)
    kept = getattr(model, "liblinear_labels_", None)
    if kept is not None and sorted(kept) == sorted(labels.tolist()):
        return [int(v) for v in kept]
    return [int(v) for v in (labels[::-1] if np.ndim(model.coef_) == 1 else labels)]


_INT_MAX = 2 ** 31 - 1
REGRESSION_SOLVERS = ("L2R_L2LOSS_SVR", "L2R_L2LOSS_SVR_DUAL", "L2R_L1LOSS_SVR_DUAL")


def load_liblinear(path):
    """A Model from a LIBLINEAR model file (for prediction; it carries no certificate: its
    primal_, dual_ and gap_ are NaN, fastdual.duality_gap certifies it on data).

    The classes come in fastdual's order, sorted as a model fastdual trains has them, whatever
    order the file's label line has (LIBLINEAR's is the order of first appearance in its
    training data): a two-class model's coefficients are negated when the file's first label
    (the one its positive decision means) is the smaller, k rows are permuted. So
    duality_gap pairs each label with its own row and sign. The file's order is kept as
    `liblinear_labels_`, and save_liblinear writes it back in that order.

    The file holds neither C nor -p: the model's strength (alpha) is NaN and a regression
    model reports epsilon 0.1, LIBLINEAR's default -p; give both to duality_gap. A bias of 0
    is LIBLINEAR's feature of value 0, i.e. no intercept.
    """
    name = os.fspath(path)
    header, weights = {}, []
    try:
        with open(path, encoding="ascii") as handle:
            for number, line in enumerate(handle, start=1):
                parts = line.split()
                if not parts:
                    continue
                if parts[0] == "w" and len(parts) == 1:
                    weights = [row.split() for row in handle if row.strip()]
                    break
                if parts[0] not in ("solver_type", "nr_class", "label", "nr_feature", "bias",
                                    "rho"):
                    raise ValueError(f"cannot load {name!r}: line {number} is not a LIBLINEAR "
                                     f"model header line ({line.strip()[:40]!r})")
                header[parts[0]] = parts[1:]
    except UnicodeDecodeError as exc:
        raise ValueError(f"cannot load {name!r}: a LIBLINEAR model file is ASCII text, this one "
                         f"has the byte {exc.object[exc.start:exc.start + 1]!r} at offset "
                         f"{exc.start} of a line") from None
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
    if (labels is None) != (solver in REGRESSION_SOLVERS):
        raise ValueError(f"cannot load {name!r}: solver_type {solver} is "
                         f"{'a regression' if solver in REGRESSION_SOLVERS else 'a classifier'}"
                         f", but the file {'has a' if labels is not None else 'has no'} label "
                         "line")
    if labels is not None:
        if len(labels) != k or len(set(labels)) != k:
            raise ValueError(f"cannot load {name!r}: nr_class {k} but the label line holds "
                             f"{len(labels)} labels, {len(set(labels))} distinct")
        if k < 2:
            raise ValueError(f"cannot load {name!r}: a model of one class (nr_class {k}: its "
                             f"training data had the one label {labels}) predicts that label "
                             "whatever the input; fastdual's models have two classes or more")
        if any(abs(v) > _INT_MAX for v in labels):
            raise ValueError(f"cannot load {name!r}: LIBLINEAR's labels are C ints, the label "
                             f"line holds {labels}")
    if not (np.isfinite(bias) and d >= 0):
        raise ValueError(f"cannot load {name!r}: bias {bias!r} and nr_feature {d} must be "
                         "finite and nr_feature >= 0")
    nr_w = 1 if (k == 2 and solver != "MCSVM_CS") or labels is None else k
    rows = d + (1 if bias >= 0 else 0)
    if w.ndim != 2 or w.shape != (rows, nr_w) or not np.all(np.isfinite(w)):
        raise ValueError(f"cannot load {name!r}: expected {rows} weight rows of {nr_w} numbers")
    coef = w[:d].T
    fit_intercept = bias > 0        # bias 0: LIBLINEAR's feature of value 0, no intercept
    intercept = w[d] * bias if fit_intercept else np.zeros(nr_w)
    if not np.all(np.isfinite(intercept)):
        raise ValueError(f"cannot load {name!r}: bias {bias:g} times its weight overflows")
    loss = LIBLINEAR_LOSSES[solver]
    task = "regression" if labels is None else "binary" if nr_w == 1 else "multiclass"
    # (the strength is not in the file: alpha, l2_ and l1_ are NaN)
    metadata = dict(solver="liblinear:" + solver, l2_added_=0.0, primal_=float("nan"),
                    dual_=float("nan"), gap_=float("nan"), converged_=False, n_epochs_=0,
                    history_=[], tol=0.0, **describe_objective(
                        loss, {"epsilon": 0.1} if "epsilon" in LOSSES[loss].params else {},
                        task, float("nan"), 1.0 if solver.startswith("L1R") else 0.0,
                        fit_intercept, bias if fit_intercept else 1.0, False, d))
    if labels is None:
        return Model(coef[0], float(intercept[0]), None, **metadata)
    if nr_w == 1:
        # A positive decision means labels[0]: fastdual's +1 class is classes_[1], the larger.
        sign = 1.0 if labels[0] > labels[1] else -1.0
        model = Model(sign * coef[0], sign * float(intercept[0]), np.array(sorted(labels)),
                      **metadata)
    else:
        order = np.argsort(labels, kind="stable")
        model = Model(coef[order], intercept[order], np.array(labels)[order],
                      multiclass="crammer_singer" if solver == "MCSVM_CS" else "ovr",
                      **metadata)
    model.liblinear_labels_ = list(labels)
    return model


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
