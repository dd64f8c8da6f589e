"""scikit-learn estimators over fastdual.train: LinearClassifier and LinearRegressor.

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
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, is_classifier
from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from fastdual import _api
from fastdual._loop import ConvergenceWarning as _ConvergenceWarning
from fastdual._defaults import DEFAULTS
from fastdual.losses import get_loss_spec
from fastdual.online import OnlineRDA
from fastdual.solvers import takes_warm_start


class ConvergenceWarning(_ConvergenceWarning, _SklearnConvergenceWarning):
    """fastdual's ConvergenceWarning as the estimators issue it: also scikit-learn's, so that
    scikit-learn's filters (GridSearchCV, ignore_warnings) catch it as they catch their own."""


def train(*args, **kwargs):
    """fastdual.train, its ConvergenceWarning re-issued as the class above (fastdual.train does
    not import scikit-learn, so it cannot issue scikit-learn's class itself); other warnings
    pass through unchanged."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = _api.train(*args, **kwargs)
    for warning in caught:
        category = warning.category
        if issubclass(category, _ConvergenceWarning):
            category = ConvergenceWarning
        warnings.warn_explicit(str(warning.message), category, warning.filename, warning.lineno)
    return model


class _LinearModel(BaseEstimator):
    def _fit(self, X, y, sample_weight, **extra):
        self.__dict__.pop("stream_", None)     # a later partial_fit starts a stream of its own
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             y_numeric=get_loss_spec(self.loss).task == "regression",
                             reset=True)
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
                             y_numeric=get_loss_spec(self.loss).task == "regression",
                             reset=first)
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

    loss: "smooth_hinge" (default), "hinge", "squared_hinge", "logistic" or "f1_hinge"; C (default 1,
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
