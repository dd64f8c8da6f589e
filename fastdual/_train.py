"""The face: fastdual.train and fastdual.duality_gap."""
import numbers
from collections import namedtuple

import numpy as np

from fastdual._driver import relative_gap
from fastdual._problem import build_problem
from fastdual._validation import check_coef, check_int, check_positive, check_seed
from fastdual.model import Model
from fastdual.solvers import get_solver

Certificate = namedtuple("Certificate", ["gap", "primal", "dual", "relative_gap"])


def train(X, y, *, loss="smooth_hinge", alpha=None, C=None, l1_ratio=0.0, fit_intercept=True,
          intercept_scaling=1.0, sample_weight=None, tol=1e-4, max_epochs=1000, solver="sdca",
          random_state=None, verbose=0, callback=None, warm_start=None, sdca_option="I",
          sampling="permutation", output="last", shrinking=True, check_every="auto", **loss_params):
    """Train a regularised linear model and certify it by its duality gap.

    Minimises  P(w) = (1/n) sum_i c_i loss(y_i, x_i . w + b) + l2/2 ||w||^2 + l1 ||w||_1  with
    l2 = alpha (1 - l1_ratio), l1 = alpha l1_ratio, or alpha = 1 / (C sum_i c_i) when C is given
    (LIBLINEAR's convention; C = 1 when neither is given). With fit_intercept, b is LIBLINEAR's -B:
    the weight of a constant feature of value intercept_scaling, regularised like the others.

    Parameters
    ----------
    X : scipy sparse matrix (CSR used as is) or 2-D array (C-contiguous used as is), float32/64.
    y : labels (any two values) for hinge, squared_hinge, smooth_hinge, logistic; real targets
        for squared, absolute, epsilon_insensitive.
    loss : one of fastdual.losses.LOSSES; loss_params: gamma (smooth_hinge), epsilon
        (epsilon_insensitive).
    tol : stop when (P - D) / |P| <= tol; 0 runs exactly max_epochs.
    check_every : when the certificate (one extra pass over the data) is computed: "auto"
        (default) extrapolates the gap's linear decrease from the last two checks and skips
        ahead to just before it should reach tol; an int k checks every k epochs (1 = every
        epoch, one history record each). Either way the stop is decided by an exact certificate
        and the last epoch is always checked.
    max_epochs : passes over the data.
    solver : "sdca". sdca_option "I" (exact coordinate maximisation) or "IV";
        sampling "permutation" (a fresh one each epoch) or "uniform" (with replacement);
        output "last" or "average" (the averaging option, over the latter half of the epochs);
        shrinking (LIBLINEAR's: samples whose duals sit on a bound and are pushed outward are
        skipped until the rest is solved; only for losses with box-constrained duals).
    random_state : None, an int or a numpy generator; the same int gives bit-identical models.
    verbose : print one line per check. callback(info) is called after each check with a dict
        (epoch, seconds, primal, dual, gap, nnz); returning False stops training.
    warm_start : a Model to start from (its dual_coef_ if it has one of length n, else its coef_).

    Ctrl-C during training returns the best model so far (of the last completed epoch and the
    checked ones, the one with the smallest certified gap), with a warning and converged_ = False.
    """
    tol = check_positive("tol", tol, allow_zero=True)
    max_epochs = check_int("max_epochs", max_epochs, 1)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {callback!r}")
    if warm_start is not None and not isinstance(warm_start, Model):
        raise TypeError(f"warm_start must be a fastdual Model, got {type(warm_start).__name__}")
    seed = check_seed(random_state)
    problem = build_problem(X, y, loss=loss, alpha=alpha, C=C, l1_ratio=l1_ratio,
                            fit_intercept=fit_intercept, intercept_scaling=intercept_scaling,
                            sample_weight=sample_weight, tol=tol, loss_params=loss_params)
    spec = get_solver(solver, problem.loss_name)
    initial_dual = _initial_dual(problem, warm_start)
    w, dual_coef, info = spec["run"](problem, tol=tol, max_epochs=max_epochs, seed=seed,
                                     verbose=verbose, callback=callback, initial_dual=initial_dual,
                                     sdca_option=sdca_option, sampling=sampling, output=output,
                                     shrinking=shrinking, check_every=check_every)
    d = problem.n_features
    return Model(
        w[:d].copy(), w[d] * problem.bias, problem.classes, dual_coef=dual_coef,
        loss=problem.loss_name, loss_params=problem.loss_params, task=problem.task,
        solver=solver, alpha=problem.alpha, l1_ratio=problem.l1_ratio,
        l2_=problem.certified_l2, l1_=problem.l1, l2_added_=info["l2_added"],
        fit_intercept=problem.fit_intercept, intercept_scaling=problem.intercept_scaling,
        intercept_mode="regularized" if problem.fit_intercept else "none",
        primal_=float(info["primal"]), dual_=float(info["dual"]),
        gap_=float(info["primal"] - info["dual"]), converged_=bool(info["converged"]),
        n_epochs_=int(info["n_epochs"]), history_=info["history"], tol=tol,
        n_features_in_=d)


def _initial_dual(problem, warm_start):
    """A feasible dual start: the warm model's duals when they fit, else duals from its margins."""
    if warm_start is None:
        return None
    if warm_start.loss != problem.loss_name:
        raise ValueError(f"warm_start was trained with loss={warm_start.loss!r}, "
                         f"not loss={problem.loss_name!r}")
    if warm_start.coef_.shape[0] != problem.n_features:
        raise ValueError(f"warm_start has {warm_start.coef_.shape[0]} features, "
                         f"X has {problem.n_features}")
    dual = warm_start.dual_coef_
    if dual is not None and dual.shape[0] == problem.n_samples:
        if np.all(np.isfinite(problem.loss.dual_values(problem.y, dual))):
            return dual
    margins = problem.X.matvec(warm_start.coef_)
    if problem.fit_intercept:
        margins += warm_start.intercept_
    return problem.loss.duals_from_margins(problem.y, margins)


def duality_gap(X, y, coef, intercept=None, *, loss="smooth_hinge", alpha=None, C=None,
                l1_ratio=0.0, sample_weight=None, intercept_scaling=1.0, dual_coef=None,
                **loss_params):
    """Certify any linear model: P(coef) - D(alpha) >= P(coef) - P* >= 0.

    The objective is that of fastdual.train with the same arguments. intercept=None means a model
    without intercept; a number b means LIBLINEAR's regularised intercept feature of value
    intercept_scaling and weight b / intercept_scaling. Without dual_coef, the dual point is built
    from the model's margins (alpha_i = -loss'(x_i . w)), which is feasible, so the bound holds for
    a model from any library. Binary labels are encoded in sorted order (the second is +1).
    Returns Certificate(gap, primal, dual, relative_gap).
    """
    fit_intercept = intercept is not None
    problem = build_problem(X, y, loss=loss, alpha=alpha, C=C, l1_ratio=l1_ratio,
                            fit_intercept=fit_intercept, intercept_scaling=intercept_scaling,
                            sample_weight=sample_weight, tol=0.0, loss_params=loss_params)
    d = problem.n_features
    w = np.empty(d + 1)
    w[:d] = check_coef(coef, d)
    w[d] = 0.0
    if fit_intercept:
        if isinstance(intercept, bool) or not isinstance(intercept, numbers.Real) \
                or not np.isfinite(intercept):
            raise ValueError(f"intercept must be None or a finite real number, got {intercept!r}")
        w[d] = float(intercept) / problem.bias
    if dual_coef is None:
        margins = problem.X.matvec(w[:d]) + problem.bias * w[d]
        dual = problem.loss.duals_from_margins(problem.y, margins)
    else:
        dual = check_coef(dual_coef, problem.n_samples, name="dual_coef")
    primal, dual_value = problem.primal_dual(w, dual)
    return Certificate(primal - dual_value, primal, dual_value, relative_gap(primal, dual_value))
