"""Every face trains the same objective: given the same data, strength and loss parameters and
left at their defaults otherwise, train, the estimators (fit, and partial_fit over chunks),
OnlineRDA, train_stream and fastdual.dask report for their coefficients the primal that
duality_gap computes for them under train's defaults."""
import warnings

import numpy as np
import pytest

import fastdual
import fastdual.dask
from conftest import BINARY_LOSSES, REGRESSION_LOSSES, problem_for
from fastdual.sklearn import LinearClassifier, LinearRegressor

ALPHA = 0.05
PARAMS = {"smooth_hinge": {"gamma": 0.5}, "epsilon_insensitive": {"epsilon": 0.7},
          "squared_epsilon_insensitive": {"epsilon": 0.6}}


def reference_primal(X, y, model, loss, params):
    """P(coef, intercept) under train's defaults, by duality_gap."""
    coef = np.ravel(model.coef_)
    intercept = float(np.ravel(model.intercept_)[0])
    return fastdual.duality_gap(X, y, coef, intercept, loss=loss, alpha=ALPHA,
                                refine_epochs=0, **params).primal


def faces(X, y, loss, params):
    """(name, model with a certificate on X, y) for every face."""
    binary = loss in BINARY_LOSSES
    classes = np.unique(y) if binary else None
    chunks = np.array_split(np.arange(X.shape[0]), 3)
    out = [("train", fastdual.train(X, y, loss=loss, alpha=ALPHA, **params))]
    Estimator = LinearClassifier if binary else LinearRegressor
    # (a classifier's loss parameters travel in solver_options; epsilon is the regressor's own)
    extra = {"solver_options": params} if binary and params else dict(params)
    fitted = Estimator(loss=loss, alpha=ALPHA, **extra).fit(X, y)
    out.append(("estimator.fit", fitted.model_))
    online = Estimator(loss=loss, alpha=ALPHA, solver="rda", **extra)
    for chunk in chunks:
        if binary:
            online.partial_fit(X[chunk], y[chunk], classes=classes)
        else:
            online.partial_fit(X[chunk], y[chunk])
    out.append(("estimator.partial_fit", online.stream_.model(X, y)))
    stream = fastdual.OnlineRDA(loss, alpha=ALPHA, classes=classes, **params)
    for chunk in chunks:
        stream.partial_fit(X[chunk], y[chunk])
    out.append(("OnlineRDA", stream.model(X, y)))
    streamed = fastdual.train_stream(lambda: ((X[c], y[c]) for c in chunks), loss=loss,
                                     alpha=ALPHA, classes=classes, max_epochs=2, **params)
    out.append(("train_stream", streamed.model(X, y)))
    out.append(("dask (in process)", fastdual.dask.train_local(
        [(X[c], y[c]) for c in chunks], loss=loss, alpha=ALPHA, **params)))
    return out


@pytest.mark.parametrize("loss, params", [(loss, {}) for loss in BINARY_LOSSES
                                           + REGRESSION_LOSSES] + list(PARAMS.items()))
def test_every_face_trains_the_same_objective(loss, params):
    X, y = problem_for(loss, n=90, d=4, seed=11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        trained = faces(X, y, loss, params)
    for name, model in trained:
        assert model.loss == loss and model.loss_params == {**fastdual.LOSSES[loss].params,
                                                             **params}, name
        assert model.intercept_mode == "regularized" and model.alpha == ALPHA, name
        assert model.primal_ == pytest.approx(reference_primal(X, y, model, loss, params),
                                              rel=1e-12), name


def test_the_faces_share_the_defaults():
    """The same loss, intercept mode, tol and budget wherever a face has the argument."""
    import inspect
    from fastdual._defaults import DEFAULTS
    signatures = {face: inspect.signature(face).parameters for face in (
        fastdual.train, fastdual.duality_gap, fastdual.dask.train, fastdual.dask.train_local,
        fastdual.OnlineRDA, fastdual.train_stream, LinearClassifier)}
    for face, parameters in signatures.items():
        for name in ("loss", "regularize_intercept", "tol", "max_epochs"):
            if name in parameters and not (face is fastdual.train_stream
                                           and name == "max_epochs"):
                assert parameters[name].default == DEFAULTS[name], (face, name)
    assert inspect.signature(LinearRegressor).parameters["loss"].default == \
        DEFAULTS["regression_loss"]
