"""The defaults every face reads: fastdual.train, fastdual.duality_gap, the estimators,
fastdual.OnlineRDA and train_stream, fastdual.dask.train.

    loss                  smooth_hinge (the estimators' regressor: regression_loss)
    strength              C = 1 (LIBLINEAR's) where the number of samples is known; a stream
                          does not know it, so the streaming faces take alpha (stream_alpha)
    regularize_intercept  True: LIBLINEAR's -B, the intercept a feature regularised like the
                          others (False: a free intercept, as scikit-learn's)
    tol                   1e-4, the relative duality gap
    max_epochs            1000 passes over the data
"""

DEFAULTS = {
    "loss": "smooth_hinge",
    "regression_loss": "squared",
    "C": 1.0,
    "stream_alpha": 1e-4,
    "regularize_intercept": True,
    "tol": 1e-4,
    "max_epochs": 1000,
}
