"""fastdual: regularized linear models by dual coordinate methods, certified by their duality gap.

    import fastdual
    model = fastdual.train(X, y, loss="smooth_hinge")
    model.predict(X_test); model.gap_; model.history_
"""
from fastdual._driver import ConvergenceWarning
from fastdual._train import Certificate, duality_gap, train
from fastdual.losses import LOSSES
from fastdual.model import Model, load
from fastdual.solvers import SOLVERS

__version__ = "0.1.0"

__all__ = ["train", "duality_gap", "load", "Model", "Certificate", "ConvergenceWarning",
           "LOSSES", "SOLVERS", "__version__"]
