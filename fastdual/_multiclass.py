"""Everything k-class: the strategy, one-vs-rest over the binary solvers, the joint problems with
vector duals (Crammer-Singer, multinomial) and their certificates.

One-vs-rest: the k problems (class m against the rest, labels +1 / -1) share one validated view
of X and the same objective; each runs the one training loop with its own driver, in a thread
pool when n_jobs > 1 (the kernels release the GIL). The model stacks the k binary models; its
certificate is that of the sum of the k objectives, sum_m P_m(w_m) - sum_m D_m(alpha_m), each
term computed by the shared gap function for exactly the coefficients and duals returned. One
Ctrl-C stops every class (a flag shared by their loops): the finished classes and each
unfinished class's certified point make the model returned, still a certificate of the sum.

Joint: one problem whose duals are vectors, trained by Prox-SDCA (solvers/vector_sdca.py) in
the same loop, certified as one (_core/gap.pyx primal_dual_vector).
"""
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
import numbers
import warnings

import numpy as np

from fastdual import _fit, _loop
from fastdual._core import gap as _gap, multiclass as _vector_losses, rows as _rows
from fastdual._problem import Problem, build_problem
from fastdual._validation import check_int
from fastdual.losses import LOSSES, get_loss_spec
from fastdual.model import Model
from fastdual.solvers.vector_sdca import VectorSDCA

MULTICLASS = ("ovr", "crammer_singer", "multinomial")


def joint_loss(strategy, loss):
    """The k-class loss (_core/multiclass.pxd's VectorLoss) of a joint strategy, from its binary
    loss: Crammer-Singer smoothed as the binary loss is (smooth_hinge's gamma; 0 for the hinge),
    the multinomial. Which binary losses extend to which strategy is the loss table's `joint`
    column (fastdual.losses)."""
    if strategy == "crammer_singer":
        return _vector_losses.CrammerSinger(loss.gamma)
    return _vector_losses.Multinomial()


def joint_losses(strategy):
    return [name for name, spec in LOSSES.items() if spec.joint == strategy]


def multiclass_choice(multiclass, loss, n_classes, solver="sdca", l1_ratio=0.0):
    """The strategy for k classes: "ovr" (one-vs-rest, every binary loss and solver),
    "crammer_singer" (hinge) or "multinomial" (logistic; both by solver="sdca", with an l2
    term); None: multinomial for logistic with solver="sdca" or "auto" and an l2 term
    (l1_ratio < 1), one-vs-rest otherwise (pure l1 included: scikit-learn's liblinear)."""
    spec = get_loss_spec(loss)
    if multiclass is None:
        pure_l1 = isinstance(l1_ratio, numbers.Real) and l1_ratio >= 1.0   # (validated later)
        joint = spec.joint == "multinomial" and solver in ("sdca", "auto") and not pure_l1
        return "multinomial" if joint else "ovr"
    if multiclass not in MULTICLASS:
        raise ValueError(f"multiclass must be None or one of {list(MULTICLASS)}, got "
                         f"{multiclass!r}")
    if multiclass != "ovr" and spec.joint != multiclass:
        works = ["ovr"] + ([spec.joint] if spec.joint else [])
        raise ValueError(f"multiclass={multiclass!r} needs loss in {joint_losses(multiclass)}; "
                         f"loss={loss!r} trains k classes with multiclass in {works}")
    return multiclass


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
    strategy = multiclass_choice(multiclass, objective["loss"], classes.shape[0], run["solver"],
                                 objective["l1_ratio"])
    n_jobs = 1 if n_jobs is None else check_int("n_jobs", n_jobs, 1)
    if strategy == "ovr":
        return train_ovr(matrix, classes, index, objective, run, n_jobs, warm_start)
    return train_joint(matrix, classes, index, objective, run, strategy, warm_start)


# -- one-vs-rest ----------------------------------------------------------------------------------

def class_problems(matrix, classes, index, objective):
    """The k binary problems of one-vs-rest (class m against the rest) on one view of X: the
    first validated and assembled by build_problem, the others its copies with their own
    targets (every class is present and so is the rest: the same two labels), sharing the
    rows (whose squared norms the Matrix computes once: one pass for all k) and the weights."""
    first = build_problem(matrix, np.where(index == 0, 1.0, -1.0), **objective)
    return [first] + [replace(first, y=np.where(index == m, 1.0, -1.0))
                      for m in range(1, classes.shape[0])]


def train_ovr(matrix, classes, index, objective, run, n_jobs, warm_start):
    k = classes.shape[0]
    starts = [None] * k
    if warm_start is not None:
        if (getattr(warm_start, "multiclass", None) != "ovr"
                or not np.array_equal(warm_start.classes_, classes)):
            raise ValueError(f"warm_start must be a one-vs-rest model of the same classes "
                             f"{classes.tolist()}, got one of classes "
                             f"{None if warm_start.classes_ is None else warm_start.classes_.tolist()}")
        starts = binary_views(warm_start)
    problems = class_problems(matrix, classes, index, objective)
    callback = run["callback"]
    per_class = {key: run[key] for key in ("tol", "max_epochs", "check_every", "verbose")}
    # The first PILOT_CLASSES classes, then the others with their check schedules' prior (for
    # the smooth losses: class_prior).
    pilots = PILOT_CLASSES if k > PILOT_CLASSES and problems[0].loss.gamma > 0.0 else k

    def train_class(m, stop, prior=None):
        problem = problems[m]
        driver = _fit.make_driver(problem, run["solver"], run["options"], run["seed"], starts[m])
        hook = None
        if callback is not None:
            label = _label(classes[m])
            hook = lambda info: callback(dict(info, **{"class": label}))   # noqa: E731
        result = _loop.run(problem, driver, callback=hook, interrupt=stop, prior=prior,
                           **per_class)
        if result is None:
            return None, None, driver
        name, switches = _fit.what_ran(driver, result)
        return _fit.make_model(problem, result, name, run["tol"], l2_added=driver.helper_l2,
                               switches=switches), result, driver

    # One flag for every class: Ctrl-C (or a KeyboardInterrupt in one class's callback) stops
    # them all between epochs; a class that had not started certifies its starting point, so
    # the interrupted model holds every class: the finished ones as they finished, the one(s)
    # running at their best certified point, the others at their start.
    with _loop.InterruptFlag() as stop, _loop.single_thread_blas():
        pool = None
        try:
            if n_jobs == 1 or k == 1:
                outcomes = [train_class(m, stop) for m in range(pilots)]
                prior = class_prior(outcomes)
                outcomes += [train_class(m, stop, prior) for m in range(pilots, k)]
            else:
                pool = ThreadPoolExecutor(max_workers=min(n_jobs, k))
                outcomes = list(pool.map(lambda m: train_class(m, stop), range(pilots)))
                prior = class_prior(outcomes)
                outcomes += list(pool.map(lambda m: train_class(m, stop, prior),
                                          range(pilots, k)))
        except KeyboardInterrupt:
            # A second Ctrl-C while the pool's classes finish their epochs: stop at once (the
            # flag is set, so the threads end after their current epoch, in the background);
            # their certified points are not in hand, so no k-class model is assembled.
            stop.pressed = True
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
                pool = None
            raise _loop.TrainingInterrupted(None) from None
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
    if any(model is None for model, _, _ in outcomes):
        raise _loop.TrainingInterrupted(None)
    models = [model for model, _, _ in outcomes]
    model = combine(models, classes, problems[0], models[0].solver, run["tol"])
    interrupted = any(result.interrupted for _, result, _ in outcomes)
    if interrupted:
        if run["on_interrupt"] == "raise":
            raise _loop.TrainingInterrupted(model)
        warnings.warn(f"one-vs-rest: interrupted; returning the certified model of the classes "
                      f"so far (relative duality gap {model.relative_gap_:.3g})",
                      _loop.ConvergenceWarning, stacklevel=4)
        return model
    for problem, (_, result, driver) in zip(problems, outcomes):
        _loop.warn_unconverged(result, driver.name, run["tol"], run["max_epochs"], problem)
    return model


# One-vs-rest trains its first PILOT_CLASSES classes first; the others' check schedules start
# from the fastest convergence rate among them (CheckSchedule's prior), so that their first
# checks skip the intervals that only measure a rate (1, 2, 4, ...). The fastest, so that a
# class converging faster than the pilots is checked late only where it is more than 1/0.7
# times faster; the same pilots and prior whatever n_jobs (the same bits). For the smooth losses
# only (Loss.gamma > 0), whose gaps fall at a rate the classes share (news20's one-vs-rest
# squared hinge: 27 % fewer certificates, 0.87-0.94x the time). The hinge's gap is neither
# monotone nor geometric: on sector's 105 classes 38-44 % fewer certificates and 0.64-0.91x the
# time, but on news20's raw counts it stays near 1 for tens of epochs, then falls, and the
# classes after the pilots ran 22 % more epochs and took 1.55-1.58x the time
# (docs/benchmarks.md F3).
PILOT_CLASSES = 4


def class_prior(outcomes):
    """CheckSchedule's prior (rate, epochs) from the pilot classes' outcomes (model, Result,
    driver): the fastest of their convergence rates and the epochs that class ran (its last
    check); None where none has a rate (a pilot interrupted, or certified at its first
    check)."""
    rates = [(_loop.convergence_rate(result.history), result.history[-1]["epoch"])
             for _, result, _ in outcomes if result is not None and result.history]
    rates = [(rate, epochs) for rate, epochs in rates if rate is not None]
    return min(rates) if rates else None


def combine(models, classes, problem, solver, tol):
    """The k-class model: the binary models stacked, the certificate of their sum."""
    primal = float(sum(m.primal_ for m in models))
    dual = float(sum(m.dual_ for m in models))
    history = [dict(record, **{"class": _label(label)})
               for label, model in zip(classes, models) for record in model.history_]
    return Model(
        np.vstack([m.coef_ for m in models]), np.array([m.intercept_ for m in models]),
        classes, dual_coef=np.vstack([m.dual_coef_ for m in models]),
        class_certificates=np.array([[m.primal_, m.dual_, m.n_epochs_] for m in models]),
        multiclass="ovr", solver=solver,
        l2_added_=float(max(m.l2_added_ for m in models)),
        primal_=primal, dual_=dual, gap_=float(sum(m.gap_ for m in models)),
        converged_=all(m.converged_ for m in models),
        n_epochs_=int(max(m.n_epochs_ for m in models)), history_=history, tol=tol,
        switches=[dict(s, **{"class": _label(label)}) for label, m in zip(classes, models)
                  for s in m.switches_],
        **dict(problem.describe(), task="multiclass"))


# -- the joint problems ---------------------------------------------------------------------------

@dataclass
class VectorProblem(Problem):
    """A k-class problem with vector duals (multiclass="crammer_singer" or "multinomial"):
    labels are each sample's class index, w is (n_features + 1, k) and the duals (n, k); the
    certificate is _core/gap.primal_dual_vector (docs/math.md, "Multiclass")."""
    labels: np.ndarray = None
    strategy: str = ""
    n_classes: int = 0
    vector_loss: object = None  # the k-class loss, a _core.multiclass.VectorLoss

    def describe(self):
        return dict(super().describe(), task="multiclass", multiclass=self.strategy)

    def coefficients(self, w):
        return w[:self.n_features].T.copy(), w[self.n_features] * self.bias

    def dual_coef(self, duals):
        return duals.T.copy()

    def certificate(self, w, duals, l2=None, v_out=None, feasible=False, exact_v=False):
        """(P, D, gap) by _core/gap.primal_dual_vector (V summed plainly: exact_v is for
        drivers with vector v none of which takes it over)."""
        if v_out is None:
            v_out = np.empty((self.n_features + 1, self.n_classes))
        data, indices, indptr = self.X.kernel_args
        return _gap.primal_dual_vector(data, indices, indptr, self.n_samples, self.n_features,
                                       self.bias, self.labels, self.sample_weight,
                                       np.ascontiguousarray(w, dtype=np.float64),
                                       np.ascontiguousarray(duals, dtype=np.float64),
                                       self.l2 if l2 is None else l2, self.l1,
                                       self.vector_loss, v_out)

    def dual_vector(self, duals, l2=None, out=None, feasible=False):
        """V(duals) = 1/(l2 n) sum_i c_i x_i duals_i^T, (n_features + 1, k): one transpose
        product per class."""
        if out is None:
            out = np.empty((self.n_features + 1, self.n_classes))
        l2 = self.l2 if l2 is None else l2
        scaled = np.asarray(duals, dtype=np.float64) \
            * (self.sample_weight / (l2 * self.n_samples))[:, None]
        column = np.empty(self.n_features + 1)
        for m in range(self.n_classes):
            _rows.transpose_times(*self.X.kernel_args, self.n_samples, self.n_features,
                                  self.bias, np.ascontiguousarray(scaled[:, m]), column)
            out[:, m] = column
        return out

    def feasible_duals(self, duals):
        return np.asarray(duals, dtype=np.float64)

    def duals_from_margins(self, w):
        margins = self.X.matvec(w[:self.n_features]) + self.bias * w[self.n_features]
        return self.vector_loss.margin_duals_of(np.ascontiguousarray(margins), self.labels)


def build_vector_problem(matrix, classes, index, strategy, objective):
    """The k-class problem of a strategy with vector duals, validated as build_problem does."""
    multiclass_choice(strategy, objective["loss"], classes.shape[0])
    base = build_problem(matrix, np.where(index == 0, 1.0, -1.0), **objective)
    if base.l2 == 0.0:
        raise ValueError(f"multiclass={strategy!r} needs an l2 term (l1_ratio < 1)")
    if base.free_intercept:
        raise ValueError(f"multiclass={strategy!r} has no free intercept; use "
                         "regularize_intercept=True")
    fields = {name: getattr(base, name) for name in Problem.__dataclass_fields__}
    fields.update(classes=classes, task="multiclass")
    return VectorProblem(**fields, labels=np.asarray(index, dtype=np.intp), strategy=strategy,
                         n_classes=int(classes.shape[0]),
                         vector_loss=joint_loss(strategy, base.loss))


def train_joint(matrix, classes, index, objective, run, strategy, warm_start):
    """Crammer-Singer or multinomial: one problem with vector duals, Prox-SDCA, one certificate."""
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
    return _fit.solve(problem, driver=VectorSDCA(problem, run["seed"], initial), **run)


# -- certificates of k-class models ---------------------------------------------------------------

def certificate(matrix, classes, index, strategy, coef, intercept, dual_coef, refine_epochs,
                objective):
    """The certificate of a k-class model: of the sum of its k binary objectives (one-vs-rest)
    or of its joint problem (vector duals)."""
    k = classes.shape[0]
    if strategy == "ovr":
        parts = [_fit.certify_coefficients(
            problem, np.asarray(coef)[m], None if intercept is None else float(intercept[m]),
            None if dual_coef is None else dual_coef[m], refine_epochs)
            for m, problem in enumerate(class_problems(matrix, classes, index, objective))]
        primal = float(sum(c.primal for c in parts))
        dual = float(sum(c.dual for c in parts))
        gap = float(sum(c.gap for c in parts))
        return _fit.Certificate(gap, primal, dual, _loop.relative_gap(primal, dual, gap))
    problem = build_vector_problem(matrix, classes, index, strategy, objective)
    w = np.zeros((problem.n_features + 1, k))
    w[:-1] = np.asarray(coef, dtype=np.float64).T
    if intercept is not None:
        w[-1] = np.asarray(intercept, dtype=np.float64) / problem.bias
    if not np.all(np.isfinite(w)):
        raise ValueError("coef and intercept must be finite")
    duals = (problem.duals_from_margins(w) if dual_coef is None
             else np.ascontiguousarray(np.asarray(dual_coef, dtype=np.float64).T))
    if not np.all(np.isfinite(duals)):
        raise ValueError("dual_coef contains NaN or infinity")
    if refine_epochs is None:
        refine_epochs = _fit.refine_budget(problem) if dual_coef is None else 0
    refine_epochs = check_int("refine_epochs", refine_epochs, 0)
    return _fit.certificate(problem, w, duals, refine_epochs,
                            refiner=lambda start: VectorSDCA(problem, 0, start))
