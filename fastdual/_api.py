"""The face: fastdual.train and fastdual.duality_gap (validate -> Problem -> driver -> Model)."""
import numbers
from collections import namedtuple

import numpy as np

from fastdual import _loop
from fastdual import _multiclass
from fastdual._problem import build_f1_problem, build_problem
from fastdual._validation import (check_choice, check_coef, check_int, check_labels,
                                  check_matrix, check_positive, check_seed,
                                  check_stream_weights)
from fastdual.losses import get_loss_spec
from fastdual.model import Model
from fastdual.solvers import SOLVERS, get_solver, solver_options
from fastdual.solvers.auto import choose

Certificate = namedtuple("Certificate", ["gap", "primal", "dual", "relative_gap"])


def train(X, y, *, loss="smooth_hinge", alpha=None, C=None, l1_ratio=0.0, fit_intercept=True,
          intercept_scaling=1.0, regularize_intercept=True, sample_weight=None, tol=1e-4, max_epochs=1000, solver="auto",
          random_state=None, verbose=0, callback=None, warm_start=None, check_every="auto",
          on_interrupt="raise", multiclass=None, n_jobs=None, class_weight=None, **options):
    """Train a regularised linear model and certify it by its duality gap.

    Minimises  P(w) = (1/n) sum_i c_i loss(y_i, x_i . w + b) + l2/2 ||w||^2 + l1 ||w||_1  with
    l2 = alpha (1 - l1_ratio), l1 = alpha l1_ratio, or alpha = 1 / (C sum_i c_i) when C is given
    (LIBLINEAR's convention; C = 1 when neither is given). With fit_intercept, b is LIBLINEAR's -B:
    the weight of a constant feature of value intercept_scaling, regularised like the others;
    regularize_intercept=False leaves it out of the penalty (a free intercept, as scikit-learn's
    LogisticRegression and SVC have it), for the solvers that support it ("sdca" with the l2
    penalty, "newton", "rda", "agm"); its
    certificate projects the duals onto the constraint sum_i c_i alpha_i = 0 that the free
    intercept adds to the dual (docs/math.md).

    Parameters
    ----------
    X : scipy sparse matrix (CSR used as is) or 2-D array (C-contiguous used as is), float32/64.
    y : labels for hinge, squared_hinge, smooth_hinge, logistic (any two values; with k > 2
        values, k one-vs-rest problems) and f1_hinge (two values: the F1-score risk of the
        whole labeling, solver "agm"); real targets for squared, absolute,
        epsilon_insensitive.
    multiclass : how k > 2 labels are trained. "ovr": one binary problem per class (that class
        against the rest, every loss and solver) on one validated view of X, each certified;
        the model's primal_, dual_, gap_ are the sums over the classes (a certificate of the
        sum of the k objectives), class_primal_ etc. per class. "crammer_singer" (loss="hinge")
        and "multinomial" (loss="logistic"): one joint problem, solved by Prox-SDCA with vector
        duals (solver="sdca") and certified as one. None (default): "multinomial" for
        logistic with solver="sdca", "ovr" otherwise. coef_ is (k, n_features) either way.
    n_jobs : threads for the one-vs-rest problems (the kernels release the GIL); the result
        is bit-identical whatever n_jobs.
    class_weight : None, "balanced" (n / (k * count of the class), scikit-learn's definition)
        or a dict {label: weight} (labels absent weigh 1): multiplies each sample's weight by
        its class's, so that an integer class weight is that many copies of the class's rows.
    loss : one of fastdual.LOSSES.
    tol : stop when (P - D) / |P| <= tol; 0 runs exactly max_epochs.
    max_epochs : passes over the data.
    solver : "auto" (default) or one of fastdual.SOLVERS. "auto" picks by the problem's loss,
        penalty, intercept and conditioning (fastdual.solvers.auto; docs/solvers/auto.md); the
        model's solver attribute names the one that ran.
    check_every : when the certificate (one extra pass over the data) is computed: "auto"
        (default) extrapolates the gap's linear decrease from the last two checks and skips
        ahead to just before it should reach tol; an int k checks every k epochs (1 = every
        epoch, one history record each). Either way the stop is decided by an exact certificate
        and the last epoch is always checked.
    random_state : None, an int or a numpy generator; the same int gives bit-identical models.
    verbose : 1 prints one line per check; 2 shows a progress bar over the epochs on stderr
        (tqdm, when installed; the lines otherwise). callback(info) is called after each check with a dict
        (epoch, seconds, primal, dual, gap, nnz); returning False stops training.
    warm_start : a Model to start from (its dual_coef_ if it has one of length n, else its coef_).
    on_interrupt : what Ctrl-C does: "raise" (default) raises fastdual.TrainingInterrupted, a
        KeyboardInterrupt whose .model is the best certified model so far, so that a script or
        a loop of trainings stops; "return" returns that model with a ConvergenceWarning.
    **options : the loss's parameters (gamma for smooth_hinge, epsilon for
        epsilon_insensitive) and the solver's options, fastdual.SOLVERS[solver].options; for
        "sdca": sdca_option "I" (exact coordinate maximisation) or "IV"; sampling
        "permutation" (a fresh one each epoch) or "uniform" (with replacement); output "last"
        or "average" (over the latter half of the epochs); shrinking (LIBLINEAR's: samples
        whose duals sit on a bound and are pushed outward are skipped until the rest is solved).

    The model is the last checked point (after Ctrl-C: the one with the smallest relative gap);
    its primal_, dual_ and gap_ are the certificate of exactly its coef_, intercept_ and
    dual_coef_, n_epochs_ the epoch it was reached at, and history_ ends with it.
    """
    tol = check_positive("tol", tol, allow_zero=True)
    max_epochs = check_int("max_epochs", max_epochs, 1)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {callback!r}")
    if warm_start is not None and not isinstance(warm_start, Model):
        raise TypeError(f"warm_start must be a fastdual Model, got {type(warm_start).__name__}")
    on_interrupt = check_choice("on_interrupt", on_interrupt, ("raise", "return"))
    seed = check_seed(random_state)
    loss_params, given_options = _split_options(loss, solver, options)
    objective = dict(loss=loss, alpha=alpha, C=C, l1_ratio=l1_ratio, fit_intercept=fit_intercept,
                     intercept_scaling=intercept_scaling, sample_weight=sample_weight,
                     loss_params=loss_params, regularize_intercept=regularize_intercept)
    run = dict(solver=solver, options=given_options, seed=seed, tol=tol, max_epochs=max_epochs,
               check_every=check_every, verbose=verbose, callback=callback,
               on_interrupt=on_interrupt)
    if get_loss_spec(loss).structured:
        return _train_structured(X, y, objective, run, multiclass, class_weight, warm_start)
    if get_loss_spec(loss).task == "binary":
        matrix = check_matrix(X)
        classes, index = check_labels(y, matrix.n_samples)
        if class_weight is not None:
            objective["sample_weight"] = weigh_classes(class_weight, classes, index,
                                                       sample_weight)
        if classes.shape[0] > 2:
            return _multiclass.train(matrix, classes, index, objective, run, multiclass,
                                     n_jobs, warm_start)
        X = matrix
    if class_weight is not None and get_loss_spec(loss).task != "binary":
        raise ValueError(f"class_weight is for classification; loss={loss!r} is a regression "
                         "loss")
    multiclass_choice(multiclass, loss, 2)
    if n_jobs is not None:
        check_int("n_jobs", n_jobs, 1)
    problem = build_problem(X, y, **objective)
    return solve(problem, warm_start=warm_start, **run)


def _train_structured(X, y, objective, run, multiclass, class_weight, warm_start):
    """loss="f1_hinge": one binary problem over the whole labeling, by AGM (seed 004)."""
    loss = objective["loss"]
    if run["solver"] not in ("auto", "agm"):
        raise ValueError(f"loss={loss!r} is trained by solver='agm' (or 'auto'), got "
                         f"solver={run['solver']!r}")
    for name, value in (("multiclass", multiclass), ("class_weight", class_weight)):
        if value is not None:
            raise ValueError(f"loss={loss!r} is for two classes; it takes no {name}")
    matrix = check_matrix(X)
    classes, _ = check_labels(y, matrix.n_samples)
    if classes.shape[0] != 2:
        raise ValueError(f"loss={loss!r} needs exactly two classes, got {classes.shape[0]}")
    problem = build_f1_problem(matrix, y, objective)
    return solve(problem, warm_start=warm_start, **{**run, "solver": "agm"})


def weigh_classes(class_weight, classes, index, sample_weight):
    """Each sample's weight times its class's: "balanced" is n / (k * count of the class)."""
    counts = np.bincount(index, minlength=classes.shape[0])
    if isinstance(class_weight, str) and class_weight == "balanced":
        per_class = index.shape[0] / (classes.shape[0] * counts.astype(np.float64))
    elif isinstance(class_weight, dict):
        unknown = [key for key in class_weight if not np.any(classes == key)]
        if unknown:
            raise ValueError(f"class_weight has labels that are not in y: {unknown[:5]}; "
                             f"the classes are {classes.tolist()[:20]}")
        per_class = np.ones(classes.shape[0])
        for m, label in enumerate(classes):
            label = label.item() if isinstance(label, np.generic) else label
            value = class_weight.get(label, 1.0)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                    or not np.isfinite(value) or value < 0:
                raise ValueError(f"class_weight[{label!r}] must be a finite number >= 0, "
                                 f"got {value!r}")
            per_class[m] = float(value)
    else:
        raise ValueError(f"class_weight must be None, 'balanced' or a dict {{label: weight}}, "
                         f"got {class_weight!r}")
    # The weights as given (validated, a scalar broadcast); train normalises the product.
    return check_stream_weights(sample_weight, index.shape[0]) * per_class[index]


def solve(problem, *, solver, options, seed, tol, max_epochs, check_every, verbose, callback,
          on_interrupt, warm_start=None):
    """Train one (binary or regression) problem in the loop and return its certified Model."""
    if solver == "auto":
        solver, options = choose(problem, options, SOLVERS)
    driver_class = get_solver(solver, problem)
    driver = driver_class(problem, solver_options(driver_class, options), seed,
                          _initial_duals(problem, warm_start))
    if warm_start is not None and hasattr(driver, "start_from"):   # a primal solver
        driver.start_from(_warm_coefficients(problem, warm_start))
    result = _loop.run(problem, driver, tol=tol, max_epochs=max_epochs, check_every=check_every,
                       verbose=verbose, callback=callback)
    if result is None:        # a second Ctrl-C before the first epoch ended
        raise _loop.TrainingInterrupted(None)
    model = _model(problem, result, solver, driver.helper_l2, tol)
    if result.interrupted and on_interrupt == "raise":
        raise _loop.TrainingInterrupted(model)
    _loop.warn_unconverged(result, solver, tol, max_epochs, problem)
    return model


MULTICLASS = ("ovr", "crammer_singer", "multinomial")
_JOINT_LOSSES = {"crammer_singer": ("hinge", "smooth_hinge"), "multinomial": ("logistic",)}


def multiclass_choice(multiclass, loss, n_classes, solver="sdca"):
    """The strategy for k classes: "ovr" (one-vs-rest, every binary loss and solver),
    "crammer_singer" (hinge) or "multinomial" (logistic; both by solver="sdca"); None:
    multinomial for logistic with solver="sdca", one-vs-rest otherwise."""
    if multiclass is None:
        return "multinomial" if loss == "logistic" and solver in ("sdca", "auto") else "ovr"
    if multiclass not in MULTICLASS:
        raise ValueError(f"multiclass must be None or one of {list(MULTICLASS)}, got "
                         f"{multiclass!r}")
    if multiclass in _JOINT_LOSSES and loss not in _JOINT_LOSSES[multiclass]:
        works = ["ovr"] + [name for name, losses in _JOINT_LOSSES.items() if loss in losses]
        raise ValueError(f"multiclass={multiclass!r} needs loss in "
                         f"{list(_JOINT_LOSSES[multiclass])}; loss={loss!r} trains k classes "
                         f"with multiclass in {works}")
    return multiclass


def _split_options(loss, solver, options):
    """Split train's keyword arguments into the loss's parameters and the solver's options."""
    spec = get_loss_spec(loss)
    driver = SOLVERS.get(solver) if isinstance(solver, str) else None
    solver_names = set(driver.options) if driver is not None else set()
    if isinstance(solver, str) and solver == "auto":
        solver_names = {name for each in SOLVERS.values() for name in each.options}
    unknown = sorted(set(options) - set(spec.params) - solver_names)
    if unknown:
        have = (f"solver={solver!r} has the options {sorted(solver_names)}"
                if driver is not None or solver == "auto"
                else f"solver must be 'auto' or one of {sorted(SOLVERS)}")
        raise ValueError(f"train() got unknown argument(s) {unknown}: {have}, and "
                         f"loss={loss!r} has the parameters {sorted(spec.params) or 'none'}")
    loss_params = {k: v for k, v in options.items() if k in spec.params}
    return loss_params, {k: v for k, v in options.items() if k not in spec.params}


def _model(problem, result, solver, helper_l2, tol):
    point = result.checkpoint
    d = problem.n_features
    # The checkpoint's frozen copies are handed to the model, not copied again (on very wide
    # data each copy is a d-vector): nothing reads the checkpoint after this.
    w, duals = point.w, point.duals
    w.setflags(write=True)
    duals.setflags(write=True)
    return Model(
        w[:d], w[d] * problem.bias, problem.classes,
        dual_coef=duals, loss=problem.loss_name, loss_params=problem.loss_params,
        task=problem.task, solver=solver, alpha=problem.alpha, l1_ratio=problem.l1_ratio,
        l2_=problem.l2, l1_=problem.l1, l2_added_=helper_l2,
        fit_intercept=problem.fit_intercept, intercept_scaling=problem.intercept_scaling,
        intercept_mode=problem.intercept_mode,
        primal_=point.primal, dual_=point.dual, gap_=point.gap, converged_=result.converged,
        n_epochs_=point.epoch, history_=result.history, tol=tol, n_features_in_=d)


def _initial_duals(problem, warm_start):
    """A feasible dual start: the warm model's duals when they fit, else duals from its margins."""
    if warm_start is None:
        return None
    if warm_start.loss != problem.loss_name:
        raise ValueError(f"warm_start was trained with loss={warm_start.loss!r}, "
                         f"not loss={problem.loss_name!r}")
    if warm_start.coef_.shape[0] != problem.n_features:
        raise ValueError(f"warm_start has {warm_start.coef_.shape[0]} features, "
                         f"X has {problem.n_features}")
    duals = warm_start.dual_coef_
    if duals is not None and duals.shape[0] == problem.n_samples:
        if np.all(np.isfinite(problem.loss.dual_values(problem.y, duals))):
            return duals
    return problem.duals_from_margins(_warm_coefficients(problem, warm_start))


def _warm_coefficients(problem, warm_start):
    """A warm model's w in the problem's terms: its coef_, the intercept feature's weight last."""
    return np.append(warm_start.coef_,
                     warm_start.intercept_ / problem.bias if problem.bias else 0.0)


def duality_gap(X, y, coef, intercept=None, *, loss="smooth_hinge", alpha=None, C=None,
                l1_ratio=0.0, sample_weight=None, intercept_scaling=1.0,
                regularize_intercept=True, dual_coef=None, refine_epochs=None, multiclass=None,
                **loss_params):
    """Certify any linear model: P(coef) - D(duals) >= P(coef) - P* >= 0.

    The objective is that of fastdual.train with the same arguments. intercept=None means a model
    without intercept; a number b means LIBLINEAR's regularised intercept feature of value
    intercept_scaling and weight b / intercept_scaling. Binary labels are encoded in sorted order
    (the second is +1). Returns Certificate(gap, primal, dual, relative_gap). A k-class
    one-vs-rest model (coef (k, n_features), intercept (k,) or None, dual_coef (k, n) or None)
    gets the certificate of the sum of its k binary objectives; with multiclass
    "crammer_singer" or "multinomial" (the default for logistic, as in train) the certificate
    of the joint problem, dual_coef (k, n) its vector duals.

    The primal side is always P(coef) of the model given. The dual side is any feasible dual
    point, so the bound holds for a model from any library: dual_coef if given, else the duals
    built from the model's margins (-loss'(x_i . w)), raised by up to `refine_epochs` epochs of
    dual coordinate ascent (SDCA, which never lowers the dual) started from them. Margin duals
    are exact at the optimum of a smooth loss, but poor for hinge-type losses, whose optimal
    duals on the margin are not determined by the margins; a few epochs fix that. Default:
    20 epochs (stopping early once they stop paying) without dual_coef, none with it; 0 turns
    refinement off.

    regularize_intercept=False certifies a model with a free (unpenalised) intercept: the dual
    point is projected onto the constraint sum_i c_i alpha_i = 0 that the free intercept adds
    to the dual. SDCA's epochs do not keep that constraint, so there is no refinement then
    (refine_epochs must be 0 or None) and the bound is that of the projected margin duals, or of
    the projected dual_coef.
    """
    if np.ndim(coef) == 2:
        matrix = check_matrix(X)
        classes, index = check_labels(y, matrix.n_samples)
        k = classes.shape[0]
        if np.shape(coef)[0] != k:
            raise ValueError(f"coef has {np.shape(coef)[0]} rows but y has {k} classes")
        if intercept is not None and np.shape(intercept) != (k,):
            raise ValueError(f"intercept must be None or have shape ({k},), got shape "
                             f"{np.shape(intercept)}")
        if dual_coef is not None and np.shape(dual_coef) != (k, matrix.n_samples):
            raise ValueError(f"dual_coef of a k-class model must have shape "
                             f"({k}, {matrix.n_samples}), got {np.shape(dual_coef)}")
        strategy = multiclass_choice(multiclass, loss, k)
        if strategy != "ovr":
            return _joint_certificate(matrix, classes, index, strategy, coef, intercept,
                                      dual_coef, refine_epochs, dict(
                                          loss=loss, alpha=alpha, C=C, l1_ratio=l1_ratio,
                                          fit_intercept=intercept is not None,
                                          intercept_scaling=intercept_scaling,
                                          sample_weight=sample_weight, loss_params=loss_params,
                                          regularize_intercept=regularize_intercept))
        # One-vs-rest: the certificate of the sum of the k binary objectives.
        parts = [duality_gap(matrix, np.where(index == m, 1.0, -1.0), np.asarray(coef)[m],
                             None if intercept is None else float(intercept[m]), loss=loss,
                             alpha=alpha, C=C, l1_ratio=l1_ratio, sample_weight=sample_weight,
                             intercept_scaling=intercept_scaling,
                             regularize_intercept=regularize_intercept,
                             dual_coef=None if dual_coef is None else dual_coef[m],
                             refine_epochs=refine_epochs, **loss_params)
                 for m in range(k)]
        primal = float(sum(c.primal for c in parts))
        dual = float(sum(c.dual for c in parts))
        gap = float(sum(c.gap for c in parts))
        return Certificate(gap, primal, dual, _loop.relative_gap(primal, dual, gap))
    fit_intercept = intercept is not None
    objective = dict(loss=loss, alpha=alpha, C=C, l1_ratio=l1_ratio, fit_intercept=fit_intercept,
                     intercept_scaling=intercept_scaling, sample_weight=sample_weight,
                     loss_params=loss_params, regularize_intercept=regularize_intercept)
    structured = get_loss_spec(loss).structured
    if structured:
        if refine_epochs:
            raise ValueError("refine_epochs is SDCA's refinement of per-sample duals; "
                             f"loss={loss!r} has none")
        refine_epochs = 0
        problem = build_f1_problem(X, y, objective)
    else:
        problem = build_problem(X, y, **objective)
    d = problem.n_features
    w = np.empty(d + 1)
    w[:d] = check_coef(coef, d)
    w[d] = 0.0
    if fit_intercept:
        if isinstance(intercept, bool) or not isinstance(intercept, numbers.Real) \
                or not np.isfinite(intercept):
            raise ValueError(f"intercept must be None or a finite real number, got {intercept!r}")
        w[d] = float(intercept) / problem.bias
    if refine_epochs is None:
        refine_epochs = _refine_budget(problem) if dual_coef is None else 0
        if problem.free_intercept:
            refine_epochs = 0
    refine_epochs = check_int("refine_epochs", refine_epochs, 0)
    if refine_epochs > 0 and problem.free_intercept:
        raise ValueError("refine_epochs must be 0 or None with a free intercept "
                         "(regularize_intercept=False): SDCA's refinement steps do not keep the "
                         "dual constraint sum_i c_i alpha_i = 0")
    if dual_coef is None:
        duals = problem.duals_from_margins(w)
    else:
        duals = check_coef(dual_coef, problem.n_samples + structured, name="dual_coef")
    primal, dual, gap = problem.certificate(w, duals)
    if refine_epochs > 0 and np.isfinite(dual) and gap > ROUNDING * abs(primal):
        dual, gap = _refined_dual(problem, w, primal, dual, gap, duals, refine_epochs)
    return Certificate(gap, primal, dual, _loop.relative_gap(primal, dual, gap))


# Refinement by default costs at most about REFINE_WORK multiply-adds (a fraction of a second),
# between 20 and 1000 epochs: many on small data, where it is cheap, few on large data.
REFINE_WORK = 1e8
ROUNDING = 1e-12    # a relative gap below this is rounding: nothing left to refine


def _refine_budget(problem):
    nnz = problem.X.data.shape[0] if problem.X.is_sparse else problem.n_samples * problem.n_features
    return int(np.clip(REFINE_WORK / (nnz + problem.n_samples), 20, 1000))


def _joint_certificate(matrix, classes, index, strategy, coef, intercept, dual_coef,
                       refine_epochs, objective):
    """The certificate of a Crammer-Singer or multinomial model (vector duals)."""
    from fastdual._problem import build_vector_problem
    from fastdual.solvers.vector_sdca import VectorSDCA
    problem = build_vector_problem(matrix, classes, index, strategy, objective)
    w = np.zeros((problem.n_features + 1, classes.shape[0]))
    w[:-1] = np.asarray(coef, dtype=np.float64).T
    if intercept is not None:
        w[-1] = np.asarray(intercept, dtype=np.float64) / problem.bias
    if not np.all(np.isfinite(w)):
        raise ValueError("coef and intercept must be finite")
    duals = (problem.duals_from_margins(w) if dual_coef is None
             else np.ascontiguousarray(np.asarray(dual_coef, dtype=np.float64).T))
    if refine_epochs is None:
        refine_epochs = _refine_budget(problem) if dual_coef is None else 0
    refine_epochs = check_int("refine_epochs", refine_epochs, 0)
    primal, dual, gap = problem.certificate(w, duals)
    if refine_epochs > 0 and np.isfinite(dual) and gap > ROUNDING * abs(primal):
        dual, gap = _refined_dual(problem, w, primal, dual, gap, duals, refine_epochs,
                                  driver=VectorSDCA(problem, 0, duals))
    return Certificate(gap, primal, dual, _loop.relative_gap(primal, dual, gap))


def _refined_dual(problem, w, primal, dual, gap, duals, max_epochs, driver=None):
    """The best (dual, gap) at w of SDCA epochs started from `duals`, checked after epochs 1,
    2, 4, ...; stops when a check gains less than 1 % of the remaining gap (or the gap is at
    rounding)."""
    if driver is None:
        driver = SOLVERS["sdca"](problem, solver_options(SOLVERS["sdca"], {}), 0, duals)
    epoch, next_check = 0, 1
    while epoch < max_epochs:
        driver.epoch()
        epoch += 1
        if epoch < next_check and epoch < max_epochs:
            continue
        next_check *= 2
        _, value, value_gap = problem.certificate(w, driver.duals)
        gained = value - dual
        if value_gap < gap:
            dual, gap = value, value_gap
        if gained < 0.01 * gap or gap <= ROUNDING * abs(primal):
            break
    return dual, gap
