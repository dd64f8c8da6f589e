"""k > 2 classes: one-vs-rest over the binary solvers, each problem certified.

The k problems (class m against the rest, labels +1 / -1) share one validated view of X and the
same objective; each runs the one training loop with its own driver, in a thread pool when
n_jobs > 1 (the kernels release the GIL). The model stacks the k binary models; its certificate
is that of the sum of the k objectives, sum_m P_m(w_m) - sum_m D_m(alpha_m), each term computed
by the shared gap function for exactly the coefficients and duals returned.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from fastdual import _loop
from fastdual._problem import build_problem, build_vector_problem
from fastdual._validation import check_int
from fastdual.model import Model


def _label(value):
    """A class label as a plain Python value (for history records and JSON)."""
    return value.item() if isinstance(value, np.generic) else value


def binary_views(model):
    """The k binary models of a one-vs-rest model (for warm starts and per-class use)."""
    return [Model(model.coef_[m], model.intercept_[m], np.array([-1.0, 1.0]),
                  dual_coef=None if model.dual_coef_ is None else model.dual_coef_[m],
                  loss=model.loss) for m in range(model.coef_.shape[0])]


def train(matrix, classes, index, objective, run, multiclass, n_jobs, warm_start):
    """k > 2 classes by the strategy multiclass_choice picks."""
    from fastdual._api import multiclass_choice
    strategy = multiclass_choice(multiclass, objective["loss"], classes.shape[0], run["solver"])
    n_jobs = 1 if n_jobs is None else check_int("n_jobs", n_jobs, 1)
    if strategy == "ovr":
        return train_ovr(matrix, classes, index, objective, run, n_jobs, warm_start)
    return train_joint(matrix, classes, index, objective, run, strategy, warm_start)


def train_joint(matrix, classes, index, objective, run, strategy, warm_start):
    """Crammer-Singer or multinomial: one problem with vector duals, Prox-SDCA, one certificate."""
    from fastdual.solvers.vector_sdca import VectorSDCA
    if run["solver"] not in ("sdca", "auto") or run["options"]:
        raise ValueError(f"multiclass={strategy!r} is trained by solver='sdca' without solver "
                         f"options, got solver={run['solver']!r} with options "
                         f"{sorted(run['options'])}")
    problem = build_vector_problem(matrix, classes, index, strategy, objective)
    initial = None
    if warm_start is not None:
        if (getattr(warm_start, "multiclass", None) != strategy
                or not np.array_equal(warm_start.classes_, classes)):
            raise ValueError(f"warm_start must be a multiclass={strategy!r} model of the same "
                             f"classes {classes.tolist()}")
        if warm_start.dual_coef_ is not None and warm_start.dual_coef_.shape[1] == index.shape[0]:
            initial = warm_start.dual_coef_.T
    driver = VectorSDCA(problem, run["seed"], initial)
    result = _loop.run(problem, driver, tol=run["tol"], max_epochs=run["max_epochs"],
                       check_every=run["check_every"], verbose=run["verbose"],
                       callback=run["callback"])
    if result is None:
        raise _loop.TrainingInterrupted(None)
    point = result.checkpoint
    d = problem.n_features
    model = Model(
        point.w[:d].T.copy(), point.w[d] * problem.bias, classes, dual_coef=point.duals.T.copy(),
        loss=problem.loss_name, loss_params=problem.loss_params, task="multiclass",
        multiclass=strategy,
        solver="sdca", alpha=problem.alpha, l1_ratio=problem.l1_ratio, l2_=problem.l2,
        l1_=problem.l1, l2_added_=0.0, fit_intercept=problem.fit_intercept,
        intercept_scaling=problem.intercept_scaling, intercept_mode=problem.intercept_mode,
        primal_=point.primal, dual_=point.dual, gap_=point.gap, converged_=result.converged,
        n_epochs_=point.epoch, history_=result.history, tol=run["tol"], n_features_in_=d)
    if result.interrupted and run["on_interrupt"] == "raise":
        raise _loop.TrainingInterrupted(model)
    _loop.warn_unconverged(result, f"multiclass={strategy!r}", run["tol"], run["max_epochs"],
                           problem)
    return model


def train_ovr(matrix, classes, index, objective, run, n_jobs, warm_start):
    from fastdual._api import solve
    k = classes.shape[0]
    starts = [None] * k
    if warm_start is not None:
        if (getattr(warm_start, "multiclass", None) != "ovr"
                or not np.array_equal(warm_start.classes_, classes)):
            raise ValueError(f"warm_start must be a one-vs-rest model of the same classes "
                             f"{classes.tolist()}, got one of classes "
                             f"{None if warm_start.classes_ is None else warm_start.classes_.tolist()}")
        starts = binary_views(warm_start)
    problems = [build_problem(matrix, np.where(index == m, 1.0, -1.0), **objective)
                for m in range(k)]
    callback = run["callback"]

    def train_class(m):
        per_class = dict(run, on_interrupt="raise")
        if callback is not None:
            label = _label(classes[m])
            per_class["callback"] = lambda info: callback(dict(info, **{"class": label}))
        return solve(problems[m], warm_start=starts[m], **per_class)

    try:
        if n_jobs == 1 or k == 1:
            models = [train_class(m) for m in range(k)]
        else:
            with ThreadPoolExecutor(max_workers=min(n_jobs, k)) as pool:
                models = list(pool.map(train_class, range(k)))
    except _loop.TrainingInterrupted:
        # The classes not yet trained leave no certified k-class model to return.
        raise _loop.TrainingInterrupted(None) from None
    return combine(models, classes, problems[0], models[0].solver, run["tol"])


def combine(models, classes, problem, solver, tol):
    """The k-class model: the binary models stacked, the certificate of their sum."""
    primal = float(sum(m.primal_ for m in models))
    dual = float(sum(m.dual_ for m in models))
    history = [dict(record, **{"class": _label(label)})
               for label, model in zip(classes, models) for record in model.history_]
    first = models[0]
    return Model(
        np.vstack([m.coef_ for m in models]), np.array([m.intercept_ for m in models]),
        classes, dual_coef=np.vstack([m.dual_coef_ for m in models]),
        class_certificates=np.array([[m.primal_, m.dual_, m.n_epochs_] for m in models]),
        loss=first.loss, loss_params=first.loss_params, task="multiclass", multiclass="ovr",
        solver=solver,
        alpha=first.alpha, l1_ratio=first.l1_ratio, l2_=first.l2_, l1_=first.l1_,
        l2_added_=float(max(m.l2_added_ for m in models)), fit_intercept=first.fit_intercept,
        intercept_scaling=first.intercept_scaling, intercept_mode=first.intercept_mode,
        primal_=primal, dual_=dual, gap_=float(sum(m.gap_ for m in models)),
        converged_=all(m.converged_ for m in models),
        n_epochs_=int(max(m.n_epochs_ for m in models)), history_=history, tol=tol,
        n_features_in_=problem.n_features)
