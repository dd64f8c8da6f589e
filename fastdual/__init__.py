"""fastdual: regularized linear models by dual coordinate methods, certified by their duality gap.

    import fastdual
    model = fastdual.train(X, y, loss="smooth_hinge")
    model.predict(X_test); model.gap_; model.history_
"""
try:
    from fastdual._core import gap as _compiled  # noqa: F401  (the compiled kernels)
except ImportError as exc:  # pragma: no cover - depends on how the package was obtained
    import os as _os
    raise ImportError(
        f"fastdual's compiled extensions could not be imported from {_os.path.dirname(__file__)} "
        f"({exc}). If this is a source checkout, install it with `pip install .` and run from "
        "another directory (or build in place: `python setup.py build_ext --inplace`).") from exc

from fastdual._api import duality_gap, train
from fastdual._fit import Certificate
from fastdual._loop import ConvergenceWarning, TrainingDiverged, TrainingInterrupted
from fastdual._version import __version__
from fastdual.formats import load
from fastdual.losses import LOSSES
from fastdual.model import Model
from fastdual.online import OnlineRDA, train_stream
from fastdual.selection import cross_validate, regularization_path
from fastdual.plotting import plot_convergence
from fastdual.solvers import SOLVERS
from fastdual import projection

__all__ = ["train", "duality_gap", "train_stream", "OnlineRDA", "cross_validate",
           "regularization_path", "plot_convergence", "load", "Model", "Certificate", "ConvergenceWarning",
           "TrainingInterrupted", "TrainingDiverged", "LOSSES", "SOLVERS", "projection", "__version__"]
