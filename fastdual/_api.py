"""The face: fastdual.train and fastdual.duality_gap. Validates the call, builds the problem
(binary / regression, k-class, structured) and hands it to the room that runs it: _fit for one
problem, _multiclass for k classes."""

import inspect

import numpy as np

from fastdual import _fit, _multiclass
from fastdual._defaults import DEFAULTS
from fastdual._fit import solve
from fastdual._loop import TrainingInterrupted
from fastdual._problem import build_problem, class_multipliers
from fastdual._validation import (check_choice, check_int, check_labels, check_matrix,
                                  check_positive, check_seed, check_stream_weights,
                                  check_verbose, feature_names)
from fastdual.losses import get_loss_spec
from fastdual.model import Model
from fastdual.solvers import SOLVERS
from fastdual.solvers.f1 import build_f1_problem


def train(X, y, *, loss=DEFAULTS["loss"], alpha=None, C=None, l1_ratio=0.0, fit_intercept=True,
          intercept_scaling=1.0, regularize_intercept=DEFAULTS["regularize_intercept"],
          sample_weight=None, tol=DEFAULTS["tol"], max_epochs=DEFAULTS["max_epochs"],
          solver="auto", random_state=None, verbose=0, callback=None, warm_start=None,
          check_every="auto", on_interrupt="raise", multiclass=None, n_jobs=None,
          class_weight=None, **options):
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
        epsilon_insensitive, squared_epsilon_insensitive.
    multiclass : how k > 2 labels are trained. "ovr": one binary problem per class (that class
        against the rest, every loss and solver) on one validated view of X, each certified;
        the model's primal_, dual_, gap_ are the sums over the classes (a certificate of the
        sum of the k objectives), class_primal_ etc. per class. "crammer_singer" (loss="hinge")
        and "multinomial" (loss="logistic"): one joint problem, solved by Prox-SDCA with vector
        duals (solver="sdca") and certified as one. None (default): "multinomial" for
        logistic with solver="sdca", "ovr" otherwise. coef_ is (k, n_features) either way.
    n_jobs : threads (None: 1). For one binary or regression problem trained by "sdca", the
        threads of each epoch: asynchronous parallel dual coordinate ascent (PASSCoDe), each
        thread over its block of the epoch's permutation; the model is certified as
        always, but no longer bit-identical from run to run (the threads' timing decides the
        order of the updates); sampling must be "permutation". The other solvers run one
        thread. For one-vs-rest k-class problems, the classes are trained in parallel (each
        class's epochs on one thread), and the result is bit-identical whatever n_jobs.
        docs/solvers/sdca.md "Threads".
    class_weight : None, "balanced" (n / (k * count of the class), scikit-learn's definition)
        or a dict {label: weight} (labels absent weigh 1): multiplies each sample's weight by
        its class's, so that an integer class weight is that many copies of the class's rows.
    loss : one of fastdual.LOSSES.
    tol : stop when (P - D) / |P| <= tol; 0 runs exactly max_epochs.
    max_epochs : passes over the data, for every solver (a Newton or AGM iteration counts the
        passes it makes; the last step may go past the budget by its own passes).
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
    **options : the loss's parameters (gamma for smooth_hinge, epsilon for the two
        epsilon-insensitive losses) and the solver's options, fastdual.SOLVERS[solver].options; for
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
    verbose = check_verbose(verbose)
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
    names = feature_names(X)
    try:
        model = _train(X, y, objective, run, multiclass, class_weight, warm_start, n_jobs)
    except TrainingInterrupted as interrupted:
        if interrupted.model is not None:
            interrupted.model.feature_names_in_ = names
        raise
    model.feature_names_in_ = names
    return model


def _train(X, y, objective, run, multiclass, class_weight, warm_start, n_jobs):
    loss, sample_weight = objective["loss"], objective["sample_weight"]
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
    _multiclass.multiclass_choice(multiclass, loss, 2)
    if n_jobs is not None:
        n_jobs = check_int("n_jobs", n_jobs, 1)
    problem = build_problem(X, y, **objective)
    return solve(problem, warm_start=warm_start, n_jobs=n_jobs, **run)


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
    """Each sample's weight times its class's (class_multipliers), the weights as given
    (validated, a scalar broadcast); build_problem normalises the product."""
    per_class = class_multipliers(class_weight, classes,
                                  np.bincount(index, minlength=classes.shape[0]))
    weights = check_stream_weights(sample_weight, index.shape[0]) * per_class[index]
    if not np.any(weights > 0):
        raise ValueError(f"class_weight {class_weight!r} gives every sample the weight 0"
                         + ("" if sample_weight is None else " (with sample_weight)"))
    return weights


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


def duality_gap(X, y, coef, intercept=None, *, loss=DEFAULTS["loss"], alpha=None, C=None,
                l1_ratio=0.0, sample_weight=None, intercept_scaling=1.0,
                regularize_intercept=DEFAULTS["regularize_intercept"], dual_coef=None, refine_epochs=None, multiclass=None,
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
    to the dual. With the l2 penalty alone the refinement runs SDCA's free intercept (a
    proximal point on it, centred first at the model's intercept), each check's duals
    projected; with an l1 term there is no refinement (refine_epochs must be 0 or None) and
    the bound is that of the projected margin duals, or of the projected dual_coef.

    coef may be a fastdual Model (then intercept stays None): its coefficients certified on
    its own objective, the loss, loss parameters, strength, l1_ratio, intercept (its scaling and
    whether it is penalised) and k-class strategy it carries, for each keyword the call leaves
    at its default; its dual_coef_ too when it fits these n samples (dual_coef= not given).
    A LIBLINEAR model file holds no C (nor -p): give C= (and epsilon=) for a loaded one. The
    sample weights are the call's, as at training (class weights included).
    """
    if isinstance(coef, Model):
        return _certify_model(X, y, coef, intercept, dict(
            loss=loss, alpha=alpha, C=C, l1_ratio=l1_ratio, sample_weight=sample_weight,
            intercept_scaling=intercept_scaling, regularize_intercept=regularize_intercept,
            dual_coef=dual_coef, refine_epochs=refine_epochs, multiclass=multiclass,
            **loss_params))
    if np.ndim(coef) == 2:
        matrix = check_matrix(X)
        classes, index = check_labels(y, matrix.n_samples)
        k = classes.shape[0]
        if k == 2 and np.shape(coef)[0] == 1:
            # scikit-learn's binary coef_ (1, d) and intercept_ (1,): one coefficient vector.
            coef = np.asarray(coef)[0]
            if intercept is not None and np.shape(intercept) == (1,):
                intercept = np.asarray(intercept, dtype=np.float64)[0]
            if dual_coef is not None and np.ndim(dual_coef) == 2 and np.shape(dual_coef)[0] == 1:
                dual_coef = np.asarray(dual_coef)[0]
            X = matrix
        else:
            if np.shape(coef)[0] != k:
                raise ValueError(f"coef has {np.shape(coef)[0]} rows but y has {k} classes")
            if intercept is not None and np.shape(intercept) != (k,):
                raise ValueError(f"intercept must be None or have shape ({k},), got shape "
                                 f"{np.shape(intercept)}")
            if dual_coef is not None and np.shape(dual_coef) != (k, matrix.n_samples):
                raise ValueError(f"dual_coef of a k-class model must have shape "
                                 f"({k}, {matrix.n_samples}), got {np.shape(dual_coef)}")
            strategy = _multiclass.multiclass_choice(multiclass, loss, k, l1_ratio=l1_ratio)
            return _multiclass.certificate(matrix, classes, index, strategy, coef, intercept,
                                           dual_coef, refine_epochs, dict(
                                               loss=loss, alpha=alpha, C=C, l1_ratio=l1_ratio,
                                               fit_intercept=intercept is not None,
                                               intercept_scaling=intercept_scaling,
                                               sample_weight=sample_weight,
                                               loss_params=loss_params,
                                               regularize_intercept=regularize_intercept))
    objective = dict(loss=loss, alpha=alpha, C=C, l1_ratio=l1_ratio,
                     fit_intercept=intercept is not None, intercept_scaling=intercept_scaling,
                     sample_weight=sample_weight, loss_params=loss_params,
                     regularize_intercept=regularize_intercept)
    if get_loss_spec(loss).structured:
        problem = build_f1_problem(X, y, objective)
    else:
        problem = build_problem(X, y, **objective)
    return _fit.certify_coefficients(problem, coef, intercept, dual_coef, refine_epochs)


def _certify_model(X, y, model, intercept, given):
    """duality_gap(X, y, model, ...): the model's objective, but for what the call sets."""
    if intercept is not None:
        raise ValueError("duality_gap(X, y, model) reads the intercept from the model: give "
                         "intercept=None (or pass model.coef_ and an intercept instead)")
    defaults = {name: parameter.default for name, parameter in
                inspect.signature(duality_gap).parameters.items()}
    args = dict(given)
    own = dict(loss=model.loss, l1_ratio=model.l1_ratio,
               intercept_scaling=model.intercept_scaling,
               regularize_intercept=model.intercept_mode != "free", multiclass=model.multiclass)
    overridden = False
    for name, value in own.items():
        if _is_default(args[name], defaults[name]):
            args[name] = value
        overridden = overridden or args[name] != value
    if args["alpha"] is None and args["C"] is None:
        if not np.isfinite(model.alpha):
            raise ValueError("this model does not hold its regularization strength (a LIBLINEAR "
                             "model file has no C): give C= (LIBLINEAR's -c) or alpha=")
        args["alpha"] = model.alpha
    else:
        overridden = True
    for name, value in (model.loss_params or {}).items():
        if name in get_loss_spec(args["loss"]).params:
            args.setdefault(name, value)
    overridden = overridden or any(args[name] != value
                                   for name, value in (model.loss_params or {}).items()
                                   if name in args)
    # The model's duals are a dual point of its own objective only.
    if args["dual_coef"] is None and not overridden and model.dual_coef_ is not None \
            and np.shape(model.dual_coef_)[-1] == np.shape(y)[0]:
        args["dual_coef"] = model.dual_coef_
    with_intercept = model.fit_intercept and model.intercept_mode != "none"
    return duality_gap(X, y, model.coef_, model.intercept_ if with_intercept else None, **args)


def _is_default(value, default):
    return value is default or (type(value) is type(default) and value == default)
