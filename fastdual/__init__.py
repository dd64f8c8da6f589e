"""fastdual: regularized linear models by dual coordinate methods, certified by their duality gap.

    import fastdual
    model = fastdual.train(X, y, loss="smooth_hinge")
    model.predict(X_test); model.gap_; model.history_
"""
try:
    from fastdual import _sdca  # noqa: F401  (the compiled kernels)
except ImportError as exc:  # pragma: no cover - depends on how the package was obtained
    import os as _os
    raise ImportError(
        f"fastdual's compiled extensions could not be imported from {_os.path.dirname(__file__)} "
        f"({exc}). If this is a source checkout, install it with `pip install .` and run from "
        "another directory (or build in place: `python setup.py build_ext --inplace`).") from exc

from fastdual._driver import ConvergenceWarning
from fastdual._train import Certificate, duality_gap, train
from fastdual.losses import LOSSES
from fastdual.model import Model, load
from fastdual.solvers import SOLVERS
from fastdual import projection

__version__ = "0.1.0"

__all__ = ["train", "duality_gap", "load", "Model", "Certificate", "ConvergenceWarning",
           "LOSSES", "SOLVERS", "projection", "__version__"]
