"""One problem, start to end: choose a driver, run the one loop, build the certified Model; and
the certificate of a given point (fastdual.duality_gap's core), with its SDCA refinement.

Every face trains through `solve` (binary and regression problems, one-vs-rest's classes, the
k-class joint problems) and every trained model is assembled by `make_model` from exactly one
certified checkpoint.
"""
import numbers
from collections import namedtuple

import numpy as np

from fastdual import _loop
from fastdual._validation import check_coef, check_int
from fastdual.model import Model
from fastdual.solvers import SOLVERS, get_solver, solver_options
from fastdual.solvers.auto import choose, plan
from fastdual.solvers.switching import Switching

Certificate = namedtuple("Certificate", ["gap", "primal", "dual", "relative_gap"])

# Refinement by default costs at most about REFINE_WORK multiply-adds (a fraction of a second),
# between 20 and 1000 epochs: many on small data, where it is cheap, few on large data.
REFINE_WORK = 1e8
ROUNDING = 1e-12    # a relative gap below this is rounding: nothing left to refine


def resolve_solver(problem, solver, options):
    """(driver class, its checked options) for a solver name or "auto" and the given options."""
    if isinstance(solver, str) and solver == "auto":
        solver, options = choose(problem, options, SOLVERS)
    driver_class = get_solver(solver, problem)
    return driver_class, solver_options(driver_class, options)


def make_driver(problem, solver, options, seed, warm_start=None, n_jobs=None):
    """The driver of a solver name or "auto" for the problem, started from a warm model's duals
    (and, for a primal solver, its coefficients) when one is given; n_jobs > 1 threads for its
    epochs if it has a parallel epoch (use_threads: SDCA), one thread otherwise. For "auto"
    with a method to switch to when the first stalls (auto.plan), the Switching driver around
    the first (the methods it switches to run on one thread)."""
    stages = None
    if isinstance(solver, str) and solver == "auto":
        stages = plan(problem, options, SOLVERS)
        solver, options = stages[0]
    driver_class, checked = resolve_solver(problem, solver, options)
    driver = driver_class(problem, checked, seed, initial_duals(problem, warm_start))
    if n_jobs is not None and n_jobs > 1 and hasattr(driver, "use_threads"):
        driver.use_threads(n_jobs)
    if warm_start is not None and hasattr(driver, "start_from"):   # a primal solver
        driver.start_from(warm_coefficients(problem, warm_start))
    if stages is not None and len(stages) > 1:
        driver = Switching(problem, driver, (solver, options), stages[1:], seed)
    return driver


def solve(problem, *, solver, options, seed, tol, max_epochs, check_every, verbose, callback,
          on_interrupt, warm_start=None, driver=None, n_jobs=None):
    """Train one problem in the loop and return its certified Model. `driver` (an instance)
    replaces the choice by name (the k-class joint problems, Dask's CoCoA+); n_jobs: threads
    for the epochs of a driver that has a parallel epoch (make_driver)."""
    with _loop.single_thread_blas():
        if driver is None:
            driver = make_driver(problem, solver, options, seed, warm_start, n_jobs)
        result = _loop.run(problem, driver, tol=tol, max_epochs=max_epochs,
                           check_every=check_every, verbose=verbose, callback=callback)
    if result is None:        # a second Ctrl-C before the first epoch ended
        raise _loop.TrainingInterrupted(None)
    name, switches = what_ran(driver, result)
    model = make_model(problem, result, name, tol, l2_added=driver.helper_l2,
                       switches=switches)
    if result.interrupted and on_interrupt == "raise":
        raise _loop.TrainingInterrupted(model)
    _loop.warn_unconverged(result, getattr(driver, "description", driver.name), tol,
                           max_epochs, problem)
    return model


def make_model(problem, result, solver, tol, *, l2_added=0.0, **extra):
    """The Model of a training result: exactly its checkpoint's arrays (handed over, not copied:
    on very wide data each copy is a d-vector; nothing reads the checkpoint after this), its
    certificate, its history, and the problem's description."""
    point = result.checkpoint
    w, duals = point.w, point.duals
    w.setflags(write=True)
    duals.setflags(write=True)
    coef, intercept = problem.coefficients(w)
    return Model(coef, intercept, problem.classes, dual_coef=problem.dual_coef(duals),
                 solver=solver, l2_added_=l2_added, primal_=point.primal, dual_=point.dual,
                 gap_=point.gap, converged_=result.converged, n_epochs_=point.epoch,
                 history_=result.history, tol=tol, **problem.describe(), **extra)


def what_ran(driver, result):
    """(the solver that made the result's checkpoint, the switches before it): a Switching
    driver's switches made before the checkpoint (all of them but after Ctrl-C, whose best
    checkpoint may be older than a switch); the driver's name and [] for any other driver."""
    switches = [dict(s) for s in getattr(driver, "switches", None) or ()
                if s["epoch"] < result.checkpoint.epoch]
    return (switches[-1]["solver"] if switches else getattr(driver, "first_name", driver.name),
            switches)


def initial_duals(problem, warm_start):
    """A feasible dual start: the warm model's duals when they fit, else duals from its margins."""
    if warm_start is None:
        return None
    if warm_start.loss != problem.loss_name:
        raise ValueError(f"warm_start was trained with loss={warm_start.loss!r}, "
                         f"not loss={problem.loss_name!r}")
    coef = np.asarray(warm_start.coef_)
    if coef.ndim != 1:
        raise ValueError(f"warm_start is a {coef.shape[0]}-class model (coef_ of shape "
                         f"{coef.shape}); this problem is one binary or regression problem")
    if coef.shape[0] != problem.n_features:
        raise ValueError(f"warm_start has {coef.shape[0]} features, X has {problem.n_features}")
    check_coef(coef, problem.n_features, "warm_start's coef_")
    if not np.isfinite(warm_start.intercept_):
        raise ValueError("warm_start's intercept_ contains NaN or infinity")
    duals = warm_start.dual_coef_
    if duals is not None and duals.shape[0] == problem.n_samples:
        if np.all(np.isfinite(problem.loss.dual_values(problem.y, duals))):
            return duals
    return problem.duals_from_margins(warm_coefficients(problem, warm_start))


def warm_coefficients(problem, warm_start):
    """A warm model's w in the problem's terms: its coef_, the intercept feature's weight last."""
    return np.append(warm_start.coef_,
                     warm_start.intercept_ / problem.bias if problem.bias else 0.0)


def certify_coefficients(problem, coef, intercept, dual_coef, refine_epochs):
    """The Certificate of a binary or regression model (coef, intercept: None for a model
    without one, else LIBLINEAR's intercept feature's weight times intercept_scaling) on the
    problem: its duals dual_coef if given, else built from its margins and refined by SDCA
    epochs (refine_epochs None: the default budget without dual_coef, none with it)."""
    d = problem.n_features
    w = np.empty(d + 1)
    w[:d] = check_coef(coef, d)
    w[d] = 0.0
    if intercept is not None:
        if isinstance(intercept, bool) or not isinstance(intercept, numbers.Real) \
                or not np.isfinite(intercept):
            raise ValueError(f"intercept must be None or a finite real number, got {intercept!r}")
        w[d] = float(intercept) / problem.bias
    if refine_epochs is None:
        refine_epochs = (refine_budget(problem) if dual_coef is None and problem.refinable
                         else 0)
    refine_epochs = check_int("refine_epochs", refine_epochs, 0)
    if refine_epochs > 0 and not problem.refinable:
        raise ValueError(problem.not_refinable)
    if dual_coef is None:
        duals = problem.duals_from_margins(w)
    else:
        duals = check_coef(dual_coef, problem.n_duals, name="dual_coef")
    return certificate(problem, w, duals, refine_epochs)


def certificate(problem, w, duals, refine_epochs, refiner=None):
    """The Certificate of the point w (the problem's layout) with the given feasible duals,
    their dual value raised by up to refine_epochs epochs of SDCA (`refiner(duals)` builds the
    problem's SDCA driver, only when refinement runs; default: the scalar SDCA)."""
    primal, dual, gap = problem.certificate(w, duals)
    if refine_epochs > 0 and np.isfinite(dual) and gap > ROUNDING * abs(primal):
        if refiner is None:
            driver = SOLVERS["sdca"](problem, solver_options(SOLVERS["sdca"], {}), 0, duals)
            driver.start_from(w)          # (a free intercept's weight: SDCA's first centre)
        else:
            driver = refiner(duals)
        dual, gap = refined_dual(problem, w, primal, dual, gap, driver, refine_epochs)
    return Certificate(gap, primal, dual, _loop.relative_gap(primal, dual, gap))


def refine_budget(problem):
    """The default refinement: about REFINE_WORK multiply-adds, 20 to 1000 epochs."""
    nnz = problem.X.data.shape[0] if problem.X.is_sparse else problem.n_samples * problem.n_features
    return int(np.clip(REFINE_WORK / (nnz + problem.n_samples), 20, 1000))


def refined_dual(problem, w, primal, dual, gap, driver, max_epochs):
    """The best (dual, gap) at w of SDCA epochs started from the driver's duals, checked after
    epochs 1, 2, 4, ...; stops when a check gains less than 1 % of the remaining gap (or the gap
    is at rounding)."""
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
