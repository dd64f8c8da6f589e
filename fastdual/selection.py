"""Cross-validation and the regularization paths, with warm starts, every model certified.

    models = fastdual.regularization_path(X, y, Cs=[0.01, 0.1, 1, 10], loss="logistic")
    path = fastdual.path(X, y, loss="squared", l1_ratio=1.0, n_alphas=100)
    scores = fastdual.cross_validate(X, y, n_folds=5, loss="logistic", C=1.0)
    scores = fastdual.cross_validate(X, y, loss="squared", alphas="auto")

regularization_path walks a grid in C (LIBLINEAR's); path walks a decreasing grid in alpha
from alpha_max, the smallest alpha at which w = 0 is optimal (fastdual.alpha_max, docs/math.md
Sec. 7), for sparse models (docs/sparse.md). Folds come from the package's seeded generator
(random_state), so the same seed gives the same folds, or are given as (train, test) pairs.
Along either path each training starts from the previous model (its duals for the dual
solvers, its coefficients for the primal ones), except with a solver that takes no warm start
(RDA, which solver="auto" may pick): each of its trainings starts cold.
"""
import numbers
from dataclasses import dataclass

import numpy as np

from fastdual._api import train, weigh_classes
from fastdual._core import rows as _rows
from fastdual._defaults import DEFAULTS
from fastdual._multiclass import class_problems
from fastdual._problem import build_problem
from fastdual._validation import (check_fraction, check_int, check_labels, check_matrix,
                                  check_seed)
from fastdual.losses import get_loss_spec
from fastdual.model import Model
from fastdual.solvers import SOLVERS, takes_warm_start


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


def _score(model, X, y, regression, weights=None):
    """The mean squared error or the accuracy on (X, y), weighted by the samples' weights when
    given (a weight k counts as the row repeated k times, as in training)."""
    predicted = model.predict(X)
    errors = (predicted - y) ** 2 if regression else (predicted == y)
    if weights is None:
        return float(np.mean(errors))
    total = float(np.sum(weights))
    if not total > 0.0:
        raise ValueError("a fold's test rows all have sample_weight 0: nothing to score them by")
    return float(np.dot(weights, errors) / total)


def _check_folds(folds, n):
    """A list of (train, test) index arrays (scikit-learn's splitter output, e.g.
    list(KFold(5).split(X))), checked against the n samples."""
    checked = []
    for k, fold in enumerate(folds):
        try:
            train_rows, test_rows = fold
        except (TypeError, ValueError):
            raise ValueError(f"folds must be (train, test) pairs of index arrays, got "
                             f"{fold!r} at folds[{k}]") from None
        pair = []
        for name, rows in (("train", train_rows), ("test", test_rows)):
            rows = np.asarray(rows)
            if rows.dtype == bool and rows.shape == (n,):
                rows = np.flatnonzero(rows)
            if (rows.ndim != 1 or rows.shape[0] == 0 or rows.dtype.kind not in "iu"
                    or rows.min() < 0 or rows.max() >= n):
                raise ValueError(f"folds[{k}]'s {name} indices must be a non-empty 1-D array "
                                 f"of integers in [0, {n})")
            pair.append(rows)
        checked.append(tuple(pair))
    if len(checked) < 2:
        raise ValueError(f"folds must hold at least two (train, test) pairs, got {len(checked)}")
    return checked


def cross_validate(X, y, n_folds=5, random_state=0, Cs=None, alphas=None, folds=None,
                   **options):
    """n-fold cross-validation of fastdual.train(X, y, **options), of every C of Cs (each
    fold's path warm-started, fastdual.regularization_path) or of every alpha of a decreasing
    grid (each fold's fastdual.path: alphas "auto" is path's grid from alpha_max of all the
    data, n_alphas and eps among the options, or an array; solver "cd" unless given).

    folds: (train, test) index pairs to use instead of n_folds seeded folds (e.g.
    list(sklearn.model_selection.KFold(5).split(X))). Returns a dict: "accuracy"
    (classification) or "mse" (regression), one mean per C or alpha (a single value without
    either), "std" (the folds' standard deviation), "per_fold" (folds x grid) and, with a grid,
    "best_C" and "Cs", or "best_alpha", "alpha_1se" (the largest alpha whose mean is within
    one standard error of the best's) and "alphas"."""
    matrix = check_matrix(X)
    n = matrix.n_samples
    if Cs is not None and alphas is not None:
        raise ValueError("give Cs (regularization_path's grid) or alphas (path's), not both")
    if folds is None:
        n_folds = check_int("n_folds", n_folds, 2)
        if n_folds > n:
            raise ValueError(f"n_folds={n_folds} is more than the {n} samples")
        seed = check_seed(random_state)
        splits = []
        for test in _folds(n, n_folds, seed):
            keep = np.ones(n, dtype=bool)
            keep[test] = False
            splits.append((np.flatnonzero(keep), test))
    else:
        seed = check_seed(random_state)
        splits = _check_folds(folds, n)
    y = np.asarray(y)
    loss = options.pop("loss", DEFAULTS["loss"])
    regression = get_loss_spec(loss).task == "regression"
    if alphas is not None:
        grid = _alpha_grid_of(X, y, alphas, loss, options)
    else:
        grid = [None] if Cs is None else sorted(float(C) for C in np.atleast_1d(Cs))
    per_fold = np.empty((len(splits), len(grid)))
    for f, (train_rows, test_rows) in enumerate(splits):
        X_train, y_train = matrix.take_rows(train_rows), y[train_rows]
        weights = _fold_weights(options, train_rows)
        if alphas is not None:
            models = path(X_train, y_train, loss=loss, alphas=grid, random_state=seed,
                          **weights).models
        elif Cs is None:
            models = [train(X_train, y_train, loss=loss, random_state=seed, **weights)]
        else:
            models = regularization_path(X_train, y_train, grid, loss=loss, random_state=seed,
                                         **weights)
        test_weights = _test_weights(options, test_rows)
        X_test = matrix.take_rows(test_rows)
        for c, model in enumerate(models):
            per_fold[f, c] = _score(model, X_test, y[test_rows], regression, test_weights)
    means = per_fold.mean(axis=0)
    spread = per_fold.std(axis=0)
    key = "mse" if regression else "accuracy"
    single = Cs is None and alphas is None
    result = {key: float(means[0]) if single else means,
              "std": float(spread[0]) if single else spread, "per_fold": per_fold}
    if single:
        return result
    best = int(np.argmin(means) if regression else np.argmax(means))
    if Cs is not None:
        result["best_C"] = grid[best]
        result["Cs"] = np.array(grid)
        return result
    # the one-standard-error rule (glmnet's lambda.1se): the largest alpha (the sparsest
    # model) whose mean score is within one standard error of the best mean
    error = spread[best] / np.sqrt(len(splits))
    within = (means <= means[best] + error) if regression else (means >= means[best] - error)
    result["best_alpha"] = float(grid[best])
    result["alpha_1se"] = float(grid[int(np.argmax(within))])
    result["alphas"] = grid
    return result


def _test_weights(options, test_rows):
    """The sample weights of a fold's test rows (None: unweighted)."""
    weights = options.get("sample_weight")
    if weights is None:
        return None
    weights = np.asarray(weights, dtype=np.float64)
    return None if weights.ndim == 0 else weights[test_rows]


def _fold_weights(options, train_rows):
    """The training options of one fold: sample_weight restricted to its training rows."""
    weights = options.get("sample_weight")
    if weights is None or np.ndim(weights) == 0:
        return options
    return dict(options, sample_weight=np.asarray(weights)[train_rows])


def _alpha_grid_of(X, y, alphas, loss, options):
    """The decreasing alphas of a cross-validation: given, or path's grid on all the data
    ("auto"; n_alphas and eps taken out of the options)."""
    n_alphas = options.pop("n_alphas", 100)
    eps = options.pop("eps", 1e-3)
    options.setdefault("solver", "cd")
    if isinstance(alphas, str):
        if alphas != "auto":
            raise ValueError(f"alphas must be 'auto' or a decreasing array of positive "
                             f"numbers, got {alphas!r}")
        objective = {name: options[name] for name in
                     ("l1_ratio", "fit_intercept", "intercept_scaling", "regularize_intercept",
                      "sample_weight", "class_weight") if name in options}
        objective.update({name: options[name] for name in get_loss_spec(loss).params
                          if name in options})
        return alpha_grid(X, y, n_alphas=n_alphas, eps=eps, loss=loss, **objective)
    return _check_alphas(alphas)


# -- the regularization path in alpha (sparse models) --------------------------------------------

@dataclass
class Path:
    """The certified models along a decreasing grid of alphas (fastdual.path).

    alphas (decreasing); coefs: (n_features, n_alphas), (k, n_features, n_alphas) for k classes
    one-vs-rest, as scikit-learn's enet_path; intercepts: (n_alphas,) or (k, n_alphas); gaps
    (absolute duality gaps), relative_gaps, nnz (nonzero coefficients), epochs (passes over the
    data of each training); models (the fastdual Models). `alphas, coefs, gaps = path` unpacks
    like scikit-learn's enet_path's (alphas, coefs, dual_gaps)."""
    alphas: np.ndarray
    coefs: np.ndarray
    intercepts: np.ndarray
    gaps: np.ndarray
    relative_gaps: np.ndarray
    nnz: np.ndarray
    epochs: np.ndarray
    models: list
    l1_ratio: float
    loss: str

    def __iter__(self):
        return iter((self.alphas, self.coefs, self.gaps))

    def __repr__(self):
        return (f"Path(loss={self.loss!r}, l1_ratio={self.l1_ratio:g}, {self.alphas.shape[0]} "
                f"alphas from {self.alphas[0]:.4g} to {self.alphas[-1]:.4g}, nnz "
                f"{int(self.nnz[0])} to {int(self.nnz[-1])}, largest relative gap "
                f"{float(np.max(self.relative_gaps)):.3g})")


def _objective_problems(X, y, loss, l1_ratio, fit_intercept, intercept_scaling,
                        regularize_intercept, sample_weight, class_weight, loss_params):
    """(problems, classes): the binary or regression problem of the objective, or one per class
    one-vs-rest for k > 2 classes, at alpha = 1 (alpha_max needs everything but the strength);
    classes None for regression."""
    objective = dict(loss=loss, alpha=1.0, C=None, l1_ratio=l1_ratio,
                     fit_intercept=fit_intercept, intercept_scaling=intercept_scaling,
                     sample_weight=sample_weight, loss_params=loss_params,
                     regularize_intercept=regularize_intercept)
    spec = get_loss_spec(loss)
    if spec.structured:
        raise ValueError(f"loss={loss!r} is a risk over the whole labeling: it has no "
                         "regularization path")
    matrix = check_matrix(X)
    if spec.task == "binary":
        classes, index = check_labels(y, matrix.n_samples)
        if class_weight is not None:
            objective["sample_weight"] = weigh_classes(class_weight, classes, index,
                                                       sample_weight)
        if classes.shape[0] > 2:
            return class_problems(matrix, classes, index, objective), classes
    elif class_weight is not None:
        raise ValueError(f"class_weight is for classification; loss={loss!r} is a regression "
                         "loss")
    problem = build_problem(matrix, y, **objective)
    return [problem], problem.classes


def _null_model(problems, classes, loss):
    """The solution at alpha_max, w = 0 and the free intercept b* (docs/math.md), as a Model
    to warm-start the path's first training from (k classes: one-vs-rest's)."""
    d = problems[0].n_features
    intercepts = [problem.bias * _free_intercept(problem) if problem.free_intercept else 0.0
                  for problem in problems]
    if len(problems) == 1:
        return Model(np.zeros(d), intercepts[0], classes, loss=loss)
    return Model(np.zeros((len(problems), d)), np.array(intercepts), classes,
                 multiclass="ovr", loss=loss)


def _free_intercept(problem):
    """The intercept feature's weight b minimising the loss alone, sum_i c_i phi(y_i, bias b):
    the weighted mean of y for the squared loss, else the root of the nondecreasing
    sum_i c_i phi'(y_i, bias b), bracketed and bisected to the last bit."""
    y, c, bias, loss = problem.y, problem.sample_weight, problem.bias, problem.loss
    if problem.loss_name == "squared":
        return float(np.sum(c * y) / np.sum(c)) / bias

    def slope(b):
        return float(np.sum(c * loss.derivatives(y, np.full(y.shape[0], bias * b))))

    lo, hi = -1.0, 1.0
    while slope(lo) > 0.0:
        lo *= 2.0
        if lo < -1e300:
            raise ValueError("the loss has no minimising intercept (it decreases without "
                             "bound): alpha_max is undefined")
    while slope(hi) < 0.0:
        hi *= 2.0
        if hi > 1e300:
            raise ValueError("the loss has no minimising intercept (it decreases without "
                             "bound): alpha_max is undefined")
    for _ in range(2100):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if slope(mid) < 0.0:
            lo = mid
        else:
            hi = mid
    return lo if abs(slope(lo)) <= abs(slope(hi)) else hi


def _largest_gradient(problem):
    """||grad_w L(0, b*)||_inf: the largest |(1/n) sum_i c_i phi'(y_i, z0_i) x_ij| over the
    features (and the regularised intercept's feature), z0 the margins at w = 0 (docs/math.md,
    "The largest useful alpha")."""
    n, d = problem.n_samples, problem.n_features
    w = np.zeros(d + 1)
    if problem.free_intercept:
        w[d] = _free_intercept(problem)
    z = np.full(n, problem.bias * w[d])
    weighted = problem.sample_weight * problem.loss.derivatives(problem.y, z)
    gradient = np.empty(d + 1)
    _rows.transpose_times(*problem.X.kernel_args, n, d, problem.bias, weighted, gradient)
    # the free intercept's entry is 0 at b* (to rounding) and has no penalty: left out; without
    # an intercept (bias 0) the entry is 0.
    counted = gradient[:d] if problem.free_intercept else gradient
    return float(np.max(np.abs(counted), initial=0.0)) / n


def alpha_max(X, y, *, loss="squared", l1_ratio=1.0, fit_intercept=True, intercept_scaling=1.0,
              regularize_intercept=False, sample_weight=None, class_weight=None,
              **loss_params):
    """The smallest alpha at which w = 0 is optimal for fastdual's objective (with the free
    intercept at the value that minimises the loss alone):
    ||X^T (c * phi'(y, z0))||_inf / (n * l1_ratio), z0 the margins at w = 0. For k > 2 classes
    the largest over the one-vs-rest problems. docs/math.md derives it."""
    l1_ratio = check_fraction("l1_ratio", l1_ratio)
    if l1_ratio == 0.0:
        raise ValueError("l1_ratio=0 (pure l2) has no finite alpha_max: w = 0 is optimal at no "
                         "finite alpha; give alphas, or l1_ratio > 0")
    problems, _ = _objective_problems(X, y, loss, l1_ratio, fit_intercept, intercept_scaling,
                                      regularize_intercept, sample_weight, class_weight,
                                      loss_params)
    return max(_largest_gradient(problem) for problem in problems) / l1_ratio


def _check_alphas(alphas):
    alphas = np.asarray(alphas, dtype=np.float64) if not np.isscalar(alphas) else \
        np.array([alphas], dtype=np.float64)
    if alphas.ndim != 1 or alphas.shape[0] == 0:
        raise ValueError(f"alphas must be a non-empty 1-D sequence, got shape {alphas.shape}")
    if not np.all(np.isfinite(alphas)) or np.any(alphas <= 0.0):
        raise ValueError(f"alphas must be finite and positive, got {alphas.min():g} at the "
                         "smallest" if np.all(np.isfinite(alphas)) else
                         "alphas must be finite and positive, got a NaN or infinity")
    if np.any(np.diff(alphas) >= 0.0):
        at = int(np.argmax(np.diff(alphas) >= 0.0))
        raise ValueError("alphas must be strictly decreasing (the path warm-starts each from "
                         f"the larger one before it), got alphas[{at}]={alphas[at]:g} <= "
                         f"alphas[{at + 1}]={alphas[at + 1]:g}")
    return alphas


def alpha_grid(X, y, *, n_alphas=100, eps=1e-3, loss="squared", l1_ratio=1.0,
               fit_intercept=True, intercept_scaling=1.0, regularize_intercept=False,
               sample_weight=None, class_weight=None, **loss_params):
    """n_alphas alphas from alpha_max down to eps * alpha_max, evenly spaced in log scale
    (decreasing; alpha_max's arguments as fastdual.alpha_max); the first is alpha_max raised
    by n eps (relative), a bound on the rounding of the sums that compute it."""
    n_alphas = check_int("n_alphas", n_alphas, 1)
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not 0.0 < eps < 1.0:
        raise ValueError(f"eps must be a number in (0, 1) (the smallest alpha over alpha_max), "
                         f"got {eps!r}")
    top = alpha_max(X, y, loss=loss, l1_ratio=l1_ratio, fit_intercept=fit_intercept,
                    intercept_scaling=intercept_scaling,
                    regularize_intercept=regularize_intercept, sample_weight=sample_weight,
                    class_weight=class_weight, **loss_params)
    if not top > 0.0:
        raise ValueError("alpha_max is 0: w = 0 already fits the data exactly (y constant, or "
                         "X has no nonzero entry), so there is no path; give alphas")
    # The grid starts n eps above alpha_max, a bound on the relative rounding of its sums of n
    # terms: whatever order a solver sums the gradient in, w = 0 stays optimal at the first
    # alpha (at alpha_max itself one coordinate sits on its threshold, and rounding may step it).
    top *= 1.0 + max(check_matrix(X).n_samples, 16) * np.finfo(float).eps
    return np.geomspace(top, top * eps, n_alphas) if n_alphas > 1 else np.array([top])


def path(X, y, *, loss="squared", l1_ratio=1.0, alphas=None, n_alphas=100, eps=1e-3,
         fit_intercept=True, intercept_scaling=1.0, regularize_intercept=False,
         sample_weight=None, class_weight=None, tol=DEFAULTS["tol"],
         max_epochs=DEFAULTS["max_epochs"], solver="cd", **train_options):
    """The regularization path: a certified model at each alpha of a decreasing grid, each
    warm-started from the one before (docs/sparse.md).

    alphas: strictly decreasing positive strengths; None: n_alphas from alpha_max (the
    smallest alpha at which w = 0 is optimal, fastdual.alpha_max) down to eps * alpha_max on a
    log grid. The objective is fastdual.train's, with l2 = alpha (1 - l1_ratio) and
    l1 = alpha l1_ratio; the intercept free by default (regularize_intercept=False, as
    scikit-learn's and glmnet's paths have it), so that the first model is the best constant.
    solver: "cd" (default; the smooth losses) or any other solver of fastdual.train;
    **train_options: the loss's parameters and the rest of train's keywords (random_state,
    check_every, the solver's options, ...). Returns a Path."""
    if "alpha" in train_options or "C" in train_options or "warm_start" in train_options:
        raise ValueError("path sets alpha and warm_start itself (give alphas=, not alpha= or C=)")
    l1_ratio = check_fraction("l1_ratio", l1_ratio)
    # X validated once, and its column layout (cd's) converted once for every training
    X = check_matrix(X)
    objective = dict(loss=loss, l1_ratio=l1_ratio, fit_intercept=fit_intercept,
                     intercept_scaling=intercept_scaling,
                     regularize_intercept=regularize_intercept, sample_weight=sample_weight,
                     class_weight=class_weight)
    loss_params = {name: train_options[name] for name in get_loss_spec(loss).params
                   if name in train_options}
    if alphas is None:
        if l1_ratio == 0.0:
            raise ValueError("l1_ratio=0 (pure l2) has no finite alpha_max: w = 0 is optimal "
                             "at no finite alpha, so the grid cannot start there; give alphas")
        if train_options.get("multiclass") not in (None, "ovr"):
            raise ValueError(f"alphas=None computes alpha_max for one-vs-rest; with "
                             f"multiclass={train_options['multiclass']!r} give alphas")
        alphas = alpha_grid(X, y, n_alphas=n_alphas, eps=eps, **objective, **loss_params)
    else:
        alphas = _check_alphas(alphas)
    models, previous = [], None
    if (fit_intercept and not regularize_intercept and solver in SOLVERS
            and takes_warm_start(solver)):
        # the first training starts from the best constant (glmnet's start), the exact
        # solution at alpha_max: on the grid's first alpha it certifies w = 0 at once.
        previous = _null_model(*_objective_problems(X, y, loss, l1_ratio, fit_intercept,
                                                    intercept_scaling, regularize_intercept,
                                                    sample_weight, class_weight, loss_params),
                               loss)
    for alpha in alphas:
        warm = previous is not None and takes_warm_start(previous.solver or solver)
        previous = train(X, y, alpha=float(alpha), tol=tol, max_epochs=max_epochs,
                         solver=solver, warm_start=previous if warm else None, **objective,
                         **train_options)
        models.append(previous)
    coefs = np.stack([model.coef_ for model in models], axis=-1)
    intercepts = np.stack([np.asarray(model.intercept_, dtype=np.float64) for model in models],
                          axis=-1)
    return Path(alphas=alphas, coefs=coefs, intercepts=intercepts,
                gaps=np.array([model.gap_ for model in models]),
                relative_gaps=np.array([model.relative_gap_ for model in models]),
                nnz=np.count_nonzero(coefs.reshape(-1, alphas.shape[0]), axis=0),
                epochs=np.array([model.n_epochs_ for model in models]),
                models=models, l1_ratio=l1_ratio, loss=loss)
