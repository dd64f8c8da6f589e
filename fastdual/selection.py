"""Cross-validation and the regularization path, with warm starts, every model certified.

    path = fastdual.regularization_path(X, y, Cs=[0.01, 0.1, 1, 10], loss="logistic")
    scores = fastdual.cross_validate(X, y, n_folds=5, loss="logistic", C=1.0)

Folds come from the package's seeded generator (random_state), so the same seed gives the
same folds. Along a path of increasing C each training starts from the previous model (its duals for the
dual solvers, its coefficients for the primal ones), except with a solver that takes no warm
start (RDA, which solver="auto" may pick): each of its trainings starts cold.
"""
import numpy as np

from fastdual._api import train
from fastdual._validation import check_int, check_matrix, check_seed
from fastdual.losses import get_loss_spec
from fastdual.solvers import takes_warm_start


def regularization_path(X, y, Cs, **options):
    """Certified models for each C of Cs (sorted increasing, each warm-started from the
    previous one): a list of fastdual Models in that order."""
    Cs = sorted(float(C) for C in np.atleast_1d(Cs))
    if not Cs:
        raise ValueError("Cs must hold at least one value")
    if "alpha" in options or "C" in options or "warm_start" in options:
        raise ValueError("regularization_path sets C and warm_start itself")
    models, previous = [], None
    for C in Cs:
        # The solver that trained the previous model (solver="auto" resolved) says whether it
        # starts from one; auto's choice of a solver that does not depends on the loss, the
        # penalty's mix and the intercept, never on C, so the next training makes the same.
        warm = previous is not None and takes_warm_start(previous.solver)
        previous = train(X, y, C=C, warm_start=previous if warm else None, **options)
        models.append(previous)
    return models


def _folds(n, n_folds, seed):
    order = np.random.default_rng(seed).permutation(n)
    return [order[k::n_folds] for k in range(n_folds)]


def _score(model, X, y, regression):
    predicted = model.predict(X)
    if regression:
        return float(np.mean((predicted - y) ** 2))
    return float(np.mean(predicted == y))


def cross_validate(X, y, n_folds=5, random_state=0, Cs=None, **options):
    """n-fold cross-validation of fastdual.train(X, y, **options), or of every C of Cs (each
    fold's path warm-started). Returns a dict: "accuracy" (classification) or "mse"
    (regression), one mean per C (a single value without Cs), "per_fold" (folds x Cs) and, with
    Cs, "best_C"."""
    matrix = check_matrix(X)
    n = matrix.n_samples
    n_folds = check_int("n_folds", n_folds, 2)
    if n_folds > n:
        raise ValueError(f"n_folds={n_folds} is more than the {n} samples")
    y = np.asarray(y)
    regression = get_loss_spec(options.get("loss", "smooth_hinge")).task == "regression"
    seed = check_seed(random_state)
    X_rows = X.tocsr() if hasattr(X, "tocsr") else np.asarray(X)
    grid = [None] if Cs is None else sorted(float(C) for C in np.atleast_1d(Cs))
    per_fold = np.empty((n_folds, len(grid)))
    for f, test in enumerate(_folds(n, n_folds, seed)):
        keep = np.ones(n, dtype=bool)
        keep[test] = False
        X_train, y_train = X_rows[keep], y[keep]
        if Cs is None:
            models = [train(X_train, y_train, random_state=seed, **options)]
        else:
            models = regularization_path(X_train, y_train, grid, random_state=seed, **options)
        for c, model in enumerate(models):
            per_fold[f, c] = _score(model, X_rows[test], y[test], regression)
    means = per_fold.mean(axis=0)
    key = "mse" if regression else "accuracy"
    result = {key: float(means[0]) if Cs is None else means, "per_fold": per_fold}
    if Cs is not None:
        best = int(np.argmin(means) if regression else np.argmax(means))
        result["best_C"] = grid[best]
        result["Cs"] = np.array(grid)
    return result
