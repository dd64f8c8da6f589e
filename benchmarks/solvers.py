"""Adapters: every solver of the comparison behind one small interface.

A solver maps the benchmark objective (see :mod:`benchmarks.objective`) to its own
parameters, and exposes

* ``prepare(X, y, problem, alpha)``: untimed setup (data conversion that a user
  would do once), returns a context;
* ``fit(ctx, budget)``: the timed call, returns the coefficient vector ``w``;
* ``kind``: ``"iter"`` (budget = number of epochs / iterations, run from scratch)
  or ``"tol"`` (budget = stopping tolerance, shrinking).

Parameter mappings (each is checked numerically by ``benchmarks.verify_mapping``
and, for LIBLINEAR and scikit-learn, by ``tests/test_peer_mapping.py``):

* LIBLINEAR ``C sum loss + 1/2 ||w||^2``: C = 1/(alpha n); for ``-s 11/12 -p 0``
  (``C sum (z-y)^2 + 1/2 ||w||^2``): C = 1/(2 alpha n).
* scikit-learn LinearSVC / LogisticRegression: the same C; elastic net
  ``C sum loss + (1-rho)/2 ||w||^2 + rho ||w||_1``: C = 1/(alpha n), l1_ratio = rho.
* scikit-learn Ridge ``||y - Xw||^2 + a ||w||^2``: a = alpha n.
* scikit-learn SGDClassifier / SGDRegressor: alpha = alpha (same objective).
* Snap ML ``sum loss + lambda/2 ||w||^2``: regularizer = alpha n (ridge: the loss is
  1/2 (z-y)^2, the same regularizer).
* tick: models average the loss (ModelLinReg is 1/2 (z-y)^2, ModelQuadraticHinge
  is 1/2 max(0, 1-yz)^2), ProxL2Sq(s) is s/2 ||w||^2, ProxElasticNet(s, r) is
  s ((1-r)/2 ||w||^2 + r ||w||_1): strength = alpha, except squared hinge where
  the model's 1/2 halves the data term: strength = alpha/2.
* lightning SDCA: alpha, l1_ratio as here (for the squared hinge it halves the
  loss and both penalties internally: same objective up to a factor 1/2);
  SAGA: alpha = l2, beta = l1 (penalty='l1').
"""
import os
import warnings

import numpy as np
import scipy.sparse as sp

from .objective import PROBLEMS

ITER_BUDGETS = sorted({int(round(10 ** (k / 5.0))) for k in range(0, 26)})  # 1 .. 100000
TOL_BUDGETS = [10.0 ** -k for k in range(1, 15)]


class Unavailable(Exception):
    """The solver's package is not importable here."""


class Solver:
    name = ""
    kind = "iter"
    problems = ()
    package = ""

    def available(self):
        """None when usable, else a one-line reason."""
        return None

    def supports(self, problem):
        return problem in self.problems

    def prepare(self, X, y, problem, alpha):
        return {"X": X, "y": y, "problem": PROBLEMS[problem], "alpha": alpha,
                "n": X.shape[0], "d": X.shape[1]}

    def fit(self, ctx, budget):
        raise NotImplementedError

    def budgets(self):
        return ITER_BUDGETS if self.kind == "iter" else TOL_BUDGETS


def _import_reason(modname):
    try:
        __import__(modname)
        return None
    except Exception as exc:  # ImportError, or a binary module failing to load
        return "import %s failed: %s: %s" % (modname, type(exc).__name__, exc)


def _classifier_coef(coef, classes):
    """coef_ of a binary classifier as the weight of label +1."""
    w = np.asarray(coef, dtype=np.float64).ravel()
    if classes is not None and len(classes) == 2 and classes[1] != 1 and classes[0] == 1:
        w = -w
    return w


# --------------------------------------------------------------------------- fastdual

FASTDUAL_LOSS = {"hinge": "hinge", "squared_hinge": "squared_hinge", "logistic": "logistic",
                 "smooth_hinge": "smooth_hinge", "enet_logistic": "logistic", "ridge": "squared"}


class FastDual(Solver):
    """fastdual with one of its solvers: "fastdual" is SDCA, "fastdual-acc" accelerated SDCA
    (smooth losses), "fastdual-spdc" SPDC, "fastdual-newton" the primal Newton solver (smooth
    losses, l2), "fastdual-auto" solver="auto"."""
    package = "fastdual"
    problems = tuple(FASTDUAL_LOSS)

    def __init__(self, solver="sdca", **options):
        self.solver = solver
        self.options = options
        self.name = ("fastdual" if solver == "sdca" else "fastdual-" + solver) + (
            "-acc" if options.get("acceleration") else "")
        if solver == "newton" or options.get("acceleration"):
            self.problems = ("squared_hinge", "logistic", "smooth_hinge", "ridge",
                             "enet_logistic")

    def budgets(self):
        # A Newton iteration costs several passes: every count up to 40 (the shared ladder
        # jumps 6 -> 10 -> 16, which would overstate its time to target), then the ladder; auto
        # may pick Newton, so it gets the same.
        if self.solver == "newton" or (self.solver == "auto"
                                       and getattr(self, "auto_picks_newton", True)):
            return list(range(1, 41)) + [b for b in super().budgets() if b > 40]
        return super().budgets()

    def prepare(self, X, y, problem, alpha):
        ctx = super().prepare(X, y, problem, alpha)
        if self.solver == "auto":    # the ladder of the solver auto picks (fastdual's rule)
            from fastdual._problem import build_problem
            from fastdual.solvers import auto
            kw = self._kwargs(ctx)
            params = {"gamma": kw["gamma"]} if "gamma" in kw else {}
            built = build_problem(X, y, loss=kw["loss"], alpha=alpha, C=None,
                                  l1_ratio=kw["l1_ratio"], fit_intercept=False,
                                  intercept_scaling=1.0, sample_weight=None, loss_params=params)
            self.auto_picks_newton = auto.rule(built)[0] == "newton"
        return ctx

    def available(self):
        reason = _import_reason("fastdual")
        if reason is None:
            import fastdual
            if not hasattr(fastdual, "train"):
                reason = ("the fastdual imported from %s has no train(): build it in place "
                          "(python setup.py build_ext --inplace) or run where an installed "
                          "fastdual is not shadowed by an older source tree"
                          % os.path.dirname(fastdual.__file__))
        return reason

    def _kwargs(self, ctx):
        p = ctx["problem"]
        kw = dict(loss=FASTDUAL_LOSS[p.name], alpha=ctx["alpha"], l1_ratio=p.l1_ratio,
                  fit_intercept=False, solver=self.solver, random_state=0, verbose=0,
                  **self.options)
        if p.loss == "smooth_hinge":
            kw["gamma"] = p.gamma
        return kw

    def fit(self, ctx, budget):
        import fastdual
        with warnings.catch_warnings():
            # tol=0 runs exactly max_epochs (the last epoch is certified); auto gets a tol it
            # does not reach, so that it certifies on its schedule and its stall switch acts
            # as in a user's run (tol=0 makes no certificate before the last epoch)
            warnings.simplefilter("ignore")
            model = fastdual.train(ctx["X"], ctx["y"], max_epochs=int(budget),
                                   tol=1e-15 if self.solver == "auto" else 0.0,
                                   **self._kwargs(ctx))
        ctx["epochs_run"] = int(model.n_epochs_)  # it may stop early once the gap is 0
        return np.asarray(model.coef_, dtype=np.float64).ravel()

    def train_to_gap(self, ctx, tol, max_epochs=100000):
        """Run until fastdual's own stopping rule at ``tol``; returns the model."""
        import fastdual
        return fastdual.train(ctx["X"], ctx["y"], tol=tol, max_epochs=max_epochs,
                              **self._kwargs(ctx))


# --------------------------------------------------------------------------- LIBLINEAR

class Liblinear(Solver):
    """liblinear-official; the budget is the stopping tolerance ``-e``."""
    kind = "tol"
    package = "liblinear-official"

    def __init__(self, formulation):
        self.formulation = formulation  # "dual" or "primal"
        self.name = "liblinear-%s" % formulation
        self.solver_id = {
            "dual": {"hinge": 3, "squared_hinge": 1, "logistic": 7, "ridge": 12},
            "primal": {"squared_hinge": 2, "logistic": 0, "ridge": 11},
        }[formulation]
        self.problems = tuple(self.solver_id)

    def available(self):
        return _import_reason("liblinear.liblinearutil")

    def prepare(self, X, y, problem, alpha):
        from liblinear import liblinearutil
        ctx = super().prepare(X, y, problem, alpha)
        Xs = sp.csr_matrix(X) if not sp.issparse(X) else X
        ctx["prob"] = liblinearutil.problem(y, Xs)
        n = X.shape[0]
        ctx["C"] = 1.0 / (2.0 * alpha * n) if problem == "ridge" else 1.0 / (alpha * n)
        return ctx

    def fit(self, ctx, budget):
        from liblinear import liblinearutil
        s = self.solver_id[ctx["problem"].name]
        opts = "-s %d -c %.17g -e %.3g -q" % (s, ctx["C"], budget)
        if ctx["problem"].name == "ridge":
            opts += " -p 0"
        model = liblinearutil.train(ctx["prob"], opts)
        return liblinear_coef(model, ctx["d"], regression=ctx["problem"].name == "ridge")


def liblinear_coef(model, d, regression=False):
    nr = model.get_nr_feature()
    w = np.zeros(d)
    w[:nr] = [model.w[j] for j in range(nr)]
    if not regression and model.get_labels()[0] != 1:
        w = -w
    return w


# --------------------------------------------------------------------------- scikit-learn

class SklearnLinearSVC(Solver):
    name = "sklearn-LinearSVC"
    problems = ("hinge", "squared_hinge")
    package = "scikit-learn"

    def fit(self, ctx, budget):
        from sklearn.svm import LinearSVC
        n = ctx["n"]
        clf = LinearSVC(loss=ctx["problem"].name, dual=True, C=1.0 / (ctx["alpha"] * n),
                        fit_intercept=False, tol=1e-15, max_iter=int(budget), random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(ctx["X"], ctx["y"])
        return _classifier_coef(clf.coef_, clf.classes_)


class SklearnLogistic(Solver):
    package = "scikit-learn"

    def __init__(self, solver):
        self.solver = solver
        self.name = "sklearn-%s" % solver
        self.problems = ("logistic", "enet_logistic") if solver == "saga" else ("logistic",)

    def fit(self, ctx, budget):
        from sklearn.linear_model import LogisticRegression
        p = ctx["problem"]
        clf = LogisticRegression(C=1.0 / (ctx["alpha"] * ctx["n"]), l1_ratio=p.l1_ratio,
                                 solver=self.solver, fit_intercept=False, tol=1e-15,
                                 max_iter=int(budget), random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(ctx["X"], ctx["y"])
        ctx["epochs_run"] = int(np.max(clf.n_iter_))
        return _classifier_coef(clf.coef_, clf.classes_)


class SklearnRidge(Solver):
    package = "scikit-learn"
    problems = ("ridge",)

    def __init__(self, solver):
        self.solver = solver
        self.name = "sklearn-ridge-%s" % solver
        # sparse_cg ignores max_iter when d > n (it solves the kernel system): use tol
        self.kind = "tol" if solver == "sparse_cg" else "iter"

    def fit(self, ctx, budget):
        from sklearn.linear_model import Ridge
        if self.kind == "tol":
            tol, max_iter = budget, None
        else:
            tol, max_iter = 1e-15, int(budget)
        reg = Ridge(alpha=ctx["alpha"] * ctx["n"], fit_intercept=False, solver=self.solver,
                    tol=tol, max_iter=max_iter, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reg.fit(ctx["X"], ctx["y"])
        return np.asarray(reg.coef_, dtype=np.float64).ravel()


class SklearnSGD(Solver):
    name = "sklearn-SGD"
    package = "scikit-learn"
    problems = ("hinge", "squared_hinge", "logistic", "enet_logistic", "ridge")
    SGD_LOSS = {"hinge": "hinge", "squared_hinge": "squared_hinge", "logistic": "log_loss",
                "enet_logistic": "log_loss"}

    def budgets(self):
        return [b for b in ITER_BUDGETS if b <= 1000]

    def fit(self, ctx, budget):
        from sklearn.linear_model import SGDClassifier, SGDRegressor
        p = ctx["problem"]
        common = dict(alpha=ctx["alpha"], penalty="elasticnet" if p.l1_ratio else "l2",
                      l1_ratio=p.l1_ratio, fit_intercept=False, max_iter=int(budget),
                      tol=None, random_state=0)
        if p.name == "ridge":
            est = SGDRegressor(loss="squared_error", **common)
        else:
            est = SGDClassifier(loss=self.SGD_LOSS[p.name], **common)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(ctx["X"], ctx["y"])
        ctx["epochs_run"] = int(np.max(est.n_iter_))
        return _classifier_coef(est.coef_, getattr(est, "classes_", None))


# --------------------------------------------------------------------------- Snap ML

class SnapML(Solver):
    name = "snapml"
    package = "snapml"
    problems = ("hinge", "logistic", "ridge")

    def available(self):
        return _import_reason("snapml")

    def fit(self, ctx, budget):
        import snapml
        p = ctx["problem"]
        common = dict(regularizer=ctx["alpha"] * ctx["n"], max_iter=int(budget), tol=1e-15,
                      n_jobs=1, fit_intercept=False, random_state=0)
        if p.name == "hinge":
            est = snapml.SupportVectorMachine(**common)
        elif p.name == "logistic":
            est = snapml.LogisticRegression(dual=True, penalty="l2", **common)
        else:
            est = snapml.LinearRegression(dual=True, penalty="l2", **common)
        est.fit(ctx["X"], ctx["y"])
        return _classifier_coef(est.coef_, getattr(est, "classes_", None))


# --------------------------------------------------------------------------- tick

class TickSVRG(Solver):
    name = "tick-SVRG"
    package = "tick"
    problems = ("squared_hinge", "logistic", "smooth_hinge", "enet_logistic", "ridge")

    def available(self):
        return _import_reason("tick.solver")

    def prepare(self, X, y, problem, alpha):
        from tick import linear_model as lm
        from tick import prox
        ctx = super().prepare(X, y, problem, alpha)
        p = ctx["problem"]
        if p.loss == "logistic":
            model = lm.ModelLogReg(fit_intercept=False)
        elif p.loss == "squared_hinge":
            model = lm.ModelQuadraticHinge(fit_intercept=False)
        elif p.loss == "smooth_hinge":
            model = lm.ModelSmoothedHinge(fit_intercept=False, smoothness=p.gamma)
        else:
            model = lm.ModelLinReg(fit_intercept=False)
        Xt = X if not sp.issparse(X) else sp.csr_matrix(X, dtype=np.float64)
        model.fit(Xt, np.ascontiguousarray(y, dtype=np.float64))
        strength = alpha / 2.0 if p.loss == "squared_hinge" else alpha
        if p.l1_ratio:
            ctx["prox"] = prox.ProxElasticNet(strength, ratio=p.l1_ratio)
        else:
            ctx["prox"] = prox.ProxL2Sq(strength)
        ctx["model"] = model
        ctx["step"] = 1.0 / model.get_lip_max()
        return ctx

    def fit(self, ctx, budget):
        from tick.solver import SVRG
        solver = SVRG(step=ctx["step"], max_iter=int(budget), tol=0.0, seed=0,
                      verbose=False, record_every=10 ** 9)
        solver.set_model(ctx["model"]).set_prox(ctx["prox"])
        return np.asarray(solver.solve(np.zeros(ctx["d"])), dtype=np.float64).ravel()


# --------------------------------------------------------------------------- lightning

class LightningSDCA(Solver):
    name = "lightning-SDCA"
    package = "sklearn-contrib-lightning"
    problems = ("hinge", "squared_hinge", "smooth_hinge", "ridge")

    def available(self):
        return _import_reason("lightning.classification")

    def fit(self, ctx, budget):
        from lightning.classification import SDCAClassifier
        from lightning.regression import SDCARegressor
        p = ctx["problem"]
        kw = dict(alpha=ctx["alpha"], l1_ratio=p.l1_ratio, max_iter=int(budget), tol=1e-15,
                  random_state=0)
        if p.name == "ridge":
            est = SDCARegressor(loss="squared", **kw)
        else:
            est = SDCAClassifier(loss=p.loss, gamma=p.gamma, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(ctx["X"], ctx["y"])
        return _classifier_coef(est.coef_, getattr(est, "classes_", None))


class LightningSAGA(Solver):
    name = "lightning-SAGA"
    package = "sklearn-contrib-lightning"
    problems = ("squared_hinge", "logistic", "smooth_hinge", "enet_logistic")
    LOSS = {"squared_hinge": "squared_hinge", "logistic": "log", "smooth_hinge": "smooth_hinge",
            "enet_logistic": "log"}

    def available(self):
        return _import_reason("lightning.classification")

    def fit(self, ctx, budget):
        from lightning.classification import SAGAClassifier
        p = ctx["problem"]
        est = SAGAClassifier(eta="auto", alpha=p.l2(ctx["alpha"]),
                             beta=p.l1(ctx["alpha"]),
                             penalty="l1" if p.l1_ratio else None, loss=self.LOSS[p.name],
                             gamma=p.gamma, max_iter=int(budget), tol=1e-15, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(ctx["X"], ctx["y"])
        return _classifier_coef(est.coef_, getattr(est, "classes_", None))


def all_solvers():
    return [
        FastDual(), FastDual("spdc"), FastDual("newton"), FastDual(acceleration=True),
        FastDual("auto"),
        Liblinear("dual"), Liblinear("primal"),
        SklearnLinearSVC(), SklearnLogistic("saga"), SklearnLogistic("lbfgs"),
        SklearnRidge("sag"), SklearnRidge("saga"), SklearnRidge("sparse_cg"),
        SklearnSGD(),
        SnapML(), TickSVRG(), LightningSDCA(), LightningSAGA(),
    ]


def get_solvers(names=None):
    solvers = all_solvers()
    if names:
        known = {s.name for s in solvers}
        unknown = set(names) - known
        if unknown:
            raise KeyError("unknown solvers %s; known: %s" % (sorted(unknown), sorted(known)))
        solvers = [s for s in solvers if s.name in names]
    return solvers
