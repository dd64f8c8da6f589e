"""scikit-learn estimators over fastdual.train: LinearClassifier and LinearRegressor; Lasso,
ElasticNet, LassoCV and ElasticNetCV (scikit-learn's objectives, solver="cd").

    from fastdual.sklearn import LinearClassifier
    clf = LinearClassifier(loss="logistic", C=1.0).fit(X, y)
    clf.predict(X_test); clf.gap_; clf.history_

Thin layers: scikit-learn's own input conventions (feature names, n_features_in_, y column
vectors) are handled by scikit-learn's validate_data; everything else, the objective, the
solvers and their checks, is fastdual.train's, with its defaults (fastdual/_defaults.py). C
(LIBLINEAR's convention, default 1) or alpha (scikit-learn's SGD convention) sets the strength;
max_epochs counts passes over the data (max_iter, its former name, is deprecated).

partial_fit (solver="rda") trains online, one pass over each chunk (fastdual.OnlineRDA) with
the estimator's loss, loss parameters and intercept: it takes alpha only, since C's alpha =
1 / (C n) needs the number of samples of the whole stream.
"""
import contextlib
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, is_classifier
from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning
from sklearn.model_selection import check_cv
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from fastdual import _api
from fastdual._loop import ConvergenceWarning as _ConvergenceWarning
from fastdual._defaults import DEFAULTS
from fastdual.losses import LOSSES, get_loss_spec
from fastdual.online import OnlineRDA
from fastdual.selection import cross_validate
from fastdual.solvers import takes_warm_start


class ConvergenceWarning(_ConvergenceWarning, _SklearnConvergenceWarning):
    """fastdual's ConvergenceWarning as the estimators issue it: also scikit-learn's, so that
    scikit-learn's filters (GridSearchCV, ignore_warnings) catch it as they catch their own."""


@contextlib.contextmanager
def _scikit_learn_warnings():
    """fastdual's ConvergenceWarnings issued inside re-issued as the class above (fastdual.train
    does not import scikit-learn, so it cannot issue scikit-learn's class itself); other
    warnings pass through unchanged."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for warning in caught:
        category = warning.category
        if issubclass(category, _ConvergenceWarning):
            category = ConvergenceWarning
        warnings.warn_explicit(str(warning.message), category, warning.filename, warning.lineno)


def train(*args, **kwargs):
    """fastdual.train, its ConvergenceWarnings scikit-learn's too."""
    with _scikit_learn_warnings():
        return _api.train(*args, **kwargs)


class _LinearModel(BaseEstimator):
    def _loss_task(self):
        """The loss's task, checked against the estimator's: a classifier trains the
        classification losses, a regressor the regression ones (a clear error before any data is
        read, not a model whose predictions fail)."""
        task = get_loss_spec(self.loss).task
        wanted = "binary" if is_classifier(self) else "regression"
        if task != wanted:
            accepted = sorted(name for name, spec in LOSSES.items()
                              if spec.task == wanted and not spec.structured)
            other = "LinearRegressor" if is_classifier(self) else "LinearClassifier"
            kind = "a regression" if task == "regression" else "a classification"
            raise ValueError(f"loss={self.loss!r} is {kind} loss: {type(self).__name__} takes "
                             f"loss in {accepted}; for {kind[2:]} use {other}")
        return task

    def _fit(self, X, y, sample_weight, **extra):
        self.__dict__.pop("stream_", None)     # a later partial_fit starts a stream of its own
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             y_numeric=self._loss_task() == "regression", reset=True)
        if is_classifier(self):   # after validate_data, which refuses NaN and infinity first
            check_classification_targets(y)
        warm = getattr(self, "model_", None) if self.warm_start else None
        if warm is not None and (warm.coef_.shape[-1] != X.shape[1]
                                 or not takes_warm_start(warm.solver)):
            warm = None
        options = dict(self.solver_options or {})
        strength = dict(alpha=self.alpha) if self.alpha is not None else dict(C=self.C)
        model = train(X, y, loss=self.loss, l1_ratio=self.l1_ratio,
                      fit_intercept=self.fit_intercept, intercept_scaling=self.intercept_scaling,
                      regularize_intercept=self.regularize_intercept,
                      sample_weight=sample_weight, tol=self.tol, max_epochs=self._max_epochs(),
                      solver=self.solver, random_state=self.random_state,
                      verbose=self.verbose, warm_start=warm, **strength, **extra, **options)
        self._set_model(model)
        return self

    def _max_epochs(self):
        if self.max_iter is not None:
            warnings.warn("max_iter is deprecated: max_epochs counts the passes over the data",
                          DeprecationWarning, stacklevel=4)
            return self.max_iter
        return self.max_epochs

    def _loss_params(self):
        """The loss's parameters the estimator sets itself (LinearRegressor's epsilon)."""
        return {}

    def _set_model(self, model):
        self.model_ = model
        self.coef_ = model.coef_
        self.intercept_ = model.intercept_
        self.n_iter_ = model.n_epochs_
        self.gap_ = model.gap_
        self.primal_ = model.primal_
        self.dual_ = model.dual_
        self.converged_ = model.converged_
        self.history_ = model.history_

    def _scores(self, X):
        check_is_fitted(self, "model_")
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                          reset=False)
        return self.model_.decision_function(X)

    def _partial_fit(self, X, y, sample_weight, classes=None):
        first = not hasattr(self, "stream_")
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             y_numeric=self._loss_task() == "regression", reset=first)
        if first:
            if self.alpha is None:
                raise ValueError("partial_fit needs alpha (the strength per sample): C sets "
                                 "alpha = 1 / (C n) with the number of samples n of all the "
                                 f"data, which a stream does not know; got alpha=None, C={self.C!r}")
            self.stream_ = OnlineRDA(self.loss, alpha=self.alpha, l1_ratio=self.l1_ratio,
                                     classes=classes, fit_intercept=self.fit_intercept,
                                     intercept_scaling=self.intercept_scaling,
                                     regularize_intercept=self.regularize_intercept,
                                     **self._loss_params(), **(self.solver_options or {}))
        self.stream_.partial_fit(X, y, sample_weight)
        self._set_model(self.stream_.model())
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class LinearClassifier(ClassifierMixin, _LinearModel):
    """A certified linear classifier (binary or k classes) trained by fastdual.train.

    loss: "smooth_hinge" (default), "hinge", "squared_hinge", "logistic" or "f1_hinge" (a
    regression loss is refused: LinearRegressor trains those); C (default 1,
    LIBLINEAR's) or alpha; l1_ratio; fit_intercept, intercept_scaling, regularize_intercept;
    solver ("auto", "sdca", "spdc", "rda", "newton", "agm") and solver_options (a dict of the solver's
    options); multiclass (None, "ovr", "crammer_singer", "multinomial"); class_weight; n_jobs;
    tol (relative duality gap); max_epochs (passes; max_iter is its deprecated name);
    random_state; warm_start (a refit starts from the last model, except with RDA, which starts
    from its own gradient sums); verbose.
    Fitted: coef_ (1, d) for two classes as scikit-learn's linear classifiers have it, (k, d)
    otherwise; intercept_; classes_; n_iter_; gap_, primal_, dual_, converged_, history_ and
    model_ (the fastdual.Model).
    """

    def __init__(self, loss=DEFAULTS["loss"], *, C=DEFAULTS["C"], alpha=None, l1_ratio=0.0,
                 fit_intercept=True, intercept_scaling=1.0,
                 regularize_intercept=DEFAULTS["regularize_intercept"], solver="auto",
                 multiclass=None, class_weight=None, tol=DEFAULTS["tol"],
                 max_epochs=DEFAULTS["max_epochs"], random_state=None, warm_start=False,
                 verbose=0, n_jobs=None, solver_options=None, max_iter=None):
        self.loss = loss
        self.C = C
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.regularize_intercept = regularize_intercept
        self.solver = solver
        self.multiclass = multiclass
        self.class_weight = class_weight
        self.tol = tol
        self.max_epochs = max_epochs
        self.max_iter = max_iter
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.solver_options = solver_options

    def fit(self, X, y, sample_weight=None):
        return self._fit(X, y, sample_weight, multiclass=self.multiclass,
                         class_weight=self.class_weight, n_jobs=self.n_jobs)

    @available_if(lambda self: self.solver == "rda")
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One online pass over the chunk (solver="rda"; binary; classes at the first call)."""
        return self._partial_fit(X, y, sample_weight, classes)

    def _set_model(self, model):
        super()._set_model(model)
        self.classes_ = model.classes_
        if self.coef_.ndim == 1:
            self.coef_ = self.coef_[None, :]
            self.intercept_ = np.array([self.intercept_])

    def decision_function(self, X):
        return self._scores(X)

    def predict(self, X):
        scores = self._scores(X)
        if scores.ndim == 2:
            return self.classes_[np.argmax(scores, axis=1)]
        return self.classes_[(scores > 0).astype(np.intp)]

    def _has_proba(self):
        return self.loss == "logistic"

    @available_if(_has_proba)
    def predict_proba(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(validate_data(
            self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False))

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))


class LinearRegressor(RegressorMixin, _LinearModel):
    """A certified linear regressor trained by fastdual.train.

    loss: "squared" (default), "absolute", "epsilon_insensitive" or
    "squared_epsilon_insensitive" (these two with epsilon); the other
    parameters as LinearClassifier's. Fitted: coef_ (d,), intercept_, n_iter_, gap_, primal_,
    dual_, converged_, history_, model_.
    """

    def __init__(self, loss=DEFAULTS["regression_loss"], *, C=DEFAULTS["C"], alpha=None,
                 l1_ratio=0.0, epsilon=0.1, fit_intercept=True, intercept_scaling=1.0,
                 regularize_intercept=DEFAULTS["regularize_intercept"], solver="auto",
                 tol=DEFAULTS["tol"], max_epochs=DEFAULTS["max_epochs"], random_state=None,
                 warm_start=False, verbose=0, solver_options=None, max_iter=None):
        self.loss = loss
        self.C = C
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.epsilon = epsilon
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.regularize_intercept = regularize_intercept
        self.solver = solver
        self.tol = tol
        self.max_epochs = max_epochs
        self.max_iter = max_iter
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.solver_options = solver_options

    def _loss_params(self):
        return ({"epsilon": self.epsilon}
                if self.loss in ("epsilon_insensitive", "squared_epsilon_insensitive") else {})

    def fit(self, X, y, sample_weight=None):
        return self._fit(X, y, sample_weight, **self._loss_params())

    @available_if(lambda self: self.solver == "rda")
    def partial_fit(self, X, y, sample_weight=None):
        """One online pass over the chunk (solver="rda")."""
        return self._partial_fit(X, y, sample_weight)

    def predict(self, X):
        return self._scores(X)


# -- sparse regression with scikit-learn's objective ---------------------------------------------

class _SquaredLossPenalised(RegressorMixin, _LinearModel):
    """Squared loss with scikit-learn's Lasso / ElasticNet objective,
    1/(2n) ||y - Xw - b||^2 + alpha l1_ratio ||w||_1 + alpha (1 - l1_ratio)/2 ||w||^2, which is
    fastdual's objective at the same alpha and l1_ratio with the free intercept (docs/sparse.md).
    What the shared _fit reads and these estimators fix:"""
    loss = "squared"
    C = None
    intercept_scaling = 1.0
    regularize_intercept = False
    max_iter = None

    def fit(self, X, y, sample_weight=None):
        return self._fit(X, y, sample_weight)

    def predict(self, X):
        return self._scores(X)


class ElasticNet(_SquaredLossPenalised):
    """Linear regression with the elastic net, scikit-learn's ElasticNet objective:

        1/(2n) ||y - Xw - b||^2 + alpha l1_ratio ||w||_1 + alpha (1 - l1_ratio)/2 ||w||^2

    (the intercept b not penalised), trained by fastdual.train (solver="cd" by default) and
    certified by its duality gap. tol is the relative duality gap; max_epochs counts passes
    over the data; warm_start=True starts a refit from the last model; solver_options: a dict
    of the solver's options. Fitted: coef_ (d,), intercept_, n_iter_ (passes), gap_, primal_,
    dual_, converged_, history_, model_ (the fastdual.Model).
    """

    def __init__(self, alpha=1.0, *, l1_ratio=0.5, fit_intercept=True, tol=DEFAULTS["tol"],
                 max_epochs=DEFAULTS["max_epochs"], solver="cd", warm_start=False,
                 random_state=None, verbose=0, solver_options=None):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_epochs = max_epochs
        self.solver = solver
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
        self.solver_options = solver_options


class Lasso(_SquaredLossPenalised):
    """Linear regression with the l1 penalty, scikit-learn's Lasso objective:

        1/(2n) ||y - Xw - b||^2 + alpha ||w||_1

    (the intercept b not penalised); ElasticNet with l1_ratio=1, the same parameters
    otherwise.
    """
    l1_ratio = 1.0

    def __init__(self, alpha=1.0, *, fit_intercept=True, tol=DEFAULTS["tol"],
                 max_epochs=DEFAULTS["max_epochs"], solver="cd", warm_start=False,
                 random_state=None, verbose=0, solver_options=None):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_epochs = max_epochs
        self.solver = solver
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
        self.solver_options = solver_options


class _PathCV(_SquaredLossPenalised):
    """Cross-validation over fastdual.path's alphas, then a refit at the best one."""
    warm_start = False

    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             y_numeric=True, reset=True)
        folds = list(check_cv(self.cv).split(X, y))
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight)
        l1_ratios = np.atleast_1d(np.asarray(self.l1_ratio, dtype=np.float64))
        if l1_ratios.ndim != 1 or l1_ratios.shape[0] == 0:
            raise ValueError(f"l1_ratio must be a number or a non-empty list of numbers, got "
                             f"{self.l1_ratio!r}")
        if isinstance(self.alphas, numbers.Integral) and not isinstance(self.alphas, bool):
            grid = dict(alphas="auto", n_alphas=int(self.alphas), eps=self.eps)
        else:
            grid = dict(alphas=self.alphas)
        common = dict(loss="squared", fit_intercept=self.fit_intercept,
                      regularize_intercept=False, sample_weight=sample_weight, tol=self.tol,
                      max_epochs=self.max_epochs, solver=self.solver, verbose=self.verbose,
                      **(self.solver_options or {}))
        alphas, mse = [], []
        for l1_ratio in l1_ratios:
            with _scikit_learn_warnings():
                scores = cross_validate(X, y, folds=folds, random_state=self.random_state,
                                        l1_ratio=float(l1_ratio), **grid, **common)
            alphas.append(scores["alphas"])
            mse.append(scores["per_fold"].T)          # (n_alphas, n_folds)
        means = [m.mean(axis=1) for m in mse]
        best_ratio = int(np.argmin([m.min() for m in means]))
        best_alpha = int(np.argmin(means[best_ratio]))
        self.l1_ratio_ = float(l1_ratios[best_ratio])
        self.alpha_ = float(alphas[best_ratio][best_alpha])
        scalar = np.ndim(self.l1_ratio) == 0
        self.alphas_ = alphas[0] if scalar else np.array(alphas)
        self.mse_path_ = mse[0] if scalar else np.array(mse)
        model = train(X, y, alpha=self.alpha_, l1_ratio=self.l1_ratio_,
                      random_state=self.random_state, **common)
        self._set_model(model)
        return self


class LassoCV(_PathCV):
    """Lasso with alpha chosen by cross-validation along fastdual.path (warm-started,
    every model certified), then refit on all the data.

    alphas: the number of alphas of the grid from alpha_max (the smallest alpha giving w = 0,
    computed on all the data) down to eps * alpha_max (default 100), or the alphas themselves
    (decreasing); cv: scikit-learn's (None: 5-fold KFold, an int, a splitter or (train, test)
    pairs). Fitted: alpha_, alphas_, mse_path_ (n_alphas, n_folds: each fold's test mean
    squared error), and the refit's coef_, intercept_, n_iter_, gap_, primal_, dual_,
    converged_, history_, model_.
    """
    l1_ratio = 1.0

    def __init__(self, *, eps=1e-3, alphas=100, fit_intercept=True, cv=None,
                 tol=DEFAULTS["tol"], max_epochs=DEFAULTS["max_epochs"], solver="cd",
                 random_state=None, verbose=0, solver_options=None):
        self.eps = eps
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.cv = cv
        self.tol = tol
        self.max_epochs = max_epochs
        self.solver = solver
        self.random_state = random_state
        self.verbose = verbose
        self.solver_options = solver_options


class ElasticNetCV(_PathCV):
    """ElasticNet with alpha (and l1_ratio, when given a list) chosen by cross-validation
    along fastdual.path, then refit on all the data; the parameters as LassoCV's and
    l1_ratio (a number, or a list to choose from: each has its own alpha grid). Fitted:
    alpha_, l1_ratio_, alphas_ and mse_path_ ((n_l1_ratios, n_alphas[, n_folds]) for a list),
    and the refit's attributes.
    """

    def __init__(self, *, l1_ratio=0.5, eps=1e-3, alphas=100, fit_intercept=True, cv=None,
                 tol=DEFAULTS["tol"], max_epochs=DEFAULTS["max_epochs"], solver="cd",
                 random_state=None, verbose=0, solver_options=None):
        self.l1_ratio = l1_ratio
        self.eps = eps
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.cv = cv
        self.tol = tol
        self.max_epochs = max_epochs
        self.solver = solver
        self.random_state = random_state
        self.verbose = verbose
        self.solver_options = solver_options
